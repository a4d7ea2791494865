//! Stop-with-savepoint (Flink's FLIP-34, Arroyo's two stop races).

use super::*;

fn stop(drain: bool) -> TriggerKind {
    TriggerKind::StopWithSavepoint {
        target: "/stop".into(),
        drain,
    }
}

#[test]
fn stop_with_savepoint_stops_scheduling_and_ends_the_job_once_stored() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    let asked = h.step(5, trigger(stop(true)));
    // The checkpoint waiting for acks ends, the periodic trigger stops.
    assert!(asked
        .effects
        .contains(&e_aborted(1, 0, AbortReason::SchedulerStopped)));
    assert!(asked.effects.contains(&cancel(Timer::Periodic)));
    assert_eq!(
        asked.outcome,
        applied(Applied::AllocatingId { request: rq(1) })
    );
    assert!(!h.s.is_periodic_scheduling());
    // Nothing else is triggered while it runs.
    assert_eq!(
        h.step(5, trigger(forced())).outcome,
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::Stopping
        })
    );
    let triggered = h.step(5, alloc(1, 2));
    assert!(triggered.effects.contains(&e_trig(
        0,
        0,
        2,
        5,
        CheckpointOptions::SynchronousSavepoint {
            target: "/stop".into(),
            drain: true
        }
    )));
    let done = h.complete(6, 2);
    assert_eq!(
        done.effects.last(),
        Some(&E::Job(JobCommand::Stop {
            savepoint: cp(2),
            drain: true
        }))
    );
    assert!(done.effects.contains(&e_done(0, 2, 5)));
    assert_eq!(
        h.s.stop_phase(),
        Some(StopPhase::Stopped { savepoint: cp(2) })
    );
    // The job stopped on it: still nothing is triggered.
    assert_eq!(
        h.step(7, trigger(savepoint())).outcome,
        applied(Applied::TriggerRejected {
            request: rq(3),
            reason: TriggerRejection::Stopping
        })
    );
}

#[test]
fn a_failed_stop_resumes_periodic_scheduling_as_it_was() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(5, trigger(stop(false)));
    let failed = h.step(5, alloc_err(0));
    assert!(failed.effects.contains(&sched(Timer::Periodic, 1_005)));
    assert_eq!(h.s.stop_phase(), None);
    assert!(h.s.is_periodic_scheduling());
    // A stop whose savepoint is declined ends too.
    h.step(6, trigger(stop(false)));
    h.step(6, alloc(1, 1));
    h.step(7, decline(0, 1));
    assert_eq!(h.s.stop_phase(), None);
    assert!(h.s.is_periodic_scheduling());
    // Without periodic scheduling before, none after.
    let mut h = H::new();
    h.step(5, trigger(stop(false)));
    h.step(5, alloc_err(0));
    assert!(!h.s.is_periodic_scheduling());
}

#[test]
fn legacy_stop_launches_second_checkpoint_is_caught_by_stop_is_last() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        semantics: Semantics::Legacy(LegacyBug::StopLaunchesSecondCheckpoint),
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.step(5, trigger(stop(false)));
    h.step(5, alloc(0, 1));
    // Periodic scheduling was not stopped: its next firing asks for more.
    let fired = h.step(1_000, fire(Timer::Periodic));
    assert_eq!(
        fired.outcome,
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(1)
        })))
    );
    let mut ledger = h.ledger.clone();
    let (_, verdict) =
        checked::coordinator_step(&mut ledger, &h.s, ms(1_000), &alloc(1, 2), Rigor::Full);
    let v = verdict.expect_err("a second checkpoint during the stop is caught");
    assert_eq!(v.invariant, names::STOP_IS_LAST, "{v}");
}

#[test]
fn legacy_stop_before_commit_is_caught_by_complete_only_when_stored() {
    let mut h = H::with(CoordinatorSettings {
        semantics: Semantics::Legacy(LegacyBug::StopBeforeCommit),
        ..settings()
    });
    h.step(5, trigger(stop(false)));
    h.step(5, alloc(0, 1));
    h.step(6, ack(0, 1, 100));
    let mut ledger = h.ledger.clone();
    let last = ack(1, 1, 101);
    let (t, verdict) = checked::coordinator_step(&mut ledger, &h.s, ms(6), &last, Rigor::Full);
    assert!(t.step.effects.contains(&E::Job(JobCommand::Stop {
        savepoint: cp(1),
        drain: false
    })));
    let v = verdict.expect_err("completing before the store is caught");
    assert_eq!(v.invariant, names::COMPLETE_AFTER_STORE, "{v}");
}
