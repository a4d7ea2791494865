//! The protocol between the coordinator process and a task-manager process
//! (a process running every task of the job, see [`crate::manager`]).
//!
//! # Framing and encoding
//!
//! Frames are `tokio-util`'s [`LengthDelimitedCodec`] (a 4-byte big-endian
//! length, then the body; at most [`FRAME_MAX`] bytes). Each body is one
//! JSON document `{"version": 1, "message": ...}` ([`Frame`]). JSON
//! (`serde_json`) rather than a binary format because everything that
//! crosses is control traffic (a handshake, a deploy per failover, a few
//! messages per checkpoint and task), so its size does not matter; the
//! messages embed ckpt-core's serde types (`CoordinatorEvent`,
//! `TaskMessage`), whose JSON form is already the trace format's; and a
//! captured stream can be read by a person. The version is read before the
//! message, so a peer of another version gets a typed
//! [`WireError::Version`], not a decode error.
//!
//! # The conversation
//!
//! ```text
//! task manager                               coordinator
//!   Hello {job, tasks, generation?, running} ->
//!                                           <- Welcome {job, generation} | Refused(Refusal)
//!   (stops every running attempt)
//!   Ready {committed}                        ->  (opens the store under `generation` on the first Ready)
//!                                           <- Deploy {generation, attempts, restore}
//!                                           <- Rpc {generation, task, attempt, message} ...
//!   Rpc {generation, event} / Failed {...}   ->
//!   OutputComplete {generation}              ->
//!                                           <- Stop {generation}
//! ```
//!
//! **Generation (the leader's fencing token).** The coordinator announces
//! the generation it claims in the store in `Welcome` and names it on
//! every message; a task manager remembers the newest generation it has
//! served and refuses an older one ([`Refusal::StaleGeneration`], logged,
//! connection closed). It presents that generation in `Hello`: a
//! coordinator that meets a newer one than its own is deposed and refuses
//! too. Every message from the task manager names the generation it was
//! deployed under; the coordinator drops any of another generation.
//!
//! **Attempt.** `Hello` lists the attempts the task manager still runs. A
//! coordinator that failed those attempts over while the connection was
//! down refuses them ([`Refusal::StaleAttempt`]); the task manager stops
//! them and says `Hello` again with none. (A `Hello` that arrives while
//! the coordinator still holds an older connection of the task manager
//! replaces it: the old connection's attempts are failed over.) Attempts from an older
//! generation are simply stopped after `Welcome`. On the task manager's
//! current connection, acks and declines of an attempt of the
//! coordinator's generation that is not current are applied (the reducer
//! ignores them and discards the state an ack carries), as the in-process
//! host does; messages of another generation, and anything on a
//! connection a newer `Hello` replaced, are dropped.

use std::io;

use bytes::Bytes;
use ckpt_core::coordinator::CoordinatorEvent;
use ckpt_core::task::TaskMessage;
use ckpt_core::{AttemptNo, CheckpointId, Generation, JobId, StateHandle, TaskId};
use futures::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

/// The protocol version this build speaks (both sides must agree).
pub const PROTOCOL_VERSION: u32 = 1;
/// The largest frame accepted (bytes); a longer one is a protocol error.
pub const FRAME_MAX: usize = 16 << 20;

/// One frame's body: the version, then the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame<M> {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u32,
    /// The message.
    pub message: M,
}

/// The version part of a frame, read before the message.
#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

/// Messages from a task manager to the coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToCoordinatorMsg {
    /// The handshake's first message.
    Hello {
        /// The job the task manager runs.
        job: JobId,
        /// How many tasks it runs (ids `0..tasks`).
        tasks: u32,
        /// The newest leader generation it has served, if any.
        generation: Option<Generation>,
        /// The attempts it still runs (under `generation`).
        running: Vec<(TaskId, AttemptNo)>,
    },
    /// After `Welcome`: every old attempt is stopped; how far the
    /// exactly-once sinks have committed their output (the store refuses
    /// to restore anything older).
    Ready {
        /// The newest checkpoint whose output a sink committed.
        committed: Option<CheckpointId>,
    },
    /// An acknowledge or decline of one attempt, enveloped
    /// (`CoordinatorEvent::Acknowledge` / `CoordinatorEvent::Decline`).
    Rpc {
        /// The generation the attempt was deployed under.
        generation: Generation,
        /// The event.
        event: CoordinatorEvent,
    },
    /// An attempt failed.
    Failed {
        /// The generation the attempt was deployed under.
        generation: Generation,
        /// The task.
        task: TaskId,
        /// The attempt.
        attempt: AttemptNo,
    },
    /// The job's output is complete (a bounded source's every record is
    /// committed by the sinks): the coordinator may end the job.
    OutputComplete {
        /// The generation the attempts were deployed under.
        generation: Generation,
    },
}

/// Messages from the coordinator to a task manager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToManagerMsg {
    /// The handshake is accepted.
    Welcome {
        /// The job.
        job: JobId,
        /// The generation the coordinator claims in the store.
        generation: Generation,
    },
    /// The handshake is refused; the coordinator closes the connection.
    Refused(Refusal),
    /// Start every task under these attempts, restored from `restore`
    /// (the checkpoint and its state handles; `None`: a fresh start),
    /// after stopping every attempt still running.
    Deploy {
        /// The coordinator's generation.
        generation: Generation,
        /// The attempt of each task.
        attempts: Vec<(TaskId, AttemptNo)>,
        /// The checkpoint to restore and its state handles.
        restore: Option<(CheckpointId, Vec<StateHandle>)>,
    },
    /// An RPC for one attempt (trigger, notify-complete, notify-aborted).
    Rpc {
        /// The coordinator's generation.
        generation: Generation,
        /// The task.
        task: TaskId,
        /// The attempt.
        attempt: AttemptNo,
        /// The message.
        message: TaskMessage,
    },
    /// The job ended: stop every attempt and exit.
    Stop {
        /// The coordinator's generation.
        generation: Generation,
    },
}

/// Why one side refuses the other: logged, and the connection closed; the
/// coordinator also sends it ([`ToManagerMsg::Refused`]).
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum Refusal {
    /// The peer serves another job.
    #[error("wrong job: this side serves job {expected}, the peer job {got}")]
    WrongJob {
        /// This side's job.
        expected: JobId,
        /// The peer's.
        got: JobId,
    },
    /// The peer's task count is not the job's.
    #[error("wrong task count: the job has {expected} tasks, the peer runs {got}")]
    TaskCount {
        /// The job's.
        expected: u32,
        /// The peer's.
        got: u32,
    },
    /// A leader generation older than one already seen: a deposed leader.
    #[error("stale leader generation {got}: generation {newest} has been seen")]
    StaleGeneration {
        /// The generation refused.
        got: Generation,
        /// The newest seen.
        newest: Generation,
    },
    /// An attempt the coordinator no longer runs (it failed over while the
    /// task manager was away).
    #[error("stale attempt {attempt} of task {task} under generation {generation}")]
    StaleAttempt {
        /// The task.
        task: TaskId,
        /// The attempt.
        attempt: AttemptNo,
        /// The generation it was deployed under.
        generation: Generation,
    },
}

/// A failure of the connection or of the protocol.
#[derive(Debug, Error)]
pub enum WireError {
    /// The socket failed (or a frame exceeded [`FRAME_MAX`]).
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// A frame that is not a message of this protocol.
    #[error("undecodable frame: {0}")]
    Decode(#[from] serde_json::Error),
    /// The peer speaks another protocol version.
    #[error("protocol version {got}, this side speaks {PROTOCOL_VERSION}")]
    Version {
        /// The peer's version.
        got: u32,
    },
    /// The peer closed the connection.
    #[error("connection closed by the peer")]
    Closed,
    /// The peer refused, or this side refuses the peer.
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    /// A message that has no place at this point of the conversation.
    #[error("unexpected message: {0}")]
    Unexpected(String),
}

/// Encodes one message as a frame body.
pub fn encode<M: Serialize>(message: &M) -> Result<Bytes, WireError> {
    let frame = Frame {
        version: PROTOCOL_VERSION,
        message,
    };
    Ok(Bytes::from(serde_json::to_vec(&frame)?))
}

/// Decodes one frame body: the version first, then the message.
pub fn decode<M: DeserializeOwned>(body: &[u8]) -> Result<M, WireError> {
    let v: VersionOnly = serde_json::from_slice(body)?;
    if v.version != PROTOCOL_VERSION {
        return Err(WireError::Version { got: v.version });
    }
    let frame: Frame<M> = serde_json::from_slice(body)?;
    Ok(frame.message)
}

fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(FRAME_MAX)
        .new_codec()
}

/// The receiving half of a connection.
#[derive(Debug)]
pub struct Reader(FramedRead<OwnedReadHalf, LengthDelimitedCodec>);

/// The sending half of a connection.
#[derive(Debug)]
pub struct Writer(FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>);

/// Splits a connected socket into its framed halves (`TCP_NODELAY` set:
/// the messages are small and latency-bound).
pub fn split(stream: TcpStream) -> io::Result<(Reader, Writer)> {
    stream.set_nodelay(true)?;
    let (r, w) = stream.into_split();
    Ok((
        Reader(FramedRead::new(r, codec())),
        Writer(FramedWrite::new(w, codec())),
    ))
}

impl Reader {
    /// The next message; [`WireError::Closed`] at the end of the stream.
    pub async fn recv<M: DeserializeOwned>(&mut self) -> Result<M, WireError> {
        match self.0.next().await {
            Some(Ok(body)) => decode(&body),
            Some(Err(e)) => Err(WireError::Io(e)),
            None => Err(WireError::Closed),
        }
    }
}

impl Writer {
    /// Sends one message (flushed).
    pub async fn send<M: Serialize>(&mut self, message: &M) -> Result<(), WireError> {
        let body = encode(message)?;
        self.0.send(body).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_of_another_version_is_refused_before_its_message_is_read() {
        let body = br#"{"version":2,"message":{"NoSuchMessage":{}}}"#;
        match decode::<ToManagerMsg>(body) {
            Err(WireError::Version { got: 2 }) => {}
            other => panic!("expected a version error, got {other:?}"),
        }
    }

    #[test]
    fn messages_round_trip_through_a_frame_body() {
        let m = ToManagerMsg::Deploy {
            generation: Generation(3),
            attempts: vec![(TaskId(0), AttemptNo(2))],
            restore: Some((CheckpointId(7), vec![StateHandle(9)])),
        };
        let body = encode(&m).unwrap();
        assert_eq!(decode::<ToManagerMsg>(&body).unwrap(), m);
        let r = ToManagerMsg::Refused(Refusal::StaleGeneration {
            got: Generation(1),
            newest: Generation(2),
        });
        assert_eq!(decode::<ToManagerMsg>(&encode(&r).unwrap()).unwrap(), r);
    }
}
