//! Periodic scheduling: starting and stopping the scheduler, the timer table, the periodic and timeout timers firing.

use super::*;

impl CoordinatorState {
    pub(super) fn arm(&mut self, timer: Timer, at: Millis, fx: &mut Fx) {
        self.cold.timers.insert(timer, at);
        fx.push(E::Timer {
            timer,
            at: Some(at),
        });
    }

    pub(super) fn disarm(&mut self, timer: Timer, fx: &mut Fx) {
        // Looked up first through a shared reference: reaching the table
        // mutably writes the cold part, which copies it when the state
        // before the event shares it (every pure step); a timer that is not
        // armed (the periodic one of a stopped scheduler) costs no copy.
        let Some(i) = self.cold.timers.position(&timer) else {
            return;
        };
        self.cold.timers.remove_at(i);
        fx.push(E::Timer { timer, at: None });
    }

    pub(super) fn on_start_scheduler(&mut self, fx: &mut Fx) -> Outcome {
        // The seed stops first (aborting pending checkpoints), then starts.
        self.stop_scheduler(fx);
        self.periodic = true;
        let at = self.now.saturating_add(self.cold.config.interval_ms);
        self.arm(Timer::Periodic, at, fx);
        Outcome::Applied(Applied::SchedulerStarted)
    }

    pub(super) fn on_stop_scheduler(&mut self, fx: &mut Fx) -> Outcome {
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
    pub(super) fn stop_scheduler(&mut self, fx: &mut Fx) -> usize {
        self.drop_requests(AbortReason::SchedulerStopped, fx);
        self.periodic = false;
        self.disarm(Timer::Periodic, fx);
        let keep = self.completing_kept();
        let ids: Vec<CheckpointId> = self.pending.keys().filter(|id| Some(*id) != keep).collect();
        for id in &ids {
            self.abort(*id, AbortReason::SchedulerStopped, fx);
        }
        // Written only when it changes: a write to the shared cold part
        // copies it.
        if self.cold.consecutive_trigger_failures != 0 {
            self.cold.consecutive_trigger_failures = 0;
        }
        ids.len()
    }

    /// The checkpoint whose finalize or store is outstanding, when the
    /// durability rule protects it (always, but in the legacy semantics that
    /// discarded it).
    pub(super) fn completing_kept(&self) -> Option<CheckpointId> {
        if self
            .cold
            .config
            .semantics()
            .is(LegacyBug::DiscardWhileStoring)
        {
            None
        } else {
            self.completing()
        }
    }

    pub(super) fn drop_requests(&mut self, reason: AbortReason, fx: &mut Fx) {
        // Nothing to drop, nothing written (see `disarm`).
        if self.cold.in_flight.is_none() && self.cold.queue.is_empty() {
            return;
        }
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

    pub(super) fn on_timer(&mut self, timer: Timer, fx: &mut Fx) -> Outcome {
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
}
