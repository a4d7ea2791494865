//! What a task asks of its host: one effect type whose variants are the
//! parts of the task host that carry them out (the routing table is in
//! [`crate::route`]), and the events the messages from elsewhere become.

use serde::{Deserialize, Serialize};

use super::{FailureReason, TaskEvent};
use crate::route::{ChannelItem, TaskMessage, ToCoordinator};
use crate::types::{CheckpointId, StateHandle, Thread};

/// What the host must do, in list order: each variant names the part of
/// the task host that carries it out, with every field it needs (the
/// routing table is in [`crate::route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskEffect {
    /// Work for the channel-state writer thread.
    Writer(WriterCommand),
    /// Enqueue this checkpoint's mail (`TaskEvent::CheckpointMail`) in this
    /// task's own mailbox (FIFO, never withdrawn): scheduled on a barrier.
    Mail(CheckpointId),
    /// Append the item to every output channel of this task.
    Downstream(ChannelItem),
    /// Work for the asynchronous snapshot thread.
    AsyncPart(AsyncCommand),
    /// Send to the coordinator (RPC), enveloped with
    /// [`ToCoordinator::event`](crate::route::ToCoordinator::event).
    Coordinator(ToCoordinator),
    /// Delete state nobody owns. The fixed semantics never emits it (a
    /// finished async part is always acknowledged, and the coordinator
    /// discards what it no longer needs); only
    /// [`LegacyBug::SubsumedPartDiscarded`](crate::LegacyBug::SubsumedPartDiscarded)
    /// does, for a part it takes as subsumed. A host that embeds a build
    /// with that knob carries it out like a coordinator's discard.
    Discard(StateHandle),
    /// Call the operators' hooks.
    Operators(OperatorNotice),
    /// Fail this task attempt: report the failure to the coordinator and
    /// close the task. The effects that follow it in the same step tear the
    /// checkpoint side down (writer results removed, async parts cancelled);
    /// carry them out too.
    Fail(FailureReason),
}

/// Work for the channel-state writer thread ([`TaskEffect::Writer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WriterCommand {
    /// Create the write result for the checkpoint and start writing channel
    /// state; report `WriterCompleted` / `WriterFailed`.
    Start(CheckpointId),
    /// Stop writing `checkpoint` and fail its result; with `cleanup`, also
    /// remove (drop) the result.
    Abort {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Remove the result as well.
        cleanup: bool,
    },
    /// Checkpointing during recovery: `checkpoint`'s result (just created)
    /// also takes the recovered input its task has not consumed yet. Insert
    /// a recovery barrier into each of the `channels` input channels still
    /// consuming recovered input; the writer persists what lies before it
    /// (the spilled slice) as the checkpoint's input channel state.
    CaptureRecovered {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Input channels still consuming recovered input.
        channels: u32,
    },
}

/// Work for the asynchronous snapshot thread ([`TaskEffect::AsyncPart`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AsyncCommand {
    /// Take (`getAndRemove`) the write result and run the asynchronous
    /// snapshot part; report `AsyncPartCompleted` (or `AsyncPartReused`) /
    /// `AsyncPartFailed`.
    Start(CheckpointId),
    /// Cancel the asynchronous part (and the write result it took),
    /// discarding whatever it wrote; a later report for it is ignored.
    Cancel(CheckpointId),
}

/// Operator hooks ([`TaskEffect::Operators`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OperatorNotice {
    /// `notifyCheckpointComplete` (commit side effects, e.g. a two-phase sink).
    Complete(CheckpointId),
    /// `notifyCheckpointAborted`.
    Aborted(CheckpointId),
}

impl TaskMessage {
    /// The event the task thread delivers when this RPC's mail runs (the
    /// task reducer takes the checkpoint id; the rest of the message is
    /// the host's: a savepoint target, the timestamps).
    #[must_use]
    pub fn event(&self) -> TaskEvent {
        match self {
            TaskMessage::Trigger {
                checkpoint,
                timestamp: _,
                options: _,
            } => TaskEvent::TriggerCheckpoint {
                checkpoint: *checkpoint,
            },
            TaskMessage::NotifyComplete {
                checkpoint,
                timestamp: _,
            } => TaskEvent::NotifyComplete {
                checkpoint: *checkpoint,
            },
            TaskMessage::NotifyAborted {
                checkpoint,
                latest_completed: _,
                timestamp: _,
            } => TaskEvent::NotifyAborted {
                checkpoint: *checkpoint,
            },
        }
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::CheckpointOptions;
    use crate::types::Millis;

    #[test]
    fn an_rpc_becomes_the_event_its_mail_delivers_and_keeps_what_the_host_needs() {
        let trigger = TaskMessage::Trigger {
            checkpoint: CheckpointId(5),
            timestamp: Millis(3),
            options: CheckpointOptions::Savepoint {
                target: "/sp".into(),
            },
        };
        assert_eq!(
            trigger.event(),
            TaskEvent::TriggerCheckpoint {
                checkpoint: CheckpointId(5)
            }
        );
        assert_eq!(trigger.checkpoint(), CheckpointId(5));
        let aborted = TaskMessage::NotifyAborted {
            checkpoint: CheckpointId(6),
            latest_completed: Some(CheckpointId(4)),
            timestamp: Millis(2),
        };
        assert_eq!(
            aborted.event(),
            TaskEvent::NotifyAborted {
                checkpoint: CheckpointId(6)
            }
        );
        let complete = TaskMessage::NotifyComplete {
            checkpoint: CheckpointId(4),
            timestamp: Millis(1),
        };
        assert_eq!(
            complete.event(),
            TaskEvent::NotifyComplete {
                checkpoint: CheckpointId(4)
            }
        );
    }

    #[test]
    fn channel_items_arrive_on_their_threads() {
        assert_eq!(
            ChannelItem::Barrier(CheckpointId(3)).event(),
            TaskEvent::BarrierReceived {
                checkpoint: CheckpointId(3),
                via: Thread::Netty
            }
        );
        assert_eq!(
            ChannelItem::CancelMarker(CheckpointId(3)).event(),
            TaskEvent::CancelMarker {
                checkpoint: CheckpointId(3)
            }
        );
        assert_eq!(
            ChannelItem::Barrier(CheckpointId(3)).thread(),
            Thread::Netty
        );
        assert_eq!(
            ChannelItem::CancelMarker(CheckpointId(3)).thread(),
            Thread::Task
        );
        assert_eq!(
            ChannelItem::CancelMarker(CheckpointId(8)).checkpoint(),
            CheckpointId(8)
        );
    }
}
