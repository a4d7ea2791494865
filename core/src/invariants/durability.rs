//! Durability: what a completed-checkpoint store holds, which state files
//! exist, and the promises about both. A host with a real store (the async
//! host) and the model's world feed the same [`DurableLedger`] what happened
//! to the store and to state files; it checks on every call:
//!
//! 1. a state handle referenced by a checkpoint the store holds is never
//!    deleted ([`names::NO_DISCARD_COMMITTED`]), and a checkpoint is
//!    committed only with every handle still existing
//!    ([`names::COMMITTED_STATE_EXISTS`]);
//! 2. a restore (after any failover) restores the store's latest checkpoint
//!    (the highest id it holds, [`crate::commit::latest`]), all of whose
//!    state exists, and no checkpoint of the run before a restore commits
//!    after it: the restore point is never behind a committed checkpoint
//!    ([`names::RESTORE_LATEST`]);
//! 3. every state file ends once: it is written once, deleted at most once
//!    (a coordinator's delete of a file already gone is an idempotent
//!    repeat: duplicated acks make those legal, and the coordinator's own
//!    ledger counts them), and when the world is quiet every file that
//!    still exists is referenced by the store or owned by the coordinator
//!    ([`names::HANDLE_ENDS_ONCE`]);
//! 4. checkpoint ids never repeat, across coordinator failovers too
//!    ([`names::IDS_NEVER_REPEAT`]);
//! 5. a checkpoint is notified complete to tasks only once the store holds
//!    it ([`names::NOTIFY_AFTER_COMMIT`]);
//! 6. the store commits only in the one legal order ([`crate::commit`]),
//!    and a store's own retention never removes a savepoint: savepoints
//!    leave only when the user disposes of them ([`names::COMMIT_ORDER`]).
//!
//! Memory is bounded by what exists now (live files, retained
//! checkpoints), never by history, so a long-running host can keep one.

use std::collections::BTreeSet;

use super::{ensure, Violation};
use crate::types::{CheckpointId, Millis, StateHandle};

/// Invariant names.
pub mod names {
    /// No delete of a handle the store references.
    pub const NO_DISCARD_COMMITTED: &str = "no-discard-of-committed-state";
    /// A commit only with every handle existing.
    pub const COMMITTED_STATE_EXISTS: &str = "committed-state-exists";
    /// A restore is of the store's latest checkpoint, with its state.
    pub const RESTORE_LATEST: &str = "restore-latest-committed";
    /// Every state file is written once and ends once.
    pub const HANDLE_ENDS_ONCE: &str = "handle-retained-or-discarded-once";
    /// Checkpoint ids never repeat.
    pub const IDS_NEVER_REPEAT: &str = "ids-never-repeat";
    /// Notify-complete only after the store committed the checkpoint.
    pub const NOTIFY_AFTER_COMMIT: &str = "notify-complete-after-commit";
    /// The store commits in the legal order and accepts every legal commit.
    pub const COMMIT_ORDER: &str = "store-commit-order";

    /// Every name above.
    pub const ALL: [&str; 7] = [
        NO_DISCARD_COMMITTED,
        COMMITTED_STATE_EXISTS,
        RESTORE_LATEST,
        HANDLE_ENDS_ONCE,
        IDS_NEVER_REPEAT,
        NOTIFY_AFTER_COMMIT,
        COMMIT_ORDER,
    ];
}

/// One checkpoint the store holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct Stored {
    /// Its id.
    pub id: CheckpointId,
    /// Whether it is a savepoint.
    pub savepoint: bool,
    /// When it was triggered.
    pub timestamp: Millis,
    /// Its state handles.
    pub handles: Vec<StateHandle>,
}

/// Who deletes a state file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Deleter {
    /// A coordinator's `DiscardState` (may repeat a delete: see the module
    /// docs).
    Coordinator,
    /// A task's `DiscardState`.
    Task,
    /// The host resolving an in-doubt checkpoint or cleaning up after a
    /// coordinator died.
    Host,
}

/// The store's contents, the state files that exist, and the highest
/// checkpoint id ever used; see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct DurableLedger {
    retained_max: usize,
    store: Vec<Stored>,
    live: BTreeSet<StateHandle>,
    max_id: Option<CheckpointId>,
    /// The highest id used when the job last restored: a checkpoint at or
    /// below it belongs to the run before that restore.
    restore_floor: Option<CheckpointId>,
}

impl DurableLedger {
    /// An empty store retaining at most `retained_max` checkpoints (the
    /// oldest goes when a newer one is committed, as the coordinator's own
    /// retention does; savepoints do not count and never go).
    #[must_use]
    pub fn new(retained_max: usize) -> Self {
        DurableLedger {
            retained_max: retained_max.max(1),
            ..DurableLedger::default()
        }
    }

    /// The checkpoints the store holds, oldest first.
    #[must_use]
    pub fn store(&self) -> &[Stored] {
        &self.store
    }

    /// Whether the store holds checkpoint `id`.
    #[must_use]
    pub fn holds(&self, id: CheckpointId) -> bool {
        self.store.iter().any(|s| s.id == id)
    }

    /// Whether `h` exists (written, not deleted).
    #[must_use]
    pub fn exists(&self, h: StateHandle) -> bool {
        self.live.contains(&h)
    }

    /// State files that exist, ascending.
    pub fn live(&self) -> impl Iterator<Item = StateHandle> + '_ {
        self.live.iter().copied()
    }

    fn referenced(&self, h: StateHandle) -> bool {
        self.store.iter().any(|s| s.handles.contains(&h))
    }

    /// The same ledger with every handle renamed (symmetry reduction, when
    /// handles name the task that wrote them).
    #[cfg(feature = "symmetry")]
    #[must_use]
    pub fn rename_handles(&self, rename: &dyn Fn(StateHandle) -> StateHandle) -> DurableLedger {
        DurableLedger {
            retained_max: self.retained_max,
            store: self
                .store
                .iter()
                .map(|s| Stored {
                    handles: s.handles.iter().map(|h| rename(*h)).collect(),
                    ..s.clone()
                })
                .collect(),
            live: self.live.iter().map(|h| rename(*h)).collect(),
            max_id: self.max_id,
            restore_floor: self.restore_floor,
        }
    }

    /// A task wrote state file `h`.
    pub fn written(&mut self, h: StateHandle) -> Result<(), Violation> {
        ensure(self.live.insert(h), names::HANDLE_ENDS_ONCE, || {
            format!("state file {h} written twice")
        })
    }

    /// `deleter` deletes `h`.
    pub fn delete(&mut self, h: StateHandle, deleter: Deleter) -> Result<(), Violation> {
        ensure(!self.referenced(h), names::NO_DISCARD_COMMITTED, || {
            let owner = self
                .store
                .iter()
                .find(|s| s.handles.contains(&h))
                .map(|s| s.id);
            format!("state file {h} deleted by the {deleter:?} while the store holds checkpoint {owner:?}")
        })?;
        let existed = self.live.remove(&h);
        ensure(
            existed || deleter == Deleter::Coordinator,
            names::HANDLE_ENDS_ONCE,
            || format!("state file {h} deleted by the {deleter:?} but it does not exist"),
        )
    }

    /// Whether the store may commit `id` now ([`crate::commit::check_next`]).
    #[must_use]
    pub fn may_commit(&self, id: CheckpointId, savepoint: bool) -> bool {
        crate::commit::check_next(self.held(), id, savepoint).is_ok()
    }

    fn held(&self) -> impl Iterator<Item = (CheckpointId, bool)> + '_ {
        self.store.iter().map(|s| (s.id, s.savepoint))
    }

    /// The store refused to commit `id`: right only when the commit would
    /// break the commit order (a refusal of a legal commit is a store that
    /// disagrees with the coordinator about what may be committed).
    pub fn refused(&self, id: CheckpointId, savepoint: bool) -> Result<(), Violation> {
        ensure(!self.may_commit(id, savepoint), names::COMMIT_ORDER, || {
            let held: Vec<(CheckpointId, bool)> = self.held().collect();
            format!("the store refused checkpoint {id} (savepoint: {savepoint}), a legal commit after {held:?}")
        })
    }

    /// The store committed `checkpoint` (durably); the oldest checkpoints
    /// (never savepoints) beyond the retention bound leave the store (their
    /// state is the coordinator's to delete). Returns the ids that left.
    pub fn commit(&mut self, checkpoint: Stored) -> Result<Vec<CheckpointId>, Violation> {
        let order = crate::commit::check_next(self.held(), checkpoint.id, checkpoint.savepoint);
        ensure(order.is_ok(), names::COMMIT_ORDER, || {
            format!(
                "checkpoint {} committed out of order: {order:?}",
                checkpoint.id
            )
        })?;
        ensure(
            self.restore_floor.is_none_or(|f| checkpoint.id > f),
            names::RESTORE_LATEST,
            || {
                format!(
                    "checkpoint {} of the run before the restore committed after it (the job restored from a point behind it)",
                    checkpoint.id
                )
            },
        )?;
        let missing: Vec<StateHandle> = checkpoint
            .handles
            .iter()
            .copied()
            .filter(|h| !self.live.contains(h))
            .collect();
        ensure(missing.is_empty(), names::COMMITTED_STATE_EXISTS, || {
            format!(
                "checkpoint {} committed but its state {missing:?} was deleted",
                checkpoint.id
            )
        })?;
        self.store.push(checkpoint);
        let mut evicted = Vec::new();
        while self.store.iter().filter(|s| !s.savepoint).count() > self.retained_max {
            let Some(at) = self.store.iter().position(|s| !s.savepoint) else {
                break;
            };
            evicted.push(self.store.remove(at).id);
        }
        Ok(evicted)
    }

    /// The user disposed of savepoint `id`: the store drops its entry (its
    /// state files are deleted afterwards). Not a savepoint the store
    /// holds, or the store's latest (the restore point; a store refuses
    /// that, see [`DurableLedger::may_dispose`]): a violation of the
    /// disposal recipe.
    pub fn dispose(&mut self, id: CheckpointId) -> Result<(), Violation> {
        let at = self.store.iter().position(|s| s.id == id && s.savepoint);
        ensure(at.is_some(), names::COMMIT_ORDER, || {
            format!("disposed of {id}, which is not a savepoint the store holds")
        })?;
        ensure(self.latest() != Some(id), names::RESTORE_LATEST, || {
            format!("disposed of savepoint {id}, the store's latest: the next restore would rewind behind it")
        })?;
        if let Some(at) = at {
            self.store.remove(at);
        }
        Ok(())
    }

    /// Whether the store lets the user dispose of savepoint `id`: one it
    /// holds that is not its latest checkpoint (the restore point).
    #[must_use]
    pub fn may_dispose(&self, id: CheckpointId) -> bool {
        self.store.iter().any(|s| s.id == id && s.savepoint) && self.latest() != Some(id)
    }

    /// The host registered a savepoint (its files exist) as the store's
    /// checkpoint to start from.
    pub fn register_savepoint(&mut self, savepoint: Stored) -> Result<(), Violation> {
        for h in &savepoint.handles {
            self.written(*h)?;
        }
        self.used(savepoint.id)?;
        self.commit(savepoint).map(|_| ())
    }

    /// A checkpoint with this id was triggered (or registered).
    pub fn used(&mut self, id: CheckpointId) -> Result<(), Violation> {
        ensure(
            self.max_id.is_none_or(|m| id > m),
            names::IDS_NEVER_REPEAT,
            || {
                format!(
                    "checkpoint id {id} used again (highest so far {:?})",
                    self.max_id
                )
            },
        )?;
        self.max_id = Some(id);
        Ok(())
    }

    /// Tasks are told `id` completed.
    pub fn notified_complete(&self, id: CheckpointId) -> Result<(), Violation> {
        ensure(self.holds(id), names::NOTIFY_AFTER_COMMIT, || {
            format!("checkpoint {id} notified complete but the store does not hold it")
        })
    }

    /// The store's latest checkpoint: the highest id it holds.
    #[must_use]
    pub fn latest(&self) -> Option<CheckpointId> {
        crate::commit::latest(self.held())
    }

    /// State is restored from `id` with `handles` (`None`: from scratch).
    /// From now on a checkpoint of the run before (an id already used)
    /// must not commit.
    pub fn restored(
        &mut self,
        id: Option<CheckpointId>,
        handles: &[StateHandle],
    ) -> Result<(), Violation> {
        let latest = self.latest();
        ensure(latest == id, names::RESTORE_LATEST, || {
            format!("restored checkpoint {id:?}, but the store's latest is {latest:?}")
        })?;
        self.restore_floor = self.max_id;
        let Some(id) = id else {
            return Ok(());
        };
        let missing: Vec<StateHandle> = handles
            .iter()
            .copied()
            .filter(|h| !self.live.contains(h))
            .collect();
        ensure(missing.is_empty(), names::RESTORE_LATEST, || {
            format!("restored checkpoint {id} but its state {missing:?} is gone")
        })
    }

    /// A recovery or a job failover restored nothing (`refused`: the
    /// coordinator refused what the store holds): right only when the store
    /// holds nothing and nothing was refused.
    pub fn nothing_restored(&self, refused: Option<&str>) -> Result<(), Violation> {
        ensure(
            self.store.is_empty() && refused.is_none(),
            names::RESTORE_LATEST,
            || {
                let held: Vec<CheckpointId> = self.store.iter().map(|s| s.id).collect();
                format!(
                    "nothing restored{}, but the store holds {held:?}",
                    refused.map_or(String::new(), |r| format!(" (recovery refused: {r})"))
                )
            },
        )
    }

    /// When nothing is in flight anywhere: every state file that exists is
    /// referenced by the store or owned by the coordinator (`owned`).
    pub fn check_quiet(&self, owned: &[StateHandle]) -> Result<(), Violation> {
        let stray: Vec<StateHandle> = self
            .live
            .iter()
            .copied()
            .filter(|h| !self.referenced(*h) && !owned.contains(h))
            .collect();
        ensure(stray.is_empty(), names::HANDLE_ENDS_ONCE, || {
            format!("quiet, but state files {stray:?} are neither stored, owned nor deleted")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u64) -> StateHandle {
        StateHandle(n)
    }
    fn stored(id: u64, handles: &[u64]) -> Stored {
        Stored {
            id: CheckpointId(id),
            savepoint: false,
            timestamp: Millis(0),
            handles: handles.iter().copied().map(h).collect(),
        }
    }
    fn caught(r: Result<(), Violation>, name: &str) {
        assert_eq!(r.map_err(|v| v.invariant), Err(name));
    }

    #[test]
    fn live_lists_the_state_files_written_and_not_deleted_in_ascending_order() {
        let mut d = DurableLedger::new(1);
        d.written(h(3)).expect("write");
        d.written(h(1)).expect("write");
        d.written(h(2)).expect("write");
        d.delete(h(2), Deleter::Task).expect("unreferenced");
        assert_eq!(d.live().collect::<Vec<_>>(), vec![h(1), h(3)]);
        assert!(d.exists(h(1)) && !d.exists(h(2)));
    }

    #[test]
    fn committed_state_is_never_deleted_and_must_exist_at_commit() {
        let mut d = DurableLedger::new(1);
        d.written(h(1)).expect("write");
        d.written(h(2)).expect("write");
        d.delete(h(2), Deleter::Task).expect("unreferenced");
        caught(
            d.commit(stored(1, &[1, 2])).map(|_| ()),
            names::COMMITTED_STATE_EXISTS,
        );
        assert_eq!(d.commit(stored(1, &[1])), Ok(vec![]));
        caught(
            d.delete(h(1), Deleter::Coordinator),
            names::NO_DISCARD_COMMITTED,
        );
        d.written(h(3)).expect("write");
        // Retention: the newer checkpoint pushes the older out; its state
        // may go now.
        assert_eq!(d.commit(stored(2, &[3])), Ok(vec![CheckpointId(1)]));
        d.delete(h(1), Deleter::Coordinator).expect("evicted");
    }

    #[test]
    fn files_end_once_and_only_coordinator_deletes_may_repeat() {
        let mut d = DurableLedger::new(1);
        d.written(h(1)).expect("write");
        caught(d.written(h(1)), names::HANDLE_ENDS_ONCE);
        d.delete(h(1), Deleter::Host).expect("exists");
        d.delete(h(1), Deleter::Coordinator)
            .expect("idempotent repeat");
        caught(d.delete(h(1), Deleter::Task), names::HANDLE_ENDS_ONCE);
        d.written(h(2)).expect("write");
        caught(d.check_quiet(&[]), names::HANDLE_ENDS_ONCE);
        d.check_quiet(&[h(2)]).expect("owned by the coordinator");
    }

    #[test]
    fn restore_is_of_the_latest_with_its_state() {
        let mut d = DurableLedger::new(2);
        d.written(h(1)).expect("write");
        d.written(h(2)).expect("write");
        d.commit(stored(1, &[1])).expect("commit");
        d.commit(stored(2, &[2])).expect("commit");
        caught(
            d.restored(Some(CheckpointId(1)), &[h(1)]),
            names::RESTORE_LATEST,
        );
        caught(
            d.restored(Some(CheckpointId(2)), &[h(9)]),
            names::RESTORE_LATEST,
        );
        caught(d.restored(None, &[]), names::RESTORE_LATEST);
        d.restored(Some(CheckpointId(2)), &[h(2)]).expect("latest");
    }

    fn savepoint(id: u64, handles: &[u64]) -> Stored {
        Stored {
            savepoint: true,
            ..stored(id, handles)
        }
    }

    #[test]
    fn the_latest_is_the_highest_id_and_a_savepoint_may_follow_a_newer_checkpoint() {
        let mut d = DurableLedger::new(2);
        d.commit(stored(3, &[])).expect("commit");
        d.commit(savepoint(2, &[]))
            .expect("an older savepoint may follow");
        assert_eq!(d.latest(), Some(CheckpointId(3)));
        d.restored(Some(CheckpointId(3)), &[])
            .expect("the highest id");
        caught(d.commit(stored(2, &[])).map(|_| ()), names::COMMIT_ORDER);
        caught(d.commit(savepoint(3, &[])).map(|_| ()), names::COMMIT_ORDER);
        // Refusing a legal commit is the store disagreeing with the rule.
        caught(d.refused(CheckpointId(9), false), names::COMMIT_ORDER);
        d.refused(CheckpointId(1), false)
            .expect("not above 3: rightly refused");
    }

    #[test]
    fn retention_never_removes_a_savepoint_only_disposal_does() {
        let mut d = DurableLedger::new(1);
        d.written(h(1)).expect("write");
        d.commit(savepoint(1, &[1])).expect("commit");
        assert_eq!(d.commit(stored(2, &[])), Ok(vec![]));
        assert_eq!(d.commit(stored(3, &[])), Ok(vec![CheckpointId(2)]));
        assert!(d.holds(CheckpointId(1)));
        caught(d.delete(h(1), Deleter::Host), names::NO_DISCARD_COMMITTED);
        caught(d.dispose(CheckpointId(3)), names::COMMIT_ORDER);
        d.dispose(CheckpointId(1))
            .expect("a savepoint the store holds");
        d.delete(h(1), Deleter::Host).expect("disposed of");
    }

    #[test]
    fn the_latest_savepoint_is_the_restore_point_and_is_not_disposed_of() {
        let mut d = DurableLedger::new(1);
        d.commit(stored(1, &[])).expect("commit");
        d.commit(savepoint(2, &[])).expect("savepoint");
        assert!(!d.may_dispose(CheckpointId(2)));
        caught(d.dispose(CheckpointId(2)), names::RESTORE_LATEST);
        d.commit(stored(3, &[])).expect("a newer checkpoint");
        assert!(d.may_dispose(CheckpointId(2)));
        d.dispose(CheckpointId(2)).expect("no longer the latest");
    }

    #[test]
    fn a_checkpoint_of_the_run_before_a_restore_never_commits_after_it() {
        let mut d = DurableLedger::new(2);
        d.used(CheckpointId(1)).expect("id");
        d.commit(stored(1, &[])).expect("commit");
        d.used(CheckpointId(2)).expect("id");
        d.used(CheckpointId(3)).expect("id");
        // The job restores 1 while 3's store write is still out.
        d.restored(Some(CheckpointId(1)), &[]).expect("latest now");
        caught(d.commit(stored(3, &[])).map(|_| ()), names::RESTORE_LATEST);
        d.used(CheckpointId(4)).expect("id of the new run");
        d.commit(stored(4, &[])).expect("the new run commits");
    }

    #[test]
    fn restoring_nothing_is_right_only_with_an_empty_store_and_no_refusal() {
        let mut d = DurableLedger::new(1);
        d.nothing_restored(None).expect("empty store");
        caught(d.nothing_restored(Some("refused")), names::RESTORE_LATEST);
        d.written(h(1)).expect("write");
        d.commit(stored(1, &[1])).expect("commit");
        caught(d.nothing_restored(None), names::RESTORE_LATEST);
    }

    #[test]
    fn ids_never_repeat_and_notify_follows_commit() {
        let mut d = DurableLedger::new(1);
        d.used(CheckpointId(1)).expect("first");
        caught(d.used(CheckpointId(1)), names::IDS_NEVER_REPEAT);
        caught(
            d.notified_complete(CheckpointId(1)),
            names::NOTIFY_AFTER_COMMIT,
        );
        d.commit(stored(1, &[])).expect("commit");
        d.notified_complete(CheckpointId(1)).expect("held");
    }
}
