//! # ckpt-node
//!
//! The distributed side of ckpt's reference host: a checkpoint store on an
//! object store ([`objstore::ObjStore`]) whose fence is a conditional
//! create, and the one store trait ([`CheckpointStore`]) that it and the
//! async host's file store ([`ckpt_core::host::store::FileStore`]) both
//! implement, so that one test suite drives both; ckpt-core's file-system
//! trait over an object store ([`objfs::ObjFs`]), through which the task
//! side keeps its state files as objects of the same store; and the
//! reference pipeline across processes: a coordinator process
//! ([`coordinator`]) and a task-manager process ([`manager`]) over TCP
//! ([`wire`]), which the `ckpt-node` binary runs (`ckpt-node coordinator`,
//! `ckpt-node task`).

pub mod coordinator;
pub mod manager;
pub mod objfs;
pub mod objstore;
pub mod wire;

use std::future::Future;

use ckpt_core::host::store::{Committed, Discarded, FileStore, Holdings, StoreError};
use ckpt_core::{CheckpointId, Generation, Millis, StateHandle};

pub use objfs::ObjFs;
pub use objstore::ObjStore;

/// A durable checkpoint store, as the coordinator's I/O effects use it
/// (every write names the generation it is made for; a deposed leader's
/// log append is refused, and its other writes are checked against the
/// store's log first, see each implementation's docs for the window that
/// leaves). The methods are those of [`FileStore`]; see its docs for each.
pub trait CheckpointStore {
    /// Hands out the next checkpoint id; durable before it is returned.
    fn allocate_id(
        &mut self,
        writer: Generation,
    ) -> impl Future<Output = Result<CheckpointId, StoreError>> + Send;
    /// Moves the counter so the next id is at least `next` (never back).
    fn reset_counter(
        &mut self,
        writer: Generation,
        next: CheckpointId,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Writes a checkpoint's metadata; not yet stored.
    fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// The commit point of a finalized checkpoint: `Ok` when it is stored
    /// (with the checkpoints its commit evicted, and the eviction's error
    /// if any), [`StoreError::OutcomeUnknown`] when that cannot be told
    /// (answer nothing; stop the coordinator), any other error when it is
    /// definitely not stored.
    fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send;
    /// Deletes a state handle's data unless a stored checkpoint holds it.
    fn discard(
        &mut self,
        writer: Generation,
        handle: StateHandle,
    ) -> impl Future<Output = Result<Discarded, StoreError>> + Send;
    /// Removes a stored savepoint (the user's act); returns the handles
    /// deleted. An error that cannot tell whether the removal was made is
    /// [`StoreError::DisposalOutcomeUnknown`] (the savepoint still held;
    /// disposing again settles it); any other error leaves the savepoint
    /// stored.
    fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> impl Future<Output = Result<Vec<StateHandle>, StoreError>> + Send;
    /// What the store holds ([`Holdings`], one type for both stores).
    fn holdings(&self) -> &Holdings;
    /// The stored checkpoints and savepoints (`(id, savepoint, handles)`),
    /// in id order.
    fn held(&self) -> Vec<(CheckpointId, bool, Vec<StateHandle>)> {
        let h = self.holdings();
        h.stored()
            .map(|(id, hs)| (id, h.is_savepoint(id).unwrap_or(false), hs.to_vec()))
            .collect()
    }
    /// The next id the counter hands out.
    fn next_checkpoint_id(&self) -> CheckpointId;
}

impl CheckpointStore for FileStore {
    fn allocate_id(
        &mut self,
        writer: Generation,
    ) -> impl Future<Output = Result<CheckpointId, StoreError>> + Send {
        std::future::ready(FileStore::allocate_id(self, writer))
    }
    fn reset_counter(
        &mut self,
        writer: Generation,
        next: CheckpointId,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(FileStore::reset_counter(self, writer, next))
    }
    fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(FileStore::finalize(
            self, writer, checkpoint, savepoint, timestamp, handles,
        ))
    }
    fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send {
        std::future::ready(FileStore::store(self, writer, checkpoint))
    }
    fn discard(
        &mut self,
        writer: Generation,
        handle: StateHandle,
    ) -> impl Future<Output = Result<Discarded, StoreError>> + Send {
        std::future::ready(FileStore::discard(self, writer, handle))
    }
    fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> impl Future<Output = Result<Vec<StateHandle>, StoreError>> + Send {
        std::future::ready(FileStore::dispose_savepoint(self, writer, savepoint))
    }
    fn holdings(&self) -> &Holdings {
        self.holdings()
    }
    fn next_checkpoint_id(&self) -> CheckpointId {
        self.next_id()
    }
}

impl CheckpointStore for ObjStore {
    fn allocate_id(
        &mut self,
        writer: Generation,
    ) -> impl Future<Output = Result<CheckpointId, StoreError>> + Send {
        ObjStore::allocate_id(self, writer)
    }
    fn reset_counter(
        &mut self,
        writer: Generation,
        next: CheckpointId,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ObjStore::reset_counter(self, writer, next)
    }
    fn finalize(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
        savepoint: bool,
        timestamp: Millis,
        handles: &[StateHandle],
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ObjStore::finalize(self, writer, checkpoint, savepoint, timestamp, handles)
    }
    fn store(
        &mut self,
        writer: Generation,
        checkpoint: CheckpointId,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send {
        ObjStore::store(self, writer, checkpoint)
    }
    fn discard(
        &mut self,
        writer: Generation,
        handle: StateHandle,
    ) -> impl Future<Output = Result<Discarded, StoreError>> + Send {
        ObjStore::discard(self, writer, handle)
    }
    fn dispose_savepoint(
        &mut self,
        writer: Generation,
        savepoint: CheckpointId,
    ) -> impl Future<Output = Result<Vec<StateHandle>, StoreError>> + Send {
        ObjStore::dispose_savepoint(self, writer, savepoint)
    }
    fn holdings(&self) -> &Holdings {
        self.holdings()
    }
    fn next_checkpoint_id(&self) -> CheckpointId {
        self.next_id()
    }
}
