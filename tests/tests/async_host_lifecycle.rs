//! The async host's lifecycle and counters, pinned against its own trace:
//! every event the host counts is one it recorded, every attempt's reducer
//! is closed when the job stops or fails over, dropping the handle stops the
//! coordinator, and the simulated I/O latency delays every state write.
//!
//! These run on a real (current-thread) tokio runtime with an in-memory file
//! system; no assertion is on wall-clock speed, only on the order and the
//! timestamps the host recorded.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::coordinator::JobStatus;
use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::pipeline::{pipeline_spec, PipelineConfig};
use ckpt_core::host::runtime::{Job, JobHandle, JobOptions};
use ckpt_core::task::TaskEvent;
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{CheckpointId, Millis, TaskId};
use ckpt_tests::host::{open_store, FaultyFs};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A short, rate-limited pipeline with invariants checked and a trace.
fn config(records: u64, io_latency_ms: u64) -> PipelineConfig {
    PipelineConfig {
        records,
        sources: 1,
        keys: 4,
        interval_ms: 20,
        timeout_ms: 5_000,
        retained: 2,
        rate_per_sec: 20_000,
        options: JobOptions {
            check_invariants: true,
            record_trace: true,
            io_latency_ms,
            ..JobOptions::default()
        },
    }
}

/// Starts the pipeline `cfg` describes on `fs`, nobody watching how many
/// records its sink committed.
async fn start(cfg: &PipelineConfig, fs: &Arc<dyn Fs>) -> JobHandle {
    Job::start(
        pipeline_spec(cfg, Arc::clone(fs), Arc::new(AtomicU64::new(0))),
        Arc::clone(fs),
    )
    .await
    .expect("job starts")
}

/// Task events recorded per trace key (task attempt), in order.
fn task_lines(trace: &Trace) -> BTreeMap<TaskId, Vec<(Millis, TaskEvent)>> {
    let mut out: BTreeMap<TaskId, Vec<(Millis, TaskEvent)>> = BTreeMap::new();
    for line in &trace.steps {
        if let TraceLine::Task { now, task, event } = line {
            out.entry(*task).or_default().push((*now, event.clone()));
        }
    }
    out
}

fn coordinator_lines(trace: &Trace) -> usize {
    trace
        .steps
        .iter()
        .filter(|l| matches!(l, TraceLine::Coordinator { .. }))
        .count()
}

/// Runs the pipeline until the sink committed every record, then shuts it
/// down; returns the final counters and the trace.
fn run_to_end(
    cfg: &PipelineConfig,
) -> (
    ckpt_core::host::runtime::HostStats,
    Trace,
    u64, // records committed
) {
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let committed = Arc::new(AtomicU64::new(0));
        let spec = pipeline_spec(cfg, Arc::clone(&fs), Arc::clone(&committed));
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        let live = job.live_stats();
        let mut waited_ms = 0;
        while committed.load(Ordering::Relaxed) < cfg.records && waited_ms < 20_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            waited_ms += 5;
        }
        let stats = job.shutdown(JobStatus::Finished).await;
        (stats, live.trace(), committed.load(Ordering::Relaxed))
    })
}

/// The host counts exactly the events it applies: as many task events and
/// coordinator events as its trace holds lines of each.
#[test]
fn the_event_counters_count_exactly_the_recorded_events() {
    let (stats, trace, committed) = run_to_end(&config(400, 0));
    assert_eq!(committed, 400, "{stats:?}");
    assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    let tasks: usize = task_lines(&trace).values().map(Vec::len).sum();
    assert!(tasks > 0 && stats.completed > 0, "{stats:?}");
    assert_eq!(stats.task_events, u64::try_from(tasks).unwrap());
    assert_eq!(
        stats.coordinator_events,
        u64::try_from(coordinator_lines(&trace)).unwrap()
    );
}

/// Every attempt the host declared is closed (`Close`, its last event) when
/// the job shuts down: no reducer is left open, none is closed twice.
#[test]
fn shutdown_closes_every_attempts_reducer_last() {
    let (stats, trace, _) = run_to_end(&config(300, 0));
    assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    let lines = task_lines(&trace);
    assert_eq!(trace.tasks.len(), 3, "one attempt per task, no failover");
    for (key, _) in &trace.tasks {
        let events = lines.get(key).expect("every declared attempt ran");
        let closes = events
            .iter()
            .filter(|(_, e)| matches!(e, TaskEvent::Close))
            .count();
        assert_eq!(closes, 1, "attempt {key}: {closes} Close events");
        assert!(
            matches!(events.last(), Some((_, TaskEvent::Close))),
            "attempt {key} ends with {:?}",
            events.last()
        );
    }
}

/// With a simulated I/O latency, no task's state write completes sooner
/// than that latency after the task started the checkpoint.
#[test]
fn io_latency_delays_every_state_write() {
    let latency_ms = 30;
    let (stats, trace, committed) = run_to_end(&config(300, latency_ms));
    assert_eq!(committed, 300, "{stats:?}");
    let mut writes = 0;
    for (key, events) in task_lines(&trace) {
        let mut started: BTreeMap<CheckpointId, Millis> = BTreeMap::new();
        for (now, e) in events {
            match e {
                TaskEvent::TriggerCheckpoint { checkpoint }
                | TaskEvent::BarrierReceived { checkpoint, .. } => {
                    started.entry(checkpoint).or_insert(now);
                }
                TaskEvent::AsyncPartCompleted { checkpoint, .. } => {
                    let from = started[&checkpoint];
                    assert!(
                        now.0 >= from.0 + latency_ms,
                        "attempt {key}: checkpoint {checkpoint} written {} ms after it started",
                        now.0 - from.0
                    );
                    writes += 1;
                }
                _ => {}
            }
        }
    }
    assert!(writes >= 3, "only {writes} state writes");
}

/// Dropping the job's handle without a shutdown stops the coordinator: no
/// checkpoint completes afterwards (they were completing before).
#[test]
fn dropping_the_handle_stops_the_coordinator() {
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let cfg = config(u64::MAX, 0);
        let job = start(&cfg, &fs).await;
        let live = job.live_stats();
        let mut completions = job.completions();
        // Bounded: a host that never counts completions fails, not hangs.
        let two = async {
            while *completions.borrow_and_update() < 2 {
                completions.changed().await.expect("the driver runs");
            }
        };
        tokio::time::timeout(Duration::from_secs(20), two)
            .await
            .expect("two checkpoints completed");
        drop(job);
        let at_drop = live.snapshot().completed;
        let events_at_drop = live.trace().steps.len();
        // Ten checkpoint intervals.
        tokio::time::sleep(Duration::from_millis(10 * cfg.interval_ms)).await;
        assert_eq!(live.snapshot().completed, at_drop);
        let coordinator_after = live.trace().steps[events_at_drop..]
            .iter()
            .filter(|l| matches!(l, TraceLine::Coordinator { .. }))
            .count();
        assert_eq!(coordinator_after, 0, "the coordinator ran on");
    });
}

/// The job's handle and its live view show the same trace, and a job that
/// starts over a store reports the store's latest checkpoint at once.
#[test]
fn a_restarted_job_reports_the_stores_latest_and_its_trace_from_either_view() {
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let cfg = config(200, 0);
        let committed = Arc::new(AtomicU64::new(0));
        let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::clone(&committed));
        let job = Job::start(spec, Arc::clone(&fs)).await.expect("job starts");
        let mut waited_ms = 0;
        while committed.load(Ordering::Relaxed) < cfg.records && waited_ms < 20_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            waited_ms += 5;
        }
        let live = job.live_stats();
        assert!(!job.trace().steps.is_empty());
        assert_eq!(job.trace(), live.trace());
        let first = job.shutdown(JobStatus::Finished).await;
        let latest = first.store_latest.expect("a checkpoint was stored");
        let spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::new(AtomicU64::new(0)));
        let again = Job::start(spec, Arc::clone(&fs))
            .await
            .expect("job restarts");
        let s = again.stats();
        assert_eq!(s.restored_at_start, Some(latest));
        assert_eq!(s.store_latest, Some(latest));
        again.shutdown(JobStatus::Finished).await;
    });
}

/// State a task wrote for a checkpoint that was aborted before its ack
/// counted is deleted by the host, not left for the next start's sweep:
/// with every state write slower than the checkpoint timeout, a clean
/// shutdown leaves no orphaned state file.
#[test]
fn state_written_for_an_aborted_checkpoint_is_deleted_not_orphaned() {
    use ckpt_core::host::pipeline::PIPELINE_JOB;
    let rt = runtime();
    let (stats, orphans) = rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut cfg = config(u64::MAX, 20);
        cfg.interval_ms = 5;
        cfg.timeout_ms = 10;
        cfg.options.record_trace = false;
        let job = start(&cfg, &fs).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        let stats = job.shutdown(JobStatus::Canceled).await;
        let (_, rec) = open_store(&fs, PIPELINE_JOB, 2).expect("store");
        (stats, rec.removed_orphans)
    });
    assert!(stats.aborted >= 5, "{stats:?}");
    assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    assert_eq!(orphans, vec![], "{stats:?}");
}

/// The host claims a leader generation on start and writes for it: a job
/// started on the same store while another still runs deposes it. The old
/// job keeps running, but every store write it makes is refused (its id
/// allocations among them), so it completes nothing the new one did not
/// recover, and the new job runs and completes checkpoints as usual.
///
/// On a multi-thread runtime with every wait bounded, and the runtime shut
/// down with a timeout: a broken fence may leave a driver busy for good,
/// which must fail the test, not hang it.
#[test]
fn a_second_job_on_the_store_deposes_the_first_which_can_no_longer_write() {
    use ckpt_core::host::pipeline::{KeyedCounter, PIPELINE_JOB};
    use ckpt_core::host::runtime::Operator;
    use tokio::time::timeout;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let spec = || {
        let mut cfg = config(u64::MAX, 0);
        cfg.options.record_trace = false;
        let mut spec = pipeline_spec(&cfg, Arc::clone(&fs), Arc::new(AtomicU64::new(0)));
        // No sink: two jobs' sinks would share one output directory.
        let inner = Arc::clone(&spec.operators);
        spec.operators = Arc::new(move |task: TaskId| -> Box<dyn Operator> {
            if task == TaskId(2) {
                Box::new(KeyedCounter::default())
            } else {
                inner(task)
            }
        });
        spec
    };
    let limit = Duration::from_secs(60);
    let outcome: Result<(), String> = rt.block_on(async {
        let old = Job::start(spec(), Arc::clone(&fs))
            .await
            .map_err(|e| format!("first job: {e}"))?;
        let mut done = old.completions();
        timeout(limit, done.wait_for(|n| *n >= 2))
            .await
            .map_err(|_| "the first job completed nothing".to_string())?
            .map_err(|e| e.to_string())?;
        let new = Job::start(spec(), Arc::clone(&fs))
            .await
            .map_err(|e| format!("second job: {e}"))?;
        let rec = new.recovery().clone();
        if rec.generation.0 != old.recovery().generation.0 + 1 {
            return Err(format!(
                "generations {:?} then {:?}",
                old.recovery().generation,
                rec.generation
            ));
        }
        let recovered_last = rec.last_id.ok_or("no id was handed out")?;
        let mut done = new.completions();
        timeout(limit, done.wait_for(|n| *n >= 3))
            .await
            .map_err(|_| "the second job completed fewer than 3 checkpoints".to_string())?
            .map_err(|e| e.to_string())?;
        // The old job tried to write (its periodic trigger allocates ids).
        timeout(limit, async {
            while old.stats().store.fenced == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .map_err(|_| "the deposed job was never refused a write".to_string())?;
        let old_stats = timeout(limit, old.shutdown(JobStatus::Canceled))
            .await
            .map_err(|_| "the deposed job does not stop".to_string())?;
        let new_stats = timeout(limit, new.shutdown(JobStatus::Finished))
            .await
            .map_err(|_| "the new job does not stop".to_string())?;
        if old_stats.last_completed > Some(recovered_last) {
            return Err(format!(
                "the deposed job completed {:?} after the new one recovered up to {recovered_last}",
                old_stats.last_completed
            ));
        }
        if !new_stats.violations.is_empty() {
            return Err(format!("{:?}", new_stats.violations));
        }
        if new_stats.last_completed <= Some(recovered_last) {
            return Err(format!("the new job completed nothing: {new_stats:?}"));
        }
        // What the store holds is the new job's.
        let (_, after) = open_store(&fs, PIPELINE_JOB, 2).map_err(|e| e.to_string())?;
        if after.latest().map(|c| c.checkpoint) != new_stats.last_completed {
            return Err(format!(
                "the store's latest is {:?}, the new job's {:?}",
                after.latest(),
                new_stats.last_completed
            ));
        }
        Ok(())
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(why) = outcome {
        panic!("{why}");
    }
}

/// A job restarted with a lower `retained_max` than its store was written
/// with recovers every stored checkpoint and keeps them until the next
/// completion evicts down to the new bound; the state of the evicted ones
/// is deleted then, not left for the next start's sweep, and nothing is
/// reported as a violation.
#[test]
fn a_restart_with_fewer_retained_checkpoints_recovers_and_evicts_at_the_next_commit() {
    use ckpt_core::host::pipeline::PIPELINE_JOB;
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut cfg = config(u64::MAX, 0);
        cfg.options.record_trace = false;
        cfg.retained = 3;
        let job = start(&cfg, &fs).await;
        let mut done = job.completions();
        done.wait_for(|n| *n >= 4).await.expect("completions");
        let first = job.shutdown(JobStatus::Finished).await;
        assert!(first.violations.is_empty(), "{:?}", first.violations);

        cfg.retained = 1;
        let job = Job::start(
            pipeline_spec(&cfg, Arc::clone(&fs), Arc::new(AtomicU64::new(0))),
            Arc::clone(&fs),
        )
        .await
        .expect("a store written with 3 retained opens with 1");
        let rec = job.recovery().clone();
        assert_eq!(rec.checkpoints.len(), 3, "{rec:?}");
        let held: Vec<CheckpointId> = rec.checkpoints.iter().map(|c| c.checkpoint).collect();
        assert_eq!(job.stats().restored_at_start, held.last().copied());
        let mut done = job.completions();
        done.wait_for(|n| *n >= 1).await.expect("a completion");
        let stats = job.shutdown(JobStatus::Finished).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
        assert_eq!(stats.store.guard_refusals, 0);
        let (_, after) = open_store(&fs, PIPELINE_JOB, 1).expect("store");
        assert_eq!(after.checkpoints.len(), 1, "{after:?}");
        assert!(
            after
                .checkpoints
                .iter()
                .all(|c| !held.contains(&c.checkpoint)),
            "{after:?}"
        );
        assert_eq!(
            after.removed_orphans,
            vec![],
            "evicted state was left behind"
        );
    });
}

/// A savepoint stays through later checkpoints (it does not count towards
/// `retained_max`) until the user disposes of it through the job: the store
/// removes it first, then the coordinator forgets it; nothing is reported
/// as a violation, and a restart recovers without it.
#[test]
fn a_savepoint_stays_until_disposed_of_through_the_job() {
    use ckpt_core::coordinator::TriggerKind;
    use ckpt_core::host::pipeline::PIPELINE_JOB;
    use ckpt_core::host::runtime::JobError;
    use ckpt_core::host::store::{state_path, FileStore, StoreError};
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut cfg = config(u64::MAX, 0);
        cfg.options.record_trace = false;
        cfg.retained = 1;
        let job = start(&cfg, &fs).await;
        let mut done = job.completions();
        done.wait_for(|n| *n >= 1).await.expect("a completion");
        job.trigger(TriggerKind::Savepoint {
            target: "sp".into(),
        })
        .expect("trigger");
        // Read-only: the running job stays the leader.
        let stored = |fs: &Arc<dyn Fs>| {
            FileStore::inspect(&**fs, PIPELINE_JOB, None, None)
                .expect("inspect")
                .checkpoints
        };
        let savepoint = loop {
            if let Some(sp) = stored(&fs).into_iter().find(|c| c.savepoint) {
                break sp;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        // Three more checkpoints: with one retained, a savepoint counted
        // towards retention would be gone.
        let now = *done.borrow();
        done.wait_for(|n| *n >= now + 3).await.expect("completions");
        let held = stored(&fs);
        assert!(held.contains(&savepoint), "{held:?}");
        assert_eq!(held.iter().filter(|c| !c.savepoint).count(), 1, "{held:?}");
        for h in &savepoint.handles {
            assert!(fs.exists(&state_path(*h)));
        }
        // Not a savepoint: refused, nothing changed.
        let checkpoint = held
            .iter()
            .find(|c| !c.savepoint)
            .expect("a checkpoint")
            .checkpoint;
        assert!(matches!(
            job.dispose_savepoint(checkpoint).await,
            Err(JobError::Store(StoreError::NotASavepoint(_)))
        ));
        let deleted = job
            .dispose_savepoint(savepoint.checkpoint)
            .await
            .expect("disposed of");
        assert_eq!(deleted, savepoint.handles);
        for h in &savepoint.handles {
            assert!(!fs.exists(&state_path(*h)));
        }
        let now = *done.borrow();
        done.wait_for(|n| *n > now).await.expect("the job goes on");
        let stats = job.shutdown(JobStatus::Finished).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
        assert_eq!(stats.store.guard_refusals, 0);
        let (_, rec) = open_store(&fs, PIPELINE_JOB, 1).expect("store");
        assert!(rec.checkpoints.iter().all(|c| !c.savepoint), "{rec:?}");
        assert!(rec.removed_orphans.is_empty(), "{rec:?}");
    });
}

/// A full coordinator inbox refuses a user's trigger as
/// `JobError::InboxFull` (the request is not made; the job runs on), not
/// as a stopped job; once the driver has drained its inbox a trigger is
/// taken again.
#[test]
fn a_full_inbox_refuses_a_trigger_and_the_job_runs_on() {
    use ckpt_core::coordinator::TriggerKind;
    use ckpt_core::host::runtime::{JobError, COORDINATOR_INBOX_MAX};
    let rt = runtime();
    rt.block_on(async {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut cfg = config(u64::MAX, 0);
        cfg.options.record_trace = false;
        cfg.options.check_invariants = false;
        let job = start(&cfg, &fs).await;
        let mut done = job.completions();
        done.wait_for(|n| *n >= 1).await.expect("a completion");
        // One thread, and no await in this loop: the coordinator's driver
        // cannot take anything from its inbox until the loop ends.
        let mut sent = 0_usize;
        let refused = loop {
            match job.trigger(TriggerKind::Checkpoint { forced: false }) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent <= COORDINATOR_INBOX_MAX, "the inbox took {sent}");
        };
        assert!(matches!(refused, JobError::InboxFull), "{refused:?}");
        assert!(sent > 0);
        // The job runs on: it drains its inbox and completes checkpoints.
        let now = *done.borrow();
        done.wait_for(|n| *n > now).await.expect("the job goes on");
        let mut waited_ms = 0;
        while job
            .trigger(TriggerKind::Checkpoint { forced: false })
            .is_err()
        {
            assert!(waited_ms < 20_000, "the inbox never drained");
            tokio::time::sleep(Duration::from_millis(5)).await;
            waited_ms += 5;
        }
        let stats = job.shutdown(JobStatus::Finished).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    });
}

/// Waits (at most 20 s) until `done` holds for the job's counters; whether
/// it did.
async fn wait_until(
    job: &JobHandle,
    done: impl Fn(&ckpt_core::host::runtime::HostStats) -> bool,
) -> bool {
    for _ in 0..4_000 {
        if done(&job.stats()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done(&job.stats())
}

/// A commit whose directory sync fails has an unknown outcome. The host
/// answers the coordinator nothing (a failure would make it drop the
/// checkpoint, and its next failover would restore an older one than the
/// store holds) and halts as after a crash, with no violation; the next
/// start recovers that checkpoint from the store.
#[test]
fn a_commit_with_an_unknown_outcome_halts_the_job_and_the_next_start_recovers_it() {
    let rt = runtime();
    rt.block_on(async {
        let faulty = Arc::new(FaultyFs::failing_syncs_after_renames_to(".meta"));
        let fs: Arc<dyn Fs> = faulty.clone();
        let cfg = config(u64::MAX, 0);
        let job = start(&cfg, &fs).await;
        assert!(
            wait_until(&job, |s| s.completed > 0).await,
            "no checkpoint completed"
        );
        faulty.fail_syncs(true);
        wait_until(&job, |s| s.halted.is_some()).await;
        let s = job.stats();
        let why = s.halted.clone().expect("the job halted");
        assert!(why.contains("unknown outcome"), "{why}");
        assert!(s.violations.is_empty(), "{:?}", s.violations);
        assert_eq!(s.store_disagreements, 0);
        // The store holds the commit the coordinator never heard of.
        let held = s.store_latest.expect("the store holds a checkpoint");
        assert!(s.last_completed < Some(held), "{s:?}");
        let after = job.shutdown(JobStatus::Finished).await;
        assert_eq!(after.store_latest, Some(held));
        faulty.fail_syncs(false);
        let again = start(&cfg, &fs).await;
        assert_eq!(again.stats().restored_at_start, Some(held));
        assert!(again.stats().violations.is_empty());
        again.shutdown(JobStatus::Finished).await;
    });
}

/// Evictions that fail after their commits (no checkpoint metadata can be
/// removed) leave those checkpoints held by the store while the
/// coordinator lets go of them: the store's guard defers the
/// coordinator's deletes of their state, and the host does not report that
/// as a broken rule. The job runs on, every later commit answered as
/// stored, and the store holds more than it retains.
#[test]
fn a_failed_eviction_defers_the_state_deletes_without_a_violation() {
    use ckpt_core::host::store::CHECKPOINT_DIR;
    let rt = runtime();
    rt.block_on(async {
        let faulty = Arc::new(FaultyFs::failing_removes_under(&format!(
            "{CHECKPOINT_DIR}/chk-"
        )));
        faulty.fail_removes(false);
        let fs: Arc<dyn Fs> = faulty.clone();
        let cfg = config(u64::MAX, 0);
        let job = start(&cfg, &fs).await;
        wait_until(&job, |s| s.completed > 0).await;
        faulty.fail_removes(true);
        let first = job.stats().completed;
        wait_until(&job, |s| s.completed >= first + 4).await;
        let s = job.shutdown(JobStatus::Finished).await;
        assert!(s.completed >= first + 4, "{s:?}");
        assert!(s.violations.is_empty(), "{:?}", s.violations);
        assert!(
            s.store.guard_refusals > 0,
            "the guard deferred nothing: {s:?}"
        );
        let metas = fs
            .list(CHECKPOINT_DIR)
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".meta"))
            .count();
        assert!(
            metas > usize::try_from(cfg.retained).unwrap(),
            "{metas} metadata files"
        );
    });
}
