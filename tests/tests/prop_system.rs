//! Property tests over the coordinator and its tasks together, over a
//! seeded faulty network (reorder, duplicate, drop, delay past timeouts,
//! failing I/O, failing writers and async parts, task failures): every
//! invariant of every machine after every step, determinism, and liveness
//! under healing (after faults stop and timers keep firing, a checkpoint
//! completes within a bounded number of steps).

use ckpt_core::task::Semantics;
use ckpt_tests::fuzzing::HEAL_BOUND;
use ckpt_tests::stories::system::{run, SystemStory};
use ckpt_tests::strategies::{self, SystemMix};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    strategies::config(cases, "proptest-regressions/prop_system.txt")
}

fn story(len: usize) -> impl Strategy<Value = SystemStory> {
    strategies::system_story(len, SystemMix::PROPERTIES)
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
        let effects = |d: &ckpt_tests::stories::system::SystemDriver| {
            d.log.iter().map(|x| x.effects.clone()).collect::<Vec<_>>()
        };
        prop_assert_eq!(effects(&a), effects(&b));
        prop_assert!(a.world == b.world);
        prop_assert!(a.task_states() == b.task_states());
        prop_assert_eq!(a.stats, b.stats);
    }
}

/// In legacy semantics the random scheduler finds the seed bug (an abort
/// whose mail runs before the checkpoint mail) within the CI case budget,
/// through the mailbox: the notify-aborted is a mail like in the model.
#[test]
fn legacy_semantics_is_caught_at_system_level() {
    use ckpt_core::task::LegacyBug;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    const BUDGET: usize = 3_000;
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = story(60);
    let legacy = Semantics::Legacy(LegacyBug::AbortRemovesResult);
    let found = (1..=BUDGET).find_map(|case| {
        let s = strategy
            .new_tree(&mut runner)
            .unwrap_or_else(|e| panic!("{e}"))
            .current();
        run(&s, legacy, None).err().map(|f| (case, f))
    });
    let Some((case, failure)) = found else {
        panic!("legacy semantics not caught in {BUDGET} cases");
    };
    eprintln!("legacy caught at case {case}: {}", failure.violation);
    assert_eq!(failure.violation.invariant, "no_spurious_failure");
    // The race went through a mailbox: the trace holds a notify-aborted
    // delivered to a task before the failing checkpoint mail.
    let saw_abort_mail = failure.trace.steps.iter().any(|l| {
        matches!(
            l,
            ckpt_core::trace::TraceLine::Task {
                event: ckpt_core::task::TaskEvent::NotifyAborted { .. },
                ..
            }
        )
    });
    assert!(saw_abort_mail, "{failure}");
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
    let mut savepoints_or_user = 0;
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
        events += d.stats.events;
        savepoints_or_user +=
            usize::from(d.world.used.savepoints) + usize::from(d.world.used.user_checkpoints);
    }
    eprintln!(
        "200 stories: {events} events, {completed} completions, {restarts} restarts, \
         {dropped} dropped, {duplicated} duplicated, {savepoints_or_user} user triggers"
    );
    assert!(completed > 50 && restarts > 10 && dropped > 10 && duplicated > 10);
    assert!(savepoints_or_user > 50);
}
