//! Coordinator invariants.
//!
//! * [`check_state`]: what must hold of every reachable state.
//! * [`check_step`]: what must hold of one event's before / after states and
//!   effects (nothing after shutdown, completion only with every ack,
//!   completed checkpoint ids increase, no retained state discarded).
//! * [`HandleLedger`]: every state handle delivered to the coordinator is
//!   retained or discarded, never lost, never discarded while retained, and
//!   discarded at most once per delivery.
//! * [`check_task_discard`]: a task never deletes its part of a checkpoint
//!   the coordinator still waits for.
//! * [`check_restart`]: a job told it finished is not restarted.

use std::collections::BTreeSet;

pub use super::finish::check_restart;
use super::{ensure, Violation};
use crate::coordinator::{
    AckSlot, CoordinatorEffect, CoordinatorEvent, CoordinatorState, Ignored, JobCommand, Outcome,
    PendingPhase, Report, Step, Timer,
};
use crate::route::TaskMessage;
use crate::types::{AttemptNo, CheckpointId, StateHandle, TaskId};

/// Invariant names, for matching in tests.
pub mod names {
    /// Non-forced pending checkpoints never exceed `max_concurrent`.
    pub const PENDING_BOUNDED: &str = "pending-bounded";
    /// At most one non-forced request is queued or in flight.
    pub const ONE_QUEUED: &str = "at-most-one-queued";
    /// The queue respects its bound.
    pub const QUEUE_BOUNDED: &str = "queue-bounded";
    /// A queued request is waiting for something that will end: the
    /// trigger in progress, or (a non-forced request) a concurrency slot
    /// that a pending checkpoint holds. Otherwise nothing would ever take
    /// it from the queue, and every later non-forced request is refused as
    /// already queued (FLINK-13256).
    pub const QUEUE_RESUMABLE: &str = "queue-resumable";
    /// A pending checkpoint's missing-ack count matches its slots.
    pub const ACK_COUNT: &str = "ack-count-consistent";
    /// Timeout timers are armed exactly for checkpoints waiting on others.
    pub const TIMERS: &str = "timeout-timers-structural";
    /// At most one checkpoint finalizes / stores at a time.
    pub const ONE_COMPLETING: &str = "one-completing";
    /// Retained completed checkpoints respect the bound; ids increase; none
    /// is newer than the latest completion, which is not above the last id,
    /// and every subsumable pending checkpoint is newer than it.
    pub const COMPLETED: &str = "completed-retained-ordered";
    /// The recent-id ring holds at most 16 ids.
    pub const RECENT: &str = "recent-ids-bounded";
    /// Shut down means nothing pending, queued or armed.
    pub const SHUTDOWN_QUIET: &str = "shutdown-quiet";
    /// Nothing is emitted after shutdown.
    pub const NOTHING_AFTER_SHUTDOWN: &str = "nothing-after-shutdown";
    /// A checkpoint completes only with every task's ack for its attempt.
    pub const COMPLETE_ALL_ACKS: &str = "complete-only-with-all-acks";
    /// Completed (non-savepoint) checkpoint ids strictly increase.
    pub const COMPLETED_INCREASE: &str = "completed-ids-increase";
    /// A handle is never discarded while the coordinator retains it.
    pub const NO_DISCARD_RETAINED: &str = "no-discard-of-retained-state";
    /// Each delivered handle is retained or discarded (never leaked).
    pub const NO_LEAK: &str = "handle-retained-or-discarded";
    /// A delivered handle is discarded once, not again until delivered
    /// again after that discard (state several checkpoints hold goes once).
    pub const DISCARD_ONCE: &str = "discard-once-per-debt";
    /// Refused events leave the state as it was (clock aside).
    pub const REFUSED_UNCHANGED: &str = "refused-event-changes-nothing";
    /// No branch the reducer's structure rules out is ever taken.
    pub const NO_UNREACHABLE: &str = "no-unreachable-branch";
    /// The state of a checkpoint being finalized or stored is discarded only
    /// when that I/O reported that it definitely failed.
    pub const NO_DISCARD_WHILE_STORING: &str = "no-discard-while-storing";
    /// A checkpoint is in doubt only after shutdown.
    pub const IN_DOUBT_AFTER_SHUTDOWN: &str = "in-doubt-only-after-shutdown";
    /// Tasks are triggered only for a checkpoint that is pending.
    pub const TRIGGER_ONLY_PENDING: &str = "trigger-only-pending";
    /// A task's known attempt never goes back, and an attempt known to have
    /// failed never counts as running again (a restart is a new attempt).
    pub const ATTEMPTS_FORWARD: &str = "attempts-only-move-forward";
    /// The coordinator's generation (its fencing token) changes only on
    /// `Recover`, and never goes back: a coordinator that took a lower
    /// generation would issue I/O the store fences as a deposed leader's,
    /// or, in a host that trusted the token, outrank its successor.
    pub const GENERATION_FORWARD: &str = "generation-only-moves-forward";
    /// A restore is emitted only when no finalize or store is outstanding,
    /// and restores the retained checkpoint with the highest id: never a
    /// point behind a checkpoint that is (or may become) committed.
    pub const RESTORE_NOT_BEHIND: &str = "restore-not-behind-a-commit";
    /// The in-doubt hand-over names no handle another checkpoint still
    /// holds: `discard_if_not_stored` none a retained checkpoint or
    /// savepoint holds, `discard_if_stored` none the in-doubt checkpoint or
    /// a checkpoint that stays holds.
    pub const HAND_OVER_SPARES_SHARED: &str = "hand-over-spares-shared-state";
    /// A savepoint stays until the user disposes of it, and no discard names
    /// a handle a kept savepoint holds.
    pub const SAVEPOINT_KEPT: &str = "savepoint-state-kept";
    /// A checkpoint completes only in the step in which the store answered
    /// that it committed it.
    pub const COMPLETE_AFTER_STORE: &str = "complete-only-when-stored";
    /// A stop-with-savepoint is the job's last checkpoint: nothing else is
    /// triggered once it was asked for, and the job is told to stop only
    /// with nothing else pending, queued or allocating its id.
    pub const STOP_IS_LAST: &str = "stop-with-savepoint-is-last";
    /// A checkpoint's plan waits for every task that runs: a new pending
    /// checkpoint starts with the ack slot of every task that has not
    /// finished waiting, and only a finished task's slot holding its final
    /// state (no state handle, FLIP-147); a task that is down blocks the
    /// trigger, it is never planned as finished (FLINK-40482). So a
    /// completed checkpoint holds a state for every task of its plan that
    /// was running.
    pub const PLAN_WAITS_FOR_ALL: &str = "plan-waits-for-every-task";
    /// A task never deletes the state it wrote for a checkpoint while the
    /// coordinator still waits for that task attempt's ack of it: the
    /// checkpoint (a savepoint, which nothing subsumes) would wait for an
    /// ack that never comes, and expire ([`check_task_discard`](super::check_task_discard)).
    pub const AWAITED_STATE_KEPT: &str = "awaited-state-kept";
    pub use super::super::finish::names::{
        FINISH_AFTER_FINAL, FINISH_NOT_A_FAILURE, NO_RESTART_AFTER_FINISH,
    };

    /// Every name above (the model maps each to a property; a test checks
    /// that none is left unmapped).
    pub const ALL: [&str; 33] = [
        PENDING_BOUNDED,
        ONE_QUEUED,
        QUEUE_BOUNDED,
        QUEUE_RESUMABLE,
        ACK_COUNT,
        TIMERS,
        ONE_COMPLETING,
        COMPLETED,
        RECENT,
        SHUTDOWN_QUIET,
        NOTHING_AFTER_SHUTDOWN,
        COMPLETE_ALL_ACKS,
        COMPLETED_INCREASE,
        NO_DISCARD_RETAINED,
        NO_LEAK,
        DISCARD_ONCE,
        REFUSED_UNCHANGED,
        NO_UNREACHABLE,
        NO_DISCARD_WHILE_STORING,
        IN_DOUBT_AFTER_SHUTDOWN,
        TRIGGER_ONLY_PENDING,
        ATTEMPTS_FORWARD,
        GENERATION_FORWARD,
        RESTORE_NOT_BEHIND,
        HAND_OVER_SPARES_SHARED,
        SAVEPOINT_KEPT,
        COMPLETE_AFTER_STORE,
        STOP_IS_LAST,
        PLAN_WAITS_FOR_ALL,
        FINISH_NOT_A_FAILURE,
        FINISH_AFTER_FINAL,
        AWAITED_STATE_KEPT,
        NO_RESTART_AFTER_FINISH,
    ];
}

/// [`names::AWAITED_STATE_KEPT`] for a task's delete of the state it wrote
/// for `checkpoint` (a [`crate::task::TaskEffect::Discard`] of the state its
/// async part finished with), checked against the coordinator it reports
/// to: a violation while `coordinator` has `checkpoint` pending and still
/// waits for the ack of `task`'s `attempt`. A host that keeps both
/// machines (the model's world) calls it where it routes the discard.
///
/// # Errors
///
/// The violation, naming the task, the attempt and the checkpoint.
pub fn check_task_discard(
    coordinator: &CoordinatorState,
    task: TaskId,
    attempt: AttemptNo,
    checkpoint: CheckpointId,
) -> Result<(), Violation> {
    let awaited = coordinator.pending_checkpoint(checkpoint).is_some_and(|p| {
        coordinator.config().wait_slot(task).is_some_and(|slot| {
            p.expects(slot, attempt) && p.table().get(slot) == Some(AckSlot::Waiting)
        })
    });
    ensure(!awaited, names::AWAITED_STATE_KEPT, || {
        format!(
            "task {} (attempt {}) deleted its state of checkpoint {}, whose coordinator still waits for its ack", task.0, attempt.0, checkpoint.0
        )
    })
}

/// Checks every single-state invariant.
pub fn check_state(s: &CoordinatorState) -> Result<(), Violation> {
    let cfg = s.config();
    let non_forced = s.pending().filter(|p| !p.is_forced()).count();
    ensure(
        non_forced <= cfg.max_concurrent(),
        names::PENDING_BOUNDED,
        || {
            format!(
                "{non_forced} non-forced pending > max {}",
                cfg.max_concurrent()
            )
        },
    )?;
    let outstanding = s.queued().filter(|r| !r.kind().is_forced()).count()
        + usize::from(s.in_flight().is_some_and(|r| !r.kind().is_forced()));
    ensure(outstanding <= 1, names::ONE_QUEUED, || {
        format!("{outstanding} non-forced requests queued or in flight")
    })?;
    let queued = s.queued().count();
    ensure(queued <= cfg.queue_max(), names::QUEUE_BOUNDED, || {
        format!("{queued} queued > bound {}", cfg.queue_max())
    })?;
    if s.in_flight().is_none() {
        let slots_full = s.pending().count() >= cfg.max_concurrent();
        let stranded = s.queued().find(|r| r.kind().is_forced() || !slots_full);
        ensure(stranded.is_none(), names::QUEUE_RESUMABLE, || {
            format!(
                "request {:?} queued with no trigger in progress and {} of {} slots taken",
                stranded.map(|r| r.id()),
                s.pending().count(),
                cfg.max_concurrent()
            )
        })?;
    }
    let mut completing = 0usize;
    for p in s.pending() {
        let waiting = p.acks().filter(|a| *a == AckSlot::Waiting).count();
        ensure(waiting == p.remaining(), names::ACK_COUNT, || {
            format!(
                "checkpoint {}: {waiting} waiting slots, remaining {}",
                p.id(),
                p.remaining()
            )
        })?;
        let waits_on_others = p.phase() == PendingPhase::AwaitingHooks || p.remaining() > 0;
        let armed = s.timer_deadline(Timer::Timeout(p.id())).is_some();
        ensure(armed == waits_on_others, names::TIMERS, || {
            format!(
                "checkpoint {} phase {:?} remaining {}: timeout armed = {armed}",
                p.id(),
                p.phase(),
                p.remaining()
            )
        })?;
        if matches!(p.phase(), PendingPhase::Finalizing | PendingPhase::Storing) {
            completing += 1;
            ensure(
                s.completing() == Some(p.id()),
                names::ONE_COMPLETING,
                || {
                    format!(
                        "checkpoint {} completing but marker is {:?}",
                        p.id(),
                        s.completing()
                    )
                },
            )?;
        }
    }
    ensure(completing <= 1, names::ONE_COMPLETING, || {
        format!("{completing} checkpoints completing at once")
    })?;
    if let Some(c) = s.completing() {
        ensure(
            s.pending_checkpoint(c).is_some(),
            names::ONE_COMPLETING,
            || format!("completing marker {c} has no pending checkpoint"),
        )?;
    }
    for (timer, _) in s.timers() {
        if let Timer::Timeout(id) = timer {
            ensure(s.pending_checkpoint(*id).is_some(), names::TIMERS, || {
                format!("timeout armed for vanished checkpoint {id}")
            })?;
        }
    }
    // The bound on retained checkpoints is a step rule (`check_step`):
    // `Recover` may hand over more than `retained_max`, which the next
    // completion evicts.
    ensure(
        crate::commit::is_legal_order(s.completed().map(|c| (c.id(), c.is_savepoint()))),
        names::COMPLETED,
        || {
            let ids: Vec<CheckpointId> = s.completed().map(|c| c.id()).collect();
            format!("retained checkpoint ids out of order: {ids:?}")
        },
    )?;
    // The newest completion is remembered even after its checkpoint is
    // evicted, so it bounds every retained id; ids come from the counter, so
    // none exceeds the last one allocated.
    if let Some(newest) = s.completed().map(|c| c.id()).max() {
        ensure(
            s.latest_completed().is_some_and(|l| newest <= l),
            names::COMPLETED,
            || {
                format!(
                    "retained checkpoint {newest} newer than the latest completed {:?}",
                    s.latest_completed()
                )
            },
        )?;
    }
    if let Some(latest) = s.latest_completed() {
        ensure(
            s.last_id().is_some_and(|l| latest <= l),
            names::COMPLETED,
            || {
                format!(
                    "latest completed {latest} above the last id {:?}",
                    s.last_id()
                )
            },
        )?;
        // A completion subsumes every older checkpoint that may be subsumed,
        // so each one still pending is newer than the latest completion.
        if let Some(p) = s
            .pending()
            .find(|p| p.can_be_subsumed() && p.id() <= latest)
        {
            return Err(Violation::new(
                names::COMPLETED,
                format!(
                    "checkpoint {} still pending though {latest} completed after it",
                    p.id()
                ),
            ));
        }
    }
    let recent = s.recent_ids().count();
    ensure(
        recent <= crate::coordinator::RECENT_IDS_MAX,
        names::RECENT,
        || format!("{recent} recent ids"),
    )?;
    ensure(
        s.in_doubt().is_none() || s.is_shutdown(),
        names::IN_DOUBT_AFTER_SHUTDOWN,
        || "a checkpoint is in doubt while the coordinator runs".to_string(),
    )?;
    ensure(
        !s.is_restore_deferred() || s.completing().is_some(),
        names::RESTORE_NOT_BEHIND,
        || "a restore waits, but no checkpoint is completing".to_string(),
    )?;
    super::finish::check_finish_state(s)?;
    if s.is_shutdown() {
        ensure(
            s.pending_count() == 0
                && s.queued().count() == 0
                && s.in_flight().is_none()
                && s.timers().count() == 0,
            names::SHUTDOWN_QUIET,
            || "shut down with pending / queued / armed leftovers".to_string(),
        )?;
    }
    Ok(())
}

/// Checks what must hold of one step: `before --event--> after` with `step`.
pub fn check_step(
    before: &CoordinatorState,
    event: &CoordinatorEvent,
    step: &Step,
    after: &CoordinatorState,
) -> Result<(), Violation> {
    if before.is_shutdown() {
        ensure(
            step.effects.is_empty(),
            names::NOTHING_AFTER_SHUTDOWN,
            || {
                format!(
                    "{} effects after shutdown for {event:?}",
                    step.effects.len()
                )
            },
        )?;
    }
    for p in after.pending() {
        if before.pending_checkpoint(p.id()).is_some() {
            continue;
        }
        let wait = after.config().tasks_to_wait();
        let finished = |t: &crate::types::TaskId| after.task_status(*t).is_some_and(|s| s.finished);
        let running = wait.iter().filter(|t| !finished(t)).count();
        let planned = p.acks().count() == wait.len()
            && p.acks().zip(wait).all(|(a, t)| {
                if finished(t) {
                    a == AckSlot::Acked(None)
                } else {
                    a == AckSlot::Waiting
                }
            })
            && p.remaining() == running;
        ensure(planned, names::PLAN_WAITS_FOR_ALL, || {
            format!(
                "checkpoint {} triggered waiting for {} of the {running} running tasks",
                p.id(),
                p.remaining(),
            )
        })?;
    }
    if let Outcome::Ignored(Ignored::Unreachable(which)) = &step.outcome {
        return Err(Violation::new(
            names::NO_UNREACHABLE,
            format!("{event:?} took the unreachable branch {which:?}"),
        ));
    }
    match &step.outcome {
        Outcome::Rejected(_) | Outcome::Ignored(Ignored::Shutdown) => {
            ensure(step.effects.is_empty(), names::REFUSED_UNCHANGED, || {
                format!("refused event emitted {:?}", step.effects)
            })?;
            ensure(before.eq_but_now(after), names::REFUSED_UNCHANGED, || {
                format!("{event:?} changed state")
            })?;
        }
        Outcome::Ignored(_) => {
            let only_discards = step
                .effects
                .iter()
                .all(|e| matches!(e, CoordinatorEffect::Discard { .. }));
            ensure(only_discards, names::REFUSED_UNCHANGED, || {
                format!("ignored event emitted {:?}", step.effects)
            })?;
            ensure(before.eq_but_now(after), names::REFUSED_UNCHANGED, || {
                format!("ignored {event:?} changed state")
            })?;
        }
        Outcome::Applied(_) => {}
    }
    // Only these events change a task's status: the check costs one task.
    if let CoordinatorEvent::TaskRunning { task, .. }
    | CoordinatorEvent::TaskFailed { task, .. }
    | CoordinatorEvent::TaskFinished { task, .. } = event
    {
        if let (Some(b), Some(a)) = (before.task_status(*task), after.task_status(*task)) {
            let revived = a.attempt == b.attempt && !b.running && a.running;
            ensure(
                a.attempt >= b.attempt && !revived,
                names::ATTEMPTS_FORWARD,
                || format!("{event:?} took task {task} from {b:?} to {a:?}"),
            )?;
        }
    }
    if after.generation() != before.generation() {
        let recover = matches!(event, CoordinatorEvent::Recover { .. });
        ensure(
            recover && after.generation() > before.generation(),
            names::GENERATION_FORWARD,
            || {
                format!(
                    "{event:?} took the generation from {} to {}",
                    before.generation().0,
                    after.generation().0
                )
            },
        )?;
    }
    // What the state after retains, listed only when the step discards
    // something (the one check below that reads it): most steps discard
    // nothing, and listing every handle on every step was about 3 % of a
    // `coordinator_events` fuzz execution (perf, 2026-12-03).
    let discards = step
        .effects
        .iter()
        .any(|e| matches!(e, CoordinatorEffect::Discard { .. }));
    let retained_after = if discards {
        after.owned_handles()
    } else {
        Vec::new()
    };
    // The checkpoint whose finalize / store is outstanding: its state may be
    // discarded only by that I/O's failure.
    let storing = before
        .completing()
        .and_then(|c| before.pending_checkpoint(c))
        .filter(|_| discards);
    if let Some(p) = storing {
        let failed_here = matches!(
            event,
            CoordinatorEvent::FinalizeDone { checkpoint, result: Err(_) }
                | CoordinatorEvent::StoreDone { checkpoint, result: Err(_) }
                if *checkpoint == p.id()
        );
        let held: Vec<StateHandle> = p.handles().collect();
        for e in &step.effects {
            if let CoordinatorEffect::Discard { handle, .. } = e {
                ensure(
                    failed_here || !held.contains(handle),
                    names::NO_DISCARD_WHILE_STORING,
                    || {
                        format!(
                            "{event:?} discarded handle {handle} of checkpoint {} while its {:?} was outstanding",
                            p.id(),
                            p.phase()
                        )
                    },
                )?;
            }
        }
    }
    check_retention(before, event, step, after)?;
    check_stop(before, event, step, after)?;
    super::finish::check_finish(before, event, step, after)?;
    // The newest checkpoint (not savepoint) retained before, listed only
    // when the step reports a completion.
    let mut last_completed = None;
    let mut last_listed = false;
    for e in &step.effects {
        if let CoordinatorEffect::Report(Report::Completed {
            checkpoint,
            savepoint,
            ..
        }) = e
        {
            let Some(p) = before.pending_checkpoint(*checkpoint) else {
                return Err(Violation::new(
                    names::COMPLETE_ALL_ACKS,
                    format!("{checkpoint} completed without being pending"),
                ));
            };
            let all = p.acks().all(|a| matches!(a, AckSlot::Acked(_)))
                && p.acks().count() == before.config().tasks_to_wait().len();
            ensure(all, names::COMPLETE_ALL_ACKS, || {
                format!("{checkpoint} completed with missing acks")
            })?;
            if !savepoint {
                if !last_listed {
                    last_completed = before
                        .completed()
                        .filter(|c| !c.is_savepoint())
                        .map(|c| c.id())
                        .max();
                    last_listed = true;
                }
                ensure(
                    last_completed.is_none_or(|l| l < *checkpoint),
                    names::COMPLETED_INCREASE,
                    || format!("{checkpoint} completed after {last_completed:?}"),
                )?;
                last_completed = Some(*checkpoint);
            }
        }
        if let CoordinatorEffect::Rpc {
            message: TaskMessage::Trigger { checkpoint, .. },
            ..
        } = e
        {
            ensure(
                after.pending_checkpoint(*checkpoint).is_some(),
                names::TRIGGER_ONLY_PENDING,
                || format!("tasks triggered for checkpoint {checkpoint}, which is not pending"),
            )?;
        }
        if let CoordinatorEffect::Discard { handle, .. } = e {
            ensure(
                !retained_after.contains(handle),
                names::NO_DISCARD_RETAINED,
                || format!("handle {handle} discarded but still retained"),
            )?;
        }
    }
    Ok(())
}

/// Completion only on the store's word, and a stop-with-savepoint that is
/// the job's last checkpoint, for one step.
fn check_stop(
    before: &CoordinatorState,
    event: &CoordinatorEvent,
    step: &Step,
    after: &CoordinatorState,
) -> Result<(), Violation> {
    for e in &step.effects {
        if let CoordinatorEffect::Report(Report::Completed { checkpoint, .. }) = e {
            let stored = matches!(
                event,
                CoordinatorEvent::StoreDone { checkpoint: c, result: Ok(()) } if c == checkpoint
            );
            ensure(stored, names::COMPLETE_AFTER_STORE, || {
                format!("checkpoint {checkpoint} reported complete by {event:?}, not by its store's answer")
            })?;
        }
        if let CoordinatorEffect::Job(JobCommand::Stop { savepoint, .. }) = e {
            let quiet = after.pending_count() == 0
                && after.in_flight().is_none()
                && after.queued().next().is_none();
            ensure(quiet, names::STOP_IS_LAST, || {
                let pending: Vec<CheckpointId> = after.pending().map(|p| p.id()).collect();
                format!("the job stops on savepoint {savepoint} with {pending:?} pending or a request waiting")
            })?;
        }
    }
    let stop_request = match before.stop_phase() {
        Some(crate::coordinator::StopPhase::Requested { request, .. }) => Some(Some(request)),
        Some(crate::coordinator::StopPhase::Stopped { .. }) => Some(None),
        None => None,
    };
    if let (
        Some(stop),
        Outcome::Applied(crate::coordinator::Applied::CheckpointTriggered {
            request,
            checkpoint,
        }),
    ) = (stop_request, &step.outcome)
    {
        ensure(stop == Some(*request), names::STOP_IS_LAST, || {
            format!("checkpoint {checkpoint} triggered after a stop-with-savepoint was asked for")
        })?;
    }
    Ok(())
}

/// The rules about what the coordinator keeps, restores and hands over
/// (retention, savepoints, restore, in-doubt lists), for one step.
fn check_retention(
    before: &CoordinatorState,
    event: &CoordinatorEvent,
    step: &Step,
    after: &CoordinatorState,
) -> Result<(), Violation> {
    let counted = |s: &CoordinatorState| s.completed().filter(|c| !c.is_savepoint()).count();
    let max = after.config().retained_max();
    let stored = matches!(event, CoordinatorEvent::StoreDone { result: Ok(()), .. })
        && matches!(step.outcome, Outcome::Applied(_));
    // Savepoints leave only when the user disposes of them.
    let disposed = if let CoordinatorEvent::DisposeSavepoint { checkpoint } = event {
        Some(*checkpoint)
    } else {
        None
    };
    let kept = || {
        before
            .completed()
            .filter(move |c| c.is_savepoint() && Some(c.id()) != disposed)
    };
    // The same retained list before and after (one storage, as when the
    // step left it alone): nothing was evicted or dropped and the count is
    // what it was, so only a completion's bound is left to check.
    if before.retains_same_as(after) {
        if stored {
            let now = counted(after);
            ensure(now <= max, names::COMPLETED, || {
                format!("{now} checkpoints retained after a completion (bound {max})")
            })?;
        }
    } else {
        let (was, now) = (counted(before), counted(after));
        let recover = matches!(event, CoordinatorEvent::Recover { .. });
        ensure(recover || now <= was.max(max), names::COMPLETED, || {
            format!("{now} checkpoints retained after {event:?} (bound {max}, {was} before)")
        })?;
        if stored {
            ensure(now <= max, names::COMPLETED, || {
                format!("{now} checkpoints retained after a completion (bound {max})")
            })?;
        }
        // Retention counts checkpoints only: it evicts down to the bound,
        // never below it (a savepoint's completion does not push a
        // checkpoint out).
        let evicted = before
            .completed()
            .any(|c| !c.is_savepoint() && !after.completed().any(|a| a.id() == c.id()));
        if evicted && !after.is_shutdown() {
            ensure(now == max, names::SAVEPOINT_KEPT, || {
                format!("{event:?} evicted checkpoints down to {now}, below the bound {max} (a savepoint counted)")
            })?;
        }
        for sp in kept() {
            ensure(
                after.completed().any(|c| c.id() == sp.id()) || after.is_shutdown(),
                names::SAVEPOINT_KEPT,
                || format!("savepoint {} dropped by {event:?}", sp.id()),
            )?;
        }
    }
    for e in &step.effects {
        if let CoordinatorEffect::Discard { handle, .. } = e {
            if let Some(sp) = kept().find(|c| c.handles().any(|h| h == *handle)) {
                return Err(Violation::new(
                    names::SAVEPOINT_KEPT,
                    format!(
                        "{event:?} discarded handle {handle} of savepoint {}",
                        sp.id()
                    ),
                ));
            }
        }
        if let CoordinatorEffect::Job(JobCommand::Restore { checkpoint, .. }) = e {
            ensure(
                after.completing().is_none(),
                names::RESTORE_NOT_BEHIND,
                || {
                    format!(
                        "restored {checkpoint:?} while checkpoint {:?} may still commit",
                        after.completing()
                    )
                },
            )?;
            let latest = after.latest_retained().map(|c| c.id());
            ensure(
                *checkpoint == latest || latest.is_none(),
                names::RESTORE_NOT_BEHIND,
                || format!("restored {checkpoint:?}, but the latest retained is {latest:?}"),
            )?;
        }
        if let CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
            checkpoint,
            discard_if_stored,
            discard_if_not_stored,
        }) = e
        {
            let retained: Vec<StateHandle> = after.completed().flat_map(|c| c.handles()).collect();
            if let Some(h) = discard_if_not_stored.iter().find(|h| retained.contains(h)) {
                return Err(Violation::new(
                        names::HAND_OVER_SPARES_SHARED,
                        format!(
                            "in-doubt checkpoint {checkpoint} lists {h} for discard, which a retained checkpoint holds"
                        ),
                    ));
            }
            let mine: Vec<StateHandle> = after
                .in_doubt()
                .map(|c| c.handles().collect())
                .unwrap_or_default();
            if let Some(h) = discard_if_stored.iter().find(|h| mine.contains(h)) {
                return Err(Violation::new(
                        names::HAND_OVER_SPARES_SHARED,
                        format!(
                            "in-doubt checkpoint {checkpoint} lists its own {h} for discard once stored"
                        ),
                    ));
            }
        }
    }
    Ok(())
}

/// Tracks the state handles the coordinator owes: every handle delivered to
/// it (by a taken ack, a recovered checkpoint or a restored savepoint) must
/// be held by its state or discarded, never lost, and discarded once: a
/// handle delivered again while it is owed (a duplicate ack, or state two
/// checkpoints share) is one debt, settled by one discard when the last
/// checkpoint holding it goes.
///
/// Memory and cost are bounded by the live state, not by the history: the
/// ledger keeps only the handles still owed and forgets a handle once it
/// has been discarded. A later discard of a forgotten handle is therefore a
/// discard of something not owed, and is caught. One step costs O(handles
/// the step delivers or discards, times log of the owed handles) plus one
/// merge walk of the owed handles against the state's owned ones (the same
/// order as [`check_state`]'s walk over the pending checkpoints).
///
/// An ack the coordinator ignores without discarding its handle (a
/// duplicate of an ack it already holds, or a late ack whose handle the
/// completed checkpoint retains) hands over nothing new: the handle must be
/// retained by the state after the step, and no second debt is recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct HandleLedger {
    /// Handles still owed (delivered, not discarded since).
    owed: BTreeSet<StateHandle>,
    /// Deliveries taken so far (saturating).
    delivered: u64,
    /// Discards seen so far (saturating).
    discarded: u64,
}

impl HandleLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one step and checks the ledger against the state after it.
    /// On `Err` the ledger may be partly updated.
    pub fn observe(
        &mut self,
        event: &CoordinatorEvent,
        step: &Step,
        after: &CoordinatorState,
    ) -> Result<(), Violation> {
        self.record(None, event, step, after)
    }

    /// [`Self::observe`] for the step `before --event--> after`, where
    /// `before` is the state after the last step this ledger observed (or
    /// the ledger is new): every handle it owed was held by `before`. The
    /// same verdict as [`Self::observe`] at a cost of O(what changed):
    /// when `after` provably holds every handle `before` held
    /// (`CoordinatorState::keeps_holdings_of`: the retained list and the
    /// in-doubt checkpoint left alone, pending checkpoints only gaining
    /// acks), every handle still owed is held, and only the handles this
    /// step delivered are looked for; otherwise every owed handle is
    /// ([`Self::check`]). This is what [`check_all`] (and so every checked
    /// step) runs. After an `Err`, or when `before` did not come from the
    /// last observed step, a handle already missing from `before` may not
    /// be reported again; a step that drops a handle `before` held is
    /// always caught ([`Self::observe`] reports every missing one).
    pub fn observe_step(
        &mut self,
        before: &CoordinatorState,
        event: &CoordinatorEvent,
        step: &Step,
        after: &CoordinatorState,
    ) -> Result<(), Violation> {
        self.record(Some(before), event, step, after)
    }

    fn record(
        &mut self,
        before: Option<&CoordinatorState>,
        event: &CoordinatorEvent,
        step: &Step,
        after: &CoordinatorState,
    ) -> Result<(), Violation> {
        let taken = !matches!(
            step.outcome,
            Outcome::Rejected(_) | Outcome::Ignored(Ignored::Shutdown)
        );
        let discards = || {
            step.effects.iter().filter_map(|e| {
                if let CoordinatorEffect::Discard { handle, .. } = e {
                    Some(*handle)
                } else {
                    None
                }
            })
        };
        // Handles this step made owed that were not owed before it (at most
        // one ack's, else the ledger lists every handle below).
        let mut fresh: Option<StateHandle> = None;
        let mut many = false;
        if taken {
            if let CoordinatorEvent::Acknowledge { state: Some(h), .. } = event {
                self.delivered = self.delivered.saturating_add(1);
                let already_held =
                    matches!(step.outcome, Outcome::Ignored(_)) && !discards().any(|d| d == *h);
                if already_held {
                    ensure(after.owned_handles().contains(h), names::NO_LEAK, || {
                        format!("handle {h} ignored as already held, but not retained")
                    })?;
                } else if self.owe(*h) {
                    fresh = Some(*h);
                }
            }
            if let CoordinatorEvent::Restore {
                source: crate::coordinator::RestoreSource::Savepoint { handles, .. },
            } = event
            {
                for h in handles {
                    self.delivered = self.delivered.saturating_add(1);
                    many |= self.owe(*h);
                }
            }
            if let CoordinatorEvent::Recover { checkpoints, .. } = event {
                for h in checkpoints.iter().flat_map(|c| &c.handles) {
                    self.delivered = self.delivered.saturating_add(1);
                    many |= self.owe(*h);
                }
            }
        }
        for h in discards() {
            self.discarded = self.discarded.saturating_add(1);
            if !self.owed.remove(&h) {
                return Err(Violation::new(
                    names::DISCARD_ONCE,
                    format!("handle {h} discarded more often than it was delivered"),
                ));
            }
        }
        // A fresh debt the step also settled is owed no more.
        let fresh = fresh.filter(|h| self.owed.contains(h));
        match before {
            // Every handle owed before the step was held by `before` and is
            // held by `after`: only a fresh debt can be unheld.
            Some(before) if !many && after.keeps_holdings_of(before) => match fresh {
                None => Ok(()),
                Some(h) => ensure(after.owned_handles().contains(&h), names::NO_LEAK, || {
                    format!("handle {h} delivered and not discarded, but no checkpoint holds it")
                }),
            },
            Some(_) | None => self.check(after),
        }
    }

    /// Records a debt for `h`; `true` if it was not owed.
    fn owe(&mut self, h: StateHandle) -> bool {
        self.owed.insert(h)
    }

    /// Checks that every handle still owed is held by `state` (retained, in
    /// doubt, or acknowledged to a pending checkpoint).
    pub fn check(&self, state: &CoordinatorState) -> Result<(), Violation> {
        if self.owed.is_empty() {
            return Ok(());
        }
        let mut owned = state.owned_handles();
        owned.sort_unstable();
        let mut rest = owned.as_slice();
        for h in &self.owed {
            let skip = rest.partition_point(|x| x < h);
            rest = rest.get(skip..).unwrap_or_default();
            let held = rest.partition_point(|x| x == h);
            rest = rest.get(held..).unwrap_or_default();
            ensure(held > 0, names::NO_LEAK, || {
                format!("handle {h} delivered and not discarded, but no checkpoint holds it")
            })?;
        }
        Ok(())
    }

    /// The same ledger with every handle renamed (symmetry reduction, when
    /// handles name the task that wrote them).
    #[cfg(feature = "symmetry")]
    #[must_use]
    pub fn rename_handles(&self, rename: &dyn Fn(StateHandle) -> StateHandle) -> HandleLedger {
        HandleLedger {
            owed: self.owed.iter().map(|h| rename(*h)).collect(),
            delivered: self.delivered,
            discarded: self.discarded,
        }
    }

    /// Deliveries taken so far (acks with a handle and restored savepoint
    /// handles, saturating; an ack whose handle was already held counts).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// Discards seen so far (saturating).
    pub fn discarded(&self) -> u64 {
        self.discarded
    }
    /// Handles still owed: delivered more often than discarded, so retained
    /// by the coordinator's state. Bounded by the live state.
    pub fn owed(&self) -> usize {
        self.owed.len()
    }
}

/// Runs [`check_state`], [`check_step`] and the ledger for one step: the
/// one-call form for tests, proptest, the model and fuzz targets.
/// `ledger` has observed every step up to `before` (or is new): it checks
/// its debts against what changed ([`HandleLedger::observe_step`]).
pub fn check_all(
    ledger: &mut HandleLedger,
    before: &CoordinatorState,
    event: &CoordinatorEvent,
    step: &Step,
    after: &CoordinatorState,
) -> Result<(), Violation> {
    check_state(after)?;
    check_step(before, event, step, after)?;
    ledger.observe_step(before, event, step, after)
}
