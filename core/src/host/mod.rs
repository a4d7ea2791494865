//! The reference thread-safe embeddings of the two reducers. [`TaskHost`]
//! and [`CoordinatorHost`] synchronise through the [`crate::sync`] shim (so
//! the loom tests explore every interleaving of exactly this code), spawn
//! no threads and read no clock: the runtime's own threads call in and pass
//! `now`. The async runtime (`runtime`, feature `async-host`) is the
//! other shape: tokio tasks, `std::sync::Mutex` and tokio's clock.
//!
//! * [`TaskHost`]: one subtask. The netty thread delivers barriers, the writer
//!   and async threads deliver their completions ([`TaskHost::deliver`]),
//!   RPC threads enqueue notifications into the mailbox
//!   ([`TaskHost::enqueue`]) and the task thread drains it
//!   ([`TaskHost::run_mailbox_once`]).
//!   [`TaskEffect::Mail`](crate::task::TaskEffect::Mail)`(N)` effects become
//!   [`TaskEvent::CheckpointMail`](crate::task::TaskEvent::CheckpointMail)
//!   `{ checkpoint: N }` mailbox entries inside the host. Like Flink's
//!   mailbox, an enqueued entry is never withdrawn, so an abort can run
//!   between a checkpoint's start and its mail (FLINK-17869's interleaving).
//! * [`CoordinatorHost`]: one job's coordinator. RPC threads (acks,
//!   declines), the timer thread (timeouts, periodic triggers) and the I/O
//!   completion path (id allocation, hooks, finalize, store) all call
//!   [`CoordinatorHost::deliver`]. A timer that fires after its checkpoint is
//!   gone is ignored by the reducer, so the timer thread needs no
//!   cancellation handshake.
//!
//! # Effects go to a sink, under the lock
//!
//! Every call takes the host's lock, applies the reducer, hands the step
//! (event, effects, outcome, and the states before and after) to the
//! host-provided sink, and releases the lock. The sink lives *inside* the
//! lock (it gets `&mut self`, no lock of its own), so:
//!
//! * **Ordering.** The sink sees steps in exactly the order the reducer
//!   applied them, across all threads. Handing effects out after releasing
//!   the lock would let two threads overtake each other: the netty thread's
//!   [`WriterCommand::Start`](crate::task::WriterCommand::Start)`(1)` could
//!   reach the writer after the task thread's
//!   [`WriterCommand::Abort`](crate::task::WriterCommand::Abort) of
//!   checkpoint 1. The driving contract ("carry out effects in the order
//!   returned") would then hold per call but not per machine.
//! * **Re-entrancy is forbidden.** A sink must not call back into its host
//!   (the lock is not re-entrant: that deadlocks or panics). It should only
//!   record or enqueue work for other threads (channel sends, pushes onto
//!   queues) and return quickly. Nothing a sink needs requires re-entry: the
//!   one effect that feeds the machine itself
//!   ([`TaskEffect::Mail`](crate::task::TaskEffect::Mail)) is
//!   handled by the task host before the sink is called, and every other
//!   answer comes back later through `deliver` from another thread.
//!
//! If a sink panics the lock is poisoned; the hosts recover the guard (the
//! reducer state was committed before the sink ran, so it is consistent), but
//! the effects of that step may not all have been carried out.

mod coordinator;
#[cfg(feature = "async-host")]
pub mod fs;
#[cfg(feature = "async-host")]
pub mod pipeline;
#[cfg(feature = "async-host")]
pub mod runtime;
#[cfg(feature = "async-host")]
pub mod store;
mod task;
#[cfg(all(test, not(loom)))]
mod tests;

pub use coordinator::{CoordinatorEffectSink, CoordinatorHost, CoordinatorStep};
pub use task::{TaskEffectSink, TaskHost, TaskStep};

use crate::sync::{Mutex, MutexGuard};

/// Locks `m`, recovering the guard if a sink panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
