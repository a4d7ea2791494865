//! # ckpt-model
//!
//! A stateright model of the whole checkpointing system over the **real**
//! reducers of `ckpt-core`: every action hands one event to
//! [`ckpt_core::coordinator::reduce`] or [`ckpt_core::task::reduce`], checks
//! the core's shared invariants on the step, and routes the effects into
//! the parts of the world that sit between the machines. Nothing of the
//! protocol is re-implemented here, so a change of behaviour in `core`
//! changes what the checker finds.
//!
//! ## The state ([`system::SysState`])
//!
//! * the coordinator's state and each task's state, exactly as `core`
//!   defines them;
//! * the RPC network: a sorted multiset of in-flight messages
//!   (coordinator -> task: trigger, notify-aborted, notify-complete;
//!   task -> coordinator: ack, decline), or per-link FIFOs with
//!   `--network ordered`. Every message names the task attempt at its task
//!   end: the attempt it is addressed to, or the attempt that sent it;
//! * per task: its mailbox (a FIFO of RPC mails and checkpoint mails; an
//!   enqueued mail cannot be withdrawn, which is what makes
//!   abort-before-execute reachable) and one FIFO input channel per upstream
//!   task (barriers, cancel markers: data channels stay ordered even when
//!   the RPC network is not). The writer's outstanding work is exactly the
//!   task's in-progress write results, and the async threads' work exactly
//!   its running async parts, so both are read from the task state instead
//!   of being duplicated (a late writer / async report for work that was
//!   aborted is ignored by the reducer, a no-op the model need not take);
//! * per task: its current attempt (restarts with `--task-failures`);
//! * the pending answers to the coordinator's I/O effects (id allocation,
//!   hooks, finalize, store), sorted;
//! * the periodic firings, faults, savepoints, task failures and scheduler
//!   stops used, whether the scheduler is stopped, two history bits for the
//!   "aborted, then a later one completes" witness and one for "a checkpoint
//!   completes after a task failover", the core's
//!   [`HandleLedger`](ckpt_core::invariants::coordinator::HandleLedger) and
//!   one [`TaskMonitor`](ckpt_core::invariants::task::TaskMonitor) per task
//!   (cross-step invariants), and the first invariant violation. A state
//!   with a violation is terminal; the properties read the record.
//!
//! Every collection is a std `Vec` / `BTreeMap` (length-prefixed `Hash`) or
//! a core state with a hand-written, length-prefixed `Hash` (TOOLING
//! pitfall 1). `tests/model.rs` cross-checks `unique_state_count()` against
//! an exact search over the states themselves ([`exact`]).
//!
//! ## Actors and actions ([`system::Action`])
//!
//! * **Coordinator timers**: the periodic trigger (only while fewer than
//!   `--checkpoints` firings were used) and every armed checkpoint timeout,
//!   fired nondeterministically at any time. Time is logical: a firing passes
//!   `now = max(now, deadline)`, and interval and timeout are 1 ms so clock
//!   values stay few.
//! * **Host I/O**: answer a pending effect, successfully or (fault) with a
//!   failure. The id counter answers `last id + 1`.
//! * **Network**: deliver any in-flight message (the head of a link when
//!   ordered); with `reorder-dup-drop`, duplicate or drop one (fault).
//!   Deliveries to a task enqueue an RPC mail.
//! * **Each task's threads**: netty (the barrier at the head of an input
//!   channel: `start`), task thread (the head of the mailbox, or a cancel
//!   marker at the head of an input channel), writer (complete / fail a
//!   result) and async part (complete with the deterministic handle
//!   [`system::handle_for`] / fail).
//! * **Shutdown** of the coordinator, once every periodic firing is used.
//! * **User** (`--savepoints N`): trigger a savepoint
//!   (`TriggerKind::Savepoint`, forced: it may exceed `--max-concurrent`,
//!   and never subsumed) at any time, even after shutdown, up to N times.
//! * **Task failover** (`--task-failures N`, up to N times, any task, before
//!   shutdown): the task's reducer gets `OperatorFailed` (a genuine
//!   `FailTask`), its mailbox and input buffers are discarded, and the
//!   coordinator gets `TaskFailed { task, attempt }` (one step); the attempt
//!   is then *down*: barriers and cancel markers sent to it are dropped.
//!   Later (another action) it restarts: a fresh `TaskState` and
//!   `TaskMonitor`, the next attempt, and `TaskRunning` to the coordinator.
//!   A coordinator message is delivered to a task's mailbox only when it is
//!   addressed to the task's current attempt and that attempt is up;
//!   otherwise the network delivers it and the host drops it (no machine
//!   event). Acks and declines from an old attempt still in flight are
//!   delivered to the coordinator with that attempt, which ignores them
//!   (`LateMessage`, discarding the handle). Items an old attempt already
//!   put in a downstream task's input channel stay there (data already
//!   received). Traces give each restarted attempt its own task machine
//!   ([`SysModel::trace_task`]).
//! * **Scheduler** (`--scheduler-restarts N`, up to N times, before
//!   shutdown): `StopScheduler` (aborts every pending checkpoint, clears the
//!   queue), and later `StartScheduler`.
//!
//! Topology: task 0 is the source (`fanout`, the default: tasks `1..N` each
//! read one channel from task 0), or tasks `0..N-1` are sources feeding task
//! `N-1` (`join`). Every task acks to the coordinator. Only `join` lets a
//! task see a barrier and a cancel marker for the same checkpoint, which
//! `LegacyBug::CancelForgetsAbort` needs: in `fanout` a source that skips a
//! checkpoint sends a cancel marker *instead of* its barrier, so that bug is
//! unreachable there (tested). `check --semantics all` therefore checks that
//! variant in `join` with at least 3 tasks and says so in its table.
//!
//! ## Bounds (each a flag)
//!
//! `--tasks`, `--checkpoints` (periodic firings per run), `--max-concurrent`,
//! `--faults` (one budget for duplicates, drops, failed I/O answers, writer
//! and async failures; `--no-io-faults`, `--no-task-faults` turn kinds off),
//! `--network`, `--topology`, `--no-shutdown`, and three opt-in ones, 0 by
//! default (the default configuration is unchanged by them): `--savepoints`,
//! `--task-failures`, `--scheduler-restarts`. Every action consumes
//! something (a message, a mail, an answer, a firing, a pending checkpoint,
//! work, budget; a restart consumes the down attempt, a start the stopped
//! scheduler), so every run is finite and the state graph is acyclic.
//!
//! ## Symmetry
//!
//! Interchangeable tasks (the downstream tasks in `fanout`, the sources in
//! `join`) are renamed into a canonical order ([`symmetry`]), sorting by each
//! task's whole view of the state. The coordinator side of the renaming is
//! `CoordinatorState::permute_tasks` in core, which moves each task's whole
//! status (attempt and running) and the attempts captured in each pending
//! checkpoint's ack slots; the model side moves the task's attempt with its
//! task side, and messages keep their attempt. A restarted task therefore
//! stays interchangeable with its peers, its attempt part of its view. Handles carry no task
//! identity (one handle per checkpoint) so that nothing else needs renaming;
//! the ledger therefore counts deliveries per checkpoint. stateright applies
//! symmetry in DFS only; its BFS ignores it.
//!
//! ## Properties
//!
//! Each `always` is paired with a `sometimes` that shows the situation it
//! guards really happens (see [`system::props::PAIRS`]):
//!
//! | always | sometimes |
//! |---|---|
//! | no spurious task failure | a task declines a checkpoint the coordinator aborted (the seed race, handled) |
//! | a checkpoint completes only with all acks | a checkpoint completes |
//! | completed checkpoint ids increase | two checkpoints complete |
//! | pending checkpoints bounded | a request waits for the concurrency bound |
//! | write results settled and removed when quiet | the system is quiet after every task checkpointed |
//! | state handles retained or discarded exactly once | a handle is discarded |
//! | nothing after shutdown | a message reaches the coordinator after shutdown |
//! | every other core invariant | one checkpoint is aborted and a later one completes |
//! | completed checkpoint ids increase | a savepoint completes (only with `--savepoints` > 0) |
//! | a checkpoint completes only with all acks | a checkpoint that waited for a restarted attempt completes (only with `--task-failures` > 0) |
//!
//! The last two ([`system::props::OPT_IN_PAIRS`]) are part of the model
//! only when their flag is above 0 (nothing could witness them otherwise);
//! `check` lists them as `not checked` then, rather than claim them.
//!
//! Safety is checked by the core's invariant functions after every step
//! (`invariants::coordinator::check_all`, `invariants::task::check_all` and
//! `check_quiescent`, plus "no result leaked" from the task monitor when the
//! whole system is quiet); the properties map the violated invariant's name
//! to a property ([`system::property_of`]).
//!
//! ## Liveness: what `eventually` can and cannot say here
//!
//! stateright judges `eventually` only at terminal states (TOOLING
//! pitfall 5). The model is acyclic, so terminal states are exactly the ends
//! of runs, and one liveness property is meaningful: **every run ends
//! quiet** (all firings used, nothing pending, queued or in flight, no
//! message, mail, input, answer or work left). It catches a stuck pending
//! checkpoint, a request stranded in the queue, or a periodic timer that
//! died while firings remain. Two caveats: stateright's DFS does not put the
//! `eventually` bits into the fingerprint, so a property that held on the
//! path that first reached a state is assumed for every path reaching it (a
//! possible false negative, FIXME in stateright); and there is no fairness,
//! so "eventually a checkpoint completes" is *not* a property: timers fire
//! nondeterministically and may abort every checkpoint, which is correct
//! behaviour, not a liveness bug. That is covered by `sometimes` instead.
//!
//! ## Counterexamples
//!
//! A violated safety property is re-searched breadth-first in a model with
//! only the `always` properties (TOOLING pitfall 4), repeated under a depth
//! bound until no shorter path exists ([`check::shortest_violation`]). It is
//! printed as numbered steps (actor, event, outcome, effects), and can be
//! written as a core JSON-lines trace (`--trace-out`, replayable by
//! `ckpt_core::trace::replay` and `ckpt-model replay`) and as a Mermaid
//! sequence diagram (`--diagram`).
//!
//! ## Not modelled
//!
//! Restore after a failover (`Restore`, `RestoreState`: a restarted attempt
//! starts from a fresh task state), a task failing on its own writer or
//! async thread or while it is down, a failure report that reaches the
//! coordinator later than the failure (`TaskFailed` is delivered in the
//! failing step, so an ack with a stale attempt for a pending checkpoint,
//! `Ignored::StaleAttempt`, is unreachable; old attempts' messages hit
//! `LateMessage`), region failover (a failed source does not restart its
//! downstream tasks), `Close`, user-triggered (forced or not) checkpoints
//! other than savepoints, master hooks (`master_hooks = 0`), and the
//! tolerable-failure limit's `FailJob` (emitted, not acted on).

#![forbid(unsafe_code)]

pub mod check;
pub mod exact;
pub mod symmetry;
pub mod system;
pub mod world;
pub mod zoo;

pub use check::{run_check, shortest_violation, CheckOptions, CheckReport, Counterexample};
pub use system::{Action, ModelConfig, Network, SysModel, SysState, Topology};
pub use world::{Sim, World};
