//! The only door to synchronisation primitives in `ckpt-core`.
//!
//! Under `cfg(loom)` these are loom's instrumented types, so the loom tests
//! explore every interleaving of the real host adapter; otherwise they are
//! `std`'s. Nothing else in the crate names `std::sync` locks or threads.
//! The ack table's log (`coordinator/slots.rs`) uses `std` atomics, never
//! loom's: they only decide which of two states sharing a table writes
//! into it, not how host threads meet, and the loom tests' tables (a few
//! slots) are leaves, which have none.

#[cfg(loom)]
pub use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(loom))]
pub use std::sync::{Arc, Mutex, MutexGuard};
