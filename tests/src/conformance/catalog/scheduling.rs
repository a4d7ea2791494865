//! Triggering: queued user requests, the periodic timer, master hooks
//! serializing triggers, and triggers that wait for every task.

use super::{make_state_equal, take_request_failure, user_trigger, Ctx};
use crate::conformance::decision::{Abort, Decision, RequestEnd};
use crate::conformance::event::Event;
use crate::conformance::profile::Version;

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
    let full = ctx.before_flink.state.pending.len() >= ctx.config.max_concurrent as usize
        || f.state.pending.len() >= ctx.config.max_concurrent as usize;
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
    if !(live && flink_queued_behind_hooks(ctx, c, f) || within) {
        return false;
    }
    take_queued_behind_hooks(c, f);
    true
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
    let refused = c
        .requests
        .iter()
        .any(|(_, e)| *e == RequestEnd::Failed(Abort::NotAllRequiredTasksRunning))
        || (f.state.pending.len() > c.state.pending.len());
    if !(idle_waited && triggers_run && refused) || c.requests == f.requests && c.state == f.state {
        return false;
    }
    make_state_equal(c, f);
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    c.requests = f.requests.clone();
    true
}
