//! The door to the locks of the reference host adapter.
//!
//! Under `cfg(loom)` these are loom's instrumented types, so the loom tests
//! explore every interleaving of the real host adapter; otherwise they are
//! `std`'s. The reducers take no locks and start no threads, and the
//! reference `host` adapter (`TaskHost`, `CoordinatorHost`) takes its
//! `Mutex` only from here. The async runtime (`host::runtime`, and the
//! other modules of feature `async-host`) uses `std::sync::Mutex` directly
//! and is not loom-checked.
//! The ack table's log (`coordinator/slots.rs`) uses `std` atomics, never
//! loom's: they only decide which of two states sharing a table writes
//! into it, not how host threads meet, and the loom tests' tables (a few
//! slots) are leaves, which have none.

#[cfg(loom)]
pub use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(loom))]
pub use std::sync::{Arc, Mutex, MutexGuard};
