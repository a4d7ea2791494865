//! Unit tests (openraft-engine style): feed one event, assert the exact
//! effects and the exact outcome. Every step runs through [`H::step`], which
//! checks that the pure `reduce` and the in-place `apply` agree and that every
//! coordinator invariant (state, step, handle ledger) holds.
//!
//! Defaults (see [`settings`]): job 7, task 0 triggered, tasks 0 and 1
//! acknowledge and commit, interval 1 s, timeout 10 s, no pause, one
//! concurrent checkpoint, tolerable failures 5 (so `FailJob` only shows up in
//! the tests about it), one retained checkpoint, queue bound 16. Handles are
//! `checkpoint * 100 + task`.

use super::*;
use crate::invariants::checked::{self, Rigor};
use crate::invariants::coordinator::{check_state, check_step, names, HandleLedger};
use crate::invariants::Violation;
use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, Generation, IoFailure, JobId, LegacyBug, Millis,
    Semantics, StateHandle, TaskId,
};

use crate::route::TaskMessage;
use CoordinatorEffect as E;

/// The generation of a coordinator that recovered nothing.
const G0: Generation = Generation(0);
use CoordinatorEvent as Ev;

const JOB: JobId = JobId(7);

fn t(n: u32) -> TaskId {
    TaskId(n)
}
fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}
fn ms(n: u64) -> Millis {
    Millis(n)
}
fn rq(n: u64) -> RequestId {
    RequestId(n)
}
fn hd(n: u64) -> StateHandle {
    StateHandle(n)
}
fn io() -> IoFailure {
    IoFailure("boom".into())
}

fn settings() -> CoordinatorSettings {
    CoordinatorSettings {
        tolerable_failures: 5,
        ..CoordinatorSettings::with_tasks(JOB, 2)
    }
}

// ----- events -----------------------------------------------------------------

fn user() -> TriggerKind {
    TriggerKind::Checkpoint { forced: false }
}
fn forced() -> TriggerKind {
    TriggerKind::Checkpoint { forced: true }
}
fn savepoint() -> TriggerKind {
    TriggerKind::Savepoint {
        target: "/sp".into(),
    }
}
fn trigger(kind: TriggerKind) -> Ev {
    Ev::Trigger { kind }
}
fn fire(timer: Timer) -> Ev {
    Ev::TimerFired { timer }
}
fn alloc(r: u64, id: u64) -> Ev {
    Ev::CheckpointIdAllocated {
        request: rq(r),
        result: Ok(cp(id)),
    }
}
fn alloc_err(r: u64) -> Ev {
    Ev::CheckpointIdAllocated {
        request: rq(r),
        result: Err(io()),
    }
}
fn hooks(id: u64, ok: bool) -> Ev {
    Ev::MasterHooksDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
fn ack_at(task: u32, attempt: u32, id: u64, handle: Option<u64>) -> Ev {
    Ev::Acknowledge {
        job: JOB,
        task: t(task),
        attempt: AttemptNo(attempt),
        checkpoint: cp(id),
        state: handle.map(hd),
    }
}
fn ack(task: u32, id: u64, handle: u64) -> Ev {
    ack_at(task, 0, id, Some(handle))
}
fn decline_at(task: u32, attempt: u32, id: u64, reason: DeclineReason) -> Ev {
    Ev::Decline {
        job: JOB,
        task: t(task),
        attempt: AttemptNo(attempt),
        checkpoint: cp(id),
        reason,
    }
}
fn decline(task: u32, id: u64) -> Ev {
    decline_at(task, 0, id, DeclineReason::SnapshotFailed)
}
fn fin(id: u64, ok: bool) -> Ev {
    Ev::FinalizeDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
fn store(id: u64, ok: bool) -> Ev {
    Ev::StoreDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
fn failed(task: u32, attempt: u32) -> Ev {
    Ev::TaskFailed {
        task: t(task),
        attempt: AttemptNo(attempt),
    }
}
fn running(task: u32, attempt: u32) -> Ev {
    Ev::TaskRunning {
        task: t(task),
        attempt: AttemptNo(attempt),
    }
}

// ----- effects ----------------------------------------------------------------

fn sched(timer: Timer, at: u64) -> E {
    E::Timer {
        timer,
        at: Some(ms(at)),
    }
}
fn cancel(timer: Timer) -> E {
    E::Timer { timer, at: None }
}
fn e_alloc(r: u64) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::AllocateId { request: rq(r) },
    }
}
fn e_trig(task: u32, attempt: u32, id: u64, ts: u64, options: CheckpointOptions) -> E {
    E::Rpc {
        task: t(task),
        attempt: AttemptNo(attempt),
        generation: G0,
        message: TaskMessage::Trigger {
            checkpoint: cp(id),
            timestamp: ms(ts),
            options,
        },
    }
}
fn e_full(id: u64, ts: u64) -> E {
    e_trig(0, 0, id, ts, CheckpointOptions::FullCheckpoint)
}
fn e_finalize_kind(id: u64, kind: TriggerKind, ts: u64, externalized: bool, handles: &[u64]) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::Finalize {
            checkpoint: cp(id),
            kind,
            timestamp: ms(ts),
            externalized,
            handles: handles.iter().copied().map(hd).collect(),
        },
    }
}
fn e_store(id: u64) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::Store { checkpoint: cp(id) },
    }
}
fn e_discard(id: u64, handle: u64) -> E {
    E::Discard {
        generation: G0,
        checkpoint: cp(id),
        handle: hd(handle),
    }
}
fn e_done(task: u32, id: u64, ts: u64) -> E {
    E::Rpc {
        task: t(task),
        attempt: AttemptNo(0),
        generation: G0,
        message: TaskMessage::NotifyComplete {
            checkpoint: cp(id),
            timestamp: ms(ts),
        },
    }
}
fn e_nab(task: u32, id: u64, latest: Option<u64>) -> E {
    E::Rpc {
        task: t(task),
        attempt: AttemptNo(0),
        generation: G0,
        message: TaskMessage::NotifyAborted {
            checkpoint: cp(id),
            latest_completed: latest.map(cp),
        },
    }
}
fn e_completed(id: u64, r: u64, savepoint: bool) -> E {
    E::Report(Report::Completed {
        checkpoint: cp(id),
        request: rq(r),
        savepoint,
    })
}
fn e_aborted(id: u64, r: u64, reason: AbortReason) -> E {
    E::Report(Report::Aborted {
        checkpoint: cp(id),
        request: rq(r),
        reason,
    })
}
fn e_failed(r: u64, reason: AbortReason) -> E {
    E::Report(Report::RequestFailed {
        request: rq(r),
        reason,
    })
}
/// `CheckpointAborted` followed by the notify-aborted to tasks 0 and 1.
fn aborted_notified(id: u64, r: u64, reason: AbortReason, latest: Option<u64>) -> Vec<E> {
    vec![
        e_aborted(id, r, reason),
        e_nab(0, id, latest),
        e_nab(1, id, latest),
    ]
}

fn applied(a: Applied) -> Outcome {
    Outcome::Applied(a)
}
fn ignored(i: Ignored) -> Outcome {
    Outcome::Ignored(i)
}

// ----- harness ----------------------------------------------------------------

/// The coordinator under test plus the handle ledger.
struct H {
    s: CoordinatorState,
    ledger: HandleLedger,
}

impl H {
    fn new() -> H {
        H::with(settings())
    }

    /// The finalize of pending checkpoint `id`, with the kind and trigger
    /// time it was created with (the tests of those fields spell them out).
    fn e_finalize(&self, id: u64, externalized: bool, handles: &[u64]) -> E {
        let p = self
            .s
            .pending_checkpoint(cp(id))
            .expect("finalized checkpoints are pending");
        e_finalize_kind(id, p.kind().clone(), p.timestamp().0, externalized, handles)
    }

    fn with(settings: CoordinatorSettings) -> H {
        H {
            s: CoordinatorState::from_settings(settings).expect("valid settings"),
            ledger: HandleLedger::new(),
        }
    }

    /// Runs one event through the shared checked step (determinism, pure
    /// equals in place, every invariant) and keeps the new state.
    fn step(&mut self, now: u64, ev: Ev) -> Step {
        let (t, verdict) =
            checked::coordinator_step(&mut self.ledger, &self.s, ms(now), &ev, Rigor::Full);
        if let Err(v) = verdict {
            panic!("{v}\n event: {ev:?}\n step: {:?}", t.step);
        }
        self.s = t.state;
        t.step
    }

    /// One event; asserts the exact effects and outcome.
    fn expect(&mut self, now: u64, ev: Ev, effects: Vec<E>, outcome: Outcome) {
        let step = self.step(now, ev);
        assert_eq!(step.effects, effects, "effects");
        assert_eq!(step.outcome, outcome, "outcome");
        assert_eq!(step.clock, Clock::Monotonic, "clock");
    }

    /// Triggers a checkpoint of `kind` at `now` and allocates `id` for it;
    /// returns the request id.
    fn pending(&mut self, now: u64, kind: TriggerKind, id: u64) -> u64 {
        let r = self.s.next_request;
        let step = self.step(now, trigger(kind));
        assert_eq!(
            step.outcome,
            applied(Applied::AllocatingId { request: rq(r) })
        );
        let step = self.step(now, alloc(r, id));
        assert_eq!(
            step.outcome,
            applied(Applied::CheckpointTriggered {
                request: rq(r),
                checkpoint: cp(id),
            })
        );
        r
    }

    fn user_cp(&mut self, now: u64, id: u64) -> u64 {
        self.pending(now, user(), id)
    }

    /// Every task to wait for acks `id` (handle `id * 100 + task`).
    fn ack_all(&mut self, now: u64, id: u64) {
        let wait: Vec<TaskId> = self.s.config().tasks_to_wait().to_vec();
        for task in wait {
            self.step(now, ack(task.0, id, id * 100 + u64::from(task.0)));
        }
    }

    /// Acks, finalizes and stores `id`.
    fn complete(&mut self, now: u64, id: u64) -> Step {
        self.ack_all(now, id);
        self.step(now, fin(id, true));
        let step = self.step(now, store(id, true));
        assert_eq!(
            step.outcome,
            applied(Applied::Completed { checkpoint: cp(id) })
        );
        step
    }

    fn queued_ids(&self) -> Vec<RequestId> {
        self.s.queued().map(Request::id).collect()
    }
}

// ============================================================================
// Configuration
// ============================================================================

fn config_err(f: impl FnOnce(&mut CoordinatorSettings)) -> ConfigError {
    let mut s = settings();
    f(&mut s);
    CoordinatorConfig::new(s).expect_err("config must be refused")
}

fn config_ok(f: impl FnOnce(&mut CoordinatorSettings)) -> CoordinatorConfig {
    let mut s = settings();
    f(&mut s);
    CoordinatorConfig::new(s).expect("config must be accepted")
}

#[test]
fn interval_must_be_positive() {
    assert_eq!(
        config_err(|s| s.interval_ms = 0),
        ConfigError::IntervalNotPositive(0)
    );
    assert_eq!(
        config_err(|s| s.interval_ms = -5),
        ConfigError::IntervalNotPositive(-5)
    );
    assert_eq!(config_ok(|s| s.interval_ms = 1).interval_ms(), 1);
}

#[test]
fn timeout_must_be_at_least_one_ms() {
    assert_eq!(
        config_err(|s| s.timeout_ms = 0),
        ConfigError::TimeoutNotPositive(0)
    );
    assert_eq!(config_ok(|s| s.timeout_ms = 1).timeout_ms(), 1);
}

#[test]
fn min_pause_must_not_be_negative() {
    assert_eq!(
        config_err(|s| s.min_pause_ms = -1),
        ConfigError::NegativeMinPause(-1)
    );
    assert_eq!(config_ok(|s| s.min_pause_ms = 0).min_pause_ms(), 0);
}

#[test]
fn min_pause_is_capped_at_one_year() {
    let c = config_ok(|s| s.min_pause_ms = i64::MAX);
    assert_eq!(c.min_pause_ms(), MIN_PAUSE_CAP_MS);
    assert_eq!(MIN_PAUSE_CAP_MS, 365 * 24 * 60 * 60 * 1_000);
}

#[test]
fn max_concurrent_must_be_at_least_one() {
    assert_eq!(
        config_err(|s| s.max_concurrent = 0),
        ConfigError::MaxConcurrentNotPositive(0)
    );
}

#[test]
fn interval_is_raised_to_min_pause() {
    let c = config_ok(|s| {
        s.interval_ms = 100;
        s.min_pause_ms = 700;
    });
    assert_eq!(c.interval_ms(), 700);
    // ... and to the capped pause, never above it.
    let c = config_ok(|s| {
        s.interval_ms = 100;
        s.min_pause_ms = i64::MAX;
    });
    assert_eq!(c.interval_ms(), MIN_PAUSE_CAP_MS);
}

#[test]
fn externalized_checkpoints_need_a_directory() {
    assert_eq!(
        config_err(|s| s.externalized = true),
        ConfigError::ExternalizedWithoutDirectory
    );
    let c = config_ok(|s| {
        s.externalized = true;
        s.checkpoint_dir = Some("/ext".into());
    });
    assert!(c.externalized());
    assert!(!config_ok(|s| s.externalized = false).externalized());
}

#[test]
fn tolerable_failures_must_not_be_negative() {
    assert_eq!(
        config_err(|s| s.tolerable_failures = -1),
        ConfigError::NegativeTolerableFailures(-1)
    );
    assert_eq!(
        config_ok(|s| s.tolerable_failures = 0).tolerable_failures(),
        0
    );
}

#[test]
fn retained_checkpoints_must_be_at_least_one() {
    assert_eq!(
        config_err(|s| s.retained_max = 0),
        ConfigError::RetainedNotPositive(0)
    );
}

#[test]
fn queue_bound_must_be_positive_and_is_capped() {
    assert_eq!(
        config_err(|s| s.queue_max = 0),
        ConfigError::QueueNotPositive(0)
    );
    assert_eq!(
        config_ok(|s| s.queue_max = i64::MAX).queue_max(),
        QUEUE_CAP as usize
    );
}

#[test]
fn task_lists_must_be_non_empty_unique_and_bounded() {
    assert_eq!(
        config_err(|s| s.tasks_to_trigger.clear()),
        ConfigError::NoTasks("tasks to trigger")
    );
    assert_eq!(
        config_err(|s| s.tasks_to_wait = vec![t(1), t(1)]),
        ConfigError::DuplicateTask {
            task: t(1),
            list: "tasks to wait for"
        }
    );
    assert_eq!(
        config_err(|s| s.tasks_to_commit = vec![t(TASK_ID_MAX)]),
        ConfigError::TaskIdTooLarge(t(TASK_ID_MAX))
    );
}

#[test]
fn config_is_validated_in_the_seeds_order() {
    // Everything is wrong: the interval is reported first, then the timeout...
    let all_wrong = |s: &mut CoordinatorSettings| {
        s.interval_ms = 0;
        s.timeout_ms = 0;
        s.min_pause_ms = -1;
        s.max_concurrent = 0;
        s.externalized = true;
    };
    assert_eq!(config_err(all_wrong), ConfigError::IntervalNotPositive(0));
    assert_eq!(
        config_err(|s| {
            all_wrong(s);
            s.interval_ms = 1;
        }),
        ConfigError::TimeoutNotPositive(0)
    );
    assert_eq!(
        config_err(|s| {
            all_wrong(s);
            s.interval_ms = 1;
            s.timeout_ms = 1;
            s.min_pause_ms = 0;
        }),
        ConfigError::MaxConcurrentNotPositive(0)
    );
}

// ============================================================================
// Periodic scheduling
// ============================================================================

#[test]
fn start_scheduler_arms_periodic_timer_one_interval_ahead() {
    let mut h = H::new();
    h.expect(
        5,
        Ev::StartScheduler,
        vec![sched(Timer::Periodic, 1_005)],
        applied(Applied::SchedulerStarted),
    );
    assert!(h.s.is_periodic_scheduling());
}

#[test]
fn start_scheduler_stops_first_aborting_pending_checkpoints() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(aborted_notified(1, r, AbortReason::SchedulerStopped, None));
    fx.push(sched(Timer::Periodic, 1_010));
    h.expect(
        10,
        Ev::StartScheduler,
        fx,
        applied(Applied::SchedulerStarted),
    );
    assert_eq!(h.s.pending_count(), 0);
}

#[test]
fn stop_scheduler_aborts_all_pending_and_clears_queued_flag() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    let r0 = h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // queued: too many concurrent
    assert!(h.s.is_trigger_request_queued());
    let mut fx = vec![
        e_failed(1, AbortReason::SchedulerStopped),
        cancel(Timer::Timeout(cp(1))),
    ];
    fx.extend(aborted_notified(1, r0, AbortReason::SchedulerStopped, None));
    h.expect(
        1_100,
        Ev::StopScheduler,
        fx,
        applied(Applied::SchedulerStopped { aborted: 1 }),
    );
    assert!(!h.s.is_trigger_request_queued());
    assert!(!h.s.is_periodic_scheduling());
    assert_eq!(h.s.pending_count(), 0);
    assert_eq!(h.s.timers().count(), 0);
}

#[test]
fn stop_scheduler_fails_the_in_flight_request_and_its_late_id_is_ignored() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        1,
        Ev::StopScheduler,
        vec![e_failed(0, AbortReason::SchedulerStopped)],
        applied(Applied::SchedulerStopped { aborted: 0 }),
    );
    h.expect(2, alloc(0, 1), vec![], ignored(Ignored::UnknownRequest));
}

#[test]
fn stop_scheduler_resets_consecutive_trigger_failures() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(0, alloc_err(0));
    assert_eq!(h.s.consecutive_trigger_failures(), 1);
    h.step(1, Ev::StopScheduler);
    assert_eq!(h.s.consecutive_trigger_failures(), 0);
}

#[test]
fn periodic_timer_fires_allocates_id_and_rearms_at_fixed_rate() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), e_alloc(0)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(0),
        }))),
    );
}

#[test]
fn periodic_timer_fired_late_rearms_one_interval_after_now() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        2_500,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 3_500), e_alloc(0)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(0),
        }))),
    );
}

// ============================================================================
// Trigger pre-checks (the seed's order)
// ============================================================================

#[test]
fn periodic_trigger_while_scheduler_off_is_rejected() {
    let mut h = H::new();
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
}

#[test]
fn periodic_scheduler_check_precedes_already_queued() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(0, trigger(user())); // queued
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
}

#[test]
fn trigger_while_request_already_queued_is_rejected() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
    // Already-queued is checked before too-many-concurrent: not queued twice.
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::AlreadyQueued,
        }),
    );
    assert_eq!(h.queued_ids(), vec![rq(1)]);
}

#[test]
fn trigger_while_non_forced_request_allocates_its_id_is_already_queued() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        0,
        trigger(TriggerKind::Periodic),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(1),
            reason: TriggerRejection::PeriodicSchedulerShutdown,
        }),
    );
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::AlreadyQueued,
        }),
    );
}

#[test]
fn too_many_concurrent_queues_request_and_cancels_periodic_timer() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), cancel(Timer::Periodic)],
        applied(Applied::PeriodicFired(Box::new(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }))),
    );
    assert!(h.s.is_trigger_request_queued());
    assert_eq!(h.s.timer_deadline(Timer::Periodic), None);
}

#[test]
fn too_many_concurrent_is_checked_before_min_pause() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.pending(100, forced(), 2); // forced: past the pause, fills the slot
    h.expect(
        200,
        trigger(user()),
        vec![],
        applied(Applied::Queued {
            request: rq(2),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
}

#[test]
fn min_pause_not_passed_reschedules_periodic_timer() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(100, 1);
    h.complete(600, 1);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), sched(Timer::Periodic, 1_100)],
        applied(Applied::PeriodicFired(Box::new(Applied::TriggerRejected {
            request: rq(1),
            reason: TriggerRejection::MinimumTimeBetweenCheckpoints,
        }))),
    );
    assert_eq!(h.s.timer_deadline(Timer::Periodic), Some(ms(1_100)));
    // At the moved deadline the pause has passed.
    h.expect(
        1_100,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_100), e_alloc(2)],
        applied(Applied::PeriodicFired(Box::new(Applied::AllocatingId {
            request: rq(2),
        }))),
    );
}

#[test]
fn min_pause_holds_back_periodic_checkpoints_only() {
    // Flink (1.11, 1.20, 2.3) applies the minimum pause to periodic
    // requests only; a user's checkpoint right after a completion starts.
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.expect(
        599,
        trigger(user()),
        vec![e_alloc(1)],
        applied(Applied::AllocatingId { request: rq(1) }),
    );
    h.step(599, alloc(1, 2));
    h.complete(599, 2);
    // The periodic trigger within the pause is moved to its end.
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![sched(Timer::Periodic, 2_000), sched(Timer::Periodic, 1_099)],
        applied(Applied::PeriodicFired(Box::new(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::MinimumTimeBetweenCheckpoints,
        }))),
    );
}

#[test]
fn trigger_with_a_task_to_trigger_not_running_is_rejected() {
    let mut h = H::new();
    h.expect(
        0,
        failed(0, 0),
        vec![],
        applied(Applied::TaskUpdated { aborted: 0 }),
    );
    h.expect(
        0,
        trigger(savepoint()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        }),
    );
}

#[test]
fn trigger_with_a_task_to_wait_for_not_running_is_rejected() {
    let mut h = H::new();
    h.step(0, failed(1, 0));
    h.expect(
        0,
        trigger(user()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(0),
            reason: TriggerRejection::NotAllRequiredTasksRunning,
        }),
    );
    // Once a new attempt runs, triggering works again.
    h.step(1, running(1, 1));
    h.expect(
        2,
        trigger(user()),
        vec![e_alloc(1)],
        applied(Applied::AllocatingId { request: rq(1) }),
    );
}

// ============================================================================
// Checkpoint id allocation and the re-check
// ============================================================================

#[test]
fn id_allocation_creates_pending_checkpoint_with_timeout_and_triggers_tasks() {
    let mut h = H::new();
    h.expect(
        3,
        trigger(user()),
        vec![e_alloc(0)],
        applied(Applied::AllocatingId { request: rq(0) }),
    );
    h.expect(
        5,
        alloc(0, 1),
        vec![sched(Timer::Timeout(cp(1)), 10_005), e_full(1, 5)],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    let p = h.s.pending_checkpoint(cp(1)).expect("pending");
    assert_eq!(p.phase(), PendingPhase::AwaitingAcks);
    assert_eq!(p.remaining(), 2);
    assert_eq!(p.timestamp(), ms(5));
    assert_eq!(h.s.in_flight(), None);
    assert_eq!(h.s.last_id(), Some(cp(1)));
}

#[test]
fn trigger_messages_go_to_every_task_to_trigger_with_its_current_attempt() {
    let mut h = H::with(CoordinatorSettings {
        tasks_to_trigger: vec![t(0), t(1)],
        ..settings()
    });
    h.step(0, failed(1, 0));
    h.step(0, running(1, 3));
    h.step(0, trigger(user()));
    h.expect(
        0,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_000),
            e_trig(0, 0, 1, 0, CheckpointOptions::FullCheckpoint),
            e_trig(1, 3, 1, 0, CheckpointOptions::FullCheckpoint),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).expect("pending").attempts(),
        &[AttemptNo(0), AttemptNo(3)]
    );
}

#[test]
fn id_allocation_failure_counts_as_consecutive_unsuccessful_trigger() {
    let mut h = H::new();
    for n in 0..2u64 {
        h.step(0, trigger(user()));
        h.expect(
            0,
            alloc_err(n),
            vec![e_failed(n, AbortReason::IdAllocationFailed)],
            applied(Applied::RequestEnded {
                request: rq(n),
                reason: AbortReason::IdAllocationFailed,
            }),
        );
        assert_eq!(h.s.consecutive_trigger_failures(), n + 1);
        assert_eq!(h.s.counted_failures(), n + 1);
    }
}

#[test]
fn successful_trigger_resets_consecutive_trigger_failures() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(0, alloc_err(0));
    h.user_cp(0, 1);
    assert_eq!(h.s.consecutive_trigger_failures(), 0);
}

#[test]
fn id_for_an_unknown_request_is_ignored() {
    let mut h = H::new();
    h.expect(0, alloc(9, 1), vec![], ignored(Ignored::UnknownRequest));
    h.step(0, trigger(user()));
    h.expect(0, alloc(9, 1), vec![], ignored(Ignored::UnknownRequest));
    assert!(h.s.in_flight().is_some());
}

#[test]
fn non_increasing_id_is_rejected_and_request_stays_in_flight() {
    let mut h = H::new();
    h.user_cp(0, 5);
    h.step(0, trigger(forced()));
    h.expect(
        0,
        alloc(1, 5),
        vec![],
        Outcome::Rejected(CoordinatorError::NonIncreasingId {
            got: cp(5),
            last: cp(5),
        }),
    );
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(1)));
    h.expect(
        0,
        alloc(1, 6),
        vec![sched(Timer::Timeout(cp(6)), 10_000), e_full(6, 0)],
        applied(Applied::CheckpointTriggered {
            request: rq(1),
            checkpoint: cp(6),
        }),
    );
}

#[test]
fn recheck_after_id_lets_a_user_checkpoint_through_the_min_pause() {
    // The pause holds back periodic requests only, after the id too.
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        max_concurrent: 2,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(10, trigger(user())); // request 1 allocating
    h.complete(100, 1);
    let step = h.step(150, alloc(1, 2));
    assert_eq!(
        step.outcome,
        applied(Applied::CheckpointTriggered {
            request: rq(1),
            checkpoint: cp(2)
        })
    );
}

#[test]
fn recheck_after_id_moves_periodic_timer_when_min_pause_started_meanwhile() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        max_concurrent: 2,
        ..settings()
    });
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // request 1 allocating
    h.complete(1_100, 1);
    let reason = AbortReason::Rejected(TriggerRejection::MinimumTimeBetweenCheckpoints);
    h.expect(
        1_200,
        alloc(1, 2),
        vec![sched(Timer::Periodic, 1_600), e_failed(1, reason)],
        applied(Applied::RequestEnded {
            request: rq(1),
            reason,
        }),
    );
}

#[test]
fn recheck_after_id_rejects_when_a_task_stopped_running() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.step(1, failed(1, 0));
    let reason = AbortReason::Rejected(TriggerRejection::NotAllRequiredTasksRunning);
    h.expect(
        2,
        alloc(0, 1),
        vec![e_failed(0, reason)],
        applied(Applied::RequestEnded {
            request: rq(0),
            reason,
        }),
    );
}

/// The state of the unreachable re-check branch, built by hand (no pending
/// checkpoint appears while a request is in flight): the in-flight request
/// finds the slots taken and the queue full.
fn recheck_queue_state() -> H {
    let mut h = H::with(CoordinatorSettings {
        queue_max: 1,
        ..settings()
    });
    h.step(0, trigger(user())); // request 0 in flight
    h.step(0, trigger(savepoint())); // request 1 queued: queue full
    let mut other = H::new();
    other.user_cp(0, 9);
    let p = other.s.pending_checkpoint(cp(9)).expect("pending").clone();
    h.s.pending.insert(cp(9), p);
    h.s.cold.timers.insert(Timer::Timeout(cp(9)), ms(10_000));
    h.s.last_id = Some(cp(9));
    h
}

#[test]
#[cfg(debug_assertions)] // the branch is loud only where debug assertions are on; release stays total
#[should_panic(expected = "unreachable coordinator branch: RecheckQueue")]
fn recheck_queue_branch_is_loud_in_debug_builds() {
    let mut h = recheck_queue_state();
    let _ = h.s.apply(ms(0), alloc(0, 10));
}

#[test]
#[cfg(not(debug_assertions))]
fn recheck_queue_branch_is_a_typed_outcome_in_release_builds() {
    let mut h = recheck_queue_state();
    let step = h.s.apply(ms(0), alloc(0, 10));
    assert_eq!(
        step.outcome,
        ignored(Ignored::Unreachable(Unreachable::RecheckQueue))
    );
}

#[test]
fn an_unreachable_outcome_is_a_violation() {
    // What a release build reports instead of panicking: the typed outcome,
    // which the step invariant turns into a violation.
    let h = recheck_queue_state();
    let step = Step {
        effects: vec![],
        outcome: ignored(Ignored::Unreachable(Unreachable::RecheckQueue)),
        clock: Clock::Monotonic,
    };
    let v = check_step(&h.s, &alloc(0, 10), &step, &h.s).expect_err("must be caught");
    assert_eq!(v.invariant, names::NO_UNREACHABLE);
}

// ============================================================================
// The request queue
// ============================================================================

#[test]
fn forced_request_during_id_allocation_waits_then_starts_after_the_id() {
    let mut h = H::new();
    h.step(0, trigger(user()));
    h.expect(
        0,
        trigger(savepoint()),
        vec![],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TriggerInProgress,
        }),
    );
    h.expect(
        1,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_001),
            e_full(1, 1),
            e_alloc(1),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
}

#[test]
fn full_queue_rejects_the_request() {
    let mut h = H::with(CoordinatorSettings {
        queue_max: 1,
        ..settings()
    });
    h.step(0, trigger(user()));
    h.step(0, trigger(savepoint()));
    h.expect(
        0,
        trigger(forced()),
        vec![],
        applied(Applied::TriggerRejected {
            request: rq(2),
            reason: TriggerRejection::QueueFull,
        }),
    );
}

#[test]
fn queue_orders_savepoint_before_forced_before_periodic() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(user())); // 1
    h.step(0, trigger(forced())); // 2
    h.step(0, trigger(savepoint())); // 3
    assert_eq!(h.queued_ids(), vec![rq(3), rq(2), rq(1)]);
    h.step(0, alloc(0, 1));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(3)));
    h.step(0, alloc(3, 2));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(2)));
    h.step(0, alloc(2, 3));
    // The non-forced one finds no free slot (forced checkpoints count).
    assert_eq!(h.s.in_flight(), None);
    assert_eq!(h.queued_ids(), vec![rq(1)]);
}

#[test]
fn a_queue_with_equal_priorities_survives_a_snapshot_and_a_misordered_one_is_refused() {
    use crate::snapshot::{Corruption, SnapshotError};
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(savepoint())); // 1
    h.step(0, trigger(savepoint())); // 2: same priority, after 1
    h.step(0, trigger(user())); // 3
    assert_eq!(h.queued_ids(), vec![rq(1), rq(2), rq(3)]);
    let snap = h.s.snapshot();
    let back = CoordinatorState::from_snapshot(snap.clone());
    assert_eq!(back.as_ref(), Ok(&h.s));
    let mut bad = snap;
    bad.queue.reverse(); // the user checkpoint before the savepoints
    assert_eq!(
        CoordinatorState::from_snapshot(bad),
        Err(SnapshotError::Corrupt(Corruption::QueueOrder))
    );
}

#[test]
fn resumed_user_checkpoint_rearms_the_cancelled_periodic_timer() {
    // Regression: a queued non-forced user checkpoint cancelled the periodic
    // timer, and nothing re-armed it when the request resumed.
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.user_cp(0, 1);
    h.expect(
        10,
        trigger(user()),
        vec![cancel(Timer::Periodic)],
        applied(Applied::Queued {
            request: rq(1),
            reason: QueueReason::TooManyConcurrent,
        }),
    );
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(aborted_notified(
        1,
        0,
        AbortReason::Declined(DeclineReason::SnapshotFailed),
        None,
    ));
    fx.push(sched(Timer::Periodic, 1_020));
    fx.push(e_alloc(1));
    h.expect(
        20,
        decline(1, 1),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Declined(DeclineReason::SnapshotFailed),
        }),
    );
    assert_eq!(h.s.timer_deadline(Timer::Periodic), Some(ms(1_020)));
}

#[test]
fn resumed_periodic_request_rearms_periodic_timer_one_interval_later() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    let r0 = h.user_cp(0, 1);
    h.step(1_000, fire(Timer::Periodic)); // request 1 queued, timer cancelled
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    let reason = AbortReason::Declined(DeclineReason::TaskNotReady);
    fx.extend(aborted_notified(1, r0, reason, None));
    fx.push(sched(Timer::Periodic, 2_500));
    fx.push(e_alloc(1));
    h.expect(
        1_500,
        decline_at(0, 0, 1, DeclineReason::TaskNotReady),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        }),
    );
}

// ============================================================================
// Master hooks
// ============================================================================

fn with_hooks() -> H {
    H::with(CoordinatorSettings {
        master_hooks: 1,
        ..settings()
    })
}

#[test]
fn master_hooks_run_before_trigger_messages() {
    let mut h = with_hooks();
    h.step(5, trigger(user()));
    h.expect(
        5,
        alloc(0, 1),
        vec![
            sched(Timer::Timeout(cp(1)), 10_005),
            E::Io {
                generation: G0,
                request: IoRequest::MasterHooks {
                    checkpoint: cp(1),
                    timestamp: ms(5),
                },
            },
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(0),
            checkpoint: cp(1),
        }),
    );
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::phase),
        Some(PendingPhase::AwaitingHooks)
    );
    h.expect(
        6,
        hooks(1, true),
        vec![e_full(1, 5)],
        applied(Applied::HooksDone { checkpoint: cp(1) }),
    );
    h.expect(7, hooks(1, true), vec![], ignored(Ignored::NotAwaited));
}

#[test]
fn legacy_hook_expiry_wedge_keeps_the_trigger_in_flight_only_when_hooks_run() {
    // FLINK-26394's legacy: the trigger stays in progress until the master
    // hooks answer. Without hooks there is nothing to wait for: the trigger
    // ends when the checkpoint is created, as in the fixed semantics.
    for (hooks, wedged) in [(1, true), (0, false)] {
        let mut h = H::with(CoordinatorSettings {
            master_hooks: hooks,
            semantics: crate::Semantics::Legacy(crate::LegacyBug::HookExpiryWedgesTrigger),
            ..settings()
        });
        h.step(5, trigger(user()));
        h.step(5, alloc(0, 1));
        assert_eq!(h.s.in_flight().is_some(), wedged, "{hooks} hooks");
        assert!(h.s.pending_checkpoint(cp(1)).is_some());
        if hooks > 0 {
            // The hooks of that very checkpoint answer in time: the wedge
            // clears (only an expiry before the answer leaves it stuck).
            h.step(
                6,
                Ev::MasterHooksDone {
                    checkpoint: cp(1),
                    result: Ok(()),
                },
            );
            assert!(
                h.s.in_flight().is_none(),
                "the hooks' answer ends the trigger"
            );
        }
    }
}

#[test]
fn master_hooks_failure_aborts_the_checkpoint() {
    let mut h = with_hooks();
    let r = h.user_cp(0, 1);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(aborted_notified(1, r, AbortReason::MasterHooksFailed, None));
    h.expect(
        1,
        hooks(1, false),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::MasterHooksFailed,
        }),
    );
    h.expect(2, hooks(1, true), vec![], ignored(Ignored::LateMessage));
}

#[test]
fn acks_before_hooks_finish_complete_once_hooks_are_done() {
    let mut h = with_hooks();
    h.user_cp(0, 1);
    h.ack_all(1, 1);
    assert_eq!(h.s.completing(), None);
    h.expect(
        2,
        hooks(1, true),
        vec![
            e_full(1, 0),
            cancel(Timer::Timeout(cp(1))),
            h.e_finalize(1, false, &[100, 101]),
        ],
        applied(Applied::HooksDone { checkpoint: cp(1) }),
    );
}

// ============================================================================
// Savepoints
// ============================================================================

#[test]
fn savepoint_is_forced_past_concurrency_and_min_pause_and_carries_its_target() {
    let mut h = H::with(CoordinatorSettings {
        min_pause_ms: 500,
        ..settings()
    });
    h.user_cp(0, 1);
    h.complete(100, 1);
    h.pending(100, forced(), 2); // the one slot is taken, the pause runs
    h.expect(
        200,
        trigger(savepoint()),
        vec![e_alloc(2)],
        applied(Applied::AllocatingId { request: rq(2) }),
    );
    h.expect(
        200,
        alloc(2, 3),
        vec![
            sched(Timer::Timeout(cp(3)), 10_200),
            e_trig(
                0,
                0,
                3,
                200,
                CheckpointOptions::Savepoint {
                    target: "/sp".into(),
                },
            ),
        ],
        applied(Applied::CheckpointTriggered {
            request: rq(2),
            checkpoint: cp(3),
        }),
    );
}

#[test]
fn savepoint_is_finalized_externalized() {
    let mut h = H::new();
    h.pending(0, savepoint(), 1);
    h.step(0, ack(0, 1, 100));
    h.expect(
        0,
        ack(1, 1, 101),
        vec![
            cancel(Timer::Timeout(cp(1))),
            h.e_finalize(1, true, &[100, 101]),
        ],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 0,
        }),
    );
}

#[test]
fn savepoints_are_never_subsumed() {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        ..settings()
    });
    h.pending(0, savepoint(), 1);
    let r = h.user_cp(0, 2);
    h.ack_all(1, 2);
    h.step(1, fin(2, true));
    h.expect(
        1,
        store(2, true),
        vec![e_completed(2, r, false), e_done(0, 2, 0), e_done(1, 2, 0)],
        applied(Applied::Completed { checkpoint: cp(2) }),
    );
    assert!(h.s.pending_checkpoint(cp(1)).is_some());
    // The older savepoint still completes afterwards.
    h.ack_all(2, 1);
    h.step(2, fin(1, true));
    h.step(2, store(1, true));
    assert_eq!(h.s.latest_completed(), Some(cp(2)));
}

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
    fx.extend(aborted_notified(1, r, AbortReason::FinalizeFailed, None));
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
    fx.extend(aborted_notified(1, r, AbortReason::StoreFailed, None));
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
    fx.extend(aborted_notified(1, r1, AbortReason::Subsumed, Some(2)));
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
// Declines
// ============================================================================

#[test]
fn decline_aborts_remembers_id_and_resumes_the_queued_request() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(0, trigger(user())); // request 1 queued
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let mut fx = vec![cancel(Timer::Timeout(cp(1)))];
    fx.extend(aborted_notified(1, r, reason, None));
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
    fx.extend(aborted_notified(1, r1, reason, None));
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
// Expiry and timers
// ============================================================================

#[test]
fn timeout_expires_the_pending_checkpoint_and_resumes_the_queued_request() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    h.step(2, trigger(user())); // request 1 queued
    let mut fx = vec![e_discard(1, 100)];
    fx.extend(aborted_notified(1, r, AbortReason::Expired, None));
    fx.push(e_alloc(1));
    h.expect(
        10_000,
        fire(Timer::Timeout(cp(1))),
        fx,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Expired,
        }),
    );
    assert!(h.s.recent_ids().any(|id| *id == cp(1)));
}

#[test]
fn timeout_for_a_checkpoint_that_no_longer_exists_is_ignored() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, decline(0, 1));
    h.expect(
        10_000,
        fire(Timer::Timeout(cp(1))),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
    // ... nor for a completing one (its timeout was cancelled).
    h.user_cp(2, 2);
    h.ack_all(3, 2);
    h.expect(
        10_002,
        fire(Timer::Timeout(cp(2))),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
}

#[test]
fn cancelled_periodic_timer_firing_is_ignored() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(1, Ev::StopScheduler);
    h.expect(
        1_000,
        fire(Timer::Periodic),
        vec![],
        ignored(Ignored::TimerNotArmed),
    );
}

#[test]
fn timer_firing_before_its_deadline_is_ignored() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.expect(
        999,
        fire(Timer::Periodic),
        vec![],
        ignored(Ignored::TimerNotDue),
    );
}

#[test]
fn time_going_backwards_is_clamped_and_reported() {
    let mut h = H::new();
    h.step(100, Ev::StartScheduler);
    let step = h.step(50, trigger(user()));
    assert_eq!(
        step.clock,
        Clock::Clamped {
            given: ms(50),
            used: ms(100),
        }
    );
    assert_eq!(step.effects, vec![e_alloc(0)]);
    assert_eq!(h.s.now(), ms(100));
    h.step(60, alloc(0, 1));
    assert_eq!(
        h.s.pending_checkpoint(cp(1)).map(Pending::timestamp),
        Some(ms(100))
    );
    assert_eq!(h.s.timer_deadline(Timer::Timeout(cp(1))), Some(ms(10_100)));
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
    let mut fx = aborted_notified(2, r, AbortReason::Expired, None);
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
        aborted_notified(3, r, AbortReason::Expired, None),
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
    fx.extend(aborted_notified(1, r, reason, None));
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
        aborted_notified(1, r, AbortReason::Expired, None),
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
    fx.extend(aborted_notified(2, r, reason, Some(1)));
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
            e_nab(0, 1, None),
            cancel(Timer::Timeout(cp(3))),
            e_discard(3, 300),
            e_aborted(3, r3, AbortReason::TaskFailed),
            e_nab(0, 3, None),
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
            running: false
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
            running: true
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
    fx.extend(aborted_notified(42, r, reason, Some(41)));
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

// ============================================================================
// Every invariant check can fail
// ============================================================================

fn violated(r: Result<(), Violation>) -> &'static str {
    match r {
        Ok(()) => panic!("expected a violation"),
        Err(v) => v.invariant,
    }
}

/// One pending checkpoint 1 (task 0 acked with handle 100).
fn base() -> H {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        queue_max: 2,
        retained_max: 2,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(0, ack(0, 1, 100));
    h
}

fn fake_step(effects: Vec<E>, outcome: Outcome) -> Step {
    Step {
        effects,
        outcome,
        clock: Clock::Monotonic,
    }
}

fn fake_completed(id: u64, savepoint: bool) -> Completed {
    Completed {
        id: cp(id),
        request: None,
        savepoint,
        timestamp: ms(0),
        handles: Default::default(),
    }
}

#[test]
fn invariant_pending_bounded_can_fail() {
    let mut s = base().s;
    for id in [2, 3] {
        let mut p = s.pending_checkpoint(cp(1)).expect("pending").clone();
        p.id = cp(id);
        s.pending.insert(cp(id), p);
        s.cold.timers.insert(Timer::Timeout(cp(id)), ms(1));
    }
    assert_eq!(violated(check_state(&s)), names::PENDING_BOUNDED);
}

#[test]
fn invariant_attempts_only_move_forward_can_fail() {
    let mut h = H::new();
    h.step(0, failed(1, 0));
    let before = h.s.clone();
    let mut revived = h.s.clone();
    revived.cold.tasks.set(
        1,
        TaskStatus {
            attempt: AttemptNo(0),
            running: true,
        },
    );
    let step = fake_step(vec![], applied(Applied::TaskUpdated { aborted: 0 }));
    let v = check_step(&before, &running(1, 0), &step, &revived);
    assert_eq!(violated(v), names::ATTEMPTS_FORWARD);
    // Going back to an older attempt is caught too.
    h.step(0, running(1, 3));
    let newer = h.s.clone();
    let mut older = h.s.clone();
    older.cold.tasks.set(
        1,
        TaskStatus {
            attempt: AttemptNo(2),
            running: true,
        },
    );
    let v = check_step(&newer, &running(1, 2), &step, &older);
    assert_eq!(violated(v), names::ATTEMPTS_FORWARD);
}

#[test]
fn invariant_at_most_one_queued_can_fail() {
    let mut s = base().s;
    for n in [10, 11] {
        s.cold.queue.push_back(Request {
            id: rq(n),
            kind: user(),
            requested_at: ms(0),
            hooks_for: None,
        });
    }
    assert_eq!(violated(check_state(&s)), names::ONE_QUEUED);
}

#[test]
fn invariant_queue_bounded_can_fail() {
    let mut s = base().s;
    for n in [10, 11, 12] {
        s.cold.queue.push_back(Request {
            id: rq(n),
            kind: savepoint(),
            requested_at: ms(0),
            hooks_for: None,
        });
    }
    assert_eq!(violated(check_state(&s)), names::QUEUE_BOUNDED);
}

#[test]
fn invariant_ack_count_can_fail() {
    let mut s = base().s;
    if let Some(p) = s.pending.get_mut(&cp(1)) {
        p.remaining = 0;
    }
    assert_eq!(violated(check_state(&s)), names::ACK_COUNT);
}

#[test]
fn invariant_timeout_timers_can_fail() {
    let mut s = base().s;
    s.cold.timers.remove(&Timer::Timeout(cp(1)));
    assert_eq!(violated(check_state(&s)), names::TIMERS);
    let mut s = base().s;
    s.cold.timers.insert(Timer::Timeout(cp(99)), ms(1));
    assert_eq!(violated(check_state(&s)), names::TIMERS);
}

#[test]
fn invariant_one_completing_can_fail() {
    let mut h = base();
    h.step(0, ack(1, 1, 101));
    let mut s = h.s.clone();
    s.completing = None;
    assert_eq!(violated(check_state(&s)), names::ONE_COMPLETING);
    let mut s = h.s;
    s.completing = Some(cp(5));
    assert_eq!(violated(check_state(&s)), names::ONE_COMPLETING);
}

#[test]
fn invariant_completed_retained_ordered_can_fail() {
    let mut s = base().s;
    for id in [1, 2, 3] {
        s.cold.completed.push_back(fake_completed(id, false));
    }
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
    let mut s = base().s;
    s.cold.completed.push_back(fake_completed(5, false));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
    // The same id twice is out of order too (each id completes once), even
    // where every other bound holds.
    let mut s = base().s;
    s.last_id = Some(cp(4));
    s.latest_completed = Some(cp(4));
    s.pending = PendingMap::default();
    s.cold.timers.remove(&Timer::Timeout(cp(1)));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(check_state(&s), Ok(()));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
}

#[test]
fn invariant_recent_ids_bounded_can_fail() {
    let mut s = base().s;
    for id in 100..117 {
        s.cold.recent.push_back(cp(id));
    }
    assert_eq!(violated(check_state(&s)), names::RECENT);
}

#[test]
fn invariant_shutdown_quiet_can_fail() {
    let mut s = base().s;
    s.shutdown = true;
    assert_eq!(violated(check_state(&s)), names::SHUTDOWN_QUIET);
}

#[test]
fn invariant_nothing_after_shutdown_can_fail() {
    let mut h = H::new();
    h.step(
        0,
        Ev::Shutdown {
            status: JobStatus::Finished,
        },
    );
    let s = h.s;
    let step = fake_step(
        vec![sched(Timer::Periodic, 5)],
        applied(Applied::SchedulerStarted),
    );
    assert_eq!(
        violated(check_step(&s, &Ev::StartScheduler, &step, &s)),
        names::NOTHING_AFTER_SHUTDOWN
    );
}

#[test]
fn invariant_refused_event_changes_nothing_can_fail() {
    let before = base().s;
    let mut after = before.clone();
    after.periodic = true;
    let rejected = fake_step(
        vec![],
        Outcome::Rejected(CoordinatorError::NoCheckpointToRestore),
    );
    assert_eq!(
        violated(check_step(&before, &Ev::StartScheduler, &rejected, &after)),
        names::REFUSED_UNCHANGED
    );
    let noisy = fake_step(
        vec![cancel(Timer::Periodic)],
        ignored(Ignored::TimerNotArmed),
    );
    assert_eq!(
        violated(check_step(&before, &Ev::StartScheduler, &noisy, &before)),
        names::REFUSED_UNCHANGED
    );
}

#[test]
fn invariant_complete_only_with_all_acks_can_fail() {
    let s = base().s; // checkpoint 1 misses task 1's ack
    let step = fake_step(
        vec![e_completed(1, 0, false)],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(
        violated(check_step(&s, &store(1, true), &step, &s)),
        names::COMPLETE_ALL_ACKS
    );
    let step = fake_step(
        vec![e_completed(9, 0, false)],
        applied(Applied::Completed { checkpoint: cp(9) }),
    );
    assert_eq!(
        violated(check_step(&s, &store(9, true), &step, &s)),
        names::COMPLETE_ALL_ACKS
    );
}

#[test]
fn invariant_completed_ids_increase_can_fail() {
    let mut h = base();
    h.step(0, ack(1, 1, 101));
    let mut before = h.s;
    before.cold.completed.push_back(fake_completed(5, false));
    let step = fake_step(
        vec![e_completed(1, 0, false)],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(
        violated(check_step(&before, &store(1, true), &step, &before)),
        names::COMPLETED_INCREASE
    );
    // The same id completing again is not an increase either.
    let mut again = before.clone();
    again.cold.completed = Default::default();
    again.cold.completed.push_back(fake_completed(1, false));
    assert_eq!(
        violated(check_step(&again, &store(1, true), &step, &again)),
        names::COMPLETED_INCREASE
    );
}

#[test]
fn invariant_discard_once_owes_one_discard_per_debt_not_per_delivery() {
    // A handle delivered twice while owed (a duplicate ack, state two
    // checkpoints share) is one debt: one discard settles it, a second is
    // a discard of something not owed.
    let s = base().s;
    let mut ledger = HandleLedger::new();
    let delivered = fake_step(
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    for _ in 0..2 {
        // Not retained by `s`: each observation reports the debt as a leak,
        // and the ledger keeps it.
        let _ = ledger.observe(&ack(1, 1, 77), &delivered, &s);
    }
    let discarded = |n: usize| {
        fake_step(
            vec![e_discard(1, 77); n],
            ignored(Ignored::CheckpointDiscarded),
        )
    };
    let mut once = ledger.clone();
    assert_eq!(once.observe(&Ev::StopScheduler, &discarded(1), &s), Ok(()));
    assert_eq!(once.owed(), 0);
    assert_eq!(
        violated(ledger.observe(&Ev::StopScheduler, &discarded(2), &s)),
        names::DISCARD_ONCE
    );
    // Delivered again after its discard, it is owed again.
    let _ = once.observe(&ack(1, 1, 77), &delivered, &s);
    assert_eq!(once.observe(&Ev::StopScheduler, &discarded(1), &s), Ok(()));
}

#[test]
fn invariant_no_discard_of_retained_state_can_fail() {
    let s = base().s; // checkpoint 1 holds handle 100
    let step = fake_step(
        vec![e_discard(1, 100)],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    assert_eq!(
        violated(check_step(&s, &ack(1, 1, 101), &step, &s)),
        names::NO_DISCARD_RETAINED
    );
}

#[test]
fn invariant_handle_retained_or_discarded_can_fail() {
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    // The ack was "applied" but its handle is neither held nor discarded.
    let step = fake_step(
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    assert_eq!(
        violated(ledger.observe(&ack(0, 1, 100), &step, &s)),
        names::NO_LEAK
    );
}

#[test]
fn invariant_discard_at_most_once_per_delivery_can_fail() {
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    let step = fake_step(
        vec![e_discard(42, 4_200), e_discard(42, 4_200)],
        ignored(Ignored::UnknownCheckpoint),
    );
    assert_eq!(
        violated(ledger.observe(&ack(0, 42, 4_200), &step, &s)),
        names::DISCARD_ONCE
    );
}

#[test]
fn ledger_forgets_finished_handles_and_still_catches_a_second_discard() {
    let mut h = H::new();
    let mut most = 0usize;
    for id in 1..=300u64 {
        h.user_cp(id * 10, id);
        h.complete(id * 10, id);
        most = most.max(h.ledger.owed());
    }
    // Only the handles of the retained checkpoint are owed, however long
    // the history (retained_max is 1 in these settings).
    let tasks = h.s.config().tasks_to_wait().len();
    assert!(most <= 2 * tasks, "{most} handles owed at most");
    assert_eq!(h.ledger.owed(), tasks);
    assert_eq!(h.ledger.discarded(), 299 * tasks as u64);
    // Handle 100 (checkpoint 1, task 0) was discarded long ago and is
    // forgotten; discarding it again is still one discard too many.
    let step = fake_step(vec![e_discard(1, 100)], ignored(Ignored::LateMessage));
    assert_eq!(
        violated(h.ledger.observe(&Ev::StartScheduler, &step, &h.s)),
        names::DISCARD_ONCE
    );
}

#[test]
fn ledger_absorbs_a_duplicate_ack_but_requires_its_handle_held() {
    let mut h = base();
    // The same ack again: ignored as a duplicate, handle 100 still held.
    h.expect(2, ack(0, 1, 100), vec![], ignored(Ignored::DuplicateAck));
    assert_eq!(h.ledger.owed(), 1, "one debt for two deliveries");
    // A reducer that ignored a handle it does not hold, without discarding.
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    let step = fake_step(vec![], ignored(Ignored::DuplicateAck));
    assert_eq!(
        violated(ledger.observe(&ack(0, 1, 100), &step, &s)),
        names::NO_LEAK
    );
}

#[test]
fn new_attempt_without_failure_report_aborts_checkpoints_waiting_for_the_old_one() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    // Task 1 restarts as attempt 1 without a TaskFailed for attempt 0: the old
    // attempt can never ack, so checkpoint 1 is aborted now (not at expiry),
    // and the dead attempt is not notified.
    h.expect(
        2,
        running(1, 1),
        vec![
            cancel(Timer::Timeout(cp(1))),
            e_discard(1, 100),
            e_aborted(1, r, AbortReason::TaskFailed),
            e_nab(0, 1, None),
        ],
        applied(Applied::TaskUpdated { aborted: 1 }),
    );
    assert_eq!(
        h.s.task_status(t(1)),
        Some(TaskStatus {
            attempt: AttemptNo(1),
            running: true
        })
    );
    // A late ack from the old attempt of checkpoint 1 is a late message whose
    // state is discarded.
    h.expect(
        3,
        ack_at(1, 0, 1, Some(101)),
        vec![e_discard(1, 101)],
        Outcome::Ignored(Ignored::LateMessage),
    );
}

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
// Gaps found by mutation testing (issue 16)
// ============================================================================

#[test]
fn config_getters_return_the_configured_values_not_the_defaults() {
    // Every value differs from the defaults and from 0 and 1, so a getter
    // returning a constant cannot pass.
    let c = config_ok(|s| {
        s.job = JobId(42);
        s.interval_ms = 7_000;
        s.timeout_ms = 3_000;
        s.min_pause_ms = 500;
        s.max_concurrent = 3;
        s.tolerable_failures = 4;
        s.retained_max = 5;
        s.queue_max = 6;
        s.externalized = true;
        s.checkpoint_dir = Some("/cp".into());
        s.tasks_to_trigger = vec![t(2)];
        s.tasks_to_wait = vec![t(2), t(0)];
        // Not `[TaskId(0)]`: that is what a getter returning a default
        // one-element list gives (a survivor of the mutation sample).
        s.tasks_to_commit = vec![t(1), t(2)];
    });
    assert_eq!(c.job(), JobId(42));
    assert_eq!(c.interval_ms(), 7_000);
    assert_eq!(c.timeout_ms(), 3_000);
    assert_eq!(c.min_pause_ms(), 500);
    assert_eq!(c.max_concurrent(), 3);
    assert_eq!(c.tolerable_failures(), 4);
    assert_eq!(c.retained_max(), 5);
    assert_eq!(c.queue_max(), 6);
    assert!(c.externalized());
    assert_eq!(c.tasks_to_trigger(), &[t(2)]);
    assert_eq!(c.tasks_to_wait(), &[t(2), t(0)]);
    assert_eq!(c.tasks_to_commit(), &[t(1), t(2)]);
    assert_eq!(c.task_slots(), 3);
    assert_eq!(c.wait_slot(t(2)), Some(0));
    assert_eq!(c.wait_slot(t(0)), Some(1));
    assert_eq!(c.wait_slot(t(1)), None);
}

#[test]
fn queued_requests_of_equal_priority_run_in_arrival_order() {
    let mut h = H::new();
    h.step(0, Ev::StartScheduler);
    h.step(0, trigger(savepoint())); // request 0 in flight
    h.step(0, trigger(user())); // 1
    h.step(0, trigger(forced())); // 2
    h.step(0, trigger(forced())); // 3
    h.step(0, trigger(savepoint())); // 4
    h.step(0, trigger(savepoint())); // 5
                                     // Highest priority first; within a priority, first come first served.
    assert_eq!(h.queued_ids(), vec![rq(4), rq(5), rq(2), rq(3), rq(1)]);
    h.step(0, alloc(0, 1));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(4)));
    h.step(0, alloc(4, 2));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(5)));
    h.step(0, alloc(5, 3));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(2)));
    h.step(0, alloc(2, 4));
    assert_eq!(h.s.in_flight().map(Request::id), Some(rq(3)));
}

/// FLINK-13256, fixed: a request queued at the concurrency bound resumes
/// when a task failure aborts the pending checkpoint that held the bound
/// (a survivor of mutation shard 1/30: nothing in core pinned it).
#[test]
fn a_task_failure_that_aborts_the_pending_checkpoint_resumes_the_queued_request() {
    let mut h = H::new();
    h.user_cp(0, 1);
    h.step(1, trigger(user()));
    assert_eq!(
        h.queued_ids().len(),
        1,
        "the second request waits at the bound"
    );
    assert!(h.s.in_flight().is_none());
    let step = h.step(2, failed(0, 0));
    assert!(h.s.pending_checkpoint(cp(1)).is_none());
    assert!(
        h.queued_ids().is_empty(),
        "still queued: {:?}",
        h.queued_ids()
    );
    // Resumed and decided at once: task 0 is down, so the trigger fails
    // (the failure is reported, never left waiting).
    assert!(h.s.in_flight().is_none());
    assert!(
        step.effects.iter().any(
            |e| matches!(e, E::Report(Report::RequestFailed { request, .. }) if *request == rq(1))
        ),
        "{:?}",
        step.effects
    );
}

/// Task 1 only acknowledges: it is neither triggered nor notified.
fn wait_only_task_1() -> CoordinatorSettings {
    CoordinatorSettings {
        tasks_to_trigger: vec![t(0)],
        tasks_to_wait: vec![t(0), t(1)],
        tasks_to_commit: vec![t(0)],
        ..settings()
    }
}

#[test]
fn a_wait_only_task_is_a_known_task_its_decline_aborts_and_its_failure_is_applied() {
    let mut h = H::with(wait_only_task_1());
    h.user_cp(0, 1);
    let reason = AbortReason::Declined(DeclineReason::SnapshotFailed);
    let step = h.step(1, decline(1, 1));
    assert_eq!(
        step.outcome,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason,
        })
    );
    let step = h.step(2, failed(1, 0));
    assert!(
        matches!(step.outcome, Outcome::Applied(_)),
        "{:?}",
        step.outcome
    );
    let step = h.step(3, running(1, 1));
    assert!(
        matches!(step.outcome, Outcome::Applied(_)),
        "{:?}",
        step.outcome
    );
    // Its new attempt's ack completes the next checkpoint.
    h.user_cp(4, 2);
    h.step(4, ack(0, 2, 200));
    h.step(4, ack_at(1, 1, 2, Some(201)));
    h.step(4, fin(2, true));
    let step = h.step(4, store(2, true));
    assert_eq!(
        step.outcome,
        applied(Applied::Completed { checkpoint: cp(2) })
    );
}

#[test]
fn several_retained_checkpoints_are_kept_and_the_oldest_discarded_beyond_the_bound() {
    let mut h = H::with(CoordinatorSettings {
        retained_max: 3,
        ..settings()
    });
    // Every step runs the invariants, whose bound is the configured one.
    for id in 1..=3 {
        h.user_cp(id * 10, id);
        let step = h.complete(id * 10, id);
        assert!(
            !step.effects.iter().any(|e| matches!(e, E::Discard { .. })),
            "nothing discarded while at most 3 are retained: {:?}",
            step.effects
        );
    }
    let kept: Vec<CheckpointId> = h.s.completed().map(Completed::id).collect();
    assert_eq!(kept, vec![cp(1), cp(2), cp(3)]);
    h.user_cp(40, 4);
    let step = h.complete(40, 4);
    assert!(
        step.effects.contains(&e_discard(1, 100)),
        "{:?}",
        step.effects
    );
    assert!(
        step.effects.contains(&e_discard(1, 101)),
        "{:?}",
        step.effects
    );
    let kept: Vec<CheckpointId> = h.s.completed().map(Completed::id).collect();
    assert_eq!(kept, vec![cp(2), cp(3), cp(4)]);
}

#[test]
fn a_decline_from_a_task_not_waited_for_counts_only_from_its_current_attempt() {
    // Task 2 is a source that is triggered but not waited for: its attempt
    // is the coordinator's current one, not an ack slot's.
    let mut h = H::with(CoordinatorSettings {
        tasks_to_trigger: vec![t(2)],
        tasks_to_wait: vec![t(0), t(1)],
        tasks_to_commit: vec![t(0), t(1)],
        ..settings()
    });
    h.user_cp(0, 1);
    let reason = DeclineReason::SnapshotFailed;
    h.expect(
        1,
        decline_at(2, 1, 1, reason),
        vec![],
        ignored(Ignored::StaleAttempt),
    );
    let step = h.step(2, decline_at(2, 0, 1, reason));
    assert_eq!(
        step.outcome,
        applied(Applied::Aborted {
            checkpoint: cp(1),
            reason: AbortReason::Declined(reason),
        })
    );
}

// ============================================================================
// Durability, second round (issue 25): each found as a new user, against the
// crate docs' own words; each a regression test in one checked step, with
// the legacy knob that reproduces it caught by the invariant that guards it.
// ============================================================================

/// Tolerable failures 0, max concurrent 2: checkpoint 1 completed; 2 and 3
/// triggered; 3 fully acknowledged and finalized (`StoreCheckpoint{3}` out);
/// 2 expires, so `FailJob`; the host fails the tasks as the recipe says.
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

fn restore_latest() -> Ev {
    Ev::Restore {
        source: RestoreSource::Latest {
            error_if_none: false,
        },
    }
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
    // A second restore is answered by the first one's RestoreState.
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
