//! The task reducer's state and its read-only accessors.

use core::hash::{Hash, Hasher};

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};

use super::api::{ResultStatus, TaskConfig, TaskError};
use crate::types::CheckpointId;

/// Where the task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Lifecycle {
    /// Running: checkpoints are processed.
    Running,
    /// The input ended: checkpoints already started finish; new ones are
    /// declined.
    Finished,
    /// Failed (a `FailTask` was emitted); the checkpoint side is torn down and
    /// every event but `Close` is ignored.
    Failed,
    /// Closed: every event is ignored.
    Closed,
}

/// One subtask's checkpoint side: the channel-state writer's results, the
/// scheduled checkpoint mails, the running async parts and the aborted ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskState {
    pub(crate) config: TaskConfig,
    pub(crate) lifecycle: Lifecycle,
    /// Highest id started (barrier or trigger).
    pub(crate) last_started: Option<CheckpointId>,
    /// Highest id whose mail ran (executed or skipped) or that a cancel
    /// marker aborted (Flink's `lastCheckpointId`).
    pub(crate) last_executed: Option<CheckpointId>,
    /// Highest id notified complete.
    pub(crate) last_completed: Option<CheckpointId>,
    /// The writer's results map.
    pub(crate) results: OrdMap<CheckpointId, ResultStatus>,
    /// Checkpoint mails scheduled and not yet run.
    pub(crate) pending_mails: OrdSet<CheckpointId>,
    /// Async snapshot parts running.
    pub(crate) async_parts: OrdSet<CheckpointId>,
    /// Ids notified aborted before they executed (bounded).
    pub(crate) aborted: OrdSet<CheckpointId>,
    /// Every unexecuted id at or below the floor counts as aborted.
    pub(crate) aborted_floor: Option<CheckpointId>,
}

impl Hash for TaskState {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Destructured so that a new field cannot silently drop out of the
        // hash; imbl collections get a length prefix (TOOLING pitfall 1).
        let TaskState {
            config,
            lifecycle,
            last_started,
            last_executed,
            last_completed,
            results,
            pending_mails,
            async_parts,
            aborted,
            aborted_floor,
        } = self;
        config.hash(h);
        lifecycle.hash(h);
        last_started.hash(h);
        last_executed.hash(h);
        last_completed.hash(h);
        // Empty imbl collections are not iterated (an iterator seeks its
        // first leaf even on an empty tree): the bytes written are the same.
        h.write_usize(results.len());
        if !results.is_empty() {
            for (id, st) in results {
                id.hash(h);
                st.hash(h);
            }
        }
        for set in [pending_mails, async_parts, aborted] {
            h.write_usize(set.len());
            if !set.is_empty() {
                for id in set {
                    id.hash(h);
                }
            }
        }
        aborted_floor.hash(h);
    }
}

impl TaskState {
    /// A fresh, running task. Rejects an invalid config.
    pub fn new(config: TaskConfig) -> Result<TaskState, TaskError> {
        if config.aborted_ids_max == 0 {
            return Err(TaskError::AbortedIdsMaxZero);
        }
        Ok(TaskState {
            config,
            lifecycle: Lifecycle::Running,
            last_started: None,
            last_executed: None,
            last_completed: None,
            results: OrdMap::new(),
            pending_mails: OrdSet::new(),
            async_parts: OrdSet::new(),
            aborted: OrdSet::new(),
            aborted_floor: None,
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// Running, failed or closed.
    #[must_use]
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// Highest checkpoint id started.
    #[must_use]
    pub fn last_started(&self) -> Option<CheckpointId> {
        self.last_started
    }

    /// Highest checkpoint id executed, skipped or cancelled (ids only grow).
    #[must_use]
    pub fn last_executed(&self) -> Option<CheckpointId> {
        self.last_executed
    }

    /// Highest checkpoint id notified complete.
    #[must_use]
    pub fn last_completed(&self) -> Option<CheckpointId> {
        self.last_completed
    }

    /// The writer's results, ascending by id.
    #[must_use]
    pub fn write_results(&self) -> Vec<(CheckpointId, ResultStatus)> {
        self.results.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// Results the writer is still writing (writer work outstanding).
    #[must_use]
    pub fn writer_in_progress(&self) -> Vec<CheckpointId> {
        self.writer_in_progress_iter().collect()
    }

    /// [`TaskState::writer_in_progress`] without the `Vec`, ascending (the
    /// model lists every state's enabled actions through this: an empty map
    /// costs no iterator, which in imbl allocates).
    pub fn writer_in_progress_iter(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        let results = (!self.results.is_empty()).then(|| self.results.iter());
        results
            .into_iter()
            .flatten()
            .filter(|(_, st)| matches!(st, ResultStatus::InProgress))
            .map(|(k, _)| *k)
    }

    /// Checkpoint mails scheduled and not yet run, ascending.
    #[must_use]
    pub fn pending_mails(&self) -> Vec<CheckpointId> {
        self.pending_mails.iter().copied().collect()
    }

    /// Async snapshot parts running, ascending.
    #[must_use]
    pub fn async_parts(&self) -> Vec<CheckpointId> {
        self.async_parts_iter().collect()
    }

    /// [`TaskState::async_parts`] without the `Vec`, ascending (as
    /// [`TaskState::writer_in_progress_iter`]).
    pub fn async_parts_iter(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        let parts = (!self.async_parts.is_empty()).then(|| self.async_parts.iter());
        parts.into_iter().flatten().copied()
    }

    /// Ids remembered as aborted, ascending.
    #[must_use]
    pub fn aborted_ids(&self) -> Vec<CheckpointId> {
        self.aborted.iter().copied().collect()
    }

    /// The aborted floor (ids evicted from the aborted memory).
    #[must_use]
    pub fn aborted_floor(&self) -> Option<CheckpointId> {
        self.aborted_floor
    }

    /// Whether an unexecuted `id` counts as aborted (remembered, or at or
    /// below the floor).
    #[must_use]
    pub fn is_aborted(&self, id: CheckpointId) -> bool {
        self.aborted.contains(&id) || self.aborted_floor.is_some_and(|f| id <= f)
    }

    /// Whether anything is outstanding: a scheduled mail, writer work in
    /// progress, or an async part running. When this is false the task is
    /// quiescent and no write result may be left.
    #[must_use]
    pub fn has_outstanding_work(&self) -> bool {
        !self.pending_mails.is_empty()
            || !self.async_parts.is_empty()
            || self.writer_in_progress_iter().next().is_some()
    }
}
