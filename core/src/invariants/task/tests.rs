use super::*;
use crate::task::{
    reduce, FailureReason, IgnoreReason, LegacyBug, ResultFailure, Semantics, TaskConfig,
};
use crate::types::Millis;

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn fresh() -> TaskState {
    TaskState::new(TaskConfig::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn expect_violation(r: Result<(), TaskViolation>, name: &str) {
    match r {
        Err(v) => assert_eq!(v.invariant, name, "{v}"),
        Ok(()) => panic!("expected violation {name}"),
    }
}

#[test]
fn check_state_accepts_fresh_and_catches_each_violation() {
    assert_eq!(check_state(&fresh()), Ok(()));

    let mut s = fresh();
    s.config.aborted_ids_max = 1;
    s.aborted.insert(cp(5));
    s.aborted.insert(cp(6));
    expect_violation(check_state(&s), names::ABORTED_BOUND);

    let mut s = fresh();
    s.last_executed = Some(cp(5));
    s.aborted.insert(cp(5));
    expect_violation(check_state(&s), names::ABORTED_UNEXECUTED);

    let mut s = fresh();
    s.last_started = Some(cp(2));
    s.results.insert(cp(1), ResultStatus::InProgress);
    s.results.insert(cp(2), ResultStatus::Completed);
    s.pending_mails.insert(cp(1));
    s.pending_mails.insert(cp(2));
    expect_violation(check_state(&s), names::SINGLE_ACTIVE_RESULT);

    let mut s = fresh();
    s.last_started = Some(cp(1));
    s.results.insert(cp(1), ResultStatus::InProgress);
    expect_violation(check_state(&s), names::RESULT_HAS_MAIL);

    let mut s = fresh();
    s.results.insert(cp(1), ResultStatus::InProgress);
    s.pending_mails.insert(cp(1));
    expect_violation(check_state(&s), names::IDS_STARTED);

    let mut s = fresh();
    s.async_parts.insert(cp(1));
    expect_violation(check_state(&s), names::IDS_STARTED);

    let mut s = fresh();
    s.last_started = Some(cp(1));
    s.pending_mails.insert(cp(1));
    s.lifecycle = Lifecycle::Closed;
    expect_violation(check_state(&s), names::TORN_DOWN);
}

#[test]
fn check_effects_catches_spurious_and_double_failure() {
    assert_eq!(check_effects(&[]), Ok(()));
    let genuine = TaskEffect::Fail(FailureReason::OperatorFailed);
    assert_eq!(check_effects(std::slice::from_ref(&genuine)), Ok(()));
    expect_violation(
        check_effects(&[TaskEffect::Fail(FailureReason::WriteResultMissing)]),
        names::NO_SPURIOUS_FAILURE,
    );
    expect_violation(check_effects(&[genuine, genuine]), names::SINGLE_FAILURE);
}

#[test]
fn check_quiescent_catches_a_leaked_result() {
    assert_eq!(check_quiescent(&fresh()), Ok(()));
    let mut s = fresh();
    s.results
        .insert(cp(1), ResultStatus::Failed(ResultFailure::Aborted));
    expect_violation(check_quiescent(&s), names::NO_LEAKED_RESULT);
    // Outstanding work: not judged yet.
    s.pending_mails.insert(cp(1));
    assert_eq!(check_quiescent(&s), Ok(()));
}

fn run(s: &mut TaskState, m: &mut TaskMonitor, ev: TaskEvent) -> Result<(), TaskViolation> {
    let t = reduce(s, Millis(0), ev.clone());
    *s = t.state;
    check_state(s)?;
    m.observe(&ev, &t.step.effects, &t.step.outcome)
}

#[test]
fn monitor_passes_a_normal_story_and_reports_no_leak() {
    let mut s = fresh();
    let mut m = TaskMonitor::new();
    let story = [
        TaskEvent::BarrierReceived {
            checkpoint: cp(1),
            via: Thread::Netty,
        },
        TaskEvent::CheckpointMail { checkpoint: cp(1) },
        TaskEvent::AsyncPartCompleted {
            checkpoint: cp(1),
            handle: StateHandle(7),
        },
        TaskEvent::NotifyComplete { checkpoint: cp(1) },
        TaskEvent::Close,
    ];
    for ev in story {
        assert_eq!(run(&mut s, &mut m, ev), Ok(()));
    }
    assert!(m.leaked().is_empty());
    assert_eq!(check_quiescent(&s), Ok(()));
}

#[test]
fn monitor_catches_each_cross_step_violation() {
    let ev = TaskEvent::CheckpointMail { checkpoint: cp(1) };
    let ok = Outcome::Applied;

    let mut m = TaskMonitor::new();
    let start = [TaskEffect::Writer(WriterCommand::Start(cp(1)))];
    assert_eq!(m.observe(&ev, &start, &ok), Ok(()));
    assert_eq!(m.leaked(), vec![cp(1)]);
    expect_violation(m.observe(&ev, &start, &ok), names::RESULT_CREATED_ONCE);

    let netty = TaskEvent::BarrierReceived {
        checkpoint: cp(2),
        via: Thread::Netty,
    };
    let remove = [TaskEffect::Writer(WriterCommand::Abort {
        checkpoint: cp(1),
        cleanup: true,
    })];
    expect_violation(
        TaskMonitor::new().observe(&netty, &remove, &ok),
        names::REMOVE_ON_TASK_THREAD,
    );

    let mut m = TaskMonitor::new();
    let exec = [TaskEffect::AsyncPart(AsyncCommand::Start(cp(3)))];
    assert_eq!(m.observe(&ev, &exec, &ok), Ok(()));
    expect_violation(m.observe(&ev, &exec, &ok), names::EXECUTED_INCREASE);

    let mut m = TaskMonitor::new();
    let done = [TaskEffect::Operators(OperatorNotice::Complete(cp(3)))];
    assert_eq!(m.observe(&ev, &done, &ok), Ok(()));
    expect_violation(m.observe(&ev, &done, &ok), names::COMPLETE_MONOTONIC);

    let mut m = TaskMonitor::new();
    let ack = [TaskEffect::Coordinator(ToCoordinator::Ack {
        checkpoint: cp(1),
        handle: StateHandle(1),
    })];
    let discard = [TaskEffect::Discard(StateHandle(1))];
    let done = TaskEvent::AsyncPartCompleted {
        checkpoint: cp(1),
        handle: StateHandle(1),
    };
    assert_eq!(m.observe(&done, &ack, &ok), Ok(()));
    // The handle again, by a step that did not deliver it.
    expect_violation(m.observe(&ev, &discard, &ok), names::HANDLE_ONCE);
    // Twice in the step that delivered it.
    expect_violation(
        TaskMonitor::new().observe(&done, &[ack[0], discard[0]], &ok),
        names::HANDLE_ONCE,
    );

    let mut m = TaskMonitor::new();
    let decline = [TaskEffect::Coordinator(ToCoordinator::Decline {
        checkpoint: cp(1),
        reason: crate::task::DeclineReason::AbortedByCoordinator,
    })];
    let cancel1 = TaskEvent::CancelMarker { checkpoint: cp(1) };
    assert_eq!(m.observe(&cancel1, &decline, &ok), Ok(()));
    expect_violation(m.observe(&done, &ack, &ok), names::ACK_XOR_DECLINE);

    // Once checkpoint 3 executed, an answer for 2 (no async part running)
    // is late, even if 2 was never answered before.
    let mut m = TaskMonitor::new();
    let exec3 = TaskEvent::CheckpointMail { checkpoint: cp(3) };
    let start3 = [TaskEffect::AsyncPart(AsyncCommand::Start(cp(3)))];
    assert_eq!(m.observe(&exec3, &start3, &ok), Ok(()));
    let decline2 = [TaskEffect::Coordinator(ToCoordinator::Decline {
        checkpoint: cp(2),
        reason: crate::task::DeclineReason::AbortedByCoordinator,
    })];
    expect_violation(
        m.observe(
            &TaskEvent::CancelMarker { checkpoint: cp(2) },
            &decline2,
            &ok,
        ),
        names::ANSWER_AFTER_EXECUTED,
    );
    // A decline while executing moves the floor too: a second decline of
    // the same checkpoint, long forgotten, is still caught.
    let mut m = TaskMonitor::new();
    let exec1 = TaskEvent::CheckpointMail { checkpoint: cp(1) };
    assert_eq!(m.observe(&exec1, &decline, &ok), Ok(()));
    assert_eq!(m.remembered(), 0, "the answer below the floor is forgotten");
    expect_violation(
        m.observe(&exec1, &decline, &ok),
        names::ANSWER_AFTER_EXECUTED,
    );

    let mut m = TaskMonitor::new();
    assert_eq!(m.observe(&TaskEvent::Close, &[], &ok), Ok(()));
    expect_violation(m.observe(&ev, &decline, &ok), names::SILENT_AFTER_END);

    expect_violation(
        TaskMonitor::new().observe(&ev, &decline, &Outcome::Ignored(IgnoreReason::Closed)),
        names::IGNORED_IS_SILENT,
    );

    expect_violation(
        TaskMonitor::new().observe(
            &ev,
            &[TaskEffect::Fail(FailureReason::WriteResultMissing)],
            &ok,
        ),
        names::NO_SPURIOUS_FAILURE,
    );
}

#[test]
fn monitor_catches_the_seed_bug_in_legacy_semantics() {
    let cfg = TaskConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..TaskConfig::default()
    };
    let mut s = TaskState::new(cfg).unwrap_or_else(|e| panic!("{e}"));
    let mut m = TaskMonitor::new();
    let story = [
        TaskEvent::BarrierReceived {
            checkpoint: cp(1),
            via: Thread::Netty,
        },
        TaskEvent::NotifyAborted { checkpoint: cp(1) },
    ];
    for ev in story {
        assert_eq!(run(&mut s, &mut m, ev), Ok(()));
    }
    expect_violation(
        run(
            &mut s,
            &mut m,
            TaskEvent::CheckpointMail { checkpoint: cp(1) },
        ),
        names::NO_SPURIOUS_FAILURE,
    );
}

#[test]
fn the_monitor_remembers_each_live_write_result_and_async_part() {
    let mut s = fresh();
    let mut m = TaskMonitor::new();
    let story = [
        TaskEvent::BarrierReceived {
            checkpoint: cp(1),
            via: Thread::Netty,
        },
        TaskEvent::CheckpointMail { checkpoint: cp(1) },
        TaskEvent::BarrierReceived {
            checkpoint: cp(2),
            via: Thread::Netty,
        },
        TaskEvent::WriterCompleted { checkpoint: cp(1) },
        TaskEvent::AsyncPartCompleted {
            checkpoint: cp(1),
            handle: StateHandle(1),
        },
        TaskEvent::CheckpointMail { checkpoint: cp(2) },
    ];
    let mut counts = Vec::new();
    for ev in story {
        assert_eq!(run(&mut s, &mut m, ev), Ok(()));
        counts.push((m.remembered(), m.leaked().len()));
    }
    // (remembered, write results live): result 1 and its unanswered
    // start; + async part 1; + result 2 and its start; result 1 settled
    // but its part still runs; part 1 acked, so result 1, part 1 and its
    // start are forgotten (the ack is at the executed floor); + async
    // part 2.
    assert_eq!(counts, [(2, 1), (3, 1), (5, 2), (5, 2), (2, 1), (3, 1)]);
}

#[test]
fn monitor_memory_stays_bounded_over_a_long_story() {
    let mut s = fresh();
    let mut m = TaskMonitor::new();
    let mut most = 0usize;
    for n in 1..=2_000u64 {
        let mut story = vec![
            TaskEvent::BarrierReceived {
                checkpoint: cp(n),
                via: Thread::Netty,
            },
            TaskEvent::WriterCompleted { checkpoint: cp(n) },
        ];
        if n % 3 == 0 {
            story.push(TaskEvent::NotifyAborted { checkpoint: cp(n) });
        }
        story.push(TaskEvent::CheckpointMail { checkpoint: cp(n) });
        if n % 3 != 0 {
            story.push(TaskEvent::AsyncPartCompleted {
                checkpoint: cp(n),
                handle: StateHandle(n),
            });
        }
        for ev in story {
            assert_eq!(run(&mut s, &mut m, ev), Ok(()));
            most = most.max(m.remembered());
        }
    }
    assert!(most <= 3, "the monitor remembered {most} checkpoints");
    assert!(m.leaked().is_empty());
}
