//! Persisting and shipping the reducers' states (serde), with validation on
//! the way back in.
//!
//! [`CoordinatorState`] and [`TaskState`] implement `Serialize` and
//! `Deserialize` through a plain, versioned mirror of their fields
//! ([`CoordinatorSnapshot`], [`TaskSnapshot`]): ordered `Vec`s instead of the
//! shared copy-on-write lists and maps, the inline id sets and the persistent ack tables, the coordinator's
//! *settings* instead of its validated configuration. Any serde format works
//! (the tests use JSON).
//!
//! A snapshot read back is **validated** before it becomes a state
//! ([`CoordinatorState::from_snapshot`], [`TaskState::from_snapshot`]; the
//! `Deserialize` impls call them): the version, the configuration (validated
//! again, as on construction), the structure the reducer relies on (one
//! status per task slot, one ack slot and one expected attempt per task to
//! wait for, collections in strictly increasing order, request and
//! checkpoint ids the counters already handed out), and then every
//! single-state invariant ([`crate::invariants::coordinator::check_state`],
//! [`crate::invariants::task::check_state`]). A corrupt snapshot is a typed
//! [`SnapshotError`]; no snapshot ever becomes a state that breaks an
//! invariant, except through the `from_snapshot_unjudged` constructors
//! (feature `codec`, for a model checker's own states: the structure checks
//! without the invariants). A round trip gives an equal state (`state ==
//! from_snapshot(state.snapshot())`), pinned by tests over every state of
//! the scenario stories.
//!
//! Only fixed-semantics states are guaranteed to read back: a legacy
//! semantics (a bug reproduced for the checkers) can reach states that
//! break the invariants, and those are refused like any other corrupt input.
//!
//! # What a host persists, and how it recovers
//!
//! The reducers' states are *caches* of what is durable, not the durable
//! record itself: a coordinator's pending checkpoints refer to acks in
//! flight and I/O that may have completed since the snapshot was taken.
//! Two ways back after a crash, in order of preference:
//!
//! 1. **From the store (the durable truth).** A new coordinator
//!    ([`CoordinatorState::new`]) takes over what the completed-checkpoint
//!    store and the id counter hold with
//!    [`CoordinatorEvent::Recover`](crate::coordinator::CoordinatorEvent::Recover)
//!    `{ checkpoints, last_id, generation }` as its first event (the store's
//!    checkpoints, oldest first; the counter's last id; the generation it
//!    claimed in the store first, above every earlier leader's), then
//!    `Restore { source: Latest { .. } }` emits
//!    [`JobCommand::Restore`](crate::coordinator::JobCommand::Restore) for
//!    the latest one, which the host assigns to fresh task attempts
//!    (`TaskState::new` for each, `TaskRunning` to the coordinator). A job
//!    that starts from a savepoint uses `Restore { source: Savepoint { .. } }`
//!    on a fresh coordinator instead (the id counter is reset above it).
//!    This is what `ckpt_core::host::store` and the async host do.
//! 2. **From a snapshot (a hand-over, not a crash).** When the process that
//!    holds the reducer stays the owner of the I/O it started (a leader
//!    hand-over that forwards the outstanding answers, a state shipped to a
//!    replay tool or a debugger), serialize the state, deserialize it
//!    elsewhere and keep feeding events: the outstanding effects' answers
//!    must then reach the new copy, and its armed timers
//!    ([`CoordinatorState::timers`], [`CoordinatorState::next_deadline`]) be
//!    re-armed by the new host. A snapshot of a task is only meaningful
//!    together with its mailbox, writer and async work, which live in the
//!    host.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::coordinator::{
    AckSlot, Cold, Completed, ConfigError, CoordinatorConfig, CoordinatorSettings,
    CoordinatorState, FailureCounter, FinishPhase, Parts, Pending, PendingMap, PendingPhase,
    PendingRecord, Request, RequestId, Shared, StopPhase, TaskStatus, Timer, TriggerKind,
};
use crate::invariants::{self, Violation};
use crate::task::{Lifecycle, Recovery, ResultStatus, TaskConfig, TaskError, TaskState};
use crate::types::{AttemptNo, CheckpointId, Generation, Millis};

/// The snapshot format version this build writes. It reads every version
/// from 1 up to this one: version 2 added the coordinator's deferred
/// restore and generation, which a version-1 snapshot reads as "no restore
/// waiting" and generation 0.
pub const SNAPSHOT_VERSION: u32 = 2;

/// Why a snapshot was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SnapshotError {
    /// Written by another version of the format.
    #[error(
        "snapshot version {found} is not supported (this build reads versions 1 to {supported})"
    )]
    Version {
        /// The snapshot's version.
        found: u32,
        /// [`SNAPSHOT_VERSION`].
        supported: u32,
    },
    /// The coordinator's settings do not validate.
    #[error("invalid coordinator settings in snapshot: {0}")]
    Config(ConfigError),
    /// The task's configuration does not validate.
    #[error("invalid task configuration in snapshot: {0}")]
    TaskConfig(TaskError),
    /// The structure the reducer relies on is broken.
    #[error("corrupt snapshot: {0}")]
    Corrupt(Corruption),
    /// The state would break a single-state invariant.
    #[error("snapshot breaks an invariant: {0}")]
    Invariant(Violation),
}

/// The structural damage [`SnapshotError::Corrupt`] names.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Corruption {
    /// A restore waits for a completion, but none is outstanding.
    #[error("a restore waits for a completion, but no checkpoint is completing")]
    RestoreDeferredWithoutCompletion,
    /// A collection is not in strictly increasing order (duplicates
    /// included), so it cannot be the image of an ordered map or set.
    #[error("`{0}` is not in strictly increasing order")]
    Unordered(&'static str),
    /// The number of task statuses is not the configuration's task slots.
    #[error("{found} task statuses for {expected} task slots")]
    TaskCount {
        /// The configuration's task slots.
        expected: usize,
        /// Statuses in the snapshot.
        found: usize,
    },
    /// A pending checkpoint's ack slots or expected attempts do not match
    /// the tasks to wait for.
    #[error(
        "checkpoint {checkpoint}: {acks} ack slots and {attempts} attempts for {expected} tasks"
    )]
    AckSlots {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Tasks to wait for.
        expected: usize,
        /// Ack slots in the snapshot.
        acks: usize,
        /// Expected attempts in the snapshot.
        attempts: usize,
    },
    /// A request id the request counter has not handed out yet.
    #[error("request {} was never issued (next request id {next})", request.0)]
    RequestNotIssued {
        /// The request.
        request: RequestId,
        /// The counter.
        next: u64,
    },
    /// A checkpoint id above the highest id the coordinator has seen.
    #[error("checkpoint {checkpoint} is above the last id {last:?}")]
    IdAboveLast {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The coordinator's last id.
        last: Option<CheckpointId>,
    },
    /// The completing marker names no checkpoint that is finalizing or
    /// storing (the invariants only ask that it names a pending one).
    #[error("the completing marker {0} names no finalizing or storing checkpoint")]
    Completing(CheckpointId),
    /// The trigger queue is not in priority order (highest first).
    #[error("the trigger queue is not in priority order")]
    QueueOrder,
}

/// A trigger request, as persisted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSnapshot {
    /// The request id.
    pub id: RequestId,
    /// What was asked for.
    pub kind: TriggerKind,
    /// When.
    pub requested_at: Millis,
    /// Legacy `HookExpiryWedgesTrigger` only: the checkpoint whose hooks the
    /// request waits for (always `None` with fixed semantics).
    #[serde(default)]
    pub hooks_for: Option<CheckpointId>,
}

/// A pending checkpoint, as persisted (the missing-ack count is derived
/// from the slots).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingSnapshot {
    /// The checkpoint id.
    pub id: CheckpointId,
    /// The request it came from.
    pub request: RequestId,
    /// What was asked for.
    pub kind: TriggerKind,
    /// When it was triggered.
    pub timestamp: Millis,
    /// The attempt expected in each ack slot.
    pub attempts: Vec<AttemptNo>,
    /// Each ack slot, in `tasks_to_wait` order.
    pub acks: Vec<AckSlot>,
    /// Where it is on its way to completion.
    pub phase: PendingPhase,
}

/// A completed (or in-doubt) checkpoint, as persisted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompletedSnapshot {
    /// The checkpoint id.
    pub id: CheckpointId,
    /// The request it came from (`None` when restored or recovered).
    pub request: Option<RequestId>,
    /// Whether it is a savepoint.
    pub savepoint: bool,
    /// When it was triggered.
    pub timestamp: Millis,
    /// Its slots (the handles it retains), in ack-slot order.
    pub handles: Vec<AckSlot>,
}

/// A [`CoordinatorState`], as persisted. Build it with
/// [`CoordinatorState::snapshot`]; turn it back with
/// [`CoordinatorState::from_snapshot`] (validated).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorSnapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The settings the configuration is validated from.
    pub settings: CoordinatorSettings,
    /// The last time seen.
    pub now: Millis,
    /// Shut down (sticky).
    pub shutdown: bool,
    /// Periodic scheduling on.
    pub periodic: bool,
    /// Armed timers and their deadlines, in timer order.
    pub timers: Vec<(Timer, Millis)>,
    /// Each task slot's attempt and whether it runs.
    pub tasks: Vec<TaskStatus>,
    /// The next request id to hand out.
    pub next_request: u64,
    /// The request allocating its id.
    pub in_flight: Option<RequestSnapshot>,
    /// Queued requests, highest priority first.
    pub queue: Vec<RequestSnapshot>,
    /// Pending checkpoints, by id.
    pub pending: Vec<PendingSnapshot>,
    /// The checkpoint finalizing or storing.
    pub completing: Option<CheckpointId>,
    /// Retained completed checkpoints, oldest first.
    pub completed: Vec<CompletedSnapshot>,
    /// The ring of recent checkpoint ids.
    pub recent: Vec<CheckpointId>,
    /// The highest checkpoint id seen.
    pub last_id: Option<CheckpointId>,
    /// When the last checkpoint completed.
    pub last_completion: Option<Millis>,
    /// The latest completed checkpoint id.
    pub latest_completed: Option<CheckpointId>,
    /// Consecutive unsuccessful triggers.
    pub consecutive_trigger_failures: u64,
    /// Consecutive counted checkpoint failures.
    pub counted_failures: u64,
    /// [`JobCommand::Fail`](crate::coordinator::JobCommand::Fail) was
    /// emitted and not reset by a success.
    pub job_failed: bool,
    /// The checkpoint in doubt at shutdown.
    pub in_doubt: Option<CompletedSnapshot>,
    /// A `Restore { Latest }` waits for the completion in flight (version 2).
    #[serde(default)]
    pub restore_deferred: bool,
    /// The coordinator's generation (version 2).
    #[serde(default)]
    pub generation: Generation,
    /// A stop-with-savepoint, requested or done (version 2).
    #[serde(default)]
    pub stop: Option<StopPhase>,
    /// The final checkpoint or the job's finish (left out when `None`,
    /// so snapshots without finished tasks read and write as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishPhase>,
}

/// A [`TaskState`], as persisted. Build it with [`TaskState::snapshot`];
/// turn it back with [`TaskState::from_snapshot`] (validated).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSnapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The configuration.
    pub config: TaskConfig,
    /// Where the task is in its life.
    pub lifecycle: Lifecycle,
    /// Highest id started.
    pub last_started: Option<CheckpointId>,
    /// Highest id executed, skipped or cancelled.
    pub last_executed: Option<CheckpointId>,
    /// Highest id notified complete.
    pub last_completed: Option<CheckpointId>,
    /// The writer's results, by id.
    pub results: Vec<(CheckpointId, ResultStatus)>,
    /// Scheduled checkpoint mails, ascending.
    pub pending_mails: Vec<CheckpointId>,
    /// Running async parts, ascending.
    pub async_parts: Vec<CheckpointId>,
    /// Remembered aborted ids, ascending.
    pub aborted: Vec<CheckpointId>,
    /// The aborted floor.
    pub aborted_floor: Option<CheckpointId>,
    /// Where the task is in replaying in-flight channel state (absent:
    /// nowhere, it replays none; written only when present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
}

fn version(found: u32) -> Result<(), SnapshotError> {
    if (1..=SNAPSHOT_VERSION).contains(&found) {
        Ok(())
    } else {
        Err(SnapshotError::Version {
            found,
            supported: SNAPSHOT_VERSION,
        })
    }
}

fn increasing<K: Ord, T>(
    items: &[T],
    key: impl Fn(&T) -> K,
    what: &'static str,
) -> Result<(), SnapshotError> {
    if items.windows(2).all(|w| match w {
        [a, b] => key(a) < key(b),
        _ => true,
    }) {
        Ok(())
    } else {
        Err(SnapshotError::Corrupt(Corruption::Unordered(what)))
    }
}

fn corrupt(c: Corruption) -> SnapshotError {
    SnapshotError::Corrupt(c)
}

impl From<&Request> for RequestSnapshot {
    fn from(r: &Request) -> Self {
        let Request {
            id,
            kind,
            requested_at,
            hooks_for,
        } = r;
        RequestSnapshot {
            id: *id,
            kind: kind.clone(),
            requested_at: *requested_at,
            hooks_for: *hooks_for,
        }
    }
}

impl From<RequestSnapshot> for Request {
    fn from(r: RequestSnapshot) -> Self {
        Request {
            id: r.id,
            kind: r.kind,
            requested_at: r.requested_at,
            hooks_for: r.hooks_for,
        }
    }
}

impl From<&Completed> for CompletedSnapshot {
    fn from(c: &Completed) -> Self {
        let Completed {
            id,
            request,
            savepoint,
            timestamp,
            handles,
        } = c;
        CompletedSnapshot {
            id: *id,
            request: *request,
            savepoint: *savepoint,
            timestamp: *timestamp,
            handles: handles.iter().collect(),
        }
    }
}

impl From<CompletedSnapshot> for Completed {
    fn from(c: CompletedSnapshot) -> Self {
        Completed {
            id: c.id,
            request: c.request,
            savepoint: c.savepoint,
            timestamp: c.timestamp,
            handles: c.handles.into_iter().collect(),
        }
    }
}

impl From<Pending<'_>> for PendingSnapshot {
    fn from(p: Pending<'_>) -> Self {
        // Every field as the state reads it (`Parts` lists them once).
        let Parts {
            id,
            request,
            kind,
            timestamp,
            attempts,
            // Derived from the slots on the way back.
            remaining: _,
            phase,
            acks,
        } = p.parts();
        PendingSnapshot {
            id,
            request,
            kind: kind.clone(),
            timestamp,
            attempts: attempts.iter().collect(),
            acks: acks.iter().collect(),
            phase,
        }
    }
}

impl CoordinatorState {
    /// The state as a plain, versioned snapshot (what `Serialize` writes).
    #[must_use]
    pub fn snapshot(&self) -> CoordinatorSnapshot {
        let CoordinatorState {
            now,
            shutdown,
            periodic,
            is_completing: _,
            completing_id: _,
            cold,
            pending,
        } = self;
        let completing = self.completing();
        let Cold {
            config,
            next_request,
            timers,
            tasks,
            in_flight,
            queue,
            completed,
            recent,
            in_doubt,
            restore_deferred,
            generation,
            stop,
            finish,
            last_id,
            last_completion,
            latest_completed,
            consecutive_trigger_failures,
            failures,
        } = &**cold;
        let FailureCounter { count, job_failed } = failures;
        CoordinatorSnapshot {
            version: SNAPSHOT_VERSION,
            settings: config.settings().clone(),
            now: *now,
            shutdown: *shutdown,
            periodic: *periodic,
            timers: timers.iter().map(|(t, at)| (*t, *at)).collect(),
            tasks: tasks.iter().copied().collect(),
            next_request: *next_request,
            in_flight: in_flight.as_ref().map(RequestSnapshot::from),
            queue: queue.iter().map(RequestSnapshot::from).collect(),
            pending: pending.values().map(PendingSnapshot::from).collect(),
            completing,
            completed: completed.iter().map(CompletedSnapshot::from).collect(),
            recent: recent.iter().copied().collect(),
            last_id: *last_id,
            last_completion: *last_completion,
            latest_completed: *latest_completed,
            consecutive_trigger_failures: *consecutive_trigger_failures,
            counted_failures: *count,
            job_failed: *job_failed,
            in_doubt: in_doubt.as_ref().map(CompletedSnapshot::from),
            restore_deferred: *restore_deferred,
            generation: *generation,
            stop: *stop,
            finish: *finish,
        }
    }

    /// Validates `snap` (version, settings, structure, then every
    /// single-state invariant: see the [module docs](self)) and builds the
    /// state it describes.
    pub fn from_snapshot(snap: CoordinatorSnapshot) -> Result<CoordinatorState, SnapshotError> {
        let state = Self::from_snapshot_structure(snap)?;
        invariants::coordinator::check_state(&state).map_err(SnapshotError::Invariant)?;
        Ok(state)
    }

    /// Like [`CoordinatorState::from_snapshot`] (version, settings,
    /// structure) but without the single-state invariants: for a model
    /// checker that ships its own states between processes, where a legacy
    /// semantics reaches states that break them on purpose (and where
    /// judging every state again on arrival would repeat the check its
    /// step already made). The structure checks stay, so the reducer still
    /// never indexes past a slot.
    #[cfg(feature = "codec")]
    pub fn from_snapshot_unjudged(
        snap: CoordinatorSnapshot,
    ) -> Result<CoordinatorState, SnapshotError> {
        Self::from_snapshot_structure(snap)
    }

    fn from_snapshot_structure(
        snap: CoordinatorSnapshot,
    ) -> Result<CoordinatorState, SnapshotError> {
        let CoordinatorSnapshot {
            version: v,
            settings,
            now,
            shutdown,
            periodic,
            timers,
            tasks,
            next_request,
            in_flight,
            queue,
            pending,
            completing,
            completed,
            recent,
            last_id,
            last_completion,
            latest_completed,
            consecutive_trigger_failures,
            counted_failures,
            job_failed,
            in_doubt,
            restore_deferred,
            generation,
            stop,
            finish,
        } = snap;
        version(v)?;
        let config = CoordinatorConfig::new(settings).map_err(SnapshotError::Config)?;
        if tasks.len() != config.task_slots() {
            return Err(corrupt(Corruption::TaskCount {
                expected: config.task_slots(),
                found: tasks.len(),
            }));
        }
        increasing(&timers, |(t, _)| *t, "timers")?;
        increasing(&pending, |p| p.id, "pending")?;
        let issued = |request: RequestId| {
            // The counter saturates at u64::MAX (then that id repeats).
            if request.0 < next_request || next_request == u64::MAX {
                Ok(())
            } else {
                Err(corrupt(Corruption::RequestNotIssued {
                    request,
                    next: next_request,
                }))
            }
        };
        for r in in_flight.iter().chain(&queue) {
            issued(r.id)?;
        }
        if queue
            .windows(2)
            .any(|w| w[0].kind.priority() < w[1].kind.priority())
        {
            return Err(corrupt(Corruption::QueueOrder));
        }
        let known = |checkpoint: CheckpointId| {
            if last_id.is_some_and(|l| checkpoint <= l) {
                Ok(())
            } else {
                Err(corrupt(Corruption::IdAboveLast {
                    checkpoint,
                    last: last_id,
                }))
            }
        };
        let wait = config.tasks_to_wait().len();
        let mut pending_map = PendingMap::default();
        for p in pending {
            issued(p.request)?;
            known(p.id)?;
            if p.acks.len() != wait || p.attempts.len() != wait {
                return Err(corrupt(Corruption::AckSlots {
                    checkpoint: p.id,
                    expected: wait,
                    acks: p.acks.len(),
                    attempts: p.attempts.len(),
                }));
            }
            // As many slots as the configuration waits for: at most
            // `TASK_ID_MAX` (16 Mi), so 32 bits.
            let remaining = p.acks.iter().filter(|a| **a == AckSlot::Waiting).count();
            let remaining = u32::try_from(remaining).unwrap_or(u32::MAX);
            pending_map.insert(PendingRecord {
                id: p.id,
                request: p.request,
                kind: p.kind,
                timestamp: p.timestamp,
                attempts: p.attempts.into(),
                acks: p.acks.into_iter().collect(),
                remaining,
                phase: p.phase,
            });
        }
        if restore_deferred && completing.is_none() {
            return Err(corrupt(Corruption::RestoreDeferredWithoutCompletion));
        }
        if let Some(c) = completing {
            let completes = pending_map.get(&c).is_some_and(|p| {
                matches!(p.phase(), PendingPhase::Finalizing | PendingPhase::Storing)
            });
            if !completes {
                return Err(corrupt(Corruption::Completing(c)));
            }
        }
        for c in completed.iter().chain(&in_doubt) {
            known(c.id)?;
            if let Some(r) = c.request {
                issued(r)?;
            }
        }
        let mut state = CoordinatorState {
            now,
            shutdown,
            periodic,
            is_completing: false,
            completing_id: CheckpointId(0),
            cold: Shared::new(Cold {
                config: std::sync::Arc::new(config),
                next_request,
                timers: timers.into_iter().collect(),
                tasks: tasks.into_iter().collect(),
                in_flight: in_flight.map(Request::from),
                queue: queue.into_iter().map(Request::from).collect(),
                completed: completed.into_iter().map(Completed::from).collect(),
                recent: recent.into_iter().collect(),
                in_doubt: in_doubt.map(Completed::from),
                restore_deferred,
                generation,
                stop,
                finish,
                last_id,
                last_completion,
                latest_completed,
                consecutive_trigger_failures,
                failures: FailureCounter {
                    count: counted_failures,
                    job_failed,
                },
            }),
            pending: pending_map,
        };
        state.set_completing(completing);
        Ok(state)
    }
}

impl TaskState {
    /// The state as a plain, versioned snapshot (what `Serialize` writes).
    #[must_use]
    pub fn snapshot(&self) -> TaskSnapshot {
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
        TaskSnapshot {
            version: SNAPSHOT_VERSION,
            config: config.clone(),
            lifecycle: *lifecycle,
            last_started: *last_started,
            last_executed: *last_executed,
            last_completed: *last_completed,
            results: results.iter().map(|(k, v)| (*k, *v)).collect(),
            pending_mails: pending_mails.iter().copied().collect(),
            async_parts: async_parts.iter().copied().collect(),
            aborted: aborted.iter().copied().collect(),
            aborted_floor: *aborted_floor,
            recovery: *recovery,
        }
    }

    /// Validates `snap` (version, configuration, order, then every
    /// single-state invariant: see the [module docs](self)) and builds the
    /// state it describes.
    pub fn from_snapshot(snap: TaskSnapshot) -> Result<TaskState, SnapshotError> {
        let state = Self::from_snapshot_structure(snap)?;
        invariants::task::check_state(&state).map_err(SnapshotError::Invariant)?;
        Ok(state)
    }

    /// Like [`TaskState::from_snapshot`] (version, configuration, order)
    /// but without the single-state invariants, for the same reason as
    /// [`CoordinatorState::from_snapshot_unjudged`].
    #[cfg(feature = "codec")]
    pub fn from_snapshot_unjudged(snap: TaskSnapshot) -> Result<TaskState, SnapshotError> {
        Self::from_snapshot_structure(snap)
    }

    fn from_snapshot_structure(snap: TaskSnapshot) -> Result<TaskState, SnapshotError> {
        let TaskSnapshot {
            version: v,
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
        } = snap;
        version(v)?;
        let mut state = TaskState::new(config).map_err(SnapshotError::TaskConfig)?;
        increasing(&results, |(id, _)| *id, "results")?;
        increasing(&pending_mails, |id| *id, "pending_mails")?;
        increasing(&async_parts, |id| *id, "async_parts")?;
        increasing(&aborted, |id| *id, "aborted")?;
        state.lifecycle = lifecycle;
        state.last_started = last_started;
        state.last_executed = last_executed;
        state.last_completed = last_completed;
        state.results = results.into_iter().collect();
        state.pending_mails = pending_mails.into_iter().collect();
        state.async_parts = async_parts.into_iter().collect();
        state.aborted = aborted.into_iter().collect();
        state.aborted_floor = aborted_floor;
        state.recovery = recovery;
        Ok(state)
    }
}

impl Serialize for CoordinatorState {
    /// Writes [`CoordinatorState::snapshot`].
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.snapshot().serialize(s)
    }
}

impl<'de> Deserialize<'de> for CoordinatorState {
    /// Reads a [`CoordinatorSnapshot`] and validates it with
    /// [`CoordinatorState::from_snapshot`]; a refusal is the format's error
    /// with the [`SnapshotError`]'s message.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let snap = CoordinatorSnapshot::deserialize(d)?;
        CoordinatorState::from_snapshot(snap).map_err(serde::de::Error::custom)
    }
}

impl Serialize for TaskState {
    /// Writes [`TaskState::snapshot`].
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.snapshot().serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskState {
    /// Reads a [`TaskSnapshot`] and validates it with
    /// [`TaskState::from_snapshot`]; a refusal is the format's error with
    /// the [`SnapshotError`]'s message.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let snap = TaskSnapshot::deserialize(d)?;
        TaskState::from_snapshot(snap).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_are_refused_as_unordered_not_only_descending_ones() {
        let key = |x: &u64| *x;
        assert_eq!(increasing(&[1u64, 2, 5], key, "ids"), Ok(()));
        assert_eq!(
            increasing(&[1u64, 1], key, "ids"),
            Err(SnapshotError::Corrupt(Corruption::Unordered("ids")))
        );
        assert_eq!(
            increasing(&[2u64, 1], key, "ids"),
            Err(SnapshotError::Corrupt(Corruption::Unordered("ids")))
        );
    }
}
