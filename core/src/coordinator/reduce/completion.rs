//! Completion: a fully acknowledged checkpoint is finalized, then stored, one at a time, lowest fully-acknowledged id first; retention, subsumption, notifications, aborts and the failure counter.

use super::*;

impl CoordinatorState {
    /// A checkpoint has every ack (and its hooks): it no longer waits on
    /// anybody but us, so its timeout is cancelled. Completions run one at a
    /// time, lowest fully-acknowledged id first, so completed checkpoint ids
    /// increase; a savepoint (never subsumed) may complete after a newer
    /// checkpoint, and "latest" is the highest id
    /// ([`crate::commit::latest`]).
    pub(super) fn on_fully_acked(&mut self, id: CheckpointId, fx: &mut Fx) {
        self.disarm(Timer::Timeout(id), fx);
        if self.cold.config.semantics().is(LegacyBug::StopBeforeCommit) {
            // Legacy (Arroyo PR 1124): every task acknowledged the stop's
            // savepoint, so it counts as done: the tasks commit and the job
            // stops before its metadata is written and stored.
            if let Some(p) = self.pending.get(&id).filter(|p| p.kind().stops_the_job()) {
                let (request, timestamp, kind) = (p.request(), p.timestamp(), p.kind().clone());
                fx.push(E::Report(Report::Completed {
                    checkpoint: id,
                    request,
                    savepoint: true,
                }));
                self.notify_complete(id, timestamp, fx);
                self.emit_stop(id, &kind, fx);
            }
        }
        self.start_next_completion(fx);
    }

    /// Tells every task to commit to that checkpoint `id` completed.
    pub(super) fn notify_complete(&self, id: CheckpointId, timestamp: Millis, fx: &mut Fx) {
        // One effect per task: grow the list once, not by doubling.
        fx.reserve(self.cold.config.commit.len());
        for t in &self.cold.config.commit {
            // A finished attempt takes no more RPCs.
            if let Some(s) = self.cold.tasks.get(t.0 as usize).filter(|s| !s.finished) {
                fx.push(E::Rpc {
                    task: *t,
                    attempt: s.attempt,
                    generation: self.cold.generation,
                    message: TaskMessage::NotifyComplete {
                        checkpoint: id,
                        timestamp,
                    },
                });
            }
        }
    }

    /// The stop-with-savepoint `id` is done: the job stops on it.
    pub(super) fn emit_stop(&mut self, id: CheckpointId, kind: &TriggerKind, fx: &mut Fx) {
        if let TriggerKind::StopWithSavepoint { drain, .. } = kind {
            if !matches!(self.cold.stop, Some(StopPhase::Stopped { .. })) {
                self.cold.stop = Some(StopPhase::Stopped { savepoint: id });
                fx.push(E::Job(JobCommand::Stop {
                    savepoint: id,
                    drain: *drain,
                }));
            }
        }
    }

    pub(super) fn start_next_completion(&mut self, fx: &mut Fx) {
        if self.completing().is_some() {
            return;
        }
        let externalized = self.cold.config.externalized;
        if let Some(p) = self
            .pending
            .find_mut(|p| p.fully_acked() && p.phase() == PendingPhase::AwaitingAcks)
        {
            let id = p.id;
            p.phase = PendingPhase::Finalizing;
            let handles = p.handle_list();
            let externalized = externalized || p.kind.is_savepoint();
            fx.push(E::Io {
                generation: self.cold.generation,
                request: IoRequest::Finalize {
                    checkpoint: id,
                    kind: p.kind.clone(),
                    timestamp: p.timestamp,
                    externalized,
                    handles,
                },
            });
            self.set_completing(Some(id));
        }
    }

    pub(super) fn on_finalize_done(
        &mut self,
        id: CheckpointId,
        result: Result<(), IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(why) = self.awaits(id, PendingPhase::Finalizing) {
            return Outcome::Ignored(why);
        }
        if result.is_err() {
            return self.fail_completion(id, AbortReason::FinalizeFailed, fx);
        }
        let Some(p) = self.pending.get_mut(&id) else {
            return unreachable_branch(Unreachable::AwaitedVanished);
        };
        p.phase = PendingPhase::Storing;
        fx.push(E::Io {
            generation: self.cold.generation,
            request: IoRequest::Store { checkpoint: id },
        });
        Outcome::Applied(Applied::Finalized { checkpoint: id })
    }

    /// Whether checkpoint `id` is pending and waits in `phase` for an I/O
    /// answer; if not, why the answer is ignored (late, unknown, or not
    /// awaited in that phase).
    pub(super) fn awaits(&self, id: CheckpointId, phase: PendingPhase) -> Result<(), Ignored> {
        match self.pending.get(&id) {
            None => Err(self.gone(id)),
            Some(p) if p.phase() == phase => Ok(()),
            Some(_) => Err(Ignored::NotAwaited),
        }
    }

    pub(super) fn fail_completion(
        &mut self,
        id: CheckpointId,
        reason: AbortReason,
        fx: &mut Fx,
    ) -> Outcome {
        self.abort(id, reason, fx);
        self.resume_queued(fx);
        self.start_next_completion(fx);
        Outcome::Applied(Applied::Aborted {
            checkpoint: id,
            reason,
        })
    }

    pub(super) fn on_store_done(
        &mut self,
        id: CheckpointId,
        result: Result<(), IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(why) = self.awaits(id, PendingPhase::Storing) {
            return Outcome::Ignored(why);
        }
        if result.is_err() {
            return self.fail_completion(id, AbortReason::StoreFailed, fx);
        }
        let Some(p) = self.pending.remove(&id) else {
            return unreachable_branch(Unreachable::AwaitedVanished);
        };
        self.set_completing(None);
        self.remember(id);
        let savepoint = p.kind.is_savepoint();
        self.cold.completed.push_back(Completed {
            id,
            request: Some(p.request),
            savepoint,
            timestamp: p.timestamp,
            handles: p.acks,
        });
        // Room for the discards of the evicted checkpoints and the
        // notify-complete to every task that follow, in one allocation.
        self.evict_completed(self.cold.config.commit.len() + 1, fx);
        // FIX: record the new latest completed id *before* subsuming, so the
        // notify-aborted of a subsumed checkpoint carries the checkpoint that
        // subsumed it (modern Flink adds the completed checkpoint to the store
        // before dropping subsumed ones); it used to carry the previous one.
        if self.cold.latest_completed.is_none_or(|l| l < id) {
            self.cold.latest_completed = Some(id);
        }
        // Subsume every older pending checkpoint that may be subsumed.
        let older: Vec<CheckpointId> = self
            .pending
            .values()
            .filter(|q| q.id() < id && q.can_be_subsumed())
            .map(Pending::id)
            .collect();
        for q in older {
            self.abort(q, AbortReason::Subsumed, fx);
        }
        self.cold.last_completion = Some(self.now);
        self.cold.failures.count = 0;
        self.cold.failures.job_failed = false;
        fx.push(E::Report(Report::Completed {
            checkpoint: id,
            request: p.request,
            savepoint,
        }));
        self.notify_complete(id, p.timestamp, fx);
        // A stop-with-savepoint ends the job once the store committed it.
        self.emit_stop(id, &p.kind, fx);
        // The final checkpoint ends the job once the store committed it.
        self.on_final_completed(id, fx);
        self.resume_queued(fx);
        self.start_next_completion(fx);
        Outcome::Applied(Applied::Completed { checkpoint: id })
    }

    /// Retention: the oldest checkpoints beyond `retained_max` go, and
    /// their state not held by another live checkpoint is discarded.
    /// Savepoints neither count nor go: they are the user's until disposed
    /// of ([`CoordinatorEvent::DisposeSavepoint`]).
    ///
    /// The effect list first grows by room for every handle the evicted
    /// checkpoints may discard plus `extra` effects the caller pushes next
    /// (one allocation where pushing one by one grew it by doubling: a
    /// dozen copies of every effect at 100 000 tasks).
    pub(super) fn evict_completed(&mut self, extra: usize, fx: &mut Fx) {
        let legacy = self
            .cold
            .config
            .semantics()
            .is(LegacyBug::SavepointExpiresWithRetention);
        let counts = |c: &Completed| legacy || !c.savepoint;
        let max = self.cold.config.retained_max;
        let counted = self.cold.completed.iter().filter(|c| counts(c)).count();
        let room: usize = self
            .cold
            .completed
            .iter()
            .filter(|c| counts(c))
            .take(counted.saturating_sub(max))
            .map(|c| c.handles.len())
            .sum();
        fx.reserve(room.saturating_add(extra));
        while self.cold.completed.iter().filter(|c| counts(c)).count() > max {
            let Some(old) = self
                .cold
                .completed
                .iter()
                .position(counts)
                .and_then(|at| self.cold.completed.remove(at))
            else {
                return;
            };
            let mut handles = old.handle_vec();
            self.discard_unheld(old.id, &mut handles, fx);
        }
    }

    pub(super) fn remember(&mut self, id: CheckpointId) {
        if self.cold.recent.len() >= RECENT_IDS_MAX {
            self.cold.recent.pop_front();
        }
        self.cold.recent.push_back(id);
    }

    /// Abort one pending checkpoint: cancel its timeout, discard its state,
    /// remember its id, tell the host and the tasks, count the failure.
    pub(super) fn abort(&mut self, id: CheckpointId, reason: AbortReason, fx: &mut Fx) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.disarm(Timer::Timeout(id), fx);
        if self.completing() == Some(id) {
            self.set_completing(None);
        }
        let mut handles = p.handle_vec();
        self.discard_unheld(id, &mut handles, fx);
        self.remember(id);
        fx.push(E::Report(Report::Aborted {
            checkpoint: id,
            request: p.request,
            reason,
        }));
        if reason != AbortReason::Shutdown {
            for t in &self.cold.config.commit {
                if let Some(s) = self.cold.tasks.get(t.0 as usize) {
                    if s.running {
                        fx.push(E::Rpc {
                            task: *t,
                            attempt: s.attempt,
                            generation: self.cold.generation,
                            message: TaskMessage::NotifyAborted {
                                checkpoint: id,
                                latest_completed: self.cold.latest_completed,
                                timestamp: p.timestamp,
                            },
                        });
                    }
                }
            }
        }
        self.count_failure(reason, p.kind.is_savepoint(), fx);
    }

    /// Flink's `CheckpointFailureManager`: count each checkpoint id once
    /// (structurally: see [`FailureCounter`](super::state::FailureCounter)),
    /// only for counted reasons and never for savepoints; past the limit,
    /// fail the job (once, until a success resets the counter).
    pub(super) fn count_failure(&mut self, reason: AbortReason, savepoint: bool, fx: &mut Fx) {
        if savepoint || !reason.counts_as_failure() {
            return;
        }
        self.cold.failures.count = self.cold.failures.count.saturating_add(1);
        if self.cold.failures.count > self.cold.config.tolerable_failures
            && !self.cold.failures.job_failed
        {
            self.cold.failures.job_failed = true;
            fx.push(E::Job(JobCommand::Fail(
                FailJobReason::TolerableFailuresExceeded {
                    failures: self.cold.failures.count,
                },
            )));
        }
    }
}
