//! Tasks: a task attempt's failure and the restart, which attempts are
//! notified, late acks, and declines from another attempt.

use super::{make_state_equal, Ctx};
use crate::conformance::decision::{Abort, AckClass, Decision, RequestEnd};
use crate::conformance::event::Event;

pub(super) fn task_failure_aborts(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let default_scheduler = matches!(
        ctx.event,
        Some(Event::TaskFailed { legacy: false, .. } | Event::TaskRunning { .. })
    );
    if !default_scheduler || !f.aborted.is_empty() {
        return false;
    }
    if c.aborted.is_empty() || c.aborted.iter().any(|(_, w)| *w != Abort::TaskFailure) {
        return false;
    }
    c.aborted.clear();
    c.aborts.clear();
    // Its requests, and those resumed from the queue after it.
    c.requests = f.requests.clone();
    c.triggers = f.triggers.clone();
    make_state_equal(c, f);
    c.discarded = f.discarded.clone();
    true
}

pub(super) fn restart_reasons(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::Restart)) {
        return false;
    }
    let mut changed = false;
    for (id, why) in &mut c.aborted {
        if *why == Abort::TaskFailure && f.aborted.contains(&(*id, Abort::Failover)) {
            *why = Abort::Failover;
            changed = true;
        }
    }
    for (_, e) in &mut c.requests {
        if *e == RequestEnd::Failed(Abort::TaskFailure) {
            *e = RequestEnd::Failed(Abort::Failover);
            changed = true;
        }
    }
    c.aborted.sort();
    c.requests.sort();
    changed
}

pub(super) fn notify_only_running(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let before = f.aborts.len();
    f.aborts.retain(|m| {
        c.aborts.contains(m)
            || ctx
                .ckpt_tasks
                .get(m.task as usize)
                .is_some_and(|t| t.running || t.attempt != m.attempt)
    });
    f.aborts.len() != before
}

pub(super) fn late_ack_memory(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::Ack { .. })) {
        return false;
    }
    if c.ack == Some(AckClass::Late) && f.ack == Some(AckClass::UnknownCheckpoint) {
        c.ack = f.ack;
        return true;
    }
    false
}

pub(super) fn restart_notifies(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::Restart)) || !f.aborts.is_empty() || c.aborts.is_empty() {
        return false;
    }
    // Only messages to the attempts the restart stops (every task gets a
    // new attempt).
    let old = c.aborts.iter().all(|m| {
        ctx.ckpt_tasks
            .get(m.task as usize)
            .is_some_and(|t| m.attempt < t.attempt)
    });
    if old {
        c.aborts.clear();
    }
    old
}

pub(super) fn decline_other_attempt(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let Some(Event::Decline {
        task, checkpoint, ..
    }) = ctx.event
    else {
        return false;
    };
    // ckpt ignored it: the checkpoint waits for another attempt of the task.
    let ignored = c.aborted.is_empty()
        && c.state.pending.iter().any(|p| p.checkpoint == *checkpoint)
        && f.aborted.iter().any(|(k, _)| k == checkpoint);
    let newer = ctx
        .ckpt_tasks
        .get(*task as usize)
        .is_some_and(|t| t.attempt > 0);
    if !ignored || !newer {
        return false;
    }
    *c = f.clone();
    true
}
