//! The normalized decision record: what one event made a coordinator
//! decide, in one shape for both sides, so that comparing them is `==`.
//!
//! Everything is sorted where the order is not a decision (messages to
//! different tasks, discarded handles); lists whose order is one (the
//! store's commit order) keep it.

use serde::{Deserialize, Serialize};

/// Why a checkpoint or a request ended without completing: ckpt's
/// `AbortReason` and Flink's `CheckpointFailureReason` mapped to one enum.
/// Where Flink has one reason for two of ckpt's (a failed metadata write
/// and a failed store write are both `FINALIZE_CHECKPOINT_FAILURE`; a
/// failed id allocation and failed master hooks are both
/// `TRIGGER_CHECKPOINT_FAILURE`), the enum has the coarser one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Abort {
    /// `CHECKPOINT_EXPIRED` / `Expired`.
    Expired,
    /// A decline, by Flink's reason name (`CHECKPOINT_DECLINED_TASK_NOT_READY`, ...).
    Declined(String),
    /// `CHECKPOINT_SUBSUMED` / `Subsumed`.
    Subsumed,
    /// `TASK_FAILURE` / `TaskFailed`.
    TaskFailure,
    /// `JOB_FAILOVER_REGION` / `Restored`.
    Failover,
    /// `TRIGGER_CHECKPOINT_FAILURE` / `MasterHooksFailed`, `IdAllocationFailed`.
    TriggerFailure,
    /// `FINALIZE_CHECKPOINT_FAILURE` / `FinalizeFailed`, `StoreFailed`.
    FinalizeFailure,
    /// `CHECKPOINT_COORDINATOR_SUSPEND` / `SchedulerStopped`.
    Suspended,
    /// `CHECKPOINT_COORDINATOR_SHUTDOWN` / `Shutdown`.
    Shutdown,
    /// `PERIODIC_SCHEDULER_SHUTDOWN`.
    PeriodicSchedulerShutdown,
    /// `MINIMUM_TIME_BETWEEN_CHECKPOINTS`.
    MinimumTimeBetweenCheckpoints,
    /// `NOT_ALL_REQUIRED_TASKS_RUNNING`.
    NotAllRequiredTasksRunning,
    /// `TOO_MANY_CHECKPOINT_REQUESTS` / `QueueFull`.
    TooManyRequests,
    /// ckpt only: a second non-forced request while one waits.
    AlreadyQueued,
    /// ckpt only: too many savepoints kept.
    TooManySavepoints,
    /// ckpt only: a request while the job stops with a savepoint.
    Stopping,
    /// Any other Flink reason, by name.
    Other(String),
}

impl Abort {
    /// Whether every version and ckpt count this reason towards the
    /// tolerable failures (an expiry, a counted decline).
    pub fn counts_in_every_version(&self) -> bool {
        match self {
            Abort::Expired => true,
            Abort::Declined(r) => r == "CHECKPOINT_ASYNC_EXCEPTION" || r == "CHECKPOINT_DECLINED",
            _ => false,
        }
    }
}

/// A trigger RPC to a task.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TriggerMsg {
    /// The checkpoint.
    pub checkpoint: u64,
    /// The task.
    pub task: u32,
    /// Its attempt.
    pub attempt: u32,
    /// A savepoint (else a checkpoint).
    pub savepoint: bool,
    /// A synchronous savepoint (stop-with-savepoint).
    #[serde(default)]
    pub sync: bool,
    /// A synchronous savepoint that terminates (drains) the job rather than
    /// suspending it (Flink's post-checkpoint action `TERMINATE`).
    #[serde(default)]
    pub terminate: bool,
    /// The checkpoint's timestamp (manual time).
    pub ts: Option<u64>,
    /// How the task is asked to take it, where the message carries it:
    /// Flink's `CheckpointOptions` beyond the type (`aligned` or
    /// `unaligned`, `exactly-once` or `at-least-once`, `default-location`
    /// or `target-location`); `None`: not carried.
    #[serde(default)]
    pub mode: Option<String>,
}

/// A notify-complete RPC.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CompleteMsg {
    /// The checkpoint.
    pub checkpoint: u64,
    /// The task.
    pub task: u32,
    /// Its attempt.
    pub attempt: u32,
    /// The checkpoint's timestamp.
    pub ts: Option<u64>,
    /// Flink 1.20 / 2.3 only: the checkpoint this completion evicted from
    /// the store (`None`: the field is not carried; `Some(None)`: -1).
    pub last_subsumed: Option<Option<u64>>,
}

/// A notify-aborted RPC.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AbortedMsg {
    /// The checkpoint.
    pub checkpoint: u64,
    /// The task.
    pub task: u32,
    /// Its attempt.
    pub attempt: u32,
    /// The latest completed checkpoint, where the version carries it
    /// (`None`: not carried; `Some(None)`: none completed).
    pub latest_completed: Option<Option<u64>>,
    /// The aborted checkpoint's timestamp (manual time).
    #[serde(default)]
    pub ts: Option<u64>,
}

/// How an acknowledgement was taken (Flink's `ack_class` and `accepted`,
/// ckpt's outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AckClass {
    /// Counted.
    Success,
    /// The task had acknowledged already.
    Duplicate,
    /// The checkpoint does not wait for this task attempt.
    UnknownTask,
    /// The checkpoint is fully acknowledged and completing.
    Discarded,
    /// The checkpoint is gone but remembered (Flink answers `true`).
    Late,
    /// No such checkpoint, not remembered.
    UnknownCheckpoint,
    /// The coordinator is shut down.
    Shutdown,
}

/// The end of a user request (its future).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RequestEnd {
    /// Completed with this checkpoint.
    Completed(u64),
    /// Failed.
    Failed(Abort),
}

/// A pending checkpoint as both sides show it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PendingView {
    /// The id.
    pub checkpoint: u64,
    /// A savepoint.
    pub savepoint: bool,
    /// The tasks that acknowledged it, sorted.
    pub acked: Vec<u32>,
    /// Its timestamp (manual time): when its request left the queue, which
    /// shows a request that waited on one side and not on the other even
    /// when both ended with the same checkpoints pending.
    #[serde(default)]
    pub ts: Option<u64>,
}

/// The coordinator's state after the event, as far as both sides show it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StateView {
    /// Pending checkpoints, by id.
    pub pending: Vec<PendingView>,
    /// Trigger requests waiting in the queue.
    pub queued: u32,
    /// Retained completed checkpoints in commit order: `(id, savepoint)`.
    pub store: Vec<(u64, bool)>,
    /// The consecutive-failure counter (`None` while masked).
    pub failure_counter: Option<u64>,
    /// Periodic scheduling on.
    pub periodic: bool,
    /// When the periodic timer fires next, if armed.
    pub periodic_at: Option<u64>,
    /// Shut down.
    pub shutdown: bool,
    /// The host's failures armed by `FailNext*` and not yet used by a
    /// request: each side uses one at its next request of that kind, so a
    /// side that made a request the other did not (an id allocation after a
    /// check the other side refused on) shows here even when neither
    /// decision shows the request.
    #[serde(default)]
    pub armed: Armed,
}

/// Which injected host failures wait for their request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Armed {
    /// The next store write fails.
    pub store: bool,
    /// The next metadata write (finalize) fails.
    pub finalize: bool,
    /// The next id allocation fails.
    pub id: bool,
}

/// Everything one event made a coordinator decide.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Decision {
    /// Trigger RPCs, sorted.
    pub triggers: Vec<TriggerMsg>,
    /// Checkpoints whose master hooks were called, sorted.
    pub hooks: Vec<u64>,
    /// Notify-complete RPCs, sorted.
    pub completes: Vec<CompleteMsg>,
    /// Notify-aborted RPCs, sorted.
    pub aborts: Vec<AbortedMsg>,
    /// Checkpoints completed in this event: `(id, savepoint)`, sorted.
    pub completed: Vec<(u64, bool)>,
    /// Pending checkpoints aborted in this event, sorted.
    pub aborted: Vec<(u64, Abort)>,
    /// User requests that ended in this event: `(ordinal, end)`, where the
    /// ordinal counts user triggers from 1 (periodic requests have no
    /// future on Flink's side), sorted.
    pub requests: Vec<(u32, RequestEnd)>,
    /// State handles discarded, sorted.
    pub discarded: Vec<u64>,
    /// How many times the job was failed (`None` while masked).
    pub fail_job: Option<u32>,
    /// For an ack: how it was taken.
    pub ack: Option<AckClass>,
    /// For a restart: the checkpoint restored (`Some(None)`: from scratch).
    pub restored: Option<Option<u64>>,
    /// The state after the event.
    pub state: StateView,
}

impl Decision {
    /// Takes the failure counter and the fail-job count out (while the
    /// two sides' counters are known to be apart: `After::MaskCounter`).
    pub fn mask_counter(&mut self) {
        self.state.failure_counter = None;
        self.fail_job = None;
    }

    /// The names of the fields in which `self` and `other` differ
    /// (`state.pending` etc. for the state's fields).
    pub fn diff_fields(&self, other: &Decision) -> Vec<&'static str> {
        let mut d = Vec::new();
        macro_rules! cmp {
            ($($f:ident).+, $name:expr) => {
                if self.$($f).+ != other.$($f).+ {
                    d.push($name);
                }
            };
        }
        cmp!(triggers, "triggers");
        cmp!(hooks, "hooks");
        cmp!(completes, "completes");
        cmp!(aborts, "aborts");
        cmp!(completed, "completed");
        cmp!(aborted, "aborted");
        cmp!(requests, "requests");
        cmp!(discarded, "discarded");
        cmp!(fail_job, "fail_job");
        cmp!(ack, "ack");
        cmp!(restored, "restored");
        cmp!(state.pending, "state.pending");
        cmp!(state.queued, "state.queued");
        cmp!(state.store, "state.store");
        cmp!(state.failure_counter, "state.failure_counter");
        cmp!(state.periodic, "state.periodic");
        cmp!(state.periodic_at, "state.periodic_at");
        cmp!(state.shutdown, "state.shutdown");
        cmp!(state.armed, "state.armed");
        // A field added to the state view without a line above stops the
        // build here rather than going uncompared.
        let StateView {
            pending: _,
            queued: _,
            store: _,
            failure_counter: _,
            periodic: _,
            periodic_at: _,
            shutdown: _,
            armed: _,
        } = &self.state;
        d
    }
}
