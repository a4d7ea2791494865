//! Per-version facts: which Flink version, what its harness can express,
//! and the ckpt settings that match its configuration. The catalog's
//! recognizers read the version from here; nothing in this file decides
//! what Flink does (the JVM does).

use ckpt_core::coordinator::{CoordinatorSettings, SAVEPOINTS_CAP};
use ckpt_core::{JobId, Semantics, TaskId};
use serde::{Deserialize, Serialize};

use super::event::SeqConfig;

/// A Flink version the harness drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Version {
    /// 1.11.4 (the `gen1` API).
    V1_11,
    /// 1.20.0 (`gen2`).
    V1_20,
    /// 2.3.0 (`gen2`).
    V2_3,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 3] = [Version::V1_11, Version::V1_20, Version::V2_3];

    /// The short name `run.sh` and `--versions` take.
    pub fn short(self) -> &'static str {
        match self {
            Version::V1_11 => "1.11",
            Version::V1_20 => "1.20",
            Version::V2_3 => "2.3",
        }
    }

    /// The full version the harness reports in its hello line.
    pub fn full(self) -> &'static str {
        match self {
            Version::V1_11 => "1.11.4",
            Version::V1_20 => "1.20.0",
            Version::V2_3 => "2.3.0",
        }
    }

    /// Parses `1.11`, `1.20`, `2.3` or a full version.
    pub fn parse(s: &str) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|v| v.short() == s || v.full() == s)
    }

    /// 1.20 and 2.3 share the second-generation API (plan calculator,
    /// failure manager with `handleCheckpointException`, savepoints outside
    /// the store).
    pub fn is_gen2(self) -> bool {
        !matches!(self, Version::V1_11)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short())
    }
}

/// What differs per version on the way in: the harness's capabilities the
/// generator may use, and how a sequence's configuration becomes ckpt's
/// settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlinkProfile {
    /// The version.
    pub version: Version,
    /// `failUnacknowledgedPendingCheckpointsFor` exists (1.11, 1.20): the
    /// generator may send legacy-scheduling task failures.
    pub fail_unacked: bool,
    /// Notify-aborted carries the latest completed checkpoint (1.20, 2.3).
    pub aborted_carries_latest: bool,
    /// Notify-complete carries the last subsumed checkpoint (1.20, 2.3).
    pub complete_carries_last_subsumed: bool,
}

/// Flink's bound on queued trigger requests (`CheckpointRequestDecider`'s
/// `maxQueuedRequests`, 1000 in every version): ckpt's queue gets the same.
pub const FLINK_QUEUE_MAX: i64 = 1000;

impl FlinkProfile {
    /// The profile of `version`.
    pub fn of(version: Version) -> FlinkProfile {
        let gen2 = version.is_gen2();
        FlinkProfile {
            version,
            fail_unacked: !matches!(version, Version::V2_3),
            aborted_carries_latest: gen2,
            complete_carries_last_subsumed: gen2,
        }
    }

    /// ckpt's settings for a sequence: the same interval, timeout, pause,
    /// concurrency, tolerance, retention and hooks; every task waits and
    /// commits; Flink's queue bound; savepoints unbounded as in Flink (at
    /// ckpt's cap, far above any sequence).
    pub fn settings(&self, config: &SeqConfig) -> CoordinatorSettings {
        let all: Vec<TaskId> = (0..config.tasks).map(TaskId).collect();
        CoordinatorSettings {
            job: JobId(1),
            interval_ms: to_i64(config.interval),
            timeout_ms: to_i64(config.timeout),
            min_pause_ms: to_i64(config.min_pause),
            max_concurrent: i64::from(config.max_concurrent),
            tolerable_failures: i64::from(config.tolerable_failures),
            retained_max: i64::from(config.retained),
            savepoints_max: i64::from(SAVEPOINTS_CAP),
            queue_max: FLINK_QUEUE_MAX,
            externalized: false,
            checkpoint_dir: None,
            master_hooks: config.hooks,
            tasks_to_trigger: config.trigger.iter().copied().map(TaskId).collect(),
            tasks_to_wait: all.clone(),
            tasks_to_commit: all,
            semantics: Semantics::Fixed,
            // FLIP-147 (1.14, on by default from 1.15): 1.11 has no
            // checkpoints after a task finished.
            checkpoints_after_tasks_finish: self.version.is_gen2(),
        }
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
