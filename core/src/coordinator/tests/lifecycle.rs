//! Task failures, shutdown and restore.

use super::*;

// ============================================================================
// Task failure
// ============================================================================

#[test]
fn task_failure_aborts_every_pending_checkpoint_it_has_not_acknowledged() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 3,
        ..settings()
    });
    let r1 = h.user_cp(0, 1);
    h.user_cp(0, 2);
    let r3 = h.user_cp(0, 3);
    h.step(1, ack(1, 2, 201));
    h.step(1, ack(0, 3, 300));
    // Task 1 is no longer running: only task 0 is notified.
    h.expect(
        2,
        failed(1, 0),
        vec![
            cancel(Timer::Timeout(cp(1))),
            e_aborted(1, r1, AbortReason::TaskFailed),
            h.nab(0, 1, None),
            cancel(Timer::Timeout(cp(3))),
            e_discard(3, 300),
            e_aborted(3, r3, AbortReason::TaskFailed),
            h.nab(0, 3, None),
        ],
        applied(Applied::TaskUpdated { aborted: 2 }),
    );
    assert_eq!(
        h.s.pending().map(Pending::id).collect::<Vec<_>>(),
        vec![cp(2)]
    );
}

#[test]
fn task_failure_spares_a_completing_checkpoint() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.expect(
        2,
        failed(1, 0),
        vec![],
        applied(Applied::TaskUpdated { aborted: 0 }),
    );
    assert_eq!(h.s.completing(), Some(cp(1)));
}

#[test]
fn task_failure_of_a_stale_attempt_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(1, failed(1, 5), vec![], ignored(Ignored::StaleAttempt));
    h.step(2, failed(0, 0));
    h.expect(3, failed(0, 0), vec![], ignored(Ignored::StaleAttempt));
}

#[test]
fn task_events_for_an_unknown_task_are_rejected() {
    let mut h = H::new();
    h.expect(
        0,
        failed(99, 0),
        vec![],
        Outcome::Rejected(CoordinatorError::UnknownTask(t(99))),
    );
    h.expect(
        0,
        running(99, 1),
        vec![],
        Outcome::Rejected(CoordinatorError::UnknownTask(t(99))),
    );
}

#[test]
fn task_running_accepts_only_a_newer_attempt_not_a_failed_one_again() {
    let mut h = H::new();
    h.expect(0, running(1, 0), vec![], ignored(Ignored::StaleAttempt));
    h.step(0, failed(1, 0));
    // A late "running" of the attempt that failed does not revive it.
    h.expect(0, running(1, 0), vec![], ignored(Ignored::StaleAttempt));
    assert_eq!(
        h.s.task_status(t(1)),
        Some(TaskStatus {
            attempt: AttemptNo(0),
            running: false,
            finished: false,
        })
    );
    h.expect(
        1,
        running(1, 2),
        vec![],
        applied(Applied::TaskUpdated { aborted: 0 }),
    );
    h.expect(2, running(1, 1), vec![], ignored(Ignored::StaleAttempt));
    h.expect(2, running(1, 2), vec![], ignored(Ignored::StaleAttempt));
    assert_eq!(
        h.s.task_status(t(1)),
        Some(TaskStatus {
            attempt: AttemptNo(2),
            running: true,
            finished: false,
        })
    );
}

// ============================================================================
// Shutdown
// ============================================================================

#[test]
fn shutdown_aborts_everything_and_cancels_every_timer() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    let r = h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.step(2, trigger(forced())); // request 1 allocating
    h.expect(
        3,
        Ev::Shutdown {
            status: JobStatus::Canceled,
        },
        vec![
            e_failed(1, AbortReason::Shutdown),
            cancel(Timer::Timeout(cp(1))),
            e_discard(1, 100),
            e_aborted(1, r, AbortReason::Shutdown),
            cancel(Timer::Periodic),
            E::Job(JobCommand::ShutdownServices(JobStatus::Canceled)),
        ],
        applied(Applied::ShutDown),
    );
    assert!(h.s.is_shutdown());
    assert!(!h.s.is_periodic_scheduling());
}

#[test]
fn every_event_after_shutdown_is_ignored_without_effects() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.complete(0, 1);
    h.step(
        1,
        Ev::Shutdown {
            status: JobStatus::Finished,
        },
    );
    let events = vec![
        Ev::Shutdown {
            status: JobStatus::Failed,
        },
        Ev::StartScheduler,
        Ev::StopScheduler,
        trigger(savepoint()),
        trigger(user()),
        fire(Timer::Periodic),
        fire(Timer::Timeout(cp(1))),
        alloc(0, 2),
        alloc_err(0),
        hooks(1, true),
        ack(0, 1, 100),
        ack(0, 9, 900),
        decline(0, 1),
        fin(1, true),
        store(1, false),
        running(1, 1),
        failed(0, 0),
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(50),
                handles: vec![hd(5_000)],
            },
        },
    ];
    for ev in events {
        let before = h.s.clone();
        h.expect(2, ev, vec![], ignored(Ignored::Shutdown));
        assert_eq!(
            h.s,
            CoordinatorState {
                now: ms(2),
                ..before
            }
        );
    }
}

// ============================================================================
// Restore
// ============================================================================

#[test]
fn restore_latest_emits_the_latest_completed_state() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.complete(1, 1);
    h.expect(
        2,
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
        vec![E::Job(JobCommand::Restore {
            checkpoint: Some(cp(1)),
            handles: vec![hd(100), hd(101)],
        })],
        applied(Applied::Restored {
            checkpoint: Some(cp(1)),
        }),
    );
}

#[test]
fn restore_latest_without_a_checkpoint_is_an_error_only_if_asked() {
    let mut h = H::new();
    h.expect(
        0,
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
        vec![],
        Outcome::Rejected(CoordinatorError::NoCheckpointToRestore),
    );
    h.expect(
        0,
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        },
        vec![E::Job(JobCommand::Restore {
            checkpoint: None,
            handles: vec![],
        })],
        applied(Applied::Restored { checkpoint: None }),
    );
}

#[test]
fn restore_from_savepoint_resets_the_id_counter_to_savepoint_id_plus_one() {
    let mut h = H::new();
    h.expect(
        0,
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(41),
                handles: vec![hd(7)],
            },
        },
        vec![
            E::Job(JobCommand::ResetIdCounter {
                generation: G0,
                next: cp(42),
            }),
            E::Job(JobCommand::Restore {
                checkpoint: Some(cp(41)),
                handles: vec![hd(7)],
            }),
        ],
        applied(Applied::Restored {
            checkpoint: Some(cp(41)),
        }),
    );
    assert_eq!(h.s.last_id(), Some(cp(41)));
    assert_eq!(h.s.latest_completed(), Some(cp(41)));
    h.step(1, trigger(user()));
    h.expect(
        1,
        alloc(0, 41),
        vec![],
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(41),
            last: cp(41),
        }),
    );
    h.step(1, alloc(0, 42));
    // The restored savepoint is the user's: a later completion does not
    // evict it (one retained checkpoint, savepoints not counted) ...
    let step = h.complete(2, 42);
    assert!(
        !step.effects.contains(&e_discard(41, 7)),
        "{:?}",
        step.effects
    );
    assert_eq!(
        h.s.completed().map(|c| c.id()).collect::<Vec<_>>(),
        [cp(41), cp(42)]
    );
    // ... only disposing of it frees its state.
    h.expect(
        3,
        Ev::DisposeSavepoint { checkpoint: cp(41) },
        vec![e_discard(41, 7)],
        applied(Applied::SavepointDisposed { checkpoint: cp(41) }),
    );
}

#[test]
fn restored_savepoint_is_the_latest_completed_in_notify_aborted() {
    // Regression: restoring a savepoint left `latest_completed` at `None`.
    let mut h = H::new();
    h.step(
        0,
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(41),
                handles: vec![],
            },
        },
    );
    let r = h.user_cp(1, 42);
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(42)))];
    fx.extend(h.aborted_notified(42, r, reason, Some(41)));
    h.expect(
        2,
        decline(0, 42),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(42),
            reason,
        }),
    );
}

#[test]
fn restore_from_savepoint_at_the_maximum_id_is_an_overflow_error() {
    let mut h = H::new();
    h.expect(
        0,
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(u64::MAX),
                handles: vec![hd(1)],
            },
        },
        vec![],
        Outcome::Rejected(CoordinatorError::IdOverflow(cp(u64::MAX))),
    );
}

#[test]
fn restore_from_savepoint_while_checkpoints_are_active_is_refused() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    let restore = |id| Ev::Restore {
        source: RestoreSource::Savepoint {
            checkpoint: cp(id),
            handles: vec![hd(1)],
        },
    };
    h.expect(
        0,
        restore(50),
        vec![],
        Outcome::Rejected(CoordinatorError::SavepointRestoreConflict(cp(50))),
    );
    h.step(0, alloc(0, 60));
    h.expect(
        0,
        restore(70),
        vec![],
        Outcome::Rejected(CoordinatorError::SavepointRestoreConflict(cp(70))),
    );
    h.step(1, decline(0, 60));
    // An id not above the ids already used.
    h.expect(
        1,
        restore(60),
        vec![],
        Outcome::Rejected(CoordinatorError::SavepointRestoreConflict(cp(60))),
    );
}
