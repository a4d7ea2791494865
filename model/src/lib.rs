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
//! ## The world ([`world`])
//!
//! The model's state is the one world's ([`world::World`]): the real
//! coordinator and task states plus the network, mailboxes, data channels,
//! pending I/O, attempts, budgets, ledgers and the durable part (the store,
//! the state files, the id counter). Its semantics (what travels how, what a
//! failover does, what the host does with an in-doubt checkpoint) are stated
//! once, in the [`world`] module docs; [`world::Sim::enabled`] lists the
//! actions a state enables, [`world::Sim::step`] runs one.
//!
//! ## Layers
//!
//! Each layer imports only those below it (`tests/layers.rs` checks that no
//! module imports one above it or one that imports it back):
//!
//! 1. [`world`]: the state and its dynamics (no stateright in it).
//! 2. [`search`]: the stateright model and its properties
//!    ([`search::system`]), the options, the engines, symmetry, the exact
//!    cross-check, the shortest counterexample, shards, random walks, and
//!    the typed report whose verdict is decided in one place
//!    ([`search::report::Verdict::decide`]).
//! 3. [`render`]: a counterexample replayed once and shown as text, JSON
//!    (with a published schema), Mermaid, or in the Explorer.
//! 4. [`zoo`]: the catalog of historical races, each a legacy knob with the
//!    smallest world that reaches it; it decides which `--semantics`
//!    combinations can ask their question.
//! 5. The `ckpt-model` binary (`src/main.rs`, `src/cli/`): argument parsing,
//!    one module per command, the exit statuses, the output files.
//!
//! Every collection in the state has a length-prefixed `Hash` (without the
//! length, `[a, b] + []` and `[a] + [b]` hash alike and the fingerprint
//! counts merge different states); `tests/model.rs` and
//! `tests/durability.rs` cross-check `unique_state_count()` against an
//! exact search over the states themselves ([`search::exact`]).
//! Task sides and the coordinator state are shared copy-on-write between
//! states ([`world::Sealed`], [`world::SharedSide`]): a step deep-copies
//! only the parts it changes, and each part's hash is computed once, when a
//! step changed it (the world's `Hash` writes that 64-bit digest).
//!
//! `check` searches depth-first with ckpt's own engine ([`search::engine`]:
//! stateright's semantics and counts, less overhead per state) unless told
//! `--engine stateright` or `--bfs` (a breadth-first search is stateright's).
//!
//! Partial-order reduction (`world/por.rs`, [`world::Reduction`]; on in the
//! `check` command, off in [`CheckOptions`]' default so that the
//! pinned counts of the tests mean the full graph): where one task's local
//! steps commute with everything else that may happen before them, only
//! those are expanded. `tests/reduction.rs` validates it against the full
//! search on every pinned configuration and every knob of the bug zoo.
//!
//! ## Bounds (each a flag)
//!
//! `--tasks`, `--checkpoints` (periodic firings per run), `--max-concurrent`,
//! `--faults` (one budget for duplicates, drops, failed I/O answers, writer
//! and async failures; `--no-io-faults`, `--no-task-faults` turn kinds off),
//! `--network`, `--topology`, `--no-shutdown`, and opt-in ones, 0 / off by
//! default: `--savepoints`, `--user-checkpoints`, `--master-hooks`,
//! `--task-failures`, `--scheduler-restarts`, `--coordinator-failovers`,
//! `--job-failovers`, `--savepoint-restore`, `--end-of-input`,
//! `--finished-tasks`, `--shared-files` (state handles as segments of
//! reference-counted physical files, [`ckpt_core::files`]),
//! `--recovering-tasks` (restarted attempts replay in-flight channel state,
//! checkpointing during recovery on), and the others `check --help` lists.
//! Every action
//! consumes something (a message, a mail, an answer, a firing, work, budget),
//! so every run is finite and the state graph is acyclic.
//!
//! ## Symmetry
//!
//! Interchangeable tasks (the downstream tasks in `fanout`, the sources in
//! `join`) are reduced by a canonical representative ([`search::symmetry`]):
//! stateright's engine and the shards' split take the member of the orbit
//! with the smallest hash, every renaming of the class tried; ckpt's engine
//! and `dist` key an orbit by the smallest hash among the members whose task
//! sides' digests come first (`orbit_min`: the same orbits merge). Either
//! way everything that names a task renamed with it (its side, its ack
//! slots and status at the coordinator, channels, messages, and the state
//! handles it wrote, wherever they appear). stateright applies symmetry in
//! DFS only; its BFS ignores it.
//!
//! ## Properties
//!
//! Each `always` is paired with a `sometimes` that shows the situation it
//! guards really happens ([`search::system::props::PAIRS`]; the opt-in pairs in
//! [`search::system::props::OPT_IN_PAIRS`] are part of the model only when their flag
//! is on, and `check` lists them as `not checked` otherwise). Safety is
//! checked by the core's invariant functions after every step (through the
//! one checked step), by the durability ledger, and by the world at
//! quiescence; [`search::system::property_of`] maps every invariant name to exactly
//! one property (a test finds any name left unmapped). Properties about
//! something never happening are judged where runs end: `always (run ended =>
//! P)`, with the run end computed from the enabled actions (the model is
//! acyclic, so a state with nothing enabled is where a run ends): no trigger
//! stuck, the periodic trigger not dead, every write result removed, every
//! trigger or barrier a task took answered, no task waiting for alignment
//! (join).
//!
//! ## Liveness: what `eventually` can and cannot say here
//!
//! stateright judges `eventually` only at terminal states (states with no
//! successor inside the boundary), and its DFS does not put the `eventually` bits into the
//! fingerprint, so a property that held on the path that first reached a
//! state is assumed for every path reaching it. One `eventually` remains:
//! every run ends quiet. The run-end properties above are `always` for that
//! reason (exact, and found by the breadth-first shortest-path search).
//! There is no fairness: "a checkpoint eventually completes" is not a
//! property (timers may abort every checkpoint); `sometimes` covers it.
//!
//! ## Counterexamples
//!
//! A violated safety property is re-searched breadth-first in a model with
//! only the `always` properties (a `sometimes` witnessed or an `eventually`
//! pending would otherwise decide when the search stops), repeated under a
//! depth bound until no shorter path exists ([`shortest_violation`]). It is
//! replayed once ([`render::replay::Replay`]) and printed as numbered
//! steps, and can be written as a core JSON-lines trace (`--trace-out`,
//! replayable by `ckpt_core::trace::replay` and `ckpt-model replay`) and as
//! a Mermaid sequence diagram (`--diagram`).
//!
//! ## Limits, random walks, shards
//!
//! `check --max-states` / `--memory-limit-mb` stop a search with a partial
//! report ([`search::report::Completion::StateLimit`], `MemoryLimit`; the model's
//! `within_boundary` turns every successor away so the workers drain), and
//! every report carries the peak resident memory. [`search::simulate`] runs seeded
//! random walks judged by the same properties, for configurations too big to
//! search. [`search::shard`] splits a search by the fingerprint of the states at a
//! split depth (`check --shard K/N`), and `ckpt-model merge` combines the
//! shards' reports.
//!
//! ## Not modelled
//!
//! Region failover (a failed source does not restart its downstream tasks);
//! a task failing on its own writer or async thread; a failure report that
//! reaches the coordinator later than the failure (`TaskFailed` is delivered
//! in the failing step); a second coordinator alive at the same time as the
//! first whose messages still reach the tasks (split brain: the failover
//! kills the old one first; a deposed one kept running by
//! `--zombie-coordinators` reaches only the store, the id counter and the
//! state files; `ckpt-node`'s Jepsen-style test deposes a live leader
//! between real processes); the tolerable failure counter across a
//! coordinator failover (a new coordinator starts counting from zero, as
//! Flink's does). A trace holds one coordinator, so the trace of a run with
//! a coordinator failover does not replay in core past the `Recover` event.

#![forbid(unsafe_code)]

pub mod render;
pub mod search;
pub mod world;
pub mod zoo;

pub use search::options::{CheckOptions, Engine};
pub use search::report::{CheckReport, Completion, Counterexample, Status, Verdict};
pub use search::run::run_check;
pub use search::shortest::{shortest_violation, shortest_violation_within};
pub use search::system::{props, SysModel, SysState};
pub use world::{Action, ModelConfig, Network, Reduction, Sim, Topology, World};
