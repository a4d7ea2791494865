//! Gaps found by mutation testing.

use super::*;

// ============================================================================
// Gaps found by mutation testing (issue 16)
// ============================================================================

#[test]
fn config_getters_return_the_configured_values_not_the_defaults() {
    // Every value differs from the defaults and from 0 and 1, so a getter
    // returning a constant cannot pass.
    let c = config_ok(|s| {
        s.job = JobId(42);
        s.interval_ms = 7_000;
        s.timeout_ms = 3_000;
        s.min_pause_ms = 500;
        s.max_concurrent = 3;
        s.tolerable_failures = 4;
        s.retained_max = 5;
        s.queue_max = 6;
        s.externalized = true;
        s.checkpoint_dir = Some("/cp".into());
        s.tasks_to_trigger = vec![t(2)];
        s.tasks_to_wait = vec![t(2), t(0)];
        // Not `[TaskId(0)]`: that is what a getter returning a default
        // one-element list gives (a survivor of the mutation sample).
        s.tasks_to_commit = vec![t(1), t(2)];
    });
    assert_eq!(c.job(), JobId(42));
    assert_eq!(c.interval_ms(), 7_000);
    assert_eq!(c.timeout_ms(), 3_000);
    assert_eq!(c.min_pause_ms(), 500);
    assert_eq!(c.max_concurrent(), 3);
    assert_eq!(c.tolerable_failures(), 4);
    assert_eq!(c.retained_max(), 5);
    assert_eq!(c.queue_max(), 6);
    assert!(c.externalized());
    assert_eq!(c.tasks_to_trigger(), &[t(2)]);
    assert_eq!(c.tasks_to_wait(), &[t(2), t(0)]);
    assert_eq!(c.tasks_to_commit(), &[t(1), t(2)]);
    assert_eq!(c.task_slots(), 3);
    assert_eq!(c.wait_slot(t(2)), Some(0));
    assert_eq!(c.wait_slot(t(0)), Some(1));
    assert_eq!(c.wait_slot(t(1)), None);
}

#[test]
fn queued_requests_of_equal_priority_run_in_arrival_order() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(user())); // 1
    h.step(0, trigger(forced())); // 2
    h.step(0, trigger(forced())); // 3
    h.step(0, trigger(savepoint())); // 4
    h.step(0, trigger(savepoint())); // 5
                                     // Highest priority first; within a priority, first come first served.
    assert_eq!(h.queued_ids(), vec![rq(4), rq(5), rq(2), rq(3), rq(1)]);
    h.step(0, alloc(0, 1));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(4)));
    h.step(0, alloc(4, 2));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(5)));
    h.step(0, alloc(5, 3));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(2)));
    h.step(0, alloc(2, 4));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(3)));
}

/// FLINK-13256, fixed: a request queued at the concurrency bound resumes
/// when a task failure aborts the pending checkpoint that held the bound
/// (a survivor of mutation shard 1/30: nothing in core pinned it).
#[test]
fn a_task_failure_that_aborts_the_pending_checkpoint_resumes_the_queued_request() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, trigger(user()));
    assert_eq!(
        h.queued_ids().len(),
        1,
        "the second request waits at the bound"
    );
    assert!(h.s.in_flight().is_none());
    let step = h.step(2, failed(0, 0));
    assert!(h.s.pending_checkpoint(cp(1)).is_none());
    assert!(
        h.queued_ids().is_empty(),
        "still queued: {:?}",
        h.queued_ids()
    );
    // Resumed and decided at once: task 0 is down, so the trigger fails
    // (the failure is reported, never left waiting).
    assert!(h.s.in_flight().is_none());
    assert!(
        step.effects.iter().any(
            |e| matches!(e, E::Report(Report::RequestFailed { request, .. }) if *request == rq(1))
        ),
        "{:?}",
        step.effects
    );
}

/// Found by fuzzing `system_events` (2026-12-05), fixed: a restore that
/// aborts the pending checkpoint holding the concurrency bound resumes the
/// request queued at the bound, as a task failure does; left queued, it
/// made every later request "already queued" and nothing completed again.
#[test]
fn a_restore_that_aborts_the_pending_checkpoint_resumes_the_queued_request() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.step(1, trigger(user()));
    assert_eq!(
        h.queued_ids().len(),
        1,
        "the second request waits at the bound"
    );
    let step = h.step(2, restore_latest());
    assert!(h.s.pending_checkpoint(cp(1)).is_none());
    assert!(
        h.queued_ids().is_empty(),
        "still queued: {:?}",
        h.queued_ids()
    );
    // Resumed at once: the tasks still run, so it allocates its id.
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(1)));
    assert!(
        step.effects.iter().any(|e| matches!(
            e,
            E::Io {
                request: IoRequest::AllocateId { request },
                ..
            } if *request == rq(1)
        )),
        "{:?}",
        step.effects
    );
    // Legacy (FLINK-13256): left queued, which the state invariant
    // `queue-resumable` catches at once.
    let mut legacy = H::with(CoordinatorSettings {
        semantics: Semantics::Legacy(LegacyBug::AbortAllLeavesQueueStuck),
        ..settings()
    });
    legacy.step(0, Ev::StartScheduler);
    legacy.user_cp(0, 1);
    legacy.step(1, trigger(user()));
    let restore = restore_latest();
    let (t, verdict) =
        checked::coordinator_step(&mut legacy.ledger, &legacy.s, ms(2), &restore, Rigor::Full);
    assert_eq!(t.state.queued().count(), 1);
    assert!(t.state.in_flight().is_none());
    let v = verdict.expect_err("the stranded request must be caught");
    assert_eq!(v.invariant, names::QUEUE_RESUMABLE, "{v}");
}

/// FLINK-13256's own path (a task failure), legacy: the request queued at
/// the bound stays queued, caught by `queue-resumable` in that step.
#[test]
fn legacy_abort_all_leaves_queue_stuck_is_caught_by_queue_resumable() {
    let mut h = H::with(CoordinatorSettings {
        semantics: Semantics::Legacy(LegacyBug::AbortAllLeavesQueueStuck),
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(1, trigger(user()));
    let (t, verdict) =
        checked::coordinator_step(&mut h.ledger, &h.s, ms(2), &failed(0, 0), Rigor::Full);
    assert!(t.state.pending_checkpoint(cp(1)).is_none());
    assert_eq!(t.state.queued().count(), 1);
    let v = verdict.expect_err("the stranded request must be caught");
    assert_eq!(v.invariant, names::QUEUE_RESUMABLE, "{v}");
}

/// Task 1 only acknowledges: it is neither triggered nor notified.
fn wait_only_task_1() -> CoordinatorSettings {
    CoordinatorSettings {
        tasks_to_trigger: vec![t(0)],
        tasks_to_wait: vec![t(0), t(1)],
        tasks_to_commit: vec![t(0)],
        ..settings()
    }
}

#[test]
fn a_wait_only_task_is_a_known_task_its_decline_aborts_and_its_failure_is_applied() {
    let mut h = H::with(wait_only_task_1());
    h.user_cp(0, 1);
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let step = h.step(1, decline(1, 1));
    assert_eq!(
        step.outcome,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        })
    );
    let step = h.step(2, failed(1, 0));
    assert!(
        matches!(step.outcome, Outcome::Applied(_)),
        "{:?}",
        step.outcome
    );
    let step = h.step(3, running(1, 1));
    assert!(
        matches!(step.outcome, Outcome::Applied(_)),
        "{:?}",
        step.outcome
    );
    // Its new attempt's ack completes the next checkpoint.
    h.user_cp(4, 2);
    h.step(4, ack(0, 2, 200));
    h.step(4, ack_at(1, 1, 2, Some(201)));
    h.step(4, fin(2, true));
    let step = h.step(4, store(2, true));
    assert_eq!(
        step.outcome,
        applied(Applied::Completed { checkpoint: cp(2) })
    );
}

#[test]
fn several_retained_checkpoints_are_kept_and_the_oldest_discarded_beyond_the_bound() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 3,
        ..settings()
    });
    // Every step runs the invariants, whose bound is the configured one.
    for id in 1..=3 {
        h.user_cp(id * 10, id);
        let step = h.complete(id * 10, id);
        assert!(
            !step.effects.iter().any(|e| matches!(e, E::Discard { .. })),
            "nothing discarded while at most 3 are retained: {:?}",
            step.effects
        );
    }
    let kept: Vec<CheckpointId> = h.s.completed().map(Completed::id).collect();
    assert_eq!(kept, vec![cp(1), cp(2), cp(3)]);
    h.user_cp(40, 4);
    let step = h.complete(40, 4);
    assert!(
        step.effects.contains(&e_discard(1, 100)),
        "{:?}",
        step.effects
    );
    assert!(
        step.effects.contains(&e_discard(1, 101)),
        "{:?}",
        step.effects
    );
    let kept: Vec<CheckpointId> = h.s.completed().map(Completed::id).collect();
    assert_eq!(kept, vec![cp(2), cp(3), cp(4)]);
}

#[test]
fn a_decline_from_a_task_not_waited_for_counts_only_from_its_current_attempt() {
    // Task 2 is a source that is triggered but not waited for: its attempt
    // is the coordinator's current one, not an ack slot's.
    let mut h = H::with(CoordinatorSettings {
        tasks_to_trigger: vec![t(2)],
        tasks_to_wait: vec![t(0), t(1)],
        tasks_to_commit: vec![t(0), t(1)],
        ..settings()
    });
    h.user_cp(0, 1);
    let reason = DeclineReason::SnapshotFailed;
    h.expect(
        1,
        decline_at(2, 1, 1, reason),
        vec![],
        ignored(Ignored::StaleAttempt),
    );
    let step = h.step(2, decline_at(2, 0, 1, reason));
    assert_eq!(
        step.outcome,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Declined(reason),
        })
    );
}
