//! `ObjFs`, ckpt-core's file-system trait over an object store, held to
//! what the other file systems are held to: one contract check that
//! `MemFs`, `StdFs` and `ObjFs` on `InMemory` and on `LocalFileSystem` all
//! pass; its calls from every kind of place a caller can be (outside a
//! runtime, on a current-thread runtime, on a multi-thread runtime's
//! workers and blocking pool), and off the worker as `OffWorkerFs` is; a
//! race of two creators with one winner; the state-file layout the
//! coordinator's `ObjStore` reads; and the in-process job with its store
//! and state files as objects and its sink's output on a file system of
//! its own. (The file store's whole behaviour on `ObjFs` is compared with
//! its behaviour on `MemFs` and `StdFs` in `tests/objstore.rs`.)

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use ckpt_core::coordinator::JobStatus;
use ckpt_core::host::fs::{write_atomic, write_durable, Fs, MemFs, StdFs};
use ckpt_core::host::pipeline::{pipeline_spec, verify_output, PipelineConfig};
use ckpt_core::host::runtime::{Job, JobOptions};
use ckpt_core::host::store::{self, CHECKPOINT_DIR, STATE_DIR};
use ckpt_core::StateHandle;
use ckpt_node::{objstore, ObjFs};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::ObjectStore;

mod wrapped;
use wrapped::{Gate, Wrapped};

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ckpt-objfs-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn local(dir: &std::path::Path) -> Arc<dyn ObjectStore> {
    Arc::new(LocalFileSystem::new_with_prefix(dir).expect("local file system"))
}

/// The four file systems under test, each fresh, with its name.
fn every_fs(tag: &str) -> Vec<(&'static str, Arc<dyn Fs>)> {
    vec![
        ("MemFs", Arc::new(MemFs::new())),
        (
            "StdFs",
            Arc::new(StdFs::new(temp_dir(&format!("{tag}-std"))).expect("std fs")),
        ),
        (
            "ObjFs/InMemory",
            Arc::new(ObjFs::new(Arc::new(InMemory::new()))),
        ),
        (
            "ObjFs/LocalFileSystem",
            Arc::new(ObjFs::new(local(&temp_dir(&format!("{tag}-local"))))),
        ),
    ]
}

fn kind<T: fmt::Debug>(r: io::Result<T>) -> io::ErrorKind {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.kind(),
    }
}

/// The [`Fs`] contract the store and the task side rely on, one check for
/// every implementation: missing files are `NotFound` for read, remove and
/// rename; a write replaces; `create_new` refuses an existing name with
/// `AlreadyExists` and leaves it alone; a rename replaces its target and
/// removes its source; a listing is the sorted names directly in the
/// directory (a missing one lists as empty); the durable-write helpers
/// leave the file whole.
fn contract(name: &str, fs: &dyn Fs) {
    let ctx = |what: &str| format!("{name}: {what}");
    assert_eq!(
        kind(fs.read("d/missing")),
        io::ErrorKind::NotFound,
        "{}",
        ctx("read")
    );
    assert_eq!(
        kind(fs.remove("d/missing")),
        io::ErrorKind::NotFound,
        "{}",
        ctx("remove")
    );
    assert_eq!(
        kind(fs.rename("d/missing", "d/x")),
        io::ErrorKind::NotFound,
        "{}",
        ctx("rename")
    );
    assert!(!fs.exists("d/missing"), "{}", ctx("exists"));
    assert_eq!(
        fs.list("nothing-here").expect("list"),
        Vec::<String>::new(),
        "{}",
        ctx("list missing")
    );

    fs.create_dir_all("d/sub").expect("create_dir_all");
    fs.write("d/b", b"one").expect("write");
    fs.write("d/b", b"two").expect("write again");
    assert_eq!(
        fs.read("d/b").expect("read"),
        b"two",
        "{}",
        ctx("a write replaces")
    );
    assert!(fs.exists("d/b"), "{}", ctx("exists"));
    fs.sync_file("d/b").expect("sync_file");
    fs.sync_dir("d").expect("sync_dir");

    fs.create_new("d/a", b"first").expect("create_new");
    assert_eq!(
        kind(fs.create_new("d/a", b"second")),
        io::ErrorKind::AlreadyExists,
        "{}",
        ctx("create_new twice")
    );
    assert_eq!(
        fs.read("d/a").expect("read"),
        b"first",
        "{}",
        ctx("create_new kept")
    );

    fs.write("d/sub/c", b"nested").expect("write nested");
    fs.write("top", b"t").expect("write top");
    assert_eq!(fs.list("d").expect("list"), ["a", "b"], "{}", ctx("list"));
    assert_eq!(
        fs.list("d/sub").expect("list"),
        ["c"],
        "{}",
        ctx("list nested")
    );
    assert!(
        fs.list("").expect("list root").contains(&"top".to_string()),
        "{}",
        ctx("list root")
    );

    fs.rename("d/a", "d/b").expect("rename");
    assert_eq!(
        fs.read("d/b").expect("read"),
        b"first",
        "{}",
        ctx("rename replaces")
    );
    assert!(!fs.exists("d/a"), "{}", ctx("rename removes the source"));
    fs.remove("d/b").expect("remove");
    assert!(!fs.exists("d/b"), "{}", ctx("removed"));
    assert_eq!(
        fs.list("d").expect("list"),
        Vec::<String>::new(),
        "{}",
        ctx("list after")
    );

    write_durable(fs, "d/durable", b"whole").expect("write_durable");
    write_atomic(fs, "d/atomic", b"v1").expect("write_atomic");
    write_atomic(fs, "d/atomic", b"v2").expect("write_atomic again");
    assert_eq!(fs.read("d/durable").expect("read"), b"whole");
    assert_eq!(fs.read("d/atomic").expect("read"), b"v2");
    assert_eq!(
        fs.list("d").expect("list"),
        ["atomic", "durable"],
        "{}",
        ctx("no temporary left")
    );
}

#[test]
fn every_file_system_keeps_the_contract() {
    // Outside any runtime (ObjFs runs each call on its own runtime).
    for (name, fs) in every_fs("contract") {
        contract(name, &*fs);
    }
}

#[test]
fn a_path_the_object_store_refuses_is_invalid_input() {
    let fs = ObjFs::new(Arc::new(InMemory::new()));
    assert_eq!(kind(fs.write("a//b", b"x")), io::ErrorKind::InvalidInput);
    assert_eq!(kind(fs.read("../up")), io::ErrorKind::InvalidInput);
    assert!(!fs.exists("a/../b"));
}

/// The contract on a current-thread runtime (where `block_in_place` and
/// `block_on` would panic) and on a multi-thread runtime: on a worker, in
/// its `block_on`, and on its blocking pool. On the current-thread
/// runtime a thousand calls in a row without yielding: each waits on a
/// channel, not on a tokio handle, so no spent task budget can leave a
/// wake-up waiting for the blocked scheduler.
#[test]
fn every_runtime_context_works() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for (name, fs) in every_fs("current") {
            contract(name, &*fs);
        }
        let fs = ObjFs::new(Arc::new(InMemory::new()));
        for i in 0..1_000u32 {
            fs.write("n", &i.to_le_bytes()).expect("write");
            assert_eq!(fs.read("n").expect("read"), i.to_le_bytes());
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    rt.block_on(async {
        for (name, fs) in every_fs("multi-block-on") {
            contract(name, &*fs);
        }
        let on_worker = tokio::spawn(async {
            for (name, fs) in every_fs("multi-worker") {
                contract(name, &*fs);
            }
        });
        on_worker.await.expect("on a worker");
        let blocking = tokio::task::spawn_blocking(|| {
            for (name, fs) in every_fs("multi-blocking") {
                contract(name, &*fs);
            }
        });
        blocking.await.expect("on the blocking pool");
    });
}

/// Two threads creating one name at once: exactly one wins, the other gets
/// `AlreadyExists` (the file store claims a leader generation this way).
#[test]
fn of_two_racing_creators_exactly_one_wins() {
    let dir = temp_dir("race");
    for (name, objects) in [
        (
            "InMemory",
            Arc::new(InMemory::new()) as Arc<dyn ObjectStore>,
        ),
        ("LocalFileSystem", local(&dir)),
    ] {
        let fs = ObjFs::new(objects);
        for round in 0..20 {
            let path = format!("leader/gen-{round}");
            let start = Arc::new(Barrier::new(2));
            let racers: Vec<_> = (0..2u8)
                .map(|who| {
                    let (fs, path, start) = (fs.clone(), path.clone(), Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        fs.create_new(&path, &[who])
                    })
                })
                .collect();
            let results: Vec<io::Result<()>> = racers
                .into_iter()
                .map(|r| r.join().expect("racer"))
                .collect();
            let won = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(won, 1, "{name} round {round}: {results:?}");
            assert!(
                results
                    .iter()
                    .any(|r| matches!(r, Err(e) if e.kind() == io::ErrorKind::AlreadyExists)),
                "{name} round {round}: {results:?}"
            );
        }
    }
}

/// A state file written through `ObjFs` is the object the coordinator's
/// `ObjStore` reads, and the other way round: one layout.
#[test]
fn state_files_are_the_objects_the_coordinators_store_reads() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let fs = ObjFs::new(Arc::clone(&objects));
        store::write_state(&fs, StateHandle(0xab), b"from the task").expect("write");
        let read = objstore::read_state(&*objects, StateHandle(0xab))
            .await
            .expect("the store reads it");
        assert_eq!(read, b"from the task");
        objstore::write_state(&*objects, StateHandle(7), b"from the store".to_vec())
            .await
            .expect("write object");
        assert_eq!(
            store::read_state(&fs, StateHandle(7)).expect("read"),
            b"from the store"
        );
        assert_eq!(
            fs.list(STATE_DIR).expect("list"),
            [format!("{:016x}", 7), format!("{:016x}", 0xab)]
        );
    });
}

// ---------------------------------------------------------------------------
// Off the worker: an object store whose `get` waits until a gate opens.

/// On a runtime with one worker, a task blocks in `ObjFs::read` until a
/// task spawned after it opens the gate: the second can run only if the
/// first's call left the worker (as `OffWorkerFs`'s calls do).
#[test]
fn a_blocking_call_leaves_the_worker_to_the_other_tasks() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("runtime");
    let gated = Arc::new(Wrapped::<Gate>::default());
    let fs = ObjFs::new(Arc::clone(&gated) as Arc<dyn ObjectStore>);
    fs.write("f", b"behind the gate").expect("write");
    let read = rt.block_on(async move {
        let reader = tokio::spawn(async move { fs.read("f") });
        gated.hooks.wait_entered();
        let opener = Arc::clone(&gated);
        tokio::spawn(async move { opener.hooks.open() });
        reader.await.expect("reader")
    });
    assert_eq!(read.expect("the gate opened"), b"behind the gate");
}

// ---------------------------------------------------------------------------
// The in-process job with its checkpoints in an object store.

/// The pipeline as an in-process `Job` whose store and state files are
/// objects (`ObjFs` over `InMemory`) and whose sink writes to a `MemFs` of
/// its own: stopped half-way, started again (recovered from the objects,
/// restored), run to the end; every record is committed once, the object
/// store holds no sink output, and the sink's file system no checkpoint.
#[test]
fn a_job_keeps_its_checkpoints_as_objects_and_its_output_on_its_own_fs() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let state_fs: Arc<dyn Fs> = Arc::new(ObjFs::new(Arc::clone(&objects)));
    let sink_fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let records = 6_000;
    let cfg = PipelineConfig {
        records,
        keys: 5,
        interval_ms: 20,
        rate_per_sec: 6_000,
        options: JobOptions {
            check_invariants: true,
            ..JobOptions::default()
        },
        ..PipelineConfig::default()
    };
    let wait = Duration::from_secs(60);
    rt.block_on(async {
        // First run: until some records are committed, then suspended.
        let committed = Arc::new(AtomicU64::new(0));
        let spec = pipeline_spec(&cfg, Arc::clone(&sink_fs), Arc::clone(&committed));
        let job = Job::start(spec, Arc::clone(&state_fs))
            .await
            .expect("starts");
        let t = tokio::time::Instant::now();
        while committed.load(Ordering::Relaxed) < records / 3 {
            assert!(t.elapsed() < wait, "first run committed {committed:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let stats = job.shutdown(JobStatus::Suspended).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
        assert!(stats.completed > 0, "{stats:?}");

        // Second run: restored from the objects, to the end.
        let before = verify_output(&*sink_fs, records, false)
            .expect("exactly once so far")
            .records;
        let committed = Arc::new(AtomicU64::new(0));
        let spec = pipeline_spec(&cfg, Arc::clone(&sink_fs), Arc::clone(&committed));
        let job = Job::start(spec, Arc::clone(&state_fs))
            .await
            .expect("restarts");
        assert!(
            job.stats().restored_at_start.is_some(),
            "restored nothing: {:?}",
            job.recovery()
        );
        let t = tokio::time::Instant::now();
        while before + committed.load(Ordering::Relaxed) < records {
            assert!(t.elapsed() < wait, "second run committed {committed:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let stats = job.shutdown(JobStatus::Finished).await;
        assert!(stats.violations.is_empty(), "{:?}", stats.violations);
    });
    assert_eq!(
        verify_output(&*sink_fs, records, true).map(|r| r.records),
        Ok(records)
    );
    // Where each thing is.
    assert!(!state_fs.list(CHECKPOINT_DIR).expect("list").is_empty());
    assert!(!state_fs.list(STATE_DIR).expect("list").is_empty());
    assert!(state_fs.list("sink/committed").expect("list").is_empty());
    assert!(state_fs.list("sink/pending").expect("list").is_empty());
    assert!(sink_fs.list(CHECKPOINT_DIR).expect("list").is_empty());
    assert!(sink_fs.list(STATE_DIR).expect("list").is_empty());
}
