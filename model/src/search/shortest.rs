//! The shortest counterexample: a violated safety property is re-searched
//! breadth-first in a model with only the `always` properties (the
//! `sometimes` and `eventually` ones would otherwise end or steer the
//! search), under a shrinking depth bound, because stateright's BFS keeps
//! the last discovery of a work block, not necessarily the shortest.

use std::time::Instant;

use stateright::{HasDiscoveries, Model};

use crate::search::options::CheckOptions;
use crate::search::report::Counterexample;
use crate::search::system::SysModel;
use crate::search::watch::{finish, from_initial, interrupted, stop_flag};
use crate::world::{Action, ModelConfig};

fn bfs_safety(
    cfg: &ModelConfig,
    opts: &CheckOptions,
    max_depth: Option<usize>,
) -> Option<Counterexample> {
    let mut model = SysModel::new(cfg.clone());
    model.safety_only = true;
    model.roots.clone_from(&opts.roots);
    model.reduction = opts.reduction;
    let stop = stop_flag(opts);
    model.stop.clone_from(&stop);
    let names: Vec<&'static str> = model.properties().iter().map(|p| p.name).collect();
    let mut b = model
        .checker()
        .threads(opts.threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures);
    if let Some(d) = max_depth {
        b = b.target_max_depth(d);
    }
    if let Some(t) = opts.time_limit {
        b = b.timeout(t);
    }
    let quiet = CheckOptions {
        progress: false,
        ..opts.clone()
    };
    let f = finish(b.spawn_bfs(), Instant::now(), &quiet, stop);
    let mut best: Option<Counterexample> = None;
    for name in names {
        if let Some(path) = f.discoveries.get(name) {
            let violation = path.last_state().violation.as_deref().cloned();
            let actions: Vec<Action> = from_initial(opts, path.clone());
            if best
                .as_ref()
                .is_none_or(|b| actions.len() < b.actions.len())
            {
                best = Some(Counterexample {
                    property: name,
                    actions,
                    violation,
                });
            }
        }
    }
    best
}

/// The shortest path to a safety violation of `cfg`, by breadth-first
/// search on `threads` threads.
#[must_use]
pub fn shortest_violation(cfg: &ModelConfig, threads: usize) -> Option<Counterexample> {
    shortest_violation_within(
        cfg,
        &CheckOptions {
            threads,
            ..CheckOptions::default()
        },
    )
}

/// [`shortest_violation`] with `opts`' threads, time limit, roots and
/// interrupt (a search cut short returns the shortest path found so far).
#[must_use]
pub fn shortest_violation_within(cfg: &ModelConfig, opts: &CheckOptions) -> Option<Counterexample> {
    let mut best = bfs_safety(cfg, opts, None)?;
    // A search from frontier states (`roots`, all at the same depth): the
    // depth bound counts from them.
    let base = opts
        .roots
        .as_ref()
        .and_then(|r| r.first())
        .map_or(0, |(_, p)| p.len());
    loop {
        // Depth counts states (the initial one is depth 1): checking every
        // state of depth <= k looks at every path of at most k - 1 actions.
        let k = best.actions.len();
        if k <= base || interrupted(opts) {
            return Some(best);
        }
        match bfs_safety(cfg, opts, Some(k - base + 1)) {
            Some(shorter) if shorter.actions.len() < k => best = shorter,
            Some(_) | None => return Some(best),
        }
    }
}
