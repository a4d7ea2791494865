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
    /// Every delivered event with its step record (empty when the driver
    /// was made by [`CoordDriver::unrecorded`]).
    pub records: Vec<CoordRecord>,
    /// Every delivered event with its time, in order: the trace, and what
    /// [`CoordAction::Redeliver`] picks from.
    delivered: Vec<(Millis, CoordinatorEvent)>,
    /// Whether [`Self::records`] is kept.
    keep_records: bool,
    settings: CoordinatorSettings,
    /// The candidate tasks of [`Self::pick_task`] (fixed by the settings).
    tasks: Vec<TaskId>,
    next_handle: u64,
}

impl CoordDriver {
    /// A fresh coordinator for valid `settings`.
    pub fn new(settings: CoordinatorSettings) -> Result<Self, ckpt_core::coordinator::ConfigError> {
        let mut tasks: Vec<TaskId> = settings
            .tasks_to_trigger
            .iter()
            .chain(&settings.tasks_to_wait)
            .chain(&settings.tasks_to_commit)
            .copied()
            .collect();
        tasks.sort_unstable();
        tasks.dedup();
        let high = tasks.last().map_or(0, |t| t.0);
        tasks.push(TaskId(high + 1));
        tasks.push(TaskId(TASK_ID_MAX + 5));
        Ok(CoordDriver {
            state: CoordinatorState::from_settings(settings.clone())?,
            ledger: HandleLedger::new(),
            now: Millis(0),
            records: Vec::new(),
            delivered: Vec::new(),
            keep_records: true,
            settings,
            tasks,
            next_handle: 1,
        })
    }

    /// As [`CoordDriver::new`], but keeps no [`CoordRecord`]s (only the
    /// delivered events, for the trace and redeliveries): the same checks,
    /// for the fuzz target, where cloning every state into a record and
    /// dropping them all at the end was about 8 % of an execution.
    pub fn unrecorded(
        settings: CoordinatorSettings,
    ) -> Result<Self, ckpt_core::coordinator::ConfigError> {
        let mut d = Self::new(settings)?;
        d.keep_records = false;
        Ok(d)
    }

    /// The events delivered so far as a trace.
    #[must_use]
    pub fn trace(&self) -> Trace {
        Trace {
            coordinator: Some(self.settings.clone()),
            tasks: Vec::new(),
            steps: self
                .delivered
                .iter()
                .map(|(now, event)| TraceLine::Coordinator {
                    now: *now,
                    event: event.clone(),
                })
                .collect(),
        }
    }

    fn fresh_handle(&mut self) -> StateHandle {
        let h = StateHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    /// Delivers one concrete event through the checked step in place
    /// (`checked::coordinator_step_in_place`): every coordinator invariant
    /// and the handle ledger, and the pure and in-place entry points must
    /// agree.
    pub fn deliver(&mut self, now: Millis, event: CoordinatorEvent) -> Result<(), Violation> {
        let (step, verdict) = checked::coordinator_step_in_place(
            &mut self.ledger,
            &mut self.state,
            now,
            &event,
            Rigor::Full,
        );
        if self.keep_records {
            self.records.push(CoordRecord {
                now,
                event: event.clone(),
                effects: step.effects,
                outcome: step.outcome,
                clock: step.clock,
                state: self.state.clone(),
            });
        }
        self.delivered.push((now, event));
        verdict
    }

    /// Candidate checkpoint ids: pending ones (most picks), then recent ones,
    /// then unknown ones (never used, zero, `u64::MAX`). Picks the
    /// `p`-th (modulo their number) without collecting them.
    fn pick_checkpoint(&self, p: u8) -> CheckpointId {
        let p = usize::from(p);
        let pending = self.state.pending_count();
        if pending > 0 && p < 192 {
            return self
                .state
                .pending()
                .nth(p % pending)
                .map_or(CheckpointId(0), |c| c.id());
        }
        let recent = self.state.recent_ids().count();
        let completed = self.state.completed().count();
        let i = p % (recent + completed + 3);
        if i < recent {
            return self
                .state
                .recent_ids()
                .nth(i)
                .copied()
                .unwrap_or(CheckpointId(0));
        }
        if i < recent + completed {
            return self
                .state
                .completed()
                .nth(i - recent)
                .map_or(CheckpointId(0), |c| c.id());
        }
        match i - recent - completed {
            0 => self
                .state
                .last_id()
                .and_then(CheckpointId::next)
                .unwrap_or(CheckpointId(1)),
            1 => CheckpointId(0),
            _ => CheckpointId(u64::MAX),
        }
    }

    /// Mostly the checkpoint in `phase` (when there is one), else any.
    fn pick_in_phase(&self, p: u8, phase: PendingPhase) -> CheckpointId {
        let in_phase = || self.state.pending().filter(|c| c.phase() == phase);
        let n = in_phase().count();
        if n > 0 && p < 224 {
            if let Some(c) = in_phase().nth(usize::from(p) % n) {
                return c.id();
            }
        }
        self.pick_checkpoint(p)
    }

    /// Mostly a task whose ack `checkpoint` still waits for, else any.
    fn pick_waiting_task(&self, checkpoint: CheckpointId, slot: u8) -> TaskId {
        if slot < 208 {
            if let Some(p) = self.state.pending_checkpoint(checkpoint) {
                let waiting = || {
                    p.acks()
                        .zip(self.settings.tasks_to_wait.iter())
                        .filter(|(a, _)| *a == AckSlot::Waiting)
                        .map(|(_, t)| *t)
                };
                let n = waiting().count();
                if n > 0 {
                    if let Some(t) = waiting().nth(usize::from(slot) % n) {
                        return t;
                    }
                }
            }
        }
        self.pick_task(slot)
    }

    /// Candidate tasks: every configured one plus two unknown ids.
    fn pick_task(&self, slot: u8) -> TaskId {
        pick(&self.tasks, usize::from(slot)).unwrap_or(TaskId(0))
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
                let n = self.delivered.len();
                if n == 0 {
                    return None;
                }
                self.delivered
                    .get(usize::from(*k) % n)
                    .map(|(_, event)| event.clone())?
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
    run_with(story, CoordDriver::new)
}

/// As [`run`], with a driver that keeps no step records
/// ([`CoordDriver::unrecorded`]): the same checks, for the fuzz target.
pub fn run_unrecorded(story: &CoordStory) -> Result<CoordDriver, Box<Failure>> {
    run_with(story, CoordDriver::unrecorded)
}

fn run_with(
    story: &CoordStory,
    new: fn(CoordinatorSettings) -> Result<CoordDriver, ckpt_core::coordinator::ConfigError>,
) -> Result<CoordDriver, Box<Failure>> {
    let mut d = new(story.settings.settings()).map_err(|e| {
        Failure::at(
            0,
            Violation::new("valid-settings", e.to_string()),
            Trace::default(),
        )
    })?;
    super::drive(&mut d, &story.actions, CoordDriver::act, CoordDriver::trace)?;
    Ok(d)
}
