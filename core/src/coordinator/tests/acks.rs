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
    let (PendingMap::Many { entries: old, .. }, PendingMap::Many { entries: new, .. }) =
        (&before.pending, &h.s.pending)
    else {
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

// ----- the pending map's overrides (ack tables that are logs) ----------------

/// A coordinator of `tasks` tasks (more than one leaf's 64: every ack table
/// a log) with checkpoints `1..=pending` pending.
fn logs_pending(tasks: u32, pending: u64) -> H {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 8,
        tolerable_failures: 5,
        ..CoordinatorSettings::with_tasks(JOB, tasks)
    });
    for id in 1..=pending {
        h.user_cp(0, id);
    }
    h
}

/// The slice of a many-checkpoint map and its overrides.
fn many(s: &CoordinatorState) -> (&triomphe::Arc<[Entry]>, [u32; 4]) {
    match &s.pending {
        PendingMap::Many { entries, at } => (entries, *at),
        PendingMap::One(_) => panic!("more than one checkpoint is pending"),
    }
}

/// A copy of `s` that shares nothing with it (through its snapshot).
fn unshared(s: &CoordinatorState) -> CoordinatorState {
    CoordinatorState::from_snapshot(s.snapshot()).expect("a state's own snapshot")
}

fn hash_of(s: &CoordinatorState) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[test]
fn a_kept_ack_to_a_shared_map_of_logs_copies_nothing_and_every_state_reads_its_own() {
    let h = logs_pending(100, 3);
    let s0 = h.s.clone();
    // Three acks by the pure reducer, every state kept.
    let s1 = reduce(&s0, ms(1), ack(5, 2, 205)).state;
    let s2 = reduce(&s1, ms(1), ack(6, 2, 206)).state;
    let s3 = reduce(&s2, ms(1), ack(7, 3, 307)).state;
    for s in [&s1, &s2, &s3] {
        assert!(
            triomphe::Arc::ptr_eq(many(&s0).0, many(s).0),
            "no copy of the slice"
        );
    }
    assert_eq!(many(&s0).1, [0; 4]);
    assert_ne!(many(&s1).1[1], 0, "checkpoint 2 read at an override");
    assert_eq!(many(&s3).1[0], 0, "checkpoint 1 untouched");
    let slot = |s: &CoordinatorState, id: u64, task: usize| {
        s.pending_checkpoint(cp(id))
            .and_then(|p| p.acks().nth(task))
    };
    let remaining =
        |s: &CoordinatorState, id: u64| s.pending_checkpoint(cp(id)).map(Pending::remaining);
    assert_eq!(slot(&s0, 2, 5), Some(AckSlot::Waiting));
    assert_eq!(slot(&s1, 2, 5), Some(AckSlot::Acked(Some(hd(205)))));
    assert_eq!(slot(&s1, 2, 6), Some(AckSlot::Waiting));
    assert_eq!(slot(&s2, 2, 6), Some(AckSlot::Acked(Some(hd(206)))));
    assert_eq!(slot(&s2, 3, 7), Some(AckSlot::Waiting));
    assert_eq!(slot(&s3, 3, 7), Some(AckSlot::Acked(Some(hd(307)))));
    assert_eq!(
        [&s0, &s1, &s2, &s3].map(|s| remaining(s, 2)),
        [Some(100), Some(99), Some(98), Some(98)]
    );
    assert_eq!(s3.owned_handles(), vec![hd(205), hd(206), hd(307)]);
    assert_eq!(s0.owned_handles(), vec![]);
    // Each state equals, and hashes as, the same acks applied in place to
    // a copy that shares nothing (no override there).
    let mut fresh = unshared(&s0);
    for (task, id, handle) in [(5, 2, 205), (6, 2, 206), (7, 3, 307)] {
        fresh.apply(ms(1), ack(task, id, handle));
    }
    assert_eq!(many(&fresh).1, [0; 4]);
    assert!(fresh == s3);
    assert!(s3 == fresh);
    assert_eq!(hash_of(&fresh), hash_of(&s3));
    assert_eq!(format!("{fresh:?}"), format!("{s3:?}"));
    assert_eq!(fresh.snapshot(), s3.snapshot());
    // A second successor of `s1` is not the log's tip: it copies, and
    // every state still reads its own.
    let s2b = reduce(&s1, ms(1), ack(9, 2, 209)).state;
    assert!(!triomphe::Arc::ptr_eq(many(&s1).0, many(&s2b).0));
    assert_eq!(slot(&s2b, 2, 9), Some(AckSlot::Acked(Some(hd(209)))));
    assert_eq!(slot(&s2b, 2, 6), Some(AckSlot::Waiting));
    assert_eq!(slot(&s2, 2, 9), Some(AckSlot::Waiting));
    assert_eq!(remaining(&s2b, 2), Some(98));
    assert_eq!(s1.owned_handles(), vec![hd(205)]);
    assert_ne!(s2, s2b);
}

#[test]
fn checkpoints_past_the_overrides_and_duplicates_read_right() {
    // Six pending: the last two have no override and are copied on write.
    let h = logs_pending(70, 6);
    let s0 = h.s.clone();
    let mut s = s0.clone();
    for id in 1..=6 {
        s = reduce(&s, ms(1), ack(69, id, id * 1000)).state;
    }
    assert_eq!(many(&s).1.iter().filter(|v| **v != 0).count(), 4);
    for id in 1..=6 {
        let p = s.pending_checkpoint(cp(id)).expect("pending");
        assert_eq!(p.remaining(), 69);
        assert_eq!(p.handles().collect::<Vec<_>>(), vec![hd(id * 1000)]);
        assert_eq!(
            s0.pending_checkpoint(cp(id)).map(Pending::remaining),
            Some(70)
        );
    }
    // A duplicate through an override is refused and changes nothing.
    let t = reduce(&s, ms(2), ack(69, 2, 2000));
    assert_eq!(t.step.outcome, ignored(Ignored::DuplicateAck));
    assert!(t.state.eq_but_now(&s));
    let t = reduce(&s, ms(2), ack(69, 2, 7));
    assert_eq!(t.step.effects, vec![e_discard(2, 7)]);
    let mut fresh = unshared(&s0);
    for id in 1..=6 {
        fresh.apply(ms(1), ack(69, id, id * 1000));
    }
    assert!(fresh == s);
    assert_eq!(hash_of(&fresh), hash_of(&s));
}

/// The checked step (every invariant, the pure and in-place reducers
/// compared, `Rigor::Full`'s extra successors) over whole checkpoints of
/// logs with four pending: the overrides settle into the checkpoint when it
/// completes, aborts or is subsumed.
#[test]
fn whole_checkpoints_of_logs_through_the_checked_step() {
    let mut h = logs_pending(65, 4);
    for task in 0..65 {
        for id in [2, 4] {
            h.step(1, ack(task, id, id * 100 + u64::from(task)));
        }
        if task == 30 {
            h.step(1, decline(3, 1));
        }
    }
    assert_eq!(h.s.completing(), Some(cp(2)));
    assert_eq!(h.s.pending_count(), 3, "1 declined");
    h.step(2, fin(2, true));
    h.step(2, store(2, true));
    assert_eq!(h.s.completing(), Some(cp(4)));
    h.step(3, fin(4, true));
    h.step(3, store(4, true));
    assert_eq!(h.s.pending_count(), 0);
}
