//! Coordinator-only stories: the host's answers (ids, hooks, finalize,
//! store), acks, declines, task life cycle, timers, time, restore and
//! shutdown, in any order, plus raw arbitrary events.

use arbitrary::Arbitrary;
use ckpt_core::coordinator::{
    AckSlot, Clock, CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState,
    JobStatus, Outcome, PendingPhase, RequestId, RestoreSource, Timer, TriggerKind, TASK_ID_MAX,
};
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::invariants::Violation;
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{
    AttemptNo, CheckpointId, DeclineReason, IoFailure, JobId, Millis, StateHandle, TaskId,
};

use super::{pick, Failure, SettingsChoice, JOB};

/// How an id allocation is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum Alloc {
    /// The next id after the last one, plus a gap (ids may skip).
    Next(u8),
    /// The counter failed.
    Fail,
    /// An id not above the last one (host misuse: rejected).
    Stale,
    /// `u64::MAX` (no successor).
    Max,
    /// An answer for a request that is not in flight.
    WrongRequest,
}

/// Who a message claims to come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum Sender {
    /// The current attempt of the task, right job.
    Current,
    /// An older (or never seen newer) attempt.
    StaleAttempt,
    /// Another job.
    WrongJob,
}

/// One abstract step of a coordinator story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum CoordAction {
    /// `StartScheduler`.
    StartScheduler,
    /// `StopScheduler`.
    StopScheduler,
    /// A user trigger.
    Trigger {
        /// A savepoint (else a checkpoint).
        savepoint: bool,
        /// Forced (checkpoints only).
        forced: bool,
    },
    /// Time moves forward.
    Advance(u16),
    /// Time goes backwards (the next event is delivered with an earlier `now`).
    Rewind(u16),
    /// Fire an armed timer at its deadline (time jumps to it if needed).
    FireTimer(u8),
    /// Fire an armed timer now, possibly before its deadline.
    FireTimerEarly(u8),
    /// Fire a timeout for a checkpoint that is not pending (vanished / never was).
    FireVanishedTimeout(u8),
    /// Answer the id allocation.
    Allocate(Alloc),
    /// Answer the master hooks of a checkpoint.
    HooksDone {
        /// Which checkpoint (see `pick_checkpoint`).
        pick: u8,
        /// Hooks failed.
        fail: bool,
    },
    /// An acknowledgement.
    Ack {
        /// Which checkpoint.
        pick: u8,
        /// Which task.
        slot: u8,
        /// Who claims to send it.
        sender: Sender,
        /// Carries state.
        with_state: bool,
    },
    /// A decline.
    Decline {
        /// Which checkpoint.
        pick: u8,
        /// Which task.
        slot: u8,
        /// Who claims to send it.
        sender: Sender,
        /// Why.
        reason: DeclineReason,
    },
    /// Answer a finalize.
    FinalizeDone {
        /// Which checkpoint.
        pick: u8,
        /// It failed.
        fail: bool,
    },
    /// Answer a store.
    StoreDone {
        /// Which checkpoint.
        pick: u8,
        /// It failed.
        fail: bool,
    },
    /// A task attempt failed.
    TaskFailed {
        /// Which task.
        slot: u8,
        /// Report an attempt other than the current one.
        stale: bool,
    },
    /// A task attempt runs (a new one when `bump`).
    TaskRunning {
        /// Which task.
        slot: u8,
        /// A new attempt (else the current one again).
        bump: bool,
    },
    /// A task attempt finished (FLIP-147: `TaskFinished`).
    TaskFinished {
        /// Which task.
        slot: u8,
        /// Report an attempt other than the current one.
        stale: bool,
    },
    /// Restore the latest completed checkpoint.
    RestoreLatest {
        /// Having none is an error.
        error_if_none: bool,
    },
    /// Restore a savepoint with fresh handles.
    RestoreSavepoint {
        /// Id distance above the last id (255: `u64::MAX`).
        gap: u8,
        /// Number of handles (folded to 0..=3).
        handles: u8,
    },
    /// Shut down.
    Shutdown(JobStatus),
    /// Deliver an earlier event again (duplicate / late delivery).
    Redeliver(u16),
    /// An arbitrary event (state handles are renumbered to stay unique).
    Raw(CoordinatorEvent),
}

/// A whole coordinator story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct CoordStory {
    /// The configuration.
    pub settings: SettingsChoice,
    /// The actions, in order.
    pub actions: Vec<CoordAction>,
}

/// One delivered event and what came of it (for determinism checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordRecord {
    /// When.
    pub now: Millis,
    /// What.
    pub event: CoordinatorEvent,
    /// The effects.
    pub effects: Vec<CoordinatorEffect>,
    /// The outcome.
    pub outcome: Outcome,
    /// The clock verdict.
    pub clock: Clock,
    /// The state after.
    pub state: CoordinatorState,
}

/// Drives one coordinator, checking every invariant after every event.
#[derive(Clone, Debug)]
pub struct CoordDriver {
    /// The current state.
    pub state: CoordinatorState,
    /// The handle ledger.
    pub ledger: HandleLedger,
    /// The host's clock (may be set backwards by a story).
    pub now: Millis,
    /// Every delivered event with its step record.
    pub records: Vec<CoordRecord>,
    settings: CoordinatorSettings,
    next_handle: u64,
}

impl CoordDriver {
    /// A fresh coordinator for valid `settings`.
    pub fn new(settings: CoordinatorSettings) -> Result<Self, ckpt_core::coordinator::ConfigError> {
        Ok(CoordDriver {
            state: CoordinatorState::from_settings(settings.clone())?,
            ledger: HandleLedger::new(),
            now: Millis(0),
            records: Vec::new(),
            settings,
            next_handle: 1,
        })
    }

    /// The events delivered so far as a trace.
    #[must_use]
    pub fn trace(&self) -> Trace {
        Trace {
            coordinator: Some(self.settings.clone()),
            tasks: Vec::new(),
            steps: self
                .records
                .iter()
                .map(|r| TraceLine::Coordinator {
                    now: r.now,
                    event: r.event.clone(),
                })
                .collect(),
        }
    }

    fn fresh_handle(&mut self) -> StateHandle {
        let h = StateHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    /// Delivers one concrete event: pure and in-place entry points must
    /// agree, then every coordinator invariant is checked.
    pub fn deliver(&mut self, now: Millis, event: CoordinatorEvent) -> Result<(), Violation> {
        let (t, verdict) =
            checked::coordinator_step(&mut self.ledger, &self.state, now, &event, Rigor::Full);
        self.state = t.state;
        self.records.push(CoordRecord {
            now,
            event,
            effects: t.step.effects,
            outcome: t.step.outcome,
            clock: t.step.clock,
            state: self.state.clone(),
        });
        verdict
    }

    /// Candidate checkpoint ids: pending ones (most picks), then recent ones,
    /// then unknown ones (never used, zero, `u64::MAX`).
    fn pick_checkpoint(&self, p: u8) -> CheckpointId {
        let pending: Vec<CheckpointId> = self.state.pending().map(|c| c.id()).collect();
        if !pending.is_empty() && p < 192 {
            return pick(&pending, usize::from(p)).unwrap_or(CheckpointId(0));
        }
        let mut others: Vec<CheckpointId> = self.state.recent_ids().copied().collect();
        others.extend(self.state.completed().map(|c| c.id()));
        let next = self
            .state
            .last_id()
            .and_then(CheckpointId::next)
            .unwrap_or(CheckpointId(1));
        others.push(next);
        others.push(CheckpointId(0));
        others.push(CheckpointId(u64::MAX));
        pick(&others, usize::from(p)).unwrap_or(CheckpointId(0))
    }

    /// Mostly the checkpoint in `phase` (when there is one), else any.
    fn pick_in_phase(&self, p: u8, phase: PendingPhase) -> CheckpointId {
        let in_phase: Vec<CheckpointId> = self
            .state
            .pending()
            .filter(|c| c.phase() == phase)
            .map(|c| c.id())
            .collect();
        match pick(&in_phase, usize::from(p)) {
            Some(id) if p < 224 => id,
            Some(_) | None => self.pick_checkpoint(p),
        }
    }

    /// Mostly a task whose ack `checkpoint` still waits for, else any.
    fn pick_waiting_task(&self, checkpoint: CheckpointId, slot: u8) -> TaskId {
        let waiting: Vec<TaskId> = self
            .state
            .pending_checkpoint(checkpoint)
            .map(|p| {
                p.acks()
                    .zip(self.settings.tasks_to_wait.iter())
                    .filter(|(a, _)| *a == AckSlot::Waiting)
                    .map(|(_, t)| *t)
                    .collect()
            })
            .unwrap_or_default();
        match pick(&waiting, usize::from(slot)) {
            Some(t) if slot < 208 => t,
            Some(_) | None => self.pick_task(slot),
        }
    }

    /// Candidate tasks: every configured one plus two unknown ids.
    fn pick_task(&self, slot: u8) -> TaskId {
        let s = &self.settings;
        let mut tasks: Vec<TaskId> = s
            .tasks_to_trigger
            .iter()
            .chain(&s.tasks_to_wait)
            .chain(&s.tasks_to_commit)
            .copied()
            .collect();
        tasks.sort_unstable();
        tasks.dedup();
        let high = tasks.last().map_or(0, |t| t.0);
        tasks.push(TaskId(high + 1));
        tasks.push(TaskId(TASK_ID_MAX + 5));
        pick(&tasks, usize::from(slot)).unwrap_or(TaskId(0))
    }

    fn attempt_of(&self, task: TaskId) -> AttemptNo {
        self.state
            .task_status(task)
            .map_or(AttemptNo(0), |s| s.attempt)
    }

    /// The task `slot` picks and the attempt a host report names: its
    /// current one, or (`stale`) the one before it.
    fn reported_attempt(&self, slot: u8, stale: bool) -> (TaskId, AttemptNo) {
        let task = self.pick_task(slot);
        let a = self.attempt_of(task);
        let attempt = if stale {
            AttemptNo(a.0.wrapping_sub(1))
        } else {
            a
        };
        (task, attempt)
    }

    fn sender(&self, task: TaskId, sender: Sender) -> (JobId, AttemptNo) {
        let a = self.attempt_of(task);
        match sender {
            Sender::Current => (JOB, a),
            Sender::StaleAttempt => (JOB, AttemptNo(a.0.wrapping_add(1))),
            Sender::WrongJob => (JobId(JOB.0 + 1), a),
        }
    }

    /// Renumbers state handles of a raw event so every delivery is unique.
    fn normalize(&mut self, event: CoordinatorEvent) -> CoordinatorEvent {
        match event {
            CoordinatorEvent::Acknowledge {
                job,
                task,
                attempt,
                checkpoint,
                state,
            } => CoordinatorEvent::Acknowledge {
                job,
                task,
                attempt,
                checkpoint,
                state: state.map(|_| self.fresh_handle()),
            },
            CoordinatorEvent::Restore {
                source:
                    RestoreSource::Savepoint {
                        checkpoint,
                        handles,
                    },
            } => CoordinatorEvent::Restore {
                source: RestoreSource::Savepoint {
                    checkpoint,
                    handles: handles
                        .iter()
                        .take(8)
                        .map(|_| self.fresh_handle())
                        .collect(),
                },
            },
            other => other,
        }
    }

    /// Resolves an abstract action into `(now, event)`.
    pub fn concretize(&mut self, action: &CoordAction) -> Option<(Millis, CoordinatorEvent)> {
        let now = self.now;
        let ev = match action {
            CoordAction::StartScheduler => CoordinatorEvent::StartScheduler,
            CoordAction::StopScheduler => CoordinatorEvent::StopScheduler,
            CoordAction::Trigger { savepoint, forced } => CoordinatorEvent::Trigger {
                kind: if *savepoint {
                    TriggerKind::Savepoint {
                        target: "/savepoints".into(),
                    }
                } else {
                    TriggerKind::Checkpoint { forced: *forced }
                },
            },
            CoordAction::Advance(ms) => {
                self.now = self.now.saturating_add(u64::from(*ms));
                return None;
            }
            CoordAction::Rewind(ms) => {
                self.now = Millis(self.now.0.saturating_sub(u64::from(*ms)));
                return None;
            }
            CoordAction::FireTimer(i) | CoordAction::FireTimerEarly(i) => {
                let timers: Vec<(Timer, Millis)> =
                    self.state.timers().map(|(t, at)| (*t, *at)).collect();
                let (timer, at) = pick(&timers, usize::from(*i)).unwrap_or((Timer::Periodic, now));
                if matches!(action, CoordAction::FireTimer(_)) && at > self.now {
                    self.now = at;
                }
                CoordinatorEvent::TimerFired { timer }
            }
            CoordAction::FireVanishedTimeout(i) => {
                let mut gone: Vec<CheckpointId> = self.state.recent_ids().copied().collect();
                gone.push(CheckpointId(u64::from(*i)));
                let id = pick(&gone, usize::from(*i)).unwrap_or(CheckpointId(0));
                if self.state.pending_checkpoint(id).is_some() {
                    CoordinatorEvent::TimerFired {
                        timer: Timer::Timeout(CheckpointId(u64::MAX)),
                    }
                } else {
                    CoordinatorEvent::TimerFired {
                        timer: Timer::Timeout(id),
                    }
                }
            }
            CoordAction::Allocate(alloc) => {
                let request = self.state.in_flight().map_or(RequestId(0), |r| r.id());
                let last = self.state.last_id();
                let (request, result) = match alloc {
                    Alloc::Next(gap) => {
                        let base = last.map_or(0, |l| l.0);
                        let id = base.saturating_add(1).saturating_add(u64::from(*gap));
                        (request, Ok(CheckpointId(id)))
                    }
                    Alloc::Fail => (request, Err(IoFailure("counter down".into()))),
                    Alloc::Stale => (request, Ok(last.unwrap_or(CheckpointId(0)))),
                    Alloc::Max => (request, Ok(CheckpointId(u64::MAX))),
                    Alloc::WrongRequest => (
                        RequestId(request.0.wrapping_add(1_000)),
                        Ok(CheckpointId(last.map_or(1, |l| l.0.saturating_add(1)))),
                    ),
                };
                CoordinatorEvent::CheckpointIdAllocated { request, result }
            }
            CoordAction::HooksDone { pick, fail } => CoordinatorEvent::MasterHooksDone {
                checkpoint: self.pick_in_phase(*pick, PendingPhase::AwaitingHooks),
                result: io(*fail),
            },
            CoordAction::Ack {
                pick,
                slot,
                sender,
                with_state,
            } => {
                let checkpoint = self.pick_checkpoint(*pick);
                let task = self.pick_waiting_task(checkpoint, *slot);
                let (job, attempt) = self.sender(task, *sender);
                let state = with_state.then(|| self.fresh_handle());
                CoordinatorEvent::Acknowledge {
                    job,
                    task,
                    attempt,
                    checkpoint,
                    state,
                }
            }
            CoordAction::Decline {
                pick,
                slot,
                sender,
                reason,
            } => {
                let task = self.pick_task(*slot);
                let (job, attempt) = self.sender(task, *sender);
                CoordinatorEvent::Decline {
                    job,
                    task,
                    attempt,
                    checkpoint: self.pick_checkpoint(*pick),
                    reason: *reason,
                }
            }
            CoordAction::FinalizeDone { pick, fail } => CoordinatorEvent::FinalizeDone {
                checkpoint: self.pick_in_phase(*pick, PendingPhase::Finalizing),
                result: io(*fail),
            },
            CoordAction::StoreDone { pick, fail } => CoordinatorEvent::StoreDone {
                checkpoint: self.pick_in_phase(*pick, PendingPhase::Storing),
                result: io(*fail),
            },
            CoordAction::TaskFailed { slot, stale } => {
                let (task, attempt) = self.reported_attempt(*slot, *stale);
                CoordinatorEvent::TaskFailed { task, attempt }
            }
            CoordAction::TaskRunning { slot, bump } => {
                let task = self.pick_task(*slot);
                let a = self.attempt_of(task);
                CoordinatorEvent::TaskRunning {
                    task,
                    attempt: if *bump {
                        AttemptNo(a.0.saturating_add(1))
                    } else {
                        a
                    },
                }
            }
            CoordAction::TaskFinished { slot, stale } => {
                let (task, attempt) = self.reported_attempt(*slot, *stale);
                CoordinatorEvent::TaskFinished { task, attempt }
            }
            CoordAction::RestoreLatest { error_if_none } => CoordinatorEvent::Restore {
                source: RestoreSource::Latest {
                    error_if_none: *error_if_none,
                },
            },
            CoordAction::RestoreSavepoint { gap, handles } => {
                let checkpoint = if *gap == 255 {
                    CheckpointId(u64::MAX)
                } else {
                    let base = self.state.last_id().map_or(0, |l| l.0);
                    CheckpointId(base.saturating_add(u64::from(*gap)))
                };
                let handles = (0..handles % 4).map(|_| self.fresh_handle()).collect();
                CoordinatorEvent::Restore {
                    source: RestoreSource::Savepoint {
                        checkpoint,
                        handles,
                    },
                }
            }
            CoordAction::Shutdown(status) => CoordinatorEvent::Shutdown { status: *status },
            CoordAction::Redeliver(k) => {
                let n = self.records.len();
                if n == 0 {
                    return None;
                }
                self.records
                    .get(usize::from(*k) % n)
                    .map(|r| r.event.clone())?
            }
            CoordAction::Raw(event) => self.normalize(event.clone()),
        };
        Some((self.now, ev))
    }

    /// Runs one action.
    pub fn act(&mut self, action: &CoordAction) -> Result<(), Violation> {
        match self.concretize(action) {
            Some((now, ev)) => self.deliver(now, ev),
            None => Ok(()),
        }
    }
}

fn io(fail: bool) -> Result<(), IoFailure> {
    if fail {
        Err(IoFailure("injected".into()))
    } else {
        Ok(())
    }
}

/// Runs a story, checking every invariant after every step.
pub fn run(story: &CoordStory) -> Result<CoordDriver, Box<Failure>> {
    let mut d = CoordDriver::new(story.settings.settings()).map_err(|e| {
        Failure::at(
            0,
            Violation::new("valid-settings", e.to_string()),
            Trace::default(),
        )
    })?;
    super::drive(&mut d, &story.actions, CoordDriver::act, CoordDriver::trace)?;
    Ok(d)
}
