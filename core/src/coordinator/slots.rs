//! The ack slots of a pending (or completed) checkpoint: a persistent,
//! fixed-size table of [`AckSlot`]s.
//!
//! A fixed-depth radix tree over `Arc` nodes: leaves hold [`LEAF`] slots,
//! branches [`FAN`] children, and the depth is chosen from the slot count at
//! creation (a table never grows or shrinks). Every branch is full: children
//! past the end point at a shared all-`Waiting` subtree, so a lookup is a
//! fixed number of array steps with no bounds other than the length check.
//!
//! * A leaf stores its slots in 8 bytes each (the handle) plus two bit
//!   masks (acknowledged; acknowledged with a handle): 528 bytes for 64
//!   slots where an array of `AckSlot` takes 1 024. A branch knows whether
//!   its children are leaves or branches, so a child is one 8-byte pointer.
//!   Keeping an old state copies the nodes on one path: the fewer bytes,
//!   the fewer cache lines and fresh pages each kept state costs.
//! * Branches are narrow ([`FAN`] = 4). Copying a branch bumps the reference
//!   count of every child, each in its own cache line, and those bumps were
//!   most of the cost of a kept state: at 10 000 slots, four levels of 4
//!   children (16 bumps; the root held in the table, then three 48-byte
//!   nodes) beat two levels of 16 (32 bumps) by about 10 % and three of 8
//!   by about 10 % more, measured with
//!   `profile pure_retained 10000 N` (`benches/src/bin/profile.rs`);
//!   64-slot leaves beat 32-slot ones (one level fewer). The in-place ack
//!   pays a little for the extra levels (about 10 %).
//! * The `Arc` is `triomphe`'s: no weak count, so the copy-on-write check
//!   ("is this node shared?") is a load rather than the compare-and-swap of
//!   `std::sync::Arc::make_mut`. On the in-place path, which checks every
//!   node on the way down, that was most of an ack's cost.
//! * `get` walks `depth` branches to a leaf.
//! * [`AckTable::slot_mut`] walks the same path with `Arc::make_mut`: when
//!   the table is not shared nothing is copied or allocated (in place stays
//!   allocation-free); when it is (an old state is kept), only the nodes on
//!   the path are copied.
//! * [`AckTable::filled`] shares one uniform subtree per level, so creating
//!   the table for 100 000 tasks costs a handful of allocations.
//! * `iter` visits the slots in order, one walk per leaf: O(len).
//!
//! What it costs, measured (2026-12-02, `cargo bench -p ckpt-benches --bench
//! ack -- --warm-up-time 0.5 --measurement-time 2`, one run, figures and
//! history in `benches/README.md` and `benches/HISTORY.md`): an in-place
//! ack is 27-29 ns at 10 000 tasks and 36-64 ns at 100 000 (2.3-4.0x the
//! floor, a `Vec` slot and a bitset); an ack whose old state is kept is
//! 275-326 ns at 10 000 and 353-385 ns at 100 000 (four and six branch
//! levels: 6 and 8 allocations per kept state, namely the pending map's
//! slice, the checkpoint, the branches below the root and the leaf; under
//! callgrind about half of its instructions are in `malloc`), slower than the Flink-like
//! hash map at 10 000 (68-95 ns) and level with it at 100 000 (316-413 ns).
//! At 100 000 tasks the in-place ack's cost is cache misses on the tables
//! indexed by task or slot, not this tree: the task's roles (now 4 bytes
//! a task, `config::Roles`) and the attempt expected in its slot.

use std::fmt;
use std::hash::{Hash, Hasher};

use triomphe::Arc;

use serde::{Deserialize, Serialize};

use crate::types::StateHandle;

/// One ack slot of a pending checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AckSlot {
    /// Not acknowledged yet.
    Waiting,
    /// Acknowledged, with the task's state if it had any.
    Acked(Option<StateHandle>),
}

const LEAF_BITS: u32 = 6;
/// Slots per leaf (at most 64: a leaf's masks are `u64`).
pub const LEAF: usize = 1 << LEAF_BITS;
const FAN_BITS: u32 = 2;
/// Children per branch.
pub const FAN: usize = 1 << FAN_BITS;
const LEAF_MASK: usize = LEAF - 1;
const FAN_MASK: usize = FAN - 1;
// A leaf's masks are one `u64` each.
const _: () = assert!(LEAF <= 64);

/// [`LEAF`] slots. Slot `k` is `Waiting` when bit `k` of `acked` is clear;
/// otherwise `Acked(Some(handles[k]))` when bit `k` of `held` is set and
/// `Acked(None)` when it is not. `handles[k]` is 0 whenever bit `k` of
/// `held` is clear, so equal slots are equal bytes (derived `Eq`).
#[derive(Clone, PartialEq, Eq)]
struct Leaf {
    acked: u64,
    held: u64,
    handles: [u64; LEAF],
}

impl Leaf {
    fn filled(slot: AckSlot) -> Leaf {
        let mut leaf = Leaf {
            acked: 0,
            held: 0,
            handles: [0; LEAF],
        };
        for k in 0..LEAF {
            leaf.set(k, slot);
        }
        leaf
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

/// An inner node: its children are all leaves or all branches (every leaf
/// is at the same depth), so a child is one pointer.
#[derive(Clone)]
enum Branch {
    Leaves([Arc<Leaf>; FAN]),
    Branches([Arc<Branch>; FAN]),
}

impl Branch {
    /// `depth` branch levels (at least 1) whose every slot is `slot`,
    /// sharing one node per level.
    fn uniform(depth: u32, slot: AckSlot) -> Arc<Branch> {
        let leaf = Arc::new(Leaf::filled(slot));
        let mut branch = Arc::new(Branch::Leaves(std::array::from_fn(|_| leaf.clone())));
        for _ in 1..depth {
            let child = branch;
            branch = Arc::new(Branch::Branches(std::array::from_fn(|_| child.clone())));
        }
        branch
    }
}

/// The root: a lone leaf (up to [`LEAF`] slots) or a branch held in place
/// (not behind its own `Arc`): the table, and so each pending checkpoint,
/// carries its root's children itself, which saves one allocation per kept
/// state (copying a pending checkpoint copies its root anyway).
#[derive(Clone)]
enum Node {
    Leaf(Arc<Leaf>),
    Branch(Branch),
}

impl Branch {
    /// The children as untyped pointers (identity only).
    fn child_ptrs(&self) -> [*const (); FAN] {
        match self {
            Branch::Leaves(ls) => ls.each_ref().map(|l| Arc::as_ptr(l).cast()),
            Branch::Branches(bs) => bs.each_ref().map(|b| Arc::as_ptr(b).cast()),
        }
    }
}

impl Node {
    /// A tree of `depth` branch levels whose every slot is `slot`, sharing one
    /// node per level.
    fn uniform(depth: u32, slot: AckSlot) -> Node {
        if depth == 0 {
            Node::Leaf(Arc::new(Leaf::filled(slot)))
        } else {
            Node::Branch(Arc::unwrap_or_clone(Branch::uniform(depth, slot)))
        }
    }

    fn ptr_eq(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Leaf(a), Node::Leaf(b)) => Arc::ptr_eq(a, b),
            (Node::Branch(a), Node::Branch(b)) => a.child_ptrs() == b.child_ptrs(),
            (Node::Leaf(_), Node::Branch(_)) | (Node::Branch(_), Node::Leaf(_)) => false,
        }
    }
}

/// A persistent, fixed-size table of ack slots (see the module docs).
#[derive(Clone)]
pub struct AckTable {
    root: Node,
    len: usize,
    /// Shift of the root branch's child index (unused when the root is a leaf).
    shift: u32,
}

/// Branch levels needed for `len` slots.
fn depth_for(len: usize) -> u32 {
    let mut depth = 0;
    let mut capacity = LEAF;
    while capacity < len {
        depth += 1;
        match capacity.checked_mul(FAN) {
            Some(c) => capacity = c,
            None => break,
        }
    }
    depth
}

fn root_shift(depth: u32) -> u32 {
    LEAF_BITS + FAN_BITS * depth.saturating_sub(1)
}

/// One slot of an [`AckTable`], open for writing: [`AckTable::slot_mut`]
/// walked down to its leaf once (copying the shared nodes on the way).
pub struct SlotMut<'a> {
    leaf: &'a mut Leaf,
    k: usize,
}

impl SlotMut<'_> {
    /// The slot's value.
    #[must_use]
    pub fn get(&self) -> AckSlot {
        self.leaf.get(self.k)
    }

    /// Overwrites the slot.
    pub fn set(&mut self, slot: AckSlot) {
        self.leaf.set(self.k, slot);
    }
}

impl AckTable {
    /// `len` slots, every one `slot`; shares one node per level.
    #[must_use]
    pub fn filled(len: usize, slot: AckSlot) -> AckTable {
        let depth = depth_for(len);
        AckTable {
            root: Node::uniform(depth, slot),
            len,
            shift: root_shift(depth),
        }
    }

    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no slot.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The leaf holding slot `i` (`i` need not be below `len`: the tree's
    /// capacity covers every index that fits its depth).
    fn leaf(&self, i: usize) -> Option<&Leaf> {
        let mut branch = match &self.root {
            Node::Leaf(l) => return Some(l),
            Node::Branch(b) => b,
        };
        let mut shift = self.shift;
        loop {
            let k = (i >> shift) & FAN_MASK;
            match branch {
                Branch::Leaves(leaves) => return leaves.get(k).map(|l| &**l),
                Branch::Branches(branches) => {
                    branch = branches.get(k)?;
                    shift = shift.wrapping_sub(FAN_BITS);
                }
            }
        }
    }

    /// The leaf holding slot `i`, for writing: copies the nodes on the path
    /// that are shared with another table (none when unshared).
    fn leaf_mut(&mut self, i: usize) -> Option<&mut Leaf> {
        let mut shift = self.shift;
        let mut branch = match &mut self.root {
            Node::Leaf(l) => return Some(Arc::make_mut(l)),
            Node::Branch(b) => b,
        };
        loop {
            let k = (i >> shift) & FAN_MASK;
            match branch {
                Branch::Leaves(leaves) => return leaves.get_mut(k).map(Arc::make_mut),
                Branch::Branches(branches) => {
                    branch = Arc::make_mut(branches.get_mut(k)?);
                    shift = shift.wrapping_sub(FAN_BITS);
                }
            }
        }
    }

    /// Slot `i`, or `None` past the end.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<AckSlot> {
        if i >= self.len {
            return None;
        }
        Some(self.leaf(i)?.get(i & LEAF_MASK))
    }

    /// Slot `i` for reading and writing with one walk, or `None` past the
    /// end. Copies the nodes on the path that are shared with another table
    /// (none when unshared), even if the slot is then left as it was.
    pub fn slot_mut(&mut self, i: usize) -> Option<SlotMut<'_>> {
        if i >= self.len {
            return None;
        }
        Some(SlotMut {
            leaf: self.leaf_mut(i)?,
            k: i & LEAF_MASK,
        })
    }

    /// Overwrites slot `i`; `None` (and nothing written) past the end.
    pub fn set(&mut self, i: usize, slot: AckSlot) -> Option<()> {
        self.slot_mut(i)?.set(slot);
        Some(())
    }

    /// The slots in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            table: self,
            next: 0,
            leaf: None,
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
    /// Builds the tree bottom-up: full leaves, then full branches, padding
    /// with shared all-`Waiting` subtrees.
    fn from_iter<I: IntoIterator<Item = AckSlot>>(iter: I) -> Self {
        let slots: Vec<AckSlot> = iter.into_iter().collect();
        let len = slots.len();
        let depth = depth_for(len);
        let leaves: Vec<Arc<Leaf>> = slots
            .chunks(LEAF)
            .map(|chunk| {
                let mut leaf = Leaf::filled(AckSlot::Waiting);
                for (k, slot) in chunk.iter().enumerate() {
                    leaf.set(k, *slot);
                }
                Arc::new(leaf)
            })
            .collect();
        if depth == 0 {
            let root = match leaves.into_iter().next() {
                Some(leaf) => Node::Leaf(leaf),
                None => Node::uniform(0, AckSlot::Waiting),
            };
            return AckTable {
                root,
                len,
                shift: root_shift(0),
            };
        }
        let pad = Arc::new(Leaf::filled(AckSlot::Waiting));
        let mut level: Vec<Arc<Branch>> = leaves
            .chunks(FAN)
            .map(|chunk| {
                Arc::new(Branch::Leaves(std::array::from_fn(|k| {
                    chunk.get(k).unwrap_or(&pad).clone()
                })))
            })
            .collect();
        for d in 1..depth {
            let pad = Branch::uniform(d, AckSlot::Waiting);
            level = level
                .chunks(FAN)
                .map(|chunk| {
                    Arc::new(Branch::Branches(std::array::from_fn(|k| {
                        chunk.get(k).unwrap_or(&pad).clone()
                    })))
                })
                .collect();
        }
        let root = match level.into_iter().next() {
            Some(root) => Node::Branch(Arc::unwrap_or_clone(root)),
            None => Node::uniform(depth, AckSlot::Waiting),
        };
        AckTable {
            root,
            len,
            shift: root_shift(depth),
        }
    }
}

/// The slots of an [`AckTable`] in order.
pub struct Iter<'a> {
    table: &'a AckTable,
    /// The next slot's index.
    next: usize,
    /// The leaf holding `next` (looked up at each leaf's first slot).
    leaf: Option<&'a Leaf>,
}

impl Iterator for Iter<'_> {
    type Item = AckSlot;

    fn next(&mut self) -> Option<AckSlot> {
        let i = self.next;
        if i >= self.table.len {
            return None;
        }
        let k = i & LEAF_MASK;
        if k == 0 || self.leaf.is_none() {
            self.leaf = self.table.leaf(i);
        }
        self.next = i + 1;
        Some(self.leaf?.get(k))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.table.len.saturating_sub(self.next);
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
    /// The length, then every slot in order (the slots are the tree's
    /// content; `shift` follows from the length).
    fn hash<H: Hasher>(&self, h: &mut H) {
        let AckTable {
            root: _,
            len,
            shift: _,
        } = self;
        len.hash(h);
        for s in self {
            s.hash(h);
        }
    }
}

impl PartialEq for AckTable {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (self.root.ptr_eq(&other.root) || self.iter().eq(other.iter()))
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

    const SIZES: [usize; 10] = [0, 1, 15, 16, 17, 255, 256, 257, 4097, 10_000];

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

    /// The children of a branch, as untyped pointers (for sharing checks).
    fn children(b: &Branch) -> Vec<*const ()> {
        b.child_ptrs().to_vec()
    }

    #[test]
    fn filled_tables_share_structure() {
        let t = AckTable::filled(100_000, AckSlot::Waiting);
        let Node::Branch(root) = &t.root else {
            panic!("100 000 slots need branches");
        };
        // Every child of every level is the same node.
        let mut branch: &Branch = root;
        loop {
            let kids = children(branch);
            assert!(kids.iter().all(|c| *c == kids[0]));
            match branch {
                Branch::Branches(bs) => branch = &bs[0],
                Branch::Leaves(ls) => {
                    // One leaf shared by every slot: refcount = FAN (the
                    // children of the lowest branch) and nothing else.
                    assert_eq!(Arc::count(&ls[0]), FAN);
                    break;
                }
            }
        }
        // A clone shares the root's children (the root is held in place).
        let u = t.clone();
        assert!(u.root.ptr_eq(&t.root));
        // Writing one slot copies only its path: the other children stay
        // shared with the original.
        let mut w = t.clone();
        w.set(12_345, AckSlot::Acked(None)).unwrap();
        let (Node::Branch(a), Node::Branch(b)) = (&t.root, &w.root) else {
            panic!("branches");
        };
        let changed = (12_345 >> t.shift) & FAN_MASK;
        for (k, (x, y)) in children(a).iter().zip(children(b).iter()).enumerate() {
            assert_eq!(x == y, k != changed, "child {k}");
        }
        assert_eq!(t.iter().filter(|s| *s != AckSlot::Waiting).count(), 0);
        assert_eq!(w.iter().filter(|s| *s != AckSlot::Waiting).count(), 1);
    }

    #[test]
    fn depth_is_the_fewest_levels_that_hold_the_slots() {
        // Each level more copies one more node per kept state.
        let mut capacity = LEAF;
        for depth in 0..6 {
            assert_eq!(depth_for(capacity), depth, "{capacity} slots");
            assert_eq!(depth_for(capacity + 1), depth + 1, "{} slots", capacity + 1);
            capacity *= FAN;
        }
        assert_eq!(depth_for(0), 0);
        assert_eq!(depth_for(1), 0);
    }

    #[test]
    fn unshared_writes_do_not_copy() {
        let mut t = AckTable::filled(10_000, AckSlot::Waiting);
        // First write un-shares the path; a second write to the same leaf
        // must find it unique and keep the same nodes.
        t.set(5, AckSlot::Acked(None)).unwrap();
        let leaf = t.leaf(5).map(std::ptr::from_ref);
        t.set(6, AckSlot::Acked(None)).unwrap();
        assert_eq!(t.leaf(6).map(std::ptr::from_ref), leaf);
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
}
