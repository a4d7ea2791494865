//! The coordinator's state: copy-on-write parts behind `triomphe` pointers
//! (the ack tables, the pending checkpoints' slice, the cold fields and
//! their short lists), so that `reduce` returns a new state cheaply and
//! every past state can be kept.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::config::{ConfigError, CoordinatorConfig, CoordinatorSettings};
use super::slots::{AckSlot, AckTable, At};
use super::{RequestId, Timer, TriggerKind};
use crate::types::{AttemptNo, CheckpointId, Generation, Handles, Millis, StateHandle};

/// Where a task attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The current attempt.
    pub attempt: AttemptNo,
    /// Whether that attempt is running (a failed or finished attempt has
    /// no live execution until a new attempt runs).
    pub running: bool,
    /// Whether that attempt finished (`CoordinatorEvent::TaskFinished`):
    /// it is not running, and plans leave it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
}

/// Where a pending checkpoint is on its way to completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PendingPhase {
    /// Waiting for the master hooks (trigger messages not sent yet).
    AwaitingHooks,
    /// Waiting for acks (or, when none is missing, for the completion slot:
    /// completions run one at a time, in id order).
    AwaitingAcks,
    /// Waiting for [`super::CoordinatorEvent::FinalizeDone`].
    Finalizing,
    /// Waiting for [`super::CoordinatorEvent::StoreDone`].
    Storing,
}

/// Where a stop-with-savepoint is (`TriggerKind::StopWithSavepoint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopPhase {
    /// Requested: its id is allocating or its savepoint is pending. Nothing
    /// else is triggered meanwhile.
    Requested {
        /// The request.
        request: RequestId,
        /// Periodic scheduling was on when the stop was asked for (it
        /// resumes if the savepoint fails).
        resume_periodic: bool,
    },
    /// The savepoint is committed and the job told to stop on it.
    Stopped {
        /// The savepoint the job ends on.
        savepoint: CheckpointId,
    },
}

/// A checkpoint that was triggered and has not completed or been aborted,
/// as stored in the pending map. Read through [`Pending`], which applies
/// the map's override of its ack table's version (see [`PendingMap`]);
/// written through the map's `get_mut`, which settles the override first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PendingRecord {
    pub(crate) id: CheckpointId,
    pub(crate) request: RequestId,
    pub(crate) kind: TriggerKind,
    pub(crate) timestamp: Millis,
    /// Attempt expected from each ack slot, captured at trigger time.
    pub(crate) attempts: PlannedAttempts,
    pub(crate) acks: AckTable,
    /// Acks still missing: at most the number of slots, which the
    /// configuration bounds by `TASK_ID_MAX` (16 Mi distinct task ids), so
    /// 32 bits (beside `phase`: 8 bytes less per state than a `usize`).
    pub(crate) remaining: u32,
    pub(crate) phase: PendingPhase,
}

impl PendingRecord {
    /// [`Pending::handles`], collected ([`AckTable::handles`]: one
    /// allocation, read straight from the table).
    pub(crate) fn handle_vec(&self) -> Vec<StateHandle> {
        self.acks.handles()
    }
    /// [`Self::handle_vec`] as a finalize request carries it
    /// ([`AckTable::handle_list`]).
    pub(crate) fn handle_list(&self) -> Handles {
        self.acks.handle_list()
    }
    /// Moves the ack table to version `at` of its log, as an override of
    /// the pending map said this state reads it (0: no override), and
    /// `remaining` with it: each version of a log acknowledges one more
    /// slot than the one before (`slots.rs`).
    fn settle(&mut self, at: u32) {
        if self.acks.log_version().is_some_and(|own| at > own) {
            self.remaining = self.remaining_at(at);
            self.acks.set_version(at);
        }
    }
    /// The acks still missing when the table is read at version `at` of
    /// its log (0, a version not past the table's own, or a leaf: as
    /// stored): the stored count less one per version past the table's.
    #[inline]
    fn remaining_at(&self, at: u32) -> u32 {
        match self.acks.log_version() {
            Some(own) if at > own => self.remaining.saturating_sub(at - own),
            Some(_) | None => self.remaining,
        }
    }
}

/// A pending checkpoint as one coordinator state reads it: the stored
/// record with the state's own version of its ack table. What
/// [`CoordinatorState::pending`] and [`CoordinatorState::pending_checkpoint`]
/// give; `Copy`, two words, borrowing the state. To keep one beyond the
/// state, take its snapshot
/// ([`PendingSnapshot::from`](crate::snapshot::PendingSnapshot)), an owned
/// value equal for equal checkpoints.
#[derive(Clone, Copy)]
pub struct Pending<'a> {
    rec: &'a PendingRecord,
    /// The version of the record's ack log this state reads (0: the
    /// table's own).
    at: u32,
}

/// Every field of a pending checkpoint as one state reads it: the one
/// place that lists the record's fields ([`Pending::parts`]), so that a
/// new field cannot silently drop out of the view's `Hash`, `Eq` or
/// snapshot. Compared field by field, the ack table last (the one field
/// that may take a pass over its slots).
#[derive(PartialEq)]
pub(crate) struct Parts<'a> {
    pub(crate) id: CheckpointId,
    pub(crate) request: RequestId,
    pub(crate) kind: &'a TriggerKind,
    pub(crate) timestamp: Millis,
    pub(crate) attempts: &'a PlannedAttempts,
    pub(crate) remaining: u32,
    pub(crate) phase: PendingPhase,
    pub(crate) acks: At<'a>,
}

impl Hash for Pending<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // The bytes and order the record's own hash wrote (a model checker
        // keeps only fingerprints, and symmetry picks an orbit's member by
        // them).
        let Parts {
            id,
            request,
            kind,
            timestamp,
            attempts,
            remaining,
            phase,
            acks,
        } = self.parts();
        id.hash(h);
        request.hash(h);
        kind.hash(h);
        timestamp.hash(h);
        attempts.len().hash(h);
        attempts.hash(h);
        acks.hash_slots(h);
        remaining.hash(h);
        phase.hash(h);
    }
}

impl PartialEq for Pending<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for Pending<'_> {}

impl std::fmt::Debug for Pending<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("id", &self.rec.id)
            .field("request", &self.rec.request)
            .field("kind", &self.rec.kind)
            .field("timestamp", &self.rec.timestamp)
            .field("attempts", &self.rec.attempts)
            .field("acks", &DebugSlots(self.table()))
            .field("remaining", &self.remaining_u32())
            .field("phase", &self.rec.phase)
            .finish()
    }
}

/// An ack table's slots as a list, for `Debug`.
struct DebugSlots<'a>(At<'a>);

impl std::fmt::Debug for DebugSlots<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// The attempt a pending checkpoint expects from each ack slot, captured at
/// trigger time: one attempt for every slot when they are all the same
/// (every task at the same attempt: always after a global failover, and in
/// Flink until a region fails over), else one per slot. The first is two
/// words in the checkpoint: an ack is checked against it without reading a
/// per-slot table (at 100 000 tasks acknowledged in a scattered order that
/// table, 400 KB, cost a cache miss per ack), and copying the checkpoint
/// (a kept state's ack copies the checkpoint it acknowledges) touches no
/// reference count for it. Built only from the
/// per-slot list ([`From<Vec<AttemptNo>>`]), which picks the form, so
/// equal lists are equal values; hashed as that list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlannedAttempts {
    /// Every one of `slots` slots (at least one) expects `attempt`.
    Same {
        /// The number of slots (at most `TASK_ID_MAX`, so 32 bits: the
        /// enum is then two words, as the `Each` pointer).
        slots: u32,
        /// The attempt each expects.
        attempt: AttemptNo,
    },
    /// Slot `i` expects `each[i]` (not all the same, or no slot).
    Each(Arc<[AttemptNo]>),
}

impl PlannedAttempts {
    /// The number of slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            PlannedAttempts::Same { slots, .. } => usize::try_from(*slots).unwrap_or(usize::MAX),
            PlannedAttempts::Each(each) => each.len(),
        }
    }
    /// The attempt slot `slot` expects.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<AttemptNo> {
        match self {
            PlannedAttempts::Same { slots, attempt } => u32::try_from(slot)
                .is_ok_and(|s| s < *slots)
                .then_some(*attempt),
            PlannedAttempts::Each(each) => each.get(slot).copied(),
        }
    }
    /// Whether slot `slot` expects `attempt`.
    #[inline]
    pub(crate) fn expects(&self, slot: usize, attempt: AttemptNo) -> bool {
        self.get(slot) == Some(attempt)
    }
    /// The attempts in slot order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = AttemptNo> + '_ {
        (0..self.len()).map(move |slot| self.get(slot).unwrap_or(AttemptNo(0)))
    }
}

impl From<Vec<AttemptNo>> for PlannedAttempts {
    fn from(each: Vec<AttemptNo>) -> Self {
        // A list too long for 32 bits (never: the configuration bounds the
        // slots) keeps its per-slot form.
        match (each.split_first(), u32::try_from(each.len())) {
            (Some((first, rest)), Ok(slots)) if rest.iter().all(|a| a == first) => {
                PlannedAttempts::Same {
                    slots,
                    attempt: *first,
                }
            }
            _ => PlannedAttempts::Each(each.into()),
        }
    }
}

impl Hash for PlannedAttempts {
    /// As the list `[AttemptNo]` hashes: its length, then each attempt.
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.len().hash(h);
        for a in self.iter() {
            a.hash(h);
        }
    }
}

impl<'a> Pending<'a> {
    /// The record read at its own version.
    pub(crate) fn of(rec: &'a PendingRecord) -> Pending<'a> {
        Pending { rec, at: 0 }
    }
    /// Every field as this state reads it ([`Parts`]).
    pub(crate) fn parts(self) -> Parts<'a> {
        // Destructured so that a new field cannot silently drop out.
        let PendingRecord {
            id,
            request,
            kind,
            timestamp,
            attempts,
            acks: _,
            remaining: _,
            phase,
        } = self.rec;
        Parts {
            id: *id,
            request: *request,
            kind,
            timestamp: *timestamp,
            attempts,
            remaining: self.remaining_u32(),
            phase: *phase,
            acks: self.table(),
        }
    }
    /// The checkpoint id.
    pub fn id(self) -> CheckpointId {
        self.rec.id
    }
    /// The request it came from.
    pub fn request(self) -> RequestId {
        self.rec.request
    }
    /// What kind of checkpoint.
    pub fn kind(self) -> &'a TriggerKind {
        &self.rec.kind
    }
    /// When it was triggered.
    pub fn timestamp(self) -> Millis {
        self.rec.timestamp
    }
    /// Forced checkpoints are exempt from the concurrency limit.
    pub fn is_forced(self) -> bool {
        self.rec.kind.is_forced()
    }
    /// Savepoints are never subsumed.
    pub fn can_be_subsumed(self) -> bool {
        !self.rec.kind.is_savepoint()
    }
    /// Acks still missing.
    pub fn remaining(self) -> usize {
        // Lossless: `usize` is at least 32 bits wherever this builds.
        usize::try_from(self.remaining_u32()).unwrap_or(usize::MAX)
    }
    /// Acks still missing, as stored: the record's count less the slots
    /// the versions past the record's own acknowledged.
    #[inline]
    pub(crate) fn remaining_u32(self) -> u32 {
        self.rec.remaining_at(self.at)
    }
    /// The phase.
    pub fn phase(self) -> PendingPhase {
        self.rec.phase
    }
    /// The ack table at this state's version.
    #[inline]
    pub(crate) fn table(self) -> At<'a> {
        if self.at == 0 {
            self.rec.acks.view()
        } else {
            self.rec.acks.at(self.at)
        }
    }
    /// Every ack slot, in `tasks_to_wait` order.
    pub fn acks(self) -> impl Iterator<Item = AckSlot> + 'a {
        self.table().iter()
    }
    /// The attempt expected in each ack slot.
    pub fn attempts(self) -> impl ExactSizeIterator<Item = AttemptNo> + 'a {
        self.rec.attempts.iter()
    }
    /// Whether slot `slot` expects `attempt`.
    #[inline]
    pub(crate) fn expects(self, slot: usize, attempt: AttemptNo) -> bool {
        self.rec.attempts.expects(slot, attempt)
    }
    /// Handles held by this pending checkpoint.
    pub fn handles(self) -> impl Iterator<Item = StateHandle> + 'a {
        self.table().iter().filter_map(|a| match a {
            AckSlot::Acked(h) => h,
            AckSlot::Waiting => None,
        })
    }
    /// Fully acknowledged.
    pub fn fully_acked(self) -> bool {
        self.remaining_u32() == 0
    }
    /// A record that reads as this one does (a copy, settled at this
    /// state's version).
    pub(crate) fn to_record(self) -> PendingRecord {
        let mut rec = self.rec.clone();
        rec.settle(self.at);
        rec
    }
}

/// A completed checkpoint retained by the coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    pub(crate) id: CheckpointId,
    pub(crate) request: Option<RequestId>,
    pub(crate) savepoint: bool,
    pub(crate) timestamp: Millis,
    pub(crate) handles: AckTable,
}

impl Hash for Completed {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let Completed {
            id,
            request,
            savepoint,
            timestamp,
            handles,
        } = self;
        id.hash(h);
        request.hash(h);
        savepoint.hash(h);
        timestamp.hash(h);
        handles.hash(h);
    }
}

impl Completed {
    /// The checkpoint id.
    pub fn id(&self) -> CheckpointId {
        self.id
    }
    /// Whether it is a savepoint.
    pub fn is_savepoint(&self) -> bool {
        self.savepoint
    }
    /// When it was triggered.
    pub fn timestamp(&self) -> Millis {
        self.timestamp
    }
    /// [`Self::handles`], collected ([`AckTable::handles`]).
    pub(crate) fn handle_vec(&self) -> Vec<StateHandle> {
        self.handles.handles()
    }
    /// The state handles it retains.
    pub fn handles(&self) -> impl Iterator<Item = StateHandle> + '_ {
        self.handles.iter().filter_map(|a| match a {
            AckSlot::Acked(h) => h,
            AckSlot::Waiting => None,
        })
    }
}

/// Pending checkpoints by id, iterating in id order: the subset of
/// `imbl::OrdMap`'s interface the coordinator uses.
///
/// * **One checkpoint (the common case): inline** in the state. Cloning a
///   state clones it (two reference counts, the kind); writing it writes
///   the state's own copy: no allocation, shared or not.
/// * **None, or more than one: a small sorted slice of checkpoints, each
///   behind its own `Arc`, the slice behind one `Arc`**, and beside it, in
///   the state, one version number for each of the first [`OVERRIDES`]
///   checkpoints. An ack to a checkpoint of a shared map whose ack table
///   is a log (more than `slots::LEAF` slots) writes neither: it stamps
///   the log in place, as the log's tip (`slots.rs`), and records the new
///   version in this state's override; the checkpoint is read at that
///   version ([`Pending`]), its `remaining` less one per version. Any
///   other write to a checkpoint of a shared map copies the slice (one
///   allocation, a count bump for every other checkpoint, which stays
///   shared) and the checkpoint written (a second allocation), settling
///   its override into the copy. An unshared map and checkpoint are
///   written in place.
///
/// Inserting and removing rebuild the slice (once per checkpoint), sharing
/// the checkpoints; the one inline checkpoint moves in and out uncopied.
///
/// Why the shapes (callgrind, `profile pure_retained`,
/// `benches/README.md`): each checkpoint behind its own `Arc` was the first
/// shape, and with one checkpoint pending its second allocation was about a
/// third of the instructions of an ack whose old state is kept, hence the
/// inline case (2026-12-04, `benches/ACK-2026-12-04.md`). The checkpoints
/// then sat by value in the slice, and a kept ack with four pending copied
/// all four (740 of its 1 054 instructions at 10 000 x 4, 2026-12-06);
/// behind their own `Arc`s again, it copies one (`benches/ACK-2026-12-06.md`).
/// Copying the slice and the checkpoint still took eight locked
/// instructions and two allocations per kept ack at four pending (about
/// 5.5 ns each lock here); with the overrides it takes three and none, as
/// with one pending (`benches/ACK-2026-12-07d.md`).
pub(crate) enum PendingMap {
    /// Exactly one checkpoint.
    One(PendingRecord),
    /// None, or more than one (sorted by id).
    Many {
        /// The checkpoints.
        entries: triomphe::Arc<[Entry]>,
        /// `at[i]`: the version of checkpoint `i`'s ack log this state
        /// reads, when not the table's own (0: no override). Only a log's
        /// table has one, and only at a version some table of that log
        /// reached: at least the record's own.
        at: [u32; OVERRIDES],
    },
}

/// How many checkpoints of a [`PendingMap::Many`] can be acknowledged
/// without a copy (the first ones by id). Flink's default allows one
/// concurrent checkpoint; the benchmarks run four.
pub(crate) const OVERRIDES: usize = 4;

/// A checkpoint of [`PendingMap::Many`], shared until written.
pub(crate) type Entry = (CheckpointId, triomphe::Arc<PendingRecord>);

impl Clone for PendingMap {
    #[inline]
    fn clone(&self) -> Self {
        match self {
            PendingMap::One(one) => PendingMap::One(clone_one(one)),
            PendingMap::Many { entries, at } => PendingMap::Many {
                entries: entries.clone(),
                at: *at,
            },
        }
    }
}

/// The one checkpoint of [`PendingMap::One`], cloned out of line (so that
/// cloning a state with any other number pending stays one count bump,
/// inlined).
#[inline(never)]
fn clone_one(one: &PendingRecord) -> PendingRecord {
    one.clone()
}

impl Default for PendingMap {
    fn default() -> Self {
        PendingMap::Many {
            entries: std::iter::empty().collect(),
            at: [0; OVERRIDES],
        }
    }
}

/// The checkpoints of a [`PendingMap`] in id order.
pub(crate) struct PendingIter<'a> {
    map: &'a PendingMap,
    /// The next position from the front.
    front: usize,
    /// One past the last position not yet taken from the back.
    back: usize,
}

impl<'a> Iterator for PendingIter<'a> {
    type Item = (CheckpointId, Pending<'a>);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let p = self.map.at(self.front)?;
        self.front += 1;
        Some((p.id(), p))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back.saturating_sub(self.front);
        (n, Some(n))
    }
}

impl DoubleEndedIterator for PendingIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        let p = self.map.at(self.back)?;
        Some((p.id(), p))
    }
}

impl ExactSizeIterator for PendingIter<'_> {}

impl PendingMap {
    /// Builds the map from entries sorted by id (every record settled: no
    /// override).
    fn from_sorted(mut v: Vec<Entry>) -> PendingMap {
        match v.pop() {
            Some((_, one)) if v.is_empty() => PendingMap::One(triomphe::Arc::unwrap_or_clone(one)),
            Some(last) => {
                v.push(last);
                PendingMap::Many {
                    entries: v.into(),
                    at: [0; OVERRIDES],
                }
            }
            None => PendingMap::default(),
        }
    }
    /// The entries, the checkpoints shared (one inline, or one read at an
    /// override, is copied).
    fn to_entries(&self) -> Vec<Entry> {
        match self {
            PendingMap::One(p) => vec![(p.id, triomphe::Arc::new(p.clone()))],
            PendingMap::Many { entries, at } => entries
                .iter()
                .enumerate()
                .map(|(i, (id, p))| match at.get(i).copied().unwrap_or(0) {
                    0 => (*id, triomphe::Arc::clone(p)),
                    v => (
                        *id,
                        triomphe::Arc::new(Pending { rec: p, at: v }.to_record()),
                    ),
                })
                .collect(),
        }
    }
    /// The position of checkpoint `id`, or where it would go.
    #[inline]
    pub(crate) fn find(&self, id: &CheckpointId) -> Result<usize, usize> {
        match self {
            PendingMap::One(p) => match p.id.cmp(id) {
                std::cmp::Ordering::Equal => Ok(0),
                std::cmp::Ordering::Less => Err(1),
                std::cmp::Ordering::Greater => Err(0),
            },
            PendingMap::Many { entries, .. } => entries.binary_search_by(|(k, _)| k.cmp(id)),
        }
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            PendingMap::One(_) => 1,
            PendingMap::Many { entries, .. } => entries.len(),
        }
    }
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline]
    pub(crate) fn contains_key(&self, id: &CheckpointId) -> bool {
        self.find(id).is_ok()
    }
    #[inline]
    pub(crate) fn get(&self, id: &CheckpointId) -> Option<Pending<'_>> {
        let i = self.find(id).ok()?;
        self.at(i)
    }
    #[inline]
    pub(crate) fn get_mut(&mut self, id: &CheckpointId) -> Option<&mut PendingRecord> {
        let i = self.find(id).ok()?;
        self.at_mut(i)
    }
    /// The first checkpoint (in id order) that satisfies `pred`, for
    /// writing: one pass, no second lookup by id.
    #[inline]
    pub(crate) fn find_mut(
        &mut self,
        pred: impl Fn(Pending<'_>) -> bool,
    ) -> Option<&mut PendingRecord> {
        let i = self.values().position(pred)?;
        self.at_mut(i)
    }
    /// The checkpoint at position `i`, as this state reads it.
    #[inline]
    pub(crate) fn at(&self, i: usize) -> Option<Pending<'_>> {
        match self {
            PendingMap::One(p) => (i == 0).then_some(Pending::of(p)),
            PendingMap::Many { entries, at } => entries.get(i).map(|(_, p)| Pending {
                rec: p,
                at: at.get(i).copied().unwrap_or(0),
            }),
        }
    }
    /// The checkpoint at position `i`, for writing (a shared slice is
    /// copied first, then the checkpoint if it is shared; its override, if
    /// any, is settled into it).
    #[inline]
    fn at_mut(&mut self, i: usize) -> Option<&mut PendingRecord> {
        match self {
            PendingMap::One(p) => (i == 0).then_some(p),
            PendingMap::Many { entries, at } => {
                let v = at.get_mut(i).map_or(0, std::mem::take);
                let p = many_at_mut(entries, i)?;
                p.settle(v);
                Some(p)
            }
        }
    }
    /// Acknowledges slot `slot` of the checkpoint at position `i` with
    /// `handle` if the slot is `Waiting` there: `Ok` with the acks still
    /// missing after it, or `Err` with what the slot holds instead (`None`:
    /// no such checkpoint or slot), nothing written. One read of the slot.
    /// A checkpoint of a shared map whose table is a log, among the first
    /// [`OVERRIDES`], is acknowledged through this state's override when
    /// its log allows (see the type's docs); otherwise the checkpoint is
    /// written as by `get_mut`.
    #[inline(always)]
    pub(crate) fn ack(
        &mut self,
        i: usize,
        slot: usize,
        handle: Option<StateHandle>,
    ) -> Result<u32, Option<AckSlot>> {
        let p = match self {
            PendingMap::One(p) if i == 0 => p,
            PendingMap::One(_) => return Err(None),
            PendingMap::Many { entries, at } => {
                let v = at.get_mut(i);
                if let Some(rec) = triomphe::Arc::get_mut(entries)
                    .and_then(|e| e.get_mut(i))
                    .and_then(|(_, rec)| triomphe::Arc::get_mut(rec))
                {
                    // Unshared: in place (settling an override a shared
                    // past left).
                    rec.settle(v.map_or(0, std::mem::take));
                    rec
                } else {
                    let Some((_, rec)) = entries.get(i) else {
                        return Err(None);
                    };
                    // Shared: through the override when the table is a
                    // log and the checkpoint has one; otherwise (a leaf,
                    // past the overrides, not the log's tip) copied as by
                    // `get_mut`.
                    if let (Some(v), Some(own)) = (v, rec.acks.log_version()) {
                        let from = if *v == 0 { own } else { *v };
                        let read = rec.acks.at(from).get(slot);
                        if read != Some(AckSlot::Waiting) {
                            return Err(read);
                        }
                        if let Some(next) = rec.acks.ack_at(from, slot, handle) {
                            *v = next;
                            return Ok(rec.remaining_at(next));
                        }
                    }
                    self.at_mut(i).ok_or(None)?
                }
            }
        };
        p.acks.ack(slot, handle)?;
        p.remaining = p.remaining.saturating_sub(1);
        Ok(p.remaining)
    }
    /// Inserts `p` under its own id, or replaces the checkpoint of that id;
    /// returns the replaced one. (Keyed by `p.id` alone: a key apart from
    /// the checkpoint could disagree with it.)
    pub(crate) fn insert(&mut self, p: PendingRecord) -> Option<PendingRecord> {
        let id = p.id;
        if self.is_empty() {
            *self = PendingMap::One(p);
            return None;
        }
        let mut v = self.to_entries();
        let p = triomphe::Arc::new(p);
        let old = match self.find(&id) {
            Ok(i) => v.get_mut(i).map(|(_, old)| std::mem::replace(old, p)),
            Err(i) => {
                v.insert(i.min(v.len()), (id, p));
                None
            }
        };
        *self = PendingMap::from_sorted(v);
        old.map(triomphe::Arc::unwrap_or_clone)
    }
    pub(crate) fn remove(&mut self, id: &CheckpointId) -> Option<PendingRecord> {
        if let PendingMap::One(p) = self {
            if p.id != *id {
                return None;
            }
            // The one checkpoint moves out: no copy.
            return match std::mem::take(self) {
                PendingMap::One(p) => Some(p),
                many @ PendingMap::Many { .. } => {
                    *self = many;
                    None
                }
            };
        }
        let i = self.find(id).ok()?;
        let mut v = self.to_entries();
        let removed = (i < v.len()).then(|| v.remove(i).1);
        *self = PendingMap::from_sorted(v);
        removed.map(triomphe::Arc::unwrap_or_clone)
    }
    #[inline]
    pub(crate) fn iter(&self) -> PendingIter<'_> {
        PendingIter {
            map: self,
            front: 0,
            back: self.len(),
        }
    }
    pub(crate) fn keys(&self) -> impl DoubleEndedIterator<Item = CheckpointId> + '_ {
        self.iter().map(|(k, _)| k)
    }
    pub(crate) fn values(&self) -> impl DoubleEndedIterator<Item = Pending<'_>> + '_ {
        self.iter().map(|(_, v)| v)
    }
    /// Whether both are one shared slice read at the same versions (equal
    /// without reading the checkpoints).
    pub(crate) fn same(&self, other: &PendingMap) -> bool {
        match (self, other) {
            (PendingMap::Many { entries: a, at: x }, PendingMap::Many { entries: b, at: y }) => {
                x == y && triomphe::Arc::ptr_eq(a, b)
            }
            (PendingMap::One(_), PendingMap::One(_) | PendingMap::Many { .. })
            | (PendingMap::Many { .. }, PendingMap::One(_)) => false,
        }
    }
}

/// The checkpoint at position `i` of a [`PendingMap::Many`] slice, for
/// writing: a shared slice is copied first, then the checkpoint if it is
/// shared. The checks inline into the in-place ack, which copies neither;
/// the copies are out of line.
#[inline]
fn many_at_mut(many: &mut triomphe::Arc<[Entry]>, i: usize) -> Option<&mut PendingRecord> {
    if !many.is_unique() {
        unshare(many, i);
    }
    let (_, p) = triomphe::Arc::get_mut(many)?.get_mut(i)?;
    if !p.is_unique() {
        unshare_one(p);
    }
    triomphe::Arc::get_mut(p)
}

/// Copies a shared slice of pending checkpoints for a write to position
/// `i`: the checkpoint there is copied, every other one shared (one pass:
/// no count taken for the copied one only to be given back).
#[inline(never)]
fn unshare(many: &mut triomphe::Arc<[Entry]>, i: usize) {
    *many = many
        .iter()
        .enumerate()
        .map(|(j, (id, p))| {
            let p = if j == i {
                triomphe::Arc::new(PendingRecord::clone(p))
            } else {
                triomphe::Arc::clone(p)
            };
            (*id, p)
        })
        .collect();
}

/// Copies a shared checkpoint of a [`PendingMap::Many`] slice.
#[inline(never)]
fn unshare_one(p: &mut triomphe::Arc<PendingRecord>) {
    *p = triomphe::Arc::new(PendingRecord::clone(p));
}

impl<'a> IntoIterator for &'a PendingMap {
    type Item = (CheckpointId, Pending<'a>);
    type IntoIter = PendingIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for PendingMap {
    fn eq(&self, other: &Self) -> bool {
        if self.same(other) {
            return true;
        }
        match (self, other) {
            (PendingMap::Many { entries: a, at: x }, PendingMap::Many { entries: b, at: y }) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .enumerate()
                        .all(|(i, ((ka, pa), (kb, pb)))| {
                            ka == kb
                                && ((triomphe::Arc::ptr_eq(pa, pb) && x.get(i) == y.get(i))
                                    || self.at(i) == other.at(i))
                        })
            }
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }
}

impl Eq for PendingMap {}

impl std::fmt::Debug for PendingMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A trigger request waiting in the queue or allocating its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub(crate) id: RequestId,
    pub(crate) kind: TriggerKind,
    pub(crate) requested_at: Millis,
    /// Legacy only (`HookExpiryWedgesTrigger`): the request stays in flight
    /// until this checkpoint's master hooks answer. Always `None` when fixed.
    pub(crate) hooks_for: Option<CheckpointId>,
}

impl Request {
    /// The request id.
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// What was asked for.
    pub fn kind(&self) -> &TriggerKind {
        &self.kind
    }
}

/// The tolerable-failure counter (Flink's `CheckpointFailureManager`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FailureCounter {
    /// Consecutive counted failures. Each checkpoint id is counted at most
    /// once without a set of ids: only `abort` counts an id, and it removes
    /// the checkpoint from the pending map, so no id can be aborted twice.
    pub(crate) count: u64,
    /// [`JobCommand::Fail`](super::JobCommand::Fail) was emitted; sticky
    /// until a success resets the counter.
    pub(crate) job_failed: bool,
}

impl Hash for FailureCounter {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let FailureCounter { count, job_failed } = self;
        count.hash(h);
        job_failed.hash(h);
    }
}

/// The whole coordinator. Cheap to clone (persistent collections).
///
/// 128 bytes on a 64-bit target ([`STATE_BYTES_MAX`]): the fields an ack,
/// a trigger or a completion write are here; every other field is behind
/// the one `cold` pointer, and the fields written only together with one of
/// those (the last id, the next request's id, the latest completion, the
/// failure counters) are there too. An embedder or a model checker that
/// keeps every state writes a whole state per event: at 248 bytes (before
/// 2026-12-07) that was four cache lines per kept ack, at 128 two. And 128
/// bytes is as much as the compiler moves inline for the baseline x86-64
/// target (eight 16-byte moves): at 152 every move of a state (out of
/// `reduce`, into the caller's list of kept states) was a call to
/// `memcpy`, four per kept ack in the benchmark, and the kept ack at
/// 10 000 tasks took 72-83 ns against 54-56 at 128, with no call left
/// (`benches/ACK-2026-12-07d.md`).
#[derive(Debug)]
pub struct CoordinatorState {
    pub(crate) now: Millis,
    pub(crate) shutdown: bool,
    pub(crate) periodic: bool,
    /// Whether a checkpoint is finalizing or storing; it is
    /// `completing_id` then (0 otherwise, so that equal states are equal
    /// bytes). A flag beside the other two rather than an
    /// `Option<CheckpointId>`, which takes 16 bytes: any id, 0 included,
    /// can be pending, so the option has no spare value to use. Read and
    /// written through [`Self::completing`] and `set_completing`.
    pub(crate) is_completing: bool,
    pub(crate) completing_id: CheckpointId,
    /// The configuration, timers, tasks, requests, retained checkpoints,
    /// recent ids, the in-doubt checkpoint and the fields written only with
    /// one of them ([`Cold`]).
    pub(crate) cold: Shared<Cold>,
    pub(crate) pending: PendingMap,
}

/// The most bytes a [`CoordinatorState`] takes on a 64-bit target (a test
/// holds it there: a field added to the hot part costs every kept state,
/// and one past 128 bytes makes every move of a state a `memcpy` call).
pub const STATE_BYTES_MAX: usize = 128;

impl Clone for CoordinatorState {
    /// Field by field, inlined into `reduce` (the derived clone, with the
    /// pending map's two cases, was a call of its own: 71 instructions per
    /// kept ack at 10 000 x 4, `benches/ACK-2026-12-04.md`).
    #[inline(always)]
    fn clone(&self) -> Self {
        // Destructured so that a new field cannot silently drop out.
        let CoordinatorState {
            now,
            shutdown,
            periodic,
            is_completing,
            completing_id,
            cold,
            pending,
        } = self;
        CoordinatorState {
            now: *now,
            shutdown: *shutdown,
            periodic: *periodic,
            is_completing: *is_completing,
            completing_id: *completing_id,
            cold: cold.clone(),
            pending: pending.clone(),
        }
    }
}

/// A part of the coordinator's state behind one `Arc` (the cold part),
/// copied on the first write to
/// a shared one (`DerefMut` is `make_mut`; reads go through `Deref`). Equal
/// when it is the same allocation or equal inside.
#[derive(Clone, Default)]
pub(crate) struct Shared<T>(triomphe::Arc<T>);

impl<T> Shared<T> {
    pub(crate) fn new(inner: T) -> Shared<T> {
        Shared(triomphe::Arc::new(inner))
    }

    /// Whether both are the same allocation.
    pub(crate) fn ptr_eq(&self, other: &Shared<T>) -> bool {
        triomphe::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> std::ops::DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        triomphe::Arc::make_mut(&mut self.0)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || *self.0 == *other.0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The status of every task, indexed by task id: one flat slice behind one
/// `triomphe` pointer. Reading a task is one index (the reducer reads one
/// per task on every trigger and every completion notification: at 100 000
/// tasks, `imbl::Vector`'s tree lookups were a quarter of a whole
/// checkpoint cycle, measured with `perf` on `profile cycle 100000`,
/// `benches/HISTORY.md`, 2026-12-02). Cloning shares the slice; the first
/// write to a shared one copies it whole (8 bytes per task: 800 KB at
/// 100 000 tasks), which only a task failure, a new attempt or the
/// symmetry permutation do, never an ack or a completion.
#[derive(Clone)]
pub(crate) struct TaskTable(triomphe::Arc<[TaskStatus]>);

impl TaskTable {
    /// Number of task slots.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    /// Task `i`'s status, or `None` past the end.
    pub(crate) fn get(&self, i: usize) -> Option<&TaskStatus> {
        self.0.get(i)
    }
    /// Overwrites task `i`'s status (nothing past the end), copying the
    /// slice first if another state shares it.
    pub(crate) fn set(&mut self, i: usize, status: TaskStatus) {
        if i >= self.0.len() {
            return;
        }
        if !self.0.is_unique() {
            self.0 = self.0.iter().copied().collect();
        }
        if let Some(cell) = triomphe::Arc::get_mut(&mut self.0).and_then(|s| s.get_mut(i)) {
            *cell = status;
        }
    }
    /// The statuses in task order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, TaskStatus> {
        self.0.iter()
    }
}

impl FromIterator<TaskStatus> for TaskTable {
    fn from_iter<I: IntoIterator<Item = TaskStatus>>(iter: I) -> Self {
        TaskTable(iter.into_iter().collect())
    }
}

impl PartialEq for TaskTable {
    fn eq(&self, other: &Self) -> bool {
        triomphe::Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for TaskTable {}

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// The armed timers and their deadlines, in [`Timer`] order: a small
/// sorted `Vec` behind one `triomphe` pointer (there are the periodic timer
/// and one timeout per pending checkpoint). Cloning shares it; the first
/// write to a shared one copies it (one allocation), an unshared one is
/// written in place. It replaced an `imbl::OrdMap`, whose `remove` was 151
/// instructions of the 1 201 of an in-place ack that starts a completion
/// (callgrind, `profile in_place 1 1`, 2026-12-04,
/// `benches/ACK-2026-12-04.md`); the subset of its interface the
/// coordinator uses.
#[derive(Clone, Default)]
pub(crate) struct TimerTable(triomphe::Arc<Vec<(Timer, Millis)>>);

impl TimerTable {
    fn find(&self, timer: &Timer) -> Result<usize, usize> {
        self.0.binary_search_by(|(t, _)| t.cmp(timer))
    }
    /// Number of armed timers.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether `timer` is armed.
    pub(crate) fn contains_key(&self, timer: &Timer) -> bool {
        self.find(timer).is_ok()
    }
    /// Where `timer` sits, if armed: for [`Self::remove_at`], so that a
    /// caller that must not write the table when the timer is not armed
    /// (a write copies a shared table, and the cold part holding it)
    /// searches once, not once to look and again to remove.
    pub(crate) fn position(&self, timer: &Timer) -> Option<usize> {
        self.find(timer).ok()
    }
    /// Disarms the timer at `i` ([`Self::position`]); nothing past the end.
    pub(crate) fn remove_at(&mut self, i: usize) {
        if i < self.0.len() {
            triomphe::Arc::make_mut(&mut self.0).remove(i);
        }
    }
    /// The deadline of `timer`, if armed.
    pub(crate) fn get(&self, timer: &Timer) -> Option<&Millis> {
        let i = self.find(timer).ok()?;
        self.0.get(i).map(|(_, at)| at)
    }
    /// Arms `timer` at `at`; returns the deadline it replaced.
    pub(crate) fn insert(&mut self, timer: Timer, at: Millis) -> Option<Millis> {
        match self.find(&timer) {
            Ok(i) => triomphe::Arc::make_mut(&mut self.0)
                .get_mut(i)
                .map(|(_, old)| std::mem::replace(old, at)),
            Err(i) => {
                let v = triomphe::Arc::make_mut(&mut self.0);
                v.insert(i.min(v.len()), (timer, at));
                None
            }
        }
    }
    /// Disarms `timer`; returns its deadline if it was armed (nothing is
    /// written, or copied, when it was not).
    pub(crate) fn remove(&mut self, timer: &Timer) -> Option<Millis> {
        let i = self.find(timer).ok()?;
        let v = triomphe::Arc::make_mut(&mut self.0);
        (i < v.len()).then(|| v.remove(i).1)
    }
    /// The timers in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Timer> + '_ {
        self.0.iter().map(|(t, _)| t)
    }
    /// The timers and deadlines in timer order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Timer, &Millis)> + '_ {
        self.0.iter().map(|(t, at)| (t, at))
    }
    /// Whether both are the same allocation.
    pub(crate) fn ptr_eq(&self, other: &TimerTable) -> bool {
        triomphe::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl FromIterator<(Timer, Millis)> for TimerTable {
    /// Arms each in turn (a timer given twice keeps its last deadline).
    fn from_iter<I: IntoIterator<Item = (Timer, Millis)>>(iter: I) -> Self {
        let mut table = TimerTable::default();
        for (timer, at) in iter {
            table.insert(timer, at);
        }
        table
    }
}

impl PartialEq for TimerTable {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.0 == other.0
    }
}

impl Eq for TimerTable {}

impl std::fmt::Debug for TimerTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A short list (the trigger queue, the retained checkpoints, the recent
/// ids) behind one `triomphe` pointer: a plain `Vec`, shared by the states
/// that did not write it. Cloning shares it; the first write to a shared
/// one copies it (one allocation: the lists are bounded by the queue
/// bound, the retention bound plus kept savepoints, and 16 ids), an
/// unshared one is written in place. It replaced `imbl::Vector`, whose
/// iterator builds a tree cursor (a `Focus`) per walk and reads each
/// element through it, while the invariant checks walk these lists
/// several times per event (the fuzz targets' rates before and after:
/// fuzz/FIGURES-2026-12-04b.md). The subset of `imbl`'s interface the
/// coordinator uses; equal when the same allocation or equal element by
/// element.
pub(crate) struct SharedVec<T>(triomphe::Arc<Vec<T>>);

impl<T> Clone for SharedVec<T> {
    #[inline]
    fn clone(&self) -> Self {
        SharedVec(self.0.clone())
    }
}

impl<T> Default for SharedVec<T> {
    fn default() -> Self {
        SharedVec(triomphe::Arc::new(Vec::new()))
    }
}

impl<T> SharedVec<T> {
    #[inline]
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(crate) fn last(&self) -> Option<&T> {
        self.0.last()
    }
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.0.get(i)
    }
    /// Whether both are the same allocation.
    #[inline]
    pub(crate) fn ptr_eq(&self, other: &Self) -> bool {
        triomphe::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: PartialEq> SharedVec<T> {
    pub(crate) fn contains(&self, x: &T) -> bool {
        self.0.contains(x)
    }
}

impl<T: Clone> SharedVec<T> {
    /// The list for writing (copied first if shared).
    fn vec_mut(&mut self) -> &mut Vec<T> {
        triomphe::Arc::make_mut(&mut self.0)
    }
    pub(crate) fn push_back(&mut self, x: T) {
        self.vec_mut().push(x);
    }
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        Some(self.vec_mut().remove(0))
    }
    /// Removes the element at `i` (`None` past the end).
    pub(crate) fn remove(&mut self, i: usize) -> Option<T> {
        if i >= self.len() {
            return None;
        }
        Some(self.vec_mut().remove(i))
    }
    /// Inserts `x` at `i` (at the end when `i` is past it).
    pub(crate) fn insert(&mut self, i: usize, x: T) {
        let v = self.vec_mut();
        v.insert(i.min(v.len()), x);
    }
}

impl<T: Clone> IntoIterator for SharedVec<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    /// The elements, moved out when the list is not shared.
    fn into_iter(self) -> Self::IntoIter {
        triomphe::Arc::try_unwrap(self.0)
            .unwrap_or_else(|shared| (*shared).clone())
            .into_iter()
    }
}

impl<'a, T> IntoIterator for &'a SharedVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T> FromIterator<T> for SharedVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        SharedVec(triomphe::Arc::new(iter.into_iter().collect()))
    }
}

impl<T: PartialEq> PartialEq for SharedVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.0[..] == other.0[..]
    }
}

impl<T: Eq> Eq for SharedVec<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for SharedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// The parts of the coordinator's state that change at most a few times
/// per checkpoint (never on an ack): the configuration, the timers, the
/// tasks, requests, the retained completed checkpoints, the recent ids,
/// the in-doubt checkpoint, and the fields only ever written in a step
/// that writes one of those already (the last id, the latest completion
/// and its time, the failure counters: moving them here copies nothing
/// more, and took 72 bytes off every state, 2026-12-07), and the next
/// request's id (written with the queue or the request in flight, except
/// for a request refused at once: one copy of this part per refused
/// request, none per ack). Behind one
/// pointer ([`Shared`]): the pure reducer clones the whole state for every
/// event (every ack), and these fields are most of its bytes and four of
/// its five reference counts; an ack copies 8 of those bytes and bumps one
/// count, and a step that writes one of them copies them once.
#[derive(Clone, Debug)]
pub(crate) struct Cold {
    pub(crate) config: Arc<CoordinatorConfig>,
    /// The next request's id (written with `in_flight` or `queue`, which
    /// every request enters unless refused at once).
    pub(crate) next_request: u64,
    pub(crate) timers: TimerTable,
    /// Indexed by task id ([`TaskTable`]: one flat slice, copied whole on
    /// the first write to a shared one).
    pub(crate) tasks: TaskTable,
    pub(crate) in_flight: Option<Request>,
    /// Sorted by priority (highest first), FIFO within a priority.
    pub(crate) queue: SharedVec<Request>,
    pub(crate) completed: SharedVec<Completed>,
    pub(crate) recent: SharedVec<CheckpointId>,
    /// The checkpoint that was finalizing or storing when the coordinator
    /// shut down: its state belongs to the outcome of that I/O, which the
    /// coordinator will never hear. Still owned (never discarded here); the
    /// host resolves it against its store.
    pub(crate) in_doubt: Option<Completed>,
    /// A `Restore { Latest }` waits for the outstanding completion.
    pub(crate) restore_deferred: bool,
    /// This coordinator's fencing token (set by `Recover`).
    pub(crate) generation: Generation,
    /// A stop-with-savepoint, requested or done.
    pub(crate) stop: Option<StopPhase>,
    /// Every task finished: the final checkpoint is pending, or the job
    /// finished.
    pub(crate) finish: Option<super::FinishPhase>,
    /// The last checkpoint id handed out (written with `in_flight`, or by a
    /// restore or recovery).
    pub(crate) last_id: Option<CheckpointId>,
    /// When the last checkpoint completed (written with `completed`).
    pub(crate) last_completion: Option<Millis>,
    /// The latest completed checkpoint (written with `completed`, or by a
    /// restore or recovery).
    pub(crate) latest_completed: Option<CheckpointId>,
    /// Id allocations that failed in a row (written with `in_flight`,
    /// reset only when not already 0).
    pub(crate) consecutive_trigger_failures: u64,
    /// The tolerable-failure counter (written with `recent` on an abort,
    /// with `in_flight` on a failed allocation, with `completed` on a
    /// success).
    pub(crate) failures: FailureCounter,
}

impl PartialEq for Cold {
    fn eq(&self, other: &Self) -> bool {
        // Destructured so that a new field cannot silently drop out.
        let Cold {
            config,
            next_request,
            timers,
            tasks,
            in_flight,
            queue,
            completed,
            recent,
            in_doubt,
            restore_deferred,
            generation,
            stop,
            finish,
            last_id,
            last_completion,
            latest_completed,
            consecutive_trigger_failures,
            failures,
        } = self;
        *last_id == other.last_id
            && *next_request == other.next_request
            && *last_completion == other.last_completion
            && *latest_completed == other.latest_completed
            && *consecutive_trigger_failures == other.consecutive_trigger_failures
            && *failures == other.failures
            && *restore_deferred == other.restore_deferred
            && *generation == other.generation
            && *stop == other.stop
            && *finish == other.finish
            && (Arc::ptr_eq(config, &other.config) || config == &other.config)
            && (timers.ptr_eq(&other.timers) || *timers == other.timers)
            && *tasks == other.tasks
            && *in_flight == other.in_flight
            && *in_doubt == other.in_doubt
            && *queue == other.queue
            && *completed == other.completed
            && *recent == other.recent
    }
}

impl Eq for Cold {}

fn hash_seq<H: Hasher, T: Hash, I: Iterator<Item = T>>(
    h: &mut H,
    len: usize,
    items: impl FnOnce() -> I,
) {
    len.hash(h);
    // An empty collection is not iterated (the length says it all): the
    // bytes written are the same.
    if len > 0 {
        for i in items() {
            i.hash(h);
        }
    }
}

/// Equal when every field is equal. Fields that share their storage (a
/// state and its clone, or two successors of one state that left the field
/// alone) compare in O(1) without walking the collection, so the checked
/// step's determinism, pure-equals-in-place and refused-unchanged checks cost
/// O(what changed) rather than O(state).
impl PartialEq for CoordinatorState {
    fn eq(&self, other: &Self) -> bool {
        self.now == other.now && self.eq_but_now(other)
    }
}

impl CoordinatorState {
    /// Equal in every field but the clock (`now`): what a refused event
    /// must leave unchanged, compared without copying the state to set its
    /// clock.
    pub(crate) fn eq_but_now(&self, other: &Self) -> bool {
        // Destructured so that a new field cannot silently drop out.
        let CoordinatorState {
            now: _,
            shutdown,
            periodic,
            is_completing,
            completing_id,
            cold,
            pending,
        } = self;
        *shutdown == other.shutdown
            && *periodic == other.periodic
            && *is_completing == other.is_completing
            && *completing_id == other.completing_id
            && *cold == other.cold
            && *pending == other.pending
    }
}

impl Eq for CoordinatorState {}

impl Hash for CoordinatorState {
    /// Hashes every field but the (constant) configuration, writing each
    /// collection's length first: without a length prefix (`imbl`'s own
    /// `Hash`, which these collections once used, has none) a model checker
    /// that stores 64-bit fingerprints would silently merge states like
    /// `{1:{}, 2:{}}` and `{1:{2}}`.
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Destructured so that a new field cannot silently drop out of the
        // hash (stateright keeps only 64-bit fingerprints of states).
        let CoordinatorState {
            now,
            shutdown,
            periodic,
            is_completing: _,
            completing_id: _,
            cold,
            pending,
        } = self;
        // The completing checkpoint is hashed as the `Option` it was a
        // field of (the same bytes: fingerprints did not move).
        let completing = self.completing();
        let Cold {
            config: _,
            next_request,
            timers,
            tasks,
            in_flight,
            queue,
            completed,
            recent,
            in_doubt,
            restore_deferred,
            generation,
            stop,
            finish,
            last_id,
            last_completion,
            latest_completed,
            consecutive_trigger_failures,
            failures,
        } = &**cold;
        now.hash(h);
        shutdown.hash(h);
        periodic.hash(h);
        hash_seq(h, timers.len(), || timers.iter());
        hash_seq(h, tasks.len(), || tasks.iter());
        next_request.hash(h);
        in_flight.hash(h);
        hash_seq(h, queue.len(), || queue.iter());
        hash_seq(h, pending.len(), || pending.iter());
        completing.hash(h);
        hash_seq(h, completed.len(), || completed.iter());
        hash_seq(h, recent.len(), || recent.iter());
        last_id.hash(h);
        last_completion.hash(h);
        latest_completed.hash(h);
        consecutive_trigger_failures.hash(h);
        failures.hash(h);
        in_doubt.hash(h);
        restore_deferred.hash(h);
        generation.hash(h);
        stop.hash(h);
        finish.hash(h);
    }
}

impl CoordinatorState {
    /// A fresh coordinator: scheduler off, every configured task running at
    /// attempt 0, nothing pending.
    pub fn new(config: CoordinatorConfig) -> Self {
        let tasks = (0..config.task_slots())
            .map(|_| TaskStatus {
                attempt: AttemptNo(0),
                running: true,
                finished: false,
            })
            .collect();
        CoordinatorState {
            now: Millis(0),
            shutdown: false,
            periodic: false,
            is_completing: false,
            completing_id: CheckpointId(0),
            cold: Shared::new(Cold {
                config: Arc::new(config),
                next_request: 0,
                timers: TimerTable::default(),
                tasks,
                in_flight: None,
                queue: SharedVec::default(),
                completed: SharedVec::default(),
                recent: SharedVec::default(),
                in_doubt: None,
                restore_deferred: false,
                generation: Generation(0),
                stop: None,
                finish: None,
                last_id: None,
                last_completion: None,
                latest_completed: None,
                consecutive_trigger_failures: 0,
                failures: FailureCounter::default(),
            }),
            pending: PendingMap::default(),
        }
    }

    /// Validates `settings` and builds a fresh coordinator.
    pub fn from_settings(settings: CoordinatorSettings) -> Result<Self, ConfigError> {
        CoordinatorConfig::new(settings).map(Self::new)
    }

    /// The configuration.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.cold.config
    }
    /// The last time seen.
    pub fn now(&self) -> Millis {
        self.now
    }
    /// Whether the coordinator is shut down (sticky).
    pub fn is_shutdown(&self) -> bool {
        self.shutdown
    }
    /// Whether periodic scheduling is on.
    pub fn is_periodic_scheduling(&self) -> bool {
        self.periodic
    }
    /// Armed timers and their deadlines.
    pub fn timers(&self) -> impl Iterator<Item = (&Timer, &Millis)> + '_ {
        self.cold.timers.iter()
    }
    /// The deadline of an armed timer.
    pub fn timer_deadline(&self, timer: Timer) -> Option<Millis> {
        self.cold.timers.get(&timer).copied()
    }
    /// The armed timer due first and its deadline (ties in [`Timer`]
    /// order, the order a host fires timers due at the same instant): what a
    /// host sleeps until. `None` when nothing is armed.
    pub fn next_deadline(&self) -> Option<(Timer, Millis)> {
        self.cold
            .timers
            .iter()
            .map(|(t, at)| (*t, *at))
            .min_by_key(|(t, at)| (*at, *t))
    }
    /// Pending checkpoints in id order.
    pub fn pending(&self) -> impl Iterator<Item = Pending<'_>> + '_ {
        self.pending.values()
    }
    /// One pending checkpoint.
    pub fn pending_checkpoint(&self, id: CheckpointId) -> Option<Pending<'_>> {
        self.pending.get(&id)
    }
    /// Number of pending checkpoints.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }
    /// Retained completed checkpoints and kept savepoints, in the order
    /// they completed (oldest first).
    pub fn completed(&self) -> impl Iterator<Item = &Completed> + '_ {
        self.cold.completed.iter()
    }
    /// The latest completed checkpoint retained: the highest id among the
    /// retained checkpoints and kept savepoints ([`crate::commit::latest`]),
    /// what `Restore { Latest }` restores.
    pub fn latest_retained(&self) -> Option<&Completed> {
        self.cold.completed.iter().max_by_key(|c| c.id)
    }
    /// The stop-with-savepoint, if one was asked for.
    pub fn stop_phase(&self) -> Option<StopPhase> {
        self.cold.stop
    }
    /// The final checkpoint or the job's finish, once every task finished.
    pub fn finish_phase(&self) -> Option<super::FinishPhase> {
        self.cold.finish
    }
    /// Whether a `Restore { Latest }` waits for the outstanding completion.
    pub fn is_restore_deferred(&self) -> bool {
        self.cold.restore_deferred
    }
    /// This coordinator's generation (fencing token), from `Recover`; 0
    /// for a coordinator that recovered nothing. A host writes to the store,
    /// the id counter and the tasks on its behalf.
    pub fn generation(&self) -> Generation {
        self.cold.generation
    }
    /// The latest completed checkpoint id (notify-aborted carries it).
    pub fn latest_completed(&self) -> Option<CheckpointId> {
        self.cold.latest_completed
    }
    /// The request allocating its id, if any.
    pub fn in_flight(&self) -> Option<&Request> {
        self.cold.in_flight.as_ref()
    }
    /// Queued requests, highest priority first.
    pub fn queued(&self) -> impl Iterator<Item = &Request> + '_ {
        self.cold.queue.iter()
    }
    /// The seed's `triggerRequestQueued` flag: a non-forced request waits.
    pub fn is_trigger_request_queued(&self) -> bool {
        self.cold.queue.iter().any(|r| !r.kind.is_forced())
    }
    /// Ids of the most recently pending checkpoints (at most 16).
    pub fn recent_ids(&self) -> impl Iterator<Item = &CheckpointId> + '_ {
        self.cold.recent.iter()
    }
    /// Highest checkpoint id seen.
    pub fn last_id(&self) -> Option<CheckpointId> {
        self.cold.last_id
    }
    /// Consecutive unsuccessful triggers (the seed's counter).
    pub fn consecutive_trigger_failures(&self) -> u64 {
        self.cold.consecutive_trigger_failures
    }
    /// Consecutive counted checkpoint failures (tolerable-failure counter).
    pub fn counted_failures(&self) -> u64 {
        self.cold.failures.count
    }
    /// Whether [`JobCommand::Fail`](super::JobCommand::Fail) was emitted and
    /// not yet reset by a success.
    pub fn job_failed(&self) -> bool {
        self.cold.failures.job_failed
    }
    /// A task's status.
    pub fn task_status(&self, task: crate::types::TaskId) -> Option<TaskStatus> {
        self.cold.tasks.get(task.0 as usize).copied()
    }
    /// The checkpoint in finalize / store, if any.
    #[inline]
    pub fn completing(&self) -> Option<CheckpointId> {
        self.is_completing.then_some(self.completing_id)
    }
    /// Sets (or clears, with `None`) the checkpoint in finalize / store.
    #[inline]
    pub(crate) fn set_completing(&mut self, id: Option<CheckpointId>) {
        self.is_completing = id.is_some();
        self.completing_id = id.unwrap_or(CheckpointId(0));
    }
    /// The checkpoint whose finalize or store was outstanding when the
    /// coordinator shut down (see [`JobCommand::ResolveInDoubt`](super::JobCommand::ResolveInDoubt)).
    pub fn in_doubt(&self) -> Option<&Completed> {
        self.cold.in_doubt.as_ref()
    }
    /// Whether both retain the same completed checkpoints and savepoints
    /// by construction (one storage, or both none): a check can tell in
    /// O(1) that a step left the list alone. `false` says nothing.
    pub(crate) fn retains_same_as(&self, other: &Self) -> bool {
        let (a, b) = (&self.cold.completed, &other.cold.completed);
        self.cold.ptr_eq(&other.cold) || a.ptr_eq(b) || (a.is_empty() && b.is_empty())
    }
    /// Whether this state (after a step) holds every state handle `before`
    /// holds, shown in O(pending checkpoints) without listing them: the
    /// retained list and the in-doubt checkpoint are the same storage (or
    /// the in-doubt one keeps its handles), and each pending checkpoint of
    /// `before` that holds a handle is still pending here with an ack table
    /// that keeps them ([`AckTable::keeps_handles_of`]: an ack adds a
    /// handle, it takes none). `false` says nothing: the ledger then lists
    /// every handle.
    pub(crate) fn keeps_holdings_of(&self, before: &Self) -> bool {
        if !self.cold.ptr_eq(&before.cold) {
            if !self.retains_same_as(before) {
                return false;
            }
            if let Some(old) = &before.cold.in_doubt {
                let kept = self
                    .cold
                    .in_doubt
                    .as_ref()
                    .is_some_and(|new| new.handles.keeps_handles_of(&old.handles));
                if !kept {
                    return false;
                }
            }
        }
        if self.pending.same(&before.pending) {
            return true;
        }
        before.pending.values().all(|old| {
            old.table().holds_no_handle()
                || self
                    .pending
                    .get(&old.id())
                    .is_some_and(|new| new.table().keeps_handles_of(old.table()))
        })
    }
    /// Every state handle the coordinator currently owns (pending acks,
    /// retained completed checkpoints, and the in-doubt checkpoint), for
    /// ledger checks: each ack table appends its own to one list.
    pub fn owned_handles(&self) -> Vec<StateHandle> {
        let mut out = Vec::new();
        for p in self.pending.values() {
            p.table().extend_handles(&mut out);
        }
        for c in self.cold.completed.iter().chain(&self.cold.in_doubt) {
            c.handles.extend_handles(&mut out);
        }
        out
    }
    /// [`Self::owned_handles`] without collecting them (the reducer's
    /// discard guard walks them once per discard batch).
    pub(crate) fn held_handles(&self) -> impl Iterator<Item = StateHandle> + '_ {
        self.pending
            .values()
            .flat_map(Pending::handles)
            .chain(self.cold.completed.iter().flat_map(Completed::handles))
            .chain(self.cold.in_doubt.iter().flat_map(Completed::handles))
    }
}

#[cfg(test)]
mod planned_attempts_tests {
    use super::PlannedAttempts;
    use crate::types::AttemptNo;
    use std::hash::Hash;

    #[test]
    fn the_form_follows_the_list_and_equality_and_hash_are_the_lists() {
        let lists: [&[u32]; 5] = [&[], &[3], &[3, 3, 3], &[0, 1], &[1, 1, 0]];
        for l in lists {
            let list: Vec<AttemptNo> = l.iter().map(|a| AttemptNo(*a)).collect();
            let p = PlannedAttempts::from(list.clone());
            let same = !list.is_empty() && list.iter().all(|a| *a == list[0]);
            assert_eq!(matches!(p, PlannedAttempts::Same { .. }), same, "{l:?}");
            assert_eq!(p.len(), list.len());
            assert_eq!(p.iter().collect::<Vec<_>>(), list);
            for (slot, a) in list.iter().enumerate() {
                assert!(p.expects(slot, *a));
                assert!(!p.expects(slot, AttemptNo(a.0 + 1)));
            }
            assert!(!p.expects(list.len(), AttemptNo(3)));
            // Hashed as the list was (length, then the slice's own hash).
            let mut as_list = std::collections::hash_map::DefaultHasher::default();
            list.len().hash(&mut as_list);
            list[..].hash(&mut as_list);
            let mut as_planned = std::collections::hash_map::DefaultHasher::default();
            p.len().hash(&mut as_planned);
            p.hash(&mut as_planned);
            assert_eq!(
                std::hash::Hasher::finish(&as_list),
                std::hash::Hasher::finish(&as_planned),
                "{l:?}"
            );
            assert_eq!(p, PlannedAttempts::from(list.clone()));
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::{CoordinatorState, STATE_BYTES_MAX};

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_state_is_at_most_its_byte_budget() {
        assert!(
            std::mem::size_of::<CoordinatorState>() <= STATE_BYTES_MAX,
            "{} bytes",
            std::mem::size_of::<CoordinatorState>()
        );
    }
}
