//! The one definition of a legal commit order for a completed-checkpoint
//! store, and of its "latest" checkpoint. The coordinator's own retention,
//! `Recover`'s check of what a store hands over, the file store's commit and
//! the model's store all ask these functions, so they cannot disagree.
//!
//! **The rule.** A store commits checkpoints one at a time. A checkpoint may
//! be committed after the ones the store holds when its id is new to the
//! store and, unless it is a savepoint, above every id the store holds.
//! Why a savepoint may follow a newer checkpoint: the coordinator completes
//! one checkpoint at a time in id order and a completion subsumes (aborts)
//! every older pending checkpoint, but never a savepoint, which belongs to
//! the user; so an older savepoint still pending can finish after a newer
//! checkpoint committed. No other inversion can happen.
//!
//! **Latest.** The store's latest checkpoint is the one with the highest id
//! (checkpoint or savepoint), not the last one committed: restoring a
//! savepoint committed after a newer checkpoint would rewind the job behind
//! state that was already committed.

use crate::types::CheckpointId;

/// Why a commit would break the commit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CommitOrderError {
    /// The store already holds a checkpoint with this id.
    #[error("checkpoint {0} is already stored")]
    Duplicate(CheckpointId),
    /// A checkpoint (not a savepoint) at or below an id the store holds.
    #[error("checkpoint {id} is not above the newest stored checkpoint {newest}")]
    NotNewer {
        /// The id being committed.
        id: CheckpointId,
        /// The highest id the store holds.
        newest: CheckpointId,
    },
}

/// Whether `id` (a savepoint when `savepoint`) may be committed after the
/// checkpoints the store holds, `held` as `(id, savepoint)` pairs in any
/// order.
pub fn check_next(
    held: impl IntoIterator<Item = (CheckpointId, bool)>,
    id: CheckpointId,
    savepoint: bool,
) -> Result<(), CommitOrderError> {
    let mut newest: Option<CheckpointId> = None;
    for (h, _) in held {
        if h == id {
            return Err(CommitOrderError::Duplicate(id));
        }
        newest = newest.max(Some(h));
    }
    match newest {
        Some(newest) if !savepoint && id <= newest => {
            Err(CommitOrderError::NotNewer { id, newest })
        }
        Some(_) | None => Ok(()),
    }
}

/// Whether `sequence` (oldest commit first) is an order a store can have
/// committed in: every entry is a legal commit after the ones before it.
pub fn is_legal_order(sequence: impl IntoIterator<Item = (CheckpointId, bool)>) -> bool {
    let mut before: Vec<(CheckpointId, bool)> = Vec::new();
    for (id, savepoint) in sequence {
        if check_next(before.iter().copied(), id, savepoint).is_err() {
            return false;
        }
        before.push((id, savepoint));
    }
    true
}

/// The store's latest checkpoint: the highest id it holds.
pub fn latest(held: impl IntoIterator<Item = (CheckpointId, bool)>) -> Option<CheckpointId> {
    held.into_iter().map(|(id, _)| id).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: u64) -> (CheckpointId, bool) {
        (CheckpointId(id), false)
    }
    fn s(id: u64) -> (CheckpointId, bool) {
        (CheckpointId(id), true)
    }

    #[test]
    fn a_checkpoint_must_be_newer_than_everything_held_and_a_savepoint_only_new() {
        assert_eq!(check_next([], CheckpointId(1), false), Ok(()));
        assert_eq!(check_next([c(1), c(3)], CheckpointId(4), false), Ok(()));
        assert_eq!(
            check_next([c(1), c(3)], CheckpointId(2), false),
            Err(CommitOrderError::NotNewer {
                id: CheckpointId(2),
                newest: CheckpointId(3)
            })
        );
        // A savepoint pending since before checkpoint 3 completed.
        assert_eq!(check_next([c(1), c(3)], CheckpointId(2), true), Ok(()));
        // A checkpoint is never older than a savepoint held either.
        assert!(check_next([s(5)], CheckpointId(4), false).is_err());
        assert_eq!(
            check_next([c(1), s(2)], CheckpointId(2), true),
            Err(CommitOrderError::Duplicate(CheckpointId(2)))
        );
    }

    #[test]
    fn legal_orders_and_the_latest_is_the_highest_id() {
        assert!(is_legal_order([c(1), c(3), s(2), c(4)]));
        assert!(!is_legal_order([c(1), c(3), c(2)]));
        assert!(!is_legal_order([c(1), s(1)]));
        assert_eq!(latest([c(5), s(4)]), Some(CheckpointId(5)));
        assert_eq!(latest([c(3), s(4)]), Some(CheckpointId(4)));
        assert_eq!(latest([]), None);
    }
}
