//! What the roles of a running job share ([`Ctx`]: the job, its options,
//! file system and network, the counters and the trace recorder, the
//! channels to the coordinator driver), and the trace key of a task
//! attempt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::net::{self, ToCoordinator};
use super::stats::{lock, HostStats, Recorder};
use super::JobOptions;
use crate::coordinator::CoordinatorEvent;
use crate::host::fs::Fs;
use crate::host::store::state_path;
use crate::task::TaskConfig;
use crate::trace::TraceLine;
use crate::types::{AttemptNo, JobId, Millis, StateHandle, TaskId};

/// What the roles share.
pub(crate) struct Ctx {
    pub(super) job: JobId,
    pub(super) options: JobOptions,
    /// Where the state files are (in-process, the store's too); never
    /// handed to operators.
    pub(super) fs: Arc<dyn Fs>,
    pub(super) net: Arc<net::Net>,
    pub(super) start: Instant,
    pub(super) stats: Arc<Mutex<HostStats>>,
    pub(super) coordinator_events: AtomicU64,
    pub(super) task_events: AtomicU64,
    pub(super) source_batches: AtomicU64,
    pub(super) late_channel_records: AtomicU64,
    pub(super) recorder: Option<Arc<Mutex<Recorder>>>,
    pub(super) to_coordinator: mpsc::Sender<ToCoordinator>,
    pub(super) failures: mpsc::UnboundedSender<(TaskId, AttemptNo)>,
    pub(super) completed: watch::Sender<u64>,
}

impl Ctx {
    pub(super) fn now(&self) -> Millis {
        Millis(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }
    /// A copy of the counters the tasks' side keeps: the recorded stats
    /// with the task events, source batches and dropped RPCs read from
    /// their atomics (the coordinator's events are the caller's to add).
    pub(super) fn task_side_stats(&self) -> HostStats {
        let mut s = self.stats().clone();
        s.task_events = self.task_events.load(Ordering::Relaxed);
        s.source_batches = self.source_batches.load(Ordering::Relaxed);
        s.late_channel_records = self.late_channel_records.load(Ordering::Relaxed);
        let c = &self.net.counters;
        s.rpc_dropped_fault = c.dropped_fault.load(Ordering::Relaxed);
        s.rpc_dropped_full = c.dropped_full.load(Ordering::Relaxed);
        s.rpc_dropped_stale = c.dropped_stale.load(Ordering::Relaxed);
        s
    }

    pub(super) fn stats(&self) -> MutexGuard<'_, HostStats> {
        lock(&self.stats)
    }
    pub(super) fn violation(&self, v: String) {
        if self.options.verbose {
            eprintln!("ckpt host: VIOLATION {v}");
        }
        self.stats().violations.push(v);
    }
    pub(super) fn log(&self, line: String) {
        if self.options.verbose {
            eprintln!("ckpt host: {line}");
        }
    }
    pub(super) fn count_task_event(&self) {
        self.task_events.fetch_add(1, Ordering::Relaxed);
    }
    /// `n` captures took a record that arrived after their first barrier.
    pub(super) fn channel_records_captured(&self, n: u64) {
        if n > 0 {
            self.late_channel_records.fetch_add(n, Ordering::Relaxed);
        }
    }
    pub(super) fn source_emitted(&self) {
        self.source_batches.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) async fn io_pause(&self) {
        if self.options.io_latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.options.io_latency_ms)).await;
        }
    }
    pub(super) fn declare_task(&self, task: TaskId, attempt: AttemptNo, config: &TaskConfig) {
        if let Some(r) = &self.recorder {
            lock(r)
                .trace
                .tasks
                .push((trace_key(task, attempt), config.clone()));
        }
    }
    pub(super) fn record_task(
        &self,
        task: TaskId,
        attempt: AttemptNo,
        now: Millis,
        event: &crate::task::TaskEvent,
    ) {
        if let Some(r) = &self.recorder {
            lock(r).trace.steps.push(TraceLine::Task {
                now,
                task: trace_key(task, attempt),
                event: event.clone(),
            });
        }
    }
    pub(super) fn record_coordinator(&self, now: Millis, event: &CoordinatorEvent) {
        if let Some(r) = &self.recorder {
            lock(r).trace.steps.push(TraceLine::Coordinator {
                now,
                event: event.clone(),
            });
        }
    }
    pub(super) fn task_failed(&self, task: TaskId, attempt: AttemptNo, genuine: bool) {
        {
            let mut s = self.stats();
            if genuine {
                s.genuine_failures += 1;
            } else {
                s.spurious_failures += 1;
            }
        }
        let _ = self.failures.send((task, attempt));
    }
    /// Deletes a state file nobody acknowledged (a task-side discard).
    pub(super) fn delete_unacked_state(&self, handle: StateHandle) {
        let _ = self.fs.remove(&state_path(handle));
    }
}

/// The trace key of a task attempt (as the system stories key them).
#[must_use]
pub fn trace_key(task: TaskId, attempt: AttemptNo) -> TaskId {
    TaskId(task.0.saturating_mul(100_000).saturating_add(attempt.0))
}
