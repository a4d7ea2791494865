//! Which actions are enabled in a state, and the network's delivery order.

use super::*;

impl Sim {
    pub(super) fn budget(&self, s: &World) -> bool {
        s.used.faults < self.cfg.faults
    }

    pub(super) fn push_msg(&self, net: &mut Vec<Msg>, m: Msg) {
        let at = match self.cfg.network {
            Network::Ordered => net.partition_point(|x| x.link() <= m.link()),
            Network::Reorder | Network::ReorderDupDrop => net.partition_point(|x| *x <= m),
        };
        net.insert(at, m);
    }

    /// Messages the network may deliver next (the head of each link when
    /// ordered; each distinct message otherwise), in order.
    pub(super) fn deliverable<'a>(&self, net: &'a [Msg]) -> impl Iterator<Item = Msg> + 'a {
        let ordered = self.cfg.network == Network::Ordered;
        net.iter().enumerate().filter_map(move |(i, m)| {
            let first = match i.checked_sub(1).and_then(|j| net.get(j)) {
                None => true,
                Some(prev) if ordered => prev.link() != m.link(),
                Some(prev) => prev != m,
            };
            first.then_some(*m)
        })
    }

    /// Whether `Action::Fire(timer)` is enabled in `s` (without listing
    /// every other action: the random schedulers ask this for each armed
    /// timer when they move the clock).
    #[must_use]
    pub fn may_fire(&self, s: &World, timer: Timer) -> bool {
        s.violation.is_none()
            && s.coord.timer_deadline(timer).is_some()
            && self.within_budget(s, timer)
    }

    /// Whether an armed timer may fire as far as the run's budget goes (the
    /// periodic trigger is bounded by the checkpoint budget).
    pub(super) fn within_budget(&self, s: &World, timer: Timer) -> bool {
        match timer {
            Timer::Periodic => s.used.triggers < self.cfg.checkpoints,
            Timer::Timeout(_) => true,
        }
    }

    /// Whether task `t` may finish now (`finished_tasks`): budget left, the
    /// job running and not stopped, and `t`'s running attempt quiet (no
    /// mail, channel item or started checkpoint work left: a task ends
    /// once it ran everything it had) with every upstream task finished
    /// (its input ended).
    pub(super) fn may_finish_task(&self, s: &World, t: TaskId) -> bool {
        let Some(side) = s.tasks.get(t.0 as usize) else {
            return false;
        };
        s.used.finished_tasks < self.cfg.finished_tasks
            && !s.coord.is_shutdown()
            && !s.awaiting_restore
            && s.stopped_with.is_none()
            && !side.is_down()
            && !side.finished
            && side.mailbox.is_empty()
            && side.inputs.iter().all(|c| c.queue.is_empty())
            && !side.st.has_outstanding_work()
            && self
                .upstream(t)
                .iter()
                .all(|u| s.tasks.get(u.0 as usize).is_some_and(|x| x.finished))
    }

    /// The first `Action::Deliver` that [`Sim::enabled`] lists for `s`
    /// (the network's first deliverable message), without listing the
    /// other actions: a driver that flushes the network one delivery at a
    /// time asks this after every delivery.
    #[must_use]
    pub fn first_deliver(&self, s: &World) -> Option<Action> {
        if s.violation.is_some() {
            return None;
        }
        self.deliverable(&s.net).next().map(Action::Deliver)
    }

    /// Every action enabled in `s`, in a fixed order.
    pub fn enabled(&self, s: &World, out: &mut Vec<Action>) {
        if s.violation.is_some() {
            return;
        }
        // Every listed timer is armed and the violation was checked above:
        // only the budget is left to ask (this is the model's hot path).
        for (timer, _) in s.coord.timers() {
            if self.within_budget(s, *timer) {
                out.push(Action::Fire(*timer));
            }
        }
        let budget = self.budget(s);
        let mut last = None;
        for io in &s.io {
            if last == Some(*io) {
                continue;
            }
            last = Some(*io);
            out.push(Action::Answer(*io, true));
            if budget && self.cfg.io_faults {
                out.push(Action::Answer(*io, false));
            }
        }
        for m in self.deliverable(&s.net) {
            out.push(Action::Deliver(m));
            if budget && self.cfg.network == Network::ReorderDupDrop {
                out.push(Action::Duplicate(m));
                out.push(Action::Drop(m));
            }
        }
        for (i, side) in s.tasks.iter().enumerate() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            for c in &side.inputs {
                match c.queue.first() {
                    Some(ChannelItem::Barrier(_)) => out.push(Action::Netty(t, c.from)),
                    Some(ChannelItem::CancelMarker(_)) => out.push(Action::Input(t, c.from)),
                    None => {}
                }
            }
            if !side.mailbox.is_empty() {
                out.push(Action::Mailbox(t));
            }
            let faults = budget && self.cfg.task_faults;
            for cp in side.st.writer_in_progress_iter() {
                out.push(Action::Writer(t, cp, true));
                if faults {
                    out.push(Action::Writer(t, cp, false));
                }
            }
            for cp in side.st.async_parts_iter() {
                out.push(Action::Async(t, cp, true));
                if faults {
                    out.push(Action::Async(t, cp, false));
                }
                if self.cfg.shared_state
                    && side.reusable_for(cp).is_some()
                    && !is_savepoint(&s.coord, cp)
                {
                    out.push(Action::AsyncReused(t, cp));
                }
            }
        }
        if let Some(z) = &s.zombie {
            let mut last = None;
            for io in &z.io {
                if last != Some(*io) {
                    out.push(Action::ZombieAnswer(*io));
                }
                last = Some(*io);
            }
        }
        if self.cfg.shutdown && !s.coord.is_shutdown() && s.used.triggers >= self.cfg.checkpoints {
            out.push(Action::Shutdown);
        }
        if s.used.savepoints < self.cfg.savepoints {
            out.push(Action::Savepoint);
        }
        if self.cfg.stop_with_savepoint {
            if s.used.stops == 0 && !s.coord.is_shutdown() && !s.awaiting_restore {
                out.push(Action::StopWithSavepoint);
            } else if s.used.stops == 1 && s.stopped_with.is_some() && s.coord.is_shutdown() {
                out.push(Action::ResumeJob);
            }
        }
        if s.used.user_checkpoints < self.cfg.user_checkpoints {
            out.push(Action::UserCheckpoint { forced: false });
            out.push(Action::UserCheckpoint { forced: true });
        }
        let may_fail = s.used.task_failures < self.cfg.task_failures && !s.coord.is_shutdown();
        for (i, side) in s.tasks.iter().enumerate() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            // While the job waits for its restore point, or is stopped,
            // every task is stopped and none restarts on its own.
            if s.awaiting_restore || s.stopped_with.is_some() {
                continue;
            }
            if side.is_down() {
                out.push(Action::RestartTask(t));
                continue;
            } else if may_fail && !side.finished {
                out.push(Action::FailTask(t));
            }
            // A recovering task's replay: the fetch first; then the drain's
            // end and each channel's last recovered buffer, in any order.
            match side.st.recovery() {
                None => {}
                Some(Recovery::AwaitingChannelState) => {
                    out.push(Action::Recovery(t, RecoveryStep::Started));
                }
                Some(Recovery::AwaitingConsumption { channels, drained }) => {
                    if !drained {
                        out.push(Action::Recovery(t, RecoveryStep::Finished));
                    }
                    if channels > 0 {
                        out.push(Action::Recovery(t, RecoveryStep::ChannelRecovered));
                    }
                }
                Some(Recovery::NoOpAwaitingChannels { .. }) => {
                    out.push(Action::Recovery(t, RecoveryStep::ChannelRecovered));
                }
            }
        }
        if self.cfg.dispose_savepoints && !s.coord.is_shutdown() {
            for c in s.coord.completed().filter(|c| c.is_savepoint()) {
                out.push(Action::DisposeSavepoint(c.id()));
            }
        }
        if s.scheduler_stopped {
            out.push(Action::StartScheduler);
        } else if s.used.scheduler_stops < self.cfg.scheduler_restarts && !s.coord.is_shutdown() {
            out.push(Action::StopScheduler);
        }
        let crash = s.used.coordinator_failovers < self.cfg.coordinator_failovers;
        if crash && !s.coord.is_shutdown() {
            out.push(Action::CoordinatorFailover { commit: false });
            if s.io.iter().any(|x| matches!(x, Io::Store(_))) {
                out.push(Action::CoordinatorFailover { commit: true });
            }
        }
        if s.job_failover_due && !s.coord.is_shutdown() && !s.awaiting_restore {
            out.push(Action::JobFailover);
        }
        if s.used.finished_tasks < self.cfg.finished_tasks {
            for i in 0..s.tasks.len() {
                let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
                if self.may_finish_task(s, t) {
                    out.push(Action::FinishTask(t));
                }
            }
        }
        if s.used.end_of_input < self.cfg.end_of_input {
            for t in &self.settings.tasks_to_trigger {
                let running = s
                    .tasks
                    .get(t.0 as usize)
                    .is_some_and(|side| side.st.lifecycle() == Lifecycle::Running);
                if running {
                    out.push(Action::EndOfInput(*t));
                }
            }
        }
    }
}
