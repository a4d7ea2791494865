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
//!   [`Timer`], re-arming replaces), id allocation from the durable counter,
//!   master hooks, finalize, store, discard (through the store's guard), RPC
//!   to tasks. Answers to its own I/O are queued and applied before the next
//!   message, so a checkpoint that has all its acks completes (finalize,
//!   store, notify) without a failover slipping in between.
//! * **Task driver** ([`task`](self) module docs): per attempt, netty, rpc,
//!   task-thread, writer and async-part roles as tokio tasks around one
//!   [`TaskState`](crate::task::TaskState), a FIFO mailbox that every
//!   coordinator notification goes through, per-link FIFO lossless data
//!   channels.
//! * **Failover** (global, like a pipelined region spanning the job): a
//!   task failure (`FailTask`, an operator error, a broken data
//!   connection) or `FailJob` stops every attempt, reports `TaskFailed` for
//!   each, restores the latest completed checkpoint (`Restore { Latest }`),
//!   and starts every task under a new attempt number (`TaskRunning`).
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
//! A recorded trace grows with the run (it is meant for tests).
//!
//! Store I/O is done inline on the coordinator driver (small metadata
//! files); state files are written by the tasks' async parts. Under a
//! simulator, [`JobOptions::io_latency_ms`] makes every I/O take simulated
//! time so crashes land in the middle of I/O sequences.

mod net;
pub mod statefile;
mod task;

pub use net::{FaultPlan, SplitMix64, COORDINATOR_INBOX_MAX, TASK_INBOX_MAX};
pub use task::{DATA_CHANNEL_MAX, INPUT_MAX, MAILBOX_MAX, SOURCE_BATCH_MAX};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use thiserror::Error;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, IoAnswer,
    IoRequest, JobCommand, JobStatus, Outcome as COutcome, Report, RestoreSource, Timer,
    TriggerKind,
};
use crate::host::fs::Fs;
use crate::host::store::{
    read_state, state_path, Discarded, FileStore, OpenOptions, Recovery, StateCheck, StoreError,
    StoreStats,
};
use crate::invariants::coordinator::{check_all as check_coordinator, HandleLedger};

use crate::task::TaskConfig;
use crate::trace::{Trace, TraceLine};
use crate::types::{
    AttemptNo, CheckpointId, Generation, IoFailure, JobId, Millis, StateHandle, TaskId,
};

use statefile::TaskSnapshot;
use task::{Attempt, AttemptSpec};

/// One record flowing between tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Record {
    /// The record's number (sources number their records).
    pub id: u64,
    /// Its key.
    pub key: u64,
    /// Its value.
    pub value: u64,
}

impl Record {
    /// Appends the 24-byte little-endian encoding.
    pub fn encode_into(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(&self.id.to_le_bytes());
        b.extend_from_slice(&self.key.to_le_bytes());
        b.extend_from_slice(&self.value.to_le_bytes());
    }
}

/// A message on a data channel between two tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataMsg {
    /// Records, in order.
    Records(Vec<Record>),
    /// A checkpoint barrier.
    Barrier(CheckpointId),
    /// A cancel-checkpoint marker.
    Cancel(CheckpointId),
}

/// What a source's poll produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Records were appended to the output.
    Emitted,
    /// Nothing now; poll again after this long (or when a mail arrives).
    Idle(Duration),
    /// The source is finished for good.
    Exhausted,
}

/// A failure of user code; it fails the task (a genuine failure).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("operator failed: {0}")]
pub struct OperatorError(pub String);

/// User code of one task. All methods run on the task's task thread.
pub trait Operator: Send + 'static {
    /// Whether this is a source ([`Operator::poll_source`] is called).
    fn is_source(&self) -> bool {
        false
    }
    /// A source's turn: append up to `max` records to `out`.
    fn poll_source(
        &mut self,
        _max: usize,
        _out: &mut Vec<Record>,
    ) -> Result<SourcePoll, OperatorError> {
        Ok(SourcePoll::Exhausted)
    }
    /// Processes one input record, appending outputs to `out`.
    fn process(&mut self, record: Record, out: &mut Vec<Record>) -> Result<(), OperatorError>;
    /// The synchronous part of a checkpoint: the operator's state as bytes
    /// (a two-phase-commit sink pre-commits here).
    fn snapshot(&mut self, checkpoint: CheckpointId, fs: &dyn Fs)
        -> Result<Vec<u8>, OperatorError>;
    /// Called once before anything else: the restored checkpoint and this
    /// task's snapshot in it (`None`, `None` for a fresh start).
    fn restore(
        &mut self,
        checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError>;
    /// The checkpoint completed (a two-phase-commit sink commits).
    fn notify_complete(
        &mut self,
        checkpoint: CheckpointId,
        fs: &dyn Fs,
    ) -> Result<(), OperatorError>;
    /// The checkpoint was aborted.
    fn notify_aborted(&mut self, _checkpoint: CheckpointId) {}
    /// An exactly-once sink's answer to "how far is your output already
    /// committed?": the newest checkpoint whose output it has committed
    /// externally (read from `fs` or the external system), `None` when
    /// nothing is committed or the operator commits nothing. [`Job::start`]
    /// asks every task's operator before it recovers and refuses to restore
    /// an older checkpoint (that would commit the same output again). An
    /// operator that wraps another must forward this.
    fn committed_epoch(&mut self, _fs: &dyn Fs) -> Result<Option<CheckpointId>, OperatorError> {
        Ok(None)
    }
}

/// Builds the operator of one task: called for every attempt, and once per
/// task when the job starts, to ask [`Operator::committed_epoch`] before
/// recovery.
pub type OperatorFactory = Arc<dyn Fn(TaskId) -> Box<dyn Operator> + Send + Sync>;

/// A master hook (run for `TriggerMasterHooks`).
pub type MasterHook = Arc<dyn Fn(CheckpointId) -> Result<(), String> + Send + Sync>;

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
}

/// A job: coordinator settings, topology and operators.
#[derive(Clone)]
pub struct JobSpec {
    /// The coordinator's settings (task lists, interval, timeout, retained).
    pub settings: CoordinatorSettings,
    /// Number of tasks (ids `0..tasks`).
    pub tasks: u32,
    /// Data channels `(from, to)`; each task has at most one upstream.
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

/// Why a job could not start.
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
}

/// What the host did, for progress lines, tests and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Events applied to the coordinator.
    pub coordinator_events: u64,
    /// Events applied to task reducers.
    pub task_events: u64,
    /// Checkpoints completed in this run.
    pub completed: u64,
    /// The latest completed (or restored) checkpoint.
    pub last_completed: Option<CheckpointId>,
    /// Checkpoints aborted in this run.
    pub aborted: u64,
    /// Global failovers.
    pub failovers: u64,
    /// Genuine task failures (operator errors, broken connections).
    pub genuine_failures: u64,
    /// Task failures that were not genuine (must stay 0 with fixed semantics).
    pub spurious_failures: u64,
    /// RPCs lost to the fault plan.
    pub rpc_dropped_fault: u64,
    /// RPCs lost to a full inbox.
    pub rpc_dropped_full: u64,
    /// RPCs for an attempt that is no longer current.
    pub rpc_dropped_stale: u64,
    /// Source batches emitted.
    pub source_batches: u64,
    /// Invariant violations and host contract violations, in order.
    pub violations: Vec<String>,
    /// The store's counters (guard refusals among them).
    pub store: StoreStats,
    /// The checkpoint restored at start, if any.
    pub restored_at_start: Option<CheckpointId>,
    /// Failovers whose restore-latest was not the store's latest: must stay 0.
    pub store_disagreements: u64,
    /// The latest checkpoint the store has committed, updated in the same
    /// step as the commit (so it is exact at any crash point).
    pub store_latest: Option<CheckpointId>,
    /// The stop-with-savepoint the job ended on, if it did.
    pub stopped_with: Option<CheckpointId>,
}

/// A live view of a job's counters and trace that stays readable after the
/// job (or its runtime) is gone, e.g. after a simulated crash.
#[derive(Clone)]
pub struct LiveStats {
    stats: Arc<Mutex<HostStats>>,
    recorder: Option<Arc<Mutex<Recorder>>>,
}

impl fmt::Debug for LiveStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveStats").finish_non_exhaustive()
    }
}

impl LiveStats {
    /// The counters kept under the stats lock (the event counters of
    /// [`JobHandle::stats`] are not among them).
    #[must_use]
    pub fn snapshot(&self) -> HostStats {
        lock(&self.stats).clone()
    }
    /// The trace recorded so far (empty unless [`JobOptions::record_trace`]).
    #[must_use]
    pub fn trace(&self) -> Trace {
        self.recorder
            .as_ref()
            .map(|r| lock(r).trace.clone())
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Recorder {
    trace: Trace,
}

/// What the roles share.
pub(crate) struct Ctx {
    job: JobId,
    options: JobOptions,
    fs: Arc<dyn Fs>,
    net: Arc<net::Net>,
    start: Instant,
    stats: Arc<Mutex<HostStats>>,
    coordinator_events: AtomicU64,
    task_events: AtomicU64,
    source_batches: AtomicU64,
    recorder: Option<Arc<Mutex<Recorder>>>,
    to_coordinator: mpsc::Sender<ToCoordinator>,
    failures: mpsc::UnboundedSender<(TaskId, AttemptNo)>,
    completed: watch::Sender<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Ctx {
    fn now(&self) -> Millis {
        Millis(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }
    fn stats(&self) -> MutexGuard<'_, HostStats> {
        lock(&self.stats)
    }
    fn violation(&self, v: String) {
        if self.options.verbose {
            eprintln!("ckpt host: VIOLATION {v}");
        }
        self.stats().violations.push(v);
    }
    fn log(&self, line: String) {
        if self.options.verbose {
            eprintln!("ckpt host: {line}");
        }
    }
    fn count_task_event(&self) {
        self.task_events.fetch_add(1, Ordering::Relaxed);
    }
    fn source_emitted(&self) {
        self.source_batches.fetch_add(1, Ordering::Relaxed);
    }
    async fn io_pause(&self) {
        if self.options.io_latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.options.io_latency_ms)).await;
        }
    }
    fn declare_task(&self, task: TaskId, attempt: AttemptNo, config: &TaskConfig) {
        if let Some(r) = &self.recorder {
            lock(r)
                .trace
                .tasks
                .push((trace_key(task, attempt), config.clone()));
        }
    }
    fn record_task(
        &self,
        task: TaskId,
        attempt: AttemptNo,
        now: Millis,
        event: &crate::task::TaskEvent,
    ) {
        if let Some(r) = &self.recorder {
            lock(r).trace.steps.push(TraceLine::Task {
                now,
                task: trace_key(task, attempt),
                event: event.clone(),
            });
        }
    }
    fn record_coordinator(&self, now: Millis, event: &CoordinatorEvent) {
        if let Some(r) = &self.recorder {
            lock(r).trace.steps.push(TraceLine::Coordinator {
                now,
                event: event.clone(),
            });
        }
    }
    fn task_failed(&self, task: TaskId, attempt: AttemptNo, genuine: bool) {
        {
            let mut s = self.stats();
            if genuine {
                s.genuine_failures += 1;
            } else {
                s.spurious_failures += 1;
            }
        }
        let _ = self.failures.send((task, attempt));
    }
    fn delete_unacked_state(&self, handle: StateHandle) {
        task::delete_unacked(&*self.fs, handle);
    }
}

/// The trace key of a task attempt (as the system stories key them).
#[must_use]
pub fn trace_key(task: TaskId, attempt: AttemptNo) -> TaskId {
    TaskId(task.0.saturating_mul(100_000).saturating_add(attempt.0))
}

/// Messages to the coordinator driver.
pub(crate) enum ToCoordinator {
    /// An RPC from a task (ack, decline) or a user request.
    Rpc(CoordinatorEvent),
    /// Stop: shut the coordinator down with this status and stop every task.
    Shutdown(JobStatus, oneshot::Sender<()>),
    /// The user disposes of a savepoint: the store first, then the
    /// coordinator (`DisposeSavepoint`).
    DisposeSavepoint(
        CheckpointId,
        oneshot::Sender<Result<Vec<StateHandle>, StoreError>>,
    ),
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

struct Driver {
    ctx: Arc<Ctx>,
    spec: JobSpec,
    state: CoordinatorState,
    store: FileStore,
    ledger: Option<HandleLedger>,
    timers: BTreeMap<Timer, Millis>,
    answers: std::collections::VecDeque<CoordinatorEvent>,
    attempts: Vec<Option<Attempt>>,
    next_attempt: Vec<AttemptNo>,
    restore_target: Option<(CheckpointId, Vec<StateHandle>)>,
    fail_job: bool,
    /// The stop-with-savepoint committed: the job ends on it.
    stop: Option<CheckpointId>,
    /// The leader generation this driver claimed; every store write names it.
    generation: Generation,
}

/// The store's check of the state files of the checkpoint to restore.
fn state_check() -> StateCheck {
    Arc::new(|checkpoint, handle, bytes| {
        statefile::decode_for(checkpoint, handle, bytes).map(|_| ())
    })
}

impl Job {
    /// Opens the store on `fs`, recovers, restores the latest checkpoint and
    /// starts the job. Must be called inside a tokio runtime.
    pub async fn start(spec: JobSpec, fs: Arc<dyn Fs>) -> Result<JobHandle, JobError> {
        let state = CoordinatorState::from_settings(spec.settings.clone())?;
        let n = spec.tasks as usize;
        let mut upstream = vec![None; n];
        for (from, to) in &spec.edges {
            if from.0 >= spec.tasks || to.0 >= spec.tasks || from == to {
                return Err(JobError::Topology(format!("bad edge {from} -> {to}")));
            }
            match upstream.get_mut(to.0 as usize) {
                Some(slot @ None) => *slot = Some(*from),
                Some(Some(_)) | None => {
                    return Err(JobError::Topology(format!(
                        "task {to} has more than one upstream (fan-in is not supported)"
                    )))
                }
            }
        }
        let retained = usize::try_from(spec.settings.retained_max.max(1)).unwrap_or(1);
        // How far an exactly-once sink has committed its output: recovery
        // must not restore anything older.
        let mut committed: Option<CheckpointId> = None;
        for t in 0..spec.tasks {
            let task = TaskId(t);
            let epoch = (spec.operators)(task)
                .committed_epoch(&*fs)
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
                store_latest: store.latest(),
                ..HostStats::default()
            })),
            coordinator_events: AtomicU64::new(0),
            task_events: AtomicU64::new(0),
            source_batches: AtomicU64::new(0),
            recorder,
            to_coordinator: tx,
            failures: fail_tx,
            completed: watch::Sender::new(0),
        });
        let mut d = Driver {
            ctx: Arc::clone(&ctx),
            ledger: spec.options.check_invariants.then(HandleLedger::new),
            spec,
            state,
            store,
            timers: BTreeMap::new(),
            answers: std::collections::VecDeque::new(),
            attempts: (0..n).map(|_| None).collect(),
            next_attempt: vec![AttemptNo(0); n],
            restore_target: None,
            fail_job: false,
            stop: None,
            generation,
        };
        d.recover(&recovery)?;
        d.ctx.stats().restored_at_start = d.restore_target.as_ref().map(|(id, _)| *id);
        d.ctx.stats().last_completed = d.restore_target.as_ref().map(|(id, _)| *id);
        d.start_attempts(&upstream)?;
        d.apply(CoordinatorEvent::StartScheduler);
        let driver = tokio::spawn(d.run(rx, fail_rx, upstream));
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
        let mut s = self.ctx.stats().clone();
        s.coordinator_events = self.ctx.coordinator_events.load(Ordering::Relaxed);
        s.task_events = self.ctx.task_events.load(Ordering::Relaxed);
        s.source_batches = self.ctx.source_batches.load(Ordering::Relaxed);
        let c = &self.ctx.net.counters;
        s.rpc_dropped_fault = c.dropped_fault.load(Ordering::Relaxed);
        s.rpc_dropped_full = c.dropped_full.load(Ordering::Relaxed);
        s.rpc_dropped_stale = c.dropped_stale.load(Ordering::Relaxed);
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

    /// The file system the job uses.
    #[must_use]
    pub fn fs(&self) -> Arc<dyn Fs> {
        Arc::clone(&self.ctx.fs)
    }

    /// Asks for a checkpoint or savepoint (the answer shows in the stats).
    pub fn trigger(&self, kind: TriggerKind) -> Result<(), JobError> {
        self.ctx
            .to_coordinator
            .try_send(ToCoordinator::Rpc(CoordinatorEvent::Trigger { kind }))
            .map_err(|_| JobError::Stopped)
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
    /// waits for the driver.
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

impl Driver {
    /// Hands the store's recovery to the fresh coordinator as it is
    /// (`Recover` with the checkpoints, the counter's last id and the
    /// generation the store claimed, then `Restore { Latest }`), and checks
    /// that the coordinator restores the store's latest.
    fn recover(&mut self, recovery: &Recovery) -> Result<(), JobError> {
        let outcome = self.apply(recovery.recover_event());
        if !outcome.is_applied() {
            return Err(JobError::Recover(format!("{outcome:?}")));
        }
        let latest = recovery.latest().map(|c| c.checkpoint);
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        });
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        if restored != latest {
            return Err(JobError::Recover(format!(
                "the coordinator restores {restored:?}, the store's latest is {latest:?}"
            )));
        }
        Ok(())
    }

    fn apply(&mut self, event: CoordinatorEvent) -> COutcome {
        let now = self.ctx.now();
        self.ctx.record_coordinator(now, &event);
        self.ctx.coordinator_events.fetch_add(1, Ordering::Relaxed);
        let before = self.ledger.as_ref().map(|_| self.state.clone());
        let step = self.state.apply(now, event.clone());
        if let (Some(ledger), Some(before)) = (self.ledger.as_mut(), before.as_ref()) {
            if let Err(v) = check_coordinator(ledger, before, &event, &step, &self.state) {
                self.ctx.violation(format!("coordinator: {v}"));
            }
        }
        for e in step.effects {
            self.carry_out(e);
        }
        step.outcome
    }

    fn io_failure(e: &StoreError) -> IoFailure {
        IoFailure(e.to_string())
    }

    fn carry_out(&mut self, e: CoordinatorEffect) {
        match e {
            CoordinatorEffect::Timer {
                timer,
                at: Some(at),
            } => {
                self.timers.insert(timer, at);
            }
            CoordinatorEffect::Timer { timer, at: None } => {
                self.timers.remove(&timer);
            }
            CoordinatorEffect::Io {
                generation,
                request: req,
            } => {
                let answer = match &req {
                    IoRequest::AllocateId { .. } => self.store.allocate_id(generation),
                    IoRequest::MasterHooks { checkpoint, .. } => {
                        let checkpoint = *checkpoint;
                        match self.spec.hooks.iter().try_for_each(|h| h(checkpoint)) {
                            Ok(()) => Ok(checkpoint),
                            Err(why) => {
                                self.answers
                                    .push_back(req.answer(IoAnswer::Failed(IoFailure(why))));
                                return;
                            }
                        }
                    }
                    IoRequest::Finalize {
                        checkpoint,
                        timestamp,
                        handles,
                        kind,
                        ..
                    } => self
                        .store
                        .finalize(
                            generation,
                            *checkpoint,
                            kind.is_savepoint(),
                            *timestamp,
                            handles,
                        )
                        .map(|()| *checkpoint),
                    IoRequest::Store { checkpoint } => {
                        let stored = self.store.store(self.generation, *checkpoint);
                        self.ctx.stats().store_latest = self.store.latest();
                        stored.map(|_| *checkpoint)
                    }
                };
                let answer = match answer {
                    Ok(id) => IoAnswer::Ok { id },
                    Err(e) => IoAnswer::Failed(Self::io_failure(&e)),
                };
                self.answers.push_back(req.answer(answer));
            }
            CoordinatorEffect::Rpc {
                task,
                attempt,
                message,
                ..
            } => self.ctx.net.to_task(task, attempt, message.event()),
            CoordinatorEffect::Discard {
                handle, checkpoint, ..
            } => self.discard(handle, checkpoint),
            CoordinatorEffect::Report(Report::Completed { checkpoint, .. }) => {
                let completed = {
                    let mut s = self.ctx.stats();
                    s.completed += 1;
                    s.last_completed = Some(checkpoint);
                    s.completed
                };
                self.ctx.completed.send_replace(completed);
            }
            CoordinatorEffect::Report(Report::Aborted { .. }) => {
                self.ctx.stats().aborted += 1;
            }
            CoordinatorEffect::Report(Report::RequestFailed { .. })
            | CoordinatorEffect::Job(JobCommand::ShutdownServices(_)) => {}
            CoordinatorEffect::Job(JobCommand::Fail(_)) => self.fail_job = true,
            // The tasks of this host run no drain phase of their own (a
            // drained source simply has no more records): the job ends.
            CoordinatorEffect::Job(JobCommand::Stop { savepoint, .. }) => {
                self.stop = Some(savepoint);
            }
            // This host reports no `TaskFinished`: nothing can finish the job.
            CoordinatorEffect::Job(JobCommand::Finish { .. }) => {
                self.ctx
                    .violation("job finished, no task reported finished".into());
            }
            CoordinatorEffect::Job(JobCommand::ResetIdCounter { generation, next }) => {
                if let Err(e) = self.store.reset_counter(generation, next) {
                    self.ctx
                        .violation(format!("id counter reset to {next} failed: {e}"));
                }
            }
            CoordinatorEffect::Job(JobCommand::Restore {
                checkpoint,
                handles,
            }) => self.restore_target = checkpoint.map(|c| (c, handles)),
            CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
                checkpoint,
                discard_if_stored,
                discard_if_not_stored,
            }) => {
                // This driver answers its own store I/O before it reads the
                // next message, so the outcome is known here: discard the
                // list for what the store holds.
                let stored = self.store.stored().any(|(c, _)| c == checkpoint);
                let list = if stored {
                    discard_if_stored
                } else {
                    discard_if_not_stored
                };
                for h in list {
                    self.discard(h, checkpoint);
                }
            }
        }
    }

    fn discard(&mut self, handle: StateHandle, checkpoint: CheckpointId) {
        match self.store.discard(self.generation, handle) {
            Ok(Discarded::Deleted | Discarded::AlreadyGone) => {}
            Ok(Discarded::Savepoint { savepoint }) => self.ctx.log(format!(
                "DiscardState of {} (checkpoint {checkpoint}) declined: savepoint {savepoint} holds it",
                state_path(handle)
            )),
            Ok(Discarded::Refused { checkpoint: held }) => {
                self.ctx.violation(format!(
                    "durability guard: DiscardState of {} (checkpoint {checkpoint}) refused: stored checkpoint {held} holds it",
                    state_path(handle)
                ));
            }
            Err(e) => self.ctx.log(format!("discard {}: {e}", state_path(handle))),
        }
    }

    /// Applies the answers to the driver's own I/O (each after the
    /// simulated I/O latency, if any) before anything else is read.
    async fn drain_answers(&mut self) {
        while let Some(ev) = self.answers.pop_front() {
            self.ctx.io_pause().await;
            self.apply(ev);
        }
    }

    /// Reads the restored state of every task.
    fn restored_snapshots(&self) -> Result<BTreeMap<TaskId, TaskSnapshot>, JobError> {
        let mut out = BTreeMap::new();
        let Some((checkpoint, handles)) = &self.restore_target else {
            return Ok(out);
        };
        for h in handles {
            let bytes = read_state(&*self.ctx.fs, *h).map_err(|e| JobError::State {
                checkpoint: *checkpoint,
                handle: *h,
                why: e.to_string(),
            })?;
            let snap =
                statefile::decode_for(*checkpoint, *h, &bytes).map_err(|why| JobError::State {
                    checkpoint: *checkpoint,
                    handle: *h,
                    why,
                })?;
            out.insert(snap.task, snap);
        }
        Ok(out)
    }

    fn start_attempts(&mut self, upstream: &[Option<TaskId>]) -> Result<(), JobError> {
        let mut snaps = self.restored_snapshots()?;
        let restored_from = self.restore_target.as_ref().map(|(id, _)| *id);
        let n = self.spec.tasks as usize;
        let mut senders: Vec<Vec<mpsc::Sender<DataMsg>>> = vec![Vec::new(); n];
        let mut receivers: Vec<Option<mpsc::Receiver<DataMsg>>> = (0..n).map(|_| None).collect();
        for (to, from) in upstream.iter().enumerate() {
            if let Some(from) = from {
                let (tx, rx) = mpsc::channel(DATA_CHANNEL_MAX);
                if let Some(s) = senders.get_mut(from.0 as usize) {
                    s.push(tx);
                }
                if let Some(r) = receivers.get_mut(to) {
                    *r = Some(rx);
                }
            }
        }
        for (i, (down, up)) in senders.into_iter().zip(receivers).enumerate() {
            let task = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            let attempt = self.next_attempt.get(i).copied().unwrap_or_default();
            let a = Attempt::start(
                &self.ctx,
                AttemptSpec {
                    task,
                    attempt,
                    config: self.spec.task_config.clone(),
                    operator: (self.spec.operators)(task),
                    restored: snaps.remove(&task),
                    restored_from,
                    upstream: up,
                    downstream: down,
                },
            )
            .map_err(|why| JobError::TaskStart { task, why })?;
            if let Some(slot) = self.attempts.get_mut(i) {
                *slot = Some(a);
            }
            if let Some(next) = self.next_attempt.get_mut(i) {
                *next = AttemptNo(attempt.0.saturating_add(1));
            }
        }
        Ok(())
    }

    async fn stop_attempts(&mut self) {
        for a in self.attempts.iter().flatten() {
            a.begin_stop();
        }
        for slot in &mut self.attempts {
            if let Some(a) = slot.take() {
                self.ctx.net.register(a.task(), None);
                a.stop().await;
            }
        }
    }

    /// Global failover: stop every attempt, report them failed, restore the
    /// latest completed checkpoint, start new attempts.
    async fn failover(&mut self, upstream: &[Option<TaskId>], why: &str) {
        self.ctx.stats().failovers += 1;
        self.ctx.log(format!("failover: {why}"));
        let running: Vec<(TaskId, AttemptNo)> = self
            .attempts
            .iter()
            .flatten()
            .map(|a| (a.task(), a.attempt))
            .collect();
        self.stop_attempts().await;
        for (task, attempt) in running {
            self.apply(CoordinatorEvent::TaskFailed { task, attempt });
            self.drain_answers().await;
        }
        self.fail_job = false;
        self.restore_target = None;
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        });
        self.drain_answers().await;
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        if restored != self.store.latest() {
            self.ctx.stats().store_disagreements += 1;
            self.ctx.violation(format!(
                "failover restores {restored:?} but the store's latest is {:?}",
                self.store.latest()
            ));
        }
        if let Err(e) = self.start_attempts(upstream) {
            self.ctx
                .violation(format!("failover could not restart the tasks: {e}"));
            return;
        }
        for (i, a) in self.attempts.iter().enumerate() {
            if let Some(a) = a {
                let task = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
                let attempt = a.attempt;
                self.answers
                    .push_back(CoordinatorEvent::TaskRunning { task, attempt });
            }
        }
        self.drain_answers().await;
    }

    fn sync_store_stats(&self) {
        self.ctx.stats().store = self.store.stats().clone();
    }

    async fn run(
        mut self,
        mut rx: mpsc::Receiver<ToCoordinator>,
        mut failures: mpsc::UnboundedReceiver<(TaskId, AttemptNo)>,
        upstream: Vec<Option<TaskId>>,
    ) {
        loop {
            self.drain_answers().await;
            self.sync_store_stats();
            if let Some(savepoint) = self.stop {
                // The crate docs' stop recipe: every attempt stops, then the
                // coordinator shuts down with the job finished.
                self.stop_attempts().await;
                self.apply(CoordinatorEvent::Shutdown {
                    status: JobStatus::Finished,
                });
                self.drain_answers().await;
                self.ctx.stats().stopped_with = Some(savepoint);
                self.sync_store_stats();
                return;
            }
            if self.fail_job {
                self.failover(&upstream, "tolerable checkpoint failures exceeded")
                    .await;
                continue;
            }
            let next_timer = self.timers.values().min().copied();
            let deadline = next_timer.map(|at| self.ctx.start + Duration::from_millis(at.0));
            tokio::select! {
                biased;
                () = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let now = self.ctx.now();
                    let due: Vec<Timer> = self
                        .timers
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(t, _)| *t)
                        .collect();
                    for timer in due {
                        if self.timers.get(&timer).is_some_and(|at| *at <= now) {
                            self.timers.remove(&timer);
                            self.apply(CoordinatorEvent::TimerFired { timer });
                            self.drain_answers().await;
                        }
                    }
                }
                Some((task, attempt)) = failures.recv() => {
                    let current = self
                        .attempts
                        .get(task.0 as usize)
                        .and_then(Option::as_ref)
                        .is_some_and(|a| a.attempt == attempt);
                    if current {
                        self.failover(&upstream, &format!("task {task} attempt {attempt} failed")).await;
                    }
                }
                msg = rx.recv() => match msg {
                    Some(ToCoordinator::Rpc(ev)) => {
                        self.apply(ev);
                    }
                    Some(ToCoordinator::DisposeSavepoint(savepoint, reply)) => {
                        let disposed = self.store.dispose_savepoint(self.generation, savepoint);
                        if disposed.is_ok() {
                            self.ctx.stats().store_latest = self.store.latest();
                            self.apply(CoordinatorEvent::DisposeSavepoint {
                                checkpoint: savepoint,
                            });
                        }
                        let _ = reply.send(disposed);
                    }
                    Some(ToCoordinator::Shutdown(status, done)) => {
                        self.apply(CoordinatorEvent::Shutdown { status });
                        self.drain_answers().await;
                        self.stop_attempts().await;
                        self.sync_store_stats();
                        let _ = done.send(());
                        return;
                    }
                    None => return,
                },
            }
            tokio::task::yield_now().await;
        }
    }
}
