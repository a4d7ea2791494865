//! Symmetry reduction over tasks: a canonical representative of a state's
//! orbit under the permutations of interchangeable tasks.
//!
//! Interchangeable tasks: with one source (`fanout`), every task but the
//! source; with several sources (`join`), the sources. The representative is
//! the member of the orbit (every renaming of the class) with the smallest
//! 64-bit hash of the whole state: canonical by construction (whatever
//! member of the orbit we start from, the same set of candidates is
//! compared), up to hash collisions, the same assumption the checker's
//! fingerprints make (TOOLING pitfall 6). Renaming a task moves everything
//! that names it: its task side, its ack slots and status at the
//! coordinator, the channels, the messages, and every state handle it wrote
//! (handles encode their task: [`rename_handle`]) wherever it appears (the
//! coordinator's checkpoints, the ledgers, the store, the files). The class
//! has at most a few tasks, so the orbit is small (2 for 3 tasks, 6 for 4).

use ckpt_core::{StateHandle, TaskId};
use stateright::Representative;

use crate::system::{Msg, SysState};
use crate::world::SharedSide;
use crate::world::{rename_handle, Durable};
use ckpt_core::route::ToCoordinator;

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
    let rename = |h: StateHandle| rename_handle(h, perm);
    let coord = s.coord.permute_tasks(perm, &rename)?;
    let image = |t: TaskId| perm.get(t.0 as usize).copied().unwrap_or(t);
    let mut tasks: Vec<Option<SharedSide>> = vec![None; s.tasks.len()];
    for (old, side) in s.tasks.iter().enumerate() {
        let new = image(TaskId(u32::try_from(old).ok()?));
        let mut side = side.clone();
        // Only a side whose inputs are renamed is copied (and rehashed):
        // the others stay shared with `s`, their hash cached.
        if side.inputs.iter().any(|c| image(c.from) != c.from) {
            for c in &mut side.inputs {
                c.from = image(c.from);
            }
            side.inputs.sort_by_key(|c| c.from);
            side.seal();
        }
        *tasks.get_mut(new.0 as usize)? = Some(side);
    }
    let tasks = tasks.into_iter().collect::<Option<Vec<_>>>()?;
    let mut net: Vec<Msg> = s.net.iter().map(|m| rename_msg(m, perm)).collect();
    if ordered_net {
        // Stable: keeps each link's FIFO order.
        net.sort_by_key(Msg::link);
    } else {
        net.sort();
    }
    let rename_all =
        |v: &[StateHandle]| -> Vec<StateHandle> { v.iter().map(|h| rename(*h)).collect() };
    let durable = Durable {
        ledger: s.durable.ledger.rename_handles(&rename),
        counter: s.durable.counter,
        metadata: s
            .durable
            .metadata
            .iter()
            .map(|(c, hs)| (*c, rename_all(hs)))
            .collect(),
        in_doubt: s
            .durable
            .in_doubt
            .as_ref()
            .map(|(c, hs)| (*c, rename_all(hs))),
    };
    Some(SysState {
        coord: crate::world::Sealed::new(coord),
        tasks,
        net,
        ledger: crate::world::Sealed::new(s.ledger.rename_handles(&rename)),
        durable: crate::world::Sealed::new(durable),
        ..s.clone()
    })
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
    let class = class(s);
    let perms = if class.len() < 2 {
        Vec::new()
    } else {
        permutations(&class, s.tasks.len())
    };
    perms
        .into_iter()
        .filter(|perm| !perm.iter().enumerate().all(|(i, p)| p.0 as usize == i))
        .filter_map(move |perm| permute(s, &perm, s.ordered_net))
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

/// The smallest `hash` over the orbit of `s`: a fingerprint of the orbit
/// (the same whichever member `s` is), computed without cloning `s` (the
/// checker's visited set needs the fingerprint, not the representative).
#[must_use]
pub fn orbit_min(s: &SysState, hash: impl Fn(&SysState) -> u64) -> u64 {
    renamings(s).map(|c| hash(&c)).fold(hash(s), u64::min)
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
