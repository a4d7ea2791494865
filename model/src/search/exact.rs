//! An exact breadth-first search over the model's states themselves (a
//! `HashSet<SysState>` compared with `Eq`, no fingerprints), to cross-check
//! the checkers' `unique_state_count()` on small configurations: a count
//! from 64-bit fingerprints is only right if the state's `Hash` tells apart
//! every two states `Eq` does (a collection hashed without its length, for
//! example, makes `[a, b] + []` and `[a] + [b]` collide).

use std::collections::{HashSet, VecDeque};

use stateright::Model;

use crate::search::symmetry::canonical;
use crate::search::system::{SysModel, SysState};
use crate::world::{ModelConfig, Reduction};

/// Number of distinct reachable states, or of distinct canonical
/// representatives with `symmetry`. Stops counting past `limit`.
#[must_use]
pub fn exact_unique_states(cfg: &ModelConfig, symmetry: bool, limit: usize) -> usize {
    exact_unique_states_reduced(cfg, symmetry, Reduction::Off, limit)
}

/// [`exact_unique_states`] over the graph `reduction` leaves (breadth
/// first: without symmetry the reduced graph does not depend on the order
/// of the search, so the count equals stateright's).
#[must_use]
pub fn exact_unique_states_reduced(
    cfg: &ModelConfig,
    symmetry: bool,
    reduction: Reduction,
    limit: usize,
) -> usize {
    search(cfg, symmetry, reduction, false, limit, |_| {})
}

/// Every run end (a state with no action left: the run went quiet, or a
/// violation stopped it) reachable over the graph `reduction` leaves,
/// without symmetry, each task recording the order of the events it was
/// given ([`crate::world::Sim::record_task_order`]); `None` when the search
/// passed `limit` states.
///
/// A sound partial-order reduction keeps every run end: each run of the
/// full graph can be reordered into one of the reduced graph that ends in
/// the same state (`world::por`), and the recorded orders do not change
/// which steps depend on which (a task's steps already depend on each
/// other). So on a configuration where every property holds the set is the
/// same with and without reduction, orders included: a check of soundness
/// that does not wait for a property to notice what an unsound reduction
/// skipped (`model/tests/reduction.rs`). Without the orders it would be
/// weak: the fixed semantics are built so that the order in which a task
/// hears of things does not change how its run ends.
#[must_use]
pub fn exact_run_ends(
    cfg: &ModelConfig,
    reduction: Reduction,
    limit: usize,
) -> Option<HashSet<SysState>> {
    let mut ends = HashSet::new();
    let seen = search(cfg, false, reduction, true, limit, |s| {
        ends.insert(s.clone());
    });
    (seen <= limit).then_some(ends)
}

/// Breadth-first over the states themselves; `at_end` sees every state with
/// no action left. Returns the distinct states (representatives with
/// `symmetry`) seen, stopping past `limit`.
fn search(
    cfg: &ModelConfig,
    symmetry: bool,
    reduction: Reduction,
    record_task_order: bool,
    limit: usize,
    mut at_end: impl FnMut(&SysState),
) -> usize {
    let mut model = SysModel::new(cfg.clone());
    model.reduction = reduction;
    model.sim.record_task_order = record_task_order;
    let key = |s: &SysState| if symmetry { canonical(s) } else { s.clone() };
    let mut seen: HashSet<SysState> = HashSet::new();
    let mut queue: VecDeque<SysState> = VecDeque::new();
    for s in model.init_states() {
        if seen.insert(key(&s)) {
            queue.push_back(s);
        }
    }
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        if seen.len() > limit {
            break;
        }
        actions.clear();
        model.actions(&s, &mut actions);
        if actions.is_empty() {
            at_end(&s);
        }
        for a in actions.drain(..) {
            if let Some(n) = model.next_state(&s, a) {
                if seen.insert(key(&n)) {
                    queue.push_back(n);
                }
            }
        }
    }
    seen.len()
}
