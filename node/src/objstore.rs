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
//! checkpoint is then held as stored (its state is guarded) and the error
//! returned; the next append that finds the position taken by an entry of
//! this handle's own generation takes it as that write having landed and
//! moves on. Recovery reads the log and settles it.
//!
//! # Recovery ([`ObjStore::open`])
//!
//! The log is read from position 0 (entries of a generation below a newer
//! claim before them cannot exist, and are skipped if found), the claim
//! appended at its end, then every stored checkpoint's metadata is read and
//! checked (job, id, checksum) and every state object of it must exist; the
//! checkpoint to restore (the newest) has its state objects read and
//! checked by [`OpenOptions::check_state`]. A damaged checkpoint is not
//! restored and the next newest tried; [`OpenOptions::committed`] refuses a
//! restore behind an exactly-once sink's commit before anything is changed.
//! Damaged checkpoints are then quarantined by a [`LogEntry::Quarantine`]
//! entry, their metadata moved to `chk-N.meta.g<generation>.corrupt` and
//! their state objects kept, for a human; metadata objects the log
//! does not name and state objects no stored or quarantined checkpoint
//! references are deleted.
//!
//! The log is never compacted: recovery reads every entry (two per
//! checkpoint: the id allocation and the commit).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::sync::Arc;

use ckpt_core::commit;
use ckpt_core::host::store::{
    meta_path, state_path, CheckpointEntry, Damage, Damaged, Discarded, Holdings, Metadata,
    MetadataError, OpenOptions, Recovery, StateCheck, StoreError, StoreStats, CHECKPOINT_DIR,
    STATE_DIR,
};
use ckpt_core::{CheckpointId, Generation, JobId, Millis, StateHandle};
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

/// Bytes before the handles in the metadata format written (version 2).
const META_HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4;

/// Directory of log entries.
pub const LOG_DIR: &str = "log";

/// One entry of the store's log; each names the generation it was written
/// for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogEntry {
    /// A leader claimed `generation` (above every earlier claim).
    Claim {
        /// The job the store serves.
        job: JobId,
        /// The generation claimed.
        generation: Generation,
    },
    /// The id counter moved: `next` is the next id to hand out.
    Ids {
        /// The writer's generation.
        generation: Generation,
        /// The next id.
        next: u64,
    },
    /// The commit point of `checkpoint`, and the checkpoints its commit
    /// pushed out of retention.
    Commit {
        /// The writer's generation.
        generation: Generation,
        /// The checkpoint stored (its metadata object is
        /// `checkpoints/chk-<id>.meta`).
        checkpoint: CheckpointId,
        /// The checkpoints evicted by this commit.
        evicted: Vec<CheckpointId>,
    },
    /// The user disposed of a stored savepoint.
    Dispose {
        /// The writer's generation.
        generation: Generation,
        /// The savepoint.
        savepoint: CheckpointId,
    },
    /// Recovery found a stored checkpoint damaged: it is no longer stored,
    /// and its objects are kept for a human.
    Quarantine {
        /// The writer's generation.
        generation: Generation,
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
}

impl LogEntry {
    fn generation(&self) -> Generation {
        match self {
            LogEntry::Claim { generation, .. }
            | LogEntry::Ids { generation, .. }
            | LogEntry::Commit { generation, .. }
            | LogEntry::Dispose { generation, .. }
            | LogEntry::Quarantine { generation, .. } => *generation,
        }
    }
}

fn log_path(position: u64) -> Path {
    Path::from(format!("{LOG_DIR}/{position:020}"))
}

fn obj_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(object_store::Error) -> StoreError + 'a {
    move |e| StoreError::Io {
        op,
        path: path.to_string(),
        source: io::Error::other(e),
    }
}

fn bad_log(path: &Path, why: String) -> StoreError {
    StoreError::Io {
        op: "decode",
        path: path.to_string(),
        source: io::Error::new(io::ErrorKind::InvalidData, why),
    }
}

/// Writes state handle `handle`'s object (a task's part of a checkpoint).
pub async fn write_state(
    store: &dyn ObjectStore,
    handle: StateHandle,
    bytes: Vec<u8>,
) -> Result<(), StoreError> {
    let path = Path::from(state_path(handle));
    store
        .put(&path, PutPayload::from(bytes))
        .await
        .map(|_| ())
        .map_err(obj_err("put", &path))
}

/// Reads state handle `handle`'s object.
pub async fn read_state(
    store: &dyn ObjectStore,
    handle: StateHandle,
) -> Result<Vec<u8>, StoreError> {
    let path = Path::from(state_path(handle));
    read(store, &path).await
}

async fn read(store: &dyn ObjectStore, path: &Path) -> Result<Vec<u8>, StoreError> {
    let got = store.get(path).await.map_err(obj_err("get", path))?;
    let bytes = got.bytes().await.map_err(obj_err("get", path))?;
    Ok(bytes.to_vec())
}

/// Names of the objects directly under `dir`.
async fn list(store: &dyn ObjectStore, dir: &str) -> Result<Vec<String>, StoreError> {
    let prefix = Path::from(dir);
    let listed = store
        .list_with_delimiter(Some(&prefix))
        .await
        .map_err(obj_err("list", &prefix))?;
    let mut names: Vec<String> = listed
        .objects
        .into_iter()
        .filter_map(|o| o.location.filename().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

fn parse_position(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

fn parse_meta_name(name: &str) -> Option<CheckpointId> {
    let digits = name.strip_prefix("chk-")?.strip_suffix(".meta")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok().map(CheckpointId))
        .flatten()
}

fn parse_state_name(name: &str) -> Option<StateHandle> {
    (name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(name, 16).ok().map(StateHandle))
        .flatten()
}

/// What reading the log gave.
#[derive(Default)]
struct Replay {
    /// The position after the last entry.
    end: u64,
    newest: Option<Generation>,
    next_id: u64,
    /// Stored checkpoints by the log (metadata not read yet).
    stored: BTreeSet<CheckpointId>,
    quarantined: BTreeSet<CheckpointId>,
    max_id_named: Option<CheckpointId>,
}

impl Replay {
    fn apply(&mut self, entry: &LogEntry) {
        if let LogEntry::Claim { generation, .. } = entry {
            self.newest = self.newest.max(Some(*generation));
            return;
        }
        // An entry of a generation below a claim before it cannot have
        // been appended (the claim took its position first); skip it.
        if self.newest.is_some_and(|n| entry.generation() < n) {
            return;
        }
        match entry {
            LogEntry::Claim { .. } => {}
            LogEntry::Ids { next, .. } => self.next_id = self.next_id.max(*next),
            LogEntry::Commit {
                checkpoint,
                evicted,
                ..
            } => {
                self.stored.insert(*checkpoint);
                self.max_id_named = self.max_id_named.max(Some(*checkpoint));
                for e in evicted {
                    self.stored.remove(e);
                }
            }
            LogEntry::Dispose { savepoint, .. } => {
                self.stored.remove(savepoint);
            }
            LogEntry::Quarantine { checkpoint, .. } => {
                self.stored.remove(checkpoint);
                self.quarantined.insert(*checkpoint);
            }
        }
    }
}

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

async fn read_entry(objects: &dyn ObjectStore, position: u64) -> Result<LogEntry, StoreError> {
    let path = log_path(position);
    let bytes = read(objects, &path).await?;
    serde_json::from_slice(&bytes).map_err(|e| bad_log(&path, e.to_string()))
}

/// Reads the whole log.
async fn replay(objects: &dyn ObjectStore, job: JobId) -> Result<Replay, StoreError> {
    let mut r = Replay {
        next_id: 1,
        ..Replay::default()
    };
    let names = list(objects, LOG_DIR).await?;
    let positions: Vec<u64> = names.iter().filter_map(|n| parse_position(n)).collect();
    // Positions are dense; read on past the listing (an eventually
    // consistent listing may miss the newest).
    let mut position = 0;
    loop {
        let path = log_path(position);
        match objects.get(&path).await {
            Ok(got) => {
                let bytes = got.bytes().await.map_err(obj_err("get", &path))?;
                let entry: LogEntry =
                    serde_json::from_slice(&bytes).map_err(|e| bad_log(&path, e.to_string()))?;
                if let LogEntry::Claim { job: j, .. } = &entry {
                    if *j != job {
                        return Err(bad_log(&path, format!("claim of job {j}, expected {job}")));
                    }
                }
                r.apply(&entry);
                position += 1;
            }
            Err(object_store::Error::NotFound { .. }) => break,
            Err(e) => return Err(obj_err("get", &path)(e)),
        }
    }
    if let Some(last) = positions.last() {
        if *last >= position {
            return Err(bad_log(
                &log_path(position),
                format!("log entry {position} is missing but {last} exists"),
            ));
        }
    }
    r.end = position;
    Ok(r)
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

    async fn recover(&mut self, r: &Replay, options: &OpenOptions) -> Result<Recovery, StoreError> {
        let objects = Arc::clone(&self.objects);
        let objects = &*objects;
        let mut valid: BTreeMap<CheckpointId, CheckpointEntry> = BTreeMap::new();
        let mut damaged: Vec<Damaged> = Vec::new();
        let mut to_quarantine: BTreeSet<CheckpointId> = BTreeSet::new();
        let mut kept: BTreeSet<StateHandle> = BTreeSet::new();
        let mut quarantined_ids_max: Option<CheckpointId> = None;
        let state_names: BTreeSet<StateHandle> = list(objects, STATE_DIR)
            .await?
            .iter()
            .filter_map(|n| parse_state_name(n))
            .collect();
        for id in &r.stored {
            let path = Path::from(meta_path(*id));
            let meta = match read(objects, &path).await {
                Ok(bytes) => Metadata::decode(&bytes).and_then(|m| {
                    if m.job != self.job {
                        Err(MetadataError::WrongJob {
                            expected: self.job,
                            found: m.job,
                        })
                    } else if m.checkpoint != *id {
                        Err(MetadataError::IdMismatch {
                            name: *id,
                            contents: m.checkpoint,
                        })
                    } else {
                        Ok(m)
                    }
                }),
                // An absent or unreadable metadata object reads as zero
                // bytes: shorter than any header.
                Err(_) => Err(MetadataError::Truncated {
                    len: 0,
                    needed: META_HEADER_BYTES,
                }),
            };
            match meta {
                Ok(m) => {
                    let missing: Vec<StateHandle> = m
                        .handles
                        .iter()
                        .filter(|h| !state_names.contains(h))
                        .copied()
                        .collect();
                    if missing.is_empty() {
                        valid.insert(
                            *id,
                            CheckpointEntry {
                                savepoint: m.savepoint,
                                timestamp: m.timestamp,
                                handles: m.handles,
                            },
                        );
                    } else {
                        kept.extend(m.handles.iter().copied());
                        to_quarantine.insert(*id);
                        for h in missing {
                            damaged.push(Damaged {
                                checkpoint: Some(*id),
                                file: state_path(h),
                                damage: Damage::MissingState {
                                    handle: h,
                                    why: "no such object".into(),
                                },
                            });
                        }
                    }
                }
                Err(e) => {
                    to_quarantine.insert(*id);
                    damaged.push(Damaged {
                        checkpoint: Some(*id),
                        file: path.to_string(),
                        damage: Damage::Metadata(e),
                    });
                }
            }
        }
        // The checkpoint to restore has its state read and checked; a bad
        // one is damage and the next newest is tried.
        if let Some(check) = &options.check_state {
            while let Some(id) = commit::latest(valid.iter().map(|(id, e)| (*id, e.savepoint))) {
                let bad = check_latest(objects, check, id, &valid[&id].handles).await;
                if bad.is_empty() {
                    break;
                }
                if let Some(e) = valid.remove(&id) {
                    kept.extend(e.handles);
                }
                to_quarantine.insert(id);
                for (h, damage) in bad {
                    damaged.push(Damaged {
                        checkpoint: Some(id),
                        file: state_path(h),
                        damage,
                    });
                }
            }
        }
        let restorable = commit::latest(valid.iter().map(|(id, e)| (*id, e.savepoint)));
        if let Some(committed) = options.committed {
            if restorable.is_none_or(|r| r < committed) {
                return Err(StoreError::BehindCommitted {
                    committed,
                    restorable,
                    damaged,
                });
            }
        }
        for id in &to_quarantine {
            self.append(LogEntry::Quarantine {
                generation: self.generation,
                checkpoint: *id,
            })
            .await?;
            // The metadata moves aside (copy, then delete), as the file
            // store renames it `*.corrupt`: the id may be finalized again.
            let from = Path::from(meta_path(*id));
            let to = Path::from(format!("{}.g{}.corrupt", meta_path(*id), self.generation.0));
            match objects.copy(&from, &to).await {
                Ok(()) => delete(objects, &from).await?,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(obj_err("copy", &from)(e)),
            }
        }
        // Quarantined metadata names handles kept for good. One too
        // damaged to name them keeps every unreferenced state object (as
        // the file store does), until a human removes it.
        let mut unnamed = false;
        let mut quarantined = Vec::new();
        for name in list(objects, CHECKPOINT_DIR).await? {
            if !name.ends_with(".corrupt") {
                continue;
            }
            let path = Path::from(format!("{CHECKPOINT_DIR}/{name}"));
            match read(objects, &path).await.map(|b| Metadata::decode(&b)) {
                Ok(Ok(m)) => {
                    max_named_corrupt(&mut quarantined_ids_max, m.checkpoint);
                    kept.extend(m.handles);
                }
                Ok(Err(_)) | Err(_) => unnamed = true,
            }
            quarantined.push(path.to_string());
        }
        let named: BTreeSet<CheckpointId> = valid.keys().copied().collect();
        let mut foreign = Vec::new();
        let mut removed_partial = Vec::new();
        let mut max_id_named = r.max_id_named.max(quarantined_ids_max);
        for name in list(objects, CHECKPOINT_DIR).await? {
            if name.ends_with(".corrupt") {
                continue;
            }
            match parse_meta_name(&name) {
                Some(id) => {
                    max_id_named = max_id_named.max(Some(id));
                    if !named.contains(&id) {
                        let path = Path::from(meta_path(id));
                        self.fence(self.generation).await?;
                        delete(objects, &path).await?;
                        removed_partial.push(path.to_string());
                    }
                }
                None => foreign.push(format!("{CHECKPOINT_DIR}/{name}")),
            }
        }
        let referenced: BTreeSet<StateHandle> = valid
            .values()
            .flat_map(|e| e.handles.iter().copied())
            .chain(kept.iter().copied())
            .collect();
        let mut removed_orphans = Vec::new();
        let mut kept_unreferenced = Vec::new();
        for h in &state_names {
            if unnamed && !referenced.contains(h) {
                kept_unreferenced.push(*h);
            } else if !referenced.contains(h) {
                self.fence(self.generation).await?;
                delete(objects, &Path::from(state_path(*h))).await?;
                removed_orphans.push(*h);
            }
        }
        for name in list(objects, STATE_DIR).await? {
            if parse_state_name(&name).is_none() {
                foreign.push(format!("{STATE_DIR}/{name}"));
            }
        }
        let named_next = max_id_named.map_or(1, |id| id.0.saturating_add(1));
        self.next_id = r.next_id.max(named_next).max(1);
        if self.next_id > r.next_id {
            self.append(LogEntry::Ids {
                generation: self.generation,
                next: self.next_id,
            })
            .await?;
        }
        let checkpoints = valid.iter().map(|(id, e)| e.recovered(*id)).collect();
        self.holdings = Holdings::recovered(valid, kept.clone());
        quarantined.sort();
        Ok(Recovery {
            generation: self.generation,
            checkpoints,
            last_id: (self.next_id > 1).then(|| CheckpointId(self.next_id - 1)),
            damaged,
            quarantined,
            foreign,
            removed_partial,
            removed_orphans,
            kept_unreferenced,
        })
    }

    /// Appends `entry` at this handle's head. A taken position holding an
    /// entry of this generation is an earlier append whose answer was lost:
    /// it landed, and the append moves past it. A taken position holding a
    /// newer claim is the fence.
    async fn append(&mut self, entry: LogEntry) -> Result<(), StoreError> {
        loop {
            match put_entry(&*self.objects, self.head, &entry).await {
                Ok(()) => {
                    self.head += 1;
                    return Ok(());
                }
                Err(Appended::Taken) => {
                    let there = read_entry(&*self.objects, self.head).await?;
                    match there {
                        LogEntry::Claim { generation, .. } if generation > self.generation => {
                            self.stats.fenced += 1;
                            return Err(StoreError::StaleGeneration {
                                writer: self.generation,
                                current: generation,
                            });
                        }
                        other if other.generation() == self.generation => self.head += 1,
                        other => {
                            return Err(bad_log(
                                &log_path(self.head),
                                format!(
                                    "entry of generation {} after generation {}'s claim",
                                    other.generation(),
                                    self.generation
                                ),
                            ))
                        }
                    }
                }
                Err(Appended::Failed(e)) => return Err(e),
            }
        }
    }

    /// Refuses a write for `writer` unless it is this handle's generation
    /// and no newer claim follows this handle's last entry.
    async fn fence(&mut self, writer: Generation) -> Result<(), StoreError> {
        if writer != self.generation {
            return Err(StoreError::NotThisGeneration {
                writer,
                handle: self.generation,
            });
        }
        let mut position = self.head;
        loop {
            match self.objects.get(&log_path(position)).await {
                Ok(got) => {
                    let path = log_path(position);
                    let bytes = got.bytes().await.map_err(obj_err("get", &path))?;
                    let entry: LogEntry = serde_json::from_slice(&bytes)
                        .map_err(|e| bad_log(&path, e.to_string()))?;
                    if let LogEntry::Claim { generation, .. } = entry {
                        if generation > writer {
                            self.stats.fenced += 1;
                            return Err(StoreError::StaleGeneration {
                                writer,
                                current: generation,
                            });
                        }
                    }
                    position += 1;
                }
                Err(object_store::Error::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(obj_err("get", &log_path(position))(e)),
            }
        }
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

    /// The coordinator's `FinalizeCheckpoint`: writes the metadata object
    /// of `checkpoint`; not yet stored. Refused when it could not be
    /// committed after what the store holds.
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

    /// The coordinator's `StoreCheckpoint`: the commit order checked
    /// again, then the commit point (the log's [`LogEntry::Commit`], with
    /// the evictions beyond `retained_max`). Returns the evicted ids.
    ///
    /// Refused by the fence, a deposed leader changes nothing. Any other
    /// error of the append leaves the outcome unknown: the checkpoint is
    /// held as stored (its state guarded) and the error returned.
    pub async fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> Result<Vec<CheckpointId>, StoreError> {
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
                return Err(e);
            }
        }
        self.holdings.hold(checkpoint, entry);
        self.stats.stored += 1;
        for old in &evicted {
            delete(&*self.objects, &Path::from(meta_path(*old))).await?;
            self.stats.evicted += 1;
            for h in self.holdings.forget(*old) {
                if self.holdings.release_evicted(h) {
                    self.delete_state(h).await?;
                }
            }
        }
        Ok(evicted)
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
    pub async fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> Result<Vec<StateHandle>, StoreError> {
        self.fence_id(writer)?;
        self.holdings.check_disposable(savepoint)?;
        self.append(LogEntry::Dispose {
            generation: writer,
            savepoint,
        })
        .await?;
        delete(&*self.objects, &Path::from(meta_path(savepoint))).await?;
        let handles = self.holdings.forget(savepoint);
        let mut deleted = Vec::new();
        for h in handles {
            if !self.holdings.release_disposed(h) {
                continue;
            }
            if self.delete_state(h).await? == Discarded::Deleted {
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

fn max_named_corrupt(max: &mut Option<CheckpointId>, id: CheckpointId) {
    *max = (*max).max(Some(id));
}

async fn check_latest(
    objects: &dyn ObjectStore,
    check: &StateCheck,
    id: CheckpointId,
    handles: &[StateHandle],
) -> Vec<(StateHandle, Damage)> {
    let mut bad = Vec::new();
    for h in handles {
        match read_state(objects, *h).await {
            Ok(bytes) => {
                if let Err(why) = check(id, *h, &bytes) {
                    bad.push((*h, Damage::DamagedState { handle: *h, why }));
                }
            }
            Err(e) => bad.push((
                *h,
                Damage::MissingState {
                    handle: *h,
                    why: e.to_string(),
                },
            )),
        }
    }
    bad
}

/// Deletes `path`; an object already gone is not an error (backends differ:
/// the local file system reports it, memory does not).
async fn delete(objects: &dyn ObjectStore, path: &Path) -> Result<(), StoreError> {
    match objects.delete(path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(obj_err("delete", path)(e)),
    }
}

enum Appended {
    Taken,
    Failed(StoreError),
}

async fn put_entry(
    objects: &dyn ObjectStore,
    position: u64,
    entry: &LogEntry,
) -> Result<(), Appended> {
    let path = log_path(position);
    let bytes =
        serde_json::to_vec(entry).map_err(|e| Appended::Failed(bad_log(&path, e.to_string())))?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    match objects.put_opts(&path, PutPayload::from(bytes), opts).await {
        Ok(_) => Ok(()),
        Err(object_store::Error::AlreadyExists { .. }) => Err(Appended::Taken),
        Err(e) => Err(Appended::Failed(obj_err("put", &path)(e))),
    }
}
