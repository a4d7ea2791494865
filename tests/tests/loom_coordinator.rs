//! Loom proofs of the coordinator host (`ckpt_core::host::CoordinatorHost`):
//! RPC threads (acks, declines), the timer thread, the I/O completion path
//! and the job's control calls, all serialised through the host's one lock.
//! Every step is checked with the shared coordinator invariants (state, step
//! and the handle ledger) inside the sink; after the threads join, the main
//! thread answers the I/O still outstanding and checks the end state.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p ckpt-tests --release --test loom_coordinator -- --nocapture
//! ```
// Without `--cfg loom` this file compiles to an empty crate.
#![cfg(loom)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ckpt_core::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, JobStatus, Timer,
    TriggerKind,
};
use ckpt_core::coordinator::{IoAnswer, IoRequest};
use ckpt_core::host::{CoordinatorEffectSink, CoordinatorHost, CoordinatorStep};
use ckpt_core::invariants::coordinator::{check_all, HandleLedger};
use ckpt_core::invariants::Violation;
use ckpt_core::{AttemptNo, CheckpointId, DeclineReason, JobId, Millis, StateHandle, TaskId};
use loom::thread;
// The host is shared with a std `Arc`: its reference count is not what is
// under test (the host's lock, a loom `Mutex` through `ckpt_core::sync`, is),
// and leaving it out of the model keeps the runs exhaustive.
use ckpt_core::coordinator::{JobCommand, Report};
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

const JOB: JobId = JobId(1);

/// The sink: checks every step, collects the effects, and queues the I/O
/// effects for the I/O completion path.
#[derive(Default)]
struct Recorder {
    ledger: HandleLedger,
    violation: Option<Violation>,
    effects: Vec<CoordinatorEffect>,
    io: VecDeque<IoRequest>,
    next_id: u64,
}

impl CoordinatorEffectSink for Recorder {
    fn on_step(&mut self, s: &CoordinatorStep<'_>) {
        let r = check_all(&mut self.ledger, s.before, s.event, s.step, s.after);
        if let (Err(v), None) = (r, &self.violation) {
            self.violation = Some(v);
        }
        for e in &s.step.effects {
            self.effects.push(e.clone());
            if let CoordinatorEffect::Io { request, .. } = e {
                self.io.push_back(request.clone());
            }
        }
    }
}

type Host = Arc<CoordinatorHost<Recorder>>;

/// The I/O completion path: takes one queued I/O effect and answers it
/// successfully. Returns whether there was one.
fn answer_io(host: &Host, now: Millis) -> bool {
    let Some((req, id)) = host.with_sink(|s| {
        let req = s.io.pop_front()?;
        if matches!(req, IoRequest::AllocateId { .. }) {
            s.next_id += 1;
        }
        Some((req, s.next_id))
    }) else {
        return false;
    };
    let event = req.answer(IoAnswer::Ok {
        id: CheckpointId(id),
    });
    host.deliver(now, event);
    true
}

fn ack(task: u32, n: u64) -> CoordinatorEvent {
    CoordinatorEvent::Acknowledge {
        job: JOB,
        task: TaskId(task),
        attempt: AttemptNo(0),
        checkpoint: CheckpointId(n),
        state: Some(StateHandle(100 * n + u64::from(task))),
    }
}

fn decline(task: u32, n: u64, reason: DeclineReason) -> CoordinatorEvent {
    CoordinatorEvent::Decline {
        job: JOB,
        task: TaskId(task),
        attempt: AttemptNo(0),
        checkpoint: CheckpointId(n),
        reason,
    }
}

fn timeout(n: u64) -> CoordinatorEvent {
    CoordinatorEvent::TimerFired {
        timer: Timer::Timeout(CheckpointId(n)),
    }
}

fn host(tasks: u32) -> Host {
    let settings = CoordinatorSettings::with_tasks(JOB, tasks);
    let state = CoordinatorState::from_settings(settings).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(CoordinatorHost::new(state, Recorder::default()))
}

/// A host with checkpoint 1 pending (triggered and its id allocated) and
/// the deadline of its timeout.
fn host_with_pending(tasks: u32) -> (Host, Millis) {
    let host = host(tasks);
    host.deliver(
        Millis(0),
        CoordinatorEvent::Trigger {
            kind: TriggerKind::Checkpoint { forced: false },
        },
    );
    assert!(answer_io(&host, Millis(0)));
    let deadline = host
        .state()
        .timer_deadline(Timer::Timeout(CheckpointId(1)))
        .unwrap_or_else(|| panic!("checkpoint 1 is not pending"));
    (host, deadline)
}

/// Answers the I/O still outstanding, then checks: no violation on any
/// step, the ledger against the end state, nothing pending.
fn finish_and_check(host: Host, iteration: usize) -> (CoordinatorState, Recorder) {
    while answer_io(&host, Millis(50_000)) {}
    let Ok(host) = Arc::try_unwrap(host) else {
        panic!("a thread still holds the host");
    };
    let (state, sink) = host.into_parts();
    if let Some(v) = &sink.violation {
        panic!(
            "{v} (interleaving #{iteration}; effects: {:?})",
            sink.effects
        );
    }
    if let Err(v) = sink.ledger.check(&state) {
        panic!("{v} (interleaving #{iteration})");
    }
    assert_eq!(state.pending_count(), 0, "interleaving #{iteration}");
    assert_eq!(state.timers().count(), 0, "interleaving #{iteration}");
    (state, sink)
}

fn count(sink: &Recorder, f: impl Fn(&CoordinatorEffect) -> bool) -> usize {
    sink.effects.iter().filter(|e| f(e)).count()
}

fn join_all(threads: Vec<thread::JoinHandle<()>>) {
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("thread panicked"));
    }
}

/// The timer thread fires checkpoint 1's timeout while the RPC thread
/// delivers the last ack and the I/O path finalizes and stores. Either the
/// checkpoint completes (and the late timer is ignored) or it expires (and
/// the late ack's state is discarded), never both.
#[test]
fn timer_expiry_vs_last_ack() {
    explore("timer_expiry_vs_last_ack", None, |n| {
        let (host, deadline) = host_with_pending(2);
        host.deliver(Millis(1), ack(0, 1));
        let rpc = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(2), ack(1, 1));
            })
        };
        let timer = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(deadline, timeout(1));
            })
        };
        let io = {
            let host = host.clone();
            thread::spawn(move || {
                answer_io(&host, Millis(3));
                answer_io(&host, Millis(3));
            })
        };
        join_all(vec![rpc, timer, io]);
        let (state, sink) = finish_and_check(host, n);
        let completed = count(&sink, |e| {
            matches!(e, CoordinatorEffect::Report(Report::Completed { .. }))
        });
        let aborted = count(&sink, |e| {
            matches!(e, CoordinatorEffect::Report(Report::Aborted { .. }))
        });
        assert_eq!(completed + aborted, 1, "{:?}", sink.effects);
        assert_eq!(state.latest_completed().is_some(), completed == 1);
    });
}

/// Task 0 acks while task 1 declines and the timeout fires: the checkpoint
/// is aborted exactly once, task 0's state is discarded exactly once
/// (whether it arrived before or after the abort), it never completes.
#[test]
fn decline_vs_ack() {
    explore("decline_vs_ack", None, |n| {
        let (host, deadline) = host_with_pending(2);
        let acker = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), ack(0, 1));
            })
        };
        let decliner = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(Millis(1), decline(1, 1, DeclineReason::SnapshotFailed));
            })
        };
        let timer = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(deadline, timeout(1));
            })
        };
        join_all(vec![acker, decliner, timer]);
        let (_, sink) = finish_and_check(host, n);
        let aborted = count(&sink, |e| {
            matches!(e, CoordinatorEffect::Report(Report::Aborted { .. }))
        });
        let completed = count(&sink, |e| {
            matches!(e, CoordinatorEffect::Report(Report::Completed { .. }))
        });
        let discarded = count(
            &sink,
            |e| matches!(e, CoordinatorEffect::Discard { handle, .. } if *handle == StateHandle(100)),
        );
        let fail_job = count(&sink, |e| {
            matches!(e, CoordinatorEffect::Job(JobCommand::Fail(_)))
        });
        assert_eq!(
            (aborted, completed, discarded),
            (1, 0, 1),
            "{:?}",
            sink.effects
        );
        assert!(fail_job <= 1);
    });
}

/// Shutdown races a periodic trigger, a user savepoint and the I/O path
/// answering id allocations: afterwards nothing is pending, queued or armed,
/// nothing was emitted after shutdown, every started request ended.
#[test]
fn shutdown_vs_trigger() {
    explore("shutdown_vs_trigger", Some(4), |n| {
        let host = host(1);
        host.deliver(Millis(0), CoordinatorEvent::StartScheduler);
        let periodic = host
            .state()
            .timer_deadline(Timer::Periodic)
            .unwrap_or_else(|| panic!("periodic timer not armed"));
        let timer = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(
                    periodic,
                    CoordinatorEvent::TimerFired {
                        timer: Timer::Periodic,
                    },
                );
            })
        };
        let user = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(
                    periodic,
                    CoordinatorEvent::Trigger {
                        kind: TriggerKind::Savepoint {
                            target: "sp".into(),
                        },
                    },
                );
            })
        };
        let admin = {
            let host = host.clone();
            thread::spawn(move || {
                host.deliver(
                    periodic,
                    CoordinatorEvent::Shutdown {
                        status: JobStatus::Canceled,
                    },
                );
            })
        };
        let io = {
            let host = host.clone();
            thread::spawn(move || {
                answer_io(&host, periodic);
                answer_io(&host, periodic);
            })
        };
        join_all(vec![timer, user, admin, io]);
        let (state, sink) = finish_and_check(host, n);
        assert!(state.is_shutdown());
        assert_eq!(state.queued().count(), 0);
        assert!(state.in_flight().is_none());
        assert!(sink
            .effects
            .iter()
            .any(|e| matches!(e, CoordinatorEffect::Job(JobCommand::ShutdownServices(_)))));
    });
}
