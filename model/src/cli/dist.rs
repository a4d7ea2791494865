//! `ckpt-model dist`: the distributed breadth-first search
//! ([`ckpt_model::search::dist`]) on ckpt's model or on two-phase commit,
//! in threads, in processes this command starts on loopback, or as one
//! process of a cluster started elsewhere.

use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Instant;

use ckpt_model::search::dist::engine::{
    replay, search, Cluster, Codec, DistOptions, DistReport, Key,
};
use ckpt_model::search::dist::twophase::{self, TwoPhase};
use ckpt_model::search::engine::{self, fingerprint, EngineOptions, Plain};
use ckpt_model::search::memory::peak_rss_mb;
use ckpt_model::search::report::{bug_not_reached, Question};
use ckpt_model::search::symmetry::orbit_min_fingerprint;
use ckpt_model::world::semantics_name;
use ckpt_model::zoo::validate;
use ckpt_model::{Reduction, SysModel};
use stateright::{Checker, Model};

use crate::cli::args::DistArgs;
use crate::cli::exit::{usage_error, ExitStatus};

/// Runs `dist`.
pub fn run(args: &DistArgs) -> ExitStatus {
    let threads = usize::from(args.model.threads);
    let (processes, process) = match args.local_processes {
        Some(p) => (p.max(1), 0),
        None => (args.processes, args.process),
    };
    if process >= processes {
        return usage_error(&format!(
            "--process {process} is not below --processes {processes}"
        ));
    }
    let addresses: Vec<String> = match &args.hosts {
        Some(file) => match std::fs::read_to_string(file) {
            Ok(t) => t
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
            Err(e) => return usage_error(&format!("{}: {e}", file.display())),
        },
        None => (0..processes)
            .map(|i| format!("127.0.0.1:{}", u32::from(args.port) + u32::from(i)))
            .collect(),
    };
    if addresses.len() != usize::from(processes) {
        return usage_error(&format!(
            "{} addresses for {processes} processes",
            addresses.len()
        ));
    }
    let children = match args.local_processes {
        Some(p) => match start_children(p, args.port) {
            Ok(c) => c,
            Err(e) => return usage_error(&e),
        },
        None => Vec::new(),
    };
    let cluster = if processes == 1 {
        Cluster::Threads(threads)
    } else {
        Cluster::Processes {
            threads,
            process: usize::from(process),
            addresses,
        }
    };
    let mut opts = DistOptions {
        cluster,
        checkpoint_dir: args.checkpoint_dir.clone().or_else(|| args.resume.clone()),
        resume: args.resume.is_some(),
        config: String::new(),
        stop_after_round: args.stop_after_round,
        progress: !args.quiet,
    };
    let status = match args.two_phase {
        Some(n) => {
            let model = TwoPhase {
                rms: usize::from(n),
            };
            if args.engine || args.stateright.is_some() {
                match &args.stateright {
                    Some(kind) => compare_one(&model, threads, kind == "bfs"),
                    None => engine_one(&model, threads),
                }
                outln!(
                    "peak memory: {}",
                    peak_rss_mb().map_or_else(|| "?".into(), |m| format!("{m:.0} MiB"))
                );
                return ExitStatus::Ok;
            }
            opts.config = format!("two-phase {n}");
            let key: Key<TwoPhase> = Arc::new(fingerprint);
            let codec = Arc::new(twophase::codec());
            let status = report(
                &opts,
                &format!("--two-phase {n}"),
                process,
                None,
                search(Arc::new(model.clone()), key, Some(codec), &opts),
                |p| format!("{:?}", replay(&model, p).and_then(|s| s.last().cloned())),
            );
            if args.compare && process == 0 {
                compare(&model, threads);
            }
            status
        }
        None => {
            let cfg = args.model.config(args.semantics);
            if let Err(e) = validate(&cfg) {
                return usage_error(&e);
            }
            let mut model = SysModel::new(cfg.clone());
            model.reduction = if args.no_reduction {
                Reduction::Off
            } else {
                Reduction::Ample
            };
            let symmetry = !args.no_symmetry;
            opts.config = format!(
                "{cfg:?} symmetry={symmetry} orbit-key={} reduction={:?}",
                ckpt_model::search::symmetry::ORBIT_KEY_VERSION,
                model.reduction
            );
            let key: Key<SysModel> = if symmetry {
                Arc::new(orbit_min_fingerprint)
            } else {
                Arc::new(fingerprint)
            };
            let model = Arc::new(model);
            let m = Arc::clone(&model);
            let codec = Arc::new(Codec::world());
            // A knob asks whether its bug is found: a search that ends
            // without it is no verdict, never "holds" (as in `check`).
            let knob = (Question::of(cfg.semantics) == Question::BugIsFound)
                .then(|| semantics_name(cfg.semantics));
            let shown = format!(
                "{}{}{}",
                ckpt_model::render::flags::flags(&cfg),
                if symmetry { "" } else { " --no-symmetry" },
                if args.no_reduction {
                    " --no-reduction"
                } else {
                    ""
                }
            );
            report(
                &opts,
                &shown,
                process,
                knob,
                search(model, key, Some(codec), &opts),
                move |p| actions(&m, p),
            )
        }
    };
    for mut c in children {
        match c.wait() {
            Ok(s) if s.success() || status != ExitStatus::Ok => {}
            Ok(s) => {
                eprintln!("error: a local process ended with {s}");
                return ExitStatus::Usage;
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
    status
}

/// The actions along a counterexample path of ckpt's model.
fn actions(model: &SysModel, path: &[u32]) -> String {
    let Some(states) = replay(model, path) else {
        return "(the path does not replay)".into();
    };
    let mut out = Vec::new();
    let mut acts = Vec::new();
    for (s, step) in states.iter().zip(&path[1..]) {
        acts.clear();
        model.actions(s, &mut acts);
        out.push(format!("{:?}", acts[*step as usize]));
    }
    out.join("\n  ")
}

/// Starts processes 1..p of a loopback run: this command again, with
/// `--local-processes P` replaced by `--processes P --process I`.
fn start_children(p: u16, port: u16) -> Result<Vec<Child>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--local-processes" || a == "--port" {
            args.next();
        } else if !a.starts_with("--local-processes=") && !a.starts_with("--port=") {
            rest.push(a);
        }
    }
    (1..p)
        .map(|i| {
            Command::new(&exe)
                .args(&rest)
                .args(["--processes", &p.to_string(), "--process", &i.to_string()])
                .args(["--port", &port.to_string()])
                .spawn()
                .map_err(|e| format!("cannot start process {i}: {e}"))
        })
        .collect()
}

/// Prints the run's report (process 0) and decides the exit status;
/// `knob` is the legacy semantics searched for its bug, if one is;
/// `flags` the configuration as the flags that select it (the banner).
fn report(
    opts: &DistOptions,
    flags: &str,
    process: u16,
    knob: Option<&str>,
    r: Result<DistReport, String>,
    path_text: impl Fn(&[u32]) -> String,
) -> ExitStatus {
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::Usage;
        }
    };
    let peak = peak_rss_mb().map_or_else(|| "?".into(), |m| format!("{m:.0} MiB"));
    if process != 0 {
        eprintln!("process {process}: done, peak memory {peak}");
        return status_of(&r, knob.is_some());
    }
    let secs = r.elapsed.as_secs_f64();
    let workers = r.shares.len();
    outln!(
        "ckpt-model dist {flags} | {workers} workers ({})",
        opts.cluster_kind()
    );
    match &r.violation {
        Some((name, path)) => {
            outln!(
                "verdict: violated: {name} (a shortest path, {} states)",
                path.len()
            );
            outln!("  {}", path_text(path));
        }
        None if r.stopped => outln!(
            "verdict: stopped after level {} (resume to finish)",
            r.max_depth
        ),
        None => match knob {
            // `check`'s note for the same case, pointing to `check`:
            // `dist` has no `--semantics all`.
            Some(name) => outln!(
                "verdict: inconclusive: {}",
                bug_not_reached(name, "`check --semantics all`")
            ),
            None => outln!("verdict: holds"),
        },
    }
    outln!("unique states: {} (summed over {workers} owners)", r.unique);
    outln!(
        "generated: {}, max depth: {}, started at level {}",
        r.generated,
        r.max_depth,
        r.started_at_round
    );
    let rate = if secs > 0.0 {
        r.unique as f64 / secs
    } else {
        0.0
    };
    outln!("time: {secs:.2} s, {rate:.0} unique states/s");
    let mean = r.unique as f64 / workers.max(1) as f64;
    let max = r.shares.iter().map(|s| s.owned).max().unwrap_or(0) as f64;
    let owned: Vec<String> = r
        .shares
        .iter()
        .map(|s| format!("w{} {} owned / {} expanded", s.worker, s.owned, s.judged))
        .collect();
    outln!(
        "owners: {} (max/mean {:.3})",
        owned.join(", "),
        if mean > 0.0 { max / mean } else { 1.0 }
    );
    outln!(
        "routed to owners: {} bytes over {workers} workers ({:.1} per generated state: key, path, encoded state; to itself included)",
        r.bytes_routed,
        r.bytes_routed as f64 / r.generated.max(1) as f64
    );
    if !r.discovered.is_empty() || !r.undiscovered.is_empty() {
        outln!(
            "sometimes: found {:?}, not found {:?}",
            r.discovered,
            r.undiscovered
        );
    }
    outln!("peak memory (process 0): {peak}");
    status_of(&r, knob.is_some())
}

/// The exit status of a report; `knob`: the search looked for a legacy
/// semantics' bug, so finishing without it is inconclusive, not "holds".
fn status_of(r: &DistReport, knob: bool) -> ExitStatus {
    if r.violation.is_some() {
        ExitStatus::Violated
    } else if r.stopped || knob {
        ExitStatus::Inconclusive
    } else {
        ExitStatus::Ok
    }
}

/// stateright's own checkers on the same two-phase model, timed here.
fn compare(model: &TwoPhase, threads: usize) {
    for bfs in [true, false] {
        compare_one(model, threads, bfs);
    }
}

/// stateright's BFS (`bfs`) or DFS checker on `model`, timed.
fn compare_one(model: &TwoPhase, threads: usize, bfs: bool) {
    let name = if bfs {
        "stateright BfsChecker"
    } else {
        "stateright DfsChecker"
    };
    let t = Instant::now();
    let b = model.clone().checker().threads(threads);
    let unique = if bfs {
        b.spawn_bfs().join().unique_state_count()
    } else {
        b.spawn_dfs().join().unique_state_count()
    };
    let secs = t.elapsed().as_secs_f64();
    outln!(
        "{name} ({threads} threads): {unique} unique states, {secs:.2} s, {:.0} unique states/s",
        unique as f64 / secs
    );
}

/// ckpt's depth-first engine on `model` ([`Plain`]: the model as
/// stateright sees it), timed, in the line format of [`compare_one`].
fn engine_one(model: &TwoPhase, threads: usize) {
    let t = Instant::now();
    let opts = EngineOptions {
        threads,
        target_max_depth: None,
        finish_when_any_failure: false,
    };
    let mut c = engine::spawn(model.clone(), Plain, opts);
    for h in c.handles() {
        if let Err(e) = h.join() {
            std::panic::resume_unwind(e);
        }
    }
    let unique = c.unique_state_count();
    let secs = t.elapsed().as_secs_f64();
    outln!(
        "ckpt engine ({threads} threads): {unique} unique states, {} generated, {secs:.2} s, {:.0} unique states/s",
        c.state_count(),
        unique as f64 / secs
    );
}

trait ClusterKind {
    fn cluster_kind(&self) -> String;
}

impl ClusterKind for DistOptions {
    fn cluster_kind(&self) -> String {
        match &self.cluster {
            Cluster::Threads(n) => format!("{n} threads in one process"),
            Cluster::Processes {
                threads, addresses, ..
            } => {
                format!("{} processes x {threads} threads", addresses.len())
            }
        }
    }
}
