//! The failure counter: which aborts count, and when the counter is masked until both sides agree again.

use super::*;

pub(super) fn fail_job_latch(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
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
    mask_counter(c, f);
    true
}

/// The checkpoints of this event aborted with a reason Flink counts, that
/// were savepoints.
pub(super) fn savepoint_failures(ctx: &Ctx<'_>, c: &Decision) -> bool {
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

/// Takes the failure counter and the fail-job count out of both sides.
fn mask_counter(c: &mut Decision, f: &mut Decision) {
    c.mask_counter();
    f.mask_counter();
}

pub(super) fn mask_counter_if(cond: bool, c: &mut Decision, f: &mut Decision) -> bool {
    if !cond || (c.state.failure_counter == f.state.failure_counter && c.fail_job == f.fail_job) {
        return false;
    }
    mask_counter(c, f);
    true
}

pub(super) fn savepoint_not_counted(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = savepoint_failures(ctx, c);
    mask_counter_if(cond, c, f)
}

pub(super) fn trigger_failure_counted(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = c.aborted.iter().any(|(_, w)| *w == Abort::TriggerFailure)
        || request_failed(c, Abort::TriggerFailure)
        || matches!(ctx.event, Some(Event::Advance { .. } | Event::Trigger(_)))
            && c.state.failure_counter > f.state.failure_counter
            && ctx.before_ckpt.state.failure_counter == ctx.before_flink.state.failure_counter
            && counted_aborts(ctx, c) == 0
        || matches!(ctx.event, Some(Event::Advance { .. } | Event::Trigger(_)))
            && ctx.before_ckpt.state.failure_counter == ctx.before_flink.state.failure_counter
            && one_more_than_counted(ctx, c, f);
    cond && mask_counter_if(true, c, f)
}

/// The same event also aborted checkpoints that every version counts (an
/// expiry in the advance whose periodic trigger then failed to get an id):
/// Flink's counter rose by exactly those, ckpt's by one more.
pub(super) fn one_more_than_counted(ctx: &Ctx<'_>, c: &Decision, f: &Decision) -> bool {
    let (Some(before), Some(cc), Some(fc)) = (
        ctx.before_flink.state.failure_counter,
        c.state.failure_counter,
        f.state.failure_counter,
    ) else {
        return false;
    };
    let counted = counted_aborts(ctx, c) as u64;
    counted > 0 && fc == before + counted && cc == fc + 1
}

/// The checkpoints the event aborted for a reason every version counts;
/// a savepoint's abort counts on neither side here (ckpt never counts
/// savepoints; Flink's expiry of one did not move its counter where this
/// is asked), so it is left out.
fn counted_aborts(ctx: &Ctx<'_>, c: &Decision) -> usize {
    let savepoint = |id: u64| {
        ctx.before_ckpt
            .state
            .pending
            .iter()
            .any(|p| p.checkpoint == id && p.savepoint)
    };
    c.aborted
        .iter()
        .filter(|(id, w)| w.counts_in_every_version() && !savepoint(*id))
        .count()
}

pub(super) fn finalize_failure_counting(ctx: &Ctx<'_>, c: &mut Decision, f: &mut Decision) -> bool {
    let cond = !ctx.gen2() && c.aborted.iter().any(|(_, w)| *w == Abort::FinalizeFailure);
    mask_counter_if(cond, c, f)
}
