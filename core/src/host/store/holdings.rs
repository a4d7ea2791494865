//! What a checkpoint store holds, in memory ([`Holdings`]): the stored
//! checkpoints and savepoints, the prepared (finalized, not yet stored)
//! ones, which stored checkpoints reference each state handle, the handles
//! kept for quarantined metadata, and the discards the guard deferred.
//!
//! The file store ([`FileStore`](super::FileStore)) and ckpt-node's object
//! store keep their view of the durable store in this one type, so the
//! durability guard's decisions (refuse a discard, decline one for a
//! savepoint, defer it until eviction, release what a disposed savepoint
//! alone held) and the rules for what may be disposed of are made by the
//! same code in both. Each store changes its durable medium first and then
//! tells its holdings.

use std::collections::{BTreeMap, BTreeSet};

use super::{Discarded, StoreError, StoreStats};
use crate::commit;
use crate::coordinator::RecoveredCheckpoint;
use crate::types::{CheckpointId, Millis, StateHandle};

/// A checkpoint or savepoint a store holds (stored, or prepared by
/// finalize): what its metadata says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointEntry {
    /// Whether it is a savepoint (the user's; never evicted by retention).
    pub savepoint: bool,
    /// When the coordinator triggered it.
    pub timestamp: Millis,
    /// The state handles it references.
    pub handles: Vec<StateHandle>,
}

impl CheckpointEntry {
    /// The entry as `CoordinatorEvent::Recover` takes it, for checkpoint `id`.
    #[must_use]
    pub fn recovered(&self, id: CheckpointId) -> RecoveredCheckpoint {
        RecoveredCheckpoint {
            checkpoint: id,
            savepoint: self.savepoint,
            timestamp: self.timestamp,
            handles: self.handles.clone(),
        }
    }
}

/// A store's in-memory view of what it holds (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    stored: BTreeMap<CheckpointId, CheckpointEntry>,
    prepared: BTreeMap<CheckpointId, CheckpointEntry>,
    /// Handle -> the stored checkpoints referencing it.
    holders: BTreeMap<StateHandle, BTreeSet<CheckpointId>>,
    /// Handles named by quarantined metadata: never deleted by the store.
    quarantined: BTreeSet<StateHandle>,
    /// Discards refused while protected; deleted on eviction.
    deferred: BTreeSet<StateHandle>,
}

impl Holdings {
    /// What recovery found: the checkpoints it can restore (stored) and the
    /// handles quarantined metadata names (kept for good). Nothing is
    /// prepared or deferred after a start.
    #[must_use]
    pub fn recovered(
        valid: BTreeMap<CheckpointId, CheckpointEntry>,
        quarantined: BTreeSet<StateHandle>,
    ) -> Self {
        let mut holders: BTreeMap<StateHandle, BTreeSet<CheckpointId>> = BTreeMap::new();
        for (id, e) in &valid {
            for h in &e.handles {
                holders.entry(*h).or_default().insert(*id);
            }
        }
        Holdings {
            stored: valid,
            prepared: BTreeMap::new(),
            holders,
            quarantined,
            deferred: BTreeSet::new(),
        }
    }

    /// The stored checkpoints as `(id, savepoint)`, in id order: what the
    /// commit-order rule ([`crate::commit`]) reads.
    pub fn held(&self) -> impl Iterator<Item = (CheckpointId, bool)> + '_ {
        self.stored.iter().map(|(id, e)| (*id, e.savepoint))
    }

    /// The stored checkpoints and savepoints with their handles, in id order.
    pub fn stored(&self) -> impl Iterator<Item = (CheckpointId, &[StateHandle])> + '_ {
        self.stored
            .iter()
            .map(|(id, e)| (*id, e.handles.as_slice()))
    }

    /// The ids of the stored checkpoints and savepoints, in order.
    #[must_use]
    pub fn stored_ids(&self) -> Vec<CheckpointId> {
        self.stored.keys().copied().collect()
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

    /// Finalize wrote `id`'s metadata: it is prepared, not stored.
    pub fn prepare(&mut self, id: CheckpointId, entry: CheckpointEntry) {
        self.prepared.insert(id, entry);
    }

    /// Takes prepared checkpoint `id` out, to be stored;
    /// [`StoreError::NotPrepared`] when finalize did not prepare it.
    pub fn take_prepared(&mut self, id: CheckpointId) -> Result<CheckpointEntry, StoreError> {
        self.prepared.remove(&id).ok_or(StoreError::NotPrepared(id))
    }

    /// `id` is stored (or its commit's outcome is unknown, which guards
    /// its state the same way): its handles are held by it.
    pub fn hold(&mut self, id: CheckpointId, entry: CheckpointEntry) {
        for h in &entry.handles {
            self.holders.entry(*h).or_default().insert(id);
        }
        self.stored.insert(id, entry);
    }

    /// The stored checkpoints (never savepoints) beyond the newest
    /// `retained_max`, oldest first: what the next eviction removes, or
    /// what an eviction that failed left held.
    #[must_use]
    pub fn beyond_retention(&self, retained_max: usize) -> Vec<CheckpointId> {
        let checkpoints: Vec<CheckpointId> = self
            .stored
            .iter()
            .filter(|(_, e)| !e.savepoint)
            .map(|(id, _)| *id)
            .collect();
        let beyond = checkpoints.len().saturating_sub(retained_max);
        checkpoints.into_iter().take(beyond).collect()
    }

    /// Whether every stored checkpoint or savepoint that holds `handle` is
    /// a checkpoint beyond the newest `retained_max`: what is left held
    /// only by evictions that failed.
    #[must_use]
    pub fn held_only_beyond_retention(&self, handle: StateHandle, retained_max: usize) -> bool {
        let beyond = self.beyond_retention(retained_max);
        self.holders.get(&handle).is_some_and(|set| {
            set.iter()
                .filter(|id| self.stored.contains_key(id))
                .all(|id| beyond.contains(id))
        })
    }

    /// Drops stored checkpoint `id` (evicted, disposed of); returns its
    /// handles (empty when it was not stored).
    pub fn forget(&mut self, id: CheckpointId) -> Vec<StateHandle> {
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

    /// After an eviction: whether handle `h` of the evicted checkpoint is
    /// to be deleted now (no stored checkpoint holds it any more, and its
    /// discard was deferred by the guard; the deferral is then settled).
    pub fn release_evicted(&mut self, h: StateHandle) -> bool {
        !self.holders.contains_key(&h) && self.deferred.remove(&h)
    }

    /// Whether stored savepoint `savepoint` may be disposed of: refused for
    /// a checkpoint that is not stored ([`StoreError::NotStored`]), not a
    /// savepoint ([`StoreError::NotASavepoint`]), or the latest
    /// ([`StoreError::LatestSavepoint`]: the next start would restore an
    /// older one).
    pub fn check_disposable(&self, savepoint: CheckpointId) -> Result<(), StoreError> {
        match self.stored.get(&savepoint) {
            None => return Err(StoreError::NotStored(savepoint)),
            Some(e) if !e.savepoint => return Err(StoreError::NotASavepoint(savepoint)),
            Some(_) => {}
        }
        if self.latest() == Some(savepoint) {
            return Err(StoreError::LatestSavepoint(savepoint));
        }
        Ok(())
    }

    /// After a disposed savepoint is forgotten: whether its handle `h` is
    /// to be deleted (no other stored checkpoint, no finalized one waiting
    /// for its store and no quarantined metadata references it; a deferral
    /// of it is then settled). A host that follows the crate docs never
    /// lets a checkpoint share a savepoint's state (savepoints are
    /// self-contained), so the finalized ones are spared only in case one
    /// does: its commit would otherwise name a deleted file.
    pub fn release_disposed(&mut self, h: StateHandle) -> bool {
        if self.holders.contains_key(&h)
            || self.quarantined.contains(&h)
            || self.prepared.values().any(|e| e.handles.contains(&h))
        {
            return false;
        }
        self.deferred.remove(&h);
        true
    }

    /// The durability guard on a `DiscardState` of `handle`: refused
    /// (counted, and deferred until eviction) when a stored checkpoint
    /// references it, declined when only a savepoint does; `None` when the
    /// store may delete it.
    pub fn guard(&mut self, handle: StateHandle, stats: &mut StoreStats) -> Option<Discarded> {
        let set = self.holders.get(&handle)?;
        let checkpoint = set
            .iter()
            .find(|id| self.stored.get(id).is_some_and(|e| !e.savepoint))
            .copied();
        if let Some(checkpoint) = checkpoint {
            stats.guard_refusals += 1;
            stats.refused.push((handle, checkpoint));
            self.deferred.insert(handle);
            return Some(Discarded::Refused { checkpoint });
        }
        if let Some(savepoint) = set.iter().next().copied() {
            stats.savepoint_declines += 1;
            return Some(Discarded::Savepoint { savepoint });
        }
        None
    }

    /// A discard of `handle` that the guard let through: a prepared
    /// checkpoint holding it is dropped (it could never be stored without
    /// its state); returns that checkpoint, whose metadata the store
    /// removes.
    pub fn drop_prepared_holding(&mut self, handle: StateHandle) -> Option<CheckpointId> {
        let id = self
            .prepared
            .iter()
            .find(|(_, e)| e.handles.contains(&handle))
            .map(|(id, _)| *id)?;
        self.prepared.remove(&id);
        Some(id)
    }
}
