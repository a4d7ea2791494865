//! The divergence catalog: every way ckpt's coordinator is known to decide
//! differently from Flink's, by name, with the pattern that recognizes it,
//! what each Flink version does (and the evidence: `tests/flink/FINDINGS.md`
//! scenarios and the jars' methods), what ckpt does, and why.
//!
//! Two classes:
//!
//! * [`Class::Choice`]: a documented, deliberate difference (mostly a
//!   safety choice of ckpt's). Counted, never a failure.
//! * [`Class::Gap`]: a difference ckpt should not have, or needs a
//!   per-version switch in the reducer to match: a proposed fix is given.
//!   Counted, and a failure unless the run allows it (`--allow NAME`).
//!
//! A recognizer looks at one event's two decisions and, when its pattern is
//! there, takes exactly the part it explains out of both (usually by making
//! ckpt's side say what Flink's says, or the other way round) and returns
//! `true`. The comparator applies recognizers until the two decisions are
//! equal; whatever no recognizer takes out is an unexplained divergence.

use serde_json::Value;

use super::ckpt_side::TaskView;
use super::decision::{Abort, AckClass, Decision, RequestEnd};
use super::event::{Event, SeqConfig, TriggerAsk};
use super::profile::{FlinkProfile, Version};

/// What a recognizer sees.
pub struct Ctx<'a> {
    /// The version compared against.
    pub profile: &'a FlinkProfile,
    /// The sequence's configuration.
    pub config: &'a SeqConfig,
    /// The event (`None`: the end of the sequence).
    pub event: Option<&'a Event>,
    /// Its index.
    pub index: usize,
    /// ckpt's decision for the previous event (its state is the state
    /// before this one).
    pub before_ckpt: &'a Decision,
    /// Flink's, likewise.
    pub before_flink: &'a Decision,
    /// ckpt's tasks after the event.
    pub ckpt_tasks: &'a [TaskView],
    /// ckpt's stop-with-savepoint was requested or done before the event
    /// and still is after it.
    pub ckpt_stopping: bool,
    /// Flink's response line for the event (its `state` has more than
    /// the decision record: `triggering`, `hooks_waiting`, `tasks`).
    pub flink_line: &'a Value,
    /// Flink's response line for the previous event.
    pub before_flink_line: &'a Value,
}

impl Ctx<'_> {
    fn version(&self) -> Version {
        self.profile.version
    }
    fn gen2(&self) -> bool {
        self.version().is_gen2()
    }
    /// Flink was starting a request before the event (`isTriggering`: a
    /// master hook is outstanding).
    fn flink_was_triggering(&self) -> bool {
        self.before_flink_line
            .pointer("/state/triggering")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
    /// Flink's checkpoints with a master hook outstanding before the event.
    fn flink_hooks_waiting(&self) -> Vec<u64> {
        self.before_flink_line
            .pointer("/state/hooks_waiting")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|h| h.get("checkpoint").and_then(Value::as_u64))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn is_savepoint_before(&self, id: u64) -> bool {
        self.before_ckpt
            .state
            .pending
            .iter()
            .any(|p| p.checkpoint == id && p.savepoint)
    }
}

/// What happens to the comparison of the sequence after an entry matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// The states still agree: go on comparing.
    Continue,
    /// Only the failure counter (and fail-job) are apart: go on, without
    /// comparing them until both counters agree again (after the next
    /// completion both are 0).
    MaskCounter,
    /// The two coordinators' states are apart for good: the sequence is
    /// not compared further.
    Stop,
}

/// Whether a difference is a documented choice or a gap with a fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A deliberate, documented choice of ckpt's.
    Choice,
    /// A gap in ckpt; `fix` is the proposed reducer change.
    Gap {
        /// The proposed change.
        fix: &'static str,
    },
}

/// One catalog entry.
pub struct Entry {
    /// Its name (`--allow` takes it, the summary counts it).
    pub name: &'static str,
    /// Choice or gap.
    pub class: Class,
    /// The event pattern that recognizes it, in words.
    pub pattern: &'static str,
    /// What Flink does, per version, and the evidence.
    pub flink: &'static str,
    /// What ckpt does.
    pub ckpt: &'static str,
    /// Why ckpt does it (or why it is a gap).
    pub why: &'static str,
    /// What follows for the comparison.
    pub after: After,
    /// The recognizer.
    pub recognize: fn(&Ctx<'_>, &mut Decision, &mut Decision) -> bool,
}

impl Entry {
    /// Whether this is a gap (a failure unless allowed).
    pub fn is_gap(&self) -> bool {
        matches!(self.class, Class::Gap { .. })
    }
}

/// The entry called `name`.
pub fn by_name(name: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.name == name)
}

fn user_trigger(ctx: &Ctx<'_>, forced: Option<bool>) -> bool {
    match (ctx.event, forced) {
        (Some(Event::Trigger(TriggerAsk::Checkpoint { forced: f })), Some(want)) => *f == want,
        (Some(Event::Trigger(_)), None) => true,
        _ => false,
    }
}

/// Removes from `c.requests` the failure `why` of the newest user request
/// when `f` has no end for it; true if it did.
fn take_request_failure(c: &mut Decision, f: &Decision, why: &Abort) -> bool {
    let Some(pos) = c
        .requests
        .iter()
        .position(|(_, e)| *e == RequestEnd::Failed(why.clone()))
    else {
        return false;
    };
    let ordinal = c.requests[pos].0;
    if f.requests.iter().any(|(o, _)| *o == ordinal) {
        return false;
    }
    c.requests.remove(pos);
    true
}

fn make_state_equal(c: &mut Decision, f: &Decision) {
    c.state = f.state.clone();
}

// ----- the recognizers --------------------------------------------------------

fn is_stop_event(ctx: &Ctx<'_>) -> bool {
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
fn stop_suspends(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !is_stop_event(ctx)
        || c.requests
            .iter()
            .any(|(_, e)| *e == RequestEnd::Failed(Abort::Stopping))
    {
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
fn stopping_refuses(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let refused = c
        .requests
        .iter()
        .any(|(_, e)| *e == RequestEnd::Failed(Abort::Stopping));
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
    false
}

/// 1.20/2.3: a synchronous savepoint (notified on both sides) completes:
/// ckpt's store holds it, Flink's does not.
fn stop_savepoint_retained(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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
                && c.requests
                    .iter()
                    .any(|(_, e)| *e == RequestEnd::Failed(Abort::FinalizeFailure))
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
fn sync_savepoint_fails_job(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond =
        f.fail_job > c.fail_job && c.aborted.iter().any(|(id, _)| ctx.is_savepoint_before(*id));
    mask_counter_if(cond, c, f)
}

/// Flink's trigger names the alignment, the mode and the location; ckpt's
/// carries none of them. Only the values the harness's configuration gives
/// are taken out: aligned exactly-once checkpoints and savepoints to the
/// default location (the harness gives no savepoint target).
fn trigger_mode(_: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let mut changed = false;
    for m in &mut f.triggers {
        let Some(mode) = &m.mode else { continue };
        if mode != "aligned exactly-once default-location" {
            return false;
        }
        m.mode = None;
        changed = true;
    }
    if changed {
        f.triggers.sort();
        c.triggers.sort();
    }
    changed
}

fn last_subsumed(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn fail_job_latch(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let tolerable = u64::from(ctx.config.tolerable_failures);
    let (Some(cc), Some(fc)) = (c.state.failure_counter, f.state.failure_counter) else {
        return false;
    };
    // The event that fails the job: both fail it, ckpt's counter stays
    // above the bound (latched), Flink's starts again from 0.
    let failing =
        c.fail_job == f.fail_job && f.fail_job.unwrap_or(0) > 0 && cc > tolerable && fc == 0;
    // Later: ckpt stays latched (no second FailJob) while Flink counts on
    // and may fail the job again.
    let latched = cc > tolerable && fc != cc;
    if !(failing || latched) {
        return false;
    }
    c.state.failure_counter = None;
    f.state.failure_counter = None;
    c.fail_job = None;
    f.fail_job = None;
    true
}

/// The checkpoints of this event aborted with a reason Flink counts, that
/// were savepoints.
fn savepoint_failures(ctx: &Ctx<'_>, c: &Decision) -> bool {
    c.aborted.iter().any(|(id, why)| {
        ctx.is_savepoint_before(*id)
            && match why {
                Abort::Declined(r) => r == "CHECKPOINT_ASYNC_EXCEPTION",
                Abort::Expired => !ctx.gen2(),
                Abort::FinalizeFailure => ctx.gen2(),
                _ => false,
            }
    })
}

fn mask_counter_if(cond: bool, c: &mut Decision, f: &mut Decision) -> bool {
    if !cond || (c.state.failure_counter == f.state.failure_counter && c.fail_job == f.fail_job) {
        return false;
    }
    c.state.failure_counter = None;
    f.state.failure_counter = None;
    c.fail_job = None;
    f.fail_job = None;
    true
}

fn savepoint_not_counted(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = savepoint_failures(ctx, c);
    mask_counter_if(cond, c, f)
}

fn trigger_failure_counted(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = c.aborted.iter().any(|(_, w)| *w == Abort::TriggerFailure)
        || c.requests
            .iter()
            .any(|(_, e)| *e == RequestEnd::Failed(Abort::TriggerFailure))
        || matches!(ctx.event, Some(Event::Advance { .. } | Event::Trigger(_)))
            && c.state.failure_counter > f.state.failure_counter
            && ctx.before_ckpt.state.failure_counter == ctx.before_flink.state.failure_counter
            && !c.aborted.iter().any(|(_, w)| w.counts_in_every_version())
        || matches!(ctx.event, Some(Event::Advance { .. } | Event::Trigger(_)))
            && ctx.before_ckpt.state.failure_counter == ctx.before_flink.state.failure_counter
            && one_more_than_counted(ctx, c, f);
    cond && mask_counter_if(true, c, f)
}

/// The same event also aborted checkpoints that every version counts (an
/// expiry in the advance whose periodic trigger then failed to get an id):
/// Flink's counter rose by exactly those, ckpt's by one more.
fn one_more_than_counted(ctx: &Ctx<'_>, c: &Decision, f: &Decision) -> bool {
    let (Some(before), Some(cc), Some(fc)) = (
        ctx.before_flink.state.failure_counter,
        c.state.failure_counter,
        f.state.failure_counter,
    ) else {
        return false;
    };
    let counted = c
        .aborted
        .iter()
        .filter(|(_, w)| w.counts_in_every_version())
        .count() as u64;
    counted > 0 && fc == before + counted && cc == fc + 1
}

fn finalize_failure_counting(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = !ctx.gen2() && c.aborted.iter().any(|(_, w)| *w == Abort::FinalizeFailure);
    mask_counter_if(cond, c, f)
}

fn already_queued(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn periodic_paused(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn task_failure_aborts(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn restart_reasons(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn notify_only_running(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn late_ack_memory(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if !matches!(ctx.event, Some(Event::Ack { .. })) {
        return false;
    }
    if c.ack == Some(AckClass::Late) && f.ack == Some(AckClass::UnknownCheckpoint) {
        c.ack = f.ack;
        return true;
    }
    false
}

fn shutdown_timer(_ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn periodic_fixed_rate(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn restore_last_added(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn restart_notifies(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn shutdown_silent(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn store_shut_down(_ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    if c.state.shutdown && f.state.shutdown && f.state.store.is_empty() && !c.state.store.is_empty()
    {
        c.state.store.clear();
        return true;
    }
    false
}

/// Flink queued a request because a trigger was in progress (a master
/// hook outstanding) where ckpt went on with it.
fn flink_queued_behind_hooks(ctx: &Ctx<'_>, c: &Decision, f: &Decision) -> bool {
    ctx.config.hooks > 0 && ctx.flink_was_triggering() && f.state.queued > c.state.queued
}

fn take_queued_behind_hooks(c: &mut Decision, f: &Decision) {
    make_state_equal(c, f);
    c.hooks = f.hooks.clone();
    c.triggers = f.triggers.clone();
    c.requests = f.requests.clone();
}

fn hooks_serialize(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn hook_expiry_wedge(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn trigger_waits_for_all(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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
        || (f.state.pending.len() > c.state.pending.len())
        // 1.11 went on to the id counter and used up the armed failure
        // (its trigger failed there, which neither decision shows).
        || (c.state.armed.id && !f.state.armed.id);
    if !(idle_waited && triggers_run && refused) || c.requests == f.requests && c.state == f.state {
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
    true
}

fn savepoint_completion(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn start_aborts(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn store_failure_1_11(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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
fn fail_completed_requests(requests: &mut [(u32, RequestEnd)], ids: &[u64]) {
    for (_, e) in requests.iter_mut() {
        if matches!(e, RequestEnd::Completed(k) if ids.contains(k)) {
            *e = RequestEnd::Failed(Abort::FinalizeFailure);
        }
    }
    requests.sort();
}

fn duplicate_discard(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn savepoint_retention_1_11(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn expiry_unreported(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

fn decline_other_attempt(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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

/// Every entry, in the order the comparator tries them.
pub static CATALOG: &[Entry] = &[
    Entry {
        name: "trigger-mode-not-carried",
        class: Class::Choice,
        pattern: "a trigger RPC: Flink's options name the alignment (aligned here), the mode (exactly-once) and the location (the default one: the harness gives savepoints no target); ckpt's carry only the type and a savepoint's target",
        flink: "every version: CheckpointOptions carries isUnalignedCheckpoint / getAlignment (1.20/2.3), isExactlyOnceMode and the target location; the harness runs aligned exactly-once checkpoints (Flink refuses max concurrent above 1 with unaligned checkpoints), and a savepoint is always aligned",
        ckpt: "CheckpointOptions::{FullCheckpoint, Savepoint { target }, SynchronousSavepoint { target, drain }}: the task's channel-state writer takes every checkpoint unaligned (savepoints included) and exactly-once; the location is the host's",
        why: "the alignment is the task's in ckpt (its writer lifecycle is the unaligned one). ckpt restores a savepoint only into the same topology, where its in-flight channel state restores like a checkpoint's; a host that rescales from savepoints needs them aligned, which ckpt does not build",
        after: After::Continue,
        recognize: trigger_mode,
    },
    Entry {
        name: "last-subsumed-not-carried",
        class: Class::Choice,
        pattern: "a completion in 1.20/2.3 whose notify-complete carries lastSubsumed; ckpt's NotifyComplete has no such field (the value is checked: it is a checkpoint that left ckpt's store in the same event)",
        flink: "1.11: notifyCheckpointComplete(attempt, job, id, ts), no such argument. 1.20/2.3: notifyCheckpointOnComplete(..., lastSubsumedCheckpointId), the id this completion evicted when it was discard-on-subsume, else -1 (FINDINGS.md, notify-args)",
        ckpt: "NotifyComplete { task, attempt, checkpoint, timestamp }",
        why: "Flink's tasks use it to release shared state of the subsumed checkpoint; ckpt's coordinator owns every handle and never discards one a live checkpoint holds, and a task reuses only the handle of a checkpoint it was told completed, so tasks need no subsumption notice",
        after: After::Continue,
        recognize: last_subsumed,
    },
    Entry {
        name: "fail-job-latch",
        class: Class::Choice,
        pattern: "the job is failed on both sides; ckpt's counter stays above the tolerance while Flink's starts from 0 (and may fail the job again before a success)",
        flink: "every version: CheckpointFailureManager resets its counter to 0 when it fails the job and counts again (FINDINGS.md, failure-reset)",
        ckpt: "FailJob once; the counter and the latch stay until a checkpoint completes",
        why: "after FailJob the host restarts the job from the latest checkpoint; a second FailJob while that restart runs would only restart it again. The counter is masked until both sides agree again (after the next completion both are 0)",
        after: After::MaskCounter,
        recognize: fail_job_latch,
    },
    Entry {
        name: "savepoint-failures-not-counted",
        class: Class::Choice,
        pattern: "a savepoint aborted with a reason Flink counts (a counted decline; 1.11 also expiry; 1.20/2.3 also a failed finalize) and only the failure counter / fail-job differ",
        flink: "every version counts an ordinary savepoint's counted decline like a checkpoint's (and fails the job at once for a synchronous one); 1.11 also counts its expiry (FINDINGS.md, failure-savepoints)",
        ckpt: "savepoints never count towards the tolerable failures",
        why: "a savepoint is the user's operation; its failure is reported to the user (RequestFailed) and must not fail a healthy job's periodic checkpointing",
        after: After::MaskCounter,
        recognize: savepoint_not_counted,
    },
    Entry {
        name: "trigger-failures-counted",
        class: Class::Choice,
        pattern: "an id-counter or master-hook failure (TRIGGER_CHECKPOINT_FAILURE) and ckpt's counter is above Flink's",
        flink: "never counted: 1.11 does not call the failure manager for trigger failures before a pending checkpoint exists, 1.20/2.3 call handleCheckpointException, which ignores TRIGGER_CHECKPOINT_FAILURE (FINDINGS.md, failure-trigger)",
        ckpt: "IdAllocationFailed and MasterHooksFailed count",
        why: "an id counter or master hook that keeps failing means no checkpoint can ever complete; counting it fails the job after the tolerable number instead of letting it run unprotected forever",
        after: After::MaskCounter,
        recognize: trigger_failure_counted,
    },
    Entry {
        name: "finalize-failures-counted-1.11",
        class: Class::Choice,
        pattern: "1.11: a failed metadata or store write, and only the counter differs",
        flink: "1.11: FINALIZE_CHECKPOINT_FAILURE is not a counted reason; a failed store write comes after handleCheckpointSuccess reset the counter. 1.20/2.3 count both (FINDINGS.md, failure-io)",
        ckpt: "FinalizeFailed and StoreFailed count",
        why: "1.20 and 2.3 count both; 1.11's not counting a failed metadata or store write let a broken store go unnoticed",
        after: After::MaskCounter,
        recognize: finalize_failure_counting,
    },
    Entry {
        name: "already-queued",
        class: Class::Choice,
        pattern: "a non-forced user trigger that ckpt rejects with AlreadyQueued while Flink queues it",
        flink: "every version queues every request (CheckpointRequestDecider, up to 1000, then TOO_MANY_CHECKPOINT_REQUESTS); there is no 'already queued' rejection (FINDINGS.md, periodic)",
        ckpt: "at most one non-forced request waits; a second is rejected (TriggerRejection::AlreadyQueued)",
        why: "a waiting non-forced request already stands for 'a checkpoint as soon as possible'; a queue of them only replays the same wish later, each a checkpoint nobody waits for",
        after: After::Stop,
        recognize: already_queued,
    },
    Entry {
        name: "periodic-paused-while-queued",
        class: Class::Choice,
        pattern: "periodic scheduling on, a request waits in the queue, ckpt's periodic timer is cancelled and Flink's is armed",
        flink: "every version keeps the periodic timer running while requests wait; each firing queues another periodic request (FINDINGS.md, periodic)",
        ckpt: "the periodic timer is cancelled while a non-forced request waits for a free slot and re-armed one interval after it resumes (the seed's TOO_MANY_CONCURRENT_CHECKPOINTS)",
        why: "with one waiting request standing for the next checkpoint (see already-queued), further firings have nothing to add",
        after: After::Stop,
        recognize: periodic_paused,
    },
    Entry {
        name: "task-failure-aborts-at-once",
        class: Class::Choice,
        pattern: "a task attempt fails (or a new attempt replaces it) under Flink's default scheduler: ckpt aborts the checkpoints waiting for it (TaskFailed), Flink aborts nothing",
        flink: "1.11 calls failUnacknowledgedPendingCheckpointsFor only under legacy scheduling; 1.20 never calls it, 2.3 has no such method; the pending checkpoints wait until the scheduler's restart aborts them (JOB_FAILOVER_REGION) or they expire (FINDINGS.md, task-failure)",
        ckpt: "aborts, at once, every pending checkpoint still waiting for that attempt's ack, and only those",
        why: "such a checkpoint can never complete (the attempt that owes the ack is gone); aborting it at once frees its slot and its state instead of holding both until the timeout; the checkpoints the task already acknowledged can still complete",
        after: After::Stop,
        recognize: task_failure_aborts,
    },
    Entry {
        name: "restart-aborts-as-task-failure",
        class: Class::Choice,
        pattern: "a restart: ckpt aborts the checkpoints waiting for a failed task as TaskFailed, Flink aborts them as JOB_FAILOVER_REGION",
        flink: "every version: SchedulerBase.restoreState aborts every pending checkpoint with JOB_FAILOVER_REGION (FINDINGS.md, task-failure)",
        ckpt: "hears TaskFailed for each stopped attempt first (aborting the checkpoints waiting for it, TaskFailed), then Restore ends the rest (Restored)",
        why: "the same checkpoints end, for the same cause, and neither reason counts; ckpt's reason says which attempt they waited for",
        after: After::Continue,
        recognize: restart_reasons,
    },
    Entry {
        name: "notify-aborted-running-only",
        class: Class::Choice,
        pattern: "Flink sends notify-aborted to a task's current attempt that ckpt knows is not running",
        flink: "every version notifies every task of the commit set whose current execution has a slot, whatever its state: failed attempts too (FINDINGS.md, notification arguments)",
        ckpt: "notifies running attempts only",
        why: "a failed attempt has no task to receive the message; the RPC could only fail",
        after: After::Continue,
        recognize: notify_only_running,
    },
    Entry {
        name: "late-ack-memory",
        class: Class::Choice,
        pattern: "an ack for a checkpoint that recently ended: ckpt calls it late, Flink unknown (1.20/2.3: it ended other than by expiry; 1.11: its store write failed)",
        flink: "1.11 remembers the last 16 completed and aborted ids (not one whose store write failed); 1.20/2.3 keep only recentExpiredCheckpoints, so an ack after a completion, decline or subsumption is unknown (receiveAcknowledgeMessage answers false). The state is discarded either way (FINDINGS.md, late-messages)",
        ckpt: "remembers the last 16 ids that ended, however they ended (Ignored::LateMessage)",
        why: "only the classification differs (the handle is discarded on both sides); a late message after a completion is as expected as one after an expiry",
        after: After::Continue,
        recognize: late_ack_memory,
    },
    Entry {
        name: "shutdown-keeps-periodic-timer",
        class: Class::Choice,
        pattern: "after a shutdown Flink's periodic timer is still armed, ckpt's is not",
        flink: "every version: shutdown() does not cancel the periodic trigger (FINDINGS.md, periodic); its firing does nothing",
        ckpt: "Shutdown cancels every timer",
        why: "a shut-down coordinator has nothing to time",
        after: After::Continue,
        recognize: shutdown_timer,
    },
    Entry {
        name: "periodic-fixed-rate-1.11",
        class: Class::Choice,
        pattern: "1.11, periodic scheduling on both sides: the next periodic firing differs (a periodic request ran later than its firing, e.g. queued until an expiry freed a slot)",
        flink: "1.11: CheckpointCoordinator.scheduleTriggerWithDelay calls timer.scheduleAtFixedRate(new ScheduledTrigger(), initialDelay, baseInterval): firings stay on the fixed grid whenever the request runs. 1.20/2.3 re-arm one interval after each trigger (scheduleTriggerWithDelay per trigger), as ckpt does",
        ckpt: "the periodic timer is re-armed one interval after the periodic checkpoint was triggered",
        why: "matches 1.20/2.3: a late checkpoint does not pull the next one closer than the interval",
        after: After::Stop,
        recognize: periodic_fixed_rate,
    },
    Entry {
        name: "restore-newest-id-1.11",
        class: Class::Choice,
        pattern: "1.11, a restart: the store holds savepoints that completed out of id order; ckpt restores the highest id, Flink the entry added last",
        flink: "1.11: CompletedCheckpointStore.getLatestCheckpoint returns getAllCheckpoints().get(size - 1), the checkpoint added last; a savepoint does not subsume pending savepoints (dropSubsumedCheckpoints skips them), so an older savepoint can complete after a newer one. 1.20/2.3 store no ordinary savepoints and a checkpoint's completion subsumes older pending ones, so completion order is id order there",
        ckpt: "restores the retained checkpoint with the highest id",
        why: "the highest id holds the newest state (its barrier came later); completion order says only which write finished last",
        after: After::Stop,
        recognize: restore_last_added,
    },
    Entry {
        name: "restart-notifies-stopping-attempts",
        class: Class::Choice,
        pattern: "a restart: ckpt sends notify-aborted to old attempts of other tasks while it hears the tasks fail one by one; Flink sends none",
        flink: "every version: the scheduler resets every vertex for a new execution before it aborts the pending checkpoints, and a new attempt without a slot is not notified",
        ckpt: "the first TaskFailed aborts the checkpoints waiting for that task and notifies the attempts still running, which the host stops next",
        why: "ckpt hears of failures one at a time; those messages go to attempts that are being stopped and change nothing",
        after: After::Continue,
        recognize: restart_notifies,
    },
    Entry {
        name: "shutdown-does-not-notify",
        class: Class::Choice,
        pattern: "a shutdown (or the end) aborts pending checkpoints: Flink sends notify-aborted for them, ckpt does not",
        flink: "every version: shutdown aborts them with CHECKPOINT_COORDINATOR_SHUTDOWN through the usual abort path, which notifies the tasks",
        ckpt: "no notify-aborted for AbortReason::Shutdown",
        why: "a coordinator shuts down with its job: the host stops the tasks, a notification can only race with that",
        after: After::Continue,
        recognize: shutdown_silent,
    },
    Entry {
        name: "store-shut-down",
        class: Class::Choice,
        pattern: "after a shutdown Flink's completed store is empty, ckpt still lists its retained checkpoints",
        flink: "every version shuts the store down with the coordinator (the standalone store forgets its checkpoints; the retention policy decides about their files)",
        ckpt: "ShutdownServices tells the host to shut its store down; the reducer's view of what was retained stays for the host's in-doubt and cleanup decisions",
        why: "the store is the host's; nothing is decided from that list after a shutdown",
        after: After::Continue,
        recognize: store_shut_down,
    },
    Entry {
        name: "hooks-serialize-triggers",
        class: Class::Choice,
        pattern: "a master hook of a pending checkpoint is outstanding; a new request: ckpt allocates an id and calls the hooks for it, Flink queues it (and, if the outstanding checkpoint ends within the same advance, triggers it then, with a later timestamp)",
        flink: "every version: the trigger stays in progress until the master hooks (coordinator checkpoints) answered; requests queue meanwhile (FINDINGS.md, hook-expiry; 1.11 even after the checkpoint expired, FLINK-26394)",
        ckpt: "the request leaves flight at id allocation; the next checkpoint's hooks may run while the previous ones' are outstanding",
        why: "the seed's two-lock trigger: the trigger lock covers the id allocation only, so one checkpoint's slow operator coordinator does not hold the next one back; each checkpoint's tasks are triggered only after its own hooks answered, and a host whose coordinators cannot overlap runs the hook calls one at a time",
        after: After::Stop,
        recognize: hooks_serialize,
    },
    Entry {
        name: "savepoint-completion-1.20",
        class: Class::Choice,
        pattern: "1.20/2.3: a savepoint completes: ckpt notifies the tasks, retains it and subsumes older pending checkpoints; Flink does none of these",
        flink: "1.20/2.3: completePendingCheckpoint stores only checkpoints (if !props.isSavepoint()), and cleanupAfterCompletedCheckpoint notifies and drops subsumed checkpoints only for checkpoints and synchronous savepoints (FINDINGS.md, savepoint-store, savepoint-subsumes). 1.11 stores, notifies and subsumes like ckpt",
        ckpt: "completes a savepoint like a checkpoint (finalize, store, notify, subsume older checkpoints) and keeps it until disposed of",
        why: "ckpt follows 1.11: a savepoint is committed, notified to the tasks (their side effects committed) and restorable, so a job never restarts behind it; 1.20 and 2.3 keep an ordinary savepoint outside the job's history and notify nothing, which is what lets them restore an older checkpoint",
        after: After::Stop,
        recognize: savepoint_completion,
    },
    Entry {
        name: "start-scheduler-aborts-pending-1.20",
        class: Class::Choice,
        pattern: "a scheduler start with checkpoints pending: ckpt aborts them (SchedulerStopped), Flink keeps them",
        flink: "1.20/2.3: startCheckpointScheduler only schedules the periodic trigger and leaves pending checkpoints alone; 1.11 calls stopCheckpointScheduler first, as ckpt does (observed by this comparator: no divergence in 1.11)",
        ckpt: "StartScheduler stops first (the seed's stopCheckpointScheduler), aborting every pending checkpoint",
        why: "ckpt follows the seed and 1.11: StartScheduler restarts periodic scheduling (stop, then start), which ends the run of checkpoints started before it; a host that only wants periodic triggering on does not send it while it is on",
        after: After::Stop,
        recognize: start_aborts,
    },
    Entry {
        name: "hook-expiry-wedge-1.11",
        class: Class::Choice,
        pattern: "1.11: a master hook of a checkpoint that is no longer pending (expired, aborted) never answered; Flink queues every later request, ckpt triggers it",
        flink: "1.11 keeps the trigger in progress until the hook answers, even after its checkpoint expired: FLINK-26394 (FINDINGS.md, hook-expiry); 1.20/2.3 clear it on expiry",
        ckpt: "fixed: the trigger is not held by the hooks of a checkpoint that ended (LegacyBug::HookExpiryWedgesTrigger reproduces 1.11)",
        why: "the bug wedges periodic checkpointing for good when an operator coordinator never answers",
        after: After::Stop,
        recognize: hook_expiry_wedge,
    },
    Entry {
        name: "trigger-needs-waited-tasks-1.11",
        class: Class::Choice,
        pattern: "1.11: a task that is waited for but not triggered is not running: ckpt refuses the trigger (NotAllRequiredTasksRunning), 1.11 triggers",
        flink: "1.11 checks only the tasks to trigger (FINDINGS.md, tasks-not-running); 1.20/2.3 require every task to wait for RUNNING, as ckpt does",
        ckpt: "every task to trigger and to wait for must be running",
        why: "a checkpoint that waits for an ack no running attempt can send can only expire; 1.20/2.3 made the same change",
        after: After::Stop,
        recognize: trigger_waits_for_all,
    },
    Entry {
        name: "store-failure-reported-complete-1.11",
        class: Class::Choice,
        pattern: "1.11: the store write of a fully acknowledged checkpoint fails: 1.11 completes its future (and resets the failure counter) first, then discards it and notifies aborted; ckpt fails it",
        flink: "1.11: completePendingCheckpoint completes the future and calls handleCheckpointSuccess before addCheckpoint; on its failure it discards the state, sends notify-aborted and throws FINALIZE_CHECKPOINT_FAILURE without telling the failure manager (FINDINGS.md, failure-io). 1.20/2.3 fail the future and count it, as ckpt does",
        ckpt: "StoreFailed: the request fails, the failure counts, the tasks are told it was aborted",
        why: "a checkpoint the store does not hold has not completed: telling the user it did is 1.11's bug",
        after: After::MaskCounter,
        recognize: store_failure_1_11,
    },
    Entry {
        name: "duplicate-ack-state-discarded",
        class: Class::Choice,
        pattern: "a duplicate ack carrying a handle that no checkpoint holds: ckpt discards it, Flink does not",
        flink: "every version: a DUPLICATE ack is ignored and its state left alone (FINDINGS.md, late-messages)",
        ckpt: "the second handle is an orphan: it is discarded unless a live checkpoint holds it",
        why: "nobody else will ever delete it: leaving it leaks the state",
        after: After::Continue,
        recognize: duplicate_discard,
    },
    Entry {
        name: "savepoints-outside-retention-1.11",
        class: Class::Choice,
        pattern: "1.11: a completed savepoint counts towards the store's retention and evicts an older entry that ckpt keeps",
        flink: "1.11 adds savepoints to the store and counts them (with retained=1 a savepoint evicts the previous checkpoint, discarding its state; an evicted savepoint's state is kept) (FINDINGS.md, savepoint-store)",
        ckpt: "retained_max counts checkpoints only; savepoints stay until the user disposes of them (LegacyBug::SavepointExpiresWithRetention reproduces counting them)",
        why: "a savepoint is the user's: it must not push the job's latest checkpoint out of the store, nor be pushed out by checkpoints",
        after: After::Stop,
        recognize: savepoint_retention_1_11,
    },
    Entry {
        name: "expiry-unreported",
        class: Class::Choice,
        pattern: "a checkpoint that expires within the advance that created it (1.11 also: while its master hook is outstanding): it is gone from Flink's pending checkpoints, but the harness reports no abort (and, 1.11 with a hook outstanding, no notification)",
        flink: "every version disposes of the expired checkpoint; the harness's aborted list is read from the checkpoints pending around each timer firing and from completion futures, and a checkpoint created and expired inside one advance (or, 1.11, whose trigger still waits for a hook: FLINK-26394) is not in it",
        ckpt: "aborts it (Expired) and notifies the tasks",
        why: "a reporting limit of the 1.11 harness, not a decision: the checkpoint ends on both sides at the same time; ckpt's notification for a checkpoint no task was triggered for is harmless (the task forgets an id it never started)",
        after: After::Continue,
        recognize: expiry_unreported,
    },
    Entry {
        name: "decline-from-other-attempt-ignored",
        class: Class::Choice,
        pattern: "a decline from a task attempt the pending checkpoint was not triggered for (a newer attempt): ckpt ignores it, Flink aborts the checkpoint",
        flink: "receiveDeclineMessage aborts the pending checkpoint with that id whichever attempt sent the decline (observed in 1.11 here)",
        ckpt: "Ignored::StaleAttempt: the checkpoint waits for the attempt it triggered; another attempt's word about it is not news",
        why: "the new attempt never took part in that checkpoint; the old attempt's ack (already counted) stands",
        after: After::Stop,
        recognize: decline_other_attempt,
    },
    Entry {
        name: "stop-suspends-scheduler",
        class: Class::Choice,
        pattern: "a stop-with-savepoint request: ckpt stops periodic scheduling, aborts the checkpoints waiting for acks (Suspended) and drops the queued requests, and if the request is refused resumes periodic scheduling one interval later; Flink's coordinator triggers the synchronous savepoint and leaves the rest as it was (the savepoint's trigger RPCs, its type sync/terminate, stay compared)",
        flink: "every version: CheckpointCoordinator.triggerSynchronousSavepoint(terminate, target) (1.11) / (terminate, target, formatType) (1.20/2.3) only builds forSyncSavepoint properties (SAVEPOINT_SUSPEND / SAVEPOINT_TERMINATE, 1.20/2.3: SavepointType.suspend / terminate) and calls triggerSavepointInternal; the scheduler stops the periodic trigger around it: SchedulerBase.stopWithSavepoint calls checkpointCoordinator.stopCheckpointScheduler() first (aborting the pending checkpoints with CHECKPOINT_COORDINATOR_SUSPEND) and starts it again when the savepoint fails (1.11 startCheckpointScheduler, 1.20/2.3 startCheckpointSchedulerIfSuitable). The harness calls the coordinator method alone",
        ckpt: "TriggerKind::StopWithSavepoint is one reducer event doing what SchedulerBase.stopWithSavepoint does around the coordinator: StopScheduler, then the forced synchronous savepoint (CheckpointOptions::SynchronousSavepoint { drain: terminate }); periodic scheduling resumes (re-armed one interval after now) if it fails",
        why: "ckpt has no scheduler layer outside the reducer: the stop's whole coordinator-side protocol is in it, so a stop cannot race with a periodic checkpoint (FLIP-34 requires the savepoint to be the last one)",
        after: After::Stop,
        recognize: stop_suspends,
    },
    Entry {
        name: "stopping-refuses-triggers",
        class: Class::Choice,
        pattern: "a user trigger (checkpoint, savepoint, another stop), or a periodic firing after the scheduler was started again, while a stop-with-savepoint is requested or done: ckpt rejects it (TriggerRejection::Stopping), Flink's coordinator triggers or queues it",
        flink: "every version: the coordinator has no stop state; triggerCheckpoint / triggerSavepoint / triggerSynchronousSavepoint go through the CheckpointRequestDecider as ever (the scheduler refuses them once the job leaves RUNNING: StopWithSavepoint state in 1.20/2.3's adaptive scheduler, SchedulerBase's job status in 1.11)",
        ckpt: "StopPhase::Requested / Stopped: every fresh request, periodic or the user's, is rejected with TriggerRejection::Stopping until the stop fails",
        why: "FLIP-34: the stop's savepoint must be the job's last checkpoint (the sources stop after it); a checkpoint triggered behind it could commit side effects after the savepoint the job restarts from",
        after: After::Stop,
        recognize: stopping_refuses,
    },
    Entry {
        name: "sync-savepoint-failure-fails-job",
        class: Class::Choice,
        pattern: "a savepoint is aborted for a reason savepoint-failures-not-counted does not take (e.g. Suspended, when a scheduler start aborts the stop's savepoint) and Flink fails the job while ckpt does not; only the failure counter / fail-job differ",
        flink: "every version (observed here in each): 1.11: CheckpointCoordinator.abortPendingCheckpoint calls CheckpointFailureManager.handleSynchronousSavepointFailure for a synchronous savepoint, which fails the job for every reason but a pre-flight failure; 1.20/2.3: handleJobLevelCheckpointException / handleTaskLevelCheckpointException take the CheckpointProperties, and a failed synchronous savepoint fails the job there too (seen here with the tolerance not reached)",
        ckpt: "a failed stop-with-savepoint ends the stop (the request fails with its reason, RequestFailed) and periodic scheduling resumes as it was; the job keeps running",
        why: "the stop failed, not the job: the user is told (RequestFailed) and may stop again; failing a healthy job because its stop failed turns a refused stop into a restart",
        after: After::MaskCounter,
        recognize: sync_savepoint_fails_job,
    },
    Entry {
        name: "stop-savepoint-retained-1.20",
        class: Class::Choice,
        pattern: "1.20/2.3: a synchronous savepoint (a stop-with-savepoint) completes and both sides notify the tasks; ckpt's store holds it, Flink's does not (so with a store failure armed, ckpt's store write of it fails: ckpt notifies aborted, discards its state and fails the stop, while Flink, which never writes it, notifies complete)",
        flink: "1.11 adds it to the store like every savepoint. 1.20/2.3: CheckpointCoordinator.completePendingCheckpoint adds only checkpoints to the store (addCompletedCheckpointToStoreAndSubsumeOldest is skipped for savepoints) but sends notifyCheckpointOnComplete for a synchronous savepoint (the tasks finish on it); the job ends and the savepoint's path is returned to the user, who restarts from it explicitly",
        ckpt: "the stop's savepoint is committed to the store (retained, the restore target, latest_completed) before JobCommand::Stop is emitted",
        why: "the job ends on that savepoint: a later start recovers from the store and must restore exactly it (TriggerKind::StopWithSavepoint), not an older checkpoint taken before the stop; the host needs no path handed back out of band",
        after: After::Stop,
        recognize: stop_savepoint_retained,
    },
];
