//! The coordinator and its tasks together over a faulty in-memory network.
//!
//! Topology: task 0 is the source (triggered by the coordinator); tasks
//! `1..=n` are downstream of it and receive its barriers and cancel markers.
//! Every task is waited for and committed to.
//!
//! What travels:
//! * **network** (coordinator <-> tasks RPC, task -> task channels): may be
//!   delivered in any order, duplicated or dropped;
//! * **host I/O answers** (id allocation, hooks, finalize, store): any
//!   order, may be duplicated or answered with a failure, never lost (the
//!   host contract: every I/O effect is answered);
//! * **local reports** (channel-state writer, async snapshot part): any
//!   order, may fail, never lost or duplicated;
//! * **mailboxes**: FIFO per task, never lost.
//!
//! Timers fire when time passes their deadline ([`SysAction::Tick`]),
//! including while messages are still in flight ("delay past timeouts"). A
//! task that fails is reported to the coordinator (reliably), closed and
//! restarted under a new attempt; messages for an old attempt are dropped.
//!
//! [`SystemDriver::heal`] stops all faults and keeps timers firing: a
//! checkpoint must then complete within a bounded number of steps.

use std::collections::{BTreeMap, VecDeque};

use arbitrary::Arbitrary;
use ckpt_core::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, Outcome as COutcome, RequestId,
    Timer, TriggerKind,
};
use ckpt_core::invariants::Violation;
use ckpt_core::task::{Outcome as TOutcome, Semantics, TaskConfig, TaskEffect, TaskEvent};
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{AttemptNo, CheckpointId, IoFailure, Millis, StateHandle, TaskId, Thread};

use super::coordinator::CoordDriver;
use super::task::TaskDriver;
use super::{Failure, JOB};

/// The shape of the system (folded into small ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct SystemSpec {
    /// Downstream tasks (folded to 0..=2).
    pub downstream: u8,
    /// Master hooks registered.
    pub hooks: bool,
    /// Interval (folded to 10..=109 ms).
    pub interval: u8,
    /// Timeout (folded to 20..=219 ms).
    pub timeout: u8,
    /// Minimum pause (folded to 0..=49 ms).
    pub min_pause: u8,
    /// Max concurrent (folded to 1..=2).
    pub max_concurrent: u8,
    /// Tolerable failures (folded to 0..=2).
    pub tolerable: u8,
    /// Retained (folded to 1..=2).
    pub retained: u8,
    /// Aborted-id memory of the tasks (folded to 1..=3).
    pub aborted_ids_max: u8,
}

impl SystemSpec {
    /// Number of tasks (source included).
    #[must_use]
    pub fn tasks(&self) -> u32 {
        u32::from(self.downstream % 3) + 1
    }

    /// The coordinator settings.
    #[must_use]
    pub fn settings(&self) -> CoordinatorSettings {
        let mut s = CoordinatorSettings::with_tasks(JOB, self.tasks());
        s.interval_ms = i64::from(self.interval % 100) + 10;
        s.timeout_ms = i64::from(self.timeout % 200) + 20;
        s.min_pause_ms = i64::from(self.min_pause % 50);
        s.max_concurrent = i64::from(self.max_concurrent % 2) + 1;
        s.tolerable_failures = i64::from(self.tolerable % 3);
        s.retained_max = i64::from(self.retained % 2) + 1;
        s.master_hooks = u32::from(self.hooks);
        s
    }

    /// The configuration of every task.
    #[must_use]
    pub fn task_config(&self, semantics: Semantics) -> TaskConfig {
        TaskConfig {
            semantics,
            aborted_ids_max: usize::from(self.aborted_ids_max % 3) + 1,
        }
    }
}

/// One abstract step of a system story. Indices pick among what is in
/// flight (modulo its length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum SysAction {
    /// Deliver one message (any order = reordering).
    Deliver(u8),
    /// Deliver one message as a failure where it can fail (I/O answer,
    /// writer, async part); other messages are delivered normally.
    DeliverFailing(u8),
    /// Duplicate a network message or an I/O answer.
    Duplicate(u8),
    /// Drop a network message.
    Drop(u8),
    /// Deliver everything in flight, oldest first (no faults).
    Flush,
    /// Run the oldest mail of a task.
    RunMail(u8),
    /// Time passes; due timers fire.
    Tick(u16),
    /// Time jumps to the next timer deadline; it fires.
    FireNextTimer,
    /// A user trigger.
    Trigger {
        /// Savepoint.
        savepoint: bool,
        /// Forced.
        forced: bool,
    },
    /// Start periodic scheduling.
    StartScheduler,
    /// Stop periodic scheduling.
    StopScheduler,
    /// A task's operator fails (the task restarts under a new attempt).
    OperatorFailed(u8),
}

/// A whole system story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct SystemStory {
    /// The shape.
    pub spec: SystemSpec,
    /// The actions (the scheduler is started first).
    pub actions: Vec<SysAction>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Io {
    Allocate(RequestId),
    Hooks(CheckpointId),
    Finalize(CheckpointId),
    Store(CheckpointId),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Msg {
    Coord(CoordinatorEvent),
    Task {
        task: u32,
        attempt: u32,
        event: TaskEvent,
    },
    Io(Io),
    Writer {
        task: u32,
        attempt: u32,
        checkpoint: CheckpointId,
    },
    Async {
        task: u32,
        attempt: u32,
        checkpoint: CheckpointId,
    },
}

impl Msg {
    fn lossy(&self) -> bool {
        matches!(self, Msg::Coord(_) | Msg::Task { .. })
    }
    fn duplicable(&self) -> bool {
        matches!(self, Msg::Coord(_) | Msg::Task { .. } | Msg::Io(_))
    }
}

/// One task slot: its current attempt's driver and mailbox.
#[derive(Clone, Debug)]
struct Slot {
    attempt: u32,
    driver: TaskDriver,
    mailbox: VecDeque<CheckpointId>,
}

/// Counters of what happened (for reports and coverage).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysStats {
    /// Events delivered to the coordinator.
    pub coordinator_events: usize,
    /// Events delivered to tasks.
    pub task_events: usize,
    /// Messages dropped by the network (or addressed to a dead attempt).
    pub dropped: usize,
    /// Messages duplicated.
    pub duplicated: usize,
    /// Checkpoints completed (ids, in order).
    pub completed: Vec<CheckpointId>,
    /// `FailJob` effects.
    pub job_failures: usize,
    /// Task restarts.
    pub restarts: usize,
}

/// One delivered event, for determinism checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysStep {
    /// To the coordinator.
    Coord {
        /// When.
        now: Millis,
        /// What.
        event: CoordinatorEvent,
        /// Effects.
        effects: Vec<CoordinatorEffect>,
        /// Outcome.
        outcome: COutcome,
    },
    /// To a task attempt (trace key).
    Task {
        /// Trace key (`task * 100_000 + attempt`).
        key: TaskId,
        /// What.
        event: TaskEvent,
        /// Effects.
        effects: Vec<TaskEffect>,
        /// Outcome.
        outcome: TOutcome,
    },
}

/// Drives the whole system.
#[derive(Clone, Debug)]
pub struct SystemDriver {
    /// The coordinator.
    pub coord: CoordDriver,
    slots: Vec<Slot>,
    config: TaskConfig,
    inflight: Vec<Msg>,
    timers: BTreeMap<Timer, Millis>,
    now: Millis,
    next_id: u64,
    next_handle: u64,
    /// Every task attempt created, by trace key.
    attempts: Vec<(TaskId, TaskConfig)>,
    lines: Vec<TraceLine>,
    /// Every delivered event and its result.
    pub log: Vec<SysStep>,
    /// Counters.
    pub stats: SysStats,
}

fn answer(fail: bool) -> Result<(), IoFailure> {
    if fail {
        Err(IoFailure("injected".into()))
    } else {
        Ok(())
    }
}

fn key(task: u32, attempt: u32) -> TaskId {
    TaskId(task.saturating_mul(100_000).saturating_add(attempt))
}

impl SystemDriver {
    /// A fresh system with the scheduler started.
    pub fn new(spec: &SystemSpec, semantics: Semantics) -> Result<Self, Violation> {
        let coord = CoordDriver::new(spec.settings())
            .map_err(|e| Violation::new("valid-settings", e.to_string()))?;
        let config = spec.task_config(semantics);
        let mut slots = Vec::new();
        let mut attempts = Vec::new();
        for t in 0..spec.tasks() {
            let driver = TaskDriver::new(config.clone())
                .map_err(|e| Violation::new("valid-config", e.to_string()))?;
            slots.push(Slot {
                attempt: 0,
                driver,
                mailbox: VecDeque::new(),
            });
            attempts.push((key(t, 0), config.clone()));
        }
        let mut d = SystemDriver {
            coord,
            slots,
            config,
            inflight: Vec::new(),
            timers: BTreeMap::new(),
            now: Millis(0),
            next_id: 1,
            next_handle: 1,
            attempts,
            lines: Vec::new(),
            log: Vec::new(),
            stats: SysStats::default(),
        };
        d.send_coord(CoordinatorEvent::StartScheduler)?;
        Ok(d)
    }

    /// Everything delivered so far as a trace (task attempts are separate
    /// machines keyed `task * 100_000 + attempt`).
    #[must_use]
    pub fn trace(&self) -> Trace {
        Trace {
            coordinator: Some(self.coord.trace().coordinator.unwrap_or_else(|| {
                CoordinatorSettings::with_tasks(JOB, u32::try_from(self.slots.len()).unwrap_or(1))
            })),
            tasks: self.attempts.clone(),
            steps: self.lines.clone(),
        }
    }

    /// Final states of the current task attempts.
    #[must_use]
    pub fn task_states(&self) -> Vec<ckpt_core::task::TaskState> {
        self.slots.iter().map(|s| s.driver.state.clone()).collect()
    }

    /// Messages still in flight.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn send_coord(&mut self, event: CoordinatorEvent) -> Result<(), Violation> {
        let now = self.now;
        self.lines.push(TraceLine::Coordinator {
            now,
            event: event.clone(),
        });
        self.stats.coordinator_events += 1;
        let n = self.coord.records.len();
        let r = self.coord.deliver(now, event.clone());
        let rec = self.coord.records.get(n).cloned();
        if let Some(rec) = rec {
            self.log.push(SysStep::Coord {
                now,
                event,
                effects: rec.effects.clone(),
                outcome: rec.outcome.clone(),
            });
            r?;
            for e in rec.effects {
                self.on_coord_effect(e);
            }
            return Ok(());
        }
        r
    }

    fn on_coord_effect(&mut self, e: CoordinatorEffect) {
        match e {
            CoordinatorEffect::ScheduleTimer { timer, at } => {
                self.timers.insert(timer, at);
            }
            CoordinatorEffect::CancelTimer { timer } => {
                self.timers.remove(&timer);
            }
            CoordinatorEffect::AllocateCheckpointId { request } => {
                self.inflight.push(Msg::Io(Io::Allocate(request)));
            }
            CoordinatorEffect::TriggerMasterHooks { checkpoint, .. } => {
                self.inflight.push(Msg::Io(Io::Hooks(checkpoint)));
            }
            CoordinatorEffect::TriggerTask {
                task,
                attempt,
                checkpoint,
                ..
            } => self.inflight.push(Msg::Task {
                task: task.0,
                attempt: attempt.0,
                event: TaskEvent::TriggerCheckpoint { checkpoint },
            }),
            CoordinatorEffect::FinalizeCheckpoint { checkpoint, .. } => {
                self.inflight.push(Msg::Io(Io::Finalize(checkpoint)));
            }
            CoordinatorEffect::StoreCheckpoint { checkpoint } => {
                self.inflight.push(Msg::Io(Io::Store(checkpoint)));
            }
            CoordinatorEffect::NotifyComplete {
                task,
                attempt,
                checkpoint,
                ..
            } => self.inflight.push(Msg::Task {
                task: task.0,
                attempt: attempt.0,
                event: TaskEvent::NotifyComplete { checkpoint },
            }),
            CoordinatorEffect::NotifyAborted {
                task,
                attempt,
                checkpoint,
                ..
            } => self.inflight.push(Msg::Task {
                task: task.0,
                attempt: attempt.0,
                event: TaskEvent::NotifyAborted { checkpoint },
            }),
            CoordinatorEffect::CheckpointCompleted { checkpoint, .. } => {
                self.stats.completed.push(checkpoint);
            }
            CoordinatorEffect::FailJob { .. } => self.stats.job_failures += 1,
            CoordinatorEffect::DiscardState { .. }
            | CoordinatorEffect::CheckpointAborted { .. }
            | CoordinatorEffect::RequestFailed { .. }
            | CoordinatorEffect::ResetIdCounter { .. }
            | CoordinatorEffect::RestoreState { .. }
            | CoordinatorEffect::ShutdownServices { .. } => {}
        }
    }

    fn send_task(&mut self, task: u32, event: TaskEvent) -> Result<(), Violation> {
        let Some(slot) = self.slots.get_mut(task as usize) else {
            return Ok(());
        };
        let attempt = slot.attempt;
        let k = key(task, attempt);
        self.lines.push(TraceLine::Task {
            now: self.now,
            task: k,
            event: event.clone(),
        });
        self.stats.task_events += 1;
        let n = slot.driver.records.len();
        let r = slot.driver.deliver(event.clone());
        let Some(rec) = slot.driver.records.get(n).cloned() else {
            return r;
        };
        self.log.push(SysStep::Task {
            key: k,
            event,
            effects: rec.effects.clone(),
            outcome: rec.outcome.clone(),
        });
        r?;
        let mut failed = false;
        for e in rec.effects {
            match e {
                TaskEffect::StartWriter { checkpoint } => self.inflight.push(Msg::Writer {
                    task,
                    attempt,
                    checkpoint,
                }),
                TaskEffect::ScheduleCheckpointMail { checkpoint } => {
                    if let Some(s) = self.slots.get_mut(task as usize) {
                        s.mailbox.push_back(checkpoint);
                    }
                }
                TaskEffect::BroadcastBarrier { checkpoint } => {
                    self.downstream(
                        task,
                        TaskEvent::BarrierReceived {
                            checkpoint,
                            via: Thread::Netty,
                        },
                    );
                }
                TaskEffect::BroadcastCancelMarker { checkpoint } => {
                    self.downstream(task, TaskEvent::CancelMarker { checkpoint });
                }
                TaskEffect::StartAsyncPart { checkpoint } => self.inflight.push(Msg::Async {
                    task,
                    attempt,
                    checkpoint,
                }),
                TaskEffect::AcknowledgeCheckpoint { checkpoint, handle } => {
                    self.inflight
                        .push(Msg::Coord(CoordinatorEvent::Acknowledge {
                            job: JOB,
                            task: TaskId(task),
                            attempt: AttemptNo(attempt),
                            checkpoint,
                            state: Some(handle),
                        }));
                }
                TaskEffect::DeclineCheckpoint { checkpoint, reason } => {
                    self.inflight.push(Msg::Coord(CoordinatorEvent::Decline {
                        job: JOB,
                        task: TaskId(task),
                        attempt: AttemptNo(attempt),
                        checkpoint,
                        reason,
                    }));
                }
                TaskEffect::FailTask { .. } => failed = true,
                TaskEffect::AbortWriter { .. }
                | TaskEffect::CancelAsyncPart { .. }
                | TaskEffect::DiscardState { .. }
                | TaskEffect::NotifyOperatorsComplete { .. }
                | TaskEffect::NotifyOperatorsAborted { .. } => {}
            }
        }
        if failed {
            self.restart(task)?;
        }
        Ok(())
    }

    fn downstream(&mut self, from: u32, event: TaskEvent) {
        if from != 0 {
            return;
        }
        for (t, s) in self.slots.iter().enumerate().skip(1) {
            self.inflight.push(Msg::Task {
                task: u32::try_from(t).unwrap_or(u32::MAX),
                attempt: s.attempt,
                event: event.clone(),
            });
        }
    }

    /// The failed attempt is reported (reliably), closed, and a new attempt
    /// starts and is reported running.
    fn restart(&mut self, task: u32) -> Result<(), Violation> {
        let Some(attempt) = self.slots.get(task as usize).map(|s| s.attempt) else {
            return Ok(());
        };
        self.stats.restarts += 1;
        self.send_coord(CoordinatorEvent::TaskFailed {
            task: TaskId(task),
            attempt: AttemptNo(attempt),
        })?;
        self.send_task(task, TaskEvent::Close)?;
        let driver = TaskDriver::new(self.config.clone())
            .map_err(|e| Violation::new("valid-config", e.to_string()))?;
        let next = attempt.saturating_add(1);
        if let Some(s) = self.slots.get_mut(task as usize) {
            *s = Slot {
                attempt: next,
                driver,
                mailbox: VecDeque::new(),
            };
        }
        self.attempts.push((key(task, next), self.config.clone()));
        self.send_coord(CoordinatorEvent::TaskRunning {
            task: TaskId(task),
            attempt: AttemptNo(next),
        })
    }

    fn current(&self, task: u32, attempt: u32) -> bool {
        self.slots
            .get(task as usize)
            .is_some_and(|s| s.attempt == attempt)
    }

    fn deliver(&mut self, msg: Msg, fail: bool) -> Result<(), Violation> {
        match msg {
            Msg::Coord(ev) => self.send_coord(ev),
            Msg::Task {
                task,
                attempt,
                event,
            } => {
                if self.current(task, attempt) {
                    self.send_task(task, event)
                } else {
                    self.stats.dropped += 1;
                    Ok(())
                }
            }
            Msg::Io(io) => {
                let ev = match io {
                    Io::Allocate(request) => {
                        let result = if fail {
                            Err(IoFailure("injected".into()))
                        } else {
                            let id = CheckpointId(self.next_id);
                            self.next_id += 1;
                            Ok(id)
                        };
                        CoordinatorEvent::CheckpointIdAllocated { request, result }
                    }
                    Io::Hooks(checkpoint) => CoordinatorEvent::MasterHooksDone {
                        checkpoint,
                        result: answer(fail),
                    },
                    Io::Finalize(checkpoint) => CoordinatorEvent::FinalizeDone {
                        checkpoint,
                        result: answer(fail),
                    },
                    Io::Store(checkpoint) => CoordinatorEvent::StoreDone {
                        checkpoint,
                        result: answer(fail),
                    },
                };
                self.send_coord(ev)
            }
            Msg::Writer {
                task,
                attempt,
                checkpoint,
            } => {
                if !self.current(task, attempt) {
                    return Ok(());
                }
                let ev = if fail {
                    TaskEvent::WriterFailed { checkpoint }
                } else {
                    TaskEvent::WriterCompleted { checkpoint }
                };
                self.send_task(task, ev)
            }
            Msg::Async {
                task,
                attempt,
                checkpoint,
            } => {
                if !self.current(task, attempt) {
                    return Ok(());
                }
                let ev = if fail {
                    TaskEvent::AsyncPartFailed { checkpoint }
                } else {
                    let handle = StateHandle(self.next_handle);
                    self.next_handle += 1;
                    TaskEvent::AsyncPartCompleted { checkpoint, handle }
                };
                self.send_task(task, ev)
            }
        }
    }

    fn take(&mut self, i: u8) -> Option<Msg> {
        if self.inflight.is_empty() {
            return None;
        }
        let n = self.inflight.len();
        Some(self.inflight.remove(usize::from(i) % n))
    }

    fn run_mail(&mut self, task: u32) -> Result<(), Violation> {
        let Some(cp) = self
            .slots
            .get_mut(task as usize)
            .and_then(|s| s.mailbox.pop_front())
        else {
            return Ok(());
        };
        self.send_task(task, TaskEvent::CheckpointMail { checkpoint: cp })
    }

    /// Fires every timer due at `now` (in timer order), bounded.
    fn fire_due(&mut self) -> Result<(), Violation> {
        for _ in 0..64 {
            let due = self
                .timers
                .iter()
                .find(|(_, at)| **at <= self.now)
                .map(|(t, _)| *t);
            let Some(timer) = due else {
                return Ok(());
            };
            self.timers.remove(&timer);
            self.send_coord(CoordinatorEvent::TimerFired { timer })?;
        }
        Ok(())
    }

    fn fire_next(&mut self) -> Result<bool, Violation> {
        let Some(at) = self.timers.values().min().copied() else {
            return Ok(false);
        };
        if at > self.now {
            self.now = at;
        }
        self.fire_due()?;
        Ok(true)
    }

    /// Runs one action.
    pub fn act(&mut self, action: SysAction) -> Result<(), Violation> {
        match action {
            SysAction::Deliver(i) => match self.take(i) {
                Some(m) => self.deliver(m, false),
                None => Ok(()),
            },
            SysAction::DeliverFailing(i) => match self.take(i) {
                Some(m) => self.deliver(m, true),
                None => Ok(()),
            },
            SysAction::Duplicate(i) => {
                let n = self.inflight.len();
                if n > 0 {
                    if let Some(m) = self.inflight.get(usize::from(i) % n).cloned() {
                        if m.duplicable() {
                            self.stats.duplicated += 1;
                            self.inflight.push(m);
                        }
                    }
                }
                Ok(())
            }
            SysAction::Drop(i) => {
                let n = self.inflight.len();
                if n > 0
                    && self
                        .inflight
                        .get(usize::from(i) % n)
                        .is_some_and(Msg::lossy)
                {
                    self.inflight.remove(usize::from(i) % n);
                    self.stats.dropped += 1;
                }
                Ok(())
            }
            SysAction::Flush => {
                for _ in 0..256 {
                    if self.inflight.is_empty() {
                        break;
                    }
                    let m = self.inflight.remove(0);
                    self.deliver(m, false)?;
                }
                Ok(())
            }
            SysAction::RunMail(t) => {
                let n = u8::try_from(self.slots.len()).unwrap_or(1).max(1);
                self.run_mail(u32::from(t % n))
            }
            SysAction::Tick(ms) => {
                self.now = self.now.saturating_add(u64::from(ms));
                self.fire_due()
            }
            SysAction::FireNextTimer => self.fire_next().map(|_| ()),
            SysAction::Trigger { savepoint, forced } => {
                self.send_coord(CoordinatorEvent::Trigger {
                    kind: if savepoint {
                        TriggerKind::Savepoint {
                            target: "/savepoints".into(),
                        }
                    } else {
                        TriggerKind::Checkpoint { forced }
                    },
                })
            }
            SysAction::StartScheduler => self.send_coord(CoordinatorEvent::StartScheduler),
            SysAction::StopScheduler => self.send_coord(CoordinatorEvent::StopScheduler),
            SysAction::OperatorFailed(t) => {
                let n = u8::try_from(self.slots.len()).unwrap_or(1).max(1);
                self.send_task(u32::from(t % n), TaskEvent::OperatorFailed)
            }
        }
    }

    /// Faults stop: every message is delivered oldest first and succeeds,
    /// mailboxes drain, and when nothing else can happen time jumps to the
    /// next timer. Returns the first checkpoint completed after healing
    /// began, or a `liveness` violation if none completes within `bound`
    /// steps.
    pub fn heal(&mut self, bound: usize) -> Result<CheckpointId, Violation> {
        let before = self.stats.completed.len();
        if !self.coord.state.is_periodic_scheduling() {
            self.send_coord(CoordinatorEvent::StartScheduler)?;
        }
        for _ in 0..bound {
            if let Some(cp) = self.stats.completed.get(before) {
                return Ok(*cp);
            }
            if !self.inflight.is_empty() {
                let m = self.inflight.remove(0);
                self.deliver(m, false)?;
                continue;
            }
            let with_mail = self.slots.iter().position(|s| !s.mailbox.is_empty());
            if let Some(t) = with_mail {
                self.run_mail(u32::try_from(t).unwrap_or(0))?;
                continue;
            }
            if !self.fire_next()? {
                return Err(Violation::new(
                    "liveness",
                    "healed system is stuck: nothing in flight, no mail, no timer armed",
                ));
            }
        }
        if let Some(cp) = self.stats.completed.get(before) {
            return Ok(*cp);
        }
        Err(Violation::new(
            "liveness",
            format!(
                "no checkpoint completed within {bound} steps after healing \
                 (pending {:?}, in flight {}, timers {:?})",
                self.coord
                    .state
                    .pending()
                    .map(|p| (p.id(), p.phase(), p.remaining()))
                    .collect::<Vec<_>>(),
                self.inflight.len(),
                self.timers
            ),
        ))
    }
}

/// Runs a story (fixed semantics unless given), checking every invariant
/// after every step; with `heal_bound`, then heals and requires a
/// completion within that many steps.
pub fn run(
    story: &SystemStory,
    semantics: Semantics,
    heal_bound: Option<usize>,
) -> Result<SystemDriver, Box<Failure>> {
    let mut d = SystemDriver::new(&story.spec, semantics)
        .map_err(|violation| Failure::at(0, violation, Trace::default()))?;
    super::drive(
        &mut d,
        story.actions.iter().copied(),
        SystemDriver::act,
        SystemDriver::trace,
    )?;
    if let Some(bound) = heal_bound {
        if let Err(violation) = d.heal(bound) {
            return Err(Failure::at(story.actions.len(), violation, d.trace()));
        }
    }
    Ok(d)
}
