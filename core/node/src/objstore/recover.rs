//! Recovery ([`ObjStore::open`]'s second half): every stored checkpoint's
//! metadata and state objects checked, the checkpoint to restore read and
//! checked, the exactly-once refusal, quarantine of damaged checkpoints
//! (a log entry, their metadata moved aside, their state kept), and the
//! removal of what no stored or quarantined checkpoint references.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ckpt_core::commit;
use ckpt_core::host::store::{
    handles_named_by, meta_path, state_path, CheckpointEntry, Damage, Damaged, Holdings, Metadata,
    MetadataError, OpenOptions, Recovery, StateCheck, StoreError, CHECKPOINT_DIR, STATE_DIR,
};
use ckpt_core::{CheckpointId, StateHandle};
use object_store::path::Path;
use object_store::ObjectStore;

use super::log::{LogEntry, Replay};
use super::objects::{
    delete, found, list, obj_err, parse_meta_name, parse_state_name, read, read_found,
};
use super::ObjStore;

/// Bytes before the handles in the metadata format written (version 2).
const META_HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4;

impl ObjStore {
    pub(super) async fn recover(
        &mut self,
        r: &Replay,
        options: &OpenOptions,
    ) -> Result<Recovery, StoreError> {
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
            let meta = match read_found(objects, &path).await? {
                Some(bytes) => Metadata::decode(&bytes).and_then(|m| {
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
                // An absent metadata object reads as zero bytes: shorter
                // than any header. One that cannot be read fails the open
                // (above): a transient error must not condemn a checkpoint
                // that may be whole, which would restore an older one.
                None => Err(MetadataError::Truncated {
                    len: 0,
                    needed: META_HEADER_BYTES,
                }),
            };
            match meta {
                Ok(m) => {
                    // A handle the listing lacks is asked of its object: a
                    // listing may miss the newest objects (eventually
                    // consistent stores), and those are the latest
                    // checkpoint's, which must not be condemned for it.
                    let mut missing: Vec<StateHandle> = Vec::new();
                    for h in m.handles.iter().filter(|h| !state_names.contains(h)) {
                        if !found(objects, &Path::from(state_path(*h))).await? {
                            missing.push(*h);
                        }
                    }
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
                let bad = check_latest(objects, check, id, &valid[&id].handles).await?;
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
            // Its handles as the file store reads them: the structure, not
            // the checksum (a file whose only damage is its checksum still
            // names them); its id from its name.
            match read(objects, &path).await.map(|b| handles_named_by(&b)) {
                Ok(Some(handles)) => {
                    let id = name
                        .split_once(".meta")
                        .and_then(|(stem, _)| parse_meta_name(&format!("{stem}.meta")));
                    if let Some(id) = id {
                        max_named_corrupt(&mut quarantined_ids_max, id);
                    }
                    kept.extend(handles);
                }
                Ok(None) | Err(_) => unnamed = true,
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
}

fn max_named_corrupt(max: &mut Option<CheckpointId>, id: CheckpointId) {
    *max = (*max).max(Some(id));
}

async fn check_latest(
    objects: &dyn ObjectStore,
    check: &StateCheck,
    id: CheckpointId,
    handles: &[StateHandle],
) -> Result<Vec<(StateHandle, Damage)>, StoreError> {
    let mut bad = Vec::new();
    for h in handles {
        // Unreadable is not damaged: the open fails instead.
        match read_found(objects, &Path::from(state_path(*h))).await? {
            Some(bytes) => {
                if let Err(why) = check(id, *h, &bytes) {
                    bad.push((*h, Damage::DamagedState { handle: *h, why }));
                }
            }
            None => bad.push((
                *h,
                Damage::MissingState {
                    handle: *h,
                    why: "no such object".into(),
                },
            )),
        }
    }
    Ok(bad)
}
