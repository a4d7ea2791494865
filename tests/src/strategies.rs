//! proptest strategies and configuration shared by the property tests
//! (`tests/tests/prop_*.rs`, `zoo_layers.rs`).

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use crate::stories::system::{SysAction, SystemSpec, SystemStory};

/// `cases` cases (times `CKPT_PROPTEST_SCALE`, a soak multiplier, 1 when
/// unset; at most 1,000), failures persisted to
/// `proptest-regressions/<file>.txt`. The seed is random unless
/// `PROPTEST_RNG_SEED` fixes it (CI does, so that its verdict is
/// reproducible; see `tests/README.md`).
#[must_use]
pub fn config(cases: u32, file: &'static str) -> ProptestConfig {
    const SCALE_MAX: u32 = 1_000;
    let scale = std::env::var("CKPT_PROPTEST_SCALE")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(1, |s| s.clamp(1, SCALE_MAX));
    ProptestConfig {
        cases: cases.saturating_mul(scale),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::default()
    }
}

/// The mix of a system story: how often the world joins two sources, how
/// often a source may finish its input, and the weight of user requests
/// among the actions.
#[derive(Clone, Copy, Debug)]
pub struct SystemMix {
    /// Probability of the join topology.
    pub join: f64,
    /// Probability that a source may finish.
    pub finish: f64,
    /// Weight of `SysAction::User` (progress is 40).
    pub user: u32,
}

impl SystemMix {
    /// The property tests' mix.
    pub const PROPERTIES: SystemMix = SystemMix {
        join: 0.25,
        finish: 0.05,
        user: 2,
    };
}

/// A system spec.
pub fn system_spec(mix: SystemMix) -> impl Strategy<Value = SystemSpec> {
    (
        (any::<u8>(), any::<bool>(), any::<u8>(), any::<u8>()),
        (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()),
        (
            any::<u8>(),
            prop::bool::weighted(mix.join),
            prop::bool::weighted(mix.finish),
        ),
    )
        .prop_map(
            |((a, b, c, d), (e, f, g, h), (i, join, finish))| SystemSpec {
                downstream: a,
                hooks: b,
                interval: c,
                timeout: d,
                min_pause: e,
                max_concurrent: f,
                tolerable: g,
                retained: h,
                aborted_ids_max: i,
                join,
                finish,
            },
        )
}

/// One abstract action of a system story.
pub fn system_action(mix: SystemMix) -> impl Strategy<Value = SysAction> {
    prop_oneof![
        40 => any::<u8>().prop_map(SysAction::Act),
        4 => any::<u8>().prop_map(SysAction::Fault),
        1 => any::<u8>().prop_map(SysAction::Crash),
        mix.user => any::<u8>().prop_map(SysAction::User),
        2 => Just(SysAction::Flush),
        3 => (0u16..400).prop_map(SysAction::Tick),
        2 => Just(SysAction::FireNextTimer),
    ]
}

/// A system story of fewer than `len` actions.
pub fn system_story(len: usize, mix: SystemMix) -> impl Strategy<Value = SystemStory> {
    (
        system_spec(mix),
        prop::collection::vec(system_action(mix), 0..len),
    )
        .prop_map(|(spec, actions)| SystemStory { spec, actions })
}
