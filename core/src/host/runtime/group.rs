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

/// The input channels of every task, from the job's edges: for each task
/// the tasks it reads from, in the order their edges are listed (empty for
/// a source). A task may read from several upstream tasks (fan-in: its
/// channel state is captured from the first barrier of a checkpoint to the
/// last, see the task driver). Refused when an edge names a task outside
/// `0..tasks`, is a self-loop, is listed twice, or closes a cycle (barriers
/// flow from the sources only, so every task must be reachable from one
/// without going round).
pub fn inputs_of(tasks: u32, edges: &[(TaskId, TaskId)]) -> Result<Vec<Vec<TaskId>>, JobError> {
    let mut inputs: Vec<Vec<TaskId>> = vec![Vec::new(); tasks as usize];
    for (from, to) in edges {
        if from.0 >= tasks || to.0 >= tasks || from == to {
            return Err(JobError::Topology(format!("bad edge {from} -> {to}")));
        }
        let Some(slot) = inputs.get_mut(to.0 as usize) else {
            return Err(JobError::Topology(format!("bad edge {from} -> {to}")));
        };
        if slot.contains(from) {
            return Err(JobError::Topology(format!(
                "edge {from} -> {to} is listed twice"
            )));
        }
        slot.push(*from);
    }
    // Kahn's algorithm: a cycle leaves tasks with inputs never resolved.
    let mut outputs: Vec<Vec<usize>> = vec![Vec::new(); inputs.len()];
    let mut waiting: Vec<usize> = inputs.iter().map(Vec::len).collect();
    for (to, ins) in inputs.iter().enumerate() {
        for from in ins {
            if let Some(o) = outputs.get_mut(from.0 as usize) {
                o.push(to);
            }
        }
    }
    let mut ready: Vec<usize> = (0..inputs.len())
        .filter(|t| waiting.get(*t) == Some(&0))
        .collect();
    let mut seen = 0usize;
    while let Some(t) = ready.pop() {
        seen += 1;
        for to in outputs.get(t).into_iter().flatten() {
            if let Some(w) = waiting.get_mut(*to) {
                *w -= 1;
                if *w == 0 {
                    ready.push(*to);
                }
            }
        }
    }
    if seen != inputs.len() {
        let on_cycle = waiting
            .iter()
            .position(|w| *w > 0)
            .map_or(0, |t| u32::try_from(t).unwrap_or(u32::MAX));
        return Err(JobError::Topology(format!(
            "the edges close a cycle (through task {})",
            TaskId(on_cycle)
        )));
    }
    Ok(inputs)
}

/// What a task group's attempts run: the job's tasks, their topology,
/// configuration and operators.
#[derive(Clone)]
pub struct GroupSpec {
    /// Number of tasks (ids `0..tasks`); the group runs all of them.
    pub tasks: u32,
    /// Data channels `(from, to)`: a directed acyclic graph ([`inputs_of`]);
    /// a task may read from several upstream tasks (fan-in).
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
    inputs: Vec<Vec<TaskId>>,
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
    /// The attempt failed
    /// ([`TaskEffect::Fail`](crate::task::TaskEffect::Fail), an operator
    /// error, a broken data channel); the coordinator's `TaskFailed` is the
    /// embedder's to send.
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
        let inputs = inputs_of(spec.tasks, &spec.edges)?;
        let attempts = (0..spec.tasks).map(|_| None).collect();
        Ok(TaskGroup {
            ctx,
            spec,
            inputs,
            attempts,
        })
    }

    /// A group for a process that runs the tasks of job `job` for a
    /// coordinator elsewhere: state files are written and read through
    /// `fs` (the coordinator's store must find them there: `ckpt-node`
    /// gives an object store both processes reach); operators are handed
    /// no file system ([`Operator`](super::Operator)). What the attempts
    /// send comes out of the returned outbox.
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
            late_channel_records: AtomicU64::new(0),
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
    /// them (one per edge; a task's input channels in the order of its
    /// edges). Attempts still running are replaced without being stopped:
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
        let mut receivers: Vec<Vec<mpsc::Receiver<DataMsg>>> = (0..n).map(|_| Vec::new()).collect();
        for (to, froms) in self.inputs.iter().enumerate() {
            for from in froms {
                let (tx, rx) = mpsc::channel(DATA_CHANNEL_MAX);
                if let Some(s) = senders.get_mut(from.0 as usize) {
                    s.push(tx);
                }
                if let Some(r) = receivers.get_mut(to) {
                    r.push(rx);
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
                    inputs: up,
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
