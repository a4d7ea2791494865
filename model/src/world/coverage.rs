//! Transition coverage: how often each (machine, event kind, outcome kind)
//! was exercised. Every scheduler over the world (the model, the property
//! stories, the fuzz targets) records into the same shape.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ckpt_core::coordinator::{self, Applied, CoordinatorEvent as CEv, Timer};

/// Transition coverage: (machine, event kind, outcome kind) -> count.
pub type Coverage = BTreeMap<(&'static str, &'static str, String), u64>;

/// Per-thread coverage counts, merged into the shared map every 65,536
/// records and when the thread exits (no lock per transition).
#[derive(Default)]
struct LocalCoverage {
    target: Option<Arc<Mutex<Coverage>>>,
    counts: Coverage,
    pending: usize,
}

impl LocalCoverage {
    fn flush(&mut self) {
        if let Some(t) = &self.target {
            if let Ok(mut map) = t.lock() {
                for (k, v) in std::mem::take(&mut self.counts) {
                    *map.entry(k).or_default() += v;
                }
            }
        }
        self.counts.clear();
        self.pending = 0;
    }
}

impl Drop for LocalCoverage {
    fn drop(&mut self) {
        self.flush();
    }
}

thread_local! {
    static LOCAL_COVERAGE: std::cell::RefCell<LocalCoverage> =
        std::cell::RefCell::new(LocalCoverage::default());
}

/// Flushes this thread's coverage counts (the checker's worker threads flush
/// when they exit; call this on a thread that stepped the world itself).
pub fn flush_coverage() {
    LOCAL_COVERAGE.with(|c| c.borrow_mut().flush());
}

/// Records one transition into `target` (through this thread's buffer).
pub(crate) fn record(
    target: &Arc<Mutex<Coverage>>,
    machine: &'static str,
    kind: &'static str,
    outcome: String,
) {
    LOCAL_COVERAGE.with(|cell| {
        let mut local = cell.borrow_mut();
        if !local
            .target
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, target))
        {
            local.flush();
            local.target = Some(Arc::clone(target));
        }
        *local.counts.entry((machine, kind, outcome)).or_default() += 1;
        local.pending += 1;
        if local.pending >= 1 << 16 {
            local.flush();
        }
    });
}

/// The coordinator event's kind (coverage).
#[must_use]
pub fn coord_event_kind(ev: &CEv) -> &'static str {
    match ev {
        CEv::StartScheduler => "StartScheduler",
        CEv::StopScheduler => "StopScheduler",
        CEv::Trigger { .. } => "Trigger",
        CEv::TimerFired {
            timer: Timer::Periodic,
        } => "TimerFired(Periodic)",
        CEv::TimerFired {
            timer: Timer::Timeout(_),
        } => "TimerFired(Timeout)",
        CEv::CheckpointIdAllocated { result: Ok(_), .. } => "CheckpointIdAllocated(ok)",
        CEv::CheckpointIdAllocated { result: Err(_), .. } => "CheckpointIdAllocated(err)",
        CEv::MasterHooksDone { .. } => "MasterHooksDone",
        CEv::Acknowledge { .. } => "Acknowledge",
        CEv::Decline { .. } => "Decline",
        CEv::FinalizeDone { result: Ok(()), .. } => "FinalizeDone(ok)",
        CEv::FinalizeDone { result: Err(_), .. } => "FinalizeDone(err)",
        CEv::StoreDone { result: Ok(()), .. } => "StoreDone(ok)",
        CEv::StoreDone { result: Err(_), .. } => "StoreDone(err)",
        CEv::TaskRunning { .. } => "TaskRunning",
        CEv::TaskFailed { .. } => "TaskFailed",
        CEv::Restore { .. } => "Restore",
        CEv::Recover { .. } => "Recover",
        CEv::Shutdown { .. } => "Shutdown",
    }
}

/// Every coordinator event kind the world can deliver, and those it never
/// does by design (coverage gaps are reported against the first list).
pub const COORD_EVENT_KINDS: [&str; 19] = [
    "StartScheduler",
    "StopScheduler",
    "TaskFailed",
    "TaskRunning",
    "TimerFired(Periodic)",
    "TimerFired(Timeout)",
    "CheckpointIdAllocated(ok)",
    "CheckpointIdAllocated(err)",
    "Acknowledge",
    "Decline",
    "FinalizeDone(ok)",
    "FinalizeDone(err)",
    "StoreDone(ok)",
    "StoreDone(err)",
    "Shutdown",
    "MasterHooksDone",
    "Trigger",
    "Restore",
    "Recover",
];

/// Every task event kind the world can deliver.
pub const TASK_EVENT_KINDS: [&str; 13] = [
    "BarrierReceived",
    "TriggerCheckpoint",
    "CheckpointMail",
    "CancelMarker",
    "NotifyAborted",
    "NotifyComplete",
    "WriterCompleted",
    "WriterFailed",
    "AsyncPartCompleted",
    "AsyncPartFailed",
    "OperatorFailed",
    "EndOfInput",
    "Close",
];

fn applied_kind(a: &Applied) -> String {
    match a {
        Applied::SchedulerStarted => "SchedulerStarted".into(),
        Applied::SchedulerStopped { .. } => "SchedulerStopped".into(),
        Applied::AllocatingId { .. } => "AllocatingId".into(),
        Applied::Queued { reason, .. } => format!("Queued({reason:?})"),
        Applied::TriggerRejected { reason, .. } => format!("TriggerRejected({reason:?})"),
        Applied::PeriodicFired(inner) => format!("PeriodicFired/{}", applied_kind(inner)),
        Applied::CheckpointTriggered { .. } => "CheckpointTriggered".into(),
        Applied::RequestEnded { reason, .. } => format!("RequestEnded({reason:?})"),
        Applied::HooksDone { .. } => "HooksDone".into(),
        Applied::Acknowledged { remaining, .. } => {
            if *remaining == 0 {
                "Acknowledged(last)".into()
            } else {
                "Acknowledged(more)".into()
            }
        }
        Applied::Finalized { .. } => "Finalized".into(),
        Applied::Completed { .. } => "Completed".into(),
        Applied::Aborted { reason, .. } => format!("Aborted({reason:?})"),
        Applied::TaskUpdated { .. } => "TaskUpdated".into(),
        Applied::Restored { .. } => "Restored".into(),
        Applied::ShutDown => "ShutDown".into(),
        Applied::Recovered { .. } => "Recovered".into(),
        Applied::ClockExhausted => "ClockExhausted".into(),
    }
}

/// The coordinator outcome's kind, without ids (coverage).
#[must_use]
pub fn coord_outcome_kind(o: &coordinator::Outcome) -> String {
    match o {
        coordinator::Outcome::Applied(a) => format!("Applied::{}", applied_kind(a)),
        coordinator::Outcome::Ignored(i) => format!("Ignored::{i:?}"),
        coordinator::Outcome::Rejected(e) => {
            let d = format!("{e:?}");
            let name = d.split(['(', ' ', '{']).next().unwrap_or("").to_string();
            format!("Rejected::{name}")
        }
    }
}
