//! The world's dynamics: which actions are enabled in a state, and what one
//! action does. One function per thing that happens; one routing of every
//! effect (through [`ckpt_core::route`]); one checked step per machine
//! (through [`ckpt_core::invariants::checked`]).

use std::sync::{Arc, Mutex};

use ckpt_core::coordinator::{
    AbortReason, Applied, CoordinatorEvent as CEv, CoordinatorSettings, CoordinatorState, Ignored,
    JobStatus, Outcome, RecoveredCheckpoint, RestoreSource, Timer, TriggerKind,
};
use ckpt_core::coordinator::{CoordinatorEffect, IoAnswer, JobCommand, Report};
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::invariants::durability::{Deleter, DurableLedger, Stored};
use ckpt_core::invariants::task::{check_quiescent, names as task_names, TaskMonitor};
use ckpt_core::invariants::Violation;
use ckpt_core::route::{ChannelItem, TaskMessage, ToCoordinator};
use ckpt_core::task::TaskEffect;
use ckpt_core::task::{Lifecycle, TaskConfig, TaskEvent as TEv, TaskState};
use ckpt_core::trace::TraceLine;
use ckpt_core::{
    AttemptNo, CheckpointId, Generation, IoFailure, LegacyBug, Millis, StateHandle, TaskId, Thread,
};

use super::config::{ModelConfig, Network, JOB};
use super::coverage::{self, coord_event_kind, Coverage};
use super::state::{
    Channel, Durable, History, InDoubt, Io, Mail, Msg, Sealed, SharedSide, TaskSide, Used, World,
    Zombie,
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
    /// The job fails over after a `FailJob`: every task is cancelled and
    /// restarted, and the coordinator restores the latest checkpoint.
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
            | Action::DisposeSavepoint(_) => false,
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
    /// reduction's validation ([`crate::exact::exact_run_ends`]), where it
    /// turns "the reduction keeps every run end" into "it keeps every order
    /// of each task's own events that some run ends with". Not meant with
    /// symmetry (the digest is not renamed).
    pub record_task_order: bool,
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
        }
    }

    /// Check determinism and pure-equals-in-place too (a second run of each
    /// event: for the random schedulers, not the exhaustive one).
    #[must_use]
    pub fn with_rigor(mut self, rigor: Rigor) -> Sim {
        self.rigor = rigor;
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
            }),
            job_failover_due: false,
            awaiting_restore: false,
            zombie: None,
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
                s.violation = Some(v);
            }
            let source = RestoreSource::Savepoint {
                checkpoint: SAVEPOINT,
                handles,
            };
            self.coord_event(&mut s, CEv::Restore { source }, Some(&mut log));
        }
        self.coord_event(&mut s, CEv::StartScheduler, Some(&mut log));
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

    /// A fresh task state (a new attempt).
    fn fresh_task(&self) -> TaskState {
        match TaskState::new(self.task_cfg.clone()) {
            Ok(s) => s,
            Err(e) => panic!("task config rejected: {e}"),
        }
    }

    fn budget(&self, s: &World) -> bool {
        s.used.faults < self.cfg.faults
    }

    fn push_msg(&self, net: &mut Vec<Msg>, m: Msg) {
        let at = match self.cfg.network {
            Network::Ordered => net.partition_point(|x| x.link() <= m.link()),
            Network::Reorder | Network::ReorderDupDrop => net.partition_point(|x| *x <= m),
        };
        net.insert(at, m);
    }

    /// Messages the network may deliver next (the head of each link when
    /// ordered; each distinct message otherwise).
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

    fn render_all<T: std::fmt::Debug>(&self, items: &[T]) -> Vec<String> {
        if self.render {
            items.iter().map(|e| format!("{e:?}")).collect()
        } else {
            Vec::new()
        }
    }

    fn render_one<T: std::fmt::Debug>(&self, item: &T) -> String {
        if self.render {
            format!("{item:?}")
        } else {
            String::new()
        }
    }

    fn record(
        &self,
        machine: &'static str,
        phase: &'static str,
        kind: &'static str,
        key: u64,
        outcome: impl FnOnce(&mut String),
    ) {
        if let Some(c) = &self.coverage {
            coverage::record(c, machine, phase, kind, key, outcome);
        }
    }

    /// The checked step of the coordinator, then the routing of its
    /// effects; when they restored the job's state while its tasks wait for
    /// it (a failover), the tasks start from it.
    fn coord_event(&self, s: &mut World, ev: CEv, mut log: Option<&mut Vec<Delivery>>) -> Outcome {
        let (outcome, restored) = self.leader_event(s, Leader::Current, ev, log.as_deref_mut());
        if restored && s.awaiting_restore {
            self.start_tasks(s, log);
        }
        outcome
    }

    /// Whether the store, the id counter and the state files refuse a write
    /// on behalf of `generation`: a newer one was claimed.
    fn fenced(s: &World, generation: Generation) -> bool {
        generation < s.durable.fence
    }

    /// One event for the current or the deposed coordinator, through the
    /// checked step, then the routing of its effects. Returns the outcome
    /// and whether a `RestoreState` was carried out.
    fn leader_event(
        &self,
        s: &mut World,
        who: Leader,
        ev: CEv,
        log: Option<&mut Vec<Delivery>>,
    ) -> (Outcome, bool) {
        let now = s.now;
        let (coord, ledger) = match who {
            Leader::Current => (&s.coord, &mut s.ledger),
            Leader::Zombie => match &mut s.zombie {
                Some(z) => (&z.coord, &mut z.ledger),
                None => return (Outcome::Ignored(Ignored::Shutdown), false),
            },
        };
        let (t, verdict) = checked::coordinator_step(ledger, coord, now, &ev, self.rigor);
        let mut found = verdict.err();
        if self.coverage.is_some() && who == Leader::Current {
            let phase = coverage::coord_phase(&s.coord);
            let key = coverage::outcome_key(&t.step.outcome);
            self.record("coordinator", phase, coord_event_kind(&ev), key, |w| {
                coverage::write_coord_outcome_kind(w, &t.step.outcome);
            });
        }
        let before = match who {
            Leader::Current => std::mem::replace(&mut s.coord, Sealed::new(t.state)),
            Leader::Zombie => match &mut s.zombie {
                Some(z) => std::mem::replace(&mut z.coord, Sealed::new(t.state)),
                None => return (t.step.outcome, false),
            },
        };
        let zombie = who == Leader::Zombie;
        if let Outcome::Applied(Applied::CheckpointTriggered { checkpoint, .. }) = &t.step.outcome {
            note(&mut found, s.durable.ledger.used(*checkpoint));
        }
        if let Outcome::Applied(Applied::RestoreDeferred { .. }) = &t.step.outcome {
            s.history.restore_waited = true;
        }
        let mut restored = false;
        for e in &t.step.effects {
            match e {
                // The coordinator state holds its own timer table (the
                // world fires what it finds armed there; a deposed
                // coordinator's timers are not fired).
                CoordinatorEffect::Timer { .. }
                | CoordinatorEffect::Job(JobCommand::ShutdownServices(_)) => {}
                CoordinatorEffect::Discard {
                    generation, handle, ..
                } => {
                    if Self::fenced(s, *generation) {
                        s.history.fenced = true;
                    } else {
                        note(
                            &mut found,
                            s.durable.ledger.delete(*handle, Deleter::Coordinator),
                        );
                    }
                }
                CoordinatorEffect::Io { request, .. } => {
                    let list = match who {
                        Leader::Current => Some(&mut s.io),
                        Leader::Zombie => s.zombie.as_mut().map(|z| &mut z.io),
                    };
                    if let Some(list) = list {
                        insert_sorted(list, Io::of(request));
                    }
                }
                // A deposed coordinator's RPCs reach nobody: every task was
                // redeployed under a new attempt, and an RPC for an attempt
                // that is gone is dropped.
                CoordinatorEffect::Rpc { .. } if zombie => {}
                CoordinatorEffect::Rpc {
                    task,
                    attempt,
                    message,
                    ..
                } => {
                    if let TaskMessage::NotifyComplete { checkpoint, .. } = message {
                        note(&mut found, s.durable.ledger.notified_complete(*checkpoint));
                    }
                    self.push_msg(
                        &mut s.net,
                        Msg::ToTask {
                            task: *task,
                            attempt: *attempt,
                            mail: Mail::of(message),
                        },
                    );
                }
                CoordinatorEffect::Job(JobCommand::ResetIdCounter { generation, next }) => {
                    if Self::fenced(s, *generation) {
                        s.history.fenced = true;
                    } else {
                        // Ids only grow: the counter moves forward to
                        // `next - 1`, never back.
                        let last = next.0.checked_sub(1).filter(|n| *n > 0).map(CheckpointId);
                        s.durable.counter = s.durable.counter.max(last);
                    }
                }
                // A deposed coordinator commands no job: its task managers
                // follow the new leader.
                CoordinatorEffect::Job(_) | CoordinatorEffect::Report(_) if zombie => {}
                CoordinatorEffect::Job(JobCommand::Restore {
                    checkpoint,
                    handles,
                }) => {
                    s.history.restored = true;
                    restored = true;
                    note(&mut found, s.durable.ledger.restored(*checkpoint, handles));
                }
                CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
                    checkpoint,
                    discard_if_stored,
                    discard_if_not_stored,
                }) => {
                    s.durable.in_doubt = Some(InDoubt {
                        checkpoint: *checkpoint,
                        if_stored: discard_if_stored.clone(),
                        if_not_stored: discard_if_not_stored.clone(),
                    });
                }
                CoordinatorEffect::Job(JobCommand::Fail(_)) => {
                    if s.used.job_failovers < self.cfg.job_failovers {
                        s.job_failover_due = true;
                    }
                }
                CoordinatorEffect::Report(Report::Completed { checkpoint, .. }) => {
                    // The attempts it waited for, captured at trigger time.
                    if before
                        .pending_checkpoint(*checkpoint)
                        .is_some_and(|p| p.attempts().iter().any(|a| a.0 > 0))
                    {
                        s.history.failover_complete = true;
                    }
                    if s.history.abort_seen.is_some_and(|a| a < *checkpoint) {
                        s.history.abort_then_complete = true;
                        s.history.abort_seen = None;
                    }
                }
                CoordinatorEffect::Report(Report::Aborted {
                    checkpoint, reason, ..
                }) => {
                    let counts = !matches!(
                        reason,
                        AbortReason::Subsumed | AbortReason::Shutdown | AbortReason::Restored
                    );
                    if counts && !s.history.abort_then_complete {
                        s.history.abort_seen = Some(
                            s.history
                                .abort_seen
                                .map_or(*checkpoint, |a| a.min(*checkpoint)),
                        );
                    }
                }
                CoordinatorEffect::Report(Report::RequestFailed { .. }) => {}
            }
        }
        if let Some(log) = log {
            log.push(Delivery {
                now,
                line: TraceLine::Coordinator { now, event: ev },
                effects: self.render_all(&t.step.effects),
                outcome: self.render_one(&t.step.outcome),
                violation: found.clone(),
            });
        }
        if s.violation.is_none() {
            s.violation = found;
        }
        (t.step.outcome, restored)
    }

    /// The checked step of task `t`, then the routing of its effects.
    fn task_event(&self, s: &mut World, t: TaskId, ev: TEv, log: Option<&mut Vec<Delivery>>) {
        let now = s.now;
        let Some(side) = s.tasks.get_mut(t.0 as usize).map(|c| &mut **c) else {
            return;
        };
        let attempt = side.attempt;
        if self.record_task_order {
            side.record(&ev);
        }
        let (tr, verdict) = checked::task_step(&mut side.monitor, &side.st, now, &ev, self.rigor);
        let mut found = verdict.err();
        if self.coverage.is_some() {
            let phase = coverage::task_phase(&side.st);
            let key = coverage::outcome_key(&tr.step.outcome);
            self.record("task", phase, ev.kind(), key, |w| {
                use std::fmt::Write as _;
                let _ = write!(w, "{:?}", tr.step.outcome);
            });
        }
        side.st = tr.state;
        for e in &tr.step.effects {
            match e {
                // The writer's and the async thread's outstanding work is
                // read from the task state; discards and operator notices
                // have no effect on the rest of the world; a failure is
                // acted on by the action that injected it (and a spurious
                // one is already a violation).
                TaskEffect::Writer(_)
                | TaskEffect::AsyncPart(_)
                | TaskEffect::Operators(_)
                | TaskEffect::Fail(_) => {}
                TaskEffect::Discard(handle) => {
                    note(&mut found, s.durable.ledger.delete(*handle, Deleter::Task));
                }
                TaskEffect::Mail(checkpoint) => {
                    if let Some(side) = s.tasks.get_mut(t.0 as usize) {
                        side.mailbox.push(Mail::Checkpoint(*checkpoint));
                    }
                }
                TaskEffect::Downstream(item) => self.broadcast(s, t, *item),
                TaskEffect::Coordinator(msg) => {
                    let msg = *msg;
                    // What a task may report again (kept only when the
                    // world lets tasks share state: it would split states
                    // for nothing otherwise).
                    if let (true, ToCoordinator::Ack { checkpoint, handle }) =
                        (self.cfg.shared_state, msg)
                    {
                        // A savepoint's state is never reported again:
                        // savepoints are self-contained.
                        let savepoint = is_savepoint(&s.coord, checkpoint);
                        if let Some(side) = s.tasks.get_mut(t.0 as usize) {
                            side.last_ack = (!savepoint).then_some((checkpoint, handle));
                        }
                    }
                    self.push_msg(
                        &mut s.net,
                        Msg::ToCoord {
                            task: t,
                            attempt,
                            msg,
                        },
                    );
                }
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
                effects: self.render_all(&tr.step.effects),
                outcome: self.render_one(&tr.step.outcome),
                violation: found.clone(),
            });
        }
        if s.violation.is_none() {
            s.violation = found;
        }
    }

    /// Appends `item` to every output channel of `from` (lossless FIFO); a
    /// down attempt's input channels are gone.
    fn broadcast(&self, s: &mut World, from: TaskId, item: ChannelItem) {
        for d in self.downstream.get(from.0 as usize).into_iter().flatten() {
            if let Some(side) = s.tasks.get_mut(d.0 as usize) {
                if side.is_down() {
                    continue;
                }
                if let Some(c) = side.inputs.iter_mut().find(|c| c.from == from) {
                    c.queue.push(item);
                }
            }
        }
    }

    /// Enqueues an RPC mail for attempt `attempt` of task `t`; dropped when
    /// that attempt is not the running one (restarted since, or down).
    fn push_mail(s: &mut World, t: TaskId, attempt: AttemptNo, m: Mail) {
        if let Some(side) = s.tasks.get_mut(t.0 as usize) {
            if side.attempt == attempt && !side.is_down() {
                side.mailbox.push(m);
            }
        }
    }

    /// Whether `Action::Fire(timer)` is enabled in `s` (without listing
    /// every other action: the random schedulers ask this for each armed
    /// timer when they move the clock).
    #[must_use]
    pub fn may_fire(&self, s: &World, timer: Timer) -> bool {
        s.violation.is_none()
            && s.coord.timer_deadline(timer).is_some()
            && self.within_budget(s, timer)
    }

    /// Whether an armed timer may fire as far as the run's budget goes (the
    /// periodic trigger is bounded by the checkpoint budget).
    fn within_budget(&self, s: &World, timer: Timer) -> bool {
        match timer {
            Timer::Periodic => s.used.triggers < self.cfg.checkpoints,
            Timer::Timeout(_) => true,
        }
    }

    /// Every action enabled in `s`, in a fixed order.
    pub fn enabled(&self, s: &World, out: &mut Vec<Action>) {
        if s.violation.is_some() {
            return;
        }
        // Every listed timer is armed and the violation was checked above:
        // only the budget is left to ask (this is the model's hot path).
        for (timer, _) in s.coord.timers() {
            if self.within_budget(s, *timer) {
                out.push(Action::Fire(*timer));
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
            for c in &side.inputs {
                match c.queue.first() {
                    Some(ChannelItem::Barrier(_)) => out.push(Action::Netty(t, c.from)),
                    Some(ChannelItem::CancelMarker(_)) => out.push(Action::Input(t, c.from)),
                    None => {}
                }
            }
            if !side.mailbox.is_empty() {
                out.push(Action::Mailbox(t));
            }
            let faults = budget && self.cfg.task_faults;
            for cp in side.st.writer_in_progress_iter() {
                out.push(Action::Writer(t, cp, true));
                if faults {
                    out.push(Action::Writer(t, cp, false));
                }
            }
            for cp in side.st.async_parts_iter() {
                out.push(Action::Async(t, cp, true));
                if faults {
                    out.push(Action::Async(t, cp, false));
                }
                if self.cfg.shared_state
                    && side.reusable_for(cp).is_some()
                    && !is_savepoint(&s.coord, cp)
                {
                    out.push(Action::AsyncReused(t, cp));
                }
            }
        }
        if let Some(z) = &s.zombie {
            let mut last = None;
            for io in &z.io {
                if last != Some(*io) {
                    out.push(Action::ZombieAnswer(*io));
                }
                last = Some(*io);
            }
        }
        if self.cfg.shutdown && !s.coord.is_shutdown() && s.used.triggers >= self.cfg.checkpoints {
            out.push(Action::Shutdown);
        }
        if s.used.savepoints < self.cfg.savepoints {
            out.push(Action::Savepoint);
        }
        if s.used.user_checkpoints < self.cfg.user_checkpoints {
            out.push(Action::UserCheckpoint { forced: false });
            out.push(Action::UserCheckpoint { forced: true });
        }
        let may_fail = s.used.task_failures < self.cfg.task_failures && !s.coord.is_shutdown();
        for (i, side) in s.tasks.iter().enumerate() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            // While the job waits for its restore point, every task is
            // stopped and none restarts on its own.
            if s.awaiting_restore {
                continue;
            }
            if side.is_down() {
                out.push(Action::RestartTask(t));
            } else if may_fail {
                out.push(Action::FailTask(t));
            }
        }
        if self.cfg.dispose_savepoints && !s.coord.is_shutdown() {
            for c in s.coord.completed().filter(|c| c.is_savepoint()) {
                out.push(Action::DisposeSavepoint(c.id()));
            }
        }
        if s.scheduler_stopped {
            out.push(Action::StartScheduler);
        } else if s.used.scheduler_stops < self.cfg.scheduler_restarts && !s.coord.is_shutdown() {
            out.push(Action::StopScheduler);
        }
        let crash = s.used.coordinator_failovers < self.cfg.coordinator_failovers;
        if crash && !s.coord.is_shutdown() {
            out.push(Action::CoordinatorFailover { commit: false });
            if s.io.iter().any(|x| matches!(x, Io::Store(_))) {
                out.push(Action::CoordinatorFailover { commit: true });
            }
        }
        if s.job_failover_due && !s.coord.is_shutdown() && !s.awaiting_restore {
            out.push(Action::JobFailover);
        }
        if s.used.end_of_input < self.cfg.end_of_input {
            for t in &self.settings.tasks_to_trigger {
                let running = s
                    .tasks
                    .get(t.0 as usize)
                    .is_some_and(|side| side.st.lifecycle() == Lifecycle::Running);
                if running {
                    out.push(Action::EndOfInput(*t));
                }
            }
        }
    }

    /// Runs one action on a copy of `s`, appending what was delivered to
    /// `log`; `None` when the action is not enabled.
    pub fn step(&self, s: &World, a: Action, log: Option<&mut Vec<Delivery>>) -> Option<World> {
        let mut n = s.clone();
        self.step_in_place(&mut n, a, log).then_some(n)
    }

    /// Runs one action on `w` itself (what [`Sim::step`] does to its copy),
    /// for drivers that keep one world and never look back (the story
    /// driver, random walks): no copy of the world per step. `false`, and
    /// `w` untouched, when the action is not enabled: every refusal below
    /// is decided before the first write (`model/tests/model.rs` checks
    /// both against [`Sim::step`] on every action of random walks).
    pub fn step_in_place(&self, w: &mut World, a: Action, log: Option<&mut Vec<Delivery>>) -> bool {
        if self.apply_action(w, a, log).is_none() {
            return false;
        }
        w.seal();
        true
    }

    /// The body of [`Sim::step_in_place`]; `None` before any write when
    /// `a` is not enabled.
    fn apply_action(
        &self,
        n: &mut World,
        a: Action,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Option<()> {
        match a {
            Action::Fire(timer) => {
                let deadline = n.coord.timer_deadline(timer)?;
                if timer == Timer::Periodic {
                    n.used.triggers = n.used.triggers.saturating_add(1);
                }
                n.now = deadline.max(n.now);
                self.coord_event(n, CEv::TimerFired { timer }, log.as_deref_mut());
            }
            Action::Answer(io, ok) => {
                let i = n.io.iter().position(|x| *x == io)?;
                n.io.remove(i);
                if !ok {
                    n.used.faults = n.used.faults.saturating_add(1);
                }
                let answer = self.carry_out(n, Leader::Current, io, ok);
                self.coord_event(n, io.answer(answer), log.as_deref_mut());
                if let Io::Finalize(c) | Io::Store(c) = io {
                    self.resolve_in_doubt(n, c);
                }
            }
            Action::ZombieAnswer(io) => {
                let z = n.zombie.as_mut()?;
                let i = z.io.iter().position(|x| *x == io)?;
                z.io.remove(i);
                let answer = self.carry_out(n, Leader::Zombie, io, true);
                self.leader_event(n, Leader::Zombie, io.answer(answer), log.as_deref_mut());
                if n.zombie.as_ref().is_some_and(|z| z.io.is_empty()) {
                    // Nothing left that it could write: it is gone for
                    // this world.
                    n.zombie = None;
                }
            }
            Action::AsyncReused(t, checkpoint) => {
                let side = n.tasks.get(t.0 as usize)?;
                let handle = side.reusable_for(checkpoint)?;
                if !self.cfg.shared_state
                    || !side.st.async_parts().contains(&checkpoint)
                    || is_savepoint(&n.coord, checkpoint)
                {
                    return None;
                }
                self.task_event(
                    n,
                    t,
                    TEv::AsyncPartReused { checkpoint, handle },
                    log.as_deref_mut(),
                );
            }
            Action::DisposeSavepoint(checkpoint) => {
                if !n
                    .coord
                    .completed()
                    .any(|c| c.id() == checkpoint && c.is_savepoint())
                {
                    return None;
                }
                // The disposal recipe: out of the store first, then the
                // coordinator discards what no other checkpoint holds.
                n.history.disposed = true;
                if let Err(v) = n.durable.ledger.dispose(checkpoint) {
                    n.violation.get_or_insert(v);
                }
                self.coord_event(n, CEv::DisposeSavepoint { checkpoint }, log.as_deref_mut());
            }
            Action::Deliver(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                match m {
                    Msg::ToTask {
                        task,
                        attempt,
                        mail,
                    } => Self::push_mail(n, task, attempt, mail),
                    Msg::ToCoord { task, attempt, msg } => {
                        let outcome =
                            self.coord_event(n, msg.event(JOB, task, attempt), log.as_deref_mut());
                        if let (
                            ToCoordinator::Ack { handle, .. },
                            Outcome::Ignored(Ignored::Shutdown) | Outcome::Rejected(_),
                        ) = (msg, &outcome)
                        {
                            Self::reclaim(n, handle);
                        }
                    }
                }
            }
            Action::Duplicate(m) => {
                n.net.iter().position(|x| *x == m)?;
                n.used.faults = n.used.faults.saturating_add(1);
                self.push_msg(&mut n.net, m);
            }
            Action::Drop(m) => {
                let i = n.net.iter().position(|x| *x == m)?;
                n.net.remove(i);
                n.used.faults = n.used.faults.saturating_add(1);
                n.history.disrupted = true;
                if let Msg::ToCoord {
                    msg: ToCoordinator::Ack { handle, .. },
                    ..
                } = m
                {
                    // The last copy of an ack is lost: its file is an orphan
                    // of the checkpoint's storage location, which the host
                    // disposes of (as Flink deletes an aborted checkpoint's
                    // directory).
                    let copies = n.net.iter().any(|x| {
                        matches!(x, Msg::ToCoord { msg: ToCoordinator::Ack { handle: h, .. }, .. } if *h == handle)
                    });
                    if !copies {
                        Self::reclaim(n, handle);
                    }
                }
            }
            Action::Netty(t, up) | Action::Input(t, up) => {
                let side = n.tasks.get_mut(t.0 as usize)?;
                let aligns = side.inputs.len() > 1;
                let c = side.inputs.iter_mut().find(|c| c.from == up)?;
                let head = *c.queue.first()?;
                let wanted = match a {
                    Action::Netty(..) => Thread::Netty,
                    _ => Thread::Task,
                };
                if head.thread() != wanted {
                    return None;
                }
                c.queue.remove(0);
                if aligns {
                    let id = match head {
                        ChannelItem::Barrier(id) | ChannelItem::CancelMarker(id) => id,
                    };
                    c.seen = c.seen.max(Some(id));
                }
                self.task_event(n, t, head.event(), log.as_deref_mut());
            }
            Action::Mailbox(t) => {
                let side = n.tasks.get_mut(t.0 as usize)?;
                if side.mailbox.is_empty() {
                    return None;
                }
                let mail = side.mailbox.remove(0);
                self.task_event(n, t, mail.event(), log.as_deref_mut());
            }
            Action::Writer(t, checkpoint, ok) => {
                let ev = if ok {
                    TEv::WriterCompleted { checkpoint }
                } else {
                    n.used.faults = n.used.faults.saturating_add(1);
                    TEv::WriterFailed { checkpoint }
                };
                self.task_event(n, t, ev, log.as_deref_mut());
            }
            Action::Async(t, checkpoint, ok) => {
                let ev = if ok {
                    let attempt = n.tasks.get(t.0 as usize)?.attempt;
                    let handle = handle_for(checkpoint, t, attempt);
                    if let Err(v) = n.durable.ledger.written(handle) {
                        n.violation.get_or_insert(v);
                    }
                    TEv::AsyncPartCompleted { checkpoint, handle }
                } else {
                    n.used.faults = n.used.faults.saturating_add(1);
                    TEv::AsyncPartFailed { checkpoint }
                };
                self.task_event(n, t, ev, log.as_deref_mut());
            }
            Action::Shutdown => {
                let status = JobStatus::Canceled;
                self.coord_event(n, CEv::Shutdown { status }, log.as_deref_mut());
            }
            Action::Savepoint => {
                n.used.savepoints = n.used.savepoints.saturating_add(1);
                let kind = TriggerKind::Savepoint {
                    target: "sp".into(),
                };
                self.coord_event(n, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::UserCheckpoint { forced } => {
                n.used.user_checkpoints = n.used.user_checkpoints.saturating_add(1);
                let kind = TriggerKind::Checkpoint { forced };
                self.coord_event(n, CEv::Trigger { kind }, log.as_deref_mut());
            }
            Action::FailTask(t) => {
                if n.tasks.get(t.0 as usize)?.is_down() {
                    return None;
                }
                n.used.task_failures = n.used.task_failures.saturating_add(1);
                n.history.disrupted = true;
                self.task_event(n, t, TEv::OperatorFailed, log.as_deref_mut());
                let side = n.tasks.get_mut(t.0 as usize)?;
                // The failed attempt runs nothing more: its mailbox and input
                // buffers go with it (its writer and async work are read from
                // its task state, which the reducer has torn down).
                side.mailbox.clear();
                for c in &mut side.inputs {
                    c.queue.clear();
                }
                let attempt = side.attempt;
                self.coord_event(n, CEv::TaskFailed { task: t, attempt }, log.as_deref_mut());
            }
            Action::RestartTask(t) => {
                let fresh = self.fresh_task();
                let side = n.tasks.get_mut(t.0 as usize)?;
                if !side.is_down() {
                    return None;
                }
                side.restart(fresh);
                let attempt = side.attempt;
                self.coord_event(n, CEv::TaskRunning { task: t, attempt }, log.as_deref_mut());
            }
            Action::StopScheduler => {
                n.used.scheduler_stops = n.used.scheduler_stops.saturating_add(1);
                n.scheduler_stopped = true;
                self.coord_event(n, CEv::StopScheduler, log.as_deref_mut());
            }
            Action::StartScheduler => {
                n.scheduler_stopped = false;
                self.coord_event(n, CEv::StartScheduler, log.as_deref_mut());
            }
            Action::CoordinatorFailover { commit } => {
                let storing = n.io.iter().find_map(|x| match x {
                    Io::Store(c) => Some(*c),
                    Io::Allocate(_) | Io::Hooks(_) | Io::Finalize(_) => None,
                });
                if commit && storing.is_none() {
                    return None;
                }
                n.used.coordinator_failovers = n.used.coordinator_failovers.saturating_add(1);
                n.history.disrupted = true;
                self.coordinator_failover(n, storing.filter(|_| commit), log.as_deref_mut());
            }
            Action::EndOfInput(t) => {
                n.used.end_of_input = n.used.end_of_input.saturating_add(1);
                self.task_event(n, t, TEv::EndOfInput, log.as_deref_mut());
            }
            Action::JobFailover => {
                if !n.job_failover_due {
                    return None;
                }
                n.used.job_failovers = n.used.job_failovers.saturating_add(1);
                n.history.disrupted = true;
                n.job_failover_due = false;
                self.job_failover(n, log.as_deref_mut());
            }
        }
        if n.violation.is_none() && n.quiet() {
            self.check_quiet(n, log);
        }
        Some(())
    }

    /// At quiescence: no task holds a write result, and no result any task
    /// created was left unsettled or unremoved.
    fn check_quiet(&self, n: &mut World, log: Option<&mut Vec<Delivery>>) {
        let in_doubt: Vec<StateHandle> = n
            .coord
            .in_doubt()
            .map_or(Vec::new(), |c| c.handles().collect());
        let owned: Vec<StateHandle> = n
            .coord
            .owned_handles()
            .into_iter()
            .filter(|h| !in_doubt.contains(h))
            .collect();
        let durable = n.durable.ledger.check_quiet(&owned);
        for side in &n.tasks {
            let leaked = side.monitor.leaked();
            let r = durable
                .clone()
                .and_then(|()| check_quiescent(&side.st))
                .and_then(|()| {
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
                if let Some(last) = log.and_then(|l| l.last_mut()) {
                    last.violation = Some(v.clone());
                }
                n.violation = Some(v);
                return;
            }
        }
    }

    /// The host carries out one I/O request of `who`'s, successfully
    /// unless `ok` is false (an injected fault), and says what to answer.
    /// A request that writes durable state (the id counter, metadata, the
    /// commit) is refused when a newer generation was claimed: that is the
    /// fencing of a deposed leader.
    fn carry_out(&self, n: &mut World, who: Leader, io: Io, ok: bool) -> IoAnswer {
        let failed = |why: &str| IoAnswer::Failed(IoFailure(why.into()));
        if !ok {
            if let Io::Store(checkpoint) = io {
                // Definitely not stored: its metadata goes.
                n.durable.metadata.retain(|m| m.id != checkpoint);
            }
            return failed("injected");
        }
        let coord = match who {
            Leader::Current => n.coord.clone(),
            Leader::Zombie => match &n.zombie {
                Some(z) => z.coord.clone(),
                None => return failed("no such coordinator"),
            },
        };
        if !matches!(io, Io::Hooks(_)) && Self::fenced(n, coord.generation()) {
            n.history.fenced = true;
            return failed("refused: a newer generation holds the store");
        }
        match io {
            Io::Allocate(_) => {
                // The durable counter advances, then answers.
                let id = n
                    .durable
                    .counter
                    .map_or(CheckpointId(1), |l| l.next().unwrap_or(l));
                n.durable.counter = Some(id);
                IoAnswer::Ok { id }
            }
            Io::Hooks(id) => IoAnswer::Ok { id },
            Io::Finalize(checkpoint) => match finalize_record(&coord, checkpoint) {
                Some(meta) => {
                    n.durable.metadata.retain(|m| m.id != checkpoint);
                    let at = n.durable.metadata.partition_point(|m| m.id < checkpoint);
                    n.durable.metadata.insert(at, meta);
                    IoAnswer::Ok { id: checkpoint }
                }
                None => failed("not finalizing"),
            },
            Io::Store(checkpoint) => {
                // A store write that already committed (the old leader's,
                // whose answer a failover overtook) answers as it did.
                if n.durable.ledger.holds(checkpoint) || self.commit(n, checkpoint) {
                    IoAnswer::Ok { id: checkpoint }
                } else {
                    failed("refused")
                }
            }
        }
    }

    /// The store commits checkpoint `checkpoint` from its finalized
    /// metadata, if that is a legal commit ([`ckpt_core::commit`]; the
    /// legacy store of `StoreRefusesOlderSavepoint` wants every commit
    /// above everything it holds). The oldest checkpoints beyond retention
    /// leave the store; their state is the coordinator's to delete (or,
    /// after a shutdown, the host's, as `ResolveInDoubt` lists it). `false`
    /// when nothing was committed: no metadata, or the store refused.
    fn commit(&self, n: &mut World, checkpoint: CheckpointId) -> bool {
        let Some(at) = n.durable.metadata.iter().position(|m| m.id == checkpoint) else {
            return false;
        };
        let Some(meta) = n.durable.metadata.get(at).cloned() else {
            return false;
        };
        let legal = if self.cfg.semantics.is(LegacyBug::StoreRefusesOlderSavepoint) {
            n.durable.ledger.store().iter().all(|s| s.id < checkpoint)
        } else {
            n.durable.ledger.may_commit(checkpoint, meta.savepoint)
        };
        if !legal {
            if let Err(v) = n.durable.ledger.refused(checkpoint, meta.savepoint) {
                n.violation.get_or_insert(v);
            }
            return false;
        }
        n.durable.metadata.remove(at);
        let store = n.durable.ledger.store();
        if meta.savepoint && store.iter().any(|s| s.id > checkpoint) {
            n.history.savepoint_after_newer = true;
        }
        if meta
            .handles
            .iter()
            .any(|h| store.iter().any(|s| s.handles.contains(h)))
        {
            n.history.shared_committed = true;
        }
        match n.durable.ledger.commit(meta) {
            Ok(evicted) => {
                if !evicted.is_empty() && n.durable.ledger.store().iter().any(|s| s.savepoint) {
                    n.history.savepoint_outlived = true;
                }
            }
            Err(v) => {
                n.violation.get_or_insert(v);
            }
        }
        true
    }

    /// An ack the coordinator did not take (it is shut down), or whose last
    /// copy the network lost, leaves its state with the host, which deletes
    /// it unless the store references it or the coordinator owns it (what
    /// a host's cleaner spares: the store's checkpoints and
    /// `CoordinatorState::owned_handles`, which includes a checkpoint in
    /// doubt), or it is already gone.
    fn reclaim(n: &mut World, h: StateHandle) {
        let stored = n
            .durable
            .ledger
            .store()
            .iter()
            .any(|c| c.handles.contains(&h));
        let owned = n.coord.owned_handles().contains(&h);
        if !stored && !owned && n.durable.ledger.exists(h) {
            if let Err(v) = n.durable.ledger.delete(h, Deleter::Host) {
                n.violation.get_or_insert(v);
            }
        }
    }

    /// The host resolves the checkpoint a shut-down coordinator left in
    /// doubt, once its finalize or store answer is in, exactly as
    /// `ResolveInDoubt` says: the store holds it, `discard_if_stored` goes;
    /// it does not, its metadata goes, then `discard_if_not_stored`.
    fn resolve_in_doubt(&self, n: &mut World, answered: CheckpointId) {
        let Some(d) = n.durable.in_doubt.clone() else {
            return;
        };
        if d.checkpoint != answered {
            return;
        }
        n.durable.in_doubt = None;
        let list = if n.durable.ledger.holds(d.checkpoint) {
            n.history.in_doubt_kept = true;
            d.if_stored
        } else {
            n.durable.metadata.retain(|m| m.id != d.checkpoint);
            d.if_not_stored
        };
        for h in list {
            if let Err(v) = n.durable.ledger.delete(h, Deleter::Host) {
                n.violation.get_or_insert(v);
            }
        }
    }

    /// Step 1 of the failover recipes: every running task attempt is
    /// stopped (closed): its mailbox and input channels go, and it runs
    /// nothing until [`Sim::start_tasks`]. Returns the attempts stopped.
    fn stop_all(
        &self,
        n: &mut World,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Vec<(TaskId, AttemptNo)> {
        let mut stopped = Vec::new();
        for i in 0..n.tasks.len() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            let Some(side) = n.tasks.get(i) else { continue };
            if side.is_down() {
                continue;
            }
            stopped.push((t, side.attempt));
            self.task_event(n, t, TEv::Close, log.as_deref_mut());
            if let Some(side) = n.tasks.get_mut(i) {
                side.mailbox.clear();
                for c in &mut side.inputs {
                    c.queue.clear();
                }
            }
        }
        stopped
    }

    /// The last steps of the failover recipes, once `RestoreState` came:
    /// a fresh task state per task under its next attempt, then
    /// `TaskRunning` for each.
    fn start_tasks(&self, n: &mut World, mut log: Option<&mut Vec<Delivery>>) {
        n.awaiting_restore = false;
        let fresh = self.fresh_task();
        for side in &mut n.tasks {
            side.restart(fresh.clone());
        }
        for i in 0..n.tasks.len() {
            let task = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            let attempt = n.tasks.get(i).map_or(AttemptNo(0), |s| s.attempt);
            self.coord_event(n, CEv::TaskRunning { task, attempt }, log.as_deref_mut());
        }
    }

    /// The coordinator's process died (`committed`: the store write of that
    /// checkpoint had become durable), or, with `zombie_coordinators`, it
    /// lost leadership and keeps running with its outstanding I/O. The
    /// crate docs' recovery recipe follows: the tasks are stopped; the new
    /// leader claims a generation above the store's newest; recovery
    /// removes what the store does not reference (half-written metadata,
    /// state files no stored checkpoint holds, as `FileStore::open` does);
    /// a new coordinator takes `Recover` from the store and the id counter,
    /// then `Restore { Latest }`; fresh task attempts start from it.
    fn coordinator_failover(
        &self,
        n: &mut World,
        committed: Option<CheckpointId>,
        mut log: Option<&mut Vec<Delivery>>,
    ) {
        if let Some(c) = committed {
            self.commit(n, c);
        }
        let io = std::mem::take(&mut n.io);
        if n.used.zombies < self.cfg.zombie_coordinators && !io.is_empty() {
            n.used.zombies = n.used.zombies.saturating_add(1);
            n.zombie = Some(Zombie {
                coord: n.coord.clone(),
                ledger: n.ledger.clone(),
                io,
            });
        }
        self.stop_all(n, log.as_deref_mut());
        n.durable.metadata.clear();
        n.durable.in_doubt = None;
        let stray: Vec<StateHandle> = n
            .durable
            .ledger
            .live()
            .filter(|h| {
                !n.durable
                    .ledger
                    .store()
                    .iter()
                    .any(|c| c.handles.contains(h))
            })
            .collect();
        for h in stray {
            if let Err(v) = n.durable.ledger.delete(h, Deleter::Host) {
                n.violation.get_or_insert(v);
            }
        }
        n.job_failover_due = false;
        n.scheduler_stopped = false;
        n.awaiting_restore = true;
        n.coord = match CoordinatorState::from_settings(self.settings.clone()) {
            Ok(c) => Sealed::new(c),
            Err(e) => panic!("settings rejected after validation: {e}"),
        };
        n.ledger = Sealed::new(HandleLedger::new());
        let checkpoints = n
            .durable
            .ledger
            .store()
            .iter()
            .map(|c| RecoveredCheckpoint {
                checkpoint: c.id,
                savepoint: c.savepoint,
                timestamp: c.timestamp,
                handles: c.handles.clone(),
            })
            .collect();
        let last_id = n.durable.counter;
        let generation = Generation(n.durable.fence.0.saturating_add(1));
        let recovered = self.coord_event(
            n,
            CEv::Recover {
                checkpoints,
                last_id,
                generation,
            },
            log.as_deref_mut(),
        );
        // The claim (create-if-absent in a real store) is of the
        // coordinator's own generation: the one every write carries.
        n.durable.fence = n.durable.fence.max(n.coord.generation());
        // The new coordinator must take over everything the store holds; a
        // refused recovery would restore nothing and leak the stored state.
        if let Outcome::Rejected(e) = &recovered {
            if let Err(v) = n.durable.ledger.nothing_restored(Some(&e.to_string())) {
                n.violation.get_or_insert(v);
            }
        }
        self.restore_latest(n, log.as_deref_mut());
        self.coord_event(n, CEv::StartScheduler, log);
    }

    /// A job failover after `FailJob`, the crate docs' recipe: every task
    /// attempt is stopped, the coordinator hears `TaskFailed` for each, then
    /// `Restore { Latest }`; the tasks start again when `RestoreState` comes
    /// (at once, or when a completion in flight has answered).
    fn job_failover(&self, n: &mut World, mut log: Option<&mut Vec<Delivery>>) {
        let stopped = self.stop_all(n, log.as_deref_mut());
        for (task, attempt) in stopped {
            self.coord_event(n, CEv::TaskFailed { task, attempt }, log.as_deref_mut());
        }
        n.awaiting_restore = true;
        self.restore_latest(n, log);
    }

    fn restore_latest(&self, n: &mut World, log: Option<&mut Vec<Delivery>>) {
        let source = RestoreSource::Latest {
            error_if_none: false,
        };
        // What is restored (now or later) is checked where `RestoreState`
        // is routed.
        self.coord_event(n, CEv::Restore { source }, log);
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
