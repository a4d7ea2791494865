//! Bad input, one test per class: each gets a typed outcome (`Ignored(..)`)
//! or a `thiserror` error naming the cause, never a panic, and no state
//! handle is lost: every handle handed to the coordinator is retained or
//! discarded exactly once (the `HandleLedger` runs on every step inside
//! `CoordDriver::deliver`, together with every coordinator invariant).

use ckpt_core::coordinator::IoRequest;
use ckpt_core::coordinator::{
    Clock, ConfigError, CoordinatorConfig, CoordinatorEffect as E, CoordinatorError,
    CoordinatorEvent as Ev, CoordinatorSettings, Ignored, JobStatus, Outcome, RestoreSource, Timer,
    TriggerKind,
};
use ckpt_core::task::{
    IgnoreReason, Outcome as TOutcome, TaskConfig, TaskError, TaskEvent, TaskState,
};
use ckpt_core::trace::{parse_trace, read_trace, replay, ReplayError, TraceError, LINE_MAX_BYTES};
use ckpt_core::{
    AttemptNo, CheckpointId, DeclineReason, JobId, Millis, StateHandle, TaskId, Thread,
};
use ckpt_tests::stories::coordinator::CoordDriver;
use ckpt_tests::stories::task::TaskDriver;
use ckpt_tests::stories::JOB;

const T0: TaskId = TaskId(0);
const T1: TaskId = TaskId(1);
const A0: AttemptNo = AttemptNo(0);

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

/// Two tasks, both acknowledging; task 2 only committed to.
fn driver() -> CoordDriver {
    let mut s = CoordinatorSettings::with_tasks(JOB, 2);
    s.tasks_to_commit = vec![T0, T1, TaskId(2)];
    CoordDriver::new(s).unwrap_or_else(|e| panic!("{e}"))
}

fn deliver(d: &mut CoordDriver, now: u64, ev: Ev) -> (Vec<E>, Outcome) {
    d.deliver(Millis(now), ev).unwrap_or_else(|v| panic!("{v}"));
    let r = d.records.last().unwrap_or_else(|| panic!("no record"));
    (r.effects.clone(), r.outcome.clone())
}

/// Triggers a checkpoint and answers its id allocation with `id`.
fn pending(d: &mut CoordDriver, id: u64) {
    let (fx, _) = deliver(
        d,
        d.now.0,
        Ev::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
    );
    let request = fx
        .iter()
        .find_map(|e| match e {
            E::Io {
                request: IoRequest::AllocateId { request },
                ..
            } => Some(*request),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no allocation in {fx:?}"));
    let (_, o) = deliver(
        d,
        d.now.0,
        Ev::CheckpointIdAllocated {
            request,
            result: Ok(cp(id)),
        },
    );
    assert!(o.is_applied(), "{o:?}");
}

fn ack(task: TaskId, id: u64, h: u64) -> Ev {
    Ev::Acknowledge {
        job: JOB,
        task,
        attempt: A0,
        checkpoint: cp(id),
        state: Some(StateHandle(h)),
    }
}

fn discards(fx: &[E]) -> Vec<StateHandle> {
    fx.iter()
        .filter_map(|e| match e {
            E::Discard { handle, .. } => Some(*handle),
            _ => None,
        })
        .collect()
}

fn complete(d: &mut CoordDriver, id: u64, handles: [u64; 2]) {
    deliver(d, d.now.0, ack(T0, id, handles[0]));
    deliver(d, d.now.0, ack(T1, id, handles[1]));
    deliver(
        d,
        d.now.0,
        Ev::FinalizeDone {
            checkpoint: cp(id),
            result: Ok(()),
        },
    );
    let (_, o) = deliver(
        d,
        d.now.0,
        Ev::StoreDone {
            checkpoint: cp(id),
            result: Ok(()),
        },
    );
    assert!(o.is_applied(), "{o:?}");
}

#[test]
fn unknown_checkpoint_is_ignored_and_its_state_discarded() {
    let mut d = driver();
    let (fx, o) = deliver(&mut d, 0, ack(T0, 42, 1));
    assert_eq!(o, Outcome::Ignored(Ignored::UnknownCheckpoint));
    assert_eq!(discards(&fx), vec![StateHandle(1)]);
    let (fx, o) = deliver(
        &mut d,
        0,
        Ev::Decline {
            job: JOB,
            task: T0,
            attempt: A0,
            checkpoint: cp(42),
            reason: DeclineReason::WriterFailed,
        },
    );
    assert_eq!(
        (fx.len(), o),
        (0, Outcome::Ignored(Ignored::UnknownCheckpoint))
    );
    for ev in [
        Ev::MasterHooksDone {
            checkpoint: cp(42),
            result: Ok(()),
        },
        Ev::FinalizeDone {
            checkpoint: cp(42),
            result: Ok(()),
        },
        Ev::StoreDone {
            checkpoint: cp(42),
            result: Ok(()),
        },
    ] {
        assert_eq!(
            deliver(&mut d, 0, ev).1,
            Outcome::Ignored(Ignored::UnknownCheckpoint)
        );
    }
    assert_eq!(d.ledger.check(&d.state), Ok(()));
}

#[test]
fn late_message_for_a_recent_checkpoint_is_ignored_and_discarded_unless_retained() {
    let mut d = driver();
    pending(&mut d, 1);
    deliver(
        &mut d,
        0,
        Ev::Decline {
            job: JOB,
            task: T1,
            attempt: A0,
            checkpoint: cp(1),
            reason: DeclineReason::TaskNotReady,
        },
    );
    let (fx, o) = deliver(&mut d, 0, ack(T0, 1, 10));
    assert_eq!(o, Outcome::Ignored(Ignored::LateMessage));
    assert_eq!(discards(&fx), vec![StateHandle(10)]);
    // A duplicated ack of a *completed* checkpoint must not delete committed state.
    pending(&mut d, 2);
    complete(&mut d, 2, [20, 21]);
    let (fx, o) = deliver(&mut d, 0, ack(T0, 2, 20));
    assert_eq!(o, Outcome::Ignored(Ignored::LateMessage));
    assert!(discards(&fx).is_empty(), "{fx:?}");
    assert!(d.state.owned_handles().contains(&StateHandle(20)));
}

#[test]
fn duplicate_ack_is_ignored_and_an_orphan_second_write_discarded() {
    let mut d = driver();
    pending(&mut d, 1);
    deliver(&mut d, 0, ack(T0, 1, 5));
    let (fx, o) = deliver(&mut d, 0, ack(T0, 1, 5));
    assert_eq!(o, Outcome::Ignored(Ignored::DuplicateAck));
    assert!(fx.is_empty());
    let (fx, o) = deliver(&mut d, 0, ack(T0, 1, 6));
    assert_eq!(o, Outcome::Ignored(Ignored::DuplicateAck));
    assert_eq!(discards(&fx), vec![StateHandle(6)]);
    // Completing keeps 5; a later duplicate while finalizing is DISCARDED.
    deliver(&mut d, 0, ack(T1, 1, 7));
    let (fx, o) = deliver(&mut d, 0, ack(T1, 1, 8));
    assert_eq!(o, Outcome::Ignored(Ignored::CheckpointDiscarded));
    assert_eq!(discards(&fx), vec![StateHandle(8)]);
}

#[test]
fn ack_from_a_task_not_in_the_checkpoint_is_ignored_and_discarded() {
    let mut d = driver();
    pending(&mut d, 1);
    // Task 2 is only committed to; task 9 is not part of the job.
    for task in [TaskId(2), TaskId(9), TaskId(u32::MAX)] {
        let (fx, o) = deliver(&mut d, 0, ack(task, 1, 100 + u64::from(task.0 % 50)));
        assert_eq!(o, Outcome::Ignored(Ignored::UnknownTask));
        assert_eq!(discards(&fx).len(), 1);
    }
    // A stale attempt of a real task: UNKNOWN for acks, StaleAttempt for declines.
    let stale = Ev::Acknowledge {
        job: JOB,
        task: T0,
        attempt: AttemptNo(3),
        checkpoint: cp(1),
        state: Some(StateHandle(200)),
    };
    assert_eq!(
        deliver(&mut d, 0, stale).1,
        Outcome::Ignored(Ignored::UnknownTask)
    );
    let stale = Ev::Decline {
        job: JOB,
        task: T0,
        attempt: AttemptNo(3),
        checkpoint: cp(1),
        reason: DeclineReason::WriterFailed,
    };
    assert_eq!(
        deliver(&mut d, 0, stale).1,
        Outcome::Ignored(Ignored::StaleAttempt)
    );
    let unknown = Ev::Decline {
        job: JOB,
        task: TaskId(9),
        attempt: A0,
        checkpoint: cp(1),
        reason: DeclineReason::WriterFailed,
    };
    assert_eq!(
        deliver(&mut d, 0, unknown).1,
        Outcome::Ignored(Ignored::UnknownTask)
    );
    assert_eq!(d.state.pending_count(), 1);
}

#[test]
fn wrong_job_id_is_rejected_with_a_named_error_and_the_handle_stays_with_the_host() {
    let mut d = driver();
    pending(&mut d, 1);
    let before = d.state.clone();
    let ev = Ev::Acknowledge {
        job: JobId(99),
        task: T0,
        attempt: A0,
        checkpoint: cp(1),
        state: Some(StateHandle(1)),
    };
    let (fx, o) = deliver(&mut d, 0, ev);
    let expected = CoordinatorError::WrongJob {
        expected: JOB,
        got: JobId(99),
    };
    assert_eq!(o, Outcome::Rejected(expected.clone()));
    assert!(fx.is_empty());
    assert_eq!(d.state, before);
    assert_eq!(
        d.ledger.delivered(),
        0,
        "a rejected ack does not hand its state over"
    );
    assert!(expected.to_string().contains("job 99"), "{expected}");
    let ev = Ev::Decline {
        job: JobId(99),
        task: T0,
        attempt: A0,
        checkpoint: cp(1),
        reason: DeclineReason::WriterFailed,
    };
    assert!(matches!(
        deliver(&mut d, 0, ev).1,
        Outcome::Rejected(CoordinatorError::WrongJob { .. })
    ));
    // Unknown tasks in life-cycle events are host misuse too.
    let (_, o) = deliver(
        &mut d,
        0,
        Ev::TaskRunning {
            task: TaskId(77),
            attempt: A0,
        },
    );
    assert_eq!(
        o,
        Outcome::Rejected(CoordinatorError::UnknownTask(TaskId(77)))
    );
    assert!(CoordinatorError::UnknownTask(TaskId(77))
        .to_string()
        .contains("77"));
}

#[test]
fn events_after_shutdown_are_ignored_silently_and_pending_state_was_discarded() {
    let mut d = driver();
    pending(&mut d, 1);
    deliver(&mut d, 0, ack(T0, 1, 1));
    let (fx, o) = deliver(
        &mut d,
        0,
        Ev::Shutdown {
            status: JobStatus::Canceled,
        },
    );
    assert!(o.is_applied());
    assert_eq!(discards(&fx), vec![StateHandle(1)]);
    let after = d.state.clone();
    for ev in [
        ack(T1, 1, 2),
        Ev::StartScheduler,
        Ev::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
        Ev::TimerFired {
            timer: Timer::Periodic,
        },
        Ev::Shutdown {
            status: JobStatus::Finished,
        },
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
    ] {
        let (fx, o) = deliver(&mut d, 5, ev);
        assert_eq!((fx.len(), o), (0, Outcome::Ignored(Ignored::Shutdown)));
    }
    assert!(d.state.is_shutdown() && d.state.pending_count() == 0);
    assert_eq!(d.state.owned_handles(), after.owned_handles());
    // The ack after shutdown was not taken: the ledger does not expect handle 2.
    assert_eq!(d.ledger.delivered(), 1);
}

#[test]
fn events_after_task_close_or_failure_are_ignored() {
    let mut t = TaskDriver::new(TaskConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    t.deliver(TaskEvent::BarrierReceived {
        checkpoint: cp(1),
        via: Thread::Netty,
    })
    .unwrap_or_else(|v| panic!("{v}"));
    t.deliver(TaskEvent::OperatorFailed)
        .unwrap_or_else(|v| panic!("{v}"));
    t.deliver(TaskEvent::CheckpointMail { checkpoint: cp(1) })
        .unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(
        t.records.last().map(|r| r.outcome.clone()),
        Some(TOutcome::Ignored(IgnoreReason::TaskFailed))
    );
    t.deliver(TaskEvent::Close)
        .unwrap_or_else(|v| panic!("{v}"));
    for ev in [
        TaskEvent::Close,
        TaskEvent::NotifyAborted { checkpoint: cp(1) },
        TaskEvent::OperatorFailed,
    ] {
        t.deliver(ev).unwrap_or_else(|v| panic!("{v}"));
        let r = t.records.last().unwrap_or_else(|| panic!("no record"));
        assert_eq!(
            (r.effects.len(), r.outcome.clone()),
            (0, TOutcome::Ignored(IgnoreReason::Closed))
        );
    }
    // A barrier from a thread that cannot deliver one: a named error.
    let mut t = TaskDriver::new(TaskConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    t.deliver(TaskEvent::BarrierReceived {
        checkpoint: cp(1),
        via: Thread::Writer,
    })
    .unwrap_or_else(|v| panic!("{v}"));
    let o = t.records.last().map(|r| r.outcome.clone());
    assert_eq!(
        o,
        Some(TOutcome::Rejected(TaskError::WrongThread(Thread::Writer)))
    );
    assert!(TaskError::WrongThread(Thread::Writer)
        .to_string()
        .contains("Writer"));
}

#[test]
fn timer_for_a_vanished_checkpoint_is_ignored() {
    let mut d = driver();
    pending(&mut d, 1);
    let deadline = d
        .state
        .timer_deadline(Timer::Timeout(cp(1)))
        .unwrap_or_else(|| panic!("no timeout armed"));
    deliver(
        &mut d,
        0,
        Ev::Decline {
            job: JOB,
            task: T0,
            attempt: A0,
            checkpoint: cp(1),
            reason: DeclineReason::TaskClosing,
        },
    );
    let (fx, o) = deliver(
        &mut d,
        deadline.0,
        Ev::TimerFired {
            timer: Timer::Timeout(cp(1)),
        },
    );
    assert_eq!((fx.len(), o), (0, Outcome::Ignored(Ignored::TimerNotArmed)));
    let (_, o) = deliver(
        &mut d,
        deadline.0,
        Ev::TimerFired {
            timer: Timer::Timeout(cp(u64::MAX)),
        },
    );
    assert_eq!(o, Outcome::Ignored(Ignored::TimerNotArmed));
    // An early firing of an armed timer is not due.
    deliver(&mut d, deadline.0, Ev::StartScheduler);
    let (_, o) = deliver(
        &mut d,
        deadline.0,
        Ev::TimerFired {
            timer: Timer::Periodic,
        },
    );
    assert_eq!(o, Outcome::Ignored(Ignored::TimerNotDue));
}

#[test]
fn time_going_backwards_is_clamped_and_reported() {
    let mut d = driver();
    deliver(&mut d, 1_000, Ev::StartScheduler);
    let deadline = d
        .state
        .timer_deadline(Timer::Periodic)
        .unwrap_or_else(|| panic!("not armed"));
    d.deliver(
        Millis(10),
        Ev::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
    )
    .unwrap_or_else(|v| panic!("{v}"));
    let r = d.records.last().unwrap_or_else(|| panic!("no record"));
    assert_eq!(
        r.clock,
        Clock::Clamped {
            given: Millis(10),
            used: Millis(1_000)
        }
    );
    assert_eq!(d.state.now(), Millis(1_000));
    assert_eq!(d.state.timer_deadline(Timer::Periodic), Some(deadline));
    // A timer "fired" by a clock that went backwards is not due.
    let (_, o) = deliver(
        &mut d,
        0,
        Ev::TimerFired {
            timer: Timer::Periodic,
        },
    );
    assert_eq!(o, Outcome::Ignored(Ignored::TimerNotDue));
}

#[test]
fn checkpoint_id_overflow_is_a_typed_error() {
    let mut d = driver();
    pending(&mut d, u64::MAX);
    assert_eq!(d.state.last_id(), Some(cp(u64::MAX)));
    assert_eq!(cp(u64::MAX).next(), None);
    // The counter cannot hand out anything above u64::MAX: every answer is rejected.
    let (fx, _) = deliver(
        &mut d,
        0,
        Ev::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
    );
    let request = fx.iter().find_map(|e| match e {
        E::Io {
            request: IoRequest::AllocateId { request },
            ..
        } => Some(*request),
        _ => None,
    });
    if let Some(request) = request {
        let (_, o) = deliver(
            &mut d,
            0,
            Ev::CheckpointIdAllocated {
                request,
                result: Ok(cp(u64::MAX)),
            },
        );
        assert_eq!(
            o,
            Outcome::Rejected(CoordinatorError::NonIncreasingId {
                got: cp(u64::MAX),
                last: cp(u64::MAX)
            })
        );
    }
    let mut d = driver();
    let ev = Ev::Restore {
        source: RestoreSource::Savepoint {
            checkpoint: cp(u64::MAX),
            handles: vec![StateHandle(1)],
        },
    };
    let (fx, o) = deliver(&mut d, 0, ev);
    assert_eq!(
        (fx.len(), o),
        (
            0,
            Outcome::Rejected(CoordinatorError::IdOverflow(cp(u64::MAX)))
        )
    );
    assert!(CoordinatorError::IdOverflow(cp(u64::MAX))
        .to_string()
        .contains("overflow"));
    assert_eq!(d.ledger.delivered(), 0);
}

const GOOD: &str = r#"{"kind":"header","version":1,"coordinator":null,"tasks":[[0,{"semantics":"Fixed","aborted_ids_max":16}]]}
{"kind":"task","now":0,"task":0,"event":{"BarrierReceived":{"checkpoint":1,"via":"Netty"}}}
{"kind":"task","now":0,"task":0,"event":{"CheckpointMail":{"checkpoint":1}}}
"#;

#[test]
fn malformed_or_truncated_trace_lines_are_typed_errors_naming_the_line() {
    assert!(parse_trace(GOOD).is_ok());
    // Truncated at every byte: never a panic; a cut inside a line names it.
    for cut in 0..GOOD.len() {
        let Some(prefix) = GOOD.get(..cut) else {
            continue;
        };
        match parse_trace(prefix) {
            Ok(_) => {}
            Err(TraceError::Empty) => assert!(prefix.trim().is_empty()),
            Err(TraceError::Malformed { line, message, .. }) => {
                assert!((1..=3).contains(&line), "{line}");
                assert!(!message.is_empty());
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let cases: Vec<(String, TraceError)> = vec![
        (String::new(), TraceError::Empty),
        (
            "{\"kind\":\"task\"".into(),
            TraceError::Malformed {
                line: 1,
                column: 0,
                message: String::new(),
            },
        ),
        (
            GOOD.lines().nth(1).unwrap_or_default().to_string(),
            TraceError::MissingHeader { line: 1 },
        ),
        (
            format!("{GOOD}{}", GOOD.lines().next().unwrap_or_default()),
            TraceError::DuplicateHeader { line: 4 },
        ),
        (
            GOOD.replace("\"version\":1", "\"version\":9"),
            TraceError::UnsupportedVersion {
                line: 1,
                version: "9".into(),
            },
        ),
        (
            GOOD.replace(
                "\"task\":0,\"event\":{\"Check",
                "\"task\":5,\"event\":{\"Check",
            ),
            TraceError::UndeclaredTask {
                line: 3,
                task: TaskId(5),
                declared: String::new(),
            },
        ),
        (
            GOOD.replace(
                "[[0,{",
                "[[0,{\"semantics\":\"Fixed\",\"aborted_ids_max\":1}],[0,{",
            ),
            TraceError::BadTasks {
                line: 1,
                message: String::new(),
            },
        ),
        (
            "\u{feff}garbage\n".into(),
            TraceError::Malformed {
                line: 1,
                column: 0,
                message: String::new(),
            },
        ),
        (
            format!("{GOOD}{{\"kind\":\"coordinator\",\"now\":0,\"event\":\"StartScheduler\"}}\n"),
            TraceError::UndeclaredCoordinator { line: 4 },
        ),
    ];
    for (text, expected) in cases {
        let got = parse_trace(&text)
            .err()
            .unwrap_or_else(|| panic!("accepted {text:?}"));
        assert_eq!(
            std::mem::discriminant(&got),
            std::mem::discriminant(&expected),
            "{got}"
        );
        assert!(
            got.to_string().contains("line") || got == TraceError::Empty,
            "{got}"
        );
    }
    // Invalid UTF-8 (a typed error, never replaced) and an over-long line.
    assert_eq!(
        read_trace(&[0xff, 0xfe, b'\n'][..]),
        Err(TraceError::InvalidUtf8 { line: 1, byte: 1 })
    );
    let long = vec![b' '; LINE_MAX_BYTES + 2];
    assert_eq!(
        read_trace(&long[..]),
        Err(TraceError::LineTooLong { line: 1 })
    );
}

fn valid() -> CoordinatorSettings {
    CoordinatorSettings::with_tasks(JOB, 2)
}

#[test]
fn config_out_of_range_is_a_named_error() {
    type Edit = fn(&mut CoordinatorSettings);
    let cases: [(Edit, ConfigError); 13] = [
        (|s| s.interval_ms = 0, ConfigError::IntervalNotPositive(0)),
        (
            |s| s.interval_ms = i64::MIN,
            ConfigError::IntervalNotPositive(i64::MIN),
        ),
        (|s| s.timeout_ms = -1, ConfigError::TimeoutNotPositive(-1)),
        (|s| s.min_pause_ms = -5, ConfigError::NegativeMinPause(-5)),
        (
            |s| s.max_concurrent = 0,
            ConfigError::MaxConcurrentNotPositive(0),
        ),
        (
            |s| s.tolerable_failures = -1,
            ConfigError::NegativeTolerableFailures(-1),
        ),
        (|s| s.retained_max = 0, ConfigError::RetainedNotPositive(0)),
        (|s| s.queue_max = -3, ConfigError::QueueNotPositive(-3)),
        (
            |s| s.savepoints_max = 0,
            ConfigError::SavepointsNotPositive(0),
        ),
        (
            |s| s.externalized = true,
            ConfigError::ExternalizedWithoutDirectory,
        ),
        (
            |s| s.tasks_to_trigger.clear(),
            ConfigError::NoTasks("tasks to trigger"),
        ),
        (
            |s| s.tasks_to_wait = vec![TaskId(1), TaskId(1)],
            ConfigError::DuplicateTask {
                task: TaskId(1),
                list: "tasks to wait for",
            },
        ),
        (
            |s| s.tasks_to_commit = vec![TaskId(u32::MAX)],
            ConfigError::TaskIdTooLarge(TaskId(u32::MAX)),
        ),
    ];
    for (edit, expected) in cases {
        let mut s = valid();
        edit(&mut s);
        let got = CoordinatorConfig::new(s).err();
        assert_eq!(got.as_ref(), Some(&expected));
        assert!(!expected.to_string().is_empty());
    }
    // Values above a cap are clamped, not refused.
    let mut s = valid();
    s.min_pause_ms = i64::MAX;
    s.queue_max = i64::MAX;
    let cfg = CoordinatorConfig::new(s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.min_pause_ms(), ckpt_core::coordinator::MIN_PAUSE_CAP_MS);
    assert_eq!(cfg.queue_max(), ckpt_core::coordinator::QUEUE_CAP as usize);
    // Task side.
    let bad = TaskConfig {
        aborted_ids_max: 0,
        ..TaskConfig::default()
    };
    assert_eq!(
        TaskState::new(bad.clone()).err(),
        Some(TaskError::AbortedIdsMaxZero)
    );
    // A trace whose header carries invalid configs replays to a named error.
    let mut s = valid();
    s.timeout_ms = 0;
    let trace = ckpt_core::trace::Trace {
        coordinator: Some(s),
        tasks: vec![(T0, bad)],
        steps: vec![],
    };
    assert_eq!(
        replay(&trace),
        Err(ReplayError::Coordinator(ConfigError::TimeoutNotPositive(0)))
    );
    let trace = ckpt_core::trace::Trace {
        coordinator: None,
        ..trace
    };
    assert!(matches!(
        replay(&trace),
        Err(ReplayError::Task {
            task: T0,
            error: TaskError::AbortedIdsMaxZero
        })
    ));
}
