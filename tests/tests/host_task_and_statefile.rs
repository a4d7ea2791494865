//! The async host's task attempt and its state file, pinned at their edges:
//! the state file's size bounds (a declared size exactly at the bound is
//! read, not refused), the channel state a checkpoint saves (exactly the
//! in-flight records the operator had not processed), the input queue's
//! bound, how a non-source task batches and flushes its output, and that
//! stopping a job is not taken for a broken connection.
//!
//! Tests that need a task to stay busy block its operator with
//! `block_in_place` on a one-worker multi-thread runtime; every wait is
//! bounded, and no assertion is on wall-clock speed.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ckpt_core::coordinator::{CoordinatorSettings, JobStatus, TriggerKind};
use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::pipeline::{pipeline_spec, verify_output, PipelineConfig};
use ckpt_core::host::runtime::statefile::{
    StateFileError, TaskSnapshot, CHANNEL_RECORDS_MAX, SNAPSHOT_MAX_BYTES, STATE_MAGIC,
};
use ckpt_core::host::runtime::{
    trace_key, Job, JobHandle, JobOptions, JobSpec, Operator, OperatorError, OperatorFactory,
    Record, SourcePoll, DATA_CHANNEL_MAX, INPUT_MAX,
};
use ckpt_core::host::store::state_path;
use ckpt_core::task::{TaskConfig, TaskEvent};
use ckpt_core::trace::TraceLine;
use ckpt_core::{AttemptNo, CheckpointId, JobId, StateHandle, TaskId};

// ---------------------------------------------------------------- state file

/// A state file's header up to and including the operator snapshot length.
fn header(op_len: u32) -> Vec<u8> {
    let mut b = STATE_MAGIC.to_vec();
    b.extend_from_slice(&7u32.to_le_bytes());
    b.extend_from_slice(&3u64.to_le_bytes());
    b.extend_from_slice(&op_len.to_le_bytes());
    b
}

#[test]
fn snapshot_length_exactly_at_the_bound_is_read_not_refused() {
    // Declares the largest accepted snapshot but holds a few bytes of it:
    // the length is within the bound, so the file is merely short.
    let mut b = header(SNAPSHOT_MAX_BYTES);
    b.extend_from_slice(&[1, 2, 3]);
    assert_eq!(
        TaskSnapshot::decode(&b),
        Err(StateFileError::Truncated { len: b.len() })
    );
    let over = header(SNAPSHOT_MAX_BYTES + 1);
    assert_eq!(
        TaskSnapshot::decode(&over),
        Err(StateFileError::TooLarge("operator snapshot length"))
    );
}

#[test]
fn channel_record_count_exactly_at_the_bound_is_read_not_refused() {
    let mut b = header(2);
    b.extend_from_slice(&[9, 9]);
    let mut at_bound = b.clone();
    at_bound.extend_from_slice(&CHANNEL_RECORDS_MAX.to_le_bytes());
    // One whole record and part of the next: short, not too large.
    at_bound.extend_from_slice(&[0; 30]);
    assert_eq!(
        TaskSnapshot::decode(&at_bound),
        Err(StateFileError::Truncated {
            len: at_bound.len()
        })
    );
    let mut over = b;
    over.extend_from_slice(&(CHANNEL_RECORDS_MAX + 1).to_le_bytes());
    assert_eq!(
        TaskSnapshot::decode(&over),
        Err(StateFileError::TooLarge("channel record count"))
    );
}

#[test]
fn state_file_round_trips_and_refuses_short_input() {
    let snap = TaskSnapshot {
        task: TaskId(5),
        checkpoint: CheckpointId(11),
        operator: vec![1, 2, 3, 4],
        channel: vec![
            Record {
                id: 1,
                key: 2,
                value: 3,
            },
            Record {
                id: 4,
                key: 5,
                value: 6,
            },
        ],
    };
    let bytes = snap.encode();
    assert_eq!(TaskSnapshot::decode(&bytes), Ok(snap));
    // The magic alone: short, whatever follows is missing.
    assert_eq!(
        TaskSnapshot::decode(&bytes[..8]),
        Err(StateFileError::Truncated { len: 8 })
    );
    assert_eq!(
        TaskSnapshot::decode(&bytes[..5]),
        Err(StateFileError::Truncated { len: 5 })
    );
}

// ------------------------------------------------------------ host harness

/// A gate an operator blocks on (bounded) until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
    entered: AtomicBool,
}

impl Gate {
    fn wait(&self) {
        self.entered.store(true, Ordering::SeqCst);
        let open = self.open.lock().unwrap();
        let _ = self
            .changed
            .wait_timeout_while(open, Duration::from_secs(60), |o| !*o)
            .unwrap();
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

/// Emits records `1..=total`, `per_poll` per turn.
struct CountingSource {
    per_poll: u64,
    total: u64,
    next: u64,
    emitted: Arc<AtomicU64>,
}

impl Operator for CountingSource {
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
        let n = self.per_poll.min(max as u64).min(self.total - self.next);
        for _ in 0..n {
            self.next += 1;
            out.push(Record {
                id: self.next,
                key: self.next % 4,
                value: self.next,
            });
        }
        self.emitted.fetch_add(n, Ordering::SeqCst);
        Ok(SourcePoll::Emitted)
    }
    fn process(&mut self, _: Record, _: &mut Vec<Record>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn snapshot(&mut self, _: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        Ok(self.next.to_le_bytes().to_vec())
    }
    fn restore(&mut self, _: Option<CheckpointId>, _: Option<&[u8]>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn notify_complete(&mut self, _: CheckpointId) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Passes records on (when `forward`) and counts them; the first record
/// blocks on the gate, if any.
struct Counter {
    forward: bool,
    processed: Arc<AtomicU64>,
    gate: Option<Arc<Gate>>,
}

impl Operator for Counter {
    fn process(&mut self, record: Record, out: &mut Vec<Record>) -> Result<(), OperatorError> {
        if self.processed.fetch_add(1, Ordering::SeqCst) == 0 {
            if let Some(g) = &self.gate {
                tokio::task::block_in_place(|| g.wait());
            }
        }
        if self.forward {
            out.push(record);
        }
        Ok(())
    }
    fn snapshot(&mut self, _: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        Ok(vec![0xAB])
    }
    fn restore(&mut self, _: Option<CheckpointId>, _: Option<&[u8]>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn notify_complete(&mut self, _: CheckpointId) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// What a chain job exposes to the test.
struct Probe {
    emitted: Arc<AtomicU64>,
    /// Records processed by task 1, 2, ... (index 0 is task 1).
    processed: Vec<Arc<AtomicU64>>,
    gate: Arc<Gate>,
}

/// A chain `source -> counter -> ... -> counter` of `tasks` tasks; the last
/// counter blocks on its first record when `gated`. No periodic checkpoint
/// (the interval is far beyond any test).
fn chain(tasks: u32, per_poll: u64, total: u64, gated: bool) -> (JobSpec, Probe) {
    let mut settings = CoordinatorSettings::with_tasks(JobId(77), tasks);
    settings.interval_ms = 3_600_000;
    settings.timeout_ms = 3_600_000;
    let probe = Probe {
        emitted: Arc::new(AtomicU64::new(0)),
        processed: (1..tasks).map(|_| Arc::new(AtomicU64::new(0))).collect(),
        gate: Arc::new(Gate::default()),
    };
    let (emitted, processed, gate) = (
        Arc::clone(&probe.emitted),
        probe.processed.clone(),
        Arc::clone(&probe.gate),
    );
    let operators: OperatorFactory = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
        if task.0 == 0 {
            return Box::new(CountingSource {
                per_poll,
                total,
                next: 0,
                emitted: Arc::clone(&emitted),
            });
        }
        let last = task.0 + 1 == tasks;
        Box::new(Counter {
            forward: !last,
            processed: Arc::clone(&processed[task.0 as usize - 1]),
            gate: (last && gated).then(|| Arc::clone(&gate)),
        })
    });
    let edges = (1..tasks).map(|t| (TaskId(t - 1), TaskId(t))).collect();
    (spec_of(settings, tasks, edges, operators), probe)
}

fn spec_of(
    settings: CoordinatorSettings,
    tasks: u32,
    edges: Vec<(TaskId, TaskId)>,
    operators: OperatorFactory,
) -> JobSpec {
    JobSpec {
        settings,
        tasks,
        edges,
        task_config: TaskConfig::default(),
        operators,
        hooks: Vec::new(),
        options: JobOptions {
            check_invariants: true,
            record_trace: true,
            ..JobOptions::default()
        },
    }
}

/// A source that blocks on the gate in its first turn and then is done.
struct BlockedSource {
    gate: Arc<Gate>,
}

impl Operator for BlockedSource {
    fn is_source(&self) -> bool {
        true
    }
    fn poll_source(&mut self, _: usize, _: &mut Vec<Record>) -> Result<SourcePoll, OperatorError> {
        tokio::task::block_in_place(|| self.gate.wait());
        Ok(SourcePoll::Exhausted)
    }
    fn process(&mut self, _: Record, _: &mut Vec<Record>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn snapshot(&mut self, _: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        Ok(Vec::new())
    }
    fn restore(&mut self, _: Option<CheckpointId>, _: Option<&[u8]>) -> Result<(), OperatorError> {
        Ok(())
    }
    fn notify_complete(&mut self, _: CheckpointId) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// One worker, so tasks interleave only at awaits; `block_in_place` lets an
/// operator block without stopping the others.
fn blocking_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Waits (bounded) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

/// The events task `task`'s first attempt recorded.
fn first_attempt_events(job: &JobHandle, task: u32) -> Vec<TaskEvent> {
    let key = trace_key(TaskId(task), AttemptNo(0));
    job.trace()
        .steps
        .into_iter()
        .filter_map(|l| match l {
            TraceLine::Task { task, event, .. } if task == key => Some(event),
            _ => None,
        })
        .collect()
}

// ------------------------------------------------------------ task attempt

/// A checkpoint's state file holds, as channel state, exactly the records
/// that were in flight at the barrier and that the operator had not yet
/// processed when it snapshotted: here every record after the first (the
/// one the operator was busy with when the barrier arrived).
#[test]
fn checkpoint_saves_the_unprocessed_in_flight_records_as_channel_state() {
    let rt = blocking_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let (spec, probe) = chain(2, 100, 100, true);
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        until("the sink is busy with its first record", || {
            probe.gate.entered.load(Ordering::SeqCst)
        })
        .await;
        job.trigger(TriggerKind::Checkpoint { forced: false })
            .expect("trigger");
        until("the barrier reached the sink", || {
            first_attempt_events(&job, 1)
                .iter()
                .any(|e| matches!(e, TaskEvent::BarrierReceived { .. }))
        })
        .await;
        probe.gate.open();
        let mut written: Option<(CheckpointId, StateHandle)> = None;
        until("the sink wrote its state", || {
            written = first_attempt_events(&job, 1).iter().find_map(|e| match e {
                TaskEvent::AsyncPartCompleted { checkpoint, handle } => {
                    Some((*checkpoint, *handle))
                }
                _ => None,
            });
            written.is_some()
        })
        .await;
        let (checkpoint, handle) = written.unwrap();
        let bytes = fs.read(&state_path(handle)).expect("the state file");
        let snap = TaskSnapshot::decode(&bytes).expect("a valid state file");
        assert_eq!(snap.task, TaskId(1));
        assert_eq!(snap.checkpoint, checkpoint);
        assert_eq!(snap.operator, vec![0xAB]);
        let ids: Vec<u64> = snap.channel.iter().map(|r| r.id).collect();
        assert_eq!(ids, (2..=100).collect::<Vec<u64>>());
        let stats = job.shutdown(JobStatus::Canceled).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    });
}

/// A task's input queue holds at most `INPUT_MAX` records: with the sink
/// stuck on its first record, the source (one record per message) stalls
/// after exactly the records the pipeline can buffer: the one being
/// processed, a full input queue, the one netty holds, a full data channel
/// and the one the source is sending.
#[test]
fn input_queue_holds_at_most_input_max_records() {
    let rt = blocking_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let (spec, probe) = chain(2, 1, 1_000_000, true);
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        let buffered = (1 + INPUT_MAX + 1 + DATA_CHANNEL_MAX + 1) as u64;
        until("the source filled the pipeline", || {
            probe.emitted.load(Ordering::SeqCst) >= buffered
        })
        .await;
        // Give a wrong bound every chance to take one more.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let emitted = probe.emitted.load(Ordering::SeqCst);
        probe.gate.open();
        job.shutdown(JobStatus::Canceled).await;
        assert_eq!(emitted, buffered);
    });
}

/// A middle task batches its output while it is busy (up to a full batch)
/// instead of sending every record on its own: with the sink stuck, the
/// data channel's message bound holds far more than one record a message.
#[test]
fn busy_middle_task_sends_its_output_in_batches() {
    let rt = blocking_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let (spec, probe) = chain(3, 256, 1_000_000, true);
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        // One record a message would stall the middle task near
        // INPUT_MAX + DATA_CHANNEL_MAX + 3 records.
        let well_beyond = (INPUT_MAX + 16 * DATA_CHANNEL_MAX + 4_000) as u64;
        let middle = Arc::clone(&probe.processed[0]);
        let reached = tokio::time::timeout(Duration::from_secs(30), async {
            while middle.load(Ordering::SeqCst) < well_beyond {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await;
        let got = middle.load(Ordering::SeqCst);
        probe.gate.open();
        job.shutdown(JobStatus::Canceled).await;
        assert!(reached.is_ok(), "the middle task stalled at {got} records");
    });
}

/// A middle task flushes its output once it runs out of input: records
/// reach the sink without any checkpoint barrier pushing them along.
#[test]
fn idle_middle_task_flushes_its_output_without_a_barrier() {
    let rt = current_thread_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let (spec, probe) = chain(3, 10, 10, false);
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        let sink = Arc::clone(&probe.processed[1]);
        let reached = tokio::time::timeout(Duration::from_secs(10), async {
            while sink.load(Ordering::SeqCst) < 10 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await;
        let got = sink.load(Ordering::SeqCst);
        let stats = job.shutdown(JobStatus::Canceled).await;
        assert!(reached.is_ok(), "the sink got {got} of 10 records");
        assert_eq!(stats.completed, 0, "no checkpoint ran");
    });
}

/// Shutting a job down stops every attempt; the downstream tasks' data
/// channels closing then is the teardown, not a broken connection: no task
/// failure is counted, and the output is exactly once.
#[test]
fn shutdown_is_not_taken_for_a_broken_connection() {
    let rt = current_thread_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let cfg = PipelineConfig {
            records: 300,
            sources: 1,
            keys: 4,
            interval_ms: 20,
            timeout_ms: 5_000,
            retained: 2,
            rate_per_sec: 20_000,
            options: JobOptions {
                check_invariants: true,
                record_trace: true,
                ..JobOptions::default()
            },
        };
        let committed = Arc::new(AtomicU64::new(0));
        let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        let c = Arc::clone(&committed);
        until("every record is committed", || {
            c.load(Ordering::SeqCst) >= cfg.records
        })
        .await;
        let stats = job.shutdown(JobStatus::Finished).await;
        assert_eq!(stats.genuine_failures, 0, "{stats:?}");
        assert_eq!(stats.spurious_failures, 0, "{stats:?}");
        assert_eq!(stats.failovers, 0, "{stats:?}");
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
        verify_output(&*fs, cfg.records, true).expect("exactly-once output");
    });
}

/// Every attempt is marked as stopping before the first one is stopped:
/// while the job waits for a slow attempt to stop, a downstream task whose
/// upstream attempt is already gone sees its data channel close, and that
/// is the teardown, not a broken connection (no task failure counted).
/// Tasks stop in id order: source 0 -> sink 2, and an unconnected source 1
/// that is busy (blocked) when the job stops.
#[test]
fn a_channel_closing_during_shutdown_is_not_a_task_failure() {
    let rt = blocking_runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut settings = CoordinatorSettings::with_tasks(JobId(78), 3);
        settings.interval_ms = 3_600_000;
        settings.timeout_ms = 3_600_000;
        let gate = Arc::new(Gate::default());
        let sunk = Arc::new(AtomicU64::new(0));
        let (g, c) = (Arc::clone(&gate), Arc::clone(&sunk));
        let operators: OperatorFactory = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
            match task.0 {
                0 => Box::new(CountingSource {
                    per_poll: 10,
                    total: 50,
                    next: 0,
                    emitted: Arc::new(AtomicU64::new(0)),
                }),
                1 => Box::new(BlockedSource {
                    gate: Arc::clone(&g),
                }),
                _ => Box::new(Counter {
                    forward: false,
                    processed: Arc::clone(&c),
                    gate: None,
                }),
            }
        });
        let spec = spec_of(settings, 3, vec![(TaskId(0), TaskId(2))], operators);
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        until("the sink got every record and task 1 is busy", || {
            sunk.load(Ordering::SeqCst) == 50 && gate.entered.load(Ordering::SeqCst)
        })
        .await;
        let (stats, ()) = tokio::join!(job.shutdown(JobStatus::Canceled), async {
            // Time for the sink's data channel to close while task 1 stops.
            tokio::time::sleep(Duration::from_millis(300)).await;
            gate.open();
        });
        assert_eq!(stats.genuine_failures, 0, "{stats:?}");
        assert_eq!(stats.spurious_failures, 0, "{stats:?}");
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    });
}
