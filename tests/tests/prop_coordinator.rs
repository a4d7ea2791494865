//! Property tests over whole coordinator stories: every invariant after every
//! step, determinism (byte-identical effects, equal and equally hashed
//! states), and agreement of the pure and in-place entry points (checked by
//! the driver on every step).

use std::hash::{DefaultHasher, Hash, Hasher};

use ckpt_core::coordinator::Report;
use ckpt_core::coordinator::{CoordinatorState, JobStatus};
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::DeclineReason;
use ckpt_tests::stories::coordinator::{run, Alloc, CoordAction, CoordStory, Sender};
use ckpt_tests::stories::SettingsChoice;
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ckpt_tests::strategies::config(cases, "proptest-regressions/prop_coordinator.txt")
}

fn settings() -> impl Strategy<Value = SettingsChoice> {
    (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(a, b, c, d, e, f, g, h, i, j, k, l)| SettingsChoice {
            tasks: a,
            trigger_mask: b,
            skip_wait_mask: c,
            interval: d,
            timeout: e,
            min_pause: f,
            max_concurrent: g,
            tolerable: h,
            retained: i,
            queue: j,
            hooks: k,
            externalized: l,
        })
}

fn decline_reason() -> impl Strategy<Value = DeclineReason> {
    prop_oneof![
        Just(DeclineReason::TaskNotReady),
        Just(DeclineReason::TaskClosing),
        Just(DeclineReason::Subsumed),
        Just(DeclineReason::CancelledOnBarrier),
        Just(DeclineReason::AbortedByCoordinator),
        Just(DeclineReason::WriteResultMissing),
        Just(DeclineReason::WriterFailed),
        Just(DeclineReason::SnapshotFailed),
    ]
}

fn sender() -> impl Strategy<Value = Sender> {
    prop_oneof![
        8 => Just(Sender::Current),
        1 => Just(Sender::StaleAttempt),
        1 => Just(Sender::WrongJob),
    ]
}

fn alloc() -> impl Strategy<Value = Alloc> {
    prop_oneof![
        8 => (0u8..3).prop_map(Alloc::Next),
        2 => Just(Alloc::Fail),
        1 => Just(Alloc::Stale),
        1 => Just(Alloc::Max),
        1 => Just(Alloc::WrongRequest),
    ]
}

fn action() -> impl Strategy<Value = CoordAction> {
    let pick = any::<u8>();
    prop_oneof![
        4 => Just(CoordAction::StartScheduler),
        2 => Just(CoordAction::StopScheduler),
        24 => (any::<bool>(), any::<bool>())
            .prop_map(|(savepoint, forced)| CoordAction::Trigger { savepoint, forced }),
        16 => (0u16..300).prop_map(CoordAction::Advance),
        4 => (0u16..300).prop_map(CoordAction::Rewind),
        4 => any::<u8>().prop_map(CoordAction::FireTimer),
        4 => any::<u8>().prop_map(CoordAction::FireTimerEarly),
        4 => any::<u8>().prop_map(CoordAction::FireVanishedTimeout),
        40 => alloc().prop_map(CoordAction::Allocate),
        12 => (pick, prop::bool::weighted(0.2))
            .prop_map(|(pick, fail)| CoordAction::HooksDone { pick, fail }),
        96 => (pick, any::<u8>(), sender(), prop::bool::weighted(0.8)).prop_map(
            |(pick, slot, sender, with_state)| CoordAction::Ack { pick, slot, sender, with_state }
        ),
        8 => (pick, any::<u8>(), sender(), decline_reason()).prop_map(
            |(pick, slot, sender, reason)| CoordAction::Decline { pick, slot, sender, reason }
        ),
        24 => (pick, prop::bool::weighted(0.15))
            .prop_map(|(pick, fail)| CoordAction::FinalizeDone { pick, fail }),
        24 => (pick, prop::bool::weighted(0.15))
            .prop_map(|(pick, fail)| CoordAction::StoreDone { pick, fail }),
        4 => (any::<u8>(), any::<bool>())
            .prop_map(|(slot, stale)| CoordAction::TaskFailed { slot, stale }),
        6 => (any::<u8>(), any::<bool>())
            .prop_map(|(slot, bump)| CoordAction::TaskRunning { slot, bump }),
        1 => (any::<u8>(), any::<bool>())
            .prop_map(|(slot, stale)| CoordAction::TaskFinished { slot, stale }),
        4 => any::<bool>().prop_map(|error_if_none| CoordAction::RestoreLatest { error_if_none }),
        4 => (any::<u8>(), any::<u8>())
            .prop_map(|(gap, handles)| CoordAction::RestoreSavepoint { gap, handles }),
        8 => any::<u16>().prop_map(CoordAction::Redeliver),
        1 => prop_oneof![
            Just(JobStatus::Finished),
            Just(JobStatus::Canceled),
            Just(JobStatus::Failed),
            Just(JobStatus::Suspended),
        ]
        .prop_map(CoordAction::Shutdown),
    ]
}

fn story(len: usize) -> impl Strategy<Value = CoordStory> {
    (settings(), prop::collection::vec(action(), 0..len))
        .prop_map(|(settings, actions)| CoordStory { settings, actions })
}

fn hash_of<T: Hash>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

proptest! {
    #![proptest_config(config(4096))]

    /// Every coordinator invariant and the handle ledger hold after every
    /// step of any story; the pure and in-place entry points agree.
    #[test]
    fn invariants_hold_for_every_story(story in story(80)) {
        if let Err(f) = run(&story) {
            f.save_if_requested("prop_coordinator_invariants");
            return Err(TestCaseError::fail(f.to_string()));
        }
    }

    /// The same story twice: byte-identical effects (serde_json) and equal,
    /// equally hashed states after every step.
    #[test]
    fn stories_are_deterministic(story in story(60)) {
        let a = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        let b = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        prop_assert_eq!(a.records.len(), b.records.len());
        for (x, y) in a.records.iter().zip(&b.records) {
            let ex = serde_json::to_vec(&x.effects).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let ey = serde_json::to_vec(&y.effects).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(ex, ey);
            let ox = serde_json::to_vec(&x.outcome).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let oy = serde_json::to_vec(&y.outcome).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(ox, oy);
            prop_assert!(x.state == y.state);
            prop_assert_eq!(hash_of(&x.state), hash_of(&y.state));
        }
    }
}

proptest! {
    #![proptest_config(config(1024))]

    /// The in-place checked step (what the story driver and the simulator
    /// run) is the checked step: on the state before every step of any
    /// story, at either rigor, the same step, verdict, state after and
    /// ledger after.
    #[test]
    fn the_in_place_checked_step_is_the_checked_step(story in story(60)) {
        let d = run(&story).map_err(|f| TestCaseError::fail(f.to_string()))?;
        for rigor in [Rigor::Full, Rigor::Invariants] {
            let mut state = CoordinatorState::from_settings(story.settings.settings())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (mut ledger, mut ledger_in_place) = (HandleLedger::new(), HandleLedger::new());
            for r in &d.records {
                let (t, verdict) =
                    checked::coordinator_step(&mut ledger, &state, r.now, &r.event, rigor);
                let (step, verdict_in_place) = checked::coordinator_step_in_place(
                    &mut ledger_in_place,
                    &mut state,
                    r.now,
                    &r.event,
                    rigor,
                );
                prop_assert_eq!(&verdict_in_place, &verdict);
                prop_assert_eq!(&step, &t.step);
                prop_assert!(state == t.state, "states differ after {:?}", r.event);
                prop_assert!(state == r.state, "not the driver's state after {:?}", r.event);
                prop_assert_eq!(&ledger_in_place, &ledger);
            }
        }
    }
}

/// The generators reach the interesting parts of the coordinator.
#[test]
fn generated_stories_reach_completions() {
    use ckpt_core::coordinator::{CoordinatorEffect, Outcome};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = story(80);
    let (mut completed, mut aborted, mut ignored, mut rejected, mut discards) = (0, 0, 0, 0, 0);
    for _ in 0..300 {
        let s = strategy
            .new_tree(&mut runner)
            .unwrap_or_else(|e| panic!("{e}"))
            .current();
        let d = run(&s).unwrap_or_else(|f| panic!("{f}"));
        for r in &d.records {
            for e in &r.effects {
                match e {
                    CoordinatorEffect::Report(Report::Completed { .. }) => completed += 1,
                    CoordinatorEffect::Report(Report::Aborted { .. }) => aborted += 1,
                    CoordinatorEffect::Discard { .. } => discards += 1,
                    _ => {}
                }
            }
            match r.outcome {
                Outcome::Ignored(_) => ignored += 1,
                Outcome::Rejected(_) => rejected += 1,
                Outcome::Applied(_) => {}
            }
        }
    }
    eprintln!("300 stories: {completed} completed, {aborted} aborted, {ignored} ignored, {rejected} rejected, {discards} discards");
    assert!(completed > 30 && aborted > 30 && ignored > 100 && rejected > 10 && discards > 30);
}
