//! The contents of one state handle's file: the operator's snapshot and the
//! channel state (the in-flight records before the barrier that the operator
//! had not processed when the snapshot was taken), with a checksum.
//!
//! `b"CKPTSTAT"`, task `u32`, checkpoint `u64`, snapshot length `u32`, the
//! snapshot, record count `u32`, records (`id`, `key`, `value`: `u64` each),
//! CRC-32 `u32` of every byte before it.

use thiserror::Error;

use super::Record;
use crate::types::{CheckpointId, StateHandle, TaskId};

/// State file magic bytes.
pub const STATE_MAGIC: &[u8; 8] = b"CKPTSTAT";
/// Largest operator snapshot accepted (bytes).
pub const SNAPSHOT_MAX_BYTES: u32 = 1 << 30;
/// Most channel-state records accepted.
pub const CHANNEL_RECORDS_MAX: u32 = 1 << 26;
/// Bits of a state handle that hold the task id (the rest hold the checkpoint id).
pub const HANDLE_TASK_BITS: u32 = 24;

/// The handle a task writes for a checkpoint: unique across crashes because
/// checkpoint ids never repeat and a task writes at most one per checkpoint.
/// `None` when the checkpoint id does not fit.
#[must_use]
pub fn handle_for(checkpoint: CheckpointId, task: TaskId) -> Option<StateHandle> {
    if checkpoint.0 >= 1 << (64 - HANDLE_TASK_BITS) || task.0 >= 1 << HANDLE_TASK_BITS {
        return None;
    }
    Some(StateHandle(
        (checkpoint.0 << HANDLE_TASK_BITS) | u64::from(task.0),
    ))
}

/// The task a handle was written by.
#[must_use]
pub fn task_of(handle: StateHandle) -> TaskId {
    TaskId(u32::try_from(handle.0 & ((1 << HANDLE_TASK_BITS) - 1)).unwrap_or(u32::MAX))
}

/// One decoded state file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSnapshot {
    /// The task that wrote it.
    pub task: TaskId,
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// The operator's snapshot.
    pub operator: Vec<u8>,
    /// The channel state, in arrival order.
    pub channel: Vec<Record>,
}

/// Why a state file was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum StateFileError {
    /// Not a state file.
    #[error("foreign state file: bad magic")]
    Foreign,
    /// Shorter than declared.
    #[error("truncated state file ({len} bytes)")]
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// A declared size beyond the bounds.
    #[error("state file declares {0} (beyond the bound)")]
    TooLarge(&'static str),
    /// The checksum does not match.
    #[error("state file checksum mismatch")]
    ChecksumMismatch,
    /// Bytes after the checksum.
    #[error("state file has trailing bytes")]
    TrailingBytes,
}

impl TaskSnapshot {
    /// Encodes with a checksum.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + self.operator.len() + 24 * self.channel.len());
        b.extend_from_slice(STATE_MAGIC);
        b.extend_from_slice(&self.task.0.to_le_bytes());
        b.extend_from_slice(&self.checkpoint.0.to_le_bytes());
        b.extend_from_slice(
            &u32::try_from(self.operator.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        b.extend_from_slice(&self.operator);
        b.extend_from_slice(
            &u32::try_from(self.channel.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        for r in &self.channel {
            r.encode_into(&mut b);
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a state file.
    pub fn decode(bytes: &[u8]) -> Result<TaskSnapshot, StateFileError> {
        if bytes.len() >= 8 && &bytes[..8] != STATE_MAGIC {
            return Err(StateFileError::Foreign);
        }
        let mut r = Cursor { bytes, at: 8 };
        if bytes.len() < 8 {
            return Err(r.truncated());
        }
        let task = TaskId(r.u32()?);
        let checkpoint = CheckpointId(r.u64()?);
        let op_len = r.u32()?;
        if op_len > SNAPSHOT_MAX_BYTES {
            return Err(StateFileError::TooLarge("operator snapshot length"));
        }
        let operator = r.take(op_len as usize)?.to_vec();
        let n = r.u32()?;
        if n > CHANNEL_RECORDS_MAX {
            return Err(StateFileError::TooLarge("channel record count"));
        }
        let mut channel = Vec::with_capacity((n as usize).min(bytes.len() / 24));
        for _ in 0..n {
            channel.push(Record {
                id: r.u64()?,
                key: r.u64()?,
                value: r.u64()?,
            });
        }
        let body = r.at;
        let stored = r.u32()?;
        if crc32fast::hash(&bytes[..body]) != stored {
            return Err(StateFileError::ChecksumMismatch);
        }
        if bytes.len() != body + 4 {
            return Err(StateFileError::TrailingBytes);
        }
        Ok(TaskSnapshot {
            task,
            checkpoint,
            operator,
            channel,
        })
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn truncated(&self) -> StateFileError {
        StateFileError::Truncated {
            len: self.bytes.len(),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], StateFileError> {
        let end = self.at.checked_add(n).ok_or_else(|| self.truncated())?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| self.truncated())?;
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, StateFileError> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
    }
    fn u64(&mut self) -> Result<u64, StateFileError> {
        let s = self.take(8)?;
        Ok(u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
    }
}

/// Decodes the state file `bytes` stored under `handle` for `checkpoint`
/// and checks that it is that task's file of that checkpoint (a file of
/// another task or checkpoint swapped in is refused, as a damaged one is).
/// The store runs this on the checkpoint it is about to restore
/// ([`crate::host::store::OpenOptions::check_state`]).
pub fn decode_for(
    checkpoint: CheckpointId,
    handle: StateHandle,
    bytes: &[u8],
) -> Result<TaskSnapshot, String> {
    let snap = TaskSnapshot::decode(bytes).map_err(|e| e.to_string())?;
    if snap.task != task_of(handle) || snap.checkpoint != checkpoint {
        return Err(format!(
            "holds the state of task {} for checkpoint {}, not of task {} for checkpoint {checkpoint}",
            snap.task,
            snap.checkpoint,
            task_of(handle)
        ));
    }
    Ok(snap)
}
