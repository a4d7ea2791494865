//! Triggering: requests, the seed's pre-checks, the queue, id allocation and the re-check after it, creating a pending checkpoint, master hooks, the trigger messages.

use super::*;

impl CoordinatorState {
    pub(super) fn new_request(&mut self, kind: TriggerKind) -> Request {
        // In the cold part: every request that is not refused at once
        // enters `in_flight` or `queue` there in the same step.
        let cold = &mut *self.cold;
        let id = RequestId(cold.next_request);
        cold.next_request = cold.next_request.saturating_add(1);
        Request {
            id,
            kind,
            requested_at: self.now,
            hooks_for: None,
        }
    }

    /// Savepoints kept or on their way: completed and not disposed of,
    /// pending, queued or allocating their id.
    pub(super) fn savepoints_kept(&self) -> usize {
        let cold = &self.cold;
        cold.completed.iter().filter(|c| c.savepoint).count()
            + self
                .pending
                .values()
                .filter(|p| p.kind().is_savepoint())
                .count()
            + cold.queue.iter().filter(|r| r.kind.is_savepoint()).count()
            + usize::from(
                cold.in_flight
                    .as_ref()
                    .is_some_and(|r| r.kind.is_savepoint()),
            )
    }

    pub(super) fn savepoints_max(&self) -> usize {
        self.cold.config.savepoints_max
    }

    pub(super) fn non_forced_outstanding(&self) -> bool {
        self.cold.queue.iter().any(|r| !r.kind.is_forced())
            || self
                .cold
                .in_flight
                .as_ref()
                .is_some_and(|r| !r.kind.is_forced())
    }

    pub(super) fn enqueue(&mut self, request: Request) -> bool {
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

    pub(super) fn tasks_ready(&self) -> bool {
        // While a restore waits for its completion the job has no restore
        // point yet: no task of the new run may checkpoint.
        if self.cold.restore_deferred {
            return false;
        }
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::FailedCountsAsFinished)
        {
            // Legacy (FLINK-40482): a task that is down counts as finished,
            // so the plan leaves it out instead of refusing the trigger.
            return true;
        }
        // The final checkpoint is pending, or the job finished: nothing
        // more is triggered.
        if self.cold.finish.is_some() {
            return false;
        }
        // A finished task is planned as finished when checkpoints after
        // finished tasks are on; off, it blocks every trigger.
        let after = self.cold.config.checkpoints_after_tasks_finish();
        let ready = |t: &TaskId| self.is_running(*t) || (after && self.is_finished(*t));
        self.cold.config.trigger.iter().all(ready) && self.cold.config.wait.iter().all(ready)
    }

    /// Whether `task`'s current attempt is running.
    pub(super) fn is_running(&self, task: TaskId) -> bool {
        self.cold
            .tasks
            .get(task.0 as usize)
            .is_some_and(|s| s.running)
    }

    /// [`Self::pause_until`] for a request of `kind`: the minimum pause holds
    /// back periodic checkpoints only. FIX (conformance with Flink 1.11,
    /// 1.20 and 2.3, whose request decider applies it to periodic requests
    /// only): the seed held back every non-forced request, so a user's
    /// checkpoint right after a completion was refused.
    pub(super) fn pause_until_for(&self, kind: &TriggerKind) -> Option<Millis> {
        match kind {
            TriggerKind::Periodic => self.pause_until(),
            TriggerKind::Checkpoint { .. }
            | TriggerKind::Savepoint { .. }
            | TriggerKind::StopWithSavepoint { .. } => None,
        }
    }

    /// Earliest time the minimum pause allows a periodic trigger, when that
    /// is still in the future.
    pub(super) fn pause_until(&self) -> Option<Millis> {
        let last = self.cold.last_completion?;
        let earliest = last.saturating_add(self.cold.config.min_pause_ms);
        (earliest > self.now).then_some(earliest)
    }

    /// The seed's pre-checks, in its order. `fresh` is false for a request
    /// resumed from the queue (it is the queued one, so "already queued" does
    /// not apply to it).
    pub(super) fn on_request(&mut self, request: Request, fresh: bool, fx: &mut Fx) -> Applied {
        let id = request.id;
        let reject = |reason| Applied::TriggerRejected {
            request: id,
            reason,
        };
        if matches!(request.kind, TriggerKind::Periodic) && !self.periodic {
            return reject(TriggerRejection::PeriodicSchedulerShutdown);
        }
        if fresh && self.stopping() {
            return reject(TriggerRejection::Stopping);
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
    pub(super) fn queue_too_many(&mut self, request: Request, fx: &mut Fx) -> Applied {
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
    pub(super) fn resume_queued(&mut self, fx: &mut Fx) {
        // Each round removes one request, so this ends within the bound.
        while self.cold.in_flight.is_none() {
            let slot_free = self.pending.len() < self.cold.config.max_concurrent;
            let Some(request) = self
                .cold
                .queue
                .iter()
                .position(|r| r.kind.is_forced() || slot_free)
                .and_then(|pos| self.cold.queue.remove(pos))
            else {
                return;
            };
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
                TriggerKind::Checkpoint { forced: true }
                | TriggerKind::Savepoint { .. }
                | TriggerKind::StopWithSavepoint { .. } => false,
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

    pub(super) fn on_id_allocated(
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
                self.cold.consecutive_trigger_failures =
                    self.cold.consecutive_trigger_failures.saturating_add(1);
                let reason = AbortReason::IdAllocationFailed;
                fx.push(E::Report(Report::RequestFailed { request, reason }));
                self.count_failure(reason, savepoint, fx);
                self.resume_queued(fx);
                return Outcome::Applied(Applied::RequestEnded { request, reason });
            }
        };
        if let Some(last) = self.cold.last_id {
            if id <= last {
                return Outcome::Rejected(CoordinatorError::NonIncreasingId { got: id, last });
            }
        }
        let Some(req) = self.cold.in_flight.take() else {
            return unreachable_branch(Unreachable::InFlightVanished);
        };
        self.cold.last_id = Some(id);
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
        // Written only when it changes: a write to the shared cold part
        // copies it.
        if self.cold.consecutive_trigger_failures != 0 {
            self.cold.consecutive_trigger_failures = 0;
        }
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

    pub(super) fn recheck(&mut self, req: &Request, fx: &mut Fx) -> Option<Recheck> {
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

    pub(super) fn create_pending(&mut self, req: Request, id: CheckpointId, fx: &mut Fx) {
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
        let mut acks = AckTable::filled(slots, AckSlot::Waiting);
        // The configuration bounds the slots by `TASK_ID_MAX` (16 Mi).
        let mut remaining = u32::try_from(slots).unwrap_or(u32::MAX);
        // A finished task is planned as finished (FLIP-147): its slot holds
        // its final state, no state handle, from the start. Legacy
        // (FLINK-40482): so is a task that is down.
        let down_is_finished = self
            .cold
            .config
            .semantics()
            .is(LegacyBug::FailedCountsAsFinished);
        for (slot, t) in self.cold.config.wait.iter().enumerate() {
            let finished = self.is_finished(*t) || (down_is_finished && !self.is_running(*t));
            if finished && acks.set(slot, AckSlot::Acked(None)).is_some() {
                remaining = remaining.saturating_sub(1);
            }
        }
        let pending = PendingRecord {
            id,
            request: req.id,
            kind: req.kind,
            timestamp: self.now,
            attempts: attempts.into(),
            acks,
            remaining,
            phase: if hooks {
                PendingPhase::AwaitingHooks
            } else {
                PendingPhase::AwaitingAcks
            },
        };
        let timestamp = pending.timestamp;
        self.pending.insert(pending);
        self.note_final(id);
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
            if remaining == 0 {
                // Every task finished: nothing to wait for (the final
                // checkpoint).
                self.on_fully_acked(id, fx);
            }
        }
    }

    pub(super) fn send_triggers(&self, id: CheckpointId, fx: &mut Fx) {
        let Some(p) = self.pending.get(&id) else {
            return;
        };
        self.trigger_tasks(id, p.timestamp(), p.kind().options(), fx);
    }

    pub(super) fn trigger_tasks(
        &self,
        id: CheckpointId,
        timestamp: Millis,
        options: CheckpointOptions,
        fx: &mut Fx,
    ) {
        let down_is_finished = self
            .cold
            .config
            .semantics()
            .is(LegacyBug::FailedCountsAsFinished);
        // Once every task to trigger finished, the tasks still running read
        // only from finished tasks (ckpt's plan knows the sources, not the
        // graph between the others): each is triggered itself, as Flink's
        // plan triggers a running task whose inputs all finished.
        let sources_finished = !down_is_finished
            && self
                .cold
                .config
                .trigger
                .iter()
                .all(|t| self.is_finished(*t));
        let targets = if sources_finished {
            &self.cold.config.wait
        } else {
            &self.cold.config.trigger
        };
        fx.reserve(targets.len());
        for t in targets {
            if (down_is_finished && !self.is_running(*t)) || self.is_finished(*t) {
                continue;
            }
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

    pub(super) fn on_hooks_done(
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
}
