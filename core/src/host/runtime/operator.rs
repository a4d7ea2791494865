//! The user code a job runs: the [`Operator`] of each task (a source, a
//! transformation or a two-phase-commit sink), the [`Record`]s and
//! [`DataMsg`]s that flow between tasks, and the master hooks the
//! coordinator's
//! [`IoRequest::MasterHooks`](crate::coordinator::IoRequest::MasterHooks)
//! runs.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::types::{CheckpointId, TaskId};

/// One record flowing between tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Record {
    /// The record's number (sources number their records).
    pub id: u64,
    /// Its key.
    pub key: u64,
    /// Its value.
    pub value: u64,
}

impl Record {
    /// Appends the 24-byte little-endian encoding.
    pub fn encode_into(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(&self.id.to_le_bytes());
        b.extend_from_slice(&self.key.to_le_bytes());
        b.extend_from_slice(&self.value.to_le_bytes());
    }
}

/// A message on a data channel between two tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataMsg {
    /// Records, in order.
    Records(Vec<Record>),
    /// A checkpoint barrier.
    Barrier(CheckpointId),
    /// A cancel-checkpoint marker.
    Cancel(CheckpointId),
}

/// What a source's poll produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Records were appended to the output.
    Emitted,
    /// Nothing now; poll again after this long (or when a mail arrives).
    Idle(Duration),
    /// The source is finished for good.
    Exhausted,
}

/// A failure of user code; it fails the task (a genuine failure).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("operator failed: {0}")]
pub struct OperatorError(pub String);

/// User code of one task. All methods run on the task's task thread.
///
/// The host hands an operator no file system: the job's
/// [`Fs`](crate::host::fs::Fs) (given to
/// [`Job::start`](super::Job::start) or
/// [`TaskGroup::standalone`](super::TaskGroup::standalone)) holds the
/// checkpoints' state files, which the host writes and reads itself. An
/// operator with output of its own (the pipeline's two-phase-commit sink,
/// [`TwoPhaseSink`](crate::host::pipeline::TwoPhaseSink), writes its
/// transactions through the `Fs` it is built with) brings what it writes to, as a Flink sink brings its
/// connection to the external system.
pub trait Operator: Send + 'static {
    /// Whether this is a source ([`Operator::poll_source`] is called).
    fn is_source(&self) -> bool {
        false
    }
    /// A source's turn: append up to `max` records to `out`.
    fn poll_source(
        &mut self,
        _max: usize,
        _out: &mut Vec<Record>,
    ) -> Result<SourcePoll, OperatorError> {
        Ok(SourcePoll::Exhausted)
    }
    /// Processes one input record, appending outputs to `out`.
    fn process(&mut self, record: Record, out: &mut Vec<Record>) -> Result<(), OperatorError>;
    /// The synchronous part of a checkpoint: the operator's state as bytes
    /// (a two-phase-commit sink pre-commits here).
    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Vec<u8>, OperatorError>;
    /// Called once before anything else: the restored checkpoint and this
    /// task's snapshot in it (`None`, `None` for a fresh start).
    fn restore(
        &mut self,
        checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError>;
    /// The checkpoint completed (a two-phase-commit sink commits).
    fn notify_complete(&mut self, checkpoint: CheckpointId) -> Result<(), OperatorError>;
    /// The checkpoint was aborted.
    fn notify_aborted(&mut self, _checkpoint: CheckpointId) {}
    /// An exactly-once sink's answer to "how far is your output already
    /// committed?": the newest checkpoint whose output it has committed
    /// externally (read from the external system it writes to), `None` when
    /// nothing is committed or the operator commits nothing.
    /// [`Job::start`](super::Job::start) asks every task's operator before it recovers and refuses to restore
    /// an older checkpoint (that would commit the same output again). An
    /// operator that wraps another must forward this.
    fn committed_epoch(&mut self) -> Result<Option<CheckpointId>, OperatorError> {
        Ok(None)
    }
}

/// Builds the operator of one task: called for every attempt, and once per
/// task when the job starts, to ask [`Operator::committed_epoch`] before
/// recovery.
pub type OperatorFactory = Arc<dyn Fn(TaskId) -> Box<dyn Operator> + Send + Sync>;

/// A master hook (run for
/// [`IoRequest::MasterHooks`](crate::coordinator::IoRequest::MasterHooks)).
pub type MasterHook = Arc<dyn Fn(CheckpointId) -> Result<(), String> + Send + Sync>;
