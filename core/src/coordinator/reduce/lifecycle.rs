//! Tasks, restore, recovery, savepoints and shutdown.

use super::*;

impl CoordinatorState {
    /// The status of `task`, or the refusal of a task the job does not
    /// have (`TaskRunning`, `TaskFailed` and `TaskFinished` alike).
    pub(super) fn known_task(&self, task: TaskId) -> Result<super::super::TaskStatus, Outcome> {
        match self.cold.tasks.get(task.0 as usize).copied() {
            Some(s) if self.cold.config.is_known(task) => Ok(s),
            Some(_) | None => Err(Outcome::Rejected(CoordinatorError::UnknownTask(task))),
        }
    }

    pub(super) fn on_task_running(
        &mut self,
        task: TaskId,
        attempt: AttemptNo,
        fx: &mut Fx,
    ) -> Outcome {
        let s = match self.known_task(task) {
            Ok(s) => s,
            Err(refused) => return refused,
        };
        // The known attempt again is a duplicate while it runs, and a late
        // report once it failed: a failed attempt never runs again (a
        // restart is a new attempt). Reviving it would send trigger
        // messages to a dead task and leave checkpoints waiting for acks
        // that cannot come.
        if attempt <= s.attempt {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        // A newer attempt while the old one still counted as running means
        // the old one is gone without a failure report: checkpoints waiting
        // for its ack can never complete, so abort them now rather than let
        // them expire.
        let aborted = if s.running {
            // The old attempt is gone: no notification goes to it.
            self.cold.tasks.set(
                task.0 as usize,
                crate::coordinator::TaskStatus {
                    attempt: s.attempt,
                    running: false,
                    finished: false,
                },
            );
            self.abort_unacked_by(task, AbortReason::TaskFailed, fx)
        } else {
            0
        };
        self.cold.tasks.set(
            task.0 as usize,
            crate::coordinator::TaskStatus {
                attempt,
                running: true,
                finished: false,
            },
        );
        if s.finished {
            self.unfinish();
        }
        Outcome::Applied(Applied::TaskUpdated { aborted })
    }

    /// Aborts every pending checkpoint still waiting for `task`'s ack (those
    /// already finalizing have every ack and are left alone) for `reason`;
    /// resumes the queue when any was aborted. Returns how many were aborted.
    pub(super) fn abort_unacked_by(
        &mut self,
        task: TaskId,
        reason: AbortReason,
        fx: &mut Fx,
    ) -> usize {
        let victims: Vec<CheckpointId> = match self.cold.config.wait_slot(task) {
            Some(slot) => self
                .pending
                .values()
                .filter(|p| {
                    !matches!(p.phase(), PendingPhase::Finalizing | PendingPhase::Storing)
                        && p.table().get(slot) == Some(AckSlot::Waiting)
                })
                .map(Pending::id)
                .collect(),
            None => Vec::new(),
        };
        for id in &victims {
            self.abort(*id, reason, fx);
        }
        if !victims.is_empty() {
            self.resume_after_aborts(fx);
        }
        victims.len()
    }

    /// Resumes the request queued at the concurrency bound after aborts
    /// freed slots, as Flink does in every `abortPendingCheckpoint`; shared
    /// by a task's failure and a restore. Legacy (FLINK-13256): the queued
    /// request, which had cancelled the periodic timer, was never resumed.
    fn resume_after_aborts(&mut self, fx: &mut Fx) {
        if !self
            .cold
            .config
            .semantics()
            .is(LegacyBug::AbortAllLeavesQueueStuck)
        {
            self.resume_queued(fx);
        }
    }

    pub(super) fn on_task_failed(
        &mut self,
        task: TaskId,
        attempt: AttemptNo,
        fx: &mut Fx,
    ) -> Outcome {
        let s = match self.known_task(task) {
            Ok(s) => s,
            Err(refused) => return refused,
        };
        if attempt != s.attempt || !s.running {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        self.cold.tasks.set(
            task.0 as usize,
            crate::coordinator::TaskStatus {
                attempt,
                running: false,
                finished: false,
            },
        );
        let aborted = self.abort_unacked_by(task, AbortReason::TaskFailed, fx);
        Outcome::Applied(Applied::TaskUpdated { aborted })
    }

    /// The checkpoint `Restore { Latest }` restores: the retained one with
    /// the highest id ([`crate::commit::latest`]), or, in the legacy
    /// semantics that had two meanings of "latest", the last one committed.
    pub(super) fn restore_point(&self) -> Option<&Completed> {
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::RestoreLastCommitted)
        {
            self.cold.completed.last()
        } else {
            self.latest_retained()
        }
    }

    /// Emits the restore of the latest retained checkpoint (or from
    /// scratch when there is none).
    pub(super) fn emit_restore(&self, fx: &mut Fx) -> Applied {
        let (checkpoint, handles) = match self.restore_point() {
            Some(c) => (Some(c.id), c.handles().collect()),
            None => (None, Vec::new()),
        };
        fx.push(E::Job(JobCommand::Restore {
            checkpoint,
            handles,
        }));
        Applied::Restored { checkpoint }
    }

    pub(super) fn on_restore(&mut self, source: RestoreSource, fx: &mut Fx) -> Outcome {
        match source {
            RestoreSource::Latest { error_if_none } => {
                if self.cold.restore_deferred {
                    return Outcome::Ignored(Ignored::RestoreAlreadyDeferred);
                }
                let legacy = self
                    .cold
                    .config
                    .semantics()
                    .is(LegacyBug::RestoreBehindCompletion);
                // A finalize or store in flight may commit: the restore
                // point is not known until it answers.
                let awaiting = self.completing().filter(|_| !legacy);
                if error_if_none && self.restore_point().is_none() && awaiting.is_none() {
                    return Outcome::Rejected(CoordinatorError::NoCheckpointToRestore);
                }
                let mut aborted = false;
                if !legacy {
                    // The run before the restore cannot complete anything
                    // but what is already out for storing.
                    let ids: Vec<CheckpointId> = self
                        .pending
                        .keys()
                        .filter(|id| Some(*id) != self.completing())
                        .collect();
                    aborted = !ids.is_empty();
                    for id in ids {
                        self.abort(id, AbortReason::Restored, fx);
                    }
                }
                // FIX (found by fuzzing `system_events`, 2026-12-05): the
                // aborts free the concurrency slots, so a request queued at
                // the bound (which cancelled the periodic timer) is resumed
                // here as after every other abort (Flink resumes its queue
                // in every `abortPendingCheckpoint`). It was left queued:
                // every later periodic or user request was refused as
                // "already queued" and no checkpoint ever completed again.
                // Resumed after a deferral is set, a request is refused (no
                // task of the new run may checkpoint yet), never stranded.
                // Legacy (FLINK-13256): not resumed, as after a task failure.
                if let Some(c) = awaiting {
                    self.cold.restore_deferred = true;
                    if aborted {
                        self.resume_after_aborts(fx);
                    }
                    return Outcome::Applied(Applied::RestoreDeferred { awaiting: c });
                }
                let applied = self.emit_restore(fx);
                if aborted {
                    self.resume_after_aborts(fx);
                }
                Outcome::Applied(applied)
            }
            RestoreSource::Savepoint {
                checkpoint,
                handles,
            } => {
                let Some(next) = checkpoint.next() else {
                    return Outcome::Rejected(CoordinatorError::IdOverflow(checkpoint));
                };
                let conflict = !self.pending.is_empty()
                    || self.cold.in_flight.is_some()
                    || self.cold.last_id.is_some_and(|l| checkpoint <= l);
                if conflict {
                    return Outcome::Rejected(CoordinatorError::SavepointRestoreConflict(
                        checkpoint,
                    ));
                }
                fx.push(E::Job(JobCommand::ResetIdCounter {
                    generation: self.cold.generation,
                    next,
                }));
                self.cold.last_id = Some(checkpoint);
                // FIX: the restored savepoint is now the latest completed
                // checkpoint (it is in the completed store), so a later
                // notify-aborted must carry it; it used to stay `None`.
                if self.cold.latest_completed.is_none_or(|l| l < checkpoint) {
                    self.cold.latest_completed = Some(checkpoint);
                }
                self.remember(checkpoint);
                self.cold.completed.push_back(Completed {
                    id: checkpoint,
                    request: None,
                    savepoint: true,
                    timestamp: self.now,
                    handles: handles.iter().map(|h| AckSlot::Acked(Some(*h))).collect(),
                });
                self.evict_completed(1, fx);
                fx.push(E::Job(JobCommand::Restore {
                    checkpoint: Some(checkpoint),
                    handles,
                }));
                Outcome::Applied(Applied::Restored {
                    checkpoint: Some(checkpoint),
                })
            }
        }
    }

    pub(super) fn on_recover(
        &mut self,
        checkpoints: Vec<RecoveredCheckpoint>,
        last_id: Option<CheckpointId>,
        generation: Generation,
    ) -> Outcome {
        // Fresh: nothing a checkpoint, the scheduler or an earlier
        // `Recover` leaves behind. A recovered generation counts (a second
        // `Recover` could otherwise lower the fencing token of a leader that
        // already claimed one); a task's status or a restore from scratch
        // leave no trace here, which is why the docs ask for `Recover` first.
        let fresh = self.cold.last_id.is_none()
            && self.cold.completed.is_empty()
            && self.pending.is_empty()
            && self.cold.in_flight.is_none()
            && self.cold.queue.is_empty()
            && self.cold.recent.is_empty()
            && self.cold.timers.len() == 0
            && self.cold.generation == Generation(0);
        let problem = if !fresh {
            Some(RecoverProblem::NotFresh)
        } else if !crate::commit::is_legal_order(
            checkpoints.iter().map(|c| (c.checkpoint, c.savepoint)),
        ) {
            Some(RecoverProblem::OutOfOrder)
        } else if checkpoints
            .iter()
            .any(|c| last_id.is_none_or(|l| c.checkpoint > l))
        {
            Some(RecoverProblem::IdAboveCounter)
        } else {
            None
        };
        if let Some(p) = problem {
            return Outcome::Rejected(CoordinatorError::RecoverConflict(p));
        }
        self.cold.last_id = last_id;
        // Legacy: the new leader writes under the same token as the one it
        // replaced, so nothing can tell a deposed leader's writes apart.
        if !self.cold.config.semantics().is(LegacyBug::NoFencing) {
            self.cold.generation = generation;
        }
        for c in checkpoints {
            self.remember(c.checkpoint);
            // The newest completion, as the running coordinator keeps it: a
            // savepoint committed after a newer checkpoint does not lower it.
            if self.cold.latest_completed.is_none_or(|l| l < c.checkpoint) {
                self.cold.latest_completed = Some(c.checkpoint);
            }
            self.cold.completed.push_back(Completed {
                id: c.checkpoint,
                request: None,
                savepoint: c.savepoint,
                timestamp: c.timestamp,
                handles: c.handles.iter().map(|h| AckSlot::Acked(Some(*h))).collect(),
            });
        }
        Outcome::Applied(Applied::Recovered {
            latest: self.cold.latest_completed,
        })
    }

    /// The two discard lists of the in-doubt hand-over: what goes if the
    /// store holds `c` (the state of the checkpoints its commit evicts,
    /// by the same retention as [`Self::evict_completed`], that no
    /// checkpoint still stored holds), and what goes if it definitely does
    /// not (`c`'s own state that no retained checkpoint or savepoint holds).
    pub(super) fn in_doubt_lists(&self, c: &Completed) -> (Vec<StateHandle>, Vec<StateHandle>) {
        let mine: Vec<StateHandle> = sorted(c.handles());
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::InDoubtListsSharedState)
        {
            // Legacy: every handle of the in-doubt checkpoint, shared or not.
            return (Vec::new(), mine);
        }
        let retained: Vec<StateHandle> =
            sorted(self.cold.completed.iter().flat_map(Completed::handles));
        let if_not_stored = minus(&mine, &retained);
        // Retention after the commit: the checkpoints (never savepoints)
        // beyond the bound, oldest first, leave the store.
        let max = self.cold.config.retained_max;
        let mut counted =
            self.cold.completed.iter().filter(|k| !k.savepoint).count() + usize::from(!c.savepoint);
        let mut evicted = Vec::new();
        let mut kept = mine;
        for k in &self.cold.completed {
            if !k.savepoint && counted > max {
                counted -= 1;
                evicted.extend(k.handles());
            } else {
                kept.extend(k.handles());
            }
        }
        let kept = sorted(kept);
        (minus(&sorted(evicted), &kept), if_not_stored)
    }

    pub(super) fn on_dispose_savepoint(&mut self, id: CheckpointId, fx: &mut Fx) -> Outcome {
        let Some(at) = self.cold.completed.iter().position(|c| c.id == id) else {
            return Outcome::Ignored(Ignored::UnknownCheckpoint);
        };
        if !self.cold.completed.get(at).is_some_and(|c| c.savepoint) {
            return Outcome::Rejected(CoordinatorError::NotASavepoint(id));
        }
        let Some(gone) = self.cold.completed.remove(at) else {
            return Outcome::Ignored(Ignored::UnknownCheckpoint);
        };
        let mut handles: Vec<StateHandle> = gone.handles().collect();
        self.discard_unheld(id, &mut handles, fx);
        Outcome::Applied(Applied::SavepointDisposed { checkpoint: id })
    }

    /// Whether a stop-with-savepoint holds back every other trigger (always
    /// once one was asked for, but in the legacy semantics of Arroyo issue
    /// 24, which kept checkpointing).
    pub(super) fn stopping(&self) -> bool {
        self.cold.stop.is_some()
            && !self
                .cold
                .config
                .semantics()
                .is(LegacyBug::StopLaunchesSecondCheckpoint)
    }

    /// `Trigger { StopWithSavepoint }`: stop periodic scheduling (ending the
    /// checkpoints that wait for acks and the requests waiting, as
    /// `StopScheduler` does; the one being stored completes), then trigger
    /// the savepoint as any forced one. A refused one leaves everything as
    /// it was but the stop of the scheduler, which resumes.
    pub(super) fn on_stop_with_savepoint(&mut self, request: Request, fx: &mut Fx) -> Applied {
        let id = request.id;
        if self.stopping() {
            return Applied::TriggerRejected {
                request: id,
                reason: TriggerRejection::Stopping,
            };
        }
        let resume_periodic = self.periodic;
        if !self
            .cold
            .config
            .semantics()
            .is(LegacyBug::StopLaunchesSecondCheckpoint)
        {
            self.stop_scheduler(fx);
        }
        self.cold.stop = Some(StopPhase::Requested {
            request: id,
            resume_periodic,
        });
        // The stop itself is not held back by its own phase.
        let phase = self.cold.stop.take();
        let applied = self.on_request(request, true, fx);
        self.cold.stop = phase;
        applied
    }

    /// A stop-with-savepoint whose request is gone without a savepoint
    /// (its id allocation failed, its checkpoint was aborted, the request
    /// was refused or dropped) is over: periodic scheduling resumes as it
    /// was when the stop was asked for.
    pub(super) fn end_failed_stop(&mut self, fx: &mut Fx) {
        let Some(StopPhase::Requested {
            request,
            resume_periodic,
        }) = self.cold.stop
        else {
            return;
        };
        let alive = self
            .cold
            .in_flight
            .as_ref()
            .is_some_and(|r| r.id == request)
            || self.cold.queue.iter().any(|r| r.id == request)
            || self.pending.values().any(|p| p.request() == request);
        if alive {
            return;
        }
        self.cold.stop = None;
        if resume_periodic && !self.shutdown && !self.periodic {
            self.periodic = true;
            let at = self.now.saturating_add(self.cold.config.interval_ms);
            self.arm(Timer::Periodic, at, fx);
        }
    }

    pub(super) fn on_shutdown(&mut self, status: JobStatus, fx: &mut Fx) -> Outcome {
        self.shutdown = true;
        self.periodic = false;
        // Legacy (FLINK-20992 / FLINK-18290): the request allocating its id
        // was not cancelled; its late answer still creates a checkpoint.
        let in_flight = if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::EffectsAfterShutdown)
        {
            self.cold.in_flight.take()
        } else {
            None
        };
        self.drop_requests(AbortReason::Shutdown, fx);
        self.cold.in_flight = in_flight;
        self.cold.restore_deferred = false;
        if let Some(id) = self.completing_kept() {
            // Never discard: the store may hold (or still commit) it. The
            // state stays owned here, in doubt, for the host to resolve.
            if let Some(p) = self.pending.remove(&id) {
                self.set_completing(None);
                self.remember(id);
                let in_doubt = Completed {
                    id,
                    request: Some(p.request),
                    savepoint: p.kind.is_savepoint(),
                    timestamp: p.timestamp,
                    handles: p.acks,
                };
                let (discard_if_stored, discard_if_not_stored) = self.in_doubt_lists(&in_doubt);
                fx.push(E::Job(JobCommand::ResolveInDoubt {
                    checkpoint: id,
                    discard_if_stored,
                    discard_if_not_stored,
                }));
                self.cold.in_doubt = Some(in_doubt);
            }
        }
        let ids: Vec<CheckpointId> = self.pending.keys().collect();
        for id in ids {
            self.abort(id, AbortReason::Shutdown, fx);
        }
        let timers: Vec<Timer> = self.cold.timers.keys().copied().collect();
        for t in timers {
            self.disarm(t, fx);
        }
        fx.push(E::Job(JobCommand::ShutdownServices(status)));
        Outcome::Applied(Applied::ShutDown)
    }
}
