//! Coordinator invariants of finished tasks (FLIP-147): a finish is not a
//! failure, and a job finishes only on its final checkpoint. Part of
//! [`super::coordinator::check_step`]; the names are defined here and
//! listed with the others in [`super::coordinator::names`].

use super::{ensure, Violation};
use crate::coordinator::{
    AckSlot, CoordinatorEffect, CoordinatorEvent, CoordinatorState, FinishPhase, JobCommand,
    Report, Step,
};

/// The names of the invariants of finished tasks.
pub mod names {
    /// A task that finishes is no checkpoint failure: its `TaskFinished`
    /// counts none and never fails the job (FLINK-33186).
    pub const FINISH_NOT_A_FAILURE: &str = "a-finish-is-not-a-failure";
    /// A job finishes once, when every task finished and, with checkpoints
    /// after finished tasks on, in the step its final checkpoint (planned
    /// with every task finished) completed; off, with no final checkpoint.
    pub const FINISH_AFTER_FINAL: &str = "job-finishes-on-its-final-checkpoint";
    /// A job told it finished is not restarted: when `JobCommand::Finish`
    /// and a `JobCommand::Restore` come in one step (a failover's restore
    /// that waited for the final checkpoint), the finish wins and the host
    /// does not act on the restore ([`check_restart`](super::check_restart)).
    pub const NO_RESTART_AFTER_FINISH: &str = "no-restart-after-finish";
}

/// [`names::NO_RESTART_AFTER_FINISH`], for a host about to restart the
/// job's tasks on a [`JobCommand::Restore`]: a violation once `coordinator`
/// told the job it finished. A host that keeps the coordinator's state
/// (the model's world) calls it where it restarts the tasks.
///
/// # Errors
///
/// The violation, naming the final checkpoint the job ended on.
pub fn check_restart(coordinator: &CoordinatorState) -> Result<(), Violation> {
    match coordinator.finish_phase() {
        Some(FinishPhase::Finished { final_checkpoint }) => Err(Violation {
            invariant: names::NO_RESTART_AFTER_FINISH,
            detail: format!(
                "the job's tasks restart after the job finished (final checkpoint {final_checkpoint:?})"
            ),
        }),
        Some(FinishPhase::Final { .. }) | None => Ok(()),
    }
}

/// What must hold of every state: a final checkpoint in its phase is
/// pending (one that ended without completing ends the phase).
pub(super) fn check_finish_state(s: &CoordinatorState) -> Result<(), Violation> {
    if let Some(FinishPhase::Final { checkpoint }) = s.finish_phase() {
        ensure(
            s.pending_checkpoint(checkpoint).is_some(),
            names::FINISH_AFTER_FINAL,
            || format!("final checkpoint {checkpoint} is no longer pending"),
        )?;
    }
    Ok(())
}

/// What must hold of one step about finished tasks.
pub(super) fn check_finish(
    before: &CoordinatorState,
    event: &CoordinatorEvent,
    step: &Step,
    after: &CoordinatorState,
) -> Result<(), Violation> {
    if let CoordinatorEvent::TaskFinished { task, .. } = event {
        let failed = step
            .effects
            .iter()
            .any(|e| matches!(e, CoordinatorEffect::Job(JobCommand::Fail(_))));
        ensure(
            !failed && after.counted_failures() <= before.counted_failures(),
            names::FINISH_NOT_A_FAILURE,
            || {
                format!(
                    "task {task} finished and {} counted failures became {}{}",
                    before.counted_failures(),
                    after.counted_failures(),
                    if failed { ", failing the job" } else { "" }
                )
            },
        )?;
    }
    let every_task_finished = |s: &CoordinatorState| {
        (0..s.config().task_slots()).all(|t| {
            let t = crate::types::TaskId(u32::try_from(t).unwrap_or(u32::MAX));
            s.task_status(t).is_some_and(|st| st.finished)
        })
    };
    // A final checkpoint is planned only once every task finished, with
    // every slot holding a finished task's final state.
    if let Some(FinishPhase::Final { checkpoint }) = after.finish_phase() {
        if before.finish_phase() != after.finish_phase() {
            let planned = after
                .pending_checkpoint(checkpoint)
                .is_some_and(|p| p.acks().all(|a| a == AckSlot::Acked(None)));
            ensure(
                planned && every_task_finished(after),
                names::FINISH_AFTER_FINAL,
                || format!("checkpoint {checkpoint} is final, but not every task had finished"),
            )?;
        }
    }
    for e in &step.effects {
        let CoordinatorEffect::Job(JobCommand::Finish { final_checkpoint }) = e else {
            continue;
        };
        let once = !matches!(before.finish_phase(), Some(FinishPhase::Finished { .. }));
        let on_final = if after.config().checkpoints_after_tasks_finish() {
            // On its final checkpoint, in the step its store committed it.
            final_checkpoint.is_some_and(|c| {
                before.finish_phase() == Some(FinishPhase::Final { checkpoint: c })
                    && step.effects.iter().any(|r| {
                        matches!(r, CoordinatorEffect::Report(Report::Completed { checkpoint, .. }) if *checkpoint == c)
                    })
            })
        } else {
            final_checkpoint.is_none()
        };
        ensure(
            once && on_final && every_task_finished(after),
            names::FINISH_AFTER_FINAL,
            || {
                format!(
                    "the job finished on {final_checkpoint:?} after {event:?} (final phase before: {:?})",
                    before.finish_phase()
                )
            },
        )?;
    }
    Ok(())
}
