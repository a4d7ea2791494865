//! Acknowledgements, declines and the ring of recent ids.

use super::*;

// ============================================================================
// Acknowledgements
// ============================================================================

#[test]
fn ack_success_records_state_and_counts_remaining() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        ack(0, 1, 100),
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    assert_eq!(h.s.owned_handles(), vec![hd(100)]);
}

#[test]
fn ack_without_state_is_recorded() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        ack_at(0, 0, 1, None),
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
}

#[test]
fn duplicate_ack_is_ignored_and_keeps_the_state() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.expect(2, ack(0, 1, 100), vec![], ignored(Ignored::DuplicateAck));
    assert_eq!(h.s.owned_handles(), vec![hd(100)]);
}

#[test]
fn duplicate_ack_with_another_handle_discards_the_new_one() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.expect(
        2,
        ack(0, 1, 999),
        vec![e_discard(1, 999)],
        ignored(Ignored::DuplicateAck),
    );
}

#[test]
fn ack_from_a_task_not_in_the_checkpoint_is_unknown_and_discards_its_state() {
    let mut h = H::with(CoordinatorSettings {
        tasks_to_commit: vec![t(0), t(1), t(2)],
        ..settings()
    });
    h.user_cp(0, 1);
    // A commit-only task, and a task the job does not have.
    h.expect(
        1,
        ack(2, 1, 102),
        vec![e_discard(1, 102)],
        ignored(Ignored::UnknownTask),
    );
    h.expect(
        1,
        ack(99, 1, 199),
        vec![e_discard(1, 199)],
        ignored(Ignored::UnknownTask),
    );
}

#[test]
fn ack_from_another_attempt_is_unknown_and_discards_its_state() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        ack_at(1, 3, 1, Some(101)),
        vec![e_discard(1, 101)],
        ignored(Ignored::UnknownTask),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::remaining),
        Some(2)
    );
}

#[test]
fn ack_for_an_unknown_checkpoint_discards_its_state() {
    let mut h = H::new();
    h.expect(
        1,
        ack(0, 42, 4_200),
        vec![e_discard(42, 4_200)],
        ignored(Ignored::UnknownCheckpoint),
    );
    h.expect(
        1,
        ack_at(0, 0, 42, None),
        vec![],
        ignored(Ignored::UnknownCheckpoint),
    );
}

#[test]
fn late_ack_for_a_recently_aborted_checkpoint_discards_its_state() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, decline(0, 1));
    h.expect(
        2,
        ack(1, 1, 101),
        vec![e_discard(1, 101)],
        ignored(Ignored::LateMessage),
    );
}

#[test]
fn late_duplicate_ack_for_a_completed_checkpoint_keeps_retained_state() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.complete(1, 1);
    h.expect(2, ack(0, 1, 100), vec![], ignored(Ignored::LateMessage));
    h.expect(
        2,
        ack(0, 1, 555),
        vec![e_discard(1, 555)],
        ignored(Ignored::LateMessage),
    );
}

#[test]
fn ack_for_another_job_is_rejected_and_leaves_the_handle_with_the_host() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        Ev::Acknowledge {
            job: JobId(8),
            task: t(0),
            attempt: AttemptNo(0),
            checkpoint: cp(1),
            state: Some(hd(100)),
        },
        vec![],
        Outcome::Rejected(CoordinatorError::WrongJob {
            expected: JOB,
            got: JobId(8),
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::remaining),
        Some(2)
    );
}

#[test]
fn ack_while_finalizing_is_discarded_seed_discarded_case() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    assert_eq!(h.s.completing(), Some(cp(1)));
    // Another write from the same task: an orphan.
    h.expect(
        2,
        ack(0, 1, 777),
        vec![e_discard(1, 777)],
        ignored(Ignored::CheckpointDiscarded),
    );
    // The very handle the checkpoint holds: a duplicate delivery, kept.
    h.expect(
        2,
        ack(0, 1, 100),
        vec![],
        ignored(Ignored::CheckpointDiscarded),
    );
    h.step(3, fin(1, true));
    h.expect(
        3,
        ack(1, 1, 778),
        vec![e_discard(1, 778)],
        ignored(Ignored::CheckpointDiscarded),
    );
}

// ============================================================================
// Declines
// ============================================================================

#[test]
fn decline_aborts_remembers_id_and_resumes_the_queued_request() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(0, trigger(user())); // request 1 queued
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r, reason, None));
    fx.push(e_alloc(1));
    h.expect(
        1,
        decline(1, 1),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
    assert!(h.s.recent_ids().any(|id| *id == cp(1)));
}

#[test]
fn decline_resumes_the_queue_even_with_a_more_recent_pending_checkpoint() {
    // Flink (1.11, 1.20, 2.3) starts the queued request after any decline:
    // the decline freed a slot. The seed waited for the newer checkpoint.
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    let r1 = h.user_cp(0, 1);
    h.user_cp(0, 2);
    h.step(0, trigger(user())); // request 2 queued
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(h.aborted_notified(1, r1, reason, None));
    fx.push(e_alloc(2));
    h.expect(
        1,
        decline(0, 1),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
    assert_eq!(h.queued_ids(), vec![]);
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(2)));
}

#[test]
fn a_kept_states_ack_copies_the_acknowledged_checkpoint_and_shares_the_others() {
    // With more than one checkpoint pending, the old state (kept, as a model
    // checker or an embedder keeping history does) and the new one share
    // every checkpoint the ack did not touch; the one it touched is copied
    // and the old state's copy is left as it was.
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 3,
        ..settings()
    });
    h.user_cp(0, 1);
    h.user_cp(0, 2);
    h.user_cp(0, 3);
    let before = h.s.clone();
    h.step(1, ack(0, 2, 200));
    let (PendingMap::Many(old), PendingMap::Many(new)) = (&before.pending, &h.s.pending) else {
        panic!("three pending checkpoints sit in the shared slice");
    };
    assert!(!triomphe::Arc::ptr_eq(old, new), "the slice was copied");
    let shared: Vec<bool> = old
        .iter()
        .zip(new.iter())
        .map(|((a, pa), (b, pb))| {
            assert_eq!(a, b);
            triomphe::Arc::ptr_eq(pa, pb)
        })
        .collect();
    assert_eq!(shared, vec![true, false, true]);
    assert_eq!(
        before.pending_checkpoint(cp(2)).map(Pending::remaining),
        Some(2)
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(2)).map(Pending::remaining),
        Some(1)
    );
}

#[test]
fn decline_for_a_late_or_unknown_checkpoint_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, decline(0, 1));
    h.expect(2, decline(1, 1), vec![], ignored(Ignored::LateMessage));
    h.expect(
        2,
        decline(1, 42),
        vec![],
        ignored(Ignored::UnknownCheckpoint),
    );
}

#[test]
fn decline_for_another_job_is_rejected() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        Ev::Decline {
            job: JobId(8),
            task: t(0),
            attempt: AttemptNo(0),
            checkpoint: cp(1),
            reason: DeclineReason::SnapshotFailed,
        },
        vec![],
        Outcome::Rejected(CoordinatorError::WrongJob {
            expected: JOB,
            got: JobId(8),
        }),
    );
}

#[test]
fn decline_from_a_stale_attempt_or_unknown_task_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        1,
        decline_at(1, 4, 1, DeclineReason::SnapshotFailed),
        vec![],
        ignored(Ignored::StaleAttempt),
    );
    h.expect(1, decline(99, 1), vec![], ignored(Ignored::UnknownTask));
    assert_eq!(h.s.pending_count(), 1);
}

#[test]
fn decline_of_a_fully_acknowledged_checkpoint_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.expect(
        2,
        decline(0, 1),
        vec![],
        ignored(Ignored::CheckpointDiscarded),
    );
    assert_eq!(h.s.completing(), Some(cp(1)));
}

// ============================================================================
// The ring of recent ids
// ============================================================================

#[test]
fn recent_ids_ring_keeps_the_16_most_recent_ids() {
    let mut h = H::new();
    for id in 1..=17u64 {
        h.user_cp(id, id);
        h.step(id, decline_at(0, 0, id, DeclineReason::TaskNotReady));
    }
    let recent: Vec<CheckpointId> = h.s.recent_ids().copied().collect();
    assert_eq!(recent, (2..=17).map(cp).collect::<Vec<_>>());
    h.expect(
        20,
        ack(0, 1, 100),
        vec![e_discard(1, 100)],
        ignored(Ignored::UnknownCheckpoint),
    );
    h.expect(
        20,
        ack(0, 2, 200),
        vec![e_discard(2, 200)],
        ignored(Ignored::LateMessage),
    );
}
