//! Fan-in in the async host: a task that reads from two upstream tasks
//! (two numbered sources -> keyed counter -> two-phase-commit sink), its
//! channel state captured from the first barrier of a checkpoint to the
//! last (unaligned; the host has no aligned mode).
//!
//! * `a_record_in_flight_on_the_second_input_is_restored_exactly_once`:
//!   the test is the coordinator of a [`TaskGroup`] (the attempts and data
//!   channels both the in-process `Job` and `ckpt-node`'s task manager run)
//!   and holds the second source's trigger back, so the counter sees the
//!   first barrier on input 0 and then records on input 1 before that
//!   input's barrier; a genuine failure after the checkpoint completed,
//!   the restore, and the committed output holds every record once.
//! * `the_legacy_writer_loses_them_and_the_output_check_says_so`: the same
//!   run with `JobOptions::legacy_first_barrier_channel_state` (the writer
//!   completes at the first barrier, as the host did before fan-in): the
//!   counter's channel state misses them, and the output check reports the
//!   gap.
//! * A whole `Job` with two sources runs to exactly-once output, and the
//!   topologies `Job::start` refuses (cycles, an edge twice).
//!
//! The seeded crash and failover runs of the fan-in pipeline are in
//! `sim_async_host.rs` (`seeded_crashes_with_fan_in_keep_every_promise`).
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ckpt_core::coordinator::{CoordinatorEvent, JobStatus};
use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::pipeline::{
    pipeline_spec, verify_output_of, KeyedCounter, OutputError, PipelineConfig, TwoPhaseSink,
};
use ckpt_core::host::runtime::statefile::decode_for;
use ckpt_core::host::runtime::{
    inputs_of, GroupSpec, Job, JobError, JobOptions, Operator, OperatorError, OperatorFactory,
    Outbound, Record, SourcePoll, TaskGroup, TaskOutbox,
};
use ckpt_core::host::store::read_state;
use ckpt_core::task::{TaskConfig, TaskEvent};
use ckpt_core::{AttemptNo, CheckpointId, JobId, StateHandle, TaskId};

const JOB: JobId = JobId(7);
/// Records of both sources together: source 0 the even ids, source 1 the
/// odd ones.
const TOTAL: u64 = 100;
const SOURCES: u32 = 2;
const COUNTER: TaskId = TaskId(2);
const SINK: TaskId = TaskId(3);
/// How long any one wait may take before the test gives up (a hang is a
/// failure, never a timing assertion: every wait is for a condition).
const WAIT: Duration = Duration::from_secs(30);

/// A numbered source whose emission the test gates: it emits its ids
/// (`offset, offset + 2, ...`) only below the gate's current value.
struct GatedSource {
    offset: u64,
    next: u64,
    gate: Arc<AtomicU64>,
}

impl Operator for GatedSource {
    fn is_source(&self) -> bool {
        true
    }
    fn poll_source(
        &mut self,
        max: usize,
        out: &mut Vec<Record>,
    ) -> Result<SourcePoll, OperatorError> {
        if self.next >= TOTAL {
            return Ok(SourcePoll::Exhausted);
        }
        let limit = self.gate.load(Ordering::SeqCst).min(TOTAL);
        let mut n = 0;
        while self.next < limit && n < max {
            out.push(Record {
                id: self.next,
                key: self.next % 3,
                value: 0,
            });
            self.next += u64::from(SOURCES);
            n += 1;
        }
        Ok(if n == 0 {
            SourcePoll::Idle(Duration::from_millis(1))
        } else {
            SourcePoll::Emitted
        })
    }
    fn process(&mut self, _: Record, _: &mut Vec<Record>) -> Result<(), OperatorError> {
        Err(OperatorError("a source has no input".into()))
    }
    fn snapshot(&mut self, _: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        Ok(self.next.to_le_bytes().to_vec())
    }
    fn restore(
        &mut self,
        _: Option<CheckpointId>,
        state: Option<&[u8]>,
    ) -> Result<(), OperatorError> {
        self.next = match state {
            None => self.offset,
            Some(b) => u64::from_le_bytes(b.try_into().map_err(|_| OperatorError("bad".into()))?),
        };
        Ok(())
    }
    fn notify_complete(&mut self, _: CheckpointId) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// What the test sees of the counter and the sink.
#[derive(Default)]
struct Seen {
    /// Ids processed, per task, since the last [`Seen::clear`].
    processed: BTreeMap<TaskId, Vec<u64>>,
    /// Snapshots taken, per task.
    snapshots: BTreeMap<TaskId, Vec<CheckpointId>>,
    /// Completions notified, per task.
    completed: BTreeMap<TaskId, Vec<CheckpointId>>,
}

/// Wraps an operator and reports what it does; fails once at `fail_at`.
struct Observed {
    task: TaskId,
    inner: Box<dyn Operator>,
    seen: Arc<Mutex<Seen>>,
    fail_at: Option<(u64, Arc<AtomicU64>)>,
}

fn seen(s: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Operator for Observed {
    fn process(&mut self, record: Record, out: &mut Vec<Record>) -> Result<(), OperatorError> {
        if let Some((at, fired)) = &self.fail_at {
            if record.id == *at && fired.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(OperatorError(format!("injected failure at {at}")));
            }
        }
        seen(&self.seen)
            .processed
            .entry(self.task)
            .or_default()
            .push(record.id);
        self.inner.process(record, out)
    }
    fn snapshot(&mut self, c: CheckpointId) -> Result<Vec<u8>, OperatorError> {
        seen(&self.seen)
            .snapshots
            .entry(self.task)
            .or_default()
            .push(c);
        self.inner.snapshot(c)
    }
    fn restore(&mut self, c: Option<CheckpointId>, s: Option<&[u8]>) -> Result<(), OperatorError> {
        self.inner.restore(c, s)
    }
    fn notify_complete(&mut self, c: CheckpointId) -> Result<(), OperatorError> {
        self.inner.notify_complete(c)?;
        seen(&self.seen)
            .completed
            .entry(self.task)
            .or_default()
            .push(c);
        Ok(())
    }
    fn committed_epoch(&mut self) -> Result<Option<CheckpointId>, OperatorError> {
        self.inner.committed_epoch()
    }
}

struct Rig {
    fs: Arc<dyn Fs>,
    gates: [Arc<AtomicU64>; 2],
    seen: Arc<Mutex<Seen>>,
    committed: Arc<AtomicU64>,
    group: TaskGroup,
    outbox: TaskOutbox,
}

impl Rig {
    /// Two gated sources (tasks 0 and 1) -> counter (2) -> sink (3); the
    /// counter fails once, at record `fail_at`.
    fn new(legacy: bool, fail_at: u64) -> Rig {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
        let gates = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        let seen = Arc::new(Mutex::new(Seen::default()));
        let committed = Arc::new(AtomicU64::new(0));
        let fired = Arc::new(AtomicU64::new(0));
        let (g, s, c, f) = (
            gates.clone(),
            Arc::clone(&seen),
            Arc::clone(&committed),
            Arc::clone(&fs),
        );
        let operators: OperatorFactory = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
            match task.0 {
                0 | 1 => Box::new(GatedSource {
                    offset: u64::from(task.0),
                    next: u64::from(task.0),
                    gate: Arc::clone(&g[task.0 as usize]),
                }),
                2 => Box::new(Observed {
                    task,
                    inner: Box::new(KeyedCounter::default()),
                    seen: Arc::clone(&s),
                    fail_at: Some((fail_at, Arc::clone(&fired))),
                }),
                _ => Box::new(Observed {
                    task,
                    inner: Box::new(TwoPhaseSink::new(task, Arc::clone(&f), Arc::clone(&c))),
                    seen: Arc::clone(&s),
                    fail_at: None,
                }),
            }
        });
        let (group, outbox) = TaskGroup::standalone(
            JOB,
            GroupSpec {
                tasks: 4,
                edges: vec![(TaskId(0), COUNTER), (TaskId(1), COUNTER), (COUNTER, SINK)],
                task_config: TaskConfig::default(),
                operators,
            },
            JobOptions {
                check_invariants: true,
                legacy_first_barrier_channel_state: legacy,
                ..JobOptions::default()
            },
            Arc::clone(&fs),
        )
        .unwrap();
        Rig {
            fs,
            gates,
            seen,
            committed,
            group,
            outbox,
        }
    }

    fn open(&self, source: usize, below: u64) {
        self.gates[source].store(below, Ordering::SeqCst);
    }

    async fn until(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let t = tokio::time::Instant::now();
        while !cond(&seen(&self.seen)) {
            assert!(t.elapsed() < WAIT, "gave up waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Waits for the acknowledgement of `checkpoint` by every task's
    /// `attempt`; returns the handles in task order. Any other message
    /// (a decline, a failure) fails the test.
    async fn acks(&mut self, checkpoint: CheckpointId, attempt: AttemptNo) -> Vec<StateHandle> {
        let mut handles = BTreeMap::new();
        while handles.len() < 4 {
            let msg = tokio::time::timeout(WAIT, self.outbox.recv())
                .await
                .expect("an ack in time")
                .expect("the group is alive");
            match msg {
                Outbound::Coordinator(CoordinatorEvent::Acknowledge {
                    task,
                    attempt: a,
                    checkpoint: c,
                    state: Some(handle),
                    ..
                }) if c == checkpoint && a == attempt => {
                    handles.insert(task, handle);
                }
                other => panic!("expected acks of {checkpoint}, got {other:?}"),
            }
        }
        handles.into_values().collect()
    }

    fn trigger(&self, task: u32, checkpoint: CheckpointId, attempt: AttemptNo) {
        self.group.deliver(
            TaskId(task),
            attempt,
            TaskEvent::TriggerCheckpoint { checkpoint },
        );
    }

    fn notify_complete(&self, checkpoint: CheckpointId, attempt: AttemptNo) {
        for t in 0..4 {
            self.group
                .deliver(TaskId(t), attempt, TaskEvent::NotifyComplete { checkpoint });
        }
    }
}

fn processed(s: &Seen, task: TaskId) -> &[u64] {
    s.processed.get(&task).map_or(&[], Vec::as_slice)
}

/// What one run found: the counter's channel state in checkpoint 1 and the
/// verdict on the committed output.
struct Run {
    channel: Vec<u64>,
    output: Result<u64, OutputError>,
    /// Records the sink committed, over both attempts.
    committed: u64,
    late_channel_records: u64,
}

/// The scripted run (see the module docs); `legacy` turns the legacy
/// writer on.
async fn scripted(legacy: bool) -> Run {
    let cp1 = CheckpointId(1);
    let cp2 = CheckpointId(2);
    let (a0, a1) = (AttemptNo(0), AttemptNo(1));
    // The counter fails at record 50, after checkpoint 1 completed.
    let mut rig = Rig::new(legacy, 50);
    rig.group.start(|_| a0, None).unwrap();
    // Before the checkpoint: ids 0..20 of both sources, all processed.
    rig.open(0, 20);
    rig.open(1, 20);
    rig.until("ids 0..20 at the counter", |s| {
        processed(s, COUNTER).len() == 20
    })
    .await;
    // Checkpoint 1 reaches the counter on input 0 only: its snapshot.
    rig.trigger(0, cp1, a0);
    rig.until("the counter's snapshot of 1", |s| {
        s.snapshots.get(&COUNTER).is_some_and(|v| v.contains(&cp1))
    })
    .await;
    // Input 1 delivers the odd ids 21..39 before its barrier: in flight.
    rig.open(1, 40);
    // Input 0 delivers the even ids 20..38 after its barrier: not in flight.
    rig.open(0, 40);
    rig.until("ids 20..40 at the counter", |s| {
        processed(s, COUNTER).len() == 40
    })
    .await;
    // Now input 1's barrier.
    rig.trigger(1, cp1, a0);
    let handles = rig.acks(cp1, a0).await;
    rig.notify_complete(cp1, a0);
    rig.until("the sink committed 1", |s| {
        s.completed.get(&SINK).is_some_and(|v| v.contains(&cp1))
    })
    .await;
    // The counter's state file: its channel state of checkpoint 1.
    let counter_handle = handles[COUNTER.0 as usize];
    let snap = decode_for(
        cp1,
        counter_handle,
        &read_state(&*rig.fs, counter_handle).unwrap(),
    )
    .unwrap();
    let channel = snap.channel.iter().map(|r| r.id).collect();
    // More records; the counter fails at 50 (a genuine failure).
    rig.open(0, 60);
    rig.open(1, 60);
    let failed = tokio::time::timeout(WAIT, rig.outbox.recv())
        .await
        .expect("the failure in time");
    assert_eq!(failed, Some(Outbound::Failed(COUNTER, a0)));
    // The failover a coordinator does: stop every attempt, restore the
    // latest completed checkpoint, start every task under a new attempt.
    rig.group.stop().await;
    seen(&rig.seen).processed.clear();
    rig.group.start(|_| a1, Some((cp1, &handles))).unwrap();
    rig.open(0, TOTAL);
    rig.open(1, TOTAL);
    // Every record of both sources has passed the counter (each input is
    // FIFO: the last id of a source at the sink means all of its ids did).
    rig.until("the last ids at the sink", |s| {
        let p = processed(s, SINK);
        p.contains(&(TOTAL - 2)) && p.contains(&(TOTAL - 1))
    })
    .await;
    rig.trigger(0, cp2, a1);
    rig.trigger(1, cp2, a1);
    rig.acks(cp2, a1).await;
    rig.notify_complete(cp2, a1);
    rig.until("the sink committed 2", |s| {
        s.completed.get(&SINK).is_some_and(|v| v.contains(&cp2))
    })
    .await;
    let stats = rig.group.stats();
    assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    assert_eq!(stats.genuine_failures, 1, "{stats:?}");
    assert_eq!(stats.spurious_failures, 0, "{stats:?}");
    rig.group.stop().await;
    let output = verify_output_of(&*rig.fs, TOTAL, SOURCES, true).map(|r| r.records);
    Run {
        channel,
        output,
        committed: rig.committed.load(Ordering::Relaxed),
        late_channel_records: stats.late_channel_records,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The odd ids 21..39: what input 1 delivered between the checkpoint's
/// first barrier (on input 0) and its own.
fn in_flight_on_input_1() -> Vec<u64> {
    (21..40).step_by(2).collect()
}

#[test]
fn a_record_in_flight_on_the_second_input_is_restored_exactly_once() {
    let run = runtime().block_on(scripted(false));
    // Exactly the records of input 1 between the barriers: none of input
    // 0's after its barrier, none processed before the snapshot.
    assert_eq!(run.channel, in_flight_on_input_1());
    assert_eq!(run.late_channel_records, 10);
    // After the failover every record is committed once.
    assert_eq!(run.output, Ok(TOTAL));
    assert_eq!(run.committed, TOTAL);
}

#[test]
fn the_legacy_writer_loses_them_and_the_output_check_says_so() {
    let run = runtime().block_on(scripted(true));
    // The channel state was taken at the first barrier: nothing of input 1.
    assert!(run.channel.is_empty(), "{:?}", run.channel);
    assert_eq!(run.late_channel_records, 0);
    // Source 1 was restored past them and the counter's snapshot had not
    // counted them: they are gone, and the check names the first.
    assert_eq!(
        run.output,
        Err(OutputError::Gap {
            first: 21,
            next: 41
        })
    );
    assert_eq!(run.committed, TOTAL - 10);
}

/// The whole in-process `Job` with two numbered sources (fan-in into the
/// counter): it starts, checkpoints, and commits every record once.
#[test]
fn a_job_with_two_sources_commits_every_record_once() {
    runtime().block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
        let committed = Arc::new(AtomicU64::new(0));
        let records = 20_000;
        let cfg = PipelineConfig {
            records,
            sources: SOURCES,
            keys: 7,
            interval_ms: 10,
            rate_per_sec: 10_000,
            options: JobOptions {
                check_invariants: true,
                ..JobOptions::default()
            },
            ..PipelineConfig::default()
        };
        let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
        assert_eq!(spec.tasks, 4);
        let job = Job::start(spec, Arc::clone(&fs)).await.unwrap();
        let t = tokio::time::Instant::now();
        while committed.load(Ordering::Relaxed) < records {
            assert!(t.elapsed() < WAIT * 2, "committed {committed:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let stats = job.shutdown(JobStatus::Finished).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
        assert!(stats.completed > 0, "{stats:?}");
        assert_eq!(
            verify_output_of(&*fs, records, SOURCES, true).map(|r| r.records),
            Ok(records)
        );
    });
}

/// The topologies the host runs: a task may read from several tasks, but
/// an edge twice, a cycle, a self-loop or a task out of range is refused.
#[test]
fn fan_in_is_accepted_and_cycles_and_repeated_edges_are_refused() {
    let e = |a: u32, b: u32| (TaskId(a), TaskId(b));
    assert_eq!(
        inputs_of(4, &[e(0, 2), e(1, 2), e(2, 3)]).unwrap(),
        vec![vec![], vec![], vec![TaskId(0), TaskId(1)], vec![TaskId(2)]]
    );
    for bad in [
        vec![e(0, 1), e(0, 1)],
        vec![e(0, 1), e(1, 2), e(2, 1)],
        vec![e(1, 2), e(2, 1)],
        vec![e(2, 2)],
        vec![e(0, 4)],
    ] {
        assert!(
            matches!(inputs_of(4, &bad), Err(JobError::Topology(_))),
            "{bad:?} was accepted"
        );
    }
}
