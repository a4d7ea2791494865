//! The checkpoint plan: which tasks a checkpoint waits for (FLINK-40482).

use super::*;

#[test]
fn a_task_that_is_down_is_never_planned_as_finished() {
    // Task 1 failed and has not restarted: the trigger is refused (Flink's
    // fix for FLINK-40482 aborts checkpoints during a failover; ckpt never
    // starts one), and once a new attempt runs the plan waits for it.
    let mut h = H::new();
    h.step(0, failed(1, 0));
    assert_eq!(
        h.step(0, trigger(user())).outcome,
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        })
    );
    h.step(1, running(1, 1));
    h.step(2, trigger(user()));
    h.step(2, alloc(1, 1));
    let p = h.s.pending_checkpoint(cp(1)).expect("pending");
    assert_eq!(p.remaining(), 2);
    assert!(p.acks().all(|a| a == AckSlot::Waiting));
    assert_eq!(
        p.attempts().collect::<Vec<_>>(),
        [AttemptNo(0), AttemptNo(1)]
    );
}

#[test]
fn legacy_failed_counts_as_finished_is_caught_by_plan_waits_for_every_task() {
    let mut h = H::with(CoordinatorSettings {
        semantics: Semantics::Legacy(LegacyBug::FailedCountsAsFinished),
        ..settings()
    });
    h.step(0, failed(1, 0));
    h.step(0, trigger(user()));
    let mut ledger = h.ledger.clone();
    let (t, verdict) =
        checked::coordinator_step(&mut ledger, &h.s, ms(0), &alloc(0, 1), Rigor::Full);
    // The plan waits for task 0 only; one ack completes it without task
    // 1's state.
    assert!(t
        .state
        .pending_checkpoint(cp(1))
        .is_some_and(|p| p.remaining() == 1));
    let v = verdict.expect_err("a plan without the failed task is caught");
    assert_eq!(v.invariant, names::PLAN_WAITS_FOR_ALL, "{v}");
}

/// FLINK-33186 (accepted upstream as a known limitation): a task that
/// finishes between the plan and the trigger fails Flink's checkpoint as a
/// counted TASK_CHECKPOINT_FAILURE ("unknown task"), so a job whose sources
/// finish fails once its tolerable failures are used up. ckpt's decision:
/// the finished task declines (`TaskClosing`), the checkpoint is aborted
/// and notified like any decline, and the abort does not count: with no
/// tolerable failure the job still does not fail. (When the coordinator
/// hears `TaskFinished` first, the checkpoint is aborted as
/// `AbortReason::TaskFinished`, uncounted too: `tests/finish.rs`.)
#[test]
fn a_task_that_finished_before_its_trigger_declines_without_failing_the_job() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        ..settings()
    });
    let r = h.user_cp(0, 1);
    let reason = AbortReason::Declined(DeclineReason::TaskClosing);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r, reason, None));
    h.expect(
        1,
        decline_at(0, 0, 1, DeclineReason::TaskClosing),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
    assert_eq!(h.s.counted_failures(), 0);
    assert!(!h.s.job_failed());
}

#[test]
fn ack_slots_follow_the_wait_list_whether_or_not_it_is_in_id_order() {
    // In id order from 0 (the slot is the task id, answered without the
    // roles table) ...
    let c = config_ok(|s| s.tasks_to_wait = vec![t(0), t(1), t(2)]);
    assert_eq!(c.wait_slot(t(0)), Some(0));
    assert_eq!(c.wait_slot(t(2)), Some(2));
    assert_eq!(c.wait_slot(t(3)), None);
    // ... and not: a gap, or another order, goes through the roles.
    let c = config_ok(|s| {
        s.tasks_to_wait = vec![t(0), t(2)];
        s.tasks_to_commit = vec![t(0), t(1), t(2)];
    });
    assert_eq!(c.wait_slot(t(0)), Some(0));
    assert_eq!(c.wait_slot(t(1)), None);
    assert_eq!(c.wait_slot(t(2)), Some(1));
    let c = config_ok(|s| s.tasks_to_wait = vec![t(1), t(0)]);
    assert_eq!(c.wait_slot(t(1)), Some(0));
    assert_eq!(c.wait_slot(t(0)), Some(1));
}

#[test]
fn a_plan_with_one_attempt_for_every_slot_checks_acks_as_a_plan_with_one_per_slot() {
    // Both tasks at attempt 2 (the one-attempt form of the plan): an ack of
    // attempt 2 counts, one of attempt 0 is an unknown task's.
    let mut h = H::new();
    for task in [0, 1] {
        h.step(0, failed(task, 0));
        h.step(0, running(task, 2));
    }
    h.step(1, trigger(user()));
    h.step(1, alloc(0, 1));
    let p = h.s.pending_checkpoint(cp(1)).expect("pending");
    assert_eq!(
        p.attempts().collect::<Vec<_>>(),
        [AttemptNo(2), AttemptNo(2)]
    );
    assert_eq!(
        h.step(2, ack_at(0, 0, 1, Some(7))).outcome,
        Outcome::Ignored(Ignored::UnknownTask)
    );
    assert_eq!(
        h.step(2, ack_at(0, 2, 1, Some(8))).outcome,
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1
        })
    );
}
