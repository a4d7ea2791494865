//! Whole stories for the coordinator: the seed's own scenarios (Flink 1.3's
//! `CheckpointCoordinatorTest`) and the modern additions, each driven through
//! [`CoordinatorHarness`] so that every step is checked against the shared
//! invariants, the handle ledger and `reduce == apply`.

use ckpt_core::coordinator::{
    AbortReason, Applied, CheckpointOptions, CoordinatorEffect as E, CoordinatorError,
    CoordinatorEvent as Ev, CoordinatorSettings, FailJobReason, Ignored, JobStatus, Outcome,
    QueueReason, RequestId, RestoreSource, Timer, TriggerKind, TriggerRejection,
};
use ckpt_core::coordinator::{IoRequest, JobCommand};
use ckpt_core::route::TaskMessage;
use ckpt_core::snapshot::PendingSnapshot;
use ckpt_core::{AttemptNo, CheckpointId, DeclineReason, JobId, Millis, StateHandle, TaskId};
use ckpt_tests::{handle, CoordinatorHarness};

/// The generation of a coordinator that recovered nothing.
const G0: ckpt_core::Generation = ckpt_core::Generation(0);

const JOB: JobId = JobId(7);

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

/// Task 0 is the source; tasks 0, 1, 2 ack and commit.
fn settings() -> CoordinatorSettings {
    CoordinatorSettings {
        tolerable_failures: 100,
        ..CoordinatorSettings::with_tasks(JOB, 3)
    }
}

fn harness(f: impl FnOnce(&mut CoordinatorSettings)) -> CoordinatorHarness {
    let mut s = settings();
    f(&mut s);
    CoordinatorHarness::new(s)
}

fn user() -> TriggerKind {
    TriggerKind::Checkpoint { forced: false }
}

fn savepoint(target: &str) -> TriggerKind {
    TriggerKind::Savepoint {
        target: target.into(),
    }
}

fn completed_ids(h: &CoordinatorHarness) -> Vec<CheckpointId> {
    h.state().completed().map(|c| c.id()).collect()
}

fn notified_complete(h: &CoordinatorHarness, checkpoint: u64) -> Vec<TaskId> {
    h.all_effects()
        .filter_map(|e| match e {
            E::Rpc {
                task,
                message: TaskMessage::NotifyComplete { checkpoint: c, .. },
                ..
            } if *c == cp(checkpoint) => Some(*task),
            _ => None,
        })
        .collect()
}

#[test]
fn periodic_checkpoints_complete_one_after_another() {
    let mut h = harness(|_| {});
    h.start_scheduler();
    for n in 1..=3u64 {
        h.at(n * 1_000);
        let fired = h.fire_due();
        assert_eq!(fired.len(), 1);
        assert_eq!(
            fired[0].effects[0],
            E::Timer {
                timer: Timer::Periodic,
                at: Some(Millis((n + 1) * 1_000))
            }
        );
        let step = h.allocate_in_flight(n);
        assert!(step.effects.contains(&E::Rpc {
            task: TaskId(0),
            attempt: AttemptNo(0),
            generation: G0,
            message: TaskMessage::Trigger {
                checkpoint: cp(n),
                timestamp: Millis(n * 1_000),
                options: CheckpointOptions::FullCheckpoint
            }
        }));
        h.advance(10);
        h.complete(n);
        assert_eq!(
            notified_complete(&h, n),
            vec![TaskId(0), TaskId(1), TaskId(2)]
        );
    }
    // One retained; the older ones were discarded exactly once each.
    assert_eq!(completed_ids(&h), vec![cp(3)]);
    for n in 1..=2u64 {
        for t in 0..3 {
            assert_eq!(h.discards_of(handle(n, t)), 1);
        }
    }
    assert_eq!(
        h.state().timer_deadline(Timer::Periodic),
        Some(Millis(4_000))
    );
}

/// The seed's `testTriggerAndDeclineCheckpointComplex`, as Flink 1.11, 1.20
/// and 2.3 decide it (the conformance pass, tests/flink): two pending, a
/// decline of the older one while a request is queued frees a slot, so the
/// queued request resumes at once, though the newer checkpoint is still
/// pending (the seed waited for the newer one to complete).
#[test]
fn seed_decline_with_more_recent_pending_resumes_the_queued_request() {
    let mut h = harness(|s| s.max_concurrent = 2);
    h.start_scheduler();
    h.at(1_000).fire_due();
    h.allocate_in_flight(1);
    h.at(2_000).fire_due();
    h.allocate_in_flight(2);
    h.ack(0, 1);
    h.ack(1, 2);
    // Third periodic firing: both slots taken, queued, periodic timer cancelled.
    let fired = h.at(3_000).fire_due();
    assert_eq!(
        fired[0].outcome,
        Outcome::Applied(Applied::PeriodicFired(Box::new(Applied::Queued {
            request: RequestId(2),
            reason: QueueReason::TooManyConcurrent,
        })))
    );
    assert_eq!(h.state().timer_deadline(Timer::Periodic), None);

    h.at(3_100);
    let step = h.decline(1, 1, DeclineReason::SnapshotFailed);
    assert!(step.effects.contains(&E::Io {
        generation: G0,
        request: IoRequest::AllocateId {
            request: RequestId(2)
        }
    }));
    assert!(step.effects.contains(&E::Timer {
        timer: Timer::Periodic,
        at: Some(Millis(4_100))
    }));
    assert_eq!(h.discards_of(handle(1, 0)), 1);
    assert!(!h.state().is_trigger_request_queued());

    // Checkpoint 2 still completes; a late decline for 1 changes nothing.
    h.at(3_200);
    h.ack(0, 2);
    h.ack(2, 2);
    h.finalized(2, true);
    h.stored(2, true);
    assert!(completed_ids(&h).contains(&cp(2)));
    let step = h.decline(2, 1, DeclineReason::SnapshotFailed);
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::LateMessage));
}

/// The seed's "message for a discarded but non-removed checkpoint": here an
/// ack that arrives while the checkpoint is being finalized / stored.
#[test]
fn seed_ack_while_checkpoint_is_storing_is_discarded_and_completion_goes_on() {
    let mut h = harness(|_| {});
    h.trigger(user());
    h.allocate_in_flight(1);
    h.ack_all(1);
    h.finalized(1, true);
    // A retried ack from task 2 with a second write.
    let orphan = StateHandle(99_999);
    let step = h.ack_with(2, 1, Some(orphan));
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::CheckpointDiscarded));
    assert_eq!(
        step.effects,
        vec![E::Discard {
            generation: G0,
            checkpoint: cp(1),
            handle: orphan
        }]
    );
    // A decline now is too late to abort it.
    let step = h.decline(1, 1, DeclineReason::SnapshotFailed);
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::CheckpointDiscarded));
    h.stored(1, true);
    assert_eq!(completed_ids(&h), vec![cp(1)]);
    assert_eq!(h.discards_of(handle(1, 2)), 0);
}

/// The seed's store failure: the completed checkpoint's state is discarded,
/// the queued request resumes, and the next checkpoint succeeds.
#[test]
fn seed_store_failure_discards_state_and_the_next_checkpoint_succeeds() {
    let mut h = harness(|_| {});
    h.trigger(user());
    h.allocate_in_flight(1);
    h.trigger(user()); // queued behind 1
    h.ack_all(1);
    h.finalized(1, true);
    let step = h.stored(1, false);
    assert_eq!(
        step.outcome,
        Outcome::Applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::StoreFailed,
        })
    );
    for t in 0..3 {
        assert_eq!(h.discards_of(handle(1, t)), 1);
    }
    assert!(step.effects.contains(&E::Io {
        generation: G0,
        request: IoRequest::AllocateId {
            request: RequestId(1)
        }
    }));
    h.allocate_in_flight(2);
    h.complete(2);
    assert_eq!(completed_ids(&h), vec![cp(2)]);
    assert_eq!(h.state().counted_failures(), 0);
}

/// Late, unknown, duplicate, foreign-attempt and discarded acks: the state of
/// each is discarded exactly once, and retained state never.
#[test]
fn late_unknown_and_discarded_acks_discard_their_state_exactly_once() {
    let mut h = harness(|s| s.max_concurrent = 2);
    h.trigger(user());
    h.allocate_in_flight(1);
    h.ack(0, 1);
    h.at(10_000).fire_due(); // checkpoint 1 expires
    assert_eq!(h.discards_of(handle(1, 0)), 1);
    h.ack(1, 1); // late
    h.ack(1, 1); // late again, same handle: a second delivery
    assert_eq!(h.discards_of(handle(1, 1)), 2);
    h.ack(0, 77); // unknown
    assert_eq!(h.discards_of(handle(77, 0)), 1);
    h.trigger(user());
    h.allocate_in_flight(2);
    h.step(Ev::Acknowledge {
        job: JOB,
        task: TaskId(1),
        attempt: AttemptNo(9),
        checkpoint: cp(2),
        state: Some(StateHandle(5)),
    });
    assert_eq!(h.discards_of(StateHandle(5)), 1);
    h.complete(2);
    h.ack(0, 2); // duplicate after completion: retained, not discarded
    assert_eq!(h.discards_of(handle(2, 0)), 0);
    h.ledger()
        .check(h.state())
        .unwrap_or_else(|v| panic!("{v}"));
}

#[test]
fn savepoint_during_periodic_checkpointing_is_never_subsumed() {
    let mut h = harness(|s| s.max_concurrent = 2);
    h.start_scheduler();
    h.at(500);
    h.trigger(savepoint("/savepoints"));
    let step = h.allocate_in_flight(1);
    assert!(step.effects.contains(&E::Rpc {
        task: TaskId(0),
        attempt: AttemptNo(0),
        generation: G0,
        message: TaskMessage::Trigger {
            checkpoint: cp(1),
            timestamp: Millis(500),
            options: CheckpointOptions::Savepoint {
                target: "/savepoints".into()
            }
        }
    }));
    h.at(1_000).fire_due();
    h.allocate_in_flight(2);
    h.complete(2);
    assert!(h.state().pending_checkpoint(cp(1)).is_some());
    h.complete(1);
    let c: Vec<(CheckpointId, bool)> = h
        .state()
        .completed()
        .map(|c| (c.id(), c.is_savepoint()))
        .collect();
    // The savepoint does not push checkpoint 2 out of retention (one
    // retained checkpoint; savepoints do not count).
    assert_eq!(c, vec![(cp(2), false), (cp(1), true)]);
    // Latest completed never goes back to the older savepoint's id.
    assert_eq!(h.state().latest_completed(), Some(cp(2)));
}

/// The seed's `testMaxConcurrentAttempts`: the request beyond the limit is
/// queued, the periodic timer is cancelled, and both come back when a
/// checkpoint completes.
#[test]
fn seed_max_concurrent_attempts_queue_and_resume() {
    let mut h = harness(|_| {});
    h.start_scheduler();
    h.at(1_000).fire_due();
    h.allocate_in_flight(1);
    for t in [2_000, 3_000] {
        h.at(t);
        // The periodic timer is cancelled after the first queued request, so
        // only one firing happens.
        h.fire_due();
    }
    assert_eq!(h.state().queued().count(), 1);
    assert_eq!(h.state().timer_deadline(Timer::Periodic), None);
    h.at(3_500);
    let step = h.complete(1);
    assert!(step.effects.contains(&E::Io {
        generation: G0,
        request: IoRequest::AllocateId {
            request: RequestId(1)
        }
    }));
    assert_eq!(
        h.state().timer_deadline(Timer::Periodic),
        Some(Millis(4_500))
    );
    h.allocate_in_flight(2);
    assert_eq!(h.state().pending_count(), 1);
}

/// The seed's `testMinTimeBetweenCheckpointsInterval`: with a pause longer
/// than the interval, the interval is raised and triggers keep the pause.
#[test]
fn seed_min_pause_spaces_checkpoints_apart() {
    let mut h = harness(|s| {
        s.interval_ms = 1;
        s.min_pause_ms = 100;
    });
    assert_eq!(h.state().config().interval_ms(), 100);
    h.start_scheduler();
    h.at(100).fire_due();
    h.allocate_in_flight(1);
    h.at(150);
    h.complete(1);
    // Due at 200, but the pause runs until 250: the timer moves there.
    let fired = h.at(200).fire_due();
    assert_eq!(
        fired[0].outcome,
        Outcome::Applied(Applied::PeriodicFired(Box::new(Applied::TriggerRejected {
            request: RequestId(1),
            reason: TriggerRejection::MinimumTimeBetweenCheckpoints,
        })))
    );
    assert_eq!(h.state().timer_deadline(Timer::Periodic), Some(Millis(250)));
    let fired = h.at(250).fire_due();
    assert_eq!(
        fired[0].outcome,
        Outcome::Applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: RequestId(2),
        })))
    );
}

#[test]
fn consecutive_counted_failures_fail_the_job_and_a_success_resets_the_count() {
    let mut h = harness(|s| s.tolerable_failures = 2);
    let fail_jobs = |h: &CoordinatorHarness| {
        h.all_effects()
            .filter(|e| matches!(e, E::Job(JobCommand::Fail(_))))
            .count()
    };
    // Two counted failures are tolerated...
    h.trigger(user());
    h.allocate_in_flight(1);
    h.decline(1, 1, DeclineReason::SnapshotFailed);
    h.trigger(user());
    h.allocate_in_flight(2);
    h.at(10_000).fire_due();
    // ...a declined-for-life-cycle one does not count...
    h.trigger(user());
    h.allocate_in_flight(3);
    h.decline(2, 3, DeclineReason::TaskClosing);
    assert_eq!(h.state().counted_failures(), 2);
    assert_eq!(fail_jobs(&h), 0);
    // ...a success resets the count...
    h.trigger(user());
    h.allocate_in_flight(4);
    h.complete(4);
    assert_eq!(h.state().counted_failures(), 0);
    // ...and the third consecutive counted failure fails the job, once.
    for id in 5..=8u64 {
        h.trigger(user());
        h.allocate_in_flight(id);
        h.decline(0, id, DeclineReason::WriterFailed);
    }
    assert_eq!(fail_jobs(&h), 1);
    assert!(h.all_effects().any(|e| *e
        == E::Job(JobCommand::Fail(FailJobReason::TolerableFailuresExceeded {
            failures: 3
        }))));
}

/// Modern Flink: a failed task aborts the checkpoints it has not acked (and
/// only those); checkpointing resumes once a new attempt runs.
#[test]
fn task_failover_aborts_unacked_checkpoints_and_checkpointing_resumes() {
    let mut h = harness(|s| s.max_concurrent = 2);
    h.trigger(user());
    h.allocate_in_flight(1);
    h.trigger(user());
    h.allocate_in_flight(2);
    h.ack(2, 1);
    h.ack(2, 2);
    h.ack(1, 2);
    h.ack(0, 2); // checkpoint 2 is complete-able now and finalizing
    let step = h.task_failed(1, 0);
    assert_eq!(
        step.outcome,
        Outcome::Applied(Applied::TaskUpdated { aborted: 1 })
    );
    // Task 1 is down: notified are only 0 and 2, with no completed id yet.
    let notified: Vec<TaskId> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            E::Rpc {
                task,
                message:
                    TaskMessage::NotifyAborted {
                        latest_completed: None,
                        ..
                    },
                ..
            } => Some(*task),
            _ => None,
        })
        .collect();
    assert_eq!(notified, vec![TaskId(0), TaskId(2)]);
    h.finalized(2, true);
    h.stored(2, true);
    // No trigger while task 1 is down; then a new attempt runs.
    let step = h.trigger(user());
    assert_eq!(
        step.outcome,
        Outcome::Applied(Applied::TriggerRejected {
            request: RequestId(2),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        })
    );
    h.task_running(1, 1);
    h.trigger(user());
    h.allocate_in_flight(3);
    assert_eq!(
        h.state()
            .pending_checkpoint(cp(3))
            .map(|p| p.attempts().collect::<Vec<_>>()),
        Some(vec![AttemptNo(0), AttemptNo(1), AttemptNo(0)])
    );
    // The old attempt's ack is unknown for the new checkpoint.
    let step = h.ack(1, 3);
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::UnknownTask));
}

#[test]
fn shutdown_mid_completion_aborts_the_rest_leaves_the_completing_one_in_doubt_and_then_ignores_all()
{
    let mut h = harness(|s| s.max_concurrent = 2);
    h.start_scheduler();
    h.at(1_000).fire_due();
    h.allocate_in_flight(1);
    h.trigger(savepoint("/sp"));
    h.allocate_in_flight(2);
    h.ack_all(1);
    h.ack(0, 2);
    h.trigger(TriggerKind::Checkpoint { forced: true }); // in flight
    let step = h.shutdown(JobStatus::Suspended);
    assert_eq!(step.outcome, Outcome::Applied(Applied::ShutDown));
    assert_eq!(
        step.effects.last(),
        Some(&E::Job(JobCommand::ShutdownServices(JobStatus::Suspended)))
    );
    assert!(!step.effects.iter().any(|e| matches!(
        e,
        E::Rpc {
            message: TaskMessage::NotifyAborted { .. },
            ..
        }
    )));
    // Checkpoint 1 was finalizing: its state belongs to that I/O's outcome
    // and is handed to the host in doubt; checkpoint 2 waited for acks.
    for t in 0..3 {
        assert_eq!(h.discards_of(handle(1, t)), 0);
    }
    assert!(step.effects.contains(&E::Job(JobCommand::ResolveInDoubt {
        checkpoint: cp(1),
        discard_if_stored: vec![],
        discard_if_not_stored: (0..3).map(|t| handle(1, t)).collect()
    })));
    assert_eq!(h.state().in_doubt().map(|c| c.id()), Some(cp(1)));
    assert_eq!(h.discards_of(handle(2, 0)), 1);
    // The host's answers still arrive; none does anything.
    let before = h.state().clone();
    for ev in [
        Ev::FinalizeDone {
            checkpoint: cp(1),
            result: Ok(()),
        },
        Ev::CheckpointIdAllocated {
            request: RequestId(2),
            result: Ok(cp(3)),
        },
        Ev::TimerFired {
            timer: Timer::Periodic,
        },
        Ev::StartScheduler,
    ] {
        let step = h.advance(1).step(ev);
        assert_eq!(step.outcome, Outcome::Ignored(Ignored::Shutdown));
        assert!(step.effects.is_empty());
    }
    assert_eq!(h.state().pending_count(), before.pending_count());
    assert!(h.state().is_shutdown());
}

#[test]
fn restore_from_savepoint_then_checkpoint_ids_continue_above_it() {
    let mut h = harness(|_| {});
    let step = h.restore(RestoreSource::Savepoint {
        checkpoint: cp(41),
        handles: vec![StateHandle(1), StateHandle(2)],
    });
    assert_eq!(
        step.effects[0],
        E::Job(JobCommand::ResetIdCounter {
            generation: G0,
            next: cp(42)
        })
    );
    h.trigger(user());
    let step = h.allocate_in_flight(41);
    assert_eq!(
        step.outcome,
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(41),
            last: cp(41),
        })
    );
    h.allocate_in_flight(42);
    h.complete(42);
    // The savepoint is the user's: retention (one checkpoint retained) does
    // not free it.
    assert_eq!(h.discards_of(StateHandle(1)), 0);
    let step = h.restore(RestoreSource::Latest {
        error_if_none: true,
    });
    assert_eq!(
        step.effects,
        vec![E::Job(JobCommand::Restore {
            checkpoint: Some(cp(42)),
            handles: vec![handle(42, 0), handle(42, 1), handle(42, 2)]
        })]
    );
}

#[test]
fn timeouts_and_stale_timers_across_a_long_run() {
    let mut h = harness(|s| s.timeout_ms = 2_500);
    h.start_scheduler();
    let mut expired = 0;
    for t in (1_000..=10_000).step_by(500) {
        h.at(t);
        for step in h.fire_due() {
            if let Outcome::Applied(Applied::Aborted {
                reason: AbortReason::Expired,
                ..
            }) = step.outcome
            {
                expired += 1;
            }
        }
        if let Some(r) = h.state().in_flight().map(|r| r.id()) {
            h.allocate(r, Ok(r.0 + 1));
        }
    }
    assert!(expired >= 2, "expired {expired}");
    // A timer event for an expired checkpoint, and a premature periodic one.
    let step = h.fire(Timer::Timeout(cp(1)));
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::TimerNotArmed));
    h.start_scheduler();
    let step = h.fire(Timer::Periodic);
    assert_eq!(step.outcome, Outcome::Ignored(Ignored::TimerNotDue));
}

#[test]
fn clock_going_backwards_is_clamped_and_never_moves_deadlines_back() {
    let mut h = harness(|_| {});
    h.at(5_000).start_scheduler();
    let step = h.at(1_000).trigger(user());
    assert_eq!(
        step.clock,
        ckpt_core::coordinator::Clock::Clamped {
            given: Millis(1_000),
            used: Millis(5_000),
        }
    );
    let step = h.allocate_in_flight(1);
    assert!(step.effects.contains(&E::Timer {
        timer: Timer::Timeout(cp(1)),
        at: Some(Millis(15_000))
    }));
    assert_eq!(h.state().now(), Millis(5_000));
}

/// Host misuse and garbage never panic, and never cost state.
#[test]
fn bad_input_storm_is_answered_with_typed_outcomes_and_loses_nothing() {
    let mut h = harness(|_| {});
    h.trigger(user());
    h.allocate_in_flight(3);
    h.ack(0, 3);
    let pending_before = h
        .state()
        .pending_checkpoint(cp(3))
        .map(PendingSnapshot::from);
    let garbage = vec![
        Ev::Acknowledge {
            job: JobId(8),
            task: TaskId(1),
            attempt: AttemptNo(0),
            checkpoint: cp(3),
            state: Some(StateHandle(8)),
        },
        Ev::Decline {
            job: JobId(8),
            task: TaskId(1),
            attempt: AttemptNo(0),
            checkpoint: cp(3),
            reason: DeclineReason::SnapshotFailed,
        },
        Ev::Acknowledge {
            job: JOB,
            task: TaskId(u32::MAX),
            attempt: AttemptNo(u32::MAX),
            checkpoint: cp(3),
            state: None,
        },
        Ev::Acknowledge {
            job: JOB,
            task: TaskId(0),
            attempt: AttemptNo(0),
            checkpoint: cp(u64::MAX),
            state: None,
        },
        Ev::Decline {
            job: JOB,
            task: TaskId(u32::MAX),
            attempt: AttemptNo(0),
            checkpoint: cp(3),
            reason: DeclineReason::SnapshotFailed,
        },
        Ev::CheckpointIdAllocated {
            request: RequestId(u64::MAX),
            result: Ok(cp(0)),
        },
        Ev::MasterHooksDone {
            checkpoint: cp(3),
            result: Ok(()),
        },
        Ev::FinalizeDone {
            checkpoint: cp(3),
            result: Ok(()),
        },
        Ev::StoreDone {
            checkpoint: cp(0),
            result: Ok(()),
        },
        Ev::TaskFailed {
            task: TaskId(u32::MAX),
            attempt: AttemptNo(0),
        },
        Ev::TaskRunning {
            task: TaskId(1),
            attempt: AttemptNo(0),
        },
        Ev::TimerFired {
            timer: Timer::Timeout(cp(u64::MAX)),
        },
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(u64::MAX),
                handles: vec![],
            },
        },
        Ev::Restore {
            source: RestoreSource::Savepoint {
                checkpoint: cp(2),
                handles: vec![],
            },
        },
    ];
    for ev in garbage {
        let step = h.step(ev);
        assert!(!step.outcome.is_applied(), "{:?}", step.outcome);
    }
    assert_eq!(
        h.state()
            .pending_checkpoint(cp(3))
            .map(PendingSnapshot::from),
        pending_before
    );
    // Time at the very end of the range: deadlines saturate, nothing wraps.
    h.at(u64::MAX);
    h.fire_due();
    h.start_scheduler();
    assert_eq!(
        h.state().timer_deadline(Timer::Periodic),
        Some(Millis(u64::MAX))
    );
    h.ledger()
        .check(h.state())
        .unwrap_or_else(|v| panic!("{v}"));
}

#[test]
fn master_hooks_gate_the_trigger_messages_in_a_story() {
    let mut h = harness(|s| s.master_hooks = 2);
    h.trigger(user());
    let step = h.allocate_in_flight(1);
    assert!(!step.effects.iter().any(|e| matches!(
        e,
        E::Rpc {
            message: TaskMessage::Trigger { .. },
            ..
        }
    )));
    // A hook failure aborts; the next checkpoint's hooks succeed.
    h.hooks_done(1, false);
    h.trigger(user());
    h.allocate_in_flight(2);
    let step = h.hooks_done(2, true);
    assert!(step
        .effects
        .iter()
        .any(|e| matches!(e, E::Rpc { message: TaskMessage::Trigger { checkpoint, .. }, .. } if *checkpoint == cp(2))));
    h.complete(2);
}

#[test]
fn harness_records_every_step_and_try_step_returns_it() {
    let mut h = harness(|_| {});
    h.trigger(user());
    h.allocate_in_flight(1);
    let len = h.history().len();
    let step = h.try_step(Ev::Acknowledge {
        job: JOB,
        task: TaskId(0),
        attempt: AttemptNo(0),
        checkpoint: cp(1),
        state: Some(handle(1, 0)),
    });
    assert!(step.is_ok());
    assert_eq!(h.history().len(), len + 1);
    assert_eq!(h.next_request(), RequestId(1));
    assert!(h.story().contains("CheckpointIdAllocated"));
}

/// The sink of [`a_sink_commits_its_last_output_before_it_finishes`]: a
/// task reducer and the host part that runs its snapshot at once.
struct Sink {
    task: ckpt_tests::stories::task::TaskDriver,
    /// Checkpoints the sink's operators were told completed (what a
    /// transactional sink commits on).
    committed: Vec<CheckpointId>,
}

impl Sink {
    /// Delivers `event` and carries out every effect the way the crate
    /// docs' host does: a mail runs, the writer and the async part finish;
    /// returns what the task says to the coordinator.
    fn deliver(
        &mut self,
        event: ckpt_core::task::TaskEvent,
    ) -> Vec<ckpt_core::route::ToCoordinator> {
        use ckpt_core::task::{AsyncCommand, OperatorNotice, TaskEffect, TaskEvent, WriterCommand};
        let mut queue = std::collections::VecDeque::from([event]);
        let mut out = Vec::new();
        while let Some(ev) = queue.pop_front() {
            self.task.deliver(ev).unwrap_or_else(|v| panic!("{v}"));
            let effects = self
                .task
                .records
                .last()
                .map(|r| r.effects.clone())
                .unwrap_or_default();
            for e in effects {
                match e {
                    TaskEffect::Mail(c) => {
                        queue.push_back(TaskEvent::CheckpointMail { checkpoint: c })
                    }
                    TaskEffect::Writer(WriterCommand::Start(c)) => {
                        queue.push_back(TaskEvent::WriterCompleted { checkpoint: c });
                    }
                    TaskEffect::AsyncPart(AsyncCommand::Start(c)) => {
                        queue.push_back(TaskEvent::AsyncPartCompleted {
                            checkpoint: c,
                            handle: handle(c.0, 1),
                        });
                    }
                    TaskEffect::Coordinator(m) => out.push(m),
                    TaskEffect::Operators(OperatorNotice::Complete(c)) => self.committed.push(c),
                    TaskEffect::Writer(_)
                    | TaskEffect::AsyncPart(_)
                    | TaskEffect::Downstream(_)
                    | TaskEffect::Discard(_)
                    | TaskEffect::Operators(OperatorNotice::Aborted(_))
                    | TaskEffect::Fail(_) => {}
                }
            }
        }
        out
    }
}

/// The crate docs' recipe for a task that commits output on notifications
/// (a transactional sink) in a job whose tasks finish: ckpt's `EndOfInput`
/// and `TaskFinished` are Flink's task end after its final checkpoint, so
/// the host keeps the sink running after its last record until it was
/// notified complete of a checkpoint taken after that record, and only
/// then feeds `EndOfInput` and reports `TaskFinished`. The source finished
/// first, so that checkpoint's plan triggers the sink itself. Fed at once
/// instead, `EndOfInput` makes the sink decline that checkpoint
/// (`TaskClosing`): the last output would never be committed.
#[test]
fn a_sink_commits_its_last_output_before_it_finishes() {
    use ckpt_core::route::ToCoordinator;
    use ckpt_core::task::{TaskConfig, TaskEvent};
    use ckpt_tests::stories::task::TaskDriver;
    let finished = |task: u32| Ev::TaskFinished {
        task: TaskId(task),
        attempt: AttemptNo(0),
    };
    let new_sink = || Sink {
        task: TaskDriver::new(TaskConfig::default()).unwrap(),
        committed: Vec::new(),
    };
    let trigger_of = |step: &ckpt_core::coordinator::Step| -> Vec<(TaskId, CheckpointId)> {
        step.effects
            .iter()
            .filter_map(|e| match e {
                E::Rpc {
                    task,
                    message: TaskMessage::Trigger { checkpoint, .. },
                    ..
                } => Some((*task, *checkpoint)),
                _ => None,
            })
            .collect()
    };
    // Task 0, the source, is the task to trigger; task 1, the sink, reads
    // from it.
    let start = || {
        harness(|s| {
            *s = CoordinatorSettings {
                tolerable_failures: 100,
                ..CoordinatorSettings::with_tasks(JOB, 2)
            };
        })
    };

    // The recipe.
    let mut h = start();
    let mut sink = new_sink();
    // The source's input ended and it finished; the sink processed the
    // last record and keeps running.
    h.step(finished(0));
    h.trigger(user());
    let step = h.allocate_in_flight(1);
    assert_eq!(
        trigger_of(&step),
        vec![(TaskId(1), cp(1))],
        "the plan triggers the sink"
    );
    let said = sink.deliver(TaskEvent::TriggerCheckpoint { checkpoint: cp(1) });
    assert_eq!(
        said,
        vec![ToCoordinator::Ack {
            checkpoint: cp(1),
            handle: handle(1, 1)
        }]
    );
    h.ack_with(1, 1, Some(handle(1, 1)));
    h.finalized(1, true);
    h.stored(1, true);
    assert_eq!(notified_complete(&h, 1), vec![TaskId(1)]);
    sink.deliver(TaskEvent::NotifyComplete { checkpoint: cp(1) });
    assert_eq!(sink.committed, vec![cp(1)], "the last output is committed");
    // Only now does the sink finish; the job's closing checkpoint records
    // every task as finished and the job finishes on it.
    assert_eq!(sink.deliver(TaskEvent::EndOfInput), vec![]);
    h.step(finished(1));
    h.trigger(user());
    let step = h.allocate_in_flight(2);
    assert_eq!(trigger_of(&step), vec![], "every slot is pre-filled");
    h.finalized(2, true);
    let step = h.stored(2, true);
    assert!(
        step.effects.contains(&E::Job(JobCommand::Finish {
            final_checkpoint: Some(cp(2))
        })),
        "{}",
        h.story()
    );
    assert_eq!(completed_ids(&h).last(), Some(&cp(2)));

    // Against the recipe: EndOfInput at the sink's last record.
    let mut h = start();
    let mut sink = new_sink();
    h.step(finished(0));
    sink.deliver(TaskEvent::EndOfInput);
    h.trigger(user());
    h.allocate_in_flight(1);
    let said = sink.deliver(TaskEvent::TriggerCheckpoint { checkpoint: cp(1) });
    assert_eq!(
        said,
        vec![ToCoordinator::Decline {
            checkpoint: cp(1),
            reason: DeclineReason::TaskClosing
        }]
    );
    assert!(
        sink.committed.is_empty(),
        "no checkpoint covers the last output"
    );
}

/// A failover asked for while the stop's savepoint completes: the restore
/// waits for that completion (`RestoreDeferred`), and the step that
/// commits the savepoint emits the stop first and the deferred restore
/// after it. The documented rule (`JobCommand::Stop`): the stop wins, the
/// host does not act on that `Restore`; it names the stop's savepoint,
/// which a later start recovers from the store.
#[test]
fn a_failover_during_the_stops_completion_yields_to_the_stop() {
    let mut h = harness(|_| {});
    h.trigger(TriggerKind::StopWithSavepoint {
        target: "stop".into(),
        drain: false,
    });
    h.allocate_in_flight(1);
    h.ack_all(1);
    h.finalized(1, true);
    assert_eq!(h.task_failed(0, 0).effects, vec![]);
    let step = h.restore(RestoreSource::Latest {
        error_if_none: false,
    });
    assert_eq!(
        step.outcome,
        Outcome::Applied(Applied::RestoreDeferred { awaiting: cp(1) })
    );
    let step = h.stored(1, true);
    let stop = step.effects.iter().position(|e| {
        *e == E::Job(JobCommand::Stop {
            savepoint: cp(1),
            drain: false,
        })
    });
    let restore = step.effects.iter().position(|e| {
        matches!(e, E::Job(JobCommand::Restore { checkpoint, .. }) if *checkpoint == Some(cp(1)))
    });
    assert!(
        matches!((stop, restore), (Some(s), Some(r)) if s < r),
        "{:?}",
        step.effects
    );
    // The job ends on the savepoint: every later request is refused.
    let step = h.trigger(user());
    assert!(
        matches!(
            step.outcome,
            Outcome::Applied(Applied::TriggerRejected { .. })
        ),
        "{:?}",
        step.outcome
    );
}
