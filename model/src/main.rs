//! `ckpt-model`: model-check the coordinator and tasks over the real
//! reducers (`check`), explore the model in stateright's web UI (`explore`),
//! or replay a JSON-lines trace through the core (`replay`).
//!
//! Exit status:
//!
//! | status | `check` | `replay` | `explore` |
//! |---|---|---|---|
//! | 0 | every property holds over the whole bounded space | every invariant holds, no host misuse | (serves until stopped) |
//! | 1 | a property is violated | an invariant is violated, or the trace has host misuse (`Rejected`) without `--allow-rejected` | |
//! | 2 | usage or input error (bad flags or combinations, unwritable output) | unreadable or malformed trace | usage error, port taken |
//! | 3 | inconclusive: a bound (`--time-limit`, `--max-depth`) cut the search, or a legacy semantics' known bug was not reached | | |
//! | 4 | a resource limit (`--max-states`, `--memory-limit-mb`) stopped the search: the counts and properties so far are printed (a violation found before the stop is still 1) | | |
//! | 130 | interrupted (Ctrl-C): counts and the verdict so far are printed | interrupted | |

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_core::trace::{Replayer, TraceReader};
use ckpt_model::check::{
    expected_holds, flags, format_steps, make_reachable, plain_ids, plural, run_check, step_count,
    structured_steps, to_mermaid, validate, write_trace_file, CheckOptions, CheckReport,
    Completion, Engine, Progress, Verdict,
};
use ckpt_model::explorer::explorer_fragment;
use ckpt_model::system::{semantics_name, ModelConfig, Network, SysModel, Topology};
use ckpt_model::world::{legacy_name, Reduction, Sim};
use clap::{Args, Parser, Subcommand};
use stateright::Model;

/// Every property holds / the replay is clean.
const EXIT_OK: u8 = 0;
/// A property or invariant is violated (or, in `replay`, host misuse).
const EXIT_VIOLATED: u8 = 1;
/// Usage or input error.
const EXIT_USAGE: u8 = 2;
/// A bound cut the search short (or a legacy bug was not reached).
const EXIT_INCONCLUSIVE: u8 = 3;
/// A resource limit (`--max-states`, `--memory-limit-mb`) stopped the
/// search: the report is partial.
const EXIT_LIMIT: u8 = 4;
/// Interrupted by Ctrl-C.
const EXIT_INTERRUPTED: u8 = 130;

/// The version of the `--json` output's shape.
const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Parser)]
#[command(
    name = "ckpt-model",
    version,
    about = "Model-check ckpt's coordinator and tasks over the real reducers",
    after_help = "Exit status: 0 holds / clean, 1 violated (replay: also host misuse), 2 usage or \
                  input error, 3 inconclusive (a bound cut the search), 4 a resource limit \
                  (--max-states, --memory-limit-mb) stopped it, 130 interrupted."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check every property (exit 0 holds, 1 violated, 3 inconclusive).
    Check(CheckArgs),
    /// Serve stateright's Explorer web UI on 127.0.0.1.
    Explore {
        #[command(flatten)]
        model: ModelArgs,
        /// Port on 127.0.0.1 (0: any free port; the address is printed).
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Replay a JSON-lines trace through the real reducers, every invariant
    /// checked at every step (exit 0 clean, 1 violation or host misuse).
    Replay(ReplayArgs),
    /// The bug zoo: every historical race as a legacy knob, each checked in
    /// the smallest world that reaches it (fixed must hold there, legacy
    /// must be caught as the property it breaks); prints the table (exit 0
    /// only if every row passes).
    Zoo(ZooArgs),
    /// Seeded random walks with check's properties, for configurations too
    /// big to search exhaustively (exit 0 nothing found, which proves
    /// nothing; 1 violated; 130 interrupted).
    Simulate(SimulateArgs),
    /// Combine the `--json` reports of `check --shard K/N` runs into one
    /// verdict and the shortest counterexample (exit 0 holds, 1 violated,
    /// 2 unreadable or mismatched reports, 3 inconclusive: a shard missing
    /// or cut short).
    Merge {
        /// The shards' JSON reports (one file per shard).
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Print a machine-readable JSON summary on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct SimulateArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The first walk's seed; walk i uses SEED + i, so a walk is replayed
    /// alone by `--seed <its seed> --walks 1`.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Number of walks.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    walks: u64,
    /// Actions per walk at most (a walk cut there judges no `eventually`).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    depth: u32,
    /// Stop walking after SECS seconds (the report covers the walks done).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    time_limit: Option<Duration>,
    /// Keep walking after a violation (count them; the first is printed).
    #[arg(long)]
    keep_going: bool,
    /// Write the first violation's walk as a JSON-lines core trace
    /// (replayable by `ckpt-model replay`).
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Print a machine-readable JSON summary on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ZooArgs {
    /// Write each counterexample as a JSON-lines trace into DIR, named after
    /// its ticket (the committed ones live in tests/traces/).
    #[arg(long, value_name = "DIR", conflicts_with = "check_traces")]
    traces: Option<PathBuf>,
    /// Compare each counterexample with the trace committed in DIR (exit 1
    /// on a difference: regenerate with --traces DIR).
    #[arg(long, value_name = "DIR")]
    check_traces: Option<PathBuf>,
    /// Partial-order reduction in every search (validation: every knob is
    /// still found, at the same length).
    #[arg(long)]
    reduction: bool,
    /// Seconds each search may take before it is cut (then the row fails).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    limit: u64,
    /// Checker threads (1..=64). With more than one, equally short
    /// counterexamples may differ from run to run (so may --check-traces).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
    /// Only the races whose ticket or knob name contains this text.
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
}

/// `--semantics`: `fixed`, one legacy bug by name, or `all` (check only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SemanticsArg {
    /// Fixed and every legacy variant, as a table.
    All,
    /// One semantics.
    One(Semantics),
}

fn semantics_names() -> String {
    let mut v = vec!["fixed"];
    v.extend(LegacyBug::ALL.iter().map(|b| legacy_name(*b)));
    v.join(", ")
}

fn parse_one_semantics(s: &str) -> Result<Semantics, String> {
    if s == "fixed" {
        return Ok(Semantics::Fixed);
    }
    LegacyBug::ALL
        .iter()
        .find(|b| legacy_name(**b) == s)
        .map(|b| Semantics::Legacy(*b))
        .ok_or_else(|| format!("unknown semantics `{s}`: one of {}", semantics_names()))
}

fn parse_semantics(s: &str) -> Result<SemanticsArg, String> {
    if s == "all" {
        Ok(SemanticsArg::All)
    } else {
        parse_one_semantics(s)
            .map(SemanticsArg::One)
            .map_err(|e| format!("{e}, or all"))
    }
}

#[derive(Args, Clone)]
struct ModelArgs {
    /// `fixed`, a legacy bug (`legacy` is the seed FLINK-17869; `ckpt-model
    /// zoo` lists them all with the world each needs), or `all` (check only:
    /// fixed plus every legacy variant in the smallest world that reaches it).
    #[arg(long, default_value = "fixed", value_parser = parse_semantics)]
    semantics: SemanticsArg,
    /// Number of tasks (1..=8).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    tasks: u32,
    /// Periodic trigger firings per run (1..=8).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=8))]
    checkpoints: u8,
    /// The coordinator's max concurrent checkpoints (1..=8).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    max_concurrent: u8,
    /// RPC network behaviour.
    #[arg(long, value_enum, default_value_t = Network::Reorder)]
    network: Network,
    /// Fault budget per run: drops, duplicates, failed I/O, writer / async
    /// failures (0..=8).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=8))]
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
    /// Barrier topology (join needs --tasks 3 or more).
    #[arg(long, value_enum, default_value_t = Topology::Fanout)]
    topology: Topology,
    /// User-triggered savepoints per run, at any time (forced: may exceed
    /// --max-concurrent; never subsumed) (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    savepoints: u8,
    /// Genuine task failures per run (any task): OperatorFailed, TaskFailed,
    /// then a restart as a new attempt (TaskRunning); messages for the old
    /// attempt are dropped, its acks / declines still reach the coordinator
    /// (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    task_failures: u8,
    /// Scheduler stops per run (StopScheduler aborts every pending
    /// checkpoint), each followed later by StartScheduler (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    scheduler_restarts: u8,
    /// User-triggered checkpoints per run (forced or not) (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    user_checkpoints: u8,
    /// Master hooks (operator coordinators) registered (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=2))]
    master_hooks: u32,
    /// Coordinator failovers per run: the coordinator's process dies (an
    /// outstanding store write commits or not) and a new one recovers from
    /// the store; every task restarts (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    coordinator_failovers: u8,
    /// Job failovers per run after a FailJob: every task restarts and the
    /// latest checkpoint is restored (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    job_failovers: u8,
    /// The job starts from a savepoint (registered in the store, restored
    /// with Restore { Savepoint }).
    #[arg(long)]
    savepoint_restore: bool,
    /// Sources that may finish their input per run (EndOfInput) (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    end_of_input: u8,
    /// Tasks may re-report unchanged state (incremental backends): an
    /// acknowledgement may carry the handle of the task's last acknowledged
    /// checkpoint once that one was notified complete.
    #[arg(long)]
    shared_state: bool,
    /// Coordinator failovers whose old coordinator keeps running (a deposed
    /// leader): its outstanding I/O lands late unless its generation is
    /// refused (0..=1; needs --coordinator-failovers).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    zombie_coordinators: u8,
    /// The user may dispose of each kept savepoint (DisposeSavepoint).
    #[arg(long)]
    dispose_savepoints: bool,
    /// Checker threads (1..=64).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
}

/// `--engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum EngineArg {
    /// ckpt's own depth-first engine.
    Ckpt,
    /// stateright's `DfsChecker`.
    Stateright,
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
    /// Turn partial-order reduction off (on by default: where one task's
    /// local steps commute with everything else that may happen before
    /// them, only those are expanded; same verdicts, fewer states; README
    /// "Partial-order reduction").
    #[arg(long)]
    no_reduction: bool,
    /// The depth-first checker: `ckpt` (the default: ckpt's own engine,
    /// stateright's semantics and counts with less overhead per state) or
    /// `stateright` (stateright's `DfsChecker`). `--bfs` is stateright's.
    #[arg(long, value_enum, default_value_t = EngineArg::Ckpt)]
    engine: EngineArg,
    /// Stop searching after SECS seconds: the verdict is then
    /// "inconclusive" (exit 3) unless a violation was found.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    time_limit: Option<Duration>,
    /// Explore paths of at most N actions: "inconclusive" (exit 3) if
    /// longer ones exist and nothing was violated.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_depth: Option<u32>,
    /// Stop once about N unique states were found (checked every 50 ms):
    /// a partial report, exit 4 unless a violation was found.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_states: Option<u64>,
    /// Stop once the process's resident memory (VmRSS, Linux) exceeds MB
    /// MiB (checked every 50 ms): a partial report, exit 4 unless a
    /// violation was found.
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    memory_limit_mb: Option<u64>,
    /// Search only shard K of N (for example 0/4): every shard explores the
    /// states above the split depth, then only the subtrees below the
    /// frontier states whose fingerprint is K modulo N. Combine the
    /// shards' `--json` reports with `ckpt-model merge`.
    #[arg(long, value_name = "K/N", value_parser = ckpt_model::shard::parse_shard)]
    shard: Option<(u64, u64)>,
    /// The depth (in actions) of the frontier `--shard` splits.
    #[arg(long, value_name = "D", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=64), requires = "shard")]
    split_depth: u16,
    /// Write the counterexample as a JSON-lines core trace (checked for
    /// writability before the search; removed if nothing is violated).
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Write the counterexample as a Mermaid sequence diagram (checked for
    /// writability before the search; removed if nothing is violated).
    #[arg(long, value_name = "FILE")]
    diagram: Option<PathBuf>,
    /// Print a machine-readable JSON summary on stdout (no progress line).
    #[arg(long)]
    json: bool,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Seconds between progress reports on stderr (default: 1 on a
    /// terminal, 10 otherwise).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    progress_every: Option<Duration>,
}

#[derive(Args)]
struct ReplayArgs {
    /// The trace file.
    file: PathBuf,
    /// Replay every machine with this semantics instead of the header's
    /// (for example a legacy counterexample against the fixed reducers):
    /// `fixed` or a legacy bug's name.
    #[arg(long, value_parser = parse_one_semantics)]
    semantics: Option<Semantics>,
    /// Accept host misuse (`Rejected` outcomes) in the trace: report it,
    /// exit 0 if nothing else is wrong.
    #[arg(long)]
    allow_rejected: bool,
    /// Print only the summary, not every step.
    #[arg(long)]
    quiet: bool,
    /// Seconds between progress reports on stderr (default: 1 on a
    /// terminal, 10 otherwise; none for replays under a second).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    progress_every: Option<Duration>,
}

fn positive_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 1e9 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!("`{s}`: expected a number of seconds above 0"))
    }
}

fn default_progress_every() -> Duration {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    }
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
        user_checkpoints: m.user_checkpoints,
        master_hooks: m.master_hooks,
        coordinator_failovers: m.coordinator_failovers,
        job_failovers: m.job_failovers,
        savepoint_restore: m.savepoint_restore,
        end_of_input: m.end_of_input,
        shared_state: m.shared_state,
        zombie_coordinators: m.zombie_coordinators,
        dispose_savepoints: m.dispose_savepoints,
        ..ModelConfig::default()
    }
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Check(args) => check(&args, started),
        Cmd::Explore { model, port } => explore(&model, port),
        Cmd::Replay(args) => replay(&args),
        Cmd::Zoo(args) => zoo(&args),
        Cmd::Simulate(args) => simulate(&args),
        Cmd::Merge { reports, json } => merge(&reports, json),
    };
    ExitCode::from(code)
}

fn usage_error(msg: &str) -> u8 {
    eprintln!("error: {msg}");
    EXIT_USAGE
}

/// A flag set by the first Ctrl-C; a second one exits at once.
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let installed = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
    if let Err(e) = installed {
        eprintln!("warning: no Ctrl-C handler ({e}): an interrupt ends the run without a report");
    }
    flag
}

fn semantics_of(a: SemanticsArg) -> Semantics {
    match a {
        SemanticsArg::All => Semantics::Fixed,
        SemanticsArg::One(s) => s,
    }
}

// ----- explore ----------------------------------------------------------------

fn explore(m: &ModelArgs, port: u16) -> u8 {
    if m.semantics == SemanticsArg::All {
        return usage_error(
            "explore shows one model: choose --semantics fixed, legacy or legacy-cancel \
             (`all` is for check)",
        );
    }
    let cfg = config(m, semantics_of(m.semantics));
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    // stateright's Explorer unwraps its bind result, so a taken port would
    // panic after we announced the address: bind first, report errors, and
    // hand over the address actually bound (port 0 picks a free one).
    let addr = match std::net::TcpListener::bind(("127.0.0.1", port)).and_then(|l| l.local_addr()) {
        Ok(a) => a,
        Err(e) => return usage_error(&format!("cannot serve on 127.0.0.1:{port}: {e}")),
    };
    println!("ckpt-model explore {}", flags(&cfg));
    let threads = usize::from(m.threads);
    let server = std::thread::spawn(move || {
        let _ = SysModel::new(cfg).checker().threads(threads).serve(addr);
    });
    // Announce the address only once the Explorer answers on it (the
    // server binds in its own thread; between our probe above and its bind
    // another process could take the port, and then it panics).
    let started = Instant::now();
    while !server.is_finished() && started.elapsed() < Duration::from_secs(30) {
        if std::net::TcpStream::connect(addr).is_ok() {
            println!("serving on http://{addr}/ (Ctrl-C to stop)");
            let _ = std::io::stdout().flush();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match server.join() {
        Ok(()) => EXIT_OK,
        Err(_) => usage_error(&format!(
            "cannot serve on {addr}: the Explorer failed to start"
        )),
    }
}

// ----- replay -----------------------------------------------------------------

fn replay(args: &ReplayArgs) -> u8 {
    let file = &args.file;
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) => return usage_error(&format!("cannot open {}: {e}", file.display())),
    };
    let mut reader = match TraceReader::new(std::io::BufReader::with_capacity(1 << 16, f)) {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("{}: {e}", file.display())),
    };
    if let Some(s) = args.semantics {
        let sem = s;
        let was: Vec<&str> = reader
            .header()
            .tasks
            .iter()
            .map(|(_, c)| semantics_name(c.semantics))
            .collect();
        reader.header_mut().set_task_semantics(sem);
        println!(
            "task semantics overridden: every task replays as `{}` (the header says {})",
            semantics_name(sem),
            summarize(&was)
        );
    }
    let mut replayer = match Replayer::new(reader.header()) {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("{}: {e}", file.display())),
    };
    let interrupt = interrupt_flag();
    let out = std::io::stdout().lock();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let start = Instant::now();
    let mut progress = Progress::new(args.progress_every.unwrap_or_else(default_progress_every));
    let mut last = (Instant::now(), 0usize);
    let mut rejected: Vec<(usize, String, String)> = Vec::new();
    let mut violation = None;
    let mut tick = 0u32;
    for line in reader.by_ref() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                let _ = out.flush();
                progress.finish();
                return usage_error(&format!(
                    "{}: {e} (after {})",
                    file.display(),
                    plural(replayer.steps(), "step", "steps")
                ));
            }
        };
        let s = match replayer.step(&line) {
            Ok(s) => s,
            Err(e) => {
                let _ = out.flush();
                progress.finish();
                return usage_error(&format!("{}: {e}", file.display()));
            }
        };
        if !args.quiet {
            let _ = writeln!(
                out,
                "{:>5}  {} <- {}  => {}",
                s.step,
                s.machine,
                plain_ids(&s.event),
                plain_ids(&s.outcome)
            );
            for e in &s.effects {
                let _ = writeln!(out, "         {}", plain_ids(e));
            }
        }
        if let Some(r) = &s.rejected {
            if !args.quiet {
                let _ = writeln!(out, "         HOST MISUSE: {r}");
            }
            rejected.push((s.step, s.machine.clone(), r.clone()));
        }
        if let Some(v) = s.violation {
            violation = Some((s.step, s.machine, v));
            break;
        }
        tick = tick.wrapping_add(1);
        if tick.is_multiple_of(1024) {
            if interrupt.load(Ordering::SeqCst) {
                break;
            }
            if progress.due() {
                let _ = out.flush();
                let n = replayer.steps();
                let rate = (n - last.1) as f64 / last.0.elapsed().as_secs_f64().max(1e-9);
                last = (Instant::now(), n);
                progress.show(&format!(
                    "  replay {}: {n} steps, {:.0} steps/s, {:.1} s",
                    file.display(),
                    rate,
                    start.elapsed().as_secs_f64()
                ));
            }
        }
    }
    progress.finish();
    let steps = replayer.steps();
    let secs = start.elapsed().as_secs_f64();
    let misuse = if rejected.is_empty() {
        String::new()
    } else {
        let first: Vec<String> = rejected
            .iter()
            .take(3)
            .map(|(n, m, r)| format!("step {n} ({m}): {r}"))
            .collect();
        format!(
            "{} refused as host misuse ({}{})",
            plural(rejected.len(), "step was", "steps were"),
            first.join("; "),
            if rejected.len() > 3 { "; ..." } else { "" }
        )
    };
    let code = if let Some((n, machine, v)) = &violation {
        let _ = writeln!(out, "step {n} ({machine}): {v}");
        if !misuse.is_empty() {
            let _ = writeln!(out, "also: {misuse}");
        }
        EXIT_VIOLATED
    } else if interrupt.load(Ordering::SeqCst) {
        let _ = writeln!(
            out,
            "interrupted after {}: no invariant violated so far (inconclusive)",
            plural(steps, "step", "steps")
        );
        EXIT_INTERRUPTED
    } else if !misuse.is_empty() {
        if args.allow_rejected {
            let _ = writeln!(
                out,
                "{}, every invariant holds; {misuse} (allowed by --allow-rejected)",
                plural(steps, "step", "steps")
            );
            EXIT_OK
        } else {
            let _ = writeln!(
                out,
                "{}, every invariant holds, but {misuse}: a recorded trace should have none \
                 (--allow-rejected accepts them)",
                plural(steps, "step", "steps")
            );
            EXIT_VIOLATED
        }
    } else {
        let _ = writeln!(
            out,
            "{}, every invariant holds",
            plural(steps, "step", "steps")
        );
        EXIT_OK
    };
    let _ = out.flush();
    if secs >= 1.0 {
        eprintln!(
            "replayed {} in {secs:.2} s ({:.0} steps/s)",
            plural(steps, "step", "steps"),
            steps as f64 / secs
        );
    }
    code
}

fn summarize(names: &[&str]) -> String {
    let mut uniq: Vec<&str> = names.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    match uniq.as_slice() {
        [] => "no tasks".into(),
        [one] => format!("`{one}`"),
        many => many
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

// ----- check ------------------------------------------------------------------

/// Writes an output file's contents to the path given.
type WriteFn<'a> = &'a dyn Fn(&Path) -> std::io::Result<()>;

/// An output file asked for with `--trace-out` / `--diagram`: opened before
/// the search (so an unwritable path fails at once, with exit 2), written
/// only when there is a counterexample, removed otherwise (a stale file from
/// an earlier run must not pass for this run's counterexample).
struct OutFile {
    path: PathBuf,
    existed: bool,
}

impl OutFile {
    fn prepare(path: &Path) -> Result<OutFile, String> {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(OutFile {
            path: path.to_path_buf(),
            existed,
        })
    }

    /// Writes `what`, or removes the file when there is nothing to write;
    /// returns what was done, for the report.
    fn finish(&self, what: Option<WriteFn<'_>>, label: &str) -> Result<String, String> {
        match what {
            Some(write) => {
                write(&self.path)
                    .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
                Ok(format!("wrote the {label} to {}", self.path.display()))
            }
            None => {
                std::fs::remove_file(&self.path)
                    .map_err(|e| format!("cannot remove {}: {e}", self.path.display()))?;
                Ok(if self.existed {
                    format!(
                        "no counterexample: removed the earlier {} (stale {label})",
                        self.path.display()
                    )
                } else {
                    format!("no counterexample: {} not written", self.path.display())
                })
            }
        }
    }
}

fn check(args: &CheckArgs, started: Instant) -> u8 {
    let m = &args.model;
    let interrupt = interrupt_flag();
    let opts = |stop| CheckOptions {
        threads: usize::from(m.threads),
        bfs: args.bfs,
        symmetry: !args.no_symmetry,
        progress: !args.quiet && !args.json,
        progress_every: args.progress_every.unwrap_or_else(default_progress_every),
        coverage: true,
        stop_at_failure: stop,
        time_limit: args.time_limit,
        max_depth: args.max_depth.map(|d| d as usize),
        interrupt: Some(Arc::clone(&interrupt)),
        max_states: args
            .max_states
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        memory_limit_mb: args.memory_limit_mb,
        roots: None,
        reduction: if args.no_reduction {
            Reduction::Off
        } else {
            Reduction::Ample
        },
        engine: match args.engine {
            EngineArg::Ckpt => Engine::Ckpt,
            EngineArg::Stateright => Engine::Stateright,
        },
    };
    if m.semantics == SemanticsArg::All {
        if args.trace_out.is_some() || args.diagram.is_some() {
            return usage_error(
                "--trace-out and --diagram need one semantics (fixed, legacy or legacy-cancel), \
                 not --semantics all",
            );
        }
        if args.shard.is_some() {
            return usage_error("--shard needs one semantics, not --semantics all");
        }
        return check_all(args, &opts(false), started);
    }
    let sem = semantics_of(m.semantics);
    let cfg = config(m, sem);
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    let mut outputs = Vec::new();
    for (p, label) in [(&args.trace_out, "trace"), (&args.diagram, "diagram")] {
        if let Some(p) = p {
            match OutFile::prepare(p) {
                Ok(o) => outputs.push((o, label)),
                Err(e) => return usage_error(&e),
            }
        }
    }
    let mut shard_info = None;
    let report = match args.shard {
        Some((index, count)) => {
            let spec = ckpt_model::shard::ShardSpec {
                index,
                count,
                split_depth: usize::from(args.split_depth),
            };
            let (r, info) = ckpt_model::shard::run_shard(&cfg, &opts(!expected_holds(sem)), spec);
            shard_info = Some(info);
            r
        }
        None => run_check(&cfg, &opts(!expected_holds(sem))),
    };
    let mut verdict = report.verdict();
    let mut note = verdict_note(&report);
    if verdict == Verdict::Holds && !expected_holds(sem) {
        verdict = Verdict::Inconclusive;
        note = format!(
            "no violation found, but --semantics {} is known to be buggy: this configuration did \
             not reach its bug, so this is no verdict (try the defaults, or --semantics all)",
            semantics_name(sem)
        );
    }
    let mut done = Vec::new();
    let mut write_failed = false;
    for (o, label) in &outputs {
        let r = match (&report.counterexample, *label) {
            (Some(cx), "trace") => {
                let w = |p: &Path| write_trace_file(p, &cfg, &cx.actions);
                o.finish(Some(&w), "counterexample trace")
            }
            (Some(cx), _) => {
                let title = format!(
                    "{} violated ({})",
                    cx.property,
                    semantics_name(cfg.semantics)
                );
                let w = |p: &Path| std::fs::write(p, to_mermaid(&cfg, &cx.actions, &title));
                o.finish(Some(&w), "counterexample diagram")
            }
            (None, _) => o.finish(None, label),
        };
        match r {
            Ok(msg) => done.push(msg),
            Err(e) => {
                eprintln!("error: {e}");
                write_failed = true;
            }
        }
    }
    let code = match (report.completion, verdict) {
        (Completion::Interrupted, _) => EXIT_INTERRUPTED,
        (_, Verdict::Violated) => EXIT_VIOLATED,
        (Completion::StateLimit | Completion::MemoryLimit, _) => EXIT_LIMIT,
        (_, Verdict::Inconclusive) => EXIT_INCONCLUSIVE,
        (_, Verdict::Holds) if write_failed => EXIT_USAGE,
        (_, Verdict::Holds) => EXIT_OK,
    };
    if args.json {
        let mut v = json_report(&report, started);
        v["verdict"] = serde_json::to_value(verdict).unwrap_or_default();
        v["verdict_note"] = serde_json::Value::String(note);
        v["outputs"] = serde_json::json!(done);
        v["exit_status"] = serde_json::json!(code);
        if let Some(i) = &shard_info {
            v["shard"] = shard_json(i, &report);
        }
        println!("{v}");
    } else {
        print_report(&report);
        if let Some(i) = &shard_info {
            println!(
                "  shard {}/{} at split depth {}: owns {} of {} frontier states ({} unique states \
                 above the frontier, searched by every shard)",
                i.spec.index,
                i.spec.count,
                i.spec.split_depth,
                i.owned,
                i.frontier,
                i.prefix_unique
            );
        }
        if let Some(cx) = &report.counterexample {
            let n = step_count(&cfg, &cx.actions);
            println!(
                "\nproperty `{}` violated at step {n}; shortest counterexample: {}, {}",
                cx.property,
                plural(cx.actions.len(), "action", "actions"),
                plural(n, "step", "steps")
            );
            println!(
                "(a step is one event delivered to one machine, numbered from 1 as `ckpt-model \
                 replay` numbers the --trace-out trace)"
            );
            if let Some(v) = &cx.violation {
                println!("  {v}");
            }
            print!("{}", format_steps(&cfg, &cx.actions));
            if let Some(frag) = explorer_fragment(&Sim::new(cfg.clone()), &cx.actions) {
                println!(
                    "open it in the Explorer: run `ckpt-model explore {}`, then open \
                     http://127.0.0.1:3000/{frag}",
                    flags(&cfg)
                );
            }
        }
        for d in &done {
            println!("{d}");
        }
        println!("verdict: {}", verdict_text(verdict, &note));
    }
    code
}

fn simulate(args: &SimulateArgs) -> u8 {
    use ckpt_model::simulate::{simulate as run_walks, SimulateOptions};
    let m = &args.model;
    if m.semantics == SemanticsArg::All {
        return usage_error("simulate needs one semantics, not --semantics all");
    }
    let cfg = config(m, semantics_of(m.semantics));
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    let out = match args.trace_out.as_deref().map(OutFile::prepare).transpose() {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let interrupt = interrupt_flag();
    let opts = SimulateOptions {
        seed: args.seed,
        walks: args.walks,
        depth: args.depth as usize,
        time_limit: args.time_limit,
        keep_going: args.keep_going,
        interrupt: Some(Arc::clone(&interrupt)),
    };
    let r = run_walks(&cfg, &opts, usize::from(m.threads));
    let first = r.violations.first();
    let replay_flags = |seed: u64| {
        format!(
            "ckpt-model simulate {} --seed {seed} --walks 1 --depth {}",
            flags(&cfg),
            args.depth
        )
    };
    let mut wrote = None;
    if let Some(o) = &out {
        let res = match first {
            Some(v) => {
                let w = |p: &Path| write_trace_file(p, &cfg, &v.counterexample.actions);
                o.finish(Some(&w), "counterexample trace")
            }
            None => o.finish(None, "trace"),
        };
        match res {
            Ok(msg) => wrote = Some(msg),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        }
    }
    let code = if interrupt.load(Ordering::SeqCst) {
        EXIT_INTERRUPTED
    } else if first.is_some() {
        EXIT_VIOLATED
    } else {
        EXIT_OK
    };
    if args.json {
        let v = serde_json::json!({
            "schema_version": JSON_SCHEMA_VERSION,
            "command": "simulate",
            "config": cfg,
            "flags": flags(&cfg),
            "seed": args.seed,
            "depth": args.depth,
            "walks": r.walks,
            "walks_per_second": r.walks_per_second(),
            "steps": r.steps,
            "ended": r.ended,
            "cut": r.cut,
            "longest": r.longest,
            "seconds": r.seconds,
            "stopped": r.stopped,
            "witnessed": r.witnessed,
            "not_witnessed": r.not_witnessed,
            "violations": r.violations.iter().map(|v| serde_json::json!({
                "property": v.counterexample.property,
                "walk": v.walk,
                "seed": v.seed,
                "replay": replay_flags(v.seed),
                "action_count": v.counterexample.actions.len(),
                "step_count": step_count(&cfg, &v.counterexample.actions),
                "violation": v.counterexample.violation.as_ref().map(|x| serde_json::json!({"invariant": x.invariant, "detail": x.detail})),
            })).collect::<Vec<_>>(),
            "outputs": wrote.iter().collect::<Vec<_>>(),
            "exit_status": code,
        });
        println!("{v}");
        return code;
    }
    println!(
        "ckpt-model simulate {} --seed {} --walks {} --depth {}",
        flags(&cfg),
        args.seed,
        args.walks,
        args.depth
    );
    println!(
        "  {} ({} ended, {} cut at the depth bound), {} actions, longest {}; {:.2} s, {:.0} walks/s{}",
        plural(usize::try_from(r.walks).unwrap_or(usize::MAX), "walk", "walks"),
        r.ended,
        r.cut,
        r.steps,
        r.longest,
        r.seconds,
        r.walks_per_second(),
        if r.stopped { " (stopped early)" } else { "" }
    );
    println!(
        "  sometimes witnessed: {} of {}",
        r.witnessed.len(),
        r.witnessed.len() + r.not_witnessed.len()
    );
    for name in &r.not_witnessed {
        println!("  [not witnessed       ] sometimes  {name}");
    }
    if let Some(v) = first {
        let cx = &v.counterexample;
        let n = step_count(&cfg, &cx.actions);
        println!(
            "\nproperty `{}` violated by walk {} (seed {}) at step {n}: {}, {}",
            cx.property,
            v.walk,
            v.seed,
            plural(cx.actions.len(), "action", "actions"),
            plural(n, "step", "steps")
        );
        println!("  replay this walk alone: {}", replay_flags(v.seed));
        if let Some(x) = &cx.violation {
            println!("  {x}");
        }
        print!("{}", format_steps(&cfg, &cx.actions));
        if r.violations.len() > 1 {
            println!("({} walks violated a property)", r.violations.len());
        }
    }
    if let Some(w) = &wrote {
        println!("{w}");
    }
    match code {
        EXIT_VIOLATED => println!("verdict: violated"),
        EXIT_INTERRUPTED => println!("verdict: interrupted; no violation found so far"),
        _ => println!(
            "verdict: no violation found in {} (random walks: not a proof)",
            plural(
                usize::try_from(r.walks).unwrap_or(usize::MAX),
                "walk",
                "walks"
            )
        ),
    }
    code
}

/// The `shard` object of a shard's JSON report: the split, and what
/// `merge` needs to print the counterexample.
fn shard_json(i: &ckpt_model::shard::ShardInfo, r: &CheckReport) -> serde_json::Value {
    serde_json::json!({
        "index": i.spec.index,
        "count": i.spec.count,
        "split_depth": i.spec.split_depth,
        "frontier": i.frontier,
        "owned": i.owned,
        "prefix_unique": i.prefix_unique,
        "counterexample_text": r.counterexample.as_ref().map(|c| format_steps(&r.config, &c.actions)),
    })
}

fn merge(paths: &[PathBuf], json: bool) -> u8 {
    let mut reports = Vec::new();
    for p in paths {
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => return usage_error(&format!("cannot read {}: {e}", p.display())),
        };
        let v: serde_json::Value = match serde_json::from_str(text.trim()) {
            Ok(v) => v,
            Err(e) => {
                return usage_error(&format!("{} is not a JSON report: {e}", p.display()));
            }
        };
        if v["command"] != "check" || !v["shard"].is_object() {
            return usage_error(&format!(
                "{} is not the --json report of a `check --shard K/N` run",
                p.display()
            ));
        }
        reports.push((p, v));
    }
    let Some((_, first)) = reports.first() else {
        return usage_error("no reports");
    };
    let key = |v: &serde_json::Value| {
        (
            v["flags"].clone(),
            v["shard"]["count"].clone(),
            v["shard"]["split_depth"].clone(),
        )
    };
    let want = key(first);
    if let Some((p, _)) = reports.iter().find(|(_, v)| key(v) != want) {
        return usage_error(&format!(
            "{} is a shard of another run (flags, shard count or split depth differ from {})",
            p.display(),
            paths
                .first()
                .map_or(String::new(), |f| f.display().to_string())
        ));
    }
    let count = first["shard"]["count"].as_u64().unwrap_or(0);
    let mut seen = std::collections::BTreeSet::new();
    for (p, v) in &reports {
        let k = v["shard"]["index"].as_u64().unwrap_or(u64::MAX);
        if !seen.insert(k) {
            return usage_error(&format!("{}: shard {k} given twice", p.display()));
        }
    }
    let missing: Vec<u64> = (0..count).filter(|k| !seen.contains(k)).collect();
    let cut = reports.iter().any(|(_, v)| v["completion"] != "complete");
    let partial = !missing.is_empty() || cut;
    // Properties, in the first report's order.
    let mut props: Vec<(String, String, String)> = Vec::new();
    for p in first["properties"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or("").to_string();
        let kind = p["kind"].as_str().unwrap_or("").to_string();
        let statuses: Vec<&str> = reports
            .iter()
            .filter_map(|(_, v)| {
                v["properties"]
                    .as_array()?
                    .iter()
                    .find(|q| q["name"] == p["name"])?["status"]
                    .as_str()
            })
            .collect();
        let all = |s: &str| statuses.len() == reports.len() && statuses.iter().all(|x| *x == s);
        let status = if kind == "sometimes" {
            if statuses.contains(&"witnessed") {
                "witnessed"
            } else if all("not witnessed") && !partial {
                "not witnessed"
            } else {
                "not witnessed so far"
            }
        } else if statuses.contains(&"violated") {
            "violated"
        } else if all("holds") && !partial {
            "holds"
        } else {
            "inconclusive"
        };
        props.push((name, kind, status.to_string()));
    }
    let violated = props.iter().any(|(_, _, s)| s == "violated");
    let verdict = if violated {
        Verdict::Violated
    } else if partial {
        Verdict::Inconclusive
    } else {
        Verdict::Holds
    };
    // The shortest counterexample over the shards (the lowest shard on a tie).
    let best = reports
        .iter()
        .filter(|(_, v)| v["counterexample"].is_object())
        .min_by_key(|(_, v)| {
            (
                v["counterexample"]["action_count"]
                    .as_u64()
                    .unwrap_or(u64::MAX),
                v["shard"]["index"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .map(|(_, v)| v);
    let sum = |field: &str| {
        reports
            .iter()
            .map(|(_, v)| v[field].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let code = match verdict {
        Verdict::Violated => EXIT_VIOLATED,
        Verdict::Inconclusive => EXIT_INCONCLUSIVE,
        Verdict::Holds => EXIT_OK,
    };
    let mut note = String::new();
    if !missing.is_empty() {
        note = format!("shards {missing:?} of {count} are missing");
    } else if cut {
        note = "a shard's search was cut short".into();
    }
    if json {
        let v = serde_json::json!({
            "schema_version": JSON_SCHEMA_VERSION,
            "command": "merge",
            "flags": first["flags"],
            "shards": count,
            "split_depth": first["shard"]["split_depth"],
            "reports": reports.len(),
            "missing": missing,
            "verdict": verdict,
            "verdict_note": note,
            "states": sum("states"),
            "unique_states": sum("unique_states"),
            "properties": props.iter().map(|(n, k, s)| serde_json::json!({"name": n, "kind": k, "status": s})).collect::<Vec<_>>(),
            "counterexample": best.map(|b| b["counterexample"].clone()),
            "counterexample_shard": best.map(|b| b["shard"]["index"].clone()),
            "exit_status": code,
        });
        println!("{v}");
        return code;
    }
    println!(
        "ckpt-model merge: {} of {count} shards (split depth {}) of ckpt-model check {}",
        reports.len(),
        first["shard"]["split_depth"],
        first["flags"].as_str().unwrap_or("")
    );
    println!(
        "  {} states, {} unique summed over the shards (states below frontier states of \
         different shards are counted in each: at least a single run's count)",
        sum("states"),
        sum("unique_states")
    );
    for (name, kind, status) in &props {
        println!("  [{status:<20}] {kind:<10} {name}");
    }
    if let Some(b) = best {
        let c = &b["counterexample"];
        println!(
            "\nproperty `{}` violated (shard {}); shortest counterexample over the shards: {} \
             actions, {} steps",
            c["property"].as_str().unwrap_or(""),
            b["shard"]["index"],
            c["action_count"],
            c["step_count"]
        );
        if let Some(v) = c["violation"].as_object() {
            println!(
                "  invariant `{}` violated: {}",
                v.get("invariant").and_then(|x| x.as_str()).unwrap_or(""),
                v.get("detail").and_then(|x| x.as_str()).unwrap_or("")
            );
        }
        print!(
            "{}",
            b["shard"]["counterexample_text"].as_str().unwrap_or("")
        );
    }
    println!("verdict: {}", verdict_text(verdict, &note));
    code
}

fn verdict_text(v: Verdict, note: &str) -> String {
    let word = match v {
        Verdict::Holds => "holds",
        Verdict::Violated => "violated",
        Verdict::Inconclusive => "inconclusive",
    };
    if note.is_empty() {
        word.to_string()
    } else {
        format!("{word}: {note}")
    }
}

fn verdict_note(r: &CheckReport) -> String {
    let what = match r.completion {
        Completion::Complete => return String::new(),
        Completion::StoppedAtViolation => {
            "the search stopped at the first violation (a legacy semantics asks only whether its \
             bug is found): the other properties were not decided"
        }
        Completion::TimeLimit => "the time limit ran out before the search finished",
        Completion::MaxDepth => "paths longer than --max-depth were not explored",
        Completion::Interrupted => "interrupted before the search finished",
        Completion::StateLimit => {
            "stopped at the state limit (--max-states) before the search finished: partial report"
        }
        Completion::MemoryLimit => {
            "stopped at the memory limit (--memory-limit-mb) before the search finished: partial \
             report"
        }
    };
    match r.verdict() {
        Verdict::Violated => format!("{what}; the violation found is definitive"),
        Verdict::Holds | Verdict::Inconclusive => format!(
            "{what}; no violation found within the bound, which is not \"holds\" ({} unique \
             states checked)",
            r.unique
        ),
    }
}

/// Why a never-delivered event kind is expected to be missing.
fn gap_reason(kind: &str) -> &'static str {
    match kind {
        "StopScheduler" => " (needs --scheduler-restarts)",
        "TaskFailed" | "TaskRunning" | "OperatorFailed" => " (needs --task-failures)",
        "Trigger" => " (needs --savepoints or --user-checkpoints)",
        "MasterHooksDone" => " (needs --master-hooks)",
        "Recover" => " (needs --coordinator-failovers)",
        "Restore" => " (needs a failover or --savepoint-restore)",
        "EndOfInput" => " (needs --end-of-input)",
        "DisposeSavepoint" => " (needs --dispose-savepoints and --savepoints)",
        "Close" => " (needs --coordinator-failovers or --job-failovers)",
        "CheckpointIdAllocated(err)" | "FinalizeDone(err)" | "StoreDone(err)" => {
            " (needs --faults and I/O faults)"
        }
        "WriterFailed" | "AsyncPartFailed" => " (needs --faults and task faults)",
        "Shutdown" => " (--no-shutdown)",
        _ => "",
    }
}

fn print_report(r: &CheckReport) {
    println!("ckpt-model check {}", flags(&r.config));
    println!(
        "  {} states, {} unique{}, depth {}; search {:.2} s, total {:.2} s",
        r.states,
        r.unique,
        if r.reduction {
            " (partial-order reduction)"
        } else {
            ""
        },
        r.depth,
        r.seconds,
        r.total_seconds
    );
    if let Some(mb) = r.peak_memory_mb {
        println!("  peak memory {mb:.1} MiB (VmHWM)");
    }
    for p in &r.properties {
        println!("  [{:<20}] {:<10} {}", p.status, p.kind, p.name);
    }
    for (name, flag) in not_checked(r) {
        println!(
            "  [{:<20}] {:<10} {name} (needs {flag})",
            "not checked", "sometimes"
        );
    }
    if let Some(cov) = &r.coverage {
        let pairs = |m: &str| {
            cov.keys()
                .filter(|(x, ..)| *x == m)
                .map(|(_, _, e, o)| (e, o))
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        let rows = |m: &str| cov.keys().filter(|(x, ..)| *x == m).count();
        println!(
            "  coverage: {} coordinator (event, outcome) pairs, {} task pairs; \
             {} / {} (phase, event, outcome) rows",
            pairs("coordinator"),
            pairs("task"),
            rows("coordinator"),
            rows("task")
        );
        let gaps = |machine: &str, kinds: &[&'static str]| -> Vec<String> {
            kinds
                .iter()
                .filter(|k| !cov.keys().any(|(m, _, x, _)| *m == machine && x == *k))
                .map(|k| format!("{k}{}", gap_reason(k)))
                .collect()
        };
        let c = gaps("coordinator", &ckpt_model::system::COORD_EVENT_KINDS);
        let t = gaps("task", &ckpt_model::system::TASK_EVENT_KINDS);
        if c.is_empty() && t.is_empty() {
            println!("  every event kind was delivered");
        } else {
            println!("  never delivered:");
            for (machine, g) in [("coordinator", c), ("task", t)] {
                if !g.is_empty() {
                    println!("    {machine}: {}", g.join(", "));
                }
            }
        }
    }
}

/// The opt-in witnesses left out of this model, with the flag that adds
/// them.
fn not_checked(r: &CheckReport) -> Vec<(&'static str, &'static str)> {
    ckpt_model::system::props::OPT_IN_PAIRS
        .iter()
        .filter(|(_, name, _)| !r.properties.iter().any(|p| p.name == *name))
        .map(|(_, name, flag)| (*name, *flag))
        .collect()
}

fn json_report(r: &CheckReport, started: Instant) -> serde_json::Value {
    serde_json::json!({
        "schema_version": JSON_SCHEMA_VERSION,
        "command": "check",
        "config": r.config,
        "flags": flags(&r.config),
        "verdict": r.verdict(),
        "completion": r.completion,
        "states": r.states,
        "unique_states": r.unique,
        "depth": r.depth,
        "search_seconds": r.seconds,
        "check_seconds": r.total_seconds,
        "wall_seconds": started.elapsed().as_secs_f64(),
        "peak_memory_mb": r.peak_memory_mb,
        "reduction": r.reduction,
        "engine": r.engine,
        "properties": r.properties,
        "not_checked": not_checked(r).iter().map(|(name, flag)| serde_json::json!({
            "name": name, "kind": "sometimes", "reason": format!("{flag} is 0"),
        })).collect::<Vec<_>>(),
        "counterexample": r.counterexample.as_ref().map(|c| serde_json::json!({
            "property": c.property,
            "action_count": c.actions.len(),
            "step_count": step_count(&r.config, &c.actions),
            "violation": c.violation.as_ref().map(|v| serde_json::json!({"invariant": v.invariant, "detail": v.detail})),
            "steps": structured_steps(&r.config, &c.actions),
            "explorer": explorer_fragment(&Sim::new(r.config.clone()), &c.actions).map(|f| serde_json::json!({
                "command": format!("ckpt-model explore {}", flags(&r.config)),
                "fragment": f,
            })),
        })),
        "coverage": r.coverage.as_ref().map(|cov| cov.iter().map(|((m, p, k, o), n)| serde_json::json!({
            "machine": m, "phase": p, "event": k, "outcome": o, "count": n
        })).collect::<Vec<_>>()),
    })
}

fn check_all(args: &CheckArgs, opts: &CheckOptions, started: Instant) -> u8 {
    let m = &args.model;
    let base = config(m, Semantics::Fixed);
    if base.topology == Topology::Join && base.tasks < 3 {
        if let Err(e) = validate(&base) {
            return usage_error(&e);
        }
    }
    let variants = std::iter::once(Semantics::Fixed)
        .chain(LegacyBug::ALL.iter().map(|b| Semantics::Legacy(*b)));
    let mut rows = Vec::new();
    let mut code = EXIT_OK;
    for sem in variants {
        // A legacy variant's bug may be unreachable in the given topology:
        // check it where it is reachable and say so in the table.
        let (cfg, note) = make_reachable(&config(m, sem));
        let mut o = opts.clone();
        o.stop_at_failure = !expected_holds(sem);
        // A legacy bug is searched breadth-first: it sits near the root, and
        // a depth-first search may wander a large space before reaching it.
        o.bfs = o.bfs || !expected_holds(sem);
        let r = run_check(&cfg, &o);
        let verdict = r.verdict();
        let expected = if expected_holds(sem) {
            Verdict::Holds
        } else {
            Verdict::Violated
        };
        let row_code = match (r.completion, verdict) {
            (Completion::Interrupted, _) => EXIT_INTERRUPTED,
            (Completion::StateLimit | Completion::MemoryLimit, v) if v != expected => EXIT_LIMIT,
            (_, v) if v == expected => EXIT_OK,
            (_, Verdict::Inconclusive) => EXIT_INCONCLUSIVE,
            // Fixed violated, or a legacy bug not caught where it is
            // reachable: CI's "every legacy variant must be caught".
            (_, Verdict::Holds | Verdict::Violated) => EXIT_VIOLATED,
        };
        code = worse(code, row_code);
        let interrupted = r.completion == Completion::Interrupted;
        rows.push((sem, r, note, verdict, row_code));
        if interrupted {
            break;
        }
    }
    if args.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(sem, r, note, verdict, row_code)| {
                serde_json::json!({
                    "semantics": semantics_name(*sem),
                    "changed_to": note,
                    "verdict": verdict,
                    "expected": if expected_holds(*sem) { "holds" } else { "violated" },
                    "as_expected": *row_code == EXIT_OK,
                    "report": json_report(r, started),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "schema_version": JSON_SCHEMA_VERSION,
                "command": "check",
                "semantics": "all",
                "variants": v,
                "wall_seconds": started.elapsed().as_secs_f64(),
                "exit_status": code,
            })
        );
    } else {
        println!(
            "ckpt-model check {} --semantics all",
            flags(&base).replacen("--semantics fixed ", "", 1)
        );
        println!(
            "{:<30} {:>10} {:>10} {:>6} {:>8}  {:<34} {:<9} changed to",
            "semantics", "states", "unique", "depth", "seconds", "verdict", "expected"
        );
        for (sem, r, note, verdict, row_code) in &rows {
            let v = match (&r.counterexample, verdict) {
                (Some(c), _) => format!(
                    "violated ({}, {})",
                    plural(c.actions.len(), "action", "actions"),
                    plural(step_count(&r.config, &c.actions), "step", "steps")
                ),
                (None, Verdict::Holds) if expected_holds(*sem) => "holds".into(),
                (None, Verdict::Holds) => "not found (no verdict)".into(),
                (None, Verdict::Violated) => "violated".into(),
                (None, Verdict::Inconclusive) => "inconclusive".into(),
            };
            println!(
                "{:<30} {:>10} {:>10} {:>6} {:>8.2}  {:<34} {:<9} {}{}",
                semantics_name(*sem),
                r.states,
                r.unique,
                r.depth,
                r.seconds,
                v,
                if expected_holds(*sem) {
                    "holds"
                } else {
                    "violated"
                },
                note.as_deref().unwrap_or("-"),
                match *row_code {
                    EXIT_OK => "",
                    EXIT_INCONCLUSIVE => "  <-- INCONCLUSIVE",
                    EXIT_INTERRUPTED => "  <-- INTERRUPTED",
                    EXIT_LIMIT => "  <-- RESOURCE LIMIT",
                    _ => "  <-- UNEXPECTED",
                }
            );
        }
        let summary = match code {
            EXIT_OK => "verdict: as expected (fixed holds, every legacy variant is caught)",
            EXIT_INCONCLUSIVE => "verdict: inconclusive (a bound cut a search short)",
            EXIT_INTERRUPTED => "verdict: interrupted (inconclusive)",
            EXIT_LIMIT => "verdict: a resource limit stopped a search (inconclusive)",
            _ => "verdict: UNEXPECTED",
        };
        println!("{summary}");
    }
    code
}

/// The more severe of two exit statuses: interrupted > violated >
/// inconclusive > ok.
fn worse(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        EXIT_INTERRUPTED => 5,
        EXIT_VIOLATED => 4,
        EXIT_LIMIT => 3,
        EXIT_INCONCLUSIVE => 2,
        EXIT_USAGE => 1,
        _ => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

// ----- zoo --------------------------------------------------------------------

/// The file name a knob's counterexample gets under tests/traces/: its
/// first ticket and its knob (`zoo_flink_17994_legacy_stale_mail`).
#[must_use]
fn trace_name(bug: LegacyBug) -> String {
    let first = bug.tickets().split(',').next().unwrap_or("race").trim();
    let ticket: String = first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("zoo_{ticket}_{}", legacy_name(bug).replace('-', "_"))
}

/// The flags in which `c` differs from the default configuration (its
/// semantics aside): the world a zoo entry needs.
fn world_flags(c: &ModelConfig) -> String {
    let default = ModelConfig {
        semantics: c.semantics,
        ..ModelConfig::default()
    };
    let pairs = |f: String| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for tok in f.split_whitespace() {
            match out.last_mut() {
                Some(last) if !tok.starts_with("--") => {
                    last.push(' ');
                    last.push_str(tok);
                }
                Some(_) | None => out.push(tok.to_string()),
            }
        }
        out
    };
    let base = pairs(flags(&default));
    let diff: Vec<String> = pairs(flags(c))
        .into_iter()
        .filter(|p| !base.contains(p))
        .collect();
    if diff.is_empty() {
        "(default)".into()
    } else {
        diff.join(" ")
    }
}

fn zoo(args: &ZooArgs) -> u8 {
    use ckpt_model::zoo::{check_entry_reduced, entries};
    let reduction = if args.reduction {
        Reduction::Ample
    } else {
        Reduction::Off
    };
    if let Some(dir) = &args.traces {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return usage_error(&format!("cannot create {}: {e}", dir.display()));
        }
    }
    let limit = Duration::from_secs(args.limit);
    let mut code = EXIT_OK;
    println!(
        "| race | knob | what went wrong | property broken | world (flags) | fixed | steps | time to find |"
    );
    println!("|---|---|---|---|---|---|---:|---:|");
    for entry in entries() {
        let name = legacy_name(entry.bug);
        if let Some(only) = &args.only {
            if !entry.bug.tickets().contains(only.as_str()) && !name.contains(only.as_str()) {
                continue;
            }
        }
        let row = check_entry_reduced(&entry, usize::from(args.threads), limit, reduction);
        let found = match &row.found {
            Some(cx) if cx.property == entry.property => {
                format!("{}", cx.actions.len())
            }
            Some(cx) => format!("{} (as `{}`)", cx.actions.len(), cx.property),
            None => "NOT FOUND".into(),
        };
        if !row.ok() {
            code = EXIT_VIOLATED;
        }
        println!(
            "| {} | `{}` | {} | {} | `{}` | {} | {} | {:.2} s |",
            entry.bug.tickets(),
            name,
            entry.story,
            entry.property,
            world_flags(&entry.config),
            match row.fixed {
                Verdict::Holds => "holds".to_string(),
                Verdict::Violated => "VIOLATED".to_string(),
                Verdict::Inconclusive => format!("holds to depth {}", row.fixed_depth),
            },
            found,
            row.seconds
        );
        if let (Some(dir), Some(cx)) = (&args.traces, &row.found) {
            let path = dir.join(format!("{}.jsonl", trace_name(entry.bug)));
            if let Err(e) = write_trace_file(&path, &entry.config, &cx.actions) {
                eprintln!("cannot write {}: {e}", path.display());
                code = worse(code, EXIT_USAGE);
            }
        }
        if let (Some(dir), Some(cx)) = (&args.check_traces, &row.found) {
            let path = dir.join(format!("{}.jsonl", trace_name(entry.bug)));
            let mut now = Vec::new();
            let written = ckpt_core::trace::write_trace(
                &mut now,
                &ckpt_model::check::to_trace(&entry.config, &cx.actions),
            );
            let committed = std::fs::read(&path).unwrap_or_default();
            if written.is_err() || now != committed {
                eprintln!(
                    "{}: the committed trace differs from this counterexample (regenerate with \
                     `ckpt-model zoo --traces {}`)",
                    path.display(),
                    dir.display()
                );
                code = worse(code, EXIT_VIOLATED);
            }
        }
    }
    code
}
