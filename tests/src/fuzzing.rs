//! The decoding and driving harness behind the cargo-fuzz targets in `fuzz/`.
//!
//! Each function takes the fuzzer's raw bytes, decodes a structured story
//! with `arbitrary` (configuration + action list, see [`crate::stories`]),
//! drives the real reducers and checks the shared invariants after every
//! step. A broken invariant, a nondeterministic replay or a panic inside a
//! reducer is a panic here, which is what libFuzzer reports as a crash.
//! Input that does not decode is simply uninteresting.
//!
//! The same functions replay the committed seed corpus from a stable
//! `cargo test` (tests/tests/corpus_replay.rs).

use arbitrary::{Arbitrary, Unstructured};
use ckpt_core::coordinator::{CoordinatorConfig, CoordinatorSettings, TASK_ID_MAX};
use ckpt_core::task::Semantics;
use ckpt_core::trace::{parse_trace, read_trace, replay, write_trace};

use crate::stories::coordinator::{self, CoordAction};
use crate::stories::system::{self, SysAction, SystemSpec, SystemStory};
use crate::stories::task::{self, TaskAction, TaskStory};
use crate::stories::SettingsChoice;

/// Longest action list decoded from one input (keeps executions fast).
pub const ACTIONS_MAX: usize = 256;

/// Steps allowed for a checkpoint to complete once a system story heals.
pub const HEAL_BOUND: usize = 2_000;

/// The fuzz targets, by name (the directory names under `fuzz/corpus/`).
pub const TARGETS: [&str; 4] = [
    "coordinator_events",
    "task_events",
    "system_events",
    "trace_decode",
];

/// Runs the harness of target `name` on `data` (panics on a finding).
/// Unknown names do nothing.
pub fn run_target(name: &str, data: &[u8]) {
    match name {
        "coordinator_events" => coordinator_events(data),
        "task_events" => task_events(data),
        "system_events" => system_events(data),
        "trace_decode" => trace_decode(data),
        _ => {}
    }
}

fn actions<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> Vec<T> {
    let mut v = Vec::new();
    while v.len() < ACTIONS_MAX {
        match T::arbitrary(u) {
            Ok(a) => v.push(a),
            Err(_) => break,
        }
        if u.is_empty() {
            break;
        }
    }
    v
}

/// Decodes the raw settings the user might write and validates them: a
/// typed error or a config, never a panic. Configs with very large task ids
/// (legal up to `TASK_ID_MAX`, but dense) are not built, to keep executions
/// fast.
fn raw_settings(u: &mut Unstructured<'_>) {
    let Ok(raw) = CoordinatorSettings::arbitrary(u) else {
        return;
    };
    let big = raw
        .tasks_to_trigger
        .iter()
        .chain(&raw.tasks_to_wait)
        .chain(&raw.tasks_to_commit)
        .any(|t| t.0 >= (1 << 12) && t.0 < TASK_ID_MAX);
    if !big {
        if let Ok(cfg) = CoordinatorConfig::new(raw) {
            assert!(
                cfg.interval_ms() >= cfg.min_pause_ms(),
                "interval below pause"
            );
            assert!(cfg.timeout_ms() >= 1 && cfg.max_concurrent() >= 1);
        }
    }
}

/// Coordinator stories: a settings choice and up to [`ACTIONS_MAX`]
/// actions; every step checked with [`Rigor::Full`](ckpt_core::invariants::checked::Rigor):
/// the invariants, the handle ledger, and determinism with
/// pure-equals-in-place (`apply` on a copy of each state must agree with
/// `reduce`). The story runs
/// once: replaying the whole story a second time repeated those per-step
/// checks and halved the executions per second (the proptest stories still
/// replay whole stories and compare the records).
pub fn coordinator_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(first) = u8::arbitrary(&mut u) else {
        return;
    };
    if first == 0xff {
        raw_settings(&mut u);
        return;
    }
    let Ok(settings) = SettingsChoice::arbitrary(&mut u) else {
        return;
    };
    let story = coordinator::CoordStory {
        settings,
        actions: actions::<CoordAction>(&mut u),
    };
    if let Err(f) = coordinator::run(&story) {
        panic!("{f}");
    }
}

/// Task stories (fixed semantics): every step checked with `Rigor::Full`
/// (invariants, the monitor, quiescence, determinism, pure-equals-in-place);
/// run once, as [`coordinator_events`].
pub fn task_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(aborted_ids_max) = u8::arbitrary(&mut u) else {
        return;
    };
    let story = TaskStory {
        semantics: Semantics::Fixed,
        aborted_ids_max,
        actions: actions::<TaskAction>(&mut u),
    };
    if let Err(f) = task::run(&story) {
        panic!("{f}");
    }
}

/// System stories (fixed semantics) over the faulty network, then healing:
/// every step checked, and a checkpoint must complete after healing.
pub fn system_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(spec) = SystemSpec::arbitrary(&mut u) else {
        return;
    };
    let story = SystemStory {
        spec,
        actions: actions::<SysAction>(&mut u),
    };
    if let Err(f) = system::run_unrendered(&story, Semantics::Fixed, Some(HEAL_BOUND)) {
        panic!("{f}");
    }
}

/// Arbitrary bytes into the JSON-lines trace reader: a typed error or a
/// trace, never a panic; a trace read must write back and re-read equal,
/// and (when small) replay without panicking.
pub fn trace_decode(data: &[u8]) {
    let Ok(trace) = read_trace(data) else {
        return;
    };
    let mut buf = Vec::new();
    write_trace(&mut buf, &trace).unwrap_or_else(|e| panic!("write_trace failed: {e}"));
    let text = String::from_utf8(buf).unwrap_or_else(|e| panic!("trace not UTF-8: {e}"));
    let again = parse_trace(&text).unwrap_or_else(|e| panic!("re-read failed: {e}\n{text}"));
    assert_eq!(trace, again, "trace does not round-trip");
    let small_coordinator = trace.coordinator.as_ref().is_none_or(|s| {
        s.tasks_to_trigger
            .iter()
            .chain(&s.tasks_to_wait)
            .chain(&s.tasks_to_commit)
            .all(|t| t.0 < (1 << 12))
    });
    if small_coordinator && trace.steps.len() <= 4_096 {
        let _ = replay(&trace);
    }
}
