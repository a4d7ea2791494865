//! What one action does to a world, and the checks at quiescence.

use super::*;

impl Sim {
    /// Runs one action on a copy of `s`, appending what was delivered to
    /// `log`; `None` when the action is not enabled.
    pub fn step(&self, s: &World, a: Action, log: Option<&mut Vec<Delivery>>) -> Option<World> {
        let mut n = s.clone();
        self.step_in_place(&mut n, a, log).then_some(n)
    }

    /// Runs one action on `w` itself (what [`Sim::step`] does to its copy),
    /// for drivers that keep one world and never look back (the story
    /// driver, random walks): no copy of the world per step. `false`, and
    /// `w` untouched, when the action is not enabled: every refusal below
    /// is decided before the first write (`model/tests/model.rs` checks
    /// both against [`Sim::step`] on every action of random walks).
    pub fn step_in_place(&self, w: &mut World, a: Action, log: Option<&mut Vec<Delivery>>) -> bool {
        if self.apply_action(w, a, log).is_none() {
            return false;
        }
        if self.seal {
            w.seal();
        }
        true
    }

    /// The body of [`Sim::step_in_place`]; `None` before any write when
    /// `a` is not enabled.
    pub(super) fn apply_action(
        &self,
        n: &mut World,
        a: Action,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Option<()> {
        match a {
            Action::Fire(timer) => {
                let deadline = n.coord.timer_deadline(timer)?;
                if timer == Timer::Periodic {
                    n.used.triggers = n.used.triggers.saturating_add(1);
                }
                n.now = deadline.max(n.now);
                self.coord_event(n, CEv::TimerFired { timer }, log.as_deref_mut());
            }
            Action::Answer(io, ok) => {
                let i = n.io.iter().position(|x| *x == io)?;
                n.io.remove(i);
                if !ok {
                    n.used.faults = n.used.faults.saturating_add(1);
                }
                let answer = self.carry_out(n, Leader::Current, io, ok);
                self.coord_event(n, io.answer(answer), log.as_deref_mut());
                if let Io::Finalize(c) | Io::Store(c) = io {
                    self.resolve_in_doubt(n, c);
                }
            }
            Action::ZombieAnswer(io) => {
                let z = n.zombie.as_mut()?;
                let i = z.io.iter().position(|x| *x == io)?;
                z.io.remove(i);
                let answer = self.carry_out(n, Leader::Zombie, io, true);
                self.leader_event(n, Leader::Zombie, io.answer(answer), log.as_deref_mut());
                if n.zombie.as_ref().is_some_and(|z| z.io.is_empty()) {
                    // Nothing left that it could write: it is gone for
                    // this world.
                    n.zombie = None;
                }
            }
            Action::AsyncReused(t, checkpoint) => {
                let side = n.tasks.get(t.0 as usize)?;
                let handle = side.reusable_for(checkpoint)?;
                if !self.cfg.shared_state
                    || !side.st.async_parts().contains(&checkpoint)
                    || is_savepoint(&n.coord, checkpoint)
                {
                    return None;
                }
                self.task_event(
                    n,
                    t,
                    TEv::AsyncPartReused { checkpoint, handle },
                    log.as_deref_mut(),
                );
            }
            Action::DisposeSavepoint(checkpoint) => {
                if !n
                    .coord
                    .completed()
                    .any(|c| c.id() == checkpoint && c.is_savepoint())
                {
                    return None;
                }
                // The disposal recipe: out of the store first (which
                // refuses its latest checkpoint, the restore point: then
                // nothing is sent), then the coordinator discards what no
                // other checkpoint holds.
                if !n.durable.ledger.may_dispose(checkpoint) {
                    return None;
                }
                n.history.disposed = true;
                if let Err(v) = n.durable.ledger.dispose(checkpoint) {
                    n.violation.get_or_insert_with(|| Box::new(v));
                }
                self.coord_event(n, CEv::DisposeSavepoint { checkpoint }, log.as_deref_mut());
            }
            Action::Deliver(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                match m {
                    Msg::ToTask {
                        task,
                        attempt,
                        mail,
                    } => Self::push_mail(n, task, attempt, mail),
                    Msg::ToCoord { task, attempt, msg } => {
                        let outcome =
                            self.coord_event(n, msg.event(JOB, task, attempt), log.as_deref_mut());
                        if let (
                            ToCoordinator::Ack { handle, .. },
                            Outcome::Ignored(Ignored::Shutdown) | Outcome::Rejected(_),
                        ) = (msg, &outcome)
                        {
                            self.reclaim(n, handle);
                        }
                    }
                }
            }
            Action::Duplicate(m) => {
                n.net.iter().position(|x| *x == m)?;
                n.used.faults = n.used.faults.saturating_add(1);
                self.push_msg(&mut n.net, m);
            }
            Action::Drop(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                n.used.faults = n.used.faults.saturating_add(1);
                n.history.disrupted = true;
                if let Msg::ToCoord {
                    msg: ToCoordinator::Ack { handle, .. },
                    ..
                } = m
                {
                    // The last copy of an ack is lost: its file is an orphan
                    // of the checkpoint's storage location, which the host
                    // disposes of (as Flink deletes an aborted checkpoint's
                    // directory).
                    let copies = n.net.iter().any(|x| {
                        matches!(x, Msg::ToCoord { msg: ToCoordinator::Ack { handle: h, .. }, .. } if *h == handle)
                    });
                    if !copies {
                        self.reclaim(n, handle);
                    }
                }
            }
            Action::Netty(t, up) | Action::Input(t, up) => {
                let side = n.tasks.get(t.0 as usize)?;
                let aligns = side.inputs.len() > 1;
                let at = side.inputs.iter().position(|c| c.from == up)?;
                let head = *side.inputs.get(at)?.queue.first()?;
                let wanted = match a {
                    Action::Netty(..) => Thread::Netty,
                    _ => Thread::Task,
                };
                if head.thread() != wanted {
                    return None;
                }
                // Taken from the channel on the side's one copy, with the
                // event's step.
                let take = |side: &mut TaskSide| {
                    if let Some(c) = side.inputs.get_mut(at) {
                        c.queue.remove(0);
                        if aligns {
                            let id = match head {
                                ChannelItem::Barrier(id) | ChannelItem::CancelMarker(id) => id,
                            };
                            c.seen = c.seen.max(Some(id));
                        }
                    }
                };
                self.task_event_with(n, t, head.event(), take, log.as_deref_mut());
            }
            Action::Mailbox(t) => {
                let mail = *n.tasks.get(t.0 as usize)?.mailbox.first()?;
                let take = |side: &mut TaskSide| {
                    side.mailbox.remove(0);
                };
                self.task_event_with(n, t, mail.event(), take, log.as_deref_mut());
            }
            Action::Writer(t, checkpoint, ok) => {
                let ev = if ok {
                    TEv::WriterCompleted { checkpoint }
                } else {
                    n.used.faults = n.used.faults.saturating_add(1);
                    TEv::WriterFailed { checkpoint }
                };
                self.task_event(n, t, ev, log.as_deref_mut());
            }
            Action::Async(t, checkpoint, ok) => {
                let ev = if ok {
                    let attempt = n.tasks.get(t.0 as usize)?.attempt;
                    let handle = handle_for(checkpoint, t, attempt);
                    if let Err(v) = self.write_state(n, handle) {
                        n.violation.get_or_insert_with(|| Box::new(v));
                    }
                    TEv::AsyncPartCompleted { checkpoint, handle }
                } else {
                    n.used.faults = n.used.faults.saturating_add(1);
                    TEv::AsyncPartFailed { checkpoint }
                };
                self.task_event(n, t, ev, log.as_deref_mut());
            }
            Action::Shutdown => {
                let status = JobStatus::Canceled;
                self.coord_event(n, CEv::Shutdown { status }, log.as_deref_mut());
            }
            Action::Savepoint => {
                n.used.savepoints = n.used.savepoints.saturating_add(1);
                let kind = TriggerKind::Savepoint {
                    target: "sp".into(),
                };
                self.coord_event(n, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::StopWithSavepoint => {
                if n.used.stops > 0 || n.coord.is_shutdown() {
                    return None;
                }
                n.used.stops = 1;
                let kind = TriggerKind::StopWithSavepoint {
                    target: "stop".into(),
                    drain: false,
                };
                self.coord_event(n, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::ResumeJob => {
                if n.used.stops != 1 || n.stopped_with.is_none() || !n.coord.is_shutdown() {
                    return None;
                }
                n.used.stops = 2;
                let savepoint = n.stopped_with.take();
                self.coordinator_failover(n, None, log.as_deref_mut());
                // Witness only: what the restore must be is checked where
                // `JobCommand::Restore` is routed.
                n.history.stop_resumed =
                    n.coord.latest_completed() == savepoint && n.history.restored;
            }
            Action::UserCheckpoint { forced } => {
                n.used.user_checkpoints = n.used.user_checkpoints.saturating_add(1);
                let kind = TriggerKind::Checkpoint { forced };
                self.coord_event(n, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::FailTask(t) => {
                let side = n.tasks.get(t.0 as usize)?;
                if side.is_down() || side.finished {
                    return None;
                }
                n.used.task_failures = n.used.task_failures.saturating_add(1);
                n.history.disrupted = true;
                self.task_event(n, t, TEv::OperatorFailed, log.as_deref_mut());
                let side = n.tasks.get_mut(t.0 as usize)?;
                // The failed attempt runs nothing more: its mailbox and input
                // buffers go with it (its writer and async work are read from
                // its task state, which the reducer has torn down).
                side.mailbox.clear();
                for c in &mut side.inputs {
                    c.queue.clear();
                }
                let attempt = side.attempt;
                self.coord_event(n, CEv::TaskFailed { task: t, attempt }, log.as_deref_mut());
            }
            Action::RestartTask(t) => {
                let side = n.tasks.get_mut(t.0 as usize)?;
                if !side.is_down() {
                    return None;
                }
                let fresh = self.restarted_task(AttemptNo(side.attempt.0.saturating_add(1)));
                side.restart(fresh);
                let attempt = side.attempt;
                self.coord_event(n, CEv::TaskRunning { task: t, attempt }, log.as_deref_mut());
            }
            Action::StopScheduler => {
                n.used.scheduler_stops = n.used.scheduler_stops.saturating_add(1);
                n.scheduler_stopped = true;
                self.coord_event(n, CEv::StopScheduler, log.as_deref_mut());
            }
            Action::StartScheduler => {
                n.scheduler_stopped = false;
                self.coord_event(n, CEv::StartScheduler, log.as_deref_mut());
            }
            Action::CoordinatorFailover { commit } => {
                let storing = n.io.iter().find_map(|x| match x {
                    Io::Store(c) => Some(*c),
                    Io::Allocate(_) | Io::Hooks(_) | Io::Finalize(_) => None,
                });
                if commit && storing.is_none() {
                    return None;
                }
                n.used.coordinator_failovers = n.used.coordinator_failovers.saturating_add(1);
                n.history.disrupted = true;
                self.coordinator_failover(n, storing.filter(|_| commit), log.as_deref_mut());
            }
            Action::Recovery(t, step) => {
                let side = n.tasks.get(t.0 as usize)?;
                let ev = match step {
                    RecoveryStep::Started => {
                        let channels = u32::try_from(side.inputs.len()).unwrap_or(u32::MAX);
                        TEv::RecoveryStarted { channels }
                    }
                    RecoveryStep::ChannelRecovered => TEv::ChannelRecovered,
                    RecoveryStep::Finished => TEv::RecoveryFinished,
                };
                self.task_event(n, t, ev, log.as_deref_mut());
            }
            Action::EndOfInput(t) => {
                n.used.end_of_input = n.used.end_of_input.saturating_add(1);
                self.task_event(n, t, TEv::EndOfInput, log.as_deref_mut());
            }
            Action::FinishTask(t) => {
                if !self.may_finish_task(n, t) {
                    return None;
                }
                n.used.finished_tasks = n.used.finished_tasks.saturating_add(1);
                let side = n.tasks.get(t.0 as usize)?;
                let attempt = side.attempt;
                if side.st.lifecycle() == Lifecycle::Running {
                    self.task_event(n, t, TEv::EndOfInput, log.as_deref_mut());
                }
                if let Some(side) = n.tasks.get_mut(t.0 as usize) {
                    side.finished = true;
                }
                self.coord_event(
                    n,
                    CEv::TaskFinished { task: t, attempt },
                    log.as_deref_mut(),
                );
            }
            Action::JobFailover => {
                if !n.job_failover_due {
                    return None;
                }
                n.used.job_failovers = n.used.job_failovers.saturating_add(1);
                n.history.disrupted = true;
                n.job_failover_due = false;
                self.job_failover(n, log.as_deref_mut());
            }
        }
        if n.violation.is_none() && n.quiet() {
            self.check_quiet(n, log);
        }
        Some(())
    }

    /// At quiescence: no task holds a write result, and no result any task
    /// created was left unsettled or unremoved.
    pub(super) fn check_quiet(&self, n: &mut World, log: Option<&mut Vec<Delivery>>) {
        let in_doubt: Vec<StateHandle> = n
            .coord
            .in_doubt()
            .map_or(Vec::new(), |c| c.handles().collect());
        let owned: Vec<StateHandle> = n
            .coord
            .owned_handles()
            .into_iter()
            .filter(|h| !in_doubt.contains(h))
            .collect();
        let durable = n
            .durable
            .ledger
            .check_quiet(&owned)
            .and_then(|()| self.files_quiet(n));
        for side in &n.tasks {
            let leaked = side.monitor.leaked();
            let r = durable
                .clone()
                .and_then(|()| check_quiescent(&side.st))
                .and_then(|()| {
                    if leaked.is_empty() {
                        Ok(())
                    } else {
                        Err(Violation::new(
                            LEAKED,
                            format!("quiet, but results {leaked:?} were never settled and removed"),
                        ))
                    }
                });
            if let Err(v) = r {
                if let Some(last) = log.and_then(|l| l.last_mut()) {
                    last.violation = Some(v.clone());
                }
                n.violation = Some(Box::new(v));
                return;
            }
        }
    }
}
