//! Task attempts: failures, restarts, late and duplicate messages, and the notifications a task gets.

use super::*;

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

pub(super) fn restore_last_added(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // 1.11 restores the checkpoint added to its store last (savepoints do
    // not subsume pending savepoints, so an older one can complete after a
    // newer one); ckpt restores the one with the highest id.
    if ctx.version() != Version::V1_11 || !matches!(ctx.event, Some(Event::Restart)) {
        return false;
    }
    let store = &ctx.before_ckpt.state.store;
    let (Some(Some(ci)), Some(Some(fi))) = (c.restored, f.restored) else {
        return false;
    };
    let newest = store.iter().map(|e| e.0).max();
    let last_added = store.last().map(|e| e.0);
    if ci == fi || newest != Some(ci) || last_added != Some(fi) {
        return false;
    }
    c.restored = f.restored;
    true
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

pub(super) fn duplicate_discard(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let Some(Event::Ack { state: Some(h), .. }) = ctx.event else {
        return false;
    };
    if c.ack != Some(AckClass::Duplicate) || f.ack != Some(AckClass::Duplicate) {
        return false;
    }
    if c.discarded == vec![*h] && f.discarded.is_empty() {
        c.discarded.clear();
        return true;
    }
    false
}

pub(super) fn expiry_unreported(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::Advance { .. })) {
        return false;
    }
    let waiting = ctx.flink_hooks_waiting();
    let ids: Vec<u64> = c
        .aborted
        .iter()
        .filter(|(id, w)| {
            let created_now = !ctx
                .before_ckpt
                .state
                .pending
                .iter()
                .any(|p| p.checkpoint == *id);
            *w == Abort::Expired
                && (created_now || !ctx.gen2() && waiting.contains(id))
                && !f.aborted.iter().any(|(k, _)| k == id)
                && !f.state.pending.iter().any(|p| p.checkpoint == *id)
        })
        .map(|(id, _)| *id)
        .collect();
    if ids.is_empty() {
        return false;
    }
    c.aborted.retain(|(id, _)| !ids.contains(id));
    c.aborts.retain(|m| !ids.contains(&m.checkpoint));
    f.aborts.retain(|m| !ids.contains(&m.checkpoint));
    true
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

/// Whether Flink's pending checkpoint `id`, in the response `line`, has
/// `task` in its plan: in `acked` or in `not_acked` (its tasks to wait
/// for). A task the plan left out (finished when it was planned) is in
/// neither.
fn in_flink_plan(line: &Value, list: &[&str], id: u64, task: u32) -> bool {
    line.pointer("/state/pending")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("checkpoint").and_then(Value::as_u64) == Some(id))
        .flat_map(|p| {
            list.iter()
                .flat_map(|key| p.get(*key).and_then(Value::as_array).into_iter().flatten())
        })
        .any(|t| t.as_u64() == Some(u64::from(task)))
}

/// Whether `task`'s slot of checkpoint `id` was pre-filled on ckpt's side
/// before the event: acknowledged there, outside Flink's plan (the task
/// was finished when the checkpoint was planned).
fn prefilled_before(ctx: &Ctx<'_>, id: u64, task: u32) -> bool {
    ctx.before_ckpt
        .state
        .pending
        .iter()
        .any(|p| p.checkpoint == id && p.acked.contains(&task))
        && !in_flink_plan(ctx.before_flink_line, &["acked", "not_acked"], id, task)
}

/// ckpt's plan pre-fills a finished task's slot (no state), which its
/// pending view shows as acknowledged; Flink leaves a finished task out of
/// the tasks to wait for. Only those slots are taken out.
/// A slot is pre-filled on ckpt's side when Flink's pending checkpoint
/// neither has the task's ack nor waits for it (its `not_acked`).
/// An ack the finished attempt sends anyway for such a checkpoint (it was
/// never triggered: ckpt's host sends a finished attempt no RPC), or one
/// from the task's attempt before or after the finish, meets the
/// pre-filled slot, so ckpt classes it a duplicate where Flink's plan does
/// not know the task; both ignore it and discard its state.
pub(super) fn finished_slot(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let flink_waits = |id: u64, task: u32| in_flink_plan(ctx.flink_line, &["not_acked"], id, task);
    let mut changed = false;
    if let Some(Event::Ack {
        task, checkpoint, ..
    }) = ctx.event
    {
        if prefilled_before(ctx, *checkpoint, *task)
            && c.ack == Some(AckClass::Duplicate)
            && f.ack == Some(AckClass::UnknownTask)
        {
            c.ack = f.ack;
            changed = true;
        }
    }
    for p in &mut c.state.pending {
        let Some(q) = f
            .state
            .pending
            .iter()
            .find(|q| q.checkpoint == p.checkpoint)
        else {
            continue;
        };
        let id = p.checkpoint;
        let before = p.acked.len();
        p.acked
            .retain(|t| q.acked.contains(t) || flink_waits(id, *t));
        changed |= p.acked.len() != before;
    }
    changed
}

/// Every task finished and the job finished: ckpt refuses every later
/// trigger, whatever the host does with the tasks; Flink's coordinator,
/// whose scheduler would not restart a finished job, triggers when the
/// sequence restarts them.
pub(super) fn finished_job_refuses(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    // Refused, or (a periodic firing) Flink went on where ckpt did
    // nothing: it triggered, ran its master hooks, or used up an armed id
    // failure.
    let refused = request_failed(c, Abort::NotAllRequiredTasksRunning);
    let went_on = c.triggers.is_empty() != f.triggers.is_empty()
        || c.hooks.is_empty() && !f.hooks.is_empty()
        || c.state.pending.len() < f.state.pending.len()
        || c.state.armed != f.state.armed;
    if !ctx.ckpt_job_finished || !refused && !went_on {
        return false;
    }
    *c = f.clone();
    true
}

/// 1.20/2.3: Flink's plan calculator counts a FAILED task as finished
/// (FLINK-40482, in the jars compared): with a source finished and another
/// task down, Flink plans and goes on to the id counter where ckpt refuses
/// (NotAllRequiredTasksRunning) before it; only the request's end and an
/// armed id failure show it, or, for a periodic firing, Flink's trigger
/// where ckpt's has none.
pub(super) fn failed_counts_as_finished(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let down = ctx.ckpt_tasks.iter().any(|t| !t.running && !t.finished);
    let finished = ctx.ckpt_tasks.iter().any(|t| t.finished);
    // A user's request ends refused; a periodic firing triggers nothing.
    let refused = request_failed(c, Abort::NotAllRequiredTasksRunning);
    // (Flink may also have failed it at the id counter, using up an armed
    // failure that ckpt's refusal never reached.)
    let periodic = matches!(ctx.event, Some(Event::Advance { .. }))
        && c.triggers.is_empty()
        && c.hooks.is_empty()
        && (!f.triggers.is_empty() || !f.hooks.is_empty() || c.state.armed.id && !f.state.armed.id);
    if !ctx.gen2() || !down || !finished || !(refused && c.requests != f.requests || periodic) {
        return false;
    }
    c.requests = f.requests.clone();
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    c.state.pending = f.state.pending.clone();
    c.state.armed = f.state.armed;
    true
}

/// A task finished while checkpoints still waited for it: ckpt aborts them
/// at once (`AbortReason::TaskFinished`, uncounted), Flink's coordinator is
/// not told and keeps them pending.
pub(super) fn finish_aborts_waiting(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::TaskFinished { .. })) || c.aborted.is_empty() {
        return false;
    }
    let ids: Vec<u64> = c.aborted.iter().map(|(id, _)| *id).collect();
    let was_pending = |id: u64| {
        ctx.before_ckpt
            .state
            .pending
            .iter()
            .any(|p| p.checkpoint == id)
    };
    // The finish's own aborts (checkpoints that waited for the task,
    // which Flink keeps pending), and what the request queued behind them
    // did once it resumed in the same event: a checkpoint planned now (the
    // final one, once every task finished) may end at once, e.g. in an
    // armed finalize failure.
    let finish_abort = |(id, w): &(u64, Abort)| {
        *w == Abort::NotAllRequiredTasksRunning
            && f.state.pending.iter().any(|p| p.checkpoint == *id)
    };
    let explained = c
        .aborted
        .iter()
        .all(|a| finish_abort(a) || !was_pending(a.0));
    if !(c.aborted.iter().any(finish_abort) && explained && f.aborted.is_empty()) {
        return false;
    }
    // The resumed request may have failed at the id counter, which ckpt
    // counts (trigger-failures-counted).
    let trigger_failed = request_failed(c, Abort::TriggerFailure);
    c.aborted.clear();
    c.aborts.retain(|m| !ids.contains(&m.checkpoint));
    c.requests = f.requests.clone();
    c.discarded = f.discarded.clone();
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    c.state.pending = f.state.pending.clone();
    c.state.queued = f.state.queued;
    c.state.periodic_at = f.state.periodic_at;
    // A request queued behind the aborted checkpoints resumes in the same
    // event; with every task finished it is the final checkpoint, which
    // completes at once (final-checkpoint-after-all-finished).
    c.completed = f.completed.clone();
    c.completes = f.completes.clone();
    c.state.store = f.state.store.clone();
    c.state.armed = f.state.armed;
    if trigger_failed {
        c.state.failure_counter = f.state.failure_counter;
        c.fail_job = f.fail_job;
    }
    true
}

/// Every task finished: ckpt's next trigger plans the job's final
/// checkpoint (every slot pre-filled) and completes it at once; Flink's
/// fails the trigger.
pub(super) fn final_checkpoint(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let all_finished = !ctx.ckpt_tasks.is_empty() && ctx.ckpt_tasks.iter().all(|t| t.finished);
    if !all_finished
        || !user_trigger(ctx, None) && !matches!(ctx.event, Some(Event::Advance { .. }))
    {
        return false;
    }
    // ckpt's final checkpoint completed, or failed in its finalize or
    // store (an armed failure Flink's refused trigger never reaches), or
    // waits for the master hooks (`hooks`: every slot is pre-filled, the
    // hooks are all it waits for).
    let planned = c.state.pending.iter().any(|p| {
        !ctx.before_ckpt
            .state
            .pending
            .iter()
            .any(|q| q.checkpoint == p.checkpoint)
    });
    let hooks = !c.hooks.is_empty() && f.hooks.is_empty();
    let created = !c.completed.is_empty() || !c.aborted.is_empty() || planned || hooks;
    if !created || !f.completed.is_empty() || !f.aborted.is_empty() {
        return false;
    }
    *c = f.clone();
    true
}

/// A task attempt that finished gets no more RPCs from ckpt's host; Flink
/// still sends the notifications to a finished execution. Only the
/// notifications to finished tasks that ckpt's side lacks are taken out.
pub(super) fn no_rpc_to_finished(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let finished = |task: u32| {
        ctx.ckpt_tasks
            .get(task as usize)
            .is_some_and(|t| t.finished)
    };
    let before = f.completes.len() + f.aborts.len();
    f.completes
        .retain(|m| !finished(m.task) || c.completes.contains(m));
    f.aborts
        .retain(|m| !finished(m.task) || c.aborts.contains(m));
    before != f.completes.len() + f.aborts.len()
}

/// A checkpoint planned while a task was finished (its slot pre-filled on
/// ckpt's side, the task outside Flink's plan) ends after the task was
/// started again: ckpt notifies the task's new attempt, which runs when
/// the checkpoint ends; Flink notifies only the executions of its plan.
/// Only those notifications are taken out.
pub(super) fn restarted_after_finish_notified(
    ctx: &Ctx<'_>,
    c: &mut Decision,
    f: &mut Decision,
) -> bool {
    let prefilled = |id: u64, task: u32| prefilled_before(ctx, id, task);
    let restarted = |task: u32, attempt: u32| {
        attempt > 0
            && ctx
                .ckpt_tasks
                .get(task as usize)
                .is_some_and(|t| t.running && !t.finished && t.attempt == attempt)
    };
    let before = c.completes.len() + c.aborts.len();
    c.completes.retain(|m| {
        f.completes.contains(m)
            || !(prefilled(m.checkpoint, m.task) && restarted(m.task, m.attempt))
    });
    c.aborts.retain(|m| {
        f.aborts.contains(m) || !(prefilled(m.checkpoint, m.task) && restarted(m.task, m.attempt))
    });
    before != c.completes.len() + c.aborts.len()
}

/// A task acknowledged a checkpoint before its trigger RPC went out (the
/// checkpoint waited for its master hooks) and a new attempt of the task
/// runs when the trigger goes out: ckpt addresses the RPC to the task's
/// current attempt, Flink to the attempt of the checkpoint's plan. Only
/// such RPCs are taken out: the slot acknowledged before the event on both
/// sides, ckpt's RPC to the task's current attempt, Flink's, otherwise the
/// same message, to an older one.
pub(super) fn trigger_to_current_attempt(
    ctx: &Ctx<'_>,
    c: &mut Decision,
    f: &mut Decision,
) -> bool {
    let acked_before = |d: &Decision, id: u64, task: u32| {
        d.state
            .pending
            .iter()
            .any(|p| p.checkpoint == id && p.acked.contains(&task))
    };
    let current = |task: u32, attempt: u32| {
        ctx.ckpt_tasks
            .get(task as usize)
            .is_some_and(|t| t.attempt == attempt)
    };
    // (index in ckpt's triggers, Flink's attempt for it)
    let mut moves: Vec<(usize, u32)> = Vec::new();
    for (i, m) in c.triggers.iter().enumerate() {
        if f.triggers.contains(m)
            || !current(m.task, m.attempt)
            || !acked_before(ctx.before_ckpt, m.checkpoint, m.task)
            || !acked_before(ctx.before_flink, m.checkpoint, m.task)
        {
            continue;
        }
        let older = f.triggers.iter().find(|n| {
            n.attempt < m.attempt
                && !c.triggers.contains(n)
                && TriggerMsg {
                    attempt: m.attempt,
                    mode: m.mode.clone(),
                    ..(*n).clone()
                } == *m
        });
        if let Some(n) = older {
            moves.push((i, n.attempt));
        }
    }
    for (i, attempt) in &moves {
        c.triggers[*i].attempt = *attempt;
    }
    if !moves.is_empty() {
        c.triggers.sort();
    }
    !moves.is_empty()
}
