//! The whole system as one stateright [`Model`]: the real coordinator and
//! task reducers from `ckpt-core`, plus what the real world holds between
//! them (network, mailboxes, input channels, writer / async work, I/O
//! answers, timers). See the crate docs for the picture.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ckpt_core::coordinator::{
    self, AbortReason, Applied, CoordinatorEffect as CE, CoordinatorEvent as CEv,
    CoordinatorSettings, CoordinatorState, JobStatus, RequestId, Step, Timer, TriggerKind,
};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::invariants::task::TaskMonitor;
use ckpt_core::invariants::{self, Violation};
use ckpt_core::task::{self, LegacyBug, Semantics, TaskConfig, TaskEffect as TE, TaskEvent as TEv};
use ckpt_core::task::{Lifecycle, TaskState};
use ckpt_core::trace::TraceLine;
use ckpt_core::{AttemptNo, CheckpointId, DeclineReason, IoFailure, JobId, Millis, StateHandle};
use ckpt_core::{TaskId, Thread};
use serde::Serialize;
use stateright::{Model, Property};

/// The job every model coordinator serves.
pub const JOB: JobId = JobId(1);

/// How the RPC network between coordinator and tasks behaves. Data channels
/// between tasks (barriers, cancel markers) are always FIFO per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// One FIFO per link (coordinator -> task t, task t -> coordinator).
    Ordered,
    /// Any in-flight message may be delivered next.
    Reorder,
    /// Reorder, and (within the fault budget) duplicate or drop a message.
    ReorderDupDrop,
}

/// Who sends barriers to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Task 0 is the only source (triggered by the coordinator); tasks
    /// `1..N` each have one input channel from task 0.
    Fanout,
    /// Tasks `0..N-1` are sources; task `N-1` has one input channel from
    /// each of them (needs N >= 3 to differ from `fanout`). The only
    /// topology here where one task can see a barrier and a cancel marker
    /// for the same checkpoint (`LegacyBug::CancelForgetsAbort`).
    Join,
}

/// The bounds and switches of one model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ModelConfig {
    /// Number of tasks.
    pub tasks: u32,
    /// Periodic timer firings (trigger attempts) per run.
    pub checkpoints: u8,
    /// The coordinator's `max_concurrent`.
    pub max_concurrent: u8,
    /// RPC network behaviour.
    pub network: Network,
    /// Fault budget per run: duplicates, drops, failed I/O answers, writer
    /// and async-part failures all draw from it.
    pub faults: u8,
    /// Whether I/O answers (id allocation, finalize, store) may fail.
    pub io_faults: bool,
    /// Whether the writer and the async part may fail.
    pub task_faults: bool,
    /// Whether the coordinator may shut down (once all triggers are used).
    pub shutdown: bool,
    /// Barrier topology.
    pub topology: Topology,
    /// Task semantics (fixed, or a legacy bug).
    #[serde(serialize_with = "ser_semantics")]
    pub semantics: Semantics,
    /// User-triggered savepoints per run (forced, never subsumed), at any
    /// time. 0 (the default): none.
    pub savepoints: u8,
    /// Genuine task failures per run (any task): `OperatorFailed`,
    /// `TaskFailed`, then a restart as a new attempt. 0 (the default): none.
    pub task_failures: u8,
    /// Scheduler stops per run, each followed later by a start. 0 (the
    /// default): none.
    pub scheduler_restarts: u8,
}

fn ser_semantics<S: serde::Serializer>(s: &Semantics, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(semantics_name(*s))
}

/// The CLI name of a semantics.
#[must_use]
pub fn semantics_name(s: Semantics) -> &'static str {
    match s {
        Semantics::Fixed => "fixed",
        Semantics::Legacy(LegacyBug::AbortRemovesResult) => "legacy",
        Semantics::Legacy(LegacyBug::CancelForgetsAbort) => "legacy-cancel",
    }
}

impl Default for ModelConfig {
    /// The default `check` configuration (sized for ~10-20 s on 2 cores).
    fn default() -> Self {
        ModelConfig {
            tasks: 2,
            checkpoints: 2,
            max_concurrent: 1,
            network: Network::Reorder,
            faults: 1,
            io_faults: true,
            task_faults: true,
            shutdown: true,
            topology: Topology::Fanout,
            semantics: Semantics::Fixed,
            savepoints: 0,
            task_failures: 0,
            scheduler_restarts: 0,
        }
    }
}

impl ModelConfig {
    /// The coordinator settings of this configuration (also the trace header).
    #[must_use]
    pub fn settings(&self) -> CoordinatorSettings {
        let mut s = CoordinatorSettings::with_tasks(JOB, self.tasks);
        // Time only labels events here (timers fire nondeterministically),
        // so keep the numbers small: fewer distinct clock values.
        s.interval_ms = 1;
        s.timeout_ms = 1;
        s.max_concurrent = i64::from(self.max_concurrent.max(1));
        if self.topology == Topology::Join && self.tasks >= 2 {
            s.tasks_to_trigger = (0..self.tasks - 1).map(TaskId).collect();
        }
        s
    }

    /// The task configuration (the same for every task).
    #[must_use]
    pub fn task_config(&self) -> TaskConfig {
        TaskConfig {
            semantics: self.semantics,
            ..TaskConfig::default()
        }
    }
}

/// A message on the RPC network. Derived order = the multiset's order.
/// Every message names the task attempt at its task end: the attempt a
/// coordinator message is addressed to (a message for an attempt that is no
/// longer the running one is dropped on delivery: the host finds no such
/// execution), or the attempt that sent an ack / decline (delivered to the
/// coordinator whatever the task's attempt is now, for it to judge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Msg {
    /// Coordinator -> source task: trigger.
    Trigger {
        /// Destination.
        task: TaskId,
        /// Destination attempt.
        attempt: AttemptNo,
        /// Checkpoint.
        cp: CheckpointId,
    },
    /// Coordinator -> task: notify aborted.
    Aborted {
        /// Destination.
        task: TaskId,
        /// Destination attempt.
        attempt: AttemptNo,
        /// Checkpoint.
        cp: CheckpointId,
    },
    /// Coordinator -> task: notify complete.
    Complete {
        /// Destination.
        task: TaskId,
        /// Destination attempt.
        attempt: AttemptNo,
        /// Checkpoint.
        cp: CheckpointId,
    },
    /// Task -> coordinator: acknowledge.
    Ack {
        /// Sender.
        task: TaskId,
        /// Sender attempt.
        attempt: AttemptNo,
        /// Checkpoint.
        cp: CheckpointId,
        /// State written.
        handle: StateHandle,
    },
    /// Task -> coordinator: decline.
    Decline {
        /// Sender.
        task: TaskId,
        /// Sender attempt.
        attempt: AttemptNo,
        /// Checkpoint.
        cp: CheckpointId,
        /// Why.
        reason: DeclineReason,
    },
}

impl Msg {
    /// The task at the other end.
    #[must_use]
    pub fn task(&self) -> TaskId {
        match self {
            Msg::Trigger { task, .. }
            | Msg::Aborted { task, .. }
            | Msg::Complete { task, .. }
            | Msg::Ack { task, .. }
            | Msg::Decline { task, .. } => *task,
        }
    }
    /// The task attempt at the other end.
    #[must_use]
    pub fn attempt(&self) -> AttemptNo {
        match self {
            Msg::Trigger { attempt, .. }
            | Msg::Aborted { attempt, .. }
            | Msg::Complete { attempt, .. }
            | Msg::Ack { attempt, .. }
            | Msg::Decline { attempt, .. } => *attempt,
        }
    }
    /// Whether it travels to the coordinator.
    #[must_use]
    pub fn to_coordinator(&self) -> bool {
        matches!(self, Msg::Ack { .. } | Msg::Decline { .. })
    }
    /// The link (FIFO flow) it travels on.
    #[must_use]
    pub fn link(&self) -> (bool, TaskId) {
        (self.to_coordinator(), self.task())
    }
    /// The same message for another task (same attempt).
    #[must_use]
    pub fn with_task(self, t: TaskId) -> Msg {
        match self {
            Msg::Trigger { attempt, cp, .. } => Msg::Trigger {
                task: t,
                attempt,
                cp,
            },
            Msg::Aborted { attempt, cp, .. } => Msg::Aborted {
                task: t,
                attempt,
                cp,
            },
            Msg::Complete { attempt, cp, .. } => Msg::Complete {
                task: t,
                attempt,
                cp,
            },
            Msg::Ack {
                attempt,
                cp,
                handle,
                ..
            } => Msg::Ack {
                task: t,
                attempt,
                cp,
                handle,
            },
            Msg::Decline {
                attempt,
                cp,
                reason,
                ..
            } => Msg::Decline {
                task: t,
                attempt,
                cp,
                reason,
            },
        }
    }
}

/// A mail in a task's mailbox (FIFO, run by the task thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mail {
    /// RPC: trigger (source tasks).
    Trigger(CheckpointId),
    /// RPC: notify aborted.
    Aborted(CheckpointId),
    /// RPC: notify complete.
    Complete(CheckpointId),
    /// The checkpoint mail scheduled on barrier.
    Checkpoint(CheckpointId),
}

/// An item on a data channel (FIFO per channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Input {
    /// A barrier (handled by the netty thread on arrival).
    Barrier(CheckpointId),
    /// A cancel marker (handled by the task thread when it reads it).
    Cancel(CheckpointId),
}

/// A pending answer to one of the coordinator's I/O effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Io {
    /// `AllocateCheckpointId`.
    Allocate(RequestId),
    /// `TriggerMasterHooks`.
    Hooks(CheckpointId),
    /// `FinalizeCheckpoint`.
    Finalize(CheckpointId),
    /// `StoreCheckpoint`.
    Store(CheckpointId),
}

/// One task with what surrounds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskSide {
    /// The real task state.
    pub st: TaskState,
    /// FIFO mailbox.
    pub mailbox: Vec<Mail>,
    /// Input channels, keyed by upstream task, sorted by it.
    pub inputs: Vec<(TaskId, Vec<Input>)>,
    /// The core's cross-step task monitor (a fresh one per attempt).
    pub monitor: TaskMonitor,
    /// The task's current execution attempt (0, then one more per restart).
    /// While its task state is failed the attempt is down: it runs nothing,
    /// its mailbox and input channels are discarded, and anything sent to it
    /// is dropped.
    pub attempt: AttemptNo,
}

impl TaskSide {
    /// Whether the attempt failed and has not been restarted yet.
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.st.lifecycle() == Lifecycle::Failed
    }
}

/// The model's state. `Hash` is derived over fields whose own `Hash` writes
/// lengths (std `Vec`, `BTreeMap`, and the core states' hand-written ones).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SysState {
    /// The real coordinator.
    pub coord: CoordinatorState,
    /// Tasks by id.
    pub tasks: Vec<TaskSide>,
    /// In-flight RPC messages: a sorted multiset, or (ordered network) per-link
    /// FIFO segments in link order.
    pub net: Vec<Msg>,
    /// Pending I/O answers, sorted.
    pub io: Vec<Io>,
    /// Periodic firings used.
    pub triggers: u8,
    /// Faults used.
    pub faults: u8,
    /// Lowest aborted checkpoint id, until a later one completes.
    pub abort_seen: Option<CheckpointId>,
    /// A checkpoint was aborted and a later one completed.
    pub abort_then_complete: bool,
    /// Savepoints triggered (`--savepoints`).
    pub savepoints: u8,
    /// Task failures used (`--task-failures`).
    pub task_failures: u8,
    /// Scheduler stops used (`--scheduler-restarts`).
    pub scheduler_stops: u8,
    /// The scheduler was stopped by the model and not started again yet.
    pub scheduler_stopped: bool,
    /// A checkpoint that waited for a restarted task attempt completed.
    pub failover_complete: bool,
    /// The core's handle ledger.
    pub ledger: HandleLedger,
    /// The first invariant violation (the state is then terminal).
    pub violation: Option<Violation>,
    /// Constant: the network is per-link FIFO (kept here so the symmetry
    /// representative, a plain function of the state, can rebuild it).
    pub ordered_net: bool,
}

/// Something the checker can make happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A coordinator timer fires (at its deadline).
    Fire(Timer),
    /// The host answers an I/O effect, successfully or (fault) not.
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
    /// The user triggers a savepoint (`--savepoints`).
    Savepoint,
    /// A task fails genuinely (`--task-failures`): its reducer gets
    /// `OperatorFailed`, its mailbox and input channels are discarded, and
    /// the coordinator gets `TaskFailed` for its attempt.
    FailTask(TaskId),
    /// A failed task restarts as its next attempt: a fresh task state and
    /// monitor, and the coordinator gets `TaskRunning`.
    RestartTask(TaskId),
    /// The scheduler is stopped (`--scheduler-restarts`).
    StopScheduler,
    /// The stopped scheduler is started again.
    StartScheduler,
}

/// Which machine an event went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// The coordinator.
    Coordinator,
    /// A task.
    Task(TaskId),
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

/// Transition coverage: (machine, event kind, outcome kind) -> count.
pub type Coverage = BTreeMap<(&'static str, &'static str, String), u64>;

/// The model: configuration plus topology.
#[derive(Clone, Debug)]
pub struct SysModel {
    /// The bounds and switches.
    pub cfg: ModelConfig,
    settings: CoordinatorSettings,
    task_cfg: TaskConfig,
    /// Per task: the tasks its barriers go to.
    downstream: Vec<Vec<TaskId>>,
    /// Per task: its upstream tasks (input channels).
    upstream: Vec<Vec<TaskId>>,
    /// Only the `always` properties (for shortest counterexamples).
    pub safety_only: bool,
    /// Transition coverage, when collected.
    pub coverage: Option<Arc<Mutex<Coverage>>>,
}

/// Per-thread coverage counts, merged into the model's shared map every
/// 65,536 records and when the thread exits (no lock per transition).
#[derive(Default)]
struct LocalCoverage {
    target: Option<Arc<Mutex<Coverage>>>,
    counts: Coverage,
    pending: usize,
}

impl LocalCoverage {
    fn flush(&mut self) {
        if let Some(t) = &self.target {
            if let Ok(mut map) = t.lock() {
                for (k, v) in std::mem::take(&mut self.counts) {
                    *map.entry(k).or_default() += v;
                }
            }
        }
        self.counts.clear();
        self.pending = 0;
    }
}

impl Drop for LocalCoverage {
    fn drop(&mut self) {
        self.flush();
    }
}

thread_local! {
    static LOCAL_COVERAGE: std::cell::RefCell<LocalCoverage> =
        std::cell::RefCell::new(LocalCoverage::default());
}

/// Flushes this thread's coverage counts (the checker's worker threads flush
/// when they exit; call this on a thread that stepped the model itself).
pub fn flush_coverage() {
    LOCAL_COVERAGE.with(|c| c.borrow_mut().flush());
}

/// Property names (stable; tests and the JSON summary use them).
pub mod props {
    /// No `FailTask` for a non-genuine reason.
    pub const NO_SPURIOUS_FAILURE: &str = "no spurious task failure";
    /// Completion only with every ack.
    pub const COMPLETE_ALL_ACKS: &str = "checkpoint completes only with all acks";
    /// Completed ids increase.
    pub const COMPLETED_INCREASE: &str = "completed checkpoint ids increase";
    /// Pending / queue bounded.
    pub const PENDING_BOUNDED: &str = "pending checkpoints bounded";
    /// Write results completed or failed and removed at quiescence.
    pub const NO_LEAKED_RESULT: &str = "write results settled and removed when quiet";
    /// Handles retained or discarded exactly once.
    pub const HANDLES: &str = "state handles retained or discarded exactly once";
    /// Nothing emitted after shutdown.
    pub const NOTHING_AFTER_SHUTDOWN: &str = "nothing after shutdown";
    /// Every other core invariant.
    pub const OTHER: &str = "every other core invariant";
    /// Sometimes: a checkpoint completes.
    pub const S_COMPLETES: &str = "sometimes a checkpoint completes";
    /// Sometimes: an abort, then a later completion.
    pub const S_ABORT_THEN_COMPLETE: &str = "sometimes one is aborted and a later one completes";
    /// Sometimes: an abort overtakes a checkpoint on a task (declined).
    pub const S_ABORT_RACE: &str = "sometimes a task declines a checkpoint the coordinator aborted";
    /// Sometimes: two checkpoints complete.
    pub const S_TWO_COMPLETE: &str = "sometimes two checkpoints complete";
    /// Sometimes: the concurrency bound throttles a request.
    pub const S_THROTTLED: &str = "sometimes a request waits for the concurrency bound";
    /// Sometimes: quiet after a checkpoint ran on every task.
    pub const S_QUIET: &str = "sometimes the system is quiet after checkpointing";
    /// Sometimes: a handle is discarded.
    pub const S_DISCARD: &str = "sometimes a state handle is discarded";
    /// Sometimes: a message reaches a shut-down coordinator.
    pub const S_AFTER_SHUTDOWN: &str = "sometimes a message arrives after shutdown";
    /// Sometimes (only with `--savepoints` > 0): a savepoint completes.
    pub const S_SAVEPOINT: &str = "sometimes a savepoint completes";
    /// Sometimes (only with `--task-failures` > 0): a checkpoint that waited
    /// for a restarted task attempt completes.
    pub const S_FAILOVER: &str = "sometimes a checkpoint completes after a task failover";
    /// Eventually: every run ends quiet (no deadlock, nothing stuck).
    pub const E_QUIET: &str = "eventually every run ends quiet";

    /// Each `always` property and the `sometimes` that keeps it honest.
    pub const PAIRS: [(&str, &str); 8] = [
        (NO_SPURIOUS_FAILURE, S_ABORT_RACE),
        (COMPLETE_ALL_ACKS, S_COMPLETES),
        (COMPLETED_INCREASE, S_TWO_COMPLETE),
        (PENDING_BOUNDED, S_THROTTLED),
        (NO_LEAKED_RESULT, S_QUIET),
        (HANDLES, S_DISCARD),
        (NOTHING_AFTER_SHUTDOWN, S_AFTER_SHUTDOWN),
        (OTHER, S_ABORT_THEN_COMPLETE),
    ];

    /// Opt-in pairs: (always, sometimes, the flag that must be > 0 for the
    /// `sometimes` to be checked). With the flag at 0 the `sometimes` is not
    /// part of the model (nothing could witness it) and `check` says so.
    pub const OPT_IN_PAIRS: [(&str, &str, &str); 2] = [
        (COMPLETED_INCREASE, S_SAVEPOINT, "--savepoints"),
        (COMPLETE_ALL_ACKS, S_FAILOVER, "--task-failures"),
    ];
}

/// The model-level invariant name for a leaked write result at quiescence.
pub const LEAKED: &str = "no_leaked_result";

/// Which property an invariant name belongs to.
#[must_use]
pub fn property_of(invariant: &str) -> &'static str {
    use invariants::coordinator::names as c;
    match invariant {
        "no_spurious_failure" | "single_failure" => props::NO_SPURIOUS_FAILURE,
        c::COMPLETE_ALL_ACKS => props::COMPLETE_ALL_ACKS,
        c::COMPLETED_INCREASE | c::COMPLETED | "executed_increase" | "complete_monotonic" => {
            props::COMPLETED_INCREASE
        }
        c::PENDING_BOUNDED | c::ONE_QUEUED | c::QUEUE_BOUNDED => props::PENDING_BOUNDED,
        LEAKED | "result_has_mail" => props::NO_LEAKED_RESULT,
        c::NO_DISCARD_RETAINED | c::NO_LEAK | c::DISCARD_ONCE | "handle_once" => props::HANDLES,
        c::NOTHING_AFTER_SHUTDOWN | c::SHUTDOWN_QUIET | "silent_after_end" => {
            props::NOTHING_AFTER_SHUTDOWN
        }
        _ => props::OTHER,
    }
}

fn violated(s: &SysState, prop: &str) -> bool {
    s.violation
        .as_ref()
        .is_some_and(|v| property_of(v.invariant) == prop)
}

impl SysModel {
    /// A model of `cfg`.
    #[must_use]
    pub fn new(cfg: ModelConfig) -> SysModel {
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
        SysModel {
            cfg,
            settings,
            task_cfg,
            downstream,
            upstream,
            safety_only: false,
            coverage: None,
        }
    }

    /// Collect transition coverage.
    #[must_use]
    pub fn with_coverage(mut self) -> SysModel {
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

    /// The initial state and its log (the `StartScheduler` event).
    #[must_use]
    pub fn init_with_log(&self) -> (SysState, Vec<Delivery>) {
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
            .map(|t| TaskSide {
                st: self.fresh_task(),
                mailbox: Vec::new(),
                inputs: self.upstream[t as usize]
                    .iter()
                    .map(|u| (*u, Vec::new()))
                    .collect(),
                monitor: TaskMonitor::new(),
                attempt: AttemptNo(0),
            })
            .collect();
        let mut s = SysState {
            coord,
            tasks,
            net: Vec::new(),
            io: Vec::new(),
            triggers: 0,
            faults: 0,
            abort_seen: None,
            abort_then_complete: false,
            savepoints: 0,
            task_failures: 0,
            scheduler_stops: 0,
            scheduler_stopped: false,
            failover_complete: false,
            ledger: HandleLedger::new(),
            violation: None,
            ordered_net: self.cfg.network == Network::Ordered,
        };
        let mut log = Vec::new();
        self.coord_event(&mut s, Millis(0), CEv::StartScheduler, Some(&mut log));
        (s, log)
    }

    /// The task id attempt `attempt` of task `t` has in traces: `t` for the
    /// first attempt, `t + attempt * tasks` for a restarted one, so that a
    /// trace replay (which knows no restarts) runs each attempt on a fresh
    /// task machine. Coordinator events keep the real task id and attempt.
    #[must_use]
    pub fn trace_task(&self, t: TaskId, attempt: AttemptNo) -> TaskId {
        TaskId(t.0 + attempt.0 * self.cfg.tasks.max(1))
    }

    /// A fresh task state (a new attempt).
    fn fresh_task(&self) -> TaskState {
        match TaskState::new(self.task_cfg.clone()) {
            Ok(s) => s,
            Err(e) => panic!("task config rejected: {e}"),
        }
    }

    fn budget(&self, s: &SysState) -> bool {
        s.faults < self.cfg.faults
    }

    /// Every state quiet: no messages, answers, mails, inputs or work.
    #[must_use]
    pub fn quiet(s: &SysState) -> bool {
        s.net.is_empty()
            && s.io.is_empty()
            && s.tasks.iter().all(|t| {
                t.mailbox.is_empty()
                    && t.inputs.iter().all(|(_, q)| q.is_empty())
                    && !t.st.has_outstanding_work()
            })
    }

    fn push_msg(&self, net: &mut Vec<Msg>, m: Msg) {
        let at = match self.cfg.network {
            Network::Ordered => net.partition_point(|x| x.link() <= m.link()),
            Network::Reorder | Network::ReorderDupDrop => net.partition_point(|x| *x <= m),
        };
        net.insert(at, m);
    }

    /// Messages the network may deliver next.
    fn deliverable(&self, net: &[Msg]) -> Vec<Msg> {
        let mut out = Vec::new();
        for (i, m) in net.iter().enumerate() {
            let first = match i.checked_sub(1).and_then(|j| net.get(j)) {
                None => true,
                Some(prev) => match self.cfg.network {
                    Network::Ordered => prev.link() != m.link(),
                    Network::Reorder | Network::ReorderDupDrop => prev != m,
                },
            };
            if first {
                out.push(*m);
            }
        }
        out
    }

    fn record(&self, machine: &'static str, kind: &'static str, outcome: String) {
        if let Some(c) = &self.coverage {
            LOCAL_COVERAGE.with(|cell| {
                let mut local = cell.borrow_mut();
                if !local.target.as_ref().is_some_and(|t| Arc::ptr_eq(t, c)) {
                    local.flush();
                    local.target = Some(Arc::clone(c));
                }
                *local.counts.entry((machine, kind, outcome)).or_default() += 1;
                local.pending += 1;
                if local.pending >= 1 << 16 {
                    local.flush();
                }
            });
        }
    }

    /// Delivers one event to the coordinator and routes its effects.
    fn coord_event(&self, s: &mut SysState, now: Millis, ev: CEv, log: Option<&mut Vec<Delivery>>) {
        let t = coordinator::reduce(&s.coord, now, ev.clone());
        let step = Step {
            effects: t.effects,
            outcome: t.outcome,
            clock: t.clock,
        };
        let mut found = None;
        if s.violation.is_none() {
            if let Err(v) =
                invariants::coordinator::check_all(&mut s.ledger, &s.coord, &ev, &step, &t.state)
            {
                found = Some(v);
            }
        }
        if self.coverage.is_some() {
            self.record(
                "coordinator",
                coord_event_kind(&ev),
                coord_outcome_kind(&step.outcome),
            );
        }
        let before = std::mem::replace(&mut s.coord, t.state);
        for e in &step.effects {
            match e {
                CE::ScheduleTimer { .. }
                | CE::CancelTimer { .. }
                | CE::DiscardState { .. }
                | CE::RequestFailed { .. }
                | CE::FailJob { .. }
                | CE::ResetIdCounter { .. }
                | CE::RestoreState { .. }
                | CE::ShutdownServices { .. } => {}
                CE::AllocateCheckpointId { request } => {
                    insert_sorted(&mut s.io, Io::Allocate(*request))
                }
                CE::TriggerMasterHooks { checkpoint, .. } => {
                    insert_sorted(&mut s.io, Io::Hooks(*checkpoint));
                }
                CE::FinalizeCheckpoint { checkpoint, .. } => {
                    insert_sorted(&mut s.io, Io::Finalize(*checkpoint));
                }
                CE::StoreCheckpoint { checkpoint } => {
                    insert_sorted(&mut s.io, Io::Store(*checkpoint))
                }
                CE::TriggerTask {
                    task,
                    attempt,
                    checkpoint,
                    ..
                } => self.push_msg(
                    &mut s.net,
                    Msg::Trigger {
                        task: *task,
                        attempt: *attempt,
                        cp: *checkpoint,
                    },
                ),
                CE::NotifyAborted {
                    task,
                    attempt,
                    checkpoint,
                    ..
                } => self.push_msg(
                    &mut s.net,
                    Msg::Aborted {
                        task: *task,
                        attempt: *attempt,
                        cp: *checkpoint,
                    },
                ),
                CE::NotifyComplete {
                    task,
                    attempt,
                    checkpoint,
                    ..
                } => self.push_msg(
                    &mut s.net,
                    Msg::Complete {
                        task: *task,
                        attempt: *attempt,
                        cp: *checkpoint,
                    },
                ),
                CE::CheckpointCompleted { checkpoint, .. } => {
                    // The attempts it waited for, captured at trigger time.
                    if before
                        .pending_checkpoint(*checkpoint)
                        .is_some_and(|p| p.attempts().iter().any(|a| a.0 > 0))
                    {
                        s.failover_complete = true;
                    }
                    if s.abort_seen.is_some_and(|a| a < *checkpoint) {
                        s.abort_then_complete = true;
                        s.abort_seen = None;
                    }
                }
                CE::CheckpointAborted {
                    checkpoint, reason, ..
                } => {
                    let counts = !matches!(reason, AbortReason::Subsumed | AbortReason::Shutdown);
                    if counts && !s.abort_then_complete {
                        s.abort_seen =
                            Some(s.abort_seen.map_or(*checkpoint, |a| a.min(*checkpoint)));
                    }
                }
            }
        }
        if let Some(log) = log {
            log.push(Delivery {
                now,
                line: TraceLine::Coordinator { now, event: ev },
                effects: step.effects.iter().map(|e| format!("{e:?}")).collect(),
                outcome: format!("{:?}", step.outcome),
                violation: found.clone(),
            });
        }
        if found.is_some() {
            s.violation = found;
        }
    }

    /// Delivers one event to task `t` and routes its effects.
    fn task_event(&self, s: &mut SysState, t: TaskId, ev: TEv, log: Option<&mut Vec<Delivery>>) {
        let now = s.coord.now();
        let Some(side) = s.tasks.get_mut(t.0 as usize) else {
            return;
        };
        let attempt = side.attempt;
        let tr = task::reduce(&side.st, now, ev.clone());
        let mut found = None;
        if s.violation.is_none() {
            let r = invariants::task::check_all(
                &mut side.monitor,
                &side.st,
                &ev,
                &tr.effects,
                &tr.outcome,
                &tr.state,
            )
            .and_then(|()| invariants::task::check_quiescent(&tr.state));
            if let Err(v) = r {
                found = Some(v);
            }
        }
        if self.coverage.is_some() {
            self.record("task", ev.kind(), format!("{:?}", tr.outcome));
        }
        side.st = tr.state;
        for e in &tr.effects {
            match e {
                TE::StartWriter { .. }
                | TE::AbortWriter { .. }
                | TE::StartAsyncPart { .. }
                | TE::CancelAsyncPart { .. }
                | TE::DiscardState { .. }
                | TE::NotifyOperatorsComplete { .. }
                | TE::NotifyOperatorsAborted { .. }
                | TE::FailTask { .. } => {}
                TE::ScheduleCheckpointMail { checkpoint } => {
                    if let Some(side) = s.tasks.get_mut(t.0 as usize) {
                        side.mailbox.push(Mail::Checkpoint(*checkpoint));
                    }
                }
                TE::BroadcastBarrier { checkpoint } => {
                    self.broadcast(s, t, Input::Barrier(*checkpoint));
                }
                TE::BroadcastCancelMarker { checkpoint } => {
                    self.broadcast(s, t, Input::Cancel(*checkpoint));
                }
                TE::AcknowledgeCheckpoint { checkpoint, handle } => self.push_msg(
                    &mut s.net,
                    Msg::Ack {
                        task: t,
                        attempt,
                        cp: *checkpoint,
                        handle: *handle,
                    },
                ),
                TE::DeclineCheckpoint { checkpoint, reason } => self.push_msg(
                    &mut s.net,
                    Msg::Decline {
                        task: t,
                        attempt,
                        cp: *checkpoint,
                        reason: *reason,
                    },
                ),
            }
        }
        if let Some(log) = log {
            log.push(Delivery {
                now,
                line: TraceLine::Task {
                    now,
                    task: self.trace_task(t, attempt),
                    event: ev,
                },
                effects: tr.effects.iter().map(|e| format!("{e:?}")).collect(),
                outcome: format!("{:?}", tr.outcome),
                violation: found.clone(),
            });
        }
        if found.is_some() {
            s.violation = found;
        }
    }

    fn broadcast(&self, s: &mut SysState, from: TaskId, item: Input) {
        for d in self.downstream.get(from.0 as usize).into_iter().flatten() {
            if let Some(side) = s.tasks.get_mut(d.0 as usize) {
                if side.is_down() {
                    // A failed attempt's channels are gone.
                    continue;
                }
                if let Some((_, q)) = side.inputs.iter_mut().find(|(u, _)| *u == from) {
                    q.push(item);
                }
            }
        }
    }

    /// Runs one action, appending what was delivered to `log`.
    pub fn step(
        &self,
        s: &SysState,
        a: Action,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Option<SysState> {
        let mut n = s.clone();
        match a {
            Action::Fire(timer) => {
                let deadline = s.coord.timer_deadline(timer)?;
                if timer == Timer::Periodic {
                    n.triggers = n.triggers.saturating_add(1);
                }
                let now = deadline.max(s.coord.now());
                self.coord_event(&mut n, now, CEv::TimerFired { timer }, log.as_deref_mut());
            }
            Action::Answer(io, ok) => {
                let i = n.io.iter().position(|x| *x == io)?;
                n.io.remove(i);
                if !ok {
                    n.faults = n.faults.saturating_add(1);
                }
                let fail = || IoFailure("injected".into());
                let res = |ok: bool| if ok { Ok(()) } else { Err(fail()) };
                let ev = match io {
                    Io::Allocate(request) => {
                        let next = s
                            .coord
                            .last_id()
                            .map_or(CheckpointId(1), |l| l.next().unwrap_or(l));
                        CEv::CheckpointIdAllocated {
                            request,
                            result: if ok { Ok(next) } else { Err(fail()) },
                        }
                    }
                    Io::Hooks(checkpoint) => CEv::MasterHooksDone {
                        checkpoint,
                        result: res(ok),
                    },
                    Io::Finalize(checkpoint) => CEv::FinalizeDone {
                        checkpoint,
                        result: res(ok),
                    },
                    Io::Store(checkpoint) => CEv::StoreDone {
                        checkpoint,
                        result: res(ok),
                    },
                };
                let now = s.coord.now();
                self.coord_event(&mut n, now, ev, log.as_deref_mut());
            }
            Action::Deliver(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                let now = s.coord.now();
                match m {
                    Msg::Trigger { task, attempt, cp } => {
                        push_mail(&mut n, task, attempt, Mail::Trigger(cp));
                    }
                    Msg::Aborted { task, attempt, cp } => {
                        push_mail(&mut n, task, attempt, Mail::Aborted(cp));
                    }
                    Msg::Complete { task, attempt, cp } => {
                        push_mail(&mut n, task, attempt, Mail::Complete(cp));
                    }
                    Msg::Ack {
                        task,
                        attempt,
                        cp,
                        handle,
                    } => self.coord_event(
                        &mut n,
                        now,
                        CEv::Acknowledge {
                            job: JOB,
                            task,
                            attempt,
                            checkpoint: cp,
                            state: Some(handle),
                        },
                        log.as_deref_mut(),
                    ),
                    Msg::Decline {
                        task,
                        attempt,
                        cp,
                        reason,
                    } => self.coord_event(
                        &mut n,
                        now,
                        CEv::Decline {
                            job: JOB,
                            task,
                            attempt,
                            checkpoint: cp,
                            reason,
                        },
                        log.as_deref_mut(),
                    ),
                }
            }
            Action::Duplicate(m) => {
                n.net.iter().position(|x| *x == m)?;
                n.faults = n.faults.saturating_add(1);
                self.push_msg(&mut n.net, m);
            }
            Action::Drop(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                n.faults = n.faults.saturating_add(1);
            }
            Action::Netty(t, up) | Action::Input(t, up) => {
                let side = n.tasks.get_mut(t.0 as usize)?;
                let (_, q) = side.inputs.iter_mut().find(|(u, _)| *u == up)?;
                if q.is_empty() {
                    return None;
                }
                let ev = match (a, q.remove(0)) {
                    (Action::Netty(..), Input::Barrier(checkpoint)) => TEv::BarrierReceived {
                        checkpoint,
                        via: Thread::Netty,
                    },
                    (Action::Input(..), Input::Cancel(checkpoint)) => {
                        TEv::CancelMarker { checkpoint }
                    }
                    _ => return None,
                };
                self.task_event(&mut n, t, ev, log.as_deref_mut());
            }
            Action::Mailbox(t) => {
                let side = n.tasks.get_mut(t.0 as usize)?;
                if side.mailbox.is_empty() {
                    return None;
                }
                let ev = match side.mailbox.remove(0) {
                    Mail::Trigger(checkpoint) => TEv::TriggerCheckpoint { checkpoint },
                    Mail::Aborted(checkpoint) => TEv::NotifyAborted { checkpoint },
                    Mail::Complete(checkpoint) => TEv::NotifyComplete { checkpoint },
                    Mail::Checkpoint(checkpoint) => TEv::CheckpointMail { checkpoint },
                };
                self.task_event(&mut n, t, ev, log.as_deref_mut());
            }
            Action::Writer(t, checkpoint, ok) => {
                if !ok {
                    n.faults = n.faults.saturating_add(1);
                }
                let ev = if ok {
                    TEv::WriterCompleted { checkpoint }
                } else {
                    TEv::WriterFailed { checkpoint }
                };
                self.task_event(&mut n, t, ev, log.as_deref_mut());
            }
            Action::Async(t, checkpoint, ok) => {
                if !ok {
                    n.faults = n.faults.saturating_add(1);
                }
                let ev = if ok {
                    TEv::AsyncPartCompleted {
                        checkpoint,
                        handle: handle_for(checkpoint),
                    }
                } else {
                    TEv::AsyncPartFailed { checkpoint }
                };
                self.task_event(&mut n, t, ev, log.as_deref_mut());
            }
            Action::Shutdown => {
                let now = s.coord.now();
                self.coord_event(
                    &mut n,
                    now,
                    CEv::Shutdown {
                        status: JobStatus::Canceled,
                    },
                    log.as_deref_mut(),
                );
            }
            Action::Savepoint => {
                n.savepoints = n.savepoints.saturating_add(1);
                let now = s.coord.now();
                let kind = TriggerKind::Savepoint {
                    target: "sp".into(),
                };
                self.coord_event(&mut n, now, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::FailTask(t) => {
                if n.tasks.get(t.0 as usize)?.is_down() {
                    return None;
                }
                n.task_failures = n.task_failures.saturating_add(1);
                self.task_event(&mut n, t, TEv::OperatorFailed, log.as_deref_mut());
                let side = n.tasks.get_mut(t.0 as usize)?;
                // The failed attempt runs nothing more: its mailbox and input
                // buffers go with it (its writer and async work are read from
                // its task state, which the reducer has torn down).
                side.mailbox.clear();
                for (_, q) in &mut side.inputs {
                    q.clear();
                }
                let attempt = side.attempt;
                let now = s.coord.now();
                self.coord_event(
                    &mut n,
                    now,
                    CEv::TaskFailed { task: t, attempt },
                    log.as_deref_mut(),
                );
            }
            Action::RestartTask(t) => {
                let fresh = self.fresh_task();
                let side = n.tasks.get_mut(t.0 as usize)?;
                if !side.is_down() {
                    return None;
                }
                side.st = fresh;
                side.monitor = TaskMonitor::new();
                side.mailbox.clear();
                for (_, q) in &mut side.inputs {
                    q.clear();
                }
                side.attempt = AttemptNo(side.attempt.0.saturating_add(1));
                let attempt = side.attempt;
                let now = s.coord.now();
                self.coord_event(
                    &mut n,
                    now,
                    CEv::TaskRunning { task: t, attempt },
                    log.as_deref_mut(),
                );
            }
            Action::StopScheduler => {
                n.scheduler_stops = n.scheduler_stops.saturating_add(1);
                n.scheduler_stopped = true;
                let now = s.coord.now();
                self.coord_event(&mut n, now, CEv::StopScheduler, log.as_deref_mut());
            }
            Action::StartScheduler => {
                n.scheduler_stopped = false;
                let now = s.coord.now();
                self.coord_event(&mut n, now, CEv::StartScheduler, log.as_deref_mut());
            }
        }
        if n.violation.is_none() && Self::quiet(&n) {
            for side in &n.tasks {
                let leaked = side.monitor.leaked();
                let r = invariants::task::check_quiescent(&side.st).and_then(|()| {
                    if leaked.is_empty() {
                        Ok(())
                    } else {
                        Err(Violation::new(
                            LEAKED,
                            format!("quiet, but results {leaked:?} were never settled and removed"),
                        ))
                    }
                });
                if let Err(v) = r {
                    if let Some(last) = log.as_deref_mut().and_then(|l| l.last_mut()) {
                        last.violation = Some(v.clone());
                    }
                    n.violation = Some(v);
                    break;
                }
            }
        }
        Some(n)
    }

    /// Renders an action for humans.
    #[must_use]
    pub fn describe(&self, a: &Action) -> String {
        match a {
            Action::Fire(t) => format!("coordinator timer {t:?} fires"),
            Action::Answer(io, ok) => format!(
                "host answers {io:?} {}",
                if *ok { "ok" } else { "with a failure (fault)" }
            ),
            Action::Deliver(m) => format!("network delivers {m:?}"),
            Action::Duplicate(m) => format!("network duplicates {m:?} (fault)"),
            Action::Drop(m) => format!("network drops {m:?} (fault)"),
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
            Action::FailTask(t) => format!("task {t} fails (operator failure)"),
            Action::RestartTask(t) => format!("task {t} restarts as a new attempt"),
            Action::StopScheduler => "coordinator scheduler is stopped".into(),
            Action::StartScheduler => "coordinator scheduler is started again".into(),
        }
    }
}

/// The state handle a task's async part writes for `cp`: one per checkpoint,
/// the same on every task, so handles carry no task identity and the state
/// stays symmetric under task permutations (the ledger then counts
/// deliveries per checkpoint; duplicated acks carry the same handle).
#[must_use]
pub fn handle_for(cp: CheckpointId) -> StateHandle {
    StateHandle(cp.0)
}

/// Enqueues an RPC mail for attempt `attempt` of task `t`; dropped when that
/// attempt is not the running one (restarted since, or down).
fn push_mail(s: &mut SysState, t: TaskId, attempt: AttemptNo, m: Mail) {
    if let Some(side) = s.tasks.get_mut(t.0 as usize) {
        if side.attempt == attempt && !side.is_down() {
            side.mailbox.push(m);
        }
    }
}

fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
    let at = v.partition_point(|y| *y <= x);
    v.insert(at, x);
}

/// The coordinator event's kind (coverage).
#[must_use]
pub fn coord_event_kind(ev: &CEv) -> &'static str {
    match ev {
        CEv::StartScheduler => "StartScheduler",
        CEv::StopScheduler => "StopScheduler",
        CEv::Trigger { .. } => "Trigger",
        CEv::TimerFired {
            timer: Timer::Periodic,
        } => "TimerFired(Periodic)",
        CEv::TimerFired {
            timer: Timer::Timeout(_),
        } => "TimerFired(Timeout)",
        CEv::CheckpointIdAllocated { result: Ok(_), .. } => "CheckpointIdAllocated(ok)",
        CEv::CheckpointIdAllocated { result: Err(_), .. } => "CheckpointIdAllocated(err)",
        CEv::MasterHooksDone { .. } => "MasterHooksDone",
        CEv::Acknowledge { .. } => "Acknowledge",
        CEv::Decline { .. } => "Decline",
        CEv::FinalizeDone { result: Ok(()), .. } => "FinalizeDone(ok)",
        CEv::FinalizeDone { result: Err(_), .. } => "FinalizeDone(err)",
        CEv::StoreDone { result: Ok(()), .. } => "StoreDone(ok)",
        CEv::StoreDone { result: Err(_), .. } => "StoreDone(err)",
        CEv::TaskRunning { .. } => "TaskRunning",
        CEv::TaskFailed { .. } => "TaskFailed",
        CEv::Restore { .. } => "Restore",
        CEv::Shutdown { .. } => "Shutdown",
    }
}

/// Every coordinator event kind the model can deliver, and those it never
/// does by design (coverage gaps are reported against the first list).
pub const COORD_EVENT_KINDS: [&str; 17] = [
    "StartScheduler",
    "StopScheduler",
    "TaskFailed",
    "TaskRunning",
    "TimerFired(Periodic)",
    "TimerFired(Timeout)",
    "CheckpointIdAllocated(ok)",
    "CheckpointIdAllocated(err)",
    "Acknowledge",
    "Decline",
    "FinalizeDone(ok)",
    "FinalizeDone(err)",
    "StoreDone(ok)",
    "StoreDone(err)",
    "Shutdown",
    "MasterHooksDone",
    "Trigger",
];

/// Every task event kind the model can deliver.
pub const TASK_EVENT_KINDS: [&str; 11] = [
    "BarrierReceived",
    "TriggerCheckpoint",
    "CheckpointMail",
    "CancelMarker",
    "NotifyAborted",
    "NotifyComplete",
    "WriterCompleted",
    "WriterFailed",
    "AsyncPartCompleted",
    "AsyncPartFailed",
    "OperatorFailed",
];

fn applied_kind(a: &Applied) -> String {
    match a {
        Applied::SchedulerStarted => "SchedulerStarted".into(),
        Applied::SchedulerStopped { .. } => "SchedulerStopped".into(),
        Applied::AllocatingId { .. } => "AllocatingId".into(),
        Applied::Queued { reason, .. } => format!("Queued({reason:?})"),
        Applied::TriggerRejected { reason, .. } => format!("TriggerRejected({reason:?})"),
        Applied::PeriodicFired(inner) => format!("PeriodicFired/{}", applied_kind(inner)),
        Applied::CheckpointTriggered { .. } => "CheckpointTriggered".into(),
        Applied::RequestEnded { reason, .. } => format!("RequestEnded({reason:?})"),
        Applied::HooksDone { .. } => "HooksDone".into(),
        Applied::Acknowledged { remaining, .. } => {
            if *remaining == 0 {
                "Acknowledged(last)".into()
            } else {
                "Acknowledged(more)".into()
            }
        }
        Applied::Finalized { .. } => "Finalized".into(),
        Applied::Completed { .. } => "Completed".into(),
        Applied::Aborted { reason, .. } => format!("Aborted({reason:?})"),
        Applied::TaskUpdated { .. } => "TaskUpdated".into(),
        Applied::Restored { .. } => "Restored".into(),
        Applied::ShutDown => "ShutDown".into(),
    }
}

/// The coordinator outcome's kind, without ids (coverage).
#[must_use]
pub fn coord_outcome_kind(o: &coordinator::Outcome) -> String {
    match o {
        coordinator::Outcome::Applied(a) => format!("Applied::{}", applied_kind(a)),
        coordinator::Outcome::Ignored(i) => format!("Ignored::{i:?}"),
        coordinator::Outcome::Rejected(e) => {
            let d = format!("{e:?}");
            let name = d.split(['(', ' ', '{']).next().unwrap_or("").to_string();
            format!("Rejected::{name}")
        }
    }
}

impl Model for SysModel {
    type State = SysState;
    type Action = Action;

    fn init_states(&self) -> Vec<SysState> {
        vec![self.init_with_log().0]
    }

    fn actions(&self, s: &SysState, out: &mut Vec<Action>) {
        if s.violation.is_some() {
            return;
        }
        for (timer, _) in s.coord.timers() {
            match timer {
                Timer::Periodic => {
                    if s.triggers < self.cfg.checkpoints {
                        out.push(Action::Fire(*timer));
                    }
                }
                Timer::Timeout(_) => out.push(Action::Fire(*timer)),
            }
        }
        let budget = self.budget(s);
        let mut last = None;
        for io in &s.io {
            if last == Some(*io) {
                continue;
            }
            last = Some(*io);
            out.push(Action::Answer(*io, true));
            if budget && self.cfg.io_faults {
                out.push(Action::Answer(*io, false));
            }
        }
        for m in self.deliverable(&s.net) {
            out.push(Action::Deliver(m));
            if budget && self.cfg.network == Network::ReorderDupDrop {
                out.push(Action::Duplicate(m));
                out.push(Action::Drop(m));
            }
        }
        for (i, side) in s.tasks.iter().enumerate() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            for (up, q) in &side.inputs {
                match q.first() {
                    Some(Input::Barrier(_)) => out.push(Action::Netty(t, *up)),
                    Some(Input::Cancel(_)) => out.push(Action::Input(t, *up)),
                    None => {}
                }
            }
            if !side.mailbox.is_empty() {
                out.push(Action::Mailbox(t));
            }
            let faults = budget && self.cfg.task_faults;
            for cp in side.st.writer_in_progress() {
                out.push(Action::Writer(t, cp, true));
                if faults {
                    out.push(Action::Writer(t, cp, false));
                }
            }
            for cp in side.st.async_parts() {
                out.push(Action::Async(t, cp, true));
                if faults {
                    out.push(Action::Async(t, cp, false));
                }
            }
        }
        if self.cfg.shutdown && !s.coord.is_shutdown() && s.triggers >= self.cfg.checkpoints {
            out.push(Action::Shutdown);
        }
        if s.savepoints < self.cfg.savepoints {
            out.push(Action::Savepoint);
        }
        let may_fail = s.task_failures < self.cfg.task_failures && !s.coord.is_shutdown();
        for (i, side) in s.tasks.iter().enumerate() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            if side.is_down() {
                out.push(Action::RestartTask(t));
            } else if may_fail {
                out.push(Action::FailTask(t));
            }
        }
        if s.scheduler_stopped {
            out.push(Action::StartScheduler);
        } else if s.scheduler_stops < self.cfg.scheduler_restarts && !s.coord.is_shutdown() {
            out.push(Action::StopScheduler);
        }
    }

    fn next_state(&self, s: &SysState, a: Action) -> Option<SysState> {
        self.step(s, a, None)
    }

    fn format_action(&self, a: &Action) -> String {
        self.describe(a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut p = vec![
            Property::<Self>::always(props::NO_SPURIOUS_FAILURE, |_, s| {
                !violated(s, props::NO_SPURIOUS_FAILURE)
            }),
            Property::<Self>::always(props::COMPLETE_ALL_ACKS, |_, s| {
                !violated(s, props::COMPLETE_ALL_ACKS)
            }),
            Property::<Self>::always(props::COMPLETED_INCREASE, |_, s| {
                !violated(s, props::COMPLETED_INCREASE)
            }),
            Property::<Self>::always(props::PENDING_BOUNDED, |_, s| {
                !violated(s, props::PENDING_BOUNDED)
            }),
            Property::<Self>::always(props::NO_LEAKED_RESULT, |_, s| {
                !violated(s, props::NO_LEAKED_RESULT)
            }),
            Property::<Self>::always(props::HANDLES, |_, s| !violated(s, props::HANDLES)),
            Property::<Self>::always(props::NOTHING_AFTER_SHUTDOWN, |_, s| {
                !violated(s, props::NOTHING_AFTER_SHUTDOWN)
            }),
            Property::<Self>::always(props::OTHER, |_, s| !violated(s, props::OTHER)),
        ];
        if self.safety_only {
            return p;
        }
        p.extend([
            Property::<Self>::sometimes(props::S_COMPLETES, |_, s| {
                s.coord.latest_completed().is_some()
            }),
            Property::<Self>::sometimes(props::S_ABORT_THEN_COMPLETE, |_, s| s.abort_then_complete),
            Property::<Self>::sometimes(props::S_ABORT_RACE, |m, s| {
                // A downstream task (one that is not triggered) declined
                // because the abort overtook its checkpoint mail.
                s.net.iter().any(|x| {
                    matches!(
                        x,
                        Msg::Decline {
                            task,
                            reason: DeclineReason::AbortedByCoordinator,
                            ..
                        } if !m.settings.tasks_to_trigger.contains(task)
                    )
                })
            }),
            Property::<Self>::sometimes(props::S_TWO_COMPLETE, |_, s| {
                let latest = s.coord.latest_completed();
                s.tasks
                    .iter()
                    .any(|t| t.st.last_completed().is_some_and(|c| Some(c) < latest))
            }),
            Property::<Self>::sometimes(props::S_THROTTLED, |_, s| {
                s.coord.pending_count() >= s.coord.config().max_concurrent()
                    && s.coord.queued().next().is_some()
            }),
            Property::<Self>::sometimes(props::S_QUIET, |_, s| {
                s.violation.is_none()
                    && Self::quiet(s)
                    && s.tasks.iter().all(|t| t.st.last_executed().is_some())
            }),
            Property::<Self>::sometimes(props::S_DISCARD, |_, s| s.ledger.discarded() > 0),
            Property::<Self>::sometimes(props::S_AFTER_SHUTDOWN, |_, s| {
                s.coord.is_shutdown() && s.net.iter().any(Msg::to_coordinator)
            }),
        ]);
        if self.cfg.savepoints > 0 {
            p.push(Property::<Self>::sometimes(props::S_SAVEPOINT, |_, s| {
                s.coord.completed().any(|c| c.is_savepoint())
            }));
        }
        if self.cfg.task_failures > 0 {
            p.push(Property::<Self>::sometimes(props::S_FAILOVER, |_, s| {
                s.failover_complete
            }));
        }
        p.extend([Property::<Self>::eventually(props::E_QUIET, |m, s| {
            s.violation.is_some()
                || (Self::quiet(s)
                    && s.triggers >= m.cfg.checkpoints
                    && s.coord.pending_count() == 0
                    && s.coord.in_flight().is_none()
                    && s.coord.queued().next().is_none())
        })]);
        p
    }
}
