//! The `pipeline` command: the reference exactly-once pipeline
//! (`ckpt_core::host::pipeline`) run on the async host in a directory, with
//! a directory lock, a progress line, the output check, a verify-only mode
//! and an optional trace. Built as the `pipeline` example of `ckpt-core`
//! and, from this same file, as the `ckpt-pipeline` binary of `ckpt-tests`
//! (the crash tests start it as a child process).

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::coordinator::JobStatus;
use ckpt_core::host::fs::{Fs, OffWorkerFs, StdFs};
use ckpt_core::host::pipeline::{
    committed_epoch, directory_sources, pipeline_spec, OutputVerifier, PipelineConfig,
    SourcesError, PIPELINE_JOB, SOURCES_MAX,
};
use ckpt_core::host::runtime::{statefile, Job, JobError, JobOptions};
use ckpt_core::host::store::{FileStore, StateCheck, StoreError};
use ckpt_core::TaskId;
use clap::Parser;

/// Most distinct keys (the counter's snapshot holds 16 bytes per key).
const KEYS_MAX: u64 = 1 << 20;
/// Longest checkpoint interval: 10 minutes (the committed output only
/// grows when a checkpoint completes).
const INTERVAL_MS_MAX: u64 = 600_000;
/// Most checkpoints retained.
const RETAINED_MAX: u32 = 100;
/// The lock file in the directory.
const LOCK_FILE: &str = "lock";

/// Exit status: the run finished (or the verification passed).
const EXIT_OK: u8 = 0;
/// Exit status: the run failed, or the committed output is not exactly once.
const EXIT_FAILED: u8 = 1;
/// Exit status: a usage error (clap's, and a DIR that is not a directory).
const EXIT_USAGE: u8 = 2;
/// Exit status: refused to start; nothing in DIR was changed.
const EXIT_REFUSED: u8 = 3;

const AFTER_HELP: &str = "\
Exit status: 0 done (or verified), 1 the run failed or the committed output is not \
exactly once, 2 usage error, 3 refused to start with nothing changed (DIR is locked by \
another process, or resuming would commit output twice: a damaged or missing \
checkpoint the sink has already committed).

DIR holds checkpoints/ (chk-N.meta, quarantined *.corrupt), state/ (one file per state \
handle, named in hex), ids, leader/, sink/pending/, sink/committed/, the number of \
sources (sources) and the lock file.";

/// Runs an exactly-once pipeline (numbered sources -> keyed counter ->
/// two-phase-commit sink) with periodic checkpoints into DIR, resuming from
/// the latest completed checkpoint found there.
#[derive(Debug, Parser)]
#[command(name = "pipeline", version, after_help = AFTER_HELP)]
struct Args {
    /// The job's directory (created if missing).
    dir: PathBuf,
    /// Records the source emits: a number from 1, or `unbounded` (run until
    /// killed); 1000000 when not given. With --verify: check that exactly
    /// these are committed (without it, only that what is committed is sound).
    #[arg(long, value_name = "N|unbounded", value_parser = parse_records)]
    records: Option<u64>,
    /// Numbered sources feeding the counter (1 to 64); more than one is
    /// fan-in (source s of N emits the ids s, s+N, s+2N, ...). A directory
    /// keeps the number it was started with (DIR/sources; without that
    /// file an existing directory has one source); another number is
    /// refused with status 3. Not given: the directory's, 1 for a new one.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(SOURCES_MAX)))]
    sources: Option<u32>,
    /// Distinct keys (1 to 1048576).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=KEYS_MAX))]
    keys: u64,
    /// Checkpoint interval in milliseconds (1 to 600000).
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=INTERVAL_MS_MAX))]
    interval_ms: u64,
    /// Completed checkpoints retained (1 to 100).
    #[arg(long, default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(RETAINED_MAX)))]
    retained: u32,
    /// Source rate limit in records per second (0: as fast as it goes).
    #[arg(long, value_name = "RECORDS_PER_SEC", default_value_t = 0)]
    rate: u64,
    /// Check every step of every reducer against ckpt_core::invariants
    /// (slower); a violation ends the run with status 1.
    #[arg(long, visible_alias = "check")]
    check_invariants: bool,
    /// Record every reducer event and write the trace (JSON lines, which
    /// `ckpt-model replay FILE` reads) when the run ends. The trace is kept
    /// in memory until then: for short runs.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Verify only: check the committed output (every record at most once,
    /// in order, counts consistent; with --records, all of them) and that
    /// the directory can resume exactly once. Runs nothing, changes nothing.
    #[arg(long, conflicts_with_all = ["trace", "check_invariants", "rate"])]
    verify: bool,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_records(v: &str) -> Result<u64, String> {
    if v == "unbounded" {
        return Ok(u64::MAX);
    }
    match v.parse::<u64>() {
        Ok(0) => Err("at least 1 record (or `unbounded`)".into()),
        Ok(u64::MAX) => Err("use `unbounded` for a source without end".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (a number from 1, or `unbounded`)")),
    }
}

/// Why the command stopped with a non-zero status.
struct Fail {
    status: u8,
    message: String,
}

fn fail(status: u8, message: impl Into<String>) -> Fail {
    Fail {
        status,
        message: message.into(),
    }
}

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(f) => {
            eprintln!("pipeline: {}", f.message);
            ExitCode::from(f.status)
        }
    }
}

fn run(args: &Args) -> Result<(), Fail> {
    let dir = &args.dir;
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(fail(
                EXIT_USAGE,
                format!("{} is not a directory", dir.display()),
            ))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && args.verify => {
            return Err(fail(
                EXIT_USAGE,
                format!("{}: no such directory", dir.display()),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(EXIT_FAILED, format!("{}: {e}", dir.display()))),
    }
    let std_fs =
        StdFs::new(dir).map_err(|e| fail(EXIT_FAILED, format!("{}: {e}", dir.display())))?;
    let _lock = lock(dir)?;
    // The real disk, each call made off the runtime's worker: the store's
    // and the tasks' fsyncs do not hold up the other tasks.
    let fs: Arc<dyn Fs> = Arc::new(OffWorkerFs::new(std_fs));
    let sources = sources_of(&*fs, args.sources, !args.verify)?;
    if args.verify {
        return verify(fs, args.records, sources);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .map_err(|e| fail(EXIT_FAILED, format!("cannot start the runtime: {e}")))?;
    rt.block_on(run_dir(fs, args, sources))
}

/// Takes the directory's exclusive lock, held until the process ends (the
/// operating system releases it when the process dies, `kill -9` too).
#[allow(clippy::disallowed_methods)] // reason: the command's own lock file, not the reducers' I/O
fn lock(dir: &Path) -> Result<File, Fail> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| fail(EXIT_FAILED, format!("{}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(fail(
            EXIT_REFUSED,
            format!(
                "{} is in use by another pipeline process ({} is locked); refusing to start",
                dir.display(),
                path.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(fail(
            EXIT_FAILED,
            format!("cannot lock {}: {e}", path.display()),
        )),
    }
}

/// The number of sources of the directory
/// ([`ckpt_core::host::pipeline::directory_sources`]); another number than
/// the directory's is refused with nothing changed.
fn sources_of(fs: &dyn Fs, asked: Option<u32>, write: bool) -> Result<u32, Fail> {
    directory_sources(fs, asked, write).map_err(|e| match e {
        SourcesError::Mismatch { .. } => fail(EXIT_REFUSED, e.to_string()),
        SourcesError::Io(_) | SourcesError::Damaged => fail(EXIT_FAILED, e.to_string()),
    })
}

fn state_check() -> StateCheck {
    Arc::new(|checkpoint, handle, bytes| {
        statefile::decode_for(checkpoint, handle, bytes).map(|_| ())
    })
}

/// `--verify`: the committed output, streamed, and what the next start
/// would do, read without writing.
fn verify(fs: Arc<dyn Fs>, records: Option<u64>, sources: u32) -> Result<(), Fail> {
    let total = records.unwrap_or(u64::MAX);
    let mut v = OutputVerifier::with_sources(total, sources);
    v.advance(&*fs)
        .map_err(|e| fail(EXIT_FAILED, format!("committed output: {e}")))?;
    let report = v
        .report(&*fs, records.is_some())
        .map_err(|e| fail(EXIT_FAILED, format!("committed output: {e}")))?;
    println!(
        "output: {} records committed exactly once in {} transactions, in order ({} pending transactions)",
        report.records, report.transactions, report.pending
    );
    let committed = committed_epoch(&*fs, sink_task(sources))
        .map_err(|e| fail(EXIT_FAILED, format!("sink output: {e}")))?;
    match FileStore::inspect(&*fs, PIPELINE_JOB, committed, Some(&state_check())) {
        Ok(rec) => {
            println!(
                "store: would restore checkpoint {} (sink committed up to {}); {} checkpoints stored, \
                 {} damaged, {} quarantined",
                rec.latest()
                    .map_or("none".to_string(), |c| c.checkpoint.to_string()),
                committed.map_or("none".to_string(), |c| c.to_string()),
                rec.checkpoints.len(),
                rec.damaged.len(),
                rec.quarantined.len()
            );
            for d in &rec.damaged {
                println!("  damaged (the next start quarantines it): {d}");
            }
            Ok(())
        }
        Err(e @ StoreError::BehindCommitted { .. }) => Err(fail(
            EXIT_REFUSED,
            format!("the next start would be refused: {e}"),
        )),
        Err(e) => Err(fail(EXIT_FAILED, format!("store: {e}"))),
    }
}

/// The task the pipeline's sink runs as (`pipeline_spec`).
fn sink_task(sources: u32) -> TaskId {
    TaskId(sources + 1)
}

#[allow(clippy::disallowed_methods)] // reason: the progress line reads the wall clock; the trace is written to a file
async fn run_dir(fs: Arc<dyn Fs>, args: &Args, sources: u32) -> Result<(), Fail> {
    let t0 = std::time::Instant::now();
    let records = args.records.unwrap_or(1_000_000);
    let unbounded = records == u64::MAX;
    // The output already there, verified once, as a stream; at the end
    // only what this run committed is read.
    let mut verifier = OutputVerifier::with_sources(records, sources);
    verifier.advance(&*fs).map_err(|e| {
        fail(
            EXIT_FAILED,
            format!("the committed output is not exactly once: {e}"),
        )
    })?;
    let before = verifier.records();
    if verifier.is_complete() {
        println!(
            "done: already complete: {before} records committed exactly once in {} transactions; nothing to run",
            verifier.transactions()
        );
        return Ok(());
    }
    let cfg = PipelineConfig {
        records,
        sources,
        keys: args.keys,
        interval_ms: args.interval_ms,
        retained: args.retained,
        rate_per_sec: args.rate,
        options: JobOptions {
            check_invariants: args.check_invariants,
            record_trace: args.trace.is_some(),
            ..JobOptions::default()
        },
        ..PipelineConfig::default()
    };
    let committed = Arc::new(AtomicU64::new(0));
    let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
    let t_recover = std::time::Instant::now();
    let job = match Job::start(spec, Arc::clone(&fs)).await {
        Ok(job) => job,
        Err(JobError::Store(e @ StoreError::BehindCommitted { .. })) => {
            return Err(fail(
                EXIT_REFUSED,
                format!(
                    "refusing to start: {e}\nRepair the damaged files (a quarantined \
                     checkpoints/chk-N.meta.corrupt renamed back to chk-N.meta is read again, \
                     its state files were kept) and run again."
                ),
            ))
        }
        Err(e) => return Err(fail(EXIT_FAILED, e.to_string())),
    };
    let recovered_ms = t_recover.elapsed().as_secs_f64() * 1e3;
    let rec = job.recovery().clone();
    let restored = job.stats().restored_at_start;
    println!(
        "started: restored checkpoint {} in {recovered_ms:.1} ms ({before} records already committed; \
         removed {} half-written files, {} orphaned state files; {} damaged, {} quarantined in all)",
        restored.map_or("none".to_string(), |c| c.to_string()),
        rec.removed_partial.len(),
        rec.removed_orphans.len(),
        rec.damaged.len(),
        rec.quarantined.len(),
    );
    for d in &rec.damaged {
        eprintln!("pipeline: damaged {d} (quarantined; its state files are kept)");
    }
    let live = job.live_stats();
    let tty = std::io::stderr().is_terminal();
    let mut last_print = std::time::Instant::now();
    let mut last_committed = 0u64;
    let tick = Duration::from_millis(if tty { 200 } else { 1_000 });
    let mut aborted_running;
    loop {
        // The end is checked before sleeping, so a run whose recovery
        // commit finished the output stops at once.
        let s = job.stats();
        aborted_running = s.aborted;
        let now_committed = committed.load(Ordering::Relaxed);
        let total = before + now_committed;
        if !s.violations.is_empty() {
            let _ = job.shutdown(JobStatus::Failed).await;
            return Err(fail(
                EXIT_FAILED,
                format!("host violations: {:?}", s.violations),
            ));
        }
        if let Some(why) = &s.halted {
            // The coordinator stopped as after a crash; the next run reads
            // the store and settles the commit.
            return Err(fail(
                EXIT_FAILED,
                format!("the coordinator halted ({why}); run again to recover from DIR"),
            ));
        }
        if !args.quiet {
            let dt = last_print.elapsed().as_secs_f64().max(1e-3);
            let rate = now_committed.saturating_sub(last_committed) as f64 / dt;
            let line = format!(
                "records committed {total} ({rate:.0}/s), checkpoint {} (completed {}, aborted {}), failovers {}",
                s.last_completed.map_or("-".to_string(), |c| c.to_string()),
                s.completed,
                s.aborted,
                s.failovers
            );
            let mut err = std::io::stderr().lock();
            if tty {
                let _ = write!(err, "\r\x1b[2K{line}");
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
        last_print = std::time::Instant::now();
        last_committed = now_committed;
        if !unbounded && total >= records {
            break;
        }
        tokio::time::sleep(tick).await;
    }
    if tty && !args.quiet {
        eprintln!();
    }
    let stats = job.shutdown(JobStatus::Finished).await;
    // What the shutdown itself found (a violation, a halt) fails the run
    // too; the trace is still written.
    let ended_badly = if !stats.violations.is_empty() {
        Some(format!("host violations: {:?}", stats.violations))
    } else {
        stats
            .halted
            .as_ref()
            .map(|why| format!("the coordinator halted ({why}); run again to recover from DIR"))
    };
    if let Some(path) = &args.trace {
        let written = File::create(path)
            .and_then(|f| ckpt_core::trace::write_trace(std::io::BufWriter::new(f), &live.trace()));
        if let Err(e) = written {
            return Err(fail(
                EXIT_FAILED,
                format!("writing the trace {}: {e}", path.display()),
            ));
        }
    }
    if let Some(why) = ended_badly {
        return Err(fail(EXIT_FAILED, why));
    }
    verifier.advance(&*fs).map_err(|e| {
        fail(
            EXIT_FAILED,
            format!("the committed output is not exactly once: {e}"),
        )
    })?;
    let report = verifier.report(&*fs, !unbounded).map_err(|e| {
        fail(
            EXIT_FAILED,
            format!("the committed output is incomplete: {e}"),
        )
    })?;
    let at_shutdown = stats.aborted.saturating_sub(aborted_running);
    println!(
        "done: {} records committed exactly once in {} transactions; {} checkpoints completed, {} aborted{}, \
         {} failovers in this run; {:.1} s",
        report.records,
        report.transactions,
        stats.completed,
        aborted_running,
        if at_shutdown > 0 {
            format!(" (and {at_shutdown} more while shutting down)")
        } else {
            String::new()
        },
        stats.failovers,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
