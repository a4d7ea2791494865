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
//! checkpoints/chk-<id, 20 digits>.*.tmp     a write in progress (any other name there is foreign, left alone)
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
//!   checkpoint: that is refused, counted ([`StoreStats::guard_refusals`]:
//!   a contract violation by the caller, unless every checkpoint holding
//!   it is one whose eviction failed, [`Holdings::held_only_beyond_retention`])
//!   and deferred until the store itself evicts the checkpoint. This is the durability rule: once a checkpoint is
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
//!    [`OpenOptions::check_state`]. A file that is absent (reading it says
//!    "not found"; a file the `state/` listing names is taken as present,
//!    and one it does not name is read to tell) or present
//!    and wrong is one [`Damaged`] entry naming the file; that checkpoint
//!    is not restored and the next newest is tried. A file that cannot be
//!    read (any other error), or a listing that fails, fails the open:
//!    a transient error is not damage. The stored checkpoints are the
//!    `*.meta` files the `checkpoints/` listing names, so that listing
//!    must show every file renamed into the directory before it
//!    (read-after-write consistent, as a POSIX file system's is): a file
//!    system whose listing lags its renames would make recovery miss the
//!    newest checkpoint and delete its state as unreferenced. The
//!    object store of `ckpt-node` finds its checkpoints in its log
//!    instead.
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
//!    removed.) Half-written files (`chk-*.tmp`, `chk-*.prepared`) are removed and
//!    never restored; state files no stored or quarantined checkpoint
//!    references are deleted (state of checkpoints that never committed).
//! 4. Nothing is evicted on open: a store opened with a lower `retained_max`
//!    than it was written with keeps every stored checkpoint until the next
//!    commit evicts down to the bound.
//! 5. `checkpoints/` and `state/` are synced, changed or not, so that what
//!    the open restores is durable (a failed sync fails the open).
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

mod error;
mod format;
mod holdings;
mod scan;

pub use error::*;
pub use format::*;
use format::{leader_path, meta_name, Reader};
pub use holdings::{CheckpointEntry, Holdings};
use scan::parse_leader_name;
use scan::Scan;

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
    /// Half-written files removed (`chk-*.tmp`, `chk-*.prepared`; other
    /// names are [`Recovery::foreign`]).
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

/// What a commit ([`FileStore::store`]) did: the checkpoint is stored and
/// durable, whatever [`Committed::retention`] says.
#[derive(Debug)]
pub struct Committed {
    /// The checkpoints its eviction removed (never savepoints), oldest first.
    pub evicted: Vec<CheckpointId>,
    /// The eviction's error, if it met one after the commit point: a
    /// checkpoint whose metadata could not be removed, or whose removal
    /// could not be synced, is still held (its state guarded: the
    /// coordinator's deletes of it are refused and deferred) until a later
    /// commit evicts it; a state file that could not be deleted is left for
    /// the next start's orphan clean-up. Report it; it changes nothing
    /// about the commit.
    pub retention: Option<StoreError>,
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
    /// (the durability rule's guard; each is a contract violation by the
    /// caller, unless that checkpoint is one whose eviction failed:
    /// [`Committed::retention`]).
    pub guard_refusals: u64,
    /// The refused handles, with the stored checkpoint that protected each.
    pub refused: Vec<(StateHandle, CheckpointId)>,
    /// Discards declined because a savepoint holds the handle.
    pub savepoint_declines: u64,
    /// Writes refused because a newer generation was claimed.
    pub fenced: u64,
    /// Files whose delete failed after the store had let go of their
    /// savepoint ([`FileStore::dispose_savepoint`]; `ckpt-node`'s object
    /// store also counts the savepoint's metadata object): left for the
    /// next start, which deletes state files nothing references.
    pub delete_failures: u64,
}

impl StoreStats {
    /// Counts the delete of a state file whose savepoint the store has let
    /// go of (a disposal, the file store's or `ckpt-node`'s object
    /// store's): whether it deleted the file. A failure is counted in
    /// [`StoreStats::delete_failures`] and the file left for the next start.
    pub fn count_disposal_delete(&mut self, done: Result<Discarded, StoreError>) -> bool {
        match done {
            Ok(Discarded::Deleted) => true,
            Ok(
                Discarded::AlreadyGone | Discarded::Savepoint { .. } | Discarded::Refused { .. },
            ) => false,
            Err(_) => {
                self.delete_failures += 1;
                false
            }
        }
    }
}

/// The durable checkpoint store. Not thread-safe by itself: the coordinator
/// driver owns it and calls it from one place.
pub struct FileStore {
    fs: Arc<dyn Fs>,
    job: JobId,
    retained_max: usize,
    generation: Generation,
    next_id: u64,
    /// What it holds: stored, prepared, guarded, deferred.
    holdings: Holdings,
    stats: StoreStats,
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("job", &self.job)
            .field("generation", &self.generation)
            .field("retained_max", &self.retained_max)
            .field("next_id", &self.next_id)
            .field("stored", &self.holdings.stored_ids())
            .finish_non_exhaustive()
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
            holdings: Holdings::default(),
            stats: StoreStats::default(),
        };
        store.apply(&scan)?;
        store.holdings = Holdings::recovered(scan.valid, scan.kept);
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

    /// Removes the writes recovery decided on: quarantines, half-written
    /// files, orphans, then the counter.
    fn apply(&mut self, scan: &Scan) -> Result<(), StoreError> {
        self.fence(self.generation)?;
        let fs = Arc::clone(&self.fs);
        for path in &scan.partial {
            match fs.remove(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", path)(e)),
            }
        }
        for id in &scan.to_quarantine {
            let from = meta_path(*id);
            // A name is free only when reading it says "not found" (an
            // `exists` that failed would have the rename replace an
            // earlier quarantined file, whose state would lose its guard).
            let to = scan::quarantine_name(*id, |name| match fs.read(name) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Ok(_) => Ok(true),
                Err(e) => Err(io_err("read", name)(e)),
            })?;
            fs.rename(&from, &to).map_err(io_err("rename", &from))?;
        }
        // Always, changed or not: what this start read and restores must
        // be durable before a job runs on it. A commit whose directory sync
        // failed (the last run halted on `OutcomeUnknown`) can be in the
        // page cache only; restored and built on (output committed for it),
        // then lost in a crash, it would leave the output ahead of every
        // checkpoint. A failure here fails the open.
        fs.sync_dir(CHECKPOINT_DIR)
            .map_err(io_err("sync", CHECKPOINT_DIR))?;
        for h in &scan.orphans {
            let path = state_path(*h);
            match fs.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
        }
        fs.sync_dir(STATE_DIR).map_err(io_err("sync", STATE_DIR))?;
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
        // Only a counter that is not there is a fresh one: an error that
        // cannot tell (`exists` says `false` for it too) would hand out
        // ids again.
        let b = match fs.read(IDS_FILE) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(1),
            Err(e) => return Err(io_err("read", IDS_FILE)(e)),
        };
        let bad = |why: String| StoreError::BadCounter {
            path: IDS_FILE.into(),
            why,
        };
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

    /// The coordinator's
    /// [`IoRequest::Finalize`](crate::coordinator::IoRequest::Finalize), on
    /// behalf of `writer`: writes and fsyncs the metadata of `checkpoint` (a
    /// savepoint when `savepoint`, triggered at `timestamp`) under its
    /// prepared name. Not yet stored. Refused when it could not be committed
    /// after what the store holds ([`crate::commit::check_next`]).
    pub fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> Result<(), StoreError> {
        self.fence(writer)?;
        commit::check_next(self.holdings.held(), checkpoint, savepoint)?;
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
        self.holdings.prepare(
            checkpoint,
            CheckpointEntry {
                savepoint,
                timestamp,
                handles: handles.to_vec(),
            },
        );
        Ok(())
    }

    /// The coordinator's
    /// [`IoRequest::Store`](crate::coordinator::IoRequest::Store), on behalf
    /// of `writer`: the commit order is checked again, then the commit point
    /// (rename, fsync of the directory), then eviction of the oldest
    /// checkpoints (never savepoints) beyond `retained_max`.
    ///
    /// The three outcomes answer the coordinator three ways:
    ///
    /// * `Ok`: the checkpoint is stored and durable; answer `Store` with
    ///   success. A failure of the eviction after the commit point does
    ///   not change that: it is in [`Committed::retention`] (the evicted
    ///   checkpoint's files stay, and the store keeps holding what it could
    ///   not remove, so its guard still protects that state).
    /// * [`StoreError::OutcomeUnknown`]: the rename was made but the
    ///   directory's sync failed, so a crash may still undo it (or the
    ///   rename reported an error and its target is there, or cannot be
    ///   read to tell). The
    ///   checkpoint is held as stored; answer nothing and stop the
    ///   coordinator (see the variant).
    /// * Any other error: the commit point was not reached, the checkpoint
    ///   is definitely not stored (the prepared file is removed, unless the
    ///   error is the fence's: a deposed leader changes nothing); answer
    ///   `Store` with a failure.
    pub fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> Result<Committed, StoreError> {
        self.fence(writer)?;
        let entry = self.holdings.take_prepared(checkpoint)?;
        let from = meta_name(checkpoint, "prepared");
        if let Err(e) = commit::check_next(self.holdings.held(), checkpoint, entry.savepoint) {
            let _ = self.fs.remove(&from);
            return Err(e.into());
        }
        let to = meta_name(checkpoint, "meta");
        if let Err(e) = self.fs.rename(&from, &to) {
            let failed = StoreError::Io {
                op: "rename",
                path: from.clone(),
                source: e,
            };
            // A rename that reports an error may still have landed (a
            // network file system; `ckpt-node`'s `ObjFs`, whose rename is
            // a copy then a delete): only a target that is not there makes
            // it "definitely not stored".
            return match self.fs.read(&to) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let _ = self.fs.remove(&from);
                    Err(failed)
                }
                Ok(_) | Err(_) => {
                    self.holdings.hold(checkpoint, entry);
                    Err(StoreError::OutcomeUnknown {
                        checkpoint,
                        source: Box::new(failed),
                    })
                }
            };
        }
        self.holdings.hold(checkpoint, entry);
        self.stats.stored += 1;
        if let Err(e) = self.fs.sync_dir(CHECKPOINT_DIR) {
            return Err(StoreError::OutcomeUnknown {
                checkpoint,
                source: Box::new(io_err("sync", CHECKPOINT_DIR)(e)),
            });
        }
        let mut evicted = Vec::new();
        let retention = self.evict_beyond_retention(writer, &mut evicted).err();
        Ok(Committed { evicted, retention })
    }

    /// The eviction after a commit: the metadata of the oldest checkpoints
    /// (never savepoints) beyond `retained_max`, oldest first, then the
    /// directory's sync; only then does the store let go of them (each
    /// into `evicted`) and delete the state no other checkpoint holds. A
    /// checkpoint whose removal fails stays held (the newer ones go on); a
    /// sync that fails lets go of nothing, since a crash may bring the metadata back and it must find
    /// its state. What the store did not let go of stays held, so its guard
    /// keeps refusing to delete that state, until a later commit evicts it.
    /// Returns the first error.
    fn evict_beyond_retention(
        &mut self,
        writer: Generation,
        evicted: &mut Vec<CheckpointId>,
    ) -> Result<(), StoreError> {
        let mut first_error = None;
        let mut removed = Vec::new();
        for old in self.holdings.beyond_retention(self.retained_max) {
            // A leader deposed after this commit leaves retention to the
            // new one (the commit itself stands).
            if self.fence(writer).is_err() {
                break;
            }
            let path = meta_path(old);
            match self.fs.remove(&path) {
                // Gone already: an earlier eviction removed it, and its
                // directory's sync failed.
                Ok(()) => removed.push(old),
                Err(e) if e.kind() == io::ErrorKind::NotFound => removed.push(old),
                // One file that cannot be removed stays held; the newer
                // ones go on (any subset of stored checkpoints is a legal
                // commit order), so one stuck file does not stop retention.
                Err(e) => {
                    first_error.get_or_insert(io_err("remove", &path)(e));
                }
            }
        }
        if removed.is_empty() {
            return first_error.map_or(Ok(()), Err);
        }
        if let Err(e) = self.fs.sync_dir(CHECKPOINT_DIR) {
            return Err(first_error.unwrap_or(io_err("sync", CHECKPOINT_DIR)(e)));
        }
        for old in removed {
            self.stats.evicted += 1;
            evicted.push(old);
            for h in self.holdings.forget(old) {
                if self.holdings.release_evicted(h) {
                    if let Err(e) = self.delete_state(h) {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// How many checkpoints (not savepoints) the store keeps: older ones
    /// are evicted by the next commit ([`Holdings::beyond_retention`]).
    #[must_use]
    pub fn retained_max(&self) -> usize {
        self.retained_max
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
        if let Some(guarded) = self.holdings.guard(handle, &mut self.stats) {
            return Ok(guarded);
        }
        if let Some(id) = self.holdings.drop_prepared_holding(handle) {
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
    /// checkpoint, no finalized one and no quarantined metadata references
    /// (a checkpoint still pending at the coordinator cannot be seen here:
    /// the crate docs' shared-state rule keeps a savepoint's state out of
    /// every checkpoint). Returns the state files deleted.
    ///
    /// Refused for a checkpoint that is not stored, not a savepoint, or the
    /// store's latest (the next start would restore an older one). An error
    /// means the store still holds the savepoint (a removal or sync that
    /// failed: a crash may bring the metadata back, and it must find its
    /// state), so the host does not tell the coordinator; a retry goes on
    /// from there. Once the removal is durable the call succeeds: a state
    /// file it then cannot delete is counted
    /// ([`StoreStats::delete_failures`]) and left for the next start.
    pub fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> Result<Vec<StateHandle>, StoreError> {
        self.fence(writer)?;
        self.holdings.check_disposable(savepoint)?;
        let path = meta_path(savepoint);
        match self.fs.remove(&path) {
            // Gone already: an earlier call removed it and its sync failed.
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove", &path)(e)),
        }
        self.fs
            .sync_dir(CHECKPOINT_DIR)
            .map_err(io_err("sync", CHECKPOINT_DIR))?;
        let handles = self.holdings.forget(savepoint);
        let mut deleted = Vec::new();
        for h in handles {
            if !self.holdings.release_disposed(h) {
                continue;
            }
            let done = self.delete_state(h);
            if self.stats.count_disposal_delete(done) {
                deleted.push(h);
            }
        }
        if !deleted.is_empty() && self.fs.sync_dir(STATE_DIR).is_err() {
            // The deletes may come back after a crash: unreferenced state
            // files, which the next start deletes.
            self.stats.delete_failures += 1;
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

    /// What the store holds: its stored checkpoints and savepoints
    /// ([`Holdings::stored`], [`Holdings::is_savepoint`], the latest:
    /// [`Holdings::latest`]), the prepared ones and the guard's state.
    #[must_use]
    pub fn holdings(&self) -> &Holdings {
        &self.holdings
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
