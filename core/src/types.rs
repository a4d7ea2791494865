//! Small value types shared by both machines: ids, logical time, state handles.
//!
//! Every id is a newtype so a task id can never be passed where a checkpoint id
//! is expected. All of them are `Copy`, totally ordered and serde-serialisable
//! (traces), and `Arbitrary` under the `arbitrary` feature (fuzzing).

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

id_type!(
    /// Logical time in milliseconds. The host supplies it with every event; the
    /// reducers never read a clock.
    Millis(u64)
);
id_type!(
    /// A checkpoint id, allocated by the host's (HA) id counter. Ids of one job
    /// only grow.
    CheckpointId(u64)
);
id_type!(
    /// A subtask (an execution vertex of the job graph), dense from 0.
    TaskId(u32)
);
id_type!(
    /// The execution attempt number of a subtask. A restarted task runs under a
    /// new attempt; messages from an older attempt are stale.
    AttemptNo(u32)
);
id_type!(
    /// The job a coordinator serves; messages for another job are host misuse.
    JobId(u64)
);
id_type!(
    /// An opaque reference to state a task wrote for a checkpoint (the host's
    /// handle to files / blobs). The reducers never look inside; they only
    /// decide who owns it: a pending checkpoint, a completed checkpoint, or
    /// nobody (then they emit exactly one discard effect for it).
    StateHandle(u64)
);

impl Millis {
    /// `self + ms`, saturating at `u64::MAX` (a deadline never wraps around).
    #[must_use]
    pub fn saturating_add(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`, zero when `earlier` is later.
    #[must_use]
    pub fn saturating_since(self, earlier: Millis) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl CheckpointId {
    /// The id after this one, or `None` at `u64::MAX` (overflow is reported,
    /// never wrapped).
    #[must_use]
    pub fn next(self) -> Option<CheckpointId> {
        self.0.checked_add(1).map(CheckpointId)
    }
}

/// A real-world failure reported back by the host for an I/O effect (id
/// allocation, master hooks, finalize, store). The text is for humans only;
/// the reducers never branch on it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct IoFailure(pub String);

impl core::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which thread of a real task runtime delivers an event. The reducers ignore
/// it except for checking the rule "only the task thread removes a write
/// result"; the model and the host adapter use it to interleave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Thread {
    /// The network (netty) thread: remote input channels, barriers.
    Netty,
    /// The task (mailbox) thread: checkpoint mails, cancel markers, RPC mails.
    Task,
    /// The channel-state writer thread.
    Writer,
    /// The asynchronous snapshot thread (the async part of a checkpoint).
    Async,
}

/// Why a task declined a checkpoint. Shared by both machines: the task emits
/// it, the coordinator receives it, and the tolerable-failure counter decides
/// from it whether the failure counts (see [`DeclineReason::counts_as_failure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum DeclineReason {
    /// The task was not ready (still starting, or not running).
    TaskNotReady,
    /// The task is closing or finished its input.
    TaskClosing,
    /// A newer checkpoint started on the task before this one executed.
    Subsumed,
    /// The checkpoint was cancelled by a cancel marker from upstream.
    CancelledOnBarrier,
    /// The coordinator had already notified the task that this checkpoint was
    /// aborted (the FLINK-17869 path: the mail ran after the abort).
    AbortedByCoordinator,
    /// The channel-state write result was missing when the mail ran (only a
    /// fixed-semantics task declines for this; a legacy one fails).
    WriteResultMissing,
    /// The channel-state writer failed.
    WriterFailed,
    /// The synchronous or asynchronous part of the snapshot failed.
    SnapshotFailed,
}

impl DeclineReason {
    /// Whether a decline for this reason counts towards the tolerable-failure
    /// limit. Only genuine checkpoint failures count; declines that are the
    /// consequence of another abort, of subsumption or of the task's life
    /// cycle do not (as in Flink's `CheckpointFailureManager`).
    #[must_use]
    pub fn counts_as_failure(self) -> bool {
        match self {
            DeclineReason::WriterFailed | DeclineReason::SnapshotFailed => true,
            DeclineReason::TaskNotReady
            | DeclineReason::TaskClosing
            | DeclineReason::Subsumed
            | DeclineReason::CancelledOnBarrier
            | DeclineReason::AbortedByCoordinator
            | DeclineReason::WriteResultMissing => false,
        }
    }
}

/// Which behaviour a reducer implements. [`Semantics::Fixed`] is the default
/// and the only one a real host should run. Both machines take the same
/// value; each reproduces only the bugs that live in it (a task-side bug
/// leaves the coordinator fixed, and the other way round).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Semantics {
    /// Every known race fixed.
    #[default]
    Fixed,
    /// One historical bug, reproduced. Exists only so the checkers
    /// (proptest, stateright, loom, fuzz) can show that they catch it; never
    /// use it in a host.
    Legacy(LegacyBug),
}

impl Semantics {
    /// Whether this is the legacy behaviour `bug`.
    #[must_use]
    pub fn is(self, bug: LegacyBug) -> bool {
        self == Semantics::Legacy(bug)
    }
}

/// A historical bug reproduced by [`Semantics::Legacy`], named after what it
/// did (the README's bug zoo gives each one's ticket).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LegacyBug {
    /// Task, FLINK-17869 (the seed): a notify-aborted RPC for a started, not
    /// yet executed checkpoint removes its write result (abort with cleanup)
    /// and, the writer having handled it, does not remember the id; the later
    /// checkpoint mail's `getAndRemove` finds nothing and the task fails
    /// (`FailureReason::WriteResultMissing`).
    AbortRemovesResult,
    /// Task, FLINK-17869 through a cancel marker: the marker removes the
    /// write result but neither records the id nor advances the last
    /// executed id; the later checkpoint mail finds nothing and the task
    /// fails.
    CancelForgetsAbort,
    /// Coordinator, the durability bug: a scheduler stop or a shutdown while
    /// a checkpoint is finalizing or storing aborts it and discards its state,
    /// though the store may have committed (or may still commit) it.
    DiscardWhileStoring,
}
