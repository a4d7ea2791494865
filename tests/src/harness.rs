//! [`CoordinatorHarness`]: drive the coordinator reducer one event at a time,
//! with every proof obligation checked on every step.
//!
//! Each [`CoordinatorHarness::step`]:
//!
//! 1. runs the pure `reduce` twice and checks it is deterministic;
//! 2. runs the in-place `apply` on a copy and checks it agrees with `reduce`
//!    (effects, outcome, clock and state);
//! 3. runs [`ckpt_core::invariants::coordinator::check_all`] (state
//!    invariants, step invariants and the [`HandleLedger`]);
//! 4. records the step in the history and keeps the new state.
//!
//! A broken check panics with the violation and the whole history, so a
//! failing test prints the story that led to it. [`CoordinatorHarness::try_step`]
//! returns the violation instead (and leaves the harness untouched), for tests
//! that expect one.
//!
//! The harness keeps its own clock: [`CoordinatorHarness::at`] moves it
//! (backwards too, to exercise clamping) and every event is delivered at it.
//! Convenience methods build the usual events for the configured job and
//! attempt 0; [`CoordinatorHarness::step`] takes any event.
//!
//! State handles follow one convention so stories can name them:
//! [`handle`]`(checkpoint, task)` = `checkpoint * 1000 + task`.

use std::fmt::Write as _;

use ckpt_core::coordinator::{
    Applied, CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, JobStatus,
    Outcome, RequestId, RestoreSource, Step, Timer, TriggerKind,
};
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::invariants::Violation;
use ckpt_core::{
    AttemptNo, CheckpointId, DeclineReason, IoFailure, JobId, Millis, StateHandle, TaskId,
};

pub use ckpt_core::invariants::checked::DETERMINISTIC;

/// The conventional state handle task `task` writes for `checkpoint`.
#[must_use]
pub fn handle(checkpoint: u64, task: u32) -> StateHandle {
    StateHandle(checkpoint * 1_000 + u64::from(task))
}

/// One delivered event and what it did.
#[derive(Clone, Debug)]
pub struct Record {
    /// The time the event was delivered at (before clamping).
    pub now: Millis,
    /// The event.
    pub event: CoordinatorEvent,
    /// Its effects, outcome and clock report.
    pub step: Step,
}

/// A coordinator under test; see the module docs.
#[derive(Clone, Debug)]
pub struct CoordinatorHarness {
    state: CoordinatorState,
    ledger: HandleLedger,
    now: Millis,
    history: Vec<Record>,
}

impl CoordinatorHarness {
    /// A fresh coordinator from `settings`, at time 0.
    ///
    /// # Panics
    /// If the settings are invalid (a test bug).
    #[must_use]
    pub fn new(settings: CoordinatorSettings) -> Self {
        match CoordinatorState::from_settings(settings) {
            Ok(state) => Self::from_state(state),
            Err(e) => panic!("invalid settings: {e}"),
        }
    }

    /// A harness around an existing state (time starts at the state's clock).
    #[must_use]
    pub fn from_state(state: CoordinatorState) -> Self {
        CoordinatorHarness {
            now: state.now(),
            state,
            ledger: HandleLedger::new(),
            history: Vec::new(),
        }
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> &CoordinatorState {
        &self.state
    }
    /// The handle ledger.
    #[must_use]
    pub fn ledger(&self) -> &HandleLedger {
        &self.ledger
    }
    /// The harness clock (what the next event is delivered at).
    #[must_use]
    pub fn now(&self) -> Millis {
        self.now
    }
    /// The configured job.
    #[must_use]
    pub fn job(&self) -> JobId {
        self.state.config().job()
    }
    /// Every step so far.
    #[must_use]
    pub fn history(&self) -> &[Record] {
        &self.history
    }
    /// Every effect emitted so far, in order.
    pub fn all_effects(&self) -> impl Iterator<Item = &CoordinatorEffect> + '_ {
        self.history.iter().flat_map(|r| r.step.effects.iter())
    }
    /// The id the next request will get (counted from the history: exact
    /// for a harness built with [`CoordinatorHarness::new`]).
    #[must_use]
    pub fn next_request(&self) -> RequestId {
        // Requests are numbered densely from 0, one per trigger or periodic
        // firing; the history tells how many were made.
        let made = self
            .history
            .iter()
            .filter(|r| creates_request(&r.event, &r.step.outcome))
            .count();
        RequestId(made as u64)
    }

    /// Sets the harness clock.
    pub fn at(&mut self, now: u64) -> &mut Self {
        self.now = Millis(now);
        self
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&mut self, ms: u64) -> &mut Self {
        self.now = self.now.saturating_add(ms);
        self
    }

    /// Delivers `event` at the harness clock with every check; returns the
    /// violation (harness unchanged) instead of panicking.
    pub fn try_step(&mut self, event: CoordinatorEvent) -> Result<Step, Violation> {
        let mut ledger = self.ledger.clone();
        let (t, verdict) =
            checked::coordinator_step(&mut ledger, &self.state, self.now, &event, Rigor::Full);
        verdict?;
        self.ledger = ledger;
        self.state = t.state;
        self.history.push(Record {
            now: self.now,
            event,
            step: t.step.clone(),
        });
        Ok(t.step)
    }

    /// Delivers `event` at the harness clock with every check.
    ///
    /// # Panics
    /// On any violation, printing the violation and the history.
    pub fn step(&mut self, event: CoordinatorEvent) -> Step {
        match self.try_step(event.clone()) {
            Ok(step) => step,
            Err(v) => panic!("{v}\n  event: {event:?}\n{}", self.story()),
        }
    }

    /// Delivers `event` and asserts the exact effects and outcome.
    ///
    /// # Panics
    /// On a mismatch or a violation.
    pub fn expect(
        &mut self,
        event: CoordinatorEvent,
        effects: &[CoordinatorEffect],
        outcome: &Outcome,
    ) -> Step {
        let step = self.step(event);
        assert_eq!(step.effects, effects, "effects\n{}", self.story());
        assert_eq!(&step.outcome, outcome, "outcome\n{}", self.story());
        step
    }

    /// The history as text, one step per line.
    #[must_use]
    pub fn story(&self) -> String {
        let mut s = String::from("  history:\n");
        for (i, r) in self.history.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {i:>3} @{}: {:?}\n        -> {:?} {:?}",
                r.now, r.event, r.step.outcome, r.step.effects
            );
        }
        s
    }

    // ----- event shorthands (attempt 0, the configured job) ------------------

    /// `StartScheduler`.
    pub fn start_scheduler(&mut self) -> Step {
        self.step(CoordinatorEvent::StartScheduler)
    }
    /// `StopScheduler`.
    pub fn stop_scheduler(&mut self) -> Step {
        self.step(CoordinatorEvent::StopScheduler)
    }
    /// `Trigger { kind }`.
    pub fn trigger(&mut self, kind: TriggerKind) -> Step {
        self.step(CoordinatorEvent::Trigger { kind })
    }
    /// `TimerFired { timer }`.
    pub fn fire(&mut self, timer: Timer) -> Step {
        self.step(CoordinatorEvent::TimerFired { timer })
    }
    /// Fires every armed timer whose deadline is at or before the harness
    /// clock, in the timer order (periodic first, then timeouts by id).
    pub fn fire_due(&mut self) -> Vec<Step> {
        let due: Vec<Timer> = self
            .state
            .timers()
            .filter(|(_, at)| **at <= self.now)
            .map(|(t, _)| *t)
            .collect();
        due.into_iter().map(|t| self.fire(t)).collect()
    }
    /// Answers the id allocation of `request`.
    pub fn allocate(&mut self, request: RequestId, result: Result<u64, &str>) -> Step {
        self.step(CoordinatorEvent::CheckpointIdAllocated {
            request,
            result: result.map(CheckpointId).map_err(|e| IoFailure(e.into())),
        })
    }
    /// Answers the id allocation of the request in flight with `id`.
    ///
    /// # Panics
    /// If no request is in flight.
    pub fn allocate_in_flight(&mut self, id: u64) -> Step {
        let Some(request) = self.state.in_flight().map(|r| r.id()) else {
            panic!("no request in flight\n{}", self.story());
        };
        self.allocate(request, Ok(id))
    }
    /// Answers the master hooks of `checkpoint`.
    pub fn hooks_done(&mut self, checkpoint: u64, ok: bool) -> Step {
        self.step(CoordinatorEvent::MasterHooksDone {
            checkpoint: CheckpointId(checkpoint),
            result: io(ok),
        })
    }
    /// `task` (attempt 0) acks `checkpoint` with `state`.
    pub fn ack_with(&mut self, task: u32, checkpoint: u64, state: Option<StateHandle>) -> Step {
        self.step(CoordinatorEvent::Acknowledge {
            job: self.job(),
            task: TaskId(task),
            attempt: AttemptNo(0),
            checkpoint: CheckpointId(checkpoint),
            state,
        })
    }
    /// `task` (attempt 0) acks `checkpoint` with [`handle`]`(checkpoint, task)`.
    pub fn ack(&mut self, task: u32, checkpoint: u64) -> Step {
        self.ack_with(task, checkpoint, Some(handle(checkpoint, task)))
    }
    /// Every task to wait for acks `checkpoint` with its conventional handle.
    pub fn ack_all(&mut self, checkpoint: u64) -> Vec<Step> {
        let wait: Vec<TaskId> = self.state.config().tasks_to_wait().to_vec();
        wait.into_iter()
            .map(|t| self.ack(t.0, checkpoint))
            .collect()
    }
    /// `task` (attempt 0) declines `checkpoint`.
    pub fn decline(&mut self, task: u32, checkpoint: u64, reason: DeclineReason) -> Step {
        self.step(CoordinatorEvent::Decline {
            job: self.job(),
            task: TaskId(task),
            attempt: AttemptNo(0),
            checkpoint: CheckpointId(checkpoint),
            reason,
        })
    }
    /// Answers the finalization of `checkpoint`.
    pub fn finalized(&mut self, checkpoint: u64, ok: bool) -> Step {
        self.step(CoordinatorEvent::FinalizeDone {
            checkpoint: CheckpointId(checkpoint),
            result: io(ok),
        })
    }
    /// Answers the store of `checkpoint`.
    pub fn stored(&mut self, checkpoint: u64, ok: bool) -> Step {
        self.step(CoordinatorEvent::StoreDone {
            checkpoint: CheckpointId(checkpoint),
            result: io(ok),
        })
    }
    /// Acks (every task), finalizes and stores `checkpoint`; asserts it
    /// completed and returns the store step.
    ///
    /// # Panics
    /// If the checkpoint does not complete.
    pub fn complete(&mut self, checkpoint: u64) -> Step {
        self.ack_all(checkpoint);
        self.finalized(checkpoint, true);
        let step = self.stored(checkpoint, true);
        let done = Outcome::Applied(Applied::Completed {
            checkpoint: CheckpointId(checkpoint),
        });
        assert_eq!(step.outcome, done, "{}", self.story());
        step
    }
    /// `TaskFailed`.
    pub fn task_failed(&mut self, task: u32, attempt: u32) -> Step {
        self.step(CoordinatorEvent::TaskFailed {
            task: TaskId(task),
            attempt: AttemptNo(attempt),
        })
    }
    /// `TaskRunning`.
    pub fn task_running(&mut self, task: u32, attempt: u32) -> Step {
        self.step(CoordinatorEvent::TaskRunning {
            task: TaskId(task),
            attempt: AttemptNo(attempt),
        })
    }
    /// `Restore { source }`.
    pub fn restore(&mut self, source: RestoreSource) -> Step {
        self.step(CoordinatorEvent::Restore { source })
    }
    /// `Shutdown { status }`.
    pub fn shutdown(&mut self, status: JobStatus) -> Step {
        self.step(CoordinatorEvent::Shutdown { status })
    }

    // ----- effect queries ----------------------------------------------------

    /// How many `DiscardState` effects named `handle` so far.
    #[must_use]
    pub fn discards_of(&self, handle: StateHandle) -> usize {
        self.all_effects()
            .filter(|e| matches!(e, CoordinatorEffect::Discard { handle: h, .. } if *h == handle))
            .count()
    }
}

fn io(ok: bool) -> Result<(), IoFailure> {
    if ok {
        Ok(())
    } else {
        Err(IoFailure("injected failure".into()))
    }
}

/// Whether delivering `event` made a request id (a trigger, or a periodic
/// firing that was applied), so [`CoordinatorHarness::next_request`] can count.
fn creates_request(event: &CoordinatorEvent, outcome: &Outcome) -> bool {
    match event {
        CoordinatorEvent::Trigger { .. } => matches!(outcome, Outcome::Applied(_)),
        CoordinatorEvent::TimerFired {
            timer: Timer::Periodic,
        } => matches!(outcome, Outcome::Applied(Applied::PeriodicFired(_))),
        CoordinatorEvent::TimerFired {
            timer: Timer::Timeout(_),
        }
        | CoordinatorEvent::StartScheduler
        | CoordinatorEvent::StopScheduler
        | CoordinatorEvent::CheckpointIdAllocated { .. }
        | CoordinatorEvent::MasterHooksDone { .. }
        | CoordinatorEvent::Acknowledge { .. }
        | CoordinatorEvent::Decline { .. }
        | CoordinatorEvent::FinalizeDone { .. }
        | CoordinatorEvent::StoreDone { .. }
        | CoordinatorEvent::TaskRunning { .. }
        | CoordinatorEvent::TaskFailed { .. }
        | CoordinatorEvent::TaskFinished { .. }
        | CoordinatorEvent::Restore { .. }
        | CoordinatorEvent::Recover { .. }
        | CoordinatorEvent::DisposeSavepoint { .. }
        | CoordinatorEvent::Shutdown { .. } => false,
    }
}
