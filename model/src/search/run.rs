//! One check: the search (ckpt's engine or stateright's), the property
//! statuses, the shortest counterexample, and the report with its verdict.

use std::time::{Duration, Instant};

use stateright::{HasDiscoveries, Model};

use crate::search::memory::peak_rss_mb;
use crate::search::options::{CheckOptions, Engine};
use crate::search::report::{
    CheckReport, Completion, Counterexample, Kind, PropertyResult, Question, Status, Verdict,
};
use crate::search::shortest::shortest_violation_within;
use crate::search::system::SysModel;
use crate::search::watch::{depth_bound, finish, from_initial, stop_flag, Finished};
use crate::world::{ModelConfig, Reduction};

/// Runs the checker over `cfg`.
#[must_use]
pub fn run_check(cfg: &ModelConfig, opts: &CheckOptions) -> CheckReport {
    let mut model = SysModel::new(cfg.clone());
    if opts.coverage {
        model = model.with_coverage();
    }
    let stop = stop_flag(opts);
    model.stop.clone_from(&stop);
    model.roots.clone_from(&opts.roots);
    model.reduction = opts.reduction;
    let coverage = model.coverage.clone();
    let properties = model.properties();
    let start = Instant::now();
    let mut builder = model.clone().checker().threads(opts.threads.max(1));
    if opts.stop_at_failure {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    if let Some(t) = opts.time_limit {
        builder = builder.timeout(t);
    }
    if let Some(d) = opts.max_depth {
        builder = builder.target_max_depth(depth_bound(d));
    }
    let symmetry = opts.symmetry && crate::search::symmetry::reduces(cfg);
    let searched_nothing = opts.roots.as_ref().is_some_and(|r| r.is_empty());
    let f = if searched_nothing {
        // A shard that owns no frontier state has nothing to search.
        Finished::nothing()
    } else if opts.bfs {
        finish(builder.spawn_bfs(), start, opts, stop.clone())
    } else if opts.engine == Engine::Ckpt {
        let e = crate::search::engine::spawn(
            model,
            crate::search::system::CkptExpand { symmetry },
            crate::search::engine::EngineOptions {
                threads: opts.threads.max(1),
                target_max_depth: opts.max_depth.map(depth_bound),
                finish_when_any_failure: opts.stop_at_failure,
            },
        );
        finish(e, start, opts, stop.clone())
    } else {
        if symmetry {
            builder = builder.symmetry();
        }
        finish(builder.spawn_dfs(), start, opts, stop.clone())
    };
    let seconds = start.elapsed().as_secs_f64();
    let completion = if f.interrupted {
        Completion::Interrupted
    } else if let Some(limit) = f.limit {
        limit
    } else if opts.max_depth.is_some_and(|d| f.depth >= depth_bound(d)) {
        // stateright records the depth of a state before skipping it as
        // past the bound: a state was left unexpanded.
        Completion::MaxDepth
    } else if opts.time_limit.is_some_and(|t| start.elapsed() >= t) {
        Completion::TimeLimit
    } else if opts.stop_at_failure
        && properties.iter().any(|p| {
            p.expectation != stateright::Expectation::Sometimes
                && f.discoveries.contains_key(p.name)
        })
    {
        // The checker may have stopped with states unexplored: what it did
        // not find is not known to hold.
        Completion::StoppedAtViolation
    } else {
        Completion::Complete
    };
    let complete = completion == Completion::Complete;
    let mut results = Vec::new();
    let mut failed = None;
    for p in &properties {
        let found = f.discoveries.get(p.name);
        let kind = Kind::of(&p.expectation);
        let status = Status::of(kind, found.is_some(), complete);
        if status == Status::Violated && failed.is_none() {
            failed = found.map(|path| (p.name, path.clone()));
        }
        results.push(PropertyResult {
            name: p.name,
            kind,
            status,
        });
    }
    let counterexample = failed.map(|(name, path)| {
        let last = path.last_state().violation.as_deref().cloned();
        let dfs = Counterexample {
            property: name,
            actions: from_initial(opts, path),
            violation: last.clone(),
        };
        let resources = matches!(
            f.limit,
            Some(Completion::StateLimit | Completion::MemoryLimit)
        );
        if last.is_some() && !f.interrupted && !resources {
            // A safety violation: find the shortest path with BFS (within
            // what is left of the time limit).
            let left = opts.time_limit.map(|t| {
                t.saturating_sub(start.elapsed())
                    .max(Duration::from_secs(1))
            });
            let o = CheckOptions {
                time_limit: left,
                ..opts.clone()
            };
            shortest_violation_within(cfg, &o).unwrap_or(dfs)
        } else {
            dfs
        }
    });
    let coverage = coverage.and_then(|c| c.lock().ok().map(|m| m.clone()));
    let mut report = CheckReport {
        config: cfg.clone(),
        question: Question::of(cfg.semantics),
        states: f.states,
        unique: f.unique,
        depth: f.depth,
        seconds,
        total_seconds: start.elapsed().as_secs_f64(),
        completion,
        properties: results,
        counterexample,
        coverage,
        peak_memory_mb: peak_rss_mb(),
        reduction: opts.reduction != Reduction::Off,
        engine: if opts.bfs {
            Engine::Stateright
        } else {
            opts.engine
        },
        searched_nothing,
        verdict: Verdict::Inconclusive,
        verdict_note: String::new(),
    };
    report.decide();
    report
}
