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
use super::state::{
    Completed, CoordinatorState, Pending, PendingPhase, PendingRecord, Request, StopPhase,
};
use super::{
    AbortReason, Applied, CheckpointOptions, Clock, CoordinatorEffect, CoordinatorEffect as E,
    CoordinatorError, CoordinatorEvent, FailJobReason, Ignored, IoRequest, JobCommand, JobStatus,
    Outcome, QueueReason, RecoverProblem, RecoveredCheckpoint, Report, RequestId, RestoreSource,
    Step, Timer, Transition, TriggerKind, TriggerRejection, Unreachable,
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
    /// The in-place entry point (same code as [`reduce`]): the step's
    /// effects in a new `Vec`. A host that carries effects out one step at a
    /// time and wants no allocation for the list lends its own queue to
    /// [`CoordinatorState::apply_into`] instead.
    pub fn apply(&mut self, now: Millis, event: CoordinatorEvent) -> Step {
        let clock = self.tick(now);
        let mut effects = Vec::new();
        let outcome = self.step_into(event, &mut effects);
        Step {
            effects,
            outcome,
            clock,
        }
    }

    /// The in-place entry point with a queue the host lends (the shape of
    /// openraft's engine): the step's effects are **appended** to
    /// `effects`, in the order the host must carry them out, and what the
    /// event did and the clock are returned. Same code, same effects and
    /// same state as [`CoordinatorState::apply`]; what is already in
    /// `effects` is left as it was, so a host may keep effects of earlier
    /// steps queued behind which these must run. Reusing one queue (drained
    /// or cleared after carrying the effects out) saves the allocation and
    /// the free of a list per event that has effects: at one task, where
    /// every ack completes its checkpoint, the ack took 111.6 ns this way
    /// against 133.7 ns with `apply`, and 22.2 against 32.5 ns at 10 000
    /// tasks (`benches/ACK-2026-12-05b.md`).
    pub fn apply_into(
        &mut self,
        now: Millis,
        event: CoordinatorEvent,
        effects: &mut Vec<CoordinatorEffect>,
    ) -> (Outcome, Clock) {
        let clock = self.tick(now);
        (self.step_into(event, effects), clock)
    }

    /// Moves the clock to `now` unless that is in the past.
    #[inline(always)]
    fn tick(&mut self, now: Millis) -> Clock {
        if now < self.now {
            Clock::Clamped {
                given: now,
                used: self.now,
            }
        } else {
            self.now = now;
            Clock::Monotonic
        }
    }

    /// The one body of [`CoordinatorState::apply`] and
    /// [`CoordinatorState::apply_into`] after the clock, out of line (each
    /// of the two is a few instructions around it). Of the shapes measured
    /// (`benches/ACK-2026-12-05b.md`) this one made the lent queue's ack
    /// the fastest; every shape left `apply` slower than when it was the
    /// only entry point (its step is copied through the stack in other
    /// widths than it was written, a store-forwarding stall).
    #[inline(never)]
    fn step_into(&mut self, event: CoordinatorEvent, fx: &mut Fx) -> Outcome {
        let late_answer_slips_through = self.shutdown
            && self
                .cold
                .config
                .semantics()
                .is(LegacyBug::EffectsAfterShutdown)
            && matches!(event, CoordinatorEvent::CheckpointIdAllocated { .. });
        if self.shutdown && !late_answer_slips_through {
            Outcome::Ignored(Ignored::Shutdown)
        } else {
            let outcome = self.dispatch(event, fx);
            // Whatever ended the outstanding completion (its store answer, a
            // failure, an abort), a restore that waited for it is answered
            // in the same step, with the latest checkpoint there is now.
            if self.cold.restore_deferred && self.completing().is_none() {
                self.cold.restore_deferred = false;
                self.emit_restore(fx);
            }
            // Whatever ended a stop-with-savepoint's request without its
            // savepoint completing (a failed id allocation, an abort, a
            // shutdown), the stop is over and periodic scheduling resumes
            // as it was.
            self.end_failed_stop(fx);
            // Likewise a final checkpoint that ended without completing.
            self.end_failed_final();
            outcome
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
