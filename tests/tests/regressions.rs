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

#[allow(dead_code)]
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
