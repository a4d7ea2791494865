//! A reference pipeline for the async host: a source of numbered records, a
//! keyed counting operator whose state is checkpointed, and a two-phase
//! commit sink (Flink's exactly-once sink pattern). The `pipeline` example
//! and the crash and simulation tests run it.
//!
//! * [`NumberSource`] emits records `0..total` (key `id % keys`); its state is
//!   the next number.
//! * [`KeyedCounter`] counts records per key and emits `(id, key, count)`.
//! * [`TwoPhaseSink`] collects outputs into a transaction per checkpoint
//!   epoch: **pre-commit** on the checkpoint (the transaction is written to
//!   `sink/pending/` and fsync'd; its id goes into the snapshot),
//!   **commit** on notify-complete (every pending transaction up to that
//!   checkpoint is renamed into `sink/committed/`, the directory fsync'd),
//!   and on **recovery** commits the restored checkpoint's pending
//!   transactions (idempotent: already committed is fine) and deletes every
//!   other pending transaction (epochs that never completed).
//!
//! The committed output therefore holds every record exactly once, and
//! [`verify_output`] checks it: no id twice, every id when complete, and per
//! key the counts `1, 2, 3, ...` in id order (so a lost or doubly applied
//! counter state shows too).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use super::fs::{join, write_durable, Fs, StdFs};
use super::runtime::{
    Job, JobOptions, JobSpec, Operator, OperatorError, OperatorFactory, Record, SourcePoll,
};
use crate::coordinator::{CoordinatorSettings, JobStatus};
use crate::task::TaskConfig;
use crate::types::{CheckpointId, JobId, TaskId};

/// Pending (pre-committed) transactions.
pub const PENDING_DIR: &str = "sink/pending";
/// Committed transactions: the sink's output.
pub const COMMITTED_DIR: &str = "sink/committed";
/// Transaction file magic bytes.
pub const TXN_MAGIC: &[u8; 8] = b"CKPTTXN1";

fn txn_name(checkpoint: CheckpointId, task: TaskId) -> String {
    format!("txn-{:020}-{:08}", checkpoint.0, task.0)
}

fn parse_txn_name(name: &str) -> Option<(CheckpointId, TaskId)> {
    let rest = name.strip_prefix("txn-")?;
    let (c, t) = rest.split_once('-')?;
    Some((CheckpointId(c.parse().ok()?), TaskId(t.parse().ok()?)))
}

fn oerr(what: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError(format!("{what}: {e}"))
}

/// The numbered source: records `next..total`.
#[derive(Debug)]
pub struct NumberSource {
    total: u64,
    keys: u64,
    next: u64,
    rate_per_sec: u64,
    started: Option<(tokio::time::Instant, u64)>,
}

impl NumberSource {
    /// `total` records (`u64::MAX`: unbounded) over `keys` keys, at most
    /// `rate_per_sec` per second (0: as fast as the pipeline takes them).
    #[must_use]
    pub fn new(total: u64, keys: u64, rate_per_sec: u64) -> Self {
        NumberSource {
            total,
            keys: keys.max(1),
            next: 0,
            rate_per_sec,
            started: None,
        }
    }
}

impl Operator for NumberSource {
    fn is_source(&self) -> bool {
        true
    }
    fn poll_source(
        &mut self,
        max: usize,
        out: &mut Vec<Record>,
    ) -> Result<SourcePoll, OperatorError> {
        if self.next >= self.total {
            return Ok(SourcePoll::Exhausted);
        }
        let mut n = (max as u64).min(self.total - self.next);
        if self.rate_per_sec > 0 {
            let now = tokio::time::Instant::now();
            let (t0, base) = *self.started.get_or_insert((now, self.next));
            let elapsed_ms = u64::try_from(now.duration_since(t0).as_millis()).unwrap_or(u64::MAX);
            let allowed = base.saturating_add(elapsed_ms.saturating_mul(self.rate_per_sec) / 1_000);
            let room = allowed.saturating_sub(self.next);
            if room == 0 {
                return Ok(SourcePoll::Idle(Duration::from_millis(5)));
            }
            n = n.min(room);
        }
        for id in self.next..self.next + n {
            out.push(Record {
                id,
                key: id % self.keys,
                value: 0,
            });
        }
        self.next += n;
        Ok(SourcePoll::Emitted)
    }
    fn process(&mut self, _record: Record, _out: &mut Vec<Record>) -> Result<(), OperatorError> {
        Err(OperatorError("a source has no input".into()))
    }
    fn snapshot(
        &mut self,
        _checkpoint: CheckpointId,
        _fs: &dyn Fs,
    ) -> Result<Vec<u8>, OperatorError> {
        Ok(self.next.to_le_bytes().to_vec())
    }
    fn restore(
        &mut self,
        _checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError> {
        self.next = match state {
            None => 0,
            Some(b) => u64::from_le_bytes(
                b.try_into()
                    .map_err(|_| OperatorError(format!("source state of {} bytes", b.len())))?,
            ),
        };
        self.started = None;
        Ok(())
    }
    fn notify_complete(
        &mut self,
        _checkpoint: CheckpointId,
        _fs: &dyn Fs,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Counts records per key; emits `(id, key, count so far)`.
#[derive(Debug, Default)]
pub struct KeyedCounter {
    counts: BTreeMap<u64, u64>,
}

impl Operator for KeyedCounter {
    fn process(&mut self, record: Record, out: &mut Vec<Record>) -> Result<(), OperatorError> {
        let c = self.counts.entry(record.key).or_insert(0);
        *c += 1;
        out.push(Record {
            id: record.id,
            key: record.key,
            value: *c,
        });
        Ok(())
    }
    fn snapshot(
        &mut self,
        _checkpoint: CheckpointId,
        _fs: &dyn Fs,
    ) -> Result<Vec<u8>, OperatorError> {
        let mut b = Vec::with_capacity(16 * self.counts.len());
        for (k, c) in &self.counts {
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&c.to_le_bytes());
        }
        Ok(b)
    }
    fn restore(
        &mut self,
        _checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError> {
        self.counts.clear();
        let Some(b) = state else { return Ok(()) };
        if b.len() % 16 != 0 {
            return Err(OperatorError(format!("counter state of {} bytes", b.len())));
        }
        for pair in b.chunks_exact(16) {
            let k = u64::from_le_bytes(pair[..8].try_into().unwrap_or([0; 8]));
            let c = u64::from_le_bytes(pair[8..].try_into().unwrap_or([0; 8]));
            self.counts.insert(k, c);
        }
        Ok(())
    }
    fn notify_complete(
        &mut self,
        _checkpoint: CheckpointId,
        _fs: &dyn Fs,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Why a transaction file or the committed output is invalid.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum OutputError {
    /// A transaction file is not one (bad magic, bad length, bad checksum).
    #[error("transaction file {file} is invalid: {why}")]
    BadTxn {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// A record is committed more than once.
    #[error("record {id} committed {times} times")]
    Duplicate {
        /// The record.
        id: u64,
        /// How often.
        times: u64,
    },
    /// Records missing from a complete output.
    #[error("{missing} records missing (first: {first})")]
    Missing {
        /// How many.
        missing: u64,
        /// The lowest missing id.
        first: u64,
    },
    /// A record beyond the source's range.
    #[error("record {0} was never produced")]
    Unknown(u64),
    /// A key's counts are not 1, 2, 3, ... in id order.
    #[error("key {key}: record {id} has count {got}, expected {expected}")]
    BadCount {
        /// The key.
        key: u64,
        /// The record.
        id: u64,
        /// Its count.
        got: u64,
        /// The count expected.
        expected: u64,
    },
    /// The file system failed.
    #[error("reading {file}: {why}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
}

fn encode_txn(records: &[Record]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + 24 * records.len());
    b.extend_from_slice(TXN_MAGIC);
    b.extend_from_slice(
        &u32::try_from(records.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for r in records {
        r.encode_into(&mut b);
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

fn decode_txn(file: &str, b: &[u8]) -> Result<Vec<Record>, OutputError> {
    let bad = |why: &str| OutputError::BadTxn {
        file: file.to_string(),
        why: why.to_string(),
    };
    if b.len() < 16 || &b[..8] != TXN_MAGIC {
        return Err(bad("bad magic or too short"));
    }
    let n = u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4])) as usize;
    if b.len() != 12 + 24 * n + 4 {
        return Err(bad("length does not match the record count"));
    }
    let body = 12 + 24 * n;
    let stored = u32::from_le_bytes(b[body..].try_into().unwrap_or([0; 4]));
    if crc32fast::hash(&b[..body]) != stored {
        return Err(bad("checksum mismatch"));
    }
    Ok(b[12..body]
        .chunks_exact(24)
        .map(|c| Record {
            id: u64::from_le_bytes(c[..8].try_into().unwrap_or([0; 8])),
            key: u64::from_le_bytes(c[8..16].try_into().unwrap_or([0; 8])),
            value: u64::from_le_bytes(c[16..].try_into().unwrap_or([0; 8])),
        })
        .collect())
}

/// The two-phase-commit sink.
pub struct TwoPhaseSink {
    task: TaskId,
    current: Vec<Record>,
    /// Pre-committed, not yet committed: checkpoint -> record count.
    pending: BTreeMap<CheckpointId, u64>,
    committed: Arc<AtomicU64>,
    fs: Arc<dyn Fs>,
}

impl std::fmt::Debug for TwoPhaseSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoPhaseSink")
            .field("task", &self.task)
            .field("current", &self.current.len())
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl TwoPhaseSink {
    /// A sink for `task` writing through `fs`; `committed` counts the
    /// records it commits.
    pub fn new(task: TaskId, fs: Arc<dyn Fs>, committed: Arc<AtomicU64>) -> Self {
        TwoPhaseSink {
            task,
            current: Vec::new(),
            pending: BTreeMap::new(),
            committed,
            fs,
        }
    }

    /// Commits one pre-committed transaction; committing twice is a no-op.
    /// Returns whether this call committed it.
    fn commit(&self, checkpoint: CheckpointId, fs: &dyn Fs) -> Result<bool, OperatorError> {
        let name = txn_name(checkpoint, self.task);
        let from = join(PENDING_DIR, &name);
        let to = join(COMMITTED_DIR, &name);
        if fs.exists(&from) {
            fs.rename(&from, &to).map_err(|e| oerr("commit", e))?;
            fs.sync_dir(COMMITTED_DIR).map_err(|e| oerr("commit", e))?;
            fs.sync_dir(PENDING_DIR).map_err(|e| oerr("commit", e))?;
            Ok(true)
        } else if fs.exists(&to) {
            Ok(false)
        } else {
            Err(OperatorError(format!(
                "pre-committed transaction {name} is neither pending nor committed"
            )))
        }
    }
}

impl Operator for TwoPhaseSink {
    fn process(&mut self, record: Record, _out: &mut Vec<Record>) -> Result<(), OperatorError> {
        self.current.push(record);
        Ok(())
    }
    fn snapshot(
        &mut self,
        checkpoint: CheckpointId,
        fs: &dyn Fs,
    ) -> Result<Vec<u8>, OperatorError> {
        let path = join(PENDING_DIR, &txn_name(checkpoint, self.task));
        write_durable(fs, &path, &encode_txn(&self.current)).map_err(|e| oerr("pre-commit", e))?;
        self.pending.insert(checkpoint, self.current.len() as u64);
        self.current.clear();
        let mut b = Vec::with_capacity(16 * self.pending.len());
        for (c, n) in &self.pending {
            b.extend_from_slice(&c.0.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
        }
        Ok(b)
    }
    fn restore(
        &mut self,
        checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError> {
        let fs = Arc::clone(&self.fs);
        fs.create_dir_all(PENDING_DIR)
            .map_err(|e| oerr("restore", e))?;
        fs.create_dir_all(COMMITTED_DIR)
            .map_err(|e| oerr("restore", e))?;
        self.current.clear();
        self.pending.clear();
        let mut restored = BTreeMap::new();
        if let Some(b) = state {
            if b.len() % 16 != 0 {
                return Err(OperatorError(format!("sink state of {} bytes", b.len())));
            }
            for pair in b.chunks_exact(16) {
                let c = CheckpointId(u64::from_le_bytes(pair[..8].try_into().unwrap_or([0; 8])));
                let n = u64::from_le_bytes(pair[8..].try_into().unwrap_or([0; 8]));
                if checkpoint.is_some_and(|r| c > r) {
                    return Err(OperatorError(format!(
                        "sink state of {checkpoint:?} lists transaction {c}"
                    )));
                }
                restored.insert(c, n);
            }
        }
        // Recovery commit of the restored checkpoint's transactions.
        for (c, n) in &restored {
            if self.commit(*c, &*fs)? {
                self.committed.fetch_add(*n, Ordering::Relaxed);
            }
        }
        // Every other pending transaction of this task belongs to an epoch
        // that never completed.
        let mut removed = false;
        for name in fs.list(PENDING_DIR).map_err(|e| oerr("restore", e))? {
            if parse_txn_name(&name).is_some_and(|(_, t)| t == self.task) {
                fs.remove(&join(PENDING_DIR, &name))
                    .map_err(|e| oerr("restore", e))?;
                removed = true;
            }
        }
        if removed {
            fs.sync_dir(PENDING_DIR).map_err(|e| oerr("restore", e))?;
        }
        Ok(())
    }
    fn notify_complete(
        &mut self,
        checkpoint: CheckpointId,
        fs: &dyn Fs,
    ) -> Result<(), OperatorError> {
        let due: Vec<(CheckpointId, u64)> = self
            .pending
            .range(..=checkpoint)
            .map(|(c, n)| (*c, *n))
            .collect();
        for (c, n) in due {
            self.commit(c, fs)?;
            self.pending.remove(&c);
            self.committed.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// What the committed output holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputReport {
    /// Records committed.
    pub records: u64,
    /// Committed transactions.
    pub transactions: u64,
    /// Pending (pre-committed) transactions on disk.
    pub pending: u64,
}

/// Checks the committed output: every record at most once (exactly once
/// with `complete`), ids below `total`, per key the counts `1, 2, ...` in id
/// order over the committed prefix.
pub fn verify_output(fs: &dyn Fs, total: u64, complete: bool) -> Result<OutputReport, OutputError> {
    let io = |file: &str, e: std::io::Error| OutputError::Io {
        file: file.to_string(),
        why: e.to_string(),
    };
    let mut seen: BTreeMap<u64, Record> = BTreeMap::new();
    let mut report = OutputReport::default();
    for name in fs.list(COMMITTED_DIR).map_err(|e| io(COMMITTED_DIR, e))? {
        let file = join(COMMITTED_DIR, &name);
        let bytes = fs.read(&file).map_err(|e| io(&file, e))?;
        for r in decode_txn(&file, &bytes)? {
            if r.id >= total {
                return Err(OutputError::Unknown(r.id));
            }
            if seen.insert(r.id, r).is_some() {
                return Err(OutputError::Duplicate { id: r.id, times: 2 });
            }
            report.records += 1;
        }
        report.transactions += 1;
    }
    report.pending = fs.list(PENDING_DIR).map_err(|e| io(PENDING_DIR, e))?.len() as u64;
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    for r in seen.values() {
        let e = expected.entry(r.key).or_insert(0);
        *e += 1;
        if r.value != *e {
            return Err(OutputError::BadCount {
                key: r.key,
                id: r.id,
                got: r.value,
                expected: *e,
            });
        }
    }
    if complete && report.records != total {
        let first = (0..total)
            .find(|id| !seen.contains_key(id))
            .unwrap_or(total);
        return Err(OutputError::Missing {
            missing: total - report.records,
            first,
        });
    }
    // The committed records form a prefix per key only if none is missing
    // before a committed one of the same key; BadCount above catches that.
    Ok(report)
}

/// Pipeline parameters.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Records the source emits (`u64::MAX`: unbounded).
    pub records: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Checkpoint interval.
    pub interval_ms: u64,
    /// Checkpoint timeout.
    pub timeout_ms: u64,
    /// Completed checkpoints retained.
    pub retained: u32,
    /// Source rate limit (records/s, 0: none).
    pub rate_per_sec: u64,
    /// Host options.
    pub options: JobOptions,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            records: 1_000_000,
            keys: 16,
            interval_ms: 100,
            timeout_ms: 10_000,
            retained: 2,
            rate_per_sec: 0,
            options: JobOptions::default(),
        }
    }
}

/// The job id the pipeline runs under.
pub const PIPELINE_JOB: JobId = JobId(42);

/// The pipeline as a [`JobSpec`]: source (task 0) -> counter (1) -> sink (2).
/// `committed` counts the records the sink commits in this run.
#[must_use]
pub fn pipeline_spec(cfg: &PipelineConfig, fs: Arc<dyn Fs>, committed: Arc<AtomicU64>) -> JobSpec {
    let mut settings = CoordinatorSettings::with_tasks(PIPELINE_JOB, 3);
    settings.interval_ms = i64::try_from(cfg.interval_ms).unwrap_or(i64::MAX);
    settings.timeout_ms = i64::try_from(cfg.timeout_ms).unwrap_or(i64::MAX);
    settings.retained_max = i64::from(cfg.retained.max(1));
    settings.tolerable_failures = 1_000;
    let (records, keys, rate) = (cfg.records, cfg.keys, cfg.rate_per_sec);
    let operators: OperatorFactory = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
        match task.0 {
            0 => Box::new(NumberSource::new(records, keys, rate)),
            1 => Box::new(KeyedCounter::default()),
            _ => Box::new(TwoPhaseSink::new(
                task,
                Arc::clone(&fs),
                Arc::clone(&committed),
            )),
        }
    });
    JobSpec {
        settings,
        tasks: 3,
        edges: vec![(TaskId(0), TaskId(1)), (TaskId(1), TaskId(2))],
        task_config: TaskConfig::default(),
        operators,
        hooks: Vec::new(),
        options: cfg.options.clone(),
    }
}

const USAGE: &str = "usage: pipeline DIR [--records N|unbounded] [--keys K] [--interval-ms MS] \
[--retained N] [--rate RECORDS_PER_SEC] [--check] [--quiet]";

fn parse_args(args: &[String]) -> Result<(String, PipelineConfig, bool), String> {
    let mut cfg = PipelineConfig::default();
    let mut dir = None;
    let mut quiet = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{name} needs a value"))?;
            v.parse().map_err(|_| format!("{name}: not a number: {v}"))
        };
        match a.as_str() {
            "--records" => {
                let v = it.next().ok_or("--records needs a value")?;
                cfg.records = if v == "unbounded" {
                    u64::MAX
                } else {
                    v.parse()
                        .map_err(|_| format!("--records: not a number: {v}"))?
                };
            }
            "--keys" => cfg.keys = num("--keys")?,
            "--interval-ms" => cfg.interval_ms = num("--interval-ms")?,
            "--retained" => cfg.retained = u32::try_from(num("--retained")?).unwrap_or(u32::MAX),
            "--rate" => cfg.rate_per_sec = num("--rate")?,
            "--check" => cfg.options.check_invariants = true,
            "--quiet" => quiet = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other if other.starts_with('-') => {
                return Err(format!("unknown option {other}\n{USAGE}"))
            }
            other => dir = Some(other.to_string()),
        }
    }
    let dir = dir.ok_or_else(|| USAGE.to_string())?;
    Ok((dir, cfg, quiet))
}

/// The `pipeline` command: runs the pipeline in `DIR` until every record is
/// committed (or forever with `--records unbounded`), resuming from the
/// latest completed checkpoint found there. Prints a progress line on
/// stderr and a summary on stdout. Exit status 0 on success, 1 on a failed
/// check, 2 on a usage error.
#[allow(clippy::disallowed_methods)] // reason: the command's progress line reads the wall clock
pub fn run_cli(args: &[String]) -> std::process::ExitCode {
    let (dir, cfg, quiet) = match parse_args(args) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("{msg}");
            return std::process::ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pipeline: cannot start the runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match rt.block_on(run_dir(&dir, cfg, quiet)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("pipeline: {msg}");
            std::process::ExitCode::from(1)
        }
    }
}

#[allow(clippy::disallowed_methods)] // reason: the progress line reads the wall clock
async fn run_dir(dir: &str, cfg: PipelineConfig, quiet: bool) -> Result<(), String> {
    let t0 = std::time::Instant::now();
    let fs: Arc<dyn Fs> = Arc::new(StdFs::new(dir).map_err(|e| format!("{dir}: {e}"))?);
    fs.create_dir_all(COMMITTED_DIR)
        .map_err(|e| e.to_string())?;
    let before = verify_output(&*fs, cfg.records, false).map_err(|e| e.to_string())?;
    let committed = Arc::new(AtomicU64::new(0));
    let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
    let t_recover = std::time::Instant::now();
    let job = Job::start(spec, Arc::clone(&fs))
        .await
        .map_err(|e| e.to_string())?;
    let recovered_ms = t_recover.elapsed().as_secs_f64() * 1e3;
    let rec = job.recovery();
    let restored = job.stats().restored_at_start;
    println!(
        "started: restored checkpoint {} in {recovered_ms:.1} ms ({} records already committed; \
         removed {} half-written files, {} orphaned state files; {} invalid metadata files)",
        restored.map_or("none".to_string(), |c| c.to_string()),
        before.records,
        rec.removed_partial.len(),
        rec.removed_orphans.len(),
        rec.rejected.len() + rec.missing_state.len(),
    );
    for r in &rec.rejected {
        eprintln!("pipeline: rejected {}: {}", r.file, r.error);
    }
    let tty = std::io::stderr().is_terminal();
    let mut last_print = std::time::Instant::now();
    let mut last_committed = 0u64;
    let tick = Duration::from_millis(if tty { 200 } else { 1_000 });
    loop {
        tokio::time::sleep(tick).await;
        let s = job.stats();
        let now_committed = committed.load(Ordering::Relaxed);
        let dt = last_print.elapsed().as_secs_f64().max(1e-3);
        let rate = (now_committed - last_committed) as f64 / dt;
        last_print = std::time::Instant::now();
        last_committed = now_committed;
        let total = before.records + now_committed;
        if !quiet {
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
        if !s.violations.is_empty() {
            return Err(format!("host violations: {:?}", s.violations));
        }
        if cfg.records != u64::MAX && total >= cfg.records {
            break;
        }
    }
    if tty && !quiet {
        eprintln!();
    }
    let stats = job.shutdown(JobStatus::Finished).await;
    let report = verify_output(&*fs, cfg.records, true).map_err(|e| e.to_string())?;
    println!(
        "done: {} records committed exactly once in {} transactions; {} checkpoints completed, {} aborted, \
         {} failovers in this run; {:.1} s",
        report.records,
        report.transactions,
        stats.completed,
        stats.aborted,
        stats.failovers,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The pending transaction ids of every sink task on disk (for tests).
pub fn pending_transactions(fs: &dyn Fs) -> std::io::Result<BTreeSet<(CheckpointId, TaskId)>> {
    Ok(fs
        .list(PENDING_DIR)?
        .iter()
        .filter_map(|n| parse_txn_name(n))
        .collect())
}
