//! Small sorted collections keyed by checkpoint id, kept inline.
//!
//! A task's checkpoint side holds a handful of ids at a time: the write
//! results of the checkpoints started and not yet executed (one active, a
//! few failed ones waiting for their mails), the mails scheduled, the async
//! parts running, the ids told aborted (bounded by `aborted_ids_max`). The
//! pure [`task::reduce`](crate::task::reduce) clones its state before every
//! event (the in-place `TaskState::apply` does not, but for its own check in
//! debug builds), and the model checker
//! copies a task's state for every step that task takes, so these sets are
//! sorted [`SmallVec`]s: up to [`IDS_INLINE`] entries live inside the state
//! (a clone is a copy; no allocation, no reference count, nothing to free),
//! and a larger set spills to the heap and stays correct. Lookups are binary
//! searches over a few words; reads hand out plain slices, ascending.
//!
//! They replaced `imbl`'s `OrdSet` / `OrdMap` in the task state and the task
//! monitor: a write to a shared `imbl` tree copies a B-tree node (about a
//! kilobyte) and an iterator allocates, which made the task side the largest
//! share of the model checker's time per state.

use core::hash::{Hash, Hasher};

use smallvec::SmallVec;

use crate::types::CheckpointId;

/// Entries an [`IdSet`] or [`IdMap`] holds without allocating. Four: the
/// model's largest worlds run two or three checkpoints per task, and the
/// default `aborted_ids_max` memory rarely fills in a run; beyond four the
/// set spills to the heap, correct but slower.
pub const IDS_INLINE: usize = 4;

/// A set of checkpoint ids, ascending, without duplicates.
#[derive(Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct IdSet(SmallVec<[CheckpointId; IDS_INLINE]>);

impl Clone for IdSet {
    fn clone(&self) -> IdSet {
        IdSet(copy_small(&self.0))
    }
}

/// A copy of `v`. Inline entries are copied as a whole inline array:
/// fixed-size moves emitted in place, where `SmallVec::from_slice` calls
/// `memcpy` for a length known only at run time (about a dozen
/// instructions of call for a few words; a task side holds ten of these
/// sets, and the model checker copies a side for most steps).
/// `SmallVec::clone` pushes the entries one by one through an iterator. A
/// spilled vector is copied by `from_slice`.
fn copy_small<T: Copy>(v: &SmallVec<[T; IDS_INLINE]>) -> SmallVec<[T; IDS_INLINE]> {
    match v.first() {
        None => SmallVec::new(),
        Some(&first) if !v.spilled() => {
            // Slots past the length hold copies of the first entry: a
            // `SmallVec` reads only its first `len`.
            let inline: [T; IDS_INLINE] =
                core::array::from_fn(|i| v.get(i).copied().unwrap_or(first));
            SmallVec::from_buf_and_len(inline, v.len())
        }
        Some(_) => SmallVec::from_slice(v),
    }
}

impl IdSet {
    /// The empty set.
    #[must_use]
    pub fn new() -> IdSet {
        IdSet(SmallVec::new())
    }

    /// How many ids it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it holds `id`.
    #[must_use]
    pub fn contains(&self, id: &CheckpointId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    /// Adds `id`; `Some(id)` if it was already there (as `imbl`'s `insert`).
    pub fn insert(&mut self, id: CheckpointId) -> Option<CheckpointId> {
        match self.0.binary_search(&id) {
            Ok(_) => Some(id),
            Err(at) => {
                self.0.insert(at, id);
                None
            }
        }
    }

    /// Removes `id`; `Some(id)` if it was there.
    pub fn remove(&mut self, id: &CheckpointId) -> Option<CheckpointId> {
        match self.0.binary_search(id) {
            Ok(at) => Some(self.0.remove(at)),
            Err(_) => None,
        }
    }

    /// The smallest id.
    #[must_use]
    pub fn get_min(&self) -> Option<&CheckpointId> {
        self.0.first()
    }

    /// Removes and returns the smallest id.
    pub fn remove_min(&mut self) -> Option<CheckpointId> {
        if self.0.is_empty() {
            None
        } else {
            Some(self.0.remove(0))
        }
    }

    /// Removes every id.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Keeps the ids `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(CheckpointId) -> bool) {
        self.0.retain(|id| keep(*id));
    }

    /// The ids, ascending.
    #[must_use]
    pub fn as_slice(&self) -> &[CheckpointId] {
        &self.0
    }

    /// The ids below `id`, ascending.
    #[must_use]
    pub fn below(&self, id: CheckpointId) -> &[CheckpointId] {
        let end = self.0.partition_point(|x| *x < id);
        &self.0[..end]
    }

    /// The ids at or below `id`, ascending.
    #[must_use]
    pub fn at_or_below(&self, id: CheckpointId) -> &[CheckpointId] {
        let end = self.0.partition_point(|x| *x <= id);
        &self.0[..end]
    }

    /// The ids, ascending.
    pub fn iter(&self) -> core::slice::Iter<'_, CheckpointId> {
        self.0.iter()
    }
}

impl FromIterator<CheckpointId> for IdSet {
    /// Sorted and deduplicated, whatever order the ids come in.
    fn from_iter<I: IntoIterator<Item = CheckpointId>>(iter: I) -> IdSet {
        let mut v: SmallVec<[CheckpointId; IDS_INLINE]> = iter.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        IdSet(v)
    }
}

impl<'a> IntoIterator for &'a IdSet {
    type Item = &'a CheckpointId;
    type IntoIter = core::slice::Iter<'a, CheckpointId>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Hash for IdSet {
    /// The length, then each id ascending (the bytes `imbl`'s sets wrote in
    /// the hand-written hashes this type replaced).
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_usize(self.0.len());
        for id in &self.0 {
            id.hash(h);
        }
    }
}

/// A map from checkpoint id to `V`, ascending by id. The values are `Copy`
/// (statuses and flags): a clone is one copy of the entries.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct IdMap<V: Copy>(SmallVec<[(CheckpointId, V); IDS_INLINE]>);

impl<V: Copy> Clone for IdMap<V> {
    fn clone(&self) -> IdMap<V> {
        IdMap(copy_small(&self.0))
    }
}

impl<V: Copy> Default for IdMap<V> {
    fn default() -> IdMap<V> {
        IdMap::new()
    }
}

impl<V: Copy> IdMap<V> {
    /// The empty map.
    #[must_use]
    pub fn new() -> IdMap<V> {
        IdMap(SmallVec::new())
    }

    /// How many entries it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, id: &CheckpointId) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.cmp(id))
    }

    /// Whether it holds an entry for `id`.
    #[must_use]
    pub fn contains_key(&self, id: &CheckpointId) -> bool {
        self.find(id).is_ok()
    }

    /// The value for `id`.
    #[must_use]
    pub fn get(&self, id: &CheckpointId) -> Option<&V> {
        self.find(id).ok().map(|at| &self.0[at].1)
    }

    /// The value for `id`, to change.
    pub fn get_mut(&mut self, id: &CheckpointId) -> Option<&mut V> {
        match self.find(id) {
            Ok(at) => Some(&mut self.0[at].1),
            Err(_) => None,
        }
    }

    /// Sets `id`'s value; the old one if there was one.
    pub fn insert(&mut self, id: CheckpointId, value: V) -> Option<V> {
        match self.find(&id) {
            Ok(at) => Some(core::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                self.0.insert(at, (id, value));
                None
            }
        }
    }

    /// Removes `id`'s entry; its value if there was one.
    pub fn remove(&mut self, id: &CheckpointId) -> Option<V> {
        match self.find(id) {
            Ok(at) => Some(self.0.remove(at).1),
            Err(_) => None,
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The entries, ascending by id.
    #[must_use]
    pub fn as_slice(&self) -> &[(CheckpointId, V)] {
        &self.0
    }

    /// The entries with ids below `id`, ascending.
    #[must_use]
    pub fn below(&self, id: CheckpointId) -> &[(CheckpointId, V)] {
        let end = self.0.partition_point(|(k, _)| *k < id);
        &self.0[..end]
    }

    /// The ids, ascending.
    pub fn keys(&self) -> impl Iterator<Item = &CheckpointId> + '_ {
        self.0.iter().map(|(k, _)| k)
    }

    /// The entries, ascending by id.
    pub fn iter(&self) -> impl Iterator<Item = (&CheckpointId, &V)> + '_ {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<V: Copy> FromIterator<(CheckpointId, V)> for IdMap<V> {
    /// Sorted by id; of several entries for one id the last one wins (as
    /// inserting them in order would).
    fn from_iter<I: IntoIterator<Item = (CheckpointId, V)>>(iter: I) -> IdMap<V> {
        let mut m = IdMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<V: Copy + Hash> Hash for IdMap<V> {
    /// The length, then each entry ascending by id.
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_usize(self.0.len());
        for (k, v) in &self.0 {
            k.hash(h);
            v.hash(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(n: u64) -> CheckpointId {
        CheckpointId(n)
    }

    #[test]
    fn a_set_stays_sorted_and_unique_past_its_inline_capacity() {
        let mut s = IdSet::new();
        for n in [7, 3, 9, 3, 1, 5, 11, 2] {
            s.insert(cp(n));
        }
        let want: Vec<CheckpointId> = [1, 2, 3, 5, 7, 9, 11].into_iter().map(cp).collect();
        assert_eq!(s.as_slice(), want.as_slice());
        assert_eq!(s.insert(cp(5)), Some(cp(5)));
        assert_eq!(s.remove(&cp(4)), None);
        assert_eq!(s.remove(&cp(5)), Some(cp(5)));
        assert_eq!(s.get_min(), Some(&cp(1)));
        assert_eq!(s.remove_min(), Some(cp(1)));
        assert_eq!(s.below(cp(7)), &[cp(2), cp(3)]);
        assert_eq!(s.at_or_below(cp(7)), &[cp(2), cp(3), cp(7)]);
        assert!(s.contains(&cp(11)) && !s.contains(&cp(1)));
        let collected: IdSet = [cp(4), cp(2), cp(4)].into_iter().collect();
        assert_eq!(collected.as_slice(), &[cp(2), cp(4)]);
        s.clear();
        assert_eq!(s.remove_min(), None);
        assert!(s.is_empty());
    }

    #[test]
    fn a_map_replaces_values_and_keeps_ids_ascending() {
        let mut m: IdMap<u8> = IdMap::new();
        for (n, v) in [(5, 1), (2, 2), (8, 3), (1, 4), (6, 5)] {
            assert_eq!(m.insert(cp(n), v), None);
        }
        assert_eq!(m.insert(cp(2), 9), Some(2));
        assert_eq!(
            m.keys().copied().collect::<Vec<_>>(),
            [1, 2, 5, 6, 8].map(cp)
        );
        assert_eq!(m.get(&cp(2)), Some(&9));
        if let Some(v) = m.get_mut(&cp(8)) {
            *v = 7;
        }
        assert_eq!(m.get(&cp(8)), Some(&7));
        assert_eq!(m.below(cp(5)), &[(cp(1), 4), (cp(2), 9)]);
        assert_eq!(m.remove(&cp(5)), Some(1));
        assert_eq!(m.remove(&cp(5)), None);
        assert!(!m.contains_key(&cp(5)) && m.contains_key(&cp(6)));
        assert!(!m.is_empty() && IdMap::<u8>::new().is_empty());
        let last_wins: IdMap<u8> = [(cp(3), 1), (cp(1), 2), (cp(3), 3)].into_iter().collect();
        assert_eq!(last_wins.as_slice(), &[(cp(1), 2), (cp(3), 3)]);
    }

    #[test]
    fn a_copy_equals_its_original_inline_and_spilled() {
        for n in 0..=IDS_INLINE as u64 + 3 {
            let s: IdSet = (1..=n).map(cp).collect();
            let c = s.clone();
            assert_eq!((c.as_slice(), c.0.spilled()), (s.as_slice(), s.0.spilled()));
            let m: IdMap<u8> = (1..=n)
                .map(|i| (cp(i), u8::try_from(i).unwrap_or(0)))
                .collect();
            let c = m.clone();
            assert_eq!((c.as_slice(), c.0.spilled()), (m.as_slice(), m.0.spilled()));
        }
    }

    #[test]
    fn equal_contents_hash_alike_however_they_were_built() {
        use std::collections::hash_map::DefaultHasher;
        fn h<T: Hash>(t: &T) -> u64 {
            let mut s = DefaultHasher::new();
            t.hash(&mut s);
            s.finish()
        }
        let a: IdSet = [cp(1), cp(6), cp(3), cp(9), cp(2)].into_iter().collect();
        let mut b = IdSet::new();
        for n in [9, 2, 3, 6, 1] {
            b.insert(cp(n));
        }
        assert_eq!(a, b);
        assert_eq!(h(&a), h(&b));
        // The length is written: {1} then {2, 3} differs from {1, 2} then {3}.
        let set = |ids: &[u64]| ids.iter().map(|n| cp(*n)).collect::<IdSet>();
        assert_ne!(h(&(set(&[1]), set(&[2, 3]))), h(&(set(&[1, 2]), set(&[3]))));
    }
}
