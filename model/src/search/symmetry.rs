//! Symmetry reduction over tasks: a canonical representative of a state's
//! orbit under the permutations of interchangeable tasks.
//!
//! Interchangeable tasks: with one source (`fanout`), every task but the
//! source; with several sources (`join`), the sources. The representative is
//! the member of the orbit (every renaming of the class) with the smallest
//! 64-bit hash of the whole state: canonical by construction (whatever
//! member of the orbit we start from, the same set of candidates is
//! compared), up to hash collisions, the same assumption the checker's
//! fingerprints make (two different states with one 64-bit fingerprint
//! would be merged: a chance of about n^2 / 2^65 over n states, 3 in 10^8
//! at a million). Renaming a task moves everything
//! that names it: its task side, its ack slots and status at the
//! coordinator, the channels, the messages, and every state handle it wrote
//! (handles encode their task: [`rename_handle`]) wherever it appears (the
//! coordinator's checkpoints, the ledgers, the store, the files). The class
//! has at most a few tasks, so the orbit is small (2 for 3 tasks, 6 for 4).
//!
//! The renamings are listed once per run (per thread), and the renamed
//! coordinator, handle ledger and store are cached in each shared part of
//! the world ([`Sealed::images`]): a task's step leaves those parts alone, so
//! the states it generates reuse their images instead of renaming and
//! rehashing them again (on 3 tasks x 2 checkpoints the renaming was more
//! than half of the search's time).

use ckpt_core::{StateHandle, TaskId};
use stateright::Representative;

use std::cell::RefCell;
use std::hash::Hash;
use std::rc::Rc;

use smallvec::SmallVec;

use ckpt_core::coordinator::CoordinatorState;
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::route::ToCoordinator;

use ckpt_core::invariants::durability::Stored;

use crate::world::{
    rename_handle, Durable, InDoubt, Io, Msg, Sealed, SharedFiles, SharedSide, World as SysState,
    Zombie,
};

fn class(s: &SysState) -> Vec<TaskId> {
    let n = u32::try_from(s.tasks.len()).unwrap_or(u32::MAX);
    let trigger = s.coord.config().tasks_to_trigger();
    if trigger.len() == 1 {
        (0..n)
            .map(TaskId)
            .filter(|t| !trigger.contains(t))
            .collect()
    } else {
        trigger.to_vec()
    }
}

/// Whether symmetry reduction can merge any two states of `cfg`: some class
/// of interchangeable tasks has two members or more. When it cannot, the
/// representative is the state itself, and asking the checker for it only
/// costs a clone and a second hash per generated state.
#[must_use]
pub fn reduces(cfg: &crate::world::ModelConfig) -> bool {
    let trigger = cfg.settings().tasks_to_trigger;
    let n = cfg.tasks.max(1) as usize;
    if trigger.len() == 1 {
        n.saturating_sub(1) >= 2
    } else {
        trigger.len() >= 2
    }
}

fn rename_msg(m: &Msg, perm: &[TaskId]) -> Msg {
    let image = perm.get(m.task().0 as usize).copied().unwrap_or(m.task());
    match m.with_task(image) {
        Msg::ToCoord {
            task,
            attempt,
            msg: ToCoordinator::Ack { checkpoint, handle },
        } => Msg::ToCoord {
            task,
            attempt,
            msg: ToCoordinator::Ack {
                checkpoint,
                handle: rename_handle(handle, perm),
            },
        },
        other => other,
    }
}

/// Renames tasks by `perm` (`perm[old] = new`); `None` if the coordinator
/// refuses the permutation.
#[must_use]
pub fn permute(s: &SysState, perm: &[TaskId], ordered_net: bool) -> Option<SysState> {
    let coord = Sealed::new(permute_coordinator(&s.coord, perm)?);
    let ledger = Sealed::new(permute_ledger(&s.ledger, perm));
    let durable = Sealed::new(permute_durable(&s.durable, perm));
    assemble(s, perm, ordered_net, coord, ledger, durable)
}

/// The coordinator renamed by `perm` (`None` if it refuses the renaming).
fn permute_coordinator(c: &CoordinatorState, perm: &[TaskId]) -> Option<CoordinatorState> {
    c.permute_tasks(perm, &|h| rename_handle(h, perm))
}

/// The handle ledger renamed by `perm`.
fn permute_ledger(l: &HandleLedger, perm: &[TaskId]) -> HandleLedger {
    l.rename_handles(&|h| rename_handle(h, perm))
}

/// The store renamed by `perm`.
fn permute_durable(d: &Durable, perm: &[TaskId]) -> Durable {
    let rename = |h: StateHandle| rename_handle(h, perm);
    let rename_all =
        |v: &[StateHandle]| -> Vec<StateHandle> { v.iter().map(|h| rename(*h)).collect() };
    Durable {
        ledger: d.ledger.rename_handles(&rename),
        counter: d.counter,
        metadata: d
            .metadata
            .iter()
            .map(|m| Stored {
                handles: rename_all(&m.handles),
                ..m.clone()
            })
            .collect(),
        in_doubt: d.in_doubt.as_ref().map(|i| InDoubt {
            checkpoint: i.checkpoint,
            if_stored: rename_all(&i.if_stored),
            if_not_stored: rename_all(&i.if_not_stored),
        }),
        fence: d.fence,
        files: SharedFiles {
            manager: d.files.manager.rename_handles(&rename),
            ledger: d.files.ledger.rename_handles(&rename),
        },
    }
}

/// `s` renamed by `perm`, given its coordinator, handle ledger and store
/// already renamed: the task sides move (a side whose inputs are renamed is
/// copied and rehashed; the others stay shared with `s`), the messages are
/// renamed and sorted again, the rest is copied.
fn assemble(
    s: &SysState,
    perm: &[TaskId],
    ordered_net: bool,
    coord: Sealed<CoordinatorState>,
    ledger: Sealed<HandleLedger>,
    durable: Sealed<Durable>,
) -> Option<SysState> {
    let image = |t: TaskId| perm.get(t.0 as usize).copied().unwrap_or(t);
    let mut tasks: Vec<Option<SharedSide>> = vec![None; s.tasks.len()];
    for (old, side) in s.tasks.iter().enumerate() {
        let new = image(TaskId(u32::try_from(old).ok()?));
        let side = rename_side(side, perm).unwrap_or_else(|| side.clone());
        *tasks.get_mut(new.0 as usize)? = Some(side);
    }
    let tasks = tasks.into_iter().collect::<Option<Vec<_>>>()?;
    let mut net = Vec::with_capacity(s.net.len());
    rename_net_into(&s.net, perm, ordered_net, &mut net);
    // Every field named: a new one cannot be left out of the renaming.
    let SysState {
        now,
        coord: _,
        tasks: _,
        net: _,
        io,
        used,
        scheduler_stopped,
        history,
        ledger: _,
        durable: _,
        job_failover_due,
        awaiting_restore,
        zombie,
        stopped_with,
        violation,
        ordered_net: net_ordered,
    } = s;
    let zombie = match zombie {
        Some(z) => Some(rename_zombie(z, perm)?),
        None => None,
    };
    Some(SysState {
        now: *now,
        coord,
        tasks,
        net,
        io: io.clone(),
        used: *used,
        scheduler_stopped: *scheduler_stopped,
        history: *history,
        ledger,
        durable,
        job_failover_due: *job_failover_due,
        awaiting_restore: *awaiting_restore,
        zombie,
        stopped_with: *stopped_with,
        violation: violation.clone(),
        ordered_net: *net_ordered,
    })
}

/// `side` renamed by `perm` (its input channels' upstream tasks, in the
/// order of their new names, and the handle of its last ack), sealed, or
/// `None` when the renaming leaves it as it is. Where it moves to is the
/// caller's business.
fn rename_side(side: &SharedSide, perm: &[TaskId]) -> Option<SharedSide> {
    let image = |t: TaskId| perm.get(t.0 as usize).copied().unwrap_or(t);
    let renamed_ack = side
        .last_ack
        .map(|(c, h)| (c, rename_handle(h, perm)))
        .filter(|a| Some(*a) != side.last_ack);
    if renamed_ack.is_none() && side.inputs.iter().all(|c| image(c.from) == c.from) {
        return None;
    }
    // Copied once, into its own part (the mutable access copies it).
    let mut side = side.clone();
    for c in &mut side.inputs {
        c.from = image(c.from);
    }
    side.inputs.sort_by_key(|c| c.from);
    if renamed_ack.is_some() {
        side.last_ack = renamed_ack;
    }
    side.seal();
    Some(side)
}

/// Appends the messages in flight renamed by `perm` to `renamed` (empty),
/// in the order a world keeps them (sorted, or by link and FIFO within a
/// link when `ordered`). Into a buffer the caller keeps, not returned:
/// [`orbit_min_fingerprint`] renames the network once per renaming of the
/// orbit, and returning an inline `SmallVec` copied its whole buffer each
/// time.
fn rename_net_into<C: Extend<Msg> + std::ops::DerefMut<Target = [Msg]>>(
    net: &[Msg],
    perm: &[TaskId],
    ordered: bool,
    renamed: &mut C,
) {
    renamed.extend(net.iter().map(|m| rename_msg(m, perm)));
    if ordered {
        // Stable: keeps each link's FIFO order.
        renamed.sort_by_key(Msg::link);
    } else {
        renamed.sort();
    }
}

/// The deposed coordinator renamed by `perm` (`None` where the
/// coordinator refuses the renaming).
fn rename_zombie(z: &Zombie, perm: &[TaskId]) -> Option<Box<Zombie>> {
    Some(Box::new(Zombie {
        coord: Sealed::new(permute_coordinator(&z.coord, perm)?),
        ledger: Sealed::new(permute_ledger(&z.ledger, perm)),
        io: z.io.clone(),
    }))
}

/// The renamings of the interchangeable tasks of a run's worlds, but the
/// identity, computed once per run (per thread) instead of once per state.
struct Orbit {
    /// What they were computed for: the task count and the coordinator's
    /// tasks to trigger, which fix the class.
    tasks: usize,
    trigger: Vec<TaskId>,
    /// Names the list for the parts' cached images ([`Sealed::images`]).
    key: u64,
    perms: Vec<Vec<TaskId>>,
}

thread_local! {
    static ORBIT: RefCell<Option<Rc<Orbit>>> = const { RefCell::new(None) };
}

fn orbit(s: &SysState) -> Rc<Orbit> {
    let trigger = s.coord.config().tasks_to_trigger();
    let tasks = s.tasks.len();
    ORBIT.with(|cell| {
        if let Some(hit) = cell
            .borrow()
            .as_ref()
            .filter(|o| o.tasks == tasks && o.trigger == trigger)
        {
            return Rc::clone(hit);
        }
        let class = class(s);
        let perms: Vec<Vec<TaskId>> = if class.len() < 2 {
            Vec::new()
        } else {
            permutations(&class, tasks)
                .into_iter()
                .filter(|perm| !perm.iter().enumerate().all(|(i, p)| p.0 as usize == i))
                .collect()
        };
        let key = ahash::RandomState::with_seeds(1, 2, 3, 4).hash_one(&perms);
        let o = Rc::new(Orbit {
            tasks,
            trigger: trigger.to_vec(),
            key,
            perms,
        });
        *cell.borrow_mut() = Some(Rc::clone(&o));
        o
    })
}

/// `s` renamed by the orbit's renaming `i`, its coordinator, handle ledger
/// and store taken from their cached images (computed once per part and
/// shared by every state holding that part). The same renaming as
/// [`permute`] with the orbit's `i`-th permutation.
fn permute_at(s: &SysState, orbit: &Orbit, i: usize) -> Option<SysState> {
    let perm = orbit.perms.get(i)?;
    let coord = image(&s.coord, orbit, i, permute_coordinator)?;
    let ledger = image(&s.ledger, orbit, i, |l, p| Some(permute_ledger(l, p)))?;
    let durable = image(&s.durable, orbit, i, |d, p| Some(permute_durable(d, p)))?;
    assemble(s, perm, s.ordered_net, coord, ledger, durable)
}

/// `part` renamed by the orbit's renaming `i` through `rename`: its cached
/// image ([`Sealed::images`], every renaming of the orbit computed at the
/// first call), or, if the part's images were cached for another list of
/// renamings, computed here. `None` where `rename` refuses.
fn image<T: Hash + Clone>(
    part: &Sealed<T>,
    orbit: &Orbit,
    i: usize,
    rename: impl Fn(&T, &[TaskId]) -> Option<T>,
) -> Option<Sealed<T>> {
    let renamed = |j: usize, value: &T| rename(value, orbit.perms.get(j)?);
    match part.images(orbit.key, orbit.perms.len(), renamed) {
        Some(images) => images.get(i)?.clone(),
        None => renamed(i, part).map(Sealed::new),
    }
}

/// The hash the representative minimises: aHash with fixed seeds (any
/// fixed hash gives a canonical representative; this one is fast).
fn fingerprint(s: &SysState) -> u64 {
    ahash::RandomState::with_seeds(
        0x6a09_e667_f3bc_c908,
        0xbb67_ae85_84ca_a73b,
        0x3c6e_f372_fe94_f82b,
        0xa54f_f53a_5f1d_36f1,
    )
    .hash_one(s)
}

/// Every permutation of `class` (as a full task permutation of `n` tasks).
fn permutations(class: &[TaskId], n: usize) -> Vec<Vec<TaskId>> {
    let mut images: Vec<Vec<TaskId>> = vec![Vec::new()];
    for _ in class {
        let mut next = Vec::new();
        for partial in &images {
            for c in class {
                if !partial.contains(c) {
                    let mut p = partial.clone();
                    p.push(*c);
                    next.push(p);
                }
            }
        }
        images = next;
    }
    images
        .into_iter()
        .map(|img| {
            let mut perm: Vec<TaskId> = (0..n)
                .map(|i| TaskId(u32::try_from(i).unwrap_or(u32::MAX)))
                .collect();
            for (from, to) in class.iter().zip(img) {
                if let Some(p) = perm.get_mut(from.0 as usize) {
                    *p = to;
                }
            }
            perm
        })
        .collect()
}

/// The other members of the orbit of `s`: `s` under every permutation of
/// its interchangeable tasks but the identity (none when the class has
/// fewer than two tasks; a permutation the coordinator refuses is skipped).
fn renamings(s: &SysState) -> impl Iterator<Item = SysState> + '_ {
    let orbit = orbit(s);
    (0..orbit.perms.len()).filter_map(move |i| permute_at(s, &orbit, i))
}

/// The canonical representative of `s` under task permutations.
#[must_use]
pub fn canonical(s: &SysState) -> SysState {
    let mut best = (fingerprint(s), s.clone());
    for c in renamings(s) {
        let f = fingerprint(&c);
        if f < best.0 {
            best = (f, c);
        }
    }
    best.1
}

/// Which orbit key [`orbit_min`] computes: 2 since 2026-12-05 (the
/// smallest hash over the members whose task sides come first), 1 before
/// (the smallest over the whole orbit). A distributed search's checkpoint
/// names it in its configuration, so that a resume by a build with another
/// key is refused rather than counting the orbits it saw again (a change
/// to the world's own `Hash` is not versioned this way).
pub const ORBIT_KEY_VERSION: u32 = 2;

/// The digests of `s`'s task sides in task order: what the key compares
/// first ([`orbit_min`]).
fn side_digests(s: &SysState) -> SmallVec<[PartHash; 8]> {
    s.tasks.iter().map(|t| PartHash(t.digest())).collect()
}

/// A fingerprint of the orbit of `s` (the same whichever member `s` is),
/// computed without cloning `s` (the checker's visited set needs the
/// fingerprint, not the representative): the smallest `hash` over the
/// members whose task sides' digests, read in task order, are the
/// smallest sequence in the orbit.
///
/// Why not the smallest `hash` over the whole orbit (the key before
/// 2026-12-05): most members lose on the sides' digests, which a renaming
/// computes anyway, so only the members that tie on them (usually one)
/// have the rest of the world hashed (their messages renamed and sorted
/// again, the zombie renamed, every other field). Choosing the members
/// this way is itself the same for the whole orbit: renaming `s` by `g`
/// first renames the orbit's members among themselves, and their sides
/// with them. The same orbits merge as under the smallest hash over the
/// orbit; only the number that stands for each changes.
#[must_use]
pub fn orbit_min(s: &SysState, hash: impl Fn(&SysState) -> u64) -> u64 {
    let mut best = (side_digests(s), hash(s));
    for c in renamings(s) {
        let sides = side_digests(&c);
        if sides < best.0 {
            best = (sides, hash(&c));
        } else if sides == best.0 {
            best.1 = best.1.min(hash(&c));
        }
    }
    best.1
}

/// `orbit_min(s, fingerprint)` with the checker's
/// [`fingerprint`](crate::search::engine::fingerprint) (each hash at least
/// 1), equal to it bit for bit, without building the renamed worlds: each
/// renaming's sides are renamed for their digests, and the fingerprint of
/// a member that ties for the smallest of them is fed the bytes the
/// renamed world's `Hash` would write (its parts' hashes from their cached
/// images, the task sides' hashes in their new places, the renamed
/// messages sorted again, the rest as it is). Building a renamed world (a
/// task vector, a message vector, the parts' handles, then dropping them)
/// was most of the key's cost under symmetry.
#[must_use]
pub fn orbit_min_fingerprint(s: &SysState) -> u64 {
    let build = crate::search::engine::fingerprint_hasher();
    let orbit = orbit(s);
    // The members tying for the smallest sides so far (`None`: `s`
    // itself), with what their hash needs.
    let mut best_sides = side_digests(s);
    let mut ties: SmallVec<[Option<Renamed>; 6]> = smallvec::smallvec![None];
    for i in 0..orbit.perms.len() {
        let Some(r) = rename_parts(s, &orbit, i) else {
            continue;
        };
        match r.sides.cmp(&best_sides) {
            std::cmp::Ordering::Less => {
                best_sides.clone_from(&r.sides);
                ties.clear();
                ties.push(Some(r));
            }
            std::cmp::Ordering::Equal => ties.push(Some(r)),
            std::cmp::Ordering::Greater => {}
        }
    }
    let mut net = SmallVec::new();
    ties.iter()
        .map(|t| match t {
            None => build.hash_one(s),
            Some(r) => {
                net.clear();
                renamed_hash(s, r, &build, &mut net)
            }
        })
        .map(|h| h.max(1))
        .fold(u64::MAX, u64::min)
}

/// A part's hash as it appears in a world's byte stream (what
/// `Sealed::hash` writes), for [`renamed_hash`].
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PartHash(u64);

impl Hash for PartHash {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.0);
    }
}

/// What [`renamed_hash`] needs of `permute_at(s, orbit, i)` beside `s`:
/// the renaming, its parts' hashes, its task sides' hashes in their new
/// places, its renamed zombie's parts' hashes.
struct Renamed<'o> {
    perm: &'o [TaskId],
    coord: u64,
    ledger: u64,
    durable: u64,
    sides: SmallVec<[PartHash; 8]>,
    zombie: Option<(u64, u64)>,
}

/// The bytes a renamed [`Zombie`]'s derived `Hash` writes, its parts'
/// hashes taken from their cached images (for [`renamed_hash`]): the same
/// fields in the same order.
#[derive(Hash)]
struct ZombieBytes<'a> {
    coord: PartHash,
    ledger: PartHash,
    io: &'a Vec<Io>,
}

/// The parts of `permute_at(s, orbit, i)` that [`renamed_hash`] takes
/// whole (`None` where `permute_at` is `None`).
fn rename_parts<'o>(s: &SysState, orbit: &'o Orbit, i: usize) -> Option<Renamed<'o>> {
    let perm = orbit.perms.get(i)?;
    let coord = image_digest(&s.coord, orbit, i, permute_coordinator)?;
    let ledger = image_digest(&s.ledger, orbit, i, |l, p| Some(permute_ledger(l, p)))?;
    let durable = image_digest(&s.durable, orbit, i, |d, p| Some(permute_durable(d, p)))?;
    // The task sides in their new places, as `assemble` moves them (0: no
    // side there yet; a part's hash is never 0).
    let image = |t: TaskId| perm.get(t.0 as usize).copied().unwrap_or(t);
    let mut sides: SmallVec<[PartHash; 8]> = s.tasks.iter().map(|_| PartHash(0)).collect();
    for (old, side) in s.tasks.iter().enumerate() {
        let new = image(TaskId(u32::try_from(old).ok()?));
        let digest = rename_side(side, perm).map_or_else(|| side.digest(), |r| r.digest());
        sides.get_mut(new.0 as usize)?.0 = digest;
    }
    if sides.iter().any(|d| d.0 == 0) {
        return None;
    }
    // The deposed coordinator's parts from their cached images too (every
    // renaming computed once per part, not once per state and renaming),
    // refused where `rename_zombie` refuses.
    let zombie = match &s.zombie {
        Some(z) => Some((
            image_digest(&z.coord, orbit, i, permute_coordinator)?,
            image_digest(&z.ledger, orbit, i, |l, p| Some(permute_ledger(l, p)))?,
        )),
        None => None,
    };
    Some(Renamed {
        perm,
        coord,
        ledger,
        durable,
        sides,
        zombie,
    })
}

/// The hash by `build` of the renamed world `r` describes, without
/// building it: the same fields in the same order through the same `Hash`
/// impls. `net` is scratch space for the renamed messages, empty on entry.
fn renamed_hash(
    s: &SysState,
    r: &Renamed<'_>,
    build: &impl std::hash::BuildHasher,
    net: &mut SmallVec<[Msg; 16]>,
) -> u64 {
    rename_net_into(&s.net, r.perm, s.ordered_net, net);
    // Every field named, in the order `World`'s derived `Hash` writes
    // them: a new one cannot be left out.
    let SysState {
        now,
        coord: _,
        tasks: _,
        net: _,
        io,
        used,
        scheduler_stopped,
        history,
        ledger: _,
        durable: _,
        job_failover_due,
        awaiting_restore,
        zombie,
        stopped_with,
        violation,
        ordered_net,
    } = s;
    // `zombie` is `Some` exactly when `r.zombie` is.
    let zombie = zombie
        .as_ref()
        .zip(r.zombie)
        .map(|(z, (coord, ledger))| ZombieBytes {
            coord: PartHash(coord),
            ledger: PartHash(ledger),
            io: &z.io,
        });
    let mut h = build.build_hasher();
    now.hash(&mut h);
    PartHash(r.coord).hash(&mut h);
    r.sides[..].hash(&mut h);
    net[..].hash(&mut h);
    io.hash(&mut h);
    used.hash(&mut h);
    scheduler_stopped.hash(&mut h);
    history.hash(&mut h);
    PartHash(r.ledger).hash(&mut h);
    PartHash(r.durable).hash(&mut h);
    job_failover_due.hash(&mut h);
    awaiting_restore.hash(&mut h);
    zombie.hash(&mut h);
    stopped_with.hash(&mut h);
    violation.hash(&mut h);
    ordered_net.hash(&mut h);
    std::hash::Hasher::finish(&h)
}

/// The hash of `part` renamed by the orbit's renaming `i`: what [`image`]
/// returns, hashed.
fn image_digest<T: Hash + Clone>(
    part: &Sealed<T>,
    orbit: &Orbit,
    i: usize,
    rename: impl Fn(&T, &[TaskId]) -> Option<T>,
) -> Option<u64> {
    let renamed = |j: usize, value: &T| rename(value, orbit.perms.get(j)?);
    match part.images(orbit.key, orbit.perms.len(), renamed) {
        Some(images) => images.get(i)?.as_ref().map(Sealed::digest),
        None => renamed(i, part).map(|v| Sealed::new(v).digest()),
    }
}

impl Representative for SysState {
    fn representative(&self) -> Self {
        canonical(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::{ModelConfig, Sim, Topology};

    /// Up to `max` states reachable from the initial one, breadth first.
    fn reachable(cfg: &ModelConfig, max: usize) -> Vec<SysState> {
        let sim = Sim::new(cfg.clone());
        let mut seen = vec![sim.init()];
        let mut at = 0;
        let mut enabled = Vec::new();
        while at < seen.len() && seen.len() < max {
            enabled.clear();
            sim.enabled(&seen[at], &mut enabled);
            for a in enabled.clone() {
                if let Some(n) = sim.step(&seen[at], a, None) {
                    seen.push(n);
                }
            }
            at += 1;
        }
        seen
    }

    #[test]
    fn a_renaming_from_the_cached_images_equals_the_renaming_built_anew() {
        for (tasks, topology) in [
            (3, Topology::Fanout),
            (4, Topology::Fanout),
            (3, Topology::Join),
        ] {
            let cfg = ModelConfig {
                tasks,
                topology,
                ..ModelConfig::default()
            };
            for s in reachable(&cfg, 3_000) {
                let o = orbit(&s);
                assert!(!o.perms.is_empty(), "{cfg:?}");
                for (i, perm) in o.perms.iter().enumerate() {
                    // Twice: the second comes from the images the first cached.
                    let cached = permute_at(&s, &o, i);
                    assert_eq!(cached, permute_at(&s, &o, i));
                    let fresh = permute(&s, perm, s.ordered_net);
                    assert_eq!(cached, fresh, "{cfg:?} renaming {perm:?}");
                    assert_eq!(
                        cached.as_ref().map(fingerprint),
                        fresh.as_ref().map(fingerprint)
                    );
                }
            }
        }
    }

    #[test]
    fn the_fingerprint_key_equals_the_slow_key_and_is_the_same_over_the_orbit() {
        use crate::search::engine::fingerprint;
        use crate::world::Network;
        let base = ModelConfig::default();
        let cfgs = [
            ModelConfig {
                tasks: 3,
                ..base.clone()
            },
            ModelConfig {
                tasks: 4,
                checkpoints: 1,
                ..base.clone()
            },
            ModelConfig {
                tasks: 3,
                topology: Topology::Join,
                ..base.clone()
            },
            ModelConfig {
                tasks: 3,
                network: Network::Ordered,
                ..base.clone()
            },
            ModelConfig {
                tasks: 3,
                shared_state: true,
                ..base.clone()
            },
            ModelConfig {
                tasks: 3,
                coordinator_failovers: 1,
                zombie_coordinators: 1,
                faults: 0,
                ..base.clone()
            },
            // No symmetry: the key is the fingerprint.
            base.clone(),
        ];
        // (zombies, acks kept for reuse) seen over the configurations.
        let mut seen = (0, 0);
        for cfg in cfgs {
            let states = reachable(&cfg, 20_000);
            let mut renamed = 0;
            for (n, s) in states.iter().enumerate() {
                let fast = orbit_min_fingerprint(s);
                assert_eq!(fast, orbit_min(s, fingerprint), "{cfg:?}");
                renamed += usize::from(fast != fingerprint(s));
                // The key of the orbit, not of the member: every renaming
                // of `s` has it (one state in 16, for time).
                if n % 16 == 0 {
                    for c in renamings(s) {
                        assert_eq!(orbit_min_fingerprint(&c), fast, "{cfg:?}");
                    }
                }
                seen.0 += usize::from(s.zombie.is_some());
                seen.1 += usize::from(s.tasks.iter().any(|t| t.last_ack.is_some()));
            }
            let reduces = reduces(&cfg);
            assert_eq!(
                renamed > 0,
                reduces,
                "{cfg:?}: {renamed} states keyed by a renaming"
            );
        }
        assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
    }

    #[test]
    fn a_part_changed_in_place_forgets_its_images() {
        let mut part = Sealed::new(vec![1u32, 2]);
        let reversed = |_: usize, v: &Vec<u32>| Some(v.iter().rev().copied().collect());
        let first = part.images(7, 1, reversed).map(<[_]>::to_vec);
        assert_eq!(
            first.as_deref().and_then(|i| i[0].as_deref()),
            Some(&vec![2, 1])
        );
        // Another key is refused: its renamings were not these.
        assert!(part.images(8, 1, reversed).is_none());
        drop(first);
        // Not shared, so changed in place: the images must not survive.
        part.push(3);
        part.seal();
        let again = part.images(7, 1, reversed);
        assert_eq!(again.and_then(|i| i[0].as_deref()), Some(&vec![3, 2, 1]));
    }

    #[test]
    fn reduces_exactly_when_a_class_has_two_tasks() {
        for topology in [Topology::Fanout, Topology::Join] {
            for tasks in 1..=5 {
                if topology == Topology::Join && tasks < 3 {
                    continue;
                }
                let cfg = ModelConfig {
                    tasks,
                    topology,
                    ..ModelConfig::default()
                };
                let init = Sim::new(cfg.clone()).init();
                assert_eq!(reduces(&cfg), class(&init).len() >= 2, "{cfg:?}");
            }
        }
    }
}
