//! The bounds and switches of one world.

use ckpt_core::coordinator::CoordinatorSettings;
use ckpt_core::files::FilesConfig;
use ckpt_core::task::{LegacyBug, Semantics, TaskConfig};
use ckpt_core::{JobId, TaskId};
use serde::Serialize;

/// The job every world's coordinator serves.
pub const JOB: JobId = JobId(1);

/// How the RPC network between coordinator and tasks behaves. Data channels
/// between tasks (barriers, cancel markers) are always FIFO per channel and
/// lossless, whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// One FIFO per link (coordinator -> task t, task t -> coordinator).
    Ordered,
    /// Any in-flight message may be delivered next.
    Reorder,
    /// Reorder, and (within the fault budget) duplicate or drop a message.
    ReorderDupDrop,
}

/// Who sends barriers to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Task 0 is the only source (triggered by the coordinator); tasks
    /// `1..N` each have one input channel from task 0.
    Fanout,
    /// Tasks `0..N-1` are sources; task `N-1` has one input channel from
    /// each of them (needs N >= 3 to differ from `fanout`). The only
    /// topology here where one task can see a barrier and a cancel marker
    /// for the same checkpoint (`LegacyBug::CancelForgetsAbort`).
    Join,
}

/// The coordinator's timing and limits. The model keeps every duration at
/// 1 ms (time only labels events there: timers fire nondeterministically),
/// random schedulers vary them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Timing {
    /// Periodic trigger interval.
    pub interval_ms: u64,
    /// Checkpoint timeout.
    pub timeout_ms: u64,
    /// Minimum pause between the end of one checkpoint and the next trigger.
    pub min_pause_ms: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            interval_ms: 1,
            timeout_ms: 1,
            min_pause_ms: 0,
        }
    }
}

/// The bounds and switches of one world (the model's configuration; the
/// random schedulers build one too).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ModelConfig {
    /// Number of tasks.
    pub tasks: u32,
    /// Periodic timer firings (trigger attempts) per run.
    pub checkpoints: u8,
    /// The coordinator's `max_concurrent`.
    pub max_concurrent: u8,
    /// RPC network behaviour.
    pub network: Network,
    /// Fault budget per run: duplicates, drops, failed I/O answers, writer
    /// and async-part failures all draw from it.
    pub faults: u8,
    /// Whether I/O answers (id allocation, hooks, finalize, store) may fail.
    pub io_faults: bool,
    /// Whether the writer and the async part may fail.
    pub task_faults: bool,
    /// Whether the coordinator may shut down (once all triggers are used).
    pub shutdown: bool,
    /// Barrier topology.
    pub topology: Topology,
    /// Task semantics (fixed, or a legacy bug).
    #[serde(serialize_with = "ser_semantics")]
    pub semantics: Semantics,
    /// User-triggered savepoints per run (forced, never subsumed), at any
    /// time. 0 (the default): none.
    pub savepoints: u8,
    /// Genuine task failures per run (any task): `OperatorFailed`,
    /// `TaskFailed`, then (a separate action) a restart as a new attempt.
    /// 0 (the default): none.
    pub task_failures: u8,
    /// Scheduler stops per run, each followed later by a start. 0 (the
    /// default): none.
    pub scheduler_restarts: u8,
    /// User-triggered checkpoints (not savepoints) per run, forced or not.
    /// 0 (the default): none.
    pub user_checkpoints: u8,
    /// Master hooks registered at the coordinator (0: none).
    pub master_hooks: u32,
    /// Timing of the coordinator.
    pub timing: Timing,
    /// Consecutive counted failures tolerated before
    /// [`JobCommand::Fail`](ckpt_core::coordinator::JobCommand::Fail).
    pub tolerable_failures: u8,
    /// Completed checkpoints retained.
    pub retained: u8,
    /// The tasks' aborted-id memory.
    pub aborted_ids_max: u8,
    /// Coordinator failovers per run: the coordinator's process dies (its
    /// state is gone; an outstanding store write commits or not) and a new
    /// one recovers from the store and the id counter. 0 (the default): none.
    pub coordinator_failovers: u8,
    /// Job failovers per run, each after a
    /// [`JobCommand::Fail`](ckpt_core::coordinator::JobCommand::Fail):
    /// every task is cancelled and restarted, and the coordinator restores
    /// the latest checkpoint. 0 (the default): none.
    pub job_failovers: u8,
    /// The job starts from a savepoint (registered in the store, restored
    /// through `Restore { Savepoint }`).
    pub savepoint_restore: bool,
    /// Source tasks that may finish their input per run (`EndOfInput`).
    /// 0 (the default): none.
    pub end_of_input: u8,
    /// Tasks may re-report unchanged state, as incremental state backends
    /// do: a task's async part may acknowledge the handle of the last
    /// checkpoint it acknowledged, once it was notified that checkpoint
    /// completed (the rule the crate docs give a host), so that two
    /// checkpoints share a state file. Off by default.
    pub shared_state: bool,
    /// Coordinator failovers whose old coordinator keeps running (a deposed
    /// leader): its outstanding I/O is answered later, interleaved with the
    /// new leader's, and what it writes lands unless the store, the id
    /// counter and the tasks refuse its older generation. 0 (the default):
    /// a dead coordinator's outstanding I/O dies with it.
    pub zombie_coordinators: u8,
    /// The user may dispose of each savepoint the coordinator keeps
    /// (`DisposeSavepoint`, after removing it from the store). Off by
    /// default.
    pub dispose_savepoints: bool,
    /// The user may stop the job with a savepoint once (FLIP-34); once it
    /// stopped, the job may be started again, recovering from the store.
    /// Off by default.
    pub stop_with_savepoint: bool,
    /// Tasks that may finish per run (FLIP-147): a quiet task whose
    /// upstream tasks all finished ends its input and the host reports it
    /// finished (`TaskFinished`); the coordinator's plans leave it out.
    /// 0 (the default): none. Fanout only.
    pub finished_tasks: u8,
    /// Checkpoints after tasks finished (Flink's
    /// `execution.checkpointing.checkpoints-after-tasks-finish`, the
    /// coordinator's `checkpoints_after_tasks_finish`): on (the default,
    /// Flink since 1.15), plans leave finished tasks out and the job ends on
    /// its final checkpoint; off (Flink before 1.14), a finished task blocks
    /// every trigger and the job ends with its last task. Matters only with
    /// `finished_tasks`.
    pub checkpoints_after_finish: bool,
    /// File merging (FLIP-306): each new state handle is written as a
    /// segment of a physical file shared with the next handle written
    /// (two segments a file, across checkpoints and tasks), reference
    /// counted by the file-merging manager (`ckpt_core::files`), which the
    /// host feeds every discard. Off by default.
    pub shared_files: bool,
    /// Restarted task attempts that replay in-flight channel state, with
    /// checkpointing during recovery on (FLINK-38544): every task's
    /// attempts 1 to this many (whatever restarted them: a task failure's
    /// restart or a failover) start by replaying it. 0 (the default): none.
    pub recovering_tasks: u8,
}

fn ser_semantics<S: serde::Serializer>(s: &Semantics, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(semantics_name(*s))
}

/// The CLI name of a semantics: `fixed`, or the legacy bug's name in
/// kebab case (`legacy` and `legacy-cancel` keep their historical names).
#[must_use]
pub fn semantics_name(s: Semantics) -> &'static str {
    match s {
        Semantics::Fixed => "fixed",
        Semantics::Legacy(bug) => legacy_name(bug),
    }
}

/// The CLI name of a legacy bug.
#[must_use]
pub fn legacy_name(bug: LegacyBug) -> &'static str {
    match bug {
        LegacyBug::AbortRemovesResult => "legacy",
        LegacyBug::CancelForgetsAbort => "legacy-cancel",
        LegacyBug::StaleMailExecutes => "legacy-stale-mail",
        LegacyBug::ObsoleteBarrierFails => "legacy-obsolete-barrier",
        LegacyBug::AbortIgnoresNettyStart => "legacy-netty-abort",
        LegacyBug::SkipWithoutCancelMarker => "legacy-skip-without-cancel",
        LegacyBug::AbortedStartLeaks => "legacy-aborted-start-leak",
        LegacyBug::AbortedResultBlocksStart => "legacy-aborted-result-blocks",
        LegacyBug::NewerBarrierDropsResult => "legacy-newer-barrier-drops",
        LegacyBug::NotifyCompleteOutOfOrder => "legacy-notify-out-of-order",
        LegacyBug::TriggerAfterFinishFails => "legacy-trigger-after-finish",
        LegacyBug::HookExpiryWedgesTrigger => "legacy-hook-expiry-wedge",
        LegacyBug::LateHooksTriggerTasks => "legacy-late-hooks",
        LegacyBug::AbortAllLeavesQueueStuck => "legacy-queue-stuck",
        LegacyBug::EffectsAfterShutdown => "legacy-effects-after-shutdown",
        LegacyBug::DiscardWhileStoring => "legacy-discard-while-storing",
        LegacyBug::RestoreBehindCompletion => "legacy-restore-behind-completion",
        LegacyBug::InDoubtListsSharedState => "legacy-in-doubt-lists-shared",
        LegacyBug::SavepointExpiresWithRetention => "legacy-savepoint-expires",
        LegacyBug::RestoreLastCommitted => "legacy-restore-last-committed",
        LegacyBug::NoFencing => "legacy-no-fencing",
        LegacyBug::StoreRefusesOlderSavepoint => "legacy-store-refuses-older-savepoint",
        LegacyBug::StopLaunchesSecondCheckpoint => "legacy-stop-launches-second-checkpoint",
        LegacyBug::StopBeforeCommit => "legacy-stop-before-commit",
        LegacyBug::FailedCountsAsFinished => "legacy-failed-counts-as-finished",
        LegacyBug::FinishFailsCheckpoint => "legacy-finish-fails-checkpoint",
        LegacyBug::LogicalFileReleasedTwice => "legacy-double-release",
        LegacyBug::NoOpWhileChannelsRecover => "legacy-no-op-while-channels-recover",
        LegacyBug::SubsumedPartDiscarded => "legacy-subsumed-part-discarded",
    }
}

impl Default for ModelConfig {
    /// The default `check` configuration (sized for ~10-20 s on 2 cores).
    fn default() -> Self {
        ModelConfig {
            tasks: 2,
            checkpoints: 2,
            max_concurrent: 1,
            network: Network::Reorder,
            faults: 1,
            io_faults: true,
            task_faults: true,
            shutdown: true,
            topology: Topology::Fanout,
            semantics: Semantics::Fixed,
            savepoints: 0,
            task_failures: 0,
            scheduler_restarts: 0,
            user_checkpoints: 0,
            master_hooks: 0,
            timing: Timing::default(),
            tolerable_failures: 0,
            retained: 1,
            aborted_ids_max: 16,
            coordinator_failovers: 0,
            job_failovers: 0,
            savepoint_restore: false,
            end_of_input: 0,
            shared_state: false,
            zombie_coordinators: 0,
            dispose_savepoints: false,
            stop_with_savepoint: false,
            finished_tasks: 0,
            checkpoints_after_finish: true,
            shared_files: false,
            recovering_tasks: 0,
        }
    }
}

impl ModelConfig {
    /// The coordinator settings of this configuration (also the trace header).
    #[must_use]
    pub fn settings(&self) -> CoordinatorSettings {
        let mut s = CoordinatorSettings::with_tasks(JOB, self.tasks.max(1));
        let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        s.interval_ms = ms(self.timing.interval_ms);
        s.timeout_ms = ms(self.timing.timeout_ms);
        s.min_pause_ms = ms(self.timing.min_pause_ms);
        s.max_concurrent = i64::from(self.max_concurrent.max(1));
        s.tolerable_failures = i64::from(self.tolerable_failures);
        s.retained_max = i64::from(self.retained.max(1));
        s.master_hooks = self.master_hooks;
        s.semantics = self.semantics;
        s.checkpoints_after_tasks_finish = self.checkpoints_after_finish;
        if self.topology == Topology::Join && self.tasks >= 2 {
            s.tasks_to_trigger = (0..self.tasks - 1).map(TaskId).collect();
        }
        s
    }

    /// The file-merging manager's configuration (`shared_files`): two
    /// segments a physical file.
    #[must_use]
    pub fn files_config(&self) -> FilesConfig {
        FilesConfig {
            segments_per_file: 2,
            semantics: self.semantics,
        }
    }

    /// The task configuration of a task's attempt `attempt`: the same for
    /// every task, replaying channel state in attempts 1 to
    /// `recovering_tasks`.
    #[must_use]
    pub fn attempt_config(&self, attempt: u32) -> TaskConfig {
        TaskConfig {
            replays_channel_state: attempt >= 1 && attempt <= u32::from(self.recovering_tasks),
            ..self.task_config()
        }
    }

    /// The task configuration (the same for every task and first attempt).
    #[must_use]
    pub fn task_config(&self) -> TaskConfig {
        TaskConfig {
            semantics: self.semantics,
            aborted_ids_max: usize::from(self.aborted_ids_max.max(1)),
            // Flink 2.x with checkpointing during recovery; it matters only
            // to a task that recovers (`recovering_tasks`).
            checkpoint_during_recovery: self.recovering_tasks > 0,
            replays_channel_state: false,
        }
    }
}
