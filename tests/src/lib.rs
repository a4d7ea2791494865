//! # ckpt-tests
//!
//! Shared test support for the scenario, property, loom and corpus-replay
//! tests under `tests/tests/`.
//!
//! * [`harness`]: [`CoordinatorHarness`], which drives the coordinator reducer
//!   one event at a time and checks on every step that `reduce` is
//!   deterministic, that the pure `reduce` and the in-place `apply` agree, and
//!   that every coordinator invariant and the handle ledger hold. Use it from
//!   any test file: `use ckpt_tests::{handle, CoordinatorHarness};`.

pub mod harness;

pub use harness::{handle, CoordinatorHarness, Record};
pub mod conformance;
pub mod fuzzing;
#[cfg(not(loom))]
pub mod host;
pub mod stories;
pub mod strategies;
