//! The world's state: the real machines plus what lies between them.

use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use ckpt_core::coordinator::{CoordinatorEvent, IoAnswer, IoRequest};
use ckpt_core::coordinator::{CoordinatorState, RequestId};
use ckpt_core::files::FilesState;
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::invariants::durability::{DurableLedger, Stored};
use ckpt_core::invariants::files::FileLedger;
use ckpt_core::invariants::task::TaskMonitor;
use ckpt_core::invariants::Violation;
use ckpt_core::route::{ChannelItem, TaskMessage, ToCoordinator};
use ckpt_core::task::{Lifecycle, TaskEvent, TaskState};
use ckpt_core::{AttemptNo, CheckpointId, Generation, Millis, StateHandle, TaskId};

/// A mail in a task's mailbox (FIFO, run by the task thread, never
/// withdrawn): an RPC from the coordinator or a checkpoint mail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Mail {
    /// RPC: trigger (source tasks).
    Trigger(CheckpointId),
    /// RPC: notify aborted.
    Aborted(CheckpointId),
    /// RPC: notify complete.
    Complete(CheckpointId),
    /// The checkpoint mail scheduled on barrier.
    Checkpoint(CheckpointId),
}

impl Mail {
    /// The mail an RPC becomes in the task's mailbox (the task reducer
    /// needs only the checkpoint id; the world keeps nothing else of it).
    #[must_use]
    pub fn of(message: &TaskMessage) -> Mail {
        match message {
            TaskMessage::Trigger { checkpoint, .. } => Mail::Trigger(*checkpoint),
            TaskMessage::NotifyAborted { checkpoint, .. } => Mail::Aborted(*checkpoint),
            TaskMessage::NotifyComplete { checkpoint, .. } => Mail::Complete(*checkpoint),
        }
    }

    /// The event the task thread delivers when it runs this mail.
    #[must_use]
    pub fn event(self) -> TaskEvent {
        match self {
            Mail::Trigger(checkpoint) => TaskEvent::TriggerCheckpoint { checkpoint },
            Mail::Aborted(checkpoint) => TaskEvent::NotifyAborted { checkpoint },
            Mail::Complete(checkpoint) => TaskEvent::NotifyComplete { checkpoint },
            Mail::Checkpoint(checkpoint) => TaskEvent::CheckpointMail { checkpoint },
        }
    }
}

/// A message on the RPC network. Every message names the task attempt at
/// its task end: the attempt a coordinator message is addressed to (a
/// message for an attempt that is no longer the running one is dropped on
/// delivery: the host finds no such execution), or the attempt that sent an
/// ack / decline (delivered to the coordinator whatever the task's attempt
/// is now, for it to judge). Derived order = the multiset's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// Coordinator -> task: an RPC that becomes a mail.
    ToTask {
        /// Destination.
        task: TaskId,
        /// Destination attempt.
        attempt: AttemptNo,
        /// The mail it becomes.
        mail: Mail,
    },
    /// Task -> coordinator: an ack or a decline.
    ToCoord {
        /// Sender.
        task: TaskId,
        /// Sender attempt.
        attempt: AttemptNo,
        /// What it says.
        msg: ToCoordinator,
    },
}

/// Three or four words per message (the derived hash made five or six
/// writes: each discriminant, each id): the fingerprint hashes every message
/// in flight of every generated state.
impl Hash for Msg {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let ends =
            |task: &TaskId, attempt: &AttemptNo| u64::from(task.0) | u64::from(attempt.0) << 32;
        match self {
            Msg::ToTask {
                task,
                attempt,
                mail,
            } => {
                let (tag, checkpoint) = match mail {
                    Mail::Trigger(c) => (0u64, c),
                    Mail::Aborted(c) => (1, c),
                    Mail::Complete(c) => (2, c),
                    Mail::Checkpoint(c) => (3, c),
                };
                h.write_u64(ends(task, attempt));
                h.write_u64(tag);
                h.write_u64(checkpoint.0);
            }
            Msg::ToCoord { task, attempt, msg } => {
                h.write_u64(ends(task, attempt));
                match msg {
                    ToCoordinator::Ack { checkpoint, handle } => {
                        h.write_u64(4);
                        h.write_u64(checkpoint.0);
                        h.write_u64(handle.0);
                    }
                    ToCoordinator::Decline { checkpoint, reason } => {
                        h.write_u64(5);
                        h.write_u64(checkpoint.0);
                        reason.hash(h);
                    }
                }
            }
        }
    }
}

impl Msg {
    /// The task at the other end.
    #[must_use]
    pub fn task(&self) -> TaskId {
        match self {
            Msg::ToTask { task, .. } | Msg::ToCoord { task, .. } => *task,
        }
    }
    /// The task attempt at the other end.
    #[must_use]
    pub fn attempt(&self) -> AttemptNo {
        match self {
            Msg::ToTask { attempt, .. } | Msg::ToCoord { attempt, .. } => *attempt,
        }
    }
    /// Whether it travels to the coordinator.
    #[must_use]
    pub fn to_coordinator(&self) -> bool {
        matches!(self, Msg::ToCoord { .. })
    }
    /// The link (FIFO flow) it travels on.
    #[must_use]
    pub fn link(&self) -> (bool, TaskId) {
        (self.to_coordinator(), self.task())
    }
    /// The same message for another task (same attempt).
    #[must_use]
    pub fn with_task(self, t: TaskId) -> Msg {
        match self {
            Msg::ToTask { attempt, mail, .. } => Msg::ToTask {
                task: t,
                attempt,
                mail,
            },
            Msg::ToCoord { attempt, msg, .. } => Msg::ToCoord {
                task: t,
                attempt,
                msg,
            },
        }
    }
}

/// A pending I/O request of the coordinator, compact: the world keeps what
/// it answers by (the checkpoint, or the request of an id allocation); the
/// rest of the request (a finalize's handles, kind and time) it reads from
/// the coordinator that asked when it carries the request out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Io {
    /// `IoRequest::AllocateId`.
    Allocate(RequestId),
    /// `IoRequest::MasterHooks`.
    Hooks(CheckpointId),
    /// `IoRequest::Finalize`.
    Finalize(CheckpointId),
    /// `IoRequest::Store`.
    Store(CheckpointId),
}

impl Io {
    /// The world's record of `req`.
    #[must_use]
    pub fn of(req: &IoRequest) -> Io {
        match req {
            IoRequest::AllocateId { request } => Io::Allocate(*request),
            IoRequest::MasterHooks { checkpoint, .. } => Io::Hooks(*checkpoint),
            IoRequest::Finalize { checkpoint, .. } => Io::Finalize(*checkpoint),
            IoRequest::Store { checkpoint } => Io::Store(*checkpoint),
        }
    }

    /// The event that answers this request (what `IoRequest::answer` builds
    /// for the request it records).
    #[must_use]
    pub fn answer(self, answer: IoAnswer) -> CoordinatorEvent {
        let unit = match &answer {
            IoAnswer::Ok { .. } => Ok(()),
            IoAnswer::Failed(f) => Err(f.clone()),
        };
        match self {
            Io::Allocate(request) => CoordinatorEvent::CheckpointIdAllocated {
                request,
                result: match answer {
                    IoAnswer::Ok { id } => Ok(id),
                    IoAnswer::Failed(f) => Err(f),
                },
            },
            Io::Hooks(checkpoint) => CoordinatorEvent::MasterHooksDone {
                checkpoint,
                result: unit,
            },
            Io::Finalize(checkpoint) => CoordinatorEvent::FinalizeDone {
                checkpoint,
                result: unit,
            },
            Io::Store(checkpoint) => CoordinatorEvent::StoreDone {
                checkpoint,
                result: unit,
            },
        }
    }
}

/// One input channel of a task.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Channel {
    /// The upstream task.
    pub from: TaskId,
    /// Items sent and not yet taken, oldest first.
    pub queue: Vec<ChannelItem>,
    /// For a task with several inputs: the highest checkpoint a barrier or
    /// cancel marker on this channel announced (what alignment waits for).
    /// Always `None` for a task with one input (nothing to align).
    pub seen: Option<CheckpointId>,
}

/// One task with what surrounds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskSide {
    /// The real task state.
    #[serde(with = "super::codec::wire::task")]
    pub st: TaskState,
    /// FIFO mailbox.
    pub mailbox: Vec<Mail>,
    /// Input channels (per-link FIFO, lossless), one per upstream task,
    /// sorted by it.
    pub inputs: Vec<Channel>,
    /// The core's cross-step task monitor (a fresh one per attempt).
    pub monitor: TaskMonitor,
    /// The task's current execution attempt (0, then one more per restart).
    /// While its task state is failed the attempt is down: it runs nothing,
    /// its mailbox and input channels are discarded, and anything sent to it
    /// is dropped.
    pub attempt: AttemptNo,
    /// With [`super::Sim::record_task_order`] (validation only): a digest of
    /// every event this task was given, in order; always 0 otherwise.
    pub order: u64,
    /// The checkpoint and handle of this attempt's last acknowledgement
    /// (for `shared_state`: the state it may report again).
    pub last_ack: Option<(CheckpointId, StateHandle)>,
    /// This attempt finished (`finished_tasks`): it runs nothing more and
    /// takes no RPC or channel item.
    pub finished: bool,
}

impl TaskSide {
    /// Folds `event` into [`TaskSide::order`].
    pub fn record(&mut self, event: &TaskEvent) {
        self.order = digest(&(self.order, event));
    }

    /// Whether the attempt failed (or was stopped) and has not been
    /// restarted yet.
    #[must_use]
    pub fn is_down(&self) -> bool {
        matches!(self.st.lifecycle(), Lifecycle::Failed | Lifecycle::Closed)
    }

    /// The state this attempt may acknowledge again, unchanged, for
    /// checkpoint `checkpoint` (the host rule for incremental state, see
    /// `TaskEvent::AsyncPartReused`): the handle of its own last
    /// acknowledgement, once it was notified that that checkpoint
    /// completed, and only for a newer checkpoint (the world records only
    /// acknowledgements of checkpoints, never of savepoints).
    #[must_use]
    pub fn reusable_for(&self, checkpoint: CheckpointId) -> Option<StateHandle> {
        self.last_ack
            .filter(|(c, _)| Some(*c) == self.st.last_completed() && *c < checkpoint)
            .map(|(_, h)| h)
    }

    /// The next attempt starts from `fresh`: a new monitor, an empty mailbox,
    /// empty input channels (what the old attempt had buffered is gone).
    pub fn restart(&mut self, fresh: TaskState) {
        self.st = fresh;
        self.monitor = TaskMonitor::new();
        self.mailbox.clear();
        for c in &mut self.inputs {
            c.queue.clear();
            c.seen = None;
        }
        self.last_ack = None;
        self.finished = false;
        self.attempt = AttemptNo(self.attempt.0.saturating_add(1));
    }
}

/// A part of a [`World`] shared between the states that did not change it
/// (copy on write: a step deep-copies only the parts it touches), with its
/// hash cached: each task side ([`SharedSide`]) and the coordinator state.
/// Reads go through `Deref`; any mutable access (`DerefMut`) copies the part
/// if it is shared and forgets the cached hash, which [`Sealed::seal`] (run
/// at the end of every step, [`World::seal`]) computes again. `Hash` writes
/// the part's own 64-bit hash: equal parts write equal bytes, and
/// collections inside still have their length prefixes. The `Arc` is
/// `triomphe`'s (no weak count): a step makes several mutable accesses, and
/// each one's "is this shared?" check is then a load instead of the
/// compare-and-swap of `std::sync::Arc::make_mut`.
///
/// A part also keeps its images under the task renamings of the symmetry
/// reduction once they are asked for ([`Sealed::images`]): every state
/// that shares the part (a task's step leaves the coordinator, the ledger
/// and the store alone) then renames it once, not once per state.
#[derive(Clone)]
pub struct Sealed<T> {
    inner: triomphe::Arc<Part<T>>,
    /// The part's hash; 0 while not computed.
    digest: u64,
}

/// A [`Sealed`] part's value and its cached images.
struct Part<T> {
    value: T,
    images: OnceLock<Images<T>>,
}

/// The images of a part under a list of renamings ([`Sealed::images`]).
struct Images<T> {
    /// Which list of renamings they are for.
    key: u64,
    /// One per renaming; `None` where the renaming does not apply.
    parts: Box<[Option<Sealed<T>>]>,
}

impl<T: Clone> Clone for Part<T> {
    /// A copy is about to be changed (`DerefMut`): its images start empty.
    fn clone(&self) -> Part<T> {
        Part {
            value: self.value.clone(),
            images: OnceLock::new(),
        }
    }
}

/// A task side inside a [`World`] ([`Sealed`]).
pub type SharedSide = Sealed<TaskSide>;

impl<T: Hash + Clone> Sealed<T> {
    /// A part of its own, sealed.
    #[must_use]
    pub fn new(inner: T) -> Sealed<T> {
        let mut s = Sealed {
            inner: triomphe::Arc::new(Part {
                value: inner,
                images: OnceLock::new(),
            }),
            digest: 0,
        };
        s.seal();
        s
    }

    /// A part of its own whose hash is computed when first needed (by
    /// [`Sealed::seal`], which a sealing simulator runs at the end of every
    /// step, or by `Hash`).
    #[must_use]
    pub fn unsealed(inner: T) -> Sealed<T> {
        Sealed {
            inner: triomphe::Arc::new(Part {
                value: inner,
                images: OnceLock::new(),
            }),
            digest: 0,
        }
    }

    /// The part's 64-bit hash: the cached one, or computed now if a
    /// mutable access forgot it. What `Hash` writes for the part.
    #[must_use]
    pub fn digest(&self) -> u64 {
        if self.digest == 0 {
            digest(&self.inner.value)
        } else {
            self.digest
        }
    }

    /// Whether another handle (another world) shares this part: a mutable
    /// access would copy it, and the other handle keeps the value as it is.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        !self.inner.is_unique()
    }

    /// Computes the cached hash if a mutable access forgot it.
    pub fn seal(&mut self) {
        if self.digest == 0 {
            self.digest = digest(&self.inner.value);
        }
    }

    /// The part's images under `count` renamings, `image(i, part)` being
    /// its image under renaming `i`, computed at the first call and shared
    /// by every state that holds this part. `key` names the list of
    /// renamings (the same key must always mean the same list); `None` if
    /// the part's images were cached under another key (the caller then
    /// computes what it needs itself).
    pub fn images(
        &self,
        key: u64,
        count: usize,
        image: impl Fn(usize, &T) -> Option<T>,
    ) -> Option<&[Option<Sealed<T>>]> {
        let images = self.inner.images.get_or_init(|| Images {
            key,
            parts: (0..count)
                .map(|i| image(i, &self.inner.value).map(Sealed::new))
                .collect(),
        });
        (images.key == key).then_some(&images.parts[..])
    }
}

/// A part's 64-bit hash: aHash with fixed seeds (deterministic across runs
/// and threads, and several times faster than SipHash here).
fn digest<T: Hash + ?Sized>(part: &T) -> u64 {
    ahash::RandomState::with_seeds(
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    )
    .hash_one(part)
    .max(1)
}

impl<T> Deref for Sealed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner.value
    }
}

impl<T: Clone> DerefMut for Sealed<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.digest = 0;
        let part = triomphe::Arc::make_mut(&mut self.inner);
        // A part not shared is changed in place: its images go stale.
        part.images.take();
        &mut part.value
    }
}

impl<T: Hash + Clone> From<T> for Sealed<T> {
    fn from(inner: T) -> Sealed<T> {
        Sealed::new(inner)
    }
}

impl<T: PartialEq> PartialEq for Sealed<T> {
    fn eq(&self, other: &Sealed<T>) -> bool {
        triomphe::Arc::ptr_eq(&self.inner, &other.inner) || self.inner.value == other.inner.value
    }
}

impl<T: Eq> Eq for Sealed<T> {}

impl<T: Hash> Hash for Sealed<T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let d = if self.digest == 0 {
            digest(&self.inner.value)
        } else {
            self.digest
        };
        h.write_u64(d);
    }
}

/// A part encodes as its value alone: the cached hash and images are
/// derived again where it is decoded ([`Sealed::new`] seals it).
impl<T: Serialize> Serialize for Sealed<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.inner.value.serialize(s)
    }
}

impl<'de, T: Deserialize<'de> + Hash + Clone> Deserialize<'de> for Sealed<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sealed<T>, D::Error> {
        T::deserialize(d).map(Sealed::new)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Sealed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.value.fmt(f)
    }
}

/// What each budget of the run has used (every action that could repeat
/// forever consumes one, so every run is finite).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Used {
    /// Periodic firings.
    pub triggers: u8,
    /// Faults.
    pub faults: u8,
    /// Savepoints triggered.
    pub savepoints: u8,
    /// User checkpoints triggered.
    pub user_checkpoints: u8,
    /// Task failures.
    pub task_failures: u8,
    /// Scheduler stops.
    pub scheduler_stops: u8,
    /// Coordinator failovers.
    pub coordinator_failovers: u8,
    /// Job failovers.
    pub job_failovers: u8,
    /// Sources that finished their input.
    pub end_of_input: u8,
    /// Coordinators that kept running after they were replaced.
    pub zombies: u8,
    /// Stops with a savepoint asked for (and, counting one more, the job
    /// started again after one).
    pub stops: u8,
    /// Tasks that finished.
    pub finished_tasks: u8,
}

/// Two writes instead of nine (every generated state hashes it).
impl Hash for Used {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let Used {
            triggers,
            faults,
            savepoints,
            user_checkpoints,
            task_failures,
            scheduler_stops,
            coordinator_failovers,
            job_failovers,
            end_of_input,
            zombies,
            stops,
            finished_tasks,
        } = *self;
        h.write_u64(u64::from_le_bytes([
            triggers,
            faults,
            savepoints,
            user_checkpoints,
            task_failures,
            scheduler_stops,
            coordinator_failovers,
            job_failovers,
        ]));
        h.write_u32(
            u32::from(end_of_input)
                | u32::from(zombies) << 8
                | u32::from(stops) << 16
                | u32::from(finished_tasks) << 24,
        );
    }
}

/// History bits the `sometimes` witnesses read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Lowest aborted checkpoint id, until a later one completes.
    pub abort_seen: Option<CheckpointId>,
    /// A checkpoint was aborted and a later one completed.
    pub abort_then_complete: bool,
    /// A checkpoint that waited for a restarted task attempt completed.
    pub failover_complete: bool,
    /// A checkpoint's state was restored (a failover, or the savepoint the
    /// job started from).
    pub restored: bool,
    /// The state of a checkpoint in doubt at shutdown was kept because the
    /// store held it.
    pub in_doubt_kept: bool,
    /// A message was lost, a task failed or a failover happened: barriers
    /// may legitimately never arrive (alignment is not judged then).
    pub disrupted: bool,
    /// A `Restore { Latest }` waited for a completion in flight.
    pub restore_waited: bool,
    /// The store, the id counter or a delete refused a deposed leader.
    pub fenced: bool,
    /// A checkpoint committed with a state file an earlier stored
    /// checkpoint references (re-reported unchanged state).
    pub shared_committed: bool,
    /// The store's retention evicted a checkpoint while it kept an older
    /// savepoint.
    pub savepoint_outlived: bool,
    /// The user disposed of a savepoint.
    pub disposed: bool,
    /// A savepoint committed after a newer checkpoint.
    pub savepoint_after_newer: bool,
    /// A job stopped with a savepoint was started again and restored it.
    pub stop_resumed: bool,
    /// Every task finished and the job finished as its setting says: on
    /// its final checkpoint, or, with checkpoints after finish off, with
    /// its last task and no final checkpoint.
    pub finished_on_final: bool,
    /// A physical file that held two segments or more was deleted
    /// (`shared_files`).
    pub shared_file_deleted: bool,
    /// A checkpoint started on a task whose input channels still consumed
    /// recovered input, and captured it (checkpointing during recovery).
    pub captured_recovered: bool,
}

/// Two writes instead of one per field (every generated state hashes it).
impl Hash for History {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let History {
            abort_seen,
            abort_then_complete,
            failover_complete,
            restored,
            in_doubt_kept,
            disrupted,
            restore_waited,
            fenced,
            shared_committed,
            savepoint_outlived,
            disposed,
            savepoint_after_newer,
            stop_resumed,
            finished_on_final,
            shared_file_deleted,
            captured_recovered,
        } = *self;
        let bits = u16::from(abort_seen.is_some())
            | u16::from(abort_then_complete) << 1
            | u16::from(failover_complete) << 2
            | u16::from(restored) << 3
            | u16::from(in_doubt_kept) << 4
            | u16::from(disrupted) << 5
            | u16::from(restore_waited) << 6
            | u16::from(fenced) << 7
            | u16::from(shared_committed) << 8
            | u16::from(savepoint_outlived) << 9
            | u16::from(disposed) << 10
            | u16::from(savepoint_after_newer) << 11
            | u16::from(stop_resumed) << 12
            | u16::from(finished_on_final) << 13
            | u16::from(shared_file_deleted) << 14
            | u16::from(captured_recovered) << 15;
        h.write_u64(abort_seen.map_or(0, |c| c.0));
        h.write_u16(bits);
    }
}

impl World {
    /// Whether every task with several inputs has seen the same checkpoint
    /// announced on all of them (nothing waits for alignment).
    #[must_use]
    pub fn aligned(&self) -> bool {
        self.tasks.iter().all(|t| {
            t.is_down() || t.inputs.len() < 2 || t.inputs.windows(2).all(|w| w[0].seen == w[1].seen)
        })
    }
}

/// What the host keeps on durable storage: it survives a coordinator's
/// death.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Durable {
    /// The store, the state files, the ids used, and the checks on them.
    pub ledger: DurableLedger,
    /// The id counter's last id (answered allocations advance it).
    pub counter: Option<CheckpointId>,
    /// Checkpoint metadata written by a finalize and not (yet) stored,
    /// sorted by id.
    pub metadata: Vec<Stored>,
    /// A checkpoint a shut-down coordinator handed over in doubt
    /// (`ResolveInDoubt`), until its finalize / store answer resolves it.
    pub in_doubt: Option<InDoubt>,
    /// The newest generation claimed in the store: a write on behalf of an
    /// older one is refused (a deposed leader's).
    pub fence: Generation,
    /// The file-merging manager and the physical files (`shared_files`;
    /// empty otherwise).
    pub files: SharedFiles,
}

/// The physical files of `shared_files`: the host's file-merging manager
/// (`ckpt_core::files`) and the file ledger that checks what it deletes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SharedFiles {
    /// The manager (one for the job's tasks: one task manager).
    pub manager: FilesState,
    /// The physical files that exist and their segments.
    pub ledger: FileLedger,
}

/// The in-doubt hand-over (`ResolveInDoubt`) the host keeps until the
/// outstanding operation answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InDoubt {
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// What to delete once the store holds it.
    pub if_stored: Vec<StateHandle>,
    /// What to delete (after its metadata) once the store definitely does
    /// not hold it.
    pub if_not_stored: Vec<StateHandle>,
}

/// A coordinator that was replaced but keeps running (a deposed leader,
/// `zombie_coordinators`): its state, its own handle ledger and the I/O it
/// had outstanding, answered later. Its RPCs reach nobody (every task was
/// redeployed under a new attempt) and its job commands are void; what it
/// writes to the store, the id counter and the state files lands unless
/// its older generation is refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Zombie {
    /// The deposed coordinator.
    #[serde(with = "super::codec::wire::coordinator")]
    pub coord: Sealed<CoordinatorState>,
    /// Its handle ledger.
    pub ledger: Sealed<HandleLedger>,
    /// Its outstanding I/O, sorted.
    pub io: Vec<Io>,
}

/// The world's state. `Hash` is derived over fields whose own `Hash` writes
/// lengths (std `Vec`, and the core states' hand-written ones).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct World {
    /// The world's clock (what every event is delivered at).
    pub now: Millis,
    /// The real coordinator.
    #[serde(with = "super::codec::wire::coordinator")]
    pub coord: Sealed<CoordinatorState>,
    /// Tasks by id (each shared copy-on-write between states, its hash
    /// cached: [`SharedSide`]).
    pub tasks: Vec<SharedSide>,
    /// In-flight RPC messages: a sorted multiset, or (ordered network) per-link
    /// FIFO segments in link order.
    pub net: Vec<Msg>,
    /// Pending I/O requests, sorted.
    pub io: Vec<Io>,
    /// Budgets used.
    pub used: Used,
    /// The scheduler was stopped and not started again yet.
    pub scheduler_stopped: bool,
    /// History for the witnesses.
    pub history: History,
    /// The core's handle ledger (of the current coordinator). Shared
    /// copy-on-write like the task sides: task steps leave it alone.
    pub ledger: Sealed<HandleLedger>,
    /// What is durable. Shared copy-on-write: most steps leave it alone,
    /// and a clone of a world would otherwise copy its sets and lists.
    pub durable: Sealed<Durable>,
    /// A [`JobCommand::Fail`](ckpt_core::coordinator::JobCommand::Fail)
    /// was emitted and the job has not failed over yet.
    pub job_failover_due: bool,
    /// The job's tasks are stopped and wait for
    /// [`JobCommand::Restore`](ckpt_core::coordinator::JobCommand::Restore)
    /// (the failover recipe: the restore may wait for a completion in
    /// flight).
    pub awaiting_restore: bool,
    /// The deposed coordinator still running, if any (boxed: rare, and a
    /// world is moved several times per generated state).
    pub zombie: Option<Box<Zombie>>,
    /// The job ended on this stop-with-savepoint (until it starts again).
    pub stopped_with: Option<CheckpointId>,
    /// The first invariant violation (the state is then terminal; boxed:
    /// rare, and a world is moved several times per generated state).
    #[serde(with = "violation_codec")]
    pub violation: Option<Box<Violation>>,
    /// Constant: the network is per-link FIFO (kept here so the symmetry
    /// representative, a plain function of the state, can rebuild it).
    pub ordered_net: bool,
}

impl World {
    /// Computes the cached hash of every task side a step changed.
    pub fn seal(&mut self) {
        self.coord.seal();
        self.ledger.seal();
        self.durable.seal();
        if let Some(z) = &mut self.zombie {
            z.coord.seal();
            z.ledger.seal();
        }
        for t in &mut self.tasks {
            t.seal();
        }
    }

    /// No messages, answers, mails, inputs or work anywhere.
    #[must_use]
    pub fn quiet(&self) -> bool {
        self.net.is_empty()
            && self.io.is_empty()
            && self.zombie.is_none()
            && self.tasks.iter().all(|t| {
                t.mailbox.is_empty()
                    && t.inputs.iter().all(|c| c.queue.is_empty())
                    && !t.st.has_outstanding_work()
            })
    }
}

/// Short text for people (the Explorer's state view, action names, the
/// counterexample's actions): `checkpoint-mail 2`, `notify-aborted 1`.
impl std::fmt::Display for Mail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mail::Trigger(c) => write!(f, "trigger {c}"),
            Mail::Aborted(c) => write!(f, "notify-aborted {c}"),
            Mail::Complete(c) => write!(f, "notify-complete {c}"),
            Mail::Checkpoint(c) => write!(f, "checkpoint-mail {c}"),
        }
    }
}

/// `coordinator -> task 0 (attempt 0): trigger 1`,
/// `task 1 (attempt 0) -> coordinator: ack 1`.
impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::ToTask {
                task,
                attempt,
                mail,
            } => write!(f, "coordinator -> task {task} (attempt {attempt}): {mail}"),
            Msg::ToCoord { task, attempt, msg } => {
                write!(f, "task {task} (attempt {attempt}) -> coordinator: ")?;
                match msg {
                    ToCoordinator::Ack { checkpoint, handle } => {
                        write!(f, "ack {checkpoint} (handle {handle})")
                    }
                    ToCoordinator::Decline { checkpoint, reason } => {
                        write!(f, "decline {checkpoint} ({reason:?})")
                    }
                }
            }
        }
    }
}

/// `allocate an id for request 0`, `store 1`.
impl std::fmt::Display for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Io::Allocate(r) => write!(f, "allocate an id for request {}", r.0),
            Io::Hooks(c) => write!(f, "master hooks of {c}"),
            Io::Finalize(c) => write!(f, "finalize {c}"),
            Io::Store(c) => write!(f, "store {c}"),
        }
    }
}

/// A [`Violation`] in the world's encoding: the invariant's name and the
/// detail as text. The name is a `&'static str` in the core; decoding
/// looks it up among the names already decoded and leaks it once when new
/// (at most one string per invariant of the core, a few dozen).
mod violation_codec {
    use std::collections::HashSet;
    use std::sync::{Mutex, PoisonError};

    use ckpt_core::invariants::Violation;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

    fn intern(name: &str) -> &'static str {
        let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
        let names = names.get_or_insert_with(HashSet::new);
        if let Some(n) = names.get(name) {
            return n;
        }
        let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(n);
        n
    }

    pub(super) fn serialize<S: Serializer>(
        v: &Option<Box<Violation>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        v.as_ref()
            .map(|v| (v.invariant, v.detail.as_str()))
            .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Box<Violation>>, D::Error> {
        let v: Option<(String, String)> = Option::deserialize(d)?;
        Ok(v.map(|(name, detail)| Box::new(Violation::new(intern(&name), detail))))
    }
}
