//! What a job counts and records: [`HostStats`] (the counters tests,
//! progress lines and benchmarks read), the trace recorder, and
//! [`LiveStats`], a view of both that outlives the job.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::host::store::StoreStats;
use crate::trace::Trace;
use crate::types::CheckpointId;

/// What the host did, for progress lines, tests and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Events applied to the coordinator.
    pub coordinator_events: u64,
    /// Events applied to task reducers.
    pub task_events: u64,
    /// Checkpoints completed in this run.
    pub completed: u64,
    /// The latest completed (or restored) checkpoint.
    pub last_completed: Option<CheckpointId>,
    /// Checkpoints aborted in this run.
    pub aborted: u64,
    /// Global failovers.
    pub failovers: u64,
    /// Genuine task failures (operator errors, broken connections).
    pub genuine_failures: u64,
    /// Task failures that were not genuine (must stay 0 with fixed semantics).
    pub spurious_failures: u64,
    /// RPCs lost to the fault plan.
    pub rpc_dropped_fault: u64,
    /// RPCs lost to a full inbox.
    pub rpc_dropped_full: u64,
    /// RPCs for an attempt that is no longer current.
    pub rpc_dropped_stale: u64,
    /// Source batches emitted.
    pub source_batches: u64,
    /// Records the channel-state writer captured after a checkpoint's
    /// first barrier (fan-in: records that arrived on an input whose
    /// barrier of that checkpoint had not arrived yet), summed over the
    /// checkpoints that took them.
    pub late_channel_records: u64,
    /// Invariant violations and host contract violations, in order.
    pub violations: Vec<String>,
    /// The store's counters (guard refusals among them).
    pub store: StoreStats,
    /// The checkpoint restored at start, if any.
    pub restored_at_start: Option<CheckpointId>,
    /// Failovers whose restore-latest was not the store's latest: must stay 0.
    pub store_disagreements: u64,
    /// The latest checkpoint the store has committed, updated in the same
    /// step as the commit (so it is exact at any crash point).
    pub store_latest: Option<CheckpointId>,
    /// The stop-with-savepoint the job ended on, if it did.
    pub stopped_with: Option<CheckpointId>,
    /// Why the coordinator halted, if it did: a commit whose outcome is
    /// unknown ([`StoreError::OutcomeUnknown`](crate::host::store::StoreError::OutcomeUnknown)),
    /// or an id counter that could not be reset.
    /// The job stopped as after a crash (every attempt stopped, no
    /// shutdown, nothing discarded); start it again to recover from the
    /// store.
    pub halted: Option<String>,
}

/// A live view of a job's counters and trace that stays readable after the
/// job (or its runtime) is gone, e.g. after a simulated crash.
#[derive(Clone)]
pub struct LiveStats {
    pub(super) stats: Arc<Mutex<HostStats>>,
    pub(super) recorder: Option<Arc<Mutex<Recorder>>>,
}

impl fmt::Debug for LiveStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveStats").finish_non_exhaustive()
    }
}

impl LiveStats {
    /// The counters kept under the stats lock (the event counters of
    /// [`JobHandle::stats`](super::JobHandle::stats) are not among them).
    #[must_use]
    pub fn snapshot(&self) -> HostStats {
        lock(&self.stats).clone()
    }
    /// The trace recorded so far (empty unless
    /// [`JobOptions::record_trace`](super::JobOptions::record_trace)).
    #[must_use]
    pub fn trace(&self) -> Trace {
        self.recorder
            .as_ref()
            .map(|r| lock(r).trace.clone())
            .unwrap_or_default()
    }
}

#[derive(Default)]
pub(super) struct Recorder {
    pub(super) trace: Trace,
}

/// Locks `m`; a poisoned lock (a role panicked) still hands out the data.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
