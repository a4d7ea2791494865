//! What the model's integration tests share: the unique-state count of a
//! single-threaded search under symmetry, a check with coverage, and
//! questions about its report.

#![allow(dead_code)] // each test file uses the part it needs

use ckpt_model::{run_check, CheckOptions, CheckReport, ModelConfig, Status, SysModel};
use stateright::{Checker, Model};

/// Unique states of a one-thread DFS with symmetry (the pinned counts).
pub fn unique(cfg: &ModelConfig) -> usize {
    SysModel::new(cfg.clone())
        .checker()
        .threads(1)
        .symmetry()
        .spawn_dfs()
        .join()
        .unique_state_count()
}

/// The check `ckpt-model check` runs, with transition coverage.
pub fn check(cfg: &ModelConfig) -> CheckReport {
    run_check(
        cfg,
        &CheckOptions {
            coverage: true,
            ..CheckOptions::default()
        },
    )
}

/// Whether the `sometimes` property `name` was witnessed.
pub fn witnessed(r: &CheckReport, name: &str) -> bool {
    r.properties
        .iter()
        .any(|p| p.name == name && p.status == Status::Witnessed)
}

/// Whether `machine` (`"coordinator"` or `"task"`) met `event` with
/// `outcome` in any phase.
pub fn covered(r: &CheckReport, machine: &str, event: &str, outcome: &str) -> bool {
    r.coverage.as_ref().is_some_and(|c| {
        c.keys()
            .any(|(m, _, e, o)| *m == machine && *e == event && o == outcome)
    })
}

/// Whether `machine` met `event` with `outcome` in `phase`.
pub fn covered_in(r: &CheckReport, machine: &str, phase: &str, event: &str, outcome: &str) -> bool {
    r.coverage.as_ref().is_some_and(|c| {
        c.keys()
            .any(|(m, p, e, o)| *m == machine && *p == phase && *e == event && o == outcome)
    })
}
