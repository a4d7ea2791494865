//! Triggering: the seed's pre-checks, id allocation and the re-check after it, the request queue, master hooks, savepoints.

use super::*;

// ============================================================================
// Trigger pre-checks (the seed's order)
// ============================================================================

#[test]
fn periodic_trigger_while_scheduler_off_is_rejected() {
    let mut h = H::new();
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
}

#[test]
fn periodic_scheduler_check_precedes_already_queued() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(0, trigger(user())); // queued
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
}

#[test]
fn trigger_while_request_already_queued_is_rejected() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
    // Already-queued is checked before too-many-concurrent: not queued twice.
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::AlreadyQueued,
        }),
    );
    assert_eq!(h.queued_ids(), vec![rq(1)]);
}

#[test]
fn trigger_while_non_forced_request_allocates_its_id_is_already_queued() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(1),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::AlreadyQueued,
        }),
    );
}

#[test]
fn too_many_concurrent_queues_request_and_cancels_periodic_timer() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), cancel(Timer::Periodic)],
        applied(Applied::PeriodicFired(Box::new(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }))),
    );
    assert!(h.s.is_trigger_request_queued());
    assert_eq!(h.s.timer_deadline(Timer::Periodic), None);
}

#[test]
fn too_many_concurrent_is_checked_before_min_pause() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.pending(100, forced(), 2); // forced: past the pause, fills the slot
    h.expect(
        200,
        trigger(user()),
        vec![],
        applied(Applied::Queued {
            request: rq(2),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
}

#[test]
fn min_pause_not_passed_reschedules_periodic_timer() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(100, 1);
    h.complete(600, 1);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), sched(Timer::Periodic, 1_100)],
        applied(Applied::PeriodicFired(Box::new(Applied::TriggerRejected {
            request: rq(1),
            reason: TriggerRejection::MinimumTimeBetweenCheckpoints,
        }))),
    );
    assert_eq!(h.s.timer_deadline(Timer::Periodic), Some(ms(1_100)));
    // At the moved deadline the pause has passed.
    h.expect(
        1_100,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_100), e_alloc(2)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(2),
        }))),
    );
}

#[test]
fn min_pause_holds_back_periodic_checkpoints_only() {
    // Flink (1.11, 1.20, 2.3) applies the minimum pause to periodic
    // requests only; a user's checkpoint right after a completion starts.
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.expect(
        599,
        trigger(user()),
        vec![e_alloc(1)],
        applied(Applied::AllocatingId { request: rq(1) }),
    );
    h.step(599, alloc(1, 2));
    h.complete(599, 2);
    // The periodic trigger within the pause is moved to its end.
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), sched(Timer::Periodic, 1_099)],
        applied(Applied::PeriodicFired(Box::new(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::MinimumTimeBetweenCheckpoints,
        }))),
    );
}

#[test]
fn trigger_with_a_task_to_trigger_not_running_is_rejected() {
    let mut h = H::new();
    h.expect(
        0,
        failed(0, 0),
        vec![],
        applied(Applied::TaskUpdated { aborted: 0 }),
    );
    h.expect(
        0,
        trigger(savepoint()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        }),
    );
}

#[test]
fn trigger_with_a_task_to_wait_for_not_running_is_rejected() {
    let mut h = H::new();
    h.step(0, failed(1, 0));
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        }),
    );
    // Once a new attempt runs, triggering works again.
    h.step(1, running(1, 1));
    h.expect(
        2,
        trigger(user()),
        vec![e_alloc(1)],
        applied(Applied::AllocatingId { request: rq(1) }),
    );
}

// ============================================================================
// Checkpoint id allocation and the re-check
// ============================================================================

#[test]
fn id_allocation_creates_pending_checkpoint_with_timeout_and_triggers_tasks() {
    let mut h = H::new();
    h.expect(
        3,
        trigger(user()),
        vec![e_alloc(0)],
        applied(Applied::AllocatingId { request: rq(0) }),
    );
    h.expect(
        5,
        alloc(0, 1),
        vec![sched(Timer::Timeout(cp(1)), 10_005), e_full(1, 5)],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    let p = h.s.pending_checkpoint(cp(1)).expect("pending");
    assert_eq!(p.phase(), PendingPhase::AwaitingAcks);
    assert_eq!(p.remaining(), 2);
    assert_eq!(p.timestamp(), ms(5));
    assert_eq!(h.s.in_flight(), None);
    assert_eq!(h.s.last_id(), Some(cp(1)));
}

#[test]
fn trigger_messages_go_to_every_task_to_trigger_with_its_current_attempt() {
    let mut h = H::with(CoordinatorSettings {
        tasks_to_trigger: vec![t(0), t(1)],
        ..settings()
    });
    h.step(0, failed(1, 0));
    h.step(0, running(1, 3));
    h.step(0, trigger(user()));
    h.expect(
        0,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_000),
            e_trig(0, 0, 1, 0, CheckpointOptions::FullCheckpoint),
            e_trig(1, 3, 1, 0, CheckpointOptions::FullCheckpoint),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1))
            .expect("pending")
            .attempts()
            .collect::<Vec<_>>(),
        [AttemptNo(0), AttemptNo(3)]
    );
}

#[test]
fn id_allocation_failure_counts_as_consecutive_unsuccessful_trigger() {
    let mut h = H::new();
    for n in 0..2u64 {
        h.step(0, trigger(user()));
        h.expect(
            0,
            alloc_err(n),
            vec![e_failed(n, AbortReason::IdAllocationFailed)],
            applied(Applied::RequestEnded {
                request: rq(n),
                reason: AbortReason::IdAllocationFailed,
            }),
        );
        assert_eq!(h.s.consecutive_trigger_failures(), n + 1);
        assert_eq!(h.s.counted_failures(), n + 1);
    }
}

#[test]
fn successful_trigger_resets_consecutive_trigger_failures() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(0, alloc_err(0));
    h.user_cp(0, 1);
    assert_eq!(h.s.consecutive_trigger_failures(), 0);
}

#[test]
fn id_for_an_unknown_request_is_ignored() {
    let mut h = H::new();
    h.expect(0, alloc(9, 1), vec![], ignored(Ignored::UnknownRequest));
    h.step(0, trigger(user()));
    h.expect(0, alloc(9, 1), vec![], ignored(Ignored::UnknownRequest));
    assert!(h.s.in_flight().is_some());
}

#[test]
fn non_increasing_id_is_rejected_and_request_stays_in_flight() {
    let mut h = H::new();
    h.user_cp(0, 5);
    h.step(0, trigger(forced()));
    h.expect(
        0,
        alloc(1, 5),
        vec![],
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(5),
            last: cp(5),
        }),
    );
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(1)));
    h.expect(
        0,
        alloc(1, 6),
        vec![sched(Timer::Timeout(cp(6)), 10_000), e_full(6, 0)],
        applied(Applied::CheckpointTriggered {
            request: rq(1),
            checkpoint: cp(6),
        }),
    );
}

#[test]
fn recheck_after_id_lets_a_user_checkpoint_through_the_min_pause() {
    // The pause holds back periodic requests only, after the id too.
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        max_concurrent: 2,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(10, trigger(user())); // request 1 allocating
    h.complete(100, 1);
    let step = h.step(150, alloc(1, 2));
    assert_eq!(
        step.outcome,
        applied(Applied::CheckpointTriggered {
            request: rq(1),
            checkpoint: cp(2)
        })
    );
}

#[test]
fn recheck_after_id_moves_periodic_timer_when_min_pause_started_meanwhile() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        max_concurrent: 2,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // request 1 allocating
    h.complete(1_100, 1);
    let reason = AbortReason::Rejected(TriggerRejection::MinimumTimeBetweenCheckpoints);
    h.expect(
        1_200,
        alloc(1, 2),
        vec![sched(Timer::Periodic, 1_600), e_failed(1, reason)],
        applied(Applied::RequestEnded {
            request: rq(1),
            reason,
        }),
    );
}

#[test]
fn recheck_after_id_rejects_when_a_task_stopped_running() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(1, failed(1, 0));
    let reason = AbortReason::Rejected(TriggerRejection::NotAllRequiredTasksRunning);
    h.expect(
        2,
        alloc(0, 1),
        vec![e_failed(0, reason)],
        applied(Applied::RequestEnded {
            request: rq(0),
            reason,
        }),
    );
}

/// The state of the unreachable re-check branch, built by hand (no pending
/// checkpoint appears while a request is in flight): the in-flight request
/// finds the slots taken and the queue full.
fn recheck_queue_state() -> H {
    let mut h = H::with(CoordinatorSettings {
        queue_max: 1,
        ..settings()
    });
    h.step(0, trigger(user())); // request 0 in flight
    h.step(0, trigger(savepoint())); // request 1 queued: queue full
    let mut other = H::new();
    other.user_cp(0, 9);
    let p = other
        .s
        .pending_checkpoint(cp(9))
        .expect("pending")
        .to_record();
    h.s.pending.insert(p);
    h.s.cold.timers.insert(Timer::Timeout(cp(9)), ms(10_000));
    h.s.cold.last_id = Some(cp(9));
    h
}

#[test]
#[cfg(debug_assertions)] // the branch is loud only where debug assertions are on; release stays total
#[should_panic(expected = "unreachable coordinator branch: RecheckQueue")]
fn recheck_queue_branch_is_loud_in_debug_builds() {
    let mut h = recheck_queue_state();
    let _ = h.s.apply(ms(0), alloc(0, 10));
}

#[test]
#[cfg(not(debug_assertions))]
fn recheck_queue_branch_is_a_typed_outcome_in_release_builds() {
    let mut h = recheck_queue_state();
    let step = h.s.apply(ms(0), alloc(0, 10));
    assert_eq!(
        step.outcome,
        ignored(Ignored::Unreachable(Unreachable::RecheckQueue))
    );
}

#[test]
fn an_unreachable_outcome_is_a_violation() {
    // What a release build reports instead of panicking: the typed outcome,
    // which the step invariant turns into a violation.
    let h = recheck_queue_state();
    let step = Step {
        effects: vec![],
        outcome: ignored(Ignored::Unreachable(Unreachable::RecheckQueue)),
        clock: Clock::Monotonic,
    };
    let v = check_step(&h.s, &alloc(0, 10), &step, &h.s).expect_err("must be caught");
    assert_eq!(v.invariant, names::NO_UNREACHABLE);
}

// ============================================================================
// The request queue
// ============================================================================

#[test]
fn forced_request_during_id_allocation_waits_then_starts_after_the_id() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        0,
        trigger(savepoint()),
        vec![],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TriggerInProgress,
        }),
    );
    h.expect(
        1,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_001),
            e_full(1, 1),
            e_alloc(1),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
}

#[test]
fn full_queue_rejects_the_request() {
    let mut h = H::with(CoordinatorSettings {
        queue_max: 1,
        ..settings()
    });
    h.step(0, trigger(user()));
    h.step(0, trigger(savepoint()));
    h.expect(
        0,
        trigger(forced()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::QueueFull,
        }),
    );
}

#[test]
fn queue_orders_savepoint_before_forced_before_periodic() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(user())); // 1
    h.step(0, trigger(forced())); // 2
    h.step(0, trigger(savepoint())); // 3
    assert_eq!(h.queued_ids(), vec![rq(3), rq(2), rq(1)]);
    h.step(0, alloc(0, 1));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(3)));
    h.step(0, alloc(3, 2));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(2)));
    h.step(0, alloc(2, 3));
    // The non-forced one finds no free slot (forced checkpoints count).
    assert_eq!(h.s.in_flight(), None);
    assert_eq!(h.queued_ids(), vec![rq(1)]);
}

#[test]
fn a_queue_with_equal_priorities_survives_a_snapshot_and_a_misordered_one_is_refused() {
    use crate::snapshot::{Corruption, SnapshotError};
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(savepoint())); // 1
    h.step(0, trigger(savepoint())); // 2: same priority, after 1
    h.step(0, trigger(user())); // 3
    assert_eq!(h.queued_ids(), vec![rq(1), rq(2), rq(3)]);
    let snap = h.s.snapshot();
    let back = CoordinatorState::from_snapshot(snap.clone());
    assert_eq!(back.as_ref(), Ok(&h.s));
    let mut bad = snap;
    bad.queue.reverse(); // the user checkpoint before the savepoints
    assert_eq!(
        CoordinatorState::from_snapshot(bad),
        Err(SnapshotError::Corrupt(Corruption::QueueOrder))
    );
}

#[test]
fn resumed_user_checkpoint_rearms_the_cancelled_periodic_timer() {
    // Regression: a queued non-forced user checkpoint cancelled the periodic
    // timer, and nothing re-armed it when the request resumed.
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.expect(
        10,
        trigger(user()),
        vec![cancel(Timer::Periodic)],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(
        1,
        0,
        AbortReason::Declined(DeclineReason::SnapshotFailed),
        None,
    ));
    fx.push(sched(Timer::Periodic, 1_020));
    fx.push(e_alloc(1));
    h.expect(
        20,
        decline(1, 1),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Declined(DeclineReason::SnapshotFailed),
        }),
    );
    assert_eq!(h.s.timer_deadline(Timer::Periodic), Some(ms(1_020)));
}

#[test]
fn resumed_periodic_request_rearms_periodic_timer_one_interval_later() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    let r0 = h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // request 1 queued, timer cancelled
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    let reason = AbortReason::Declined(DeclineReason::TaskNotReady);
    fx.extend(h.aborted_notified(1, r0, reason, None));
    fx.push(sched(Timer::Periodic, 2_500));
    fx.push(e_alloc(1));
    h.expect(
        1_500,
        decline_at(0, 0, 1, DeclineReason::TaskNotReady),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
}

// ============================================================================
// Master hooks
// ============================================================================

fn with_hooks() -> H {
    H::with(CoordinatorSettings {
        master_hooks: 1,
        ..settings()
    })
}

#[test]
fn master_hooks_run_before_trigger_messages() {
    let mut h = with_hooks();
    h.step(5, trigger(user()));
    h.expect(
        5,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_005),
            E::Io {
                generation: G0,
                request: IoRequest::MasterHooks {
                    checkpoint: cp(1),
                    timestamp: ms(5),
                },
            },
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::AwaitingHooks)
    );
    h.expect(
        6,
        hooks(1, true),
        vec![e_full(1, 5)],
        applied(Applied::HooksDone { checkpoint: cp(1) }),
    );
    h.expect(7, hooks(1, true), vec![], ignored(Ignored::NotAwaited));
}

#[test]
fn legacy_hook_expiry_wedge_keeps_the_trigger_in_flight_only_when_hooks_run() {
    // FLINK-26394's legacy: the trigger stays in progress until the master
    // hooks answer. Without hooks there is nothing to wait for: the trigger
    // ends when the checkpoint is created, as in the fixed semantics.
    for (hooks, wedged) in [(1, true), (0, false)] {
        let mut h = H::with(CoordinatorSettings {
            master_hooks: hooks,
            semantics: crate::Semantics::Legacy(crate::LegacyBug::HookExpiryWedgesTrigger),
            ..settings()
        });
        h.step(5, trigger(user()));
        h.step(5, alloc(0, 1));
        assert_eq!(h.s.in_flight().is_some(), wedged, "{hooks} hooks");
        assert!(h.s.pending_checkpoint(cp(1)).is_some());
        if hooks > 0 {
            // The hooks of that very checkpoint answer in time: the wedge
            // clears (only an expiry before the answer leaves it stuck).
            h.step(
                6,
                Ev::MasterHooksDone {
                    checkpoint: cp(1),
                    result: Ok(()),
                },
            );
            assert!(
                h.s.in_flight().is_none(),
                "the hooks' answer ends the trigger"
            );
        }
    }
}

#[test]
fn master_hooks_failure_aborts_the_checkpoint() {
    let mut h = with_hooks();
    let r = h.user_cp(0, 1);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r, AbortReason::MasterHooksFailed, None));
    h.expect(
        1,
        hooks(1, false),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::MasterHooksFailed,
        }),
    );
    h.expect(2, hooks(1, true), vec![], ignored(Ignored::LateMessage));
}

#[test]
fn acks_before_hooks_finish_complete_once_hooks_are_done() {
    let mut h = with_hooks();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    assert_eq!(h.s.completing(), None);
    h.expect(
        2,
        hooks(1, true),
        vec![
            e_full(1, 0),
            cancel(Timer::Timeout(cp(1))),
            h.e_finalize(1, false, &[100, 101]),
        ],
        applied(Applied::HooksDone { checkpoint: cp(1) }),
    );
}

// ============================================================================
// Savepoints
// ============================================================================

#[test]
fn savepoint_is_forced_past_concurrency_and_min_pause_and_carries_its_target() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.pending(100, forced(), 2); // the one slot is taken, the pause runs
    h.expect(
        200,
        trigger(savepoint()),
        vec![e_alloc(2)],
        applied(Applied::AllocatingId { request: rq(2) }),
    );
    h.expect(
        200,
        alloc(2, 3),
        vec![
            sched(Timer::Timeout(cp(3)), 10_200),
            e_trig(
                0,
                0,
                3,
                200,
                CheckpointOptions::Savepoint {
                    target: "/sp".into(),
                },
            ),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(2),
            checkpoint: cp(3),
        }),
    );
}

#[test]
fn savepoint_is_finalized_externalized() {
    let mut h = H::new();
    h.pending(0, savepoint(), 1);
    h.step(0, ack(0, 1, 100));
    h.expect(
        0,
        ack(1, 1, 101),
        vec![
            cancel(Timer::Timeout(cp(1))),
            h.e_finalize(1, true, &[100, 101]),
        ],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 0,
        }),
    );
}

#[test]
fn savepoints_are_never_subsumed() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.pending(0, savepoint(), 1);
    let r = h.user_cp(0, 2);
    h.ack_all(1, 2);
    h.step(1, fin(2, true));
    h.expect(
        1,
        store(2, true),
        vec![e_completed(2, r, false), e_done(0, 2, 0), e_done(1, 2, 0)],
        applied(Applied::Completed { checkpoint: cp(2) }),
    );
    assert!(h.s.pending_checkpoint(cp(1)).is_some());
    // The older savepoint still completes afterwards.
    h.ack_all(2, 1);
    h.step(2, fin(1, true));
    h.step(2, store(1, true));
    assert_eq!(h.s.latest_completed(), Some(cp(2)));
}
