//! The world's encoding (`world::codec`, what the distributed search ships
//! and checkpoints): every reachable state of small configurations, fixed
//! and legacy, encodes and decodes to an equal state with the same
//! fingerprint and the same symmetry key; bytes it did not write are
//! refused without a panic.

use std::collections::HashSet;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::search::engine::fingerprint;
use ckpt_model::search::symmetry::orbit_min;
use ckpt_model::world::codec::{decode, encode, VERSION};
use ckpt_model::{ModelConfig, Reduction, SysModel, SysState};
use stateright::Model;

/// Every state reachable in `cfg` (no reduction, no symmetry), by
/// fingerprint.
fn reachable(cfg: &ModelConfig) -> Vec<SysState> {
    let mut model = SysModel::new(cfg.clone());
    model.reduction = Reduction::Off;
    let mut seen = HashSet::new();
    let mut todo = model.init_states();
    let mut all = Vec::new();
    let mut actions = Vec::new();
    while let Some(s) = todo.pop() {
        if !seen.insert(fingerprint(&s)) {
            continue;
        }
        actions.clear();
        model.actions(&s, &mut actions);
        todo.extend(actions.drain(..).filter_map(|a| model.next_state(&s, a)));
        all.push(s);
    }
    all
}

fn round_trips(cfg: &ModelConfig) -> (usize, usize, bool) {
    let states = reachable(cfg);
    let mut bytes = Vec::new();
    let mut total = 0;
    let mut violated = false;
    for s in &states {
        bytes.clear();
        encode(s, &mut bytes);
        total += bytes.len();
        let back = decode(&bytes).unwrap_or_else(|| panic!("does not decode: {s:?}"));
        assert_eq!(&back, s);
        assert_eq!(fingerprint(&back), fingerprint(s));
        assert_eq!(orbit_min(&back, fingerprint), orbit_min(s, fingerprint));
        violated |= s.violation.is_some();
    }
    (states.len(), total / states.len().max(1), violated)
}

#[test]
fn every_reachable_state_of_the_fixed_semantics_round_trips() {
    let cfg = ModelConfig {
        checkpoints: 1,
        ..ModelConfig::default()
    };
    let (n, mean, violated) = round_trips(&cfg);
    eprintln!("{n} states, {mean} bytes per encoded state on average");
    assert!(n > 1_000, "{n} states");
    assert!(!violated);
    // Compact: a few hundred bytes, where the state in memory is several
    // kilobytes of collections and shared parts.
    assert!(mean < 1_000, "{mean} bytes per state on average");
    let cfg = ModelConfig {
        tasks: 1,
        savepoints: 1,
        task_failures: 1,
        coordinator_failovers: 1,
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    };
    assert!(round_trips(&cfg).0 > 1_000);
}

#[test]
fn states_that_break_an_invariant_round_trip_too() {
    // A legacy semantics reaches states whose reducer state breaks an
    // invariant: they are decoded as they are (the world records the
    // violation), not refused.
    let cfg = ModelConfig {
        checkpoints: 1,
        faults: 0,
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..ModelConfig::default()
    };
    let (n, _, violated) = round_trips(&cfg);
    assert!(n > 100 && violated, "{n} states, a violation: {violated}");
}

#[test]
fn bytes_it_did_not_write_are_refused() {
    let s = &reachable(&ModelConfig {
        tasks: 1,
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    })[40];
    let mut bytes = Vec::new();
    encode(s, &mut bytes);
    assert_eq!(bytes[0], VERSION);
    assert!(decode(&bytes).is_some());
    let mut other = bytes.clone();
    other[0] = VERSION + 1;
    assert!(decode(&other).is_none(), "another version");
    for cut in 0..bytes.len() {
        assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode(&longer).is_none(), "a trailing byte");
    // Every byte flipped: refused or decoded to some world, never a panic.
    for i in 1..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0xff;
        let _ = decode(&b);
    }
}
