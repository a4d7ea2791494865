//! Periodic scheduling, expiry and timers.

use super::*;

// ============================================================================
// Periodic scheduling
// ============================================================================

#[test]
fn start_scheduler_arms_periodic_timer_one_interval_ahead() {
    let mut h = H::new();
    h.expect(
        5,
        Ev::StartScheduler,
        vec![sched(Timer::Periodic, 1_005)],
        applied(Applied::SchedulerStarted),
    );
    assert!(h.s.is_periodic_scheduling());
}

#[test]
fn start_scheduler_stops_first_aborting_pending_checkpoints() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r, AbortReason::SchedulerStopped, None));
    fx.push(sched(Timer::Periodic, 1_010));
    h.expect(
        10,
        Ev::StartScheduler,
        fx,
        applied(Applied::SchedulerStarted),
    );
    assert_eq!(h.s.pending_count(), 0);
}

#[test]
fn stop_scheduler_aborts_all_pending_and_clears_queued_flag() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    let r0 = h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // queued: too many concurrent
    assert!(h.s.is_trigger_request_queued());
    let mut fx = vec![
        e_failed(1, AbortReason::SchedulerStopped),
        cancel(Timer::Timeout(cp(1))),
    ];
    fx.extend(h.aborted_notified(1, r0, AbortReason::SchedulerStopped, None));
    h.expect(
        1_100,
        Ev::StopScheduler,
        fx,
        applied(Applied::SchedulerStopped { aborted: 1 }),
    );
    assert!(!h.s.is_trigger_request_queued());
    assert!(!h.s.is_periodic_scheduling());
    assert_eq!(h.s.pending_count(), 0);
    assert_eq!(h.s.timers().count(), 0);
}

#[test]
fn stop_scheduler_fails_the_in_flight_request_and_its_late_id_is_ignored() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        1,
        Ev::StopScheduler,
        vec![e_failed(0, AbortReason::SchedulerStopped)],
        applied(Applied::SchedulerStopped { aborted: 0 }),
    );
    h.expect(2, alloc(0, 1), vec![], ignored(Ignored::UnknownRequest));
}

#[test]
fn stop_scheduler_resets_consecutive_trigger_failures() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(0, alloc_err(0));
    assert_eq!(h.s.consecutive_trigger_failures(), 1);
    h.step(1, Ev::StopScheduler);
    assert_eq!(h.s.consecutive_trigger_failures(), 0);
}

#[test]
fn periodic_timer_fires_allocates_id_and_rearms_at_fixed_rate() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), e_alloc(0)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(0),
        }))),
    );
}

#[test]
fn periodic_timer_fired_late_rearms_one_interval_after_now() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        2_500,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 3_500), e_alloc(0)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(0),
        }))),
    );
}

// ============================================================================
// Expiry and timers
// ============================================================================

#[test]
fn timeout_expires_the_pending_checkpoint_and_resumes_the_queued_request() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.step(2, trigger(user())); // request 1 queued
    let mut fx = vec![e_discard(1, 100)];
    fx.extend(h.aborted_notified(1, r, AbortReason::Expired, None));
    fx.push(e_alloc(1));
    h.expect(
        10_000,
        fire(Timer::Timeout(cp(1))),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Expired,
        }),
    );
    assert!(h.s.recent_ids().any(|id| *id == cp(1)));
}

#[test]
fn timeout_for_a_checkpoint_that_no_longer_exists_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, decline(0, 1));
    h.expect(
        10_000,
        fire(Timer::Timeout(cp(1))),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
    // ... nor for a completing one (its timeout was cancelled).
    h.user_cp(2, 2);
    h.ack_all(3, 2);
    h.expect(
        10_002,
        fire(Timer::Timeout(cp(2))),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
}

#[test]
fn cancelled_periodic_timer_firing_is_ignored() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(1, Ev::StopScheduler);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
}

#[test]
fn timer_firing_before_its_deadline_is_ignored() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        999,
        fire(Timer::Periodic),
        vec![],
        ignored(Ignored::TimerNotDue),
    );
}

#[test]
fn time_going_backwards_is_clamped_and_reported() {
    let mut h = H::new();
    h.step(100, Ev::StartScheduler);
    let step = h.step(50, trigger(user()));
    assert_eq!(
        step.clock,
        Clock::Clamped {
            given: ms(50),
            used: ms(100),
        }
    );
    assert_eq!(step.effects, vec![e_alloc(0)]);
    assert_eq!(h.s.now(), ms(100));
    h.step(60, alloc(0, 1));
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::timestamp),
        Some(ms(100))
    );
    assert_eq!(h.s.timer_deadline(Timer::Timeout(cp(1))), Some(ms(10_100)));
}

#[test]
fn notify_aborted_carries_the_trigger_timestamp() {
    // Flink's notifyCheckpointAborted carries the aborted checkpoint's
    // timestamp; so does ckpt's route, whenever the abort happens.
    let mut h = H::new();
    h.user_cp(7, 1);
    let step = h.step(1_100, Ev::StopScheduler);
    let stamps: Vec<(TaskId, Millis)> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            E::Rpc { task, message, .. } => match message {
                TaskMessage::NotifyAborted { timestamp, .. } => Some((*task, *timestamp)),
                TaskMessage::Trigger { .. } | TaskMessage::NotifyComplete { .. } => None,
            },
            E::Timer { .. } | E::Io { .. } | E::Discard { .. } | E::Job(_) | E::Report(_) => None,
        })
        .collect();
    assert_eq!(stamps, vec![(t(0), ms(7)), (t(1), ms(7))]);
}

/// A step that changes nothing in the cold part (stopping a scheduler that
/// never started: no request to drop, no periodic timer to disarm) leaves
/// it shared with the state before: the pure step copies nothing there.
/// Stopping a started one writes it (the timer), and copies it.
#[test]
fn stopping_a_stopped_scheduler_leaves_the_cold_part_shared() {
    let h = H::new();
    let t = reduce(&h.s, ms(1), Ev::StopScheduler);
    assert!(t.step.effects.is_empty(), "{:?}", t.step.effects);
    assert!(t.state.cold.ptr_eq(&h.s.cold));
    let mut started = H::new();
    started.step(0, Ev::StartScheduler);
    let t = reduce(&started.s, ms(1), Ev::StopScheduler);
    assert_eq!(t.step.effects, vec![cancel(Timer::Periodic)]);
    assert!(!t.state.cold.ptr_eq(&started.s.cold));
}
