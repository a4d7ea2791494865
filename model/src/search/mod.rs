//! The search layer: what a check asks and how it runs, above the world and
//! below everything that shows a result.
//!
//! * [`system`]: the stateright model over the world (actions, transitions,
//!   the properties and which invariant belongs to which).
//! * [`options`], [`run`], [`report`]: one check (ckpt's [`engine`] or
//!   stateright's checkers), its typed report, and the verdict decided in
//!   one place ([`report::Verdict::decide`]).
//! * [`shortest`]: the shortest counterexample, breadth-first.
//! * [`symmetry`], [`exact`]: the canonical representative of a state's
//!   orbit under task renamings, and the exact search the fingerprint
//!   counts are checked against.
//! * [`dist`]: the distributed search, each state owned by one worker.
//! * [`shard`], [`simulate`]: a search split by frontier fingerprints, and
//!   seeded random walks.
//! * `watch`, [`progress`], [`memory`]: watching a running checker (limits,
//!   interrupts, the progress line, the process's memory).
//!
//! Nothing here renders a counterexample: that is [`crate::render`]'s.

pub mod dist;
pub mod engine;
pub mod exact;
pub mod memory;
pub mod options;
pub mod progress;
pub mod report;
pub mod run;
pub mod shard;
pub mod shortest;
pub mod simulate;
pub mod symmetry;
pub mod system;
pub(crate) mod watch;
