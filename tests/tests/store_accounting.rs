//! The durable checkpoint store's accounting and edge cases
//! (`ckpt_core::host::store`): the exact counters after a known sequence of
//! operations, the handle-count bound of the metadata decoder, the id counter
//! when its file is lost or unreadable, deletes of files that are already
//! gone versus deletes that fail, and the I/O failures around a commit
//! (`FaultyFs`): a failed sync or a rename that lands with an error is an
//! unknown outcome, a failed eviction still stores, an unreadable state
//! file fails the open instead of being taken for damage, and a disposal
//! whose delete fails still disposes.
#![cfg(not(loom))]

use std::io;
use std::sync::Arc;

use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::store::{
    meta_path, state_path, write_state, Discarded, FileStore, Metadata, MetadataError, OpenOptions,
    StoreError, CHECKPOINT_DIR, HANDLES_MAX, IDS_FILE, META_MAGIC, META_VERSION,
};
use ckpt_core::{CheckpointId, JobId, Millis, StateHandle};
use ckpt_tests::host::{open_store, FaultyFs};

const JOB: JobId = JobId(7);

/// Magic, version, job, checkpoint, timestamp, flags, handle count.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4;

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn h(n: u64) -> StateHandle {
    StateHandle(n)
}

fn open(fs: &Arc<dyn Fs>, retained: usize) -> FileStore {
    open_store(fs, JOB, retained).unwrap().0
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

/// A metadata header declaring `n` handles, followed by 4 bytes (as if a
/// checksum) and no handles.
fn header_declaring(n: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(META_MAGIC);
    b.extend_from_slice(&META_VERSION.to_le_bytes());
    b.extend_from_slice(&JOB.0.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    assert_eq!(b.len(), HEADER_BYTES + 4);
    b
}

fn failing_removes_under(prefix: &str) -> Arc<dyn Fs> {
    Arc::new(FaultyFs::failing_removes_under(prefix))
}

#[test]
fn decode_allows_exactly_handles_max_handles_and_refuses_one_more() {
    // HANDLES_MAX itself is within the bound: the decoder goes on to check
    // the length (and finds the handles missing).
    let at_max = header_declaring(HANDLES_MAX);
    assert_eq!(
        Metadata::decode(&at_max),
        Err(MetadataError::Truncated {
            len: HEADER_BYTES + 4,
            needed: HEADER_BYTES + 8 * HANDLES_MAX as usize + 4,
        })
    );
    // One more is refused before any length check.
    let above_max = header_declaring(HANDLES_MAX + 1);
    assert_eq!(
        Metadata::decode(&above_max),
        Err(MetadataError::TooManyHandles(HANDLES_MAX + 1))
    );
}

#[test]
fn reopen_after_losing_the_counter_file_hands_out_ids_above_the_latest_stored() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 2);
    for n in 1..=3 {
        let id = store.allocate_id(store.generation()).unwrap();
        assert_eq!(id, cp(n));
        commit(&mut store, &*fs, id, &[h(n * 10)]);
    }
    drop(store);
    // The counter file is lost (a crash before its first sync): the store
    // restarts above the latest stored checkpoint, never reissuing it.
    fs.remove(IDS_FILE).unwrap();
    let (mut store, rec) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(rec.latest().map(|c| c.checkpoint), Some(cp(3)));
    assert_eq!(rec.last_id, Some(cp(3)));
    assert_eq!(store.next_id(), cp(4));
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(4));
}

#[test]
fn reopen_without_any_counter_or_checkpoint_starts_ids_at_one() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (mut store, rec) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(rec.last_id, None);
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(1));
}

#[test]
fn ids_allocated_counts_every_id_handed_out() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 2);
    assert_eq!(store.stats().ids_allocated, 0);
    for n in 1..=3 {
        assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(n));
        assert_eq!(store.stats().ids_allocated, n);
    }
    // Moving the counter forward hands out no id.
    store.reset_counter(store.generation(), cp(10)).unwrap();
    assert_eq!(store.stats().ids_allocated, 3);
    assert_eq!(store.allocate_id(store.generation()).unwrap(), cp(10));
    assert_eq!(store.stats().ids_allocated, 4);
}

#[test]
fn stored_and_evicted_count_commits_and_retention_evictions() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 2);
    let mut all_evicted = Vec::new();
    for n in 1..=5 {
        let id = store.allocate_id(store.generation()).unwrap();
        write_state(&*fs, h(n * 10), b"state").unwrap();
        store
            .finalize(store.generation(), id, false, Millis(n), &[h(n * 10)])
            .unwrap();
        all_evicted.extend(store.store(store.generation(), id).unwrap().evicted);
        assert_eq!(store.stats().stored, n);
        assert_eq!(store.stats().evicted, n.saturating_sub(2));
    }
    assert_eq!(all_evicted, [cp(1), cp(2), cp(3)]);
    let stats = store.stats();
    assert_eq!(
        (stats.ids_allocated, stats.stored, stats.evicted),
        (5, 5, 3)
    );
    // Eviction removes metadata only; the state files are the
    // coordinator's to discard.
    assert_eq!(stats.deleted, 0);
}

#[test]
fn deleted_counts_each_state_file_removed_and_not_the_already_gone() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 2);
    for n in 1..=3 {
        write_state(&*fs, h(n), b"state").unwrap();
    }
    assert_eq!(store.stats().deleted, 0);
    assert_eq!(
        store.discard(store.generation(), h(1)).unwrap(),
        Discarded::Deleted
    );
    assert_eq!(store.stats().deleted, 1);
    assert_eq!(
        store.discard(store.generation(), h(2)).unwrap(),
        Discarded::Deleted
    );
    assert_eq!(store.stats().deleted, 2);
    // A second discard of the same handle finds nothing: not counted.
    assert_eq!(
        store.discard(store.generation(), h(2)).unwrap(),
        Discarded::AlreadyGone
    );
    assert_eq!(store.stats().deleted, 2);
    // A handle never written: not counted either.
    assert_eq!(
        store.discard(store.generation(), h(99)).unwrap(),
        Discarded::AlreadyGone
    );
    assert_eq!(store.stats().deleted, 2);
    assert_eq!(
        store.discard(store.generation(), h(3)).unwrap(),
        Discarded::Deleted
    );
    assert_eq!(store.stats().deleted, 3);
    for n in 1..=3 {
        assert!(!fs.exists(&state_path(h(n))));
    }
}

#[test]
fn deferred_discards_are_counted_as_deleted_when_eviction_removes_them() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 1);
    let first = store.allocate_id(store.generation()).unwrap();
    commit(&mut store, &*fs, first, &[h(1), h(2)]);
    // Both handles are protected by the stored checkpoint: refused, deferred.
    for handle in [h(1), h(2)] {
        assert_eq!(
            store.discard(store.generation(), handle).unwrap(),
            Discarded::Refused { checkpoint: first }
        );
    }
    assert_eq!(store.stats().guard_refusals, 2);
    assert_eq!(store.stats().deleted, 0);
    // Storing the next evicts the first, and its deferred state goes with it.
    let second = store.allocate_id(store.generation()).unwrap();
    commit(&mut store, &*fs, second, &[h(3)]);
    let stats = store.stats();
    assert_eq!((stats.stored, stats.evicted, stats.deleted), (2, 1, 2));
    assert!(!fs.exists(&state_path(h(1))));
    assert!(!fs.exists(&state_path(h(2))));
    assert!(fs.exists(&state_path(h(3))));
}

#[test]
fn discard_of_a_prepared_handle_tolerates_the_prepared_file_being_already_gone() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open(&fs, 2);
    let id = store.allocate_id(store.generation()).unwrap();
    write_state(&*fs, h(5), b"state").unwrap();
    store
        .finalize(store.generation(), id, false, Millis(1), &[h(5)])
        .unwrap();
    let prepared = format!("{CHECKPOINT_DIR}/chk-{:020}.prepared", id.0);
    assert!(fs.exists(&prepared));
    // Someone (a crash cleanup, an operator) removed the prepared file.
    fs.remove(&prepared).unwrap();
    // The discard still drops the prepared checkpoint and deletes the state.
    assert_eq!(
        store.discard(store.generation(), h(5)).unwrap(),
        Discarded::Deleted
    );
    assert_eq!(store.stats().deleted, 1);
    assert!(!fs.exists(&state_path(h(5))));
    // The prepared checkpoint is gone: it can no longer be stored.
    assert!(
        matches!(store.store(store.generation(), id), Err(StoreError::NotPrepared(c)) if c == id)
    );
}

#[test]
fn discard_of_a_prepared_handle_reports_a_failed_removal_of_the_prepared_file() {
    let fs = failing_removes_under(CHECKPOINT_DIR);
    let mut store = open(&fs, 2);
    let id = store.allocate_id(store.generation()).unwrap();
    write_state(&*fs, h(5), b"state").unwrap();
    store
        .finalize(store.generation(), id, false, Millis(1), &[h(5)])
        .unwrap();
    match store.discard(store.generation(), h(5)) {
        Err(StoreError::Io { op, path, source }) => {
            assert_eq!(op, "remove");
            assert_eq!(path, format!("{CHECKPOINT_DIR}/chk-{:020}.prepared", id.0));
            assert_eq!(source.kind(), io::ErrorKind::PermissionDenied);
        }
        other => panic!("expected the removal error, got {other:?}"),
    }
    // The state file was not touched.
    assert!(fs.exists(&state_path(h(5))));
    assert_eq!(store.stats().deleted, 0);
}

#[test]
fn discard_reports_a_state_file_removal_failure_other_than_not_found() {
    let fs = failing_removes_under("state/");
    let mut store = open(&fs, 2);
    write_state(&*fs, h(8), b"state").unwrap();
    match store.discard(store.generation(), h(8)) {
        Err(StoreError::Io { op, path, source }) => {
            assert_eq!(op, "remove");
            assert_eq!(path, state_path(h(8)));
            assert_eq!(source.kind(), io::ErrorKind::PermissionDenied);
        }
        other => panic!("expected the removal error, not {other:?}"),
    }
    // Still there, and neither deleted nor "already gone".
    assert!(fs.exists(&state_path(h(8))));
    assert_eq!(store.stats().deleted, 0);
}

/// Commits checkpoint 1 on `faulty`, finalizes checkpoint 2, switches the
/// failure on and commits checkpoint 2: the answer must be
/// `OutcomeUnknown` from the I/O operation `op`, the checkpoint held.
/// Returns the file system (the failure still on) and the store.
fn unknown_commit_of_2(faulty: FaultyFs, op: &str) -> (Arc<FaultyFs>, Arc<dyn Fs>, FileStore) {
    let faulty = Arc::new(faulty);
    let fs: Arc<dyn Fs> = faulty.clone();
    let mut store = open(&fs, 2);
    let g = store.generation();
    commit(&mut store, &*fs, cp(1), &[h(1)]);
    write_state(&*fs, h(2), b"state").unwrap();
    store.finalize(g, cp(2), false, Millis(2), &[h(2)]).unwrap();
    faulty.fail_syncs(true);
    match store.store(g, cp(2)) {
        Err(StoreError::OutcomeUnknown { checkpoint, source }) => {
            assert_eq!(checkpoint, cp(2));
            assert!(
                matches!(&*source, StoreError::Io { op: o, .. } if *o == op),
                "{source:?}"
            );
        }
        other => panic!("expected an unknown outcome, got {other:?}"),
    }
    assert_eq!(store.holdings().latest(), Some(cp(2)));
    (faulty, fs, store)
}

/// A failed sync of the directory after the commit's rename leaves the
/// outcome unknown, which is not "definitely not stored": a coordinator
/// answered with a failure would drop the checkpoint and, at its next
/// failover, restore an older one than the store holds. The store says
/// `OutcomeUnknown`, holds the checkpoint (its state guarded); a new start
/// is refused while the directory still cannot be synced, and recovers it
/// as the latest once it can.
#[test]
fn a_failed_directory_sync_after_the_rename_is_an_unknown_outcome_not_a_failure() {
    let (faulty, fs, mut store) =
        unknown_commit_of_2(FaultyFs::failing_syncs_after_renames_to(".meta"), "sync");
    let g = store.generation();
    assert!(matches!(
        store.discard(g, h(2)),
        Ok(Discarded::Refused { checkpoint }) if checkpoint == cp(2)
    ));
    assert!(fs.exists(&state_path(h(2))));
    drop(store);
    // A start while the directory still cannot be synced is refused: it
    // would restore checkpoint 2 from entries a crash may still undo.
    match open_store(&fs, JOB, 2) {
        Err(StoreError::Io { op: "sync", .. }) => {}
        Err(e) => panic!("expected the sync error, got {e:?}"),
        Ok((_, recovery)) => panic!("expected the sync error, got {recovery:?}"),
    }
    faulty.fail_syncs(false);
    let (again, recovery) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(recovery.latest().map(|c| c.checkpoint), Some(cp(2)));
    assert_eq!(again.holdings().latest(), Some(cp(2)));
}

/// An eviction that fails after the commit point does not undo the
/// commit: the checkpoint is stored (the coordinator must hear success),
/// the eviction's error comes beside it, and the checkpoint whose metadata
/// could not be removed stays held, its state guarded, until a later
/// commit evicts it.
#[test]
fn an_eviction_failure_after_the_commit_still_stores_the_checkpoint() {
    let fs = failing_removes_under(&meta_path(cp(1)));
    let mut store = open(&fs, 1);
    let g = store.generation();
    commit(&mut store, &*fs, cp(1), &[h(1)]);
    write_state(&*fs, h(2), b"state").unwrap();
    store.finalize(g, cp(2), false, Millis(2), &[h(2)]).unwrap();
    let committed = store
        .store(g, cp(2))
        .expect("stored, whatever the eviction did");
    assert!(committed.evicted.is_empty(), "{committed:?}");
    assert!(
        matches!(
            &committed.retention,
            Some(StoreError::Io { op: "remove", .. })
        ),
        "{committed:?}"
    );
    assert_eq!(store.holdings().latest(), Some(cp(2)));
    assert!(matches!(
        store.discard(g, h(1)),
        Ok(Discarded::Refused { checkpoint }) if checkpoint == cp(1)
    ));
    assert!(fs.exists(&state_path(h(1))));
}

/// A store retaining two with checkpoints 1 and 2 committed (state files
/// `h(1)` and `h(2)`), on a file system whose reads of `h(2)`'s file fail
/// once [`FaultyFs::fail_reads`] is on.
fn two_committed_with_state_2_unreadable() -> (Arc<FaultyFs>, Arc<dyn Fs>) {
    let faulty = Arc::new(FaultyFs::failing_reads_under(&state_path(h(2))));
    let fs: Arc<dyn Fs> = faulty.clone();
    let mut store = open(&fs, 2);
    commit(&mut store, &*fs, cp(1), &[h(1)]);
    commit(&mut store, &*fs, cp(2), &[h(2)]);
    (faulty, fs)
}

/// A state file of the checkpoint to restore that cannot be read (an error
/// other than "not found") fails the open and quarantines nothing: taken as
/// damage, a transient error would quarantine the latest checkpoint for
/// good and restore an older one. Once the error is gone the latest is
/// restored.
#[test]
fn an_unreadable_state_file_fails_the_open_instead_of_condemning_the_checkpoint() {
    let (faulty, fs) = two_committed_with_state_2_unreadable();
    let checked = |fs: &Arc<dyn Fs>| {
        let generation = FileStore::next_generation(&**fs).unwrap();
        let mut options = OpenOptions::new(JOB, 2, generation);
        options.check_state = Some(Arc::new(|_, _, _| Ok(())));
        FileStore::open(Arc::clone(fs), options)
    };
    faulty.fail_reads(true);
    match checked(&fs) {
        Err(StoreError::Io {
            op: "read", path, ..
        }) => assert_eq!(path, state_path(h(2))),
        Err(e) => panic!("expected the read error, got {e:?}"),
        Ok((_, recovery)) => panic!("expected the read error, got {recovery:?}"),
    }
    assert!(fs.exists(&meta_path(cp(2))), "nothing quarantined");
    faulty.fail_reads(false);
    let (_, recovery) = checked(&fs).unwrap();
    assert_eq!(recovery.latest().map(|c| c.checkpoint), Some(cp(2)));
    assert!(recovery.damaged.is_empty(), "{:?}", recovery.damaged);
}

/// A state file the `state/` listing misses (a file system over an
/// eventually consistent object store may list the newest files last) is
/// read before it counts as missing: the latest checkpoint is restored,
/// not quarantined for good behind an older one. A file that is absent
/// for real is still damage.
#[test]
fn a_state_file_missing_from_the_listing_is_read_before_it_counts_as_missing() {
    let (faulty, fs) = two_committed_with_state_2_unreadable();
    faulty.hide_listed(Some(&state_path(h(2))));
    // Missed by the listing and unreadable: the open cannot tell.
    faulty.fail_reads(true);
    match open_store(&fs, JOB, 2) {
        Err(StoreError::Io {
            op: "read", path, ..
        }) => assert_eq!(path, state_path(h(2))),
        Err(e) => panic!("expected the read error, got {e:?}"),
        Ok((_, recovery)) => panic!("expected the read error, got {recovery:?}"),
    }
    faulty.fail_reads(false);
    let (_, recovery) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(recovery.latest().map(|c| c.checkpoint), Some(cp(2)));
    assert!(recovery.damaged.is_empty(), "{:?}", recovery.damaged);
    faulty.hide_listed(None);
    fs.remove(&state_path(h(2))).unwrap();
    let (_, recovery) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(recovery.latest().map(|c| c.checkpoint), Some(cp(1)));
    assert_eq!(recovery.damaged.len(), 1, "{:?}", recovery.damaged);
}

/// An id counter that cannot be read (an error other than "not found")
/// fails the open: taken as absent, the counter would restart from the ids
/// named on disk and hand out again ids that were allocated but never
/// committed.
#[test]
fn an_unreadable_id_counter_fails_the_open_instead_of_starting_over() {
    let faulty = Arc::new(FaultyFs::failing_reads_under(IDS_FILE));
    let fs: Arc<dyn Fs> = faulty.clone();
    let mut store = open(&fs, 2);
    let g = store.generation();
    commit(&mut store, &*fs, cp(1), &[h(1)]);
    for _ in 0..3 {
        store.allocate_id(g).unwrap();
    }
    let next = store.next_id();
    drop(store);
    faulty.fail_reads(true);
    match open_store(&fs, JOB, 2) {
        Err(StoreError::Io {
            op: "read", path, ..
        }) => assert_eq!(path, IDS_FILE),
        Err(e) => panic!("expected the read error, got {e:?}"),
        Ok((s, _)) => panic!("expected the read error, got next id {:?}", s.next_id()),
    }
    faulty.fail_reads(false);
    assert_eq!(open(&fs, 2).next_id(), next);
}

/// A rename that lands but answers with an error (a network file system,
/// an object store's copy-then-delete) is not "definitely not stored":
/// the metadata is in place, so the commit's outcome is unknown, the
/// checkpoint held, and a new start recovers it.
#[test]
fn a_commit_rename_that_landed_despite_its_error_is_an_unknown_outcome() {
    let (faulty, fs, store) =
        unknown_commit_of_2(FaultyFs::losing_rename_answers_to(".meta"), "rename");
    faulty.fail_syncs(false);
    drop(store);
    let (_, recovery) = open_store(&fs, JOB, 2).unwrap();
    assert_eq!(recovery.latest().map(|c| c.checkpoint), Some(cp(2)));
}

/// Once a savepoint's removal is durable, disposing of it succeeds even if
/// a state file cannot be deleted: an error would make the host keep the
/// coordinator holding a savepoint the store has let go of. The file is
/// counted and left for the next start, which deletes it as unreferenced.
#[test]
fn a_disposal_whose_state_delete_fails_still_disposes_of_the_savepoint() {
    let fs = failing_removes_under(&state_path(h(1)));
    let mut store = open(&fs, 2);
    let g = store.generation();
    write_state(&*fs, h(1), b"state").unwrap();
    store.finalize(g, cp(1), true, Millis(1), &[h(1)]).unwrap();
    store.store(g, cp(1)).unwrap();
    commit(&mut store, &*fs, cp(2), &[h(2)]);
    assert_eq!(store.dispose_savepoint(g, cp(1)).unwrap(), []);
    assert_eq!(store.stats().delete_failures, 1);
    assert!(!store.holdings().stored_ids().contains(&cp(1)));
    assert!(fs.exists(&state_path(h(1))));
    assert!(!fs.exists(&meta_path(cp(1))));
}
