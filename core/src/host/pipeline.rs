//! The reference pipeline's operators and its output check, shared by the
//! `pipeline` example (`core/examples/pipeline/`, which adds the command
//! line, the directory lock and the progress line) and the host's tests
//! (crash, simulation, lifecycle): a source of numbered records, a keyed
//! counting operator whose state is checkpointed, and a two-phase commit
//! sink (Flink's exactly-once sink pattern).
//!
//! * [`NumberSource`] emits records `0..total` (key `id % keys`); its state is
//!   the next number. With several sources ([`PipelineConfig::sources`]:
//!   fan-in into the counter) source `s` of `S` emits the ids `s, s + S,
//!   s + 2S, ...` below `total`, so together they emit `0..total` once.
//! * [`KeyedCounter`] counts records per key and emits `(id, key, count)`.
//! * [`TwoPhaseSink`] collects outputs into a transaction per checkpoint
//!   epoch, on a file system of its own (given when it is built, not the
//!   job's): **pre-commit** on the checkpoint (the transaction is written
//!   to `sink/pending/` and fsync'd; its id goes into the snapshot; an epoch
//!   without output writes none), **commit** on notify-complete (every
//!   pending transaction up to that checkpoint is renamed into
//!   `sink/committed/`, the directory fsync'd), and on **recovery** commits
//!   the restored checkpoint's pending transactions (idempotent: already
//!   committed is fine) and deletes every other pending transaction (epochs
//!   that never completed). It tells the host how far its output is
//!   committed ([`Operator::committed_epoch`]: the newest checkpoint with a
//!   committed transaction), so a start that would restore an older
//!   checkpoint is refused before anything is written.
//!
//! The committed output therefore holds every record exactly once, and
//! [`OutputVerifier`] checks it as a stream: each source's ids in order
//! (with one source `0, 1, 2, ...`), no id twice, every id when complete,
//! and per key the counts `1, 2, 3, ...` in output order (so a lost or
//! doubly applied counter state shows too).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use super::fs::{join, write_atomic, write_durable, Fs};
use super::runtime::{
    JobOptions, JobSpec, Operator, OperatorError, OperatorFactory, Record, SourcePoll,
};
use crate::coordinator::CoordinatorSettings;
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

/// The numbered source: records `next, next + stride, ...` below `total`.
#[derive(Debug)]
pub struct NumberSource {
    total: u64,
    keys: u64,
    /// The first id (this source's number among the pipeline's sources).
    offset: u64,
    /// The distance between two ids (the number of sources).
    stride: u64,
    next: u64,
    rate_per_sec: u64,
    started: Option<(tokio::time::Instant, u64)>,
}

impl NumberSource {
    /// `total` records (`u64::MAX`: unbounded) over `keys` keys, at most
    /// `rate_per_sec` per second (0: as fast as the pipeline takes them).
    #[must_use]
    pub fn new(total: u64, keys: u64, rate_per_sec: u64) -> Self {
        Self::strided(total, keys, rate_per_sec, 0, 1)
    }

    /// Source `offset` of `stride` sources: the ids `offset, offset +
    /// stride, ...` below `total` (`stride` 0 is taken as 1), at most
    /// `rate_per_sec` of them per second.
    #[must_use]
    pub fn strided(total: u64, keys: u64, rate_per_sec: u64, offset: u64, stride: u64) -> Self {
        NumberSource {
            total,
            keys: keys.max(1),
            offset,
            stride: stride.max(1),
            next: offset,
            rate_per_sec,
            started: None,
        }
    }

    /// Ids this source still has to emit.
    fn remaining(&self) -> u64 {
        self.total.saturating_sub(self.next).div_ceil(self.stride)
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
        let remaining = self.remaining();
        if remaining == 0 {
            return Ok(SourcePoll::Exhausted);
        }
        let mut n = (max as u64).min(remaining);
        if self.rate_per_sec > 0 {
            let now = tokio::time::Instant::now();
            let (t0, base) = *self.started.get_or_insert((now, self.next));
            let elapsed_ms = u64::try_from(now.duration_since(t0).as_millis()).unwrap_or(u64::MAX);
            let allowed = elapsed_ms.saturating_mul(self.rate_per_sec) / 1_000;
            let emitted = (self.next - base) / self.stride;
            let room = allowed.saturating_sub(emitted);
            if room == 0 {
                return Ok(SourcePoll::Idle(Duration::from_millis(5)));
            }
            n = n.min(room);
        }
        for _ in 0..n {
            let id = self.next;
            out.push(Record {
                id,
                key: id % self.keys,
                value: 0,
            });
            self.next = self.next.saturating_add(self.stride);
        }
        Ok(SourcePoll::Emitted)
    }
    fn process(&mut self, _record: Record, _out: &mut Vec<Record>) -> Result<(), OperatorError> {
        Err(OperatorError("a source has no input".into()))
    }
    fn snapshot(&mut self, _checkpoint: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        Ok(self.next.to_le_bytes().to_vec())
    }
    fn restore(
        &mut self,
        _checkpoint: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError> {
        self.next = match state {
            None => self.offset,
            Some(b) => u64::from_le_bytes(
                b.try_into()
                    .map_err(|_| OperatorError(format!("source state of {} bytes", b.len())))?,
            ),
        };
        self.started = None;
        Ok(())
    }
    fn notify_complete(&mut self, _checkpoint: CheckpointId) -> Result<(), OperatorError> {
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
    fn snapshot(&mut self, _checkpoint: CheckpointId) -> Result<Vec<u8>, OperatorError> {
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
    fn notify_complete(&mut self, _checkpoint: CheckpointId) -> Result<(), OperatorError> {
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
    /// Records missing before a committed one.
    #[error("records {first}..{next} are missing before record {next}")]
    Gap {
        /// The first missing id.
        first: u64,
        /// The committed record after the gap.
        next: u64,
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
    /// A sink for `task` whose transactions (`sink/pending/`,
    /// `sink/committed/`) are files of `fs`, for every call: pre-commit,
    /// commit, recovery and [`Operator::committed_epoch`]. `committed`
    /// counts the records it commits.
    pub fn new(task: TaskId, fs: Arc<dyn Fs>, committed: Arc<AtomicU64>) -> Self {
        TwoPhaseSink {
            task,
            current: Vec::new(),
            pending: BTreeMap::new(),
            committed,
            fs,
        }
    }

    /// Commits one pre-committed transaction of `records` records;
    /// committing twice is a no-op. The records count as committed once
    /// the rename is made, before the syncs: a sync that fails fails the
    /// task, and the recovery commit then finds the transaction committed
    /// and counts nothing, so counting later would lose them from the
    /// count (and a bounded run would never end).
    fn commit(&self, checkpoint: CheckpointId, records: u64) -> Result<(), OperatorError> {
        let fs = &*self.fs;
        let name = txn_name(checkpoint, self.task);
        let from = join(PENDING_DIR, &name);
        let to = join(COMMITTED_DIR, &name);
        if fs.exists(&from) {
            fs.rename(&from, &to).map_err(|e| oerr("commit", e))?;
            self.committed.fetch_add(records, Ordering::Relaxed);
            fs.sync_dir(COMMITTED_DIR).map_err(|e| oerr("commit", e))?;
            fs.sync_dir(PENDING_DIR).map_err(|e| oerr("commit", e))?;
            Ok(())
        } else if fs.exists(&to) {
            Ok(())
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
    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        // An epoch without output has nothing to commit: no transaction.
        if !self.current.is_empty() {
            let path = join(PENDING_DIR, &txn_name(checkpoint, self.task));
            write_durable(&*self.fs, &path, &encode_txn(&self.current))
                .map_err(|e| oerr("pre-commit", e))?;
            self.pending.insert(checkpoint, self.current.len() as u64);
            self.current.clear();
        }
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
            self.commit(*c, *n)?;
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
    fn committed_epoch(&mut self) -> Result<Option<CheckpointId>, OperatorError> {
        committed_epoch(&*self.fs, self.task).map_err(|e| oerr("committed epoch", e))
    }
    fn notify_complete(&mut self, checkpoint: CheckpointId) -> Result<(), OperatorError> {
        let due: Vec<(CheckpointId, u64)> = self
            .pending
            .range(..=checkpoint)
            .map(|(c, n)| (*c, *n))
            .collect();
        for (c, n) in due {
            self.commit(c, n)?;
            self.pending.remove(&c);
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

/// Checks the committed output as a stream, in memory bounded by the
/// number of keys and sources (plus one transaction file and the directory
/// listing): source `s` of the pipeline's `S` numbers its records `s, s +
/// S, s + 2S, ...` and every channel keeps their order, so the committed
/// transactions, in checkpoint order, must hold each source's records in
/// order (with one source exactly the records `0..n` in order), every
/// record's count being the number of records of its key up to it in the
/// output. A record below its source's next expected id was already
/// committed (a duplicate); one above it leaves a gap.
///
/// [`OutputVerifier::advance`] reads only the transactions committed since
/// its last call, so a run verifies what was there when it started and then
/// only what it added.
#[derive(Clone, Debug)]
pub struct OutputVerifier {
    total: u64,
    /// Per source, the next id expected.
    next: Vec<u64>,
    /// Records verified.
    verified: u64,
    counts: BTreeMap<u64, u64>,
    last_txn: Option<String>,
    transactions: u64,
}

impl OutputVerifier {
    /// A verifier for a source of `total` records (`u64::MAX`: unbounded).
    #[must_use]
    pub fn new(total: u64) -> Self {
        Self::with_sources(total, 1)
    }

    /// A verifier for `sources` numbered sources of `total` records in all
    /// (source `s` emits the ids `s, s + sources, ...`; `sources` 0 is
    /// taken as 1), as [`pipeline_spec`] builds them.
    #[must_use]
    pub fn with_sources(total: u64, sources: u32) -> Self {
        OutputVerifier {
            total,
            next: (0..u64::from(sources.max(1))).collect(),
            verified: 0,
            counts: BTreeMap::new(),
            last_txn: None,
            transactions: 0,
        }
    }

    /// Reads the transactions committed since the last call and checks
    /// them. A transaction committed out of checkpoint order (named before
    /// one already read) is an error.
    pub fn advance(&mut self, fs: &dyn Fs) -> Result<(), OutputError> {
        let names = fs
            .list(COMMITTED_DIR)
            .map_err(|e| io_error(COMMITTED_DIR, &e))?;
        let mut before = 0u64;
        for name in names {
            if self.last_txn.as_ref().is_some_and(|last| name <= *last) {
                before += 1;
                if before > self.transactions {
                    return Err(OutputError::BadTxn {
                        file: join(COMMITTED_DIR, &name),
                        why: "committed after a later transaction".into(),
                    });
                }
                continue;
            }
            let file = join(COMMITTED_DIR, &name);
            let bytes = fs.read(&file).map_err(|e| io_error(&file, &e))?;
            for r in decode_txn(&file, &bytes)? {
                self.check(r)?;
            }
            self.transactions += 1;
            self.last_txn = Some(name);
        }
        Ok(())
    }

    fn check(&mut self, r: Record) -> Result<(), OutputError> {
        if r.id >= self.total {
            return Err(OutputError::Unknown(r.id));
        }
        let sources = self.next.len() as u64;
        let Some(next) = usize::try_from(r.id % sources)
            .ok()
            .and_then(|s| self.next.get_mut(s))
        else {
            return Err(OutputError::Unknown(r.id));
        };
        if r.id < *next {
            // Every id of this source below `next` has been read exactly once.
            return Err(OutputError::Duplicate { id: r.id, times: 2 });
        }
        if r.id > *next {
            return Err(OutputError::Gap {
                first: *next,
                next: r.id,
            });
        }
        *next = next.saturating_add(sources);
        let e = self.counts.entry(r.key).or_insert(0);
        *e += 1;
        if r.value != *e {
            return Err(OutputError::BadCount {
                key: r.key,
                id: r.id,
                got: r.value,
                expected: *e,
            });
        }
        self.verified += 1;
        Ok(())
    }

    /// Records verified so far (with one source, the ids `0..records()`).
    #[must_use]
    pub fn records(&self) -> u64 {
        self.verified
    }

    /// The lowest id not verified yet (`None` when every id below the
    /// total is).
    fn first_missing(&self) -> Option<u64> {
        self.next.iter().copied().filter(|n| *n < self.total).min()
    }

    /// Transactions verified so far.
    #[must_use]
    pub fn transactions(&self) -> u64 {
        self.transactions
    }

    /// Whether every record of a bounded source has been verified.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.total != u64::MAX && self.first_missing().is_none()
    }

    /// The report on what was verified; with `complete`, an error unless
    /// every record of the source is there.
    pub fn report(&self, fs: &dyn Fs, complete: bool) -> Result<OutputReport, OutputError> {
        if complete {
            if let Some(first) = self.first_missing() {
                return Err(OutputError::Missing {
                    missing: self.total.saturating_sub(self.verified),
                    first,
                });
            }
        }
        let pending = fs
            .list(PENDING_DIR)
            .map_err(|e| io_error(PENDING_DIR, &e))?;
        Ok(OutputReport {
            records: self.verified,
            transactions: self.transactions,
            pending: pending.len() as u64,
        })
    }
}

fn io_error(file: &str, e: &std::io::Error) -> OutputError {
    OutputError::Io {
        file: file.to_string(),
        why: e.to_string(),
    }
}

/// Checks the committed output in one pass ([`OutputVerifier`]): every
/// record at most once and in order (exactly once with `complete`), ids
/// below `total`, per key the counts `1, 2, ...`.
pub fn verify_output(fs: &dyn Fs, total: u64, complete: bool) -> Result<OutputReport, OutputError> {
    verify_output_of(fs, total, 1, complete)
}

/// [`verify_output`] for a pipeline of `sources` numbered sources
/// ([`OutputVerifier::with_sources`]).
pub fn verify_output_of(
    fs: &dyn Fs,
    total: u64,
    sources: u32,
    complete: bool,
) -> Result<OutputReport, OutputError> {
    let mut v = OutputVerifier::with_sources(total, sources);
    v.advance(fs)?;
    v.report(fs, complete)
}

/// The newest checkpoint whose transaction of sink `task` is committed
/// (what [`TwoPhaseSink`] answers to [`Operator::committed_epoch`]).
pub fn committed_epoch(fs: &dyn Fs, task: TaskId) -> std::io::Result<Option<CheckpointId>> {
    Ok(fs
        .list(COMMITTED_DIR)?
        .iter()
        .filter_map(|n| parse_txn_name(n))
        .filter(|(_, t)| *t == task)
        .map(|(c, _)| c)
        .max())
}

/// Pipeline parameters.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Records the sources emit together (`u64::MAX`: unbounded).
    pub records: u64,
    /// Numbered sources (at least 1; 0 is taken as 1). With more than one
    /// the counter reads from all of them (fan-in): sources `0..sources`,
    /// the counter is task `sources`, the sink task `sources + 1`.
    pub sources: u32,
    /// Distinct keys.
    pub keys: u64,
    /// Checkpoint interval.
    pub interval_ms: u64,
    /// Checkpoint timeout.
    pub timeout_ms: u64,
    /// Completed checkpoints retained.
    pub retained: u32,
    /// Source rate limit (records/s of each source, 0: none).
    pub rate_per_sec: u64,
    /// Host options.
    pub options: JobOptions,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            records: 1_000_000,
            sources: 1,
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

/// The pipeline as a [`JobSpec`]: source (task 0) -> counter (1) -> sink (2);
/// with `cfg.sources` = `S` > 1, sources `0..S` -> counter (`S`, fan-in:
/// one input channel from each source) -> sink (`S + 1`), every source
/// triggered by the coordinator. `fs` is the sink's own: its transactions
/// are written there ([`TwoPhaseSink::new`]), whatever file system the
/// job's state files are on (the one given to `Job::start` or
/// `TaskGroup::standalone`; the same one, or another). `committed` counts
/// the records the sink commits in this run.
#[must_use]
pub fn pipeline_spec(cfg: &PipelineConfig, fs: Arc<dyn Fs>, committed: Arc<AtomicU64>) -> JobSpec {
    let sources = cfg.sources.max(1);
    let (counter, sink) = (sources, sources.saturating_add(1));
    let tasks = sources.saturating_add(2);
    let mut settings = CoordinatorSettings::with_tasks(PIPELINE_JOB, tasks);
    settings.tasks_to_trigger = (0..sources).map(TaskId).collect();
    settings.interval_ms = i64::try_from(cfg.interval_ms).unwrap_or(i64::MAX);
    settings.timeout_ms = i64::try_from(cfg.timeout_ms).unwrap_or(i64::MAX);
    settings.retained_max = i64::from(cfg.retained.max(1));
    settings.tolerable_failures = 1_000;
    let (records, keys, rate) = (cfg.records, cfg.keys, cfg.rate_per_sec);
    let operators: OperatorFactory = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
        match task.0 {
            t if t < counter => Box::new(NumberSource::strided(
                records,
                keys,
                rate,
                u64::from(t),
                u64::from(sources),
            )),
            t if t == counter => Box::new(KeyedCounter::default()),
            _ => Box::new(TwoPhaseSink::new(
                task,
                Arc::clone(&fs),
                Arc::clone(&committed),
            )),
        }
    });
    JobSpec {
        settings,
        tasks,
        edges: (0..sources)
            .map(|s| (TaskId(s), TaskId(counter)))
            .chain([(TaskId(counter), TaskId(sink))])
            .collect(),
        task_config: TaskConfig::default(),
        operators,
        hooks: Vec::new(),
        options: cfg.options.clone(),
    }
}

/// Most numbered sources a pipeline runs ([`PipelineConfig::sources`]).
pub const SOURCES_MAX: u32 = 64;
/// The file that keeps the number of sources a pipeline's directory was
/// started with.
pub const SOURCES_FILE: &str = "sources";

/// Why a directory's number of sources cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SourcesError {
    /// The file could not be read or written.
    #[error("{SOURCES_FILE}: {0}")]
    Io(String),
    /// The file holds no number of sources in range.
    #[error("{SOURCES_FILE} does not hold a number of sources from 1 to {SOURCES_MAX}")]
    Damaged,
    /// Another number was asked for than the directory was started with.
    #[error("the directory was started with {kept} sources, not {asked}; refusing to start")]
    Mismatch {
        /// The directory's.
        kept: u32,
        /// The one asked for.
        asked: u32,
    },
}

/// The number of sources of a pipeline's directory (the sink's output
/// holds each source's ids in order, so it must be read with the number it
/// was written with): the one it was started with ([`SOURCES_FILE`]), 1
/// for a directory from before that file existed (one with `checkpoints`,
/// `ids` or `sink` in it), or `asked` (default 1) for a new one, written
/// down atomically and durably first when `write` (a check that must
/// change nothing passes `false`). A number `asked` that is not the
/// directory's is refused ([`SourcesError::Mismatch`]) with nothing
/// changed.
pub fn directory_sources(
    fs: &dyn Fs,
    asked: Option<u32>,
    write: bool,
) -> Result<u32, SourcesError> {
    let kept = if fs.exists(SOURCES_FILE) {
        let bytes = fs
            .read(SOURCES_FILE)
            .map_err(|e| SourcesError::Io(e.to_string()))?;
        let n = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|n| (1..=SOURCES_MAX).contains(n))
            .ok_or(SourcesError::Damaged)?;
        Some(n)
    } else if ["checkpoints", "ids", "sink"].iter().any(|p| fs.exists(p)) {
        Some(1)
    } else {
        None
    };
    match (kept, asked) {
        (Some(kept), Some(asked)) if kept != asked => Err(SourcesError::Mismatch { kept, asked }),
        (Some(k), _) => Ok(k),
        (None, asked) => {
            let n = asked.unwrap_or(1);
            if write {
                write_atomic(fs, SOURCES_FILE, format!("{n}\n").as_bytes())
                    .map_err(|e| SourcesError::Io(e.to_string()))?;
            }
            Ok(n)
        }
    }
}

/// The pending (pre-committed, not yet committed) transactions of every
/// sink task on disk, as `(checkpoint, task)`.
pub fn pending_transactions(fs: &dyn Fs) -> std::io::Result<BTreeSet<(CheckpointId, TaskId)>> {
    Ok(fs
        .list(PENDING_DIR)?
        .iter()
        .filter_map(|n| parse_txn_name(n))
        .collect())
}
