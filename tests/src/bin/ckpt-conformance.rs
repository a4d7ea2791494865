//! `ckpt-conformance`: ckpt's coordinator against Flink's real
//! `CheckpointCoordinator` (1.11.4, 1.20.0, 2.3.0), event by event. See
//! `tests/flink/README.md`.
//!
//! Exit status: 0 when every version compared something and nothing
//! diverged unexplained; 1 on a divergence (shrunk, printed, written as a
//! regression file); 2 when a run could not be done (no JVM, harness not
//! built, a harness crash or unreadable line, a sequence the harness
//! refused, a run that compared nothing, bad arguments). `--replay` and
//! `--rerun`: 0 agree, 1 a divergence, 2 an unreadable file or a failed
//! replay / run. 141 when stdout cannot be written (its reader went away,
//! `| head`).

use std::path::PathBuf;
use std::process::ExitCode;

/// Writes a line to stdout (as `println!`, which panics instead): a reader
/// that went away (`--catalog | head`) ends the process with 141, as a
/// shell reports a SIGPIPE death, and any other write error too, after
/// saying what it was.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            stdout_failed(&e)
        }
    }};
}

/// [`out!`] without the line break.
macro_rules! out_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = write!(std::io::stdout(), $($arg)*) {
            stdout_failed(&e)
        }
    }};
}

/// Stdout failed: exit 141 (see [`out!`]).
fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        eprintln!("ckpt-conformance: writing to stdout: {e}");
    }
    std::process::exit(141)
}
use std::sync::Mutex;

use ckpt_tests::conformance::profile::Version;
use ckpt_tests::conformance::{self, catalog, flink_side, Options, Replay, VersionReport};
use clap::Parser;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// ckpt's coordinator against Flink's own, decision by decision.
#[derive(Parser, Debug)]
#[command(name = "ckpt-conformance", version)]
struct Cli {
    /// The run's seed (printed); sequence i is generated from seed + i, so
    /// a failing sequence's seed reruns it alone with --sequences 1 (and the
    /// same --events-per-sequence and --finished-tasks; the printed rerun
    /// hint has them).
    #[arg(long)]
    seed: Option<u64>,
    /// Sequences per version.
    #[arg(long, default_value_t = 200)]
    sequences: u64,
    /// Versions to compare against (comma-separated: 1.11, 1.20, 2.3).
    #[arg(long, value_delimiter = ',', default_value = "1.11,1.20,2.3")]
    versions: Vec<String>,
    /// Events per sequence.
    #[arg(long, default_value_t = conformance::DEFAULT_EVENTS_PER_SEQUENCE)]
    events_per_sequence: usize,
    /// Versions run at once, one JVM each (default: all of them).
    #[arg(long)]
    jobs: Option<usize>,
    /// Count this gap like a named choice instead of failing (repeatable).
    #[arg(long)]
    allow: Vec<String>,
    /// Where regression files and the JVMs' logs go.
    #[arg(long, default_value = "target/conformance")]
    out: PathBuf,
    /// The harness folder (with run.sh).
    #[arg(long)]
    harness: Option<PathBuf>,
    /// Shrink and write at most this many distinct divergences per version.
    #[arg(long, default_value_t = 8)]
    max_reports: usize,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Print the divergence catalog (name, class, pattern, Flink, ckpt, why) and exit.
    #[arg(long)]
    catalog: bool,
    /// Replay a regression file against its recorded Flink lines (no JVM)
    /// and print what the comparator finds today.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Run a regression file's sequence (or a hand-written file with only
    /// `version` and `sequence`) against the live Flink harness of its
    /// version and write a fresh regression file to --out holding today's
    /// Flink responses, its `expect` set to what the comparator finds.
    #[arg(long, conflicts_with = "replay")]
    rerun: Option<PathBuf>,
    /// Also draw task finishes (FLIP-147: Flink's Execution.markFinished,
    /// ckpt's TaskFinished). Off by default, so that a seed's sequences
    /// stay those of earlier runs; CI runs a second pass with it
    /// (tests/flink/RESULTS-2026-12-02.md, run 7).
    #[arg(long)]
    finished_tasks: bool,
}

fn print_catalog() {
    for e in catalog::CATALOG {
        let class = match e.class {
            catalog::Class::Choice => "choice".to_owned(),
            catalog::Class::Gap { fix } => format!("gap (proposed fix: {fix})"),
        };
        out!("{} [{class}]", e.name);
        out!("  pattern: {}", e.pattern);
        out!("  flink:   {}", e.flink);
        out!("  ckpt:    {}", e.ckpt);
        out!("  why:     {}", e.why);
        out!("  after:   {:?}", e.after);
    }
}

fn read_replay(path: &PathBuf) -> Result<Replay, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("ckpt-conformance: {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    serde_json::from_str(&text).map_err(|e| {
        eprintln!(
            "ckpt-conformance: {}: not a regression file: {e}",
            path.display()
        );
        ExitCode::from(2)
    })
}

fn rerun(path: &PathBuf, cli: &Cli) -> ExitCode {
    let file = match read_replay(path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let harness = cli
        .harness
        .clone()
        .unwrap_or_else(flink_side::default_harness_dir);
    if let Err(e) = std::fs::create_dir_all(&cli.out) {
        eprintln!("ckpt-conformance: {}: {e}", cli.out.display());
        return ExitCode::from(2);
    }
    let log = cli.out.join(format!("flink-{}-rerun.log", file.version));
    let (fresh, r) = match file.rerun(&harness, &log, &cli.allow) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ckpt-conformance: rerun failed: {e}");
            return ExitCode::from(2);
        }
    };
    let name = format!(
        "rerun-{}-{}-seed{}.json",
        fresh.version,
        conformance::slug(&fresh.expect),
        fresh.sequence.seed
    );
    let out = cli.out.join(name);
    let written = serde_json::to_string_pretty(&fresh)
        .map_err(|e| e.to_string())
        .and_then(|t| std::fs::write(&out, t).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!("ckpt-conformance: {}: {e}", out.display());
        return ExitCode::from(2);
    }
    out!("written with: {}", file.expect);
    out!(
        "compared {} events against Flink {}; named: {:?}; stopped by {:?}",
        r.compared,
        fresh.version,
        r.names,
        r.stopped_by
    );
    out!("finds today: {} ({})", fresh.expect, out.display());
    if r.divergence.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn replay(path: &PathBuf, allow: &[String]) -> ExitCode {
    let file = match read_replay(path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    match file.replay(allow) {
        Ok(r) => {
            out!("written with: {}", file.expect);
            out!(
                "compared {} events; named: {:?}; stopped by {:?}",
                r.compared,
                r.names,
                r.stopped_by
            );
            match r.divergence {
                Some(d) => {
                    out!("diverges today: {}", d.signature());
                    out!(
                        "  ckpt : {}",
                        serde_json::to_string(&d.ckpt).unwrap_or_default()
                    );
                    out!(
                        "  flink: {}",
                        serde_json::to_string(&d.flink).unwrap_or_default()
                    );
                    ExitCode::from(1)
                }
                None => {
                    out!("agrees today");
                    ExitCode::SUCCESS
                }
            }
        }
        Err(e) => {
            eprintln!("ckpt-conformance: replay failed: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.catalog {
        print_catalog();
        return ExitCode::SUCCESS;
    }
    if let Some(path) = &cli.replay {
        return replay(path, &cli.allow);
    }
    if let Some(path) = &cli.rerun {
        return rerun(path, &cli);
    }
    for a in &cli.allow {
        match catalog::by_name(a) {
            Some(e) if e.is_gap() => {}
            Some(_) => {
                eprintln!("ckpt-conformance: --allow {a}: a named choice is always allowed; --allow takes gaps");
                return ExitCode::from(2);
            }
            None => {
                eprintln!("ckpt-conformance: --allow {a}: no such catalog entry (see --catalog)");
                return ExitCode::from(2);
            }
        }
    }
    let mut versions = Vec::new();
    for v in &cli.versions {
        match Version::parse(v.trim()) {
            Some(v) if !versions.contains(&v) => versions.push(v),
            Some(_) => {}
            None => {
                eprintln!("ckpt-conformance: unknown version '{v}' (known: 1.11, 1.20, 2.3)");
                return ExitCode::from(2);
            }
        }
    }
    if versions.is_empty() || cli.sequences == 0 || cli.events_per_sequence == 0 {
        eprintln!("ckpt-conformance: nothing to compare (no versions, sequences or events)");
        return ExitCode::from(2);
    }
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let harness_dir = cli
        .harness
        .clone()
        .unwrap_or_else(flink_side::default_harness_dir);
    let jobs = cli.jobs.unwrap_or(versions.len()).clamp(1, versions.len());
    out!(
        "ckpt-conformance: seed {seed}, {} sequences x {} events per version, versions {}, {jobs} at once",
        cli.sequences,
        cli.events_per_sequence,
        versions.iter().map(|v| v.short()).collect::<Vec<_>>().join(",")
    );
    let opts = Options {
        seed,
        sequences: cli.sequences,
        events: cli.events_per_sequence,
        versions: versions.clone(),
        jobs,
        allow: cli.allow.clone(),
        out_dir: cli.out.clone(),
        harness_dir,
        max_reports: cli.max_reports,
        progress: !cli.quiet,
        draws: conformance::gen::Draws {
            finishes: cli.finished_tasks,
        },
    };
    let multi = MultiProgress::with_draw_target(if opts.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let style = ProgressStyle::with_template(
        "{prefix:>10} {bar:30} {pos}/{len} sequences {msg} [{elapsed_precise}]",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    let queue = Mutex::new(versions.clone());
    let results: Mutex<Vec<Result<VersionReport, conformance::Fatal>>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let next = queue
                    .lock()
                    .ok()
                    .and_then(|mut q| (!q.is_empty()).then(|| q.remove(0)));
                let Some(version) = next else { break };
                let bar = multi.add(ProgressBar::new(opts.sequences));
                bar.set_style(style.clone());
                bar.set_prefix(format!("Flink {}", version.short()));
                let mut tick = |r: &VersionReport| {
                    bar.set_position(r.sequences);
                    bar.set_message(format!(
                        "{} events compared, {:.0}/s, {} unexplained",
                        r.compared,
                        r.events_per_second(),
                        r.unexplained()
                    ));
                };
                let r = conformance::run_version(version, &opts, &mut tick);
                bar.finish();
                if let Ok(mut all) = results.lock() {
                    all.push(r);
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| match r {
        Ok(r) => r.version,
        Err(f) => f.version,
    });
    let mut reports = Vec::new();
    let mut fatal = false;
    for r in results {
        match r {
            Ok(r) => reports.push(r),
            Err(f) => {
                eprintln!("ckpt-conformance: {f}");
                fatal = true;
            }
        }
    }
    for r in &reports {
        for f in r.found.values() {
            out!("Flink {}: {}", r.version.full(), conformance::describe(f));
        }
    }
    out!("seed {seed}");
    out_raw!("{}", conformance::summary(&reports));
    if fatal {
        return ExitCode::from(2);
    }
    if reports.iter().any(|r| r.compared == 0) {
        eprintln!("ckpt-conformance: a version compared nothing: that is a failure, not a pass");
        return ExitCode::from(2);
    }
    if reports.iter().all(VersionReport::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
