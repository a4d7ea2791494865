//! Plain (non-loom) tests of the hosts: single-threaded stories pinning the
//! mailbox semantics, and multi-threaded runs with std threads checked
//! against the shared invariants.

use std::collections::VecDeque;
use std::sync::mpsc;

use super::*;
use crate::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, Ignored, IoAnswer,
    IoRequest, Report, Timer, TriggerKind,
};
use crate::invariants::{coordinator as cinv, task as tinv, Violation};
use crate::task::{AsyncCommand, ToCoordinator, WriterCommand};
use crate::task::{
    DeclineReason, FailureReason, IgnoreReason, LegacyBug, Lifecycle, Outcome, Semantics,
    TaskConfig, TaskEffect, TaskEvent, TaskState,
};
use crate::types::{AttemptNo, CheckpointId, JobId, Millis, StateHandle, TaskId, Thread};

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

/// A task sink that checks every step with the shared invariants and keeps
/// the effects.
#[derive(Default)]
struct TaskChecker {
    monitor: tinv::TaskMonitor,
    effects: Vec<TaskEffect>,
    violations: Vec<Violation>,
    /// Work for the writer thread (`WriterCommand::Start`,
    /// `AsyncCommand::Start`).
    work: Option<mpsc::Sender<TaskEffect>>,
}

impl TaskEffectSink for TaskChecker {
    fn on_step(&mut self, s: &TaskStep<'_>) {
        if let Err(v) = tinv::check_all(&mut self.monitor, s.before, s.event, s.step, s.after) {
            self.violations.push(v);
        }
        for e in &s.step.effects {
            self.effects.push(*e);
            if let (
                Some(tx),
                TaskEffect::Writer(WriterCommand::Start(_))
                | TaskEffect::AsyncPart(AsyncCommand::Start(_)),
            ) = (&self.work, e)
            {
                // The receiver outlives every sender in these tests.
                let _ = tx.send(*e);
            }
        }
    }
}

fn task_host(semantics: Semantics) -> TaskHost<TaskChecker> {
    let cfg = TaskConfig {
        semantics,
        ..TaskConfig::default()
    };
    TaskHost::new(
        TaskState::new(cfg).unwrap_or_else(|e| panic!("{e}")),
        TaskChecker::default(),
    )
}

fn barrier(n: u64) -> TaskEvent {
    TaskEvent::BarrierReceived {
        checkpoint: cp(n),
        via: Thread::Netty,
    }
}

#[test]
fn schedule_mail_becomes_a_mailbox_entry_and_enqueue_waits_for_the_task_thread() {
    let host = task_host(Semantics::Fixed);
    assert_eq!(host.deliver(Millis(0), barrier(1)), Outcome::Applied);
    assert_eq!(host.mailbox_len(), 1);
    host.enqueue(TaskEvent::NotifyComplete { checkpoint: cp(1) });
    assert_eq!(host.mailbox_len(), 2);
    assert_eq!(
        host.state().last_completed(),
        None,
        "enqueue applies nothing"
    );
    assert!(host.run_mailbox_once(Millis(1)));
    assert_eq!(host.state().async_parts(), vec![cp(1)]);
    assert!(host.run_mailbox_once(Millis(1)));
    assert_eq!(host.state().last_completed(), Some(cp(1)));
    assert!(!host.run_mailbox_once(Millis(1)));
    let (_, rest, sink) = host.into_parts();
    assert!(rest.is_empty());
    assert!(sink.violations.is_empty(), "{:?}", sink.violations);
}

/// The FLINK-17869 interleaving through the host: the RPC's abort is in the
/// mailbox ahead of the mail the barrier schedules.
fn abort_before_execute(semantics: Semantics) -> TaskChecker {
    let host = task_host(semantics);
    host.enqueue(TaskEvent::NotifyAborted { checkpoint: cp(1) });
    host.deliver(Millis(0), barrier(1));
    while host.run_mailbox_once(Millis(1)) {}
    host.into_parts().2
}

#[test]
fn abort_before_execute_declines_with_the_fix() {
    let sink = abort_before_execute(Semantics::Fixed);
    assert!(sink.violations.is_empty(), "{:?}", sink.violations);
    assert!(sink
        .effects
        .contains(&TaskEffect::Coordinator(ToCoordinator::Decline {
            checkpoint: cp(1),
            reason: DeclineReason::AbortedByCoordinator
        })));
    assert!(sink.monitor.leaked().is_empty());
}

#[test]
fn abort_before_execute_fails_the_task_in_legacy_and_the_invariants_say_so() {
    let sink = abort_before_execute(Semantics::Legacy(LegacyBug::AbortRemovesResult));
    assert!(sink
        .effects
        .contains(&TaskEffect::Fail(FailureReason::WriteResultMissing)));
    assert_eq!(
        sink.violations.first().map(|v| v.invariant),
        Some("no_spurious_failure")
    );
}

#[test]
fn mails_left_after_close_are_ignored() {
    let host = task_host(Semantics::Fixed);
    host.deliver(Millis(0), barrier(1));
    host.deliver(Millis(0), TaskEvent::Close);
    assert!(host.run_mailbox_once(Millis(1)));
    let (state, _, sink) = host.into_parts();
    assert_eq!(state.lifecycle(), Lifecycle::Closed);
    assert!(sink.violations.is_empty(), "{:?}", sink.violations);
    assert_eq!(tinv::check_quiescent(&state), Ok(()));
}

#[test]
fn a_sink_closure_sees_steps_in_order() {
    let mut seen = Vec::new();
    {
        let host = TaskHost::new(
            TaskState::new(TaskConfig::default()).unwrap(),
            |s: &TaskStep<'_>| {
                seen.push((s.event.kind(), s.from_mailbox, s.step.outcome.clone()));
            },
        );
        host.deliver(Millis(0), barrier(1));
        host.deliver(Millis(0), barrier(1));
        host.run_mailbox_once(Millis(0));
    }
    assert_eq!(
        seen,
        vec![
            ("BarrierReceived", false, Outcome::Applied),
            (
                "BarrierReceived",
                false,
                Outcome::Ignored(IgnoreReason::AlreadyStarted)
            ),
            ("CheckpointMail", true, Outcome::Applied),
        ]
    );
}

/// The README example with std threads: netty delivers barriers 1..=4, an
/// RPC thread aborts 2 and 3, the task thread drains the mailbox, the writer
/// completes results and async parts. Repeated to shake out interleavings.
#[test]
#[allow(clippy::disallowed_methods)] // reason: the test plays the runtime, whose threads these are
fn three_threads_netty_task_writer_keep_the_invariants() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for semantics in [
        Semantics::Fixed,
        Semantics::Legacy(LegacyBug::CancelForgetsAbort),
    ] {
        for _ in 0..50 {
            let (tx, rx) = mpsc::channel();
            let checker = TaskChecker {
                work: Some(tx),
                ..TaskChecker::default()
            };
            let cfg = TaskConfig {
                semantics,
                ..TaskConfig::default()
            };
            let host = std::sync::Arc::new(TaskHost::new(TaskState::new(cfg).unwrap(), checker));
            let input_done = std::sync::Arc::new(AtomicBool::new(false));
            let netty = {
                let host = host.clone();
                std::thread::spawn(move || {
                    for n in 1..=4 {
                        host.deliver(Millis(n), barrier(n));
                    }
                })
            };
            let rpc = {
                let host = host.clone();
                std::thread::spawn(move || {
                    host.enqueue(TaskEvent::NotifyAborted { checkpoint: cp(2) });
                    host.enqueue(TaskEvent::NotifyAborted { checkpoint: cp(3) });
                })
            };
            let task = {
                let host = host.clone();
                let input_done = input_done.clone();
                std::thread::spawn(move || loop {
                    if !host.run_mailbox_once(Millis(10)) {
                        if input_done.load(Ordering::SeqCst) && host.mailbox_len() == 0 {
                            break;
                        }
                        std::thread::yield_now();
                    }
                })
            };
            let writer = {
                let host = host.clone();
                std::thread::spawn(move || {
                    // Ends when the sink drops its sender.
                    while let Ok(work) = rx.recv() {
                        if let TaskEffect::Writer(WriterCommand::Start(checkpoint)) = work {
                            host.deliver(Millis(20), TaskEvent::WriterCompleted { checkpoint });
                        } else if let TaskEffect::AsyncPart(AsyncCommand::Start(checkpoint)) = work
                        {
                            let handle = StateHandle(checkpoint.0);
                            host.deliver(
                                Millis(20),
                                TaskEvent::AsyncPartCompleted { checkpoint, handle },
                            );
                        }
                    }
                })
            };
            netty.join().unwrap();
            rpc.join().unwrap();
            input_done.store(true, Ordering::SeqCst);
            task.join().unwrap();
            host.with_sink(|s| s.work = None);
            writer.join().unwrap();
            let host = std::sync::Arc::try_unwrap(host).ok().unwrap();
            let (state, rest, sink) = host.into_parts();
            assert!(rest.is_empty());
            assert!(
                sink.violations.is_empty(),
                "{semantics:?}: {:?}",
                sink.violations
            );
            assert!(!state.has_outstanding_work(), "{state:?}");
            assert_eq!(tinv::check_quiescent(&state), Ok(()));
            assert!(
                sink.monitor.leaked().is_empty(),
                "{:?}",
                sink.monitor.leaked()
            );
            // Barrier 4 always makes it: nothing aborts it.
            assert!(sink
                .effects
                .iter()
                .any(|e| matches!(e, TaskEffect::Coordinator(ToCoordinator::Ack { checkpoint, .. }) if *checkpoint == cp(4))));
        }
    }
}

// ---------------------------------------------------------------- coordinator

#[derive(Default)]
struct CoordChecker {
    ledger: cinv::HandleLedger,
    violations: Vec<Violation>,
    io: VecDeque<IoRequest>,
    effects: Vec<CoordinatorEffect>,
}

impl CoordinatorEffectSink for CoordChecker {
    fn on_step(&mut self, s: &CoordinatorStep<'_>) {
        if let Err(v) = cinv::check_all(&mut self.ledger, s.before, s.event, s.step, s.after) {
            self.violations.push(v);
        }
        for e in &s.step.effects {
            self.effects.push(e.clone());
            if let CoordinatorEffect::Io { request, .. } = e {
                self.io.push_back(request.clone());
            }
        }
    }
}

/// The I/O completion path: answers one queued I/O request successfully.
fn answer_io<S: CoordinatorEffectSink>(
    host: &CoordinatorHost<S>,
    take: impl FnOnce(&mut S) -> Option<IoRequest>,
    next_id: u64,
) -> bool {
    let Some(req) = host.with_sink(take) else {
        return false;
    };
    let ev = req.answer(IoAnswer::Ok {
        id: CheckpointId(next_id),
    });
    host.deliver(Millis(1), ev);
    true
}

fn ack(task: u32, n: u64) -> CoordinatorEvent {
    CoordinatorEvent::Acknowledge {
        job: JobId(1),
        task: TaskId(task),
        attempt: AttemptNo(0),
        checkpoint: cp(n),
        state: Some(StateHandle(u64::from(task) + 10 * n)),
    }
}

fn coordinator_with_pending(tasks: u32) -> CoordinatorHost<CoordChecker> {
    let settings = CoordinatorSettings::with_tasks(JobId(1), tasks);
    let host = CoordinatorHost::new(
        CoordinatorState::from_settings(settings).unwrap_or_else(|e| panic!("{e}")),
        CoordChecker::default(),
    );
    host.deliver(
        Millis(0),
        CoordinatorEvent::Trigger {
            kind: TriggerKind::Checkpoint { forced: false },
        },
    );
    assert!(answer_io(&host, |s| s.io.pop_front(), 1));
    assert_eq!(host.state().pending_count(), 1);
    host
}

#[test]
fn a_timeout_after_completion_is_ignored() {
    let host = coordinator_with_pending(2);
    let deadline = host.state().timer_deadline(Timer::Timeout(cp(1))).unwrap();
    host.deliver(Millis(1), ack(0, 1));
    host.deliver(Millis(1), ack(1, 1));
    while answer_io(&host, |s| s.io.pop_front(), 2) {}
    let out = host.deliver(
        deadline,
        CoordinatorEvent::TimerFired {
            timer: Timer::Timeout(cp(1)),
        },
    );
    assert_eq!(
        out,
        crate::coordinator::Outcome::Ignored(Ignored::TimerNotArmed)
    );
    let (state, sink) = host.into_parts();
    assert!(sink.violations.is_empty(), "{:?}", sink.violations);
    assert_eq!(state.latest_completed(), Some(cp(1)));
}

#[test]
#[allow(clippy::disallowed_methods)] // reason: the test plays the runtime, whose threads these are
fn acks_timer_and_io_from_std_threads_keep_the_invariants() {
    for _ in 0..50 {
        let host = std::sync::Arc::new(coordinator_with_pending(3));
        let deadline = host.state().timer_deadline(Timer::Timeout(cp(1))).unwrap();
        let mut threads = Vec::new();
        for t in 0..3 {
            let host = host.clone();
            threads.push(std::thread::spawn(move || {
                host.deliver(Millis(5), ack(t, 1));
            }));
        }
        {
            let host = host.clone();
            threads.push(std::thread::spawn(move || {
                host.deliver(
                    deadline,
                    CoordinatorEvent::TimerFired {
                        timer: Timer::Timeout(cp(1)),
                    },
                );
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        while answer_io(&host, |s| s.io.pop_front(), 2) {}
        let host = std::sync::Arc::try_unwrap(host).ok().unwrap();
        let (state, sink) = host.into_parts();
        assert!(sink.violations.is_empty(), "{:?}", sink.violations);
        assert_eq!(state.pending_count(), 0);
        assert_eq!(sink.ledger.check(&state), Ok(()));
        let completed = sink
            .effects
            .iter()
            .any(|e| matches!(e, CoordinatorEffect::Report(Report::Completed { .. })));
        let aborted = sink
            .effects
            .iter()
            .any(|e| matches!(e, CoordinatorEffect::Report(Report::Aborted { .. })));
        assert!(completed ^ aborted);
    }
}
