//! Stop-with-savepoint: what ckpt's one reducer event does around Flink's coordinator call, and what a stop leaves behind.

use super::*;

pub(super) fn is_stop_event(ctx: &Ctx<'_>) -> bool {
    matches!(
        ctx.event,
        Some(Event::Trigger(TriggerAsk::StopWithSavepoint { .. }))
    )
}

/// A stop-with-savepoint: ckpt stops periodic scheduling and ends what
/// waits (as `StopScheduler`), Flink's coordinator call alone does not. The
/// trigger RPCs (the savepoint and its type), hook calls and notifications
/// stay compared; the aborts, request ends, discards and the state are
/// taken (the states are apart from here on).
pub(super) fn stop_suspends(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !is_stop_event(ctx) || request_failed(c, Abort::Stopping) {
        return false;
    }
    let differs = c.aborts != f.aborts
        || c.aborted != f.aborted
        || c.requests != f.requests
        || c.discarded != f.discarded
        || c.state != f.state;
    if !differs {
        return false;
    }
    c.aborts = f.aborts.clone();
    c.aborted = f.aborted.clone();
    c.requests = f.requests.clone();
    c.discarded = f.discarded.clone();
    make_state_equal(c, f);
    true
}

/// A user trigger while ckpt's stop-with-savepoint runs: ckpt refuses it
/// (`TriggerRejection::Stopping`), Flink's coordinator takes it.
pub(super) fn stopping_refuses(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let refused = request_failed(c, Abort::Stopping);
    if user_trigger(ctx, None) && refused {
        *c = f.clone();
        return true;
    }
    // A periodic firing (the scheduler started again after the stop): ckpt
    // rejects the periodic request as it rejects a user's (periodic
    // requests have no future to show it), Flink triggers a checkpoint.
    let periodic_fired = matches!(ctx.event, Some(Event::Advance { .. }))
        && c.triggers.is_empty()
        && f.triggers.iter().any(|t| !t.savepoint);
    if ctx.ckpt_stopping && periodic_fired {
        *c = f.clone();
        return true;
    }
    // Or Flink's periodic firing failed at the id counter, using up an
    // armed id failure that ckpt's refusal never reached. That attempt
    // changes nothing else in any version: no pending checkpoint exists
    // yet, a periodic request has no future, and no version counts the
    // failure (1.11 calls no failure manager before a pending checkpoint
    // exists, 1.20/2.3 ignore TRIGGER_CHECKPOINT_FAILURE), so only the
    // armed failure is taken; the counter, the timer and the rest stay
    // compared.
    let id_used = matches!(ctx.event, Some(Event::Advance { .. }))
        && flink_periodic_fired(ctx)
        && c.triggers.is_empty()
        && c.hooks.is_empty()
        && f.triggers.is_empty()
        && f.hooks.is_empty()
        && c.state.armed.id
        && !f.state.armed.id;
    if ctx.ckpt_stopping && id_used {
        c.state.armed.id = false;
        return true;
    }
    false
}

/// Whether Flink's periodic timer fired in this event (the harness lists
/// the timers an advance fired in its result's `fired`).
fn flink_periodic_fired(ctx: &Ctx<'_>) -> bool {
    ctx.flink_line
        .pointer("/result/fired")
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter()
                .any(|t| t.get("kind").and_then(Value::as_str) == Some("periodic"))
        })
}

/// 1.20/2.3: a synchronous savepoint (notified on both sides) completes:
/// ckpt's store holds it, Flink's does not.
pub(super) fn stop_savepoint_retained(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !ctx.gen2() {
        return false;
    }
    let retained: Vec<u64> = c
        .completed
        .iter()
        .filter(|(id, sp)| {
            *sp && f.completed.contains(&(*id, true))
                && f.completes.iter().any(|m| m.checkpoint == *id)
                && c.state.store.contains(&(*id, true))
                && !f.state.store.contains(&(*id, true))
        })
        .map(|(id, _)| *id)
        .collect();
    // ckpt's store write of the stop's savepoint failed (an armed failure
    // Flink's never reaches: it writes no savepoint to the store): ckpt
    // notifies aborted and fails the stop, Flink notifies complete.
    let store_failed: Vec<u64> = f
        .completed
        .iter()
        .filter(|(id, sp)| {
            *sp && f.completes.iter().any(|m| m.checkpoint == *id)
                && !c.completes.iter().any(|m| m.checkpoint == *id)
                && c.aborts.iter().any(|m| m.checkpoint == *id)
                && request_failed(c, Abort::FinalizeFailure)
        })
        .map(|(id, _)| *id)
        .collect();
    if retained.is_empty() && store_failed.is_empty() {
        return false;
    }
    if !store_failed.is_empty() {
        c.completes = f.completes.clone();
        c.aborts = f.aborts.clone();
        c.requests = f.requests.clone();
        c.discarded = f.discarded.clone();
    }
    make_state_equal(c, f);
    true
}

/// A savepoint aborted (for a reason no entry above counts) and Flink fails
/// the job while ckpt does not: the synchronous savepoint's failure.
pub(super) fn sync_savepoint_fails_job(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond =
        f.fail_job > c.fail_job && c.aborted.iter().any(|(id, _)| ctx.is_savepoint_before(*id));
    mask_counter_if(cond, c, f)
}
