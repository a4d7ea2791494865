//! `ckpt-model`: model-check the coordinator and tasks over the real
//! reducers (`check`), explore the model in stateright's web UI (`explore`),
//! or replay a JSON-lines trace through the core (`replay`).
//!
//! Exit status: 0 every property holds, 1 a property is violated (or a
//! replayed trace breaks an invariant), 2 usage or input error.

use std::path::PathBuf;
use std::process::ExitCode;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::check::{
    expected_holds, format_steps, run_check, to_mermaid, write_trace_file, CheckOptions,
    CheckReport,
};
use ckpt_model::system::{semantics_name, ModelConfig, Network, SysModel, Topology};
use clap::{Args, Parser, Subcommand, ValueEnum};
use stateright::Model;

#[derive(Parser)]
#[command(
    name = "ckpt-model",
    version,
    about = "Model-check ckpt's coordinator and tasks over the real reducers"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check every property (exit 0 holds, 1 violated).
    Check(CheckArgs),
    /// Serve stateright's Explorer web UI on 127.0.0.1.
    Explore {
        #[command(flatten)]
        model: ModelArgs,
        /// Port on 127.0.0.1.
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Replay a JSON-lines trace through ckpt_core::trace::replay.
    Replay {
        /// The trace file.
        file: PathBuf,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SemanticsArg {
    /// FLINK-17869 fixed.
    Fixed,
    /// The seed bug: Legacy(AbortRemovesResult).
    Legacy,
    /// Legacy(CancelForgetsAbort).
    LegacyCancel,
    /// Fixed and every legacy variant, as a table.
    All,
}

#[derive(Args, Clone)]
struct ModelArgs {
    /// Task semantics.
    #[arg(long, value_enum, default_value_t = SemanticsArg::Fixed)]
    semantics: SemanticsArg,
    /// Number of tasks.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    tasks: u32,
    /// Periodic trigger firings per run.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=8))]
    checkpoints: u8,
    /// The coordinator's max concurrent checkpoints.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    max_concurrent: u8,
    /// RPC network behaviour.
    #[arg(long, value_enum, default_value_t = Network::Reorder)]
    network: Network,
    /// Fault budget per run (drops, duplicates, failed I/O, writer / async failures).
    #[arg(long, default_value_t = 1)]
    faults: u8,
    /// No failed I/O answers.
    #[arg(long)]
    no_io_faults: bool,
    /// No writer / async-part failures.
    #[arg(long)]
    no_task_faults: bool,
    /// No coordinator shutdown.
    #[arg(long)]
    no_shutdown: bool,
    /// Barrier topology.
    #[arg(long, value_enum, default_value_t = Topology::Fanout)]
    topology: Topology,
    /// User-triggered savepoints per run, at any time (forced: may exceed
    /// --max-concurrent; never subsumed). 0: none.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    savepoints: u8,
    /// Genuine task failures per run (any task): OperatorFailed, TaskFailed,
    /// then a restart as a new attempt (TaskRunning); messages for the old
    /// attempt are dropped, its acks / declines still reach the coordinator.
    /// 0: none.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    task_failures: u8,
    /// Scheduler stops per run (StopScheduler aborts every pending
    /// checkpoint), each followed later by StartScheduler. 0: none.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    scheduler_restarts: u8,
    /// Checker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Breadth-first search (no symmetry reduction in stateright's BFS).
    #[arg(long, conflicts_with = "dfs")]
    bfs: bool,
    /// Depth-first search (the default).
    #[arg(long)]
    dfs: bool,
    /// Turn symmetry reduction off.
    #[arg(long)]
    no_symmetry: bool,
    /// Write the counterexample as a JSON-lines core trace.
    #[arg(long)]
    trace_out: Option<PathBuf>,
    /// Write the counterexample as a Mermaid sequence diagram.
    #[arg(long)]
    diagram: Option<PathBuf>,
    /// Print a machine-readable JSON summary on stdout.
    #[arg(long)]
    json: bool,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

fn config(m: &ModelArgs, semantics: Semantics) -> ModelConfig {
    ModelConfig {
        tasks: m.tasks,
        checkpoints: m.checkpoints,
        max_concurrent: m.max_concurrent,
        network: m.network,
        faults: m.faults,
        io_faults: !m.no_io_faults,
        task_faults: !m.no_task_faults,
        shutdown: !m.no_shutdown,
        topology: m.topology,
        semantics,
        savepoints: m.savepoints,
        task_failures: m.task_failures,
        scheduler_restarts: m.scheduler_restarts,
        ..ModelConfig::default()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Check(args) => check(&args),
        Cmd::Explore { model, port } => explore(&model, port),
        Cmd::Replay { file } => replay(&file),
    }
}

fn semantics_of(a: SemanticsArg) -> Semantics {
    match a {
        SemanticsArg::Fixed | SemanticsArg::All => Semantics::Fixed,
        SemanticsArg::Legacy => Semantics::Legacy(LegacyBug::AbortRemovesResult),
        SemanticsArg::LegacyCancel => Semantics::Legacy(LegacyBug::CancelForgetsAbort),
    }
}

fn explore(m: &ModelArgs, port: u16) -> ExitCode {
    let cfg = config(m, semantics_of(m.semantics));
    let addr = format!("127.0.0.1:{port}");
    println!("Explorer for {cfg:?}\nserving on http://{addr}/ (Ctrl-C to stop)");
    let _ = SysModel::new(cfg)
        .checker()
        .threads(m.threads.max(1))
        .serve(addr);
    ExitCode::SUCCESS
}

fn replay(file: &std::path::Path) -> ExitCode {
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("cannot open {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let trace = match ckpt_core::trace::read_trace(std::io::BufReader::new(f)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let report = match ckpt_core::trace::replay(&trace) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    for s in &report.steps {
        println!(
            "{:>3}. {} <- {}  => {}",
            s.index, s.machine, s.event, s.outcome
        );
        for e in &s.effects {
            println!("       {e}");
        }
    }
    match &report.violation {
        Some((i, v)) => {
            println!("step {i}: {v}");
            ExitCode::from(1)
        }
        None => {
            println!("{} steps, every invariant holds", report.steps.len());
            ExitCode::SUCCESS
        }
    }
}

fn print_report(r: &CheckReport) {
    let c = &r.config;
    println!(
        "ckpt-model check: semantics {}, {} tasks ({:?}), {} checkpoints, max concurrent {}, network {:?}, faults {} (io {}, task {}), shutdown {}",
        semantics_name(c.semantics),
        c.tasks,
        c.topology,
        c.checkpoints,
        c.max_concurrent,
        c.network,
        c.faults,
        c.io_faults,
        c.task_faults,
        c.shutdown
    );
    println!(
        "  savepoints {}, task failures {}, scheduler restarts {}",
        c.savepoints, c.task_failures, c.scheduler_restarts
    );
    println!(
        "  {} states, {} unique, depth {}, {:.2} s",
        r.states, r.unique, r.depth, r.seconds
    );
    for p in &r.properties {
        println!("  [{:<13}] {:<10} {}", p.status, p.kind, p.name);
    }
    for (_, name, flag) in ckpt_model::system::props::OPT_IN_PAIRS {
        if !r.properties.iter().any(|p| p.name == name) {
            println!(
                "  [{:<13}] {:<10} {name} ({flag} is 0)",
                "not checked", "sometimes"
            );
        }
    }
    if let Some(cov) = &r.coverage {
        let mut coord_kinds = std::collections::BTreeSet::new();
        let mut task_kinds = std::collections::BTreeSet::new();
        for (m, k, _) in cov.keys() {
            if *m == "coordinator" {
                coord_kinds.insert(*k);
            } else {
                task_kinds.insert(*k);
            }
        }
        let pairs = |m: &str| cov.keys().filter(|(x, _, _)| *x == m).count();
        println!(
            "  coverage: {} coordinator (event, outcome) pairs, {} task pairs",
            pairs("coordinator"),
            pairs("task")
        );
        let gaps_c: Vec<&str> = ckpt_model::system::COORD_EVENT_KINDS
            .iter()
            .copied()
            .filter(|k| !coord_kinds.contains(k))
            .collect();
        let gaps_t: Vec<&str> = ckpt_model::system::TASK_EVENT_KINDS
            .iter()
            .copied()
            .filter(|k| !task_kinds.contains(k))
            .collect();
        println!("  never delivered: coordinator {gaps_c:?}, task {gaps_t:?}");
    }
}

fn json_report(r: &CheckReport) -> serde_json::Value {
    serde_json::json!({
        "config": r.config,
        "states": r.states,
        "unique_states": r.unique,
        "depth": r.depth,
        "seconds": r.seconds,
        "holds": r.holds(),
        "properties": r.properties,
        "counterexample": r.counterexample.as_ref().map(|c| serde_json::json!({
            "property": c.property,
            "steps": c.actions.len(),
            "actions": c.actions.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>(),
            "violation": c.violation.as_ref().map(|v| serde_json::json!({"invariant": v.invariant, "detail": v.detail})),
        })),
        "coverage": r.coverage.as_ref().map(|cov| cov.iter().map(|((m, k, o), n)| serde_json::json!({
            "machine": m, "event": k, "outcome": o, "count": n
        })).collect::<Vec<_>>()),
    })
}

fn check(args: &CheckArgs) -> ExitCode {
    let m = &args.model;
    let opts = |stop| CheckOptions {
        threads: m.threads.max(1),
        bfs: args.bfs,
        symmetry: !args.no_symmetry,
        progress: !args.quiet && !args.json,
        coverage: true,
        stop_at_failure: stop,
    };
    if m.semantics == SemanticsArg::All {
        return check_all(args, &opts(false));
    }
    let sem = semantics_of(m.semantics);
    let cfg = config(m, sem);
    let report = run_check(&cfg, &opts(!expected_holds(sem)));
    if args.json {
        println!("{}", json_report(&report));
    } else {
        print_report(&report);
    }
    if let Some(cx) = &report.counterexample {
        if !args.json {
            println!(
                "\nproperty `{}` violated; shortest counterexample ({} steps):",
                cx.property,
                cx.actions.len()
            );
            if let Some(v) = &cx.violation {
                println!("  {v}");
            }
            print!("{}", format_steps(&cfg, &cx.actions));
        }
        if let Some(p) = &args.trace_out {
            if let Err(e) = write_trace_file(p, &cfg, &cx.actions) {
                eprintln!("cannot write {}: {e}", p.display());
                return ExitCode::from(2);
            }
        }
        if let Some(p) = &args.diagram {
            let title = format!(
                "{} violated ({})",
                cx.property,
                semantics_name(cfg.semantics)
            );
            if let Err(e) = std::fs::write(p, to_mermaid(&cfg, &cx.actions, &title)) {
                eprintln!("cannot write {}: {e}", p.display());
                return ExitCode::from(2);
            }
        }
    }
    if report.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn check_all(args: &CheckArgs, opts: &CheckOptions) -> ExitCode {
    let m = &args.model;
    let variants = [
        Semantics::Fixed,
        Semantics::Legacy(LegacyBug::AbortRemovesResult),
        Semantics::Legacy(LegacyBug::CancelForgetsAbort),
    ];
    let mut rows = Vec::new();
    let mut ok = true;
    for sem in variants {
        let mut cfg = config(m, sem);
        let mut note = String::new();
        // CancelForgetsAbort needs a task that sees a barrier and a cancel
        // marker for the same checkpoint: two upstream sources.
        if sem == Semantics::Legacy(LegacyBug::CancelForgetsAbort)
            && (cfg.topology == Topology::Fanout || cfg.tasks < 3)
        {
            cfg.topology = Topology::Join;
            cfg.tasks = cfg.tasks.max(3);
            note = format!("join, {} tasks", cfg.tasks);
        }
        let mut o = opts.clone();
        o.stop_at_failure = !expected_holds(sem);
        let r = run_check(&cfg, &o);
        let holds = r.holds();
        let good = holds == expected_holds(sem);
        ok &= good;
        rows.push((sem, r, note, good));
    }
    if args.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(sem, r, note, good)| {
                serde_json::json!({
                    "semantics": semantics_name(*sem),
                    "note": note,
                    "as_expected": good,
                    "report": json_report(r),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
    } else {
        println!(
            "{:<30} {:>10} {:>10} {:>6} {:>8}  {:<22} {:<10}",
            "semantics", "states", "unique", "depth", "seconds", "verdict", "expected"
        );
        for (sem, r, note, good) in &rows {
            let verdict = match &r.counterexample {
                Some(c) => format!("violated ({} steps)", c.actions.len()),
                None if r.holds() => "holds".into(),
                None => "violated".into(),
            };
            let name = if note.is_empty() {
                semantics_name(*sem).to_string()
            } else {
                format!("{} [{note}]", semantics_name(*sem))
            };
            println!(
                "{:<30} {:>10} {:>10} {:>6} {:>8.2}  {:<22} {:<10}{}",
                name,
                r.states,
                r.unique,
                r.depth,
                r.seconds,
                verdict,
                if expected_holds(*sem) {
                    "holds"
                } else {
                    "violated"
                },
                if *good { "" } else { "  <-- UNEXPECTED" }
            );
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
