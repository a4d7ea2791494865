//! Completion and the store: what a completion notifies and keeps, savepoints in the store, store failures and shutdown.

use super::*;

pub(super) fn last_subsumed(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !ctx.profile.complete_carries_last_subsumed {
        return false;
    }
    // Flink names the checkpoint this completion evicted from the store:
    // it must be one that left ckpt's store in the same event.
    let evicted: Vec<u64> = ctx
        .before_ckpt
        .state
        .store
        .iter()
        .filter(|e| !c.state.store.contains(e))
        .map(|e| e.0)
        .collect();
    let mut changed = false;
    for m in &mut f.completes {
        if let Some(v) = m.last_subsumed {
            if v.is_some_and(|id| !evicted.contains(&id)) {
                return false;
            }
            m.last_subsumed = None;
            changed = true;
        }
    }
    if changed {
        f.completes.sort();
    }
    changed
}

pub(super) fn shutdown_silent(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, None | Some(Event::Shutdown(_))) {
        return false;
    }
    let ended: Vec<u64> = c
        .aborted
        .iter()
        .filter(|(_, w)| *w == Abort::Shutdown)
        .map(|(id, _)| *id)
        .collect();
    let before = f.aborts.len();
    f.aborts
        .retain(|m| !ended.contains(&m.checkpoint) || c.aborts.contains(m));
    f.aborts.len() != before
}

pub(super) fn store_shut_down(_ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if c.state.shutdown && f.state.shutdown && f.state.store.is_empty() && !c.state.store.is_empty()
    {
        c.state.store.clear();
        return true;
    }
    false
}

pub(super) fn savepoint_completion(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !ctx.gen2() {
        return false;
    }
    let mut sps: Vec<u64> = c
        .completed
        .iter()
        .filter(|(id, sp)| *sp && f.completed.contains(&(*id, true)))
        .map(|(id, _)| *id)
        .collect();
    // ckpt's store write of a savepoint failed (an armed failure), Flink
    // never writes a savepoint to the store.
    let failed: Vec<u64> = c
        .aborted
        .iter()
        .filter(|(id, w)| {
            *w == Abort::FinalizeFailure
                && ctx.is_savepoint_before(*id)
                && f.completed.contains(&(*id, true))
        })
        .map(|(id, _)| *id)
        .collect();
    if !failed.is_empty() {
        c.aborted.retain(|(id, _)| !failed.contains(id));
        c.completed = f.completed.clone();
        sps.extend(failed);
    }
    if sps.is_empty() || f.completes.iter().any(|m| sps.contains(&m.checkpoint)) {
        return false;
    }
    c.completes.retain(|m| !sps.contains(&m.checkpoint));
    // What follows from ckpt's completion: subsumed checkpoints, their
    // notifications and discards, the store.
    c.aborted
        .retain(|(id, w)| *w != Abort::Subsumed || f.aborted.contains(&(*id, Abort::Subsumed)));
    c.aborts = f.aborts.clone();
    c.requests = f.requests.clone();
    c.discarded = f.discarded.clone();
    // ckpt resumes its queue after the completion; Flink's savepoint
    // completion starts nothing.
    c.triggers = f.triggers.clone();
    c.hooks = f.hooks.clone();
    make_state_equal(c, f);
    true
}

pub(super) fn store_failure_1_11(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if ctx.gen2() {
        return false;
    }
    let ids: Vec<u64> = c
        .aborted
        .iter()
        .filter(|(id, w)| {
            *w == Abort::FinalizeFailure
                && f.completed.iter().any(|(k, _)| k == id)
                && !f.state.store.iter().any(|(k, _)| k == id)
        })
        .map(|(id, _)| *id)
        .collect();
    if ids.is_empty() {
        return false;
    }
    // 1.11 completed the future and reset the failure counter before the
    // store write failed; it then discarded and notified as ckpt does.
    f.completed.retain(|(k, _)| !ids.contains(k));
    for id in &ids {
        f.aborted.push((*id, Abort::FinalizeFailure));
    }
    f.aborted.sort();
    // Both sides: a recognizer applied before this one
    // (`hooks-serialize-triggers`) may have copied Flink's request ends,
    // 1.11's `Completed` among them, into ckpt's side.
    fail_completed_requests(&mut f.requests, &ids);
    fail_completed_requests(&mut c.requests, &ids);
    mask_counter_if(true, c, f);
    true
}

/// Every request that ended `Completed` by one of `ids` (checkpoints whose
/// store write failed) ends `Failed(FinalizeFailure)` instead; sorted.
pub(super) fn fail_completed_requests(requests: &mut [(u32, RequestEnd)], ids: &[u64]) {
    for (_, e) in requests.iter_mut() {
        if matches!(e, RequestEnd::Completed(k) if ids.contains(k)) {
            *e = RequestEnd::Failed(Abort::FinalizeFailure);
        }
    }
    requests.sort();
}

pub(super) fn savepoint_retention_1_11(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if ctx.gen2()
        || !c
            .state
            .store
            .iter()
            .chain(&f.state.store)
            .any(|(_, sp)| *sp)
    {
        return false;
    }
    // 1.11's store counted a savepoint and evicted an older entry ckpt keeps.
    let evicted = c.state.store.iter().any(|e| !f.state.store.contains(e));
    if !evicted || f.state.store.iter().any(|e| !c.state.store.contains(e)) {
        return false;
    }
    c.state.store = f.state.store.clone();
    c.discarded = f.discarded.clone();
    c.completes = f.completes.clone();
    true
}
