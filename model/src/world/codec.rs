//! A compact, versioned encoding of a [`World`]: what the distributed
//! search ships between workers instead of the path an owner would replay
//! from the initial state, and what its checkpoints store as a frontier.
//!
//! **Format** ([`VERSION`] 1): one version byte, then the world in serde's
//! field order in `bincode`'s variable-length integers (an id or a counter
//! below 251 is one byte; no field names, no padding). The reducers' states
//! are written as the core's snapshots (`ckpt_core::snapshot`: ordered lists
//! instead of persistent trees; the coordinator's settings, not its derived
//! configuration) and read back with the structure checks only
//! (`from_snapshot_unjudged`): a world may hold a state that breaks an
//! invariant on purpose (a legacy semantics; the world records the
//! violation), and the step that made it already judged it. A part shared
//! copy-on-write ([`super::Sealed`]) is written as its value and sealed
//! again where it is read, so a decoded world is equal to the encoded one
//! and has the same fingerprint (`model/tests/codec.rs` checks both over
//! every reachable state of small configurations, fixed and legacy).
//!
//! Bytes of another version, cut short, with trailing bytes or that do not
//! describe a world decode to `None`; the reader never panics on them.

use bincode::Options;

use super::World;

/// The format's version, the encoding's first byte. Any change to a type
/// inside a [`World`] that changes what serde writes (a field added,
/// removed or reordered, a variant added in the middle) needs a new one.
pub const VERSION: u8 = 1;

/// The encoding's name and version, stored in a distributed search's
/// checkpoints: a checkpoint of another format is refused, not misread.
pub const NAME: &str = "ckpt-world/1";

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
}

/// Appends `world`'s encoding to `out`.
pub fn encode(world: &World, out: &mut Vec<u8>) {
    out.push(VERSION);
    // Writing to a `Vec` fails only on an allocation failure, which aborts
    // first; serde's derives of the world's types have no error of their own.
    let _ = options().serialize_into(&mut *out, world);
}

/// The world `bytes` encode (written by [`encode`] of this [`VERSION`]), or
/// `None` for bytes it cannot have written.
#[must_use]
pub fn decode(bytes: &[u8]) -> Option<World> {
    let (&version, body) = bytes.split_first()?;
    if version != VERSION {
        return None;
    }
    // A length read from damaged bytes never allocates past the input.
    options()
        .with_limit(body.len() as u64)
        .deserialize(body)
        .ok()
}

/// The reducers' states as the encoding writes them: their snapshots
/// (`ckpt_core::snapshot`), field by field in declaration order, and read
/// back with the structure checks only (`from_snapshot_unjudged`).
///
/// Why not the core's own `Serialize`: it leaves a field out where it has
/// its default (`skip_serializing_if`, so that older snapshots and traces
/// read back unchanged as JSON), which a format without field names cannot
/// tell from the next field. These mirrors (serde's `remote` derives, which
/// fail to compile when the core's types gain or lose a field) write every
/// field, always.
pub(super) mod wire {
    use ckpt_core::coordinator::{
        CoordinatorSettings, CoordinatorState, FinishPhase, StopPhase, TaskStatus, Timer,
    };
    use ckpt_core::snapshot::{
        CompletedSnapshot, CoordinatorSnapshot, PendingSnapshot, RequestSnapshot, TaskSnapshot,
    };
    use ckpt_core::task::{Lifecycle, Recovery, ResultStatus, Semantics, TaskConfig, TaskState};
    use ckpt_core::{AttemptNo, CheckpointId, Generation, JobId, Millis, TaskId};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::super::Sealed;

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "TaskConfig")]
    struct TaskConfigDef {
        semantics: Semantics,
        aborted_ids_max: usize,
        checkpoint_during_recovery: bool,
        replays_channel_state: bool,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "TaskSnapshot")]
    struct TaskSnapshotDef {
        version: u32,
        #[serde(with = "TaskConfigDef")]
        config: TaskConfig,
        lifecycle: Lifecycle,
        last_started: Option<CheckpointId>,
        last_executed: Option<CheckpointId>,
        last_completed: Option<CheckpointId>,
        results: Vec<(CheckpointId, ResultStatus)>,
        pending_mails: Vec<CheckpointId>,
        async_parts: Vec<CheckpointId>,
        aborted: Vec<CheckpointId>,
        aborted_floor: Option<CheckpointId>,
        recovery: Option<Recovery>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "CoordinatorSettings")]
    struct SettingsDef {
        job: JobId,
        interval_ms: i64,
        timeout_ms: i64,
        min_pause_ms: i64,
        max_concurrent: i64,
        tolerable_failures: i64,
        retained_max: i64,
        savepoints_max: i64,
        queue_max: i64,
        externalized: bool,
        checkpoint_dir: Option<String>,
        master_hooks: u32,
        tasks_to_trigger: Vec<TaskId>,
        tasks_to_wait: Vec<TaskId>,
        tasks_to_commit: Vec<TaskId>,
        semantics: Semantics,
        checkpoints_after_tasks_finish: bool,
    }

    /// A task slot's status as `(attempt, running, finished)`.
    mod statuses {
        use super::{AttemptNo, Deserialize, Deserializer, Serializer, TaskStatus};

        pub(super) fn serialize<S: Serializer>(v: &[TaskStatus], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(v.iter().map(|t| {
                let TaskStatus {
                    attempt,
                    running,
                    finished,
                } = *t;
                (attempt, running, finished)
            }))
        }

        pub(super) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Vec<TaskStatus>, D::Error> {
            let v: Vec<(AttemptNo, bool, bool)> = Vec::deserialize(d)?;
            Ok(v.into_iter()
                .map(|(attempt, running, finished)| TaskStatus {
                    attempt,
                    running,
                    finished,
                })
                .collect())
        }
    }

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "CoordinatorSnapshot")]
    struct CoordinatorSnapshotDef {
        version: u32,
        #[serde(with = "SettingsDef")]
        settings: CoordinatorSettings,
        now: Millis,
        shutdown: bool,
        periodic: bool,
        timers: Vec<(Timer, Millis)>,
        #[serde(with = "statuses")]
        tasks: Vec<TaskStatus>,
        next_request: u64,
        in_flight: Option<RequestSnapshot>,
        queue: Vec<RequestSnapshot>,
        pending: Vec<PendingSnapshot>,
        completing: Option<CheckpointId>,
        completed: Vec<CompletedSnapshot>,
        recent: Vec<CheckpointId>,
        last_id: Option<CheckpointId>,
        last_completion: Option<Millis>,
        latest_completed: Option<CheckpointId>,
        consecutive_trigger_failures: u64,
        counted_failures: u64,
        job_failed: bool,
        in_doubt: Option<CompletedSnapshot>,
        restore_deferred: bool,
        generation: Generation,
        stop: Option<StopPhase>,
        finish: Option<FinishPhase>,
    }

    /// A task side's reducer state.
    pub(in super::super) mod task {
        use super::{Deserializer, Serializer, TaskSnapshotDef, TaskState};

        pub(in super::super::super) fn serialize<S: Serializer>(
            t: &TaskState,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            TaskSnapshotDef::serialize(&t.snapshot(), s)
        }

        pub(in super::super::super) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<TaskState, D::Error> {
            TaskState::from_snapshot_unjudged(TaskSnapshotDef::deserialize(d)?)
                .map_err(serde::de::Error::custom)
        }
    }

    /// A world's (or a deposed leader's) coordinator.
    pub(in super::super) mod coordinator {
        use super::{CoordinatorSnapshotDef, CoordinatorState, Deserializer, Sealed, Serializer};

        pub(in super::super::super) fn serialize<S: Serializer>(
            c: &Sealed<CoordinatorState>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            CoordinatorSnapshotDef::serialize(&c.snapshot(), s)
        }

        pub(in super::super::super) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Sealed<CoordinatorState>, D::Error> {
            CoordinatorState::from_snapshot_unjudged(CoordinatorSnapshotDef::deserialize(d)?)
                .map(Sealed::new)
                .map_err(serde::de::Error::custom)
        }
    }
}
