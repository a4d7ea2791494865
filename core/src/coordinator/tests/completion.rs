//! Completion, the tolerable-failure counter and notify-aborted.

use super::*;

// ============================================================================
// Completion
// ============================================================================

#[test]
fn full_ack_cancels_timeout_and_finalizes() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.expect(
        2,
        ack(1, 1, 101),
        vec![
            cancel(Timer::Timeout(cp(1))),
            h.e_finalize(1, false, &[100, 101]),
        ],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 0,
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::Finalizing)
    );
}

#[test]
fn externalized_config_finalizes_externalized() {
    let mut h = H::with(CoordinatorSettings {
        externalized: true,
        checkpoint_dir: Some("/ext".into()),
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    let step = h.step(1, ack(1, 1, 101));
    assert_eq!(step.effects[1], h.e_finalize(1, true, &[100, 101]));
}

#[test]
fn finalize_success_stores_the_checkpoint() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.expect(
        2,
        fin(1, true),
        vec![e_store(1)],
        applied(Applied::Finalized { checkpoint: cp(1) }),
    );
}

#[test]
fn store_success_completes_and_notifies_every_commit_task() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.step(2, fin(1, true));
    h.expect(
        3,
        store(1, true),
        vec![e_completed(1, r, false), e_done(0, 1, 0), e_done(1, 1, 0)],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(h.s.pending_count(), 0);
    assert_eq!(h.s.latest_completed(), Some(cp(1)));
    assert_eq!(
        h.s.completed().map(Completed::id).collect::<Vec<_>>(),
        vec![cp(1)]
    );
    assert_eq!(h.s.recent_ids().copied().collect::<Vec<_>>(), vec![cp(1)]);
    assert_eq!(h.s.completing(), None);
}

#[test]
fn a_completed_checkpoint_keeps_its_trigger_timestamp_and_shows_in_debug_output() {
    let mut h = H::new();
    h.user_cp(7, 1);
    // The pending map's debug form names the checkpoint.
    assert!(
        format!("{:?}", h.s).contains("{CheckpointId(1): Pending {"),
        "{:?}",
        h.s
    );
    h.complete(20, 1);
    let done: Vec<(CheckpointId, Millis)> =
        h.s.completed().map(|c| (c.id(), c.timestamp())).collect();
    assert_eq!(done, vec![(cp(1), ms(7))]);
}

#[test]
fn permuting_tasks_moves_a_completed_checkpoints_handles_with_their_tasks() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 5,
        ..CoordinatorSettings::with_tasks(JOB, 3)
    });
    h.user_cp(0, 1);
    h.complete(1, 1); // task t acks with handle 100 + t
    let swap = [t(0), t(2), t(1)]; // task 0 is the only one triggered
    let p =
        h.s.permute_tasks(&swap, &|x| x)
            .unwrap_or_else(|| panic!("a permutation of every list"));
    let handles = |s: &CoordinatorState| -> Vec<StateHandle> {
        s.completed().flat_map(Completed::handles).collect()
    };
    assert_eq!(handles(&h.s), vec![hd(100), hd(101), hd(102)]);
    assert_eq!(handles(&p), vec![hd(100), hd(102), hd(101)]);
}

#[test]
fn completion_resumes_the_queued_request() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(0, trigger(user())); // request 1 queued
    h.ack_all(1, 1);
    h.step(2, fin(1, true));
    h.expect(
        3,
        store(1, true),
        vec![
            e_completed(1, r, false),
            e_done(0, 1, 0),
            e_done(1, 1, 0),
            e_alloc(1),
        ],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
}

#[test]
fn finalize_failure_aborts_cleanly_and_discards_the_state() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.ack_all(1, 1);
    let mut fx = vec![e_discard(1, 100), e_discard(1, 101)];
    fx.extend(h.aborted_notified(1, r, AbortReason::FinalizeFailed, None));
    h.expect(
        2,
        fin(1, false),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::FinalizeFailed,
        }),
    );
    assert_eq!(h.s.completing(), None);
    assert_eq!(h.s.counted_failures(), 1);
}

#[test]
fn store_failure_aborts_cleanly_and_discards_the_state() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.step(2, fin(1, true));
    let mut fx = vec![e_discard(1, 100), e_discard(1, 101)];
    fx.extend(h.aborted_notified(1, r, AbortReason::StoreFailed, None));
    h.expect(
        3,
        store(1, false),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::StoreFailed,
        }),
    );
    assert_eq!(h.s.completed().count(), 0);
    h.expect(4, store(1, true), vec![], ignored(Ignored::LateMessage));
}

#[test]
fn finalize_or_store_answer_out_of_phase_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(1, fin(1, true), vec![], ignored(Ignored::NotAwaited));
    h.expect(1, store(1, true), vec![], ignored(Ignored::NotAwaited));
    h.ack_all(1, 1);
    h.expect(1, store(1, true), vec![], ignored(Ignored::NotAwaited));
    h.step(1, fin(1, true));
    h.expect(1, fin(1, true), vec![], ignored(Ignored::NotAwaited));
    h.expect(
        1,
        fin(42, true),
        vec![],
        ignored(Ignored::UnknownCheckpoint),
    );
}

#[test]
fn completion_subsumes_older_pending_checkpoints() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    let r1 = h.user_cp(0, 1);
    let r2 = h.user_cp(10, 2);
    h.step(11, ack(0, 1, 100));
    h.ack_all(12, 2);
    h.step(13, fin(2, true));
    let mut fx = vec![cancel(Timer::Timeout(cp(1))), e_discard(1, 100)];
    // The subsumed checkpoint's notify carries the one that subsumed it.
    fx.extend(h.aborted_notified(1, r1, AbortReason::Subsumed, Some(2)));
    fx.extend([
        e_completed(2, r2, false),
        e_done(0, 2, 10),
        e_done(1, 2, 10),
    ]);
    h.expect(
        14,
        store(2, true),
        fx,
        applied(Applied::Completed { checkpoint: cp(2) }),
    );
    assert_eq!(h.s.pending_count(), 0);
    assert_eq!(h.s.counted_failures(), 0);
}

#[test]
fn completions_run_one_at_a_time_in_id_order() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    let r1 = h.user_cp(0, 1);
    h.user_cp(0, 2);
    h.ack_all(1, 1);
    h.step(1, ack(0, 2, 200));
    h.expect(
        1,
        ack(1, 2, 201),
        vec![cancel(Timer::Timeout(cp(2)))],
        applied(Applied::Acknowledged {
            checkpoint: cp(2),
            remaining: 0,
        }),
    );
    assert_eq!(h.s.completing(), Some(cp(1)));
    h.step(2, fin(1, true));
    h.expect(
        3,
        store(1, true),
        vec![
            e_completed(1, r1, false),
            e_done(0, 1, 0),
            e_done(1, 1, 0),
            h.e_finalize(2, false, &[200, 201]),
        ],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(h.s.completing(), Some(cp(2)));
}

#[test]
fn retained_checkpoints_beyond_the_bound_are_discarded_oldest_first() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.complete(1, 1);
    let r = h.user_cp(2, 2);
    h.ack_all(3, 2);
    h.step(3, fin(2, true));
    h.expect(
        4,
        store(2, true),
        vec![
            e_discard(1, 100),
            e_discard(1, 101),
            e_completed(2, r, false),
            e_done(0, 2, 2),
            e_done(1, 2, 2),
        ],
        applied(Applied::Completed { checkpoint: cp(2) }),
    );
}

// ============================================================================
// Tolerable failed checkpoints
// ============================================================================

#[test]
fn counted_failures_beyond_the_limit_fail_the_job_once() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 1,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(10_000, fire(Timer::Timeout(cp(1))));
    assert_eq!(h.s.counted_failures(), 1);
    assert!(!h.s.job_failed());
    let r = h.user_cp(10_000, 2);
    let mut fx = h.aborted_notified(2, r, AbortReason::Expired, None);
    fx.push(E::Job(JobCommand::Fail(
        FailJobReason::TolerableFailuresExceeded { failures: 2 },
    )));
    h.expect(
        20_000,
        fire(Timer::Timeout(cp(2))),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(2),
            reason: AbortReason::Expired,
        }),
    );
    assert!(h.s.job_failed());
    let r = h.user_cp(20_000, 3);
    h.expect(
        30_000,
        fire(Timer::Timeout(cp(3))),
        h.aborted_notified(3, r, AbortReason::Expired, None),
        applied(Applied::Aborted {
            checkpoint: cp(3),
            reason: AbortReason::Expired,
        }),
    );
    assert_eq!(h.s.counted_failures(), 3);
}

#[test]
fn zero_tolerable_failures_fail_the_job_on_the_first_counted_failure() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        ..settings()
    });
    let r = h.user_cp(0, 1);
    let reason = AbortReason::Declined(DeclineReason::WriterFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r, reason, None));
    fx.push(E::Job(JobCommand::Fail(
        FailJobReason::TolerableFailuresExceeded { failures: 1 },
    )));
    h.expect(
        1,
        decline_at(0, 0, 1, DeclineReason::WriterFailed),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
}

#[test]
fn only_counted_failure_reasons_count() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        max_concurrent: 2,
        ..settings()
    });
    // Declined for a life-cycle reason, subsumed, task failure: none counts.
    h.user_cp(0, 1);
    h.step(1, decline_at(0, 0, 1, DeclineReason::CancelledOnBarrier));
    h.user_cp(2, 2);
    h.user_cp(2, 3);
    h.complete(3, 3);
    h.user_cp(4, 4);
    h.step(5, failed(1, 0));
    assert_eq!(h.s.counted_failures(), 0);
    assert!(!h.s.job_failed());
}

#[test]
fn each_checkpoint_id_counts_once() {
    // Only an abort counts, and an abort removes the checkpoint: every later
    // report about it (a decline, a writer failure, the timer again) is late.
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 5,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(10_000, fire(Timer::Timeout(cp(1))));
    assert_eq!(h.s.counted_failures(), 1);
    let late = h.step(10_001, decline_at(0, 0, 1, DeclineReason::WriterFailed));
    assert_eq!(late.outcome, ignored(Ignored::LateMessage));
    let again = h.step(10_002, fire(Timer::Timeout(cp(1))));
    assert_eq!(again.outcome, ignored(Ignored::TimerNotArmed));
    assert_eq!(h.s.counted_failures(), 1);
    h.user_cp(10_002, 2);
    h.step(20_002, fire(Timer::Timeout(cp(2))));
    assert_eq!(h.s.counted_failures(), 2);
}

#[test]
fn success_resets_the_failure_counter() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(10_000, fire(Timer::Timeout(cp(1))));
    assert_eq!(h.s.counted_failures(), 1);
    h.user_cp(10_000, 2);
    h.complete(10_001, 2);
    assert_eq!(h.s.counted_failures(), 0);
    assert!(!h.s.job_failed());
}

#[test]
fn savepoint_failures_are_not_counted() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        ..settings()
    });
    let r = h.pending(0, savepoint(), 1);
    h.expect(
        10_000,
        fire(Timer::Timeout(cp(1))),
        h.aborted_notified(1, r, AbortReason::Expired, None),
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Expired,
        }),
    );
    assert_eq!(h.s.counted_failures(), 0);
}

#[test]
fn savepoint_id_allocation_failure_is_not_counted() {
    // Regression: the id-allocation failure path counted savepoints.
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        ..settings()
    });
    h.step(0, trigger(savepoint()));
    h.expect(
        0,
        alloc_err(0),
        vec![e_failed(0, AbortReason::IdAllocationFailed)],
        applied(Applied::RequestEnded {
            request: rq(0),
            reason: AbortReason::IdAllocationFailed,
        }),
    );
    assert_eq!(h.s.counted_failures(), 0);
    // A checkpoint's allocation failure does count (and fails the job here).
    h.step(0, trigger(user()));
    h.expect(
        0,
        alloc_err(1),
        vec![
            e_failed(1, AbortReason::IdAllocationFailed),
            E::Job(JobCommand::Fail(FailJobReason::TolerableFailuresExceeded {
                failures: 1,
            })),
        ],
        applied(Applied::RequestEnded {
            request: rq(1),
            reason: AbortReason::IdAllocationFailed,
        }),
    );
}

// ============================================================================
// Notify aborted
// ============================================================================

#[test]
fn abort_notifies_running_commit_tasks_with_the_latest_completed_id() {
    let mut h = H::with(CoordinatorSettings {
        tasks_to_commit: vec![t(0), t(1), t(2)],
        ..settings()
    });
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.step(1, fin(1, true));
    h.step(1, store(1, true));
    h.step(2, failed(2, 0)); // a commit-only task goes down
    let r = h.user_cp(3, 2);
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(2)))];
    fx.extend(h.aborted_notified(2, r, reason, Some(1)));
    h.expect(
        4,
        decline(0, 2),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(2),
            reason,
        }),
    );
}
