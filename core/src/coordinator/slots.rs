//! The ack slots of a pending (or completed) checkpoint: a persistent,
//! fixed-size table of [`AckSlot`]s.
//!
//! Two representations, chosen from the slot count at creation (a table
//! never grows or shrinks):
//!
//! * **Up to [`LEAF`] slots: one leaf behind an `Arc`**, copied on the
//!   first write to a shared one (`Arc::make_mut`). A leaf stores its slots
//!   in 8 bytes each (the handle) plus two bit masks (acknowledged;
//!   acknowledged with a handle): 528 bytes. The model checker's jobs (a few
//!   tasks) live here: a kept state costs that one copy.
//! * **More slots: a stamped log shared by every version.** Per slot, a
//!   4-byte stamp (0: never written; otherwise the version that
//!   acknowledged it, and whether it came with a handle) and a bit (written
//!   by some version); per version, the 8-byte handle it wrote, in a
//!   journal each ack appends to (about 12 bytes a slot, 1.2 MB at 100 000
//!   slots; see `Log` for why three arrays). Each table value is a pointer
//!   to it plus its own version. A slot reads as acknowledged when its
//!   stamp is at most the reader's version, so an old version still reads
//!   every slot it read before. The newest version of a log (its *tip*,
//!   recorded in the log) acknowledges a slot by writing its stamp, bit and
//!   handle in place and becoming the next version: no copy and no
//!   allocation, whether or not
//!   older versions are kept. Any other write copies the table into a fresh
//!   log (O(slots)): a write by a version that is not the tip (a second
//!   successor of one state, as the model checker or
//!   [`crate::invariants::checked`]'s `Rigor::Full` make; a dropped
//!   successor's writes stay in the log, invisible to every version but
//!   its own), and any write that is not `Waiting` -> `Acked` (which the
//!   reducer never makes: only the symmetry permutation and tests do).
//!
//! A table can also be read at a version other than its own
//! ([`AckTable::at`]) and acknowledged as that version without being
//! written ([`AckTable::ack_at`]): the pending map keeps, in the state,
//! the version each of its shared checkpoints is read at, so that an ack
//! to one of several pending checkpoints writes neither the checkpoint nor
//! the map (`state.rs`, `PendingMap`). A log's versions form one line
//! (only the tip makes the next one), so a later version of the same log
//! reads every slot an earlier one read.
//!
//! Every slot of a log is written at most once: the tip at version `v`
//! reads a slot as `Waiting` only when nothing stamped it (every stamp in
//! the log is at most `v`), and it stamps `v + 1`. Versions sharing a log
//! may live on different threads; which one is the tip is decided by one
//! compare-and-swap on the log's tip (a plain check when the log is not
//! shared), the loser copies. Stamps and handles are atomics (stores and
//! loads, `Release`/`Acquire`): a reader of an old version may read a slot
//! while the tip stamps it, and reads either stamp as "not yet".
//!
//! The `Arc` is `triomphe`'s: no weak count, so the copy-on-write check
//! ("is this shared?") is a load rather than the compare-and-swap of
//! `std::sync::Arc::make_mut`.
//!
//! * `get` is one to three loads: a log's bit, then its stamp when the bit
//!   is set, then the journal when the stamp holds a handle.
//! * [`AckTable::slot_mut`] finds the slot without writing; its `set`
//!   writes as above.
//! * [`AckTable::filled`] with `Waiting` writes every slot once, so the
//!   pages are mapped at the trigger rather than during the acks.
//! * `iter` visits the slots in order: O(len), sequential memory.
//! * `Eq` and `Hash` are by content (the slot sequence); two tables at the
//!   same version of the same log compare equal without reading it.
//!
//! What each representation costs, measured (2026-12-03, instructions per
//! ack under callgrind, `profile VARIANT TASKS PENDING 1` from
//! `benches/src/bin/profile.rs`, bench profile; times in
//! `benches/README.md`):
//!
//! | ack | tasks x pending | radix tree (before) | stamped log |
//! |---|---|---:|---:|
//! | in place | 10 000 x 1 | 413 | 348 |
//! | in place | 100 000 x 1 | 440 | 347 |
//! | old state kept | 10 000 x 1 | 2 267 | 887 |
//! | old state kept | 10 000 x 4 | 2 322 | 1 202 |
//! | old state kept | 100 000 x 1 | 2 780 | 887 |
//! | old state kept | 100 000 x 4 | 2 834 | 1 202 |
//!
//! The tree (64-slot leaves under 4-way branches, path copying) made six
//! allocations per kept state at 10 000 tasks (the pending map's slice,
//! the checkpoint, three branches, the leaf: half the instructions were
//! `malloc`) and eight at 100 000; its in-place ack walked four to six
//! levels, and 100 000 tasks took 742 k first-level data-cache misses for
//! 100 000 acks where the log's 16-byte cells took 353 k. With the log the kept
//! ack's table costs nothing: what is left is the copy of the pending
//! map (`state.rs`: one checkpoint is held inline and cloned with the
//! state; more are one slice, shared, each read at this state's version)
//! and the reducer's own work, the same at every task count (2026-12-07,
//! a 128-byte state and the versions in the state: 544 instructions per
//! kept ack at 10 000 x 1 and 517 at 10 000 x 4, against 1 138 at x 4
//! when the ack copied the slice and the checkpoint,
//! `benches/ACK-2026-12-07d.md`). The Flink-like baseline (a hash map
//! from 128-bit ids) runs 723 instructions per ack; it is slower in time
//! at 100 000 tasks because its maps do not fit in the caches. A small
//! table (the model checker's) copies its 528-byte leaf per kept state, as
//! before.
//!
//! Since the evening of 2026-12-07 a log is a stamp and a bit per slot and
//! a journal of handles per version rather than a 16-byte cell per slot,
//! and its pages are written when it is made: the in-place ack at
//! 100 000 x 4 took 57.6-115.9 ns with the cells and 23.2-38.0 with the
//! three arrays, the kept ack at 100 000 x 4 97.2-112.7 against 45.8-72.0
//! (fastest repetitions, builds alternated), for 369 instructions in
//! place where the cells took 375 (`benches/ACK-2026-12-07e.md`).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use triomphe::Arc;

use serde::{Deserialize, Serialize};

use crate::types::{Handles, StateHandle};

/// One ack slot of a pending checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AckSlot {
    /// Not acknowledged yet.
    Waiting,
    /// Acknowledged, with the task's state if it had any.
    Acked(Option<StateHandle>),
}

/// Tables of at most this many slots are one leaf; larger ones a log.
pub const LEAF: usize = 64;
// A leaf's masks are one `u64` each.
const _: () = assert!(LEAF <= 64);

/// [`LEAF`] slots. Slot `k` is `Waiting` when bit `k` of `acked` is clear;
/// otherwise `Acked(Some(handles[k]))` when bit `k` of `held` is set and
/// `Acked(None)` when it is not. `handles[k]` is 0 whenever bit `k` of
/// `held` is clear, so equal slots are equal bytes (derived `Eq`).
/// `len` is the table's slot count (at most [`LEAF`]), held here rather
/// than beside the pointer so that a table is two words.
#[derive(Clone, PartialEq, Eq)]
struct Leaf {
    acked: u64,
    held: u64,
    len: u32,
    handles: [u64; LEAF],
}

impl Leaf {
    /// `len` slots (at most [`LEAF`]); every slot of the leaf is `slot`.
    fn filled(len: u32, slot: AckSlot) -> Leaf {
        let mut leaf = Leaf {
            acked: 0,
            held: 0,
            len,
            handles: [0; LEAF],
        };
        for k in 0..LEAF {
            leaf.set(k, slot);
        }
        leaf
    }

    /// The mask of the table's slots (slots past `len` are not the
    /// table's: a filled leaf sets all of them).
    fn live(&self) -> u64 {
        1u64.checked_shl(self.len).map_or(u64::MAX, |b| b - 1)
    }

    /// The handles its slots hold, in slot order, and how many.
    fn held_handles(&self) -> (usize, impl Iterator<Item = StateHandle> + '_) {
        let mut held = self.held & self.acked & self.live();
        let count = held.count_ones() as usize;
        let handles = std::iter::from_fn(move || {
            while held != 0 {
                let k = held.trailing_zeros() as usize;
                held &= held - 1;
                if let Some(h) = self.handles.get(k) {
                    return Some(StateHandle(*h));
                }
            }
            None
        });
        (count, handles)
    }

    /// Slot `k` (`k` below [`LEAF`]; above it, `Waiting`).
    fn get(&self, k: usize) -> AckSlot {
        let bit = 1u64
            .checked_shl(u32::try_from(k).unwrap_or(u32::MAX))
            .unwrap_or(0);
        if self.acked & bit == 0 {
            AckSlot::Waiting
        } else if self.held & bit == 0 {
            AckSlot::Acked(None)
        } else {
            AckSlot::Acked(self.handles.get(k).map(|h| StateHandle(*h)))
        }
    }

    /// Writes slot `k` (`k` below [`LEAF`]; above it, nothing).
    fn set(&mut self, k: usize, slot: AckSlot) {
        let bit = 1u64
            .checked_shl(u32::try_from(k).unwrap_or(u32::MAX))
            .unwrap_or(0);
        let Some(cell) = self.handles.get_mut(k) else {
            return;
        };
        let (acked, held, handle) = match slot {
            AckSlot::Waiting => (false, false, 0),
            AckSlot::Acked(None) => (true, false, 0),
            AckSlot::Acked(Some(StateHandle(h))) => (true, true, h),
        };
        *cell = handle;
        self.acked = if acked {
            self.acked | bit
        } else {
            self.acked & !bit
        };
        self.held = if held {
            self.held | bit
        } else {
            self.held & !bit
        };
    }
}

/// A stamp's bit for "acknowledged with a handle".
const HELD: u32 = 1 << 31;
/// A stamp's version bits.
const VERSION: u32 = HELD - 1;

/// The slots of every version of a large table (see the module docs),
/// in three arrays, so that an ack writes one 4-byte stamp at its slot
/// and appends its handle, rather than writing 16 bytes at its slot:
///
/// * `stamps`, 4 bytes a slot: 0 while no version wrote the slot;
///   otherwise its low 31 bits are the version that wrote it (at least 1)
///   and [`HELD`] says whether the slot holds a handle;
/// * `journal`, 8 bytes a version: the handle of the slot version `v`
///   stamped is `journal[v]` (read only when the stamp says [`HELD`]).
///   The tip makes the next version, so an ack appends: its write lands
///   beside the previous ack's, in a cache line already written, whatever
///   slot it acknowledges;
/// * `written`, 1 bit a slot: set once the slot is stamped, by any
///   version. The question every ack asks first ("has anyone written this
///   slot?", all the tip needs) reads 12.5 KB at 100 000 slots, which stay
///   in the first- or second-level cache.
///
/// At 100 000 slots the one write an ack makes at a scattered place goes
/// into 400 KB, not 1.6 MB: with four checkpoints pending that is 1.6 MB
/// of stamps instead of 6.4 MB of 16-byte cells, which no longer fit the
/// caches, and each ack's write then waited for memory
/// (`benches/ACK-2026-12-07e.md`).
struct Log {
    /// The version that may write in place.
    tip: AtomicU32,
    /// One bit per slot: stamped (by any version).
    written: Box<[AtomicU64]>,
    /// One stamp per slot.
    stamps: Box<[AtomicU32]>,
    /// The handle each version wrote, by version (index 0 and the versions
    /// no ack made are unused).
    journal: Box<[AtomicU64]>,
}

/// The word of `written` that holds slot `i`'s bit, and the bit.
#[inline]
fn bit_of(i: usize) -> (usize, u64) {
    (i / 64, 1 << (i % 64))
}

impl Log {
    /// Slot `i` as version `version` reads it (`Waiting` past the end).
    #[inline]
    fn get(&self, i: usize, version: u32) -> AckSlot {
        if !self.is_written(i) {
            return AckSlot::Waiting;
        }
        let Some(stamp) = self.stamps.get(i).map(|s| s.load(Ordering::Acquire)) else {
            return AckSlot::Waiting;
        };
        let written = stamp & VERSION;
        if written == 0 || written > version {
            AckSlot::Waiting
        } else if stamp & HELD == 0 {
            AckSlot::Acked(None)
        } else {
            AckSlot::Acked(
                self.journal
                    .get(written as usize)
                    .map(|h| StateHandle(h.load(Ordering::Relaxed))),
            )
        }
    }

    /// Number of slots.
    #[inline]
    fn len(&self) -> usize {
        self.stamps.len()
    }

    /// Whether some version stamped slot `i` (`false` past the end). The
    /// bit is set after the stamp (`Release`), so a reader that sees it
    /// set sees the stamp and the handle; one that sees it clear reads
    /// `Waiting`, as it would from a stamp not yet written.
    #[inline]
    fn is_written(&self, i: usize) -> bool {
        let (w, bit) = bit_of(i);
        self.written
            .get(w)
            .is_some_and(|word| word.load(Ordering::Acquire) & bit != 0)
    }

    /// `len` slots of which version `version` reads `slots` (missing
    /// ones `Waiting`), all written here, once: every page of a large log
    /// is then mapped when the checkpoint is created (the trigger), not a
    /// page fault at a time during its acks, the path a host waits on. A
    /// zeroed allocation would have left the faults to the acks.
    ///
    /// The acknowledged slots of `slots` are stamped with versions 1, 2,
    /// ... in slot order; the log starts at the last of them (1 when there
    /// is none), which is returned.
    fn of(len: usize, slots: &[AckSlot]) -> (Log, u32) {
        let mut journal: Vec<AtomicU64> = Vec::with_capacity(len + 2);
        journal.push(AtomicU64::new(0));
        let mut words: Vec<u64> = vec![0; len.div_ceil(64)];
        let stamps: Box<[AtomicU32]> = (0..len)
            .map(|i| {
                let stamp = match slots.get(i) {
                    None | Some(AckSlot::Waiting) => 0,
                    Some(AckSlot::Acked(handle)) => {
                        // At most `len` versions: fits (the caller's
                        // tables are bounded far below 2^31 slots).
                        let v = u32::try_from(journal.len()).unwrap_or(VERSION) & VERSION;
                        journal.push(AtomicU64::new(handle.map_or(0, |h| h.0)));
                        let (w, bit) = bit_of(i);
                        if let Some(word) = words.get_mut(w) {
                            *word |= bit;
                        }
                        v | if handle.is_some() { HELD } else { 0 }
                    }
                };
                AtomicU32::new(stamp)
            })
            .collect();
        let version = u32::try_from(journal.len() - 1).unwrap_or(VERSION).max(1);
        // Room for one version per slot still waiting, and every page
        // written now.
        journal.resize_with(len + 2, || AtomicU64::new(0));
        for stamp in &stamps {
            // An atomic store the optimiser keeps: the page is written now
            // (the collect above may have become a zeroed allocation).
            stamp.store(stamp.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let log = Log {
            tip: AtomicU32::new(version),
            written: words.into_iter().map(AtomicU64::new).collect(),
            stamps,
            journal: journal.into_boxed_slice(),
        };
        (log, version)
    }

    /// Stamps slot `i` with `Acked(handle)` at version `next` (the caller
    /// won the tip and saw the slot `Waiting`): the handle into the
    /// journal, the stamp, then the slot's `written` bit. The bit's word is
    /// read and stored, not updated with a locked `fetch_or`: only the tip
    /// writes a log, and the next tip is a state made from this write's
    /// result, so the writes to one log happen one after another (a state
    /// reaches another thread only through something that orders memory:
    /// a channel, a lock, a spawn).
    #[inline]
    fn stamp(&self, i: usize, next: u32, handle: Option<StateHandle>) {
        let (held, h) = match handle {
            Some(StateHandle(h)) => (HELD, h),
            None => (0, 0),
        };
        let (w, bit) = bit_of(i);
        if let (Some(stamp), Some(entry), Some(word)) = (
            self.stamps.get(i),
            self.journal.get(next as usize),
            self.written.get(w),
        ) {
            entry.store(h, Ordering::Relaxed);
            stamp.store(next | held, Ordering::Release);
            word.store(word.load(Ordering::Relaxed) | bit, Ordering::Release);
        }
    }
}

/// Stamps slot `i` with `Acked(handle)` as the next version of `log` when
/// `version` is its tip (decided in place when nobody else holds the log,
/// by one compare-and-swap otherwise) and moves `version` on: `true`.
/// `false`, with nothing written, when `version` is not the tip or is the
/// last one.
#[inline]
fn stamp_as_tip(
    log: &mut Arc<Log>,
    version: &mut u32,
    i: usize,
    handle: Option<StateHandle>,
) -> bool {
    let Some(next) = version.checked_add(1).filter(|n| *n <= VERSION) else {
        return false;
    };
    let won = match Arc::get_mut(log) {
        Some(own) => {
            let tip = own.tip.get_mut();
            let mine = *tip == *version;
            if mine {
                *tip = next;
            }
            mine
        }
        None => log
            .tip
            .compare_exchange(*version, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok(),
    };
    if won {
        log.stamp(i, next, handle);
        *version = next;
    }
    won
}

/// Where a table's slots are (see the module docs).
#[derive(Clone)]
enum Repr {
    Leaf(Arc<Leaf>),
    Log { log: Arc<Log>, version: u32 },
}

/// A persistent, fixed-size table of ack slots (see the module docs).
///
/// Two words: the pointer and a log's version. The slot count lives in
/// the leaf or the log (a table never changes its length), so that a
/// pending checkpoint, and with it the coordinator's state, stays small
/// enough to be moved without a call to `memcpy` (see
/// [`super::STATE_BYTES_MAX`]).
#[derive(Clone)]
pub struct AckTable {
    repr: Repr,
}

/// One slot of an [`AckTable`], open for reading and writing: found once by
/// [`AckTable::slot_mut`]; only [`SlotMut::set`] writes (or copies).
pub struct SlotMut<'a> {
    table: &'a mut AckTable,
    i: usize,
}

impl SlotMut<'_> {
    /// The slot's value.
    #[must_use]
    #[inline]
    pub fn get(&self) -> AckSlot {
        self.table.read(self.i)
    }

    /// Overwrites the slot.
    #[inline]
    pub fn set(&mut self, slot: AckSlot) {
        self.table.write(self.i, slot);
    }
}

impl AckTable {
    /// `len` slots, every one `slot`.
    #[must_use]
    pub fn filled(len: usize, slot: AckSlot) -> AckTable {
        if let Some(small) = u32::try_from(len).ok().filter(|_| len <= LEAF) {
            AckTable {
                repr: Repr::Leaf(Arc::new(Leaf::filled(small, slot))),
            }
        } else if slot == AckSlot::Waiting {
            let (log, version) = Log::of(len, &[]);
            AckTable {
                repr: Repr::Log {
                    log: Arc::new(log),
                    version,
                },
            }
        } else {
            std::iter::repeat_n(slot, len).collect()
        }
    }

    /// Number of slots.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Leaf(leaf) => leaf.len as usize,
            Repr::Log { log, .. } => log.len(),
        }
    }

    /// Whether there is no slot.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slot `i`, which the caller checked is below `len`.
    fn read(&self, i: usize) -> AckSlot {
        self.view().read(i)
    }

    /// The table as it reads itself (a log at its own version).
    #[inline]
    pub(crate) fn view(&self) -> At<'_> {
        match &self.repr {
            Repr::Leaf(_) => At {
                table: self,
                version: 0,
            },
            Repr::Log { version, .. } => At {
                table: self,
                version: *version,
            },
        }
    }

    /// The table read at version `version` of its log instead of its own
    /// (a leaf has no versions and ignores it). Only for a version some
    /// table of this log was at (the pending map's overrides, `state.rs`).
    #[inline]
    pub(crate) fn at(&self, version: u32) -> At<'_> {
        match &self.repr {
            Repr::Leaf(_) => self.view(),
            Repr::Log { .. } => At {
                table: self,
                version,
            },
        }
    }

    /// The version of its log this table reads (`None`: a leaf).
    #[inline]
    pub(crate) fn log_version(&self) -> Option<u32> {
        match &self.repr {
            Repr::Leaf(_) => None,
            Repr::Log { version, .. } => Some(*version),
        }
    }

    /// Moves a log's table to `version` (what [`Self::at`] read at that
    /// version reads); a leaf ignores it.
    pub(crate) fn set_version(&mut self, to: u32) {
        match &mut self.repr {
            Repr::Leaf(_) => {}
            Repr::Log { version, .. } => *version = to,
        }
    }

    /// Acknowledges slot `i` as version `at` of this table's log would,
    /// without writing this table (which other states share): when `at` is
    /// the log's tip, slot `i` reads `Waiting` there and a next version
    /// exists, the slot is stamped in place and the new version returned,
    /// which reads what `at` read plus this slot. `None` (and nothing
    /// written) otherwise, and for a leaf: the caller then copies.
    pub(crate) fn ack_at(&self, at: u32, i: usize, handle: Option<StateHandle>) -> Option<u32> {
        let Repr::Log { log, .. } = &self.repr else {
            return None;
        };
        let next = at.checked_add(1).filter(|n| *n <= VERSION)?;
        if log.get(i, at) != AckSlot::Waiting || i >= log.len() {
            return None;
        }
        log.tip
            .compare_exchange(at, next, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        log.stamp(i, next, handle);
        Some(next)
    }

    /// Writes slot `i`, which the caller checked is below `len`: in place
    /// when the leaf is not shared or this is the log's tip acknowledging a
    /// waiting slot, otherwise into a copy ([`Self::write_copy`]).
    #[inline]
    fn write(&mut self, i: usize, slot: AckSlot) {
        let (log, version) = match &mut self.repr {
            Repr::Leaf(leaf) => {
                if leaf.get(i) != slot {
                    Arc::make_mut(leaf).set(i, slot);
                }
                return;
            }
            Repr::Log { log, version } => (log, version),
        };
        let was = log.get(i, *version);
        if was == slot {
            return;
        }
        if let (AckSlot::Waiting, AckSlot::Acked(handle)) = (was, slot) {
            if stamp_as_tip(log, version, i, handle) {
                return;
            }
        }
        // Not the tip, or not `Waiting` -> `Acked`: a fresh log.
        self.write_copy(i, slot);
    }

    /// [`Self::write`]'s copy: a fresh log with slot `i` set to `slot`.
    #[inline(never)]
    fn write_copy(&mut self, i: usize, slot: AckSlot) {
        let mut slots: Vec<AckSlot> = self.iter().collect();
        if let Some(s) = slots.get_mut(i) {
            *s = slot;
        }
        *self = slots.into_iter().collect();
    }

    /// Acknowledges slot `i` with `handle` when it is `Waiting` (what
    /// [`Self::slot_mut`]'s `get` then `set` do, with one lookup): `Ok`
    /// once written (in place when the leaf is not shared or this is the
    /// log's tip, otherwise into a copy), `Err(Some(held))` when the slot
    /// is already acknowledged, `Err(None)` past the end. A log's slot
    /// that no version stamped reads `Waiting` at every version, so its
    /// bit alone answers, and the ack writes without reading the stamp.
    #[inline]
    pub(crate) fn ack(
        &mut self,
        i: usize,
        handle: Option<StateHandle>,
    ) -> Result<(), Option<AckSlot>> {
        let slot = AckSlot::Acked(handle);
        match &mut self.repr {
            Repr::Leaf(leaf) => {
                if i >= leaf.len as usize {
                    return Err(None);
                }
                match leaf.get(i) {
                    AckSlot::Waiting => {
                        Arc::make_mut(leaf).set(i, slot);
                        Ok(())
                    }
                    held @ AckSlot::Acked(_) => Err(Some(held)),
                }
            }
            Repr::Log { log, version } => {
                if i >= log.len() {
                    return Err(None);
                }
                if log.is_written(i) {
                    let held = log.get(i, *version);
                    if held != AckSlot::Waiting {
                        return Err(Some(held));
                    }
                    // Stamped by a later version: this one is not the tip.
                } else if stamp_as_tip(log, version, i, handle) {
                    return Ok(());
                }
                self.write_copy(i, slot);
                Ok(())
            }
        }
    }

    /// Slot `i`, or `None` past the end.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<AckSlot> {
        (i < self.len()).then(|| self.read(i))
    }

    /// Slot `i` for reading and then writing, or `None` past the end.
    /// Finding it writes and copies nothing; [`SlotMut::set`] writes in
    /// place when it can (see the module docs).
    pub fn slot_mut(&mut self, i: usize) -> Option<SlotMut<'_>> {
        (i < self.len()).then_some(SlotMut { table: self, i })
    }

    /// Overwrites slot `i`; `None` (and nothing written) past the end.
    pub fn set(&mut self, i: usize, slot: AckSlot) -> Option<()> {
        self.slot_mut(i)?.set(slot);
        Some(())
    }

    /// The handles of the acknowledged slots, in slot order: what
    /// `iter().filter_map(..)` yields, collected in one allocation and
    /// read straight from the representation (a leaf's held mask; a log's
    /// cells in order) rather than slot by slot.
    #[must_use]
    pub fn handles(&self) -> Vec<StateHandle> {
        self.view().handles()
    }

    /// [`Self::handles`] as a [`Handles`] list, in place when there are at
    /// most [`HANDLES_INLINE`](crate::types::HANDLES_INLINE): a small
    /// table's (a leaf: up to 64 slots) allocates nothing then; a larger
    /// one's is [`Self::handles`], moved into the list without a copy when
    /// it spills (copied and freed when it does not).
    #[must_use]
    pub fn handle_list(&self) -> Handles {
        self.view().handle_list()
    }

    /// Appends [`Self::handles`] to `out` (one list of many tables'
    /// handles, in one allocation).
    pub fn extend_handles(&self, out: &mut Vec<StateHandle>) {
        self.view().extend_handles(out);
    }

    /// Whether this table holds, in the same slot, every handle `older`
    /// holds, shown without reading every slot ([`At::keeps_handles_of`]).
    #[must_use]
    pub fn keeps_handles_of(&self, older: &AckTable) -> bool {
        self.view().keeps_handles_of(older.view())
    }

    /// Whether no slot holds a handle (a leaf answers from its masks).
    #[must_use]
    pub fn holds_no_handle(&self) -> bool {
        self.view().holds_no_handle()
    }

    /// The slots in order.
    pub fn iter(&self) -> Iter<'_> {
        self.view().iter()
    }
}

/// An [`AckTable`] read at one version of its log: its own
/// ([`AckTable::view`]) or another ([`AckTable::at`]). Every read of a
/// table goes through here. Equal when the slots are
/// ([`At::same_slots`]).
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    table: &'a AckTable,
    /// The log's version read (ignored by a leaf).
    version: u32,
}

impl<'a> At<'a> {
    /// Number of slots.
    #[inline]
    pub(crate) fn len(self) -> usize {
        self.table.len()
    }

    /// Slot `i`, which the caller checked is below `len`.
    #[inline]
    fn read(self, i: usize) -> AckSlot {
        match &self.table.repr {
            Repr::Leaf(leaf) => leaf.get(i),
            Repr::Log { log, .. } => log.get(i, self.version),
        }
    }

    /// Slot `i`, or `None` past the end.
    #[inline]
    pub(crate) fn get(self, i: usize) -> Option<AckSlot> {
        (i < self.len()).then(|| self.read(i))
    }

    /// The slots in order.
    pub(crate) fn iter(self) -> Iter<'a> {
        Iter {
            at: self,
            next: 0,
            len: self.len(),
        }
    }

    /// [`AckTable::handles`] at this version.
    pub(crate) fn handles(self) -> Vec<StateHandle> {
        // A leaf knows its count: one allocation of exactly that size,
        // without `reserve`'s growth policy on an empty list (with a
        // disarm's single search, 36 of the 1 x 1 in-place ack's 1,142
        // instructions, `benches/ACK-2026-12-07.md`).
        let mut out = match &self.table.repr {
            Repr::Leaf(leaf) => Vec::with_capacity(leaf.held_handles().0),
            Repr::Log { .. } => Vec::new(),
        };
        self.extend_handles(&mut out);
        out
    }

    /// [`AckTable::handle_list`] at this version.
    pub(crate) fn handle_list(self) -> Handles {
        // A leaf with few enough handles fills the list in place; any other
        // table collects its `Vec` first.
        let in_place = match &self.table.repr {
            Repr::Leaf(leaf) => {
                let (count, handles) = leaf.held_handles();
                (count <= crate::types::HANDLES_INLINE).then(|| handles.collect())
            }
            Repr::Log { .. } => None,
        };
        in_place.unwrap_or_else(|| {
            let all = self.handles();
            if all.len() <= crate::types::HANDLES_INLINE {
                Handles::from_slice(&all)
            } else {
                Handles::from_vec(all)
            }
        })
    }

    /// [`AckTable::extend_handles`] at this version.
    pub(crate) fn extend_handles(self, out: &mut Vec<StateHandle>) {
        match &self.table.repr {
            Repr::Leaf(leaf) => {
                let (count, handles) = leaf.held_handles();
                out.reserve(count);
                out.extend(handles);
            }
            Repr::Log { log, .. } => {
                for i in 0..log.len() {
                    if let AckSlot::Acked(Some(h)) = log.get(i, self.version) {
                        out.push(h);
                    }
                }
            }
        }
    }

    /// Whether this table holds, in the same slot, every handle `older`
    /// holds, shown without reading every slot: as many slots, and the
    /// same storage at the same version, or a later version of the same
    /// log (a log's versions form one line, each adding one
    /// acknowledgement), or two leaves whose slots with a handle in `older`
    /// (read through its masks) hold the same handle here. `false` says
    /// nothing (a check then lists the handles).
    pub(crate) fn keeps_handles_of(self, older: At<'_>) -> bool {
        if self.len() != older.len() {
            return false;
        }
        match (&self.table.repr, &older.table.repr) {
            (Repr::Leaf(new), Repr::Leaf(old)) => {
                if Arc::ptr_eq(new, old) {
                    return true;
                }
                let mut held = old.held & old.acked & old.live();
                if held & new.held & new.acked != held {
                    return false;
                }
                while held != 0 {
                    let k = held.trailing_zeros() as usize;
                    held &= held - 1;
                    if new.handles.get(k) != old.handles.get(k) {
                        return false;
                    }
                }
                true
            }
            (Repr::Log { log: new, .. }, Repr::Log { log: old, .. }) => {
                Arc::ptr_eq(new, old) && self.version >= older.version
            }
            (Repr::Leaf(_), Repr::Log { log: _, version: _ })
            | (Repr::Log { log: _, version: _ }, Repr::Leaf(_)) => false,
        }
    }

    /// Whether no slot holds a handle (a leaf answers from its masks).
    pub(crate) fn holds_no_handle(self) -> bool {
        match &self.table.repr {
            Repr::Leaf(leaf) => leaf.held & leaf.acked & leaf.live() == 0,
            Repr::Log { .. } => !self.iter().any(|a| matches!(a, AckSlot::Acked(Some(_)))),
        }
    }

    /// Same storage read at the same version: equal without reading it.
    fn same(self, other: At<'_>) -> bool {
        match (&self.table.repr, &other.table.repr) {
            (Repr::Leaf(a), Repr::Leaf(b)) => Arc::ptr_eq(a, b),
            (Repr::Log { log: a, .. }, Repr::Log { log: b, .. }) => {
                self.version == other.version && Arc::ptr_eq(a, b)
            }
            (Repr::Leaf(_), Repr::Log { log: _, version: _ })
            | (Repr::Log { log: _, version: _ }, Repr::Leaf(_)) => false,
        }
    }

    /// Equal slots (the table's content, as [`AckTable`]'s `Eq`).
    pub(crate) fn same_slots(self, other: At<'_>) -> bool {
        self.len() == other.len() && (self.same(other) || self.iter().eq(other.iter()))
    }

    /// Hashes the length, then every slot in order (as [`AckTable`]'s
    /// `Hash`).
    pub(crate) fn hash_slots<H: Hasher>(self, h: &mut H) {
        self.len().hash(h);
        for s in self.iter() {
            s.hash(h);
        }
    }
}

impl Default for AckTable {
    /// No slot.
    fn default() -> Self {
        AckTable::filled(0, AckSlot::Waiting)
    }
}

impl FromIterator<AckSlot> for AckTable {
    /// A leaf for up to [`LEAF`] slots, else a fresh log (its acknowledged
    /// slots stamped with versions 1, 2, ..., read at the last).
    fn from_iter<I: IntoIterator<Item = AckSlot>>(iter: I) -> Self {
        let slots: Vec<AckSlot> = iter.into_iter().collect();
        let len = slots.len();
        let repr = if let Some(small) = u32::try_from(len).ok().filter(|_| len <= LEAF) {
            let mut leaf = Leaf::filled(small, AckSlot::Waiting);
            for (k, slot) in slots.iter().enumerate() {
                leaf.set(k, *slot);
            }
            Repr::Leaf(Arc::new(leaf))
        } else {
            let (log, version) = Log::of(len, &slots);
            Repr::Log {
                log: Arc::new(log),
                version,
            }
        };
        AckTable { repr }
    }
}

/// The slots of an [`AckTable`] in order.
pub struct Iter<'a> {
    at: At<'a>,
    /// The next slot's index.
    next: usize,
    /// The table's length.
    len: usize,
}

impl Iterator for Iter<'_> {
    type Item = AckSlot;

    fn next(&mut self) -> Option<AckSlot> {
        let i = self.next;
        if i >= self.len {
            return None;
        }
        self.next = i + 1;
        Some(self.at.read(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len.saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a AckTable {
    type Item = AckSlot;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Hash for AckTable {
    /// The length, then every slot in order (the table's content; the
    /// representation and version do not enter).
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.view().hash_slots(h);
    }
}

impl PartialEq for At<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.same_slots(*other)
    }
}

impl PartialEq for AckTable {
    fn eq(&self, other: &Self) -> bool {
        self.view().same_slots(other.view())
    }
}

impl Eq for AckTable {}

impl fmt::Debug for AckTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StateHandle;
    use std::collections::hash_map::DefaultHasher;

    const SIZES: [usize; 12] = [0, 1, 15, 16, 17, 64, 65, 255, 256, 257, 4097, 10_000];

    fn acked(i: usize) -> AckSlot {
        AckSlot::Acked(Some(StateHandle(i as u64)))
    }

    fn hash_of(t: &AckTable) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    #[test]
    fn get_set_iter_over_sizes() {
        for n in SIZES {
            let mut t = AckTable::filled(n, AckSlot::Waiting);
            assert_eq!(t.len(), n);
            assert_eq!(t.is_empty(), n == 0);
            assert_eq!(t.iter().len(), n);
            assert!(t.iter().all(|s| s == AckSlot::Waiting));
            assert_eq!(t.get(n), None);
            assert!(t.slot_mut(n).is_none());
            assert_eq!(t.get(usize::MAX), None);
            assert!(t.slot_mut(usize::MAX).is_none());
            assert_eq!(t.set(n, AckSlot::Waiting), None);
            // Every other slot, in a scattered order.
            for i in (0..n).rev().filter(|i| i % 2 == 0) {
                t.set(i, acked(i)).unwrap();
            }
            for i in 0..n {
                let want = if i % 2 == 0 {
                    acked(i)
                } else {
                    AckSlot::Waiting
                };
                assert_eq!(t.get(i), Some(want), "n={n} i={i}");
            }
            let v: Vec<AckSlot> = t.iter().collect();
            assert_eq!(v.len(), n);
            for (i, s) in v.iter().enumerate() {
                assert_eq!(Some(*s), t.get(i));
            }
            // Collecting the same slots gives an equal table.
            let u: AckTable = v.iter().copied().collect();
            assert_eq!(u.len(), n);
            assert_eq!(u, t);
            assert_eq!(hash_of(&u), hash_of(&t));
            assert_eq!(format!("{u:?}"), format!("{v:?}"));
        }
    }

    #[test]
    fn clone_then_mutate_leaves_the_clone_untouched() {
        for n in SIZES.into_iter().filter(|n| *n > 0) {
            let mut a = AckTable::filled(n, AckSlot::Waiting);
            a.set(0, acked(0)).unwrap();
            let snapshot = a.clone();
            let before: Vec<AckSlot> = snapshot.iter().collect();
            for i in [0, n / 2, n - 1] {
                a.set(i, AckSlot::Acked(None)).unwrap();
            }
            let after: Vec<AckSlot> = snapshot.iter().collect();
            assert_eq!(before, after);
            assert_eq!(snapshot.get(0), Some(acked(0)));
            assert_eq!(a.get(n - 1), Some(AckSlot::Acked(None)));
            assert_ne!(a, snapshot);
            // And the other way round: mutating the clone leaves the original.
            let mut c = a.clone();
            c.set(n - 1, AckSlot::Waiting).unwrap();
            assert_eq!(a.get(n - 1), Some(AckSlot::Acked(None)));
            assert_eq!(c.get(n - 1), Some(AckSlot::Waiting));
        }
    }

    /// `keeps_handles_of` answers `true` only when every handle of the
    /// older table is in the same slot of the newer one (checked against
    /// the slots themselves), and the handle lists agree with `iter`.
    #[test]
    fn keeps_handles_of_is_never_wrong() {
        let holds = |new: &AckTable, old: &AckTable| {
            old.iter().enumerate().all(|(i, s)| match s {
                AckSlot::Acked(Some(h)) => new.get(i) == Some(AckSlot::Acked(Some(h))),
                AckSlot::Acked(None) | AckSlot::Waiting => true,
            })
        };
        for n in SIZES.into_iter().filter(|n| *n > 1) {
            let mut old = AckTable::filled(n, AckSlot::Waiting);
            old.set(0, acked(7)).unwrap();
            old.set(n - 1, AckSlot::Acked(None)).unwrap();
            let mut edits: Vec<AckTable> = vec![old.clone()];
            for (i, slot) in [
                (1, acked(8)),
                (0, acked(9)),
                (0, AckSlot::Acked(None)),
                (0, AckSlot::Waiting),
                (n - 1, acked(3)),
                (n - 1, AckSlot::Waiting),
            ] {
                let mut t = old.clone();
                t.set(i, slot).unwrap();
                edits.push(t);
            }
            for new in &edits {
                let kept = new.keeps_handles_of(&old);
                assert!(
                    !kept || holds(new, &old),
                    "{n} slots: {new:?} does not keep {old:?}"
                );
                let listed: Vec<StateHandle> = new
                    .iter()
                    .filter_map(|s| match s {
                        AckSlot::Acked(h) => h,
                        AckSlot::Waiting => None,
                    })
                    .collect();
                assert_eq!(new.handles(), listed);
                assert_eq!(new.holds_no_handle(), listed.is_empty());
            }
            // A leaf (the model's and the fuzz targets' tables) shows what
            // it keeps.
            if n <= LEAF {
                assert!(edits[0].keeps_handles_of(&old));
                assert!(edits[1].keeps_handles_of(&old));
                assert!(!edits[2].keeps_handles_of(&old));
                assert!(edits[5].keeps_handles_of(&old));
            }
        }
    }

    #[test]
    fn hash_and_eq_agree() {
        for n in SIZES {
            let a = AckTable::filled(n, AckSlot::Waiting);
            let b: AckTable = std::iter::repeat_n(AckSlot::Waiting, n).collect();
            assert_eq!(a, b);
            assert_eq!(hash_of(&a), hash_of(&b));
            if n > 0 {
                let mut c = a.clone();
                c.set(n - 1, AckSlot::Acked(None)).unwrap();
                assert_ne!(a, c);
                assert_ne!(hash_of(&a), hash_of(&c));
                // Reverting through a different path is equal again.
                c.set(n - 1, AckSlot::Waiting).unwrap();
                assert_eq!(a, c);
                assert_eq!(hash_of(&a), hash_of(&c));
            }
        }
        // Length is part of the identity (and of the hash stream).
        let empty = AckTable::default();
        let one = AckTable::filled(1, AckSlot::Waiting);
        assert_ne!(empty, one);
        assert_ne!(hash_of(&empty), hash_of(&one));
        // The same bytes as the length-prefixed slot sequence.
        let v = vec![AckSlot::Waiting, acked(3)];
        let t: AckTable = v.iter().copied().collect();
        let mut h = DefaultHasher::new();
        v.len().hash(&mut h);
        for s in &v {
            s.hash(&mut h);
        }
        assert_eq!(hash_of(&t), h.finish());
    }

    /// The log behind a large table and the version it reads.
    fn log_of(t: &AckTable) -> (*const Log, u32) {
        match &t.repr {
            Repr::Log { log, version } => (Arc::as_ptr(log), *version),
            Repr::Leaf(_) => panic!("{} slots are a leaf", t.len()),
        }
    }

    #[test]
    fn small_tables_are_a_leaf_large_ones_a_log() {
        for n in [0, 1, LEAF] {
            assert!(matches!(
                AckTable::filled(n, AckSlot::Waiting).repr,
                Repr::Leaf(_)
            ));
            let t: AckTable = std::iter::repeat_n(AckSlot::Waiting, n).collect();
            assert!(matches!(t.repr, Repr::Leaf(_)));
        }
        for n in [LEAF + 1, 100_000] {
            assert_eq!(log_of(&AckTable::filled(n, AckSlot::Waiting)).1, 1);
            // A log made from slots stamps the acknowledged ones 1, 2, ...
            // and starts at the last.
            let t: AckTable = std::iter::repeat_n(AckSlot::Acked(None), n).collect();
            assert_eq!(log_of(&t).1, u32::try_from(n).unwrap());
            assert_eq!(t, AckTable::filled(n, AckSlot::Acked(None)));
        }
    }

    #[test]
    fn the_tip_writes_in_place_while_every_kept_version_reads_as_before() {
        let n = 10_000;
        let mut t = AckTable::filled(n, AckSlot::Waiting);
        let (log, _) = log_of(&t);
        let order: Vec<usize> = (0..n).map(|i| (i * 7_919) % n).collect();
        let mut kept = Vec::new();
        for (k, i) in order.iter().enumerate().take(3_000) {
            kept.push(t.clone());
            let mut cell = t.slot_mut(*i).unwrap();
            assert_eq!(cell.get(), AckSlot::Waiting);
            cell.set(acked(*i));
            // No copy: the same log, one version further.
            assert_eq!(log_of(&t), (log, k as u32 + 2));
        }
        for (k, old) in kept.iter().enumerate() {
            let acked_before: std::collections::BTreeSet<usize> =
                order[..k].iter().copied().collect();
            for i in (0..n).step_by(37).chain(order[..3_000].iter().copied()) {
                let want = if acked_before.contains(&i) {
                    acked(i)
                } else {
                    AckSlot::Waiting
                };
                assert_eq!(old.get(i), Some(want), "version {k} slot {i}");
            }
            assert_eq!(old.iter().filter(|s| *s != AckSlot::Waiting).count(), k);
        }
        // Equal versions of one log are equal without reading; different
        // ones differ.
        assert_eq!(kept[5], kept[5].clone());
        assert_ne!(kept[5], kept[6]);
        assert_eq!(hash_of(&kept[5]), hash_of(&kept[5].iter().collect()));
    }

    #[test]
    fn a_second_successor_copies_and_all_three_stay_valid() {
        let n = 1_000;
        let mut base = AckTable::filled(n, AckSlot::Waiting);
        base.set(3, acked(3)).unwrap();
        let mut a = base.clone();
        let mut b = base.clone();
        a.set(10, acked(10)).unwrap();
        // `a` took the tip; `b` writes from the same version: a copy.
        assert_eq!(log_of(&a).0, log_of(&base).0);
        b.set(20, AckSlot::Acked(None)).unwrap();
        assert_ne!(log_of(&b).0, log_of(&base).0);
        assert_eq!(base.get(10), Some(AckSlot::Waiting));
        assert_eq!(base.get(20), Some(AckSlot::Waiting));
        assert_eq!(base.get(3), Some(acked(3)));
        assert_eq!(a.get(10), Some(acked(10)));
        assert_eq!(a.get(20), Some(AckSlot::Waiting));
        assert_eq!(b.get(10), Some(AckSlot::Waiting));
        assert_eq!(b.get(20), Some(AckSlot::Acked(None)));
        assert_eq!(b.get(3), Some(acked(3)));
        // Each goes on writing in place from there.
        let before = log_of(&b).0;
        b.set(21, acked(21)).unwrap();
        assert_eq!(log_of(&b).0, before);
        a.set(21, acked(21)).unwrap();
        assert_eq!(a.get(21), b.get(21));
        assert_ne!(a, b);
    }

    #[test]
    fn a_dropped_successors_write_stays_invisible() {
        let n = 500;
        let mut base = AckTable::filled(n, AckSlot::Waiting);
        let mut gone = base.clone();
        gone.set(7, acked(7)).unwrap();
        drop(gone);
        // `base` holds the log alone now, but is not its tip: slot 7's
        // stamp must not surface in base's next version.
        assert_eq!(base.get(7), Some(AckSlot::Waiting));
        base.set(8, acked(8)).unwrap();
        assert_eq!(base.get(7), Some(AckSlot::Waiting));
        assert_eq!(base.get(8), Some(acked(8)));
        assert_eq!(base.iter().filter(|s| *s != AckSlot::Waiting).count(), 1);
        let fresh: AckTable = (0..n)
            .map(|i| if i == 8 { acked(8) } else { AckSlot::Waiting })
            .collect();
        assert_eq!(base, fresh);
        assert_eq!(hash_of(&base), hash_of(&fresh));
    }

    #[test]
    fn writes_other_than_waiting_to_acked_copy() {
        let n = 200;
        let mut t = AckTable::filled(n, AckSlot::Waiting);
        t.set(1, acked(1)).unwrap();
        let kept = t.clone();
        // Acked -> Waiting, Acked -> another handle.
        t.set(1, AckSlot::Waiting).unwrap();
        assert_ne!(log_of(&t).0, log_of(&kept).0);
        assert_eq!(t.get(1), Some(AckSlot::Waiting));
        assert_eq!(kept.get(1), Some(acked(1)));
        t.set(1, acked(2)).unwrap();
        t.set(1, acked(3)).unwrap();
        assert_eq!(t.get(1), Some(acked(3)));
        assert_eq!(kept.get(1), Some(acked(1)));
        // Writing the value already there writes nothing.
        let at = log_of(&t);
        t.set(1, acked(3)).unwrap();
        t.set(2, AckSlot::Waiting).unwrap();
        assert_eq!(log_of(&t), at);
    }

    #[test]
    fn versions_on_two_threads_race_for_the_tip() {
        let n = 5_000;
        let base = AckTable::filled(n, AckSlot::Waiting);
        for _ in 0..20 {
            let (a, b) = std::thread::scope(|s| {
                let base = &base;
                let run = move |first: usize| {
                    let mut t = base.clone();
                    for i in (first..n).step_by(2) {
                        t.set(i, acked(i)).unwrap();
                    }
                    t
                };
                let a = s.spawn(move || run(0));
                let b = s.spawn(move || run(1));
                (a.join().unwrap(), b.join().unwrap())
            });
            assert!(base.iter().all(|s| s == AckSlot::Waiting));
            for i in 0..n {
                let (mine, theirs) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
                assert_eq!(mine.get(i), Some(acked(i)));
                assert_eq!(theirs.get(i), Some(AckSlot::Waiting));
            }
        }
    }

    #[test]
    fn handles_are_the_held_slots_in_order_at_every_version() {
        let fill = [
            AckSlot::Waiting,
            AckSlot::Acked(None),
            AckSlot::Acked(Some(StateHandle(9))),
        ];
        let walk = |t: &AckTable| -> Vec<StateHandle> {
            t.iter()
                .filter_map(|s| match s {
                    AckSlot::Acked(h) => h,
                    AckSlot::Waiting => None,
                })
                .collect()
        };
        for n in SIZES {
            for f in fill {
                // A filled leaf holds the fill in slots past `len` too.
                let mut t = AckTable::filled(n, f);
                let mut kept = vec![t.clone()];
                for i in (0..n).step_by(3) {
                    let s = if i % 2 == 0 {
                        acked(i)
                    } else {
                        AckSlot::Acked(None)
                    };
                    t.set(i, s).unwrap();
                    kept.push(t.clone());
                }
                for k in &kept {
                    assert_eq!(k.handles(), walk(k), "n={n} fill {f:?}");
                    // The finalize request's list: the same handles, in
                    // place up to two of them.
                    let list = k.handle_list();
                    assert_eq!(list.as_slice(), walk(k).as_slice(), "n={n} fill {f:?}");
                    assert_eq!(list.spilled(), list.len() > crate::types::HANDLES_INLINE);
                }
            }
        }
        // A dropped successor's stamps are not this version's.
        let base = AckTable::filled(100, AckSlot::Waiting);
        let mut gone = base.clone();
        gone.set(5, acked(5)).unwrap();
        drop(gone);
        assert!(base.handles().is_empty());
    }

    #[test]
    fn every_handle_value_round_trips_and_slots_read_before_write() {
        // The leaf stores a handle in 8 bytes plus two mask bits: no value is
        // reserved, `Acked(Some(0))` is not `Acked(None)`, and overwriting a
        // handle with none (or with `Waiting`) leaves no trace in `Eq`.
        let values = [
            AckSlot::Waiting,
            AckSlot::Acked(None),
            AckSlot::Acked(Some(StateHandle(0))),
            AckSlot::Acked(Some(StateHandle(1))),
            AckSlot::Acked(Some(StateHandle(u64::MAX))),
        ];
        for n in [1, LEAF, LEAF + 1, 1_000] {
            for (x, a) in values.iter().enumerate() {
                for b in &values {
                    let i = (x * 7) % n;
                    let mut t = AckTable::filled(n, AckSlot::Waiting);
                    let mut slot = t.slot_mut(i).unwrap();
                    assert_eq!(slot.get(), AckSlot::Waiting);
                    slot.set(*a);
                    assert_eq!(slot.get(), *a);
                    slot.set(*b);
                    assert_eq!(t.get(i), Some(*b));
                    let fresh: AckTable = (0..n)
                        .map(|j| if j == i { *b } else { AckSlot::Waiting })
                        .collect();
                    assert_eq!(t, fresh, "n={n} i={i} {a:?} then {b:?}");
                    assert_eq!(hash_of(&t), hash_of(&fresh));
                }
            }
        }
    }

    /// `ack` does what `slot_mut`'s `get` then `set` do, in every case: a
    /// leaf and a log; a waiting slot, an acknowledged one (same or other
    /// handle) and one past the end; the tip, a kept version that is not
    /// the tip, and a kept version whose slot a later version stamped.
    #[test]
    fn ack_is_get_then_set() {
        fn by_get_set(
            t: &mut AckTable,
            i: usize,
            h: Option<StateHandle>,
        ) -> Result<(), Option<AckSlot>> {
            let mut cell = t.slot_mut(i).ok_or(None)?;
            match cell.get() {
                AckSlot::Waiting => {
                    cell.set(AckSlot::Acked(h));
                    Ok(())
                }
                held => Err(Some(held)),
            }
        }
        for n in [5, 200] {
            let mut tip = AckTable::filled(n, AckSlot::Waiting);
            let mut versions = vec![tip.clone()];
            for i in [3, 1, 4] {
                assert_eq!(tip.ack(i, Some(StateHandle(i as u64))), Ok(()));
                versions.push(tip.clone());
            }
            for (k, v) in versions.iter().enumerate() {
                for i in [0, 1, 3, 4, n - 1, n, n + 7] {
                    for h in [None, Some(StateHandle(i as u64)), Some(StateHandle(99))] {
                        let (mut a, mut b) = (v.clone(), v.clone());
                        let got = a.ack(i, h);
                        assert_eq!(got, by_get_set(&mut b, i, h), "n {n} version {k} slot {i}");
                        assert_eq!(a, b, "n {n} version {k} slot {i}");
                        assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
                    }
                }
            }
            // Every kept version still reads as it did.
            for (k, v) in versions.iter().enumerate() {
                let acked_slots = v.iter().filter(|a| *a != AckSlot::Waiting).count();
                assert_eq!(acked_slots, k, "n {n} version {k}");
            }
        }
    }
}
