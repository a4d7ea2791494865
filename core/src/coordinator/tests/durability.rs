//! Durability: state that may be committed is never deleted, a restore is never behind a commit, savepoints and shared state.

use super::*;

// ============================================================================
// Durability: once finalize / store is out, the state belongs to that I/O
// ============================================================================

/// A checkpoint 1 (handles 100, 101) whose finalize is outstanding.
fn finalizing() -> H {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::Finalizing)
    );
    h
}

/// The same checkpoint with its store outstanding.
fn storing() -> H {
    let mut h = finalizing();
    h.step(2, fin(1, true));
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::Storing)
    );
    h
}

fn discards(step: &Step) -> Vec<StateHandle> {
    step.effects
        .iter()
        .filter_map(|e| {
            if let E::Discard { handle, .. } = e {
                Some(*handle)
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn stop_while_storing_keeps_the_checkpoint_and_it_completes() {
    let mut h = storing();
    let stop = h.step(3, Ev::StopScheduler);
    assert_eq!(discards(&stop), vec![]);
    assert_eq!(
        stop.outcome,
        applied(Applied::SchedulerStopped { aborted: 0 })
    );
    let done = h.step(4, store(1, true));
    assert_eq!(
        done.outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
    assert_eq!(h.s.owned_handles(), vec![hd(100), hd(101)]);
}

#[test]
fn stop_while_finalizing_keeps_the_checkpoint_and_it_completes() {
    let mut h = finalizing();
    let stop = h.step(3, Ev::StopScheduler);
    assert_eq!(discards(&stop), vec![]);
    h.expect(
        3,
        fin(1, true),
        vec![e_store(1)],
        applied(Applied::Finalized { checkpoint: cp(1) }),
    );
    let done = h.step(4, store(1, true));
    assert_eq!(
        done.outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
}

#[test]
fn stop_does_abort_the_checkpoints_that_wait_for_acks() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.step(1, fin(1, true)); // 1 storing
    h.user_cp(1, 2);
    h.step(1, ack(0, 2, 200)); // 2 waits for task 1
    let stop = h.step(2, Ev::StopScheduler);
    assert_eq!(discards(&stop), vec![hd(200)]);
    assert_eq!(
        stop.outcome,
        applied(Applied::SchedulerStopped { aborted: 1 })
    );
    assert!(h.s.pending_checkpoint(cp(1)).is_some());
}

#[test]
fn a_failed_store_after_a_stop_discards_the_state() {
    // The store's failure is the only answer that means "definitely not
    // stored": then, and only then, the state goes.
    let mut h = storing();
    h.step(3, Ev::StopScheduler);
    let failed = h.step(4, store(1, false));
    assert_eq!(discards(&failed), vec![hd(100), hd(101)]);
}

#[test]
fn a_failed_finalize_discards_the_state() {
    let mut h = finalizing();
    let failed = h.step(2, fin(1, false));
    assert_eq!(discards(&failed), vec![hd(100), hd(101)]);
}

#[test]
fn shutdown_while_storing_leaves_the_state_in_doubt_for_every_job_status() {
    for status in [
        JobStatus::Finished,
        JobStatus::Canceled,
        JobStatus::Failed,
        JobStatus::Suspended,
    ] {
        let mut h = storing();
        let down = h.step(3, Ev::Shutdown { status });
        assert_eq!(discards(&down), vec![], "{status:?}");
        assert!(down.effects.contains(&E::Job(JobCommand::ResolveInDoubt {
            checkpoint: cp(1),
            discard_if_stored: vec![],
            discard_if_not_stored: vec![hd(100), hd(101)]
        })));
        assert_eq!(
            down.effects.last(),
            Some(&E::Job(JobCommand::ShutdownServices(status)))
        );
        assert_eq!(h.s.in_doubt().map(Completed::id), Some(cp(1)));
        // Still owned: a discard now would violate no-discard-of-retained.
        assert_eq!(h.s.owned_handles(), vec![hd(100), hd(101)]);
        // The store's answer reaches nobody; the host resolves the doubt.
        h.expect(4, store(1, true), vec![], ignored(Ignored::Shutdown));
    }
}

#[test]
fn shutdown_while_finalizing_leaves_the_state_in_doubt() {
    let mut h = finalizing();
    let down = h.step(
        3,
        Ev::Shutdown {
            status: JobStatus::Suspended,
        },
    );
    assert_eq!(discards(&down), vec![]);
    assert_eq!(h.s.in_doubt().map(Completed::id), Some(cp(1)));
}

#[test]
fn shutdown_discards_what_waits_for_acks_but_not_what_is_stored() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    h.step(1, fin(1, true));
    h.user_cp(1, 2);
    h.step(1, ack(1, 2, 201));
    let down = h.step(
        2,
        Ev::Shutdown {
            status: JobStatus::Canceled,
        },
    );
    assert_eq!(discards(&down), vec![hd(201)]);
}

#[test]
fn task_failure_while_storing_leaves_it_completing() {
    let mut h = storing();
    let f = h.step(3, failed(1, 0));
    assert_eq!(discards(&f), vec![]);
    assert_eq!(f.outcome, applied(Applied::TaskUpdated { aborted: 0 }));
    let done = h.step(4, store(1, true));
    assert_eq!(
        done.outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
}

#[test]
fn a_new_attempt_while_finalizing_leaves_it_completing() {
    let mut h = finalizing();
    let r = h.step(3, running(0, 1));
    assert_eq!(discards(&r), vec![]);
    assert!(h.s.pending_checkpoint(cp(1)).is_some());
}

#[test]
fn no_timeout_can_fire_while_storing() {
    let mut h = storing();
    h.expect(
        20_000,
        fire(Timer::Timeout(cp(1))),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
    assert!(h.s.pending_checkpoint(cp(1)).is_some());
}

#[test]
fn a_decline_or_a_late_ack_never_touches_a_storing_checkpoint() {
    let mut h = storing();
    h.expect(
        3,
        decline(0, 1),
        vec![],
        ignored(Ignored::CheckpointDiscarded),
    );
    // A duplicated ack with the same handle frees nothing.
    h.expect(
        3,
        ack(0, 1, 100),
        vec![],
        ignored(Ignored::CheckpointDiscarded),
    );
}

#[test]
fn subsumption_and_aborts_of_older_checkpoints_leave_the_storing_one_alone() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.step(0, ack(0, 1, 100)); // 1 waits for task 1
    h.user_cp(0, 2);
    h.ack_all(1, 2); // 2 completes first: finalizing
    h.step(1, fin(2, true));
    let abort = h.step(2, decline(1, 1));
    assert_eq!(discards(&abort), vec![hd(100)]);
    let done = h.step(3, store(2, true));
    assert_eq!(
        done.outcome,
        applied(Applied::Completed { checkpoint: cp(2) })
    );
    assert_eq!(discards(&done), vec![]);
    assert_eq!(h.s.owned_handles(), vec![hd(200), hd(201)]);
}

#[test]
fn legacy_discard_while_storing_is_caught_by_the_step_invariant() {
    for during in [PendingPhase::Finalizing, PendingPhase::Storing] {
        for stop in [
            Ev::StopScheduler,
            Ev::Shutdown {
                status: JobStatus::Suspended,
            },
        ] {
            let mut h = H::with(CoordinatorSettings {
                semantics: crate::Semantics::Legacy(crate::LegacyBug::DiscardWhileStoring),
                ..settings()
            });
            h.step(0, Ev::StartScheduler);
            h.user_cp(0, 1);
            h.ack_all(1, 1);
            if during == PendingPhase::Storing {
                h.step(2, fin(1, true));
            }
            let (t, verdict) =
                checked::coordinator_step(&mut h.ledger, &h.s, ms(3), &stop, Rigor::Full);
            assert_eq!(
                discards(&t.step),
                vec![hd(100), hd(101)],
                "{during:?} {stop:?}"
            );
            let v = verdict.expect_err("the legacy discard must be caught");
            assert_eq!(v.invariant, names::NO_DISCARD_WHILE_STORING, "{v}");
        }
    }
}

fn recovered(id: u64, handles: &[u64]) -> RecoveredCheckpoint {
    RecoveredCheckpoint {
        checkpoint: cp(id),
        savepoint: false,
        timestamp: ms(0),
        handles: handles.iter().copied().map(hd).collect(),
    }
}

/// `Restore { Latest }` (an error if none) emits the state of checkpoint `id`.
fn expect_restores_latest(h: &mut H, id: u64, handles: &[u64]) {
    h.expect(
        0,
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
        vec![E::Job(JobCommand::Restore {
            checkpoint: Some(cp(id)),
            handles: handles.iter().copied().map(hd).collect(),
        })],
        applied(Applied::Restored {
            checkpoint: Some(cp(id)),
        }),
    );
}

#[test]
fn recover_takes_over_the_stores_checkpoints_and_continues_the_ids() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    h.expect(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(3, &[300, 301]), recovered(5, &[500, 501])],
            last_id: Some(cp(6)),
            generation: Generation(0),
        },
        vec![],
        applied(Applied::Recovered {
            latest: Some(cp(5)),
        }),
    );
    assert_eq!(h.s.latest_completed(), Some(cp(5)));
    assert_eq!(h.s.last_id(), Some(cp(6)));
    expect_restores_latest(&mut h, 5, &[500, 501]);
    // A duplicated ack of committed state from before the failover frees
    // nothing; an id the counter already handed out is refused.
    h.expect(1, ack(0, 5, 500), vec![], ignored(Ignored::LateMessage));
    h.step(1, trigger(user()));
    let refused = h.s.clone().apply(ms(1), alloc(0, 6));
    assert_eq!(
        refused.outcome,
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(6),
            last: cp(6)
        })
    );
}

/// Regression (found by a 20x proptest soak of the system stories): a
/// savepoint is never subsumed, so it can complete, and be committed, after
/// a newer checkpoint. The store then holds `[checkpoint 2, savepoint 1]` in
/// commit order; recovery refused that order as `OutOfOrder`, the new
/// coordinator owned nothing, and the stored state leaked.
///
/// Regression (issue 25, "two latests"): recovery answered `latest: 2` and
/// `Restore { Latest }` then restored savepoint 1, the last commit,
/// rewinding the job behind checkpoint 2. There is one latest now, the
/// highest id.
#[test]
fn recover_accepts_a_savepoint_committed_after_a_newer_checkpoint_and_restores_the_newer() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    let savepoint = RecoveredCheckpoint {
        savepoint: true,
        ..recovered(1, &[100])
    };
    h.expect(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(2, &[200]), savepoint],
            last_id: Some(cp(2)),
            generation: Generation(0),
        },
        vec![],
        applied(Applied::Recovered {
            latest: Some(cp(2)),
        }),
    );
    assert_eq!(h.s.latest_completed(), Some(cp(2)));
    expect_restores_latest(&mut h, 2, &[200]);
}

#[test]
fn legacy_restore_last_committed_restores_the_savepoint_behind_the_newer_checkpoint() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        semantics: Semantics::Legacy(LegacyBug::RestoreLastCommitted),
        ..settings()
    });
    let savepoint = RecoveredCheckpoint {
        savepoint: true,
        ..recovered(1, &[100])
    };
    h.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(2, &[200]), savepoint],
            last_id: Some(cp(2)),
            generation: Generation(0),
        },
    );
    let latest = Ev::Restore {
        source: RestoreSource::Latest {
            error_if_none: true,
        },
    };
    let (t, verdict) = checked::coordinator_step(&mut h.ledger, &h.s, ms(0), &latest, Rigor::Full);
    assert!(t.step.effects.contains(&E::Job(JobCommand::Restore {
        checkpoint: Some(cp(1)),
        handles: vec![hd(100)]
    })));
    let v = verdict.expect_err("restoring behind a commit is caught");
    assert_eq!(v.invariant, names::RESTORE_NOT_BEHIND, "{v}");
}

#[test]
fn recover_is_refused_unless_fresh_ordered_and_below_the_counter() {
    let problem = |h: &mut H, checkpoints: Vec<RecoveredCheckpoint>, last: Option<u64>| {
        h.step(
            0,
            Ev::Recover {
                checkpoints,
                last_id: last.map(cp),
                generation: Generation(0),
            },
        )
        .outcome
    };
    let reject = |p| Outcome::Rejected(CoordinatorError::RecoverConflict(p));
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    assert_eq!(
        problem(&mut h, vec![recovered(2, &[]), recovered(1, &[])], Some(2)),
        reject(RecoverProblem::OutOfOrder)
    );
    // A savepoint may follow a newer checkpoint, but no id appears twice.
    let sp = |id| RecoveredCheckpoint {
        savepoint: true,
        ..recovered(id, &[])
    };
    assert_eq!(
        problem(&mut h, vec![recovered(2, &[]), sp(2)], Some(2)),
        reject(RecoverProblem::OutOfOrder)
    );
    assert_eq!(
        problem(&mut h, vec![sp(3), sp(3)], Some(3)),
        reject(RecoverProblem::OutOfOrder)
    );
    // A checkpoint committed after a newer savepoint: the savepoint's
    // completion would have subsumed it.
    assert_eq!(
        problem(&mut h, vec![sp(3), recovered(2, &[])], Some(3)),
        reject(RecoverProblem::OutOfOrder)
    );
    // More than `retained_max` (a host that lowered retention across a
    // restart): accepted, and the next completion evicts down to the bound
    // (`recover_beyond_retention_evicts_at_the_next_completion`).
    assert!(problem(
        &mut h,
        vec![recovered(1, &[]), recovered(2, &[]), recovered(3, &[])],
        Some(3)
    )
    .is_applied());
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    assert_eq!(
        problem(&mut h, vec![recovered(3, &[])], Some(2)),
        reject(RecoverProblem::IdAboveCounter)
    );
    assert_eq!(
        problem(&mut h, vec![recovered(3, &[])], None),
        reject(RecoverProblem::IdAboveCounter)
    );
    // A state handle in two checkpoints: evicting the older would discard
    // the newer's state (found by the coordinator_events fuzz target).
    assert_eq!(
        problem(&mut h, vec![sp(1), recovered(2, &[7, 8])], Some(2)),
        Outcome::Applied(Applied::Recovered {
            latest: Some(cp(2))
        })
    );
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    // A handle in two checkpoints is shared (its state goes with the last
    // of them: `shared_state_is_discarded_once_with_the_last_checkpoint_holding_it`).
    assert!(problem(
        &mut h,
        vec![recovered(1, &[7, 9]), recovered(2, &[8, 9])],
        Some(2)
    )
    .is_applied());
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    // A handle twice in one checkpoint is that checkpoint's own.
    assert!(problem(&mut h, vec![recovered(1, &[7, 7])], Some(2)).is_applied());
    h.user_cp(0, 3);
    assert_eq!(
        problem(&mut h, vec![], Some(4)),
        reject(RecoverProblem::NotFresh)
    );
}

/// A coordinator that recovered a generation, or whose scheduler started,
/// is not fresh: a second `Recover` must not replace (and so possibly
/// lower) the fencing token a leader already claimed, and `Recover` after
/// the scheduler armed its timer is host misuse.
#[test]
fn recover_is_refused_after_a_recovery_or_a_started_scheduler() {
    let recover = |generation| Ev::Recover {
        checkpoints: vec![],
        last_id: None,
        generation: Generation(generation),
    };
    let not_fresh = Outcome::Rejected(CoordinatorError::RecoverConflict(RecoverProblem::NotFresh));
    let mut h = H::new();
    assert!(h.step(0, recover(5)).outcome.is_applied());
    assert_eq!(h.step(0, recover(2)).outcome, not_fresh);
    assert_eq!(h.s.generation(), Generation(5));
    let mut h = H::new();
    assert!(h.step(0, Ev::StartScheduler).outcome.is_applied());
    assert_eq!(h.step(0, recover(1)).outcome, not_fresh);
    assert_eq!(h.s.generation(), Generation(0));
}

/// State several checkpoints hold (recovered ones that share a file, a
/// savepoint restored from a retained checkpoint's files, or a task that
/// acknowledges a handle another checkpoint holds) is discarded once, when
/// the last checkpoint holding it goes, never while one still holds it.
#[test]
fn shared_state_is_discarded_once_with_the_last_checkpoint_holding_it() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    let step = h.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(1, &[7, 9]), recovered(2, &[8, 9])],
            last_id: Some(cp(2)),
            generation: Generation(0),
        },
    );
    assert!(step.outcome.is_applied());
    // Checkpoint 3 evicts 1: its own file goes, the shared one stays.
    h.user_cp(1, 3);
    assert_eq!(discards(&h.complete(1, 3)), vec![hd(7)]);
    // Checkpoint 4 evicts 2, the last holder of 9.
    h.user_cp(2, 4);
    assert_eq!(discards(&h.complete(2, 4)), vec![hd(8), hd(9)]);
    // The snapshot of a state with shared handles round-trips.
    let mut g = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    g.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(1, &[7, 9]), recovered(2, &[8, 9])],
            last_id: Some(cp(2)),
            generation: Generation(0),
        },
    );
    let back = CoordinatorState::from_snapshot(g.s.snapshot()).expect("round trip");
    assert_eq!(back, g.s);
}

/// Found by the `coordinator_events` fuzz target: an ack that carries a
/// handle a retained checkpoint holds (a task that reuses a file, or a
/// confused peer) was discarded as late, deleting committed state; and an
/// ack counted for a pending checkpoint made its completion evict the
/// older holder's copy. Neither discards it now; the state goes with the
/// last checkpoint that holds it.
#[test]
fn an_ack_carrying_a_retained_checkpoints_handle_never_discards_its_state() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 1,
        ..settings()
    });
    h.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(1, &[7])],
            last_id: Some(cp(1)),
            generation: Generation(0),
        },
    );
    // Late (for an id never pending) and unknown-task acks of handle 7.
    let late = h.step(1, ack(0, 9, 7));
    assert!(matches!(late.outcome, Outcome::Ignored(_)));
    assert_eq!(discards(&late), vec![]);
    // A late ack of a handle nobody holds is still discarded.
    assert_eq!(discards(&h.step(1, ack(0, 9, 55))), vec![hd(55)]);
    // Checkpoint 2 counts handle 7 from task 0; completing it evicts 1,
    // which leaves 7 to checkpoint 2.
    h.user_cp(2, 2);
    h.step(2, ack(0, 2, 7));
    h.step(2, ack(1, 2, 201));
    h.step(2, fin(2, true));
    let done = h.step(2, store(2, true));
    assert_eq!(
        done.outcome,
        applied(Applied::Completed { checkpoint: cp(2) })
    );
    assert_eq!(discards(&done), vec![]);
    // Checkpoint 3 evicts 2, the last holder of 7.
    h.user_cp(3, 3);
    assert_eq!(discards(&h.complete(3, 3)), vec![hd(7), hd(201)]);
    // An aborted checkpoint leaves the handles others hold, too.
    h.user_cp(4, 4);
    h.step(4, ack(0, 4, 300));
    h.step(4, ack(1, 4, 401));
    let fail = h.step(4, fin(4, false));
    assert_eq!(discards(&fail), vec![hd(401)]);
}

/// A savepoint restored from a retained checkpoint's own files keeps them:
/// the eviction of that checkpoint discards only what the savepoint does
/// not hold.
#[test]
fn a_savepoint_holding_a_retained_checkpoints_state_keeps_it_when_that_checkpoint_goes() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 1,
        ..settings()
    });
    let recovered_one = h.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(1, &[7, 8])],
            last_id: Some(cp(1)),
            generation: Generation(0),
        },
    );
    assert!(recovered_one.outcome.is_applied());
    let restore = h.step(
        1,
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(5),
                handles: vec![hd(8)],
            },
        },
    );
    assert!(restore.outcome.is_applied(), "{:?}", restore.outcome);
    // The savepoint does not count towards retention: checkpoint 1 stays.
    assert_eq!(discards(&restore), vec![]);
    assert_eq!(h.s.completed().count(), 2);
    // Checkpoint 6 evicts checkpoint 1: only the file the savepoint does not
    // hold goes.
    h.user_cp(2, 6);
    assert_eq!(discards(&h.complete(2, 6)), vec![hd(7)]);
    assert_eq!(
        h.s.completed().map(|c| c.id()).collect::<Vec<_>>(),
        [cp(5), cp(6)]
    );
}

/// A host that lowered `retained_max` across a restart recovers more
/// checkpoints than the bound; the next completion evicts down to it, as
/// the store does at its next commit.
#[test]
fn recover_beyond_retention_evicts_at_the_next_completion() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 1,
        ..settings()
    });
    h.expect(
        0,
        Ev::Recover {
            checkpoints: vec![
                recovered(1, &[10]),
                recovered(2, &[20]),
                recovered(3, &[30]),
            ],
            last_id: Some(cp(3)),
            generation: Generation(2),
        },
        vec![],
        applied(Applied::Recovered {
            latest: Some(cp(3)),
        }),
    );
    assert_eq!(h.s.completed().count(), 3);
    assert_eq!(h.s.generation(), Generation(2));
    h.user_cp(1, 4);
    assert_eq!(discards(&h.complete(1, 4)), vec![hd(10), hd(20), hd(30)]);
    assert_eq!(h.s.completed().map(|c| c.id()).collect::<Vec<_>>(), [cp(4)]);
}

#[test]
fn a_saturated_clock_stops_periodic_scheduling_instead_of_a_timer_due_forever() {
    let mut h = H::new();
    let end = u64::MAX - 50;
    h.step(end, Ev::StartScheduler);
    // `now + interval` saturates: the periodic timer is due at u64::MAX.
    assert_eq!(h.s.next_deadline(), Some((Timer::Periodic, ms(u64::MAX))));
    // A host that fires due timers until none remain: it must stop.
    let mut fired = 0;
    let now = u64::MAX;
    while let Some((timer, at)) = h.s.next_deadline() {
        if at > ms(now) || fired > 10 {
            break;
        }
        let step = h.step(now, fire(timer));
        fired += 1;
        if timer == Timer::Periodic {
            assert_eq!(step.outcome, applied(Applied::ClockExhausted));
            assert!(step.effects.contains(&cancel(Timer::Periodic)));
        }
    }
    assert_eq!(fired, 1, "one firing, then nothing is due");
    assert!(!h.s.is_periodic_scheduling());
    assert_eq!(h.s.next_deadline(), None);
}

// ============================================================================
// Durability, second round (issue 25): each found as a new user, against the
// crate docs' own words; each a regression test in one checked step, with
// the legacy knob that reproduces it caught by the invariant that guards it.
// ============================================================================

/// Tolerable failures 0, max concurrent 2: checkpoint 1 completed; 2 and 3
/// triggered; 3 fully acknowledged and finalized (`IoRequest::Store` of 3
/// out); 2 expires, so `JobCommand::Fail`; the host fails the tasks as the
/// recipe says.
fn failover_while_storing(semantics: Semantics) -> H {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        max_concurrent: 2,
        semantics,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.complete(0, 1);
    h.user_cp(1, 2);
    h.pending(2, forced(), 3);
    h.ack_all(3, 3);
    h.step(3, fin(3, true));
    assert_eq!(h.s.completing(), Some(cp(3)));
    let expired = h.step(1 + 10_000, fire(Timer::Timeout(cp(2))));
    assert!(expired
        .effects
        .iter()
        .any(|e| matches!(e, E::Job(JobCommand::Fail(_)))));
    for task in 0..2 {
        h.step(
            10_001,
            Ev::TaskFailed {
                task: t(task),
                attempt: AttemptNo(0),
            },
        );
    }
    h
}

#[test]
fn job_failover_while_a_newer_checkpoint_stores_restores_that_checkpoint_once_it_commits() {
    let mut h = failover_while_storing(Semantics::Fixed);
    h.expect(
        10_002,
        restore_latest(),
        vec![],
        applied(Applied::RestoreDeferred { awaiting: cp(3) }),
    );
    // No checkpoint of the new run while the restore point is unknown.
    for task in 0..2 {
        h.step(
            10_003,
            Ev::TaskRunning {
                task: t(task),
                attempt: AttemptNo(1),
            },
        );
    }
    let refused = h.step(10_003, trigger(forced()));
    assert_eq!(
        refused.outcome,
        applied(Applied::TriggerRejected {
            request: rq(3),
            reason: TriggerRejection::NotAllRequiredTasksRunning
        })
    );
    // A second restore is answered by the first one's JobCommand::Restore.
    h.expect(
        10_003,
        restore_latest(),
        vec![],
        ignored(Ignored::RestoreAlreadyDeferred),
    );
    let stored = h.step(10_004, store(3, true));
    assert_eq!(
        stored.outcome,
        applied(Applied::Completed { checkpoint: cp(3) })
    );
    assert_eq!(
        stored.effects.last(),
        Some(&E::Job(JobCommand::Restore {
            checkpoint: Some(cp(3)),
            handles: vec![hd(300), hd(301)]
        }))
    );
    assert!(!h.s.is_restore_deferred());
}

#[test]
fn job_failover_while_a_newer_checkpoint_stores_restores_the_older_one_if_the_store_fails() {
    let mut h = failover_while_storing(Semantics::Fixed);
    h.step(10_002, restore_latest());
    let failed = h.step(10_004, store(3, false));
    assert_eq!(
        failed.outcome,
        applied(Applied::Aborted {
            checkpoint: cp(3),
            reason: AbortReason::StoreFailed
        })
    );
    assert_eq!(
        failed.effects.last(),
        Some(&E::Job(JobCommand::Restore {
            checkpoint: Some(cp(1)),
            handles: vec![hd(100), hd(101)]
        }))
    );
}

#[test]
fn a_restore_ends_the_old_runs_checkpoints_that_are_not_out_for_storing() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.user_cp(0, 1);
    h.ack_all(0, 1);
    // Checkpoint 1 waits in finalize; checkpoint 2, forced, is fully
    // acknowledged too and would complete after it.
    h.pending(0, forced(), 2);
    h.ack_all(0, 2);
    let restore = h.step(1, restore_latest());
    assert_eq!(
        restore.outcome,
        applied(Applied::RestoreDeferred { awaiting: cp(1) })
    );
    assert!(restore
        .effects
        .contains(&e_aborted(2, 1, AbortReason::Restored)));
    assert_eq!(discards(&restore), vec![hd(200), hd(201)]);
    assert_eq!(h.s.pending_count(), 1);
}

#[test]
fn legacy_restore_behind_completion_is_caught_by_restore_not_behind_a_commit() {
    let h = failover_while_storing(Semantics::Legacy(LegacyBug::RestoreBehindCompletion));
    let mut ledger = h.ledger.clone();
    let (t, verdict) = checked::coordinator_step(
        &mut ledger,
        &h.s,
        ms(10_002),
        &restore_latest(),
        Rigor::Full,
    );
    assert!(t.step.effects.contains(&E::Job(JobCommand::Restore {
        checkpoint: Some(cp(1)),
        handles: vec![hd(100), hd(101)]
    })));
    let v = verdict.expect_err("restoring 1 while 3 stores is caught");
    assert_eq!(v.invariant, names::RESTORE_NOT_BEHIND, "{v}");
}

/// Checkpoint 1 retained with handles 1000 and 1001; checkpoint 2
/// acknowledged with 2000 and 1001 (a task re-reports unchanged state, as
/// incremental state backends do); 2 finalized, its store outstanding.
fn in_doubt_with_shared_state(semantics: Semantics) -> H {
    let mut h = H::with(CoordinatorSettings {
        semantics,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(0, ack(0, 1, 1000));
    h.step(0, ack(1, 1, 1001));
    h.step(0, fin(1, true));
    h.step(0, store(1, true));
    h.user_cp(1, 2);
    h.step(1, ack(0, 2, 2000));
    h.step(1, ack(1, 2, 1001));
    h.step(1, fin(2, true));
    h
}

#[test]
fn the_in_doubt_hand_over_never_lists_state_a_retained_checkpoint_shares() {
    let mut h = in_doubt_with_shared_state(Semantics::Fixed);
    let down = h.step(
        2,
        Ev::Shutdown {
            status: JobStatus::Suspended,
        },
    );
    assert!(
        down.effects.contains(&E::Job(JobCommand::ResolveInDoubt {
            checkpoint: cp(2), // Stored: its commit evicts checkpoint 1 (one retained), whose own
            // file goes; 1001 stays with checkpoint 2.
            discard_if_stored: vec![hd(1000)], // Not stored: only its own file; 1001 is checkpoint 1's.
            discard_if_not_stored: vec![hd(2000)]
        })),
        "{:?}",
        down.effects
    );
    assert_eq!(discards(&down), vec![]);
}

#[test]
fn legacy_in_doubt_lists_shared_state_is_caught_by_hand_over_spares_shared_state() {
    let h = in_doubt_with_shared_state(Semantics::Legacy(LegacyBug::InDoubtListsSharedState));
    let mut ledger = h.ledger.clone();
    let shutdown = Ev::Shutdown {
        status: JobStatus::Suspended,
    };
    let (_, verdict) = checked::coordinator_step(&mut ledger, &h.s, ms(2), &shutdown, Rigor::Full);
    let v = verdict.expect_err("listing the shared handle is caught");
    assert_eq!(v.invariant, names::HAND_OVER_SPARES_SHARED, "{v}");
}

/// Retained max 2: savepoint 1 completes, then checkpoints 2 and 3.
fn savepoint_then_two_checkpoints(semantics: Semantics) -> (H, Ev) {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 2,
        semantics,
        ..settings()
    });
    h.pending(0, savepoint(), 1);
    h.complete(0, 1);
    h.user_cp(1, 2);
    h.complete(1, 2);
    h.user_cp(2, 3);
    h.ack_all(2, 3);
    h.step(2, fin(3, true));
    (h, store(3, true))
}

#[test]
fn savepoints_do_not_expire_with_retention() {
    let (mut h, stored) = savepoint_then_two_checkpoints(Semantics::Fixed);
    let done = h.step(2, stored);
    assert_eq!(discards(&done), vec![]);
    assert_eq!(
        h.s.completed().map(|c| c.id()).collect::<Vec<_>>(),
        [cp(1), cp(2), cp(3)]
    );
    // The fourth evicts checkpoint 2, never the savepoint.
    h.user_cp(3, 4);
    assert_eq!(discards(&h.complete(3, 4)), vec![hd(200), hd(201)]);
    // A user disposes of it: its state goes then.
    let disposed = h.step(4, Ev::DisposeSavepoint { checkpoint: cp(1) });
    assert_eq!(discards(&disposed), vec![hd(100), hd(101)]);
    assert_eq!(
        h.step(4, Ev::DisposeSavepoint { checkpoint: cp(1) })
            .outcome,
        ignored(Ignored::UnknownCheckpoint)
    );
    assert_eq!(
        h.step(4, Ev::DisposeSavepoint { checkpoint: cp(4) })
            .outcome,
        Outcome::Rejected(CoordinatorError::NotASavepoint(cp(4)))
    );
}

#[test]
fn legacy_savepoint_expires_with_retention_is_caught_by_savepoint_state_kept() {
    let (h, stored) =
        savepoint_then_two_checkpoints(Semantics::Legacy(LegacyBug::SavepointExpiresWithRetention));
    let mut ledger = h.ledger.clone();
    let (t, verdict) = checked::coordinator_step(&mut ledger, &h.s, ms(2), &stored, Rigor::Full);
    assert_eq!(discards(&t.step), vec![hd(100), hd(101)]);
    let v = verdict.expect_err("discarding the savepoint is caught");
    assert_eq!(v.invariant, names::SAVEPOINT_KEPT, "{v}");
}

#[test]
fn savepoints_beyond_the_bound_are_refused_until_one_is_disposed_of() {
    let mut h = H::with(CoordinatorSettings {
        savepoints_max: 2,
        ..settings()
    });
    h.pending(0, savepoint(), 1);
    h.complete(0, 1);
    h.pending(1, savepoint(), 2);
    // One kept, one pending: the bound is reached.
    let refused = h.step(1, trigger(savepoint()));
    assert_eq!(
        refused.outcome,
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::TooManySavepoints
        })
    );
    h.step(2, Ev::DisposeSavepoint { checkpoint: cp(1) });
    assert!(h.step(2, trigger(savepoint())).outcome.is_applied());
    assert_eq!(
        config_err(|s| s.savepoints_max = 0),
        ConfigError::SavepointsNotPositive(0)
    );
    assert_eq!(
        config_ok(|s| s.savepoints_max = i64::MAX).savepoints_max(),
        SAVEPOINTS_CAP as usize
    );
}

#[test]
fn recover_takes_the_generation_unless_legacy_no_fencing() {
    for (semantics, expected) in [
        (Semantics::Fixed, Generation(7)),
        (Semantics::Legacy(LegacyBug::NoFencing), Generation(0)),
    ] {
        let mut h = H::with(CoordinatorSettings {
            semantics,
            ..settings()
        });
        h.step(
            0,
            Ev::Recover {
                checkpoints: vec![],
                last_id: None,
                generation: Generation(7),
            },
        );
        assert_eq!(h.s.generation(), expected, "{semantics:?}");
    }
}

#[test]
fn finalize_carries_what_was_triggered_and_when() {
    let mut h = H::new();
    h.pending(7, savepoint(), 1);
    h.step(8, ack(0, 1, 100));
    let last = h.step(9, ack(1, 1, 101));
    assert_eq!(
        last.effects[1],
        e_finalize_kind(1, savepoint(), 7, true, &[100, 101])
    );
    h.step(9, fin(1, true));
    h.step(9, store(1, true));
    h.user_cp(12, 2);
    h.step(13, ack(0, 2, 200));
    let last = h.step(14, ack(1, 2, 201));
    assert_eq!(
        last.effects[1],
        e_finalize_kind(2, user(), 12, false, &[200, 201])
    );
}

#[test]
fn a_savepoint_restore_evicts_a_recovered_surplus_as_its_commit_did() {
    // The store evicted checkpoint 1 when it committed the savepoint (the
    // recipe's step 2); the `Restore` discards its state between the id
    // counter's reset and the restore itself.
    let mut h = H::with(CoordinatorSettings {
        retained_max: 1,
        ..settings()
    });
    h.step(
        0,
        Ev::Recover {
            checkpoints: vec![recovered(1, &[10]), recovered(2, &[20])],
            last_id: Some(cp(2)),
            generation: Generation(1),
        },
    );
    h.expect(
        1,
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(5),
                handles: vec![hd(50)],
            },
        },
        vec![
            E::Job(JobCommand::ResetIdCounter {
                generation: Generation(1),
                next: cp(6),
            }),
            E::Discard {
                generation: Generation(1),
                checkpoint: cp(1),
                handle: hd(10),
            },
            E::Job(JobCommand::Restore {
                checkpoint: Some(cp(5)),
                handles: vec![hd(50)],
            }),
        ],
        applied(Applied::Restored {
            checkpoint: Some(cp(5)),
        }),
    );
    let kept: Vec<CheckpointId> = h.s.completed().map(|c| c.id()).collect();
    assert_eq!(kept, [cp(2), cp(5)], "the savepoint does not count");
}

#[test]
fn a_recover_of_nothing_at_generation_0_leaves_the_coordinator_fresh() {
    let mut h = H::new();
    let empty = |generation| Ev::Recover {
        checkpoints: vec![],
        last_id: None,
        generation,
    };
    h.expect(
        0,
        empty(G0),
        vec![],
        applied(Applied::Recovered { latest: None }),
    );
    h.expect(
        0,
        empty(Generation(5)),
        vec![],
        applied(Applied::Recovered { latest: None }),
    );
    assert_eq!(h.s.generation(), Generation(5));
    // A generation above 0 was taken: no third `Recover`.
    h.expect(
        0,
        empty(Generation(6)),
        vec![],
        Outcome::Rejected(CoordinatorError::RecoverConflict(RecoverProblem::NotFresh)),
    );
}

#[test]
fn a_deferred_restore_that_wants_a_checkpoint_goes_on_from_scratch_when_the_only_one_fails() {
    // `error_if_none` is judged when the restore arrives: checkpoint 1 is
    // finalizing then, so the restore waits; its finalize fails and
    // nothing else is retained.
    let mut h = H::new();
    h.user_cp(0, 1);
    h.ack_all(0, 1);
    let deferred = h.step(
        1,
        Ev::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
    );
    assert_eq!(
        deferred.outcome,
        applied(Applied::RestoreDeferred { awaiting: cp(1) })
    );
    let failed = h.step(2, fin(1, false));
    assert!(
        failed.effects.contains(&E::Job(JobCommand::Restore {
            checkpoint: None,
            handles: vec![],
        })),
        "{:?}",
        failed.effects
    );
}

#[test]
fn an_id_at_the_maximum_is_taken_and_leaves_no_id_above_it() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(0, alloc(0, u64::MAX));
    assert_eq!(h.s.last_id(), Some(cp(u64::MAX)));
    h.step(1, trigger(forced()));
    h.expect(
        1,
        alloc(1, u64::MAX),
        vec![],
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(u64::MAX),
            last: cp(u64::MAX),
        }),
    );
}

#[test]
fn a_savepoint_overtaken_by_a_newer_checkpoint_still_takes_its_late_acks() {
    // Savepoint 1 and checkpoint 2 run side by side; 2 completes first.
    // The savepoint is never subsumed: it still waits for both tasks, so a
    // task that deleted its part of 1 now (as a task that took it for
    // subsumed would) is caught, and the late acks the tasks send instead
    // complete it.
    use crate::invariants::coordinator::check_task_discard;
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.pending(0, savepoint(), 1);
    h.user_cp(0, 2);
    h.complete(1, 2);
    let awaited = |h: &H, task: u32, id: u64| {
        check_task_discard(&h.s, t(task), AttemptNo(0), cp(id)).map_err(|v| v.invariant)
    };
    assert_eq!(awaited(&h, 0, 1), Err(names::AWAITED_STATE_KEPT));
    // Another attempt's part, or a checkpoint no longer pending: nobody
    // waits for it.
    assert_eq!(check_task_discard(&h.s, t(0), AttemptNo(1), cp(1)), Ok(()));
    assert_eq!(awaited(&h, 0, 2), Ok(()));
    assert_eq!(
        h.step(2, ack(0, 1, 100)).outcome,
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1
        })
    );
    assert_eq!(awaited(&h, 0, 1), Ok(()));
    assert_eq!(awaited(&h, 1, 1), Err(names::AWAITED_STATE_KEPT));
    h.step(2, ack(1, 1, 101));
    h.step(2, fin(1, true));
    assert_eq!(
        h.step(2, store(1, true)).outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
}
