//! Model checker: unique states per second and total time for the default
//! configuration and a larger one, fixed semantics on stateright's DFS and
//! on ckpt's engine, without and with partial-order reduction, legacy semantics, and the time to the legacy
//! counterexample. Not a criterion group: one check of the
//! default configuration takes seconds, so criterion's ten-sample minimum
//! would not fit the quick mode. Each check runs `runs` times (1 with
//! `CKPT_BENCH_QUICK=1`, else 3) on one checker thread and the fastest run is
//! kept. The larger configuration (two concurrent checkpoints: about 2 M
//! unique states, twice the default) runs once, and not in quick mode unless
//! `CKPT_BENCH_MODEL_LARGER=1`. Results are printed and written to
//! `<criterion dir>/ckpt-model.json`, which `report` turns into the table.

use std::time::Instant;

use ckpt_benches::report::{default_dir, ModelRow};
use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::{run_check, shortest_violation, CheckOptions, Engine, ModelConfig, Reduction};

/// The larger configuration: two concurrent checkpoints instead of one
/// (a third task multiplies the space by more than 50 and does not fit a
/// benchmark run).
fn larger() -> ModelConfig {
    ModelConfig {
        max_concurrent: 2,
        ..ModelConfig::default()
    }
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best: Option<(f64, T)> = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let out = f();
        let s = start.elapsed().as_secs_f64();
        if best.as_ref().is_none_or(|b| s < b.0) {
            best = Some((s, out));
        }
    }
    match best {
        Some(b) => b,
        None => unreachable!("at least one run"),
    }
}

/// The group's command line, as `cargo bench [-- FILTER]` passes it.
#[derive(clap::Parser)]
struct Args {
    /// Passed by `cargo bench`.
    #[arg(long)]
    bench: bool,
    /// Filters: the group runs when there is none or "model" contains one.
    /// Flags meant for the criterion groups (`--name`) are taken here and
    /// ignored.
    #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
    filter: Vec<String>,
}

fn main() {
    let filter: Vec<String> = <Args as clap::Parser>::parse()
        .filter
        .into_iter()
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| "model".contains(f.as_str())) {
        return;
    }
    let quick = ckpt_benches::quick();
    let runs = if quick { 1 } else { 3 };
    let with_larger =
        std::env::var("CKPT_BENCH_MODEL_LARGER").map_or(!quick, |v| !v.is_empty() && v != "0");
    let legacy = Semantics::Legacy(LegacyBug::AbortRemovesResult);
    let mut configs = vec![("default", ModelConfig::default(), runs)];
    if with_larger {
        configs.push(("max-concurrent=2", larger(), 1));
    }
    let mut rows = Vec::new();
    for (name, base, runs) in configs.iter().map(|(n, b, r)| (*n, b, *r)) {
        // The same search on stateright's `DfsChecker` and on ckpt's engine
        // (`--engine`), then with the reduction: states/s side by side.
        for (sem, semantics, reduction, engine) in [
            (
                "fixed, stateright engine",
                Semantics::Fixed,
                Reduction::Off,
                Engine::Stateright,
            ),
            ("fixed", Semantics::Fixed, Reduction::Off, Engine::Ckpt),
            (
                "fixed, partial-order reduction, stateright engine",
                Semantics::Fixed,
                Reduction::Ample,
                Engine::Stateright,
            ),
            (
                "fixed, partial-order reduction",
                Semantics::Fixed,
                Reduction::Ample,
                Engine::Ckpt,
            ),
            ("legacy", legacy, Reduction::Off, Engine::Ckpt),
        ] {
            let cfg = ModelConfig {
                semantics,
                ..base.clone()
            };
            let opts = CheckOptions {
                stop_at_failure: semantics != Semantics::Fixed,
                reduction,
                engine,
                ..CheckOptions::default()
            };
            let (total, report) = best_of(runs, || run_check(&cfg, &opts));
            let row = ModelRow {
                check: format!("check {sem}"),
                config: name.to_owned(),
                unique: report.unique as u64,
                search_seconds: report.seconds,
                total_seconds: total,
                result: if report.holds() {
                    "holds".to_owned()
                } else {
                    format!(
                        "violated ({} actions)",
                        report.counterexample.map_or(0, |c| c.actions.len())
                    )
                },
            };
            eprintln!("model/{}/{}: {row:?}", row.check, row.config);
            rows.push(row);
        }
        let cfg = ModelConfig {
            semantics: legacy,
            ..base.clone()
        };
        let (total, cx) = best_of(runs, || shortest_violation(&cfg, 1));
        let row = ModelRow {
            check: "legacy counterexample (shortest, BFS)".to_owned(),
            config: name.to_owned(),
            unique: 0,
            search_seconds: total,
            total_seconds: total,
            result: cx.map_or("NOT FOUND".to_owned(), |c| {
                format!("{} ({} actions)", c.property, c.actions.len())
            }),
        };
        eprintln!("model/{}/{}: {row:?}", row.check, row.config);
        rows.push(row);
    }
    let dir = default_dir();
    let json = ckpt_benches::report::model_json(&rows);
    if std::fs::create_dir_all(&dir).is_ok() {
        let path = dir.join("ckpt-model.json");
        match std::fs::write(&path, json) {
            Ok(()) => eprintln!("model results written to {}", path.display()),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    }
    print!("{}", ckpt_benches::report::model_table(&rows));
}
