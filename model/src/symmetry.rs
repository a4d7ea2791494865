//! Symmetry reduction over tasks: a canonical representative of a state's
//! orbit under the permutations of interchangeable tasks.
//!
//! Interchangeable tasks: with one source (`fanout`), every task but the
//! source; with several sources (`join`), the sources. The representative
//! sorts the class by a key computed from each task's **whole** view of the
//! state (its task state, mailbox, input channels, monitor, its ack slot in
//! every pending and completed checkpoint, its status at the coordinator,
//! the channel a non-class task holds from it, and its in-flight messages
//! with the task id blanked) and renames the tasks in that order. Equal keys
//! mean equal views, and swapping tasks with equal views changes nothing, so
//! the result does not depend on which member of the orbit we start from
//! (TOOLING pitfall 6). The key is a 64-bit SipHash of the view: canonical up
//! to hash collisions, the same assumption the checker's fingerprints make.

use std::hash::{DefaultHasher, Hash, Hasher};

use ckpt_core::TaskId;
use stateright::Representative;

use crate::system::{Msg, SysState, TaskSide};

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

fn view_key(s: &SysState, t: TaskId, class: &[TaskId]) -> u64 {
    let mut h = DefaultHasher::new();
    if let Some(side) = s.tasks.get(t.0 as usize) {
        side.hash(&mut h);
    }
    for (u, other) in s.tasks.iter().enumerate() {
        let u = TaskId(u32::try_from(u).unwrap_or(u32::MAX));
        if class.contains(&u) {
            continue;
        }
        for (up, q) in &other.inputs {
            if *up == t {
                u.hash(&mut h);
                q.hash(&mut h);
            }
        }
    }
    let slot = s.coord.config().wait_slot(t);
    s.coord.task_status(t).hash(&mut h);
    for p in s.coord.pending() {
        p.id().hash(&mut h);
        slot.and_then(|i| p.acks().nth(i)).hash(&mut h);
        slot.and_then(|i| p.attempts().get(i)).hash(&mut h);
    }
    for c in s.coord.completed() {
        c.id().hash(&mut h);
    }
    let blank = TaskId(u32::MAX);
    for m in s.net.iter().filter(|m| m.task() == t) {
        m.with_task(blank).hash(&mut h);
    }
    h.finish()
}

/// Renames tasks by `perm` (`perm[old] = new`); `None` if the coordinator
/// refuses the permutation.
#[must_use]
pub fn permute(s: &SysState, perm: &[TaskId], ordered_net: bool) -> Option<SysState> {
    let coord = s.coord.permute_tasks(perm)?;
    let image = |t: TaskId| perm.get(t.0 as usize).copied().unwrap_or(t);
    let mut tasks: Vec<Option<TaskSide>> = vec![None; s.tasks.len()];
    for (old, side) in s.tasks.iter().enumerate() {
        let new = image(TaskId(u32::try_from(old).ok()?));
        let mut side = side.clone();
        for (up, _) in &mut side.inputs {
            *up = image(*up);
        }
        side.inputs.sort_by_key(|(up, _)| *up);
        *tasks.get_mut(new.0 as usize)? = Some(side);
    }
    let tasks = tasks.into_iter().collect::<Option<Vec<_>>>()?;
    let mut net: Vec<Msg> = s.net.iter().map(|m| m.with_task(image(m.task()))).collect();
    if ordered_net {
        // Stable: keeps each link's FIFO order.
        net.sort_by_key(Msg::link);
    } else {
        net.sort();
    }
    Some(SysState {
        coord,
        tasks,
        net,
        ..s.clone()
    })
}

/// The canonical representative of `s` under task permutations.
#[must_use]
pub fn canonical(s: &SysState) -> SysState {
    let class = class(s);
    if class.len() < 2 {
        return s.clone();
    }
    let mut keyed: Vec<(u64, TaskId)> = class
        .iter()
        .map(|t| (view_key(s, *t, &class), *t))
        .collect();
    keyed.sort();
    let n = s.tasks.len();
    let mut perm: Vec<TaskId> = (0..n)
        .map(|i| TaskId(u32::try_from(i).unwrap_or(u32::MAX)))
        .collect();
    let mut slots = class.clone();
    slots.sort();
    for ((_, old), new) in keyed.iter().zip(slots) {
        if let Some(p) = perm.get_mut(old.0 as usize) {
            *p = new;
        }
    }
    if perm.iter().enumerate().all(|(i, p)| p.0 as usize == i) {
        return s.clone();
    }
    permute(s, &perm, s.ordered_net).unwrap_or_else(|| s.clone())
}

impl Representative for SysState {
    fn representative(&self) -> Self {
        canonical(self)
    }
}
