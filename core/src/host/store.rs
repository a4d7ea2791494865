//! A durable checkpoint store on a file system ([`Fs`]): the answer to the
//! coordinator's I/O effects (id allocation, finalize, store, discard), the
//! source of truth after a crash, and the fence that keeps a deposed leader
//! from changing it.
//!
//! # Layout (under the store's root)
//!
//! ```text
//! ids                                   the id counter: the next id to hand out (atomic, checksummed)
//! leader/gen-<generation, 20 digits>    one per claimed leader generation (create-if-absent)
//! state/<handle as 16 hex digits>       one state handle = one file, written by a task
//! checkpoints/chk-<id, 20 digits>.prepared   finalized metadata, fsync'd, not yet stored
//! checkpoints/chk-<id, 20 digits>.meta       a stored (committed) checkpoint or savepoint
//! checkpoints/*.tmp                     a write in progress
//! checkpoints/*.corrupt                 a quarantined checkpoint, kept with its state for a human
//! ```
//!
//! # Writing
//!
//! * **Leadership.** A store handle is opened by a leader that claims a
//!   generation ([`FileStore::open`], [`OpenOptions::generation`]): it
//!   creates `leader/gen-<g>` with create-if-absent ([`Fs::create_new`]),
//!   fsyncs it and its directory. A claim of a generation that exists, or
//!   of one not above the newest claimed, is refused
//!   ([`StoreError::GenerationTaken`]). Every write that changes durable
//!   state (the id counter, finalize, the commit rename, retention
//!   evictions, discards, disposing of a savepoint, recovery's own clean-up)
//!   names the generation it is made for, and is refused with
//!   [`StoreError::StaleGeneration`] when a newer generation has been
//!   claimed, before it touches the disk. A coordinator that lost
//!   leadership but keeps running therefore cannot move the counter,
//!   commit, evict or delete anything the new leader recovered. The check
//!   reads the `leader` directory right before the write; a write that
//!   passed it an instant before a new claim can still land (a file system
//!   has no conditional rename), which is the window every lease-based
//!   fence has; the new leader's recovery removes what such a write leaves
//!   behind (`*.prepared`, unreferenced state files).
//! * **Finalize** writes `chk-N.prepared` and fsyncs it. **Store** renames it
//!   to `chk-N.meta` and fsyncs the directory: that rename is the commit
//!   point. Both check the commit order with [`crate::commit::check_next`],
//!   the rule the coordinator and its `Recover` check use: a checkpoint must
//!   be above every id the store holds, a savepoint need only be new (a
//!   savepoint pending since before a newer checkpoint completed may commit
//!   after it).
//! * **Retention.** After a commit, the oldest *checkpoints* beyond
//!   `retained_max` are removed (their metadata first; their state files
//!   when the coordinator discards them). **Savepoints are the user's:** they
//!   do not count towards `retained_max`, retention never removes one, and a
//!   discard of a savepoint's state is declined ([`Discarded::Savepoint`]);
//!   only [`FileStore::dispose_savepoint`] removes a savepoint (its metadata
//!   first, then the state files no other stored checkpoint references).
//! * **The id counter** is persisted (atomically) *before* an id is handed
//!   out, so an id is never reissued after a crash.
//! * **Discard** deletes a state file, except one referenced by a stored
//!   checkpoint: that is refused, counted as a contract violation
//!   ([`StoreStats::guard_refusals`]) and deferred until the store itself
//!   evicts the checkpoint. This is the durability rule: once a checkpoint is
//!   out for storing, its state belongs to the outcome of that I/O; only the
//!   store can say it is definitely not stored.
//!
//! # Recovery ([`FileStore::open`])
//!
//! Recovery reads everything first and changes nothing until it knows the
//! start is safe:
//!
//! 1. Every `*.meta` is decoded and checked (magic, version, checksum, job,
//!    id); every state file of every stored checkpoint must exist; and every
//!    state file of the checkpoint to restore (the newest, by
//!    [`crate::commit::latest`]) is read and checked by
//!    [`OpenOptions::check_state`]. A failure of any of these is one
//!    [`Damaged`] entry naming the file; that checkpoint is not restored and
//!    the next newest is tried.
//! 2. **Exactly-once.** When [`OpenOptions::committed`] says an exactly-once
//!    sink has already committed the output of checkpoint C, a restore of
//!    anything older than C would commit that output again: the open is
//!    refused ([`StoreError::BehindCommitted`], with the damage found)
//!    before any file is renamed or deleted.
//! 3. Otherwise the damaged checkpoints are quarantined (their metadata
//!    renamed `*.corrupt`, never loaded) **with their state files**: state
//!    files referenced by a `*.corrupt` metadata file, or by a checkpoint
//!    whose state is incomplete, are never deleted, so a human can repair
//!    the file, rename it back and rerun. (A `*.corrupt` file too damaged to
//!    name its handles keeps every unreferenced state file until it is
//!    removed.) Half-written files (`*.tmp`, `*.prepared`) are removed and
//!    never restored; state files no stored or quarantined checkpoint
//!    references are deleted (state of checkpoints that never committed).
//! 4. Nothing is evicted on open: a store opened with a lower `retained_max`
//!    than it was written with keeps every stored checkpoint until the next
//!    commit evicts down to the bound.
//!
//! [`Recovery::checkpoints`], [`Recovery::last_id`] and
//! [`Recovery::generation`] are exactly what [`CoordinatorEvent::Recover`]
//! takes ([`Recovery::recover_event`]), the checkpoints in id order, which
//! is always a legal commit order
//! ([`crate::commit::is_legal_order`]). [`FileStore::inspect`] runs steps 1
//! and 2 without claiming anything or writing, for a verification tool.
//!
//! # Metadata format (little endian)
//!
//! Version 2 (written): `b"CKPTMETA"`, version `u32` (2), job `u64`,
//! checkpoint `u64`, trigger timestamp `u64`, flags `u32` (bit 0: savepoint;
//! the other bits must be zero), handle count `u32`, the handles `u64` each,
//! CRC-32 (IEEE) `u32` of every byte before it.
//!
//! Version 1 (still read): the same without the flags word; it is read as a
//! checkpoint (not a savepoint), and its timestamp is the finalize time (the
//! closest this version recorded to the trigger time).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::sync::Arc;

use thiserror::Error;

use super::fs::{join, write_atomic, write_durable, Fs};
use crate::commit::{self, CommitOrderError};
use crate::coordinator::{CoordinatorEvent, RecoveredCheckpoint};
use crate::types::{CheckpointId, Generation, JobId, Millis, StateHandle};

/// Metadata magic bytes.
pub const META_MAGIC: &[u8; 8] = b"CKPTMETA";
/// The metadata format version written.
pub const META_VERSION: u32 = 2;
/// The oldest metadata format version still read (no savepoint flag).
pub const META_VERSION_MIN: u32 = 1;
/// The savepoint bit of the version-2 flags word.
pub const META_FLAG_SAVEPOINT: u32 = 1;
/// Id-counter magic bytes.
pub const IDS_MAGIC: &[u8; 8] = b"CKPTIDS1";
/// Leader-record magic bytes.
pub const LEADER_MAGIC: &[u8; 8] = b"CKPTGEN1";
/// Most state handles one checkpoint may reference (a bound on what a reader
/// allocates for a corrupt count).
pub const HANDLES_MAX: u32 = 1 << 24;
/// Directory of state files.
pub const STATE_DIR: &str = "state";
/// Directory of checkpoint metadata.
pub const CHECKPOINT_DIR: &str = "checkpoints";
/// Directory of leader records (one file per claimed generation).
pub const LEADER_DIR: &str = "leader";
/// The id counter file.
pub const IDS_FILE: &str = "ids";

/// Bytes before the handles in version 1.
const V1_HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4;
/// Bytes before the handles in version 2 (the flags word added).
const V2_HEADER_BYTES: usize = V1_HEADER_BYTES + 4;

/// The path of a state handle's file: `state/` and the handle as 16 hex
/// digits. Messages name a handle by this path, never by its decimal value.
#[must_use]
pub fn state_path(handle: StateHandle) -> String {
    join(STATE_DIR, &format!("{:016x}", handle.0))
}

/// Writes a state handle's file durably (the task's async part does this
/// before it acknowledges).
pub fn write_state(fs: &dyn Fs, handle: StateHandle, bytes: &[u8]) -> io::Result<()> {
    write_durable(fs, &state_path(handle), bytes)
}

/// Reads a state handle's file.
pub fn read_state(fs: &dyn Fs, handle: StateHandle) -> io::Result<Vec<u8>> {
    fs.read(&state_path(handle))
}

/// The path of checkpoint `id`'s stored metadata (`checkpoints/chk-<id>.meta`).
#[must_use]
pub fn meta_path(id: CheckpointId) -> String {
    meta_name(id, "meta")
}

fn meta_name(id: CheckpointId, ext: &str) -> String {
    join(CHECKPOINT_DIR, &format!("chk-{:020}.{ext}", id.0))
}

fn leader_path(generation: Generation) -> String {
    join(LEADER_DIR, &format!("gen-{:020}", generation.0))
}

/// The metadata of one checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The job.
    pub job: JobId,
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Whether it is a savepoint (the user's: never removed by retention).
    pub savepoint: bool,
    /// When it was triggered (the coordinator's time), as
    /// [`RecoveredCheckpoint::timestamp`]. Version-1 files hold the
    /// finalize time here.
    pub timestamp: Millis,
    /// Its state handles.
    pub handles: Vec<StateHandle>,
}

/// Why a metadata file was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MetadataError {
    /// Shorter than its header or than its declared contents.
    #[error("truncated: {len} bytes, at least {needed} needed")]
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        needed: usize,
    },
    /// Not a ckpt metadata file.
    #[error("foreign file: bad magic")]
    Foreign,
    /// A format version this reader does not know.
    #[error(
        "unsupported metadata version {0} (this reader knows {META_VERSION_MIN} to {META_VERSION})"
    )]
    UnsupportedVersion(u32),
    /// Flag bits this reader does not know (version 2).
    #[error("unknown metadata flags {0:#x}")]
    UnknownFlags(u32),
    /// The checksum does not match the contents.
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    ChecksumMismatch {
        /// Checksum in the file.
        stored: u32,
        /// Checksum of the contents.
        computed: u32,
    },
    /// Bytes after the checksum.
    #[error("{0} trailing bytes after the checksum")]
    TrailingBytes(usize),
    /// More handles than [`HANDLES_MAX`].
    #[error("{0} handles declared (at most {HANDLES_MAX})")]
    TooManyHandles(u32),
    /// Metadata of another job.
    #[error("metadata of job {found}, this store serves job {expected}")]
    WrongJob {
        /// This store's job.
        expected: JobId,
        /// The job in the file.
        found: JobId,
    },
    /// The id in the file is not the id in its name.
    #[error("file named for checkpoint {name} holds checkpoint {contents}")]
    IdMismatch {
        /// The id in the file name.
        name: CheckpointId,
        /// The id in the contents.
        contents: CheckpointId,
    },
}

/// The fields of a metadata file, parsed without the checksum check.
struct RawMetadata {
    version: u32,
    job: JobId,
    checkpoint: CheckpointId,
    timestamp: Millis,
    flags: u32,
    handles: Vec<StateHandle>,
    /// Bytes covered by the checksum.
    body: usize,
}

impl RawMetadata {
    fn parse(bytes: &[u8]) -> Result<RawMetadata, MetadataError> {
        if bytes.len() >= 8 && &bytes[..8] != META_MAGIC {
            return Err(MetadataError::Foreign);
        }
        if bytes.len() < 12 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: V1_HEADER_BYTES + 4,
            });
        }
        let mut r = Reader { bytes, at: 8 };
        let version = r.u32();
        let header = match version {
            1 => V1_HEADER_BYTES,
            2 => V2_HEADER_BYTES,
            v => return Err(MetadataError::UnsupportedVersion(v)),
        };
        if bytes.len() < header + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: header + 4,
            });
        }
        let job = JobId(r.u64());
        let checkpoint = CheckpointId(r.u64());
        let timestamp = Millis(r.u64());
        let flags = if version >= 2 { r.u32() } else { 0 };
        let n = r.u32();
        if n > HANDLES_MAX {
            return Err(MetadataError::TooManyHandles(n));
        }
        let body = header + 8 * n as usize;
        if bytes.len() < body + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: body + 4,
            });
        }
        let handles = (0..n).map(|_| StateHandle(r.u64())).collect();
        Ok(RawMetadata {
            version,
            job,
            checkpoint,
            timestamp,
            flags,
            handles,
            body,
        })
    }
}

impl Metadata {
    /// Encodes the metadata (version [`META_VERSION`]) with its checksum.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let flags = if self.savepoint {
            META_FLAG_SAVEPOINT
        } else {
            0
        };
        self.encode_as(META_VERSION, flags)
    }

    /// Encodes the metadata in the version-1 format (no savepoint flag), for
    /// tests and tools that must produce what an older writer left on disk.
    /// `None` for a savepoint, which version 1 cannot express.
    #[must_use]
    pub fn encode_v1(&self) -> Option<Vec<u8>> {
        (!self.savepoint).then(|| self.encode_as(1, 0))
    }

    fn encode_as(&self, version: u32, flags: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(V2_HEADER_BYTES + 8 * self.handles.len() + 4);
        b.extend_from_slice(META_MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&self.job.0.to_le_bytes());
        b.extend_from_slice(&self.checkpoint.0.to_le_bytes());
        b.extend_from_slice(&self.timestamp.0.to_le_bytes());
        if version >= 2 {
            b.extend_from_slice(&flags.to_le_bytes());
        }
        let n = u32::try_from(self.handles.len()).unwrap_or(u32::MAX);
        b.extend_from_slice(&n.to_le_bytes());
        for h in &self.handles {
            b.extend_from_slice(&h.0.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks metadata bytes of either version (magic, version,
    /// flags, length, checksum).
    pub fn decode(bytes: &[u8]) -> Result<Metadata, MetadataError> {
        let raw = RawMetadata::parse(bytes)?;
        let mut r = Reader {
            bytes,
            at: raw.body,
        };
        let stored = r.u32();
        let computed = crc32fast::hash(&bytes[..raw.body]);
        if stored != computed {
            return Err(MetadataError::ChecksumMismatch { stored, computed });
        }
        if bytes.len() > raw.body + 4 {
            return Err(MetadataError::TrailingBytes(bytes.len() - raw.body - 4));
        }
        if raw.flags & !META_FLAG_SAVEPOINT != 0 {
            return Err(MetadataError::UnknownFlags(raw.flags));
        }
        Ok(Metadata {
            job: raw.job,
            checkpoint: raw.checkpoint,
            savepoint: raw.version >= 2 && raw.flags & META_FLAG_SAVEPOINT != 0,
            timestamp: raw.timestamp,
            handles: raw.handles,
        })
    }
}

/// The handles a damaged metadata file still names, if its structure
/// parses (the checksum, the flags and trailing bytes are not checked):
/// recovery keeps those state files for a human to repair the checkpoint.
fn handles_named_by(bytes: &[u8]) -> Option<Vec<StateHandle>> {
    RawMetadata::parse(bytes).ok().map(|m| m.handles)
}

/// A bounds-checked little-endian reader (lengths are checked by the caller
/// before reading; a short read yields zeros rather than a panic).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(s);
        }
        self.at += N;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take::<4>())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take::<8>())
    }
}

/// Why the store failed or refused.
#[derive(Debug, Error)]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was attempted.
        op: &'static str,
        /// On which path.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The id counter file is invalid (never silently reset: ids must not repeat).
    #[error("id counter {path} is invalid: {why}")]
    BadCounter {
        /// The counter file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The id counter cannot go further.
    #[error("checkpoint id counter exhausted")]
    CounterExhausted,
    /// Store or finalize for a checkpoint the store does not know in that phase.
    #[error("checkpoint {0} is not prepared")]
    NotPrepared(CheckpointId),
    /// The commit would break the commit order ([`crate::commit::check_next`]).
    #[error("commit order: {0}")]
    CommitOrder(#[from] CommitOrderError),
    /// A write on behalf of a generation older than the newest claimed one:
    /// the writer is a deposed leader.
    #[error("generation {writer} is deposed: generation {current} has been claimed")]
    StaleGeneration {
        /// The generation the write was made for.
        writer: Generation,
        /// The newest claimed generation.
        current: Generation,
    },
    /// A write on behalf of a generation this handle did not claim.
    #[error("this store handle was opened for generation {handle}, not {writer}")]
    NotThisGeneration {
        /// The generation the write was made for.
        writer: Generation,
        /// The generation the handle claimed.
        handle: Generation,
    },
    /// The leader record of this handle's generation is gone (removed by
    /// hand): no write is made without it.
    #[error("the leader record of generation {0} is missing")]
    ClaimLost(Generation),
    /// A claim of a generation that exists or is not above the newest one.
    #[error("generation {requested} cannot be claimed: the newest claimed is {}", newest.map_or("none".to_string(), |g| g.to_string()))]
    GenerationTaken {
        /// The generation asked for.
        requested: Generation,
        /// The newest claimed generation.
        newest: Option<Generation>,
    },
    /// Restoring the newest whole checkpoint would go behind output an
    /// exactly-once sink has already committed. Nothing was changed on disk.
    #[error("{}", behind_committed(*committed, *restorable, damaged))]
    BehindCommitted {
        /// The newest checkpoint whose output was committed.
        committed: CheckpointId,
        /// The newest checkpoint that could be restored.
        restorable: Option<CheckpointId>,
        /// What recovery found damaged (why newer checkpoints cannot be used).
        damaged: Vec<Damaged>,
    },
    /// [`FileStore::dispose_savepoint`] of a checkpoint the store does not hold.
    #[error("checkpoint {0} is not stored")]
    NotStored(CheckpointId),
    /// [`FileStore::dispose_savepoint`] of a checkpoint that is not a savepoint
    /// (retention removes those).
    #[error("checkpoint {0} is not a savepoint")]
    NotASavepoint(CheckpointId),
    /// [`FileStore::dispose_savepoint`] of the store's latest checkpoint: the
    /// job would restore an older one next time.
    #[error("savepoint {0} is the latest stored checkpoint; it is restored on the next start")]
    LatestSavepoint(CheckpointId),
}

fn behind_committed(
    committed: CheckpointId,
    restorable: Option<CheckpointId>,
    damaged: &[Damaged],
) -> String {
    let mut s = format!(
        "the sink has already committed the output of checkpoint {committed}, but the newest \
         checkpoint that can be restored is {}: restoring it would commit that output again. \
         Nothing was changed on disk.",
        restorable.map_or("none".to_string(), |c| c.to_string())
    );
    for d in damaged {
        s.push_str(&format!("\n  damaged: {d}"));
    }
    s
}

fn io_err<'a>(op: &'static str, path: &'a str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_string(),
        source,
    }
}

/// What is wrong with a stored checkpoint found on start.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Damage {
    /// Its metadata file is invalid.
    #[error("{0}")]
    Metadata(MetadataError),
    /// One of its state files does not exist (or cannot be read).
    #[error("state file missing: {why}")]
    MissingState {
        /// The handle.
        handle: StateHandle,
        /// What reading it said.
        why: String,
    },
    /// One of its state files is not what the checkpoint wrote.
    #[error("state file damaged: {why}")]
    DamagedState {
        /// The handle.
        handle: StateHandle,
        /// What the check said.
        why: String,
    },
}

/// One damaged file of a stored checkpoint (reported, and quarantined when
/// the start goes ahead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The checkpoint, from its metadata file's name (`None` for a name the
    /// store did not write).
    pub checkpoint: Option<CheckpointId>,
    /// The damaged file: the metadata file or the state file.
    pub file: String,
    /// What is wrong with it.
    pub damage: Damage,
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.checkpoint {
            Some(c) => write!(f, "checkpoint {c}: {}: {}", self.file, self.damage),
            None => write!(f, "{}: {}", self.file, self.damage),
        }
    }
}

/// Checks one state file of the checkpoint to restore: `(checkpoint,
/// handle, bytes)`; an error says why the file is not that checkpoint's.
pub type StateCheck =
    Arc<dyn Fn(CheckpointId, StateHandle, &[u8]) -> Result<(), String> + Send + Sync>;

/// How to open a store.
#[derive(Clone)]
pub struct OpenOptions {
    /// The job the store serves (metadata of another job is damage).
    pub job: JobId,
    /// Checkpoints (not savepoints) retained after a commit; at least 1.
    /// Must match the coordinator's.
    pub retained_max: usize,
    /// The leader generation this handle claims and writes for: above every
    /// generation claimed so far ([`FileStore::newest_generation`]).
    pub generation: Generation,
    /// The newest checkpoint whose output an exactly-once sink has already
    /// committed (`None`: nothing committed, or no such sink). Recovery
    /// refuses to restore an older checkpoint.
    pub committed: Option<CheckpointId>,
    /// Checks the state files of the checkpoint to restore (`None`: only
    /// that they exist).
    pub check_state: Option<StateCheck>,
}

impl fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenOptions")
            .field("job", &self.job)
            .field("retained_max", &self.retained_max)
            .field("generation", &self.generation)
            .field("committed", &self.committed)
            .field("check_state", &self.check_state.is_some())
            .finish()
    }
}

impl OpenOptions {
    /// Options for `job` retaining `retained_max` checkpoints, claiming
    /// `generation`, with no committed output and no state check.
    #[must_use]
    pub fn new(job: JobId, retained_max: usize, generation: Generation) -> Self {
        OpenOptions {
            job,
            retained_max,
            generation,
            committed: None,
            check_state: None,
        }
    }
}

/// What [`FileStore::open`] found and did (or, from [`FileStore::inspect`],
/// what it would find and do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The generation claimed, which the coordinator recovers under (from
    /// [`FileStore::inspect`]: the newest claimed; nothing is claimed).
    pub generation: Generation,
    /// The stored checkpoints and savepoints that can be restored, in id
    /// order (a legal commit order), as [`CoordinatorEvent::Recover`] takes
    /// them. More than `retained_max` when the store was written with a
    /// higher bound or savepoints are held.
    pub checkpoints: Vec<RecoveredCheckpoint>,
    /// The last id the counter handed out, as [`CoordinatorEvent::Recover`]
    /// takes it (at least every stored or quarantined checkpoint's id).
    pub last_id: Option<CheckpointId>,
    /// Damage found on this start; those checkpoints are quarantined
    /// (metadata renamed `*.corrupt`, state files kept) and not restored.
    pub damaged: Vec<Damaged>,
    /// Every quarantined metadata file now in `checkpoints/` (this start's
    /// and earlier ones'), kept for a human with its state files.
    pub quarantined: Vec<String>,
    /// Files in the store's directories that it did not write, left alone.
    pub foreign: Vec<String>,
    /// Half-written files removed (`*.tmp`, `*.prepared`).
    pub removed_partial: Vec<String>,
    /// State files no stored or quarantined checkpoint references, deleted.
    pub removed_orphans: Vec<StateHandle>,
    /// Unreferenced state files kept because a quarantined metadata file is
    /// too damaged to say which state files it references.
    pub kept_unreferenced: Vec<StateHandle>,
}

impl Recovery {
    /// The checkpoint to restore: the newest ([`crate::commit::latest`]).
    #[must_use]
    pub fn latest(&self) -> Option<&RecoveredCheckpoint> {
        let id = commit::latest(self.checkpoints.iter().map(|c| (c.checkpoint, c.savepoint)))?;
        self.checkpoints.iter().find(|c| c.checkpoint == id)
    }

    /// The coordinator's first event: `Recover` with exactly this list,
    /// counter and generation.
    #[must_use]
    pub fn recover_event(&self) -> CoordinatorEvent {
        CoordinatorEvent::Recover {
            checkpoints: self.checkpoints.clone(),
            last_id: self.last_id,
            generation: self.generation,
        }
    }
}

/// What a discard did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discarded {
    /// The state file was deleted.
    Deleted,
    /// There was no such file (already deleted, or never written).
    AlreadyGone,
    /// Refused: a stored checkpoint references it (a contract violation by
    /// the caller); deleted when the store evicts that checkpoint.
    Refused {
        /// The stored checkpoint that holds it.
        checkpoint: CheckpointId,
    },
    /// Declined: only a stored savepoint references it, and savepoints are
    /// the user's ([`FileStore::dispose_savepoint`]). A coordinator that
    /// counts savepoints towards its retention asks for this.
    Savepoint {
        /// The savepoint that holds it.
        savepoint: CheckpointId,
    },
}

/// Counters of what the store did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Ids handed out.
    pub ids_allocated: u64,
    /// Checkpoints stored.
    pub stored: u64,
    /// Stored checkpoints evicted beyond `retained_max`.
    pub evicted: u64,
    /// State files deleted.
    pub deleted: u64,
    /// Discards refused because a stored checkpoint references the handle
    /// (the durability rule's guard; each is a contract violation by the caller).
    pub guard_refusals: u64,
    /// The refused handles, with the stored checkpoint that protected each.
    pub refused: Vec<(StateHandle, CheckpointId)>,
    /// Discards declined because a savepoint holds the handle.
    pub savepoint_declines: u64,
    /// Writes refused because a newer generation was claimed.
    pub fenced: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    savepoint: bool,
    timestamp: Millis,
    handles: Vec<StateHandle>,
}

/// The durable checkpoint store. Not thread-safe by itself: the coordinator
/// driver owns it and calls it from one place.
pub struct FileStore {
    fs: Arc<dyn Fs>,
    job: JobId,
    retained_max: usize,
    generation: Generation,
    next_id: u64,
    stored: BTreeMap<CheckpointId, Entry>,
    prepared: BTreeMap<CheckpointId, Entry>,
    /// Handle -> the stored checkpoints referencing it.
    holders: BTreeMap<StateHandle, BTreeSet<CheckpointId>>,
    /// Handles named by quarantined metadata: never deleted by the store.
    quarantined: BTreeSet<StateHandle>,
    /// Discards refused while protected; deleted on eviction.
    deferred: BTreeSet<StateHandle>,
    stats: StoreStats,
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("job", &self.job)
            .field("generation", &self.generation)
            .field("retained_max", &self.retained_max)
            .field("next_id", &self.next_id)
            .field("stored", &self.stored.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn parse_meta_name(name: &str) -> Option<(CheckpointId, &str)> {
    let rest = name.strip_prefix("chk-")?;
    let (digits, ext) = rest.split_once('.')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|id| (CheckpointId(id), ext))
}

fn parse_leader_name(name: &str) -> Option<Generation> {
    let digits = name.strip_prefix("gen-")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Generation)
}

fn parse_state_name(name: &str) -> Option<StateHandle> {
    if name.len() != 16 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(name, 16).ok().map(StateHandle)
}

/// Everything recovery read, before it changes anything.
struct Scan {
    counter: u64,
    valid: BTreeMap<CheckpointId, Entry>,
    damaged: Vec<Damaged>,
    /// Checkpoints to quarantine (their `.meta` renamed).
    to_quarantine: BTreeSet<CheckpointId>,
    quarantined: Vec<String>,
    foreign: Vec<String>,
    partial: Vec<String>,
    orphans: Vec<StateHandle>,
    kept_unreferenced: Vec<StateHandle>,
    /// Handles named by quarantined metadata (earlier and this start's).
    kept: BTreeSet<StateHandle>,
    /// The highest checkpoint id any file name mentions.
    max_id_named: Option<CheckpointId>,
}

impl Scan {
    /// `id` cannot be restored: report each bad file, keep its state files
    /// and quarantine its metadata.
    fn mark_damaged(&mut self, id: CheckpointId, bad: impl Iterator<Item = (StateHandle, Damage)>) {
        if let Some(e) = self.valid.remove(&id) {
            self.kept.extend(e.handles);
        }
        self.to_quarantine.insert(id);
        for (h, damage) in bad {
            self.damaged.push(Damaged {
                checkpoint: Some(id),
                file: state_path(h),
                damage,
            });
        }
    }

    fn restorable(&self) -> Option<CheckpointId> {
        commit::latest(self.valid.iter().map(|(id, e)| (*id, e.savepoint)))
    }

    fn last_id(&self) -> Option<CheckpointId> {
        let next = self.next_id();
        (next > 1).then(|| CheckpointId(next - 1))
    }

    /// The counter after recovery: above every id handed out or named on disk.
    fn next_id(&self) -> u64 {
        let named = self.max_id_named.map_or(1, |id| id.0.saturating_add(1));
        self.counter.max(named).max(1)
    }

    fn checkpoints(&self) -> Vec<RecoveredCheckpoint> {
        self.valid
            .iter()
            .map(|(id, e)| RecoveredCheckpoint {
                checkpoint: *id,
                savepoint: e.savepoint,
                timestamp: e.timestamp,
                handles: e.handles.clone(),
            })
            .collect()
    }

    fn refusal(&self, committed: Option<CheckpointId>) -> Option<StoreError> {
        let committed = committed?;
        let restorable = self.restorable();
        if restorable.is_none_or(|r| r < committed) {
            Some(StoreError::BehindCommitted {
                committed,
                restorable,
                damaged: self.damaged.clone(),
            })
        } else {
            None
        }
    }

    fn report(&self, generation: Generation) -> Recovery {
        let mut quarantined = self.quarantined.clone();
        quarantined.extend(
            self.to_quarantine
                .iter()
                .map(|id| format!("{}.corrupt", meta_path(*id))),
        );
        quarantined.sort();
        Recovery {
            generation,
            checkpoints: self.checkpoints(),
            last_id: self.last_id(),
            damaged: self.damaged.clone(),
            quarantined,
            foreign: self.foreign.clone(),
            removed_partial: self.partial.clone(),
            removed_orphans: self.orphans.clone(),
            kept_unreferenced: self.kept_unreferenced.clone(),
        }
    }
}

impl FileStore {
    /// The newest leader generation claimed on `fs` (`None` before the
    /// first claim). A new leader claims one above it.
    pub fn newest_generation(fs: &dyn Fs) -> Result<Option<Generation>, StoreError> {
        let names = fs.list(LEADER_DIR).map_err(io_err("list", LEADER_DIR))?;
        Ok(names.iter().filter_map(|n| parse_leader_name(n)).max())
    }

    /// The generation a new leader claims on `fs`: one above the newest
    /// claimed (1 on a fresh store).
    pub fn next_generation(fs: &dyn Fs) -> Result<Generation, StoreError> {
        match Self::newest_generation(fs)? {
            None => Ok(Generation(1)),
            Some(g) => {
                g.0.checked_add(1)
                    .map(Generation)
                    .ok_or(StoreError::GenerationTaken {
                        requested: g,
                        newest: Some(g),
                    })
            }
        }
    }

    fn claim(fs: &dyn Fs, job: JobId, generation: Generation) -> Result<(), StoreError> {
        let newest = Self::newest_generation(fs)?;
        let taken = StoreError::GenerationTaken {
            requested: generation,
            newest,
        };
        if newest.is_some_and(|n| generation <= n) {
            return Err(taken);
        }
        fs.create_dir_all(LEADER_DIR)
            .map_err(io_err("create", LEADER_DIR))?;
        let path = leader_path(generation);
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(LEADER_MAGIC);
        b.extend_from_slice(&job.0.to_le_bytes());
        b.extend_from_slice(&generation.0.to_le_bytes());
        match fs.create_new(&path, &b) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(StoreError::GenerationTaken {
                    requested: generation,
                    newest: Self::newest_generation(fs)?,
                })
            }
            Err(e) => return Err(io_err("create", &path)(e)),
        }
        fs.sync_file(&path).map_err(io_err("sync", &path))?;
        fs.sync_dir(LEADER_DIR).map_err(io_err("sync", LEADER_DIR))
    }

    /// Claims `options.generation`, recovers (see the module docs) and
    /// opens the store for writing on behalf of that generation.
    ///
    /// Refused without a change on disk when restoring would go behind
    /// `options.committed` ([`StoreError::BehindCommitted`]; the generation
    /// stays claimed, which only fences older leaders).
    pub fn open(
        fs: Arc<dyn Fs>,
        options: OpenOptions,
    ) -> Result<(FileStore, Recovery), StoreError> {
        let job = options.job;
        fs.create_dir_all(STATE_DIR)
            .map_err(io_err("create", STATE_DIR))?;
        fs.create_dir_all(CHECKPOINT_DIR)
            .map_err(io_err("create", CHECKPOINT_DIR))?;
        Self::claim(&*fs, job, options.generation)?;
        let scan = Self::scan(&*fs, job, options.check_state.as_ref())?;
        if let Some(refusal) = scan.refusal(options.committed) {
            return Err(refusal);
        }
        let rec = scan.report(options.generation);
        let mut store = FileStore {
            fs,
            job,
            retained_max: options.retained_max.max(1),
            generation: options.generation,
            next_id: scan.next_id(),
            stored: BTreeMap::new(),
            prepared: BTreeMap::new(),
            holders: BTreeMap::new(),
            quarantined: scan.kept.clone(),
            deferred: BTreeSet::new(),
            stats: StoreStats::default(),
        };
        store.apply(&scan)?;
        for (id, e) in scan.valid {
            for h in &e.handles {
                store.holders.entry(*h).or_default().insert(id);
            }
            store.stored.insert(id, e);
        }
        Ok((store, rec))
    }

    /// What [`FileStore::open`] would find and do, read without claiming a
    /// generation or writing anything; `Err(StoreError::BehindCommitted)`
    /// when it would refuse. For verification tools.
    pub fn inspect(
        fs: &dyn Fs,
        job: JobId,
        committed: Option<CheckpointId>,
        check_state: Option<&StateCheck>,
    ) -> Result<Recovery, StoreError> {
        let scan = Self::scan(fs, job, check_state)?;
        if let Some(refusal) = scan.refusal(committed) {
            return Err(refusal);
        }
        let generation = Self::newest_generation(fs)?.unwrap_or_default();
        Ok(scan.report(generation))
    }

    /// Reads the store: changes nothing.
    fn scan(fs: &dyn Fs, job: JobId, check: Option<&StateCheck>) -> Result<Scan, StoreError> {
        let mut scan = Scan {
            counter: Self::read_counter(fs, job)?,
            valid: BTreeMap::new(),
            damaged: Vec::new(),
            to_quarantine: BTreeSet::new(),
            quarantined: Vec::new(),
            foreign: Vec::new(),
            partial: Vec::new(),
            orphans: Vec::new(),
            kept_unreferenced: Vec::new(),
            kept: BTreeSet::new(),
            max_id_named: None,
        };
        let mut undecodable_quarantine = false;
        let names = fs
            .list(CHECKPOINT_DIR)
            .map_err(io_err("list", CHECKPOINT_DIR))?;
        for name in names {
            let path = join(CHECKPOINT_DIR, &name);
            let parsed = parse_meta_name(&name);
            // Ids of stored and quarantined checkpoints (a quarantined one
            // may be repaired and read again): the counter stays above them.
            if let Some((id, ext)) = parsed {
                if ext == "meta" || ext.ends_with(".corrupt") {
                    scan.max_id_named = scan.max_id_named.max(Some(id));
                }
            }
            if name.ends_with(".corrupt") {
                let bytes = fs.read(&path).map_err(io_err("read", &path))?;
                match handles_named_by(&bytes) {
                    Some(hs) => scan.kept.extend(hs),
                    None => undecodable_quarantine = true,
                }
                scan.quarantined.push(path);
                continue;
            }
            match parsed {
                Some((_, "prepared")) => scan.partial.push(path),
                Some((_, ext)) if ext.ends_with("tmp") => scan.partial.push(path),
                Some((id, "meta")) => {
                    let bytes = fs.read(&path).map_err(io_err("read", &path))?;
                    let checked = Metadata::decode(&bytes).and_then(|m| {
                        if m.job != job {
                            Err(MetadataError::WrongJob {
                                expected: job,
                                found: m.job,
                            })
                        } else if m.checkpoint != id {
                            Err(MetadataError::IdMismatch {
                                name: id,
                                contents: m.checkpoint,
                            })
                        } else {
                            Ok(m)
                        }
                    });
                    match checked {
                        Ok(m) => {
                            scan.valid.insert(
                                id,
                                Entry {
                                    savepoint: m.savepoint,
                                    timestamp: m.timestamp,
                                    handles: m.handles,
                                },
                            );
                        }
                        Err(error) => {
                            match handles_named_by(&bytes) {
                                Some(hs) => scan.kept.extend(hs),
                                None => undecodable_quarantine = true,
                            }
                            scan.to_quarantine.insert(id);
                            scan.damaged.push(Damaged {
                                checkpoint: Some(id),
                                file: path,
                                damage: Damage::Metadata(error),
                            });
                        }
                    }
                }
                Some(_) | None => scan.foreign.push(path),
            }
        }
        // A stored checkpoint whose state is incomplete cannot be restored.
        let ids: Vec<CheckpointId> = scan.valid.keys().copied().collect();
        for id in ids {
            let handles = scan
                .valid
                .get(&id)
                .map(|e| e.handles.clone())
                .unwrap_or_default();
            let missing: Vec<StateHandle> = handles
                .iter()
                .copied()
                .filter(|h| !fs.exists(&state_path(*h)))
                .collect();
            if !missing.is_empty() {
                scan.mark_damaged(
                    id,
                    missing.into_iter().map(|h| {
                        (
                            h,
                            Damage::MissingState {
                                handle: h,
                                why: "no such file".into(),
                            },
                        )
                    }),
                );
            }
        }
        // The checkpoint to restore: every state file read and checked,
        // newest first until one is whole.
        if let Some(check) = check {
            while let Some(id) = scan.restorable() {
                let handles = scan
                    .valid
                    .get(&id)
                    .map(|e| e.handles.clone())
                    .unwrap_or_default();
                let mut bad = Vec::new();
                for h in handles {
                    match read_state(fs, h) {
                        Ok(bytes) => {
                            if let Err(why) = check(id, h, &bytes) {
                                bad.push((h, Damage::DamagedState { handle: h, why }));
                            }
                        }
                        Err(e) => bad.push((
                            h,
                            Damage::MissingState {
                                handle: h,
                                why: e.to_string(),
                            },
                        )),
                    }
                }
                if bad.is_empty() {
                    break;
                }
                scan.mark_damaged(id, bad.into_iter());
            }
        }
        // State files nobody references.
        let referenced: BTreeSet<StateHandle> = scan
            .valid
            .values()
            .flat_map(|e| e.handles.iter().copied())
            .chain(scan.kept.iter().copied())
            .collect();
        for name in fs.list(STATE_DIR).map_err(io_err("list", STATE_DIR))? {
            match parse_state_name(&name) {
                Some(h) if referenced.contains(&h) => {}
                Some(h) if undecodable_quarantine => scan.kept_unreferenced.push(h),
                Some(h) => scan.orphans.push(h),
                None => scan.foreign.push(join(STATE_DIR, &name)),
            }
        }
        Ok(scan)
    }

    /// Removes the writes recovery decided on: quarantines, half-written
    /// files, orphans, then the counter.
    fn apply(&mut self, scan: &Scan) -> Result<(), StoreError> {
        self.fence(self.generation)?;
        let fs = Arc::clone(&self.fs);
        let mut dirty = false;
        for path in &scan.partial {
            match fs.remove(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", path)(e)),
            }
            dirty = true;
        }
        for id in &scan.to_quarantine {
            let from = meta_path(*id);
            let mut to = format!("{from}.corrupt");
            let mut n = 2;
            while fs.exists(&to) {
                to = format!("{from}.{n}.corrupt");
                n += 1;
            }
            fs.rename(&from, &to).map_err(io_err("rename", &from))?;
            dirty = true;
        }
        if dirty {
            fs.sync_dir(CHECKPOINT_DIR)
                .map_err(io_err("sync", CHECKPOINT_DIR))?;
        }
        for h in &scan.orphans {
            let path = state_path(*h);
            match fs.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
        }
        if !scan.orphans.is_empty() {
            fs.sync_dir(STATE_DIR).map_err(io_err("sync", STATE_DIR))?;
        }
        self.write_counter(self.next_id)
    }

    /// Refuses a write for `writer` unless it is this handle's generation
    /// and still the newest claimed.
    fn fence(&mut self, writer: Generation) -> Result<(), StoreError> {
        if writer != self.generation {
            return Err(StoreError::NotThisGeneration {
                writer,
                handle: self.generation,
            });
        }
        match Self::newest_generation(&*self.fs)? {
            Some(current) if current == writer => Ok(()),
            Some(current) if current > writer => {
                self.stats.fenced += 1;
                Err(StoreError::StaleGeneration { writer, current })
            }
            Some(_) | None => Err(StoreError::ClaimLost(writer)),
        }
    }

    fn read_counter(fs: &dyn Fs, job: JobId) -> Result<u64, StoreError> {
        if !fs.exists(IDS_FILE) {
            return Ok(1);
        }
        let bad = |why: String| StoreError::BadCounter {
            path: IDS_FILE.into(),
            why,
        };
        let b = fs.read(IDS_FILE).map_err(io_err("read", IDS_FILE))?;
        if b.len() != 28 {
            return Err(bad(format!("{} bytes, expected 28", b.len())));
        }
        if &b[..8] != IDS_MAGIC {
            return Err(bad("foreign file: bad magic".into()));
        }
        let mut r = Reader { bytes: &b, at: 8 };
        let file_job = JobId(r.u64());
        let next = r.u64();
        let stored = r.u32();
        let computed = crc32fast::hash(&b[..24]);
        if stored != computed {
            return Err(bad(format!(
                "checksum mismatch: stored {stored:08x}, computed {computed:08x}"
            )));
        }
        if file_job != job {
            return Err(bad(format!("counter of job {file_job}, expected {job}")));
        }
        Ok(next)
    }

    fn write_counter(&self, next: u64) -> Result<(), StoreError> {
        let mut b = Vec::with_capacity(28);
        b.extend_from_slice(IDS_MAGIC);
        b.extend_from_slice(&self.job.0.to_le_bytes());
        b.extend_from_slice(&next.to_le_bytes());
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        write_atomic(&*self.fs, IDS_FILE, &b).map_err(io_err("write", IDS_FILE))
    }

    /// Hands out the next checkpoint id on behalf of `writer`; the counter
    /// is durable before the id is returned.
    pub fn allocate_id(&mut self, writer: Generation) -> Result<CheckpointId, StoreError> {
        self.fence(writer)?;
        let id = self.next_id;
        let next = id.checked_add(1).ok_or(StoreError::CounterExhausted)?;
        self.write_counter(next)?;
        self.next_id = next;
        self.stats.ids_allocated += 1;
        Ok(CheckpointId(id))
    }

    /// Moves the counter so the next id is at least `next` (never back:
    /// ids handed out before a crash must not repeat), on behalf of `writer`.
    pub fn reset_counter(
        &mut self,
        writer: Generation,
        next: CheckpointId,
    ) -> Result<(), StoreError> {
        self.fence(writer)?;
        if next.0 > self.next_id {
            self.write_counter(next.0)?;
            self.next_id = next.0;
        }
        Ok(())
    }

    /// The coordinator's `FinalizeCheckpoint`, on behalf of `writer`: writes
    /// and fsyncs the metadata of `checkpoint` (a savepoint when
    /// `savepoint`, triggered at `timestamp`) under its prepared name. Not
    /// yet stored. Refused when it could not be committed after what the
    /// store holds ([`crate::commit::check_next`]).
    pub fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> Result<(), StoreError> {
        self.fence(writer)?;
        commit::check_next(self.held(), checkpoint, savepoint)?;
        let meta = Metadata {
            job: self.job,
            checkpoint,
            savepoint,
            timestamp,
            handles: handles.to_vec(),
        };
        let path = meta_name(checkpoint, "prepared");
        let fs = &*self.fs;
        let r = fs
            .write(&path, &meta.encode())
            .and_then(|()| fs.sync_file(&path));
        if let Err(e) = r {
            // Definitely not stored: a prepared file is never restored.
            let _ = fs.remove(&path);
            return Err(StoreError::Io {
                op: "finalize",
                path,
                source: e,
            });
        }
        self.prepared.insert(
            checkpoint,
            Entry {
                savepoint,
                timestamp,
                handles: handles.to_vec(),
            },
        );
        Ok(())
    }

    fn held(&self) -> impl Iterator<Item = (CheckpointId, bool)> + '_ {
        self.stored.iter().map(|(id, e)| (*id, e.savepoint))
    }

    /// The coordinator's `StoreCheckpoint`, on behalf of `writer`: the
    /// commit order is checked again, then the commit point (rename, fsync
    /// of the directory), then eviction of the oldest checkpoints (never
    /// savepoints) beyond `retained_max`. Returns the evicted checkpoint ids.
    ///
    /// An error before the rename means "definitely not stored" (the
    /// prepared file is removed, unless the error is the fence's: a deposed
    /// leader changes nothing). After the rename the checkpoint is held as
    /// stored even if the directory sync fails (the outcome is then unknown
    /// until recovery reads the store), so its state is guarded either way.
    pub fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> Result<Vec<CheckpointId>, StoreError> {
        self.fence(writer)?;
        let Some(entry) = self.prepared.remove(&checkpoint) else {
            return Err(StoreError::NotPrepared(checkpoint));
        };
        let from = meta_name(checkpoint, "prepared");
        if let Err(e) = commit::check_next(self.held(), checkpoint, entry.savepoint) {
            let _ = self.fs.remove(&from);
            return Err(e.into());
        }
        let to = meta_name(checkpoint, "meta");
        if let Err(e) = self.fs.rename(&from, &to) {
            let _ = self.fs.remove(&from);
            return Err(StoreError::Io {
                op: "rename",
                path: from,
                source: e,
            });
        }
        for h in &entry.handles {
            self.holders.entry(*h).or_default().insert(checkpoint);
        }
        self.stored.insert(checkpoint, entry);
        self.stats.stored += 1;
        self.fs
            .sync_dir(CHECKPOINT_DIR)
            .map_err(io_err("sync", CHECKPOINT_DIR))?;
        let mut evicted = Vec::new();
        loop {
            let checkpoints = self.stored.values().filter(|e| !e.savepoint).count();
            if checkpoints <= self.retained_max {
                break;
            }
            let Some(old) = self
                .stored
                .iter()
                .find(|(_, e)| !e.savepoint)
                .map(|(id, _)| *id)
            else {
                break;
            };
            // A leader deposed after this commit leaves retention to the
            // new one (the commit itself stands).
            if self.fence(writer).is_err() {
                break;
            }
            let path = meta_path(old);
            self.fs.remove(&path).map_err(io_err("remove", &path))?;
            self.stats.evicted += 1;
            evicted.push(old);
            let hs = self.forget(old);
            for h in hs {
                if !self.holders.contains_key(&h) && self.deferred.remove(&h) {
                    self.delete_state(h)?;
                }
            }
        }
        if !evicted.is_empty() {
            self.fs
                .sync_dir(CHECKPOINT_DIR)
                .map_err(io_err("sync", CHECKPOINT_DIR))?;
        }
        Ok(evicted)
    }

    /// Drops a stored checkpoint from the in-memory view; returns its handles.
    fn forget(&mut self, id: CheckpointId) -> Vec<StateHandle> {
        let Some(e) = self.stored.remove(&id) else {
            return Vec::new();
        };
        for h in &e.handles {
            if let Some(set) = self.holders.get_mut(h) {
                set.remove(&id);
                if set.is_empty() {
                    self.holders.remove(h);
                }
            }
        }
        e.handles
    }

    /// The coordinator's (or a task's) `DiscardState`, on behalf of
    /// `writer`: deletes the state file unless a stored checkpoint or
    /// savepoint references it (see [`Discarded`]). A prepared (finalized,
    /// not stored) checkpoint holding the handle is dropped first, so it can
    /// never be stored without its state.
    pub fn discard(
        &mut self,
        writer: Generation,
        handle: StateHandle,
    ) -> Result<Discarded, StoreError> {
        self.fence(writer)?;
        if let Some(set) = self.holders.get(&handle) {
            let checkpoint = set
                .iter()
                .find(|id| self.stored.get(id).is_some_and(|e| !e.savepoint))
                .copied();
            if let Some(checkpoint) = checkpoint {
                self.stats.guard_refusals += 1;
                self.stats.refused.push((handle, checkpoint));
                self.deferred.insert(handle);
                return Ok(Discarded::Refused { checkpoint });
            }
            if let Some(savepoint) = set.iter().next().copied() {
                self.stats.savepoint_declines += 1;
                return Ok(Discarded::Savepoint { savepoint });
            }
        }
        let holder = self
            .prepared
            .iter()
            .find(|(_, e)| e.handles.contains(&handle))
            .map(|(id, _)| *id);
        if let Some(id) = holder {
            self.prepared.remove(&id);
            let path = meta_name(id, "prepared");
            match self.fs.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(StoreError::Io {
                        op: "remove",
                        path,
                        source: e,
                    })
                }
            }
        }
        self.delete_state(handle)
    }

    /// Disposes of stored savepoint `savepoint` on behalf of `writer`, as
    /// only its user may (the host does this before it sends the
    /// coordinator `CoordinatorEvent::DisposeSavepoint`, whose discards then
    /// find the files gone): its metadata is removed first (and the directory
    /// synced, so a crash after this leaves no savepoint pointing at
    /// missing files), then every state file of it that no other stored
    /// checkpoint and no quarantined metadata references. Returns the state
    /// files deleted.
    ///
    /// Refused for a checkpoint that is not stored, not a savepoint, or the
    /// store's latest (the next start would restore an older one).
    pub fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> Result<Vec<StateHandle>, StoreError> {
        self.fence(writer)?;
        match self.stored.get(&savepoint) {
            None => return Err(StoreError::NotStored(savepoint)),
            Some(e) if !e.savepoint => return Err(StoreError::NotASavepoint(savepoint)),
            Some(_) => {}
        }
        if self.latest() == Some(savepoint) {
            return Err(StoreError::LatestSavepoint(savepoint));
        }
        let path = meta_path(savepoint);
        self.fs.remove(&path).map_err(io_err("remove", &path))?;
        let handles = self.forget(savepoint);
        self.fs
            .sync_dir(CHECKPOINT_DIR)
            .map_err(io_err("sync", CHECKPOINT_DIR))?;
        let mut deleted = Vec::new();
        for h in handles {
            if self.holders.contains_key(&h) || self.quarantined.contains(&h) {
                continue;
            }
            self.deferred.remove(&h);
            if self.delete_state(h)? == Discarded::Deleted {
                deleted.push(h);
            }
        }
        if !deleted.is_empty() {
            self.fs
                .sync_dir(STATE_DIR)
                .map_err(io_err("sync", STATE_DIR))?;
        }
        Ok(deleted)
    }

    fn delete_state(&mut self, handle: StateHandle) -> Result<Discarded, StoreError> {
        let path = state_path(handle);
        match self.fs.remove(&path) {
            Ok(()) => {
                self.stats.deleted += 1;
                Ok(Discarded::Deleted)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Discarded::AlreadyGone),
            Err(e) => Err(StoreError::Io {
                op: "remove",
                path,
                source: e,
            }),
        }
    }

    /// The stored checkpoints and savepoints, in id order.
    pub fn stored(&self) -> impl Iterator<Item = (CheckpointId, &[StateHandle])> + '_ {
        self.stored
            .iter()
            .map(|(id, e)| (*id, e.handles.as_slice()))
    }

    /// Whether stored checkpoint `id` is a savepoint (`None`: not stored).
    #[must_use]
    pub fn is_savepoint(&self, id: CheckpointId) -> Option<bool> {
        self.stored.get(&id).map(|e| e.savepoint)
    }

    /// The latest stored checkpoint: the highest id
    /// ([`crate::commit::latest`]).
    #[must_use]
    pub fn latest(&self) -> Option<CheckpointId> {
        commit::latest(self.held())
    }

    /// The next id the counter hands out.
    #[must_use]
    pub fn next_id(&self) -> CheckpointId {
        CheckpointId(self.next_id)
    }

    /// The generation this handle claimed and writes for.
    #[must_use]
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// The file system.
    #[must_use]
    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.fs
    }
}
