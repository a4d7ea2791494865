//! Where a job whose tasks finish is (FLIP-147): the final checkpoint and
//! the job's finish.

use serde::{Deserialize, Serialize};

use crate::types::CheckpointId;

/// Where a job whose every task finished is
/// ([`super::CoordinatorEvent::TaskFinished`]). While it is set, no other
/// checkpoint is triggered (`TriggerRejection::NotAllRequiredTasksRunning`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FinishPhase {
    /// Every task finished and the job's final checkpoint, planned with
    /// every task finished, is pending (checkpoints after finished tasks
    /// on). If it fails, the phase ends and the next trigger plans another.
    Final {
        /// The final checkpoint.
        checkpoint: CheckpointId,
    },
    /// The job was told it finished ([`super::JobCommand::Finish`]).
    Finished {
        /// The final checkpoint it ended on (`None`: checkpoints after
        /// finished tasks are off).
        final_checkpoint: Option<CheckpointId>,
    },
}
