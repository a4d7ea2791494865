//! The JobManager-side checkpoint coordinator as a pure reducer.
//!
//! `reduce(&state, now, event) -> Transition { state, step: Step { effects, outcome, clock } }`
//! re-expresses the behaviour of Flink's `CheckpointCoordinator` (the
//! version ckpt was ported from, "the seed" throughout these docs) plus the
//! modern additions listed in `core/README.md` ("From modern Flink"). [`CoordinatorState::apply`] is the in-place form;
//! [`CoordinatorState::apply_into`] is the in-place form that appends the
//! effects to a queue the host lends (and keeps: no list allocated per
//! event). All three share one code path.
//!
//! # Driving contract
//!
//! The host owns threads, RPC, timers and storage. For every event it calls the
//! reducer once (serialised: one event at a time, e.g. under one lock) and then
//! carries out the returned effects **in order**:
//!
//! | effect | what the host does | what comes back |
//! |---|---|---|
//! | [`CoordinatorEffect::Timer`] `{ at: Some(_) }` | (re-)arm that timer for `at`, replacing an armed one with the same key | [`CoordinatorEvent::TimerFired`] |
//! | [`CoordinatorEffect::Timer`] `{ at: None }` | disarm it (a firing that races the cancel is harmless: it is ignored) | nothing |
//! | [`CoordinatorEffect::Io`] with [`IoRequest::AllocateId`] | take the next id from the (HA) counter | [`CoordinatorEvent::CheckpointIdAllocated`] |
//! | [`IoRequest::MasterHooks`] | run the master hooks | [`CoordinatorEvent::MasterHooksDone`] |
//! | [`IoRequest::Finalize`] | write the metadata | [`CoordinatorEvent::FinalizeDone`] |
//! | [`IoRequest::Store`] | add it to the completed-checkpoint store | [`CoordinatorEvent::StoreDone`] |
//! | [`CoordinatorEffect::Rpc`] with [`TaskMessage::Trigger`](crate::route::TaskMessage::Trigger) | send the trigger RPC to that attempt | acks / declines |
//! | [`CoordinatorEffect::Rpc`] with `NotifyComplete` / `NotifyAborted` | send the RPC to that attempt | nothing |
//! | [`CoordinatorEffect::Discard`] | delete that state handle (asynchronously is fine; idempotently: a handle delivered again may be discarded again) | nothing |
//! | [`CoordinatorEffect::Report`] | complete the user's future / statistics | nothing |
//! | [`JobCommand::Fail`] | fail the job (tolerable failures exceeded) | usually [`CoordinatorEvent::TaskFailed`]s, a restore |
//! | [`JobCommand::ResetIdCounter`] | move the counter forward (never back) | nothing |
//! | [`JobCommand::Restore`] | start fresh task attempts from that checkpoint's state (or from scratch), then `TaskRunning` for each | [`CoordinatorEvent::TaskRunning`]s |
//! | [`JobCommand::ShutdownServices`] | shut the store and the id counter down | nothing |
//! | [`JobCommand::Stop`] | the stop-with-savepoint is committed: stop every task attempt (draining the sources first if `drain`), then send `Shutdown { status: Finished }`; do not act on a [`JobCommand::Restore`] later in the same step | nothing |
//! | [`JobCommand::Finish`] | every task finished (and, with checkpoints after finished tasks on, the final checkpoint is committed): send `Shutdown { status: Finished }` | nothing |
//! | [`JobCommand::ResolveInDoubt`] | when the outstanding finalize / store of that checkpoint has ended: delete `discard_if_stored` if the store holds it, else its metadata and then `discard_if_not_stored` | nothing |
//!
//! Every write to durable state and every RPC carries the issuing
//! coordinator's [`generation`](CoordinatorState::generation): the host
//! carries it out on that generation's behalf, and the store, the id
//! counter and the tasks refuse an older one (a deposed leader).
//!
//! # Durability: state that may be committed is never deleted
//!
//! Once [`IoRequest::Finalize`] (whose metadata may already be visible) or
//! [`IoRequest::Store`] is out, the checkpoint's state handles belong to the
//! outcome of that I/O. They are discarded only when that I/O answers with a
//! failure, which must mean "definitely not stored". Nothing else deletes
//! them: a scheduler stop leaves the completing checkpoint to complete, a
//! task failure or a new attempt only aborts checkpoints still waiting for
//! acks, a fully acknowledged checkpoint has no timeout, subsumption only
//! reaches older checkpoints that wait for acks, and a shutdown hands the
//! checkpoint to the host in doubt ([`JobCommand::ResolveInDoubt`];
//! the coordinator keeps owning the handles). An unknown outcome (the answer
//! is lost, the host or the coordinator dies, the store cannot tell whether
//! its commit is durable) is never guessed: the host answers nothing and
//! stops this coordinator as if it had crashed, and the next coordinator
//! reads the store and starts from it
//! ([`CoordinatorEvent::Recover`], then `Restore { Latest }`), and the host
//! deletes the state of a checkpoint the store does not hold only then. The
//! step invariant `no-discard-while-storing` checks the rule on every event;
//! `Semantics::Legacy(LegacyBug::DiscardWhileStoring)` reproduces the old
//! behaviour (stop and shutdown discarded the completing checkpoint's state)
//! so the checkers can show they catch it.
//!
//! A restore never picks a point behind a checkpoint that may be committed:
//! `Restore { Latest }` while a finalize or store is outstanding waits for
//! its answer ([`Applied::RestoreDeferred`]) and restores the latest
//! checkpoint there is then (the highest id, [`crate::commit::latest`]).
//! Savepoints are never discarded by retention: they stay until the user
//! disposes of them ([`CoordinatorEvent::DisposeSavepoint`]). The step
//! invariants `restore-not-behind-a-commit`, `hand-over-spares-shared-state`
//! and `savepoint-state-kept` check these rules; `LegacyBug::RestoreBehindCompletion`,
//! `InDoubtListsSharedState`, `SavepointExpiresWithRetention` and
//! `RestoreLastCommitted` reproduce what they forbid.
//!
//! State handles carried by acknowledgements are owned by the coordinator from
//! the moment an ack is `Applied` or answered with a discard; an ack that is
//! `Ignored` without a `Discard` (after shutdown) or `Rejected` leaves the
//! handle with the host. A handle may be held by several checkpoints
//! (recovered checkpoints that share a file, a savepoint restored from a
//! retained checkpoint's files, a task that sends a handle again): it is
//! never discarded while a live checkpoint (retained, in doubt, or pending
//! with it acknowledged) holds it, and is discarded with the last of them,
//! at most once per step. A handle delivered again after the coordinator let
//! go of it (a network-duplicated late ack whose handle no live checkpoint
//! holds) is discarded again, each time: deletes must be idempotent.

mod config;
mod effect;
mod finish;
mod reduce;
mod slots;
mod state;
#[cfg(any(test, feature = "symmetry"))]
mod symmetry;
#[cfg(test)]
mod tests;

pub use config::*;
pub use effect::*;
pub use finish::FinishPhase;
pub use reduce::reduce;
pub use slots::AckSlot;
pub use state::*;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, Generation, IoFailure, JobId, Millis, StateHandle,
    TaskId,
};

/// A coordinator timer. The timer table holds at most one deadline per key;
/// scheduling an armed key replaces its deadline. The derived order (periodic
/// first, then timeouts by id) is the order a host should fire timers that are
/// due at the same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Timer {
    /// The periodic trigger.
    Periodic,
    /// The expiry of one pending checkpoint.
    Timeout(CheckpointId),
}

/// A host-visible handle for one trigger request, assigned by the coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RequestId(pub u64);

/// What was asked for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum TriggerKind {
    /// A checkpoint from the periodic timer (never forced).
    Periodic,
    /// A checkpoint requested by the user; `forced` skips the concurrency
    /// checks (one non-forced request queued or in flight at a time, at most
    /// `max_concurrent` pending). The minimum pause holds back periodic
    /// triggers only: a user checkpoint never waits for it, forced or not.
    Checkpoint {
        /// Skip the concurrency checks.
        forced: bool,
    },
    /// A savepoint into `target`: always forced, never subsumed.
    Savepoint {
        /// Target directory.
        target: String,
    },
    /// Stop the job with a savepoint into `target` (Flink's
    /// stop-with-savepoint, FLIP-34: a synchronous savepoint). Periodic
    /// scheduling stops and the checkpoints still waiting for acks end
    /// first; no other checkpoint is triggered while it runs; when the
    /// store has committed it, the coordinator emits
    /// [`JobCommand::Stop`] and the job
    /// ends on it (a later recovery restores it: it is the latest). If it
    /// fails, periodic scheduling resumes as it was.
    StopWithSavepoint {
        /// Target directory.
        target: String,
        /// Drain the pipeline first (`--drain`: the sources reach the end
        /// of their input, event time advances to its end) rather than
        /// suspend it.
        drain: bool,
    },
}

impl TriggerKind {
    /// Forced requests skip the concurrency checks. (The minimum pause holds
    /// back periodic requests only, which are never forced.)
    #[must_use]
    pub fn is_forced(&self) -> bool {
        match self {
            TriggerKind::Periodic => false,
            TriggerKind::Checkpoint { forced } => *forced,
            TriggerKind::Savepoint { .. } | TriggerKind::StopWithSavepoint { .. } => true,
        }
    }
    /// Queue priority: stop-with-savepoint > savepoint > forced > the rest.
    #[must_use]
    pub fn priority(&self) -> u8 {
        match self {
            TriggerKind::StopWithSavepoint { .. } => 3,
            TriggerKind::Savepoint { .. } => 2,
            TriggerKind::Checkpoint { forced: true } => 1,
            TriggerKind::Checkpoint { forced: false } | TriggerKind::Periodic => 0,
        }
    }
    /// Whether this is a savepoint (a stop-with-savepoint is one).
    #[must_use]
    pub fn is_savepoint(&self) -> bool {
        matches!(
            self,
            TriggerKind::Savepoint { .. } | TriggerKind::StopWithSavepoint { .. }
        )
    }
    /// Whether this stops the job once it completes.
    #[must_use]
    pub fn stops_the_job(&self) -> bool {
        matches!(self, TriggerKind::StopWithSavepoint { .. })
    }
    /// The options the trigger message carries to the tasks.
    #[must_use]
    pub fn options(&self) -> CheckpointOptions {
        match self {
            TriggerKind::Periodic | TriggerKind::Checkpoint { .. } => {
                CheckpointOptions::FullCheckpoint
            }
            TriggerKind::Savepoint { target } => CheckpointOptions::Savepoint {
                target: target.clone(),
            },
            TriggerKind::StopWithSavepoint { target, drain } => {
                CheckpointOptions::SynchronousSavepoint {
                    target: target.clone(),
                    drain: *drain,
                }
            }
        }
    }
}

/// Job status passed to shutdown (the store decides what to keep from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum JobStatus {
    /// Finished successfully.
    Finished,
    /// Cancelled by the user.
    Canceled,
    /// Failed terminally.
    Failed,
    /// Suspended (e.g. lost leadership): retained state must be kept.
    Suspended,
}

/// Where a restore comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum RestoreSource {
    /// The latest completed checkpoint. Having none (and no finalize or
    /// store outstanding) is `Rejected(NoCheckpointToRestore)` with
    /// `error_if_none`; without it, the restore goes on from scratch: it
    /// aborts the pending checkpoints like any `Latest` restore and emits
    /// [`JobCommand::Restore`] `{ checkpoint: None }`. `error_if_none` is
    /// judged when the event arrives: a restore deferred behind an
    /// outstanding finalize or store ([`Applied::RestoreDeferred`]) whose
    /// checkpoint then fails, with nothing else retained, goes on from
    /// scratch (`Restore { checkpoint: None }`) whatever the flag.
    Latest {
        /// Whether an empty history is an error.
        error_if_none: bool,
    },
    /// A savepoint the host loaded: its id and the state handles it holds.
    /// The coordinator counts it completed and the latest from then on, so
    /// the host adds it to its completed-checkpoint store first (the crate
    /// docs, "Starting from a savepoint").
    Savepoint {
        /// The savepoint's checkpoint id.
        checkpoint: CheckpointId,
        /// Its state.
        handles: Vec<StateHandle>,
    },
}

/// Everything that can happen to a coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CoordinatorEvent {
    /// Start periodic scheduling. It first does what
    /// [`StopScheduler`](Self::StopScheduler) does, even when scheduling was
    /// off: every pending checkpoint not finalizing or storing is aborted
    /// ([`AbortReason::SchedulerStopped`]) and the queued and in-flight
    /// requests fail ([`Report::RequestFailed`]); then it arms the periodic
    /// timer one interval from now.
    StartScheduler,
    /// Stop periodic scheduling: aborts every pending checkpoint still
    /// waiting for acks or hooks and clears the queued and in-flight
    /// requests; a checkpoint already finalizing or storing is not aborted
    /// (its state may be committed) and completes or fails by its answer.
    StopScheduler,
    /// A user (or the host) asks for a checkpoint or savepoint.
    Trigger {
        /// What is asked for.
        kind: TriggerKind,
    },
    /// A timer the coordinator scheduled fired.
    TimerFired {
        /// Which one.
        timer: Timer,
    },
    /// The answer to [`IoRequest::AllocateId`]. An id not above
    /// [`CoordinatorState::last_id`] is
    /// `Rejected(`[`CoordinatorError::NonIncreasingId`]`)` and changes
    /// nothing: the request stays in flight, and later triggers are queued
    /// behind it or refused, until the host answers it again with an id
    /// above `last_id()` or with a failure. The id `u64::MAX` is taken like
    /// any other, but no id is above it: every later answer is
    /// `NonIncreasingId`, so a host's counter must never hand it out
    /// (Flink's ids start at 1 and count up by one).
    CheckpointIdAllocated {
        /// The request it was allocated for.
        request: RequestId,
        /// The id, or why the counter failed.
        result: Result<CheckpointId, IoFailure>,
    },
    /// The answer to [`IoRequest::MasterHooks`].
    MasterHooksDone {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Success or the hook failure.
        result: Result<(), IoFailure>,
    },
    /// A task acknowledged a checkpoint with its state (if it has any).
    Acknowledge {
        /// The job the message claims to belong to.
        job: JobId,
        /// The task.
        task: TaskId,
        /// Its execution attempt.
        attempt: AttemptNo,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The state written for it.
        state: Option<StateHandle>,
    },
    /// A task declined a checkpoint.
    Decline {
        /// The job the message claims to belong to.
        job: JobId,
        /// The task.
        task: TaskId,
        /// Its execution attempt.
        attempt: AttemptNo,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Why.
        reason: DeclineReason,
    },
    /// The answer to [`IoRequest::Finalize`].
    FinalizeDone {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Success or the failure.
        result: Result<(), IoFailure>,
    },
    /// The answer to [`IoRequest::Store`].
    StoreDone {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Success or the failure.
        result: Result<(), IoFailure>,
    },
    /// A task attempt is (now) running.
    TaskRunning {
        /// The task.
        task: TaskId,
        /// Its attempt: newer than the one known, or the report is
        /// ignored as stale (a duplicate, or a late report of an attempt
        /// that has failed since: a failed attempt never runs again).
        attempt: AttemptNo,
    },
    /// A task attempt failed: every pending checkpoint it has not acknowledged
    /// is aborted.
    TaskFailed {
        /// The task.
        task: TaskId,
        /// The attempt that failed.
        attempt: AttemptNo,
    },
    /// A task attempt finished: its input ended, its operators finished
    /// and it ran to its end (Flink's FINISHED, FLIP-147). What follows
    /// depends on [`CoordinatorSettings::checkpoints_after_tasks_finish`]:
    /// on, later plans leave the task out (its slot holds its final state,
    /// no state handle: Flink's "finished on restore"); off, no checkpoint
    /// is triggered any more. Either way a pending checkpoint still waiting
    /// for the task can no longer get its state and is aborted,
    /// [`AbortReason::TaskFinished`], without counting as a failure
    /// (ckpt's answer to FLINK-33186). When every task finished, the job
    /// finishes ([`JobCommand::Finish`]): at once when off, after its
    /// final checkpoint completed when on. The host sends no RPC to a
    /// finished attempt (and reports no `TaskFailed` for it).
    TaskFinished {
        /// The task.
        task: TaskId,
        /// The attempt that finished: the running one, or the report is
        /// ignored as stale.
        attempt: AttemptNo,
    },
    /// Restore state (latest checkpoint, or a savepoint). `Latest` ends
    /// every pending checkpoint that is not finalizing or storing
    /// ([`AbortReason::Restored`]): it belongs to the run before the
    /// restore. `Latest` while a finalize or store is outstanding waits for
    /// its outcome ([`Applied::RestoreDeferred`]): the checkpoint may be
    /// committed, and restoring an older one would rewind the job behind it.
    /// `Savepoint` ends nothing: with any checkpoint pending or an id request
    /// in flight (or a savepoint id not above the ids already used) it is
    /// `Rejected(`[`CoordinatorError::SavepointRestoreConflict`]`)`. The
    /// savepoint joins the retained checkpoints as a commit does, so
    /// retention runs: checkpoints beyond `retained_max` (a `Recover`'s
    /// surplus) are evicted, their state discarded (`Discard` effects
    /// between the `ResetIdCounter` and the `Restore`), as the store
    /// evicted them when it committed the savepoint.
    Restore {
        /// From where.
        source: RestoreSource,
    },
    /// A new coordinator (after the old one's process died, or a new
    /// leader) learns what is durable: the checkpoints the completed store
    /// holds, the id counter's last id, and the generation it claimed in
    /// the store. Only for a fresh coordinator, as its first event; the
    /// recovered checkpoints are retained (their state is owned from now on)
    /// and ids continue above `last_id`. More checkpoints than
    /// `retained_max` are accepted (a host that lowered retention across a
    /// restart): the next completion (or savepoint restore) evicts down to
    /// the bound, as the store does at its next commit.
    Recover {
        /// The store's checkpoints in the order it committed them, oldest
        /// first (a savepoint may follow a newer checkpoint: savepoints are
        /// never subsumed, so one can complete after it; see
        /// [`crate::commit`]).
        checkpoints: Vec<RecoveredCheckpoint>,
        /// The last id the (durable) id counter handed out.
        last_id: Option<CheckpointId>,
        /// The generation this coordinator claimed in the store, above every
        /// earlier leader's. It is the coordinator's fencing token
        /// ([`CoordinatorState::generation`]): the host writes to the store,
        /// the id counter and the tasks on its behalf, and they refuse an
        /// older generation, so a deposed leader that keeps running can
        /// change nothing. (Absent in a trace written before generations
        /// existed: 0.)
        #[serde(default)]
        generation: Generation,
    },
    /// The user disposes of a savepoint the coordinator keeps (savepoints
    /// are the user's: retention never discards them). The host removes the
    /// savepoint from its store **first**, then sends this event; the
    /// coordinator forgets the savepoint and discards the handles no other
    /// live checkpoint holds. The store must refuse to dispose of its latest
    /// checkpoint (the file store does: `StoreError::LatestSavepoint`): it
    /// is the restore point and its completion may be committed by the
    /// sinks, so without it the next restore would rewind behind it; the
    /// host then sends nothing. The coordinator cannot judge this itself: a
    /// newer checkpoint may be committed in the store before the
    /// coordinator hears of it.
    DisposeSavepoint {
        /// The savepoint's id.
        checkpoint: CheckpointId,
    },
    /// Shut down for good: aborts every checkpoint still waiting for acks or
    /// hooks and every request; a checkpoint finalizing or storing is handed
    /// over in doubt ([`CoordinatorState::in_doubt`]), never aborted or
    /// discarded. Afterwards every event is ignored and nothing is emitted.
    Shutdown {
        /// The job's final status.
        status: JobStatus,
    },
}

/// One checkpoint the completed store holds, as read on recovery.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RecoveredCheckpoint {
    /// Its id.
    pub checkpoint: CheckpointId,
    /// Whether it is a savepoint.
    pub savepoint: bool,
    /// When it was triggered.
    pub timestamp: Millis,
    /// Its state handles.
    pub handles: Vec<StateHandle>,
}

/// Why a pending checkpoint (or a request) ended without completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AbortReason {
    /// It timed out.
    Expired,
    /// A task declined it.
    Declined(DeclineReason),
    /// A newer checkpoint completed first.
    Subsumed,
    /// A task it was waiting for failed.
    TaskFailed,
    /// The master hooks failed.
    MasterHooksFailed,
    /// Writing the metadata failed.
    FinalizeFailed,
    /// Adding it to the completed store failed.
    StoreFailed,
    /// The checkpoint id counter failed.
    IdAllocationFailed,
    /// Periodic scheduling was stopped.
    SchedulerStopped,
    /// The coordinator shut down.
    Shutdown,
    /// A pre-check failed when a queued or in-flight request was resumed.
    Rejected(TriggerRejection),
    /// The job was restored: a checkpoint triggered in the run before the
    /// restore can no longer complete (Flink aborts them on failover).
    Restored,
    /// A task it was waiting for finished before it took the checkpoint
    /// (FLINK-33186): the task's state at the barrier no longer exists.
    /// Not a failure: a job whose tasks finish is never failed by it.
    TaskFinished,
}

impl AbortReason {
    /// Whether this failure counts towards the tolerable-failure limit
    /// when a checkpoint fails with it. A savepoint's failure never counts,
    /// whatever the reason (Flink's `CheckpointFailureManager` ignores
    /// savepoints): this says what the reason is worth, not whether the
    /// coordinator counted it.
    #[must_use]
    pub fn counts_as_failure(self) -> bool {
        match self {
            AbortReason::Expired
            | AbortReason::MasterHooksFailed
            | AbortReason::FinalizeFailed
            | AbortReason::StoreFailed
            | AbortReason::IdAllocationFailed => true,
            AbortReason::Declined(reason) => reason.counts_as_failure(),
            AbortReason::Subsumed
            | AbortReason::TaskFailed
            | AbortReason::SchedulerStopped
            | AbortReason::Shutdown
            | AbortReason::Rejected(_)
            | AbortReason::Restored
            | AbortReason::TaskFinished => false,
        }
    }
}

/// Why a trigger request was turned down (the seed's `CheckpointDeclineReason`
/// for trigger results).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TriggerRejection {
    /// A periodic trigger while periodic scheduling is off.
    PeriodicSchedulerShutdown,
    /// A non-forced request is already queued or in flight.
    AlreadyQueued,
    /// The minimum pause since the last completion has not passed; the
    /// periodic timer was moved to the earliest allowed time.
    MinimumTimeBetweenCheckpoints,
    /// A task to trigger is not running, or a task to wait for has no
    /// attempt; or a task finished while checkpoints after finished tasks
    /// are off; or the job's final checkpoint is pending or the job
    /// finished ([`FinishPhase`]).
    NotAllRequiredTasksRunning,
    /// The request queue is full.
    QueueFull,
    /// A savepoint while the coordinator keeps `savepoints_max` savepoints
    /// (completed and pending): dispose of one first
    /// ([`CoordinatorEvent::DisposeSavepoint`]).
    TooManySavepoints,
    /// A stop-with-savepoint is running or has stopped the job: nothing else
    /// is triggered (a second checkpoint could never complete on tasks that
    /// stop).
    Stopping,
}

/// Why a request waits in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QueueReason {
    /// `max_concurrent` non-forced checkpoints are pending (the seed's
    /// `TOO_MANY_CONCURRENT_CHECKPOINTS`: the periodic timer is cancelled).
    TooManyConcurrent,
    /// Another request is allocating its id (the seed's trigger lock).
    TriggerInProgress,
}

/// Why the job must fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailJobReason {
    /// More consecutive counted checkpoint failures than tolerated.
    TolerableFailuresExceeded {
        /// Failures counted so far.
        failures: u64,
    },
}

/// What an applied event did.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Applied {
    /// Periodic scheduling started.
    SchedulerStarted,
    /// Periodic scheduling stopped; that many pending checkpoints aborted.
    SchedulerStopped {
        /// Pending checkpoints aborted.
        aborted: usize,
    },
    /// The request is allocating its checkpoint id.
    AllocatingId {
        /// The request.
        request: RequestId,
    },
    /// The request waits in the queue.
    Queued {
        /// The request.
        request: RequestId,
        /// Why it waits.
        reason: QueueReason,
    },
    /// The request was turned down (effects may move the periodic timer).
    TriggerRejected {
        /// The request.
        request: RequestId,
        /// Why.
        reason: TriggerRejection,
    },
    /// The periodic timer fired; what became of its request is inside.
    PeriodicFired(Box<Applied>),
    /// A pending checkpoint was created (trigger messages or hooks emitted).
    CheckpointTriggered {
        /// The request.
        request: RequestId,
        /// The new checkpoint.
        checkpoint: CheckpointId,
    },
    /// The request ended without a checkpoint (id allocation failed, or a
    /// re-check after the allocation failed).
    RequestEnded {
        /// The request.
        request: RequestId,
        /// Why.
        reason: AbortReason,
    },
    /// Master hooks finished; trigger messages emitted.
    HooksDone {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// An ack was recorded (the seed's `SUCCESS`).
    Acknowledged {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Acks still missing.
        remaining: usize,
    },
    /// Finalization moved on to storing.
    Finalized {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// A checkpoint completed.
    Completed {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// A pending checkpoint was aborted.
    Aborted {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Why.
        reason: AbortReason,
    },
    /// A task's status changed; that many pending checkpoints were aborted.
    TaskUpdated {
        /// Pending checkpoints aborted because of it.
        aborted: usize,
    },
    /// [`JobCommand::Restore`] emitted; `None`: nothing was
    /// completed, the tasks start from scratch.
    Restored {
        /// The checkpoint restored.
        checkpoint: Option<CheckpointId>,
    },
    /// `Restore { Latest }` waits for the outstanding finalize or store of
    /// `awaiting`: `JobCommand::Restore` follows when that I/O has answered (the
    /// checkpoint restored is then the latest completed, which may be this
    /// one).
    RestoreDeferred {
        /// The checkpoint whose completion is outstanding.
        awaiting: CheckpointId,
    },
    /// A savepoint was disposed of; its unshared state discarded.
    SavepointDisposed {
        /// The savepoint.
        checkpoint: CheckpointId,
    },
    /// The coordinator shut down.
    ShutDown,
    /// A fresh coordinator took over the store's checkpoints.
    Recovered {
        /// The latest recovered checkpoint.
        latest: Option<CheckpointId>,
    },
    /// The periodic timer fired but the clock is so close to `u64::MAX`
    /// that no later deadline exists: periodic scheduling stopped instead of
    /// re-arming a timer that would be due forever.
    ClockExhausted,
}

/// Why an event changed nothing (except possibly emitting the discard of a
/// state handle the coordinator cannot keep).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ignored {
    /// The coordinator is shut down.
    Shutdown,
    /// No such checkpoint, and not among the recent ones (state discarded).
    UnknownCheckpoint,
    /// The checkpoint was pending recently and is gone (state discarded
    /// unless it is retained by a completed checkpoint). The seed's "late
    /// message for now expired checkpoint".
    LateMessage,
    /// The task already acknowledged this checkpoint (the seed's `DUPLICATE`).
    DuplicateAck,
    /// The task (or attempt) is not one this checkpoint waits for (the seed's
    /// `UNKNOWN`, Flink's answer to an ack from an execution the checkpoint
    /// does not wait for; state discarded). An ack from another attempt of
    /// a task the checkpoint waits for, older or newer, is this one, not
    /// [`Ignored::StaleAttempt`].
    UnknownTask,
    /// The checkpoint is fully acknowledged and completing (the seed's
    /// `DISCARDED`; state discarded).
    CheckpointDiscarded,
    /// The message is about an attempt of the task that it no longer
    /// concerns: a decline from an attempt the checkpoint was not triggered
    /// for (older or newer), or a report that an attempt runs, failed or
    /// finished when it is not the task's current running one (an older
    /// attempt, or the known one again). Acks from another attempt are
    /// [`Ignored::UnknownTask`] instead (their state is discarded; a
    /// decline carries none).
    StaleAttempt,
    /// The timer is not armed (cancelled, or its checkpoint is gone).
    TimerNotArmed,
    /// The timer fired before its deadline (a stale firing of a re-armed timer).
    TimerNotDue,
    /// The answer is for a request that is no longer in flight.
    UnknownRequest,
    /// The answer arrived for a checkpoint not waiting for it.
    NotAwaited,
    /// A restore while an earlier one still waits for its completion (the
    /// first one's `JobCommand::Restore` answers both).
    RestoreAlreadyDeferred,
    /// `TaskFinished` for an attempt already known to have finished (a
    /// duplicate report).
    TaskAlreadyFinished,
    /// A branch the reducer's structure rules out was taken (a bug in
    /// `ckpt-core`, never the host's fault). Debug builds panic; release
    /// builds stay total and the `no-unreachable-branch` invariant reports it.
    Unreachable(Unreachable),
}

/// The branches [`Ignored::Unreachable`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unreachable {
    /// A checkpoint that `awaits` found in the right phase was gone.
    AwaitedVanished,
    /// The request in flight was gone after its id was checked.
    InFlightVanished,
    /// A pending checkpoint had no ack slot for a task it waits for.
    AckSlotMissing,
    /// The concurrency re-check after id allocation failed (no checkpoint
    /// can be created while a request is in flight).
    RecheckQueue,
}

/// Host misuse: the event is refused, nothing is emitted and the state is
/// unchanged but for the clock (`now` moves forward on every event).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error, Serialize, Deserialize)]
pub enum CoordinatorError {
    /// A message for another job.
    #[error("message for job {got} but this coordinator serves job {expected}")]
    WrongJob {
        /// This coordinator's job.
        expected: JobId,
        /// The job named in the message.
        got: JobId,
    },
    /// The id counter handed out an id not above every id seen. The
    /// [`IoRequest::AllocateId`] stays in flight: later triggers are queued
    /// behind it or refused until the host answers it again with an id above
    /// [`CoordinatorState::last_id`] or with a failure.
    #[error("checkpoint id {got} is not above the last id {last}")]
    NonIncreasingId {
        /// What the counter answered.
        got: CheckpointId,
        /// The highest id seen before.
        last: CheckpointId,
    },
    /// An id at `u64::MAX` leaves no successor: a savepoint restored at it
    /// could hand the id counter no next id.
    #[error("checkpoint id {0} leaves no successor (overflow)")]
    IdOverflow(CheckpointId),
    /// `TaskRunning`, `TaskFailed` or `TaskFinished` for a task id not in
    /// the configuration. (An `Acknowledge` or `Decline` naming such a task
    /// is `Ignored(`[`Ignored::UnknownTask`]`)` instead.)
    #[error("task {0} is not part of this job")]
    UnknownTask(TaskId),
    /// Restore of the latest checkpoint with none completed or completing.
    #[error("no completed checkpoint available to restore")]
    NoCheckpointToRestore,
    /// `DisposeSavepoint` names a retained checkpoint that is not a
    /// savepoint (retention owns those).
    #[error("checkpoint {0} is not a savepoint: only savepoints are disposed of by the user")]
    NotASavepoint(CheckpointId),
    /// A savepoint restore while checkpoints are pending or in flight, or
    /// with an id not above the ids already used.
    #[error("cannot restore savepoint {0}: checkpoints are active or newer ids were used")]
    SavepointRestoreConflict(CheckpointId),
    /// `Recover` for a coordinator that is not fresh, or with checkpoints
    /// out of commit order or with an id above the counter's last id.
    #[error("cannot recover: {0:?}")]
    RecoverConflict(RecoverProblem),
}

/// Why a `Recover` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecoverProblem {
    /// The coordinator is not fresh: it holds an id, a checkpoint (pending,
    /// completed or recovered), a request, a recent id, an armed timer (its
    /// scheduler started), or a generation above 0 (it recovered already; a
    /// `Recover` of nothing at generation 0 leaves it as fresh as before). Events
    /// that leave none of these behind (a task's status, a restore from
    /// scratch) are not detected: a host sends `Recover` first.
    NotFresh,
    /// An id appears twice, or a checkpoint that is not a savepoint is not
    /// newer than everything before it (a completion subsumes older pending
    /// checkpoints, never savepoints, so no store commits in that order; see
    /// [`crate::commit`]).
    OutOfOrder,
    /// A checkpoint id above the id counter's last id.
    IdAboveCounter,
}

/// The result of one event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// The event did something; the effects say what the host must do.
    Applied(Applied),
    /// The event was stale, late, duplicate or unknown.
    Ignored(Ignored),
    /// Host misuse; no effects, the state unchanged but for the clock.
    Rejected(CoordinatorError),
}

impl Outcome {
    /// Whether the event was applied.
    #[must_use]
    pub fn is_applied(&self) -> bool {
        matches!(self, Outcome::Applied(_))
    }
}

/// What happened to the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Clock {
    /// `now` was not before the last time seen.
    #[default]
    Monotonic,
    /// `now` went backwards; the last time seen was used instead.
    Clamped {
        /// What the host passed.
        given: Millis,
        /// What the reducer used.
        used: Millis,
    },
}

/// The in-place result of one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Effects, in the order the host must carry them out.
    pub effects: Vec<CoordinatorEffect>,
    /// What the event did.
    pub outcome: Outcome,
    /// Whether time was clamped.
    pub clock: Clock,
}

/// The pure result of one event: the next state and the [`Step`] that led
/// to it (the same value [`CoordinatorState::apply`] returns in place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The new state.
    pub state: CoordinatorState,
    /// Effects (in the order the host must carry them out), outcome, clock.
    pub step: Step,
}
