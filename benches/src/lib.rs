//! Drivers shared by the `ckpt-benches` criterion groups (see
//! `benches/README.md`): a coordinator with pending checkpoints ready to be
//! acknowledged, the two baselines written here (the floor and a Flink-like
//! design), the full checkpoint cycle, and task-side cycles.
//!
//! Everything a benchmark times is a function here, so `cargo test -p
//! ckpt-benches` checks that each driver really does what its benchmark claims
//! (every ack is applied, every cycle completes) before anyone reads a number.

use std::collections::{HashMap, HashSet};

use ckpt_core::coordinator::IoRequest;
use ckpt_core::coordinator::{
    reduce, Applied, CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState,
    Outcome, PendingPhase, RequestId, Step, TriggerKind,
};
use ckpt_core::route::TaskMessage;
use ckpt_core::task::{self, TaskConfig, TaskEvent, TaskState};
use ckpt_core::{AttemptNo, CheckpointId, JobId, Millis, StateHandle, TaskId, Thread};

pub mod hosts;
pub mod replay;
pub mod report;

/// The job every benchmark coordinator serves.
pub const JOB: JobId = JobId(7);

/// Task counts of the ack and cycle groups.
pub const SIZES: [u32; 4] = [1, 100, 10_000, 100_000];

/// Concurrent pending checkpoints of the ack group.
pub const CONCURRENCY: [usize; 2] = [1, 4];

/// The pure-retained ack variant acknowledges at most this many slots per
/// measured iteration (a prefix of the scattered order, so they hit every
/// pending checkpoint). The cap dates from the radix-tree ack table, whose
/// every kept state held its own copy of the path to the changed slot
/// (kilobytes at 100 000 tasks: a whole epoch of 400 000 kept states would
/// have needed gigabytes); it is kept so the figures compare with the
/// rounds before. With the stamped log a kept state holds one copy of the
/// pending map (the checkpoint itself when one is pending, a slice of them
/// when more are), and the per-ack cost does not depend on how far into
/// the epoch an ack is.
pub const RETAIN_CAP: usize = 2_048;

/// `CKPT_BENCH_QUICK` is set to something other than `0` or empty.
#[must_use]
pub fn quick() -> bool {
    std::env::var("CKPT_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

// ----- helpers ----------------------------------------------------------------

/// The benches' generator: `rand_pcg`'s PCG seeded by `rand_core`'s
/// `seed_from_u64`, the one `ckpt-model simulate` walks with (value-stable:
/// the same shuffles on every platform and version, so runs compare).
#[must_use]
pub fn rng(seed: u64) -> rand_pcg::Pcg64Mcg {
    <rand_pcg::Pcg64Mcg as rand_core::SeedableRng>::seed_from_u64(seed)
}

/// One acknowledgement to deliver: which pending checkpoint (by position,
/// 0..concurrency) and which task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRef {
    /// Position of the pending checkpoint (0 = oldest).
    pub checkpoint: u32,
    /// The task (= its ack slot: `with_tasks` waits for `0..n` in order).
    pub task: u32,
}

/// Every `(checkpoint, task)` pair of `concurrency` checkpoints over `tasks`
/// tasks, shuffled (Fisher-Yates, fixed seed): acks of different checkpoints
/// interleave and consecutive acks touch unrelated slots.
#[must_use]
pub fn scattered_order(tasks: u32, concurrency: usize) -> Vec<AckRef> {
    let mut order: Vec<AckRef> = (0..concurrency as u32)
        .flat_map(|c| {
            (0..tasks).map(move |t| AckRef {
                checkpoint: c,
                task: t,
            })
        })
        .collect();
    let mut r = rng(0x5EED_u64 ^ u64::from(tasks) ^ ((concurrency as u64) << 40));
    for i in (1..order.len()).rev() {
        let j = (rand_core::RngCore::next_u64(&mut r) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The state handle task `r.task` writes for checkpoint `id`: unique per
/// checkpoint and task, as a host's files are (a handle reused by the next
/// checkpoint would be state both hold, which the coordinator keeps until
/// the last of them goes).
fn handle(id: CheckpointId, r: AckRef) -> StateHandle {
    StateHandle((id.0 << 32) | u64::from(r.task))
}

// ----- the coordinator --------------------------------------------------------

/// A coordinator waiting for `tasks` acks on each of its pending checkpoints,
/// with their ids in creation order.
#[derive(Clone, Debug)]
pub struct Armed {
    /// The coordinator.
    pub state: CoordinatorState,
    /// Ids of the pending checkpoints, oldest first.
    pub ids: Vec<CheckpointId>,
}

/// A fresh coordinator over `tasks` tasks, every task acknowledging.
///
/// # Panics
/// If the settings are refused (they are valid for 1..=2^24 tasks).
#[must_use]
pub fn coordinator(tasks: u32) -> CoordinatorState {
    match CoordinatorState::from_settings(CoordinatorSettings::with_tasks(JOB, tasks)) {
        Ok(s) => s,
        Err(e) => panic!("benchmark settings refused: {e}"),
    }
}

fn requested_id(step: &Step) -> Option<RequestId> {
    step.effects.iter().find_map(|e| match e {
        CoordinatorEffect::Io {
            request: IoRequest::AllocateId { request },
            ..
        } => Some(*request),
        _ => None,
    })
}

/// Triggers one forced checkpoint with id `id` and answers its id allocation
/// (in place). Returns the effects of the allocation answer (the trigger
/// messages).
///
/// # Panics
/// If the coordinator does not create the checkpoint.
pub fn trigger(state: &mut CoordinatorState, now: Millis, id: CheckpointId) -> Step {
    let step = state.apply(
        now,
        CoordinatorEvent::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
    );
    let Some(request) = requested_id(&step) else {
        panic!("trigger did not allocate an id: {:?}", step.outcome);
    };
    let step = state.apply(
        now,
        CoordinatorEvent::CheckpointIdAllocated {
            request,
            result: Ok(id),
        },
    );
    assert!(
        matches!(
            step.outcome,
            Outcome::Applied(Applied::CheckpointTriggered { .. })
        ),
        "checkpoint {id} not created: {:?}",
        step.outcome
    );
    step
}

/// A fresh coordinator over `tasks` tasks with `concurrency` pending forced
/// checkpoints (ids 1..=concurrency), no ack received. Built from scratch, so
/// nothing in it is shared: in-place acks never copy.
#[must_use]
pub fn armed(tasks: u32, concurrency: usize) -> Armed {
    let mut state = coordinator(tasks);
    let ids: Vec<CheckpointId> = (1..=concurrency as u64).map(CheckpointId).collect();
    for id in &ids {
        trigger(&mut state, Millis(0), *id);
    }
    Armed { state, ids }
}

/// The acknowledgement event for `r`.
#[must_use]
pub fn ack_event(ids: &[CheckpointId], r: AckRef) -> CoordinatorEvent {
    CoordinatorEvent::Acknowledge {
        job: JOB,
        task: TaskId(r.task),
        attempt: AttemptNo(0),
        checkpoint: ids[r.checkpoint as usize],
        state: Some(handle(ids[r.checkpoint as usize], r)),
    }
}

/// In place: `CoordinatorState::apply` for every ack of `order`.
// Not inlined, here and in the other drivers: a profiler can then collect
// the acks alone (`callgrind --toggle-collect=ckpt_benches::ack_in_place`);
// one call per iteration of every ack costs nothing measurable.
#[inline(never)]
pub fn ack_in_place(armed: &mut Armed, order: &[AckRef]) {
    for r in order {
        let step = armed.state.apply(Millis(0), ack_event(&armed.ids, *r));
        std::hint::black_box(step);
    }
}

/// In place with a lent queue: `CoordinatorState::apply_into` for every ack
/// of `order`, appending to `effects`, which is cleared after each step as
/// a host clears its queue once it has carried the effects out (so the list
/// is allocated once, not per ack).
#[inline(never)]
pub fn ack_in_place_lent(
    armed: &mut Armed,
    order: &[AckRef],
    effects: &mut Vec<CoordinatorEffect>,
) {
    for r in order {
        let done = armed
            .state
            .apply_into(Millis(0), ack_event(&armed.ids, *r), effects);
        std::hint::black_box((done, &*effects));
        effects.clear();
    }
}

/// Storage for `capacity` kept states, its memory already written: filled
/// with clones of `like`, then cleared (the capacity stays). Pushing a kept
/// state into it writes memory the process already has, as a model checker
/// keeps its states on a stack it reuses; a `Vec::with_capacity` alone is
/// reserved, not touched, and each 4 KiB page of it not mapped yet faults
/// in the first time a kept state lands there (on 2026-12-06 those faults
/// were about 40 % of the timed kept ack at 10 000 x 1,
/// `benches/ACK-2026-12-06b.md`), a cost of the storage a benchmark picked,
/// not of the reducer.
#[must_use]
pub fn kept_storage(like: &CoordinatorState, capacity: usize) -> Vec<CoordinatorState> {
    let mut kept = Vec::with_capacity(capacity);
    kept.resize(capacity, like.clone());
    kept.clear();
    kept
}

/// Pure, every previous state kept: `reduce` for every ack of `order`, each
/// old state pushed into `kept` (make it with [`kept_storage`] beforehand so
/// the Vec neither grows nor faults pages in while timed).
#[inline(never)]
pub fn ack_pure_retained(armed: &mut Armed, order: &[AckRef], kept: &mut Vec<CoordinatorState>) {
    for r in order {
        let t = reduce(&armed.state, Millis(0), ack_event(&armed.ids, *r));
        let old = std::mem::replace(&mut armed.state, t.state);
        kept.push(old);
        std::hint::black_box(t.step);
    }
}

/// Whether every pending checkpoint of `armed` has every ack (the check the
/// ack benchmarks run once before measuring).
#[must_use]
pub fn all_acked(armed: &Armed) -> bool {
    armed.ids.iter().all(|id| {
        armed
            .state
            .pending_checkpoint(*id)
            .is_some_and(|p| p.fully_acked() && p.phase() != PendingPhase::AwaitingHooks)
    })
}

// ----- baselines --------------------------------------------------------------

/// What a baseline ack did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BaseAck {
    /// Recorded; that many still missing.
    Acked(usize),
    /// Recorded and complete: the handles to finalize, in slot order.
    Complete(Vec<StateHandle>),
    /// Already acknowledged.
    Duplicate,
    /// Unknown checkpoint, task or attempt.
    Unknown,
}

#[derive(Clone, Debug)]
struct FloorPending {
    id: CheckpointId,
    attempts: Vec<AttemptNo>,
    acked: Vec<u64>,
    handles: Vec<Option<StateHandle>>,
    remaining: usize,
}

/// The floor: no reducer, no persistence. Pending checkpoints in a small Vec
/// found by id, each with a Vec-indexed slot per task (attempt and handle) and
/// a bitset of acked slots.
#[derive(Clone, Debug)]
pub struct Floor {
    /// Task id -> ack slot (`u32::MAX`: not waited for).
    slot_of: Vec<u32>,
    pending: Vec<FloorPending>,
    /// Ids of the pending checkpoints, oldest first.
    pub ids: Vec<CheckpointId>,
}

impl Floor {
    /// `concurrency` pending checkpoints (ids 1..) over `tasks` tasks.
    #[must_use]
    pub fn armed(tasks: u32, concurrency: usize) -> Floor {
        let n = tasks as usize;
        let ids: Vec<CheckpointId> = (1..=concurrency as u64).map(CheckpointId).collect();
        Floor {
            slot_of: (0..tasks).collect(),
            pending: ids
                .iter()
                .map(|id| FloorPending {
                    id: *id,
                    attempts: vec![AttemptNo(0); n],
                    acked: vec![0; n.div_ceil(64)],
                    handles: vec![None; n],
                    remaining: n,
                })
                .collect(),
            ids,
        }
    }

    /// One acknowledgement.
    pub fn ack(
        &mut self,
        checkpoint: CheckpointId,
        task: TaskId,
        attempt: AttemptNo,
        state: Option<StateHandle>,
    ) -> BaseAck {
        let Some(p) = self.pending.iter_mut().find(|p| p.id == checkpoint) else {
            return BaseAck::Unknown;
        };
        let Some(&slot) = self.slot_of.get(task.0 as usize) else {
            return BaseAck::Unknown;
        };
        let slot = slot as usize;
        if p.attempts.get(slot) != Some(&attempt) {
            return BaseAck::Unknown;
        }
        let (word, bit) = (slot / 64, 1u64 << (slot % 64));
        if p.acked[word] & bit != 0 {
            return BaseAck::Duplicate;
        }
        p.acked[word] |= bit;
        p.handles[slot] = state;
        p.remaining -= 1;
        if p.remaining == 0 {
            BaseAck::Complete(p.handles.iter().flatten().copied().collect())
        } else {
            BaseAck::Acked(p.remaining)
        }
    }

    /// Every ack of `order`.
    #[inline(never)]
    pub fn ack_all(&mut self, order: &[AckRef]) {
        for r in order {
            let id = self.ids[r.checkpoint as usize];
            let out = self.ack(id, TaskId(r.task), AttemptNo(0), Some(handle(id, *r)));
            std::hint::black_box(out);
        }
    }

    /// Whether nothing is missing.
    #[must_use]
    pub fn all_acked(&self) -> bool {
        self.pending.iter().all(|p| p.remaining == 0)
    }
}

/// A 128-bit execution attempt id, as Flink's `ExecutionAttemptID` (random
/// in Flink; derived from the task here so the bench is repeatable).
#[must_use]
pub fn attempt_id(task: u32) -> u128 {
    let mut r = rng(u64::from(task));
    (u128::from(rand_core::RngCore::next_u64(&mut r)) << 64)
        | u128::from(rand_core::RngCore::next_u64(&mut r))
}

#[derive(Clone, Debug)]
struct FlinkPending {
    not_yet_acknowledged: HashMap<u128, u32>,
    acknowledged: HashSet<u128>,
    states: Vec<StateHandle>,
}

/// The Flink-like design (`PendingCheckpoint.acknowledgeTask`): pending
/// checkpoints in a hash map by id; each holds a hash map from 128-bit
/// attempt ids to tasks, from which every ack removes its entry (then
/// records the attempt as acknowledged and keeps its state). Presized like
/// Flink's; std `HashMap` (SipHash).
#[derive(Clone, Debug)]
pub struct FlinkLike {
    job: JobId,
    pending: HashMap<u64, FlinkPending>,
    /// Ids of the pending checkpoints, oldest first.
    pub ids: Vec<CheckpointId>,
    /// Attempt id of each task.
    pub attempts: Vec<u128>,
}

impl FlinkLike {
    /// `concurrency` pending checkpoints (ids 1..) over `tasks` tasks.
    #[must_use]
    pub fn armed(tasks: u32, concurrency: usize) -> FlinkLike {
        let attempts: Vec<u128> = (0..tasks).map(attempt_id).collect();
        let ids: Vec<CheckpointId> = (1..=concurrency as u64).map(CheckpointId).collect();
        let pending = ids
            .iter()
            .map(|id| {
                let not_yet: HashMap<u128, u32> = attempts
                    .iter()
                    .enumerate()
                    .map(|(t, a)| (*a, t as u32))
                    .collect();
                (
                    id.0,
                    FlinkPending {
                        not_yet_acknowledged: not_yet,
                        acknowledged: HashSet::with_capacity(tasks as usize),
                        states: Vec::with_capacity(tasks as usize),
                    },
                )
            })
            .collect();
        FlinkLike {
            job: JOB,
            pending,
            ids,
            attempts,
        }
    }

    /// One acknowledgement, addressed by attempt id.
    pub fn ack(
        &mut self,
        job: JobId,
        attempt: u128,
        checkpoint: CheckpointId,
        state: Option<StateHandle>,
    ) -> BaseAck {
        if job != self.job {
            return BaseAck::Unknown;
        }
        let Some(p) = self.pending.get_mut(&checkpoint.0) else {
            return BaseAck::Unknown;
        };
        if p.not_yet_acknowledged.remove(&attempt).is_none() {
            return if p.acknowledged.contains(&attempt) {
                BaseAck::Duplicate
            } else {
                BaseAck::Unknown
            };
        }
        p.acknowledged.insert(attempt);
        if let Some(h) = state {
            p.states.push(h);
        }
        if p.not_yet_acknowledged.is_empty() {
            BaseAck::Complete(p.states.clone())
        } else {
            BaseAck::Acked(p.not_yet_acknowledged.len())
        }
    }

    /// Every ack of `order`.
    #[inline(never)]
    pub fn ack_all(&mut self, order: &[AckRef]) {
        for r in order {
            let id = self.ids[r.checkpoint as usize];
            let attempt = self.attempts[r.task as usize];
            let out = self.ack(JOB, attempt, id, Some(handle(id, *r)));
            std::hint::black_box(out);
        }
    }

    /// Whether nothing is missing.
    #[must_use]
    pub fn all_acked(&self) -> bool {
        self.pending
            .values()
            .all(|p| p.not_yet_acknowledged.is_empty())
    }
}

// ----- the full cycle ---------------------------------------------------------

/// A coordinator driven through whole checkpoints, one at a time:
/// trigger -> id -> every ack (scattered) -> finalize -> store -> notify.
#[derive(Debug)]
pub struct Cycle {
    /// The coordinator (in place).
    pub state: CoordinatorState,
    next_id: u64,
    order: Vec<AckRef>,
    tasks: u32,
}

/// What one cycle produced (for the checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CycleCount {
    /// Acks applied.
    pub acked: usize,
    /// `NotifyComplete` effects.
    pub notified: usize,
    /// `DiscardState` effects (the checkpoint evicted by this one).
    pub discarded: usize,
    /// Whether the checkpoint completed.
    pub completed: bool,
}

impl Cycle {
    /// A fresh coordinator over `tasks` tasks.
    #[must_use]
    pub fn new(tasks: u32) -> Cycle {
        Cycle {
            state: coordinator(tasks),
            next_id: 1,
            order: scattered_order(tasks, 1),
            tasks,
        }
    }

    /// The task count.
    #[must_use]
    pub fn tasks(&self) -> u32 {
        self.tasks
    }

    /// One whole checkpoint, in place. Every effect list is dropped (the host
    /// would carry them out); the counts are what the checks need.
    pub fn run(&mut self) -> CycleCount {
        let now = Millis(self.next_id);
        let id = CheckpointId(self.next_id);
        self.next_id += 1;
        let mut count = CycleCount::default();
        std::hint::black_box(trigger(&mut self.state, now, id));
        let ids = [id];
        let mut finalize = false;
        for r in &self.order {
            let step = self.state.apply(now, ack_event(&ids, *r));
            if matches!(step.outcome, Outcome::Applied(Applied::Acknowledged { .. })) {
                count.acked += 1;
            }
            finalize |= step.effects.iter().any(|e| {
                matches!(
                    e,
                    CoordinatorEffect::Io {
                        request: IoRequest::Finalize { .. },
                        ..
                    }
                )
            });
            std::hint::black_box(step);
        }
        if !finalize {
            return count;
        }
        for ev in [
            CoordinatorEvent::FinalizeDone {
                checkpoint: id,
                result: Ok(()),
            },
            CoordinatorEvent::StoreDone {
                checkpoint: id,
                result: Ok(()),
            },
        ] {
            let step = self.state.apply(now, ev);
            count.completed |= matches!(step.outcome, Outcome::Applied(Applied::Completed { .. }));
            // Each effect taken by value, in order, as a host's router takes
            // it, and gone after it: one pass over the list (counting first
            // and then dropping the list was two, each from memory once the
            // list outgrows the caches: 100 000 effects of 88 bytes).
            for e in step.effects {
                match &e {
                    CoordinatorEffect::Rpc {
                        message: TaskMessage::NotifyComplete { .. },
                        ..
                    } => count.notified += 1,
                    CoordinatorEffect::Discard { .. } => count.discarded += 1,
                    _ => {}
                }
                std::hint::black_box(e);
            }
        }
        count
    }
}

// ----- the task side ----------------------------------------------------------

/// The task-side cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskCycle {
    /// A non-source task completes a checkpoint: BarrierReceived ->
    /// WriterCompleted -> CheckpointMail -> AsyncPartCompleted (ack) ->
    /// NotifyComplete.
    Complete,
    /// A source task: TriggerCheckpoint (start + execute at once) ->
    /// AsyncPartCompleted -> NotifyComplete.
    Source,
    /// The FLINK-17869 race: BarrierReceived -> NotifyAborted (before the
    /// mail) -> CheckpointMail (declined) -> WriterCompleted (ignored: the
    /// result is gone).
    AbortBeforeMail,
    /// Abort while the async part runs: BarrierReceived -> WriterCompleted ->
    /// CheckpointMail -> NotifyAborted (cancels the async part).
    AbortAsync,
}

impl TaskCycle {
    /// All cycles, in report order.
    pub const ALL: [TaskCycle; 4] = [
        TaskCycle::Complete,
        TaskCycle::Source,
        TaskCycle::AbortBeforeMail,
        TaskCycle::AbortAsync,
    ];

    /// The benchmark id.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TaskCycle::Complete => "complete",
            TaskCycle::Source => "source",
            TaskCycle::AbortBeforeMail => "abort_before_mail",
            TaskCycle::AbortAsync => "abort_async",
        }
    }

    /// The events of one cycle of checkpoint `n`.
    #[must_use]
    pub fn events(self, n: u64) -> Vec<TaskEvent> {
        let checkpoint = CheckpointId(n);
        let barrier = TaskEvent::BarrierReceived {
            checkpoint,
            via: Thread::Netty,
        };
        let writer = TaskEvent::WriterCompleted { checkpoint };
        let mail = TaskEvent::CheckpointMail { checkpoint };
        let done = TaskEvent::AsyncPartCompleted {
            checkpoint,
            handle: StateHandle(n),
        };
        let complete = TaskEvent::NotifyComplete { checkpoint };
        let aborted = TaskEvent::NotifyAborted { checkpoint };
        match self {
            TaskCycle::Complete => vec![barrier, writer, mail, done, complete],
            TaskCycle::Source => vec![TaskEvent::TriggerCheckpoint { checkpoint }, done, complete],
            TaskCycle::AbortBeforeMail => vec![barrier, aborted, mail, writer],
            TaskCycle::AbortAsync => vec![barrier, writer, mail, aborted],
        }
    }
}

/// A task driven through cycles with increasing checkpoint ids.
#[derive(Clone, Debug)]
pub struct TaskDriver {
    /// The task.
    pub state: TaskState,
    /// The next checkpoint id.
    pub next: u64,
}

impl Default for TaskDriver {
    fn default() -> Self {
        TaskDriver::new()
    }
}

impl TaskDriver {
    /// A fresh task with the default (fixed) semantics.
    ///
    /// # Panics
    /// Never: the default config is valid.
    #[must_use]
    pub fn new() -> TaskDriver {
        match TaskState::new(TaskConfig::default()) {
            Ok(state) => TaskDriver { state, next: 1 },
            Err(e) => panic!("default task config refused: {e}"),
        }
    }

    /// One cycle in place (`TaskState::apply`); returns how many events were
    /// applied or skipped (not ignored).
    pub fn run_in_place(&mut self, cycle: TaskCycle) -> usize {
        let n = self.next;
        self.next += 1;
        let mut used = 0;
        for ev in cycle.events(n) {
            let step = self.state.apply(Millis(n), ev);
            used += usize::from(matches!(
                step.outcome,
                task::Outcome::Applied | task::Outcome::Skipped(_)
            ));
            std::hint::black_box(step.effects);
        }
        used
    }

    /// One cycle through the pure `task::reduce` (old states dropped).
    pub fn run_pure(&mut self, cycle: TaskCycle) -> usize {
        let n = self.next;
        self.next += 1;
        let mut used = 0;
        for ev in cycle.events(n) {
            let t = task::reduce(&self.state, Millis(n), ev);
            used += usize::from(matches!(
                t.step.outcome,
                task::Outcome::Applied | task::Outcome::Skipped(_)
            ));
            self.state = t.state;
            std::hint::black_box(t.step.effects);
        }
        used
    }
}

/// Applied/skipped events expected per cycle (the checks): the abort-before-
/// mail cycle's last event (the writer report for a removed result) is
/// ignored.
#[must_use]
pub fn expected_used(cycle: TaskCycle) -> usize {
    match cycle {
        TaskCycle::Complete => 5,
        TaskCycle::Source => 3,
        TaskCycle::AbortBeforeMail => 3,
        TaskCycle::AbortAsync => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_core::coordinator::Ignored;

    fn late_ack_is_ignored(o: &Outcome) -> bool {
        matches!(
            o,
            Outcome::Ignored(Ignored::LateMessage | Ignored::UnknownCheckpoint)
        )
    }

    #[test]
    fn scattered_order_is_a_permutation() {
        let o = scattered_order(100, 4);
        assert_eq!(o.len(), 400);
        let mut seen = vec![false; 400];
        for r in &o {
            let i = r.checkpoint as usize * 100 + r.task as usize;
            assert!(!seen[i]);
            seen[i] = true;
        }
        // Interleaved, not grouped by checkpoint.
        assert!(o[..50].iter().any(|r| r.checkpoint != o[0].checkpoint));
    }

    #[test]
    fn kept_storage_is_empty_with_room_and_keeps_what_is_pushed() {
        let mut a = armed(100, 2);
        let order = scattered_order(100, 2);
        let mut kept = kept_storage(&a.state, order.len());
        assert!(kept.is_empty());
        let room = kept.capacity();
        assert!(room >= order.len());
        let first = a.state.clone();
        ack_pure_retained(&mut a, &order, &mut kept);
        assert_eq!(kept.len(), order.len(), "one kept state per ack");
        assert_eq!(
            kept.capacity(),
            room,
            "the storage did not grow while acking"
        );
        assert_eq!(
            kept.first(),
            Some(&first),
            "the first kept state is the armed one"
        );
        assert!(all_acked(&a));
    }

    #[test]
    fn every_variant_acks_every_slot() {
        for tasks in [1, 100, 1000] {
            for c in CONCURRENCY {
                let order = scattered_order(tasks, c);
                let mut a = armed(tasks, c);
                assert_eq!(a.state.pending_count(), c);
                assert!(!all_acked(&a) || tasks == 0);
                let mut first = a.state.clone();
                let s = first.apply(Millis(0), ack_event(&a.ids, order[0]));
                assert!(
                    matches!(s.outcome, Outcome::Applied(Applied::Acknowledged { .. })),
                    "{:?}",
                    s.outcome
                );
                ack_in_place(&mut a, &order);
                assert!(all_acked(&a), "in place {tasks}x{c}");

                // The lent queue: the same state, and per step the effects
                // `apply` returns, appended behind what the queue held.
                let mut l = armed(tasks, c);
                let mut twin = armed(tasks, c);
                let mut queue = Vec::new();
                for r in &order {
                    let step = twin.state.apply(Millis(0), ack_event(&twin.ids, *r));
                    let held = queue.len();
                    let (outcome, clock) =
                        l.state
                            .apply_into(Millis(0), ack_event(&l.ids, *r), &mut queue);
                    assert_eq!((outcome, clock), (step.outcome, step.clock));
                    assert_eq!(queue.get(held..), Some(&step.effects[..]));
                    if queue.len() > 64 {
                        queue.clear();
                    }
                }
                assert_eq!(l.state, a.state);
                let mut lent = armed(tasks, c);
                ack_in_place_lent(&mut lent, &order, &mut queue);
                assert!(queue.is_empty());
                assert_eq!(lent.state, a.state);

                let mut p = armed(tasks, c);
                let mut kept = Vec::with_capacity(order.len());
                ack_pure_retained(&mut p, &order, &mut kept);
                assert!(all_acked(&p), "pure {tasks}x{c}");
                assert_eq!(kept.len(), order.len());
                assert_eq!(p.state, a.state);

                let mut f = Floor::armed(tasks, c);
                assert!(!f.all_acked());
                f.ack_all(&order);
                assert!(f.all_acked());
                assert_eq!(
                    f.ack(f.ids[0], TaskId(0), AttemptNo(0), None),
                    BaseAck::Duplicate
                );

                let mut k = FlinkLike::armed(tasks, c);
                assert!(!k.all_acked());
                k.ack_all(&order);
                assert!(k.all_acked());
                let a0 = k.attempts[0];
                assert_eq!(k.ack(JOB, a0, k.ids[0], None), BaseAck::Duplicate);
            }
        }
    }

    #[test]
    fn baselines_report_completion_with_all_handles() {
        let mut f = Floor::armed(3, 1);
        assert_eq!(
            f.ack(
                CheckpointId(1),
                TaskId(2),
                AttemptNo(0),
                Some(StateHandle(2))
            ),
            BaseAck::Acked(2)
        );
        assert_eq!(
            f.ack(CheckpointId(9), TaskId(0), AttemptNo(0), None),
            BaseAck::Unknown
        );
        assert_eq!(
            f.ack(CheckpointId(1), TaskId(0), AttemptNo(1), None),
            BaseAck::Unknown
        );
        f.ack(
            CheckpointId(1),
            TaskId(0),
            AttemptNo(0),
            Some(StateHandle(0)),
        );
        assert_eq!(
            f.ack(
                CheckpointId(1),
                TaskId(1),
                AttemptNo(0),
                Some(StateHandle(1))
            ),
            BaseAck::Complete(vec![StateHandle(0), StateHandle(1), StateHandle(2)])
        );
        let mut k = FlinkLike::armed(2, 1);
        let (a0, a1) = (k.attempts[0], k.attempts[1]);
        assert_eq!(k.ack(JOB, 42, CheckpointId(1), None), BaseAck::Unknown);
        assert_eq!(
            k.ack(JOB, a1, CheckpointId(1), Some(StateHandle(1))),
            BaseAck::Acked(1)
        );
        assert_eq!(
            k.ack(JOB, a0, CheckpointId(1), Some(StateHandle(0))),
            BaseAck::Complete(vec![StateHandle(1), StateHandle(0)])
        );
    }

    #[test]
    fn cycles_complete_and_notify_every_task() {
        for tasks in [1, 100, 1000] {
            let mut c = Cycle::new(tasks);
            let n = tasks as usize;
            let first = c.run();
            assert_eq!(
                first,
                CycleCount {
                    acked: n,
                    notified: n,
                    discarded: 0,
                    completed: true
                }
            );
            for _ in 0..3 {
                // Retained 1: the previous checkpoint's handles are discarded.
                let next = c.run();
                assert_eq!(
                    next,
                    CycleCount {
                        acked: n,
                        notified: n,
                        discarded: n,
                        completed: true
                    }
                );
            }
            assert_eq!(c.state.pending_count(), 0);
            // A late ack for a completed checkpoint is ignored.
            let s = c.state.apply(
                Millis(99),
                ack_event(
                    &[CheckpointId(1)],
                    AckRef {
                        checkpoint: 0,
                        task: 0,
                    },
                ),
            );
            assert!(late_ack_is_ignored(&s.outcome), "{:?}", s.outcome);
        }
    }

    #[test]
    fn task_cycles_apply_every_event() {
        for cycle in TaskCycle::ALL {
            let mut d = TaskDriver::new();
            let mut p = TaskDriver::new();
            for _ in 0..20 {
                assert_eq!(d.run_in_place(cycle), expected_used(cycle), "{cycle:?}");
                assert_eq!(p.run_pure(cycle), expected_used(cycle), "{cycle:?}");
            }
            assert_eq!(d.state, p.state);
            assert!(!d.state.has_outstanding_work(), "{cycle:?}");
            assert_eq!(d.state.lifecycle(), ckpt_core::task::Lifecycle::Running);
        }
    }
}
