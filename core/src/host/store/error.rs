//! What the store reports when it fails or refuses ([`StoreError`]), and the
//! damage recovery finds in a checkpoint ([`Damage`], [`Damaged`]).

#[allow(clippy::wildcard_imports)] // the store's own items and imports
use super::*;

/// Why the store failed or refused.
#[derive(Debug, Error)]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was attempted.
        op: &'static str,
        /// On which path.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The id counter file is invalid (never silently reset: ids must not repeat).
    #[error("id counter {path} is invalid: {why}")]
    BadCounter {
        /// The counter file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The id counter cannot go further.
    #[error("checkpoint id counter exhausted")]
    CounterExhausted,
    /// Store or finalize for a checkpoint the store does not know in that phase.
    #[error("checkpoint {0} is not prepared")]
    NotPrepared(CheckpointId),
    /// The commit would break the commit order ([`crate::commit::check_next`]).
    #[error("commit order: {0}")]
    CommitOrder(#[from] CommitOrderError),
    /// A write on behalf of a generation older than the newest claimed one:
    /// the writer is a deposed leader.
    #[error("generation {writer} is deposed: generation {current} has been claimed")]
    StaleGeneration {
        /// The generation the write was made for.
        writer: Generation,
        /// The newest claimed generation.
        current: Generation,
    },
    /// A write on behalf of a generation this handle did not claim.
    #[error("this store handle was opened for generation {handle}, not {writer}")]
    NotThisGeneration {
        /// The generation the write was made for.
        writer: Generation,
        /// The generation the handle claimed.
        handle: Generation,
    },
    /// The leader record of this handle's generation is gone (removed by
    /// hand): no write is made without it.
    #[error("the leader record of generation {0} is missing")]
    ClaimLost(Generation),
    /// A claim of a generation that exists or is not above the newest one.
    #[error("generation {requested} cannot be claimed: the newest claimed is {}", newest.map_or("none".to_string(), |g| g.to_string()))]
    GenerationTaken {
        /// The generation asked for.
        requested: Generation,
        /// The newest claimed generation.
        newest: Option<Generation>,
    },
    /// Restoring the newest whole checkpoint would go behind output an
    /// exactly-once sink has already committed. Nothing was changed on disk
    /// but the generation the open claimed.
    #[error("{}", behind_committed(*committed, *restorable, damaged))]
    BehindCommitted {
        /// The newest checkpoint whose output was committed.
        committed: CheckpointId,
        /// The newest checkpoint that could be restored.
        restorable: Option<CheckpointId>,
        /// What recovery found damaged (why newer checkpoints cannot be used).
        damaged: Vec<Damaged>,
    },
    /// The commit of `checkpoint` ([`FileStore::store`], or `ckpt-node`'s
    /// object store) passed its commit point as far as this process can
    /// tell, but whether that is durable is unknown: the file store's sync
    /// of the directory after the rename failed, or its rename reported an
    /// error while the target is there (or cannot be read to tell), or the
    /// object store's log append failed in a way that does not say whether
    /// it was written.
    /// The store holds the checkpoint as stored (its state is guarded).
    ///
    /// This is neither answer to the coordinator's
    /// [`IoRequest::Store`](crate::coordinator::IoRequest::Store): a failure
    /// must mean "definitely not stored" (the coordinator would discard the
    /// checkpoint, or restore an older one at the next failover), and a
    /// success would let the tasks commit output of a checkpoint a crash
    /// may still lose. A host leaves the request unanswered and stops this
    /// coordinator as if it had crashed (no `Shutdown`, which would discard
    /// one of the in-doubt lists on a guess); the next start reads the
    /// store, which settles it.
    #[error("the commit of checkpoint {checkpoint} has an unknown outcome: {source}")]
    OutcomeUnknown {
        /// The checkpoint committed.
        checkpoint: CheckpointId,
        /// What failed after the commit point.
        #[source]
        source: Box<StoreError>,
    },
    /// The disposal of savepoint `savepoint` (`ckpt-node`'s object store)
    /// may or may not have been made: its log append failed in a way that
    /// does not say whether it was written. The store still holds the
    /// savepoint and keeps its objects; the log may already say it is
    /// disposed, which the next open follows. Disposing of it again
    /// settles it.
    #[error("the disposal of savepoint {savepoint} has an unknown outcome: {source}")]
    DisposalOutcomeUnknown {
        /// The savepoint.
        savepoint: CheckpointId,
        /// The append's error.
        #[source]
        source: Box<StoreError>,
    },
    /// [`FileStore::dispose_savepoint`] of a checkpoint the store does not hold.
    #[error("checkpoint {0} is not stored")]
    NotStored(CheckpointId),
    /// [`FileStore::dispose_savepoint`] of a checkpoint that is not a savepoint
    /// (retention removes those).
    #[error("checkpoint {0} is not a savepoint")]
    NotASavepoint(CheckpointId),
    /// [`FileStore::dispose_savepoint`] of the store's latest checkpoint: the
    /// job would restore an older one next time.
    #[error("savepoint {0} is the latest stored checkpoint; it is restored on the next start")]
    LatestSavepoint(CheckpointId),
}

pub(super) fn behind_committed(
    committed: CheckpointId,
    restorable: Option<CheckpointId>,
    damaged: &[Damaged],
) -> String {
    let mut s = format!(
        "the sink has already committed the output of checkpoint {committed}, but the newest \
         checkpoint that can be restored is {}: restoring it would commit that output again. \
         Nothing was changed on disk but the leader generation this start claimed.",
        restorable.map_or("none".to_string(), |c| c.to_string())
    );
    for d in damaged {
        s.push_str(&format!("\n  damaged: {d}"));
    }
    s
}

pub(super) fn io_err<'a>(
    op: &'static str,
    path: &'a str,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_string(),
        source,
    }
}

/// What is wrong with a stored checkpoint found on start.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Damage {
    /// Its metadata file is invalid.
    #[error("{0}")]
    Metadata(MetadataError),
    /// One of its state files does not exist (or cannot be read).
    #[error("state file missing: {why}")]
    MissingState {
        /// The handle.
        handle: StateHandle,
        /// What reading it said.
        why: String,
    },
    /// One of its state files is not what the checkpoint wrote.
    #[error("state file damaged: {why}")]
    DamagedState {
        /// The handle.
        handle: StateHandle,
        /// What the check said.
        why: String,
    },
}

/// One damaged file of a stored checkpoint (reported, and quarantined when
/// the start goes ahead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The checkpoint, from its metadata file's name (`None` for a name the
    /// store did not write).
    pub checkpoint: Option<CheckpointId>,
    /// The damaged file: the metadata file or the state file.
    pub file: String,
    /// What is wrong with it.
    pub damage: Damage,
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.checkpoint {
            Some(c) => write!(f, "checkpoint {c}: {}: {}", self.file, self.damage),
            None => write!(f, "{}: {}", self.file, self.damage),
        }
    }
}
