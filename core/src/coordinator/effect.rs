//! What the coordinator asks of its host: one effect type whose variants
//! are the parts of the host that carry them out, each with every field
//! that part needs (the routing table is in [`crate::route`]).

use serde::{Deserialize, Serialize};

use super::{
    AbortReason, CoordinatorEvent, FailJobReason, JobStatus, RequestId, Timer, TriggerKind,
};
pub use crate::route::CheckpointOptions;
use crate::route::{TaskMessage, ToCoordinator};
use crate::types::{
    AttemptNo, CheckpointId, Generation, Handles, IoFailure, JobId, Millis, StateHandle, TaskId,
};

/// What the host must do, in the order the effects are returned. See the
/// module docs of [`crate::coordinator`] for the contract.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CoordinatorEffect {
    /// The timer table: arm `timer` at `at`, replacing an armed one with the
    /// same key, or disarm it when `at` is `None` (a firing that races the
    /// cancel is harmless: it is ignored). A firing comes back as
    /// [`CoordinatorEvent::TimerFired`].
    Timer {
        /// The timer.
        timer: Timer,
        /// The deadline, or `None` to disarm.
        at: Option<Millis>,
    },
    /// An I/O request, carried out on behalf of `generation` and answered
    /// exactly once (successfully or with a failure) unless the host dies.
    Io {
        /// The issuing coordinator's generation: the store and the id
        /// counter refuse a request of an older one.
        generation: Generation,
        /// What to do.
        request: IoRequest,
    },
    /// An RPC to one task attempt; its task host puts
    /// [`TaskMessage::event`] in that attempt's mailbox (never applies it
    /// directly: the mailbox orders notifications after the checkpoint
    /// mails already enqueued). An RPC for an attempt that is no longer
    /// running is dropped.
    Rpc {
        /// The task.
        task: TaskId,
        /// The attempt addressed.
        attempt: AttemptNo,
        /// The sending coordinator's generation (a task deployed by a newer
        /// leader refuses an older one).
        generation: Generation,
        /// What Flink's RPC carries.
        message: TaskMessage,
    },
    /// Delete a state handle nobody owns any more: no live checkpoint holds
    /// it. Emitted at most once per handle per step (a handle several
    /// checkpoints held goes with the last of them). A handle delivered
    /// again after the coordinator let go of it (a network-duplicated late
    /// ack) is discarded again, each time: deletes must be idempotent.
    Discard {
        /// The issuing coordinator's generation (a delete on behalf of an
        /// older one is refused).
        generation: Generation,
        /// The checkpoint it was written for.
        checkpoint: CheckpointId,
        /// The handle.
        handle: StateHandle,
    },
    /// A job-level command.
    Job(JobCommand),
    /// An informational report for users and statistics (nothing answers).
    Report(Report),
}

/// An I/O request of the coordinator ([`CoordinatorEffect::Io`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IoRequest {
    /// Take the next id from the (HA) id counter.
    AllocateId {
        /// The request the id is for.
        request: RequestId,
    },
    /// Run the master hooks (operator coordinators' checkpoints).
    MasterHooks {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// When it was triggered.
        timestamp: Millis,
    },
    /// Write the metadata of a fully acknowledged checkpoint. Its state
    /// belongs to the outcome of this write from now on (the metadata may
    /// already be visible).
    Finalize {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// What was triggered (a savepoint carries its target).
        kind: TriggerKind,
        /// When it was triggered (the store records this time; recovery
        /// hands it back in `RecoveredCheckpoint::timestamp`).
        timestamp: Millis,
        /// Whether it goes to an external location (always for a
        /// savepoint).
        externalized: bool,
        /// The state handles it references, in ack-slot order.
        handles: Handles,
    },
    /// Add the finalized checkpoint to the completed-checkpoint store.
    Store {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
}

/// What the host answers to an [`IoRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IoAnswer {
    /// It worked; for [`IoRequest::AllocateId`] the id counter's answer.
    Ok {
        /// The id allocated (ignored by every other request).
        id: CheckpointId,
    },
    /// It failed; for [`IoRequest::Store`] (and [`IoRequest::Finalize`])
    /// this must mean the checkpoint is definitely not in the store. An
    /// unknown outcome is no answer at all: the host stops this coordinator
    /// as if it had crashed (no `Shutdown`), and the next one recovers from
    /// the store; the reference store says which case it is
    /// (`ckpt_core::host::store::StoreError::OutcomeUnknown`, feature
    /// `async-host`).
    Failed(IoFailure),
}

impl IoRequest {
    /// The event that answers this request.
    #[must_use]
    pub fn answer(&self, answer: IoAnswer) -> CoordinatorEvent {
        let unit = match &answer {
            IoAnswer::Ok { .. } => Ok(()),
            IoAnswer::Failed(f) => Err(f.clone()),
        };
        match self {
            IoRequest::AllocateId { request } => CoordinatorEvent::CheckpointIdAllocated {
                request: *request,
                result: match answer {
                    IoAnswer::Ok { id } => Ok(id),
                    IoAnswer::Failed(f) => Err(f),
                },
            },
            // The answer names the checkpoint; what the request carried for
            // the work (the hooks' timestamp, the metadata) stays with it.
            IoRequest::MasterHooks {
                checkpoint,
                timestamp: _,
            } => CoordinatorEvent::MasterHooksDone {
                checkpoint: *checkpoint,
                result: unit,
            },
            IoRequest::Finalize {
                checkpoint,
                kind: _,
                timestamp: _,
                externalized: _,
                handles: _,
            } => CoordinatorEvent::FinalizeDone {
                checkpoint: *checkpoint,
                result: unit,
            },
            IoRequest::Store { checkpoint } => CoordinatorEvent::StoreDone {
                checkpoint: *checkpoint,
                result: unit,
            },
        }
    }

    /// The checkpoint the request is about (none for an id allocation).
    #[must_use]
    pub fn checkpoint(&self) -> Option<CheckpointId> {
        match self {
            IoRequest::AllocateId { .. } => None,
            IoRequest::MasterHooks { checkpoint, .. }
            | IoRequest::Finalize { checkpoint, .. }
            | IoRequest::Store { checkpoint } => Some(*checkpoint),
        }
    }
}

/// A job-level command for the host ([`CoordinatorEffect::Job`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobCommand {
    /// Fail the job (then restart it from the latest checkpoint, or stop):
    /// the crate docs' "After `JobCommand::Fail`, step by step" recipe.
    Fail(FailJobReason),
    /// Move the id counter forward so that the next id it hands out is at
    /// least `next` (after a savepoint restore). Ids only grow: a counter
    /// already beyond `next` stays where it is. If this fails, stop this
    /// coordinator and recover a new one from the store.
    ResetIdCounter {
        /// The issuing coordinator's generation.
        generation: Generation,
        /// The lowest id the counter may hand out next.
        next: CheckpointId,
    },
    /// Start the tasks from this checkpoint's state, or from scratch when
    /// `checkpoint` is `None` (nothing was completed). The answer to
    /// [`CoordinatorEvent::Restore`], at once or, when the restore waited
    /// for an outstanding completion, when that completion ended.
    Restore {
        /// The checkpoint, or `None`: start from scratch.
        checkpoint: Option<CheckpointId>,
        /// Its state (empty from scratch).
        handles: Vec<StateHandle>,
    },
    /// Shut the completed store and the id counter down.
    ShutdownServices(JobStatus),
    /// The stop-with-savepoint `savepoint` is committed: end the job on it.
    /// The host stops every task attempt (after draining the sources first
    /// if `drain`), then sends `Shutdown { status: Finished }`. A later
    /// start recovers from the store and restores this savepoint (the
    /// latest). The stop wins over a failover in progress: when a
    /// `Restore` the host asked for waited for this completion
    /// (`Applied::RestoreDeferred`), the same step carries its
    /// [`JobCommand::Restore`] after this command, and the host does not
    /// act on it (it names this savepoint; redeploying the tasks would
    /// leave them running under a coordinator that refuses every
    /// checkpoint).
    Stop {
        /// The savepoint the job ends on.
        savepoint: CheckpointId,
        /// Whether the job is drained rather than suspended.
        drain: bool,
    },
    /// Every task finished ([`CoordinatorEvent::TaskFinished`]) and, with
    /// checkpoints after finished tasks on, the job's final checkpoint
    /// `final_checkpoint` is committed: the job is finished. The host sends
    /// `Shutdown { status: Finished }`. A later start recovers from the
    /// store: with a final checkpoint, what it restores records every task
    /// as finished; without one (off), the latest checkpoint predates the
    /// finishes and the tasks run again from it.
    Finish {
        /// The job's final checkpoint (`None`: checkpoints after finished
        /// tasks are off, the job finished without one).
        final_checkpoint: Option<CheckpointId>,
    },
    /// The coordinator shut down while this checkpoint's finalize or store
    /// was outstanding: whether the store holds it is unknown here, and no
    /// coordinator will hear the answer. Once that operation has ended, the
    /// host reads its store and discards exactly one of the two lists (a
    /// state file is deleted after the metadata that references it):
    ///
    /// * the store holds the checkpoint: `discard_if_stored`, the state of
    ///   the checkpoints its commit pushed out of retention that no
    ///   checkpoint still stored holds;
    /// * the store definitely does not hold it: its metadata, then
    ///   `discard_if_not_stored`, its own state that no retained checkpoint
    ///   or savepoint holds.
    ///
    /// Never before the operation ended. Both lists already leave out every
    /// handle another checkpoint still needs (the coordinator subtracts
    /// shared state, never the host).
    ResolveInDoubt {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// What to delete once the store holds it.
        discard_if_stored: Vec<StateHandle>,
        /// What to delete once the store definitely does not hold it.
        discard_if_not_stored: Vec<StateHandle>,
    },
}

/// An informational report ([`CoordinatorEffect::Report`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Report {
    /// A checkpoint completed (complete the user's future).
    Completed {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The request it came from.
        request: RequestId,
        /// Whether it is a savepoint.
        savepoint: bool,
    },
    /// A pending checkpoint was aborted.
    Aborted {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The request it came from.
        request: RequestId,
        /// Why.
        reason: AbortReason,
    },
    /// A queued or in-flight request ended without a checkpoint (fail the
    /// user's future).
    RequestFailed {
        /// The request.
        request: RequestId,
        /// Why.
        reason: AbortReason,
    },
}

impl ToCoordinator {
    /// The coordinator event for this message, sent by attempt `attempt` of
    /// task `task` of job `job` (the envelope the task's own effect lacks).
    #[must_use]
    pub fn event(self, job: JobId, task: TaskId, attempt: AttemptNo) -> CoordinatorEvent {
        match self {
            ToCoordinator::Ack { checkpoint, handle } => CoordinatorEvent::Acknowledge {
                job,
                task,
                attempt,
                checkpoint,
                state: Some(handle),
            },
            ToCoordinator::Decline { checkpoint, reason } => CoordinatorEvent::Decline {
                job,
                task,
                attempt,
                checkpoint,
                reason,
            },
        }
    }
}

impl CoordinatorEffect {
    /// The handle this effect discards, if it is a discard.
    #[must_use]
    pub fn discarded(&self) -> Option<StateHandle> {
        match self {
            CoordinatorEffect::Discard { handle, .. } => Some(*handle),
            CoordinatorEffect::Timer { .. }
            | CoordinatorEffect::Io { .. }
            | CoordinatorEffect::Rpc { .. }
            | CoordinatorEffect::Job(_)
            | CoordinatorEffect::Report(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DeclineReason;

    #[test]
    fn io_answers_build_the_matching_event() {
        let alloc = IoRequest::AllocateId {
            request: RequestId(4),
        };
        assert_eq!(
            alloc.answer(IoAnswer::Ok {
                id: CheckpointId(9)
            }),
            CoordinatorEvent::CheckpointIdAllocated {
                request: RequestId(4),
                result: Ok(CheckpointId(9)),
            }
        );
        let store = IoRequest::Store {
            checkpoint: CheckpointId(9),
        };
        let failure = IoFailure("disk".into());
        assert_eq!(
            store.answer(IoAnswer::Failed(failure.clone())),
            CoordinatorEvent::StoreDone {
                checkpoint: CheckpointId(9),
                result: Err(failure),
            }
        );
        let finalize = IoRequest::Finalize {
            checkpoint: CheckpointId(3),
            kind: TriggerKind::Periodic,
            timestamp: Millis(5),
            externalized: false,
            handles: vec![StateHandle(1)].into(),
        };
        assert_eq!(
            finalize.answer(IoAnswer::Ok {
                id: CheckpointId(0)
            }),
            CoordinatorEvent::FinalizeDone {
                checkpoint: CheckpointId(3),
                result: Ok(()),
            }
        );
        let hooks = IoRequest::MasterHooks {
            checkpoint: CheckpointId(2),
            timestamp: Millis(1),
        };
        assert_eq!(hooks.checkpoint(), Some(CheckpointId(2)));
        assert_eq!(store.checkpoint(), Some(CheckpointId(9)));
        assert_eq!(alloc.checkpoint(), None);
    }

    #[test]
    fn task_messages_get_their_envelope() {
        let ack = ToCoordinator::Ack {
            checkpoint: CheckpointId(3),
            handle: StateHandle(30),
        };
        assert_eq!(
            ack.event(JobId(1), TaskId(2), AttemptNo(4)),
            CoordinatorEvent::Acknowledge {
                job: JobId(1),
                task: TaskId(2),
                attempt: AttemptNo(4),
                checkpoint: CheckpointId(3),
                state: Some(StateHandle(30)),
            }
        );
        let decline = ToCoordinator::Decline {
            checkpoint: CheckpointId(3),
            reason: DeclineReason::TaskClosing,
        };
        assert_eq!(
            decline.event(JobId(1), TaskId(0), AttemptNo(0)),
            CoordinatorEvent::Decline {
                job: JobId(1),
                task: TaskId(0),
                attempt: AttemptNo(0),
                checkpoint: CheckpointId(3),
                reason: DeclineReason::TaskClosing,
            }
        );
        assert_eq!(decline.checkpoint(), CheckpointId(3));
        assert_eq!(
            CoordinatorEffect::Discard {
                generation: Generation(1),
                checkpoint: CheckpointId(1),
                handle: StateHandle(7),
            }
            .discarded(),
            Some(StateHandle(7))
        );
        assert_eq!(
            CoordinatorEffect::Timer {
                timer: Timer::Periodic,
                at: None
            }
            .discarded(),
            None
        );
    }
}
