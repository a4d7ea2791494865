//! The task reducer's state and its read-only accessors.

use core::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use super::{ResultStatus, TaskConfig, TaskError};
use crate::ids::{IdMap, IdSet};
use crate::types::CheckpointId;

/// Where the task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Lifecycle {
    /// Running: checkpoints are processed.
    Running,
    /// The input ended: checkpoints already started finish; new ones are
    /// declined.
    Finished,
    /// Failed (a [`TaskEffect::Fail`](super::TaskEffect::Fail) was emitted);
    /// the checkpoint side is torn down and every event but `Close` is
    /// ignored.
    Failed,
    /// Closed: every event is ignored.
    Closed,
}

/// Where a task restarted with in-flight channel state is in replaying it
/// (Flink 2.x's checkpointing during recovery, FLINK-38544), named by what
/// it awaits. A task not in recovery (never was, or has recovered) has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Recovery {
    /// Awaiting its channel state (`RecoveryStarted`): still fetching and
    /// filtering it. The recovery trigger is NOT_READY: every checkpoint is
    /// declined as not ready.
    AwaitingChannelState,
    /// Awaiting the consumption of the recovered input: `channels` input
    /// channels still consume it (`ChannelRecovered` each), and the drainer
    /// has pushed all of it (`drained`, `RecoveryFinished`) or not. The
    /// recovery trigger inserts barriers: a checkpoint's channel-state
    /// writer captures the input not yet consumed (with checkpointing
    /// during recovery; without it, checkpoints are declined as not ready).
    AwaitingConsumption {
        /// Input channels still consuming recovered input.
        channels: u32,
        /// The drainer pushed every recovered buffer.
        drained: bool,
    },
    /// Legacy only (FLINK-40518): the trigger went NO_OP when the drain
    /// completed, while `channels` input channels still consume recovered
    /// input; a checkpoint that starts now is neither taken nor declined.
    NoOpAwaitingChannels {
        /// Input channels still consuming recovered input.
        channels: u32,
    },
}

/// What the recovery trigger does to a checkpoint that starts (Flink's
/// `RecoveryCheckpointTrigger` phases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RecoveryTrigger {
    /// Decline it as not ready (`DeclineReason::TaskNotReady`).
    NotReady,
    /// Take it, inserting a barrier into every channel still recovering so
    /// the writer captures the recovered input not yet consumed.
    InsertBarriers,
    /// Nothing to do: the task recovered (or never recovered anything).
    NoOp,
}

impl Recovery {
    /// Input channels still consuming recovered input (the ground truth,
    /// whatever the trigger believes).
    #[must_use]
    pub fn channels(self) -> u32 {
        match self {
            Recovery::AwaitingChannelState => 0,
            Recovery::AwaitingConsumption { channels, .. }
            | Recovery::NoOpAwaitingChannels { channels } => channels,
        }
    }
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
    pub(crate) results: IdMap<ResultStatus>,
    /// Checkpoint mails scheduled and not yet run.
    pub(crate) pending_mails: IdSet,
    /// Async snapshot parts running.
    pub(crate) async_parts: IdSet,
    /// Ids notified aborted before they executed (bounded).
    pub(crate) aborted: IdSet,
    /// Every unexecuted id at or below the floor counts as aborted.
    pub(crate) aborted_floor: Option<CheckpointId>,
    /// Replaying in-flight channel state, if it does.
    pub(crate) recovery: Option<Recovery>,
}

impl Hash for TaskState {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Destructured so that a new field cannot silently drop out of the
        // hash; every collection writes its length: hashed without it, `[a, b] + []` and `[a] + [b]` write the same bytes.
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
            recovery,
        } = self;
        config.hash(h);
        lifecycle.hash(h);
        last_started.hash(h);
        last_executed.hash(h);
        last_completed.hash(h);
        // Each collection writes its length, then its entries ascending.
        results.hash(h);
        pending_mails.hash(h);
        async_parts.hash(h);
        aborted.hash(h);
        aborted_floor.hash(h);
        recovery.hash(h);
    }
}

impl TaskState {
    /// A fresh, running task (replaying in-flight channel state first if
    /// its config says it has some). Rejects an invalid config.
    pub fn new(config: TaskConfig) -> Result<TaskState, TaskError> {
        if config.aborted_ids_max == 0 {
            return Err(TaskError::AbortedIdsMaxZero);
        }
        Ok(TaskState {
            lifecycle: Lifecycle::Running,
            last_started: None,
            last_executed: None,
            last_completed: None,
            results: IdMap::new(),
            pending_mails: IdSet::new(),
            async_parts: IdSet::new(),
            aborted: IdSet::new(),
            aborted_floor: None,
            recovery: config
                .replays_channel_state
                .then_some(Recovery::AwaitingChannelState),
            config,
        })
    }

    /// Where the task is in replaying in-flight channel state (`None`: it
    /// replays none).
    #[must_use]
    pub fn recovery(&self) -> Option<Recovery> {
        self.recovery
    }

    /// Input channels still consuming recovered input.
    #[must_use]
    pub fn recovering_channels(&self) -> u32 {
        self.recovery.map_or(0, Recovery::channels)
    }

    /// What the recovery trigger does to a checkpoint that starts now.
    #[must_use]
    pub fn recovery_trigger(&self) -> RecoveryTrigger {
        match self.recovery {
            None | Some(Recovery::NoOpAwaitingChannels { .. }) => RecoveryTrigger::NoOp,
            Some(Recovery::AwaitingChannelState) => RecoveryTrigger::NotReady,
            Some(Recovery::AwaitingConsumption { .. }) => {
                if self.config.checkpoint_during_recovery {
                    RecoveryTrigger::InsertBarriers
                } else {
                    RecoveryTrigger::NotReady
                }
            }
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// Running, finished, failed or closed.
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
    pub fn write_results(&self) -> &[(CheckpointId, ResultStatus)] {
        self.results.as_slice()
    }

    /// Results the writer is still writing (writer work outstanding).
    #[must_use]
    pub fn writer_in_progress(&self) -> Vec<CheckpointId> {
        self.writer_in_progress_iter().collect()
    }

    /// [`TaskState::writer_in_progress`] without the `Vec`, ascending (the
    /// model lists every state's enabled actions through this).
    pub fn writer_in_progress_iter(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        self.results
            .as_slice()
            .iter()
            .filter(|(_, st)| matches!(st, ResultStatus::InProgress))
            .map(|(k, _)| *k)
    }

    /// Checkpoint mails scheduled and not yet run, ascending.
    #[must_use]
    pub fn pending_mails(&self) -> &[CheckpointId] {
        self.pending_mails.as_slice()
    }

    /// Async snapshot parts running, ascending.
    #[must_use]
    pub fn async_parts(&self) -> &[CheckpointId] {
        self.async_parts.as_slice()
    }

    /// [`TaskState::async_parts`] as ids, ascending.
    pub fn async_parts_iter(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        self.async_parts.iter().copied()
    }

    /// Ids remembered as aborted, ascending.
    #[must_use]
    pub fn aborted_ids(&self) -> &[CheckpointId] {
        self.aborted.as_slice()
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
