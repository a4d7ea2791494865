//! Coordinator configuration: raw [`CoordinatorSettings`] (what a user writes,
//! signed so that out-of-range values are representable and rejected) validated
//! once into an immutable [`CoordinatorConfig`].

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::types::{JobId, Semantics, TaskId};

/// One year in milliseconds: the seed caps the minimum pause here.
pub const MIN_PAUSE_CAP_MS: u64 = 365 * 24 * 60 * 60 * 1_000;
/// The seed's ring of recently pending checkpoint ids ("ghost" ids) that tells
/// a late message from an unknown one.
pub const RECENT_IDS_MAX: usize = 16;
/// Upper bound on task ids: tasks are indexed densely at configuration time,
/// so a bound keeps that index finite (16 Mi subtasks is far beyond any job).
pub const TASK_ID_MAX: u32 = 1 << 24;
/// Upper bound on the trigger request queue, whatever the user asks for.
pub const QUEUE_CAP: u32 = 1_024;
/// Savepoints a coordinator keeps unless configured otherwise
/// ([`CoordinatorSettings::savepoints_max`]).
pub const SAVEPOINTS_MAX_DEFAULT: i64 = 16;
/// Upper bound on kept savepoints, whatever the user asks for: each one is
/// a retained entry (its handles) in the coordinator's state until the user
/// disposes of it.
pub const SAVEPOINTS_CAP: u32 = 1_024;

fn savepoints_max_default() -> i64 {
    SAVEPOINTS_MAX_DEFAULT
}

/// Settings written before `savepoints_max` existed read as the default,
/// and the default is left out when written (traces stay as they were).
fn is_savepoints_max_default(v: &i64) -> bool {
    *v == SAVEPOINTS_MAX_DEFAULT
}

fn yes() -> bool {
    true
}

/// Settings written before `checkpoints_after_tasks_finish` existed read
/// as its default (on), and the default is left out when written.
fn is_true(v: &bool) -> bool {
    *v
}

/// What the user configures. Validate with [`CoordinatorConfig::new`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CoordinatorSettings {
    /// The job this coordinator serves.
    pub job: JobId,
    /// Base interval between periodic checkpoints (> 0). Raised to the
    /// minimum pause when smaller, as in the seed.
    pub interval_ms: i64,
    /// A pending checkpoint expires this long after it was created (>= 1).
    pub timeout_ms: i64,
    /// Minimum pause between the completion of one checkpoint and the next
    /// periodic trigger (>= 0, capped at one year). It holds back periodic
    /// triggers only: a user checkpoint (forced or not) or savepoint never
    /// waits for it.
    pub min_pause_ms: i64,
    /// Most checkpoints pending when a non-forced one is triggered (>= 1):
    /// a forced one skips the check but counts towards it.
    pub max_concurrent: i64,
    /// Number of consecutive counted checkpoint failures tolerated before the
    /// job is failed (>= 0). Counted: a checkpoint's failure whose reason
    /// [`AbortReason::counts_as_failure`](super::AbortReason::counts_as_failure),
    /// each id once; never a savepoint's.
    pub tolerable_failures: i64,
    /// Completed checkpoints retained; older ones are discarded (>= 1).
    /// Savepoints do not count: they are the user's ([`Self::savepoints_max`]).
    pub retained_max: i64,
    /// Savepoints the coordinator keeps (completed and pending, >= 1,
    /// capped at [`SAVEPOINTS_CAP`]). Retention never discards a savepoint's
    /// state: it stays until the user disposes of it
    /// (`CoordinatorEvent::DisposeSavepoint`); a savepoint trigger at the
    /// bound is refused (`TriggerRejection::TooManySavepoints`).
    #[serde(
        default = "savepoints_max_default",
        skip_serializing_if = "is_savepoints_max_default"
    )]
    pub savepoints_max: i64,
    /// Bound on queued trigger requests (>= 1, capped at [`QUEUE_CAP`]).
    pub queue_max: i64,
    /// Persist periodic checkpoints externally (needs `checkpoint_dir`).
    pub externalized: bool,
    /// Directory for externalized checkpoints.
    pub checkpoint_dir: Option<String>,
    /// Number of registered master hooks; with 0 the hook effect is skipped.
    pub master_hooks: u32,
    /// Tasks that receive the trigger message (the sources).
    pub tasks_to_trigger: Vec<TaskId>,
    /// Tasks whose acknowledgement completes a checkpoint.
    pub tasks_to_wait: Vec<TaskId>,
    /// Tasks notified when a checkpoint completes or is aborted.
    pub tasks_to_commit: Vec<TaskId>,
    /// Fixed (the default), or a legacy bug for the checkers to find.
    #[serde(default)]
    pub semantics: Semantics,
    /// Flink's `execution.checkpointing.checkpoints-after-tasks-finish`
    /// (FLIP-147, on by default since Flink 1.15). On: a checkpoint's plan
    /// leaves out the tasks that finished (`CoordinatorEvent::TaskFinished`),
    /// a checkpoint triggered once every task finished is the job's final
    /// one, and the job finishes (`JobCommand::Finish`) only when that
    /// checkpoint completed. Off (Flink before 1.14): no checkpoint is
    /// triggered once a task finished, and the job finishes when its last
    /// task does, with no final checkpoint.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub checkpoints_after_tasks_finish: bool,
}

impl CoordinatorSettings {
    /// A small, valid default: one source task `0` triggered, every task in
    /// `0..tasks` acknowledging and committing, interval 1 s, timeout 10 s,
    /// no pause, one concurrent checkpoint, no tolerable failures, one retained.
    #[must_use]
    pub fn with_tasks(job: JobId, tasks: u32) -> Self {
        let all: Vec<TaskId> = (0..tasks.max(1)).map(TaskId).collect();
        CoordinatorSettings {
            job,
            interval_ms: 1_000,
            timeout_ms: 10_000,
            min_pause_ms: 0,
            max_concurrent: 1,
            tolerable_failures: 0,
            retained_max: 1,
            savepoints_max: SAVEPOINTS_MAX_DEFAULT,
            queue_max: 16,
            externalized: false,
            checkpoint_dir: None,
            master_hooks: 0,
            tasks_to_trigger: vec![TaskId(0)],
            tasks_to_wait: all.clone(),
            tasks_to_commit: all,
            semantics: Semantics::Fixed,
            checkpoints_after_tasks_finish: true,
        }
    }
}

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum ConfigError {
    /// `interval_ms` must be > 0.
    #[error("checkpoint interval must be larger than zero (got {0} ms)")]
    IntervalNotPositive(i64),
    /// `timeout_ms` must be >= 1.
    #[error("checkpoint timeout must be at least 1 ms (got {0} ms)")]
    TimeoutNotPositive(i64),
    /// `min_pause_ms` must be >= 0.
    #[error("minimum pause between checkpoints must be >= 0 (got {0} ms)")]
    NegativeMinPause(i64),
    /// `max_concurrent` must be >= 1.
    #[error("max concurrent checkpoints must be >= 1 (got {0})")]
    MaxConcurrentNotPositive(i64),
    /// `tolerable_failures` must be >= 0.
    #[error("tolerable failed checkpoints must be >= 0 (got {0})")]
    NegativeTolerableFailures(i64),
    /// `retained_max` must be >= 1.
    #[error("retained checkpoints must be >= 1 (got {0})")]
    RetainedNotPositive(i64),
    /// `queue_max` must be >= 1.
    #[error("trigger request queue bound must be >= 1 (got {0})")]
    QueueNotPositive(i64),
    /// `savepoints_max` must be >= 1.
    #[error("kept savepoints must be >= 1 (got {0})")]
    SavepointsNotPositive(i64),
    /// Externalized checkpoints without a directory.
    #[error("externalized checkpoints are configured but no checkpoint directory is set")]
    ExternalizedWithoutDirectory,
    /// A task list that must not be empty is empty.
    #[error("the list of {0} must not be empty")]
    NoTasks(&'static str),
    /// A task id appears twice in one list.
    #[error("task {task} appears twice in {list}")]
    DuplicateTask {
        /// The repeated task.
        task: TaskId,
        /// Which list.
        list: &'static str,
    },
    /// A task id beyond [`TASK_ID_MAX`].
    #[error("task id {0} is beyond the supported maximum")]
    TaskIdTooLarge(TaskId),
}

/// Role bits of one task slot, packed in 4 bytes: bit 31 triggered, bit 30
/// committed, the low 30 bits the ack slot plus one (0: not waited for;
/// slots are below [`TASK_ID_MAX`] = 2^24). Every ack reads its task's
/// entry, in task-id order scattered over the table: at 100 000 tasks the
/// 12-byte struct this replaced (two `bool`s and an `Option<u32>`, 1.2 MB)
/// was the ack's costliest cache miss, about 30 % of a whole checkpoint
/// cycle in `perf` (`profile cycle 100000`, `benches/HISTORY.md`,
/// 2026-12-02); packed the table is 400 KB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct Roles(u32);

impl Roles {
    const TRIGGER: u32 = 1 << 31;
    const COMMIT: u32 = 1 << 30;
    const SLOT: u32 = Self::COMMIT - 1;

    /// Whether the task is sent trigger messages.
    pub(crate) fn trigger(self) -> bool {
        self.0 & Self::TRIGGER != 0
    }
    /// Whether the task is told to commit.
    pub(crate) fn commit(self) -> bool {
        self.0 & Self::COMMIT != 0
    }
    /// The task's ack slot, if it is waited for.
    pub(crate) fn wait(self) -> Option<u32> {
        (self.0 & Self::SLOT).checked_sub(1)
    }
    fn set_trigger(&mut self) {
        self.0 |= Self::TRIGGER;
    }
    fn set_commit(&mut self) {
        self.0 |= Self::COMMIT;
    }
    /// Records ack slot `slot` (nothing when it does not fit: slots are
    /// below [`TASK_ID_MAX`], checked before).
    fn set_wait(&mut self, slot: usize) {
        if let Some(v) = u32::try_from(slot)
            .ok()
            .and_then(|s| s.checked_add(1))
            .filter(|v| *v <= Self::SLOT)
        {
            self.0 = (self.0 & !Self::SLOT) | v;
        }
    }
}

/// A validated, immutable configuration. Build it with [`CoordinatorConfig::new`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CoordinatorConfig {
    pub(crate) job: JobId,
    pub(crate) interval_ms: u64,
    pub(crate) timeout_ms: u64,
    pub(crate) min_pause_ms: u64,
    pub(crate) max_concurrent: usize,
    pub(crate) tolerable_failures: u64,
    pub(crate) retained_max: usize,
    pub(crate) savepoints_max: usize,
    pub(crate) queue_max: usize,
    pub(crate) externalized: bool,
    pub(crate) master_hooks: u32,
    pub(crate) trigger: Vec<TaskId>,
    pub(crate) wait: Vec<TaskId>,
    pub(crate) commit: Vec<TaskId>,
    /// Indexed by task id: that task's roles; ack slot = position in `wait`.
    pub(crate) roles: Vec<Roles>,
    /// `wait` is `0, 1, 2, ...` (every task waited for, in id order, the
    /// usual plan): the ack slot of a task is its id, answered without
    /// reading `roles` (at 100 000 tasks acknowledged in a scattered order,
    /// that read was a cache miss per ack). Derived from `wait`.
    pub(crate) wait_is_identity: bool,
    pub(crate) settings: CoordinatorSettings,
}

fn check_list(list: &[TaskId], name: &'static str) -> Result<(), ConfigError> {
    if list.is_empty() {
        return Err(ConfigError::NoTasks(name));
    }
    let mut sorted: Vec<TaskId> = list.to_vec();
    sorted.sort_unstable();
    for pair in sorted.windows(2) {
        if let [a, b] = pair {
            if a == b {
                return Err(ConfigError::DuplicateTask {
                    task: *a,
                    list: name,
                });
            }
        }
    }
    if let Some(t) = sorted.iter().find(|t| t.0 >= TASK_ID_MAX) {
        return Err(ConfigError::TaskIdTooLarge(*t));
    }
    Ok(())
}

fn non_negative(v: i64, err: fn(i64) -> ConfigError) -> Result<u64, ConfigError> {
    u64::try_from(v).map_err(|_| err(v))
}

fn positive(v: i64, err: fn(i64) -> ConfigError) -> Result<u64, ConfigError> {
    match u64::try_from(v) {
        Ok(0) | Err(_) => Err(err(v)),
        Ok(x) => Ok(x),
    }
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl CoordinatorConfig {
    /// Validates `settings` in the seed's order: interval, timeout, pause,
    /// concurrency, externalization; then the modern limits and task lists.
    /// The pause is capped at one year and the interval raised to the pause.
    pub fn new(settings: CoordinatorSettings) -> Result<Self, ConfigError> {
        let interval = positive(settings.interval_ms, ConfigError::IntervalNotPositive)?;
        let timeout_ms = positive(settings.timeout_ms, ConfigError::TimeoutNotPositive)?;
        let min_pause = non_negative(settings.min_pause_ms, ConfigError::NegativeMinPause)?;
        let max_concurrent = positive(
            settings.max_concurrent,
            ConfigError::MaxConcurrentNotPositive,
        )?;
        if settings.externalized && settings.checkpoint_dir.is_none() {
            return Err(ConfigError::ExternalizedWithoutDirectory);
        }
        let tolerable = non_negative(
            settings.tolerable_failures,
            ConfigError::NegativeTolerableFailures,
        )?;
        let retained = positive(settings.retained_max, ConfigError::RetainedNotPositive)?;
        let queue = positive(settings.queue_max, ConfigError::QueueNotPositive)?;
        let savepoints = positive(settings.savepoints_max, ConfigError::SavepointsNotPositive)?;
        check_list(&settings.tasks_to_trigger, "tasks to trigger")?;
        check_list(&settings.tasks_to_wait, "tasks to wait for")?;
        check_list(&settings.tasks_to_commit, "tasks to commit to")?;

        let min_pause_ms = min_pause.min(MIN_PAUSE_CAP_MS);
        let interval_ms = interval.max(min_pause_ms);
        let highest = settings
            .tasks_to_trigger
            .iter()
            .chain(&settings.tasks_to_wait)
            .chain(&settings.tasks_to_commit)
            .map(|t| t.0)
            .max()
            .unwrap_or(0);
        let mut roles = vec![Roles::default(); highest as usize + 1];
        for t in &settings.tasks_to_trigger {
            if let Some(r) = roles.get_mut(t.0 as usize) {
                r.set_trigger();
            }
        }
        for (slot, t) in settings.tasks_to_wait.iter().enumerate() {
            if let Some(r) = roles.get_mut(t.0 as usize) {
                r.set_wait(slot);
            }
        }
        for t in &settings.tasks_to_commit {
            if let Some(r) = roles.get_mut(t.0 as usize) {
                r.set_commit();
            }
        }
        Ok(CoordinatorConfig {
            job: settings.job,
            interval_ms,
            timeout_ms,
            min_pause_ms,
            max_concurrent: to_usize(max_concurrent),
            tolerable_failures: tolerable,
            retained_max: to_usize(retained),
            savepoints_max: to_usize(savepoints.min(u64::from(SAVEPOINTS_CAP))),
            queue_max: to_usize(queue.min(u64::from(QUEUE_CAP))),
            externalized: settings.externalized,
            master_hooks: settings.master_hooks,
            trigger: settings.tasks_to_trigger.clone(),
            wait: settings.tasks_to_wait.clone(),
            commit: settings.tasks_to_commit.clone(),
            roles,
            wait_is_identity: settings
                .tasks_to_wait
                .iter()
                .enumerate()
                .all(|(i, t)| t.0 as usize == i),
            settings,
        })
    }

    /// The job id.
    pub fn job(&self) -> JobId {
        self.job
    }
    /// Fixed, or the legacy bug reproduced.
    pub fn semantics(&self) -> Semantics {
        self.settings.semantics
    }
    /// Whether checkpoints go on after tasks finished
    /// ([`CoordinatorSettings::checkpoints_after_tasks_finish`]).
    pub fn checkpoints_after_tasks_finish(&self) -> bool {
        self.settings.checkpoints_after_tasks_finish
    }
    /// Effective periodic interval (raised to the minimum pause).
    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }
    /// Checkpoint timeout.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }
    /// Effective minimum pause (capped at one year).
    pub fn min_pause_ms(&self) -> u64 {
        self.min_pause_ms
    }
    /// Most checkpoints pending when a non-forced one is triggered (forced
    /// ones skip the check and count towards it).
    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }
    /// Tolerated consecutive counted failures.
    pub fn tolerable_failures(&self) -> u64 {
        self.tolerable_failures
    }
    /// Retained completed checkpoints (savepoints not counted).
    pub fn retained_max(&self) -> usize {
        self.retained_max
    }
    /// Savepoints kept, completed and pending (capped at [`SAVEPOINTS_CAP`]).
    pub fn savepoints_max(&self) -> usize {
        self.savepoints_max
    }
    /// Trigger request queue bound.
    pub fn queue_max(&self) -> usize {
        self.queue_max
    }
    /// Whether periodic checkpoints are externalized.
    pub fn externalized(&self) -> bool {
        self.externalized
    }
    /// Tasks receiving trigger messages.
    pub fn tasks_to_trigger(&self) -> &[TaskId] {
        &self.trigger
    }
    /// Tasks whose acks complete a checkpoint (ack slot = index here).
    pub fn tasks_to_wait(&self) -> &[TaskId] {
        &self.wait
    }
    /// Tasks notified of completion / abortion.
    pub fn tasks_to_commit(&self) -> &[TaskId] {
        &self.commit
    }
    /// Number of task slots (highest task id + 1).
    pub fn task_slots(&self) -> usize {
        self.roles.len()
    }
    /// The settings this config was validated from.
    pub fn settings(&self) -> &CoordinatorSettings {
        &self.settings
    }
    /// The ack slot of `task`, if it is a task to wait for.
    #[inline]
    pub fn wait_slot(&self, task: TaskId) -> Option<usize> {
        if self.wait_is_identity {
            let slot = task.0 as usize;
            return (slot < self.wait.len()).then_some(slot);
        }
        self.roles
            .get(task.0 as usize)
            .and_then(|r| r.wait())
            .map(|s| s as usize)
    }
    pub(crate) fn is_known(&self, task: TaskId) -> bool {
        self.roles
            .get(task.0 as usize)
            .is_some_and(|r| r.trigger() || r.wait().is_some() || r.commit())
    }
}
