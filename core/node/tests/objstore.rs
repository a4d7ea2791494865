//! The object-store checkpoint store against the file store: one random
//! sequence of commits, discards, savepoint disposals and leader changes
//! driven into both, compared after every step; and its fence, which a
//! deposed leader cannot pass.
//!
//! The same sequence drives a third store: the file store on [`ObjFs`]
//! (ckpt-core's file-system trait over an object store of its own), held
//! to what the file store does on `MemFs` and `StdFs`: every claim, rename,
//! listing, removal and recovery of the file store goes through it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use ckpt_core::host::fs::{Fs, MemFs, StdFs};
use ckpt_core::host::store::{self, FileStore, OpenOptions, Recovery, StoreError, STATE_DIR};
use ckpt_core::{CheckpointId, Generation, JobId, Millis, StateHandle};
use ckpt_node::{objstore, CheckpointStore, ObjFs, ObjStore};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::ObjectStore;
use proptest::prelude::*;

mod wrapped;
use wrapped::{FailReads, HideAndFail, LoseAnswers, LoseNextLogAnswer, Wrapped};

const JOB: JobId = JobId(7);
const RETAINED: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    Allocate,
    /// Finalize the newest allocated id (or, `older`, the one before it),
    /// with `fresh` new handles and, `share`, one handle written before.
    Finalize {
        older: bool,
        savepoint: bool,
        fresh: u8,
        share: Option<usize>,
    },
    Store(usize),
    Discard(usize),
    Dispose(usize),
    ResetCounter(u8),
    /// A new leader: both stores reopened under the next generation.
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Allocate),
        4 => (any::<bool>(), prop::bool::weighted(0.2), 0u8..3, prop::option::of(0usize..64))
            .prop_map(|(older, savepoint, fresh, share)| Op::Finalize { older, savepoint, fresh, share }),
        4 => (0usize..8).prop_map(Op::Store),
        3 => (0usize..64).prop_map(Op::Discard),
        1 => (0usize..8).prop_map(Op::Dispose),
        1 => (0u8..4).prop_map(Op::ResetCounter),
        1 => Just(Op::Reopen),
    ]
}

/// A result with what may differ between backends (I/O error texts) left out.
fn norm<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> String {
    match r {
        Ok(v) => format!("ok {v:?}"),
        Err(StoreError::Io { op, .. }) => format!("io {op}"),
        Err(e) => format!("err {e}"),
    }
}

fn recovery_view(r: &Recovery) -> String {
    let mut orphans = r.removed_orphans.clone();
    orphans.sort();
    format!(
        "{:?} {:?} {:?} damaged {} orphans {:?}",
        r.generation,
        r.checkpoints,
        r.last_id,
        r.damaged.len(),
        orphans
    )
}

struct Pair {
    fs: Arc<dyn Fs>,
    objects: Arc<dyn ObjectStore>,
    file: FileStore,
    obj: ObjStore,
    /// The file store on an [`ObjFs`] (over an object store of its own).
    via_fs: Arc<dyn Fs>,
    via: FileStore,
    generation: Generation,
    /// Every handle written so far, and the next fresh one.
    written: Vec<StateHandle>,
    next_handle: u64,
    last_allocated: Option<CheckpointId>,
    prepared: Vec<CheckpointId>,
}

async fn open_pair(
    fs: Arc<dyn Fs>,
    objects: Arc<dyn ObjectStore>,
    via_fs: Arc<dyn Fs>,
) -> (FileStore, ObjStore, FileStore, Generation) {
    let g_file = FileStore::next_generation(&*fs).expect("file generation");
    let g_obj = ObjStore::next_generation(&*objects, JOB)
        .await
        .expect("object generation");
    let g_via = FileStore::next_generation(&*via_fs).expect("generation on ObjFs");
    assert_eq!(g_file, g_obj);
    assert_eq!(g_file, g_via);
    let (file, rf) = FileStore::open(Arc::clone(&fs), OpenOptions::new(JOB, RETAINED, g_file))
        .expect("file store opens");
    let (obj, ro) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, RETAINED, g_obj))
        .await
        .expect("object store opens");
    let (via, rv) = FileStore::open(Arc::clone(&via_fs), OpenOptions::new(JOB, RETAINED, g_via))
        .expect("file store on ObjFs opens");
    assert_eq!(recovery_view(&rf), recovery_view(&ro));
    assert_eq!(rf.removed_partial.len(), ro.removed_partial.len());
    assert_eq!(rf.quarantined.len(), ro.quarantined.len());
    assert_eq!(rf.kept_unreferenced, ro.kept_unreferenced);
    assert_eq!(format!("{rf:?}"), format!("{rv:?}"), "ObjFs recovery");
    (file, obj, via, g_file)
}

async fn state_objects(objects: &dyn ObjectStore) -> BTreeSet<String> {
    let listed = objects
        .list_with_delimiter(Some(&object_store::path::Path::from(STATE_DIR)))
        .await
        .expect("list state");
    listed
        .objects
        .into_iter()
        .filter_map(|o| o.location.filename().map(str::to_string))
        .collect()
}

fn state_files(fs: &dyn Fs) -> BTreeSet<String> {
    fs.list(STATE_DIR)
        .expect("list state")
        .into_iter()
        .collect()
}

async fn compare(p: &Pair) {
    assert_eq!(
        CheckpointStore::held(&p.file),
        CheckpointStore::held(&p.obj)
    );
    assert_eq!(p.file.next_id(), p.obj.next_id());
    assert_eq!(p.file.holdings().latest(), p.obj.holdings().latest());
    assert_eq!(state_files(&*p.fs), state_objects(&*p.objects).await);
    assert_eq!(p.file.stats(), p.obj.stats());
    // The file store on ObjFs: the same, and the same files.
    assert_eq!(
        CheckpointStore::held(&p.file),
        CheckpointStore::held(&p.via)
    );
    assert_eq!(p.file.next_id(), p.via.next_id());
    assert_eq!(p.file.stats(), p.via.stats());
    assert_eq!(files(&*p.fs), files(&*p.via_fs), "files on ObjFs");
}

/// Every file the file store keeps (the leader records, the id counter,
/// the checkpoints' metadata, the state files) with its contents.
fn files(fs: &dyn Fs) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for dir in ["", "leader", "checkpoints", STATE_DIR] {
        for name in fs.list(dir).expect("list") {
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            let bytes = fs.read(&path).expect("read a listed file");
            all.push((path, bytes));
        }
    }
    all
}

async fn step(p: &mut Pair, op: &Op) {
    let g = p.generation;
    let (a, b, c) = match op {
        Op::Allocate => {
            let a = CheckpointStore::allocate_id(&mut p.file, g).await;
            let b = p.obj.allocate_id(g).await;
            let c = p.via.allocate_id(g);
            if let Ok(id) = &a {
                p.last_allocated = Some(*id);
            }
            (norm(&a), norm(&b), norm(&c))
        }
        Op::Finalize {
            older,
            savepoint,
            fresh,
            share,
        } => {
            let Some(last) = p.last_allocated else { return };
            let id = if *older && last.0 > 1 {
                CheckpointId(last.0 - 1)
            } else {
                last
            };
            let mut handles = Vec::new();
            for _ in 0..*fresh {
                let h = StateHandle(p.next_handle);
                p.next_handle += 1;
                let bytes = format!("state {} of {id}", h.0).into_bytes();
                store::write_state(&*p.fs, h, &bytes).expect("write state file");
                store::write_state(&*p.via_fs, h, &bytes).expect("write state on ObjFs");
                objstore::write_state(&*p.objects, h, bytes)
                    .await
                    .expect("write state object");
                p.written.push(h);
                handles.push(h);
            }
            if let Some(i) = share {
                if !p.written.is_empty() {
                    let h = p.written[i % p.written.len()];
                    if !handles.contains(&h) {
                        handles.push(h);
                    }
                }
            }
            let ts = Millis(id.0 * 10);
            let a = CheckpointStore::finalize(&mut p.file, g, id, *savepoint, ts, &handles).await;
            let b = p.obj.finalize(g, id, *savepoint, ts, &handles).await;
            let c = p.via.finalize(g, id, *savepoint, ts, &handles);
            if a.is_ok() && !p.prepared.contains(&id) {
                p.prepared.push(id);
            }
            (norm(&a), norm(&b), norm(&c))
        }
        Op::Store(i) => {
            if p.prepared.is_empty() {
                return;
            }
            let id = p.prepared.remove(i % p.prepared.len());
            let a = CheckpointStore::store(&mut p.file, g, id).await;
            let b = p.obj.store(g, id).await;
            let c = p.via.store(g, id);
            (norm(&a), norm(&b), norm(&c))
        }
        Op::Discard(i) => {
            if p.written.is_empty() {
                return;
            }
            let h = p.written[i % p.written.len()];
            let a = CheckpointStore::discard(&mut p.file, g, h).await;
            let b = p.obj.discard(g, h).await;
            let c = p.via.discard(g, h);
            (norm(&a), norm(&b), norm(&c))
        }
        Op::Dispose(i) => {
            let held = CheckpointStore::held(&p.file);
            if held.is_empty() {
                return;
            }
            let id = held[i % held.len()].0;
            let a = CheckpointStore::dispose_savepoint(&mut p.file, g, id).await;
            let b = p.obj.dispose_savepoint(g, id).await;
            let c = p.via.dispose_savepoint(g, id);
            (norm(&a), norm(&b), norm(&c))
        }
        Op::ResetCounter(k) => {
            let next = CheckpointId(p.file.next_id().0 + u64::from(*k));
            let a = CheckpointStore::reset_counter(&mut p.file, g, next).await;
            let b = p.obj.reset_counter(g, next).await;
            let c = p.via.reset_counter(g, next);
            (norm(&a), norm(&b), norm(&c))
        }
        Op::Reopen => {
            let (file, obj, via, g) = open_pair(
                Arc::clone(&p.fs),
                Arc::clone(&p.objects),
                Arc::clone(&p.via_fs),
            )
            .await;
            p.file = file;
            p.obj = obj;
            p.via = via;
            p.generation = g;
            p.prepared.clear();
            // Recovery deleted the orphans: only what is stored remains.
            let kept: BTreeSet<StateHandle> = CheckpointStore::held(&p.file)
                .into_iter()
                .flat_map(|(_, _, hs)| hs)
                .collect();
            p.written.retain(|h| kept.contains(h));
            // Counters start again with each handle.
            assert_eq!(
                CheckpointStore::held(&p.file),
                CheckpointStore::held(&p.obj)
            );
            assert_eq!(state_files(&*p.fs), state_objects(&*p.objects).await);
            assert_eq!(files(&*p.fs), files(&*p.via_fs), "files on ObjFs");
            return;
        }
    };
    assert_eq!(a, b, "{op:?}");
    assert_eq!(a, c, "{op:?} on ObjFs");
    compare(p).await;
}

/// Drives `ops` into the file store on `fs`, the object store on
/// `objects`, and the file store on `via_fs` (an [`ObjFs`]), on `rt`.
fn run(
    rt: &tokio::runtime::Runtime,
    fs: Arc<dyn Fs>,
    objects: Arc<dyn ObjectStore>,
    via_fs: Arc<dyn Fs>,
    ops: &[Op],
) {
    rt.block_on(async {
        let (file, obj, via, generation) =
            open_pair(Arc::clone(&fs), Arc::clone(&objects), Arc::clone(&via_fs)).await;
        let mut p = Pair {
            fs,
            objects,
            file,
            obj,
            via_fs,
            via,
            generation,
            written: Vec::new(),
            next_handle: 1,
            last_allocated: None,
            prepared: Vec::new(),
        };
        for op in ops {
            step(&mut p, op).await;
        }
        // A last leader change: both recover the same checkpoints.
        step(&mut p, &Op::Reopen).await;
    });
}

fn temp_dir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ckpt-node-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs `f` to completion on a current-thread runtime of its own (each
/// test here is one scripted sequence of store calls).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// In memory: the file store on `MemFs`, the object store on `InMemory`,
    /// the file store on `ObjFs` over `InMemory`; on a current-thread
    /// runtime (`ObjFs` runs its calls on its own runtime).
    #[test]
    fn object_store_holds_what_the_file_store_holds(ops in prop::collection::vec(op(), 0..60)) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let via: Arc<dyn Fs> = Arc::new(ObjFs::new(Arc::new(InMemory::new())));
        run(&rt, Arc::new(MemFs::new()), Arc::new(InMemory::new()), via, &ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// On disk: the file store on `StdFs`, the object store on
    /// `LocalFileSystem` (whose `PutMode::Create` is a no-clobber link),
    /// the file store on `ObjFs` over `LocalFileSystem`; on a multi-thread
    /// runtime (`ObjFs` blocks in place on it).
    #[test]
    fn local_file_system_backend_agrees(ops in prop::collection::vec(op(), 0..40)) {
        let dir = temp_dir("local");
        let fs_dir = dir.join("fs");
        let obj_dir = dir.join("obj");
        let via_dir = dir.join("via");
        std::fs::create_dir_all(&obj_dir).expect("object dir");
        std::fs::create_dir_all(&via_dir).expect("ObjFs dir");
        let fs: Arc<dyn Fs> = Arc::new(StdFs::new(&fs_dir).expect("std fs"));
        let objects: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(&obj_dir).expect("local file system"));
        let via: Arc<dyn Fs> = Arc::new(ObjFs::new(Arc::new(
            LocalFileSystem::new_with_prefix(&via_dir).expect("local file system"),
        )));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        run(&rt, fs, objects, via, &ops);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn stale(r: &Result<impl std::fmt::Debug, StoreError>, current: Generation) -> bool {
    matches!(r, Err(StoreError::StaleGeneration { writer: Generation(1), current: c }) if *c == current)
}

async fn deposed_leader_is_refused(objects: Arc<dyn ObjectStore>) {
    let g1 = Generation(1);
    let (mut old, _) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 1, g1))
        .await
        .expect("first leader");
    let h = [StateHandle(1), StateHandle(2), StateHandle(3)];
    for x in h {
        objstore::write_state(&*objects, x, vec![1])
            .await
            .expect("state");
    }
    let c1 = old.allocate_id(g1).await.expect("id 1");
    old.finalize(g1, c1, false, Millis(1), &h[..1])
        .await
        .expect("finalize 1");
    old.store(g1, c1).await.expect("store 1");
    let c2 = old.allocate_id(g1).await.expect("id 2");
    old.finalize(g1, c2, false, Millis(2), &h[1..2])
        .await
        .expect("finalize 2");
    let s1 = old.allocate_id(g1).await.expect("id 3");
    old.finalize(g1, s1, true, Millis(3), &h[2..3])
        .await
        .expect("finalize savepoint");

    // A new leader takes over while checkpoint 2 is finalized, not stored.
    let g2 = Generation(2);
    let (mut new, rec) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 1, g2))
        .await
        .expect("second leader");
    assert_eq!(
        rec.checkpoints
            .iter()
            .map(|c| c.checkpoint)
            .collect::<Vec<_>>(),
        [c1]
    );
    assert_eq!(rec.last_id, Some(s1));

    // Every write of the deposed leader is refused, the commit first.
    assert!(stale(&old.store(g1, c2).await, g2));
    assert!(stale(&old.allocate_id(g1).await, g2));
    assert!(stale(
        &old.finalize(g1, CheckpointId(9), false, Millis(9), &[])
            .await,
        g2
    ));
    assert!(stale(&old.discard(g1, h[0]).await, g2));
    assert!(stale(&old.reset_counter(g1, CheckpointId(100)).await, g2));
    assert!(old.stats().fenced >= 5);

    // The new leader's view is untouched and it goes on from there.
    let c4 = new.allocate_id(g2).await.expect("id 4");
    assert_eq!(c4, CheckpointId(4));
    objstore::write_state(&*objects, StateHandle(4), vec![4])
        .await
        .expect("state");
    new.finalize(g2, c4, false, Millis(4), &[StateHandle(4)])
        .await
        .expect("finalize 4");
    assert_eq!(new.store(g2, c4).await.expect("store 4").evicted, [c1]);

    // A third leader recovers exactly the second one's commits.
    let (_, rec) = ObjStore::open(
        Arc::clone(&objects),
        OpenOptions::new(JOB, 1, Generation(3)),
    )
    .await
    .expect("third leader");
    assert_eq!(
        rec.checkpoints
            .iter()
            .map(|c| c.checkpoint)
            .collect::<Vec<_>>(),
        [c4]
    );
    assert_eq!(rec.last_id, Some(c4));
    // Claiming an old generation again is refused.
    let again = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 1, g2)).await;
    assert!(
        matches!(again, Err(StoreError::GenerationTaken { .. })),
        "{again:?}"
    );
}

#[test]
fn deposed_leader_is_refused_in_memory() {
    block_on(deposed_leader_is_refused(Arc::new(InMemory::new())));
}

#[test]
fn deposed_leader_is_refused_on_local_file_system() {
    let dir = temp_dir("fence");
    let objects = Arc::new(LocalFileSystem::new_with_prefix(&dir).expect("local file system"));
    block_on(deposed_leader_is_refused(objects));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two leaders claiming the same generation at once: exactly one wins.
#[test]
fn concurrent_claims_of_one_generation_one_wins() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    rt.block_on(async {
        for round in 1..=20u64 {
            let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let g = Generation(round);
            let a = tokio::spawn(ObjStore::open(
                Arc::clone(&objects),
                OpenOptions::new(JOB, 1, g),
            ));
            let b = tokio::spawn(ObjStore::open(
                Arc::clone(&objects),
                OpenOptions::new(JOB, 1, g),
            ));
            let (a, b) = (a.await.expect("join"), b.await.expect("join"));
            assert_eq!(
                usize::from(a.is_ok()) + usize::from(b.is_ok()),
                1,
                "round {round}: {a:?} {b:?}"
            );
        }
    });
}

/// A stored checkpoint whose state object was removed by hand is
/// quarantined on the next start (a log entry), the one before it restored,
/// and its other objects kept; later starts agree.
#[test]
fn damaged_checkpoint_is_quarantined_and_the_previous_restored() {
    block_on(async {
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let g1 = Generation(1);
        let (mut s, _) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 2, g1))
            .await
            .expect("open");
        let hs = [StateHandle(1), StateHandle(2), StateHandle(3)];
        for h in hs {
            objstore::write_state(&*objects, h, vec![7])
                .await
                .expect("state");
        }
        let c1 = s.allocate_id(g1).await.expect("id");
        s.finalize(g1, c1, false, Millis(1), &hs[..1])
            .await
            .expect("finalize");
        s.store(g1, c1).await.expect("store");
        let c2 = s.allocate_id(g1).await.expect("id");
        s.finalize(g1, c2, false, Millis(2), &hs[1..])
            .await
            .expect("finalize");
        s.store(g1, c2).await.expect("store");
        objects
            .delete(&object_store::path::Path::from(store::state_path(hs[2])))
            .await
            .expect("remove by hand");

        let (_, rec) = ObjStore::open(
            Arc::clone(&objects),
            OpenOptions::new(JOB, 2, Generation(2)),
        )
        .await
        .expect("second start");
        assert_eq!(
            rec.checkpoints
                .iter()
                .map(|c| c.checkpoint)
                .collect::<Vec<_>>(),
            [c1]
        );
        assert_eq!(rec.damaged.len(), 1, "{:?}", rec.damaged);
        assert_eq!(
            rec.quarantined,
            [format!("{}.g2.corrupt", store::meta_path(c2))]
        );
        assert!(rec.removed_orphans.is_empty(), "{:?}", rec.removed_orphans);
        assert_eq!(rec.last_id, Some(c2));
        // Refused when the sink already committed checkpoint 2's output.
        let mut behind = OpenOptions::new(JOB, 2, Generation(3));
        behind.committed = Some(c2);
        let refused = ObjStore::open(Arc::clone(&objects), behind).await;
        assert!(
            matches!(refused, Err(StoreError::BehindCommitted { .. })),
            "{refused:?}"
        );

        let (_, rec) = ObjStore::open(
            Arc::clone(&objects),
            OpenOptions::new(JOB, 2, Generation(4)),
        )
        .await
        .expect("third start");
        assert_eq!(
            rec.checkpoints
                .iter()
                .map(|c| c.checkpoint)
                .collect::<Vec<_>>(),
            [c1]
        );
        assert!(rec.damaged.is_empty());
        assert_eq!(
            rec.quarantined,
            [format!("{}.g2.corrupt", store::meta_path(c2))]
        );
        let left: BTreeSet<String> = state_objects(&*objects).await;
        assert_eq!(
            left.len(),
            2,
            "the quarantined checkpoint's other state is kept: {left:?}"
        );
    });
}

/// Writes state object `n`, allocates the next id and finalizes that
/// checkpoint (not a savepoint, timestamp `n`) with state `n`: the id.
async fn finalize_with_state(
    store: &mut ObjStore,
    objects: &dyn ObjectStore,
    g: Generation,
    n: u64,
) -> CheckpointId {
    objstore::write_state(objects, StateHandle(n), vec![1])
        .await
        .expect("state");
    let id = store.allocate_id(g).await.expect("id");
    store
        .finalize(g, id, false, Millis(n), &[StateHandle(n)])
        .await
        .expect("finalize");
    id
}

/// A commit whose log append landed but whose answer was lost has an
/// unknown outcome, which is not "definitely not stored" (a coordinator
/// answered with a failure would drop the checkpoint and restore an older
/// one at its next failover): `OutcomeUnknown`, the checkpoint held, and
/// the next leader recovers it as the latest.
#[test]
fn a_commit_whose_append_answer_is_lost_is_an_unknown_outcome_and_recovered() {
    block_on(async {
        let lost = Arc::new(Wrapped::<LoseAnswers>::default());
        let objects: Arc<dyn ObjectStore> = Arc::clone(&lost) as Arc<dyn ObjectStore>;
        let g1 = Generation(1);
        let (mut store, _) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 2, g1))
            .await
            .expect("open");
        let c1 = finalize_with_state(&mut store, &*objects, g1, 1).await;
        lost.hooks.lose_answers(true);
        match store.store(g1, c1).await {
            Err(StoreError::OutcomeUnknown { checkpoint, .. }) => assert_eq!(checkpoint, c1),
            other => panic!("expected an unknown outcome, got {other:?}"),
        }
        assert_eq!(store.holdings().latest(), Some(c1));
        lost.hooks.lose_answers(false);
        let (_, rec) = ObjStore::open(objects, OpenOptions::new(JOB, 2, Generation(2)))
            .await
            .expect("the next leader");
        assert_eq!(rec.latest().map(|c| c.checkpoint), Some(c1));
    });
}

/// Opens the store as generation 1 (retaining two) and commits
/// checkpoints 1 and 2, each with one state object (handles 1 and 2);
/// returns the second.
async fn two_committed(objects: &Arc<dyn ObjectStore>) -> CheckpointId {
    let g1 = Generation(1);
    let (mut store, _) = ObjStore::open(Arc::clone(objects), OpenOptions::new(JOB, 2, g1))
        .await
        .expect("open");
    let mut last = CheckpointId(0);
    for n in 1..=2 {
        last = finalize_with_state(&mut store, &**objects, g1, n).await;
        store.store(g1, last).await.expect("store");
    }
    last
}

/// A metadata or state object of the latest checkpoint that cannot be read
/// (an error other than "not found") fails the open and writes nothing:
/// taken as damage, it would be quarantined in the log for good and an
/// older checkpoint restored. Once the error is gone the latest is
/// restored.
#[test]
fn an_unreadable_object_fails_the_open_instead_of_condemning_the_checkpoint() {
    block_on(async {
        let reads = Arc::new(Wrapped::<FailReads>::default());
        let objects: Arc<dyn ObjectStore> = Arc::clone(&reads) as Arc<dyn ObjectStore>;
        let last = two_committed(&objects).await;
        let mut generation = 1;
        for unreadable in [store::meta_path(last), store::state_path(StateHandle(2))] {
            reads.hooks.fail(Some(&unreadable));
            generation += 1;
            let mut options = OpenOptions::new(JOB, 2, Generation(generation));
            options.check_state = Some(Arc::new(|_, _, _| Ok(())));
            match ObjStore::open(Arc::clone(&objects), options).await {
                Err(StoreError::Io { op: "get", .. }) => {}
                Err(e) => panic!("{unreadable}: expected the read error, got {e:?}"),
                Ok((_, rec)) => panic!("{unreadable}: expected the read error, got {rec:?}"),
            }
        }
        reads.hooks.fail(None);
        let mut options = OpenOptions::new(JOB, 2, Generation(generation + 1));
        options.check_state = Some(Arc::new(|_, _, _| Ok(())));
        let (_, rec) = ObjStore::open(objects, options).await.expect("open");
        assert_eq!(rec.latest().map(|c| c.checkpoint), Some(last));
        assert!(rec.damaged.is_empty(), "{:?}", rec.damaged);
    });
}

/// A listing that misses the latest checkpoint's state object (an
/// eventually consistent store's listing may miss the newest objects) does
/// not condemn the checkpoint: the object itself is asked for, found, and
/// the checkpoint restored. Taken from the listing alone, it was
/// quarantined in the log for good and an older one restored, behind a
/// checkpoint whose output a sink may have committed.
#[test]
fn a_state_object_missing_from_the_listing_is_asked_for_before_it_counts_as_missing() {
    block_on(async {
        let hidden = Arc::new(Wrapped::<HideAndFail>::default());
        let objects: Arc<dyn ObjectStore> = Arc::clone(&hidden) as Arc<dyn ObjectStore>;
        let last = two_committed(&objects).await;
        let path = store::state_path(StateHandle(2));
        hidden.hooks.hide.hide(Some(&path));
        // Missed by the listing and unreadable: the open cannot tell.
        hidden.hooks.fail.fail(Some(&path));
        match ObjStore::open(
            Arc::clone(&objects),
            OpenOptions::new(JOB, 2, Generation(2)),
        )
        .await
        {
            Err(StoreError::Io { op: "head", .. }) => {}
            Err(e) => panic!("expected the head's error, got {e:?}"),
            Ok((_, rec)) => panic!("expected the head's error, got {rec:?}"),
        }
        hidden.hooks.fail.fail(None);
        let (_, rec) = ObjStore::open(
            Arc::clone(&objects),
            OpenOptions::new(JOB, 2, Generation(3)),
        )
        .await
        .expect("open");
        assert_eq!(rec.latest().map(|c| c.checkpoint), Some(last));
        assert!(rec.damaged.is_empty(), "{:?}", rec.damaged);
        // Absent for real, it is missing: damage, and the older one is
        // restored.
        hidden.hooks.hide.hide(None);
        objects
            .delete(&object_store::path::Path::from(store::state_path(
                StateHandle(2),
            )))
            .await
            .expect("delete");
        let (_, rec) = ObjStore::open(objects, OpenOptions::new(JOB, 2, Generation(4)))
            .await
            .expect("open");
        assert_eq!(rec.latest().map(|c| c.checkpoint), Some(CheckpointId(1)));
        assert_eq!(rec.damaged.len(), 1, "{:?}", rec.damaged);
    });
}

/// A savepoint disposal whose log append lands but loses its answer has an
/// unknown outcome (`DisposalOutcomeUnknown`, not an I/O error, which
/// would say the store still holds it): the savepoint stays held and its
/// objects kept; disposing again settles it, and the next leader does not
/// hold it.
#[test]
fn a_disposal_whose_append_answer_is_lost_is_an_unknown_outcome_settled_by_a_retry() {
    block_on(async {
        let lossy = Arc::new(Wrapped::<LoseNextLogAnswer>::default());
        let objects: Arc<dyn ObjectStore> = Arc::clone(&lossy) as Arc<dyn ObjectStore>;
        let g1 = Generation(1);
        let (mut store, _) = ObjStore::open(Arc::clone(&objects), OpenOptions::new(JOB, 2, g1))
            .await
            .expect("open");
        objstore::write_state(&*objects, StateHandle(1), vec![1])
            .await
            .expect("state");
        let savepoint = store.allocate_id(g1).await.expect("id");
        store
            .finalize(g1, savepoint, true, Millis(1), &[StateHandle(1)])
            .await
            .expect("finalize");
        store.store(g1, savepoint).await.expect("store");
        let newer = finalize_with_state(&mut store, &*objects, g1, 2).await;
        store.store(g1, newer).await.expect("store");
        lossy.hooks.arm();
        match store.dispose_savepoint(g1, savepoint).await {
            Err(StoreError::DisposalOutcomeUnknown { savepoint: s, .. }) => {
                assert_eq!(s, savepoint);
            }
            other => panic!("expected DisposalOutcomeUnknown, got {other:?}"),
        }
        assert!(store.holdings().stored_ids().contains(&savepoint));
        assert_eq!(
            store.dispose_savepoint(g1, savepoint).await.expect("retry"),
            vec![StateHandle(1)]
        );
        assert!(!store.holdings().stored_ids().contains(&savepoint));
        drop(store);
        let (next, _) = ObjStore::open(objects, OpenOptions::new(JOB, 2, Generation(2)))
            .await
            .expect("open");
        assert_eq!(next.holdings().stored_ids(), vec![newer]);
    });
}

/// Metadata whose only damage is its checksum still names its handles, as
/// the file store reads it: they are kept with the quarantined file, and a
/// state object nothing names is deleted (not kept as if the quarantine
/// could name nothing).
#[test]
fn metadata_damaged_only_in_its_checksum_still_names_its_state() {
    block_on(async {
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let last = two_committed(&objects).await;
        let meta = object_store::path::Path::from(store::meta_path(last));
        let mut bytes = objects
            .get(&meta)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("bytes")
            .to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(store::Metadata::decode(&bytes).is_err());
        assert!(store::handles_named_by(&bytes).is_some());
        objects.put(&meta, bytes.into()).await.expect("put");
        objstore::write_state(&*objects, StateHandle(77), vec![7])
            .await
            .expect("orphan");
        let (_, rec) = ObjStore::open(
            Arc::clone(&objects),
            OpenOptions::new(JOB, 2, Generation(2)),
        )
        .await
        .expect("second start");
        assert_eq!(rec.damaged.len(), 1, "{rec:?}");
        assert_eq!(rec.removed_orphans, [StateHandle(77)], "{rec:?}");
        assert!(rec.kept_unreferenced.is_empty(), "{rec:?}");
        let left = state_objects(&*objects).await;
        assert_eq!(left.len(), 2, "{left:?}");
    });
}
