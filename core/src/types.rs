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
    /// A leader's generation (its term, fencing token): a coordinator that
    /// took over from another runs under a higher one. Every write to
    /// durable state and every RPC to a task carries the generation of the
    /// coordinator that issued it, so the store, the id counter and the
    /// tasks can refuse a deposed leader that is still running.
    Generation(u64)
);
id_type!(
    /// An opaque reference to state a task wrote for a checkpoint (the host's
    /// handle to files / blobs). The reducers never look inside; they only
    /// decide who owns it: a pending checkpoint, a completed checkpoint, or
    /// nobody (then they emit exactly one discard effect for it).
    StateHandle(u64)
);

/// The state handles a finalize request references
/// ([`crate::coordinator::IoRequest::Finalize`]), in ack-slot order: a
/// list that holds up to two handles in place and spills to the heap
/// beyond (24 bytes either way, as a `Vec`), so a job of one or two tasks
/// finalizes without allocating it. Derefs to a slice; `Handles::from(vec)`
/// (or `vec.into()`) makes one, `into_vec` gives a `Vec` back (without a
/// copy once spilled); serialized as a sequence, as a `Vec` is.
///
/// Why: at one task every ack completes its checkpoint, and the handle
/// list was one of the two allocations of that ack (with the effect list)
/// and 16 % of its instructions (`benches/ACK-2026-12-08.md`).
pub type Handles = smallvec::SmallVec<[StateHandle; HANDLES_INLINE]>;

/// Handles a [`Handles`] list holds without allocating: two, the most that
/// fit in the 16 bytes a `Vec`'s pointer and length take.
pub const HANDLES_INLINE: usize = 2;

impl Millis {
    /// `self + ms`, saturating at `u64::MAX` (a deadline never wraps around).
    #[must_use]
    pub fn saturating_add(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
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
/// did (the bug zoo, `model/README.md`, gives each one's ticket).
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
    /// Task, FLINK-17994: a checkpoint mail runs even when the task already
    /// moved past its checkpoint (a cancel marker, or a newer checkpoint
    /// executed on another path): a stale checkpoint executes, declining or
    /// acknowledging a second time.
    StaleMailExecutes,
    /// Task, FLINK-21104 / FLINK-20654: a barrier older than the last started
    /// checkpoint trips an assertion and fails the task.
    ObsoleteBarrierFails,
    /// Task, FLINK-18063: a notify-aborted only covered checkpoints started
    /// on the task thread; one started by a barrier (netty) and not yet
    /// executed ignores the abort and later executes anyway.
    AbortIgnoresNettyStart,
    /// Task, FLINK-18238: a checkpoint skipped on the task (declined) sends
    /// no cancel marker downstream, so a task aligning on it waits forever.
    SkipWithoutCancelMarker,
    /// Task, FLINK-28474: a start for an already aborted checkpoint creates
    /// its write result anyway, and the skip of the aborted checkpoint does
    /// not remove a result it did not expect: the result leaks.
    AbortedStartLeaks,
    /// Task, FLINK-29730: a start while an aborted (failed, not yet removed)
    /// older write result still exists throws and fails the task.
    AbortedResultBlocksStart,
    /// Task, FLINK-20331: a newer barrier drops an unfinished older write
    /// result without failing it; the writer's work for it is never settled.
    NewerBarrierDropsResult,
    /// Task, FLINK-10377 / FLINK-24096: a notify-complete for a checkpoint not
    /// newer than the last one notified still commits (operators see
    /// completions out of order, a sink commits an old transaction again).
    NotifyCompleteOutOfOrder,
    /// Task, FLINK-23884: a trigger or barrier after the task finished its
    /// input fails the task instead of declining.
    TriggerAfterFinishFails,
    /// Coordinator, FLINK-26394: a checkpoint that expires while its master
    /// hooks (operator coordinators) are outstanding never clears the
    /// trigger in progress; every later request waits forever.
    HookExpiryWedgesTrigger,
    /// Coordinator, FLINK-27148: the master hooks' answer for a checkpoint
    /// already disposed still triggers the tasks for it.
    LateHooksTriggerTasks,
    /// Coordinator, FLINK-13256: a request queued at the concurrency bound
    /// (the periodic timer cancelled) is not resumed when a task failure
    /// or a restore aborts the pending checkpoints: periodic checkpointing
    /// is dead.
    AbortAllLeavesQueueStuck,
    /// Coordinator, FLINK-20992 / FLINK-18290: an id allocation answered
    /// after shutdown still creates a checkpoint, arms timers and triggers
    /// tasks.
    EffectsAfterShutdown,
    /// Coordinator, the durability bug: a scheduler stop or a shutdown while
    /// a checkpoint is finalizing or storing aborts it and discards its state,
    /// though the store may have committed (or may still commit) it.
    DiscardWhileStoring,
    /// Coordinator, a job failover while a newer checkpoint is storing:
    /// `Restore { Latest }` restores the latest completed checkpoint at once
    /// and leaves the old run's checkpoints pending, so a checkpoint whose
    /// store was outstanding commits after the job restarted from an older
    /// one (its tasks are told it completed though they run on older state).
    RestoreBehindCompletion,
    /// Coordinator, the in-doubt hand-over at shutdown lists every handle of
    /// the checkpoint whose store was outstanding, including state a
    /// retained checkpoint shares with it: the host, told the store does not
    /// hold it, deletes committed state.
    InDoubtListsSharedState,
    /// Coordinator, savepoints count towards retention: a savepoint pushed
    /// out by newer checkpoints has its state discarded, though a savepoint
    /// belongs to the user (Flink never discards one on subsumption).
    SavepointExpiresWithRetention,
    /// Coordinator, two meanings of "latest": `Restore { Latest }` restores
    /// the checkpoint committed last, which is a savepoint committed after a
    /// newer checkpoint, rewinding the job behind committed state.
    RestoreLastCommitted,
    /// Coordinator and host, no fencing of a deposed leader: the new
    /// coordinator writes under the old one's generation, so the store and
    /// the id counter cannot refuse the old one, which keeps running and
    /// writing (Arroyo's leader mode before its PR 1051).
    NoFencing,
    /// Host, two definitions of a legal commit order: the store refuses a
    /// savepoint committed after a newer checkpoint, which the coordinator
    /// allows (an older savepoint may finish after a newer checkpoint).
    StoreRefusesOlderSavepoint,
    /// Coordinator, Arroyo issue 24: stopping the job with a savepoint does
    /// not stop periodic checkpointing, so a second checkpoint is launched
    /// while the stop runs; the tasks stop after the savepoint and the job
    /// waits for a checkpoint that can never complete.
    StopLaunchesSecondCheckpoint,
    /// Coordinator, Arroyo PR 1124: a stop-with-savepoint is treated as done
    /// once every task acknowledged it, before its metadata is written and
    /// stored: the tasks commit it and the job stops, and recovery rolls
    /// back to the previous checkpoint though the final one committed its
    /// side effects.
    StopBeforeCommit,
    /// Coordinator, FLINK-40482: the checkpoint plan counts a task that
    /// failed (or was cancelled) as finished, so a checkpoint triggered
    /// while it is down expects no ack from it and completes without its
    /// state; a restore from it treats the task as finished and loses its
    /// state.
    FailedCountsAsFinished,
    /// Coordinator, FLINK-33186 (a known limitation upstream): a task that
    /// finishes after a checkpoint's plan was made and before it took the
    /// checkpoint fails that checkpoint as a counted failure (Flink's
    /// "task not running" TASK_CHECKPOINT_FAILURE), so a job whose sources
    /// finish fails once its tolerable failures are used up.
    FinishFailsCheckpoint,
    /// File merging, FLINK-36125: a logical file (a segment of a shared
    /// physical file) discarded twice releases its reference twice (in
    /// Flink an abort and an I/O error on two threads; in ckpt a repeated
    /// discard of the same handle), so the physical file's count reaches
    /// zero while another segment in it is still referenced, and the file
    /// is deleted under it ([`crate::files`]).
    LogicalFileReleasedTwice,
    /// Task, FLINK-40518: the recovery trigger goes NO_OP when the drain of
    /// the recovered channel state completes, while an input channel still
    /// consumes recovered input (the window a review of the fix found; the
    /// original, aligned checkpoints with checkpointing during recovery,
    /// had the NO_OP trigger throughout). A checkpoint that starts then
    /// waits for a recovery barrier nobody inserts: it is neither taken
    /// nor declined, and hangs until the coordinator expires it.
    NoOpWhileChannelsRecover,
    /// Task, a savepoint overtaken by a newer checkpoint: the async part of
    /// a checkpoint that finishes after a newer checkpoint completed is
    /// discarded as subsumed, with no ack. A task cannot tell a savepoint
    /// from a checkpoint, and the coordinator never subsumes a savepoint:
    /// it waits for the ack until the savepoint expires, and a
    /// stop-with-savepoint fails (found in ckpt's own review of its
    /// savepoint recipes, the family of issue 25's savepoints that vanish).
    SubsumedPartDiscarded,
}

impl LegacyBug {
    /// Every bug, in the bug zoo's order.
    pub const ALL: [LegacyBug; 29] = [
        LegacyBug::AbortRemovesResult,
        LegacyBug::CancelForgetsAbort,
        LegacyBug::StaleMailExecutes,
        LegacyBug::ObsoleteBarrierFails,
        LegacyBug::AbortIgnoresNettyStart,
        LegacyBug::SkipWithoutCancelMarker,
        LegacyBug::AbortedStartLeaks,
        LegacyBug::AbortedResultBlocksStart,
        LegacyBug::NewerBarrierDropsResult,
        LegacyBug::NotifyCompleteOutOfOrder,
        LegacyBug::TriggerAfterFinishFails,
        LegacyBug::HookExpiryWedgesTrigger,
        LegacyBug::LateHooksTriggerTasks,
        LegacyBug::AbortAllLeavesQueueStuck,
        LegacyBug::EffectsAfterShutdown,
        LegacyBug::DiscardWhileStoring,
        LegacyBug::RestoreBehindCompletion,
        LegacyBug::InDoubtListsSharedState,
        LegacyBug::SavepointExpiresWithRetention,
        LegacyBug::RestoreLastCommitted,
        LegacyBug::NoFencing,
        LegacyBug::StoreRefusesOlderSavepoint,
        LegacyBug::StopLaunchesSecondCheckpoint,
        LegacyBug::StopBeforeCommit,
        LegacyBug::FailedCountsAsFinished,
        LegacyBug::FinishFailsCheckpoint,
        LegacyBug::LogicalFileReleasedTwice,
        LegacyBug::NoOpWhileChannelsRecover,
        LegacyBug::SubsumedPartDiscarded,
    ];

    /// The public tickets of the race (Apache Flink's JIRA).
    #[must_use]
    pub fn tickets(self) -> &'static str {
        match self {
            LegacyBug::AbortRemovesResult | LegacyBug::CancelForgetsAbort => "FLINK-17869",
            LegacyBug::StaleMailExecutes => "FLINK-17994",
            LegacyBug::ObsoleteBarrierFails => "FLINK-21104, FLINK-20654",
            LegacyBug::AbortIgnoresNettyStart => "FLINK-18063",
            LegacyBug::SkipWithoutCancelMarker => "FLINK-18238",
            LegacyBug::AbortedStartLeaks => "FLINK-28474",
            LegacyBug::AbortedResultBlocksStart => "FLINK-29730",
            LegacyBug::NewerBarrierDropsResult => "FLINK-20331",
            LegacyBug::NotifyCompleteOutOfOrder => "FLINK-10377, FLINK-24096",
            LegacyBug::TriggerAfterFinishFails => "FLINK-23884",
            LegacyBug::HookExpiryWedgesTrigger => "FLINK-26394",
            LegacyBug::LateHooksTriggerTasks => "FLINK-27148",
            LegacyBug::AbortAllLeavesQueueStuck => "FLINK-13256",
            LegacyBug::EffectsAfterShutdown => "FLINK-20992, FLINK-18290",
            LegacyBug::DiscardWhileStoring => "ckpt-issue-11",
            LegacyBug::RestoreBehindCompletion
            | LegacyBug::InDoubtListsSharedState
            | LegacyBug::SavepointExpiresWithRetention
            | LegacyBug::RestoreLastCommitted
            | LegacyBug::StoreRefusesOlderSavepoint
            | LegacyBug::SubsumedPartDiscarded => "ckpt-issue-25",
            LegacyBug::NoFencing => "ckpt-issue-25, arroyo-pr-1051",
            LegacyBug::StopLaunchesSecondCheckpoint => "arroyo-issue-24",
            LegacyBug::StopBeforeCommit => "arroyo-pr-1124",
            LegacyBug::FailedCountsAsFinished => "FLINK-40482",
            LegacyBug::FinishFailsCheckpoint => "FLINK-33186",
            LegacyBug::LogicalFileReleasedTwice => "FLINK-36125",
            LegacyBug::NoOpWhileChannelsRecover => "FLINK-40518",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Handles, LegacyBug, StateHandle, HANDLES_INLINE};

    #[test]
    fn a_handle_list_is_a_vec_sized_and_serialized_holding_two_in_place() {
        assert_eq!(
            std::mem::size_of::<Handles>(),
            std::mem::size_of::<Vec<StateHandle>>()
        );
        for n in 0..=HANDLES_INLINE + 1 {
            let v: Vec<StateHandle> = (0..n as u64).map(StateHandle).collect();
            let h = Handles::from_slice(&v);
            assert_eq!(h.spilled(), n > HANDLES_INLINE);
            assert_eq!(
                serde_json::to_string(&h).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
            let back: Handles = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back.into_vec(), v);
        }
    }

    #[test]
    fn every_legacy_bug_names_its_tickets() {
        for bug in LegacyBug::ALL {
            for ticket in bug.tickets().split(", ") {
                // Flink's JIRA, Arroyo's tracker, or this project's issue
                // for a race it found itself.
                let number = ticket
                    .strip_prefix("FLINK-")
                    .or_else(|| ticket.strip_prefix("ckpt-issue-"))
                    .or_else(|| ticket.strip_prefix("arroyo-issue-"))
                    .or_else(|| ticket.strip_prefix("arroyo-pr-"))
                    .unwrap_or("");
                assert!(
                    !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
                    "{bug:?}: {ticket:?} is not a ticket"
                );
            }
        }
        // The seed bug, both of its legacy halves.
        assert_eq!(LegacyBug::AbortRemovesResult.tickets(), "FLINK-17869");
        assert_eq!(LegacyBug::CancelForgetsAbort.tickets(), "FLINK-17869");
    }
}
