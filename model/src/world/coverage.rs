//! Transition coverage: how often each (machine, state phase, event kind,
//! outcome kind) was exercised. Every scheduler over the world (the model,
//! the property stories, the fuzz targets) records into the same shape. The
//! phase is the machine's state before the event, in a few words
//! ([`coord_phase`], [`task_phase`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use ckpt_core::coordinator::{self, Applied, CoordinatorEvent as CEv, CoordinatorState, Timer};
use ckpt_core::task::{Lifecycle, TaskState};

/// Transition coverage: (machine, phase, event kind, outcome kind) -> count.
pub type Coverage = BTreeMap<(&'static str, &'static str, &'static str, String), u64>;

/// Every coordinator phase [`coord_phase`] names, in the order a
/// checkpoint goes through them.
pub const COORD_PHASES: [&str; 5] = ["idle", "triggering", "pending", "completing", "shut down"];

/// The coordinator's phase before an event: shut down; completing (a
/// finalize or store is out); pending (a checkpoint waits for acks);
/// triggering (a trigger request is in progress, none pending); idle.
#[must_use]
pub fn coord_phase(c: &CoordinatorState) -> &'static str {
    if c.is_shutdown() {
        "shut down"
    } else if c.completing().is_some() {
        "completing"
    } else if c.pending_count() > 0 {
        "pending"
    } else if c.in_flight().is_some() {
        "triggering"
    } else {
        "idle"
    }
}

/// Every task phase [`task_phase`] names.
pub const TASK_PHASES: [&str; 6] = [
    "running, quiet",
    "running, working",
    "finished, quiet",
    "finished, working",
    "failed",
    "closed",
];

/// The task's phase before an event: its lifecycle, and for a running or
/// finished task whether a checkpoint is under way on it (a write result,
/// a scheduled checkpoint mail or an async part).
#[must_use]
pub fn task_phase(t: &TaskState) -> &'static str {
    let working = t.has_outstanding_work();
    match (t.lifecycle(), working) {
        (Lifecycle::Running, false) => "running, quiet",
        (Lifecycle::Running, true) => "running, working",
        (Lifecycle::Finished, false) => "finished, quiet",
        (Lifecycle::Finished, true) => "finished, working",
        (Lifecycle::Failed, _) => "failed",
        (Lifecycle::Closed, _) => "closed",
    }
}

/// Which transition a record is, without its text: the addresses of the
/// machine, phase and kind names and a hash of the outcome's value.
type MemoKey = ([(usize, usize); 3], u64);

/// Per-thread coverage counts, merged into the shared map every 65,536
/// records and when the thread exits (no lock per transition).
/// The counts are a short list (a few dozen kinds of transition); a record
/// finds its entry through `memo`, keyed by the outcome's hash, and writes
/// the outcome's text only the first time that outcome value is seen (the
/// text was 6 % of a check's time when every step formatted it).
#[derive(Default)]
struct LocalCoverage {
    target: Option<Arc<Mutex<Coverage>>>,
    counts: Vec<(&'static str, &'static str, &'static str, String, u64)>,
    memo: HashMap<MemoKey, usize, ahash::RandomState>,
    buf: String,
    pending: usize,
}

impl LocalCoverage {
    /// Adds the counts to the target and zeroes them (the entries stay, so
    /// `memo` stays valid).
    fn flush(&mut self) {
        if let Some(t) = &self.target {
            if let Ok(mut map) = t.lock() {
                for (m, p, k, o, v) in &mut self.counts {
                    if *v > 0 {
                        *map.entry((*m, *p, *k, o.clone())).or_default() += *v;
                        *v = 0;
                    }
                }
            }
        }
        self.pending = 0;
    }
}

/// The hash a coverage record keys an outcome by: equal outcomes, equal
/// keys (two different outcomes sharing one would be counted under the first
/// one's text, with the odds of a 64-bit collision).
#[must_use]
pub fn outcome_key<T: std::hash::Hash>(outcome: &T) -> u64 {
    ahash::RandomState::with_seeds(11, 12, 13, 14).hash_one(outcome)
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

/// Records one transition into `target` (through this thread's buffer);
/// `key` is [`outcome_key`] of the outcome, `outcome` writes its text (called
/// only for an outcome this thread has not recorded yet).
pub(crate) fn record(
    target: &Arc<Mutex<Coverage>>,
    machine: &'static str,
    phase: &'static str,
    kind: &'static str,
    key: u64,
    outcome: impl FnOnce(&mut String),
) {
    LOCAL_COVERAGE.with(|cell| {
        let mut guard = cell.borrow_mut();
        let local = &mut *guard;
        if !local
            .target
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, target))
        {
            local.flush();
            local.counts.clear();
            local.memo.clear();
            local.target = Some(Arc::clone(target));
        }
        let name = |s: &'static str| (s.as_ptr() as usize, s.len());
        let memo_key = ([name(machine), name(phase), name(kind)], key);
        let index = if let Some(&i) = local.memo.get(&memo_key) {
            i
        } else {
            local.buf.clear();
            outcome(&mut local.buf);
            let buf = &local.buf;
            let i =
                match local.counts.iter().position(|(m, p, k, o, _)| {
                    *m == machine && *p == phase && *k == kind && o == buf
                }) {
                    Some(i) => i,
                    None => {
                        local.counts.push((machine, phase, kind, buf.clone(), 0));
                        local.counts.len() - 1
                    }
                };
            local.memo.insert(memo_key, i);
            i
        };
        if let Some(entry) = local.counts.get_mut(index) {
            entry.4 += 1;
        }
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
        CEv::TaskFinished { .. } => "TaskFinished",
        CEv::Restore { .. } => "Restore",
        CEv::Recover { .. } => "Recover",
        CEv::DisposeSavepoint { .. } => "DisposeSavepoint",
        CEv::Shutdown { .. } => "Shutdown",
    }
}

/// Every coordinator event kind the world can deliver, and those it never
/// does by design (coverage gaps are reported against the first list).
pub const COORD_EVENT_KINDS: [&str; 21] = [
    "StartScheduler",
    "StopScheduler",
    "TaskFailed",
    "TaskRunning",
    "TaskFinished",
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
    "DisposeSavepoint",
];

/// Every task event kind the world can deliver.
pub const TASK_EVENT_KINDS: [&str; 14] = [
    "BarrierReceived",
    "TriggerCheckpoint",
    "CheckpointMail",
    "CancelMarker",
    "NotifyAborted",
    "NotifyComplete",
    "WriterCompleted",
    "WriterFailed",
    "AsyncPartCompleted",
    "AsyncPartReused",
    "AsyncPartFailed",
    "OperatorFailed",
    "EndOfInput",
    "Close",
];

fn write_applied(w: &mut String, a: &Applied) {
    use std::fmt::Write as _;
    let _ = match a {
        Applied::SchedulerStarted => w.write_str("SchedulerStarted"),
        Applied::SchedulerStopped { .. } => w.write_str("SchedulerStopped"),
        Applied::AllocatingId { .. } => w.write_str("AllocatingId"),
        Applied::Queued { reason, .. } => write!(w, "Queued({reason:?})"),
        Applied::TriggerRejected { reason, .. } => write!(w, "TriggerRejected({reason:?})"),
        Applied::PeriodicFired(inner) => {
            w.push_str("PeriodicFired/");
            write_applied(w, inner);
            Ok(())
        }
        Applied::CheckpointTriggered { .. } => w.write_str("CheckpointTriggered"),
        Applied::RequestEnded { reason, .. } => write!(w, "RequestEnded({reason:?})"),
        Applied::HooksDone { .. } => w.write_str("HooksDone"),
        Applied::Acknowledged { remaining, .. } => w.write_str(if *remaining == 0 {
            "Acknowledged(last)"
        } else {
            "Acknowledged(more)"
        }),
        Applied::Finalized { .. } => w.write_str("Finalized"),
        Applied::Completed { .. } => w.write_str("Completed"),
        Applied::Aborted { reason, .. } => write!(w, "Aborted({reason:?})"),
        Applied::TaskUpdated { .. } => w.write_str("TaskUpdated"),
        Applied::Restored { .. } => w.write_str("Restored"),
        Applied::RestoreDeferred { .. } => w.write_str("RestoreDeferred"),
        Applied::SavepointDisposed { .. } => w.write_str("SavepointDisposed"),
        Applied::ShutDown => w.write_str("ShutDown"),
        Applied::Recovered { .. } => w.write_str("Recovered"),
        Applied::ClockExhausted => w.write_str("ClockExhausted"),
    };
}

/// The coordinator outcome's kind, without ids (coverage).
#[must_use]
pub fn coord_outcome_kind(o: &coordinator::Outcome) -> String {
    let mut s = String::new();
    write_coord_outcome_kind(&mut s, o);
    s
}

/// [`coord_outcome_kind`], written into `w`.
pub fn write_coord_outcome_kind(w: &mut String, o: &coordinator::Outcome) {
    use std::fmt::Write as _;
    match o {
        coordinator::Outcome::Applied(a) => {
            w.push_str("Applied::");
            write_applied(w, a);
        }
        coordinator::Outcome::Ignored(i) => {
            let _ = write!(w, "Ignored::{i:?}");
        }
        coordinator::Outcome::Rejected(e) => {
            let d = format!("{e:?}");
            let name = d.split(['(', ' ', '{']).next().unwrap_or("");
            let _ = write!(w, "Rejected::{name}");
        }
    }
}
