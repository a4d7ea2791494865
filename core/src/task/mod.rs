//! The task side: one subtask's checkpoint machinery (Flink's
//! `SubtaskCheckpointCoordinator` with its `ChannelStateWriter`), as a pure
//! reducer, with FLINK-17869 fixed.
//!
//! # Lifecycle of one checkpoint `N` (all checkpoints here are unaligned)
//!
//! 1. **start** — the first barrier of `N` (netty thread for a remote channel,
//!    task thread for a local one) creates `N`'s write result
//!    ([`WriterCommand::Start`]), fails any older unfinished result as
//!    subsumed ([`WriterCommand::Abort`] without cleanup) and schedules the
//!    checkpoint mail ([`TaskEffect::Mail`]). A source task gets a
//!    `TriggerCheckpoint` instead, which starts and executes at once. A start
//!    for an id already aborted creates no result but still schedules the mail
//!    (so the skip can tell downstream).
//! 2. **in progress / abort** — the writer completes or fails the result; a
//!    notify-aborted RPC fails it *without removing it* and remembers the id;
//!    a cancel marker aborts it *with cleanup*, declines and forwards the
//!    marker.
//! 3. **execute** — the mail runs on the task thread: a stale mail (id at or
//!    below the last executed one) only cleans up a leftover result; an
//!    aborted id, a failed result (or, defensively, a missing one) is removed,
//!    a cancel marker goes downstream and the checkpoint is declined;
//!    otherwise the barrier goes downstream and the async part takes
//!    (`getAndRemove`) the result.
//! 4. **finish** — the async part completes (ack with the state handle,
//!    also when a newer checkpoint already completed: the task cannot tell
//!    a savepoint, which the coordinator never subsumes and still waits
//!    for, from a subsumed checkpoint, whose late ack the coordinator
//!    discards; see the crate docs, "Savepoints are the user's") or fails
//!    (decline); a notify-aborted cancels it.
//!
//! A write result is created only by start and removed only on the task
//! thread (by the async part taking it, an abort with cleanup, or close);
//! the netty path never removes one. Every created result is eventually
//! completed or failed, and removed. Executed ids strictly increase.
//! [`TaskEffect::Fail`] is emitted only for a genuine failure
//! ([`FailureReason::OperatorFailed`]) in the fixed semantics (the legacy
//! knobs reproduce the spurious failures).
//!
//! # Driving contract
//!
//! Feed every event to [`reduce`] (or [`TaskState::apply`]) one at a time and
//! execute the returned effects **in list order**:
//!
//! * `Writer(Start(N))`: create `N`'s write result and start writing; report
//!   `WriterCompleted{N}` / `WriterFailed{N}` from the writer thread.
//! * `Writer(Abort{N, cleanup})`: stop writing `N` and fail its result; if
//!   `cleanup`, drop the result.
//! * `Writer(CaptureRecovered{N, channels})` (right after `Start(N)`, only
//!   on a task replaying channel state): insert a recovery barrier into each
//!   of the `channels` input channels still consuming recovered input; `N`'s
//!   result also persists the recovered input before it.
//! * `Mail(N)`: enqueue a mail (FIFO, never withdrawn) that delivers
//!   `CheckpointMail{N}` on the task thread.
//! * `Downstream(Barrier(N))` / `Downstream(CancelMarker(N))`: send downstream.
//! * `AsyncPart(Start(N))`: take `N`'s write result and run the async
//!   snapshot; report `AsyncPartCompleted{N, handle}` (or, state unchanged,
//!   `AsyncPartReused{N, handle}`) / `AsyncPartFailed{N}`.
//! * `AsyncPart(Cancel(N))`: cancel it and discard whatever it wrote; a later
//!   report for it is ignored.
//! * `Coordinator(Ack | Decline)`: RPC to the coordinator.
//! * `Discard(handle)`: delete the state.
//! * `Operators(Complete(N) | Aborted(N))`: operator hooks.
//! * `Fail(reason)`: fail the task and report `TaskFailed` to the
//!   coordinator; the same step's effects after it are the
//!   teardown (every result removed, every async part cancelled), to be
//!   carried out like every other effect, in order; then deliver `Close`
//!   when the task shuts down.
//!
//! # Checkpointing during recovery (FLINK-38544)
//!
//! A task attempt whose config says it
//! [replays channel state](TaskConfig::replays_channel_state) (it was
//! restored from an unaligned checkpoint with in-flight data) starts in
//! [`Recovery::AwaitingChannelState`]; the host reports its replay with
//! three task-thread events: `RecoveryStarted { channels }` (the state was
//! fetched and filtered; `channels` input channels have recovered input to
//! consume), then `RecoveryFinished` (the drainer pushed all of it) and one
//! `ChannelRecovered` per channel (it polled its end-of-state sentinel), in
//! whatever order they happen. Each is total: out of place it is a typed
//! `Ignored` (`NotRecovering`, `RecoveryNotStarted`,
//! `RecoveryAlreadyStarted`, `NoChannelRecovering`, `AlreadyDrained`). A
//! trigger or first barrier meets the recovery trigger's phase
//! ([`TaskState::recovery_trigger`]): NOT_READY (before the fetch, or
//! throughout without [`TaskConfig::checkpoint_during_recovery`]) declines
//! it as `TaskNotReady` with a cancel marker downstream; barrier-inserting
//! starts it with `CaptureRecovered`; NO_OP, once the drain ended *and*
//! every channel recovered, is the plain lifecycle above.
//! [`LegacyBug::NoOpWhileChannelsRecover`] (FLINK-40518) went NO_OP at the
//! drain's end: a checkpoint that starts while a channel still replays is
//! then neither taken nor declined.
//!
//! # Semantics
//!
//! [`Semantics::Fixed`] (the default) is Flink after FLINK-17869: an abort
//! that races ahead of the checkpoint mail ends in a decline. The
//! [`Semantics::Legacy`] variants reproduce the pre-fix behaviour, where the
//! abort removed the write result and the later mail's `getAndRemove` found
//! nothing and failed the task. Legacy exists only so the checkers can show
//! they catch that bug; never run it in a host.

mod effect;
#[cfg(test)]
mod recovery_tests;
mod reduce;
mod state;
#[cfg(test)]
mod tests;

pub use effect::*;
pub use reduce::{reduce, Step, Transition};
pub use state::{Lifecycle, Recovery, RecoveryTrigger, TaskState};

use serde::{Deserialize, Serialize};

pub use crate::route::{ChannelItem, TaskMessage, ToCoordinator};
use crate::types::{CheckpointId, StateHandle, Thread};

pub use crate::types::{LegacyBug, Semantics};

/// Configuration of one subtask's checkpoint side.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TaskConfig {
    /// Fixed (default) or a legacy bug.
    pub semantics: Semantics,
    /// How many aborted-but-not-yet-executed checkpoint ids are remembered
    /// individually (at least 1). Older ones fall below the aborted floor.
    pub aborted_ids_max: usize,
    /// Flink 2.x's `execution.checkpointing.during-recovery.enabled`
    /// (FLINK-38544): a task that replays in-flight channel state takes
    /// checkpoints once that state was fetched, the channel-state writer
    /// capturing the input not yet replayed. Off (the default, and every
    /// Flink before it): every checkpoint is declined as not ready
    /// (`TaskNotReady`) until the task recovered. Flink enables it only
    /// with unaligned checkpoints (the FLINK-40518 fix); every checkpoint
    /// here is unaligned, so that condition always holds. Written to
    /// traces and snapshots only when on (older ones read back as off).
    #[serde(default, skip_serializing_if = "is_off")]
    pub checkpoint_during_recovery: bool,
    /// This task attempt was deployed with in-flight channel state to
    /// replay (restored from an unaligned checkpoint): it starts awaiting
    /// that state ([`Recovery::AwaitingChannelState`]) until
    /// `RecoveryStarted`. Written only when on.
    #[serde(default, skip_serializing_if = "is_off")]
    pub replays_channel_state: bool,
}

/// Serde's test for leaving a switch out: off is the default.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_off(on: &bool) -> bool {
    !*on
}

/// Default bound of the aborted-id memory (as in Flink).
pub const DEFAULT_ABORTED_IDS_MAX: usize = 16;

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            semantics: Semantics::Fixed,
            aborted_ids_max: DEFAULT_ABORTED_IDS_MAX,
            checkpoint_during_recovery: false,
            replays_channel_state: false,
        }
    }
}

/// One input to the task reducer. [`TaskEvent::thread`] says which thread of
/// a real task delivers it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum TaskEvent {
    /// The first barrier of an (unaligned) checkpoint arrived on an input
    /// channel: `start(N)`. `via` is [`Thread::Netty`] for a remote channel,
    /// [`Thread::Task`] for a local one; any other thread is host misuse.
    BarrierReceived {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The delivering thread.
        via: Thread,
    },
    /// The coordinator triggers a checkpoint on this (source) task; runs on
    /// the task thread as a mail: start and execute at once.
    TriggerCheckpoint {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The checkpoint mail scheduled by [`TaskEffect::Mail`] runs (task
    /// thread).
    CheckpointMail {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// A cancel-checkpoint marker from upstream (task thread).
    CancelMarker {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The coordinator notifies that a checkpoint was aborted (RPC, mailbox).
    NotifyAborted {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The coordinator notifies that a checkpoint completed (RPC, mailbox).
    NotifyComplete {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The channel-state writer completed a result (writer thread).
    WriterCompleted {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The channel-state writer failed a result (writer thread).
    WriterFailed {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// The asynchronous snapshot part finished and wrote `handle` (async thread).
    AsyncPartCompleted {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The state it wrote (operator and channel state).
        handle: StateHandle,
    },
    /// The asynchronous snapshot part finished and found the task's state
    /// unchanged since a completed checkpoint: it reports that checkpoint's
    /// `handle` again instead of writing a new file (an incremental state
    /// backend; async thread). The task does not own `handle` (the earlier
    /// checkpoint does): it acknowledges it, and never discards it.
    ///
    /// The host rule for reuse: only the handle of the task attempt's own
    /// last acknowledgement, only once the task was notified that the
    /// earlier checkpoint whose handle it reuses completed, only for a newer
    /// checkpoint, and never from or
    /// for a savepoint (savepoints are self-contained: the user may dispose
    /// of one at any time).
    AsyncPartReused {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The earlier checkpoint's state, reported again.
        handle: StateHandle,
    },
    /// The asynchronous snapshot part failed (async thread).
    AsyncPartFailed {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// An injected, genuine failure of the task's operators (task thread).
    OperatorFailed,
    /// The task's input ended (a bounded source ran out, or every upstream
    /// finished): the task is finished. Checkpoints already started run to
    /// their end; a later trigger or barrier is declined (`TaskClosing`)
    /// with a cancel marker downstream (task thread). The coordinator does
    /// not count that decline as a failure, so a job whose sources finish
    /// never fails for it (Flink's FLINK-33186 counted it). Once the task
    /// is quiet (nothing started left to run) the host may report it
    /// finished to the coordinator (`CoordinatorEvent::TaskFinished`), whose
    /// later plans leave it out (FLIP-147) and send it nothing more. A
    /// task that commits output on notifications gets this only after it
    /// was notified complete of a checkpoint taken after its last record
    /// (the crate docs, "Finished tasks").
    EndOfInput,
    /// A task deployed with in-flight channel state to replay
    /// ([`TaskConfig::replays_channel_state`]) fetched (and filtered) it;
    /// its `channels` input channels with recovered input start consuming
    /// it (task thread). Until then
    /// the recovery trigger is NOT_READY; from here it inserts barriers
    /// (or, with none, the task has recovered).
    RecoveryStarted {
        /// Input channels with recovered input to consume (0: a source).
        channels: u32,
    },
    /// One input channel consumed the last of its recovered input (the
    /// task thread polled its end-of-state sentinel) and left recovery.
    ChannelRecovered,
    /// The drainer pushed every recovered buffer into the channels
    /// (`drain()` completed; its continuation runs as a mail on the task
    /// thread). The channels may still be consuming what it pushed: the
    /// task has recovered only once every channel recovered as well.
    RecoveryFinished,
    /// The task closes (task thread).
    Close,
}

impl TaskEvent {
    /// The thread that delivers this event in a real task.
    #[must_use]
    pub fn thread(&self) -> Thread {
        match self {
            TaskEvent::BarrierReceived { via, .. } => *via,
            TaskEvent::TriggerCheckpoint { .. }
            | TaskEvent::CheckpointMail { .. }
            | TaskEvent::CancelMarker { .. }
            | TaskEvent::NotifyAborted { .. }
            | TaskEvent::NotifyComplete { .. }
            | TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished
            | TaskEvent::Close => Thread::Task,
            TaskEvent::WriterCompleted { .. } | TaskEvent::WriterFailed { .. } => Thread::Writer,
            TaskEvent::AsyncPartCompleted { .. }
            | TaskEvent::AsyncPartReused { .. }
            | TaskEvent::AsyncPartFailed { .. } => Thread::Async,
        }
    }

    /// A stable short name of the event's kind (for transition coverage).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            TaskEvent::BarrierReceived { .. } => "BarrierReceived",
            TaskEvent::TriggerCheckpoint { .. } => "TriggerCheckpoint",
            TaskEvent::CheckpointMail { .. } => "CheckpointMail",
            TaskEvent::CancelMarker { .. } => "CancelMarker",
            TaskEvent::NotifyAborted { .. } => "NotifyAborted",
            TaskEvent::NotifyComplete { .. } => "NotifyComplete",
            TaskEvent::WriterCompleted { .. } => "WriterCompleted",
            TaskEvent::WriterFailed { .. } => "WriterFailed",
            TaskEvent::AsyncPartCompleted { .. } => "AsyncPartCompleted",
            TaskEvent::AsyncPartReused { .. } => "AsyncPartReused",
            TaskEvent::AsyncPartFailed { .. } => "AsyncPartFailed",
            TaskEvent::OperatorFailed => "OperatorFailed",
            TaskEvent::EndOfInput => "EndOfInput",
            TaskEvent::RecoveryStarted { .. } => "RecoveryStarted",
            TaskEvent::ChannelRecovered => "ChannelRecovered",
            TaskEvent::RecoveryFinished => "RecoveryFinished",
            TaskEvent::Close => "Close",
        }
    }

    /// The state handle the event delivers (an async part's result), if
    /// any: the one handle a step may acknowledge or discard.
    #[must_use]
    pub fn handle(&self) -> Option<StateHandle> {
        match self {
            TaskEvent::AsyncPartCompleted { handle, .. }
            | TaskEvent::AsyncPartReused { handle, .. } => Some(*handle),
            TaskEvent::BarrierReceived { .. }
            | TaskEvent::TriggerCheckpoint { .. }
            | TaskEvent::CheckpointMail { .. }
            | TaskEvent::CancelMarker { .. }
            | TaskEvent::NotifyAborted { .. }
            | TaskEvent::NotifyComplete { .. }
            | TaskEvent::WriterCompleted { .. }
            | TaskEvent::WriterFailed { .. }
            | TaskEvent::AsyncPartFailed { .. }
            | TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished
            | TaskEvent::Close => None,
        }
    }

    /// The checkpoint this event runs on the task thread (a trigger on a
    /// source, the checkpoint mail elsewhere), if it runs one.
    #[must_use]
    pub fn executes(&self) -> Option<CheckpointId> {
        match self {
            TaskEvent::CheckpointMail { checkpoint }
            | TaskEvent::TriggerCheckpoint { checkpoint } => Some(*checkpoint),
            TaskEvent::BarrierReceived { .. }
            | TaskEvent::CancelMarker { .. }
            | TaskEvent::NotifyAborted { .. }
            | TaskEvent::NotifyComplete { .. }
            | TaskEvent::WriterCompleted { .. }
            | TaskEvent::WriterFailed { .. }
            | TaskEvent::AsyncPartCompleted { .. }
            | TaskEvent::AsyncPartReused { .. }
            | TaskEvent::AsyncPartFailed { .. }
            | TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished
            | TaskEvent::Close => None,
        }
    }

    /// The checkpoint the event concerns, if any.
    #[must_use]
    pub fn checkpoint(&self) -> Option<CheckpointId> {
        match self {
            TaskEvent::BarrierReceived { checkpoint, .. }
            | TaskEvent::TriggerCheckpoint { checkpoint }
            | TaskEvent::CheckpointMail { checkpoint }
            | TaskEvent::CancelMarker { checkpoint }
            | TaskEvent::NotifyAborted { checkpoint }
            | TaskEvent::NotifyComplete { checkpoint }
            | TaskEvent::WriterCompleted { checkpoint }
            | TaskEvent::WriterFailed { checkpoint }
            | TaskEvent::AsyncPartCompleted { checkpoint, .. }
            | TaskEvent::AsyncPartReused { checkpoint, .. }
            | TaskEvent::AsyncPartFailed { checkpoint } => Some(*checkpoint),
            TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished
            | TaskEvent::Close => None,
        }
    }
}

pub use crate::types::DeclineReason;

/// Why a write result was failed (its status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ResultFailure {
    /// Failed by a notify-aborted RPC (without cleanup).
    Aborted,
    /// Failed because a newer checkpoint started.
    Subsumed,
    /// Failed by the writer itself.
    WriterFailed,
}

impl From<ResultFailure> for DeclineReason {
    fn from(f: ResultFailure) -> Self {
        match f {
            ResultFailure::Aborted => DeclineReason::AbortedByCoordinator,
            ResultFailure::Subsumed => DeclineReason::Subsumed,
            ResultFailure::WriterFailed => DeclineReason::WriterFailed,
        }
    }
}

/// The status of a channel-state write result held by the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ResultStatus {
    /// The writer is still writing it.
    InProgress,
    /// The writer completed it.
    Completed,
    /// It was failed (and is waiting for the task thread to remove it).
    Failed(ResultFailure),
}

/// Why the task is failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FailureReason {
    /// A genuine (injected) operator failure.
    OperatorFailed,
    /// Legacy only, the FLINK-17869 bug: the mail's `getAndRemove` found no
    /// write result. Not genuine.
    WriteResultMissing,
    /// Legacy only (FLINK-21104 / FLINK-20654): a barrier older than the last
    /// started checkpoint tripped an assertion. Not genuine.
    ObsoleteBarrier,
    /// Legacy only (FLINK-29730): a start found an aborted write result not
    /// yet removed and threw. Not genuine.
    UnfinishedResultAtStart,
    /// Legacy only (FLINK-23884): a trigger or barrier after the task
    /// finished its input threw. Not genuine.
    TriggerAfterFinish,
}

impl FailureReason {
    /// Whether this is a real failure (as opposed to an abort / ordering race).
    #[must_use]
    pub fn is_genuine(self) -> bool {
        match self {
            FailureReason::OperatorFailed => true,
            FailureReason::WriteResultMissing
            | FailureReason::ObsoleteBarrier
            | FailureReason::UnfinishedResultAtStart
            | FailureReason::TriggerAfterFinish => false,
        }
    }
}

/// Why an event changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IgnoreReason {
    /// The task is closed.
    Closed,
    /// The task has failed (its checkpoint side is torn down).
    TaskFailed,
    /// A barrier / trigger for the checkpoint already started.
    AlreadyStarted,
    /// A barrier / trigger / cancel marker for a checkpoint older than one
    /// already started or executed.
    StaleCheckpoint,
    /// A checkpoint mail that was never scheduled (or already ran).
    MailNotScheduled,
    /// A writer report for a result that does not exist (any more).
    NoSuchWriteResult,
    /// A writer report for a result already completed or failed.
    WriteResultSettled,
    /// An async-part report for a part that is not running.
    NoSuchAsyncPart,
    /// A duplicate notify-aborted.
    AlreadyAborted,
    /// A notify-aborted for a checkpoint that already finished on this task.
    AlreadyExecuted,
    /// A notify-complete not newer than one already seen.
    StaleNotifyComplete,
    /// An end of input for a task that already finished it.
    AlreadyFinished,
    /// Legacy only (FLINK-18063): a notify-aborted for a checkpoint started
    /// by a barrier rather than on the task thread.
    NotStartedOnTaskThread,
    /// A recovery event for a task that replays no channel state (never
    /// did, or has recovered).
    NotRecovering,
    /// A `RecoveryStarted` for a task whose recovery already started.
    RecoveryAlreadyStarted,
    /// A `ChannelRecovered` or `RecoveryFinished` before `RecoveryStarted`.
    RecoveryNotStarted,
    /// A `ChannelRecovered` when no channel is still recovering.
    NoChannelRecovering,
    /// A second `RecoveryFinished`.
    AlreadyDrained,
}

/// Why a barrier, trigger or mail was consumed without executing its
/// checkpoint (the event did change state; effects say what was cleaned up).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SkipReason {
    /// A stale mail (at or below the last executed id): ignored as a
    /// checkpoint, its leftover result (if any) cleaned up.
    Stale,
    /// The checkpoint was declined.
    Declined(DeclineReason),
    /// Legacy only: the task failed.
    TaskFailed(FailureReason),
}

/// Host misuse.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum TaskError {
    /// `aborted_ids_max` must be at least 1.
    #[error("invalid task config: aborted_ids_max must be at least 1")]
    AbortedIdsMaxZero,
    /// A barrier can only arrive on the netty or the task thread.
    #[error("a barrier cannot be delivered by the {0:?} thread")]
    WrongThread(Thread),
}

/// The answer to one event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// The event was applied.
    Applied,
    /// A barrier, trigger or mail was consumed without executing its
    /// checkpoint.
    Skipped(SkipReason),
    /// Nothing changed, no effects.
    Ignored(IgnoreReason),
    /// Host misuse; nothing changed, no effects.
    Rejected(TaskError),
}
