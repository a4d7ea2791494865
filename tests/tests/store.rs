//! The durable checkpoint store (`ckpt_core::host::store`): commit and
//! retention, the id counter across crashes, recovery from half-written and
//! corrupt files, and the durability guard (a stored checkpoint's state is
//! never deleted, even when today's coordinator asks for it).
#![cfg(not(loom))]

use std::path::PathBuf;
use std::sync::Arc;

use ckpt_core::coordinator::CoordinatorEffect;
use ckpt_core::coordinator::JobCommand;
use ckpt_core::coordinator::{CoordinatorEvent, CoordinatorSettings, CoordinatorState, Timer};
use ckpt_core::coordinator::{IoAnswer, IoRequest};
use ckpt_core::host::fs::{Fs, MemFs, StdFs};
use ckpt_core::host::runtime::statefile::{StateFileError, TaskSnapshot};
use ckpt_core::host::runtime::Record;
use ckpt_core::host::store::{
    state_path, write_state, Damage, Damaged, Discarded, FileStore, Metadata, MetadataError,
    Recovery, StoreError, CHECKPOINT_DIR,
};
use ckpt_core::route::TaskMessage;
use ckpt_core::route::ToCoordinator;
use ckpt_core::{
    AttemptNo, CheckpointId, JobId, LegacyBug, Millis, Semantics, StateHandle, TaskId,
};
use ckpt_tests::host::open_store;
use proptest::prelude::*;

const JOB: JobId = JobId(7);

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn h(n: u64) -> StateHandle {
    StateHandle(n)
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ckpt-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn open(fs: &Arc<dyn Fs>, retained: usize) -> (FileStore, Recovery) {
    open_store(fs, JOB, retained).unwrap()
}

/// Writes the state files and commits checkpoint `id` with `handles`.
fn commit(store: &mut FileStore, fs: &dyn Fs, id: CheckpointId, handles: &[StateHandle]) {
    for handle in handles {
        write_state(fs, *handle, b"state").unwrap();
    }
    store
        .finalize(store.generation(), id, false, Millis(1), handles)
        .unwrap();
    store.store(store.generation(), id).unwrap();
}

#[test]
fn stores_retains_n_and_restores_the_latest_on_the_real_disk() {
    let dir = tmpdir("retain");
    let fs: Arc<dyn Fs> = Arc::new(StdFs::new(&dir).unwrap());
    let (mut store, rec) = open(&fs, 2);
    assert!(rec.checkpoints.is_empty());
    for n in 1..=3 {
        let id = store.allocate_id(store.generation()).unwrap();
        assert_eq!(id, cp(n));
        commit(&mut store, &*fs, id, &[h(n * 10), h(n * 10 + 1)]);
    }
    // Checkpoint 1 was evicted from the store's metadata: its state is the
    // coordinator's to discard (and now may be).
    assert_eq!(
        store
            .holdings()
            .stored()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        [cp(2), cp(3)]
    );
    assert_eq!(
        store.discard(store.generation(), h(10)).unwrap(),
        Discarded::Deleted
    );
    drop(store);

    let (store, rec) = open(&fs, 2);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(cp(3)));
    assert_eq!(rec.checkpoints.len(), 2);
    assert_eq!(rec.checkpoints[0].handles, [h(20), h(21)]);
    // h(11) was never discarded by anyone but belongs to no retained
    // checkpoint: an orphan, deleted on start.
    assert_eq!(rec.removed_orphans, [h(11)]);
    assert!(rec.damaged.is_empty() && rec.quarantined.is_empty());
    assert_eq!(store.next_id(), cp(4));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_id_counter_never_reissues_an_id_after_a_crash() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 1);
    for n in 1..=5 {
        assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(n));
    }
    // Crash: nothing completed, the store object is simply gone.
    drop(store);
    let (mut store, rec) = open(&fs, 1);
    assert_eq!(rec.last_id, Some(cp(5)));
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(6));
    // A reset (restore of a savepoint) never moves the counter back.
    store.reset_counter(store.generation(), cp(3)).unwrap();
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(7));
    store.reset_counter(store.generation(), cp(100)).unwrap();
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(100));
}

#[test]
fn a_corrupt_counter_is_an_error_never_a_silent_reset() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 1);
    store.allocate_id(store.generation()).unwrap();
    drop(store);
    let mut bytes = fs.read("ids").unwrap();
    bytes[12] ^= 0x40;
    fs.write("ids", &bytes).unwrap();
    match open_store(&fs, JOB, 1) {
        Err(StoreError::BadCounter { why, .. }) => assert!(why.contains("checksum"), "{why}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a corrupt counter was accepted"),
    }
    fs.write("ids", b"short").unwrap();
    assert!(matches!(
        open_store(&fs, JOB, 1),
        Err(StoreError::BadCounter { .. })
    ));
}

#[test]
fn half_written_checkpoints_are_cleaned_up_and_never_restored() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 1);
    let one = store.allocate_id(store.generation()).unwrap();
    commit(&mut store, &*fs, one, &[h(1)]);
    // Checkpoint 2 was finalized (its state written) but the process died
    // before the store step; a temporary file of another write is left too.
    let two = store.allocate_id(store.generation()).unwrap();
    write_state(&*fs, h(2), b"state").unwrap();
    store
        .finalize(store.generation(), two, false, Millis(2), &[h(2)])
        .unwrap();
    fs.write(
        &format!("{CHECKPOINT_DIR}/chk-00000000000000000003.meta.tmp"),
        b"par",
    )
    .unwrap();
    drop(store);

    let (store, rec) = open(&fs, 1);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(one));
    assert_eq!(rec.removed_partial.len(), 2, "{:?}", rec.removed_partial);
    assert_eq!(rec.removed_orphans, [h(2)]);
    assert!(!fs.exists(&state_path(h(2))));
    assert!(fs.exists(&state_path(h(1))));
    assert_eq!(store.next_id(), cp(3));
}

/// A store in memory that committed checkpoints 1 and 2 (state `h(1)`,
/// `h(2)`), closed.
fn two_committed() -> Arc<dyn Fs> {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 2);
    for n in 1..=2 {
        let id = store.allocate_id(store.generation()).unwrap();
        commit(&mut store, &*fs, id, &[h(n)]);
    }
    fs
}

fn meta_path(id: u64) -> String {
    format!("{CHECKPOINT_DIR}/chk-{id:020}.meta")
}

/// Stores checkpoints 1 and 2, then lets `damage` change 2's metadata file;
/// recovery must reject it with `expect`, fall back to 1, and keep the
/// damaged file aside.
fn recover_with_damaged_latest(
    damage: impl FnOnce(Vec<u8>) -> Vec<u8>,
    expect: fn(&MetadataError) -> bool,
) {
    let fs = two_committed();
    let bytes = fs.read(&meta_path(2)).unwrap();
    fs.write(&meta_path(2), &damage(bytes)).unwrap();
    let (_, rec) = open(&fs, 2);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(cp(1)), "{rec:?}");
    assert_eq!(rec.damaged.len(), 1, "{rec:?}");
    assert_eq!(rec.damaged[0].checkpoint, Some(cp(2)));
    assert_eq!(rec.damaged[0].file, meta_path(2));
    match &rec.damaged[0].damage {
        Damage::Metadata(e) => assert!(expect(e), "{e:?}"),
        other => panic!("{other:?}"),
    }
    assert!(fs.exists(&format!("{}.corrupt", meta_path(2))));
    // Quarantined with its state: the state file is not an orphan.
    assert!(rec.removed_orphans.is_empty(), "{rec:?}");
    // Reported once, not again on the next start; the state stays.
    let (_, rec) = open(&fs, 2);
    assert!(rec.damaged.is_empty());
    assert_eq!(rec.quarantined, [format!("{}.corrupt", meta_path(2))]);
    assert!(fs.exists(&state_path(h(2))));
}

#[test]
fn corrupt_metadata_is_reported_and_never_loaded() {
    recover_with_damaged_latest(
        |mut b| {
            b[30] ^= 1;
            b
        },
        |e| matches!(e, MetadataError::ChecksumMismatch { .. }),
    );
}

#[test]
fn truncated_metadata_is_reported_and_never_loaded() {
    recover_with_damaged_latest(
        |b| b[..b.len() - 5].to_vec(),
        |e| matches!(e, MetadataError::Truncated { .. }),
    );
    recover_with_damaged_latest(
        |b| b[..3].to_vec(),
        |e| matches!(e, MetadataError::Truncated { .. }),
    );
}

#[test]
fn foreign_metadata_is_reported_and_never_loaded() {
    recover_with_damaged_latest(
        |_| b"{\"not\": \"a checkpoint\"}".to_vec(),
        |e| matches!(e, MetadataError::Foreign),
    );
    // Another job's checkpoint under our name.
    recover_with_damaged_latest(
        |_| {
            Metadata {
                job: JobId(99),
                checkpoint: cp(2),
                savepoint: false,
                timestamp: Millis(0),
                handles: vec![h(2)],
            }
            .encode()
        },
        |e| {
            matches!(
                e,
                MetadataError::WrongJob {
                    found: JobId(99),
                    ..
                }
            )
        },
    );
    // A valid file under the wrong name.
    recover_with_damaged_latest(
        |_| {
            Metadata {
                job: JOB,
                checkpoint: cp(9),
                savepoint: false,
                timestamp: Millis(0),
                handles: vec![h(2)],
            }
            .encode()
        },
        |e| matches!(e, MetadataError::IdMismatch { .. }),
    );
}

#[test]
fn a_checkpoint_with_a_missing_state_file_is_reported_and_not_restored() {
    let fs = two_committed();
    fs.remove(&state_path(h(2))).unwrap();
    let (_, rec) = open(&fs, 2);
    assert_eq!(
        rec.damaged,
        [Damaged {
            checkpoint: Some(cp(2)),
            file: state_path(h(2)),
            damage: Damage::MissingState {
                handle: h(2),
                why: "no such file".into()
            },
        }]
    );
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(cp(1)));
}

#[test]
fn the_guard_refuses_to_delete_state_of_a_stored_checkpoint() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 1);
    let one = store.allocate_id(store.generation()).unwrap();
    commit(&mut store, &*fs, one, &[h(1)]);
    assert_eq!(
        store.discard(store.generation(), h(1)).unwrap(),
        Discarded::Refused { checkpoint: one }
    );
    assert!(fs.exists(&state_path(h(1))), "stored state was deleted");
    assert_eq!(store.stats().guard_refusals, 1);
    assert_eq!(store.stats().refused, [(h(1), one)]);
    // When the store itself evicts checkpoint 1, the deferred discard runs.
    let two = store.allocate_id(store.generation()).unwrap();
    commit(&mut store, &*fs, two, &[h(2)]);
    assert!(!fs.exists(&state_path(h(1))));
    assert!(fs.exists(&state_path(h(2))));
    // A handle no stored checkpoint holds is deleted at once.
    write_state(&*fs, h(77), b"x").unwrap();
    assert_eq!(
        store.discard(store.generation(), h(77)).unwrap(),
        Discarded::Deleted
    );
    assert_eq!(
        store.discard(store.generation(), h(77)).unwrap(),
        Discarded::AlreadyGone
    );
}

/// Drives a coordinator of `semantics` over this store: a checkpoint whose
/// store I/O commits, but before its answer is delivered the scheduler is
/// stopped. Returns the store, the committed id, the coordinator, and how
/// many of the coordinator's `DiscardState` the store's guard refused.
fn stop_while_storing(
    fs: &Arc<dyn Fs>,
    semantics: Semantics,
) -> (FileStore, CheckpointId, CoordinatorState, usize) {
    let (mut store, _) = open(fs, 1);
    let mut settings = CoordinatorSettings::with_tasks(JOB, 2);
    settings.semantics = semantics;
    let mut coord = CoordinatorState::from_settings(settings).unwrap();
    let mut now = Millis(0);
    // A stack: the last pushed runs next.
    let mut queue = vec![
        CoordinatorEvent::TimerFired {
            timer: Timer::Periodic,
        },
        CoordinatorEvent::StartScheduler,
    ];
    let mut stored = None;
    let mut refused = 0;
    while let Some(ev) = queue.pop() {
        now = now.saturating_add(1_000);
        let step = coord.apply(now, ev);
        for e in &step.effects {
            match e {
                CoordinatorEffect::Io { request: req, .. } => {
                    let id = match req {
                        IoRequest::AllocateId { .. } => {
                            store.allocate_id(store.generation()).unwrap()
                        }
                        IoRequest::Finalize {
                            checkpoint,
                            timestamp,
                            handles,
                            ..
                        } => {
                            store
                                .finalize(
                                    store.generation(),
                                    *checkpoint,
                                    false,
                                    *timestamp,
                                    handles,
                                )
                                .unwrap();
                            *checkpoint
                        }
                        IoRequest::Store { checkpoint } => {
                            // The store's I/O commits, but before its
                            // answer is delivered the scheduler is stopped.
                            store.store(store.generation(), *checkpoint).unwrap();
                            stored = Some(*checkpoint);
                            queue.push(req.answer(IoAnswer::Ok { id: *checkpoint }));
                            queue.push(CoordinatorEvent::StopScheduler);
                            continue;
                        }
                        IoRequest::MasterHooks { checkpoint, .. } => *checkpoint,
                    };
                    queue.push(req.answer(IoAnswer::Ok { id }));
                }
                CoordinatorEffect::Rpc {
                    message: TaskMessage::Trigger { checkpoint, .. },
                    ..
                } => {
                    let checkpoint = *checkpoint;
                    for t in 0..2u32 {
                        let handle = h(u64::from(t) + 100);
                        write_state(&**fs, handle, b"s").unwrap();
                        let ack = ToCoordinator::Ack { checkpoint, handle };
                        queue.insert(0, ack.event(JOB, TaskId(t), AttemptNo(0)));
                    }
                }
                CoordinatorEffect::Discard { handle, .. } => {
                    if let Discarded::Refused { .. } =
                        store.discard(store.generation(), *handle).unwrap()
                    {
                        refused += 1;
                    }
                }
                CoordinatorEffect::Rpc { .. }
                | CoordinatorEffect::Timer { .. }
                | CoordinatorEffect::Job(_)
                | CoordinatorEffect::Report(_) => {}
            }
        }
    }
    let stored = stored.expect("the checkpoint reached the store");
    (store, stored, coord, refused)
}

/// The durability rule: the fixed coordinator lets the checkpoint being
/// stored complete through a scheduler stop and deletes nothing; the next
/// start restores it with all of its state.
#[test]
fn stop_while_storing_keeps_the_committed_checkpoint() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (store, stored, coord, refused) = stop_while_storing(&fs, Semantics::Fixed);
    assert_eq!(refused, 0);
    assert_eq!(store.stats().guard_refusals, 0);
    assert_eq!(coord.latest_completed(), Some(stored), "it completed");
    drop(store);
    let (_, rec) = open(&fs, 1);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(stored));
    assert!(rec.damaged.is_empty());
}

/// The same story against the legacy reducer (the discard-while-storing
/// bug): it aborts the checkpoint and asks to delete both handles of the
/// committed checkpoint; the store's guard refuses, and the next start still
/// restores it whole.
#[test]
fn the_store_guard_refuses_the_legacy_discard_while_storing() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let legacy = Semantics::Legacy(LegacyBug::DiscardWhileStoring);
    let (store, stored, coord, refused) = stop_while_storing(&fs, legacy);
    assert_eq!(refused, 2);
    assert_eq!(store.stats().guard_refusals, 2);
    assert_eq!(coord.latest_completed(), None, "the reducer aborted it");
    drop(store);
    let (_, rec) = open(&fs, 1);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(stored));
    assert!(rec.damaged.is_empty());
    for handle in [h(100), h(101)] {
        assert!(fs.exists(&state_path(handle)));
    }
}

#[test]
fn state_files_roundtrip_and_reject_damage() {
    let snap = TaskSnapshot {
        task: TaskId(3),
        checkpoint: cp(9),
        operator: vec![1, 2, 3],
        channel: vec![Record {
            id: 1,
            key: 2,
            value: 3,
        }],
    };
    let bytes = snap.encode();
    assert_eq!(TaskSnapshot::decode(&bytes), Ok(snap));
    for cut in 0..bytes.len() {
        assert!(TaskSnapshot::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut flipped = bytes.clone();
    flipped[24] ^= 4; // inside the operator snapshot
    assert_eq!(
        TaskSnapshot::decode(&flipped),
        Err(StateFileError::ChecksumMismatch)
    );
    assert_eq!(
        TaskSnapshot::decode(b"XXXXXXXXXXXXXXXXXXXX"),
        Err(StateFileError::Foreign)
    );
}

proptest! {
    #[test]
    fn metadata_decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Metadata::decode(&bytes);
        let _ = TaskSnapshot::decode(&bytes);
    }

    #[test]
    fn metadata_roundtrips_and_every_truncation_is_refused(
        id in 1u64..1_000_000,
        savepoint in any::<bool>(),
        handles in proptest::collection::vec(any::<u64>(), 0..20),
    ) {
        let m = Metadata {
            job: JOB,
            checkpoint: cp(id),
            savepoint,
            timestamp: Millis(id * 3),
            handles: handles.into_iter().map(StateHandle).collect(),
        };
        let b = m.encode();
        prop_assert_eq!(Metadata::decode(&b), Ok(m.clone()));
        for cut in 0..b.len() {
            prop_assert!(Metadata::decode(&b[..cut]).is_err());
        }
        // The version-1 format (no savepoint flag) is still read, as a
        // checkpoint; a savepoint cannot be written in it.
        match m.encode_v1() {
            Some(v1) => {
                prop_assert!(!savepoint);
                prop_assert_eq!(Metadata::decode(&v1), Ok(m.clone()));
                prop_assert_eq!(v1.len() + 4, b.len());
                for cut in 0..v1.len() {
                    prop_assert!(Metadata::decode(&v1[..cut]).is_err());
                }
            }
            None => prop_assert!(savepoint),
        }
        // Bytes after the checksum (outside what it covers) are refused too.
        let mut longer = b.clone();
        longer.extend_from_slice(&[0u8; 3]);
        prop_assert_eq!(Metadata::decode(&longer), Err(MetadataError::TrailingBytes(3)));
    }
}

/// The sink's debug form names what an operator needs when a commit goes
/// wrong: the task, the records not yet pre-committed and the pending ones.
#[test]
fn the_two_phase_sink_debug_form_shows_its_task_and_pending_commits() {
    use ckpt_core::host::pipeline::TwoPhaseSink;
    use std::sync::atomic::AtomicU64;
    let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
    let sink = TwoPhaseSink::new(TaskId(7), fs, Arc::new(AtomicU64::new(0)));
    let shown = format!("{sink:?}");
    assert!(shown.starts_with("TwoPhaseSink {"), "{shown}");
    assert!(shown.contains("task: TaskId(7)"), "{shown}");
    assert!(shown.contains("pending: {}"), "{shown}");
}

/// A damaged state file of the checkpoint to restore is treated as damaged
/// metadata is: reported with its path (the handle in hex, as the file is
/// named), the checkpoint quarantined with its state files, the previous
/// one restored (none here); nothing is loaded from it. When the sink has
/// already committed that checkpoint's output, the start is refused with
/// nothing changed on disk.
#[test]
fn a_damaged_state_file_of_the_restored_checkpoint_is_reported_and_never_loaded() {
    use ckpt_core::coordinator::JobStatus;
    use ckpt_core::host::pipeline::{pipeline_spec, PipelineConfig, COMMITTED_DIR, PIPELINE_JOB};
    use ckpt_core::host::runtime::statefile::handle_for;
    use ckpt_core::host::runtime::{Job, JobError};
    use std::sync::atomic::AtomicU64;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    type Spoil = fn(TaskId) -> Vec<u8>;
    let cases: [(&str, Spoil); 3] = [
        ("garbage", |_| b"not a state file".to_vec()),
        ("truncated", |t| {
            let b = TaskSnapshot {
                task: t,
                checkpoint: cp(1),
                operator: vec![0; 8],
                channel: Vec::new(),
            }
            .encode();
            b[..b.len() - 3].to_vec()
        }),
        ("another task's file", |t| {
            TaskSnapshot {
                task: TaskId(t.0 + 1),
                checkpoint: cp(1),
                operator: vec![0; 8],
                channel: Vec::new(),
            }
            .encode()
        }),
    ];
    let listing = |fs: &Arc<dyn Fs>| -> Vec<(String, Vec<u8>)> {
        let mut all = Vec::new();
        for dir in [CHECKPOINT_DIR, "state", "sink/committed", "sink/pending"] {
            for name in fs.list(dir).unwrap() {
                let path = format!("{dir}/{name}");
                let bytes = fs.read(&path).unwrap();
                all.push((path, bytes));
            }
        }
        all
    };
    for sink_committed in [false, true] {
        for (what, bytes) in cases {
            let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
            let (mut store, _) = open_store(&fs, PIPELINE_JOB, 2).unwrap();
            let id = store.allocate_id(store.generation()).unwrap();
            let handles: Vec<StateHandle> =
                (0..3).map(|t| handle_for(id, TaskId(t)).unwrap()).collect();
            for (t, h) in handles.iter().enumerate() {
                write_state(&*fs, *h, &bytes(TaskId(u32::try_from(t).unwrap()))).unwrap();
            }
            store
                .finalize(store.generation(), id, false, Millis(1), &handles)
                .unwrap();
            store.store(store.generation(), id).unwrap();
            drop(store);
            if sink_committed {
                // The sink committed checkpoint 1's transaction.
                fs.write(&format!("{COMMITTED_DIR}/txn-{:020}-{:08}", id.0, 2), b"t")
                    .unwrap();
            }
            let before = listing(&fs);
            let spec = pipeline_spec(
                &PipelineConfig::default(),
                Arc::clone(&fs),
                Arc::new(AtomicU64::new(0)),
            );
            let started = rt.block_on(Job::start(spec, Arc::clone(&fs)));
            let first = &state_path(handles[0]);
            assert!(first.ends_with("0000000001000000"), "{first}");
            match (sink_committed, started) {
                (false, Ok(job)) => {
                    let rec = job.recovery().clone();
                    assert_eq!(job.stats().restored_at_start, None, "{what}");
                    assert_eq!(rec.damaged.len(), 3, "{what}: {rec:?}");
                    assert_eq!(&rec.damaged[0].file, first, "{what}");
                    assert!(
                        matches!(rec.damaged[0].damage, Damage::DamagedState { handle, .. } if handle == handles[0]),
                        "{what}: {:?}",
                        rec.damaged[0]
                    );
                    assert!(rec.damaged[0].to_string().contains(first.as_str()));
                    assert_eq!(rec.quarantined, [format!("{}.corrupt", meta_path(1))]);
                    rt.block_on(job.shutdown(JobStatus::Finished));
                    for h in &handles {
                        assert!(
                            fs.exists(&state_path(*h)),
                            "{what}: quarantined state deleted"
                        );
                    }
                }
                (
                    true,
                    Err(JobError::Store(StoreError::BehindCommitted {
                        committed,
                        restorable,
                        damaged,
                    })),
                ) => {
                    assert_eq!((committed, restorable), (id, None), "{what}");
                    assert_eq!(damaged.len(), 3, "{what}");
                    assert_eq!(&damaged[0].file, first, "{what}");
                    assert_eq!(
                        listing(&fs),
                        before,
                        "{what}: the refused start changed files"
                    );
                }
                (_, Ok(_)) => panic!("{what}: started although the sink committed checkpoint {id}"),
                (_, Err(e)) => panic!("{what}: unexpected error {e}"),
            }
        }
    }
}

#[test]
fn the_real_disk_lists_a_missing_directory_as_empty_and_a_file_as_an_error() {
    let dir = tmpdir("list");
    let fs = StdFs::new(&dir).unwrap();
    assert_eq!(fs.list("nothing-here").unwrap(), Vec::<String>::new());
    fs.write("plain", b"x").unwrap();
    // Not a directory: an error the store must see, not an empty listing
    // (which would read as "no checkpoints").
    assert!(fs.list("plain").is_err());
    fs.create_dir_all("d").unwrap();
    fs.write("d/b", b"2").unwrap();
    fs.write("d/a", b"1").unwrap();
    let mut names = fs.list("d").unwrap();
    names.sort();
    assert_eq!(names, ["a", "b"]);
}

/// The numbered source emits `0..total` in order, keyed round-robin over
/// its keys, then reports exhaustion; a record given to it is an error.
#[test]
fn the_number_source_emits_its_ids_keyed_round_robin_and_refuses_input() {
    use ckpt_core::host::pipeline::NumberSource;
    use ckpt_core::host::runtime::{Operator, SourcePoll};
    let mut src = NumberSource::new(5, 3, 0);
    let mut out = Vec::new();
    assert!(matches!(
        src.poll_source(4, &mut out),
        Ok(SourcePoll::Emitted)
    ));
    assert!(matches!(
        src.poll_source(4, &mut out),
        Ok(SourcePoll::Emitted)
    ));
    assert!(matches!(
        src.poll_source(4, &mut out),
        Ok(SourcePoll::Exhausted)
    ));
    let got: Vec<(u64, u64)> = out.iter().map(|r| (r.id, r.key)).collect();
    assert_eq!(got, [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)]);
    let mut sink = Vec::new();
    assert!(src.process(out[0], &mut sink).is_err());
    assert!(sink.is_empty());
}

/// A job whose edges are not a directed acyclic graph of in-range tasks
/// (a self-loop, an edge out of range, a cycle, an edge twice) does not
/// start: a typed topology error, nothing opened. (Fan-in, a task with
/// several upstream tasks, is accepted: `fan_in.rs`.)
#[test]
fn a_job_with_a_bad_edge_is_refused_before_it_starts() {
    use ckpt_core::host::pipeline::{pipeline_spec, PipelineConfig};
    use ckpt_core::host::runtime::{Job, JobError};
    use std::sync::atomic::AtomicU64;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A self-loop on the source (which has no upstream yet), edges out of
    // range on either end, a cycle through every task (sink -> source) and
    // the source -> counter edge a second time.
    for bad in [(0, 0), (0, 3), (3, 0), (2, 0), (0, 1)] {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
        let mut spec = pipeline_spec(
            &PipelineConfig::default(),
            Arc::clone(&fs),
            Arc::new(AtomicU64::new(0)),
        );
        spec.edges.push((TaskId(bad.0), TaskId(bad.1)));
        let started = rt.block_on(Job::start(spec, Arc::clone(&fs)));
        assert!(
            matches!(started, Err(JobError::Topology(_))),
            "edge {bad:?} was accepted"
        );
        assert!(fs.list(CHECKPOINT_DIR).unwrap().is_empty());
    }
}

/// A job spec's debug form shows its shape (the operators, closures, are
/// elided).
#[test]
fn a_job_spec_debug_form_shows_its_tasks_and_edges() {
    use ckpt_core::host::pipeline::{pipeline_spec, PipelineConfig};
    use std::sync::atomic::AtomicU64;
    let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
    let spec = pipeline_spec(&PipelineConfig::default(), fs, Arc::new(AtomicU64::new(0)));
    let shown = format!("{spec:?}");
    assert!(shown.starts_with("JobSpec {"), "{shown}");
    assert!(shown.contains("tasks: 3"), "{shown}");
    assert!(
        shown.contains("edges: [(TaskId(0), TaskId(1)), (TaskId(1), TaskId(2))]"),
        "{shown}"
    );
    assert!(shown.ends_with(".. }"), "{shown}");
}

/// A sink that restarts removes the pending (pre-committed, never
/// committed) transactions of its own task and no other sink's; the pending
/// list names each file's checkpoint and task.
#[test]
fn a_restarted_sink_removes_only_its_own_uncommitted_transactions() {
    use ckpt_core::host::pipeline::{pending_transactions, TwoPhaseSink, PENDING_DIR};
    use ckpt_core::host::runtime::{Operator, Record};
    use std::sync::atomic::AtomicU64;
    let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
    let mut sinks: Vec<TwoPhaseSink> = [2, 5]
        .into_iter()
        .map(|t| TwoPhaseSink::new(TaskId(t), Arc::clone(&fs), Arc::new(AtomicU64::new(0))))
        .collect();
    for s in &mut sinks {
        s.restore(None, None).unwrap();
        for c in [3, 4] {
            let r = Record {
                id: c,
                key: 0,
                value: 1,
            };
            s.process(r, &mut Vec::new()).unwrap();
            s.snapshot(cp(c)).unwrap();
        }
    }
    let all = [(3, 2), (3, 5), (4, 2), (4, 5)].map(|(c, t)| (cp(c), TaskId(t)));
    assert_eq!(
        pending_transactions(&*fs).unwrap(),
        all.into_iter().collect()
    );
    // Task 2 restarts from scratch: its pre-commits belong to epochs that
    // never completed; task 5's are not its to remove.
    let mut again = TwoPhaseSink::new(TaskId(2), Arc::clone(&fs), Arc::new(AtomicU64::new(0)));
    again.restore(None, None).unwrap();
    assert_eq!(
        pending_transactions(&*fs).unwrap(),
        [(cp(3), TaskId(5)), (cp(4), TaskId(5))]
            .into_iter()
            .collect()
    );
    assert_eq!(fs.list(PENDING_DIR).unwrap().len(), 2);
}

/// Every truncation and every flipped byte of a committed transaction file
/// is a typed `BadTxn` from `verify_output`, never a panic nor a record.
#[test]
fn every_damaged_committed_transaction_is_refused_by_the_output_check() {
    use ckpt_core::host::pipeline::{verify_output, OutputError, TwoPhaseSink, COMMITTED_DIR};
    use ckpt_core::host::runtime::{Operator, Record};
    use std::sync::atomic::AtomicU64;
    let fs: Arc<dyn Fs> = Arc::new(MemFs::default());
    let mut sink = TwoPhaseSink::new(TaskId(2), Arc::clone(&fs), Arc::new(AtomicU64::new(0)));
    sink.restore(None, None).unwrap();
    for id in 0..2 {
        sink.process(
            Record {
                id,
                key: id,
                value: 1,
            },
            &mut Vec::new(),
        )
        .unwrap();
    }
    sink.snapshot(cp(1)).unwrap();
    sink.notify_complete(cp(1)).unwrap();
    assert_eq!(verify_output(&*fs, 2, true).unwrap().records, 2);
    let names = fs.list(COMMITTED_DIR).unwrap();
    assert_eq!(names.len(), 1);
    let file = format!("{COMMITTED_DIR}/{}", names[0]);
    let good = fs.read(&file).unwrap();
    let mut damaged: Vec<Vec<u8>> = (0..good.len()).map(|cut| good[..cut].to_vec()).collect();
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0x01;
        damaged.push(b);
    }
    for b in damaged {
        fs.write(&file, &b).unwrap();
        match verify_output(&*fs, 2, false) {
            Err(OutputError::BadTxn { .. }) => {}
            other => panic!("{} damaged bytes of {}: {other:?}", b.len(), good.len()),
        }
    }
}

// ---------------------------------------------------------------------------
// The durability rules the store shares with the coordinator, on the real
// disk: one commit order, savepoints kept out of retention, the recovery
// list as `Recover` takes it, retention lowered across a restart, and the
// fence against a deposed leader.

fn real_disk(name: &str) -> (PathBuf, Arc<dyn Fs>) {
    let dir = tmpdir(name);
    let fs: Arc<dyn Fs> = Arc::new(StdFs::new(&dir).unwrap());
    (dir, fs)
}

/// Finalizes and stores `id` (a savepoint when `savepoint`) triggered at
/// `at`, its state files written first.
fn commit_kind(
    store: &mut FileStore,
    fs: &dyn Fs,
    id: CheckpointId,
    savepoint: bool,
    at: u64,
    handles: &[StateHandle],
) {
    for handle in handles {
        write_state(fs, *handle, b"state").unwrap();
    }
    let g = store.generation();
    store
        .finalize(g, id, savepoint, Millis(at), handles)
        .unwrap();
    store.store(g, id).unwrap();
}

/// Every file under the store's directories, with its contents, except the
/// leader records (which every open adds to).
fn files(fs: &dyn Fs) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for dir in ["", CHECKPOINT_DIR, "state"] {
        for name in fs.list(dir).unwrap() {
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            let bytes = fs.read(&path).unwrap();
            all.push((path, bytes));
        }
    }
    all
}

/// A savepoint pending since before a newer checkpoint completed commits
/// after it (the coordinator allows it, and so does the store: one rule,
/// `ckpt_core::commit::check_next`); a checkpoint after a newer one does not.
#[test]
fn a_savepoint_may_commit_after_a_newer_checkpoint_and_a_checkpoint_may_not() {
    let (dir, fs) = real_disk("order");
    let (mut store, _) = open(&fs, 2);
    let g = store.generation();
    let sp = store.allocate_id(g).unwrap();
    let older = store.allocate_id(g).unwrap();
    let newer = store.allocate_id(g).unwrap();
    write_state(&*fs, h(1), b"s").unwrap();
    write_state(&*fs, h(2), b"s").unwrap();
    // Both finalized while nothing is stored; checkpoint 3 commits first.
    store.finalize(g, sp, true, Millis(10), &[h(1)]).unwrap();
    store
        .finalize(g, older, false, Millis(20), &[h(2)])
        .unwrap();
    commit_kind(&mut store, &*fs, newer, false, 30, &[h(3)]);
    store.store(g, sp).unwrap();
    match store.store(g, older) {
        Err(StoreError::CommitOrder(ckpt_core::commit::CommitOrderError::NotNewer {
            id,
            newest,
        })) => {
            assert_eq!((id, newest), (older, newer));
        }
        other => panic!("checkpoint 2 after 3: {other:?}"),
    }
    // Refused before the rename: checkpoint 2 is definitely not stored.
    assert!(!fs.exists(&meta_path(2)));
    assert!(!fs.exists(&format!("{CHECKPOINT_DIR}/chk-{:020}.prepared", 2)));
    // A checkpoint not above what is held is refused at finalize already.
    assert!(matches!(
        store.finalize(g, older, false, Millis(20), &[h(2)]),
        Err(StoreError::CommitOrder(_))
    ));
    drop(store);
    let (_, rec) = open(&fs, 2);
    let got: Vec<(CheckpointId, bool, Millis)> = rec
        .checkpoints
        .iter()
        .map(|c| (c.checkpoint, c.savepoint, c.timestamp))
        .collect();
    assert_eq!(got, [(sp, true, Millis(10)), (newer, false, Millis(30))]);
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(newer));
    assert!(ckpt_core::commit::is_legal_order(
        rec.checkpoints.iter().map(|c| (c.checkpoint, c.savepoint))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Savepoints do not count towards `retained_max` and retention never
/// removes one; a discard of a savepoint's state is declined; only
/// `dispose_savepoint` removes it, metadata first, then the state files no
/// other stored checkpoint references.
#[test]
fn savepoints_are_kept_out_of_retention_until_the_user_disposes_of_them() {
    let (dir, fs) = real_disk("savepoints");
    let (mut store, _) = open(&fs, 1);
    let g = store.generation();
    let sp = store.allocate_id(g).unwrap();
    // The savepoint shares h(7) with checkpoint 4 (a file referenced twice).
    commit_kind(&mut store, &*fs, sp, true, 1, &[h(1), h(7)]);
    let mut evicted = Vec::new();
    for n in 2..=4 {
        let id = store.allocate_id(g).unwrap();
        let hs = if n == 4 { vec![h(n), h(7)] } else { vec![h(n)] };
        for handle in &hs {
            write_state(&*fs, *handle, b"state").unwrap();
        }
        store.finalize(g, id, false, Millis(n), &hs).unwrap();
        evicted.extend(store.store(g, id).unwrap().evicted);
    }
    assert_eq!(evicted, [cp(2), cp(3)], "only checkpoints are evicted");
    assert_eq!(
        store
            .holdings()
            .stored()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        [sp, cp(4)]
    );
    assert_eq!(
        store.discard(g, h(1)).unwrap(),
        Discarded::Savepoint { savepoint: sp }
    );
    assert!(fs.exists(&state_path(h(1))));
    assert_eq!(store.stats().guard_refusals, 0);
    // Kept across a restart, with its flag.
    drop(store);
    let (mut store, rec) = open(&fs, 1);
    let g = store.generation();
    assert_eq!(
        rec.checkpoints
            .iter()
            .map(|c| (c.checkpoint, c.savepoint))
            .collect::<Vec<_>>(),
        [(sp, true), (cp(4), false)]
    );
    assert_eq!(store.holdings().is_savepoint(sp), Some(true));
    // Only savepoints, and not the latest checkpoint, are disposed of here.
    assert!(matches!(
        store.dispose_savepoint(g, cp(4)),
        Err(StoreError::NotASavepoint(_))
    ));
    assert!(matches!(
        store.dispose_savepoint(g, cp(2)),
        Err(StoreError::NotStored(_))
    ));
    assert_eq!(store.dispose_savepoint(g, sp).unwrap(), [h(1)]);
    assert!(!fs.exists(&meta_path(1)));
    assert!(!fs.exists(&state_path(h(1))));
    assert!(
        fs.exists(&state_path(h(7))),
        "checkpoint 4 still holds h(7)"
    );
    // A savepoint that is the latest is refused (the next start would
    // restore something older).
    let last = store.allocate_id(g).unwrap();
    commit_kind(&mut store, &*fs, last, true, 9, &[h(9)]);
    assert!(matches!(
        store.dispose_savepoint(g, last),
        Err(StoreError::LatestSavepoint(_))
    ));
    drop(store);
    let (_, rec) = open(&fs, 1);
    assert_eq!(
        rec.checkpoints
            .iter()
            .map(|c| c.checkpoint)
            .collect::<Vec<_>>(),
        [cp(4), last]
    );
    assert!(rec.removed_orphans.is_empty(), "{rec:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The metadata records the savepoint flag and the trigger time; a
/// version-1 file (no flag) is still read, as a checkpoint.
#[test]
fn metadata_keeps_the_savepoint_flag_and_the_trigger_time_and_version_1_is_read() {
    let (dir, fs) = real_disk("meta-v1");
    let (mut store, _) = open(&fs, 3);
    let g = store.generation();
    let one = store.allocate_id(g).unwrap();
    commit_kind(&mut store, &*fs, one, true, 1234, &[h(1)]);
    let meta = Metadata::decode(&fs.read(&meta_path(1)).unwrap()).unwrap();
    assert!(meta.savepoint);
    assert_eq!(meta.timestamp, Millis(1234));
    assert_eq!(
        u32::from_le_bytes(fs.read(&meta_path(1)).unwrap()[8..12].try_into().unwrap()),
        2
    );
    let two = store.allocate_id(g).unwrap();
    drop(store);
    // Checkpoint 2 as an older writer left it.
    write_state(&*fs, h(2), b"state").unwrap();
    let v1 = Metadata {
        job: JOB,
        checkpoint: two,
        savepoint: false,
        timestamp: Millis(777),
        handles: vec![h(2)],
    }
    .encode_v1()
    .unwrap();
    fs.write(&meta_path(2), &v1).unwrap();
    let (_, rec) = open(&fs, 3);
    assert!(rec.damaged.is_empty(), "{rec:?}");
    let got: Vec<(CheckpointId, bool, Millis)> = rec
        .checkpoints
        .iter()
        .map(|c| (c.checkpoint, c.savepoint, c.timestamp))
        .collect();
    assert_eq!(got, [(one, true, Millis(1234)), (two, false, Millis(777))]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The recovery list is what `Recover` takes: a fresh coordinator accepts
/// it as it is, and `Restore { Latest }` then names the store's latest.
#[test]
fn the_recovery_list_goes_to_recover_without_conversion() {
    use ckpt_core::coordinator::{CoordinatorEffect, RestoreSource};
    let (dir, fs) = real_disk("recover");
    let (mut store, _) = open(&fs, 2);
    let g = store.generation();
    for n in 1..=3 {
        let id = store.allocate_id(g).unwrap();
        commit_kind(&mut store, &*fs, id, false, n * 100, &[h(n)]);
    }
    store.allocate_id(g).unwrap(); // id 4 handed out, never completed
    drop(store);
    let (_, rec) = open(&fs, 2);
    assert_eq!(rec.last_id, Some(cp(4)));
    let mut coord = CoordinatorState::from_settings({
        let mut s = CoordinatorSettings::with_tasks(JOB, 1);
        s.retained_max = 2;
        s
    })
    .unwrap();
    let step = coord.apply(Millis(0), rec.recover_event());
    assert!(step.outcome.is_applied(), "{:?}", step.outcome);
    assert_eq!(coord.last_id(), Some(cp(4)));
    assert_eq!(coord.generation(), rec.generation);
    let step = coord.apply(
        Millis(0),
        CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: true,
            },
        },
    );
    assert!(step.effects.iter().any(|e| matches!(
        e,
        CoordinatorEffect::Job(JobCommand::Restore { checkpoint, handles }) if *checkpoint == Some(cp(3)) && handles == &[h(3)]
    )), "{:?}", step.effects);
    let completed: Vec<(CheckpointId, Millis)> =
        coord.completed().map(|c| (c.id(), c.timestamp())).collect();
    assert_eq!(completed, [(cp(2), Millis(200)), (cp(3), Millis(300))]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store written with `retained_max` 3 and opened with 1 recovers every
/// stored checkpoint; the next commit evicts down to the new bound.
#[test]
fn retention_lowered_across_a_restart_keeps_everything_until_the_next_commit() {
    let (dir, fs) = real_disk("lowered");
    let (mut store, _) = open(&fs, 3);
    let g = store.generation();
    for n in 1..=3 {
        let id = store.allocate_id(g).unwrap();
        commit_kind(&mut store, &*fs, id, false, n, &[h(n)]);
    }
    drop(store);
    let (mut store, rec) = open(&fs, 1);
    assert_eq!(
        rec.checkpoints
            .iter()
            .map(|c| c.checkpoint)
            .collect::<Vec<_>>(),
        [cp(1), cp(2), cp(3)]
    );
    assert!(rec.removed_orphans.is_empty());
    for n in 1..=3 {
        assert!(fs.exists(&meta_path(n)));
    }
    let g = store.generation();
    let four = store.allocate_id(g).unwrap();
    write_state(&*fs, h(4), b"state").unwrap();
    store.finalize(g, four, false, Millis(4), &[h(4)]).unwrap();
    assert_eq!(store.store(g, four).unwrap().evicted, [cp(1), cp(2), cp(3)]);
    assert_eq!(
        store
            .holdings()
            .stored()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        [four]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A deposed leader keeps running: every kind of write it makes after a
/// newer generation was claimed is refused with `StaleGeneration`, and
/// nothing it attempted changes what the new leader recovers.
#[test]
fn a_deposed_leader_is_refused_every_write_and_changes_nothing_the_new_one_recovers() {
    let (dir, fs) = real_disk("fence");
    let (mut old, rec) = open(&fs, 2);
    assert_eq!(rec.generation, ckpt_core::Generation(1));
    let g1 = old.generation();
    let sp = old.allocate_id(g1).unwrap();
    commit_kind(&mut old, &*fs, sp, true, 1, &[h(1)]);
    let two = old.allocate_id(g1).unwrap();
    commit_kind(&mut old, &*fs, two, false, 2, &[h(2)]);
    // Checkpoint 3 is finalized by the old leader when it loses leadership.
    let three = old.allocate_id(g1).unwrap();
    write_state(&*fs, h(3), b"state").unwrap();
    old.finalize(g1, three, false, Millis(3), &[h(3)]).unwrap();

    let (new, rec) = open(&fs, 2);
    let g2 = new.generation();
    assert_eq!(g2, ckpt_core::Generation(2));
    assert_eq!(FileStore::newest_generation(&*fs).unwrap(), Some(g2));
    let recovered = (rec.checkpoints.clone(), rec.last_id);
    let before = files(&*fs);
    // State of a checkpoint that never committed: the new leader deleted it.
    assert_eq!(rec.removed_orphans, [h(3)]);

    let stale = |r: Result<(), StoreError>, what: &str| match r {
        Err(StoreError::StaleGeneration { writer, current }) => {
            assert_eq!((writer, current), (g1, g2), "{what}");
        }
        other => panic!("{what}: {other:?}"),
    };
    stale(old.allocate_id(g1).map(|_| ()), "allocate_id");
    stale(old.reset_counter(g1, cp(1000)), "reset_counter");
    write_state(&*fs, h(5), b"state").unwrap();
    let before_with_h5 = files(&*fs);
    stale(
        old.finalize(g1, cp(5), false, Millis(5), &[h(5)]),
        "finalize",
    );
    stale(
        old.store(g1, three).map(|_| ()),
        "store (the commit rename)",
    );
    stale(
        old.discard(g1, h(2)).map(|_| ()),
        "discard of a stored checkpoint's state",
    );
    stale(
        old.discard(g1, h(5)).map(|_| ()),
        "discard of an unreferenced file",
    );
    stale(
        old.dispose_savepoint(g1, sp).map(|_| ()),
        "dispose_savepoint",
    );
    // Writing for the new generation through the old handle is refused too.
    assert!(matches!(
        old.allocate_id(g2),
        Err(StoreError::NotThisGeneration { .. })
    ));
    assert_eq!(old.stats().fenced, 7);
    assert_eq!(
        files(&*fs),
        before_with_h5,
        "the deposed leader changed files"
    );
    fs.remove(&state_path(h(5))).unwrap();
    assert_eq!(files(&*fs), before);
    // Claims of a generation that exists, or not above the newest, fail.
    for g in [1, 2] {
        let claim = FileStore::open(
            Arc::clone(&fs),
            ckpt_core::host::store::OpenOptions::new(JOB, 2, ckpt_core::Generation(g)),
        );
        assert!(
            matches!(claim, Err(StoreError::GenerationTaken { newest: Some(n), .. }) if n == g2),
            "claim of generation {g}: {claim:?}"
        );
    }
    drop(new);
    let (_, rec) = open(&fs, 2);
    assert_eq!((rec.checkpoints.clone(), rec.last_id), recovered);
    assert_eq!(rec.generation, ckpt_core::Generation(3));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checkpoint whose metadata is quarantined a second time (a human put a
/// still damaged copy back) is renamed `.2.corrupt`, and recovery reports
/// every quarantined file under the name it has on disk.
#[test]
fn a_checkpoint_quarantined_twice_is_reported_under_each_files_name() {
    let fs = two_committed();
    let mut bad = fs.read(&meta_path(2)).unwrap();
    bad[30] ^= 1;
    fs.write(&meta_path(2), &bad).unwrap();
    let (_, rec) = open(&fs, 2);
    assert_eq!(rec.quarantined, [format!("{}.corrupt", meta_path(2))]);
    fs.write(&meta_path(2), &bad).unwrap();
    let (_, rec) = open(&fs, 2);
    let mut on_disk: Vec<String> = fs
        .list(CHECKPOINT_DIR)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".corrupt"))
        .map(|n| format!("{CHECKPOINT_DIR}/{n}"))
        .collect();
    on_disk.sort();
    assert_eq!(rec.quarantined, on_disk);
    assert_eq!(
        on_disk,
        [
            format!("{}.2.corrupt", meta_path(2)),
            format!("{}.corrupt", meta_path(2))
        ]
    );
}

/// `dispose_savepoint` spares state a finalized checkpoint names (were it
/// deleted, that checkpoint's commit would name a missing file). A host
/// that follows the docs never shares a savepoint's state; the store does
/// not rely on it.
#[test]
fn disposing_of_a_savepoint_spares_state_a_finalized_checkpoint_names() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, _) = open(&fs, 2);
    let g = store.generation();
    let sp = store.allocate_id(g).unwrap();
    commit_kind(&mut store, &*fs, sp, true, 1, &[h(1), h(9)]);
    let c2 = store.allocate_id(g).unwrap();
    commit(&mut store, &*fs, c2, &[h(2)]);
    let c3 = store.allocate_id(g).unwrap();
    write_state(&*fs, h(3), b"state").unwrap();
    store
        .finalize(g, c3, false, Millis(3), &[h(3), h(9)])
        .unwrap();
    assert_eq!(store.dispose_savepoint(g, sp).unwrap(), [h(1)]);
    assert!(fs.exists(&state_path(h(9))));
    store.store(g, c3).unwrap();
    drop(store);
    let (_, rec) = open(&fs, 2);
    assert!(rec.damaged.is_empty(), "{rec:?}");
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(c3));
}
