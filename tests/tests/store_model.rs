//! The file store and the model's store agree: the same random sequence of
//! commits (checkpoints and savepoints, in and out of the legal order) and
//! savepoint disposals, applied to the real `FileStore` (over the in-memory
//! file system) and to the `DurableLedger` the model checker's world keeps,
//! is accepted or refused alike, evicts the same checkpoints, leaves the
//! same contents and the same latest checkpoint after every operation, and
//! a reopened file store recovers exactly what the ledger holds. Both ask
//! `ckpt_core::commit` for the order; this test holds their retention,
//! disposal and recovery equal too, so a model-checked store is the store
//! embedders run.
#![cfg(not(loom))]

use std::sync::Arc;

use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::store::{write_state, FileStore};
use ckpt_core::invariants::durability::{DurableLedger, Stored};
use ckpt_core::{CheckpointId, JobId, Millis, StateHandle};
use ckpt_tests::host::open_store;
use proptest::prelude::*;

const JOB: JobId = JobId(3);

#[derive(Clone, Debug)]
enum Op {
    /// Commit checkpoint `id` (a savepoint when `savepoint`) with one fresh
    /// state file.
    Commit { id: u64, savepoint: bool },
    /// Dispose of savepoint `id` (refused when the store holds no such
    /// savepoint).
    Dispose { id: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..12, proptest::bool::weighted(0.3))
            .prop_map(|(id, savepoint)| Op::Commit { id, savepoint }),
        1 => (1u64..12).prop_map(|id| Op::Dispose { id }),
    ]
}

/// `(id, savepoint)` of what each side holds, sorted.
fn held_file(store: &FileStore) -> Vec<(u64, bool)> {
    let mut v: Vec<(u64, bool)> = store
        .holdings()
        .stored()
        .map(|(id, _)| (id.0, store.holdings().is_savepoint(id).unwrap_or(false)))
        .collect();
    v.sort_unstable();
    v
}

fn held_model(ledger: &DurableLedger) -> Vec<(u64, bool)> {
    let mut v: Vec<(u64, bool)> = ledger
        .store()
        .iter()
        .map(|s| (s.id.0, s.savepoint))
        .collect();
    v.sort_unstable();
    v
}

fn run(retained: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open_store(&fs, JOB, retained).expect("open").0;
    let mut ledger = DurableLedger::new(retained);
    let mut next_handle = 1u64;
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Commit { id, savepoint } => {
                let id = CheckpointId(id);
                let h = StateHandle(next_handle);
                next_handle += 1;
                write_state(&*fs, h, b"state").expect("state file");
                let legal = ledger.may_commit(id, savepoint);
                let gen = store.generation();
                let file = store
                    .finalize(gen, id, savepoint, Millis(i as u64), &[h])
                    .and_then(|()| store.store(gen, id));
                prop_assert_eq!(file.is_ok(), legal, "op {}: {:?}: {:?}", i, op, file);
                if let Ok(committed) = file {
                    prop_assert!(committed.retention.is_none(), "op {}: {:?}", i, committed);
                    prop_assert!(ledger.written(h).is_ok());
                    let evicted_model = ledger
                        .commit(Stored {
                            id,
                            savepoint,
                            timestamp: Millis(i as u64),
                            handles: vec![h],
                        })
                        .map_err(|v| TestCaseError::fail(v.to_string()))?;
                    let mut a = committed.evicted;
                    let mut b = evicted_model.clone();
                    a.sort_unstable();
                    b.sort_unstable();
                    prop_assert_eq!(a, b, "op {}: evictions", i);
                }
            }
            Op::Dispose { id } => {
                let id = CheckpointId(id);
                let held = ledger.may_dispose(id);
                let file = store.dispose_savepoint(store.generation(), id);
                prop_assert_eq!(file.is_ok(), held, "op {}: {:?}: {:?}", i, op, file);
                if held {
                    prop_assert!(ledger.dispose(id).is_ok());
                }
            }
        }
        prop_assert_eq!(held_file(&store), held_model(&ledger), "after op {}", i);
        prop_assert_eq!(
            store.holdings().latest(),
            ledger.latest(),
            "latest after op {}",
            i
        );
    }
    // What a restart reads back is what the model holds, with the same
    // state per checkpoint.
    drop(store);
    let (reopened, recovery) = open_store(&fs, JOB, retained).expect("reopen");
    prop_assert_eq!(held_file(&reopened), held_model(&ledger));
    let mut recovered: Vec<(u64, bool, Vec<StateHandle>)> = recovery
        .checkpoints
        .iter()
        .map(|c| (c.checkpoint.0, c.savepoint, c.handles.clone()))
        .collect();
    recovered.sort();
    let mut model: Vec<(u64, bool, Vec<StateHandle>)> = ledger
        .store()
        .iter()
        .map(|s| (s.id.0, s.savepoint, s.handles.clone()))
        .collect();
    model.sort();
    prop_assert_eq!(recovered, model);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_file_store_and_the_models_store_agree(
        retained in 1usize..4,
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        run(retained, &ops)?;
    }
}

/// The property can fail: a store that keeps one checkpoint more than the
/// model retains is told apart (the evictions and contents differ).
#[test]
fn a_store_retaining_more_than_the_model_is_told_apart() {
    let ops = [
        Op::Commit {
            id: 1,
            savepoint: false,
        },
        Op::Commit {
            id: 2,
            savepoint: false,
        },
    ];
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut store = open_store(&fs, JOB, 2).expect("open").0;
    let mut ledger = DurableLedger::new(1);
    for (i, op) in ops.iter().enumerate() {
        let Op::Commit { id, savepoint } = *op else {
            unreachable!()
        };
        let h = StateHandle(i as u64 + 1);
        write_state(&*fs, h, b"state").unwrap();
        let gen = store.generation();
        store
            .finalize(gen, CheckpointId(id), savepoint, Millis(0), &[h])
            .unwrap();
        store.store(gen, CheckpointId(id)).unwrap();
        ledger.written(h).unwrap();
        ledger
            .commit(Stored {
                id: CheckpointId(id),
                savepoint,
                timestamp: Millis(0),
                handles: vec![h],
            })
            .unwrap();
    }
    assert_ne!(held_file(&store), held_model(&ledger));
}
