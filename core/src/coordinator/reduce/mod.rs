//! The coordinator reducer. One code path serves the pure [`reduce`] and the
//! in-place [`CoordinatorState::apply`].
//!
//! Discipline: every handler decides `Ignored` / `Rejected` before it mutates
//! anything, so a refused event leaves the state as it was (only the clock
//! moves forward).

mod acks;
mod completion;
mod finish;
mod lifecycle;
mod scheduling;
mod trigger;

use super::config::RECENT_IDS_MAX;
use super::slots::{AckSlot, AckTable};
use super::state::{Completed, CoordinatorState, Pending, PendingPhase, Request, StopPhase};
use super::{
    AbortReason, Applied, CheckpointOptions, Clock, CoordinatorEffect as E, CoordinatorError,
    CoordinatorEvent, FailJobReason, Ignored, IoRequest, JobCommand, JobStatus, Outcome,
    QueueReason, RecoverProblem, RecoveredCheckpoint, Report, RequestId, RestoreSource, Step,
    Timer, Transition, TriggerKind, TriggerRejection, Unreachable,
};
use crate::route::TaskMessage;
use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, Generation, IoFailure, JobId, LegacyBug, Millis,
    StateHandle, TaskId,
};

/// The pure entry point: `(state, now, event) -> (state', effects, outcome)`.
#[must_use]
pub fn reduce(state: &CoordinatorState, now: Millis, event: CoordinatorEvent) -> Transition {
    let mut next = state.clone();
    let step = next.apply(now, event);
    Transition { state: next, step }
}

type Fx = Vec<E>;

impl CoordinatorState {
    /// The in-place entry point (same code as [`reduce`]).
    pub fn apply(&mut self, now: Millis, event: CoordinatorEvent) -> Step {
        let clock = if now < self.now {
            Clock::Clamped {
                given: now,
                used: self.now,
            }
        } else {
            self.now = now;
            Clock::Monotonic
        };
        let mut fx = Vec::new();
        let late_answer_slips_through = self.shutdown
            && self
                .cold
                .config
                .semantics()
                .is(LegacyBug::EffectsAfterShutdown)
            && matches!(event, CoordinatorEvent::CheckpointIdAllocated { .. });
        let outcome = if self.shutdown && !late_answer_slips_through {
            Outcome::Ignored(Ignored::Shutdown)
        } else {
            let outcome = self.dispatch(event, &mut fx);
            // Whatever ended the outstanding completion (its store answer, a
            // failure, an abort), a restore that waited for it is answered
            // in the same step, with the latest checkpoint there is now.
            if self.cold.restore_deferred && self.completing.is_none() {
                self.cold.restore_deferred = false;
                self.emit_restore(&mut fx);
            }
            // Whatever ended a stop-with-savepoint's request without its
            // savepoint completing (a failed id allocation, an abort, a
            // shutdown), the stop is over and periodic scheduling resumes
            // as it was.
            self.end_failed_stop(&mut fx);
            // Likewise a final checkpoint that ended without completing.
            self.end_failed_final();
            outcome
        };
        Step {
            effects: fx,
            outcome,
            clock,
        }
    }

    fn dispatch(&mut self, event: CoordinatorEvent, fx: &mut Fx) -> Outcome {
        match event {
            CoordinatorEvent::StartScheduler => self.on_start_scheduler(fx),
            CoordinatorEvent::StopScheduler => self.on_stop_scheduler(fx),
            CoordinatorEvent::Trigger { kind } => {
                let stop = kind.stops_the_job();
                let request = self.new_request(kind);
                if stop {
                    Outcome::Applied(self.on_stop_with_savepoint(request, fx))
                } else {
                    Outcome::Applied(self.on_request(request, true, fx))
                }
            }
            CoordinatorEvent::TimerFired { timer } => self.on_timer(timer, fx),
            CoordinatorEvent::CheckpointIdAllocated { request, result } => {
                self.on_id_allocated(request, result, fx)
            }
            CoordinatorEvent::MasterHooksDone { checkpoint, result } => {
                self.on_hooks_done(checkpoint, result, fx)
            }
            CoordinatorEvent::Acknowledge {
                job,
                task,
                attempt,
                checkpoint,
                state,
            } => self.on_ack(job, task, attempt, checkpoint, state, fx),
            CoordinatorEvent::Decline {
                job,
                task,
                attempt,
                checkpoint,
                reason,
            } => self.on_decline(job, task, attempt, checkpoint, reason, fx),
            CoordinatorEvent::FinalizeDone { checkpoint, result } => {
                self.on_finalize_done(checkpoint, result, fx)
            }
            CoordinatorEvent::StoreDone { checkpoint, result } => {
                self.on_store_done(checkpoint, result, fx)
            }
            CoordinatorEvent::TaskRunning { task, attempt } => {
                self.on_task_running(task, attempt, fx)
            }
            CoordinatorEvent::TaskFailed { task, attempt } => {
                self.on_task_failed(task, attempt, fx)
            }
            CoordinatorEvent::TaskFinished { task, attempt } => {
                self.on_task_finished(task, attempt, fx)
            }
            CoordinatorEvent::Restore { source } => self.on_restore(source, fx),
            CoordinatorEvent::Recover {
                checkpoints,
                last_id,
                generation,
            } => self.on_recover(checkpoints, last_id, generation),
            CoordinatorEvent::DisposeSavepoint { checkpoint } => {
                self.on_dispose_savepoint(checkpoint, fx)
            }
            CoordinatorEvent::Shutdown { status } => self.on_shutdown(status, fx),
        }
    }
}

/// A branch the reducer's own structure rules out. Loud in debug builds
/// (tests, fuzzing under `cargo test`, model tests); total in release, where
/// the typed outcome trips the `no-unreachable-branch` invariant instead.
#[track_caller]
fn unreachable_branch(which: Unreachable) -> Outcome {
    debug_assert!(false, "unreachable coordinator branch: {which:?}");
    Outcome::Ignored(Ignored::Unreachable(which))
}

enum Recheck {
    Queue,
    Reject(TriggerRejection),
}

/// The handles, sorted, without repeats.
fn sorted(handles: impl IntoIterator<Item = StateHandle>) -> Vec<StateHandle> {
    let mut v: Vec<StateHandle> = handles.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The handles of `a` (sorted) that are not in `b` (sorted).
fn minus(a: &[StateHandle], b: &[StateHandle]) -> Vec<StateHandle> {
    a.iter()
        .copied()
        .filter(|h| b.binary_search(h).is_err())
        .collect()
}
