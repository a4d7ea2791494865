//! The only door to synchronisation primitives in `ckpt-core`.
//!
//! Under `cfg(loom)` these are loom's instrumented types, so the loom tests
//! explore every interleaving of the real host adapter; otherwise they are
//! `std`'s. Nothing else in the crate names `std::sync` locks or threads.

#[cfg(loom)]
pub use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(loom))]
pub use std::sync::{Arc, Mutex, MutexGuard};
