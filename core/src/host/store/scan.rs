//! Recovery's read pass: parsing the layout's file names, and [`FileStore::scan`],
//! which reads every file of the store into a [`Scan`] (what is valid, damaged,
//! half-written or orphaned) without changing anything.

#[allow(clippy::wildcard_imports)] // the store's own items and imports
use super::*;

pub(super) fn parse_meta_name(name: &str) -> Option<(CheckpointId, &str)> {
    let rest = name.strip_prefix("chk-")?;
    let (digits, ext) = rest.split_once('.')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|id| (CheckpointId(id), ext))
}

pub(super) fn parse_leader_name(name: &str) -> Option<Generation> {
    let digits = name.strip_prefix("gen-")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Generation)
}

pub(super) fn parse_state_name(name: &str) -> Option<StateHandle> {
    if name.len() != 16 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(name, 16).ok().map(StateHandle)
}

/// The name a quarantined metadata file of checkpoint `id` takes: the
/// first of `chk-<id>.meta.corrupt`, `.2.corrupt`, `.3.corrupt`, ... that
/// `taken` says is free (a checkpoint quarantined before keeps its file).
/// One rule for the rename (`FileStore::apply`, asking the file system)
/// and for the report of it (asking the listing).
pub(super) fn quarantine_name<E>(
    id: CheckpointId,
    mut taken: impl FnMut(&str) -> Result<bool, E>,
) -> Result<String, E> {
    let from = meta_path(id);
    let mut to = format!("{from}.corrupt");
    let mut n = 2u64;
    while taken(&to)? {
        to = format!("{from}.{n}.corrupt");
        n += 1;
    }
    Ok(to)
}

/// Everything recovery read, before it changes anything.
pub(super) struct Scan {
    pub(super) counter: u64,
    pub(super) valid: BTreeMap<CheckpointId, CheckpointEntry>,
    pub(super) damaged: Vec<Damaged>,
    /// Checkpoints to quarantine (their `.meta` renamed).
    pub(super) to_quarantine: BTreeSet<CheckpointId>,
    pub(super) quarantined: Vec<String>,
    pub(super) foreign: Vec<String>,
    pub(super) partial: Vec<String>,
    pub(super) orphans: Vec<StateHandle>,
    pub(super) kept_unreferenced: Vec<StateHandle>,
    /// Handles named by quarantined metadata (earlier and this start's).
    pub(super) kept: BTreeSet<StateHandle>,
    /// The highest checkpoint id any file name mentions.
    pub(super) max_id_named: Option<CheckpointId>,
}

impl Scan {
    /// `id` cannot be restored: report each bad file, keep its state files
    /// and quarantine its metadata.
    pub(super) fn mark_damaged(
        &mut self,
        id: CheckpointId,
        bad: impl Iterator<Item = (StateHandle, Damage)>,
    ) {
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

    pub(super) fn restorable(&self) -> Option<CheckpointId> {
        commit::latest(self.valid.iter().map(|(id, e)| (*id, e.savepoint)))
    }

    pub(super) fn last_id(&self) -> Option<CheckpointId> {
        let next = self.next_id();
        (next > 1).then(|| CheckpointId(next - 1))
    }

    /// The counter after recovery: above every id handed out or named on disk.
    pub(super) fn next_id(&self) -> u64 {
        let named = self.max_id_named.map_or(1, |id| id.0.saturating_add(1));
        self.counter.max(named).max(1)
    }

    pub(super) fn checkpoints(&self) -> Vec<RecoveredCheckpoint> {
        self.valid.iter().map(|(id, e)| e.recovered(*id)).collect()
    }

    pub(super) fn refusal(&self, committed: Option<CheckpointId>) -> Option<StoreError> {
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

    pub(super) fn report(&self, generation: Generation) -> Recovery {
        let mut quarantined = self.quarantined.clone();
        // The names the renames take (`FileStore::apply`), free in the
        // listing this scan read.
        for id in &self.to_quarantine {
            let Ok(to) = quarantine_name(*id, |name| {
                Ok::<_, std::convert::Infallible>(quarantined.iter().any(|q| q == name))
            });
            quarantined.push(to);
        }
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
    /// Reads the store: changes nothing.
    pub(super) fn scan(
        fs: &dyn Fs,
        job: JobId,
        check: Option<&StateCheck>,
    ) -> Result<Scan, StoreError> {
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
                                CheckpointEntry {
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
        // A state file is missing when the listing, which must succeed,
        // does not name it and reading it says "not found": an error that
        // cannot tell (a permission, an I/O error) fails the open instead
        // of condemning a checkpoint that may be whole, which would
        // restore an older one.
        let state_names = fs.list(STATE_DIR).map_err(io_err("list", STATE_DIR))?;
        let present: BTreeSet<StateHandle> = state_names
            .iter()
            .filter_map(|n| parse_state_name(n))
            .collect();
        let ids: Vec<CheckpointId> = scan.valid.keys().copied().collect();
        for id in ids {
            let handles = scan
                .valid
                .get(&id)
                .map(|e| e.handles.clone())
                .unwrap_or_default();
            // A handle the listing lacks is read before it counts as
            // missing: a listing that lags its files (a file system over
            // an object store) must not condemn the latest checkpoint.
            // (The checkpoints themselves are found by listing
            // `checkpoints/`, which must not lag: see the module docs.)
            let mut missing: Vec<StateHandle> = Vec::new();
            for h in handles.iter().copied().filter(|h| !present.contains(h)) {
                let path = state_path(h);
                match fs.read(&path) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(h),
                    Err(e) => return Err(io_err("read", &path)(e)),
                }
            }
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
                        Err(e) if e.kind() == io::ErrorKind::NotFound => bad.push((
                            h,
                            Damage::MissingState {
                                handle: h,
                                why: e.to_string(),
                            },
                        )),
                        // Unreadable is not damaged: the open fails, and
                        // nothing is quarantined on a transient error.
                        Err(e) => return Err(io_err("read", &state_path(h))(e)),
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
        for name in state_names {
            match parse_state_name(&name) {
                Some(h) if referenced.contains(&h) => {}
                Some(h) if undecodable_quarantine => scan.kept_unreferenced.push(h),
                Some(h) => scan.orphans.push(h),
                None => scan.foreign.push(join(STATE_DIR, &name)),
            }
        }
        Ok(scan)
    }
}
