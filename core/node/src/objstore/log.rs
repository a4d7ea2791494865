//! The store's log: its entries ([`LogEntry`]), reading it from the start
//! (`replay`), appending to it with a conditional create, and the fence
//! that a newer claim in it is (see the module docs of [`super`]).

use ckpt_core::host::store::StoreError;
use ckpt_core::{CheckpointId, Generation, JobId};
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use super::objects::{bad_log, list, obj_err, parse_position, read};
use super::ObjStore;

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
    pub(super) fn generation(&self) -> Generation {
        match self {
            LogEntry::Claim { generation, .. }
            | LogEntry::Ids { generation, .. }
            | LogEntry::Commit { generation, .. }
            | LogEntry::Dispose { generation, .. }
            | LogEntry::Quarantine { generation, .. } => *generation,
        }
    }
}

pub(super) fn log_path(position: u64) -> Path {
    Path::from(format!("{LOG_DIR}/{position:020}"))
}

/// What reading the log gave.
#[derive(Default)]
pub(super) struct Replay {
    /// The position after the last entry.
    pub(super) end: u64,
    pub(super) newest: Option<Generation>,
    pub(super) next_id: u64,
    /// Stored checkpoints by the log (metadata not read yet).
    pub(super) stored: BTreeSet<CheckpointId>,
    pub(super) quarantined: BTreeSet<CheckpointId>,
    pub(super) max_id_named: Option<CheckpointId>,
}

impl Replay {
    pub(super) fn apply(&mut self, entry: &LogEntry) {
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

pub(super) async fn read_entry(
    objects: &dyn ObjectStore,
    position: u64,
) -> Result<LogEntry, StoreError> {
    let path = log_path(position);
    let bytes = read(objects, &path).await?;
    serde_json::from_slice(&bytes).map_err(|e| bad_log(&path, e.to_string()))
}

/// Reads the whole log.
pub(super) async fn replay(objects: &dyn ObjectStore, job: JobId) -> Result<Replay, StoreError> {
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
    /// Appends `entry` at this handle's head. A taken position holding an
    /// entry of this generation is an earlier append whose answer was lost:
    /// it landed, and the append moves past it. A taken position holding a
    /// newer claim is the fence.
    pub(super) async fn append(&mut self, entry: LogEntry) -> Result<(), StoreError> {
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
    pub(super) async fn fence(&mut self, writer: Generation) -> Result<(), StoreError> {
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
}

pub(super) enum Appended {
    Taken,
    Failed(StoreError),
}

pub(super) async fn put_entry(
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
