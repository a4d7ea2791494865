//! A durable checkpoint store on a file system ([`Fs`]): the answer to the
//! coordinator's I/O effects (id allocation, finalize, store, discard) and
//! the source of truth after a crash.
//!
//! # Layout (under the store's root)
//!
//! ```text
//! ids                                   the id counter: the next id to hand out (atomic, checksummed)
//! state/<handle as 16 hex digits>       one state handle = one file, written by a task
//! checkpoints/chk-<id, 20 digits>.prepared   finalized metadata, fsync'd, not yet stored
//! checkpoints/chk-<id, 20 digits>.meta       a stored (committed) checkpoint
//! checkpoints/*.tmp                     a write in progress
//! checkpoints/*.corrupt                 metadata found invalid on start, kept for a human
//! ```
//!
//! * **Finalize** writes `chk-N.prepared` and fsyncs it. **Store** renames it
//!   to `chk-N.meta` and fsyncs the directory: that rename is the commit
//!   point. Then the oldest stored checkpoints beyond `retained_max` are
//!   removed (their metadata first; their state files when the coordinator
//!   discards them).
//! * **The id counter** is persisted (atomically) *before* an id is handed
//!   out, so an id is never reissued after a crash.
//! * **Discard** deletes a state file, except one referenced by a stored
//!   checkpoint: that is refused, counted as a contract violation
//!   ([`StoreStats::guard_refusals`]) and deferred until the store itself
//!   evicts the checkpoint. This is the durability rule: once a checkpoint is
//!   out for storing, its state belongs to the outcome of that I/O; only the
//!   store can say it is definitely not stored.
//! * **Recovery** ([`FileStore::open`]): half-written files (`*.tmp`,
//!   `*.prepared`) are removed and never restored; every `*.meta` is
//!   decoded and checked (magic, version, checksum, job, id); an invalid one
//!   is reported as a typed [`MetadataError`] and renamed `*.corrupt`, never
//!   loaded; a checkpoint whose state file is missing is reported and not
//!   restored; state files no valid stored checkpoint references are deleted.
//!
//! # Metadata format (little endian)
//!
//! `b"CKPTMETA"`, version `u32` (1), job `u64`, checkpoint `u64`, timestamp
//! `u64`, handle count `u32`, the handles `u64` each, CRC-32 (IEEE) `u32` of
//! every byte before it.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;

use thiserror::Error;

use super::fs::{join, write_atomic, write_durable, Fs};
use crate::types::{CheckpointId, JobId, Millis, StateHandle};

/// Metadata magic bytes.
pub const META_MAGIC: &[u8; 8] = b"CKPTMETA";
/// Metadata format version.
pub const META_VERSION: u32 = 1;
/// Id-counter magic bytes.
pub const IDS_MAGIC: &[u8; 8] = b"CKPTIDS1";
/// Most state handles one checkpoint may reference (a bound on what a reader
/// allocates for a corrupt count).
pub const HANDLES_MAX: u32 = 1 << 24;
/// Directory of state files.
pub const STATE_DIR: &str = "state";
/// Directory of checkpoint metadata.
pub const CHECKPOINT_DIR: &str = "checkpoints";
/// The id counter file.
pub const IDS_FILE: &str = "ids";

const META_HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4;

/// The path of a state handle's file.
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

fn meta_name(id: CheckpointId, ext: &str) -> String {
    join(CHECKPOINT_DIR, &format!("chk-{:020}.{ext}", id.0))
}

/// The metadata of one checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The job.
    pub job: JobId,
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// When it was finalized (host time).
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
    #[error("unsupported metadata version {0} (this reader knows {META_VERSION})")]
    UnsupportedVersion(u32),
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

impl Metadata {
    /// Encodes the metadata with its checksum.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(META_HEADER_BYTES + 8 * self.handles.len() + 4);
        b.extend_from_slice(META_MAGIC);
        b.extend_from_slice(&META_VERSION.to_le_bytes());
        b.extend_from_slice(&self.job.0.to_le_bytes());
        b.extend_from_slice(&self.checkpoint.0.to_le_bytes());
        b.extend_from_slice(&self.timestamp.0.to_le_bytes());
        let n = u32::try_from(self.handles.len()).unwrap_or(u32::MAX);
        b.extend_from_slice(&n.to_le_bytes());
        for h in &self.handles {
            b.extend_from_slice(&h.0.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks metadata bytes (magic, version, length, checksum).
    pub fn decode(bytes: &[u8]) -> Result<Metadata, MetadataError> {
        if bytes.len() >= 8 && &bytes[..8] != META_MAGIC {
            return Err(MetadataError::Foreign);
        }
        if bytes.len() < META_HEADER_BYTES + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: META_HEADER_BYTES + 4,
            });
        }
        let mut r = Reader { bytes, at: 8 };
        let version = r.u32();
        if version != META_VERSION {
            return Err(MetadataError::UnsupportedVersion(version));
        }
        let job = JobId(r.u64());
        let checkpoint = CheckpointId(r.u64());
        let timestamp = Millis(r.u64());
        let n = r.u32();
        if n > HANDLES_MAX {
            return Err(MetadataError::TooManyHandles(n));
        }
        let body = META_HEADER_BYTES + 8 * n as usize;
        if bytes.len() < body + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: body + 4,
            });
        }
        let handles = (0..n).map(|_| StateHandle(r.u64())).collect();
        let stored = r.u32();
        let computed = crc32fast::hash(&bytes[..body]);
        if stored != computed {
            return Err(MetadataError::ChecksumMismatch { stored, computed });
        }
        if bytes.len() > body + 4 {
            return Err(MetadataError::TrailingBytes(bytes.len() - body - 4));
        }
        Ok(Metadata {
            job,
            checkpoint,
            timestamp,
            handles,
        })
    }
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

/// Why the store failed.
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
    /// A checkpoint id at or below one already stored.
    #[error("checkpoint {id} is not above the latest stored checkpoint {latest}")]
    NotNewer {
        /// The id.
        id: CheckpointId,
        /// The latest stored.
        latest: CheckpointId,
    },
}

fn io_err<'a>(op: &'static str, path: &'a str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_string(),
        source,
    }
}

/// A metadata file refused on start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedMetadata {
    /// The file (now renamed `*.corrupt`).
    pub file: String,
    /// Why.
    pub error: MetadataError,
}

/// A stored checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// Its state handles.
    pub handles: Vec<StateHandle>,
}

/// What [`FileStore::open`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The valid stored checkpoints, oldest first (at most `retained_max`).
    pub retained: Vec<StoredCheckpoint>,
    /// Invalid metadata (reported, renamed `*.corrupt`, never loaded).
    pub rejected: Vec<RejectedMetadata>,
    /// Valid metadata whose state files are missing: `(checkpoint, handle)`.
    /// Such a checkpoint is not restored (renamed `*.corrupt`).
    pub missing_state: Vec<(CheckpointId, StateHandle)>,
    /// Half-written files removed (`*.tmp`, `*.prepared`).
    pub removed_partial: Vec<String>,
    /// State files no valid stored checkpoint references, deleted.
    pub removed_orphans: Vec<StateHandle>,
    /// The next id the counter hands out.
    pub next_id: CheckpointId,
}

impl Recovery {
    /// The latest valid stored checkpoint.
    #[must_use]
    pub fn latest(&self) -> Option<&StoredCheckpoint> {
        self.retained.last()
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
}

/// The durable checkpoint store. Not thread-safe by itself: the coordinator
/// driver owns it and calls it from one place.
pub struct FileStore {
    fs: Arc<dyn Fs>,
    job: JobId,
    retained_max: usize,
    next_id: u64,
    stored: BTreeMap<CheckpointId, Vec<StateHandle>>,
    prepared: BTreeMap<CheckpointId, Vec<StateHandle>>,
    /// Handle -> the stored checkpoint referencing it.
    protected: BTreeMap<StateHandle, CheckpointId>,
    /// Discards refused while protected; deleted on eviction.
    deferred: BTreeSet<StateHandle>,
    stats: StoreStats,
}

fn parse_meta_name(name: &str) -> Option<(CheckpointId, &str)> {
    let rest = name.strip_prefix("chk-")?;
    let (digits, ext) = rest.split_once('.')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|id| (CheckpointId(id), ext))
}

impl FileStore {
    /// Opens (or creates) the store for `job` on `fs` and recovers: see the
    /// module docs. `retained_max` must match the coordinator's.
    pub fn open(
        fs: Arc<dyn Fs>,
        job: JobId,
        retained_max: usize,
    ) -> Result<(FileStore, Recovery), StoreError> {
        fs.create_dir_all(STATE_DIR)
            .map_err(io_err("create", STATE_DIR))?;
        fs.create_dir_all(CHECKPOINT_DIR)
            .map_err(io_err("create", CHECKPOINT_DIR))?;
        let mut rec = Recovery::default();
        let next_id = Self::read_counter(&*fs, job)?;

        // Checkpoint metadata.
        let names = fs
            .list(CHECKPOINT_DIR)
            .map_err(io_err("list", CHECKPOINT_DIR))?;
        let mut valid: BTreeMap<CheckpointId, Vec<StateHandle>> = BTreeMap::new();
        let mut dirty = false;
        for name in names {
            let path = join(CHECKPOINT_DIR, &name);
            if name.ends_with(".corrupt") {
                continue;
            }
            let parsed = parse_meta_name(&name);
            match parsed {
                Some((_, "prepared")) => {
                    fs.remove(&path).map_err(io_err("remove", &path))?;
                    rec.removed_partial.push(path);
                    dirty = true;
                }
                Some((_, ext)) if ext.ends_with("tmp") => {
                    fs.remove(&path).map_err(io_err("remove", &path))?;
                    rec.removed_partial.push(path);
                    dirty = true;
                }
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
                            valid.insert(id, m.handles);
                        }
                        Err(error) => {
                            Self::quarantine(&*fs, &path)?;
                            rec.rejected.push(RejectedMetadata { file: path, error });
                            dirty = true;
                        }
                    }
                }
                Some(_) | None => {
                    // A file we did not write: report it, leave it alone.
                    rec.rejected.push(RejectedMetadata {
                        file: path,
                        error: MetadataError::Foreign,
                    });
                }
            }
        }
        // A stored checkpoint whose state is missing cannot be restored.
        let ids: Vec<CheckpointId> = valid.keys().copied().collect();
        for id in ids {
            let missing: Vec<StateHandle> = valid
                .get(&id)
                .map(|hs| {
                    hs.iter()
                        .copied()
                        .filter(|h| !fs.exists(&state_path(*h)))
                        .collect()
                })
                .unwrap_or_default();
            if !missing.is_empty() {
                valid.remove(&id);
                Self::quarantine(&*fs, &meta_name(id, "meta"))?;
                dirty = true;
                rec.missing_state
                    .extend(missing.into_iter().map(|h| (id, h)));
            }
        }
        // Beyond retained_max (a crash between a store and its eviction).
        while valid.len() > retained_max.max(1) {
            if let Some((id, _)) = valid.pop_first() {
                let path = meta_name(id, "meta");
                fs.remove(&path).map_err(io_err("remove", &path))?;
                dirty = true;
            }
        }
        if dirty {
            fs.sync_dir(CHECKPOINT_DIR)
                .map_err(io_err("sync", CHECKPOINT_DIR))?;
        }
        // Orphaned state files.
        let referenced: BTreeSet<StateHandle> = valid.values().flatten().copied().collect();
        let files = fs.list(STATE_DIR).map_err(io_err("list", STATE_DIR))?;
        let mut removed_any = false;
        for name in files {
            let path = join(STATE_DIR, &name);
            let handle = u64::from_str_radix(&name, 16).ok().map(StateHandle);
            let keep = handle.is_some_and(|h| referenced.contains(&h) && name.len() == 16);
            if !keep {
                fs.remove(&path).map_err(io_err("remove", &path))?;
                removed_any = true;
                if let Some(h) = handle {
                    rec.removed_orphans.push(h);
                }
            }
        }
        if removed_any {
            fs.sync_dir(STATE_DIR).map_err(io_err("sync", STATE_DIR))?;
        }
        // The counter is above every id seen (a counter file lost to a
        // crash before its first sync restarts above the stored ids).
        let above_stored = valid.keys().next_back().map_or(1, |id| id.0 + 1);
        let next_id = next_id.max(above_stored);
        let mut protected = BTreeMap::new();
        for (id, hs) in &valid {
            for h in hs {
                protected.insert(*h, *id);
            }
        }
        rec.retained = valid
            .iter()
            .map(|(id, hs)| StoredCheckpoint {
                id: *id,
                handles: hs.clone(),
            })
            .collect();
        rec.next_id = CheckpointId(next_id);
        let store = FileStore {
            fs,
            job,
            retained_max: retained_max.max(1),
            next_id,
            stored: valid,
            prepared: BTreeMap::new(),
            protected,
            deferred: BTreeSet::new(),
            stats: StoreStats::default(),
        };
        store.write_counter(next_id)?;
        Ok((store, rec))
    }

    fn quarantine(fs: &dyn Fs, path: &str) -> Result<(), StoreError> {
        let to = format!("{path}.corrupt");
        fs.rename(path, &to).map_err(io_err("rename", path))
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

    /// Hands out the next checkpoint id; the counter is durable before the
    /// id is returned.
    pub fn allocate_id(&mut self) -> Result<CheckpointId, StoreError> {
        let id = self.next_id;
        let next = id.checked_add(1).ok_or(StoreError::CounterExhausted)?;
        self.write_counter(next)?;
        self.next_id = next;
        self.stats.ids_allocated += 1;
        Ok(CheckpointId(id))
    }

    /// Moves the counter so the next id is at least `next` (never back:
    /// ids handed out before a crash must not repeat).
    pub fn reset_counter(&mut self, next: CheckpointId) -> Result<(), StoreError> {
        if next.0 > self.next_id {
            self.write_counter(next.0)?;
            self.next_id = next.0;
        }
        Ok(())
    }

    /// The coordinator's `FinalizeCheckpoint`: writes and fsyncs the
    /// metadata under its prepared name. Not yet stored.
    pub fn finalize(
        &mut self,
        checkpoint: CheckpointId,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> Result<(), StoreError> {
        if let Some((latest, _)) = self.stored.last_key_value() {
            if checkpoint <= *latest {
                return Err(StoreError::NotNewer {
                    id: checkpoint,
                    latest: *latest,
                });
            }
        }
        let meta = Metadata {
            job: self.job,
            checkpoint,
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
        self.prepared.insert(checkpoint, handles.to_vec());
        Ok(())
    }

    /// The coordinator's `StoreCheckpoint`: the commit point (rename, fsync
    /// of the directory), then eviction beyond `retained_max`. Returns the
    /// evicted checkpoint ids.
    ///
    /// An error before the rename means "definitely not stored". After the
    /// rename the checkpoint is held as stored even if the directory sync
    /// fails (the outcome is then unknown until recovery reads the store),
    /// so its state is guarded either way.
    pub fn store(&mut self, checkpoint: CheckpointId) -> Result<Vec<CheckpointId>, StoreError> {
        let Some(handles) = self.prepared.remove(&checkpoint) else {
            return Err(StoreError::NotPrepared(checkpoint));
        };
        let from = meta_name(checkpoint, "prepared");
        let to = meta_name(checkpoint, "meta");
        if let Err(e) = self.fs.rename(&from, &to) {
            let _ = self.fs.remove(&from);
            return Err(StoreError::Io {
                op: "rename",
                path: from,
                source: e,
            });
        }
        for h in &handles {
            self.protected.insert(*h, checkpoint);
        }
        self.stored.insert(checkpoint, handles);
        self.stats.stored += 1;
        self.fs
            .sync_dir(CHECKPOINT_DIR)
            .map_err(io_err("sync", CHECKPOINT_DIR))?;
        let mut evicted = Vec::new();
        while self.stored.len() > self.retained_max {
            let Some((old, hs)) = self.stored.pop_first() else {
                break;
            };
            let path = meta_name(old, "meta");
            self.fs.remove(&path).map_err(io_err("remove", &path))?;
            self.stats.evicted += 1;
            evicted.push(old);
            for h in hs {
                self.protected.remove(&h);
                if self.deferred.remove(&h) {
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

    /// The coordinator's (or a task's) `DiscardState`: deletes the state
    /// file unless a stored checkpoint references it (see [`Discarded`]).
    /// A prepared (finalized, not stored) checkpoint holding the handle is
    /// dropped first, so it can never be stored without its state.
    pub fn discard(&mut self, handle: StateHandle) -> Result<Discarded, StoreError> {
        if let Some(checkpoint) = self.protected.get(&handle).copied() {
            self.stats.guard_refusals += 1;
            self.stats.refused.push((handle, checkpoint));
            self.deferred.insert(handle);
            return Ok(Discarded::Refused { checkpoint });
        }
        let holder = self
            .prepared
            .iter()
            .find(|(_, hs)| hs.contains(&handle))
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

    /// The stored checkpoints, oldest first.
    pub fn stored(&self) -> impl Iterator<Item = (CheckpointId, &[StateHandle])> + '_ {
        self.stored.iter().map(|(id, hs)| (*id, hs.as_slice()))
    }

    /// The latest stored checkpoint.
    #[must_use]
    pub fn latest(&self) -> Option<CheckpointId> {
        self.stored.keys().next_back().copied()
    }

    /// The next id the counter hands out.
    #[must_use]
    pub fn next_id(&self) -> CheckpointId {
        CheckpointId(self.next_id)
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
