//! The coordinator's lifecycle: start, restore and shutdown (timers, the
//! store's shutdown, what a restore adds and aborts).

use super::{make_state_equal, Ctx};
use crate::conformance::decision::{Abort, Decision};
use crate::conformance::event::Event;
use crate::conformance::profile::Version;

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
