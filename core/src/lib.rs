//! # ckpt-core
//!
//! Checkpoint coordination for stream processors as two pure, total,
//! deterministic reducers: the JobManager-side **coordinator** (Flink's
//! `CheckpointCoordinator`) and one subtask's **task side** (Flink's
//! `SubtaskCheckpointCoordinator` with its channel-state writer, with
//! FLINK-17869 fixed and the pre-fix behaviour kept as a selectable legacy
//! semantics for the checkers).
//!
//! ## The contract
//!
//! ```text
//! reduce(&state, now, event) -> Transition { state', effects, outcome }
//! ```
//!
//! * **Pure.** No clock, randomness, threads or I/O (enforced by
//!   `core/clippy.toml`). Time is the `now` argument; timers are effects
//!   (`ScheduleTimer` / `CancelTimer`) that come back as `TimerFired` events;
//!   everything that may block or fail (id allocation, master hooks,
//!   finalize, store, discarding state) is an effect whose answer is an event.
//! * **Total.** Every `(state, event)` pair has an answer. Stale, late,
//!   duplicate, unknown and out-of-order events are `Outcome::Ignored(reason)`;
//!   host misuse is `Outcome::Rejected(error)` (a `thiserror` type) and leaves
//!   the state unchanged. Nothing panics on input.
//! * **Deterministic.** Same state and event, same output. No hash-ordered
//!   iteration anywhere.
//! * **Persistent.** States are built from `imbl` collections: `reduce`
//!   returns a new state and the old one stays valid and cheap to keep. The
//!   in-place forms (`apply`) share the same code.
//!
//! ## Driving contract (what a host does)
//!
//! 1. Serialise calls per machine (one event at a time: a lock, an actor, a
//!    single thread). [`host`] is a reference embedding that does exactly this.
//! 2. Pass a `now` that does not go backwards. If it does, the reducer uses the
//!    last time it saw and reports it in the transition's `clock`.
//! 3. Carry out the effects **in the order returned**, after the call returns.
//!    Effects that answer (allocate an id, run hooks, finalize, store, timers)
//!    come back later as events; an answer that arrives after its subject is
//!    gone is ignored, so cancellation races are harmless.
//! 4. Read the outcome: `Applied` did something, `Ignored` tells you why
//!    nothing happened, `Rejected` is a bug in the host.
//!
//! The per-machine tables of effects are in [`coordinator`] and [`task`].
//!
//! ## Methods by kind (quinn-proto style)
//!
//! * Construction: [`coordinator::CoordinatorConfig::new`] (validation),
//!   [`coordinator::CoordinatorState::new`], [`task::TaskState::new`].
//! * Events: [`coordinator::reduce`] / [`coordinator::CoordinatorState::apply`],
//!   [`task::reduce`] / [`task::TaskState::apply`].
//! * Inspection: the accessors on the states (pending checkpoints, timers,
//!   queue, write results, ...).
//! * Checking: [`invariants`] (used by every test layer, the model checker,
//!   loom tests and fuzz targets).
//! * Replay: [`trace`] (JSON-lines traces of events with their `now`).
//!
//! ## Hosts
//!
//! * [`host`] (feature `host`, default): `TaskHost` / `CoordinatorHost`, the
//!   reducers behind one `Mutex` each, driven by the runtime's own threads.
//! * `host::runtime` (feature `async-host`): the reducers embedded in tokio,
//!   with the durable file-system checkpoint store `host::store`, user
//!   operators, global failover and crash recovery; `host::pipeline` is a
//!   reference exactly-once pipeline (`cargo run --release -p ckpt-core
//!   --features async-host --example pipeline -- DIR`).

#![forbid(unsafe_code)]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

pub mod coordinator;
#[cfg(feature = "host")]
pub mod host;
pub mod invariants;
pub mod route;
pub mod snapshot;
pub mod sync;
pub mod task;
pub mod trace;
pub mod types;

pub use types::*;
