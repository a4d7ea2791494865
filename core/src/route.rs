//! What travels between the machines, and where every effect goes.
//!
//! Each machine's effect type *is* its routing: a
//! [`CoordinatorEffect`](crate::coordinator::CoordinatorEffect) or a
//! [`TaskEffect`](crate::task::TaskEffect) names the part of the host that
//! carries it out and carries every field that part needs, so a host
//! matches on effects directly and no field is lost on the way. This module
//! holds the messages that cross from one machine to the other (it depends
//! on neither machine; each machine turns a message into its own event):
//!
//! * [`TaskMessage`]: an RPC from the coordinator to one task attempt
//!   (trigger, notify complete, notify aborted), with everything Flink's
//!   RPC carries; [`TaskMessage::event`] is what the task reducer takes.
//! * [`ToCoordinator`]: a task's acknowledgement or decline, before the
//!   envelope; [`ToCoordinator::event`] adds the job, task and attempt the
//!   host knows the task by.
//! * [`ChannelItem`]: a barrier or cancel marker on a data channel between
//!   tasks; [`ChannelItem::event`] is what the receiving task gets.
//!
//! | coordinator effect | the host |
//! |---|---|
//! | `Timer { timer, at }` | arms `timer` at `at` in its timer table (replacing), or disarms it (`at: None`); a firing comes back as `TimerFired` |
//! | `Io { generation, request }` | carries out the [`IoRequest`](crate::coordinator::IoRequest) on behalf of `generation` and answers it with [`IoRequest::answer`](crate::coordinator::IoRequest::answer) |
//! | `Rpc { task, attempt, generation, message }` | sends the [`TaskMessage`] to that attempt, whose task host puts [`TaskMessage::event`] in its **mailbox** |
//! | `Discard { generation, checkpoint, handle }` | deletes the state handle, on behalf of `generation` |
//! | `Job(JobCommand)` | fails, stops or finishes the job, moves the id counter, restores, shuts services down, resolves a checkpoint in doubt |
//! | `Report(Report)` | completes user futures, statistics |
//!
//! | task effect | the host |
//! |---|---|
//! | `Writer(WriterCommand)` | the channel-state writer thread |
//! | `Mail(checkpoint)` | enqueues `TaskEvent::CheckpointMail { checkpoint }` in this task's own mailbox (FIFO, never withdrawn) |
//! | `Downstream(ChannelItem)` | appends the item to every output channel |
//! | `AsyncPart(AsyncCommand)` | the asynchronous snapshot thread |
//! | `Coordinator(ToCoordinator)` | sends it to the coordinator, enveloped with [`ToCoordinator::event`] |
//! | `Discard(handle)` | deletes the state handle |
//! | `Operators(OperatorNotice)` | calls the operators' hooks |
//! | `Fail(FailureReason)` | fails the task attempt and reports `TaskFailed` |

use serde::{Deserialize, Serialize};

use crate::types::{CheckpointId, DeclineReason, Millis, StateHandle, Thread};

/// The options a trigger message carries to a task.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CheckpointOptions {
    /// A full checkpoint (externalized or not).
    FullCheckpoint,
    /// A savepoint written to `target`.
    Savepoint {
        /// Target directory.
        target: String,
    },
    /// A synchronous savepoint that stops the job (stop-with-savepoint):
    /// after it the task processes nothing more, and ends when the job
    /// stops (draining first if `drain`).
    SynchronousSavepoint {
        /// Target directory.
        target: String,
        /// Drain the pipeline rather than suspend it.
        drain: bool,
    },
}

/// An RPC from the coordinator to one task attempt: what Flink's
/// `TaskExecutorGateway` calls carry (`triggerCheckpoint`,
/// `confirmCheckpoint`, `abortCheckpoint`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TaskMessage {
    /// Trigger a checkpoint on a source task.
    Trigger {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// When the coordinator triggered it.
        timestamp: Millis,
        /// Full checkpoint or savepoint (and its target).
        options: CheckpointOptions,
    },
    /// The checkpoint completed: commit (a two-phase sink commits every
    /// pending transaction up to it).
    NotifyComplete {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// When it was triggered.
        timestamp: Millis,
    },
    /// The checkpoint was aborted.
    NotifyAborted {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The latest checkpoint completed when it was aborted, if any.
        latest_completed: Option<CheckpointId>,
        /// When the aborted checkpoint was triggered (Flink's
        /// `notifyCheckpointAborted` carries it too).
        timestamp: Millis,
    },
}

impl TaskMessage {
    /// The checkpoint the message is about.
    #[must_use]
    pub fn checkpoint(&self) -> CheckpointId {
        match self {
            TaskMessage::Trigger { checkpoint, .. }
            | TaskMessage::NotifyComplete { checkpoint, .. }
            | TaskMessage::NotifyAborted { checkpoint, .. } => *checkpoint,
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
    /// The thread of the receiver that takes this item.
    #[must_use]
    pub fn thread(self) -> Thread {
        match self {
            ChannelItem::Barrier(_) => Thread::Netty,
            ChannelItem::CancelMarker(_) => Thread::Task,
        }
    }

    /// The checkpoint the item is about.
    #[must_use]
    pub fn checkpoint(self) -> CheckpointId {
        match self {
            ChannelItem::Barrier(c) | ChannelItem::CancelMarker(c) => c,
        }
    }
}
