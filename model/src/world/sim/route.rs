//! The checked step of each machine, then the routing of every effect it returns into the world (one routing, through the effects' own shape).

use super::*;

/// What the host does after routing one coordinator step's effects.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Follow {
    /// A `JobCommand::Restore` was carried out.
    pub(super) restored: bool,
    /// The job was told to stop on this savepoint.
    pub(super) stop: Option<CheckpointId>,
    /// The job was told it finished, on this final checkpoint or none.
    pub(super) finish: Option<Option<CheckpointId>>,
}

impl Sim {
    pub(super) fn render_all<T: std::fmt::Debug>(&self, items: &[T]) -> Vec<String> {
        if self.render {
            items.iter().map(|e| format!("{e:?}")).collect()
        } else {
            Vec::new()
        }
    }

    pub(super) fn render_one<T: std::fmt::Debug>(&self, item: &T) -> String {
        if self.render {
            format!("{item:?}")
        } else {
            String::new()
        }
    }

    pub(super) fn record(
        &self,
        machine: &'static str,
        phase: &'static str,
        kind: &'static str,
        key: u64,
        outcome: impl FnOnce(&mut String),
    ) {
        if let Some(c) = &self.coverage {
            coverage::record(c, machine, phase, kind, key, outcome);
        }
    }

    /// The checked step of the coordinator, then the routing of its
    /// effects; when they restored the job's state while its tasks wait for
    /// it (a failover), the tasks start from it.
    pub(super) fn coord_event(
        &self,
        s: &mut World,
        ev: CEv,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Outcome {
        let (outcome, follow) = self.leader_event(s, Leader::Current, ev, log.as_deref_mut());
        if follow.restored && follow.stop.is_none() && follow.finish.is_none() {
            self.files_restored(s);
        }
        if let Some(savepoint) = follow.stop {
            // The documented rule (`JobCommand::Stop`): the stop wins over
            // a failover whose restore waited for the stop's completion;
            // that restore's command, in the same step, is not acted on.
            s.awaiting_restore = false;
            self.stop_job(s, savepoint, log);
        } else if let Some(final_checkpoint) = follow.finish {
            // So does a finish (the crate docs' failover recipe, step 4):
            // the restore waited for the final checkpoint, and the job ends
            // on it instead.
            s.awaiting_restore = false;
            self.finish_job(s, final_checkpoint, log);
        } else if follow.restored && s.awaiting_restore {
            self.start_tasks(s, log);
        }
        outcome
    }

    /// Whether the store, the id counter and the state files refuse a write
    /// on behalf of `generation`: a newer one was claimed.
    pub(super) fn fenced(s: &World, generation: Generation) -> bool {
        generation < s.durable.fence
    }

    /// One event for the current or the deposed coordinator, through the
    /// checked step, then the routing of its effects. Returns the outcome
    /// and what the host must do next ([`Follow`]).
    pub(super) fn leader_event(
        &self,
        s: &mut World,
        who: Leader,
        ev: CEv,
        log: Option<&mut Vec<Delivery>>,
    ) -> (Outcome, Follow) {
        let now = s.now;
        let (coord, ledger) = match who {
            Leader::Current => (&mut s.coord, &mut s.ledger),
            Leader::Zombie => match &mut s.zombie {
                Some(z) => (&mut z.coord, &mut z.ledger),
                None => return (Outcome::Ignored(Ignored::Shutdown), Follow::default()),
            },
        };
        // What the history below reads of the state before the step, which
        // the step may change in place: the phase (for coverage) and the
        // pending checkpoints that waited for a restarted attempt (a
        // deposed coordinator's reports are not acted on).
        let current = who == Leader::Current;
        let phase = (current && self.coverage.is_some()).then(|| coverage::coord_phase(coord));
        let waited_for_restarted: Vec<CheckpointId> = if current {
            coord
                .pending()
                .filter(|p| p.attempts().any(|a| a.0 > 0))
                .map(ckpt_core::coordinator::Pending::id)
                .collect()
        } else {
            Vec::new()
        };
        let (step, verdict) = if coord.is_shared() {
            // Another world holds this coordinator (the model checker's
            // successors share their parent's parts): the pure step, whose
            // state becomes a part of this world's own (changing the shared
            // part in place would first copy it, which the pure run does
            // anyway).
            let (t, verdict) = checked::coordinator_step(ledger, coord, now, &ev, self.rigor);
            *coord = Sealed::unsealed(t.state);
            (t.step, verdict)
        } else {
            // This world's own (a driver stepping one world, or a second
            // coordinator event in one action): in place; with full rigor
            // the state's cold part is copied once, by the pure run, on a
            // step that writes it.
            checked::coordinator_step_in_place(ledger, coord, now, &ev, self.rigor)
        };
        let mut found = verdict.err();
        if let Some(phase) = phase {
            let key = coverage::outcome_key(&step.outcome);
            self.record("coordinator", phase, coord_event_kind(&ev), key, |w| {
                coverage::write_coord_outcome_kind(w, &step.outcome);
            });
        }
        let zombie = !current;
        if let Outcome::Applied(Applied::CheckpointTriggered { checkpoint, .. }) = &step.outcome {
            note(&mut found, s.durable.ledger.used(*checkpoint));
        }
        if let Outcome::Applied(Applied::RestoreDeferred { .. }) = &step.outcome {
            s.history.restore_waited = true;
        }
        let mut follow = Follow::default();
        for e in &step.effects {
            match e {
                // The coordinator state holds its own timer table (the
                // world fires what it finds armed there; a deposed
                // coordinator's timers are not fired).
                CoordinatorEffect::Timer { .. }
                | CoordinatorEffect::Job(JobCommand::ShutdownServices(_)) => {}
                CoordinatorEffect::Discard {
                    generation, handle, ..
                } => {
                    if Self::fenced(s, *generation) {
                        s.history.fenced = true;
                    } else {
                        note(
                            &mut found,
                            self.delete_state(s, *handle, Deleter::Coordinator),
                        );
                    }
                }
                CoordinatorEffect::Io { request, .. } => {
                    let list = match who {
                        Leader::Current => Some(&mut s.io),
                        Leader::Zombie => s.zombie.as_mut().map(|z| &mut z.io),
                    };
                    if let Some(list) = list {
                        insert_sorted(list, Io::of(request));
                    }
                }
                // A deposed coordinator's RPCs reach nobody: every task was
                // redeployed under a new attempt, and an RPC for an attempt
                // that is gone is dropped.
                CoordinatorEffect::Rpc { .. } if zombie => {}
                CoordinatorEffect::Rpc {
                    task,
                    attempt,
                    message,
                    ..
                } => {
                    if let TaskMessage::NotifyComplete { checkpoint, .. } = message {
                        note(&mut found, s.durable.ledger.notified_complete(*checkpoint));
                    }
                    self.push_msg(
                        &mut s.net,
                        Msg::ToTask {
                            task: *task,
                            attempt: *attempt,
                            mail: Mail::of(message),
                        },
                    );
                }
                CoordinatorEffect::Job(JobCommand::ResetIdCounter { generation, next }) => {
                    if Self::fenced(s, *generation) {
                        s.history.fenced = true;
                    } else {
                        // Ids only grow: the counter moves forward to
                        // `next - 1`, never back.
                        let last = next.0.checked_sub(1).filter(|n| *n > 0).map(CheckpointId);
                        s.durable.counter = s.durable.counter.max(last);
                    }
                }
                // A deposed coordinator commands no job: its task managers
                // follow the new leader.
                CoordinatorEffect::Job(_) | CoordinatorEffect::Report(_) if zombie => {}
                CoordinatorEffect::Job(JobCommand::Restore {
                    checkpoint,
                    handles,
                }) => {
                    s.history.restored = true;
                    follow.restored = true;
                    note(&mut found, s.durable.ledger.restored(*checkpoint, handles));
                }
                CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
                    checkpoint,
                    discard_if_stored,
                    discard_if_not_stored,
                }) => {
                    s.durable.in_doubt = Some(InDoubt {
                        checkpoint: *checkpoint,
                        if_stored: discard_if_stored.clone(),
                        if_not_stored: discard_if_not_stored.clone(),
                    });
                }
                CoordinatorEffect::Job(JobCommand::Stop { savepoint, .. }) => {
                    follow.stop = Some(*savepoint);
                }
                CoordinatorEffect::Job(JobCommand::Finish { final_checkpoint }) => {
                    follow.finish = Some(*final_checkpoint);
                }
                CoordinatorEffect::Job(JobCommand::Fail(_)) => {
                    if s.used.job_failovers < self.cfg.job_failovers {
                        s.job_failover_due = true;
                    }
                }
                CoordinatorEffect::Report(Report::Completed { checkpoint, .. }) => {
                    // The attempts it waited for, captured at trigger time.
                    if waited_for_restarted.contains(checkpoint) {
                        s.history.failover_complete = true;
                    }
                    if s.history.abort_seen.is_some_and(|a| a < *checkpoint) {
                        s.history.abort_then_complete = true;
                        s.history.abort_seen = None;
                    }
                }
                CoordinatorEffect::Report(Report::Aborted {
                    checkpoint, reason, ..
                }) => {
                    let counts = !matches!(
                        reason,
                        AbortReason::Subsumed | AbortReason::Shutdown | AbortReason::Restored
                    );
                    if counts && !s.history.abort_then_complete {
                        s.history.abort_seen = Some(
                            s.history
                                .abort_seen
                                .map_or(*checkpoint, |a| a.min(*checkpoint)),
                        );
                    }
                }
                CoordinatorEffect::Report(Report::RequestFailed { .. }) => {}
            }
        }
        if let Some(log) = log {
            log.push(Delivery {
                now,
                line: TraceLine::Coordinator { now, event: ev },
                effects: self.render_all(&step.effects),
                outcome: self.render_one(&step.outcome),
                violation: found.clone(),
            });
        }
        if s.violation.is_none() {
            s.violation = found.map(Box::new);
        }
        (step.outcome, follow)
    }

    /// The checked step of task `t`, then the routing of its effects.
    pub(super) fn task_event(
        &self,
        s: &mut World,
        t: TaskId,
        ev: TEv,
        log: Option<&mut Vec<Delivery>>,
    ) {
        self.task_event_with(s, t, ev, |_| {}, log);
    }

    /// [`Sim::task_event`], `take` first run on the task's side (an action
    /// taking the event's mail or channel item from its queue): the side is
    /// copied once (copy on write) for both, and the checked step applies
    /// the event to that copy in place, the state before it read from the
    /// side the world this step started from still holds (no second copy
    /// of the task state for the step); a side no other world holds is
    /// changed in place, and the checked step's pure run makes the one copy.
    pub(super) fn task_event_with(
        &self,
        s: &mut World,
        t: TaskId,
        ev: TEv,
        take: impl FnOnce(&mut TaskSide),
        log: Option<&mut Vec<Delivery>>,
    ) {
        let now = s.now;
        let Some(slot) = s.tasks.get_mut(t.0 as usize) else {
            return;
        };
        // The side as it was, where another world holds it (the copy the
        // mutable access below makes leaves it as it is).
        let before = slot.is_shared().then(|| slot.clone());
        let side = &mut **slot;
        take(side);
        let attempt = side.attempt;
        if self.record_task_order {
            side.record(&ev);
        }
        let phase = self
            .coverage
            .is_some()
            .then(|| coverage::task_phase(&side.st));
        // Where no other world holds the side, the checked step copies the
        // task state itself, once, for its pure run.
        let (step, verdict) = checked::task_step_in_place(
            &mut side.monitor,
            before.as_ref().map(|b| &b.st),
            &mut side.st,
            now,
            &ev,
            self.rigor,
        );
        let mut found = verdict.err();
        if let Some(phase) = phase {
            let key = coverage::outcome_key(&step.outcome);
            self.record("task", phase, ev.kind(), key, |w| {
                use std::fmt::Write as _;
                let _ = write!(w, "{:?}", step.outcome);
            });
        }
        for e in &step.effects {
            match e {
                // The writer's and the async thread's outstanding work is
                // read from the task state; discards and operator notices
                // have no effect on the rest of the world; a failure is
                // acted on by the action that injected it (and a spurious
                // one is already a violation).
                TaskEffect::Writer(WriterCommand::CaptureRecovered { .. }) => {
                    s.history.captured_recovered = true;
                }
                TaskEffect::Writer(WriterCommand::Start(_) | WriterCommand::Abort { .. })
                | TaskEffect::AsyncPart(_)
                | TaskEffect::Operators(_)
                | TaskEffect::Fail(_) => {}
                TaskEffect::Discard(handle) => {
                    // The state its async part finished with: never while
                    // the coordinator still waits for the ack.
                    if let TEv::AsyncPartCompleted { checkpoint, .. } = &ev {
                        let awaited = check_task_discard(&s.coord, t, attempt, *checkpoint);
                        note(&mut found, awaited);
                    }
                    note(&mut found, self.delete_state(s, *handle, Deleter::Task));
                }
                TaskEffect::Mail(checkpoint) => {
                    if let Some(side) = s.tasks.get_mut(t.0 as usize) {
                        side.mailbox.push(Mail::Checkpoint(*checkpoint));
                    }
                }
                TaskEffect::Downstream(item) => self.broadcast(s, t, *item),
                TaskEffect::Coordinator(msg) => {
                    let msg = *msg;
                    // What a task may report again (kept only when the
                    // world lets tasks share state: it would split states
                    // for nothing otherwise).
                    if let (true, ToCoordinator::Ack { checkpoint, handle }) =
                        (self.cfg.shared_state, msg)
                    {
                        // A savepoint's state is never reported again:
                        // savepoints are self-contained.
                        let savepoint = is_savepoint(&s.coord, checkpoint);
                        if let Some(side) = s.tasks.get_mut(t.0 as usize) {
                            side.last_ack = (!savepoint).then_some((checkpoint, handle));
                        }
                    }
                    self.push_msg(
                        &mut s.net,
                        Msg::ToCoord {
                            task: t,
                            attempt,
                            msg,
                        },
                    );
                }
            }
        }
        if let Some(log) = log {
            log.push(Delivery {
                now,
                line: TraceLine::Task {
                    now,
                    task: self.trace_task(t, attempt),
                    event: ev,
                },
                effects: self.render_all(&step.effects),
                outcome: self.render_one(&step.outcome),
                violation: found.clone(),
            });
        }
        if s.violation.is_none() {
            s.violation = found.map(Box::new);
        }
    }

    /// Appends `item` to every output channel of `from` (lossless FIFO); a
    /// down or finished attempt's input channels are gone.
    pub(super) fn broadcast(&self, s: &mut World, from: TaskId, item: ChannelItem) {
        for d in self.downstream.get(from.0 as usize).into_iter().flatten() {
            if let Some(side) = s.tasks.get_mut(d.0 as usize) {
                if side.is_down() || side.finished {
                    continue;
                }
                if let Some(c) = side.inputs.iter_mut().find(|c| c.from == from) {
                    c.queue.push(item);
                }
            }
        }
    }

    /// Enqueues an RPC mail for attempt `attempt` of task `t`; dropped when
    /// that attempt is not the running one (restarted since, down, or
    /// finished).
    pub(super) fn push_mail(s: &mut World, t: TaskId, attempt: AttemptNo, m: Mail) {
        if let Some(side) = s.tasks.get_mut(t.0 as usize) {
            if side.attempt == attempt && !side.is_down() && !side.finished {
                side.mailbox.push(m);
            }
        }
    }
}
