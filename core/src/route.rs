//! Where each effect goes: the one routing of every effect kind, shared by
//! every host (the model's world, the test stories, the loom tests, the
//! reference hosts and examples).
//!
//! A host does not need to match on [`CoordinatorEffect`] or [`TaskEffect`]
//! itself: [`coordinator`] and [`task`] sort each effect into the part of the
//! world that carries it out and, where it travels to the other machine,
//! already build the event it becomes there. Adding an effect kind means
//! editing these two functions, not every host.
//!
//! | coordinator effect | route |
//! |---|---|
//! | `ScheduleTimer` / `CancelTimer` | [`CoordinatorRoute::Timer`]: the host's timer table |
//! | `AllocateCheckpointId`, `TriggerMasterHooks`, `FinalizeCheckpoint`, `StoreCheckpoint` | [`CoordinatorRoute::Io`]: an [`IoRequest`], answered with [`IoRequest::answer`] |
//! | `TriggerTask`, `NotifyComplete`, `NotifyAborted` | [`CoordinatorRoute::Rpc`]: the [`TaskEvent`] for that attempt's **mailbox** |
//! | `DiscardState` | [`CoordinatorRoute::Discard`] |
//! | `FailJob`, `ResetIdCounter`, `RestoreState`, `ShutdownServices`, `ResolveInDoubt` | [`CoordinatorRoute::Job`] |
//! | `CheckpointCompleted`, `CheckpointAborted`, `RequestFailed` | [`CoordinatorRoute::Report`]: user futures, statistics |
//!
//! | task effect | route |
//! |---|---|
//! | `StartWriter` / `AbortWriter` | [`TaskRoute::Writer`] |
//! | `ScheduleCheckpointMail` | [`TaskRoute::Mail`]: the event to enqueue in this task's mailbox |
//! | `BroadcastBarrier` / `BroadcastCancelMarker` | [`TaskRoute::Downstream`]: a [`ChannelItem`] for every output channel |
//! | `StartAsyncPart` / `CancelAsyncPart` | [`TaskRoute::AsyncPart`] |
//! | `AcknowledgeCheckpoint` / `DeclineCheckpoint` | [`TaskRoute::Coordinator`]: a [`ToCoordinator`], enveloped with [`ToCoordinator::event`] |
//! | `DiscardState` | [`TaskRoute::Discard`] |
//! | `NotifyOperatorsComplete` / `NotifyOperatorsAborted` | [`TaskRoute::Operators`] |
//! | `FailTask` | [`TaskRoute::Fail`] |

use serde::{Deserialize, Serialize};

use crate::coordinator::{
    AbortReason, CoordinatorEffect, CoordinatorEvent, FailJobReason, JobStatus, RequestId, Timer,
};
use crate::task::{FailureReason, TaskEffect, TaskEvent};
use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, IoFailure, JobId, Millis, StateHandle, TaskId, Thread,
};

/// An I/O request of the coordinator. Every one must be answered exactly once
/// (successfully or with a failure) unless the host dies.
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
    },
    /// Write the checkpoint's metadata.
    Finalize {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The state handles it references, in ack-slot order.
        handles: Vec<StateHandle>,
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
    /// It failed; for [`IoRequest::Store`] this must mean the checkpoint is
    /// definitely not in the store (an unknown outcome is no answer at all).
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
            IoRequest::MasterHooks { checkpoint } => CoordinatorEvent::MasterHooksDone {
                checkpoint: *checkpoint,
                result: unit,
            },
            IoRequest::Finalize { checkpoint, .. } => CoordinatorEvent::FinalizeDone {
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
            IoRequest::MasterHooks { checkpoint }
            | IoRequest::Finalize { checkpoint, .. }
            | IoRequest::Store { checkpoint } => Some(*checkpoint),
        }
    }
}

/// A job-level command for the host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum JobCommand {
    /// Fail the job (then restart it from the latest checkpoint, or stop).
    Fail(FailJobReason),
    /// Reset the id counter so the next id is `next`.
    ResetIdCounter(CheckpointId),
    /// Start the tasks from this checkpoint's state, or from scratch when
    /// `checkpoint` is `None`.
    Restore {
        /// The checkpoint, or `None`.
        checkpoint: Option<CheckpointId>,
        /// Its state handles.
        handles: Vec<StateHandle>,
    },
    /// Shut the completed store and the id counter down.
    ShutdownServices(JobStatus),
    /// Once the outstanding finalize / store of `checkpoint` has ended,
    /// discard `discard_if_stored` if the store holds it, else its metadata
    /// and then `discard_if_not_stored` (see
    /// `CoordinatorEffect::ResolveInDoubt`).
    ResolveInDoubt {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// What to delete once the store holds it.
        discard_if_stored: Vec<StateHandle>,
        /// What to delete once the store definitely does not hold it.
        discard_if_not_stored: Vec<StateHandle>,
    },
}

/// Informational reports for users and statistics (nothing answers them).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Report {
    /// A checkpoint completed.
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
    /// A request ended without a checkpoint.
    RequestFailed {
        /// The request.
        request: RequestId,
        /// Why.
        reason: AbortReason,
    },
}

/// Where a coordinator effect goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CoordinatorRoute {
    /// The timer table: arm `timer` at `at` (replacing an armed one), or
    /// disarm it when `at` is `None`.
    Timer {
        /// The timer.
        timer: Timer,
        /// The deadline, or `None` to cancel.
        at: Option<Millis>,
    },
    /// An I/O request to answer later.
    Io(IoRequest),
    /// An RPC to one task attempt; the task host puts `event` in that
    /// attempt's mailbox (never applies it directly: the mailbox is what
    /// orders notifications after the checkpoint mails already enqueued).
    Rpc {
        /// The task.
        task: TaskId,
        /// The attempt addressed (an RPC for another attempt is dropped).
        attempt: AttemptNo,
        /// The event for the task's mailbox.
        event: TaskEvent,
    },
    /// Delete a state handle.
    Discard {
        /// The checkpoint it was written for.
        checkpoint: CheckpointId,
        /// The handle.
        handle: StateHandle,
    },
    /// A job-level command.
    Job(JobCommand),
    /// An informational report.
    Report(Report),
}

/// Routes one coordinator effect.
#[must_use]
pub fn coordinator(effect: &CoordinatorEffect) -> CoordinatorRoute {
    use CoordinatorEffect as E;
    match effect {
        E::ScheduleTimer { timer, at } => CoordinatorRoute::Timer {
            timer: *timer,
            at: Some(*at),
        },
        E::CancelTimer { timer } => CoordinatorRoute::Timer {
            timer: *timer,
            at: None,
        },
        E::AllocateCheckpointId { request } => {
            CoordinatorRoute::Io(IoRequest::AllocateId { request: *request })
        }
        E::TriggerMasterHooks { checkpoint, .. } => CoordinatorRoute::Io(IoRequest::MasterHooks {
            checkpoint: *checkpoint,
        }),
        E::FinalizeCheckpoint {
            checkpoint,
            handles,
            ..
        } => CoordinatorRoute::Io(IoRequest::Finalize {
            checkpoint: *checkpoint,
            handles: handles.clone(),
        }),
        E::StoreCheckpoint { checkpoint } => CoordinatorRoute::Io(IoRequest::Store {
            checkpoint: *checkpoint,
        }),
        E::TriggerTask {
            task,
            attempt,
            checkpoint,
            ..
        } => CoordinatorRoute::Rpc {
            task: *task,
            attempt: *attempt,
            event: TaskEvent::TriggerCheckpoint {
                checkpoint: *checkpoint,
            },
        },
        E::NotifyComplete {
            task,
            attempt,
            checkpoint,
            ..
        } => CoordinatorRoute::Rpc {
            task: *task,
            attempt: *attempt,
            event: TaskEvent::NotifyComplete {
                checkpoint: *checkpoint,
            },
        },
        E::NotifyAborted {
            task,
            attempt,
            checkpoint,
            ..
        } => CoordinatorRoute::Rpc {
            task: *task,
            attempt: *attempt,
            event: TaskEvent::NotifyAborted {
                checkpoint: *checkpoint,
            },
        },
        E::DiscardState { checkpoint, handle } => CoordinatorRoute::Discard {
            checkpoint: *checkpoint,
            handle: *handle,
        },
        E::FailJob { reason } => CoordinatorRoute::Job(JobCommand::Fail(*reason)),
        E::ResetIdCounter { next } => CoordinatorRoute::Job(JobCommand::ResetIdCounter(*next)),
        E::RestoreState {
            checkpoint,
            handles,
        } => CoordinatorRoute::Job(JobCommand::Restore {
            checkpoint: *checkpoint,
            handles: handles.clone(),
        }),
        E::ShutdownServices { status } => {
            CoordinatorRoute::Job(JobCommand::ShutdownServices(*status))
        }
        E::ResolveInDoubt {
            checkpoint,
            discard_if_stored,
            discard_if_not_stored,
        } => CoordinatorRoute::Job(JobCommand::ResolveInDoubt {
            checkpoint: *checkpoint,
            discard_if_stored: discard_if_stored.clone(),
            discard_if_not_stored: discard_if_not_stored.clone(),
        }),
        E::CheckpointCompleted {
            checkpoint,
            request,
            savepoint,
        } => CoordinatorRoute::Report(Report::Completed {
            checkpoint: *checkpoint,
            request: *request,
            savepoint: *savepoint,
        }),
        E::CheckpointAborted {
            checkpoint,
            request,
            reason,
        } => CoordinatorRoute::Report(Report::Aborted {
            checkpoint: *checkpoint,
            request: *request,
            reason: *reason,
        }),
        E::RequestFailed { request, reason } => CoordinatorRoute::Report(Report::RequestFailed {
            request: *request,
            reason: *reason,
        }),
    }
}

/// An item on a data channel between tasks (per-link FIFO, lossless).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChannelItem {
    /// A checkpoint barrier: handled on arrival by the receiver's netty
    /// thread (`start`).
    Barrier(CheckpointId),
    /// A cancel-checkpoint marker: read in order by the receiver's task
    /// thread.
    CancelMarker(CheckpointId),
}

impl ChannelItem {
    /// The event the receiving task gets for this item (a barrier arrives
    /// on the netty thread of a remote channel).
    #[must_use]
    pub fn event(self) -> TaskEvent {
        match self {
            ChannelItem::Barrier(checkpoint) => TaskEvent::BarrierReceived {
                checkpoint,
                via: Thread::Netty,
            },
            ChannelItem::CancelMarker(checkpoint) => TaskEvent::CancelMarker { checkpoint },
        }
    }

    /// The thread of the receiver that takes this item.
    #[must_use]
    pub fn thread(self) -> Thread {
        match self {
            ChannelItem::Barrier(_) => Thread::Netty,
            ChannelItem::CancelMarker(_) => Thread::Task,
        }
    }
}

/// A message from a task to the coordinator, before the envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ToCoordinator {
    /// Acknowledge with the state written.
    Ack {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The state (owned by the coordinator once applied).
        handle: StateHandle,
    },
    /// Decline.
    Decline {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Why.
        reason: DeclineReason,
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

    /// The checkpoint concerned.
    #[must_use]
    pub fn checkpoint(self) -> CheckpointId {
        match self {
            ToCoordinator::Ack { checkpoint, .. } | ToCoordinator::Decline { checkpoint, .. } => {
                checkpoint
            }
        }
    }
}

/// Work for the channel-state writer thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriterCommand {
    /// Create the result and write; report `WriterCompleted` / `WriterFailed`.
    Start(CheckpointId),
    /// Stop writing and fail the result; `cleanup` also drops it.
    Abort {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Drop the result as well.
        cleanup: bool,
    },
}

/// Work for the asynchronous snapshot thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AsyncCommand {
    /// Take the write result and snapshot; report `AsyncPartCompleted` /
    /// `AsyncPartFailed`.
    Start(CheckpointId),
    /// Cancel it, discarding what it wrote.
    Cancel(CheckpointId),
}

/// Operator hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperatorNotice {
    /// `notifyCheckpointComplete` (commit side effects, e.g. a two-phase sink).
    Complete(CheckpointId),
    /// `notifyCheckpointAborted`.
    Aborted(CheckpointId),
}

/// Where a task effect goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskRoute {
    /// The channel-state writer.
    Writer(WriterCommand),
    /// This task's own mailbox: enqueue `event` (FIFO, never withdrawn).
    Mail(TaskEvent),
    /// Every output channel of this task.
    Downstream(ChannelItem),
    /// The async snapshot thread.
    AsyncPart(AsyncCommand),
    /// The coordinator (RPC).
    Coordinator(ToCoordinator),
    /// Delete a state handle.
    Discard(StateHandle),
    /// Operator hooks.
    Operators(OperatorNotice),
    /// Fail this task attempt (the reducer already tore its checkpoint side
    /// down); report the failure to the coordinator and close the task.
    Fail(FailureReason),
}

/// Routes one task effect.
#[must_use]
pub fn task(effect: &TaskEffect) -> TaskRoute {
    use TaskEffect as E;
    match effect {
        E::StartWriter { checkpoint } => TaskRoute::Writer(WriterCommand::Start(*checkpoint)),
        E::AbortWriter {
            checkpoint,
            cleanup,
        } => TaskRoute::Writer(WriterCommand::Abort {
            checkpoint: *checkpoint,
            cleanup: *cleanup,
        }),
        E::ScheduleCheckpointMail { checkpoint } => TaskRoute::Mail(TaskEvent::CheckpointMail {
            checkpoint: *checkpoint,
        }),
        E::BroadcastBarrier { checkpoint } => {
            TaskRoute::Downstream(ChannelItem::Barrier(*checkpoint))
        }
        E::BroadcastCancelMarker { checkpoint } => {
            TaskRoute::Downstream(ChannelItem::CancelMarker(*checkpoint))
        }
        E::StartAsyncPart { checkpoint } => TaskRoute::AsyncPart(AsyncCommand::Start(*checkpoint)),
        E::CancelAsyncPart { checkpoint } => {
            TaskRoute::AsyncPart(AsyncCommand::Cancel(*checkpoint))
        }
        E::AcknowledgeCheckpoint { checkpoint, handle } => {
            TaskRoute::Coordinator(ToCoordinator::Ack {
                checkpoint: *checkpoint,
                handle: *handle,
            })
        }
        E::DeclineCheckpoint { checkpoint, reason } => {
            TaskRoute::Coordinator(ToCoordinator::Decline {
                checkpoint: *checkpoint,
                reason: *reason,
            })
        }
        E::DiscardState { handle } => TaskRoute::Discard(*handle),
        E::NotifyOperatorsComplete { checkpoint } => {
            TaskRoute::Operators(OperatorNotice::Complete(*checkpoint))
        }
        E::NotifyOperatorsAborted { checkpoint } => {
            TaskRoute::Operators(OperatorNotice::Aborted(*checkpoint))
        }
        E::FailTask { reason } => TaskRoute::Fail(*reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::CheckpointOptions;

    #[test]
    fn rpcs_become_mailbox_events_for_the_addressed_attempt() {
        let e = CoordinatorEffect::NotifyAborted {
            task: TaskId(2),
            attempt: AttemptNo(1),
            checkpoint: CheckpointId(5),
            latest_completed: None,
        };
        assert_eq!(
            coordinator(&e),
            CoordinatorRoute::Rpc {
                task: TaskId(2),
                attempt: AttemptNo(1),
                event: TaskEvent::NotifyAborted {
                    checkpoint: CheckpointId(5)
                },
            }
        );
        let t = CoordinatorEffect::TriggerTask {
            task: TaskId(0),
            attempt: AttemptNo(0),
            checkpoint: CheckpointId(1),
            timestamp: Millis(3),
            options: CheckpointOptions::FullCheckpoint,
        };
        assert!(matches!(
            coordinator(&t),
            CoordinatorRoute::Rpc {
                event: TaskEvent::TriggerCheckpoint { .. },
                ..
            }
        ));
    }

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
        assert_eq!(store.checkpoint(), Some(CheckpointId(9)));
        assert_eq!(alloc.checkpoint(), None);
    }

    #[test]
    fn task_messages_get_their_envelope() {
        let ack = task(&TaskEffect::AcknowledgeCheckpoint {
            checkpoint: CheckpointId(3),
            handle: StateHandle(30),
        });
        let TaskRoute::Coordinator(msg) = ack else {
            panic!("an ack goes to the coordinator");
        };
        assert_eq!(
            msg.event(JobId(1), TaskId(2), AttemptNo(4)),
            CoordinatorEvent::Acknowledge {
                job: JobId(1),
                task: TaskId(2),
                attempt: AttemptNo(4),
                checkpoint: CheckpointId(3),
                state: Some(StateHandle(30)),
            }
        );
        assert_eq!(
            task(&TaskEffect::BroadcastCancelMarker {
                checkpoint: CheckpointId(3)
            }),
            TaskRoute::Downstream(ChannelItem::CancelMarker(CheckpointId(3)))
        );
        assert_eq!(
            ChannelItem::Barrier(CheckpointId(3)).event(),
            TaskEvent::BarrierReceived {
                checkpoint: CheckpointId(3),
                via: Thread::Netty
            }
        );
    }
}
