//! proptest strategies and configuration shared by the property tests
//! (`tests/tests/prop_*.rs`, `zoo_layers.rs`).

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use crate::stories::system::{SysAction, SystemSpec, SystemStory};

/// `cases` cases, failures persisted to `proptest-regressions/<file>.txt`.
#[must_use]
pub fn config(cases: u32, file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases,
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
