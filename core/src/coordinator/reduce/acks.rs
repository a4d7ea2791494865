//! Acknowledgements and declines: who owns a state handle, discarding what nobody holds.

use super::*;

impl CoordinatorState {
    pub(super) fn check_job(&self, job: JobId) -> Result<(), CoordinatorError> {
        if job == self.cold.config.job {
            Ok(())
        } else {
            Err(CoordinatorError::WrongJob {
                expected: self.cold.config.job,
                got: job,
            })
        }
    }

    /// The answer for a message about a checkpoint that is not pending.
    pub(super) fn gone(&self, id: CheckpointId) -> Ignored {
        if self.cold.recent.contains(&id) {
            Ignored::LateMessage
        } else {
            Ignored::UnknownCheckpoint
        }
    }

    /// Discards the state behind `handles` (given up by checkpoint `id`,
    /// which the state no longer holds, or never held), except the handles
    /// a live checkpoint still holds: retained, in doubt, or acknowledged
    /// to a pending one (a late or duplicated ack of a handle it already
    /// holds, a task that sends a handle another checkpoint holds, or state
    /// two recovered checkpoints share). A handle's state goes once, with
    /// the last checkpoint that holds it, as with Flink's shared-state
    /// registry. Each handle is discarded at most once per call.
    ///
    /// Runs only when something is discarded (aborts, evictions, refused
    /// acks; never a counted ack). When the handles given up are already in
    /// ascending order and their range does not meet the range of the
    /// handles still held (a host that numbers its files by checkpoint, as
    /// both hosts here do), it costs one pass over each; otherwise one sort
    /// of the handles still held.
    pub(super) fn discard_unheld(
        &self,
        id: CheckpointId,
        handles: &mut Vec<StateHandle>,
        fx: &mut Fx,
    ) {
        if !handles.is_sorted() {
            handles.sort_unstable();
        }
        handles.dedup();
        let (Some(&lo), Some(&hi)) = (handles.first(), handles.last()) else {
            return;
        };
        let disjoint = self.held_handles().all(|h| h < lo || h > hi);
        let held = if disjoint {
            Vec::new()
        } else {
            let mut held: Vec<StateHandle> = self.held_handles().collect();
            held.sort_unstable();
            held
        };
        // At most one effect per handle: grow the list once, not by
        // doubling (a completion that evicts a checkpoint of 100 000 tasks
        // otherwise copied its discards a dozen times).
        fx.reserve(handles.len());
        for h in handles.drain(..) {
            if held.binary_search(&h).is_err() {
                fx.push(E::Discard {
                    generation: self.cold.generation,
                    checkpoint: id,
                    handle: h,
                });
            }
        }
    }

    /// [`Self::discard_unheld`] for the one handle of a refused ack.
    pub(super) fn discard_one(&self, id: CheckpointId, handle: Option<StateHandle>, fx: &mut Fx) {
        if let Some(h) = handle {
            self.discard_unheld(id, &mut vec![h], fx);
        }
    }

    pub(super) fn on_ack(
        &mut self,
        job: JobId,
        task: TaskId,
        attempt: AttemptNo,
        id: CheckpointId,
        handle: Option<StateHandle>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(e) = self.check_job(job) {
            return Outcome::Rejected(e);
        }
        let slot = self.cold.config.wait_slot(task);
        // Read first (nothing is copied for a refused ack), then one write.
        let Some((i, p)) = self
            .pending
            .find(&id)
            .ok()
            .and_then(|i| Some((i, self.pending.at(i)?)))
        else {
            // Late or unknown: discard, unless a live checkpoint holds the
            // handle (a duplicated ack that arrives after completion must
            // not delete committed state).
            let why = self.gone(id);
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(why);
        };
        let Some(slot) = slot else {
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(Ignored::UnknownTask);
        };
        if !p.expects(slot, attempt) {
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(Ignored::UnknownTask);
        }
        let phase = p.phase();
        let completing = matches!(phase, PendingPhase::Finalizing | PendingPhase::Storing);
        // One read of the slot: the write (in place when the table can,
        // `PendingMap::ack`) or what it holds.
        let cell: Option<AckSlot> = if completing {
            p.table().get(slot)
        } else {
            match self.pending.ack(i, slot, handle) {
                Ok(remaining) => {
                    if remaining == 0 && phase == PendingPhase::AwaitingAcks {
                        self.on_fully_acked(id, fx);
                    }
                    return Outcome::Applied(Applied::Acknowledged {
                        checkpoint: id,
                        // Lossless: `usize` is at least 32 bits wherever
                        // this builds.
                        remaining: usize::try_from(remaining).unwrap_or(usize::MAX),
                    });
                }
                Err(held) => held,
            }
        };
        match cell {
            None => {
                // Slots are sized from `tasks_to_wait` at trigger time and
                // `wait_slot` only answers indices below that size.
                self.discard_one(id, handle, fx);
                unreachable_branch(Unreachable::AckSlotMissing)
            }
            Some(AckSlot::Acked(held)) => {
                // Same handle again: a duplicate delivery, nothing to free.
                // Another handle: the second write is an orphan.
                let outcome = Outcome::Ignored(if completing {
                    Ignored::CheckpointDiscarded
                } else {
                    Ignored::DuplicateAck
                });
                if held != handle {
                    self.discard_one(id, handle, fx);
                }
                outcome
            }
            Some(AckSlot::Waiting) => {
                // Completing: the acks it waited for are all in; a late
                // one's state is not part of it.
                self.discard_one(id, handle, fx);
                Outcome::Ignored(Ignored::CheckpointDiscarded)
            }
        }
    }

    pub(super) fn on_decline(
        &mut self,
        job: JobId,
        task: TaskId,
        attempt: AttemptNo,
        id: CheckpointId,
        reason: DeclineReason,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(e) = self.check_job(job) {
            return Outcome::Rejected(e);
        }
        let Some(p) = self.pending.get(&id) else {
            return Outcome::Ignored(self.gone(id));
        };
        if !self.cold.config.is_known(task) {
            return Outcome::Ignored(Ignored::UnknownTask);
        }
        if let Some(slot) = self.cold.config.wait_slot(task) {
            if !p.expects(slot, attempt) {
                return Outcome::Ignored(Ignored::StaleAttempt);
            }
        } else if self.cold.tasks.get(task.0 as usize).map(|s| s.attempt) != Some(attempt) {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        if p.fully_acked() && p.phase() != PendingPhase::AwaitingHooks {
            return Outcome::Ignored(Ignored::CheckpointDiscarded);
        }
        let abort = AbortReason::Declined(reason);
        self.abort(id, abort, fx);
        // FIX (conformance with Flink 1.11, 1.20 and 2.3, which all start
        // the queued request after any decline): the seed resumed it only
        // when no more recent checkpoint was pending, so a request queued
        // behind the concurrency bound waited for the newer checkpoint
        // though the decline had freed a slot.
        self.resume_queued(fx);
        Outcome::Applied(Applied::Aborted {
            checkpoint: id,
            reason: abort,
        })
    }
}
