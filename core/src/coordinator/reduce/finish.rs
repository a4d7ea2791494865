//! Finished tasks (FLIP-147): `TaskFinished`, what a finish does to the
//! checkpoints waiting for the task, the final checkpoint and the job's
//! finish.

use super::*;
use crate::coordinator::{FinishPhase, TaskStatus};

impl CoordinatorState {
    /// Whether `task`'s current attempt finished.
    pub(super) fn is_finished(&self, task: TaskId) -> bool {
        self.cold
            .tasks
            .get(task.0 as usize)
            .is_some_and(|s| s.finished)
    }

    /// Whether every task of the job finished.
    pub(super) fn all_finished(&self) -> bool {
        self.cold.tasks.iter().all(|s| s.finished)
    }

    /// `TaskFinished { task, attempt }`: the running attempt finished.
    pub(super) fn on_task_finished(
        &mut self,
        task: TaskId,
        attempt: AttemptNo,
        fx: &mut Fx,
    ) -> Outcome {
        let s = match self.known_task(task) {
            Ok(s) => s,
            Err(refused) => return refused,
        };
        if s.finished && attempt == s.attempt {
            return Outcome::Ignored(Ignored::TaskAlreadyFinished);
        }
        if attempt != s.attempt || !s.running {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        self.cold.tasks.set(
            task.0 as usize,
            TaskStatus {
                attempt,
                running: false,
                finished: true,
            },
        );
        // A checkpoint still waiting for the task can no longer get its
        // state at the barrier. FIX (FLINK-33186, accepted upstream as a
        // known limitation): Flink fails it as a counted task failure, so a
        // job whose sources finish fails; ckpt aborts it uncounted.
        let reason = if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::FinishFailsCheckpoint)
        {
            AbortReason::Declined(DeclineReason::SnapshotFailed)
        } else {
            AbortReason::TaskFinished
        };
        let aborted = self.abort_unacked_by(task, reason, fx);
        if self.all_finished() && !self.cold.config.checkpoints_after_tasks_finish() {
            // Without checkpoints after finished tasks there is no final
            // checkpoint: the job finishes with its last task.
            self.finish_job(None, fx);
        }
        Outcome::Applied(Applied::TaskUpdated { aborted })
    }

    /// Marks `id`, created while every task had finished, as the job's
    /// final checkpoint (checkpoints after finished tasks on).
    pub(super) fn note_final(&mut self, id: CheckpointId) {
        if self.cold.finish.is_none()
            && self.all_finished()
            && self.cold.config.checkpoints_after_tasks_finish()
        {
            self.cold.finish = Some(FinishPhase::Final { checkpoint: id });
        }
    }

    /// A finished task runs again (a new attempt): not every task is
    /// finished any more, so a final checkpoint in flight is an ordinary
    /// one from now on (it still completes, holding the finished task's
    /// slot as it was planned, but the job does not finish on it); the next
    /// plan after every task finished again is the final one. A job that
    /// already finished stays finished.
    pub(super) fn unfinish(&mut self) {
        if matches!(self.cold.finish, Some(FinishPhase::Final { .. })) {
            self.cold.finish = None;
        }
    }

    /// The checkpoint `id` completed: if it is the final one, the job
    /// finishes on it.
    pub(super) fn on_final_completed(&mut self, id: CheckpointId, fx: &mut Fx) {
        if self.cold.finish == Some(FinishPhase::Final { checkpoint: id }) {
            self.finish_job(Some(id), fx);
        }
    }

    /// The final checkpoint ended without completing (its finalize or store
    /// failed, a restore or shutdown ended it): the next trigger plans
    /// another one.
    pub(super) fn end_failed_final(&mut self) {
        if let Some(FinishPhase::Final { checkpoint }) = self.cold.finish {
            if !self.pending.contains_key(&checkpoint) {
                self.cold.finish = None;
            }
        }
    }

    fn finish_job(&mut self, final_checkpoint: Option<CheckpointId>, fx: &mut Fx) {
        self.cold.finish = Some(FinishPhase::Finished { final_checkpoint });
        fx.push(E::Job(JobCommand::Finish { final_checkpoint }));
    }
}
