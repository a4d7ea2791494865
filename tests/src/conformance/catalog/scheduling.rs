//! Triggering: the request queue, the periodic timer, master hooks, the plan's running tasks, and what a trigger RPC carries.

use super::*;

/// Flink's trigger names the alignment, the mode and the location; ckpt's
/// carries none of them. Only the values the harness's configuration gives
/// are taken out: aligned exactly-once checkpoints and savepoints to the
/// default location (the harness gives no savepoint target).
pub(super) fn trigger_mode(_: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let mut changed = false;
    for m in &mut f.triggers {
        let Some(mode) = &m.mode else { continue };
        if mode != "aligned exactly-once default-location" {
            return false;
        }
        m.mode = None;
        changed = true;
    }
    // ckpt's side never carries a mode: one here was copied from Flink's
    // decision by a recognizer that ran before this one.
    for m in &mut c.triggers {
        if m.mode.as_deref() == Some("aligned exactly-once default-location") {
            m.mode = None;
            changed = true;
        }
    }
    if changed {
        f.triggers.sort();
        c.triggers.sort();
    }
    changed
}

pub(super) fn already_queued(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !user_trigger(ctx, Some(false)) {
        return false;
    }
    if !take_request_failure(c, f, &Abort::AlreadyQueued) {
        return false;
    }
    // Flink queued it (or, had a slot been free, triggered it).
    make_state_equal(c, f);
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    true
}

pub(super) fn periodic_paused(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // ckpt cancelled the periodic timer when a non-forced request had to
    // wait for a free slot; Flink's keeps running and queueing.
    let periodic = ctx.before_ckpt.state.periodic && c.state.periodic && f.state.periodic;
    if !periodic || !matches!(ctx.event, Some(Event::Advance { .. } | Event::Trigger(_))) {
        return false;
    }
    let apart = c.state.periodic_at != f.state.periodic_at || c.state.queued != f.state.queued;
    let waiting = f.state.queued > 0 || ctx.before_flink.state.queued > 0 || c.state.queued > 0;
    // Full before or after the event, or in between (1.20/2.3; in 1.11
    // a firing that waited inside one advance is periodic-fixed-rate-1.11,
    // its timer running at a fixed rate; with master hooks a request that
    // waits is hooks-serialize-triggers): the checkpoints pending before an
    // advance and those it created are more than the bound, so one of its
    // firings found every slot taken.
    let before: Vec<u64> = ctx
        .before_ckpt
        .state
        .pending
        .iter()
        .map(|p| p.checkpoint)
        .collect();
    let mut created: Vec<u64> = c
        .triggers
        .iter()
        .map(|t| t.checkpoint)
        .chain(c.hooks.iter().copied())
        .chain(c.state.pending.iter().map(|p| p.checkpoint))
        .chain(c.aborted.iter().map(|(id, _)| *id))
        .filter(|id| !before.contains(id))
        .collect();
    created.sort_unstable();
    created.dedup();
    let max = ctx.config.max_concurrent as usize;
    let full = ctx.before_flink.state.pending.len() >= max
        || f.state.pending.len() >= max
        || ctx.gen2() && ctx.config.hooks == 0 && before.len() + created.len() > max;
    let advance = matches!(ctx.event, Some(Event::Advance { .. }));
    if !apart || !(full && (waiting || advance) || c.state.periodic_at.is_none()) {
        return false;
    }
    make_state_equal(c, f);
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    c.aborted = f.aborted.clone();
    c.aborts = f.aborts.clone();
    c.requests = f.requests.clone();
    c.discarded = f.discarded.clone();
    true
}

pub(super) fn periodic_fixed_rate(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // 1.11's periodic trigger is a fixed-rate timer: its next firing does
    // not move when a (queued) periodic request runs late; ckpt re-arms one
    // interval after the trigger. Only the timer's due time is taken out.
    if ctx.version() != Version::V1_11
        || !(c.state.periodic && f.state.periodic)
        || c.state.periodic_at.is_none()
        || f.state.periodic_at.is_none()
        || c.state.periodic_at == f.state.periodic_at
    {
        return false;
    }
    c.state.periodic_at = f.state.periodic_at;
    true
}

pub(super) fn shutdown_timer(_ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if c.state.shutdown
        && f.state.shutdown
        && c.state.periodic_at.is_none()
        && f.state.periodic_at.is_some()
    {
        f.state.periodic_at = None;
        return true;
    }
    false
}

/// Flink queued a request because a trigger was in progress (a master
/// hook outstanding) where ckpt went on with it.
pub(super) fn flink_queued_behind_hooks(ctx: &Ctx<'_>, c: &Decision, f: &Decision) -> bool {
    ctx.config.hooks > 0 && ctx.flink_was_triggering() && f.state.queued > c.state.queued
}

pub(super) fn take_queued_behind_hooks(c: &mut Decision, f: &Decision) {
    make_state_equal(c, f);
    c.hooks = f.hooks.clone();
    c.triggers = f.triggers.clone();
    c.requests = f.requests.clone();
}

pub(super) fn hooks_serialize(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // The checkpoint whose hook is outstanding is still pending in Flink.
    let pending: Vec<u64> = f.state.pending.iter().map(|p| p.checkpoint).collect();
    let live = ctx
        .flink_hooks_waiting()
        .iter()
        .any(|id| pending.contains(id));
    // Or the hook was called within this advance: ckpt called the hooks of
    // more checkpoints than Flink, which queued the rest behind it.
    let within = matches!(ctx.event, Some(Event::Advance { .. }))
        && ctx.config.hooks > 0
        && f.hooks.iter().all(|h| c.hooks.contains(h))
        && c.hooks.len() > f.hooks.len()
        && f.state.queued > c.state.queued;
    if live && flink_queued_behind_hooks(ctx, c, f) || within {
        take_queued_behind_hooks(c, f);
        return true;
    }
    // Or Flink's queued request left the queue within this advance, when
    // the checkpoint whose hook held it ended: the same checkpoints are
    // pending on both sides, but each one whose hooks were called in this
    // advance has a later timestamp on Flink's side (when it left the
    // queue) than on ckpt's (when its request came).
    let ids = |d: &Decision| {
        d.state
            .pending
            .iter()
            .map(|p| p.checkpoint)
            .collect::<Vec<_>>()
    };
    let held = !ctx.flink_hooks_waiting().is_empty();
    let later = c
        .state
        .pending
        .iter()
        .zip(&f.state.pending)
        .all(|(a, b)| a.ts == b.ts || c.hooks.contains(&a.checkpoint) && a.ts < b.ts);
    if matches!(ctx.event, Some(Event::Advance { .. }))
        && held
        && ids(c) == ids(f)
        && c.state.pending != f.state.pending
        && later
    {
        c.state.pending = f.state.pending.clone();
        return true;
    }
    false
}

pub(super) fn hook_expiry_wedge(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // 1.11: the hook's checkpoint is gone (expired, aborted), the trigger
    // is still in progress.
    let pending: Vec<u64> = f.state.pending.iter().map(|p| p.checkpoint).collect();
    let waiting = ctx.flink_hooks_waiting();
    let wedged = !waiting.is_empty() && waiting.iter().all(|id| !pending.contains(id));
    if ctx.gen2() || !wedged || !flink_queued_behind_hooks(ctx, c, f) {
        return false;
    }
    take_queued_behind_hooks(c, f);
    true
}

pub(super) fn trigger_waits_for_all(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // 1.11: a task that is waited for but not triggered is not running;
    // ckpt refuses the trigger, 1.11 goes on.
    if ctx.gen2() {
        return false;
    }
    let idle_waited = (0u32..)
        .zip(ctx.ckpt_tasks)
        .any(|(i, t)| !t.running && !ctx.config.trigger.contains(&i));
    let triggers_run = ctx
        .config
        .trigger
        .iter()
        .all(|t| ctx.ckpt_tasks.get(*t as usize).is_some_and(|t| t.running));
    // Checkpoint ids 1.11 triggered in this event and ckpt did not (a
    // periodic firing whose checkpoint may also expire in the same
    // advance, leaving nothing pending on either side).
    let flink_only: Vec<u64> = f
        .triggers
        .iter()
        .map(|m| m.checkpoint)
        .filter(|id| !c.triggers.iter().any(|m| m.checkpoint == *id))
        .collect();
    let refused = request_failed(c, Abort::NotAllRequiredTasksRunning)
        || (f.state.pending.len() > c.state.pending.len())
        || !flink_only.is_empty()
        // 1.11 went on to the id counter and used up the armed failure
        // (its trigger failed there, which neither decision shows).
        || (c.state.armed.id && !f.state.armed.id);
    let same = c.requests == f.requests && c.state == f.state && flink_only.is_empty();
    if !(idle_waited && triggers_run && refused) || same {
        return false;
    }
    // Only what the refused (or failed) trigger changed: whatever else the
    // event did on both sides (a completion's store, its discards) is left
    // for the recognizers after this one.
    c.state.pending = f.state.pending.clone();
    c.state.queued = f.state.queued;
    c.state.armed = f.state.armed;
    c.state.failure_counter = f.state.failure_counter;
    c.state.periodic_at = f.state.periodic_at;
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    c.requests = f.requests.clone();
    // The notify-aborted of a checkpoint only 1.11 triggered (it expired
    // in the same advance).
    // In Flink's order; what only ckpt sent stays, to be judged.
    let mut aborts: Vec<_> = f
        .aborts
        .iter()
        .filter(|m| flink_only.contains(&m.checkpoint) || c.aborts.contains(m))
        .cloned()
        .collect();
    aborts.extend(c.aborts.iter().filter(|m| !f.aborts.contains(m)).cloned());
    c.aborts = aborts;
    true
}

pub(super) fn start_aborts(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !ctx.gen2()
        || !matches!(ctx.event, Some(Event::StartScheduler))
        || !f.aborted.is_empty()
        || c.aborted.is_empty()
    {
        return false;
    }
    if c.aborted.iter().any(|(_, w)| *w != Abort::Suspended) {
        return false;
    }
    c.aborted.clear();
    c.aborts.clear();
    c.requests = f.requests.clone();
    c.discarded = f.discarded.clone();
    make_state_equal(c, f);
    true
}
