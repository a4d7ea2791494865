//! # The one world
//!
//! Everything that sits between the two machines, written once: the RPC
//! network, each task's mailbox, the data channels between tasks, the
//! pending answers to the coordinator's I/O, task attempts and failover,
//! fault budgets and the cross-step ledgers. The stateright model
//! ([`crate::search::system`]) is an exhaustive scheduler over it; the property
//! stories and the `system_events` fuzz target (`ckpt-tests`) are random
//! schedulers over it; the examples follow the same semantics. This module
//! does not depend on stateright.
//!
//! * [`World`]: the state (the real [`CoordinatorState`] and
//!   [`TaskState`]s, plus the world around them). Hashable, deterministic,
//!   std collections with length-prefixed `Hash` (a collection hashed
//!   without its length lets `[a, b] + []` and `[a] + [b]` write the same
//!   bytes, and a checker that keeps only fingerprints would merge them).
//! * [`Sim`]: a configuration ([`ModelConfig`]) with its derived topology,
//!   and the dynamics: [`Sim::enabled`] lists the actions enabled in a
//!   state in a fixed order, [`Sim::step`] runs one. One function per thing
//!   that happens; every effect is carried out in one place (`sim/route.rs`:
//!   the effects name where they go, see [`ckpt_core::route`]); every event goes through
//!   [`ckpt_core::invariants::checked`] (the one checked step per machine).
//! * [`codec`]: a world's compact, versioned encoding (what the distributed
//!   search ships between workers and checkpoints).
//!
//! ## Semantics (stated once; `model/README.md` points here)
//!
//! * **RPC network** (coordinator <-> tasks): a multiset (`reorder`, any
//!   message may be delivered next), per-link FIFOs (`ordered`: one link per
//!   direction and task), or a multiset that may also duplicate or drop a
//!   message within the fault budget (`reorder-dup-drop`). Every message
//!   names the task attempt at its task end: the attempt a coordinator
//!   message is addressed to, or the attempt that sent an ack / decline.
//! * **Notifications always go through the mailbox.** A trigger,
//!   notify-aborted or notify-complete delivered to a task becomes a mail at
//!   the tail of that task's mailbox (FIFO, run by the task thread, a mail is
//!   never withdrawn), and only if it is addressed to the task's current,
//!   running attempt (otherwise the host finds no such execution and drops
//!   it). The mailbox is what makes abort-before-execute (FLINK-17869)
//!   reachable: the abort's mail can sit ahead of the checkpoint mail.
//! * **Data channels** (barriers, cancel markers between tasks) are per-link
//!   FIFO and lossless, like Flink's credit-based channels: a broken
//!   connection is a task failure, never a lost barrier. A barrier at the
//!   head of a channel is taken by the receiver's netty thread; a cancel
//!   marker by its task thread, in channel order.
//! * **Local work**: the channel-state writer's outstanding work is exactly
//!   the task's in-progress write results, and the async threads' work its
//!   running async parts; both are read from the task state (a late report
//!   for aborted work is ignored by the reducer, a no-op not worth taking).
//! * **I/O**: every request the coordinator emits (id allocation, master
//!   hooks, finalize, store) is answered exactly once, in any order,
//!   successfully or (fault) with a failure. The id counter answers the last
//!   id + 1.
//! * **Timers** live in the coordinator's own timer table; firing one moves
//!   the world's clock to its deadline if that is later (time is logical;
//!   the exhaustive scheduler fires armed timers in any order, the random
//!   ones advance a clock and fire what is due, earliest first).
//! * **Task failover** is two actions: the failure (the reducer gets
//!   `OperatorFailed`, the attempt's mailbox and input channels are
//!   discarded, the coordinator gets `TaskFailed` in the same step), then,
//!   separately, the restart (a fresh task state under the next attempt, the
//!   coordinator gets `TaskRunning`). Messages for or from the old attempt
//!   may still be in flight; items the old attempt already put in a
//!   downstream channel stay there (data already received).
//! * **Trace keys of attempts**: attempt `a` of task `t` is task
//!   `t + a * tasks` in a trace ([`Sim::trace_task`]), so a replay (which
//!   knows no restarts) runs each attempt on a fresh machine.
//! * **Budgets**: periodic firings, faults, savepoints, user checkpoints,
//!   task failures and scheduler stops each have a bound; every action
//!   consumes something (a message, a mail, an answer, a firing, work,
//!   budget), so every run is finite and the state graph is acyclic.
//! * **Shared files** (`shared_files`, `sim/files.rs`): the host does what
//!   the crate docs of `ckpt_core::files` tell it: every state handle a
//!   task writes is a `SegmentWritten` to the one file-merging manager (all
//!   tasks on one task manager), every delete of a handle (coordinator,
//!   task or host) a `Discard`, every restore a `Restored`; the manager's
//!   effects go to the file ledger, checked with the durable ledger's view
//!   of which handles exist, and at quiet that no file was left behind.
//! * **Checks**: after every event the core's invariants (the coordinator's
//!   state, step and handle-ledger checks; the task's state, monitor and
//!   quiescence checks), and when the whole world is quiet, that no write
//!   result leaked. The first violation is recorded and the state is
//!   terminal.
//!
//! [`CoordinatorState`]: ckpt_core::coordinator::CoordinatorState
//! [`TaskState`]: ckpt_core::task::TaskState

pub mod codec;
mod config;
pub mod coverage;
mod por;
mod sim;
mod state;

pub use config::{legacy_name, semantics_name, ModelConfig, Network, Timing, Topology, JOB};
pub use por::Reduction;
pub use sim::{
    handle_for, is_decline, rename_handle, Action, Delivery, Sim, LEAKED, ROUTED, SAVEPOINT,
};
pub use state::{
    Channel, Durable, History, InDoubt, Io, Mail, Msg, Sealed, SharedFiles, SharedSide, TaskSide,
    Used, World, Zombie,
};
