//! The async host: the two reducers embedded in a tokio runtime, with a
//! durable [`crate::host::store::FileStore`] answering the
//! coordinator's I/O and user [`Operator`]s running in the tasks.
//!
//! # Shape
//!
//! [`Job::start`] asks every operator how far its output is already
//! committed ([`Operator::committed_epoch`]), opens the store as a new
//! leader (it claims the generation above the newest and makes every store
//! write for it, so a deposed host still running is refused) and recovers
//! (see [`crate::host::store`]: a restore behind the committed output is
//! refused before anything is written; the state files of the checkpoint to
//! restore are checked with [`statefile::decode_for`]), hands the recovered
//! list to a fresh coordinator as it is (`Recover`, then
//! `Restore { Latest }`), starts one attempt of every task restored from
//! the latest checkpoint, and starts the periodic scheduler. Finalize
//! records each checkpoint's kind (savepoint or not) and trigger time from
//! the coordinator's pending checkpoint.
//!
//! * **Coordinator driver** (one tokio task): an event channel in (acks and
//!   declines from tasks, user triggers, task failures, shutdown); for each
//!   event it applies [`CoordinatorState::apply`] and carries out the
//!   effects in order: timers on tokio's clock (one table keyed by
//!   [`Timer`](crate::coordinator::Timer), re-arming replaces), id
//!   allocation from the durable counter, master hooks, finalize, store,
//!   discard (through the store's guard), RPC to tasks. Answers to its own I/O are queued and applied before the next
//!   message, so a checkpoint that has all its acks completes (finalize,
//!   store, notify) without a failover slipping in between.
//! * **Task driver** ([`task`](self) module docs): per attempt, netty (one
//!   per input channel), rpc, task-thread, writer and async-part roles as
//!   tokio tasks around one [`TaskState`](crate::task::TaskState), a FIFO
//!   mailbox that every coordinator notification goes through, per-link
//!   FIFO lossless data channels. A task may read from several upstream
//!   tasks (fan-in, the edges a directed acyclic graph: [`inputs_of`]).
//!   Every checkpoint is unaligned (there is no aligned mode): a task's
//!   channel state is what was queued at the checkpoint's first barrier
//!   plus every record that arrives on an input before that input's own
//!   barrier; the writer completes it once the barrier arrived on every
//!   input, and the task acknowledges after that. On restore those records
//!   are replayed before any new input.
//! * **Failover** (global, like a pipelined region spanning the job): a
//!   task failure ([`TaskEffect::Fail`](crate::task::TaskEffect::Fail), an
//!   operator error, a broken data connection) or
//!   [`JobCommand::Fail`](crate::coordinator::JobCommand::Fail) stops every
//!   attempt, reports `TaskFailed` for each, restores the latest completed
//!   checkpoint (`Restore { Latest }`), and starts every task under a new
//!   attempt number (`TaskRunning`).
//!   A failure report from an attempt that is no longer current is ignored.
//! * **The RPC network** ([`FaultPlan`]) may delay and lose messages
//!   (seeded); a lost RPC becomes a timeout or a decline, never a task
//!   failure.
//!
//! Every event can be checked against [`crate::invariants`]
//! ([`JobOptions::check_invariants`]) and recorded as a
//! [`crate::trace`] (task attempts as machines `task * 100_000 + attempt`),
//! which `ckpt-model replay` accepts.
//!
//! # Bounds
//!
//! The coordinator inbox ([`COORDINATOR_INBOX_MAX`]), each task's RPC inbox
//! ([`TASK_INBOX_MAX`]), mailbox ([`MAILBOX_MAX`]) and input queue
//! ([`INPUT_MAX`]) and each data channel ([`DATA_CHANNEL_MAX`]) are bounded:
//! a full RPC inbox loses the RPC (as the network may), the others apply
//! backpressure. The writer's and the async parts' command queues hold at
//! most one entry per started checkpoint; failure reports at most one per
//! attempt; RPCs delayed by a [`FaultPlan`] wait in one timer task each.
//! The channel state a task with several inputs captures between a
//! checkpoint's first and last barrier is held in memory until the barrier
//! of that checkpoint (or a newer one) arrived on every input, or the
//! checkpoint is aborted at the task: not bounded, it is as much as the
//! trailing inputs deliver meanwhile.
//! A recorded trace grows with the run (it is meant for tests).
//!
//! Store I/O (small metadata files) is made by the coordinator driver,
//! which waits for it before it reads the next event; state files are
//! written by the tasks' async parts; both through the job's `Fs` (the one
//! given to [`Job::start`]). Operators are handed no file system: one
//! with output of its own writes through what it was built with
//! ([`Operator`]), so the job's `Fs` holds checkpoints only. A bare
//! `StdFs` blocks the tokio worker for the length of each call; wrapped in
//! `host::fs::OffWorkerFs` (as the pipeline example and `ckpt-node` do),
//! each call on a multi-thread runtime leaves the worker, so its other
//! tasks keep running. Under a simulator, [`JobOptions::io_latency_ms`]
//! makes every I/O take simulated time so crashes land in the middle of I/O
//! sequences.
//!
//! # Where things are
//!
//! This module holds the job's public surface ([`Job::start`], [`JobSpec`],
//! [`JobOptions`], [`JobError`], [`JobHandle`]). The user code's traits and
//! data types are in `operator`, the counters and the trace recorder in
//! `stats`, what the roles share in `ctx`, the coordinator driver (effects,
//! failover, the end of the job) in `driver`, the task attempts' roles in
//! `task`, the attempts of every task with their data channels
//! ([`TaskGroup`], also usable without this module's coordinator, by a
//! process whose coordinator is elsewhere) in `group`, the faulty RPC
//! network in `net`, and the state file format in [`statefile`].

mod ctx;
mod driver;
mod group;
mod net;
mod operator;
pub mod statefile;
mod stats;
mod task;

pub use ctx::trace_key;
pub use group::{inputs_of, GroupSpec, Outbound, TaskGroup, TaskOutbox};
pub use net::{FaultPlan, SplitMix64, COORDINATOR_INBOX_MAX, TASK_INBOX_MAX};
pub use operator::{
    DataMsg, MasterHook, Operator, OperatorError, OperatorFactory, Record, SourcePoll,
};
pub use stats::{HostStats, LiveStats};
pub use task::{DATA_CHANNEL_MAX, INPUT_MAX, MAILBOX_MAX, SOURCE_BATCH_MAX};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use thiserror::Error;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::coordinator::{
    CoordinatorEvent, CoordinatorSettings, CoordinatorState, JobStatus, TriggerKind,
};
use crate::host::fs::Fs;
use crate::host::store::{state_path, FileStore, OpenOptions, Recovery, StoreError};
use crate::invariants::coordinator::HandleLedger;
use crate::task::TaskConfig;
use crate::trace::Trace;
use crate::types::{AttemptNo, CheckpointId, StateHandle, TaskId};

use ctx::Ctx;
use driver::{state_check, Driver};
use net::ToCoordinator;
use stats::lock;
use stats::Recorder;

/// Host options.
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Check every step of every machine against [`crate::invariants`];
    /// violations are collected in [`HostStats::violations`].
    pub check_invariants: bool,
    /// Record every event as a trace ([`JobHandle::trace`]).
    pub record_trace: bool,
    /// RPC faults.
    pub faults: FaultPlan,
    /// Simulated latency of each I/O sequence, in ms (0 in production).
    pub io_latency_ms: u64,
    /// Print failovers and I/O errors to stderr.
    pub verbose: bool,
    /// Checker-only, a legacy knob (as `Semantics::Legacy` is for the
    /// reducers): the channel-state writer of a task with several inputs
    /// completes at the checkpoint's first barrier with only the records
    /// queued then, as this host did before it supported fan-in; records
    /// that arrive on another input after that barrier and before that
    /// input's own barrier are not captured, so a restore loses them
    /// (the operator's snapshot was taken before it processed them, and
    /// their source was restored past them). It exists so that tests can
    /// show the output check catches that; a host keeps it off (the
    /// default). Tasks with one input behave the same either way.
    pub legacy_first_barrier_channel_state: bool,
}

/// A job: coordinator settings, topology and operators.
#[derive(Clone)]
pub struct JobSpec {
    /// The coordinator's settings (task lists, interval, timeout, retained).
    pub settings: CoordinatorSettings,
    /// Number of tasks (ids `0..tasks`).
    pub tasks: u32,
    /// Data channels `(from, to)`: a directed acyclic graph
    /// ([`inputs_of`]); a task may read from several upstream tasks
    /// (fan-in, unaligned: see the task driver in the module docs).
    pub edges: Vec<(TaskId, TaskId)>,
    /// The task side's configuration.
    pub task_config: TaskConfig,
    /// The operators.
    pub operators: OperatorFactory,
    /// Master hooks (as many as `settings.master_hooks`).
    pub hooks: Vec<MasterHook>,
    /// Host options.
    pub options: JobOptions,
}

impl fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobSpec")
            .field("settings", &self.settings)
            .field("tasks", &self.tasks)
            .field("edges", &self.edges)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Why a job could not start, or a request to a running job failed.
#[derive(Debug, Error)]
pub enum JobError {
    /// The coordinator settings are invalid.
    #[error("invalid coordinator settings: {0}")]
    Config(#[from] crate::coordinator::ConfigError),
    /// The topology is invalid.
    #[error("invalid topology: {0}")]
    Topology(String),
    /// The store failed to open or recover.
    #[error("checkpoint store: {0}")]
    Store(#[from] StoreError),
    /// A state file of the restored checkpoint is unreadable or invalid.
    #[error("state file {} of checkpoint {checkpoint}: {why}", state_path(*handle))]
    State {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The handle.
        handle: StateHandle,
        /// Why.
        why: String,
    },
    /// The coordinator refused what the store recovered.
    #[error("the coordinator refused the recovered checkpoints: {0}")]
    Recover(String),
    /// An operator could not say how far its output is committed.
    #[error("task {task} cannot tell its committed output: {why}")]
    CommittedEpoch {
        /// The task.
        task: TaskId,
        /// Why.
        why: String,
    },
    /// An operator refused its restored state.
    #[error("task {task} failed to start: {why}")]
    TaskStart {
        /// The task.
        task: TaskId,
        /// Why.
        why: String,
    },
    /// The job is gone (its driver stopped).
    #[error("the job has stopped")]
    Stopped,
    /// The coordinator's inbox is full ([`COORDINATOR_INBOX_MAX`] messages
    /// waiting): the request was not made, and the job runs on; ask again
    /// later.
    #[error("the coordinator's inbox is full; the request was not made")]
    InboxFull,
}

/// A running job.
pub struct JobHandle {
    ctx: Arc<Ctx>,
    recovery: Recovery,
    driver: Option<tokio::task::JoinHandle<()>>,
}

impl fmt::Debug for JobHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobHandle")
            .field("recovery", &self.recovery)
            .finish_non_exhaustive()
    }
}

/// Starts jobs.
#[derive(Debug)]
pub struct Job;

impl Job {
    /// Opens the store on `fs`, recovers, restores the latest checkpoint and
    /// starts the job; the tasks write and read their state files through
    /// `fs` too. Must be called inside a tokio runtime.
    pub async fn start(spec: JobSpec, fs: Arc<dyn Fs>) -> Result<JobHandle, JobError> {
        let state = CoordinatorState::from_settings(spec.settings.clone())?;
        let n = spec.tasks as usize;
        group::inputs_of(spec.tasks, &spec.edges)?;
        let retained = usize::try_from(spec.settings.retained_max.max(1)).unwrap_or(1);
        // How far an exactly-once sink has committed its output: recovery
        // must not restore anything older.
        let mut committed: Option<CheckpointId> = None;
        for t in 0..spec.tasks {
            let task = TaskId(t);
            let epoch = (spec.operators)(task)
                .committed_epoch()
                .map_err(|e| JobError::CommittedEpoch { task, why: e.0 })?;
            committed = committed.max(epoch);
        }
        let generation = FileStore::next_generation(&*fs)?;
        let (store, recovery) = FileStore::open(
            Arc::clone(&fs),
            OpenOptions {
                job: spec.settings.job,
                retained_max: retained,
                generation,
                committed,
                check_state: Some(state_check()),
            },
        )?;
        let (tx, rx) = mpsc::channel(COORDINATOR_INBOX_MAX);
        let (fail_tx, fail_rx) = mpsc::unbounded_channel();
        let net = net::Net::new(spec.options.faults, n, tx.clone());
        let recorder = spec.options.record_trace.then(|| {
            Arc::new(Mutex::new(Recorder {
                trace: Trace {
                    coordinator: Some(spec.settings.clone()),
                    tasks: Vec::new(),
                    steps: Vec::new(),
                },
            }))
        });
        let ctx = Arc::new(Ctx {
            job: spec.settings.job,
            options: spec.options.clone(),
            fs,
            net,
            start: Instant::now(),
            stats: Arc::new(Mutex::new(HostStats {
                store_latest: store.holdings().latest(),
                ..HostStats::default()
            })),
            coordinator_events: AtomicU64::new(0),
            task_events: AtomicU64::new(0),
            source_batches: AtomicU64::new(0),
            late_channel_records: AtomicU64::new(0),
            recorder,
            to_coordinator: tx,
            failures: fail_tx,
            completed: watch::Sender::new(0),
        });
        let group = TaskGroup::new(
            Arc::clone(&ctx),
            GroupSpec {
                tasks: spec.tasks,
                edges: spec.edges.clone(),
                task_config: spec.task_config.clone(),
                operators: Arc::clone(&spec.operators),
            },
        )?;
        let mut d = Driver {
            ctx: Arc::clone(&ctx),
            ledger: spec.options.check_invariants.then(HandleLedger::new),
            spec,
            state,
            store,
            timers: BTreeMap::new(),
            answers: std::collections::VecDeque::new(),
            group,
            next_attempt: vec![AttemptNo(0); n],
            restore_target: None,
            fail_job: false,
            stop: None,
            generation,
            halted: None,
        };
        d.recover(&recovery)?;
        d.ctx.stats().restored_at_start = d.restore_target.as_ref().map(|(id, _)| *id);
        d.ctx.stats().last_completed = d.restore_target.as_ref().map(|(id, _)| *id);
        d.start_attempts()?;
        d.apply(CoordinatorEvent::StartScheduler);
        let driver = tokio::spawn(d.run(rx, fail_rx));
        Ok(JobHandle {
            ctx,
            recovery,
            driver: Some(driver),
        })
    }
}

impl JobHandle {
    /// What the store found and did on start.
    #[must_use]
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// A copy of the counters.
    #[must_use]
    pub fn stats(&self) -> HostStats {
        let mut s = self.ctx.task_side_stats();
        s.coordinator_events = self.ctx.coordinator_events.load(Ordering::Relaxed);
        s
    }

    /// Watches the number of checkpoints completed in this run.
    #[must_use]
    pub fn completions(&self) -> watch::Receiver<u64> {
        self.ctx.completed.subscribe()
    }

    /// A live view of the counters and the trace.
    #[must_use]
    pub fn live_stats(&self) -> LiveStats {
        LiveStats {
            stats: Arc::clone(&self.ctx.stats),
            recorder: self.ctx.recorder.clone(),
        }
    }

    /// The recorded trace (empty unless [`JobOptions::record_trace`]).
    #[must_use]
    pub fn trace(&self) -> Trace {
        self.ctx
            .recorder
            .as_ref()
            .map(|r| lock(r).trace.clone())
            .unwrap_or_default()
    }

    /// The job's file system: the store and the state files (an operator's
    /// own output is wherever that operator writes it).
    #[must_use]
    pub fn fs(&self) -> Arc<dyn Fs> {
        Arc::clone(&self.ctx.fs)
    }

    /// Asks for a checkpoint or savepoint (the answer shows in the stats).
    /// [`JobError::InboxFull`] when the coordinator's inbox is full (the
    /// request is not made; the job runs on), [`JobError::Stopped`] when the
    /// job is gone.
    pub fn trigger(&self, kind: TriggerKind) -> Result<(), JobError> {
        self.ctx
            .to_coordinator
            .try_send(ToCoordinator::Rpc(CoordinatorEvent::Trigger { kind }))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => JobError::InboxFull,
                mpsc::error::TrySendError::Closed(_) => JobError::Stopped,
            })
    }

    /// Disposes of stored savepoint `savepoint`, as only its user does:
    /// the store removes it first (metadata, then the state files no other
    /// stored checkpoint references: [`FileStore::dispose_savepoint`]), then
    /// the coordinator forgets it (`DisposeSavepoint`). Returns the state
    /// files the store deleted. Refused (nothing changed) for a checkpoint
    /// that is not a stored savepoint, or that is the store's latest.
    pub async fn dispose_savepoint(
        &self,
        savepoint: CheckpointId,
    ) -> Result<Vec<StateHandle>, JobError> {
        let (tx, rx) = oneshot::channel();
        self.ctx
            .to_coordinator
            .send(ToCoordinator::DisposeSavepoint(savepoint, tx))
            .await
            .map_err(|_| JobError::Stopped)?;
        rx.await
            .map_err(|_| JobError::Stopped)?
            .map_err(JobError::Store)
    }

    /// Shuts the job down (`Shutdown { status }`), stops every task and
    /// waits for the driver. A driver that already stopped (it halted:
    /// [`HostStats::halted`]) applies nothing more; the stats say why.
    pub async fn shutdown(mut self, status: JobStatus) -> HostStats {
        let (tx, rx) = oneshot::channel();
        if self
            .ctx
            .to_coordinator
            .send(ToCoordinator::Shutdown(status, tx))
            .await
            .is_ok()
        {
            let _ = rx.await;
        }
        if let Some(d) = self.driver.take() {
            let _ = d.await;
        }
        self.stats()
    }
}

impl Drop for JobHandle {
    fn drop(&mut self) {
        if let Some(d) = self.driver.take() {
            d.abort();
        }
    }
}
