//! The ack slots of a pending (or completed) checkpoint: a persistent,
//! fixed-size table of [`AckSlot`]s.
//!
//! A fixed-depth radix tree over `Arc` nodes: leaves hold [`LEAF`] slots,
//! branches [`FAN`] children, and the depth is chosen from the slot count at
//! creation (a table never grows or shrinks). Every branch is full: children
//! past the end point at a shared all-`Waiting` subtree, so a lookup is a
//! fixed number of array steps with no bounds other than the length check.
//!
//! * `get` walks `depth` branches to a leaf.
//! * `get_mut` walks the same path with `Arc::make_mut`: when the table is not
//!   shared nothing is copied or allocated (in place stays allocation-free);
//!   when it is (an old state is kept), only the nodes on the path are copied:
//!   small nodes with few `Arc`s in them.
//! * [`AckTable::filled`] shares one uniform subtree per level, so creating the
//!   table for 100 000 tasks costs a handful of allocations.
//! * `iter` visits the slots in order, one walk per leaf: O(len).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::state::AckSlot;

const LEAF_BITS: u32 = 6;
/// Slots per leaf.
pub const LEAF: usize = 1 << LEAF_BITS;
const FAN_BITS: u32 = 4;
/// Children per branch.
pub const FAN: usize = 1 << FAN_BITS;
const LEAF_MASK: usize = LEAF - 1;
const FAN_MASK: usize = FAN - 1;

type Leaf = [AckSlot; LEAF];
type Branch = [Node; FAN];

#[derive(Clone)]
enum Node {
    Leaf(Arc<Leaf>),
    Branch(Arc<Branch>),
}

impl Node {
    /// A tree of `depth` branch levels whose every slot is `slot`, sharing one
    /// node per level.
    fn uniform(depth: u32, slot: AckSlot) -> Node {
        let mut node = Node::Leaf(Arc::new([slot; LEAF]));
        for _ in 0..depth {
            let child = node;
            node = Node::Branch(Arc::new(std::array::from_fn(|_| child.clone())));
        }
        node
    }

    fn ptr_eq(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Leaf(a), Node::Leaf(b)) => Arc::ptr_eq(a, b),
            (Node::Branch(a), Node::Branch(b)) => Arc::ptr_eq(a, b),
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
        let mut node = &self.root;
        let mut shift = self.shift;
        loop {
            match node {
                Node::Branch(b) => {
                    node = b.get((i >> shift) & FAN_MASK)?;
                    shift = shift.wrapping_sub(FAN_BITS);
                }
                Node::Leaf(l) => return Some(l),
            }
        }
    }

    /// Slot `i`, or `None` past the end.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&AckSlot> {
        if i >= self.len {
            return None;
        }
        self.leaf(i)?.get(i & LEAF_MASK)
    }

    /// Slot `i` for writing, or `None` past the end. Copies the nodes on the
    /// path that are shared with another table (none when unshared).
    pub fn get_mut(&mut self, i: usize) -> Option<&mut AckSlot> {
        if i >= self.len {
            return None;
        }
        let mut node = &mut self.root;
        let mut shift = self.shift;
        loop {
            node = match node {
                Node::Branch(b) => {
                    let child = (i >> shift) & FAN_MASK;
                    shift = shift.wrapping_sub(FAN_BITS);
                    Arc::make_mut(b).get_mut(child)?
                }
                Node::Leaf(l) => return Arc::make_mut(l).get_mut(i & LEAF_MASK),
            };
        }
    }

    /// The slots in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            table: self,
            next: 0,
            current: [].iter(),
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
        let mut level: Vec<Node> = slots
            .chunks(LEAF)
            .map(|chunk| {
                let mut leaf = [AckSlot::Waiting; LEAF];
                for (cell, slot) in leaf.iter_mut().zip(chunk) {
                    *cell = *slot;
                }
                Node::Leaf(Arc::new(leaf))
            })
            .collect();
        for d in 0..depth {
            let pad = Node::uniform(d, AckSlot::Waiting);
            level = level
                .chunks(FAN)
                .map(|chunk| {
                    Node::Branch(Arc::new(std::array::from_fn(|k| {
                        chunk.get(k).unwrap_or(&pad).clone()
                    })))
                })
                .collect();
        }
        let root = match level.into_iter().next() {
            Some(root) => root,
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
    /// First slot of the next leaf.
    next: usize,
    current: std::slice::Iter<'a, AckSlot>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a AckSlot;

    fn next(&mut self) -> Option<&'a AckSlot> {
        if let Some(s) = self.current.next() {
            return Some(s);
        }
        let start = self.next;
        let end = self.table.len.min(start.saturating_add(LEAF));
        if start >= end {
            return None;
        }
        self.next = end;
        self.current = self.table.leaf(start)?.get(..end - start)?.iter();
        self.current.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.current.len() + self.table.len.saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a AckTable {
    type Item = &'a AckSlot;
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
            assert!(t.iter().all(|s| *s == AckSlot::Waiting));
            assert_eq!(t.get(n), None);
            assert_eq!(t.get_mut(n), None);
            assert_eq!(t.get(usize::MAX), None);
            assert_eq!(t.get_mut(usize::MAX), None);
            // Every other slot, in a scattered order.
            for i in (0..n).rev().filter(|i| i % 2 == 0) {
                *t.get_mut(i).unwrap() = acked(i);
            }
            for i in 0..n {
                let want = if i % 2 == 0 {
                    acked(i)
                } else {
                    AckSlot::Waiting
                };
                assert_eq!(t.get(i), Some(&want), "n={n} i={i}");
            }
            let v: Vec<AckSlot> = t.iter().copied().collect();
            assert_eq!(v.len(), n);
            for (i, s) in v.iter().enumerate() {
                assert_eq!(Some(s), t.get(i));
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
            *a.get_mut(0).unwrap() = acked(0);
            let snapshot = a.clone();
            let before: Vec<AckSlot> = snapshot.iter().copied().collect();
            for i in [0, n / 2, n - 1] {
                *a.get_mut(i).unwrap() = AckSlot::Acked(None);
            }
            let after: Vec<AckSlot> = snapshot.iter().copied().collect();
            assert_eq!(before, after);
            assert_eq!(snapshot.get(0), Some(&acked(0)));
            assert_eq!(a.get(n - 1), Some(&AckSlot::Acked(None)));
            assert_ne!(a, snapshot);
            // And the other way round: mutating the clone leaves the original.
            let mut c = a.clone();
            *c.get_mut(n - 1).unwrap() = AckSlot::Waiting;
            assert_eq!(a.get(n - 1), Some(&AckSlot::Acked(None)));
            assert_eq!(c.get(n - 1), Some(&AckSlot::Waiting));
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
                *c.get_mut(n - 1).unwrap() = AckSlot::Acked(None);
                assert_ne!(a, c);
                assert_ne!(hash_of(&a), hash_of(&c));
                // Reverting through a different path is equal again.
                *c.get_mut(n - 1).unwrap() = AckSlot::Waiting;
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

    #[test]
    fn filled_tables_share_structure() {
        let t = AckTable::filled(100_000, AckSlot::Waiting);
        let Node::Branch(root) = &t.root else {
            panic!("100 000 slots need branches");
        };
        // Every child of every level is the same node.
        let mut node = &t.root;
        while let Node::Branch(b) = node {
            assert!(b.iter().all(|c| c.ptr_eq(&b[0])));
            node = &b[0];
        }
        // One leaf shared by every slot: refcount = FAN (the children of the
        // lowest branch) and nothing else.
        if let Node::Leaf(l) = node {
            assert_eq!(Arc::strong_count(l), FAN);
        }
        assert_eq!(Arc::strong_count(root), 1);
        // A clone shares the root.
        let u = t.clone();
        assert!(u.root.ptr_eq(&t.root));
        // Writing one slot copies only its path: the other children stay
        // shared with the original.
        let mut w = t.clone();
        *w.get_mut(12_345).unwrap() = AckSlot::Acked(None);
        let (Node::Branch(a), Node::Branch(b)) = (&t.root, &w.root) else {
            panic!("branches");
        };
        let changed = (12_345 >> t.shift) & FAN_MASK;
        for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            assert_eq!(x.ptr_eq(y), k != changed, "child {k}");
        }
        assert_eq!(t.iter().filter(|s| **s != AckSlot::Waiting).count(), 0);
        assert_eq!(w.iter().filter(|s| **s != AckSlot::Waiting).count(), 1);
    }

    #[test]
    fn unshared_writes_do_not_copy() {
        let mut t = AckTable::filled(10_000, AckSlot::Waiting);
        // First write un-shares the path; a second write to the same leaf
        // must find it unique and keep the same nodes.
        *t.get_mut(5).unwrap() = AckSlot::Acked(None);
        let leaf = t.leaf(5).map(std::ptr::from_ref);
        *t.get_mut(6).unwrap() = AckSlot::Acked(None);
        assert_eq!(t.leaf(6).map(std::ptr::from_ref), leaf);
    }
}
