//! Property tests over whole single-task stories: every task invariant after
//! every step (fixed semantics), determinism, and that the checkers catch
//! the FLINK-17869 bug in legacy semantics.

use std::hash::{DefaultHasher, Hash, Hasher};

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_core::CheckpointId;
use ckpt_tests::stories::task::{run, TaskAction, TaskStory};
use proptest::prelude::*;
use proptest::test_runner::{TestRng, TestRunner};

fn config(cases: u32) -> ProptestConfig {
    ckpt_tests::strategies::config(cases, "proptest-regressions/prop_task.txt")
}

fn action() -> impl Strategy<Value = TaskAction> {
    let p = any::<u8>();
    prop_oneof![
        6 => (p, any::<bool>()).prop_map(|(pick, netty)| TaskAction::Barrier { pick, netty }),
        1 => p.prop_map(|pick| TaskAction::BarrierWrongThread { pick }),
        3 => p.prop_map(|pick| TaskAction::Trigger { pick }),
        6 => Just(TaskAction::RunOldestMail),
        1 => p.prop_map(|pick| TaskAction::Mail { pick }),
        2 => p.prop_map(|pick| TaskAction::Cancel { pick }),
        4 => p.prop_map(|pick| TaskAction::NotifyAborted { pick }),
        2 => p.prop_map(|pick| TaskAction::NotifyComplete { pick }),
        4 => (p, prop::bool::weighted(0.2)).prop_map(|(pick, fail)| TaskAction::Writer { pick, fail }),
        4 => (p, prop::bool::weighted(0.2)).prop_map(|(pick, fail)| TaskAction::Async { pick, fail }),
        1 => Just(TaskAction::OperatorFailed),
        1 => Just(TaskAction::Close),
        1 => Just(TaskAction::EndOfInput),
        1 => any::<u8>().prop_map(TaskAction::Recovery),
    ]
}

fn story(semantics: Semantics, len: usize) -> impl Strategy<Value = TaskStory> {
    (any::<u8>(), prop::collection::vec(action(), 0..len)).prop_map(move |(m, actions)| TaskStory {
        semantics,
        aborted_ids_max: m,
        actions,
    })
}

fn hash_of<T: Hash>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

proptest! {
    #![proptest_config(config(4096))]

    /// Fixed semantics: every task invariant holds after every step, the
    /// monitor sees no leak, no spurious failure, pure == in-place.
    #[test]
    fn invariants_hold_for_every_story(story in story(Semantics::Fixed, 60)) {
        if let Err(f) = run(&story) {
            f.save_if_requested("prop_task_invariants");
            return Err(TestCaseError::fail(f.to_string()));
        }
    }

    /// The task reducer does not read the clock: every event of a story
    /// delivered at a different, arbitrary time gives the same state,
    /// effects and outcome. Partial-order reduction in the model relies on
    /// it (a task's step commutes with a timer moving the world's clock:
    /// `model/src/world/por.rs`).
    #[test]
    fn the_task_reducer_does_not_read_the_clock(
        story in story(Semantics::Fixed, 60),
        times in prop::collection::vec(any::<u64>(), 60),
    ) {
        let a = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        let mut s = ckpt_core::task::TaskState::new(story.config())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for (r, t) in a.records.iter().zip(times.iter().cycle()) {
            let step = s.apply(ckpt_core::Millis(*t), r.event.clone());
            prop_assert_eq!(&step.effects, &r.effects);
            prop_assert_eq!(&step.outcome, &r.outcome);
            prop_assert!(s == r.state);
        }
    }

    /// The same story twice: byte-identical effects and equal states.
    #[test]
    fn stories_are_deterministic(story in story(Semantics::Fixed, 60)) {
        let a = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        let b = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        for (x, y) in a.records.iter().zip(&b.records) {
            let ex = serde_json::to_vec(&x.effects).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let ey = serde_json::to_vec(&y.effects).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(ex, ey);
            prop_assert!(x.state == y.state);
            prop_assert_eq!(hash_of(&x.state), hash_of(&y.state));
        }
        prop_assert_eq!(a.records.len(), b.records.len());
    }
}

/// The checkers are not blind: random stories in each legacy semantics find
/// a violation (and proptest shrinks it to the three-event seed story).
fn legacy_is_caught(bug: LegacyBug, expected: &str) -> Vec<TaskAction> {
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig {
            cases: 2_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        },
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let result = runner.run(&story(Semantics::Legacy(bug), 40), |s| {
        run(&s)
            .map(|_| ())
            .map_err(|f| TestCaseError::fail(f.violation.invariant))
    });
    match result {
        Err(proptest::test_runner::TestError::Fail(why, minimal)) => {
            assert!(why.to_string().contains(expected), "{why}");
            minimal.actions
        }
        other => panic!("legacy {bug:?} not caught: {other:?}"),
    }
}

#[test]
fn legacy_abort_removes_result_is_caught_and_shrunk() {
    let minimal = legacy_is_caught(LegacyBug::AbortRemovesResult, "no_spurious_failure");
    assert!(minimal.len() <= 4, "not minimal: {minimal:?}");
}

#[test]
fn legacy_cancel_forgets_abort_is_caught_and_shrunk() {
    let minimal = legacy_is_caught(LegacyBug::CancelForgetsAbort, "");
    assert!(minimal.len() <= 4, "not minimal: {minimal:?}");
}

#[test]
fn fixed_semantics_survives_the_seed_story() {
    let story = TaskStory {
        semantics: Semantics::Fixed,
        aborted_ids_max: 15,
        actions: vec![
            TaskAction::Barrier {
                pick: 0,
                netty: true,
            },
            TaskAction::NotifyAborted { pick: 0 },
            TaskAction::RunOldestMail,
        ],
    };
    let d = run(&story).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(d.state.last_executed(), Some(CheckpointId(1)));
    assert!(d.state.write_results().is_empty());
}
