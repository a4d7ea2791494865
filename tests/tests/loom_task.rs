//! Loom proofs of the task host (`ckpt_core::host::TaskHost`): every
//! interleaving of the netty, task (mailbox), writer and RPC threads over the
//! real `Mutex`-based adapter. Each step is checked with the shared task
//! invariants inside the sink (which runs under the host's lock); after the
//! threads join, the main thread plays the rest of the task's life (drains the
//! mailbox, lets the writer and the async part finish) and checks quiescence.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p ckpt-tests --release --test loom_task -- --nocapture
//! ```
// Without `--cfg loom` this file compiles to an empty crate.
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ckpt_core::host::{TaskEffectSink, TaskHost, TaskStep};
use ckpt_core::invariants::task::{check_all, check_quiescent, TaskMonitor};
use ckpt_core::invariants::Violation;
use ckpt_core::task::{
    LegacyBug, Lifecycle, Semantics, TaskConfig, TaskEffect, TaskEvent, TaskState,
};
use ckpt_core::{CheckpointId, Millis, StateHandle, Thread};
use loom::thread;
// The host is shared with a std `Arc`: its reference count is not what is
// under test (the host's lock, a loom `Mutex` through `ckpt_core::sync`, is),
// and leaving it out of the model keeps the runs exhaustive.
use ckpt_core::route::ToCoordinator;
use ckpt_core::task::AsyncCommand;
use std::sync::Arc;

/// Runs `body` under loom, counting interleavings; prints the count and the
/// time. `bound` is the preemption bound unless `LOOM_MAX_PREEMPTIONS` is set.
fn explore(name: &str, bound: Option<usize>, body: impl Fn(usize) + Sync + Send + 'static) {
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = bound;
    }
    let bound = builder.preemption_bound;
    let start = Instant::now();
    builder.check(move || {
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        body(n);
    });
    println!(
        "loom {name}: {} interleavings in {:.2} s (preemption bound {})",
        runs.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
        bound.map_or_else(|| "none".to_string(), |b| b.to_string()),
    );
}

/// The sink: checks every step with the shared invariants and keeps what
/// each thread saw.
#[derive(Default)]
struct Recorder {
    monitor: TaskMonitor,
    violation: Option<Violation>,
    seen: Vec<(Thread, Vec<TaskEffect>)>,
}

impl TaskEffectSink for Recorder {
    fn on_step(&mut self, s: &TaskStep<'_>) {
        let r = check_all(&mut self.monitor, s.before, s.event, s.step, s.after);
        if let (Err(v), None) = (r, &self.violation) {
            self.violation = Some(v);
        }
        let thread = if s.from_mailbox {
            Thread::Task
        } else {
            s.event.thread()
        };
        self.seen.push((thread, s.step.effects.to_vec()));
    }
}

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn host(semantics: Semantics) -> Arc<TaskHost<Recorder>> {
    let cfg = TaskConfig {
        semantics,
        ..TaskConfig::default()
    };
    let state = TaskState::new(cfg).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(TaskHost::new(state, Recorder::default()))
}

fn barrier(n: u64) -> TaskEvent {
    TaskEvent::BarrierReceived {
        checkpoint: cp(n),
        via: Thread::Netty,
    }
}

/// The rest of the task's life after the racing threads are done: the task
/// thread drains its mailbox, the writer finishes every result, the async
/// part finishes. Then: no violation on any step, quiescent, nothing leaked.
fn finish_and_check(host: Arc<TaskHost<Recorder>>, iteration: usize) -> Recorder {
    let now = Millis(100);
    loop {
        if host.run_mailbox_once(now) {
            continue;
        }
        let s = host.state();
        if let Some(checkpoint) = s.writer_in_progress().first().copied() {
            host.deliver(now, TaskEvent::WriterCompleted { checkpoint });
            continue;
        }
        if let Some(checkpoint) = s.async_parts().first().copied() {
            let handle = StateHandle(checkpoint.0);
            host.deliver(now, TaskEvent::AsyncPartCompleted { checkpoint, handle });
            continue;
        }
        break;
    }
    let Ok(host) = Arc::try_unwrap(host) else {
        panic!("a thread still holds the host");
    };
    let (state, rest, sink) = host.into_parts();
    if let Some(v) = &sink.violation {
        panic!(
            "{v} (interleaving #{iteration}; effects by thread: {:?})",
            sink.seen
        );
    }
    assert!(rest.is_empty());
    if let Err(v) = check_quiescent(&state) {
        panic!("{v} (interleaving #{iteration})");
    }
    assert!(
        sink.monitor.leaked().is_empty(),
        "leaked write results {:?} (interleaving #{iteration})",
        sink.monitor.leaked()
    );
    assert_eq!(state.lifecycle(), Lifecycle::Running);
    sink
}

/// Netty starts checkpoint 1 (then 2) while the task thread handles a cancel
/// marker for 1 and runs its mailbox, and the writer completes result 1.
#[test]
fn netty_start_vs_task_cancel_vs_mailbox_execute() {
    explore("netty_start_vs_task_cancel_vs_mailbox_execute", None, |n| {
        let host = host(Semantics::Fixed);
        let netty = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), barrier(1));
                host.deliver(Millis(2), barrier(2));
            })
        };
        let task = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), TaskEvent::CancelMarker { checkpoint: cp(1) });
                host.run_mailbox_once(Millis(2));
            })
        };
        let writer = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), TaskEvent::WriterCompleted { checkpoint: cp(1) });
            })
        };
        for t in [netty, task, writer] {
            t.join().unwrap_or_else(|_| panic!("thread panicked"));
        }
        finish_and_check(host, n);
    });
}

/// The FLINK-17869 race: the coordinator's notify-aborted for 1 (RPC thread,
/// into the mailbox) vs netty's barrier 1 (which creates the result and
/// schedules the mail) vs the task thread running the mailbox vs the writer.
fn notify_aborted_vs_barrier_vs_mail(name: &str, semantics: Semantics) {
    explore(name, None, move |n| {
        let host = host(semantics);
        let netty = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), barrier(1));
            })
        };
        let task = {
            let host = host.clone();
            thread::spawn(move || {
                host.run_mailbox_once(Millis(2));
                host.run_mailbox_once(Millis(2));
            })
        };
        let writer = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), TaskEvent::WriterCompleted { checkpoint: cp(1) });
            })
        };
        // Spawned last, so loom's first schedule (spawn order) runs the mail
        // before the abort: finding the bug takes a search.
        let rpc = {
            let host = host.clone();
            thread::spawn(move || host.enqueue(TaskEvent::NotifyAborted { checkpoint: cp(1) }))
        };
        for t in [netty, task, writer, rpc] {
            t.join().unwrap_or_else(|_| panic!("thread panicked"));
        }
        let sink = finish_and_check(host, n);
        // Checkpoint 1 is acknowledged or declined at most once; when it is
        // neither, the abort cancelled its running async part.
        let ends = sink
            .seen
            .iter()
            .flat_map(|(_, fx)| fx)
            .filter(|e| {
                matches!(
                    e,
                    TaskEffect::Coordinator(ToCoordinator::Ack { .. })
                        | TaskEffect::Coordinator(ToCoordinator::Decline { .. })
                )
            })
            .count();
        let cancelled = sink
            .seen
            .iter()
            .flat_map(|(_, fx)| fx)
            .any(|e| matches!(e, TaskEffect::AsyncPart(AsyncCommand::Cancel(_))));
        assert!(
            ends == 1 || (ends == 0 && cancelled),
            "effects: {:?}",
            sink.seen
        );
    });
}

#[test]
fn notify_aborted_vs_barrier_vs_mail_fixed() {
    notify_aborted_vs_barrier_vs_mail("notify_aborted_vs_barrier_vs_mail_fixed", Semantics::Fixed);
}

/// With the pre-fix semantics loom must find the interleaving where the
/// abort runs between the start and the mail and the task fails: the test
/// passes only because the model body panics on that invariant violation.
#[test]
#[should_panic(expected = "invariant `no_spurious_failure` violated: FailTask(WriteResultMissing)")]
fn notify_aborted_vs_barrier_vs_mail_legacy_finds_the_task_failure() {
    notify_aborted_vs_barrier_vs_mail(
        "notify_aborted_vs_barrier_vs_mail_legacy",
        Semantics::Legacy(LegacyBug::AbortRemovesResult),
    );
}
