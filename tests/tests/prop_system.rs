//! Property tests over the coordinator and its tasks together, over a
//! seeded faulty network (reorder, duplicate, drop, delay past timeouts,
//! failing I/O, failing writers and async parts, task failures): every
//! invariant of every machine after every step, determinism, and liveness
//! under healing (after faults stop and timers keep firing, a checkpoint
//! completes within a bounded number of steps).

use ckpt_core::task::Semantics;
use ckpt_tests::fuzzing::HEAL_BOUND;
use ckpt_tests::stories::system::{run, SysAction, SystemSpec, SystemStory};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/prop_system.txt",
        ))),
        ..ProptestConfig::default()
    }
}

fn spec() -> impl Strategy<Value = SystemSpec> {
    (
        any::<u8>(),
        any::<bool>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(a, b, c, d, e, f, g, h, i)| SystemSpec {
            downstream: a,
            hooks: b,
            interval: c,
            timeout: d,
            min_pause: e,
            max_concurrent: f,
            tolerable: g,
            retained: h,
            aborted_ids_max: i,
        })
}

fn action() -> impl Strategy<Value = SysAction> {
    prop_oneof![
        20 => any::<u8>().prop_map(SysAction::Deliver),
        3 => any::<u8>().prop_map(SysAction::DeliverFailing),
        2 => any::<u8>().prop_map(SysAction::Duplicate),
        2 => any::<u8>().prop_map(SysAction::Drop),
        2 => Just(SysAction::Flush),
        8 => any::<u8>().prop_map(SysAction::RunMail),
        4 => (0u16..400).prop_map(SysAction::Tick),
        3 => Just(SysAction::FireNextTimer),
        1 => (any::<bool>(), any::<bool>())
            .prop_map(|(savepoint, forced)| SysAction::Trigger { savepoint, forced }),
        1 => Just(SysAction::StartScheduler),
        1 => Just(SysAction::StopScheduler),
        1 => any::<u8>().prop_map(SysAction::OperatorFailed),
    ]
}

fn story(len: usize) -> impl Strategy<Value = SystemStory> {
    (spec(), prop::collection::vec(action(), 0..len))
        .prop_map(|(spec, actions)| SystemStory { spec, actions })
}

proptest! {
    #![proptest_config(config(2048))]

    /// Safety under faults, then liveness under healing.
    #[test]
    fn invariants_hold_and_healing_completes_a_checkpoint(story in story(120)) {
        if let Err(f) = run(&story, Semantics::Fixed, Some(HEAL_BOUND)) {
            f.save_if_requested("prop_system");
            return Err(TestCaseError::fail(f.to_string()));
        }
    }

    /// The same story twice yields the same deliveries, effects (byte for
    /// byte) and final states.
    #[test]
    fn system_stories_are_deterministic(story in story(80)) {
        let a = run(&story, Semantics::Fixed, None).map_err(|f| TestCaseError::fail(f.to_string()))?;
        let b = run(&story, Semantics::Fixed, None).map_err(|f| TestCaseError::fail(f.to_string()))?;
        prop_assert_eq!(a.log.len(), b.log.len());
        prop_assert!(a.log == b.log);
        let ja = serde_json::to_vec(&a.coord.records.iter().map(|r| &r.effects).collect::<Vec<_>>())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let jb = serde_json::to_vec(&b.coord.records.iter().map(|r| &r.effects).collect::<Vec<_>>())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ja, jb);
        prop_assert!(a.coord.state == b.coord.state);
        prop_assert!(a.task_states() == b.task_states());
        prop_assert_eq!(a.stats, b.stats);
    }
}

/// In legacy semantics the system-level checker finds the seed bug through
/// the network (abort racing ahead of the checkpoint mail).
#[test]
fn legacy_semantics_is_caught_at_system_level() {
    use ckpt_core::task::LegacyBug;
    use proptest::test_runner::{RngAlgorithm, TestError, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig {
            cases: 3_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let result = runner.run(&story(60), |s| {
        run(&s, Semantics::Legacy(LegacyBug::AbortRemovesResult), None)
            .map(|_| ())
            .map_err(|f| TestCaseError::fail(f.violation.invariant))
    });
    match result {
        Err(TestError::Fail(why, _)) => {
            assert!(why.to_string().contains("no_spurious_failure"), "{why}")
        }
        other => panic!("legacy semantics not caught: {other:?}"),
    }
}

/// The generators reach the interesting parts: completions during faults,
/// restarts, drops, duplicates, job failures, and healing always completes.
#[test]
fn generated_stories_reach_completions_and_faults() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = story(120);
    let (mut completed, mut restarts, mut dropped, mut duplicated, mut events) = (0, 0, 0, 0, 0);
    for _ in 0..200 {
        let s = strategy
            .new_tree(&mut runner)
            .unwrap_or_else(|e| panic!("{e}"))
            .current();
        let d = run(&s, Semantics::Fixed, None).unwrap_or_else(|f| panic!("{f}"));
        completed += d.stats.completed.len();
        restarts += d.stats.restarts;
        dropped += d.stats.dropped;
        duplicated += d.stats.duplicated;
        events += d.stats.coordinator_events + d.stats.task_events;
    }
    eprintln!(
        "200 stories: {events} events, {completed} completions, {restarts} restarts, \
         {dropped} dropped, {duplicated} duplicated"
    );
    assert!(completed > 50 && restarts > 10 && dropped > 10 && duplicated > 10);
}
