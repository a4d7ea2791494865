//! Unit tests: one event in, the exact effects and outcome out. Each rule of
//! the task side has a test named after it.

use super::*;
use crate::invariants::checked::{self, Rigor};
use crate::invariants::task::{check_effects, check_quiescent, check_state, TaskMonitor};
use crate::types::{CheckpointId, Millis, StateHandle, Thread};

use TaskEffect as E;

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn task(semantics: Semantics) -> TaskState {
    TaskState::new(TaskConfig {
        semantics,
        ..TaskConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A task plus a monitor; every step is checked against `reduce` == `apply`,
/// the state invariants and the monitor.
struct Harness {
    s: TaskState,
    m: TaskMonitor,
    check_effects: bool,
}

impl Harness {
    fn new(semantics: Semantics) -> Harness {
        Harness {
            s: task(semantics),
            m: TaskMonitor::new(),
            check_effects: true,
        }
    }

    fn step(&mut self, ev: TaskEvent) -> (Vec<TaskEffect>, Outcome) {
        let mut m = self.m.clone();
        let (t, verdict) = checked::task_step(&mut m, &self.s, Millis(0), &ev, Rigor::Full);
        // The in-place checked step agrees on every step of every story
        // here, at both rigors, with the state before as a copy (a
        // copy-on-write host's) and without one (a host with one state).
        for rigor in [Rigor::Full, Rigor::Invariants] {
            for before in [Some(&self.s), None] {
                let mut in_place = self.s.clone();
                let mut m2 = self.m.clone();
                let (step, v2) = checked::task_step_in_place(
                    &mut m2,
                    before,
                    &mut in_place,
                    Millis(0),
                    &ev,
                    rigor,
                );
                assert_eq!((&in_place, &step, &v2), (&t.state, &t.step, &verdict));
                assert_eq!(m2, m);
            }
        }
        if self.check_effects {
            if let Err(v) = verdict {
                panic!("{v}");
            }
            self.m = m;
        } else if let Err(v) = check_state(&t.state) {
            panic!("{v}");
        }
        self.s = t.state;
        (t.step.effects, t.step.outcome)
    }

    fn quiescent_without_leak(&self) {
        assert!(!self.s.has_outstanding_work());
        assert_eq!(check_quiescent(&self.s), Ok(()));
        assert_eq!(self.m.leaked(), Vec::<CheckpointId>::new());
    }
}

fn barrier(n: u64) -> TaskEvent {
    TaskEvent::BarrierReceived {
        checkpoint: cp(n),
        via: Thread::Netty,
    }
}
fn mail(n: u64) -> TaskEvent {
    TaskEvent::CheckpointMail { checkpoint: cp(n) }
}
fn aborted(n: u64) -> TaskEvent {
    TaskEvent::NotifyAborted { checkpoint: cp(n) }
}
fn cancel(n: u64) -> TaskEvent {
    TaskEvent::CancelMarker { checkpoint: cp(n) }
}
fn abort_writer(n: u64, cleanup: bool) -> TaskEffect {
    E::Writer(WriterCommand::Abort {
        checkpoint: cp(n),
        cleanup,
    })
}
fn decline(n: u64, reason: DeclineReason) -> TaskEffect {
    E::Coordinator(ToCoordinator::Decline {
        checkpoint: cp(n),
        reason,
    })
}
fn applied(fx: Vec<TaskEffect>) -> (Vec<TaskEffect>, Outcome) {
    (fx, Outcome::Applied)
}
fn ignored(r: IgnoreReason) -> (Vec<TaskEffect>, Outcome) {
    (vec![], Outcome::Ignored(r))
}
fn skipped(fx: Vec<TaskEffect>, r: SkipReason) -> (Vec<TaskEffect>, Outcome) {
    (fx, Outcome::Skipped(r))
}

#[test]
fn config_is_validated_and_fixed_is_the_default() {
    assert_eq!(
        TaskState::new(TaskConfig {
            aborted_ids_max: 0,
            ..TaskConfig::default()
        }),
        Err(TaskError::AbortedIdsMaxZero)
    );
    assert_eq!(TaskConfig::default().semantics, Semantics::Fixed);
    assert_eq!(TaskConfig::default().aborted_ids_max, 16);
}

#[test]
fn events_name_their_thread() {
    assert_eq!(barrier(1).thread(), Thread::Netty);
    let local = TaskEvent::BarrierReceived {
        checkpoint: cp(1),
        via: Thread::Task,
    };
    assert_eq!(local.thread(), Thread::Task);
    assert_eq!(mail(1).thread(), Thread::Task);
    assert_eq!(aborted(1).thread(), Thread::Task);
    assert_eq!(cancel(1).thread(), Thread::Task);
    assert_eq!(
        TaskEvent::WriterFailed { checkpoint: cp(1) }.thread(),
        Thread::Writer
    );
    assert_eq!(
        TaskEvent::AsyncPartFailed { checkpoint: cp(1) }.thread(),
        Thread::Async
    );
}

#[test]
fn barrier_on_a_writer_or_async_thread_is_rejected() {
    let mut h = Harness::new(Semantics::Fixed);
    for via in [Thread::Writer, Thread::Async] {
        assert_eq!(
            h.step(TaskEvent::BarrierReceived {
                checkpoint: cp(1),
                via
            }),
            (vec![], Outcome::Rejected(TaskError::WrongThread(via)))
        );
    }
}

#[test]
fn result_created_only_by_start_removed_only_on_task_thread() {
    let mut h = Harness::new(Semantics::Fixed);
    // Writer reports for results that do not exist create nothing.
    assert_eq!(
        h.step(TaskEvent::WriterCompleted { checkpoint: cp(1) }),
        ignored(IgnoreReason::NoSuchWriteResult)
    );
    // start on netty: creates, never removes.
    assert_eq!(
        h.step(barrier(1)),
        applied(vec![E::Writer(WriterCommand::Start(cp(1))), E::Mail(cp(1))])
    );
    assert_eq!(h.step(barrier(1)), ignored(IgnoreReason::AlreadyStarted));
    assert_eq!(
        h.step(TaskEvent::WriterCompleted { checkpoint: cp(1) }),
        applied(vec![])
    );
    assert_eq!(
        h.step(TaskEvent::WriterCompleted { checkpoint: cp(1) }),
        ignored(IgnoreReason::WriteResultSettled)
    );
    assert_eq!(h.s.write_results(), vec![(cp(1), ResultStatus::Completed)]);
    // The task thread takes it (getAndRemove) for the async part.
    assert_eq!(
        h.step(mail(1)),
        applied(vec![
            E::Downstream(ChannelItem::Barrier(cp(1))),
            E::AsyncPart(AsyncCommand::Start(cp(1)))
        ])
    );
    assert!(h.s.write_results().is_empty());
    assert_eq!(h.step(mail(1)), ignored(IgnoreReason::MailNotScheduled));
    assert_eq!(
        h.step(TaskEvent::AsyncPartCompleted {
            checkpoint: cp(1),
            handle: StateHandle(10)
        }),
        applied(vec![E::Coordinator(ToCoordinator::Ack {
            checkpoint: cp(1),
            handle: StateHandle(10)
        })])
    );
    h.quiescent_without_leak();
}

#[test]
fn trigger_on_a_source_task_starts_and_executes() {
    let mut h = Harness::new(Semantics::Fixed);
    assert_eq!(
        h.step(TaskEvent::TriggerCheckpoint { checkpoint: cp(1) }),
        applied(vec![
            E::Writer(WriterCommand::Start(cp(1))),
            E::Downstream(ChannelItem::Barrier(cp(1))),
            E::AsyncPart(AsyncCommand::Start(cp(1)))
        ])
    );
    assert_eq!(
        h.step(TaskEvent::TriggerCheckpoint { checkpoint: cp(1) }),
        ignored(IgnoreReason::AlreadyStarted)
    );
    assert_eq!(
        h.step(TaskEvent::AsyncPartFailed { checkpoint: cp(1) }),
        applied(vec![decline(1, DeclineReason::SnapshotFailed)])
    );
    assert_eq!(
        h.step(TaskEvent::AsyncPartFailed { checkpoint: cp(1) }),
        ignored(IgnoreReason::NoSuchAsyncPart)
    );
    h.quiescent_without_leak();
}

#[test]
fn abort_before_execute_notify_aborted_ends_in_decline() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    // RPC abort on the task thread: fail without cleanup, remember the id.
    assert_eq!(
        h.step(aborted(1)),
        applied(vec![
            abort_writer(1, false),
            E::Operators(OperatorNotice::Aborted(cp(1)))
        ])
    );
    assert_eq!(
        h.s.write_results(),
        vec![(cp(1), ResultStatus::Failed(ResultFailure::Aborted))]
    );
    assert_eq!(h.s.aborted_ids(), vec![cp(1)]);
    assert_eq!(h.step(aborted(1)), ignored(IgnoreReason::AlreadyAborted));
    // The mail still runs: it finds the result, removes it and declines.
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                abort_writer(1, true),
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::AbortedByCoordinator)
            ],
            SkipReason::Declined(DeclineReason::AbortedByCoordinator)
        )
    );
    assert!(h.s.aborted_ids().is_empty());
    h.quiescent_without_leak();
}

#[test]
fn abort_before_execute_cancel_marker_ends_in_decline() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    assert_eq!(
        h.step(cancel(1)),
        applied(vec![
            abort_writer(1, true),
            decline(1, DeclineReason::CancelledOnBarrier),
            E::Downstream(ChannelItem::CancelMarker(cp(1)))
        ])
    );
    assert_eq!(h.step(cancel(1)), ignored(IgnoreReason::StaleCheckpoint));
    assert_eq!(h.step(mail(1)), skipped(vec![], SkipReason::Stale));
    h.quiescent_without_leak();
}

#[test]
fn stale_mail_is_ignored_and_its_leftover_result_cleaned_up() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(5));
    // A cancel marker for a newer id moves the last executed id past 5.
    assert_eq!(
        h.step(cancel(6)),
        applied(vec![
            decline(6, DeclineReason::CancelledOnBarrier),
            E::Downstream(ChannelItem::CancelMarker(cp(6)))
        ])
    );
    assert_eq!(h.s.last_executed(), Some(cp(6)));
    assert_eq!(
        h.step(mail(5)),
        skipped(vec![abort_writer(5, true)], SkipReason::Stale)
    );
    // Executed ids strictly increase: nothing at or below 6 can start again.
    assert_eq!(h.step(barrier(6)), ignored(IgnoreReason::StaleCheckpoint));
    assert_eq!(h.step(barrier(4)), ignored(IgnoreReason::StaleCheckpoint));
    assert_eq!(
        h.step(TaskEvent::TriggerCheckpoint { checkpoint: cp(6) }),
        ignored(IgnoreReason::StaleCheckpoint)
    );
    h.quiescent_without_leak();
}

#[test]
fn start_of_newer_checkpoint_subsumes_unfinished_older() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    assert_eq!(
        h.step(barrier(2)),
        applied(vec![
            abort_writer(1, false),
            E::Writer(WriterCommand::Start(cp(2))),
            E::Mail(cp(2))
        ])
    );
    assert_eq!(
        h.s.write_results(),
        vec![
            (cp(1), ResultStatus::Failed(ResultFailure::Subsumed)),
            (cp(2), ResultStatus::InProgress)
        ]
    );
    // Already failed results are not failed again.
    assert_eq!(
        h.step(barrier(3)),
        applied(vec![
            abort_writer(2, false),
            E::Writer(WriterCommand::Start(cp(3))),
            E::Mail(cp(3))
        ])
    );
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                abort_writer(1, true),
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::Subsumed)
            ],
            SkipReason::Declined(DeclineReason::Subsumed)
        )
    );
    h.step(mail(2));
    assert_eq!(
        h.step(mail(3)),
        applied(vec![
            E::Downstream(ChannelItem::Barrier(cp(3))),
            E::AsyncPart(AsyncCommand::Start(cp(3)))
        ])
    );
    h.step(TaskEvent::AsyncPartCompleted {
        checkpoint: cp(3),
        handle: StateHandle(3),
    });
    h.quiescent_without_leak();
}

#[test]
fn start_for_an_already_aborted_id_creates_no_result() {
    let mut h = Harness::new(Semantics::Fixed);
    assert_eq!(
        h.step(aborted(3)),
        applied(vec![E::Operators(OperatorNotice::Aborted(cp(3)))])
    );
    assert_eq!(h.step(barrier(3)), applied(vec![E::Mail(cp(3))]));
    assert!(h.s.write_results().is_empty());
    // The same for a source task's trigger.
    h.step(aborted(4));
    assert_eq!(
        h.step(TaskEvent::TriggerCheckpoint { checkpoint: cp(4) }),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(4))),
                decline(4, DeclineReason::AbortedByCoordinator)
            ],
            SkipReason::Declined(DeclineReason::AbortedByCoordinator)
        )
    );
    // Mail 3 is now stale (4 executed as a skip).
    assert_eq!(h.step(mail(3)), skipped(vec![], SkipReason::Stale));
    h.quiescent_without_leak();
}

#[test]
fn abort_notified_before_barrier_leaves_no_leaked_result() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(aborted(1));
    h.step(barrier(1));
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::AbortedByCoordinator)
            ],
            SkipReason::Declined(DeclineReason::AbortedByCoordinator)
        )
    );
    assert!(h.s.aborted_ids().is_empty());
    h.quiescent_without_leak();
    // A later checkpoint runs normally.
    h.step(barrier(2));
    assert_eq!(
        h.step(mail(2)),
        applied(vec![
            E::Downstream(ChannelItem::Barrier(cp(2))),
            E::AsyncPart(AsyncCommand::Start(cp(2)))
        ])
    );
}

#[test]
fn skipped_aborted_checkpoint_sends_cancel_marker_downstream() {
    for pre_barrier in [true, false] {
        let mut h = Harness::new(Semantics::Fixed);
        if pre_barrier {
            h.step(aborted(7));
            h.step(barrier(7));
        } else {
            h.step(barrier(7));
            h.step(aborted(7));
        }
        let (fx, _) = h.step(mail(7));
        assert!(fx.contains(&E::Downstream(ChannelItem::CancelMarker(cp(7)))));
        assert!(!fx.contains(&E::Downstream(ChannelItem::Barrier(cp(7)))));
    }
}

#[test]
fn notify_complete_is_monotonic() {
    let mut h = Harness::new(Semantics::Fixed);
    assert_eq!(
        h.step(TaskEvent::NotifyComplete { checkpoint: cp(2) }),
        applied(vec![E::Operators(OperatorNotice::Complete(cp(2)))])
    );
    assert_eq!(
        h.step(TaskEvent::NotifyComplete { checkpoint: cp(2) }),
        ignored(IgnoreReason::StaleNotifyComplete)
    );
    assert_eq!(
        h.step(TaskEvent::NotifyComplete { checkpoint: cp(1) }),
        ignored(IgnoreReason::StaleNotifyComplete)
    );
    assert_eq!(
        h.step(TaskEvent::NotifyComplete { checkpoint: cp(3) }),
        applied(vec![E::Operators(OperatorNotice::Complete(cp(3)))])
    );
}

/// Checkpoint 1's async part finishing with handle 9 after the task was
/// told checkpoint 2 completed: the part's own state (`owns`) or an
/// earlier checkpoint's reported again.
fn part_after_a_newer_completion(
    semantics: Semantics,
    owns: bool,
) -> (Harness, (Vec<TaskEffect>, Outcome)) {
    let mut h = Harness::new(semantics);
    h.step(barrier(1));
    h.step(mail(1));
    h.step(TaskEvent::NotifyComplete { checkpoint: cp(2) });
    let (checkpoint, handle) = (cp(1), StateHandle(9));
    let ev = if owns {
        TaskEvent::AsyncPartCompleted { checkpoint, handle }
    } else {
        TaskEvent::AsyncPartReused { checkpoint, handle }
    };
    let step = h.step(ev);
    (h, step)
}

#[test]
fn async_part_of_a_checkpoint_older_than_a_completed_one_is_still_acknowledged() {
    // The task cannot tell a savepoint (never subsumed: the coordinator
    // still waits for this ack) from a subsumed checkpoint (the coordinator
    // discards the late ack's state): it reports the part either way, its
    // own state and an earlier checkpoint's reported again alike.
    for owns in [true, false] {
        let (h, step) = part_after_a_newer_completion(Semantics::Fixed, owns);
        assert_eq!(
            step,
            applied(vec![E::Coordinator(ToCoordinator::Ack {
                checkpoint: cp(1),
                handle: StateHandle(9)
            })])
        );
        h.quiescent_without_leak();
    }
}

#[test]
fn legacy_subsumed_part_is_discarded_without_an_ack() {
    // Before: a part finishing after a newer completion was dropped as
    // subsumed (its own state deleted, a reused one left alone), with no
    // ack: a savepoint waited for it until it expired. The task alone
    // cannot see that (`check_task_discard` needs the coordinator; the
    // world checks it there).
    let legacy = Semantics::Legacy(LegacyBug::SubsumedPartDiscarded);
    for (owns, expected) in [(true, vec![E::Discard(StateHandle(9))]), (false, vec![])] {
        let (_, step) = part_after_a_newer_completion(legacy, owns);
        assert_eq!(step, applied(expected));
    }
}

#[test]
fn async_part_of_the_checkpoint_just_completed_is_acknowledged_not_discarded() {
    // Only a strictly newer completion subsumes a part. For the same id the
    // handle goes to the coordinator, which owns the decision (a late ack
    // for a checkpoint it no longer holds is discarded there).
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    h.step(mail(1));
    h.step(TaskEvent::NotifyComplete { checkpoint: cp(1) });
    assert_eq!(
        h.step(TaskEvent::AsyncPartCompleted {
            checkpoint: cp(1),
            handle: StateHandle(9)
        }),
        applied(vec![E::Coordinator(ToCoordinator::Ack {
            checkpoint: cp(1),
            handle: StateHandle(9)
        })])
    );
    h.quiescent_without_leak();
}

#[test]
fn notify_aborted_cancels_a_running_async_part() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    h.step(mail(1));
    assert_eq!(
        h.step(aborted(1)),
        applied(vec![
            E::AsyncPart(AsyncCommand::Cancel(cp(1))),
            E::Operators(OperatorNotice::Aborted(cp(1)))
        ])
    );
    assert_eq!(h.step(aborted(1)), ignored(IgnoreReason::AlreadyExecuted));
    assert_eq!(
        h.step(TaskEvent::AsyncPartCompleted {
            checkpoint: cp(1),
            handle: StateHandle(1)
        }),
        ignored(IgnoreReason::NoSuchAsyncPart)
    );
    h.quiescent_without_leak();
}

#[test]
fn writer_failure_makes_the_mail_decline() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    assert_eq!(
        h.step(TaskEvent::WriterFailed { checkpoint: cp(1) }),
        applied(vec![])
    );
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                abort_writer(1, true),
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::WriterFailed)
            ],
            SkipReason::Declined(DeclineReason::WriterFailed)
        )
    );
    h.quiescent_without_leak();
}

#[test]
fn fixed_mail_with_missing_result_declines() {
    // Not reachable through fixed transitions; the host could still lose a
    // result. Build the state by hand.
    let mut h = Harness::new(Semantics::Fixed);
    h.s.last_started = Some(cp(1));
    h.s.pending_mails.insert(cp(1));
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::WriteResultMissing)
            ],
            SkipReason::Declined(DeclineReason::WriteResultMissing)
        )
    );
}

#[test]
fn aborted_id_memory_is_bounded_with_a_floor() {
    let mut h = Harness {
        s: TaskState::new(TaskConfig {
            semantics: Semantics::Fixed,
            aborted_ids_max: 2,
            checkpoint_during_recovery: false,
            replays_channel_state: false,
        })
        .unwrap_or_else(|e| panic!("{e}")),
        m: TaskMonitor::new(),
        check_effects: true,
    };
    for n in [2, 3, 4] {
        h.step(aborted(n));
    }
    assert_eq!(h.s.aborted_ids(), vec![cp(3), cp(4)]);
    assert_eq!(h.s.aborted_floor(), Some(cp(2)));
    // Evicted and older ids still count as aborted.
    assert!(h.s.is_aborted(cp(1)) && h.s.is_aborted(cp(2)));
    assert!(!h.s.is_aborted(cp(5)));
    assert_eq!(h.step(aborted(2)), ignored(IgnoreReason::AlreadyAborted));
    assert_eq!(h.step(aborted(1)), ignored(IgnoreReason::AlreadyAborted));
    assert_eq!(h.step(barrier(1)), applied(vec![E::Mail(cp(1))]));
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::AbortedByCoordinator)
            ],
            SkipReason::Declined(DeclineReason::AbortedByCoordinator)
        )
    );
    h.quiescent_without_leak();
}

#[test]
fn close_is_idempotent_and_cleans_up() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    h.step(mail(1));
    h.step(barrier(2));
    assert_eq!(
        h.step(TaskEvent::Close),
        applied(vec![
            abort_writer(2, true),
            E::AsyncPart(AsyncCommand::Cancel(cp(1)))
        ])
    );
    assert_eq!(h.s.lifecycle(), Lifecycle::Closed);
    h.quiescent_without_leak();
    assert_eq!(h.step(TaskEvent::Close), ignored(IgnoreReason::Closed));
    assert_eq!(h.step(mail(2)), ignored(IgnoreReason::Closed));
    assert_eq!(h.step(barrier(3)), ignored(IgnoreReason::Closed));
    assert_eq!(
        h.step(TaskEvent::OperatorFailed),
        ignored(IgnoreReason::Closed)
    );
}

#[test]
fn genuine_failure_fails_the_task_and_tears_down() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    assert_eq!(
        h.step(TaskEvent::OperatorFailed),
        applied(vec![
            E::Fail(FailureReason::OperatorFailed),
            abort_writer(1, true)
        ])
    );
    assert_eq!(h.s.lifecycle(), Lifecycle::Failed);
    assert_eq!(h.step(mail(1)), ignored(IgnoreReason::TaskFailed));
    assert_eq!(h.step(TaskEvent::Close), applied(vec![]));
    assert_eq!(h.step(TaskEvent::Close), ignored(IgnoreReason::Closed));
    h.quiescent_without_leak();
}

/// The seed (FLINK-17869): start on netty, the abort processed on the task
/// thread, the checkpoint mail runs afterwards.
fn seed_race(semantics: Semantics) -> Vec<(Vec<TaskEffect>, Outcome)> {
    let mut h = Harness::new(semantics);
    h.check_effects = false;
    [barrier(1), aborted(1), mail(1)]
        .into_iter()
        .map(|ev| h.step(ev))
        .collect()
}

#[test]
fn seed_race_replay_fixed_declines_legacy_fails_the_task() {
    let fixed = seed_race(Semantics::Fixed);
    assert_eq!(
        fixed.last(),
        Some(&skipped(
            vec![
                abort_writer(1, true),
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::AbortedByCoordinator)
            ],
            SkipReason::Declined(DeclineReason::AbortedByCoordinator)
        ))
    );
    for (fx, _) in &fixed {
        assert_eq!(check_effects(fx), Ok(()));
    }

    let legacy = seed_race(Semantics::Legacy(LegacyBug::AbortRemovesResult));
    assert_eq!(
        legacy.get(1),
        Some(&applied(vec![
            abort_writer(1, true),
            E::Operators(OperatorNotice::Aborted(cp(1)))
        ]))
    );
    let last = legacy.last().cloned().unwrap_or_else(|| panic!("no steps"));
    assert_eq!(
        last,
        skipped(
            vec![E::Fail(FailureReason::WriteResultMissing)],
            SkipReason::TaskFailed(FailureReason::WriteResultMissing)
        )
    );
    assert!(check_effects(&last.0).is_err());
}

#[test]
fn legacy_cancel_forgets_abort_fails_the_task() {
    let mut h = Harness::new(Semantics::Legacy(LegacyBug::CancelForgetsAbort));
    h.check_effects = false;
    h.step(barrier(1));
    assert_eq!(
        h.step(cancel(1)),
        applied(vec![
            abort_writer(1, true),
            decline(1, DeclineReason::CancelledOnBarrier),
            E::Downstream(ChannelItem::CancelMarker(cp(1)))
        ])
    );
    assert_eq!(
        h.step(mail(1)),
        skipped(
            vec![E::Fail(FailureReason::WriteResultMissing)],
            SkipReason::TaskFailed(FailureReason::WriteResultMissing)
        )
    );
    // The same story is harmless in the fixed semantics and under the other bug.
    for sem in [
        Semantics::Fixed,
        Semantics::Legacy(LegacyBug::AbortRemovesResult),
    ] {
        let mut h = Harness::new(sem);
        h.step(barrier(1));
        h.step(cancel(1));
        assert_eq!(h.step(mail(1)), skipped(vec![], SkipReason::Stale));
        h.quiescent_without_leak();
    }
}

#[test]
fn events_effects_and_outcomes_round_trip_through_serde() {
    let ev = TaskEvent::AsyncPartCompleted {
        checkpoint: cp(3),
        handle: StateHandle(4),
    };
    let fx = vec![decline(1, DeclineReason::Subsumed), abort_writer(2, true)];
    let out = Outcome::Skipped(SkipReason::TaskFailed(FailureReason::WriteResultMissing));
    let json = serde_json::to_string(&(&ev, &fx, &out)).unwrap_or_else(|e| panic!("{e}"));
    let back: (TaskEvent, Vec<TaskEffect>, Outcome) =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, (ev, fx, out));
}

#[test]
fn state_hash_distinguishes_collection_boundaries() {
    use core::hash::{Hash, Hasher};
    fn h(s: &TaskState) -> u64 {
        let mut st = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut st);
        st.finish()
    }
    let mut a = task(Semantics::Fixed);
    let mut b = a.clone();
    a.pending_mails.insert(cp(1));
    b.async_parts.insert(cp(1));
    assert_ne!(a, b);
    assert_ne!(h(&a), h(&b));
}

/// The alphabet of the bounded exhaustive exploration below.
fn alphabet() -> Vec<TaskEvent> {
    let mut v = Vec::new();
    for n in 1..=3u64 {
        v.push(barrier(n));
        v.push(TaskEvent::TriggerCheckpoint { checkpoint: cp(n) });
        v.push(mail(n));
        v.push(cancel(n));
        v.push(aborted(n));
        v.push(TaskEvent::NotifyComplete { checkpoint: cp(n) });
        v.push(TaskEvent::WriterCompleted { checkpoint: cp(n) });
        v.push(TaskEvent::WriterFailed { checkpoint: cp(n) });
        v.push(TaskEvent::AsyncPartCompleted {
            checkpoint: cp(n),
            handle: StateHandle(n),
        });
        v.push(TaskEvent::AsyncPartFailed { checkpoint: cp(n) });
    }
    v.push(TaskEvent::OperatorFailed);
    v.push(TaskEvent::Close);
    v
}

/// Depth-first over every sequence of non-ignored events up to `depth`;
/// returns the first invariant violation, if any.
fn explore(
    s: &TaskState,
    m: &TaskMonitor,
    depth: usize,
    events: &[TaskEvent],
) -> Result<usize, String> {
    let mut visited = 1usize;
    if !s.has_outstanding_work() {
        check_quiescent(s).map_err(|v| v.to_string())?;
        if !m.leaked().is_empty() {
            return Err(format!("leaked {:?} in {s:?}", m.leaked()));
        }
    }
    if depth == 0 {
        return Ok(visited);
    }
    for ev in events {
        let t = reduce(s, Millis(0), ev.clone());
        if let Outcome::Ignored(_) | Outcome::Rejected(_) = t.step.outcome {
            continue;
        }
        let mut m2 = m.clone();
        check_state(&t.state).map_err(|v| format!("{v} after {ev:?}"))?;
        m2.observe(ev, &t.step.effects, &t.step.outcome)
            .map_err(|v| format!("{v} after {ev:?}"))?;
        visited = visited.saturating_add(explore(&t.state, &m2, depth - 1, events)?);
    }
    Ok(visited)
}

#[test]
fn bounded_exploration_fixed_holds_every_invariant_legacy_is_caught() {
    let events = alphabet();
    let visited = explore(&task(Semantics::Fixed), &TaskMonitor::new(), 6, &events);
    assert!(matches!(visited, Ok(n) if n > 1000), "{visited:?}");
    for bug in [LegacyBug::AbortRemovesResult, LegacyBug::CancelForgetsAbort] {
        let r = explore(
            &task(Semantics::Legacy(bug)),
            &TaskMonitor::new(),
            3,
            &events,
        );
        assert!(r.is_err(), "{bug:?} not caught");
    }
}

// ============================================================================
// End of input, and the bug zoo's task-side knobs
// ============================================================================

fn trigger(n: u64) -> TaskEvent {
    TaskEvent::TriggerCheckpoint { checkpoint: cp(n) }
}

/// Runs `events` on a legacy task without judging them, then `last`
/// through the shared checked step; returns its effects and the verdict.
fn legacy_step(
    bug: LegacyBug,
    events: &[TaskEvent],
    last: TaskEvent,
) -> (Vec<TaskEffect>, Result<(), crate::invariants::Violation>) {
    let mut s = task(Semantics::Legacy(bug));
    let mut m = TaskMonitor::new();
    for ev in events {
        let (t, verdict) = checked::task_step(&mut m, &s, Millis(0), ev, Rigor::Full);
        verdict.unwrap_or_else(|v| panic!("{v} before the race, at {ev:?}"));
        s = t.state;
    }
    let (t, verdict) = checked::task_step(&mut m, &s, Millis(0), &last, Rigor::Full);
    (t.step.effects, verdict)
}

fn caught(r: Result<(), crate::invariants::Violation>, name: &str) {
    assert_eq!(r.map_err(|v| v.invariant), Err(name));
}

#[test]
fn end_of_input_finishes_the_task_once() {
    let mut h = Harness::new(Semantics::Fixed);
    assert_eq!(h.step(TaskEvent::EndOfInput), applied(vec![]));
    assert_eq!(h.s.lifecycle(), Lifecycle::Finished);
    assert_eq!(
        h.step(TaskEvent::EndOfInput),
        ignored(IgnoreReason::AlreadyFinished)
    );
}

#[test]
fn a_trigger_after_the_end_of_input_is_declined_with_a_cancel_marker() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(TaskEvent::EndOfInput);
    assert_eq!(
        h.step(trigger(1)),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(1))),
                decline(1, DeclineReason::TaskClosing),
            ],
            SkipReason::Declined(DeclineReason::TaskClosing)
        )
    );
    // A barrier too, and the reason does not count as a failure.
    assert_eq!(
        h.step(barrier(2)),
        skipped(
            vec![
                E::Downstream(ChannelItem::CancelMarker(cp(2))),
                decline(2, DeclineReason::TaskClosing),
            ],
            SkipReason::Declined(DeclineReason::TaskClosing)
        )
    );
    assert!(!DeclineReason::TaskClosing.counts_as_failure());
    // The same trigger again is stale.
    assert_eq!(h.step(trigger(1)), ignored(IgnoreReason::StaleCheckpoint));
}

#[test]
fn a_checkpoint_started_before_the_end_of_input_still_runs() {
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    h.step(TaskEvent::EndOfInput);
    assert_eq!(
        h.step(mail(1)),
        applied(vec![
            E::Downstream(ChannelItem::Barrier(cp(1))),
            E::AsyncPart(AsyncCommand::Start(cp(1))),
        ])
    );
}

#[test]
fn legacy_trigger_after_finish_fails_the_task() {
    let (fx, verdict) = legacy_step(
        LegacyBug::TriggerAfterFinishFails,
        &[TaskEvent::EndOfInput],
        trigger(1),
    );
    assert_eq!(
        fx.first(),
        Some(&E::Fail(FailureReason::TriggerAfterFinish))
    );
    caught(verdict, crate::invariants::task::names::NO_SPURIOUS_FAILURE);
}

#[test]
fn legacy_obsolete_barrier_fails_the_task() {
    let (fx, verdict) = legacy_step(LegacyBug::ObsoleteBarrierFails, &[barrier(2)], barrier(1));
    assert!(fx.contains(&E::Fail(FailureReason::ObsoleteBarrier)));
    caught(verdict, crate::invariants::task::names::NO_SPURIOUS_FAILURE);
    // Fixed: the obsolete barrier is only stale.
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(2));
    assert_eq!(h.step(barrier(1)), ignored(IgnoreReason::StaleCheckpoint));
}

#[test]
fn legacy_stale_mail_executes_after_a_cancel_marker() {
    let (fx, verdict) = legacy_step(
        LegacyBug::StaleMailExecutes,
        &[barrier(1), cancel(1)],
        mail(1),
    );
    assert!(fx.contains(&decline(1, DeclineReason::WriteResultMissing)));
    caught(verdict, crate::invariants::task::names::ACK_XOR_DECLINE);
    // Fixed: the mail only cleans up.
    let mut h = Harness::new(Semantics::Fixed);
    h.step(barrier(1));
    h.step(cancel(1));
    assert_eq!(h.step(mail(1)), skipped(vec![], SkipReason::Stale));
}

#[test]
fn legacy_abort_of_a_netty_start_is_ignored_and_the_checkpoint_executes() {
    let mut s = task(Semantics::Legacy(LegacyBug::AbortIgnoresNettyStart));
    let t = reduce(&s, Millis(0), barrier(1));
    s = t.state;
    let t = reduce(&s, Millis(0), aborted(1));
    assert_eq!(
        t.step.outcome,
        Outcome::Ignored(IgnoreReason::NotStartedOnTaskThread)
    );
    let (fx, verdict) = legacy_step(
        LegacyBug::AbortIgnoresNettyStart,
        &[barrier(1), aborted(1)],
        mail(1),
    );
    assert!(fx.contains(&E::AsyncPart(AsyncCommand::Start(cp(1)))));
    caught(
        verdict,
        crate::invariants::task::names::ABORTED_NOT_EXECUTED,
    );
}

#[test]
fn legacy_skip_without_cancel_marker_tells_nobody_downstream() {
    let mut s = task(Semantics::Legacy(LegacyBug::SkipWithoutCancelMarker));
    s = reduce(&s, Millis(0), aborted(1)).state;
    let t = reduce(&s, Millis(0), trigger(1));
    assert_eq!(
        t.step.effects,
        vec![decline(1, DeclineReason::AbortedByCoordinator)]
    );
    let mut h = Harness::new(Semantics::Fixed);
    h.step(aborted(1));
    assert_eq!(
        h.step(trigger(1)).0,
        vec![
            E::Downstream(ChannelItem::CancelMarker(cp(1))),
            decline(1, DeclineReason::AbortedByCoordinator),
        ]
    );
}

#[test]
fn legacy_aborted_start_creates_a_result_that_leaks() {
    let (fx, verdict) = legacy_step(
        LegacyBug::AbortedStartLeaks,
        &[aborted(1), barrier(1)],
        mail(1),
    );
    // The skip does not remove the result the start created.
    assert!(!fx.contains(&abort_writer(1, true)));
    caught(verdict, crate::invariants::task::names::RESULT_NOT_VANISHED);
}

#[test]
fn legacy_start_over_an_aborted_result_throws() {
    let (fx, verdict) = legacy_step(
        LegacyBug::AbortedResultBlocksStart,
        &[barrier(1), aborted(1)],
        barrier(2),
    );
    assert_eq!(
        fx.first(),
        Some(&E::Fail(FailureReason::UnfinishedResultAtStart))
    );
    caught(verdict, crate::invariants::task::names::NO_SPURIOUS_FAILURE);
}

#[test]
fn legacy_newer_barrier_drops_the_older_result_silently() {
    let (fx, verdict) = legacy_step(
        LegacyBug::NewerBarrierDropsResult,
        &[barrier(1)],
        barrier(2),
    );
    assert!(!fx.contains(&abort_writer(1, false)));
    caught(verdict, crate::invariants::task::names::RESULT_NOT_VANISHED);
}

#[test]
fn legacy_notify_complete_out_of_order_commits_again() {
    let complete = |n| TaskEvent::NotifyComplete { checkpoint: cp(n) };
    let (fx, verdict) = legacy_step(
        LegacyBug::NotifyCompleteOutOfOrder,
        &[complete(2)],
        complete(1),
    );
    assert_eq!(fx, vec![E::Operators(OperatorNotice::Complete(cp(1)))]);
    caught(verdict, crate::invariants::task::names::COMPLETE_MONOTONIC);
}

#[test]
fn an_event_names_the_checkpoint_it_concerns() {
    let with = [
        TaskEvent::BarrierReceived {
            checkpoint: cp(1),
            via: Thread::Netty,
        },
        TaskEvent::TriggerCheckpoint { checkpoint: cp(2) },
        TaskEvent::CheckpointMail { checkpoint: cp(3) },
        TaskEvent::CancelMarker { checkpoint: cp(4) },
        TaskEvent::NotifyAborted { checkpoint: cp(5) },
        TaskEvent::NotifyComplete { checkpoint: cp(6) },
        TaskEvent::WriterCompleted { checkpoint: cp(7) },
        TaskEvent::WriterFailed { checkpoint: cp(8) },
        TaskEvent::AsyncPartCompleted {
            checkpoint: cp(9),
            handle: StateHandle(1),
        },
        TaskEvent::AsyncPartFailed { checkpoint: cp(10) },
    ];
    for (i, ev) in with.iter().enumerate() {
        assert_eq!(ev.checkpoint(), Some(cp(i as u64 + 1)), "{ev:?}");
    }
    for ev in [
        TaskEvent::OperatorFailed,
        TaskEvent::EndOfInput,
        TaskEvent::Close,
    ] {
        assert_eq!(ev.checkpoint(), None, "{ev:?}");
    }
}

#[test]
fn task_states_that_differ_only_in_a_write_results_status_hash_differently() {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let hash = |s: &TaskState| {
        let mut h = DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let mut writing = Harness::new(Semantics::Fixed);
    writing.step(TaskEvent::BarrierReceived {
        checkpoint: cp(1),
        via: Thread::Netty,
    });
    let mut written = Harness::new(Semantics::Fixed);
    written.step(TaskEvent::BarrierReceived {
        checkpoint: cp(1),
        via: Thread::Netty,
    });
    written.step(TaskEvent::WriterCompleted { checkpoint: cp(1) });
    // Same fields but the one result's status (the model checker's
    // fingerprints rest on this hash: equal hashes would merge the states).
    assert_ne!(writing.s, written.s);
    assert_eq!(writing.s.write_results().len(), 1);
    assert_eq!(written.s.write_results().len(), 1);
    assert_ne!(hash(&writing.s), hash(&written.s));
}

#[test]
fn task_states_that_differ_only_in_an_aborted_id_hash_differently() {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let hash = |s: &TaskState| {
        let mut h = DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    // One remembered abort each, of different checkpoints: the sets have the
    // same length, so only their elements tell the states apart (the model
    // checker keeps 64-bit fingerprints of this hash).
    let mut one = Harness::new(Semantics::Fixed);
    one.step(TaskEvent::NotifyAborted { checkpoint: cp(1) });
    let mut two = Harness::new(Semantics::Fixed);
    two.step(TaskEvent::NotifyAborted { checkpoint: cp(2) });
    assert_eq!(one.s.aborted_ids(), vec![cp(1)]);
    assert_eq!(two.s.aborted_ids(), vec![cp(2)]);
    assert_ne!(one.s, two.s);
    assert_ne!(hash(&one.s), hash(&two.s));
}
