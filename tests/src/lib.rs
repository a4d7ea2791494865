//! # ckpt-tests
//!
//! Shared test support for the scenario, property, loom and corpus-replay
//! tests under `tests/tests/`, for the tools in `src/bin/` and for the
//! cargo-fuzz targets in `fuzz/`.
//!
//! * [`harness`]: [`CoordinatorHarness`], which drives the coordinator reducer
//!   one event at a time and checks on every step that `reduce` is
//!   deterministic, that the pure `reduce` and the in-place `apply` agree, and
//!   that every coordinator invariant and the handle ledger hold. Use it from
//!   any test file: `use ckpt_tests::{handle, CoordinatorHarness};`.
//! * [`stories`]: whole event stories (coordinator, one task, both over a
//!   faulty network) driven through the real reducers with the shared
//!   invariants checked after every step; [`strategies`]: the proptest
//!   strategies and configuration of the property tests.
//! * [`fuzzing`]: the decoding and driving harness of the cargo-fuzz
//!   targets, of `corpus_replay` and of `ckpt-fuzz-replay`.
//! * [`conformance`]: the comparison with Flink's own coordinator behind
//!   `ckpt-conformance` (`tests/flink/README.md`).
//! * `host` (not under loom): helpers for the async host's tests.

pub mod harness;

pub use harness::{handle, CoordinatorHarness, Record};
pub mod conformance;
pub mod fuzzing;
#[cfg(not(loom))]
pub mod host;
pub mod stories;
pub mod strategies;
