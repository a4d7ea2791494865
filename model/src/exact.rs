//! An exact breadth-first search over the model's states themselves (a
//! `HashSet<SysState>` compared with `Eq`, no fingerprints), to cross-check
//! stateright's `unique_state_count()` on small configurations (TOOLING
//! pitfall 1).

use std::collections::{HashSet, VecDeque};

use stateright::Model;

use crate::symmetry::canonical;
use crate::system::{ModelConfig, Reduction, SysModel, SysState};

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
    let mut model = SysModel::new(cfg.clone());
    model.reduction = reduction;
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
