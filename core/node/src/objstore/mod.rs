//! A checkpoint store on an object store (the `object_store` crate:
//! `LocalFileSystem`, `InMemory`, or S3 and the other clouds by
//! configuration) with a fence that has no window: every change of durable
//! state is a conditional create of the next entry of a log.
//!
//! # Layout (under the object store's root; wrap it in a `PrefixStore` for
//! a job's prefix)
//!
//! ```text
//! log/<position, 20 digits>           the store's log: one entry per change, created with PutMode::Create
//! checkpoints/chk-<id, 20 digits>.meta  a checkpoint's metadata (the file store's format), written by finalize
//! checkpoints/*.corrupt               a quarantined checkpoint's metadata, kept with its state for a human
//! state/<handle as 16 hex digits>     one state handle = one object, written by a task
//! ```
//!
//! # The log is the fence
//!
//! A log entry ([`LogEntry`]) names the generation it was written for.
//! Writing entry `p` is `put` with `PutMode::Create`: of two writers that
//! both try position `p` exactly one succeeds, on every backend that
//! implements put-if-not-exists (the local file system, memory, S3 with
//! conditional writes, GCS, Azure). A new leader claims its generation by
//! appending a [`LogEntry::Claim`] at the log's end; from then on a deposed
//! leader's next append lands on a taken position, reads what is there,
//! finds the newer claim and is refused with
//! [`StoreError::StaleGeneration`]. Unlike the file store's
//! check-then-rename there is no instant in which a deposed leader's commit,
//! counter move, eviction or savepoint disposal can still land: those are
//! all log appends.
//!
//! What is not a log append (writing metadata on finalize, deleting state
//! objects on discard) is checked against the log first (is the position
//! after this handle's last entry taken?), which has the window of any
//! lease: a delete that passed the check an instant before a new claim can
//! still run. It can only delete what the deposed leader itself did not
//! hold as stored, and every checkpoint a new leader recovers is one the
//! log says was stored and not evicted, which the deposed leader's view
//! (the same log, up to its last append) also holds: so a deposed leader's
//! delete never removes the state of a checkpoint the new leader restores.
//!
//! # Commit
//!
//! **Finalize** writes `checkpoints/chk-N.meta` (not yet stored: no log
//! entry names it). **Store** appends [`LogEntry::Commit`] naming the
//! checkpoint and the checkpoints its commit evicts beyond `retained_max`
//! (oldest checkpoints first, never savepoints), in one entry: the commit
//! and its retention are one atomic step. Then the evicted metadata objects
//! are deleted, and their state objects when the coordinator has already
//! asked to discard them (the same deferral as the file store's guard).
//! The commit order is checked with [`commit::check_next`] on finalize and
//! again on store, as the file store does.
//!
//! An append that fails with an error other than "already exists" has an
//! unknown outcome (a put can succeed and its answer be lost). The
//! checkpoint is then held as stored (its state is guarded) and
//! [`StoreError::OutcomeUnknown`] returned: the coordinator (`ckpt-node`'s)
//! answers nothing and halts, and the next leader's recovery reads the log
//! and settles it. A writer that goes on instead finds, at its next append,
//! the position taken by an entry of its own generation, takes it as that
//! write having landed and moves on. A failure of the deletes after a
//! commit (the evicted checkpoints' objects) is returned beside the
//! commit, in [`Committed::retention`]: the log already holds the commit.
//! A savepoint disposal's append with an unknown outcome is
//! [`StoreError::DisposalOutcomeUnknown`]: the savepoint stays held until
//! a retry or the next open settles it.
//!
//! # Recovery ([`ObjStore::open`])
//!
//! The log is read from position 0 (entries of a generation below a newer
//! claim before them cannot exist, and are skipped if found), the claim
//! appended at its end, then every stored checkpoint's metadata is read and
//! checked (job, id, checksum) and every state object of it must exist; the
//! checkpoint to restore (the newest) has its state objects read and
//! checked by [`OpenOptions::check_state`]. An object that cannot be read
//! (any error but "not found") fails the open before anything is written
//! but the claim: a transient error is not damage, and a quarantine entry
//! is for good. A damaged checkpoint is not
//! restored and the next newest tried; [`OpenOptions::committed`] refuses a
//! restore behind an exactly-once sink's commit before anything but the
//! claim is changed (the refused generation stays claimed).
//! Damaged checkpoints are then quarantined by a [`LogEntry::Quarantine`]
//! entry, their metadata moved to `chk-N.meta.g<generation>.corrupt` and
//! their state objects kept, for a human; metadata objects the log
//! does not name and state objects no stored or quarantined checkpoint
//! references are deleted.
//!
//! The log is never compacted: recovery reads every entry (two per
//! checkpoint: the id allocation and the commit).
//!
//! # Durability, by backend
//!
//! A commit is durable when its log entry's put is. On S3, GCS and Azure a
//! put that has returned is durable. On `object_store`'s
//! `LocalFileSystem` a put is whole (written to a staged file and linked
//! into place) but **not fsynced**: a stored checkpoint survives the
//! process (`kill -9`, which the multi-process tests do) but not a crash
//! of the machine or the loss of power, which can take back log entries
//! the coordinator was told were written. Use a store with durable puts
//! (or [`FileStore`](ckpt_core::host::store::FileStore) on
//! [`StdFs`](ckpt_core::host::fs::StdFs), which syncs every write and
//! directory entry) where a machine crash must not lose a
//! committed checkpoint. `InMemory` keeps nothing past the process.
//!
//! # Where things are
//!
//! This module holds [`ObjStore`] and the coordinator's I/O (id allocation,
//! finalize, store, discard, disposing of a savepoint); the log's entries,
//! its replay, appends and fence are in `log`, recovery in `recover`, and
//! object I/O with the layout's names in `objects`.

mod log;
pub(crate) mod objects;
mod recover;

use std::fmt;
use std::sync::Arc;

use ckpt_core::commit;
use ckpt_core::host::store::{
    meta_path, state_path, CheckpointEntry, Committed, Discarded, Holdings, Metadata, OpenOptions,
    Recovery, StoreError, StoreStats,
};
use ckpt_core::{CheckpointId, Generation, JobId, Millis, StateHandle};
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

use log::{put_entry, replay, Appended};
pub use log::{LogEntry, LOG_DIR};
use objects::{delete, obj_err};
pub use objects::{read_state, write_state};

/// The checkpoint store on an object store. Not thread-safe by itself (its
/// methods take `&mut self`): the coordinator's driver owns it.
pub struct ObjStore {
    objects: Arc<dyn ObjectStore>,
    job: JobId,
    retained_max: usize,
    generation: Generation,
    /// The position of this handle's next log entry.
    head: u64,
    next_id: u64,
    /// What it holds: stored, prepared, guarded, deferred (the file
    /// store's type, so both make the guard's decisions alike).
    holdings: Holdings,
    stats: StoreStats,
}

impl fmt::Debug for ObjStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjStore")
            .field("job", &self.job)
            .field("generation", &self.generation)
            .field("head", &self.head)
            .field("next_id", &self.next_id)
            .field("stored", &self.holdings.stored_ids())
            .finish_non_exhaustive()
    }
}

impl ObjStore {
    /// The newest leader generation claimed in `objects` (`None` before
    /// the first claim).
    pub async fn newest_generation(
        objects: &dyn ObjectStore,
        job: JobId,
    ) -> Result<Option<Generation>, StoreError> {
        Ok(replay(objects, job).await?.newest)
    }

    /// The generation a new leader claims: one above the newest claimed
    /// (1 on a fresh store).
    pub async fn next_generation(
        objects: &dyn ObjectStore,
        job: JobId,
    ) -> Result<Generation, StoreError> {
        match Self::newest_generation(objects, job).await? {
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

    /// Claims `options.generation` (a log append), recovers (see the
    /// module docs) and opens the store for writing on behalf of that
    /// generation.
    pub async fn open(
        objects: Arc<dyn ObjectStore>,
        options: OpenOptions,
    ) -> Result<(ObjStore, Recovery), StoreError> {
        let job = options.job;
        let generation = options.generation;
        // Claim: append at the end of the log; a concurrent claim that took
        // the position is read back and the claim retried after it.
        let mut r = replay(&*objects, job).await?;
        loop {
            if r.newest.is_some_and(|n| generation <= n) {
                return Err(StoreError::GenerationTaken {
                    requested: generation,
                    newest: r.newest,
                });
            }
            let claim = LogEntry::Claim { job, generation };
            match put_entry(&*objects, r.end, &claim).await {
                Ok(()) => {
                    r.apply(&claim);
                    r.end += 1;
                    break;
                }
                Err(Appended::Taken) => r = replay(&*objects, job).await?,
                Err(Appended::Failed(e)) => return Err(e),
            }
        }
        let mut store = ObjStore {
            objects,
            job,
            retained_max: options.retained_max.max(1),
            generation,
            head: r.end,
            next_id: 1,
            holdings: Holdings::default(),
            stats: StoreStats::default(),
        };
        let rec = store.recover(&r, &options).await?;
        Ok((store, rec))
    }

    /// Hands out the next checkpoint id on behalf of `writer`; the counter
    /// is in the log before the id is returned.
    pub async fn allocate_id(&mut self, writer: Generation) -> Result<CheckpointId, StoreError> {
        self.fence_id(writer)?;
        let id = self.next_id;
        let next = id.checked_add(1).ok_or(StoreError::CounterExhausted)?;
        self.append(LogEntry::Ids {
            generation: writer,
            next,
        })
        .await?;
        self.next_id = next;
        self.stats.ids_allocated += 1;
        Ok(CheckpointId(id))
    }

    /// Reads the log, writing nothing: `Ok` when no leader newer than this
    /// handle's has claimed the store (as far as the log shows now),
    /// [`StoreError::StaleGeneration`] when one has, another error when the
    /// log cannot be read. The check every write makes before it appends,
    /// for a caller about to act on what it holds without writing (the
    /// coordinator before it deploys a restore again).
    pub async fn check_fence(&mut self) -> Result<(), StoreError> {
        let generation = self.generation;
        self.fence(generation).await
    }

    fn fence_id(&self, writer: Generation) -> Result<(), StoreError> {
        if writer == self.generation {
            Ok(())
        } else {
            Err(StoreError::NotThisGeneration {
                writer,
                handle: self.generation,
            })
        }
    }

    /// Moves the counter so the next id is at least `next` (never back).
    pub async fn reset_counter(
        &mut self,
        writer: Generation,
        next: CheckpointId,
    ) -> Result<(), StoreError> {
        self.fence_id(writer)?;
        if next.0 > self.next_id {
            self.append(LogEntry::Ids {
                generation: writer,
                next: next.0,
            })
            .await?;
            self.next_id = next.0;
        } else {
            self.fence(writer).await?;
        }
        Ok(())
    }

    /// The coordinator's
    /// [`IoRequest::Finalize`](ckpt_core::coordinator::IoRequest::Finalize):
    /// writes the metadata object of `checkpoint`; not yet stored. Refused
    /// when it could not be committed after what the store holds.
    pub async fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> Result<(), StoreError> {
        self.fence(writer).await?;
        commit::check_next(self.holdings.held(), checkpoint, savepoint)?;
        let meta = Metadata {
            job: self.job,
            checkpoint,
            savepoint,
            timestamp,
            handles: handles.to_vec(),
        };
        let path = Path::from(meta_path(checkpoint));
        self.objects
            .put(&path, PutPayload::from(meta.encode()))
            .await
            .map_err(obj_err("finalize", &path))?;
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
    /// [`IoRequest::Store`](ckpt_core::coordinator::IoRequest::Store): the
    /// commit order checked again, then the commit point (the log's
    /// [`LogEntry::Commit`], with the evictions beyond `retained_max`).
    /// Returns the evicted ids and the deletes' error, if any
    /// ([`Committed`]).
    ///
    /// Refused by the fence (or before the append), a deposed leader
    /// changes nothing and the checkpoint is definitely not stored. Any
    /// other error of the append leaves the outcome unknown: the checkpoint
    /// is held as stored (its state guarded) and
    /// [`StoreError::OutcomeUnknown`] returned, which the host answers by
    /// stopping the coordinator, not with a failure. Once the append is
    /// made the checkpoint is stored; a failure of the deletes that follow
    /// (the evicted checkpoints' metadata and state) is in
    /// [`Committed::retention`].
    pub async fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> Result<Committed, StoreError> {
        self.fence_id(writer)?;
        let entry = self.holdings.take_prepared(checkpoint)?;
        let path = Path::from(meta_path(checkpoint));
        if let Err(e) = commit::check_next(self.holdings.held(), checkpoint, entry.savepoint) {
            let _ = self.objects.delete(&path).await;
            return Err(e.into());
        }
        let mut after: Vec<(CheckpointId, bool)> = self.holdings.held().collect();
        after.push((checkpoint, entry.savepoint));
        after.sort();
        let checkpoints = after.iter().filter(|(_, s)| !s).count();
        let evicted: Vec<CheckpointId> = after
            .iter()
            .filter(|(_, s)| !s)
            .take(checkpoints.saturating_sub(self.retained_max))
            .map(|(id, _)| *id)
            .collect();
        let appended = self
            .append(LogEntry::Commit {
                generation: writer,
                checkpoint,
                evicted: evicted.clone(),
            })
            .await;
        match appended {
            Ok(()) => {}
            Err(e @ StoreError::StaleGeneration { .. }) => return Err(e),
            Err(e) => {
                // Unknown outcome: hold it as stored.
                self.holdings.hold(checkpoint, entry);
                return Err(StoreError::OutcomeUnknown {
                    checkpoint,
                    source: Box::new(e),
                });
            }
        }
        self.holdings.hold(checkpoint, entry);
        self.stats.stored += 1;
        let retention = self.delete_evicted(&evicted).await.err();
        Ok(Committed { evicted, retention })
    }

    /// The deletes after a commit whose log entry evicted `evicted`: each
    /// one's metadata object, then its state objects no other checkpoint
    /// holds. The log already says they are gone, so a failure here leaves
    /// objects for the next start's clean-up, never a checkpoint.
    async fn delete_evicted(&mut self, evicted: &[CheckpointId]) -> Result<(), StoreError> {
        // The log says they are gone: every one is let go of first, so a
        // failed delete below leaves an object behind, never a checkpoint
        // the store still holds (whose state its guard would keep).
        let mut released = Vec::new();
        for old in evicted {
            self.stats.evicted += 1;
            for h in self.holdings.forget(*old) {
                if self.holdings.release_evicted(h) {
                    released.push(h);
                }
            }
        }
        let mut first_error = None;
        for old in evicted {
            if let Err(e) = delete(&*self.objects, &Path::from(meta_path(*old))).await {
                first_error.get_or_insert(e);
            }
        }
        for h in released {
            if let Err(e) = self.delete_state(h).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The coordinator's (or a task's) `DiscardState`: deletes the state
    /// object unless a stored checkpoint or savepoint references it (see
    /// [`Discarded`]); a prepared checkpoint holding it is dropped first.
    pub async fn discard(
        &mut self,
        writer: Generation,
        handle: StateHandle,
    ) -> Result<Discarded, StoreError> {
        self.fence(writer).await?;
        if let Some(guarded) = self.holdings.guard(handle, &mut self.stats) {
            return Ok(guarded);
        }
        if let Some(id) = self.holdings.drop_prepared_holding(handle) {
            delete(&*self.objects, &Path::from(meta_path(id))).await?;
        }
        self.delete_state(handle).await
    }

    /// Disposes of stored savepoint `savepoint` (the user's act): a
    /// [`LogEntry::Dispose`], then its metadata object and every state
    /// object no other stored or quarantined checkpoint references.
    /// Returns the state objects deleted.
    ///
    /// Refused by the fence, nothing changes. Any other error of the
    /// append leaves the outcome unknown (the entry may have landed, its
    /// answer lost): [`StoreError::DisposalOutcomeUnknown`], the savepoint still
    /// held and its objects kept; the log may already say it is disposed,
    /// which the next open follows. Calling again settles it (a second
    /// `Dispose` entry is harmless).
    pub async fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> Result<Vec<StateHandle>, StoreError> {
        self.fence_id(writer)?;
        self.holdings.check_disposable(savepoint)?;
        match self
            .append(LogEntry::Dispose {
                generation: writer,
                savepoint,
            })
            .await
        {
            Ok(()) => {}
            // Refused by the fence, or a log entry that was read and is
            // damaged (the position held another's entry): not written.
            Err(e @ StoreError::StaleGeneration { .. }) => return Err(e),
            Err(e)
                if matches!(&e, StoreError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::InvalidData) =>
            {
                return Err(e)
            }
            Err(e) => {
                return Err(StoreError::DisposalOutcomeUnknown {
                    savepoint,
                    source: Box::new(e),
                })
            }
        }
        // The log says it is gone: from here the call succeeds, and what it
        // cannot delete is counted and left for the next start's clean-up
        // (an error would keep the coordinator holding a savepoint the
        // store has let go of).
        let handles = self.holdings.forget(savepoint);
        if delete(&*self.objects, &Path::from(meta_path(savepoint)))
            .await
            .is_err()
        {
            self.stats.delete_failures += 1;
        }
        let mut deleted = Vec::new();
        for h in handles {
            if !self.holdings.release_disposed(h) {
                continue;
            }
            let done = self.delete_state(h).await;
            if self.stats.count_disposal_delete(done) {
                deleted.push(h);
            }
        }
        Ok(deleted)
    }

    async fn delete_state(&mut self, handle: StateHandle) -> Result<Discarded, StoreError> {
        let path = Path::from(state_path(handle));
        match self.objects.head(&path).await {
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => return Ok(Discarded::AlreadyGone),
            Err(e) => return Err(obj_err("head", &path)(e)),
        }
        delete(&*self.objects, &path).await?;
        self.stats.deleted += 1;
        Ok(Discarded::Deleted)
    }

    /// What the store holds (the file store's [`Holdings`]: the stored
    /// checkpoints and savepoints, the latest, the guard's state).
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

    /// The object store.
    #[must_use]
    pub fn objects(&self) -> &Arc<dyn ObjectStore> {
        &self.objects
    }
}
