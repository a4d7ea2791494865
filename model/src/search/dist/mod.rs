//! A distributed exhaustive search on timely dataflow: workers in one
//! process or in several, on one machine or many, each owning the states
//! whose fingerprint hashes to it (Stern and Dill's parallel Murphi, TLC's
//! fingerprint servers), for any `stateright::Model`.
//!
//! * [`engine`]: the search (a breadth-first level per timely round) and
//!   its report.
//! * [`checkpoint`]: what a run writes at a level's end so that a killed
//!   run continues (`--checkpoint-dir`, `--resume`).
//! * [`twophase`]: Gray and Lamport's two-phase commit as stateright's
//!   example writes it, the peers' own benchmark.

pub mod checkpoint;
pub mod engine;
pub mod twophase;
