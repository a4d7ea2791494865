//! Completion and the store: the subsumed checkpoint on notify-complete,
//! savepoint completion and retention, 1.11's store failures, duplicate
//! discards and unreported expiry.

use super::{make_state_equal, mask_counter_if, Ctx};
use crate::conformance::decision::{Abort, AckClass, Decision, RequestEnd};
use crate::conformance::event::Event;

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
    make_state_equal(c, f);
    c.discarded = f.discarded.clone();
    c.completes = f.completes.clone();
    true
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
