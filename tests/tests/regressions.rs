//! Committed regression traces (tests/traces/*.jsonl), each replayed through
//! the real reducers with every invariant checked.
//!
//! To add one: run the failing property with `CKPT_TRACE_DIR=traces/new`
//! (the minimal shrunk story is written as `<property>.jsonl`), or save a
//! fuzz crash's story with `Failure::save_if_requested`; rename the file
//! after what it shows, move it to tests/traces/, and add a test here that
//! asserts the verdict (`expect_clean` once the bug is fixed).

use std::path::PathBuf;

use ckpt_core::trace::{parse_trace, replay, Trace};

fn load(name: &str) -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("traces")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_trace(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `step` is 1-based: the n-th event line after the header.
fn expect_violation(name: &str, step: usize, invariant: &str) {
    let report = replay(&load(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    match report.violation {
        Some((s, v)) => assert_eq!((s, v.invariant), (step, invariant), "{name}: {v}"),
        None => panic!("{name}: expected `{invariant}` at step {step}, replay was clean"),
    }
}

fn expect_clean(name: &str) {
    let report = replay(&load(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some((s, v)) = report.violation {
        panic!("{name}: step {s}: {v}");
    }
}

#[test]
fn flink_17869_legacy() {
    expect_violation("flink_17869_legacy.jsonl", 3, "no_spurious_failure");
}

/// Found by the `coordinator_events` fuzz target (2026-12-01): after a
/// `Recover` of a checkpoint holding handle 1, a task acknowledged handle 1
/// for a pending checkpoint; the coordinator discarded it (step 29) while
/// the recovered checkpoint still retained it. It now keeps a handle any
/// live checkpoint holds, and the trace replays clean.
#[test]
fn fuzz_coordinator_ack_of_a_retained_handle() {
    expect_clean("fuzz_coordinator_ack_of_a_retained_handle.jsonl");
}

#[test]
fn durability_discard_while_storing_legacy() {
    // The shortest model counterexample: the coordinator shuts down while
    // checkpoint 1 is finalizing and discards its state (step 12, the
    // shutdown; steps count the trace's event lines from 1).
    expect_violation(
        "durability_discard_while_storing_legacy.jsonl",
        12,
        "no-discard-while-storing",
    );
}

#[test]
fn every_committed_trace_parses_and_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".jsonl") {
            replay(&load(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            n += 1;
        }
    }
    assert!(n >= 1);
}

/// Every bug-zoo counterexample (`ckpt-model zoo --traces tests/traces`,
/// kept current by `zoo --check-traces` in CI): replayed as recorded, the
/// legacy reducers break the invariant the zoo names (the run-end
/// properties are the world's, not a reducer's, and replay clean in core);
/// replayed with both machines fixed, the same events end clean.
#[test]
fn every_zoo_counterexample_is_caught_in_core_and_clean_when_fixed() {
    use ckpt_core::{LegacyBug, Semantics};
    let expected: [(LegacyBug, Option<&str>); 29] = [
        (LegacyBug::AbortRemovesResult, Some("no_spurious_failure")),
        (LegacyBug::CancelForgetsAbort, Some("no_spurious_failure")),
        (LegacyBug::StaleMailExecutes, Some("ack_xor_decline")),
        (LegacyBug::ObsoleteBarrierFails, Some("no_spurious_failure")),
        (
            LegacyBug::AbortIgnoresNettyStart,
            Some("aborted_not_executed"),
        ),
        (LegacyBug::SkipWithoutCancelMarker, None),
        (LegacyBug::AbortedStartLeaks, Some("result_not_vanished")),
        (
            LegacyBug::AbortedResultBlocksStart,
            Some("no_spurious_failure"),
        ),
        (
            LegacyBug::NewerBarrierDropsResult,
            Some("result_not_vanished"),
        ),
        (
            LegacyBug::NotifyCompleteOutOfOrder,
            Some("complete_monotonic"),
        ),
        (
            LegacyBug::TriggerAfterFinishFails,
            Some("no_spurious_failure"),
        ),
        (LegacyBug::HookExpiryWedgesTrigger, None),
        (
            LegacyBug::LateHooksTriggerTasks,
            Some("trigger-only-pending"),
        ),
        (LegacyBug::AbortAllLeavesQueueStuck, Some("queue-resumable")),
        (LegacyBug::EffectsAfterShutdown, Some("shutdown-quiet")),
        (
            LegacyBug::DiscardWhileStoring,
            Some("no-discard-while-storing"),
        ),
        (
            LegacyBug::RestoreBehindCompletion,
            Some("restore-not-behind-a-commit"),
        ),
        (
            LegacyBug::InDoubtListsSharedState,
            Some("hand-over-spares-shared-state"),
        ),
        (
            LegacyBug::SavepointExpiresWithRetention,
            Some("savepoint-state-kept"),
        ),
        // The two after a coordinator failover replay clean in core: what
        // breaks is the world's store (a restore behind a commit), and a
        // trace line does not say which coordinator (the new leader or the
        // deposed one) an event went to, so core replays one coordinator
        // and refuses the second `Recover` as `NotFresh`.
        (LegacyBug::RestoreLastCommitted, None),
        (LegacyBug::NoFencing, None),
        (
            LegacyBug::StopLaunchesSecondCheckpoint,
            Some("stop-with-savepoint-is-last"),
        ),
        (
            LegacyBug::StopBeforeCommit,
            Some("complete-only-when-stored"),
        ),
        (
            LegacyBug::FailedCountsAsFinished,
            Some("plan-waits-for-every-task"),
        ),
        (
            LegacyBug::FinishFailsCheckpoint,
            Some("a-finish-is-not-a-failure"),
        ),
        // A store's rule, not a reducer's: core has nothing to catch.
        (LegacyBug::StoreRefusesOlderSavepoint, None),
        // The file-merging manager's events are the host's, not trace
        // lines: the coordinator and task events replay clean in core (the
        // repeated discard is an idempotent one for the coordinator); the
        // world's checked files step catches the double release, and
        // `ckpt_core::files`'s unit tests replay it on the manager.
        (LegacyBug::LogicalFileReleasedTwice, None),
        // A hang: every step is clean, what breaks is the run-end rule
        // (`flink_40518_...` below checks the task's unanswered start).
        (LegacyBug::NoOpWhileChannelsRecover, None),
        // A rule across the two machines (a task deletes the part the
        // coordinator still waits for): the world checks it where it
        // routes the task's discard, against its coordinator
        // (`check_task_discard`); each machine's own steps are clean, and a
        // trace line's task id (the world numbers attempts after the
        // tasks) does not tell core which slot of the coordinator it is.
        (LegacyBug::SubsumedPartDiscarded, None),
    ];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("zoo_") {
            continue;
        }
        seen += 1;
        let trace = load(&name);
        let Some(Semantics::Legacy(bug)) = trace.coordinator.as_ref().map(|c| c.semantics) else {
            panic!("{name}: not a legacy trace");
        };
        let (_, invariant) = expected
            .iter()
            .find(|(b, _)| *b == bug)
            .unwrap_or_else(|| panic!("{name}: {bug:?} has no expectation"));
        let report = replay(&trace).unwrap_or_else(|e| panic!("{name}: {e}"));
        match invariant {
            Some(inv) => {
                let (_, v) = report
                    .violation
                    .unwrap_or_else(|| panic!("{name}: replay was clean"));
                assert_eq!(v.invariant, *inv, "{name}: {v}");
            }
            None => assert_eq!(report.violation, None, "{name}"),
        }
        let mut fixed = trace.clone();
        if let Some(c) = fixed.coordinator.as_mut() {
            c.semantics = Semantics::Fixed;
        }
        for (_, cfg) in &mut fixed.tasks {
            cfg.semantics = Semantics::Fixed;
        }
        let report = replay(&fixed).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(report.violation, None, "{name} with the fixed reducers");
    }
    assert_eq!(seen, LegacyBug::ALL.len(), "one committed trace per knob");
}

/// FLINK-40518's zoo counterexample: a task restarted with channel state to
/// replay, its recovery trigger gone NO_OP when the drain ended while its
/// channel still replayed, gets checkpoint 1's barrier and neither takes nor
/// declines it. After the trace, the host delivers what is left for that
/// task (the coordinator's abort of checkpoint 1, the mail if one was
/// scheduled, an async part if one started): the legacy task still owes an
/// answer, the fixed one (whose barrier-inserting trigger took the
/// checkpoint) has declined it.
#[test]
fn flink_40518_a_checkpoint_mid_recovery_is_left_unanswered() {
    use ckpt_core::task::TaskEvent;
    use ckpt_core::trace::{Replayer, TraceLine};
    use ckpt_core::{CheckpointId, Millis, Semantics, StateHandle, TaskId};
    let name = "zoo_flink_40518_legacy_no_op_while_channels_recover.jsonl";
    // Task 1's attempt 1 is the trace's task machine 3.
    let (task, checkpoint) = (TaskId(3), CheckpointId(1));
    let rest = [
        TaskEvent::NotifyAborted { checkpoint },
        TaskEvent::CheckpointMail { checkpoint },
        TaskEvent::AsyncPartCompleted {
            checkpoint,
            handle: StateHandle(9),
        },
    ];
    let unanswered = |trace: &Trace| {
        let mut r = Replayer::new(trace).unwrap_or_else(|e| panic!("{name}: {e}"));
        let more = rest.iter().map(|event| TraceLine::Task {
            now: Millis(1),
            task,
            event: event.clone(),
        });
        for line in trace.steps.iter().cloned().chain(more) {
            let step = r.step(&line).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(step.violation, None, "{name}");
        }
        r.unanswered()
    };
    let trace = load(name);
    assert_eq!(unanswered(&trace), [(task, checkpoint)]);
    let mut fixed = trace.clone();
    fixed.set_task_semantics(Semantics::Fixed);
    assert_eq!(unanswered(&fixed), []);
}
