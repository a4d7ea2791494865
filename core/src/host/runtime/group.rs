//! The task attempts one process runs ([`TaskGroup`]): starting every task
//! of the job restored from a checkpoint (the data channels between them
//! wired in-process, per-link FIFO and lossless), delivering the
//! coordinator's RPCs to the current attempts, and stopping them all.
//!
//! The coordinator driver of [`super::Job`] holds one for the tasks it runs
//! in its own process. A task-manager process that talks to a coordinator
//! in another process holds one made by [`TaskGroup::standalone`]: what its
//! attempts send to the coordinator (acks, declines) and their failure
//! reports come out of the [`TaskOutbox`], and the coordinator's RPCs go in
//! through [`TaskGroup::deliver`]; carrying them is the embedder's
//! (`ckpt-node`'s TCP protocol).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::ctx::Ctx;
use super::net::{self, ToCoordinator};
use super::statefile::{self, TaskSnapshot};
use super::task::{Attempt, AttemptSpec, DATA_CHANNEL_MAX};
use super::{DataMsg, HostStats, JobError, JobOptions, OperatorFactory, COORDINATOR_INBOX_MAX};
use crate::coordinator::CoordinatorEvent;
use crate::host::fs::Fs;
use crate::host::store::read_state;
use crate::task::{TaskConfig, TaskEvent};
use crate::types::{AttemptNo, CheckpointId, JobId, StateHandle, TaskId};

/// The upstream task of every task (`None` for a source), from the job's
/// edges; refused when an edge names a task outside `0..tasks`, loops, or
/// gives a task a second upstream (fan-in is not supported).
pub fn upstream_of(
    tasks: u32,
    edges: &[(TaskId, TaskId)],
) -> Result<Vec<Option<TaskId>>, JobError> {
    let mut upstream = vec![None; tasks as usize];
    for (from, to) in edges {
        if from.0 >= tasks || to.0 >= tasks || from == to {
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
    Ok(upstream)
}

/// What a task group's attempts run: the job's tasks, their topology,
/// configuration and operators.
#[derive(Clone)]
pub struct GroupSpec {
    /// Number of tasks (ids `0..tasks`); the group runs all of them.
    pub tasks: u32,
    /// Data channels `(from, to)`; each task has at most one upstream.
    pub edges: Vec<(TaskId, TaskId)>,
    /// The task side's configuration.
    pub task_config: TaskConfig,
    /// The operators.
    pub operators: OperatorFactory,
}

impl std::fmt::Debug for GroupSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSpec")
            .field("tasks", &self.tasks)
            .field("edges", &self.edges)
            .finish_non_exhaustive()
    }
}

/// The running attempts of every task of a job in one process.
pub struct TaskGroup {
    pub(super) ctx: Arc<Ctx>,
    spec: GroupSpec,
    upstream: Vec<Option<TaskId>>,
    attempts: Vec<Option<Attempt>>,
}

impl std::fmt::Debug for TaskGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskGroup")
            .field("spec", &self.spec)
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

/// What a standalone group's attempts send out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outbound {
    /// An RPC for the coordinator: an attempt's acknowledge or decline,
    /// already enveloped with its job, task and attempt.
    Coordinator(CoordinatorEvent),
    /// The attempt failed (`FailTask`, an operator error, a broken data
    /// channel); the coordinator's `TaskFailed` is the embedder's to send.
    Failed(TaskId, AttemptNo),
}

/// The receiving end of a standalone group's outgoing messages.
#[derive(Debug)]
pub struct TaskOutbox {
    rpcs: mpsc::Receiver<ToCoordinator>,
    failures: mpsc::UnboundedReceiver<(TaskId, AttemptNo)>,
}

impl TaskOutbox {
    /// The next outgoing message, in the order each kind was sent (failure
    /// reports first when both wait); `None` once the group is dropped.
    pub async fn recv(&mut self) -> Option<Outbound> {
        loop {
            tokio::select! {
                biased;
                Some((task, attempt)) = self.failures.recv() => {
                    return Some(Outbound::Failed(task, attempt));
                }
                msg = self.rpcs.recv() => match msg {
                    Some(ToCoordinator::Rpc(ev)) => return Some(Outbound::Coordinator(ev)),
                    // Only the coordinator's own driver sends these.
                    Some(ToCoordinator::Shutdown(..) | ToCoordinator::DisposeSavepoint(..)) => {}
                    None => return None,
                },
            }
        }
    }
}

impl TaskGroup {
    pub(super) fn new(ctx: Arc<Ctx>, spec: GroupSpec) -> Result<TaskGroup, JobError> {
        let upstream = upstream_of(spec.tasks, &spec.edges)?;
        let attempts = (0..spec.tasks).map(|_| None).collect();
        Ok(TaskGroup {
            ctx,
            spec,
            upstream,
            attempts,
        })
    }

    /// A group for a process that runs the tasks of job `job` for a
    /// coordinator elsewhere: state files are written and read through
    /// `fs`; what the attempts send comes out of the returned outbox.
    /// `options.faults` is ignored (the network between the processes is
    /// the real one); `check_invariants` checks every task step and
    /// `verbose` logs failures to stderr.
    pub fn standalone(
        job: JobId,
        spec: GroupSpec,
        options: JobOptions,
        fs: Arc<dyn Fs>,
    ) -> Result<(TaskGroup, TaskOutbox), JobError> {
        let (tx, rpcs) = mpsc::channel(COORDINATOR_INBOX_MAX);
        let (fail_tx, failures) = mpsc::unbounded_channel();
        let options = JobOptions {
            faults: net::FaultPlan::default(),
            ..options
        };
        let net = net::Net::new(options.faults, spec.tasks as usize, tx.clone());
        let ctx = Arc::new(Ctx {
            job,
            options,
            fs,
            net,
            start: Instant::now(),
            stats: Arc::new(Mutex::new(HostStats::default())),
            coordinator_events: AtomicU64::new(0),
            task_events: AtomicU64::new(0),
            source_batches: AtomicU64::new(0),
            recorder: None,
            to_coordinator: tx,
            failures: fail_tx,
            completed: watch::Sender::new(0),
        });
        let group = TaskGroup::new(ctx, spec)?;
        Ok((group, TaskOutbox { rpcs, failures }))
    }

    /// Reads the state of every task in checkpoint `restore` (its handles),
    /// each checked to be that task's file of that checkpoint.
    fn restored_snapshots(
        &self,
        restore: Option<(CheckpointId, &[StateHandle])>,
    ) -> Result<BTreeMap<TaskId, TaskSnapshot>, JobError> {
        let mut out = BTreeMap::new();
        let Some((checkpoint, handles)) = restore else {
            return Ok(out);
        };
        for h in handles {
            let bytes = read_state(&*self.ctx.fs, *h).map_err(|e| JobError::State {
                checkpoint,
                handle: *h,
                why: e.to_string(),
            })?;
            let snap =
                statefile::decode_for(checkpoint, *h, &bytes).map_err(|why| JobError::State {
                    checkpoint,
                    handle: *h,
                    why,
                })?;
            out.insert(snap.task, snap);
        }
        Ok(out)
    }

    /// Starts every task under `attempt_of(task)`, restored from checkpoint
    /// `restore` (`None`: a fresh start), with fresh data channels between
    /// them. Attempts still running are replaced without being stopped:
    /// call [`TaskGroup::stop`] first.
    pub fn start(
        &mut self,
        attempt_of: impl Fn(TaskId) -> AttemptNo,
        restore: Option<(CheckpointId, &[StateHandle])>,
    ) -> Result<(), JobError> {
        let mut snaps = self.restored_snapshots(restore)?;
        let restored_from = restore.map(|(id, _)| id);
        let n = self.spec.tasks as usize;
        let mut senders: Vec<Vec<mpsc::Sender<DataMsg>>> = vec![Vec::new(); n];
        let mut receivers: Vec<Option<mpsc::Receiver<DataMsg>>> = (0..n).map(|_| None).collect();
        for (to, from) in self.upstream.iter().enumerate() {
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
            let a = Attempt::start(
                &self.ctx,
                AttemptSpec {
                    task,
                    attempt: attempt_of(task),
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
        }
        Ok(())
    }

    /// Stops every running attempt (all are marked stopping first, so the
    /// data channels they close are not taken for broken connections) and
    /// waits for them; messages to them are dropped from then on.
    pub async fn stop(&mut self) {
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

    /// The running attempts, in task order.
    #[must_use]
    pub fn running(&self) -> Vec<(TaskId, AttemptNo)> {
        self.attempts
            .iter()
            .flatten()
            .map(|a| (a.task(), a.attempt))
            .collect()
    }

    /// Whether `attempt` is the running attempt of `task`.
    #[must_use]
    pub fn is_current(&self, task: TaskId, attempt: AttemptNo) -> bool {
        self.attempts
            .get(task.0 as usize)
            .and_then(Option::as_ref)
            .is_some_and(|a| a.attempt == attempt)
    }

    /// Delivers a coordinator RPC (trigger, notify-complete, notify-aborted)
    /// to the RPC inbox of `task`'s `attempt`; dropped (and counted in
    /// [`HostStats::rpc_dropped_stale`]) when that is not the task's running
    /// attempt, or its inbox is full ([`HostStats::rpc_dropped_full`]).
    pub fn deliver(&self, task: TaskId, attempt: AttemptNo, event: TaskEvent) {
        self.ctx.net.to_task(task, attempt, event);
    }

    /// A copy of the group's counters: task events, source batches, the
    /// dropped RPCs, violations (with `check_invariants`) and failures.
    #[must_use]
    pub fn stats(&self) -> HostStats {
        self.ctx.task_side_stats()
    }
}
