//! The command line: every command's flags (clap), and what they mean for
//! the model's configuration.

use std::path::PathBuf;
use std::time::Duration;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::world::{legacy_name, ModelConfig, Network, Topology};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use crate::cli::exit::ExitStatus;

/// The command line: one subcommand.
#[derive(Parser)]
#[command(
    name = "ckpt-model",
    version,
    about = "Model-check ckpt's coordinator and tasks over the real reducers",
    after_help = ExitStatus::help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Check every property (exit 0 holds, 1 violated, 3 inconclusive).
    Check(CheckArgs),
    /// Serve stateright's Explorer web UI on 127.0.0.1, with ckpt's views.
    Explore(ExploreArgs),
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
    Merge(MergeArgs),
    /// Exhaustive breadth-first search on timely dataflow, each state owned
    /// by the worker its fingerprint hashes to: threads (`--threads`), or
    /// processes on one machine or many (`--processes`, `--local-processes`);
    /// resumable (`--checkpoint-dir`, `--resume`). Exit 0 holds, 1 violated,
    /// 2 usage or a refused checkpoint, 3 stopped early or a legacy knob
    /// whose bug the search did not find (never "holds").
    Dist(DistArgs),
    /// Print the JSON Schema of a `--json` output (the files under
    /// model/schema/).
    Schema(SchemaArgs),
}

/// The names `--semantics` accepts for one semantics: `fixed`, then every
/// knob of the zoo.
fn one_semantics_names() -> Vec<&'static str> {
    std::iter::once("fixed")
        .chain(LegacyBug::ALL.iter().map(|b| legacy_name(*b)))
        .collect()
}

fn semantics_of_name(s: &str) -> Semantics {
    LegacyBug::ALL
        .iter()
        .find(|b| legacy_name(**b) == s)
        .map_or(Semantics::Fixed, |b| Semantics::Legacy(*b))
}

/// `--semantics` of a command that runs one model: exactly `fixed` and the
/// knobs (clap lists them when a value is not one).
fn one_semantics() -> impl TypedValueParser<Value = Semantics> {
    PossibleValuesParser::new(one_semantics_names()).map(|s| semantics_of_name(&s))
}

/// `--semantics` of `check`: one semantics, or `all`.
fn check_semantics() -> impl TypedValueParser<Value = SemanticsArg> {
    let mut names = one_semantics_names();
    names.push("all");
    PossibleValuesParser::new(names).map(|s| {
        if s == "all" {
            SemanticsArg::All
        } else {
            SemanticsArg::One(semantics_of_name(&s))
        }
    })
}

/// `check --semantics`: one semantics, or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemanticsArg {
    /// Fixed and every legacy variant, as a table.
    All,
    /// One semantics: fixed or a knob.
    One(Semantics),
}

/// The longest duration a seconds flag takes: one year. Longer limits are
/// no limit on any machine this runs on, and a bound keeps every duration
/// representable.
const SECS_MAX: f64 = 365.0 * 24.0 * 3600.0;

fn positive_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= SECS_MAX {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!(
            "`{s}`: expected a number of seconds above 0 and at most {SECS_MAX:.0} (one year)"
        ))
    }
}

/// The bounds of the model, shared by `check`, `explore` and `simulate`.
#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Number of tasks (1..=8).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub tasks: u32,
    /// Periodic trigger firings per run (0..=8; 0 only with
    /// --stop-with-savepoint, as the bug zoo's world for it, whose only
    /// checkpoint is the stop's savepoint).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=8))]
    pub checkpoints: u8,
    /// The coordinator's max concurrent checkpoints (1..=8).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub max_concurrent: u8,
    /// RPC network behaviour.
    #[arg(long, value_enum, default_value_t = Network::Reorder)]
    pub network: Network,
    /// Fault budget per run: drops, duplicates, failed I/O, writer / async
    /// failures (0..=8).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=8))]
    pub faults: u8,
    /// No failed I/O answers.
    #[arg(long)]
    pub no_io_faults: bool,
    /// No writer / async-part failures.
    #[arg(long)]
    pub no_task_faults: bool,
    /// No coordinator shutdown.
    #[arg(long)]
    pub no_shutdown: bool,
    /// Barrier topology (join needs --tasks 3 or more).
    #[arg(long, value_enum, default_value_t = Topology::Fanout)]
    pub topology: Topology,
    /// User-triggered savepoints per run, at any time (forced: may exceed
    /// --max-concurrent; never subsumed) (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub savepoints: u8,
    /// Genuine task failures per run (any task): OperatorFailed, TaskFailed,
    /// then a restart as a new attempt (TaskRunning); messages for the old
    /// attempt are dropped, its acks / declines still reach the coordinator
    /// (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub task_failures: u8,
    /// Scheduler stops per run (StopScheduler aborts every pending
    /// checkpoint), each followed later by StartScheduler (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub scheduler_restarts: u8,
    /// User-triggered checkpoints per run (forced or not) (0..=4).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub user_checkpoints: u8,
    /// Master hooks (operator coordinators) registered (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=2))]
    pub master_hooks: u32,
    /// Coordinator failovers per run: the coordinator's process dies (an
    /// outstanding store write commits or not) and a new one recovers from
    /// the store; every task restarts (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub coordinator_failovers: u8,
    /// Job failovers per run, each after the coordinator fails the job
    /// (JobCommand::Fail): every task restarts and the latest checkpoint is
    /// restored (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub job_failovers: u8,
    /// The job starts from a savepoint (registered in the store, restored
    /// with Restore { Savepoint }).
    #[arg(long)]
    pub savepoint_restore: bool,
    /// Sources that may finish their input per run (EndOfInput) (0..=2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub end_of_input: u8,
    /// Tasks may re-report unchanged state (incremental backends): an
    /// acknowledgement may carry the handle of the task's last acknowledged
    /// checkpoint once that one was notified complete.
    #[arg(long)]
    pub shared_state: bool,
    /// Coordinator failovers whose old coordinator keeps running (a deposed
    /// leader): its outstanding I/O lands late unless its generation is
    /// refused (0..=1; needs --coordinator-failovers).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub zombie_coordinators: u8,
    /// The user may dispose of each kept savepoint (DisposeSavepoint).
    #[arg(long)]
    pub dispose_savepoints: bool,
    /// The user may stop the job with a savepoint once, and start it again
    /// from the store afterwards.
    #[arg(long)]
    pub stop_with_savepoint: bool,
    /// Tasks that may finish per run (FLIP-147: a quiet task whose upstream
    /// all finished ends its input and is reported finished; plans leave it
    /// out, and once every task finished the job ends on its final
    /// checkpoint) (0..=8; fanout only).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=8))]
    pub finished_tasks: u8,
    /// With --finished-tasks: no checkpoint once a task finished, and the
    /// job ends with its last task, no final checkpoint (Flink before
    /// 1.14; `checkpoints_after_tasks_finish` off).
    #[arg(long)]
    pub no_checkpoints_after_finish: bool,
    /// File merging (FLIP-306): state handles are segments of shared,
    /// reference-counted physical files (two a file), each deleted once,
    /// after its last reference.
    #[arg(long)]
    pub shared_files: bool,
    /// Task restarts that replay in-flight channel state, checkpointing
    /// during recovery (0..=2; needs --task-failures).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub recovering_tasks: u8,
    /// Checker threads (1..=64).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
}

impl ModelArgs {
    /// The configuration these flags select, with `semantics`.
    #[must_use]
    pub fn config(&self, semantics: Semantics) -> ModelConfig {
        ModelConfig {
            tasks: self.tasks,
            checkpoints: self.checkpoints,
            max_concurrent: self.max_concurrent,
            network: self.network,
            faults: self.faults,
            io_faults: !self.no_io_faults,
            task_faults: !self.no_task_faults,
            shutdown: !self.no_shutdown,
            topology: self.topology,
            semantics,
            savepoints: self.savepoints,
            task_failures: self.task_failures,
            scheduler_restarts: self.scheduler_restarts,
            user_checkpoints: self.user_checkpoints,
            master_hooks: self.master_hooks,
            coordinator_failovers: self.coordinator_failovers,
            job_failovers: self.job_failovers,
            savepoint_restore: self.savepoint_restore,
            end_of_input: self.end_of_input,
            shared_state: self.shared_state,
            zombie_coordinators: self.zombie_coordinators,
            dispose_savepoints: self.dispose_savepoints,
            stop_with_savepoint: self.stop_with_savepoint,
            finished_tasks: self.finished_tasks,
            checkpoints_after_finish: !self.no_checkpoints_after_finish,
            shared_files: self.shared_files,
            recovering_tasks: self.recovering_tasks,
            ..ModelConfig::default()
        }
    }
}

/// `--engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    /// ckpt's own depth-first engine.
    Ckpt,
    /// stateright's `DfsChecker`.
    Stateright,
}

/// The flags of `check`.
#[derive(Args)]
pub struct CheckArgs {
    /// `fixed`, a knob of the bug zoo (`legacy` is the seed FLINK-17869;
    /// `ckpt-model zoo` lists them with the world each needs), or `all`:
    /// fixed plus every knob, each in the smallest world that reaches it.
    #[arg(long, default_value = "fixed", value_parser = check_semantics())]
    pub semantics: SemanticsArg,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Breadth-first search (no symmetry reduction in stateright's BFS).
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Depth-first search (the default).
    #[arg(long)]
    pub dfs: bool,
    /// Turn symmetry reduction off.
    #[arg(long)]
    pub no_symmetry: bool,
    /// Turn partial-order reduction off (on by default: where one task's
    /// local steps commute with everything else that may happen before
    /// them, only those are expanded; same verdicts, fewer states; model/README.md,
    /// "Partial-order reduction").
    #[arg(long)]
    pub no_reduction: bool,
    /// The depth-first checker: `ckpt` (the default: ckpt's own engine,
    /// stateright's semantics and counts with less overhead per state) or
    /// `stateright` (stateright's `DfsChecker`). `--bfs` is stateright's.
    #[arg(long, value_enum, default_value_t = EngineArg::Ckpt)]
    pub engine: EngineArg,
    /// Stop searching after SECS seconds (at most a year): the verdict is
    /// then "inconclusive" (exit 3) unless a violation was found.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub time_limit: Option<Duration>,
    /// Explore paths of at most N actions: "inconclusive" (exit 3) if
    /// longer ones exist and nothing was violated.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_depth: Option<u32>,
    /// Stop once about N unique states were found (checked every 50 ms):
    /// a partial report, exit 4 unless a violation was found.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_states: Option<u64>,
    /// Stop once the process's resident memory (VmRSS, Linux) exceeds MB
    /// MiB (checked every 50 ms): a partial report, exit 4 unless a
    /// violation was found.
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    pub memory_limit_mb: Option<u64>,
    /// Search only shard K of N (for example 0/4, N at most 65,536): every
    /// shard explores the states above the split depth, then only the
    /// subtrees below the frontier states whose fingerprint is K modulo N.
    /// Combine the shards' `--json` reports with `ckpt-model merge`.
    #[arg(long, value_name = "K/N", value_parser = ckpt_model::search::shard::parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// The depth (in actions) of the frontier `--shard` splits.
    #[arg(long, value_name = "D", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=64), requires = "shard")]
    pub split_depth: u16,
    /// Write the counterexample as a JSON-lines core trace (checked before
    /// the search; a file is replaced only by this run's counterexample).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Write the counterexample as a Mermaid sequence diagram (checked
    /// before the search; a file is replaced only by this run's diagram).
    #[arg(long, value_name = "FILE")]
    pub diagram: Option<PathBuf>,
    /// Print a machine-readable JSON report on stdout (no progress line;
    /// schema: `ckpt-model schema check`).
    #[arg(long)]
    pub json: bool,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds between progress reports on stderr (default: 1 on a
    /// terminal, 10 otherwise).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub progress_every: Option<Duration>,
}

/// The flags of `explore`.
#[derive(Args)]
pub struct ExploreArgs {
    /// `fixed` or a knob of the bug zoo (one model: `all` is for check).
    #[arg(long, default_value = "fixed", value_parser = one_semantics())]
    pub semantics: Semantics,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Port on 127.0.0.1 (0: any free port; the address is printed).
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
}

/// The flags of `replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// The trace file.
    pub file: PathBuf,
    /// Replay every machine with this semantics instead of the header's
    /// (for example a legacy counterexample against the fixed reducers):
    /// `fixed` or a knob of the bug zoo.
    #[arg(long, value_parser = one_semantics())]
    pub semantics: Option<Semantics>,
    /// Accept host misuse (`Rejected` outcomes) in the trace: report it,
    /// exit 0 if nothing else is wrong.
    #[arg(long)]
    pub allow_rejected: bool,
    /// Print only the summary, not every step.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds between progress reports on stderr (default: 1 on a
    /// terminal, 10 otherwise; none for replays under a second).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub progress_every: Option<Duration>,
}

/// The flags of `zoo`.
#[derive(Args)]
pub struct ZooArgs {
    /// Write each counterexample as a JSON-lines trace into DIR, named after
    /// its ticket (the committed ones live in tests/traces/).
    #[arg(long, value_name = "DIR", conflicts_with = "check_traces")]
    pub traces: Option<PathBuf>,
    /// Compare each counterexample with the trace committed in DIR (exit 1
    /// on a difference or a missing file: regenerate with --traces DIR; a
    /// DIR that is not a directory is a usage error, before any search).
    #[arg(long, value_name = "DIR")]
    pub check_traces: Option<PathBuf>,
    /// Partial-order reduction in every search (validation: every knob is
    /// still found, at the same length).
    #[arg(long)]
    pub reduction: bool,
    /// Seconds each search may take before it is cut (then the row fails).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub limit: u64,
    /// Checker threads (1..=64). With more than one, equally short
    /// counterexamples may differ from run to run (so may --check-traces).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
    /// Only the races whose ticket or knob name contains this text (one at
    /// least: a text that selects none is a usage error).
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
}

/// The flags of `dist`.
#[derive(Args)]
pub struct DistArgs {
    /// `fixed` or a knob of the bug zoo.
    #[arg(long, default_value = "fixed", value_parser = one_semantics())]
    pub semantics: Semantics,
    /// The model's flags; `--threads` is the worker threads per process.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Turn symmetry reduction off.
    #[arg(long)]
    pub no_symmetry: bool,
    /// Turn partial-order reduction off.
    #[arg(long)]
    pub no_reduction: bool,
    /// Search Gray and Lamport's two-phase commit with N resource managers
    /// (stateright's example) instead of ckpt's model.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=16))]
    pub two_phase: Option<u16>,
    /// With --two-phase: also run stateright's BFS and DFS checkers on the
    /// same model (threads as --threads) and print their figures.
    #[arg(long, requires = "two_phase")]
    pub compare: bool,
    /// With --two-phase: run only stateright's checker of this kind (`bfs`
    /// or `dfs`, threads as --threads) instead of the distributed search,
    /// so that each checker's time and peak memory are its own process's.
    #[arg(long, value_name = "KIND", requires = "two_phase", conflicts_with = "compare",
          value_parser = ["bfs", "dfs"])]
    pub stateright: Option<String>,
    /// With --two-phase: run ckpt's depth-first engine (`check`'s, threads
    /// as --threads) instead of the distributed search, in this process
    /// only.
    #[arg(long, requires = "two_phase", conflicts_with_all = ["compare", "stateright"])]
    pub engine: bool,
    /// Number of processes of the run (each started with its --process).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub processes: u16,
    /// This process's index (0..PROCESSES); process 0 prints the report.
    #[arg(long, default_value_t = 0)]
    pub process: u16,
    /// A file of `host:port` lines, one per process in index order (default:
    /// 127.0.0.1 from --port up).
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Start this many processes on loopback (this one is process 0).
    #[arg(long, value_name = "P", conflicts_with_all = ["processes", "process", "hosts"])]
    pub local_processes: Option<u16>,
    /// The first port of the default addresses.
    #[arg(long, default_value_t = 2101)]
    pub port: u16,
    /// Commit a checkpoint of every worker here at each level's end (a new
    /// or empty directory: one that holds another run's checkpoint is
    /// refused; continue that run with --resume).
    #[arg(long, value_name = "DIR")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Continue the run checkpointed in DIR (same configuration and workers;
    /// keeps checkpointing there).
    #[arg(long, value_name = "DIR", conflicts_with = "checkpoint_dir")]
    pub resume: Option<PathBuf>,
    /// Stop after committing this level, as a crash would (for tests).
    #[arg(long, hide = true)]
    pub stop_after_round: Option<u64>,
    /// No per-level progress line on stderr (by default the run's first
    /// worker prints one at each level's end: level, unique and generated
    /// states so far, seconds, unique states per second).
    #[arg(long)]
    pub quiet: bool,
}

/// The flags of `simulate`.
#[derive(Args)]
pub struct SimulateArgs {
    /// `fixed` or a knob of the bug zoo (one model: `all` is for check).
    #[arg(long, default_value = "fixed", value_parser = one_semantics())]
    pub semantics: Semantics,
    #[command(flatten)]
    pub model: ModelArgs,
    /// The first walk's seed; walk i uses SEED + i, so a walk is replayed
    /// alone by `--seed <its seed> --walks 1`.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Number of walks.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub walks: u64,
    /// Actions per walk at most (a walk cut there judges no `eventually`).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub depth: u32,
    /// Stop walking after SECS seconds, at most a year (the report covers
    /// the walks done).
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub time_limit: Option<Duration>,
    /// Keep walking after a violation (count them; the first is printed).
    #[arg(long)]
    pub keep_going: bool,
    /// Write the first violation's walk as a JSON-lines core trace
    /// (replayable by `ckpt-model replay`; a file is replaced only by this
    /// run's trace).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Print a machine-readable JSON summary on stdout (schema:
    /// `ckpt-model schema simulate`).
    #[arg(long)]
    pub json: bool,
}

/// The flags of `merge`.
#[derive(Args)]
pub struct MergeArgs {
    /// The shards' JSON reports (one file per shard).
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    /// Print a machine-readable JSON summary on stdout (schema:
    /// `ckpt-model schema merge`).
    #[arg(long)]
    pub json: bool,
}

/// The flags of `schema`.
#[derive(Args)]
pub struct SchemaArgs {
    /// Which output: `check`, `check-all`, `simulate` or `merge`.
    #[arg(value_parser = ["check", "check-all", "simulate", "merge"], default_value = "check")]
    pub output: String,
}

/// The progress interval when none is given: 1 s on a terminal, 10 s in a
/// log.
#[must_use]
pub fn default_progress_every() -> Duration {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    }
}
