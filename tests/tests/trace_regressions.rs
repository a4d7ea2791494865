//! Traces: stories become `ckpt_core::trace::Trace`s, traces round-trip
//! through the JSON-lines format and replay to the same verdict as the story,
//! and the committed FLINK-17869 trace replays to the expected violation in
//! legacy semantics and to none in fixed semantics.

use std::path::PathBuf;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_core::trace::{parse_trace, replay, write_trace, Trace};
use ckpt_tests::stories::system::{self, SysAction, SystemSpec, SystemStory};
use ckpt_tests::stories::task::{self, TaskAction, TaskStory};

fn traces_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces")
}

fn load(name: &str) -> Trace {
    let text =
        std::fs::read_to_string(traces_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    parse_trace(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn with_semantics(mut t: Trace, semantics: Semantics) -> Trace {
    for (_, cfg) in &mut t.tasks {
        cfg.semantics = semantics;
    }
    t
}

#[test]
fn flink_17869_legacy_trace_replays_to_a_spurious_task_failure() {
    let trace = load("flink_17869_legacy.jsonl");
    let report = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    let (step, v) = report
        .violation
        .unwrap_or_else(|| panic!("no violation: {:?}", report.steps));
    assert_eq!(
        step, 3,
        "the checkpoint mail after the abort (steps count from 1)"
    );
    assert_eq!(v.invariant, "no_spurious_failure", "{v}");
    assert!(report.steps[2]
        .effects
        .iter()
        .any(|e| e.starts_with("Fail(")));
}

#[test]
fn flink_17869_trace_in_fixed_semantics_declines_instead() {
    let trace = with_semantics(load("flink_17869_legacy.jsonl"), Semantics::Fixed);
    let report = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.violation, None);
    assert_eq!(report.steps.len(), 3);
    assert!(
        report.steps[2]
            .effects
            .iter()
            .any(|e| e.contains("AbortedByCoordinator")),
        "{:?}",
        report.steps[2]
    );
}

#[test]
fn a_shrunk_story_and_its_trace_agree() {
    // The story proptest shrinks the legacy bug to, as a trace.
    let story = TaskStory {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        aborted_ids_max: 3, // folded to 4, as in the committed file
        actions: vec![
            TaskAction::Barrier {
                pick: 0,
                netty: true,
            },
            TaskAction::NotifyAborted { pick: 0 },
            TaskAction::RunOldestMail,
        ],
    };
    let failure = task::run(&story)
        .err()
        .unwrap_or_else(|| panic!("legacy story passed"));
    assert_eq!(failure.violation.invariant, "no_spurious_failure");
    // Written and read back, it is the committed trace.
    let mut buf = Vec::new();
    write_trace(&mut buf, &failure.trace).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(buf).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        parse_trace(&text).ok(),
        Some(load("flink_17869_legacy.jsonl"))
    );
    let committed =
        std::fs::read_to_string(traces_dir().join("flink_17869_legacy.jsonl")).unwrap_or_default();
    assert_eq!(text, committed);
}

#[test]
fn system_story_traces_replay_to_the_drivers_verdict() {
    let spec = SystemSpec {
        downstream: 2,
        hooks: true,
        interval: 0,
        timeout: 50,
        min_pause: 0,
        max_concurrent: 1,
        tolerable: 1,
        retained: 0,
        aborted_ids_max: 1,
        join: false,
        finish: false,
    };
    let mut actions = Vec::new();
    for i in 0..40u8 {
        actions.push(SysAction::Act(i.wrapping_mul(7)));
        actions.push(SysAction::Act(i));
        if i % 5 == 0 {
            actions.push(SysAction::Fault(i));
            actions.push(SysAction::Tick(60));
        }
    }
    let story = SystemStory { spec, actions };
    let d = system::run(&story, Semantics::Fixed, Some(2_000)).unwrap_or_else(|f| panic!("{f}"));
    let trace = d.trace();
    let mut buf = Vec::new();
    write_trace(&mut buf, &trace).unwrap_or_else(|e| panic!("{e}"));
    let again = parse_trace(&String::from_utf8_lossy(&buf)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, trace);
    let report = replay(&again).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.violation, None);
    assert_eq!(report.steps.len(), trace.steps.len());
    assert!(!d.stats.completed.is_empty());
}
