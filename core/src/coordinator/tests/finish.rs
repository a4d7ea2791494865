//! Finished tasks in the plan (FLIP-147): `TaskFinished`, the plan without
//! finished tasks, the final checkpoint, FLINK-33186, and the setting
//! `checkpoints_after_tasks_finish`.

use super::*;

fn finished(task: u32, attempt: u32) -> Ev {
    Ev::TaskFinished {
        task: t(task),
        attempt: AttemptNo(attempt),
    }
}

fn e_finish(final_checkpoint: Option<u64>) -> E {
    E::Job(JobCommand::Finish {
        final_checkpoint: final_checkpoint.map(cp),
    })
}

/// FLINK-33186 (accepted upstream as a known limitation): a task that
/// finishes between the plan and the trigger fails Flink's checkpoint as a
/// counted task failure, so a job whose sources finish fails once its
/// tolerable failures are used up. ckpt's decision: the checkpoint can no
/// longer get the task's state at the barrier and is aborted,
/// `AbortReason::TaskFinished`, uncounted: with no tolerable failure the
/// job does not fail, and the next plan leaves the task out.
#[test]
fn a_task_that_finishes_before_taking_a_checkpoint_aborts_it_uncounted() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        ..settings()
    });
    let r = h.user_cp(0, 1);
    let reason = AbortReason::TaskFinished;
    // The finished attempt is told nothing more: only task 1 hears of it.
    h.expect(
        1,
        finished(0, 0),
        vec![
            cancel(Timer::Timeout(cp(1))),
            e_aborted(1, r, reason),
            h.nab(1, 1, None),
        ],
        applied(Applied::TaskUpdated { aborted: 1 }),
    );
    assert_eq!(h.s.counted_failures(), 0);
    assert!(!h.s.job_failed());
    assert_eq!(
        h.s.task_status(t(0)),
        Some(TaskStatus {
            attempt: AttemptNo(0),
            running: false,
            finished: true,
        })
    );
}

#[test]
fn legacy_finish_fails_checkpoint_is_caught_by_a_finish_is_not_a_failure() {
    let mut h = H::with(CoordinatorSettings {
        tolerable_failures: 0,
        semantics: Semantics::Legacy(LegacyBug::FinishFailsCheckpoint),
        ..settings()
    });
    h.user_cp(0, 1);
    let mut ledger = h.ledger.clone();
    let (t, verdict) =
        checked::coordinator_step(&mut ledger, &h.s, ms(1), &finished(0, 0), Rigor::Full);
    assert!(t.state.job_failed(), "Flink's behaviour: the job fails");
    let v = verdict.expect_err("a finish that fails the job is caught");
    assert_eq!(v.invariant, names::FINISH_NOT_A_FAILURE, "{v}");
}

#[test]
fn a_checkpoint_the_task_took_before_it_finished_still_completes() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(0, ack(0, 1, 100));
    assert_eq!(
        h.step(1, finished(0, 0)).outcome,
        applied(Applied::TaskUpdated { aborted: 0 })
    );
    h.step(1, ack(1, 1, 101));
    h.step(1, fin(1, true));
    let step = h.step(1, store(1, true));
    assert_eq!(
        step.outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
    // Notified: task 1 only (the finished attempt takes no RPC).
    assert_eq!(
        step.effects
            .iter()
            .filter(|e| matches!(e, E::Rpc { .. }))
            .collect::<Vec<_>>(),
        vec![&e_done(1, 1, 0)]
    );
}

#[test]
fn the_plan_leaves_out_a_finished_source_and_triggers_the_task_reading_from_it() {
    let mut h = H::new();
    h.step(0, finished(0, 0));
    let r = h.s.cold.next_request;
    h.step(0, trigger(user()));
    h.expect(
        0,
        alloc(r, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_000),
            e_trig(1, 0, 1, 0, CheckpointOptions::FullCheckpoint),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(r),
            checkpoint: cp(1),
        }),
    );
    let p = h.s.pending_checkpoint(cp(1)).expect("pending");
    assert_eq!(
        p.acks().collect::<Vec<_>>(),
        [AckSlot::Acked(None), AckSlot::Waiting]
    );
    assert_eq!(p.remaining(), 1);
    h.step(1, ack(1, 1, 101));
    h.step(1, fin(1, true));
    assert_eq!(
        h.step(1, store(1, true)).outcome,
        applied(Applied::Completed { checkpoint: cp(1) })
    );
}

#[test]
fn a_checkpoint_after_every_task_finished_is_final_and_the_job_finishes_on_it() {
    let mut h = H::new();
    h.step(0, finished(0, 0));
    h.step(0, finished(1, 0));
    assert_eq!(
        h.s.finish_phase(),
        None,
        "on: the job waits for its final checkpoint"
    );
    let r = h.s.cold.next_request;
    h.step(0, trigger(user()));
    // Nothing to wait for: the final checkpoint goes straight to finalize.
    let step = h.step(0, alloc(r, 1));
    assert!(!step.effects.iter().any(|e| matches!(e, E::Rpc { .. })));
    assert_eq!(
        h.s.finish_phase(),
        Some(FinishPhase::Final { checkpoint: cp(1) })
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::Finalizing)
    );
    // Nothing else is triggered meanwhile.
    assert_eq!(
        h.step(0, trigger(forced())).outcome,
        applied(Applied::TriggerRejected {
            request: rq(r + 1),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        })
    );
    h.step(0, fin(1, true));
    let step = h.step(0, store(1, true));
    assert!(
        step.effects.contains(&e_finish(Some(1))),
        "{:?}",
        step.effects
    );
    assert_eq!(
        h.s.finish_phase(),
        Some(FinishPhase::Finished {
            final_checkpoint: Some(cp(1))
        })
    );
}

#[test]
fn a_failed_final_checkpoint_lets_the_next_trigger_plan_another() {
    let mut h = H::new();
    h.step(0, finished(0, 0));
    h.step(0, finished(1, 0));
    h.user_cp(0, 1);
    h.step(0, fin(1, true));
    let step = h.step(0, store(1, false));
    assert!(!step.effects.contains(&e_finish(Some(1))));
    assert_eq!(h.s.finish_phase(), None);
    h.user_cp(1, 2);
    assert_eq!(
        h.s.finish_phase(),
        Some(FinishPhase::Final { checkpoint: cp(2) })
    );
}

/// Found by the coordinator stories once they drew `TaskFinished`: a
/// finished task that runs again (a new attempt) while the final
/// checkpoint is in flight used to let that checkpoint finish the job
/// with a task running (`job-finishes-on-its-final-checkpoint`). The
/// checkpoint now completes as an ordinary one, and the final checkpoint
/// is the next one planned once every task finished again.
#[test]
fn a_finished_task_that_runs_again_makes_the_final_checkpoint_an_ordinary_one() {
    let mut h = H::new();
    h.step(0, finished(0, 0));
    h.step(0, finished(1, 0));
    h.user_cp(0, 1);
    assert_eq!(
        h.s.finish_phase(),
        Some(FinishPhase::Final { checkpoint: cp(1) })
    );
    h.step(
        0,
        Ev::TaskRunning {
            task: t(0),
            attempt: AttemptNo(1),
        },
    );
    assert_eq!(h.s.finish_phase(), None);
    h.step(0, fin(1, true));
    let step = h.step(0, store(1, true));
    assert!(
        step.effects.iter().any(
            |e| matches!(e, E::Report(Report::Completed { checkpoint, .. }) if *checkpoint == cp(1))
        ),
        "{:?}",
        step.effects
    );
    assert!(
        !step.effects.contains(&e_finish(Some(1))),
        "{:?}",
        step.effects
    );
    assert_eq!(h.s.finish_phase(), None);
    // The new attempt finishes: the next checkpoint is the final one.
    h.step(0, finished(0, 1));
    h.user_cp(0, 2);
    h.step(0, fin(2, true));
    let step = h.step(0, store(2, true));
    assert!(
        step.effects.contains(&e_finish(Some(2))),
        "{:?}",
        step.effects
    );
}

#[test]
fn without_checkpoints_after_finish_a_finished_task_blocks_triggers_and_the_last_finishes_the_job()
{
    let mut h = H::with(CoordinatorSettings {
        checkpoints_after_tasks_finish: false,
        ..settings()
    });
    h.step(0, finished(0, 0));
    assert_eq!(
        h.step(0, trigger(user())).outcome,
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        })
    );
    h.expect(
        0,
        finished(1, 0),
        vec![e_finish(None)],
        applied(Applied::TaskUpdated { aborted: 0 }),
    );
}

#[test]
fn stale_duplicate_unknown_and_late_finish_reports_are_typed() {
    let mut h = H::new();
    assert_eq!(
        h.step(0, finished(1, 1)).outcome,
        ignored(Ignored::StaleAttempt)
    );
    h.step(0, finished(0, 0));
    assert_eq!(
        h.step(0, finished(0, 0)).outcome,
        ignored(Ignored::TaskAlreadyFinished)
    );
    assert_eq!(
        h.step(0, finished(9, 0)).outcome,
        Outcome::Rejected(CoordinatorError::UnknownTask(t(9)))
    );
    // A failed attempt never finishes; a finished one never fails.
    h.step(0, failed(1, 0));
    assert_eq!(
        h.step(0, finished(1, 0)).outcome,
        ignored(Ignored::StaleAttempt)
    );
    assert_eq!(
        h.step(0, failed(0, 0)).outcome,
        ignored(Ignored::StaleAttempt)
    );
    // A new attempt of a finished task runs again.
    h.step(0, running(0, 1));
    assert!(h
        .s
        .task_status(t(0))
        .is_some_and(|s| s.running && !s.finished));
    h.step(
        0,
        Ev::Shutdown {
            status: JobStatus::Canceled,
        },
    );
    assert_eq!(
        h.step(0, finished(0, 1)).outcome,
        ignored(Ignored::Shutdown)
    );
}

#[test]
fn a_job_that_finishes_without_its_final_checkpoint_is_caught() {
    let mut h = H::new();
    h.step(0, finished(0, 0));
    h.step(0, finished(1, 0));
    let before = h.s.clone();
    let ev = trigger(user());
    let mut step = h.step(0, ev.clone());
    step.effects.push(e_finish(None));
    let v = check_step(&before, &ev, &step, &h.s).expect_err("a finish with no final checkpoint");
    assert_eq!(v.invariant, names::FINISH_AFTER_FINAL, "{v}");
}

#[test]
fn a_restore_deferred_behind_the_final_checkpoint_comes_with_the_finish_after_it() {
    // A failover while the final checkpoint stores: the restore waits for
    // the store's answer, whose step carries `Finish` first and then the
    // `Restore` of that same checkpoint (the host's recipe: the finish
    // wins, as a stop does).
    let mut h = H::new();
    h.step(0, finished(0, 0));
    h.step(0, finished(1, 0));
    let r = h.s.cold.next_request;
    h.step(0, trigger(user()));
    h.step(0, alloc(r, 1));
    h.step(0, fin(1, true));
    let deferred = h.step(1, restore_latest());
    assert_eq!(
        deferred.outcome,
        applied(Applied::RestoreDeferred { awaiting: cp(1) })
    );
    // Restarting the tasks is still the recipe here; after the finish it
    // is a violation (`no-restart-after-finish`), which a host that acted
    // on the `Restore` below would commit.
    let restart = |h: &H| crate::invariants::coordinator::check_restart(&h.s);
    assert_eq!(restart(&h), Ok(()));
    let step = h.step(2, store(1, true));
    assert_eq!(
        restart(&h).map_err(|v| v.invariant),
        Err(names::NO_RESTART_AFTER_FINISH)
    );
    let jobs: Vec<&JobCommand> = step
        .effects
        .iter()
        .filter_map(|e| if let E::Job(j) = e { Some(j) } else { None })
        .collect();
    assert!(
        matches!(
            jobs.as_slice(),
            [
                JobCommand::Finish {
                    final_checkpoint: Some(c),
                    ..
                },
                JobCommand::Restore {
                    checkpoint: Some(r),
                    ..
                },
            ] if *c == cp(1) && *r == cp(1)
        ),
        "{jobs:?}"
    );
}
