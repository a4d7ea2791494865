//! The neutral language both sides are fed: one sequence's configuration and
//! its events, in terms that mean the same thing to ckpt's coordinator and
//! to Flink's (through the harness protocol, `tests/flink/PROTOCOL.md`).
//!
//! Events are relative where an absolute value could go stale when the
//! shrinker removes earlier events: an ack names "the current attempt" or
//! "the attempt before it", never an attempt number, and time moves by a
//! duration.

use serde::{Deserialize, Serialize};

/// One sequence's job and checkpointing configuration, the same on both
/// sides. Every task is one job vertex of parallelism 1; every task waits
/// for the triggered ones (Flink's default edges), every task acknowledges
/// and is notified.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqConfig {
    /// Number of tasks (1..=64; the generator draws 1..=4).
    pub tasks: u32,
    /// The tasks the coordinator triggers (the graph's sources).
    pub trigger: Vec<u32>,
    /// Periodic interval in ms.
    pub interval: u64,
    /// Checkpoint timeout in ms.
    pub timeout: u64,
    /// Minimum pause between checkpoints in ms. Equal to `interval` in
    /// every sequence that starts the scheduler: Flink draws its first
    /// periodic delay at random from `[min_pause, interval]`, so only then is
    /// a periodic run reproducible.
    pub min_pause: u64,
    /// Most concurrent non-forced checkpoints.
    pub max_concurrent: u32,
    /// Tolerated consecutive counted failures.
    pub tolerable_failures: u32,
    /// Completed checkpoints retained.
    pub retained: u32,
    /// Master hooks (0 or 1): each checkpoint waits for `HookDone`.
    pub hooks: u32,
    /// Whether the generator may start the periodic scheduler (then
    /// `min_pause == interval`).
    pub scheduler: bool,
}

/// What a trigger asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerAsk {
    /// A user checkpoint; `forced` skips the concurrency and pause checks.
    Checkpoint {
        /// Skip the concurrency and pause checks.
        forced: bool,
    },
    /// An (asynchronous) savepoint to the sequence's directory.
    Savepoint,
    /// Stop-with-savepoint (FLIP-34): a synchronous savepoint (Flink:
    /// `triggerSynchronousSavepoint(terminate, …)`; ckpt:
    /// `TriggerKind::StopWithSavepoint { drain: terminate }`).
    StopWithSavepoint {
        /// Terminate (drain: advance to the end of event time) rather than
        /// suspend.
        terminate: bool,
    },
}

/// The decline reasons both sides know: ckpt's `DeclineReason`s with a
/// Flink `CheckpointFailureReason` (PROTOCOL.md's table; the harness maps
/// the names). `AbortedByCoordinator` and `WriteResultMissing` have no
/// Flink counterpart (a Flink task does not decline then) and are never
/// generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// `CHECKPOINT_DECLINED_TASK_NOT_READY`, not counted.
    TaskNotReady,
    /// `CHECKPOINT_DECLINED_TASK_CLOSING`, not counted.
    TaskClosing,
    /// `CHECKPOINT_DECLINED_SUBSUMED`, not counted.
    Subsumed,
    /// `CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER`, not counted.
    CancelledOnBarrier,
    /// `CHECKPOINT_ASYNC_EXCEPTION`, counted.
    WriterFailed,
    /// `CHECKPOINT_ASYNC_EXCEPTION`, counted.
    SnapshotFailed,
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 6] = [
        Reason::TaskNotReady,
        Reason::TaskClosing,
        Reason::Subsumed,
        Reason::CancelledOnBarrier,
        Reason::WriterFailed,
        Reason::SnapshotFailed,
    ];

    /// The name the harness takes (ckpt's `DeclineReason` name).
    pub fn name(self) -> &'static str {
        match self {
            Reason::TaskNotReady => "TaskNotReady",
            Reason::TaskClosing => "TaskClosing",
            Reason::Subsumed => "Subsumed",
            Reason::CancelledOnBarrier => "CancelledOnBarrier",
            Reason::WriterFailed => "WriterFailed",
            Reason::SnapshotFailed => "SnapshotFailed",
        }
    }
}

/// The job status a shutdown passes on (the sequence's retention policy,
/// `RETAIN_ON_CANCELLATION`, keeps the store's checkpoints for all three,
/// so Flink's store discards nothing at shutdown, as ckpt leaves the store
/// to its host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// `CANCELED`.
    Canceled,
    /// `FAILED`.
    Failed,
    /// `SUSPENDED`.
    Suspended,
}

/// One step of a sequence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A user trigger (Flink: `triggerCheckpoint` / `triggerSavepoint`).
    Trigger(TriggerAsk),
    /// Time moves on by `ms`; every timer due on the way fires at its due
    /// time (periodic triggers, timeouts).
    Advance {
        /// How far.
        ms: u64,
    },
    /// A task acknowledges a checkpoint.
    Ack {
        /// The task.
        task: u32,
        /// The checkpoint id.
        checkpoint: u64,
        /// The state handle label it carries.
        state: Option<u64>,
        /// From the attempt before the current one (a stale ack).
        stale: bool,
    },
    /// A task declines a checkpoint.
    Decline {
        /// The task.
        task: u32,
        /// The checkpoint id.
        checkpoint: u64,
        /// Why.
        reason: Reason,
        /// From the attempt before the current one.
        stale: bool,
    },
    /// The current attempt of a task fails. `legacy`: the coordinator hears
    /// of it (Flink's `failUnacknowledgedPendingCheckpointsFor`, legacy
    /// scheduling, 1.11 and 1.20); otherwise Flink's default scheduler,
    /// which tells the coordinator nothing until it restarts the job.
    TaskFailed {
        /// The task.
        task: u32,
        /// Legacy scheduling.
        legacy: bool,
    },
    /// The current attempt of a task finishes (its input ended and it ran
    /// to its end: Flink's `Execution.markFinished`, FLIP-147).
    TaskFinished {
        /// The task.
        task: u32,
    },
    /// A new attempt of a task runs (the old one fails first if it was
    /// still running).
    TaskRunning {
        /// The task.
        task: u32,
    },
    /// The scheduler restarts every task: the running attempts fail, the
    /// pending checkpoints are aborted, the latest checkpoint is restored,
    /// new attempts run.
    Restart,
    /// `stopCheckpointScheduler`.
    StopScheduler,
    /// `startCheckpointScheduler`.
    StartScheduler,
    /// The coordinator shuts down.
    Shutdown(Status),
    /// The next write to the completed store fails.
    FailNextStore,
    /// The next metadata write (finalize) fails.
    FailNextFinalize,
    /// The next id allocation fails.
    FailNextId,
    /// The master hooks of a checkpoint answer.
    HookDone {
        /// The checkpoint.
        checkpoint: u64,
        /// Success or failure.
        ok: bool,
    },
}

impl Event {
    /// A short name of the event's kind (summaries, signatures).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Trigger(TriggerAsk::Checkpoint { forced: false }) => "trigger",
            Event::Trigger(TriggerAsk::Checkpoint { forced: true }) => "trigger-forced",
            Event::Trigger(TriggerAsk::Savepoint) => "savepoint",
            Event::Trigger(TriggerAsk::StopWithSavepoint { terminate: false }) => "stop-suspend",
            Event::Trigger(TriggerAsk::StopWithSavepoint { terminate: true }) => "stop-terminate",
            Event::Advance { .. } => "advance",
            Event::Ack { .. } => "ack",
            Event::Decline { .. } => "decline",
            Event::TaskFailed { .. } => "task-failed",
            Event::TaskFinished { .. } => "task-finished",
            Event::TaskRunning { .. } => "task-running",
            Event::Restart => "restart",
            Event::StopScheduler => "stop-scheduler",
            Event::StartScheduler => "start-scheduler",
            Event::Shutdown(_) => "shutdown",
            Event::FailNextStore => "fail-next-store",
            Event::FailNextFinalize => "fail-next-finalize",
            Event::FailNextId => "fail-next-id",
            Event::HookDone { .. } => "hook-done",
        }
    }
}

/// A generated sequence: configuration and events, and the seed that made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequence {
    /// The per-sequence seed (`--seed` plus the sequence's index).
    pub seed: u64,
    /// The configuration.
    pub config: SeqConfig,
    /// The events, in order (an implicit end follows: a shutdown with
    /// `CANCELED` unless one came).
    pub events: Vec<Event>,
}
