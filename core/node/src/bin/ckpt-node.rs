//! `ckpt-node`: the reference pipeline (`ckpt_core::host::pipeline`: a
//! numbered source, a keyed counter, a two-phase-commit sink) across
//! processes: a coordinator process with the checkpoint store on
//! `ObjStore`, and a task-manager process running the tasks (`--sources`
//! numbered sources, fan-in into the counter when more than one), talking
//! over TCP. The store is an object store (`LocalFileSystem` rooted at
//! STORE, default DIR) that both reach: the coordinator's metadata and log,
//! and the tasks' state files as objects (`ObjFs`). Each process's DIR is
//! its own: the task manager keeps its lock and the sink's output there.
//!
//! ```text
//! ckpt-node coordinator (--dir DIR | --store STORE) [--listen 127.0.0.1:0]
//!     [--interval-ms 50] [--timeout-ms 10000] [--retained 2] [--sources 1]
//!     [--check-invariants]
//! ckpt-node task --dir DIR [--store STORE] --coordinator ADDR [--records 100000]
//!     [--keys 16] [--rate 0] [--sources S] [--check-invariants]
//! ```
//!
//! Exit status: 0 the job finished (the task manager also checked that
//! every record is committed exactly once), 1 it failed (for the
//! coordinator also: a store it could not read or write, or a write whose
//! outcome is unknown; start it again), 2 usage, 3 refused (a deposed or
//! fenced coordinator, a store that refuses to open, output committed
//! beyond the checkpoint to restore, a damaged log, a second task manager
//! on a directory whose `task.lock` is held, a task manager's `--sources`
//! other than its directory's). A task manager the coordinator refuses
//! (another job or task count) exits 1.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ckpt_core::host::fs::{Fs, MemFs, OffWorkerFs, StdFs};
use ckpt_core::host::pipeline::{
    directory_sources, pipeline_spec, verify_output_of, OutputVerifier, PipelineConfig,
    SourcesError, PIPELINE_JOB, SOURCES_MAX,
};
use ckpt_core::host::runtime::{GroupSpec, JobOptions};
use ckpt_core::host::store::StoreError;
use ckpt_node::coordinator::{self, CoordinatorConfig, CoordinatorError};
use ckpt_node::manager::{self, Backoff, ManagerConfig};
use ckpt_node::ObjFs;
use clap::{Parser, Subcommand};
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_REFUSED: u8 = 3;

/// The reference pipeline across a coordinator process and a task-manager
/// process over TCP.
#[derive(Debug, Parser)]
#[command(name = "ckpt-node", version)]
struct Args {
    #[command(subcommand)]
    role: Role,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// The coordinator: the checkpoint store (an object store on the local
    /// file system, rooted at STORE), listening for the task manager.
    Coordinator {
        /// The coordinator's directory: the store's root when --store is
        /// not given (then created if missing); the coordinator keeps
        /// nothing else there.
        #[arg(long, required_unless_present = "store")]
        dir: Option<PathBuf>,
        /// The object store's root, which the task manager's --store must
        /// name too (default: --dir; created if missing).
        #[arg(long)]
        store: Option<PathBuf>,
        /// The address to listen on (port 0: any; the bound address is
        /// printed as `coordinator: listening on ADDR generation G`).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Checkpoint interval in ms (1 to 600000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=600_000))]
        interval_ms: u64,
        /// Checkpoint timeout in ms (1 to 600000).
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
        timeout_ms: u64,
        /// Completed checkpoints retained (1 to 100).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
        retained: u32,
        /// Numbered sources (1 to 64), all triggered; the task manager's
        /// --sources must be the same (another task count is refused).
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(SOURCES_MAX)))]
        sources: u32,
        /// Check every coordinator step against ckpt-core's invariants.
        #[arg(long)]
        check_invariants: bool,
    },
    /// The task manager: the pipeline's tasks (the sources, the counter, the
    /// sink), their state files as objects of the store at STORE, the
    /// sink's output and the lock in DIR.
    Task {
        /// The task manager's own directory: its lock (`task.lock`) and the
        /// sink's output (`sink/`) (created if missing).
        #[arg(long)]
        dir: PathBuf,
        /// The object store's root, the coordinator's store (default:
        /// --dir; created if missing).
        #[arg(long)]
        store: Option<PathBuf>,
        /// The coordinator's address.
        #[arg(long)]
        coordinator: SocketAddr,
        /// Records the source emits (at least 1).
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
        records: u64,
        /// Distinct keys (1 to 1048576).
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
        keys: u64,
        /// Source rate limit in records per second, per source (0: none).
        #[arg(long, default_value_t = 0)]
        rate: u64,
        /// Numbered sources feeding the counter (1 to 64; more than one is
        /// fan-in), as the coordinator's --sources. DIR keeps the number it
        /// was started with (DIR/sources; another is refused, status 3);
        /// without the flag, DIR's number (1 for a new DIR).
        #[arg(long,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(SOURCES_MAX)))]
        sources: Option<u32>,
        /// Check every task step against ckpt-core's invariants.
        #[arg(long)]
        check_invariants: bool,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ckpt-node: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let result = match args.role {
        Role::Coordinator {
            dir,
            store,
            listen,
            interval_ms,
            timeout_ms,
            retained,
            sources,
            check_invariants,
        } => match store.or(dir) {
            Some(store) => rt.block_on(run_coordinator(
                store,
                listen,
                PipelineConfig {
                    interval_ms,
                    timeout_ms,
                    retained,
                    sources,
                    ..PipelineConfig::default()
                },
                check_invariants,
            )),
            // clap requires --dir unless --store is given.
            None => Err((EXIT_USAGE, "--dir or --store is required".into())),
        },
        Role::Task {
            dir,
            store,
            coordinator,
            records,
            keys,
            rate,
            sources,
            check_invariants,
        } => rt.block_on(run_task(
            store.unwrap_or_else(|| dir.clone()),
            dir,
            coordinator,
            sources,
            PipelineConfig {
                records,
                keys,
                rate_per_sec: rate,
                options: JobOptions {
                    check_invariants,
                    verbose: true,
                    ..JobOptions::default()
                },
                ..PipelineConfig::default()
            },
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, why)) => {
            eprintln!("ckpt-node: {why}");
            ExitCode::from(code)
        }
    }
}

type Fail = (u8, String);

/// The task manager's directory as the sink's file system: the real disk,
/// each call made off the runtime's worker (`OffWorkerFs`), so the sink's
/// fsyncs do not hold up the other tasks.
fn open_dir(dir: &Path) -> Result<Arc<dyn Fs>, Fail> {
    let fs = StdFs::new(dir).map_err(|e| (EXIT_FAILED, format!("{}: {e}", dir.display())))?;
    Ok(Arc::new(OffWorkerFs::new(fs)))
}

/// The object store rooted at `root` (created if missing): the local file
/// system's (`LocalFileSystem`). A root the process may not use, or that
/// is not a directory, is refused (exit 3: a restart would meet it again);
/// any other error exits 1.
fn open_store(root: &Path) -> Result<Arc<dyn ObjectStore>, Fail> {
    let fail = |e: std::io::Error| {
        let code = match e.kind() {
            std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::AlreadyExists
            | std::io::ErrorKind::NotADirectory => EXIT_REFUSED,
            _ => EXIT_FAILED,
        };
        (code, format!("store {}: {e}", root.display()))
    };
    std::fs::create_dir_all(root).map_err(fail)?;
    let objects = LocalFileSystem::new_with_prefix(root)
        .map_err(|e| (EXIT_FAILED, format!("store {}: {e}", root.display())))?;
    Ok(Arc::new(objects))
}

async fn run_coordinator(
    store: PathBuf,
    listen: SocketAddr,
    cfg: PipelineConfig,
    check_invariants: bool,
) -> Result<(), Fail> {
    let objects = open_store(&store)?;
    // Only the settings and the task count are the coordinator's: the
    // operators (and the sink's file system they would write to) are the
    // task manager's.
    let spec = pipeline_spec(&cfg, Arc::new(MemFs::new()), Arc::new(AtomicU64::new(0)));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| (EXIT_FAILED, format!("listen on {listen}: {e}")))?;
    let report = coordinator::run(
        CoordinatorConfig {
            settings: spec.settings,
            tasks: spec.tasks,
            check_invariants,
        },
        objects,
        listener,
    )
    .await
    .map_err(|e| match e {
        // The store could not be read or written, or cannot tell whether
        // a write landed: transient as far as this process knows, so a
        // restart (exit 1) is the answer, not a human (exit 3).
        CoordinatorError::Store(ref s) if transient(s) => (EXIT_FAILED, e.to_string()),
        CoordinatorError::Deposed(_) | CoordinatorError::Fenced(_) | CoordinatorError::Store(_) => {
            (EXIT_REFUSED, e.to_string())
        }
        CoordinatorError::Config(_)
        | CoordinatorError::Recover(_)
        | CoordinatorError::Halted(_)
        | CoordinatorError::Listen(_) => (EXIT_FAILED, e.to_string()),
    })?;
    if !report.violations.is_empty() {
        return Err((EXIT_FAILED, format!("violations: {:?}", report.violations)));
    }
    println!(
        "coordinator: done: generation {}, {} checkpoints committed, {} failovers, {} stale messages dropped, {} stale acks applied",
        report.generation, report.completed, report.failovers, report.dropped_stale, report.stale_applied
    );
    Ok(())
}

/// A store error that a restart may not meet again: an object that could
/// not be read or written (not one that was read and is damaged, nor
/// access the store refuses: both need a human, and a supervisor that
/// restarts on exit 1 would loop on them), or a write whose outcome is
/// unknown, which the next start's recovery settles.
fn transient(e: &StoreError) -> bool {
    match e {
        StoreError::Io { source, .. } => !matches!(
            source.kind(),
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::PermissionDenied
        ),
        StoreError::OutcomeUnknown { .. } | StoreError::DisposalOutcomeUnknown { .. } => true,
        // Named one by one, so that a new kind of error is classified here
        // rather than taken for one that needs a human by default.
        StoreError::BadCounter { .. }
        | StoreError::CounterExhausted
        | StoreError::NotPrepared(_)
        | StoreError::CommitOrder(_)
        | StoreError::StaleGeneration { .. }
        | StoreError::NotThisGeneration { .. }
        | StoreError::ClaimLost(_)
        | StoreError::GenerationTaken { .. }
        | StoreError::BehindCommitted { .. }
        | StoreError::NotStored(_)
        | StoreError::NotASavepoint(_)
        | StoreError::LatestSavepoint(_) => false,
    }
}

/// The task manager's lock on its directory: the sink's output has one
/// writer. Held until the process ends (the system releases it when the
/// process dies, `kill -9` included).
const TASK_LOCK: &str = "task.lock";

fn lock_dir(dir: &std::path::Path) -> Result<std::fs::File, Fail> {
    let path = dir.join(TASK_LOCK);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| (EXIT_FAILED, format!("{}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err((
            EXIT_REFUSED,
            format!(
                "{} is locked: another task manager runs on {}; refusing to start",
                path.display(),
                dir.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            Err((EXIT_FAILED, format!("cannot lock {}: {e}", path.display())))
        }
    }
}

async fn run_task(
    store: PathBuf,
    dir: PathBuf,
    coordinator: SocketAddr,
    sources: Option<u32>,
    cfg: PipelineConfig,
) -> Result<(), Fail> {
    let fs = open_dir(&dir)?;
    let _lock = lock_dir(&dir)?;
    // The sink's output is read per source: DIR keeps its number.
    let sources = directory_sources(&*fs, sources, true).map_err(|e| match e {
        SourcesError::Mismatch { .. } => (EXIT_REFUSED, e.to_string()),
        SourcesError::Io(_) | SourcesError::Damaged => (EXIT_FAILED, e.to_string()),
    })?;
    let cfg = PipelineConfig { sources, ..cfg };
    let state_fs: Arc<dyn Fs> = Arc::new(ObjFs::new(open_store(&store)?));
    // What is already committed, verified once; this run adds the rest.
    let mut verifier = OutputVerifier::with_sources(cfg.records, sources);
    verifier.advance(&*fs).map_err(|e| {
        (
            EXIT_FAILED,
            format!("the committed output is not exactly once: {e}"),
        )
    })?;
    let before = verifier.records();
    let committed = Arc::new(AtomicU64::new(0));
    let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
    let records = cfg.records;
    let counter = Arc::clone(&committed);
    let report = manager::run(ManagerConfig {
        job: PIPELINE_JOB,
        coordinator,
        spec: GroupSpec {
            tasks: spec.tasks,
            edges: spec.edges,
            task_config: spec.task_config,
            operators: spec.operators,
        },
        options: cfg.options.clone(),
        state_fs,
        backoff: Backoff::default(),
        complete: Arc::new(move || before + counter.load(Ordering::Relaxed) >= records),
    })
    .await
    .map_err(|e| (EXIT_FAILED, e.to_string()))?;
    if !report.violations.is_empty() {
        return Err((EXIT_FAILED, format!("violations: {:?}", report.violations)));
    }
    let out = verify_output_of(&*fs, records, sources, true)
        .map_err(|e| (EXIT_FAILED, format!("the committed output: {e}")))?;
    println!(
        "task manager: done: {} records committed exactly once in {} transactions; {} deploys, {} refusals",
        out.records,
        out.transactions,
        report.deploys.len(),
        report.refusals
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_core::CheckpointId;

    /// What a restart may cure exits 1; what needs a human exits 3.
    #[test]
    fn store_errors_that_a_restart_may_cure_are_transient() {
        let io = |kind| StoreError::Io {
            op: "get",
            path: "log/1".into(),
            source: std::io::Error::new(kind, "x"),
        };
        assert!(transient(&io(std::io::ErrorKind::Other)));
        assert!(transient(&io(std::io::ErrorKind::NotFound)));
        // A log entry that was read and does not decode: damage.
        assert!(!transient(&io(std::io::ErrorKind::InvalidData)));
        // Access refused (a file system's, or an object store's, which
        // `obj_err` maps to this kind): a restart will not grant it.
        assert!(!transient(&io(std::io::ErrorKind::PermissionDenied)));
        assert!(transient(&StoreError::OutcomeUnknown {
            checkpoint: CheckpointId(1),
            source: Box::new(io(std::io::ErrorKind::Other)),
        }));
        assert!(transient(&StoreError::DisposalOutcomeUnknown {
            savepoint: CheckpointId(1),
            source: Box::new(io(std::io::ErrorKind::Other)),
        }));
        assert!(!transient(&StoreError::BehindCommitted {
            committed: CheckpointId(2),
            restorable: Some(CheckpointId(1)),
            damaged: Vec::new(),
        }));
    }
}
