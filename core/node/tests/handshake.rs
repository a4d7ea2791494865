//! The protocol's handshake and fencing over real loopback connections,
//! each side against a scripted peer: a task manager refuses a coordinator
//! of an older generation (in `Welcome` and in any later message) and
//! reconnects; a coordinator refuses another job, a stale attempt, and
//! steps down when it meets a task manager that served a newer leader, or
//! when a newer leader claims its store.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::coordinator::{CoordinatorEvent, CoordinatorSettings};
use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::pipeline::{pipeline_spec, PipelineConfig, PIPELINE_JOB};
use ckpt_core::host::runtime::{GroupSpec, JobOptions};
use ckpt_core::host::store::{OpenOptions, StoreError};
use ckpt_core::task::TaskMessage;
use ckpt_core::{AttemptNo, CheckpointId, Generation, JobId, Millis, StateHandle, TaskId};
use ckpt_node::coordinator::{self, CoordinatorConfig, CoordinatorError};
use ckpt_node::manager::{self, Backoff, ManagerConfig};
use ckpt_node::objstore::{self, LogEntry, LOG_DIR};
use ckpt_node::wire::{self, Reader, Refusal, ToCoordinatorMsg, ToManagerMsg, Writer};
use ckpt_node::{ObjFs, ObjStore};
use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::ObjectStore;
use tokio::net::{TcpListener, TcpStream};

mod wrapped;
use wrapped::{FailReads, LoseAnswers, Wrapped};

/// Bounds every scripted exchange (a hang fails the test).
const STEP: Duration = Duration::from_secs(20);

async fn accept(listener: &TcpListener) -> (Reader, Writer) {
    let (s, _) = tokio::time::timeout(STEP, listener.accept())
        .await
        .expect("a connection in time")
        .unwrap();
    wire::split(s).unwrap()
}

async fn recv<M: serde::de::DeserializeOwned>(r: &mut Reader) -> Result<M, wire::WireError> {
    tokio::time::timeout(STEP, r.recv::<M>())
        .await
        .expect("a message in time")
}

/// A task manager whose state files are objects (`ObjFs` over memory) and
/// whose sink writes to a file system of its own.
fn manager_config(addr: std::net::SocketAddr) -> ManagerConfig {
    let sink_fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let spec = pipeline_spec(
        &PipelineConfig {
            records: 10,
            ..PipelineConfig::default()
        },
        sink_fs,
        Arc::new(AtomicU64::new(0)),
    );
    ManagerConfig {
        job: PIPELINE_JOB,
        coordinator: addr,
        spec: GroupSpec {
            tasks: spec.tasks,
            edges: spec.edges,
            task_config: spec.task_config,
            operators: spec.operators,
        },
        options: JobOptions::default(),
        state_fs: Arc::new(ObjFs::new(Arc::new(InMemory::new()))),
        backoff: Backoff {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(50),
            give_up_after: Some(STEP),
        },
        complete: Arc::new(|| false),
    }
}

/// Accepts a connection, expects `Hello` with `seen` as the task manager's
/// newest generation, and answers `Welcome { generation }`.
async fn welcome(
    listener: &TcpListener,
    seen: Option<Generation>,
    generation: Generation,
) -> (Reader, Writer) {
    let (mut r, mut w) = accept(listener).await;
    match recv::<ToCoordinatorMsg>(&mut r).await.unwrap() {
        ToCoordinatorMsg::Hello {
            job,
            tasks,
            generation: g,
            running: _,
        } => {
            assert_eq!((job, tasks, g), (PIPELINE_JOB, 3, seen));
        }
        other => panic!("expected Hello, got {other:?}"),
    }
    w.send(&ToManagerMsg::Welcome {
        job: PIPELINE_JOB,
        generation,
    })
    .await
    .unwrap();
    (r, w)
}

async fn expect_ready(r: &mut Reader) {
    match recv::<ToCoordinatorMsg>(r).await.unwrap() {
        ToCoordinatorMsg::Ready { committed: None } => {}
        other => panic!("expected Ready, got {other:?}"),
    }
}

/// Reads until the peer closes the connection.
async fn expect_closed(r: &mut Reader) {
    loop {
        match recv::<ToCoordinatorMsg>(r).await {
            Err(_) => return,
            Ok(ToCoordinatorMsg::Rpc { .. } | ToCoordinatorMsg::Failed { .. }) => {}
            Ok(other) => panic!("expected the connection to close, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_refuses_a_coordinator_of_an_older_generation_and_reconnects() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let tm = tokio::spawn(manager::run(manager_config(addr)));
    // Generation 2 is served first.
    let (mut r, w) = welcome(&listener, None, Generation(2)).await;
    expect_ready(&mut r).await;
    drop((r, w));
    // A deposed leader (generation 1) is refused in the handshake.
    let (mut r, _w) = welcome(&listener, Some(Generation(2)), Generation(1)).await;
    expect_closed(&mut r).await;
    // Generation 2 again: accepted, then a message naming generation 1 is
    // refused and the connection closed.
    let (mut r, mut w) = welcome(&listener, Some(Generation(2)), Generation(2)).await;
    expect_ready(&mut r).await;
    w.send(&ToManagerMsg::Rpc {
        generation: Generation(1),
        task: TaskId(0),
        attempt: AttemptNo(0),
        message: TaskMessage::NotifyComplete {
            checkpoint: CheckpointId(1),
            timestamp: Millis(0),
        },
    })
    .await
    .unwrap();
    expect_closed(&mut r).await;
    // And the job ends under generation 2.
    let (mut r, mut w) = welcome(&listener, Some(Generation(2)), Generation(2)).await;
    expect_ready(&mut r).await;
    w.send(&ToManagerMsg::Stop {
        generation: Generation(2),
    })
    .await
    .unwrap();
    let report = tokio::time::timeout(STEP, tm)
        .await
        .expect("the task manager ends")
        .unwrap()
        .expect("stopped by the coordinator");
    assert_eq!(report.generation, Some(Generation(2)));
    assert_eq!(report.refusals, 2);
}

/// Opens the store as leader `generation` of `job`, retaining one
/// checkpoint, with no committed output and no state check.
async fn open_leader(
    objects: Arc<dyn ObjectStore>,
    job: JobId,
    generation: Generation,
) -> Result<(ObjStore, ckpt_core::host::store::Recovery), StoreError> {
    ObjStore::open(
        objects,
        OpenOptions {
            job,
            retained_max: 1,
            generation,
            committed: None,
            check_state: None,
        },
    )
    .await
}

/// A coordinator of `job`'s 3 tasks with a 20 ms checkpoint interval and
/// its invariants checked, on `objects`, serving `listener`.
fn spawn_fast_coordinator(
    job: JobId,
    objects: Arc<dyn ObjectStore>,
    listener: TcpListener,
) -> tokio::task::JoinHandle<Result<coordinator::CoordinatorReport, CoordinatorError>> {
    spawn_coordinator(job, objects, listener, 20)
}

/// A coordinator of `job`'s 3 tasks checkpointing every `interval_ms`,
/// with its invariants checked, on `objects`, serving `listener`.
fn spawn_coordinator(
    job: JobId,
    objects: Arc<dyn ObjectStore>,
    listener: TcpListener,
    interval_ms: i64,
) -> tokio::task::JoinHandle<Result<coordinator::CoordinatorReport, CoordinatorError>> {
    let mut s = settings(job);
    s.interval_ms = interval_ms;
    tokio::spawn(coordinator::run(
        CoordinatorConfig {
            settings: s,
            tasks: 3,
            check_invariants: true,
        },
        objects,
        listener,
    ))
}

/// Connects to the coordinator at `addr` as a task manager of `job` that
/// served `seen` last, and expects `Welcome` under generation 1.
async fn connect_welcomed(
    addr: std::net::SocketAddr,
    job: JobId,
    seen: Option<Generation>,
) -> (Reader, Writer) {
    let (mut r, mut w) = wire::split(TcpStream::connect(addr).await.unwrap()).unwrap();
    w.send(&ToCoordinatorMsg::Hello {
        job,
        tasks: 3,
        generation: seen,
        running: Vec::new(),
    })
    .await
    .unwrap();
    assert_eq!(
        recv::<ToManagerMsg>(&mut r).await.unwrap(),
        ToManagerMsg::Welcome {
            job,
            generation: Generation(1)
        }
    );
    (r, w)
}

/// Says `Ready` with nothing committed and expects generation 1's first
/// `Deploy`, restoring nothing.
async fn ready_for_the_first_deploy(r: &mut Reader, w: &mut Writer) {
    w.send(&ToCoordinatorMsg::Ready { committed: None })
        .await
        .unwrap();
    match recv::<ToManagerMsg>(r).await.unwrap() {
        ToManagerMsg::Deploy {
            generation: Generation(1),
            restore: None,
            ..
        } => {}
        other => panic!("expected the first Deploy, got {other:?}"),
    }
}

fn settings(job: JobId) -> CoordinatorSettings {
    CoordinatorSettings::with_tasks(job, 3)
}

async fn hello(
    addr: std::net::SocketAddr,
    job: JobId,
    generation: Option<Generation>,
    running: Vec<(TaskId, AttemptNo)>,
) -> ToManagerMsg {
    let (mut r, mut w) = wire::split(TcpStream::connect(addr).await.unwrap()).unwrap();
    w.send(&ToCoordinatorMsg::Hello {
        job,
        tasks: 3,
        generation,
        running,
    })
    .await
    .unwrap();
    recv::<ToManagerMsg>(&mut r).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_refuses_another_job_and_stale_attempts_and_steps_down_before_a_newer_leader()
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let job = JobId(5);
    let c = tokio::spawn(coordinator::run(
        CoordinatorConfig {
            settings: settings(job),
            tasks: 3,
            check_invariants: true,
        },
        Arc::new(InMemory::new()),
        listener,
    ));
    assert_eq!(
        hello(addr, JobId(6), None, Vec::new()).await,
        ToManagerMsg::Refused(Refusal::WrongJob {
            expected: job,
            got: JobId(6)
        })
    );
    // Attempts under this coordinator's own generation that it does not
    // run (it has deployed nothing).
    assert_eq!(
        hello(
            addr,
            job,
            Some(Generation(1)),
            vec![(TaskId(1), AttemptNo(0))]
        )
        .await,
        ToManagerMsg::Refused(Refusal::StaleAttempt {
            task: TaskId(1),
            attempt: AttemptNo(0),
            generation: Generation(1)
        })
    );
    // A task manager that served generation 4: this leader (1) is deposed.
    assert_eq!(
        hello(addr, job, Some(Generation(4)), Vec::new()).await,
        ToManagerMsg::Refused(Refusal::StaleGeneration {
            got: Generation(1),
            newest: Generation(4)
        })
    );
    let ended = tokio::time::timeout(STEP, c)
        .await
        .expect("it steps down")
        .unwrap();
    match ended {
        Err(CoordinatorError::Deposed(Refusal::StaleGeneration { got, newest })) => {
            assert_eq!((got, newest), (Generation(1), Generation(4)));
        }
        other => panic!("expected Deposed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_whose_store_a_newer_leader_claimed_commits_nothing_more_and_stops() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let job = JobId(5);
    let objects: Arc<InMemory> = Arc::new(InMemory::new());
    let c = spawn_fast_coordinator(job, Arc::clone(&objects) as Arc<dyn ObjectStore>, listener);
    // A scripted task manager: handshake, Ready, the Deploy.
    let (mut r, mut w) = connect_welcomed(addr, job, None).await;
    ready_for_the_first_deploy(&mut r, &mut w).await;
    // A new leader claims generation 2 in the same store.
    let (_new, _) = open_leader(
        Arc::clone(&objects) as Arc<dyn ObjectStore>,
        job,
        Generation(2),
    )
    .await
    .unwrap();
    // The old leader's next id allocation (its periodic trigger) is
    // refused by the log, and it stops.
    let ended = tokio::time::timeout(STEP, c)
        .await
        .expect("it stops")
        .unwrap();
    match ended {
        Err(CoordinatorError::Fenced(StoreError::StaleGeneration { .. })) => {}
        other => panic!("expected Fenced, got {other:?}"),
    }
    // Its connection is closed (RPCs it sent before the claim may come
    // first).
    loop {
        match recv::<ToManagerMsg>(&mut r).await {
            Err(_) => break,
            Ok(ToManagerMsg::Rpc { generation, .. }) => assert_eq!(generation, Generation(1)),
            Ok(other) => panic!("unexpected {other:?}"),
        }
    }
    // And the log holds nothing of generation 1 after generation 2's claim.
    let mut names: Vec<object_store::path::Path> = objects
        .list(Some(&object_store::path::Path::from(LOG_DIR)))
        .map(|m| m.unwrap().location)
        .collect()
        .await;
    names.sort();
    let mut claimed = false;
    for name in names {
        let bytes = objects.get(&name).await.unwrap().bytes().await.unwrap();
        let entry: LogEntry = serde_json::from_slice(&bytes).unwrap();
        let generation = match &entry {
            LogEntry::Claim { generation, .. }
            | LogEntry::Ids { generation, .. }
            | LogEntry::Commit { generation, .. }
            | LogEntry::Dispose { generation, .. }
            | LogEntry::Quarantine { generation, .. } => *generation,
        };
        claimed |= generation == Generation(2);
        assert!(
            !(claimed && generation == Generation(1)),
            "a deposed leader's entry landed after the claim: {entry:?}"
        );
    }
    assert!(claimed);
}

/// A commit whose log append landed but whose answer was lost is neither
/// stored nor failed to the coordinator: it answers nothing, halts as if
/// killed (`CoordinatorError::Halted`, the task manager's connection
/// closed), and the next leader recovers that checkpoint from the store.
/// Answered as a failure, the coordinator would drop a checkpoint the store
/// holds and restore an older one at its next failover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_whose_commit_answer_is_lost_halts_and_the_next_leader_recovers_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let lost = Arc::new(Wrapped::<LoseAnswers>::default());
    lost.hooks.lose_answers(true);
    let objects: Arc<dyn ObjectStore> = Arc::clone(&lost) as Arc<dyn ObjectStore>;
    let c = spawn_fast_coordinator(PIPELINE_JOB, Arc::clone(&objects), listener);
    // The task manager's state objects in the same store, as deployed.
    let mut m = manager_config(addr);
    m.state_fs = Arc::new(ObjFs::new(Arc::clone(&objects)));
    let tm = tokio::spawn(manager::run(m));
    let ended = tokio::time::timeout(STEP, c)
        .await
        .expect("it halts")
        .unwrap();
    let committed = match ended {
        Err(CoordinatorError::Halted(StoreError::OutcomeUnknown { checkpoint, .. })) => checkpoint,
        other => panic!("expected Halted, got {other:?}"),
    };
    tm.abort();
    lost.hooks.lose_answers(false);
    let (_, rec) = open_leader(objects, PIPELINE_JOB, Generation(2))
        .await
        .unwrap();
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(committed));
}

/// What a coordinator whose task manager restarted meets in the test below.
#[derive(Clone, Copy, Debug)]
enum WhileAway {
    /// A newer leader claimed the store and committed checkpoint 1.
    NewerLeaderCommitted,
    /// Nothing: no other leader.
    Nothing,
    /// The store's log cannot be read (an error other than "not found").
    LogUnreadable,
}

/// One coordinator (generation 1) deploys to a scripted task manager,
/// which then dies; the coordinator fails over and waits. Meanwhile
/// `away` happens. The task manager restarts (its `Hello` names no
/// generation: it forgot the one it served) and says `Ready` with
/// `committed`. Returns how the coordinator ended and whether it sent a
/// `Deploy` on the second connection.
async fn redeploy_after_restart(
    away: WhileAway,
    committed: Option<CheckpointId>,
) -> (
    Result<coordinator::CoordinatorReport, CoordinatorError>,
    bool,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let job = JobId(5);
    let reads = Arc::new(Wrapped::<FailReads>::default());
    let objects: Arc<dyn ObjectStore> = Arc::clone(&reads) as Arc<dyn ObjectStore>;
    // No periodic checkpoint within the test: the coordinator writes
    // nothing to the store after opening it, so only the redeploy can
    // notice a newer leader.
    let c = spawn_coordinator(job, Arc::clone(&objects), listener, 3_600_000);
    let (mut r, mut w) = connect_welcomed(addr, job, None).await;
    ready_for_the_first_deploy(&mut r, &mut w).await;
    // The task manager dies.
    drop((r, w));
    if let WhileAway::LogUnreadable = away {
        reads.hooks.fail(Some(&format!("{LOG_DIR}/")));
    }
    if let WhileAway::NewerLeaderCommitted = away {
        let (mut store, _) = open_leader(Arc::clone(&objects), job, Generation(2))
            .await
            .unwrap();
        let id = store.allocate_id(Generation(2)).await.unwrap();
        store
            .finalize(Generation(2), id, false, Millis(1), &[])
            .await
            .unwrap();
        store.store(Generation(2), id).await.unwrap();
        assert_eq!(id, CheckpointId(1));
    }
    // Restarted: it remembers no generation.
    let (mut r, mut w) = connect_welcomed(addr, job, None).await;
    w.send(&ToCoordinatorMsg::Ready { committed })
        .await
        .unwrap();
    let mut deployed = false;
    loop {
        match recv::<ToManagerMsg>(&mut r).await {
            Err(_) => break,
            Ok(ToManagerMsg::Deploy { .. }) => deployed = true,
            Ok(_) => {}
        }
    }
    let ended = tokio::time::timeout(STEP, c)
        .await
        .expect("the coordinator stops")
        .unwrap();
    (ended, deployed)
}

/// A task manager that restarted forgets the generation it served, so its
/// `Hello` cannot depose an old leader. Before it deploys a restore again,
/// the coordinator reads the store's log: a newer leader's claim fences it
/// (no `Deploy`: the restore of its old target would delete the sinks'
/// pending transactions of the newer leader's checkpoints, whatever the
/// task manager says it committed); with no newer leader, sinks committed
/// beyond its restore target are refused as on the first `Ready`; a log it
/// cannot read stops it (it cannot tell whether it still leads). It used
/// to deploy in all four cases (recording a violation in two).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_deploys_no_restore_again_behind_a_newer_leader_or_committed_output() {
    for committed in [Some(CheckpointId(1)), None] {
        let (ended, deployed) =
            redeploy_after_restart(WhileAway::NewerLeaderCommitted, committed).await;
        assert!(
            !deployed,
            "committed {committed:?}: deployed a stale restore"
        );
        match ended {
            Err(CoordinatorError::Fenced(StoreError::StaleGeneration { writer, current })) => {
                assert_eq!((writer, current), (Generation(1), Generation(2)));
            }
            other => panic!("committed {committed:?}: expected Fenced, got {other:?}"),
        }
    }
    let (ended, deployed) = redeploy_after_restart(WhileAway::Nothing, Some(CheckpointId(7))).await;
    assert!(!deployed, "deployed a restore behind the committed output");
    match ended {
        Err(CoordinatorError::Store(StoreError::BehindCommitted {
            committed,
            restorable,
            ..
        })) => assert_eq!((committed, restorable), (CheckpointId(7), None)),
        other => panic!("expected BehindCommitted, got {other:?}"),
    }
    let (ended, deployed) = redeploy_after_restart(WhileAway::LogUnreadable, None).await;
    assert!(!deployed, "deployed without checking the log");
    match ended {
        Err(CoordinatorError::Store(StoreError::Io { op: "get", .. })) => {}
        other => panic!("expected the log's read error, got {other:?}"),
    }
}

/// An ack of a failed-over attempt of this generation is applied, not
/// dropped: the reducer ignores it and discards the state it carries, so
/// the driver deletes that state object (dropped, it stayed in the store
/// until the next start's clean-up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_ack_of_a_failed_over_attempt_has_its_state_deleted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let job = JobId(5);
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let c = spawn_fast_coordinator(job, Arc::clone(&objects), listener);
    let (mut r, mut w) = connect_welcomed(addr, job, None).await;
    ready_for_the_first_deploy(&mut r, &mut w).await;
    // The first trigger, to some task's attempt 0.
    let (task, checkpoint) = loop {
        if let ToManagerMsg::Rpc {
            task,
            message: TaskMessage::Trigger { checkpoint, .. },
            ..
        } = recv::<ToManagerMsg>(&mut r).await.unwrap()
        {
            break (task, checkpoint);
        }
    };
    // That attempt fails; the coordinator fails over and deploys attempt 1.
    w.send(&ToCoordinatorMsg::Failed {
        generation: Generation(1),
        task,
        attempt: AttemptNo(0),
    })
    .await
    .unwrap();
    loop {
        if let ToManagerMsg::Deploy { .. } = recv::<ToManagerMsg>(&mut r).await.unwrap() {
            break;
        }
    }
    // Attempt 0's ack arrives late, with the state it wrote.
    let handle = StateHandle(0xfeed);
    objstore::write_state(&*objects, handle, vec![1, 2, 3])
        .await
        .unwrap();
    let path = object_store::path::Path::from(ckpt_core::host::store::state_path(handle));
    w.send(&ToCoordinatorMsg::Rpc {
        generation: Generation(1),
        event: CoordinatorEvent::Acknowledge {
            job,
            task,
            attempt: AttemptNo(0),
            checkpoint,
            state: Some(handle),
        },
    })
    .await
    .unwrap();
    let deleted = tokio::time::timeout(STEP, async {
        while objects.head(&path).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        deleted.is_ok(),
        "the stale ack's state object is still there"
    );
    c.abort();
}
