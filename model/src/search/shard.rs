//! Sharded checks: `check --shard K/N` searches a deterministic part of the
//! state space; `ckpt-model merge REPORTS...` combines the shards' JSON
//! reports into one verdict (by [`crate::search::report::Verdict::decide`],
//! the rule a single check uses).
//!
//! The split: every shard explores the states of depth below the split
//! depth itself (breadth-first, every property judged on them, as `check`
//! judges them), then keeps only the states first reached at exactly the
//! split depth whose fingerprint (of the symmetry representative when
//! symmetry reduces this configuration) is `K` modulo `N`, and searches the
//! subtrees below those as `check` does. Every state of depth at least the
//! split depth lies below one state of that frontier, so the union of the
//! shards is the whole search, and a shortest counterexample of the whole
//! space is the shortest of the shards' (the prefix is breadth-first, each
//! shard's counterexample is re-searched breadth-first from its frontier).
//!
//! What is lost: deduplication across shards. A state below two frontier
//! states owned by different shards is explored by both, so the sum of the
//! shards' unique counts is at least (usually above) a single run's.
//! `eventually` is judged from the frontier on: a property that held only
//! on the prefix path is demanded again below it (stricter, never weaker).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use stateright::{Expectation, Model};

use crate::search::options::CheckOptions;
use crate::search::report::{CheckReport, Counterexample, Kind, Status};
use crate::search::run::run_check;
use crate::search::system::SysModel;
use crate::world::{Action, ModelConfig, World};

/// Which shard of how many, split at which depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard (`0..count`).
    pub index: u64,
    /// Number of shards.
    pub count: u64,
    /// Depth (in actions from the initial state) of the frontier that is
    /// split.
    pub split_depth: usize,
}

/// The most shards a check may be split into. A shard owns the frontier
/// states whose fingerprint is `K` modulo `N`; at the default split depth
/// the default configuration's frontier has a few hundred states, and a
/// frontier of millions needs a split depth whose shared prefix alone takes
/// longer than the subtrees below it, so more shards than this only make
/// shards that own nothing.
pub const SHARD_COUNT_MAX: u64 = 65_536;

/// Parses `K/N` (`0 <= K < N <= SHARD_COUNT_MAX`).
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected K/N, for example 0/4"))?;
    let k: u64 = k
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: K is not a number"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: N is not a number"))?;
    if n == 0 || k >= n {
        return Err(format!("`{s}`: expected 0 <= K < N"));
    }
    if n > SHARD_COUNT_MAX {
        return Err(format!(
            "`{s}`: at most {SHARD_COUNT_MAX} shards (more would own no frontier state)"
        ));
    }
    Ok((k, n))
}

/// The fingerprint a state is split by: a fixed-seed hash, of the
/// representative when symmetry reduces the configuration.
#[must_use]
pub fn split_fingerprint(s: &World, symmetry: bool) -> u64 {
    let h = |x: &World| {
        ahash::RandomState::with_seeds(
            0x5be0_cd19_137e_2179,
            0x1f83_d9ab_fb41_bd6b,
            0x9b05_688c_2b3e_6c1f,
            0x510e_527f_ade6_82d1,
        )
        .hash_one(x)
    };
    if symmetry {
        h(&crate::search::symmetry::canonical(s))
    } else {
        h(s)
    }
}

/// What the shared prefix came to.
#[derive(Debug)]
pub struct Prefix {
    /// States generated in the prefix (with repeats).
    pub states: usize,
    /// Unique states of depth below the split depth.
    pub unique: usize,
    /// The frontier (states first reached at the split depth), each with
    /// the actions that reach it, in breadth-first order.
    pub frontier: Vec<(World, Vec<Action>)>,
    /// Properties decided in the prefix: `always` violated (the shortest
    /// path), `sometimes` witnessed, `eventually` failed at a run end.
    pub discoveries: HashMap<&'static str, Vec<Action>>,
}

/// Explores every state of depth below `split_depth` breadth-first,
/// judging every property on it.
#[must_use]
pub fn explore_prefix(cfg: &ModelConfig, split_depth: usize, symmetry: bool) -> Prefix {
    let model = SysModel::new(cfg.clone());
    let props = model.properties();
    let key = |s: &World| split_fingerprint(s, symmetry);
    let mut seen: HashSet<u64> = HashSet::new();
    let init = model.sim.init();
    seen.insert(key(&init));
    // (state, path, eventually properties that have not held on the path)
    let ebits: Vec<bool> = props
        .iter()
        .map(|p| p.expectation == Expectation::Eventually)
        .collect();
    let mut level: Vec<(World, Vec<Action>, Vec<bool>)> = vec![(init, Vec::new(), ebits)];
    let mut out = Prefix {
        states: 1,
        unique: 0,
        frontier: Vec::new(),
        discoveries: HashMap::new(),
    };
    let mut actions = Vec::new();
    for _ in 0..split_depth {
        let mut next = Vec::new();
        for (s, path, mut eb) in level {
            out.unique += 1;
            for (i, p) in props.iter().enumerate() {
                let holds = (p.condition)(&model, &s);
                let found = match p.expectation {
                    Expectation::Always => !holds,
                    Expectation::Sometimes => holds,
                    Expectation::Eventually => {
                        if holds {
                            if let Some(b) = eb.get_mut(i) {
                                *b = false;
                            }
                        }
                        false
                    }
                };
                if found {
                    out.discoveries
                        .entry(p.name)
                        .or_insert_with(|| path.clone());
                }
            }
            actions.clear();
            model.actions(&s, &mut actions);
            if actions.is_empty() {
                for (i, p) in props.iter().enumerate() {
                    if eb.get(i).copied().unwrap_or(false) {
                        out.discoveries
                            .entry(p.name)
                            .or_insert_with(|| path.clone());
                    }
                }
                continue;
            }
            for a in actions.drain(..) {
                let Some(n) = model.next_state(&s, a) else {
                    continue;
                };
                out.states += 1;
                if seen.insert(key(&n)) {
                    let mut p = path.clone();
                    p.push(a);
                    next.push((n, p, eb.clone()));
                }
            }
        }
        level = next;
    }
    out.frontier = level.into_iter().map(|(s, p, _)| (s, p)).collect();
    out
}

/// What a shard searched, besides its check report.
#[derive(Clone, Debug)]
pub struct ShardInfo {
    /// The shard and the split it belongs to.
    pub spec: ShardSpec,
    /// States in the whole frontier.
    pub frontier: usize,
    /// Frontier states this shard owns.
    pub owned: usize,
    /// Unique states of the shared prefix (counted in every shard).
    pub prefix_unique: usize,
    /// Whether the frontier was split by the fingerprints of symmetry
    /// representatives (symmetry on, no `--bfs`, and a configuration it
    /// reduces) rather than of the states themselves. Shards split the two
    /// ways own different frontier states: `merge` refuses to mix them.
    pub symmetry: bool,
}

/// Runs shard `spec` of `cfg`: the shared prefix, then the check below the
/// frontier states it owns. The report's counts include the prefix; its
/// properties and counterexample combine the prefix's and the subtrees'.
#[must_use]
pub fn run_shard(
    cfg: &ModelConfig,
    opts: &CheckOptions,
    spec: ShardSpec,
) -> (CheckReport, ShardInfo) {
    let symmetry = opts.symmetry && !opts.bfs && crate::search::symmetry::reduces(cfg);
    let prefix = explore_prefix(cfg, spec.split_depth, symmetry);
    let frontier = prefix.frontier.len();
    let owned: Vec<(World, Vec<Action>)> = prefix
        .frontier
        .into_iter()
        .filter(|(s, _)| split_fingerprint(s, symmetry) % spec.count == spec.index)
        .collect();
    let info = ShardInfo {
        spec,
        frontier,
        owned: owned.len(),
        prefix_unique: prefix.unique,
        symmetry,
    };
    let o = CheckOptions {
        roots: Some(Arc::new(owned)),
        ..opts.clone()
    };
    let mut report = run_check(cfg, &o);
    // With an empty frontier the prefix was the whole space; otherwise a
    // shard that owns none of it searched nothing of its own.
    report.searched_nothing = info.owned == 0 && info.frontier > 0;
    report.states += prefix.states;
    report.unique += prefix.unique;
    report.depth += spec.split_depth;
    // Fold in what the prefix decided.
    for p in &mut report.properties {
        let Some(path) = prefix.discoveries.get(p.name) else {
            continue;
        };
        match p.kind {
            Kind::Sometimes => p.status = Status::Witnessed,
            Kind::Always | Kind::Eventually => {
                p.status = Status::Violated;
                let shorter = report
                    .counterexample
                    .as_ref()
                    .is_none_or(|c| path.len() < c.actions.len());
                if shorter {
                    report.counterexample = Some(Counterexample {
                        property: p.name,
                        actions: path.clone(),
                        violation: violation_at(cfg, path),
                    });
                }
            }
        }
    }
    report.decide();
    (report, info)
}

fn violation_at(cfg: &ModelConfig, actions: &[Action]) -> Option<ckpt_core::invariants::Violation> {
    let sim = crate::world::Sim::new(cfg.clone());
    let mut s = sim.init();
    for a in actions {
        s = sim.step(&s, *a, None)?;
    }
    s.violation.map(|v| *v)
}
