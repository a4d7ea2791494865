//! The world's dynamics: which actions are enabled in a state, and what one
//! action does. One function per thing that happens; one routing of every
//! effect (through [`ckpt_core::route`]); one checked step per machine
//! (through [`ckpt_core::invariants::checked`]).

mod enabled;
mod files;
mod host;
mod route;
mod step;

use std::sync::{Arc, Mutex};

use ckpt_core::coordinator::{
    AbortReason, Applied, CoordinatorEvent as CEv, CoordinatorSettings, CoordinatorState, Ignored,
    JobStatus, Outcome, RecoveredCheckpoint, RestoreSource, Timer, TriggerKind,
};
use ckpt_core::coordinator::{CoordinatorEffect, IoAnswer, JobCommand, Report};
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::coordinator::{check_restart, check_task_discard, HandleLedger};
use ckpt_core::invariants::durability::{Deleter, DurableLedger, Stored};
use ckpt_core::invariants::task::{check_quiescent, names as task_names, TaskMonitor};
use ckpt_core::invariants::Violation;
use ckpt_core::route::{ChannelItem, TaskMessage, ToCoordinator};
use ckpt_core::task::{Lifecycle, TaskConfig, TaskEvent as TEv, TaskState};
use ckpt_core::task::{Recovery, TaskEffect, WriterCommand};
use ckpt_core::trace::TraceLine;
use ckpt_core::{
    AttemptNo, CheckpointId, Generation, IoFailure, LegacyBug, Millis, StateHandle, TaskId, Thread,
};

use super::config::{ModelConfig, Network, JOB};
use super::coverage::{self, coord_event_kind, Coverage};
use super::state::{
    Channel, Durable, History, InDoubt, Io, Mail, Msg, Sealed, SharedFiles, SharedSide, TaskSide,
    Used, World, Zombie,
};

/// Something a scheduler can make happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A coordinator timer fires (time moves to its deadline if it is later).
    Fire(Timer),
    /// The host answers an I/O request, successfully or (fault) not.
    Answer(Io, bool),
    /// The network delivers a message.
    Deliver(Msg),
    /// The network duplicates a message (fault).
    Duplicate(Msg),
    /// The network drops a message (fault).
    Drop(Msg),
    /// A task's netty thread takes the barrier at the head of the channel
    /// from an upstream task.
    Netty(TaskId, TaskId),
    /// A task's task thread reads the cancel marker at the head of the
    /// channel from an upstream task.
    Input(TaskId, TaskId),
    /// A task's task thread runs the head of its mailbox.
    Mailbox(TaskId),
    /// A task's writer completes (true) or fails (false, fault) a result.
    Writer(TaskId, CheckpointId, bool),
    /// A task's async part completes (true) or fails (false, fault).
    Async(TaskId, CheckpointId, bool),
    /// The coordinator shuts down.
    Shutdown,
    /// The user triggers a savepoint (`savepoints` budget).
    Savepoint,
    /// The user triggers a checkpoint (`user_checkpoints` budget).
    UserCheckpoint {
        /// Forced (skips the concurrency and pause checks).
        forced: bool,
    },
    /// A task fails genuinely (`task_failures` budget, a fault): its reducer
    /// gets `OperatorFailed`, its mailbox and input channels are discarded,
    /// and the coordinator gets `TaskFailed` for its attempt.
    FailTask(TaskId),
    /// A failed task restarts as its next attempt: a fresh task state and
    /// monitor, and the coordinator gets `TaskRunning`.
    RestartTask(TaskId),
    /// The scheduler is stopped (`scheduler_restarts` budget).
    StopScheduler,
    /// The stopped scheduler is started again.
    StartScheduler,
    /// The coordinator's process dies (`coordinator_failovers` budget): its
    /// state and its outstanding I/O are gone; with `commit`, an outstanding
    /// store write had committed (its answer is what was lost). A new
    /// coordinator recovers from the store and the id counter, every task
    /// restarts as a new attempt, and the latest stored checkpoint is
    /// restored.
    CoordinatorFailover {
        /// The outstanding store write had committed.
        commit: bool,
    },
    /// The job fails over after a
    /// [`JobCommand::Fail`](ckpt_core::coordinator::JobCommand::Fail):
    /// every task is cancelled and restarted, and the coordinator restores
    /// the latest checkpoint.
    JobFailover,
    /// A source task's input ends (`end_of_input` budget): `EndOfInput`.
    EndOfInput(TaskId),
    /// The host answers an I/O request of the deposed coordinator
    /// (`zombie_coordinators`): the store, the id counter and the state
    /// files refuse it if its generation is older than the store's newest.
    ZombieAnswer(Io),
    /// A task's async part completes reporting the state of its last
    /// acknowledged checkpoint again, unchanged (`shared_state`).
    AsyncReused(TaskId, CheckpointId),
    /// The user disposes of a savepoint the coordinator keeps
    /// (`dispose_savepoints`): the host removes it from the store, then
    /// tells the coordinator.
    DisposeSavepoint(CheckpointId),
    /// The user stops the job with a savepoint (`stop_with_savepoint`).
    StopWithSavepoint,
    /// A job that ended on a stop-with-savepoint starts again: a new
    /// coordinator recovers from the store, as after a crash.
    ResumeJob,
    /// A quiet task whose upstream tasks all finished finishes
    /// (`finished_tasks` budget): its input ends (`EndOfInput`, unless it
    /// already did) and the host reports `TaskFinished` for its attempt.
    FinishTask(TaskId),
    /// A step of a recovering task's channel-state replay
    /// (`recovering_tasks`).
    Recovery(TaskId, RecoveryStep),
}

/// A step of replaying in-flight channel state on a recovering task: each
/// is the task event of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecoveryStep {
    /// The channel state was fetched: `RecoveryStarted` with the task's
    /// input channels.
    Started,
    /// One input channel consumed its recovered input: `ChannelRecovered`.
    ChannelRecovered,
    /// The drainer pushed all of it: `RecoveryFinished`.
    Finished,
}

impl Action {
    /// Whether this action injects a fault (draws from a fault budget).
    #[must_use]
    pub fn is_fault(&self) -> bool {
        match self {
            Action::Answer(_, ok) | Action::Writer(_, _, ok) | Action::Async(_, _, ok) => !ok,
            Action::Duplicate(_)
            | Action::Drop(_)
            | Action::FailTask(_)
            | Action::CoordinatorFailover { .. } => true,
            Action::Fire(_)
            | Action::Deliver(_)
            | Action::Netty(..)
            | Action::Input(..)
            | Action::Mailbox(_)
            | Action::Shutdown
            | Action::Savepoint
            | Action::UserCheckpoint { .. }
            | Action::RestartTask(_)
            | Action::StopScheduler
            | Action::StartScheduler
            | Action::JobFailover
            | Action::EndOfInput(_)
            | Action::ZombieAnswer(_)
            | Action::AsyncReused(..)
            | Action::DisposeSavepoint(_)
            | Action::StopWithSavepoint
            | Action::ResumeJob
            | Action::FinishTask(_)
            | Action::Recovery(..) => false,
        }
    }
}

/// Which coordinator an event goes to: the current leader, or the deposed
/// one that keeps running (`zombie_coordinators`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leader {
    Current,
    Zombie,
}

/// One event delivered to one machine during a step (for rendering and
/// traces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// When.
    pub now: Millis,
    /// The trace line (coordinator or task event).
    pub line: TraceLine,
    /// Effects, rendered.
    pub effects: Vec<String>,
    /// Outcome, rendered.
    pub outcome: String,
    /// A violation found at this delivery.
    pub violation: Option<Violation>,
}

/// The name of the world-level invariant: a write result left when the
/// whole system is quiet (the task monitor's `leaked`).
pub const LEAKED: &str = task_names::NO_LEAKED_RESULT;

/// The name of the world-level check that every effect found its route.
pub const ROUTED: &str = "world-routes-every-effect";

/// A world's configuration with its derived topology: the dynamics.
#[derive(Clone, Debug)]
pub struct Sim {
    /// The bounds and switches.
    pub cfg: ModelConfig,
    settings: CoordinatorSettings,
    task_cfg: TaskConfig,
    /// Per task: the tasks its barriers go to.
    downstream: Vec<Vec<TaskId>>,
    /// Per task: its upstream tasks (input channels).
    upstream: Vec<Vec<TaskId>>,
    /// How much each checked step verifies.
    pub rigor: Rigor,
    /// Transition coverage, when collected.
    pub coverage: Option<Arc<Mutex<Coverage>>>,
    /// Whether a logged [`Delivery`] renders its effects and outcome (true
    /// by default; false leaves them empty, for callers that keep only the
    /// trace lines and would otherwise pay for `Debug` formatting per step).
    pub render: bool,
    /// Each task side records the order of the events it was given
    /// ([`super::TaskSide::order`]), so runs that end alike but gave a task
    /// its events in different orders end in different states. Off for
    /// checking (it multiplies the states); on for the partial-order
    /// reduction's validation ([`crate::search::exact::exact_run_ends`]), where it
    /// turns "the reduction keeps every run end" into "it keeps every order
    /// of each task's own events that some run ends with". Not meant with
    /// symmetry (the digest is not renamed).
    pub record_task_order: bool,
    /// Whether each step computes the changed parts' hashes at once (true
    /// by default: the model checker fingerprints every state, and a
    /// sealed part is hashed once for all the states that share it).
    /// False for drivers that keep one world and never hash it (the story
    /// driver, the fuzz targets): a part's hash is then computed only if
    /// something asks for it, and `Hash` and equality are unchanged.
    pub seal: bool,
}

impl Sim {
    /// The world of `cfg`, checking invariants only (the model's rigor).
    #[must_use]
    pub fn new(cfg: ModelConfig) -> Sim {
        let n = cfg.tasks.max(1);
        let settings = cfg.settings();
        let task_cfg = cfg.task_config();
        let mut downstream = vec![Vec::new(); n as usize];
        let mut upstream = vec![Vec::new(); n as usize];
        let sources: Vec<TaskId> = settings.tasks_to_trigger.clone();
        for t in (0..n).map(TaskId) {
            if sources.contains(&t) {
                continue;
            }
            for s in &sources {
                if let Some(d) = downstream.get_mut(s.0 as usize) {
                    d.push(t);
                }
                if let Some(u) = upstream.get_mut(t.0 as usize) {
                    u.push(*s);
                }
            }
        }
        Sim {
            cfg,
            settings,
            task_cfg,
            downstream,
            upstream,
            rigor: Rigor::Invariants,
            coverage: None,
            render: true,
            record_task_order: false,
            seal: true,
        }
    }

    /// Check determinism and pure-equals-in-place too (a second run of each
    /// event: for the random schedulers, not the exhaustive one).
    #[must_use]
    pub fn with_rigor(mut self, rigor: Rigor) -> Sim {
        self.rigor = rigor;
        self
    }

    /// Leave the parts a step changes unhashed ([`Sim::seal`]).
    #[must_use]
    pub fn without_sealing(mut self) -> Sim {
        self.seal = false;
        self
    }

    /// Log deliveries without rendering their effects and outcome (each
    /// [`Delivery`] keeps its trace line and violation; `effects` is empty
    /// and `outcome` is `""`).
    #[must_use]
    pub fn without_rendering(mut self) -> Sim {
        self.render = false;
        self
    }

    /// Collect transition coverage.
    #[must_use]
    pub fn with_coverage(mut self) -> Sim {
        self.coverage = Some(Arc::new(Mutex::new(Coverage::new())));
        self
    }

    /// The coordinator settings (trace header).
    #[must_use]
    pub fn settings(&self) -> &CoordinatorSettings {
        &self.settings
    }

    /// The task configuration (trace header).
    #[must_use]
    pub fn task_config(&self) -> &TaskConfig {
        &self.task_cfg
    }

    /// The upstream tasks of `t` (its input channels).
    #[must_use]
    pub fn upstream(&self, t: TaskId) -> &[TaskId] {
        self.upstream.get(t.0 as usize).map_or(&[], Vec::as_slice)
    }

    /// The initial state and its log (the `StartScheduler` event).
    #[must_use]
    pub fn init_with_log(&self) -> (World, Vec<Delivery>) {
        let coord = match CoordinatorState::from_settings(self.settings.clone()) {
            Ok(c) => c,
            // Unreachable for the settings built by `ModelConfig::settings`
            // (validated in tests); fall back to the smallest valid config.
            Err(_) => {
                match CoordinatorState::from_settings(CoordinatorSettings::with_tasks(JOB, 1)) {
                    Ok(c) => c,
                    Err(e) => panic!("default settings rejected: {e}"),
                }
            }
        };
        let n = self.cfg.tasks.max(1);
        let tasks = (0..n)
            .map(|t| {
                SharedSide::new(TaskSide {
                    st: self.fresh_task(),
                    mailbox: Vec::new(),
                    inputs: self
                        .upstream(TaskId(t))
                        .iter()
                        .map(|u| Channel {
                            from: *u,
                            queue: Vec::new(),
                            seen: None,
                        })
                        .collect(),
                    monitor: TaskMonitor::new(),
                    order: 0,
                    attempt: AttemptNo(0),
                    last_ack: None,
                    finished: false,
                })
            })
            .collect();
        let mut s = World {
            now: Millis(0),
            coord: Sealed::new(coord),
            tasks,
            net: Vec::new(),
            io: Vec::new(),
            used: Used::default(),
            scheduler_stopped: false,
            history: History::default(),
            ledger: Sealed::new(HandleLedger::new()),
            durable: Sealed::new(Durable {
                ledger: DurableLedger::new(usize::from(self.cfg.retained.max(1))),
                counter: None,
                metadata: Vec::new(),
                in_doubt: None,
                fence: Generation(0),
                files: self.fresh_files(),
            }),
            job_failover_due: false,
            awaiting_restore: false,
            zombie: None,
            stopped_with: None,
            violation: None,
            ordered_net: self.cfg.network == Network::Ordered,
        };
        let mut log = Vec::new();
        if self.cfg.savepoint_restore {
            // The host registers the savepoint (its files exist) and the
            // coordinator restores from it before anything else.
            let handles: Vec<StateHandle> = (0..n)
                .map(|t| handle_for(SAVEPOINT, TaskId(t), AttemptNo(0)))
                .collect();
            let registered = s.durable.ledger.register_savepoint(Stored {
                id: SAVEPOINT,
                savepoint: true,
                timestamp: Millis(0),
                handles: handles.clone(),
            });
            if let Err(v) = registered {
                s.violation = Some(Box::new(v));
            }
            let source = RestoreSource::Savepoint {
                checkpoint: SAVEPOINT,
                handles,
            };
            self.coord_event(&mut s, CEv::Restore { source }, Some(&mut log));
        }
        self.coord_event(&mut s, CEv::StartScheduler, Some(&mut log));
        // The events above changed this world's own parts in place, which
        // forgets their cached hashes: sealed again, as after every step.
        if self.seal {
            s.seal();
        }
        (s, log)
    }

    /// The initial state.
    #[must_use]
    pub fn init(&self) -> World {
        self.init_with_log().0
    }

    /// The task id attempt `attempt` of task `t` has in traces: `t` for the
    /// first attempt, `t + attempt * tasks` for a restarted one, so that a
    /// trace replay (which knows no restarts) runs each attempt on a fresh
    /// task machine. Coordinator events keep the real task id and attempt.
    #[must_use]
    pub fn trace_task(&self, t: TaskId, attempt: AttemptNo) -> TaskId {
        TaskId(t.0 + attempt.0 * self.cfg.tasks.max(1))
    }

    /// A fresh task state (a first attempt).
    fn fresh_task(&self) -> TaskState {
        match TaskState::new(self.task_cfg.clone()) {
            Ok(s) => s,
            Err(e) => panic!("task config rejected: {e}"),
        }
    }

    /// The task state attempt `attempt` starts with: replaying in-flight
    /// channel state if it is one of the first `recovering_tasks`
    /// restarts ([`ModelConfig::attempt_config`]).
    fn restarted_task(&self, attempt: AttemptNo) -> TaskState {
        if self.cfg.recovering_tasks == 0 {
            return self.fresh_task();
        }
        match TaskState::new(self.cfg.attempt_config(attempt.0)) {
            Ok(s) => s,
            Err(e) => panic!("task config rejected: {e}"),
        }
    }

    /// Advances the world's clock to `now` (never backwards); the machines
    /// see it with their next event.
    pub fn advance(&self, s: &mut World, now: Millis) {
        s.now = s.now.max(now);
    }

    /// Renders an action for humans.
    #[must_use]
    pub fn describe(&self, a: &Action) -> String {
        match a {
            Action::Fire(Timer::Periodic) => "coordinator timer Periodic fires".into(),
            Action::Fire(Timer::Timeout(c)) => format!("coordinator timer Timeout({c}) fires"),
            Action::Answer(io, ok) => format!(
                "host answers `{io}` {}",
                if *ok { "ok" } else { "with a failure (fault)" }
            ),
            Action::Deliver(m) => format!("network delivers {m}"),
            Action::Duplicate(m) => format!("network duplicates {m} (fault)"),
            Action::Drop(m) => format!("network drops {m} (fault)"),
            Action::Netty(t, up) => format!("task {t} netty thread: barrier from task {up}"),
            Action::Input(t, up) => format!("task {t} task thread: cancel marker from task {up}"),
            Action::Mailbox(t) => format!("task {t} task thread: runs its next mail"),
            Action::Writer(t, c, ok) => format!(
                "task {t} writer {} result {c}",
                if *ok { "completes" } else { "fails (fault)" }
            ),
            Action::Async(t, c, ok) => format!(
                "task {t} async part of {c} {}",
                if *ok { "completes" } else { "fails (fault)" }
            ),
            Action::Shutdown => "coordinator shuts down".into(),
            Action::Savepoint => "user triggers a savepoint".into(),
            Action::UserCheckpoint { forced } => format!(
                "user triggers a {}checkpoint",
                if *forced { "forced " } else { "" }
            ),
            Action::FailTask(t) => format!("task {t} fails (operator failure)"),
            Action::RestartTask(t) => format!("task {t} restarts as a new attempt"),
            Action::StopScheduler => "coordinator scheduler is stopped".into(),
            Action::StartScheduler => "coordinator scheduler is started again".into(),
            Action::CoordinatorFailover { commit } => format!(
                "coordinator process dies{}; a new one recovers from the store",
                if *commit {
                    " after the store committed, before its answer"
                } else {
                    ""
                }
            ),
            Action::JobFailover => {
                "the job fails over: every task restarts, the latest checkpoint is restored".into()
            }
            Action::EndOfInput(t) => format!("task {t} reaches the end of its input"),
            Action::ZombieAnswer(io) => {
                format!("host answers the deposed coordinator's `{io}`")
            }
            Action::AsyncReused(t, c) => {
                format!("task {t} async part of {c} completes with its unchanged state")
            }
            Action::DisposeSavepoint(c) => format!("user disposes of savepoint {c}"),
            Action::StopWithSavepoint => "user stops the job with a savepoint".into(),
            Action::ResumeJob => "the stopped job starts again and recovers from the store".into(),
            Action::FinishTask(t) => format!("task {t} finishes (its input ended)"),
            Action::Recovery(t, RecoveryStep::Started) => {
                format!("task {t} fetched its in-flight channel state and starts replaying it")
            }
            Action::Recovery(t, RecoveryStep::ChannelRecovered) => {
                format!("an input channel of task {t} consumed its recovered input")
            }
            Action::Recovery(t, RecoveryStep::Finished) => {
                format!("task {t}'s drainer pushed all its recovered input")
            }
        }
    }
}

/// The state handle attempt `attempt` of task `t` writes for `cp`: one file
/// per checkpoint, task and attempt (duplicated acks carry the same handle).
/// Handles name their task, so the symmetry reduction renames them with it
/// ([`rename_handle`]).
#[must_use]
pub fn handle_for(cp: CheckpointId, t: TaskId, attempt: AttemptNo) -> StateHandle {
    StateHandle((cp.0 << 16) | (u64::from(t.0 & 0xff) << 8) | u64::from(attempt.0 & 0xff))
}

/// The handle `h` after renaming task `t` to `perm[t]`.
#[must_use]
pub fn rename_handle(h: StateHandle, perm: &[TaskId]) -> StateHandle {
    let t = (h.0 >> 8) & 0xff;
    let image = perm
        .get(usize::try_from(t).unwrap_or(usize::MAX))
        .map_or(t, |p| u64::from(p.0 & 0xff));
    StateHandle((h.0 & !0xff00) | (image << 8))
}

/// The id the job's starting savepoint has (`savepoint_restore`).
pub const SAVEPOINT: CheckpointId = CheckpointId(1);

/// What a finalize of `checkpoint` writes: its kind, trigger time and
/// handles, as the coordinator asked (still pending while finalizing, or in
/// doubt after a shutdown).
fn finalize_record(coord: &CoordinatorState, checkpoint: CheckpointId) -> Option<Stored> {
    if let Some(p) = coord.pending_checkpoint(checkpoint) {
        return Some(Stored {
            id: checkpoint,
            savepoint: p.kind().is_savepoint(),
            timestamp: p.timestamp(),
            handles: p.handles().collect(),
        });
    }
    coord
        .in_doubt()
        .filter(|c| c.id() == checkpoint)
        .map(|c| Stored {
            id: checkpoint,
            savepoint: c.is_savepoint(),
            timestamp: c.timestamp(),
            handles: c.handles().collect(),
        })
}

/// Whether `checkpoint` is a savepoint, as its trigger and barriers tell a
/// task (the world reads it from the coordinator that triggered it).
fn is_savepoint(coord: &CoordinatorState, checkpoint: CheckpointId) -> bool {
    coord
        .pending_checkpoint(checkpoint)
        .is_some_and(|p| p.kind().is_savepoint())
        || coord
            .completed()
            .any(|c| c.id() == checkpoint && c.is_savepoint())
}

/// Keeps the first violation.
fn note(found: &mut Option<Violation>, r: Result<(), Violation>) {
    if let Err(v) = r {
        found.get_or_insert(v);
    }
}

fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
    let at = v.partition_point(|y| *y <= x);
    v.insert(at, x);
}

/// Whether `m` is an ack or decline with this reason from a task.
#[must_use]
pub fn is_decline(m: &Msg, why: ckpt_core::DeclineReason) -> bool {
    matches!(
        m,
        Msg::ToCoord {
            msg: ToCoordinator::Decline { reason, .. },
            ..
        } if *reason == why
    )
}
