//! ckpt's own depth-first checker for any [`stateright::Model`]:
//! stateright's DFS semantics, without its per-state overheads.
//!
//! **Any model.** The engine asks a model for what `stateright::Model`
//! already says (actions, `next_state`, `within_boundary`, properties) and,
//! through the small [`Expand`] trait, for two things a model may do
//! better: the key its visited set deduplicates by ([`Expand::key`]) and the
//! actions to explore with the successors already computed for them
//! ([`Expand::expand`]). [`Plain`] is the adapter for a plain
//! `stateright::Model` (the state's [`plain_fingerprint`], every action);
//! ckpt's model plugs in its symmetry (one fingerprint per orbit)
//! and its partial-order reduction through
//! [`crate::search::system::CkptExpand`]. So the engine runs stateright's
//! own examples (two-phase commit: [`crate::search::dist::twophase`]) as it
//! runs ckpt's world.
//!
//! `check` searches with this engine by default (`--engine stateright` runs
//! stateright's `DfsChecker` instead; breadth-first searches, the shortest
//! counterexample and the Explorer stay stateright's). It implements
//! [`stateright::Checker`], so the report, the progress line, the limits and
//! the interrupt work on either engine unchanged.
//!
//! **Same search, same answers.** With one thread it visits the states in
//! the order stateright's DFS does (a LIFO stack, successors pushed in
//! action order), fingerprints them with the same hasher (aHash with
//! stateright's fixed seeds; ckpt's model under symmetry deduplicates
//! orbits by one fingerprint per orbit,
//! [`crate::search::symmetry::orbit_min`]: the same orbits merge as under
//! stateright's fingerprint of the representative, with no clone of the
//! state and fewer hashes), and judges the properties as stateright does:
//! `always` and `sometimes` on every state taken from the stack,
//! `eventually` through per-path bits that a terminal state (no successor
//! inside the boundary) reports if still set; a state already visited is not
//! terminal. So the counts (`states`, `unique_state_count`, `max_depth`) are
//! equal to stateright's, and `model/tests/engine.rs` pins that on the
//! pinned configurations, with and without symmetry and reduction. The one
//! difference: the first discovery of a property is kept (stateright
//! overwrites it with later ones, racing its threads).
//!
//! **What it saves** (perf, default configuration, one thread: stateright's
//! checker loop was about a third of the time per state): the visited set
//! is one open-addressing table of the fingerprints themselves (linear
//! probing; one cache line per lookup, where a `HashSet<u64>` reads a
//! control byte and a slot; locked once for the whole search with one
//! worker, atomic slots and no lock per lookup with several), read ahead a
//! batch of successors at a time, instead of a `DashSet` behind `RwLock`s;
//! a state's path is a shared link to its parent (one small allocation)
//! instead of a copy of every action index above it; discovered properties
//! are a bit mask instead of a `DashMap` looked up by name (SipHash of every
//! property's name for every state); and where partial-order reduction
//! narrowed a state's actions, the successors its ample check computed are
//! kept ([`Expand::expand`]) instead of stepped a second time.
//!
//! **Threads.** Each worker runs its own stack; a worker that runs dry
//! says so, and a worker with more than one job hands the older half of its
//! stack (the roots of the largest subtrees) to a shared market. The search
//! ends when every worker is idle with the market empty, or when the
//! discoveries answer the question (`finish_when_any_failure`: any `always`
//! or `eventually` violated; otherwise every property discovered).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use stateright::{Checker, Expectation, Model, Path, Property};

/// How many states a worker takes from its stack between looks at the
/// shared counters, the finish flag and hungry workers (stateright shares
/// work every 1,500 states).
const BLOCK: usize = 256;

/// The most properties a model may have: discoveries and `eventually` bits
/// are masks of one `u64`.
const PROPERTIES_MAX: usize = 64;

/// How to run the engine.
#[derive(Clone, Copy, Debug)]
pub struct EngineOptions {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// States at this depth or deeper (the initial states are depth 1) are
    /// counted but not checked or expanded (stateright's
    /// `target_max_depth`).
    pub target_max_depth: Option<usize>,
    /// Finish at the first `always` or `eventually` violation (stateright's
    /// `HasDiscoveries::AnyFailures`); otherwise once every property has a
    /// discovery (`HasDiscoveries::All`) or the space is exhausted.
    pub finish_when_any_failure: bool,
}

/// The fingerprint of a state: aHash with stateright's fixed seeds, never 0.
#[must_use]
pub fn fingerprint<T: Hash>(value: &T) -> u64 {
    fingerprint_hasher().hash_one(value).max(1)
}

/// The hasher behind [`fingerprint`] (before its `max(1)`), for keys that
/// feed it a value's bytes without building the value
/// ([`crate::search::symmetry::orbit_min_fingerprint`]).
#[must_use]
pub fn fingerprint_hasher() -> ahash::RandomState {
    // stateright's `stable::hasher` seeds (lib.rs): the same fingerprints,
    // so the same (astronomically rare) collisions and the same counts.
    ahash::RandomState::with_seeds(123_456_789_987_654_321, 98_765_432_123_456_789, 0, 0)
}

/// The key [`Plain`] gives a state: foldhash's `quality` hasher with a
/// fixed seed, never 0.
///
/// Why not [`fingerprint`] (aHash, stateright's): a derived `Hash` writes a
/// state field by field, most fields a byte or an enum's discriminant, and
/// aHash mixes each write with a multiply, one after the other; foldhash
/// gathers small writes into a 128-bit sponge and multiplies once per 16
/// bytes. On two-phase commit (about forty writes a state) that took the
/// engine's search of 8 resource managers from 2.80 to 2.28 CPU seconds
/// (measured when the adapter was written, 2026-12-03, on a loaded
/// machine); a hand-written hasher that copied the writes into a buffer
/// and hashed it in blocks measured slower (2.53). The key is still the
/// largest single cost of that search (`model/TWOPHASE-2026-12-04.md`). Any good 64-bit hash of the whole state serves as a
/// fingerprint: the counts are stateright's as long as no two states
/// collide (about one chance in 10^5 at 10^7 states). ckpt's own model
/// keeps [`fingerprint`], with which its pinned counts were measured.
#[must_use]
pub fn plain_fingerprint<T: Hash>(value: &T) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x2f0c_a3d1_5e77_b941)
        .hash_one(value)
        .max(1)
}

/// What the engine asks of a model beyond [`stateright::Model`]: the key
/// of a state in the visited set and the actions to explore from a state.
/// [`Plain`] answers for any model as stateright's DFS does; a model with a
/// symmetry or a partial-order reduction of its own answers with those.
pub trait Expand<M: Model>: Send + Sync + 'static {
    /// The key `state` is deduplicated by (never 0): two states with one key
    /// are one state to the search. [`plain_fingerprint`] for a plain model;
    /// under a symmetry, a fingerprint that is the same for every member of
    /// the orbit.
    fn key(&self, model: &M, state: &M::State) -> u64;

    /// Appends the actions to explore from `state` to `actions`, in the
    /// order they are pushed on the stack, and may append to `stepped` the
    /// successors of the first `stepped.len()` of them (in that order) when
    /// computing the actions stepped them anyway; the engine steps the rest
    /// with [`Model::next_state`]. Both vectors come in empty.
    fn expand(
        &self,
        model: &M,
        state: &M::State,
        actions: &mut Vec<M::Action>,
        stepped: &mut Vec<M::State>,
    );
}

/// The adapter for a plain [`stateright::Model`]: the key is the state's
/// [`plain_fingerprint`], the actions are [`Model::actions`], none pre-stepped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

impl<M> Expand<M> for Plain
where
    M: Model,
    M::State: Hash,
{
    fn key(&self, _: &M, state: &M::State) -> u64 {
        plain_fingerprint(state)
    }

    fn expand(
        &self,
        model: &M,
        state: &M::State,
        actions: &mut Vec<M::Action>,
        _: &mut Vec<M::State>,
    ) {
        model.actions(state, actions);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked has already lost its part of the search; the
    // data behind the lock (fingerprints, jobs) is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The one worker's visited set: open addressing with linear probing over
/// the fingerprints themselves (a fingerprint is never 0, so 0 marks an
/// empty slot).
///
/// Why not a `HashSet<u64>`: a lookup there reads a control byte and then
/// the slot, two cache lines, and most lookups (four in five generated
/// states are already known) miss the cache on both; here the probe starts
/// at the fingerprint's own slot and its neighbours share the line.
#[derive(Default)]
struct FingerprintTable {
    /// A power of two in length (or empty before the first insert).
    slots: Vec<u64>,
    len: usize,
}

impl FingerprintTable {
    /// Slots of the first table (8 KiB).
    const SLOTS_MIN: usize = 1024;

    /// Inserts `fp` (not 0); whether it was new.
    fn insert(&mut self, fp: u64) -> bool {
        // At most 80 % full (10 to 20 bytes per state, as a `HashSet<u64>`
        // takes): just below the bound a probe for a known fingerprint (four
        // in five) reads three slots on average, one for a new one about
        // thirteen, in one or two cache lines. A 70 % bound measured no
        // faster on the default check and took 1.9x the memory on 3 tasks x
        // 2 checkpoints (4.4 GiB against 2.3, with the lock stripes of the
        // time: its 212.5 M states fill 79 % of 2^28 slots, and a 70 %
        // bound doubles the table).
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        // The low bits pick the slot.
        #[allow(clippy::cast_possible_truncation)]
        let mut i = fp as usize & mask;
        loop {
            let slot = &mut self.slots[i];
            if *slot == fp {
                return false;
            }
            if *slot == 0 {
                *slot = fp;
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Reads the home slot of each of `fps` (a hint: the inserts that
    /// follow find those lines in the cache); what it read, for
    /// [`std::hint::black_box`] to keep the loads.
    fn touch(&self, fps: impl Iterator<Item = u64>) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.slots.len() - 1;
        #[allow(clippy::cast_possible_truncation)]
        fps.fold(0, |acc, fp| acc ^ self.slots[fp as usize & mask])
    }

    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).max(Self::SLOTS_MIN);
        let old = std::mem::replace(&mut self.slots, vec![0; slots]);
        self.len = 0;
        for fp in old {
            if fp != 0 {
                self.insert(fp);
            }
        }
    }
}

/// The visited set. With one worker, one [`FingerprintTable`], which the
/// worker locks once for its whole search (a lock and an unlock per
/// generated state were 5 % of its time); with several, one
/// [`AtomicTable`] they share ([`ManyVisited`]). The count of unique states
/// is published separately ([`Shared::unique`]), so the progress line never
/// waits for the table.
enum Visited {
    One(Mutex<FingerprintTable>),
    Many(Box<ManyVisited>),
}

impl Visited {
    fn new(threads: usize) -> Visited {
        if threads > 1 {
            Visited::Many(Box::new(ManyVisited::new(threads)))
        } else {
            Visited::One(Mutex::new(FingerprintTable::default()))
        }
    }

    /// Inserts `fp` (never 0: [`fingerprint`]); whether it was new. For the
    /// initial states, before the workers start.
    fn insert(&self, fp: u64) -> bool {
        let mut new = Vec::new();
        self.access(0).insert_all(&[fp], &mut new);
        new.first().copied().unwrap_or(false)
    }

    /// Worker `worker`'s access to the set: the one table, held for the
    /// whole search, or its gate into the shared one.
    fn access(&self, worker: usize) -> Access<'_> {
        match self {
            Visited::One(table) => Access::One(lock(table)),
            Visited::Many(many) => Access::Many {
                many,
                reader: many.reader(worker),
            },
        }
    }
}

/// A worker's hold on the visited set ([`Visited::access`]).
enum Access<'a> {
    One(MutexGuard<'a, FingerprintTable>),
    Many {
        many: &'a ManyVisited,
        reader: Reader,
    },
}

impl Access<'_> {
    /// Looks each of `fps` up and inserts it, in order, pushing to `new`
    /// whether it was new. First reads the home slot of each (independent
    /// loads the processor overlaps: one miss's latency for the batch
    /// instead of one per fingerprint); the inserts then find those lines
    /// in the cache.
    fn insert_all(&mut self, fps: &[u64], new: &mut Vec<bool>) {
        match self {
            Access::One(table) => {
                std::hint::black_box(table.touch(fps.iter().copied()));
                new.extend(fps.iter().map(|fp| table.insert(*fp)));
            }
            Access::Many { many, reader } => many.insert_all(reader, fps, new),
        }
    }
}

/// A cache line (two of them: the adjacent-line prefetcher pairs lines)
/// of its own, so that a word one worker writes never shares a line with
/// another's.
#[repr(align(128))]
struct Padded<T>(T);

/// The visited set of several workers: one open-addressing table of
/// atomic slots, linear probing, a slot written once (0 -> fingerprint by
/// compare-and-swap), so a lookup takes no lock and may read the home
/// slots of a whole batch ahead, as the one worker's table does.
///
/// Why not lock stripes (the shape before 2026-12-08: 64 tables, each
/// behind a `Mutex`, a lock per generated state): two workers each took a
/// lock per lookup, the lock's line moving between the cores, and a lookup
/// could not be read ahead (the table might be growing), so every miss of
/// the 128 MiB table was paid in turn while the lock was held. On two-phase
/// commit with 9 resource managers (123,558,402 lookups) two workers took
/// 23.4-28.8 CPU s where one takes 16.6-19.4; with this table 18.1-20.0,
/// and 9.5-10.5 s of wall time against 12.1-15.0
/// (`model/TWOPHASE-2026-12-08.md`). The table grows whole (the old and
/// the new one both held while it is copied), so a search's peak memory is
/// that of one worker's table, not of 64 stripes growing one at a time:
/// 3.0 GiB against 2.4 on 3 tasks x 2 checkpoints.
///
/// Growth: each worker enters the table through a gate of its own (an
/// uncontended `Mutex`, its line in that worker's cache) for each batch;
/// the table grows (doubles, at 80 % full as the one worker's does) only
/// with every gate held, so no insert is in flight while it is copied, and
/// a worker finds the new table on its next batch by the generation
/// number. The fill is counted per worker and published every
/// [`PUBLISH_EVERY`] new fingerprints (one shared write per batch of them,
/// not per state); a batch that finds the table full despite that grows it
/// and continues, so the count's lag never loses a fingerprint.
struct ManyVisited {
    gates: Box<[Padded<Mutex<()>>]>,
    /// The table; replaced (with every gate held) when it grows.
    current: Mutex<Arc<AtomicTable>>,
    /// How many times it has grown.
    generation: Padded<AtomicU64>,
    /// Fingerprints inserted, as published by the workers (may count a few
    /// twice across a growth: it sizes the table, nothing else).
    len: Padded<AtomicUsize>,
}

/// New fingerprints a worker counts before publishing them to
/// [`ManyVisited::len`].
const PUBLISH_EVERY: usize = 64;

/// A worker's view of [`ManyVisited`]: its gate, the table as of the
/// generation it last saw, its unpublished count. A worker waiting for
/// jobs keeps the table it last used alive until its next batch: at most
/// half the current table's slots (the tables only double), and only
/// while it waits (at a search's start and end).
struct Reader {
    gate: usize,
    table: Arc<AtomicTable>,
    generation: u64,
    unpublished: usize,
}

impl ManyVisited {
    /// Slots of the first table: 512 KiB, so the workers' unpublished
    /// counts ([`PUBLISH_EVERY`] each) are a small part of it.
    const SLOTS_MIN: usize = 1 << 16;

    fn new(workers: usize) -> ManyVisited {
        ManyVisited {
            gates: (0..workers.max(1))
                .map(|_| Padded(Mutex::new(())))
                .collect(),
            current: Mutex::new(Arc::new(AtomicTable::with_slots(Self::SLOTS_MIN))),
            generation: Padded(AtomicU64::new(0)),
            len: Padded(AtomicUsize::new(0)),
        }
    }

    fn reader(&self, worker: usize) -> Reader {
        let _gate = lock(&self.gates[worker % self.gates.len()].0);
        Reader {
            gate: worker % self.gates.len(),
            table: Arc::clone(&lock(&self.current)),
            generation: self.generation.0.load(Ordering::Acquire),
            unpublished: 0,
        }
    }

    /// Whether a table of `slots` holding `len` (plus what every worker may
    /// not have published yet) is past 80 % full.
    fn full(&self, len: usize, slots: usize) -> bool {
        (len + self.gates.len() * PUBLISH_EVERY) * 5 > slots * 4
    }

    /// [`Access::insert_all`] for one worker.
    fn insert_all(&self, reader: &mut Reader, fps: &[u64], new: &mut Vec<bool>) {
        let mut done = 0;
        while done < fps.len() {
            let slots = {
                let _gate = lock(&self.gates[reader.gate].0);
                // Under the gate no growth runs, and one that ran before is
                // seen (its gates' unlock happens before this lock).
                let generation = self.generation.0.load(Ordering::Acquire);
                if generation != reader.generation {
                    reader.table = Arc::clone(&lock(&self.current));
                    reader.generation = generation;
                }
                let table = &reader.table;
                std::hint::black_box(table.touch(fps[done..].iter().copied()));
                while let Some(fp) = fps.get(done) {
                    let Some(fresh) = table.insert(*fp) else {
                        break;
                    };
                    new.push(fresh);
                    reader.unpublished += usize::from(fresh);
                    done += 1;
                }
                table.slots.len()
            };
            if reader.unpublished >= PUBLISH_EVERY || done < fps.len() {
                let len = self.len.0.fetch_add(reader.unpublished, Ordering::Relaxed)
                    + reader.unpublished;
                reader.unpublished = 0;
                if done < fps.len() || self.full(len, slots) {
                    self.grow(slots);
                }
            }
        }
    }

    /// Doubles the table if it still has `slots` (another worker may have
    /// grown it first), with every gate held.
    fn grow(&self, slots: usize) {
        let _gates: Vec<MutexGuard<'_, ()>> = self.gates.iter().map(|g| lock(&g.0)).collect();
        let mut current = lock(&self.current);
        if current.slots.len() != slots {
            return;
        }
        let bigger = AtomicTable::with_slots(slots * 2);
        let mut len = 0;
        for slot in current.slots.iter() {
            let fp = slot.load(Ordering::Relaxed);
            if fp != 0 {
                // A table twice as large has room for every fingerprint.
                len += usize::from(bigger.insert(fp).unwrap_or(false));
            }
        }
        *current = Arc::new(bigger);
        self.len.0.store(len, Ordering::Relaxed);
        self.generation.0.fetch_add(1, Ordering::Release);
    }
}

/// [`ManyVisited`]'s table: a power of two of atomic slots, 0 marking an
/// empty one.
struct AtomicTable {
    slots: Box<[AtomicU64]>,
}

impl AtomicTable {
    fn with_slots(slots: usize) -> AtomicTable {
        AtomicTable {
            slots: (0..slots).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Inserts `fp` (not 0): whether it was new, or `None` if the table is
    /// full (every slot probed). A slot changes once, from 0 to a
    /// fingerprint, so a probe that reads a fingerprint other than `fp`
    /// may move on for good, and two workers inserting one fingerprint meet
    /// at the first empty slot of its probe, where one swap wins.
    fn insert(&self, fp: u64) -> Option<bool> {
        let mask = self.slots.len() - 1;
        #[allow(clippy::cast_possible_truncation)]
        let mut i = fp as usize & mask;
        for _ in 0..self.slots.len() {
            let slot = &self.slots[i];
            let seen = slot.load(Ordering::Relaxed);
            if seen == fp {
                return Some(false);
            }
            if seen == 0 {
                match slot.compare_exchange(0, fp, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Some(true),
                    Err(now) if now == fp => return Some(false),
                    Err(_) => {}
                }
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// [`FingerprintTable::touch`] for this table.
    fn touch(&self, fps: impl Iterator<Item = u64>) -> u64 {
        let mask = self.slots.len() - 1;
        #[allow(clippy::cast_possible_truncation)]
        fps.fold(0, |acc, fp| {
            acc ^ self.slots[fp as usize & mask].load(Ordering::Relaxed)
        })
    }
}

/// One step of a path: the action's index among those its source state
/// enables (the first link: the initial state's index).
struct Link {
    parent: Option<Arc<Link>>,
    index: u32,
}

impl Link {
    fn indices(link: &Arc<Link>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = Some(link);
        while let Some(l) = at {
            out.push(l.index as usize);
            at = l.parent.as_ref();
        }
        out.reverse();
        out
    }
}

/// A state waiting to be checked: a successor the visited set found new.
/// Its path's last link (its parent's path and its own index) is made when
/// it is taken to be checked, so a state whose search is cut short (the
/// depth bound) never allocates one.
struct Job<S> {
    state: S,
    /// The path to the state's parent (`None` for an initial state).
    parent: Option<Arc<Link>>,
    /// The action's index among those the parent enables (an initial
    /// state's own index).
    index: u32,
    /// `eventually` properties not yet satisfied on the path.
    ebits: u64,
    /// Depth in states (the initial states are depth 1).
    depth: usize,
}

/// Jobs handed between workers.
struct Market<S> {
    jobs: Vec<Job<S>>,
    /// Workers waiting for jobs.
    idle: usize,
    /// Every worker idle with no job left: the search is over.
    exhausted: bool,
}

struct Shared<M: Model, X> {
    model: M,
    expand: X,
    properties: Vec<Property<M>>,
    opts: EngineOptions,
    visited: Visited,
    /// Unique states: what the workers inserted, published with `states`.
    unique: AtomicUsize,
    states: AtomicUsize,
    depth: AtomicUsize,
    /// Bit `i`: property `i` has a discovery.
    discovered: AtomicU64,
    discoveries: Mutex<Vec<Option<Vec<usize>>>>,
    /// The bits of `discovered` that finish the search.
    finish_mask: u64,
    finish_all: bool,
    done: AtomicBool,
    market: Mutex<Market<M::State>>,
    wake: Condvar,
    /// Workers waiting in the market (read without the lock by busy
    /// workers deciding whether to share).
    hungry: AtomicUsize,
}

impl<M, X> Shared<M, X>
where
    M: Model,
    M::Action: Clone,
    X: Expand<M>,
{
    fn discover(&self, i: usize, path: &Arc<Link>) {
        let bit = 1u64 << i;
        if self.discovered.load(Ordering::Relaxed) & bit != 0 {
            return;
        }
        {
            let mut d = lock(&self.discoveries);
            if d[i].is_none() {
                d[i] = Some(Link::indices(path));
            }
        }
        let now = self.discovered.fetch_or(bit, Ordering::SeqCst) | bit;
        let finished = if self.finish_all {
            now & self.finish_mask == self.finish_mask
        } else {
            now & self.finish_mask != 0
        };
        if finished {
            self.done.store(true, Ordering::SeqCst);
            let _m = lock(&self.market);
            self.wake.notify_all();
        }
    }

    /// Takes jobs from the market into `local`; false when the search is
    /// over.
    fn take(&self, local: &mut Vec<Job<M::State>>, threads: usize) -> bool {
        let mut m = lock(&self.market);
        loop {
            if self.done.load(Ordering::SeqCst) || m.exhausted {
                return false;
            }
            if !m.jobs.is_empty() {
                local.append(&mut m.jobs);
                return true;
            }
            m.idle += 1;
            if m.idle == threads {
                m.exhausted = true;
                self.wake.notify_all();
                return false;
            }
            self.hungry.fetch_add(1, Ordering::SeqCst);
            m = self.wake.wait(m).unwrap_or_else(PoisonError::into_inner);
            self.hungry.fetch_sub(1, Ordering::SeqCst);
            m.idle -= 1;
        }
    }

    /// Hands the older half of `local` to the market.
    fn share(&self, local: &mut Vec<Job<M::State>>) {
        let half = local.len() / 2;
        let mut m = lock(&self.market);
        m.jobs.extend(local.drain(..half));
        self.wake.notify_all();
    }

    fn work(&self, worker: usize) {
        // A worker that panics (a reducer bug: no input should make one)
        // ends the search, so the others do not wait for it forever; the
        // panic reaches whoever joins the checker.
        struct EndsSearchOnPanic<'a, M: Model, X>(&'a Shared<M, X>);
        impl<M: Model, X> Drop for EndsSearchOnPanic<'_, M, X> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.done.store(true, Ordering::SeqCst);
                    let _m = lock(&self.0.market);
                    self.0.wake.notify_all();
                }
            }
        }
        let _guard = EndsSearchOnPanic(self);
        let threads = self.opts.threads.max(1);
        let mut local: Vec<Job<M::State>> = Vec::new();
        let mut actions: Vec<M::Action> = Vec::new();
        let mut stepped: Vec<M::State> = Vec::new();
        // The successors of the state being expanded, and their keys.
        let mut next_states: Vec<M::State> = Vec::new();
        let mut keys: Vec<u64> = Vec::new();
        // Each successor's action index among those its state enables.
        let mut successor_indices: Vec<u32> = Vec::new();
        let mut states = 0usize;
        let mut unique = 0usize;
        let mut visited = self.visited.access(worker);
        let mut fresh: Vec<bool> = Vec::new();
        let mut depth_max = 0usize;
        let mut budget = BLOCK;
        loop {
            budget -= 1;
            if budget == 0 {
                budget = BLOCK;
                self.states.fetch_add(states, Ordering::Relaxed);
                self.unique.fetch_add(unique, Ordering::Relaxed);
                states = 0;
                unique = 0;
                if self.done.load(Ordering::Relaxed) {
                    return;
                }
                if threads > 1 && local.len() > 1 && self.hungry.load(Ordering::Relaxed) > 0 {
                    self.share(&mut local);
                }
            }
            let Some(mut job) = local.pop() else {
                self.states.fetch_add(states, Ordering::Relaxed);
                self.unique.fetch_add(unique, Ordering::Relaxed);
                states = 0;
                unique = 0;
                if self.take(&mut local, threads) {
                    continue;
                }
                return;
            };
            if job.depth > depth_max {
                depth_max = job.depth;
                self.depth.fetch_max(depth_max, Ordering::Relaxed);
            }
            if self.opts.target_max_depth.is_some_and(|t| job.depth >= t) {
                continue;
            }
            let path = Arc::new(Link {
                parent: job.parent.take(),
                index: job.index,
            });
            let ebits = self.judge(&job, &path);
            actions.clear();
            stepped.clear();
            self.expand
                .expand(&self.model, &job.state, &mut actions, &mut stepped);
            let mut pre = stepped.drain(..);
            // All successors and their keys first, then one pass that reads
            // each key's home slot (independent loads the processor
            // overlaps: one miss's latency for the batch instead of one per
            // successor), then the inserts, in action order; only the new
            // successors become jobs on the stack, in that order.
            //
            // Why not push every successor on the stack as a job at once and
            // drop the known ones (the shape before 2026-12-06): building a
            // job wrote its small fields to the stack and copied them with
            // wider loads, a store-forwarding stall on every successor (most
            // of them, four in five or more, already known); a successor now
            // moves into `next_states` as the model returned it, and only a
            // new one is built into a job.
            next_states.clear();
            keys.clear();
            for (index, action) in actions.drain(..).enumerate() {
                let next = match pre.next() {
                    Some(n) => n,
                    None => match self.model.next_state(&job.state, action) {
                        Some(n) => n,
                        None => continue,
                    },
                };
                if !self.model.within_boundary(&next) {
                    continue;
                }
                keys.push(self.expand.key(&self.model, &next));
                next_states.push(next);
                successor_indices.push(u32::try_from(index).unwrap_or(u32::MAX));
            }
            drop(pre);
            states += keys.len();
            let terminal = keys.is_empty();
            fresh.clear();
            visited.insert_all(&keys, &mut fresh);
            for ((next, new), index) in next_states
                .drain(..)
                .zip(fresh.iter().copied())
                .zip(successor_indices.drain(..))
            {
                if !new {
                    continue;
                }
                unique += 1;
                local.push(Job {
                    state: next,
                    parent: Some(Arc::clone(&path)),
                    index,
                    ebits,
                    depth: job.depth + 1,
                });
            }
            if terminal && ebits != 0 {
                for i in 0..self.properties.len() {
                    if ebits & (1 << i) != 0 {
                        self.discover(i, &path);
                    }
                }
            }
        }
    }

    /// Judges `always` and `sometimes` on the job's state (at `path`); the
    /// `eventually` bits left for its successors.
    fn judge(&self, job: &Job<M::State>, path: &Arc<Link>) -> u64 {
        let found = self.discovered.load(Ordering::Relaxed);
        let mut ebits = job.ebits;
        for (i, p) in self.properties.iter().enumerate() {
            let bit = 1u64 << i;
            match p.expectation {
                Expectation::Always => {
                    if found & bit == 0 && !(p.condition)(&self.model, &job.state) {
                        self.discover(i, path);
                    }
                }
                Expectation::Sometimes => {
                    if found & bit == 0 && (p.condition)(&self.model, &job.state) {
                        self.discover(i, path);
                    }
                }
                Expectation::Eventually => {
                    if ebits & bit != 0 && (p.condition)(&self.model, &job.state) {
                        ebits &= !bit;
                    }
                }
            }
        }
        ebits
    }
}

/// A running (or finished) search by ckpt's engine.
pub struct EngineChecker<M: Model, X = Plain> {
    shared: Arc<Shared<M, X>>,
    init: Vec<M::State>,
    handles: Vec<JoinHandle<()>>,
}

impl<M: Model, X> std::fmt::Debug for EngineChecker<M, X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineChecker")
            .field("opts", &self.shared.opts)
            .field("states", &self.shared.states.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Starts a depth-first search of `model` on `opts.threads` workers, its
/// keys and actions from `expand` ([`Plain`] for a plain model).
///
/// # Panics
///
/// If the model has more than 64 properties (the masks are one `u64`), or
/// a worker thread cannot be started.
#[must_use]
pub fn spawn<M, X>(model: M, expand: X, opts: EngineOptions) -> EngineChecker<M, X>
where
    M: Model + Send + Sync + 'static,
    M::State: Clone + Send + Sync + 'static,
    M::Action: Clone + Send + Sync + 'static,
    X: Expand<M>,
{
    let properties = model.properties();
    assert!(
        properties.len() <= PROPERTIES_MAX,
        "the engine's masks hold {PROPERTIES_MAX} properties, the model has {}",
        properties.len()
    );
    let mut ebits = 0u64;
    let mut failures = 0u64;
    for (i, p) in properties.iter().enumerate() {
        match p.expectation {
            Expectation::Eventually => {
                ebits |= 1 << i;
                failures |= 1 << i;
            }
            Expectation::Always => failures |= 1 << i,
            Expectation::Sometimes => {}
        }
    }
    let all = if properties.len() == 64 {
        u64::MAX
    } else {
        (1u64 << properties.len()) - 1
    };
    let init: Vec<M::State> = model
        .init_states()
        .into_iter()
        .filter(|s| model.within_boundary(s))
        .collect();
    let visited = Visited::new(opts.threads);
    let mut unique = 0;
    for s in &init {
        unique += usize::from(visited.insert(expand.key(&model, s)));
    }
    let jobs: Vec<Job<M::State>> = init
        .iter()
        .enumerate()
        .map(|(i, s)| Job {
            state: s.clone(),
            parent: None,
            index: u32::try_from(i).unwrap_or(u32::MAX),
            ebits,
            depth: 1,
        })
        .collect();
    let n = properties.len();
    let shared = Arc::new(Shared {
        model,
        expand,
        properties,
        opts,
        visited,
        unique: AtomicUsize::new(unique),
        states: AtomicUsize::new(init.len()),
        depth: AtomicUsize::new(0),
        discovered: AtomicU64::new(0),
        discoveries: Mutex::new(vec![None; n]),
        finish_mask: if opts.finish_when_any_failure {
            failures
        } else {
            all
        },
        finish_all: !opts.finish_when_any_failure,
        done: AtomicBool::new(false),
        market: Mutex::new(Market {
            jobs,
            idle: 0,
            exhausted: false,
        }),
        wake: Condvar::new(),
        hungry: AtomicUsize::new(0),
    });
    let handles = (0..opts.threads.max(1))
        .map(|t| {
            let s = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("checker-{t}"))
                .spawn(move || s.work(t))
                .unwrap_or_else(|e| panic!("cannot start checker thread {t}: {e}"))
        })
        .collect();
    EngineChecker {
        shared,
        init,
        handles,
    }
}

impl<M, X> EngineChecker<M, X>
where
    M: Model,
    M::State: Clone + PartialEq,
    M::Action: Clone + PartialEq,
{
    /// The path of action indices to a state as a stateright [`Path`].
    fn path(&self, indices: &[usize]) -> Option<Path<M::State, M::Action>> {
        let model = &self.shared.model;
        let (&first, rest) = indices.split_first()?;
        let init = self.init.get(first)?.clone();
        let mut state = init.clone();
        let mut actions = Vec::with_capacity(rest.len());
        let mut enabled = Vec::new();
        for &i in rest {
            enabled.clear();
            model.actions(&state, &mut enabled);
            let a = enabled.get(i)?.clone();
            state = model.next_state(&state, a.clone())?;
            actions.push(a);
        }
        Path::from_actions(model, init, actions.iter())
    }
}

impl<M, X> Checker<M> for EngineChecker<M, X>
where
    M: Model,
    M::State: Clone + PartialEq + std::fmt::Debug + Hash,
    M::Action: Clone + PartialEq + std::fmt::Debug,
{
    fn model(&self) -> &M {
        &self.shared.model
    }

    fn state_count(&self) -> usize {
        self.shared.states.load(Ordering::Relaxed)
    }

    fn unique_state_count(&self) -> usize {
        self.shared.unique.load(Ordering::Relaxed)
    }

    fn max_depth(&self) -> usize {
        self.shared.depth.load(Ordering::Relaxed)
    }

    fn discoveries(&self) -> HashMap<&'static str, Path<M::State, M::Action>> {
        let found: Vec<(usize, Vec<usize>)> = lock(&self.shared.discoveries)
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.clone().map(|d| (i, d)))
            .collect();
        found
            .into_iter()
            .filter_map(|(i, indices)| {
                let path = self.path(&indices)?;
                Some((self.shared.properties[i].name, path))
            })
            .collect()
    }

    fn handles(&mut self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut self.handles)
    }

    fn is_done(&self) -> bool {
        self.handles.iter().all(JoinHandle::is_finished)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::{lock, FingerprintTable, ManyVisited, Visited};

    #[test]
    fn the_fingerprint_table_keeps_every_fingerprint_once_through_its_growth() {
        let mut t = FingerprintTable::default();
        // Fingerprints that share their low bits collide in the probe.
        let fps: Vec<u64> = (1..=5_000u64).map(|i| i << 20 | 7).collect();
        for &fp in &fps {
            assert!(t.insert(fp), "{fp} is new");
        }
        for &fp in &fps {
            assert!(!t.insert(fp), "{fp} is known");
        }
        assert_eq!(t.len, fps.len());
        assert!(t.slots.len().is_power_of_two());
        assert!(t.len * 5 <= t.slots.len() * 4, "at most 80 % full");
        assert_eq!(t.slots.iter().filter(|s| **s != 0).count(), fps.len());
    }

    #[test]
    fn the_shared_visited_set_counts_each_fingerprint_once_through_its_growth() {
        // More fingerprints than the first table holds, so it grows while
        // two workers insert the same fingerprints in opposite orders, in
        // batches of 7; low bits shared, so probes collide.
        let fps: Vec<u64> = (1..=200_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) << 4 | 1)
            .collect();
        let v = Visited::new(2);
        let Visited::Many(many) = &v else {
            panic!("two workers share one table");
        };
        let new: Vec<usize> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..2)
                .map(|w| {
                    let v = &v;
                    let fps = &fps;
                    scope.spawn(move || {
                        let mut access = v.access(w);
                        let mut order = fps.clone();
                        if w == 1 {
                            order.reverse();
                        }
                        let mut fresh = Vec::new();
                        for batch in order.chunks(7) {
                            access.insert_all(batch, &mut fresh);
                        }
                        assert_eq!(fresh.len(), fps.len());
                        fresh.iter().filter(|n| **n).count()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(
            new.iter().sum::<usize>(),
            fps.len(),
            "each new once: {new:?}"
        );
        let table = lock(&many.current);
        assert!(table.slots.len() > ManyVisited::SLOTS_MIN, "it grew");
        assert!(many.generation.0.load(Ordering::Relaxed) > 0);
        let held = table
            .slots
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) != 0)
            .count();
        assert_eq!(held, fps.len());
        assert!(held * 5 <= table.slots.len() * 4, "at most 80 % full");
        drop(table);
        assert!(fps.iter().all(|fp| !v.insert(*fp)), "every one known");
        let one = Visited::new(1);
        assert!(one.insert(fps[0]) && !one.insert(fps[0]));
        assert!(matches!(&one, Visited::One(t) if lock(t).len == 1));
    }

    #[test]
    fn a_full_shared_table_grows_in_the_middle_of_a_batch() {
        // One batch larger than the first table: its inserts find the table
        // full and grow it, losing none.
        let v = ManyVisited::new(1);
        let fps: Vec<u64> = (1..=(ManyVisited::SLOTS_MIN as u64 + 10)).collect();
        let mut reader = v.reader(0);
        let mut fresh = Vec::new();
        v.insert_all(&mut reader, &fps, &mut fresh);
        assert_eq!(fresh.len(), fps.len());
        assert!(fresh.iter().all(|n| *n));
        fresh.clear();
        v.insert_all(&mut reader, &fps, &mut fresh);
        assert!(fresh.iter().all(|n| !*n));
        assert!(lock(&v.current).slots.len() >= 2 * ManyVisited::SLOTS_MIN);
    }
}
