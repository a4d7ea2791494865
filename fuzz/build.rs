//! Refuses a fuzz build that would have no coverage at all.
//!
//! `fuzz/Cargo.toml`'s release profile passes LLVM
//! `-sanitizer-coverage-gated-trace-callbacks` (the comparison hooks called
//! only while `ckpt_fuzz::__sancov_should_track` is set). LLVM's coverage
//! pass gates the calls of trace-cmp or trace-pc-guard; given the gate
//! with neither (cargo-fuzz's `--no-trace-compares` removes trace-cmp, and
//! cargo-fuzz uses inline 8-bit counters, not trace-pc-guard) it
//! instruments nothing, silently: no coverage counters, and libFuzzer
//! fuzzes blind ("no interesting inputs were found so far"). Measured on
//! 2026-12-06 (fuzz/FIGURES-2026-12-06c.md). This script sees the flags
//! cargo-fuzz passes (`CARGO_ENCODED_RUSTFLAGS`; a cargo-fuzz build runs the
//! `sancov-module` pass) and stops such a build with the reason.

use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = flags.split('\u{1f}').collect();
    let has = |needle: &str| flags.iter().any(|f| f.contains(needle));
    let cargo_fuzz = has("sancov-module");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let traced = has("sanitizer-coverage-trace-compares") || has("trace-pc-guard");
    if cargo_fuzz && release && !traced {
        panic!(
            "this build would have no coverage: fuzz/Cargo.toml's release profile gates \
             the comparison hooks (-sanitizer-coverage-gated-trace-callbacks), and without \
             comparison tracing LLVM's coverage pass instruments nothing. Drop \
             --no-trace-compares: the gate already keeps the hooks from being called \
             (CKPT_FUZZ_TRACE_COMPARES=1 calls them); fuzz/README.md, \"Comparison \
             tracing gated off\"."
        );
    }
}
