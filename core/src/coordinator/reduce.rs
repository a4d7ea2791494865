//! The coordinator reducer. One code path serves the pure [`reduce`] and the
//! in-place [`CoordinatorState::apply`].
//!
//! Discipline: every handler decides `Ignored` / `Rejected` before it mutates
//! anything, so a refused event leaves the state as it was (only the clock
//! moves forward).

use super::config::RECENT_IDS_MAX;
use super::slots::AckTable;
use super::state::{AckSlot, Completed, CoordinatorState, Pending, PendingPhase, Request};
use super::{
    AbortReason, Applied, CheckpointOptions, Clock, CoordinatorEffect as E, CoordinatorError,
    CoordinatorEvent, FailJobReason, Ignored, IoRequest, JobCommand, JobStatus, Outcome,
    QueueReason, RecoverProblem, RecoveredCheckpoint, Report, RequestId, RestoreSource, Step,
    Timer, Transition, TriggerKind, TriggerRejection, Unreachable,
};
use crate::route::TaskMessage;
use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, Generation, IoFailure, JobId, LegacyBug, Millis,
    StateHandle, TaskId,
};

/// The pure entry point: `(state, now, event) -> (state', effects, outcome)`.
#[must_use]
pub fn reduce(state: &CoordinatorState, now: Millis, event: CoordinatorEvent) -> Transition {
    let mut next = state.clone();
    let step = next.apply(now, event);
    Transition { state: next, step }
}

type Fx = Vec<E>;

impl CoordinatorState {
    /// The in-place entry point (same code as [`reduce`]).
    pub fn apply(&mut self, now: Millis, event: CoordinatorEvent) -> Step {
        let clock = if now < self.now {
            Clock::Clamped {
                given: now,
                used: self.now,
            }
        } else {
            self.now = now;
            Clock::Monotonic
        };
        let mut fx = Vec::new();
        let late_answer_slips_through = self.shutdown
            && self
                .cold
                .config
                .semantics()
                .is(LegacyBug::EffectsAfterShutdown)
            && matches!(event, CoordinatorEvent::CheckpointIdAllocated { .. });
        let outcome = if self.shutdown && !late_answer_slips_through {
            Outcome::Ignored(Ignored::Shutdown)
        } else {
            let outcome = self.dispatch(event, &mut fx);
            // Whatever ended the outstanding completion (its store answer, a
            // failure, an abort), a restore that waited for it is answered
            // in the same step, with the latest checkpoint there is now.
            if self.cold.restore_deferred && self.completing.is_none() {
                self.cold.restore_deferred = false;
                self.emit_restore(&mut fx);
            }
            outcome
        };
        Step {
            effects: fx,
            outcome,
            clock,
        }
    }

    fn dispatch(&mut self, event: CoordinatorEvent, fx: &mut Fx) -> Outcome {
        match event {
            CoordinatorEvent::StartScheduler => self.on_start_scheduler(fx),
            CoordinatorEvent::StopScheduler => self.on_stop_scheduler(fx),
            CoordinatorEvent::Trigger { kind } => {
                let request = self.new_request(kind);
                Outcome::Applied(self.on_request(request, true, fx))
            }
            CoordinatorEvent::TimerFired { timer } => self.on_timer(timer, fx),
            CoordinatorEvent::CheckpointIdAllocated { request, result } => {
                self.on_id_allocated(request, result, fx)
            }
            CoordinatorEvent::MasterHooksDone { checkpoint, result } => {
                self.on_hooks_done(checkpoint, result, fx)
            }
            CoordinatorEvent::Acknowledge {
                job,
                task,
                attempt,
                checkpoint,
                state,
            } => self.on_ack(job, task, attempt, checkpoint, state, fx),
            CoordinatorEvent::Decline {
                job,
                task,
                attempt,
                checkpoint,
                reason,
            } => self.on_decline(job, task, attempt, checkpoint, reason, fx),
            CoordinatorEvent::FinalizeDone { checkpoint, result } => {
                self.on_finalize_done(checkpoint, result, fx)
            }
            CoordinatorEvent::StoreDone { checkpoint, result } => {
                self.on_store_done(checkpoint, result, fx)
            }
            CoordinatorEvent::TaskRunning { task, attempt } => {
                self.on_task_running(task, attempt, fx)
            }
            CoordinatorEvent::TaskFailed { task, attempt } => {
                self.on_task_failed(task, attempt, fx)
            }
            CoordinatorEvent::Restore { source } => self.on_restore(source, fx),
            CoordinatorEvent::Recover {
                checkpoints,
                last_id,
                generation,
            } => self.on_recover(checkpoints, last_id, generation),
            CoordinatorEvent::DisposeSavepoint { checkpoint } => {
                self.on_dispose_savepoint(checkpoint, fx)
            }
            CoordinatorEvent::Shutdown { status } => self.on_shutdown(status, fx),
        }
    }

    // ----- scheduling -------------------------------------------------------

    fn arm(&mut self, timer: Timer, at: Millis, fx: &mut Fx) {
        self.cold.timers.insert(timer, at);
        fx.push(E::Timer {
            timer,
            at: Some(at),
        });
    }

    fn disarm(&mut self, timer: Timer, fx: &mut Fx) {
        if self.cold.timers.remove(&timer).is_some() {
            fx.push(E::Timer { timer, at: None });
        }
    }

    fn on_start_scheduler(&mut self, fx: &mut Fx) -> Outcome {
        // The seed stops first (aborting pending checkpoints), then starts.
        self.stop_scheduler(fx);
        self.periodic = true;
        let at = self.now.saturating_add(self.cold.config.interval_ms);
        self.arm(Timer::Periodic, at, fx);
        Outcome::Applied(Applied::SchedulerStarted)
    }

    fn on_stop_scheduler(&mut self, fx: &mut Fx) -> Outcome {
        let aborted = self.stop_scheduler(fx);
        Outcome::Applied(Applied::SchedulerStopped { aborted })
    }

    /// The seed's `stopCheckpointScheduler`: clear the queue (and the request
    /// allocating its id), stop periodic triggering, abort every pending
    /// checkpoint, reset the consecutive trigger failure count.
    ///
    /// The checkpoint being finalized or stored is not aborted: its state
    /// belongs to the outcome of that I/O (the store may commit it), so it
    /// completes, or fails on the store's answer, as if nothing happened.
    fn stop_scheduler(&mut self, fx: &mut Fx) -> usize {
        self.drop_requests(AbortReason::SchedulerStopped, fx);
        self.periodic = false;
        self.disarm(Timer::Periodic, fx);
        let keep = self.completing_kept();
        let ids: Vec<CheckpointId> = self
            .pending
            .keys()
            .copied()
            .filter(|id| Some(*id) != keep)
            .collect();
        for id in &ids {
            self.abort(*id, AbortReason::SchedulerStopped, fx);
        }
        self.consecutive_trigger_failures = 0;
        ids.len()
    }

    /// The checkpoint whose finalize or store is outstanding, when the
    /// durability rule protects it (always, but in the legacy semantics that
    /// discarded it).
    fn completing_kept(&self) -> Option<CheckpointId> {
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::DiscardWhileStoring)
        {
            None
        } else {
            self.completing
        }
    }

    fn drop_requests(&mut self, reason: AbortReason, fx: &mut Fx) {
        if let Some(r) = self.cold.in_flight.take() {
            fx.push(E::Report(Report::RequestFailed {
                request: r.id,
                reason,
            }));
        }
        for r in std::mem::take(&mut self.cold.queue) {
            fx.push(E::Report(Report::RequestFailed {
                request: r.id,
                reason,
            }));
        }
    }

    fn on_timer(&mut self, timer: Timer, fx: &mut Fx) -> Outcome {
        let Some(deadline) = self.cold.timers.get(&timer).copied() else {
            return Outcome::Ignored(Ignored::TimerNotArmed);
        };
        if self.now < deadline {
            return Outcome::Ignored(Ignored::TimerNotDue);
        }
        if let Timer::Timeout(id) = timer {
            if !self.pending.contains_key(&id) {
                return Outcome::Ignored(Ignored::TimerNotArmed);
            }
        }
        self.cold.timers.remove(&timer);
        match timer {
            Timer::Periodic => {
                // Fixed rate: the next firing is one interval after this
                // deadline, or after now when the host fired late.
                let interval = self.cold.config.interval_ms;
                let next = deadline.saturating_add(interval);
                let at = if next <= self.now {
                    self.now.saturating_add(interval)
                } else {
                    next
                };
                if at <= self.now {
                    // The clock saturated at `u64::MAX`: a re-armed timer
                    // would be due forever and a host that fires due timers
                    // until none remain would never stop. Stop scheduling.
                    fx.push(E::Timer {
                        timer: Timer::Periodic,
                        at: None,
                    });
                    self.periodic = false;
                    return Outcome::Applied(Applied::ClockExhausted);
                }
                self.arm(Timer::Periodic, at, fx);
                let request = self.new_request(TriggerKind::Periodic);
                let applied = self.on_request(request, true, fx);
                Outcome::Applied(Applied::PeriodicFired(Box::new(applied)))
            }
            Timer::Timeout(id) => {
                // Structural: the timeout key is removed with its checkpoint
                // (checked above), so this checkpoint is pending.
                self.abort(id, AbortReason::Expired, fx);
                self.resume_queued(fx);
                Outcome::Applied(Applied::Aborted {
                    checkpoint: id,
                    reason: AbortReason::Expired,
                })
            }
        }
    }

    // ----- triggering -------------------------------------------------------

    fn new_request(&mut self, kind: TriggerKind) -> Request {
        let id = RequestId(self.next_request);
        self.next_request = self.next_request.saturating_add(1);
        Request {
            id,
            kind,
            requested_at: self.now,
            hooks_for: None,
        }
    }

    /// Savepoints kept or on their way: completed and not disposed of,
    /// pending, queued or allocating their id.
    fn savepoints_kept(&self) -> usize {
        let cold = &self.cold;
        cold.completed.iter().filter(|c| c.savepoint).count()
            + self
                .pending
                .values()
                .filter(|p| p.kind.is_savepoint())
                .count()
            + cold.queue.iter().filter(|r| r.kind.is_savepoint()).count()
            + usize::from(
                cold.in_flight
                    .as_ref()
                    .is_some_and(|r| r.kind.is_savepoint()),
            )
    }

    fn savepoints_max(&self) -> usize {
        self.cold.config.savepoints_max
    }

    fn non_forced_outstanding(&self) -> bool {
        self.cold.queue.iter().any(|r| !r.kind.is_forced())
            || self
                .cold
                .in_flight
                .as_ref()
                .is_some_and(|r| !r.kind.is_forced())
    }

    fn enqueue(&mut self, request: Request) -> bool {
        if self.cold.queue.len() >= self.cold.config.queue_max {
            return false;
        }
        let prio = request.kind.priority();
        let at = self
            .cold
            .queue
            .iter()
            .position(|r| r.kind.priority() < prio)
            .unwrap_or(self.cold.queue.len());
        self.cold.queue.insert(at, request);
        true
    }

    fn tasks_ready(&self) -> bool {
        // While a restore waits for its completion the job has no restore
        // point yet: no task of the new run may checkpoint.
        if self.cold.restore_deferred {
            return false;
        }
        let running = |t: &TaskId| self.cold.tasks.get(t.0 as usize).is_some_and(|s| s.running);
        self.cold.config.trigger.iter().all(running) && self.cold.config.wait.iter().all(running)
    }

    /// [`Self::pause_until`] for a request of `kind`: the minimum pause holds
    /// back periodic checkpoints only. FIX (conformance with Flink 1.11,
    /// 1.20 and 2.3, whose request decider applies it to periodic requests
    /// only): the seed held back every non-forced request, so a user's
    /// checkpoint right after a completion was refused.
    fn pause_until_for(&self, kind: &TriggerKind) -> Option<Millis> {
        match kind {
            TriggerKind::Periodic => self.pause_until(),
            TriggerKind::Checkpoint { .. } | TriggerKind::Savepoint { .. } => None,
        }
    }

    /// Earliest time the minimum pause allows a periodic trigger, when that
    /// is still in the future.
    fn pause_until(&self) -> Option<Millis> {
        let last = self.last_completion?;
        let earliest = last.saturating_add(self.cold.config.min_pause_ms);
        (earliest > self.now).then_some(earliest)
    }

    /// The seed's pre-checks, in its order. `fresh` is false for a request
    /// resumed from the queue (it is the queued one, so "already queued" does
    /// not apply to it).
    fn on_request(&mut self, request: Request, fresh: bool, fx: &mut Fx) -> Applied {
        let id = request.id;
        let reject = |reason| Applied::TriggerRejected {
            request: id,
            reason,
        };
        if matches!(request.kind, TriggerKind::Periodic) && !self.periodic {
            return reject(TriggerRejection::PeriodicSchedulerShutdown);
        }
        if fresh && request.kind.is_savepoint() && self.savepoints_kept() >= self.savepoints_max() {
            return reject(TriggerRejection::TooManySavepoints);
        }
        if !request.kind.is_forced() {
            if fresh && self.non_forced_outstanding() {
                return reject(TriggerRejection::AlreadyQueued);
            }
            if self.pending.len() >= self.cold.config.max_concurrent {
                return self.queue_too_many(request, fx);
            }
            if let Some(at) = self.pause_until_for(&request.kind) {
                if self.periodic {
                    self.arm(Timer::Periodic, at, fx);
                }
                return reject(TriggerRejection::MinimumTimeBetweenCheckpoints);
            }
        }
        if self.cold.in_flight.is_some() {
            return if self.enqueue(request) {
                Applied::Queued {
                    request: id,
                    reason: QueueReason::TriggerInProgress,
                }
            } else {
                reject(TriggerRejection::QueueFull)
            };
        }
        if !self.tasks_ready() {
            return reject(TriggerRejection::NotAllRequiredTasksRunning);
        }
        fx.push(E::Io {
            generation: self.cold.generation,
            request: IoRequest::AllocateId { request: id },
        });
        self.cold.in_flight = Some(request);
        Applied::AllocatingId { request: id }
    }

    /// Too many concurrent checkpoints: queue the request and cancel the
    /// periodic timer (it is re-armed when the request resumes).
    fn queue_too_many(&mut self, request: Request, fx: &mut Fx) -> Applied {
        let id = request.id;
        if !self.enqueue(request) {
            return Applied::TriggerRejected {
                request: id,
                reason: TriggerRejection::QueueFull,
            };
        }
        self.disarm(Timer::Periodic, fx);
        Applied::Queued {
            request: id,
            reason: QueueReason::TooManyConcurrent,
        }
    }

    /// The seed's `triggerQueuedRequests`, generalised to the priority queue:
    /// start the best queued request that may start now. A resumed periodic
    /// request re-arms the periodic timer one interval later (the seed's
    /// `scheduleAtFixedRate(0, interval)`).
    fn resume_queued(&mut self, fx: &mut Fx) {
        // Each round removes one request, so this ends within the bound.
        while self.cold.in_flight.is_none() {
            let slot_free = self.pending.len() < self.cold.config.max_concurrent;
            let Some(pos) = self
                .cold
                .queue
                .iter()
                .position(|r| r.kind.is_forced() || slot_free)
            else {
                return;
            };
            let request = self.cold.queue.remove(pos);
            // FIX: the seed re-schedules the periodic trigger whenever it
            // resumes the queued request (`triggerQueuedRequests`). Re-arming
            // only for a resumed *periodic* request left periodic scheduling
            // dead after a queued non-forced *user* checkpoint resumed (its
            // queueing had cancelled the periodic timer). A resumed periodic
            // request moves the timer as before; any other non-forced one
            // re-arms it only if it is not armed.
            let rearm = match request.kind {
                TriggerKind::Periodic => true,
                TriggerKind::Checkpoint { forced: false } => {
                    !self.cold.timers.contains_key(&Timer::Periodic)
                }
                TriggerKind::Checkpoint { forced: true } | TriggerKind::Savepoint { .. } => false,
            };
            if rearm && self.periodic {
                let at = self.now.saturating_add(self.cold.config.interval_ms);
                self.arm(Timer::Periodic, at, fx);
            }
            let id = request.id;
            match self.on_request(request, false, fx) {
                Applied::TriggerRejected { reason, .. } => {
                    fx.push(E::Report(Report::RequestFailed {
                        request: id,
                        reason: AbortReason::Rejected(reason),
                    }))
                }
                Applied::Queued { .. } => return,
                Applied::AllocatingId { .. }
                | Applied::SchedulerStarted
                | Applied::SchedulerStopped { .. }
                | Applied::PeriodicFired(_)
                | Applied::CheckpointTriggered { .. }
                | Applied::RequestEnded { .. }
                | Applied::HooksDone { .. }
                | Applied::Acknowledged { .. }
                | Applied::Finalized { .. }
                | Applied::Completed { .. }
                | Applied::Aborted { .. }
                | Applied::TaskUpdated { .. }
                | Applied::Restored { .. }
                | Applied::RestoreDeferred { .. }
                | Applied::SavepointDisposed { .. }
                | Applied::ShutDown
                | Applied::Recovered { .. }
                | Applied::ClockExhausted => {}
            }
        }
    }

    fn on_id_allocated(
        &mut self,
        request: RequestId,
        result: Result<CheckpointId, IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if self.cold.in_flight.as_ref().map(|r| r.id) != Some(request) {
            return Outcome::Ignored(Ignored::UnknownRequest);
        }
        let id = match result {
            Ok(id) => id,
            Err(_) => {
                // FIX: savepoints never count towards the tolerable-failure
                // limit (as in `abort`); this path passed `false` for them.
                let savepoint = self
                    .cold
                    .in_flight
                    .take()
                    .is_some_and(|r| r.kind.is_savepoint());
                self.consecutive_trigger_failures =
                    self.consecutive_trigger_failures.saturating_add(1);
                let reason = AbortReason::IdAllocationFailed;
                fx.push(E::Report(Report::RequestFailed { request, reason }));
                self.count_failure(reason, savepoint, fx);
                self.resume_queued(fx);
                return Outcome::Applied(Applied::RequestEnded { request, reason });
            }
        };
        if let Some(last) = self.last_id {
            if id <= last {
                return Outcome::Rejected(CoordinatorError::NonIncreasingId { got: id, last });
            }
        }
        let Some(req) = self.cold.in_flight.take() else {
            return unreachable_branch(Unreachable::InFlightVanished);
        };
        self.last_id = Some(id);
        // The re-check after the id arrived (the seed's second lock).
        if let Some(reason) = self.recheck(&req, fx) {
            match reason {
                Recheck::Queue => {
                    // No new pending checkpoint can appear while a request
                    // is in flight (it is the only way to create one), so
                    // the concurrency re-check cannot fail. Total anyway: the
                    // request was already answered (`AllocatingId`), so it
                    // ends with a `RequestFailed` rather than vanish.
                    let reason = AbortReason::Rejected(TriggerRejection::QueueFull);
                    fx.push(E::Report(Report::RequestFailed { request, reason }));
                    self.resume_queued(fx);
                    return unreachable_branch(Unreachable::RecheckQueue);
                }
                Recheck::Reject(r) => {
                    let reason = AbortReason::Rejected(r);
                    fx.push(E::Report(Report::RequestFailed { request, reason }));
                    self.resume_queued(fx);
                    return Outcome::Applied(Applied::RequestEnded { request, reason });
                }
            }
        }
        let wedge = self.cold.config.master_hooks > 0
            && self
                .cold
                .config
                .semantics()
                .is(LegacyBug::HookExpiryWedgesTrigger);
        let marker = wedge.then(|| Request {
            hooks_for: Some(id),
            ..req.clone()
        });
        self.create_pending(req, id, fx);
        self.consecutive_trigger_failures = 0;
        if marker.is_some() {
            // Legacy (FLINK-26394): the trigger counts as in progress until
            // the hooks answer; an expiry in between never clears it.
            self.cold.in_flight = marker;
        }
        self.resume_queued(fx);
        Outcome::Applied(Applied::CheckpointTriggered {
            request,
            checkpoint: id,
        })
    }

    fn recheck(&mut self, req: &Request, fx: &mut Fx) -> Option<Recheck> {
        if matches!(req.kind, TriggerKind::Periodic) && !self.periodic {
            return Some(Recheck::Reject(TriggerRejection::PeriodicSchedulerShutdown));
        }
        if !req.kind.is_forced() {
            if self.pending.len() >= self.cold.config.max_concurrent {
                return Some(Recheck::Queue);
            }
            if let Some(at) = self.pause_until_for(&req.kind) {
                if self.periodic {
                    self.arm(Timer::Periodic, at, fx);
                }
                return Some(Recheck::Reject(
                    TriggerRejection::MinimumTimeBetweenCheckpoints,
                ));
            }
        }
        if !self.tasks_ready() {
            return Some(Recheck::Reject(
                TriggerRejection::NotAllRequiredTasksRunning,
            ));
        }
        None
    }

    fn create_pending(&mut self, req: Request, id: CheckpointId, fx: &mut Fx) {
        let attempts: Vec<AttemptNo> = self
            .cold
            .config
            .wait
            .iter()
            .map(|t| {
                self.cold
                    .tasks
                    .get(t.0 as usize)
                    .map_or(AttemptNo(0), |s| s.attempt)
            })
            .collect();
        let slots = attempts.len();
        let hooks = self.cold.config.master_hooks > 0;
        let pending = Pending {
            id,
            request: req.id,
            kind: req.kind,
            timestamp: self.now,
            attempts: attempts.into(),
            acks: AckTable::filled(slots, AckSlot::Waiting),
            remaining: slots,
            phase: if hooks {
                PendingPhase::AwaitingHooks
            } else {
                PendingPhase::AwaitingAcks
            },
        };
        let timestamp = pending.timestamp;
        self.pending.insert(id, pending);
        let at = self.now.saturating_add(self.cold.config.timeout_ms);
        self.arm(Timer::Timeout(id), at, fx);
        if hooks {
            fx.push(E::Io {
                generation: self.cold.generation,
                request: IoRequest::MasterHooks {
                    checkpoint: id,
                    timestamp,
                },
            });
        } else {
            self.send_triggers(id, fx);
        }
    }

    fn send_triggers(&self, id: CheckpointId, fx: &mut Fx) {
        let Some(p) = self.pending.get(&id) else {
            return;
        };
        let options = match &p.kind {
            TriggerKind::Savepoint { target } => CheckpointOptions::Savepoint {
                target: target.clone(),
            },
            TriggerKind::Periodic | TriggerKind::Checkpoint { .. } => {
                CheckpointOptions::FullCheckpoint
            }
        };
        self.trigger_tasks(id, p.timestamp, options, fx);
    }

    fn trigger_tasks(
        &self,
        id: CheckpointId,
        timestamp: Millis,
        options: CheckpointOptions,
        fx: &mut Fx,
    ) {
        for t in &self.cold.config.trigger {
            if let Some(s) = self.cold.tasks.get(t.0 as usize) {
                fx.push(E::Rpc {
                    task: *t,
                    attempt: s.attempt,
                    generation: self.cold.generation,
                    message: TaskMessage::Trigger {
                        checkpoint: id,
                        timestamp,
                        options: options.clone(),
                    },
                });
            }
        }
    }

    fn on_hooks_done(
        &mut self,
        id: CheckpointId,
        result: Result<(), IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(why) = self.awaits(id, PendingPhase::AwaitingHooks) {
            if why == Ignored::LateMessage
                && result.is_ok()
                && self
                    .cold
                    .config
                    .semantics()
                    .is(LegacyBug::LateHooksTriggerTasks)
            {
                // Legacy (FLINK-27148): the coordinator's snapshot completed
                // for a checkpoint already disposed, and the tasks were
                // triggered for it anyway.
                self.trigger_tasks(id, self.now, CheckpointOptions::FullCheckpoint, fx);
                return Outcome::Applied(Applied::HooksDone { checkpoint: id });
            }
            return Outcome::Ignored(why);
        }
        if self
            .cold
            .in_flight
            .as_ref()
            .is_some_and(|r| r.hooks_for == Some(id))
        {
            // Legacy (FLINK-26394): the trigger stayed "in progress" until
            // the hooks of a checkpoint still pending answered; an expiry in
            // between left it set for good.
            self.cold.in_flight = None;
            self.resume_queued(fx);
        }
        if result.is_err() {
            let reason = AbortReason::MasterHooksFailed;
            self.abort(id, reason, fx);
            self.resume_queued(fx);
            return Outcome::Applied(Applied::Aborted {
                checkpoint: id,
                reason,
            });
        }
        let Some(p) = self.pending.get_mut(&id) else {
            return unreachable_branch(Unreachable::AwaitedVanished);
        };
        p.phase = PendingPhase::AwaitingAcks;
        let full = p.remaining == 0;
        self.send_triggers(id, fx);
        if full {
            self.on_fully_acked(id, fx);
        }
        Outcome::Applied(Applied::HooksDone { checkpoint: id })
    }

    // ----- acks and declines -------------------------------------------------

    fn check_job(&self, job: JobId) -> Result<(), CoordinatorError> {
        if job == self.cold.config.job {
            Ok(())
        } else {
            Err(CoordinatorError::WrongJob {
                expected: self.cold.config.job,
                got: job,
            })
        }
    }

    /// The answer for a message about a checkpoint that is not pending.
    fn gone(&self, id: CheckpointId) -> Ignored {
        if self.cold.recent.contains(&id) {
            Ignored::LateMessage
        } else {
            Ignored::UnknownCheckpoint
        }
    }

    /// Discards the state behind `handles` (given up by checkpoint `id`,
    /// which the state no longer holds, or never held), except the handles
    /// a live checkpoint still holds: retained, in doubt, or acknowledged
    /// to a pending one (a late or duplicated ack of a handle it already
    /// holds, a task that sends a handle another checkpoint holds, or state
    /// two recovered checkpoints share). A handle's state goes once, with
    /// the last checkpoint that holds it, as with Flink's shared-state
    /// registry. Each handle is discarded at most once per call.
    ///
    /// Runs only when something is discarded (aborts, evictions, refused
    /// acks; never a counted ack). When the handles given up are already in
    /// ascending order and their range does not meet the range of the
    /// handles still held (a host that numbers its files by checkpoint, as
    /// both hosts here do), it costs one pass over each; otherwise one sort
    /// of the handles still held.
    fn discard_unheld(&self, id: CheckpointId, handles: &mut Vec<StateHandle>, fx: &mut Fx) {
        if !handles.is_sorted() {
            handles.sort_unstable();
        }
        handles.dedup();
        let (Some(&lo), Some(&hi)) = (handles.first(), handles.last()) else {
            return;
        };
        let disjoint = self.held_handles().all(|h| h < lo || h > hi);
        let held = if disjoint {
            Vec::new()
        } else {
            let mut held: Vec<StateHandle> = self.held_handles().collect();
            held.sort_unstable();
            held
        };
        for h in handles.drain(..) {
            if held.binary_search(&h).is_err() {
                fx.push(E::Discard {
                    generation: self.cold.generation,
                    checkpoint: id,
                    handle: h,
                });
            }
        }
    }

    /// [`Self::discard_unheld`] for the one handle of a refused ack.
    fn discard_one(&self, id: CheckpointId, handle: Option<StateHandle>, fx: &mut Fx) {
        if let Some(h) = handle {
            self.discard_unheld(id, &mut vec![h], fx);
        }
    }

    fn on_ack(
        &mut self,
        job: JobId,
        task: TaskId,
        attempt: AttemptNo,
        id: CheckpointId,
        handle: Option<StateHandle>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(e) = self.check_job(job) {
            return Outcome::Rejected(e);
        }
        let slot = self.cold.config.wait_slot(task);
        let Some(p) = self.pending.get_mut(&id) else {
            // Late or unknown: discard, unless a live checkpoint holds the
            // handle (a duplicated ack that arrives after completion must
            // not delete committed state).
            let why = self.gone(id);
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(why);
        };
        let Some(slot) = slot else {
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(Ignored::UnknownTask);
        };
        if p.attempts.get(slot) != Some(&attempt) {
            self.discard_one(id, handle, fx);
            return Outcome::Ignored(Ignored::UnknownTask);
        }
        let completing = matches!(p.phase, PendingPhase::Finalizing | PendingPhase::Storing);
        // One walk down the slot tree: read and, on SUCCESS, write in place.
        let Some(mut cell) = p.acks.slot_mut(slot) else {
            // Slots are sized from `tasks_to_wait` at trigger time and
            // `wait_slot` only answers indices below that size.
            self.discard_one(id, handle, fx);
            return unreachable_branch(Unreachable::AckSlotMissing);
        };
        match cell.get() {
            AckSlot::Acked(held) => {
                // Same handle again: a duplicate delivery, nothing to free.
                // Another handle: the second write is an orphan.
                let outcome = Outcome::Ignored(if completing {
                    Ignored::CheckpointDiscarded
                } else {
                    Ignored::DuplicateAck
                });
                if held != handle {
                    self.discard_one(id, handle, fx);
                }
                outcome
            }
            AckSlot::Waiting if !completing => {
                cell.set(AckSlot::Acked(handle));
                p.remaining = p.remaining.saturating_sub(1);
                let remaining = p.remaining;
                let ready = remaining == 0 && p.phase == PendingPhase::AwaitingAcks;
                if ready {
                    self.on_fully_acked(id, fx);
                }
                Outcome::Applied(Applied::Acknowledged {
                    checkpoint: id,
                    remaining,
                })
            }
            AckSlot::Waiting => {
                self.discard_one(id, handle, fx);
                Outcome::Ignored(Ignored::CheckpointDiscarded)
            }
        }
    }

    fn on_decline(
        &mut self,
        job: JobId,
        task: TaskId,
        attempt: AttemptNo,
        id: CheckpointId,
        reason: DeclineReason,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(e) = self.check_job(job) {
            return Outcome::Rejected(e);
        }
        let Some(p) = self.pending.get(&id) else {
            return Outcome::Ignored(self.gone(id));
        };
        if !self.cold.config.is_known(task) {
            return Outcome::Ignored(Ignored::UnknownTask);
        }
        if let Some(slot) = self.cold.config.wait_slot(task) {
            if p.attempts.get(slot) != Some(&attempt) {
                return Outcome::Ignored(Ignored::StaleAttempt);
            }
        } else if self.cold.tasks.get(task.0 as usize).map(|s| s.attempt) != Some(attempt) {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        if p.fully_acked() && p.phase != PendingPhase::AwaitingHooks {
            return Outcome::Ignored(Ignored::CheckpointDiscarded);
        }
        let abort = AbortReason::Declined(reason);
        self.abort(id, abort, fx);
        // FIX (conformance with Flink 1.11, 1.20 and 2.3, which all start
        // the queued request after any decline): the seed resumed it only
        // when no more recent checkpoint was pending, so a request queued
        // behind the concurrency bound waited for the newer checkpoint
        // though the decline had freed a slot.
        self.resume_queued(fx);
        Outcome::Applied(Applied::Aborted {
            checkpoint: id,
            reason: abort,
        })
    }

    // ----- completion --------------------------------------------------------

    /// A checkpoint has every ack (and its hooks): it no longer waits on
    /// anybody but us, so its timeout is cancelled; completions run one at a
    /// time in id order, so completed checkpoint ids only increase.
    fn on_fully_acked(&mut self, id: CheckpointId, fx: &mut Fx) {
        self.disarm(Timer::Timeout(id), fx);
        self.start_next_completion(fx);
    }

    fn start_next_completion(&mut self, fx: &mut Fx) {
        if self.completing.is_some() {
            return;
        }
        let next = self
            .pending
            .values()
            .find(|p| p.remaining == 0 && p.phase == PendingPhase::AwaitingAcks)
            .map(|p| p.id);
        let Some(id) = next else {
            return;
        };
        let externalized = self.cold.config.externalized;
        if let Some(p) = self.pending.get_mut(&id) {
            p.phase = PendingPhase::Finalizing;
            let handles = p.handles().collect();
            let externalized = externalized || p.kind.is_savepoint();
            self.completing = Some(id);
            fx.push(E::Io {
                generation: self.cold.generation,
                request: IoRequest::Finalize {
                    checkpoint: id,
                    kind: p.kind.clone(),
                    timestamp: p.timestamp,
                    externalized,
                    handles,
                },
            });
        }
    }

    fn on_finalize_done(
        &mut self,
        id: CheckpointId,
        result: Result<(), IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(why) = self.awaits(id, PendingPhase::Finalizing) {
            return Outcome::Ignored(why);
        }
        if result.is_err() {
            return self.fail_completion(id, AbortReason::FinalizeFailed, fx);
        }
        let Some(p) = self.pending.get_mut(&id) else {
            return unreachable_branch(Unreachable::AwaitedVanished);
        };
        p.phase = PendingPhase::Storing;
        fx.push(E::Io {
            generation: self.cold.generation,
            request: IoRequest::Store { checkpoint: id },
        });
        Outcome::Applied(Applied::Finalized { checkpoint: id })
    }

    /// Whether checkpoint `id` is pending and waits in `phase` for an I/O
    /// answer; if not, why the answer is ignored (late, unknown, or not
    /// awaited in that phase).
    fn awaits(&self, id: CheckpointId, phase: PendingPhase) -> Result<(), Ignored> {
        match self.pending.get(&id) {
            None => Err(self.gone(id)),
            Some(p) if p.phase == phase => Ok(()),
            Some(_) => Err(Ignored::NotAwaited),
        }
    }

    fn fail_completion(&mut self, id: CheckpointId, reason: AbortReason, fx: &mut Fx) -> Outcome {
        self.abort(id, reason, fx);
        self.resume_queued(fx);
        self.start_next_completion(fx);
        Outcome::Applied(Applied::Aborted {
            checkpoint: id,
            reason,
        })
    }

    fn on_store_done(
        &mut self,
        id: CheckpointId,
        result: Result<(), IoFailure>,
        fx: &mut Fx,
    ) -> Outcome {
        if let Err(why) = self.awaits(id, PendingPhase::Storing) {
            return Outcome::Ignored(why);
        }
        if result.is_err() {
            return self.fail_completion(id, AbortReason::StoreFailed, fx);
        }
        let Some(p) = self.pending.remove(&id) else {
            return unreachable_branch(Unreachable::AwaitedVanished);
        };
        self.completing = None;
        self.remember(id);
        let savepoint = p.kind.is_savepoint();
        self.cold.completed.push_back(Completed {
            id,
            request: Some(p.request),
            savepoint,
            timestamp: p.timestamp,
            handles: p.acks,
        });
        self.evict_completed(fx);
        // FIX: record the new latest completed id *before* subsuming, so the
        // notify-aborted of a subsumed checkpoint carries the checkpoint that
        // subsumed it (modern Flink adds the completed checkpoint to the store
        // before dropping subsumed ones); it used to carry the previous one.
        if self.latest_completed.is_none_or(|l| l < id) {
            self.latest_completed = Some(id);
        }
        // Subsume every older pending checkpoint that may be subsumed.
        let older: Vec<CheckpointId> = self
            .pending
            .values()
            .filter(|q| q.id < id && q.can_be_subsumed())
            .map(|q| q.id)
            .collect();
        for q in older {
            self.abort(q, AbortReason::Subsumed, fx);
        }
        self.last_completion = Some(self.now);
        self.failures.count = 0;
        self.failures.job_failed = false;
        fx.push(E::Report(Report::Completed {
            checkpoint: id,
            request: p.request,
            savepoint,
        }));
        for t in &self.cold.config.commit {
            if let Some(s) = self.cold.tasks.get(t.0 as usize) {
                fx.push(E::Rpc {
                    task: *t,
                    attempt: s.attempt,
                    generation: self.cold.generation,
                    message: TaskMessage::NotifyComplete {
                        checkpoint: id,
                        timestamp: p.timestamp,
                    },
                });
            }
        }
        self.resume_queued(fx);
        self.start_next_completion(fx);
        Outcome::Applied(Applied::Completed { checkpoint: id })
    }

    /// Retention: the oldest checkpoints beyond `retained_max` go, and
    /// their state not held by another live checkpoint is discarded.
    /// Savepoints neither count nor go: they are the user's until disposed
    /// of ([`CoordinatorEvent::DisposeSavepoint`]).
    fn evict_completed(&mut self, fx: &mut Fx) {
        let legacy = self
            .cold
            .config
            .semantics()
            .is(LegacyBug::SavepointExpiresWithRetention);
        let counts = |c: &Completed| legacy || !c.savepoint;
        let max = self.cold.config.retained_max;
        while self.cold.completed.iter().filter(|c| counts(c)).count() > max {
            let Some(at) = self.cold.completed.iter().position(counts) else {
                return;
            };
            let old = self.cold.completed.remove(at);
            let mut handles: Vec<StateHandle> = old.handles().collect();
            self.discard_unheld(old.id, &mut handles, fx);
        }
    }

    fn remember(&mut self, id: CheckpointId) {
        if self.cold.recent.len() >= RECENT_IDS_MAX {
            self.cold.recent.pop_front();
        }
        self.cold.recent.push_back(id);
    }

    /// Abort one pending checkpoint: cancel its timeout, discard its state,
    /// remember its id, tell the host and the tasks, count the failure.
    fn abort(&mut self, id: CheckpointId, reason: AbortReason, fx: &mut Fx) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.disarm(Timer::Timeout(id), fx);
        if self.completing == Some(id) {
            self.completing = None;
        }
        let mut handles: Vec<StateHandle> = p.handles().collect();
        self.discard_unheld(id, &mut handles, fx);
        self.remember(id);
        fx.push(E::Report(Report::Aborted {
            checkpoint: id,
            request: p.request,
            reason,
        }));
        if reason != AbortReason::Shutdown {
            for t in &self.cold.config.commit {
                if let Some(s) = self.cold.tasks.get(t.0 as usize) {
                    if s.running {
                        fx.push(E::Rpc {
                            task: *t,
                            attempt: s.attempt,
                            generation: self.cold.generation,
                            message: TaskMessage::NotifyAborted {
                                checkpoint: id,
                                latest_completed: self.latest_completed,
                            },
                        });
                    }
                }
            }
        }
        self.count_failure(reason, p.kind.is_savepoint(), fx);
    }

    /// Flink's `CheckpointFailureManager`: count each checkpoint id once
    /// (structurally: see [`FailureCounter`](super::state::FailureCounter)),
    /// only for counted reasons and never for savepoints; past the limit,
    /// fail the job (once, until a success resets the counter).
    fn count_failure(&mut self, reason: AbortReason, savepoint: bool, fx: &mut Fx) {
        if savepoint || !reason.counts_as_failure() {
            return;
        }
        self.failures.count = self.failures.count.saturating_add(1);
        if self.failures.count > self.cold.config.tolerable_failures && !self.failures.job_failed {
            self.failures.job_failed = true;
            fx.push(E::Job(JobCommand::Fail(
                FailJobReason::TolerableFailuresExceeded {
                    failures: self.failures.count,
                },
            )));
        }
    }

    // ----- tasks, restore, shutdown -----------------------------------------

    fn on_task_running(&mut self, task: TaskId, attempt: AttemptNo, fx: &mut Fx) -> Outcome {
        let Some(s) = self.cold.tasks.get(task.0 as usize).copied() else {
            return Outcome::Rejected(CoordinatorError::UnknownTask(task));
        };
        if !self.cold.config.is_known(task) {
            return Outcome::Rejected(CoordinatorError::UnknownTask(task));
        }
        // The known attempt again is a duplicate while it runs, and a late
        // report once it failed: a failed attempt never runs again (a
        // restart is a new attempt). Reviving it would send trigger
        // messages to a dead task and leave checkpoints waiting for acks
        // that cannot come.
        if attempt <= s.attempt {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        // A newer attempt while the old one still counted as running means
        // the old one is gone without a failure report: checkpoints waiting
        // for its ack can never complete, so abort them now rather than let
        // them expire.
        let aborted = if s.running {
            // The old attempt is gone: no notification goes to it.
            self.cold.tasks.set(
                task.0 as usize,
                super::TaskStatus {
                    attempt: s.attempt,
                    running: false,
                },
            );
            self.abort_unacked_by(task, fx)
        } else {
            0
        };
        self.cold.tasks.set(
            task.0 as usize,
            super::TaskStatus {
                attempt,
                running: true,
            },
        );
        Outcome::Applied(Applied::TaskUpdated { aborted })
    }

    /// Aborts every pending checkpoint still waiting for `task`'s ack (those
    /// already finalizing have every ack and are left alone); resumes the
    /// queue when any was aborted. Returns how many were aborted.
    fn abort_unacked_by(&mut self, task: TaskId, fx: &mut Fx) -> usize {
        let victims: Vec<CheckpointId> = match self.cold.config.wait_slot(task) {
            Some(slot) => self
                .pending
                .values()
                .filter(|p| {
                    !matches!(p.phase, PendingPhase::Finalizing | PendingPhase::Storing)
                        && p.acks.get(slot) == Some(AckSlot::Waiting)
                })
                .map(|p| p.id)
                .collect(),
            None => Vec::new(),
        };
        for id in &victims {
            self.abort(*id, AbortReason::TaskFailed, fx);
        }
        // Legacy (FLINK-13256): the request queued at the concurrency bound,
        // which had cancelled the periodic timer, was never resumed.
        if !victims.is_empty()
            && !self
                .cold
                .config
                .semantics()
                .is(LegacyBug::AbortAllLeavesQueueStuck)
        {
            self.resume_queued(fx);
        }
        victims.len()
    }

    fn on_task_failed(&mut self, task: TaskId, attempt: AttemptNo, fx: &mut Fx) -> Outcome {
        let Some(s) = self.cold.tasks.get(task.0 as usize).copied() else {
            return Outcome::Rejected(CoordinatorError::UnknownTask(task));
        };
        if !self.cold.config.is_known(task) {
            return Outcome::Rejected(CoordinatorError::UnknownTask(task));
        }
        if attempt != s.attempt || !s.running {
            return Outcome::Ignored(Ignored::StaleAttempt);
        }
        self.cold.tasks.set(
            task.0 as usize,
            super::TaskStatus {
                attempt,
                running: false,
            },
        );
        let aborted = self.abort_unacked_by(task, fx);
        Outcome::Applied(Applied::TaskUpdated { aborted })
    }

    /// The checkpoint `Restore { Latest }` restores: the retained one with
    /// the highest id ([`crate::commit::latest`]), or, in the legacy
    /// semantics that had two meanings of "latest", the last one committed.
    fn restore_point(&self) -> Option<&Completed> {
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::RestoreLastCommitted)
        {
            self.cold.completed.last()
        } else {
            self.latest_retained()
        }
    }

    /// Emits the restore of the latest retained checkpoint (or from
    /// scratch when there is none).
    fn emit_restore(&self, fx: &mut Fx) -> Applied {
        let (checkpoint, handles) = match self.restore_point() {
            Some(c) => (Some(c.id), c.handles().collect()),
            None => (None, Vec::new()),
        };
        fx.push(E::Job(JobCommand::Restore {
            checkpoint,
            handles,
        }));
        Applied::Restored { checkpoint }
    }

    fn on_restore(&mut self, source: RestoreSource, fx: &mut Fx) -> Outcome {
        match source {
            RestoreSource::Latest { error_if_none } => {
                if self.cold.restore_deferred {
                    return Outcome::Ignored(Ignored::RestoreAlreadyDeferred);
                }
                let legacy = self
                    .cold
                    .config
                    .semantics()
                    .is(LegacyBug::RestoreBehindCompletion);
                // A finalize or store in flight may commit: the restore
                // point is not known until it answers.
                let awaiting = self.completing.filter(|_| !legacy);
                if error_if_none && self.restore_point().is_none() && awaiting.is_none() {
                    return Outcome::Rejected(CoordinatorError::NoCheckpointToRestore);
                }
                if !legacy {
                    // The run before the restore cannot complete anything
                    // but what is already out for storing.
                    let ids: Vec<CheckpointId> = self
                        .pending
                        .keys()
                        .copied()
                        .filter(|id| Some(*id) != self.completing)
                        .collect();
                    for id in ids {
                        self.abort(id, AbortReason::Restored, fx);
                    }
                }
                if let Some(c) = awaiting {
                    self.cold.restore_deferred = true;
                    return Outcome::Applied(Applied::RestoreDeferred { awaiting: c });
                }
                Outcome::Applied(self.emit_restore(fx))
            }
            RestoreSource::Savepoint {
                checkpoint,
                handles,
            } => {
                let Some(next) = checkpoint.next() else {
                    return Outcome::Rejected(CoordinatorError::IdOverflow(checkpoint));
                };
                let conflict = !self.pending.is_empty()
                    || self.cold.in_flight.is_some()
                    || self.last_id.is_some_and(|l| checkpoint <= l);
                if conflict {
                    return Outcome::Rejected(CoordinatorError::SavepointRestoreConflict(
                        checkpoint,
                    ));
                }
                fx.push(E::Job(JobCommand::ResetIdCounter {
                    generation: self.cold.generation,
                    next,
                }));
                self.last_id = Some(checkpoint);
                // FIX: the restored savepoint is now the latest completed
                // checkpoint (it is in the completed store), so a later
                // notify-aborted must carry it; it used to stay `None`.
                if self.latest_completed.is_none_or(|l| l < checkpoint) {
                    self.latest_completed = Some(checkpoint);
                }
                self.remember(checkpoint);
                self.cold.completed.push_back(Completed {
                    id: checkpoint,
                    request: None,
                    savepoint: true,
                    timestamp: self.now,
                    handles: handles.iter().map(|h| AckSlot::Acked(Some(*h))).collect(),
                });
                self.evict_completed(fx);
                fx.push(E::Job(JobCommand::Restore {
                    checkpoint: Some(checkpoint),
                    handles,
                }));
                Outcome::Applied(Applied::Restored {
                    checkpoint: Some(checkpoint),
                })
            }
        }
    }

    fn on_recover(
        &mut self,
        checkpoints: Vec<RecoveredCheckpoint>,
        last_id: Option<CheckpointId>,
        generation: Generation,
    ) -> Outcome {
        let fresh = self.last_id.is_none()
            && self.cold.completed.is_empty()
            && self.pending.is_empty()
            && self.cold.in_flight.is_none()
            && self.cold.queue.is_empty()
            && self.cold.recent.is_empty();
        let problem = if !fresh {
            Some(RecoverProblem::NotFresh)
        } else if !crate::commit::is_legal_order(
            checkpoints.iter().map(|c| (c.checkpoint, c.savepoint)),
        ) {
            Some(RecoverProblem::OutOfOrder)
        } else if checkpoints
            .iter()
            .any(|c| last_id.is_none_or(|l| c.checkpoint > l))
        {
            Some(RecoverProblem::IdAboveCounter)
        } else {
            None
        };
        if let Some(p) = problem {
            return Outcome::Rejected(CoordinatorError::RecoverConflict(p));
        }
        self.last_id = last_id;
        // Legacy: the new leader writes under the same token as the one it
        // replaced, so nothing can tell a deposed leader's writes apart.
        if !self.cold.config.semantics().is(LegacyBug::NoFencing) {
            self.cold.generation = generation;
        }
        for c in checkpoints {
            self.remember(c.checkpoint);
            // The newest completion, as the running coordinator keeps it: a
            // savepoint committed after a newer checkpoint does not lower it.
            if self.latest_completed.is_none_or(|l| l < c.checkpoint) {
                self.latest_completed = Some(c.checkpoint);
            }
            self.cold.completed.push_back(Completed {
                id: c.checkpoint,
                request: None,
                savepoint: c.savepoint,
                timestamp: c.timestamp,
                handles: c.handles.iter().map(|h| AckSlot::Acked(Some(*h))).collect(),
            });
        }
        Outcome::Applied(Applied::Recovered {
            latest: self.latest_completed,
        })
    }

    /// The two discard lists of the in-doubt hand-over: what goes if the
    /// store holds `c` (the state of the checkpoints its commit evicts,
    /// by the same retention as [`Self::evict_completed`], that no
    /// checkpoint still stored holds), and what goes if it definitely does
    /// not (`c`'s own state that no retained checkpoint or savepoint holds).
    fn in_doubt_lists(&self, c: &Completed) -> (Vec<StateHandle>, Vec<StateHandle>) {
        let mine: Vec<StateHandle> = sorted(c.handles());
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::InDoubtListsSharedState)
        {
            // Legacy: every handle of the in-doubt checkpoint, shared or not.
            return (Vec::new(), mine);
        }
        let retained: Vec<StateHandle> =
            sorted(self.cold.completed.iter().flat_map(Completed::handles));
        let if_not_stored = minus(&mine, &retained);
        // Retention after the commit: the checkpoints (never savepoints)
        // beyond the bound, oldest first, leave the store.
        let max = self.cold.config.retained_max;
        let mut counted =
            self.cold.completed.iter().filter(|k| !k.savepoint).count() + usize::from(!c.savepoint);
        let mut evicted = Vec::new();
        let mut kept = mine;
        for k in &self.cold.completed {
            if !k.savepoint && counted > max {
                counted -= 1;
                evicted.extend(k.handles());
            } else {
                kept.extend(k.handles());
            }
        }
        let kept = sorted(kept);
        (minus(&sorted(evicted), &kept), if_not_stored)
    }

    fn on_dispose_savepoint(&mut self, id: CheckpointId, fx: &mut Fx) -> Outcome {
        let Some(at) = self.cold.completed.iter().position(|c| c.id == id) else {
            return Outcome::Ignored(Ignored::UnknownCheckpoint);
        };
        if !self.cold.completed.get(at).is_some_and(|c| c.savepoint) {
            return Outcome::Rejected(CoordinatorError::NotASavepoint(id));
        }
        let gone = self.cold.completed.remove(at);
        let mut handles: Vec<StateHandle> = gone.handles().collect();
        self.discard_unheld(id, &mut handles, fx);
        Outcome::Applied(Applied::SavepointDisposed { checkpoint: id })
    }

    fn on_shutdown(&mut self, status: JobStatus, fx: &mut Fx) -> Outcome {
        self.shutdown = true;
        self.periodic = false;
        // Legacy (FLINK-20992 / FLINK-18290): the request allocating its id
        // was not cancelled; its late answer still creates a checkpoint.
        let in_flight = if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::EffectsAfterShutdown)
        {
            self.cold.in_flight.take()
        } else {
            None
        };
        self.drop_requests(AbortReason::Shutdown, fx);
        self.cold.in_flight = in_flight;
        self.cold.restore_deferred = false;
        if let Some(id) = self.completing_kept() {
            // Never discard: the store may hold (or still commit) it. The
            // state stays owned here, in doubt, for the host to resolve.
            if let Some(p) = self.pending.remove(&id) {
                self.completing = None;
                self.remember(id);
                let in_doubt = Completed {
                    id,
                    request: Some(p.request),
                    savepoint: p.kind.is_savepoint(),
                    timestamp: p.timestamp,
                    handles: p.acks,
                };
                let (discard_if_stored, discard_if_not_stored) = self.in_doubt_lists(&in_doubt);
                fx.push(E::Job(JobCommand::ResolveInDoubt {
                    checkpoint: id,
                    discard_if_stored,
                    discard_if_not_stored,
                }));
                self.cold.in_doubt = Some(in_doubt);
            }
        }
        let ids: Vec<CheckpointId> = self.pending.keys().copied().collect();
        for id in ids {
            self.abort(id, AbortReason::Shutdown, fx);
        }
        let timers: Vec<Timer> = self.cold.timers.keys().copied().collect();
        for t in timers {
            self.disarm(t, fx);
        }
        fx.push(E::Job(JobCommand::ShutdownServices(status)));
        Outcome::Applied(Applied::ShutDown)
    }
}

/// A branch the reducer's own structure rules out. Loud in debug builds
/// (tests, fuzzing under `cargo test`, model tests); total in release, where
/// the typed outcome trips the `no-unreachable-branch` invariant instead.
#[track_caller]
fn unreachable_branch(which: Unreachable) -> Outcome {
    debug_assert!(false, "unreachable coordinator branch: {which:?}");
    Outcome::Ignored(Ignored::Unreachable(which))
}

enum Recheck {
    Queue,
    Reject(TriggerRejection),
}

/// The handles, sorted, without repeats.
fn sorted(handles: impl IntoIterator<Item = StateHandle>) -> Vec<StateHandle> {
    let mut v: Vec<StateHandle> = handles.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The handles of `a` (sorted) that are not in `b` (sorted).
fn minus(a: &[StateHandle], b: &[StateHandle]) -> Vec<StateHandle> {
    a.iter()
        .copied()
        .filter(|h| b.binary_search(h).is_err())
        .collect()
}
