//! Task invariants: plain functions over states and effect lists, and a
//! stateful [`TaskMonitor`] for cross-step rules. Used by unit tests,
//! proptest, the stateright model, loom tests and fuzzing.

use core::hash::{Hash, Hasher};

use crate::ids::{IdMap, IdSet};
use crate::task::{AsyncCommand, ChannelItem, OperatorNotice, ToCoordinator, WriterCommand};
use crate::task::{
    Lifecycle, Outcome, Recovery, ResultStatus, SkipReason, Step, TaskEffect, TaskEvent, TaskState,
};
use crate::types::{CheckpointId, StateHandle, Thread};

/// Invariant names (stable; tests and the model match on them).
pub mod names {
    /// The aborted-id memory holds at most `aborted_ids_max` ids.
    pub const ABORTED_BOUND: &str = "aborted_bound";
    /// Every remembered aborted id is above the last executed id.
    pub const ABORTED_UNEXECUTED: &str = "aborted_unexecuted";
    /// At most one write result is not failed.
    pub const SINGLE_ACTIVE_RESULT: &str = "single_active_result";
    /// Every write result still has its checkpoint mail pending.
    pub const RESULT_HAS_MAIL: &str = "result_has_mail";
    /// Results and mails are for started ids, async parts for executed ids.
    pub const IDS_STARTED: &str = "ids_started";
    /// A failed or closed task holds no results, mails or async parts.
    pub const TORN_DOWN: &str = "torn_down";
    /// Every [`TaskEffect::Fail`](crate::task::TaskEffect::Fail) is genuine
    /// (a violation names it `FailTask(reason)`).
    pub const NO_SPURIOUS_FAILURE: &str = "no_spurious_failure";
    /// At most one [`TaskEffect::Fail`](crate::task::TaskEffect::Fail) per
    /// step.
    pub const SINGLE_FAILURE: &str = "single_failure";
    /// No write result is left when nothing is outstanding.
    pub const NO_LEAKED_RESULT: &str = "no_leaked_result";
    /// Nothing is emitted after close or a task failure.
    pub const SILENT_AFTER_END: &str = "silent_after_end";
    /// An ignored or rejected event emits nothing.
    pub const IGNORED_IS_SILENT: &str = "ignored_is_silent";
    /// A write result is created at most once per checkpoint.
    pub const RESULT_CREATED_ONCE: &str = "result_created_once";
    /// Only the task thread removes (or takes) a write result.
    pub const REMOVE_ON_TASK_THREAD: &str = "remove_on_task_thread";
    /// Executed checkpoint ids strictly increase.
    pub const EXECUTED_INCREASE: &str = "executed_increase";
    /// A checkpoint is acknowledged or declined, once, never both.
    pub const ACK_XOR_DECLINE: &str = "ack_xor_decline";
    /// A checkpoint is acknowledged at most once.
    pub const ACK_ONCE: &str = "ack_once";
    /// Operators are notified of completions in increasing id order.
    pub const COMPLETE_MONOTONIC: &str = "complete_monotonic";
    /// A state handle is acknowledged or discarded once, by the step that
    /// delivered it.
    pub const HANDLE_ONCE: &str = "handle_once";
    /// No ack or decline for a checkpoint below the last executed one (unless
    /// its async part is still running).
    pub const ANSWER_AFTER_EXECUTED: &str = "answer_after_executed";
    /// A checkpoint the task was told is aborted before it executed never
    /// executes.
    pub const ABORTED_NOT_EXECUTED: &str = "aborted_not_executed";
    /// A write result never disappears without a removal the host sees.
    pub const RESULT_NOT_VANISHED: &str = "result_not_vanished";
    /// An ignored or rejected event leaves the state unchanged.
    pub const IGNORED_IS_UNCHANGED: &str = "ignored_is_unchanged";
    /// A checkpoint that starts while the task replays in-flight channel
    /// state holds the input not yet replayed: none starts before that
    /// state was fetched, and one that starts while input channels still
    /// consume recovered input captures it (`CaptureRecovered` for every
    /// such channel).
    pub const RECOVERED_INPUT_CAPTURED: &str = "recovered_input_captured";

    /// Every name above (the model maps each to a property; a test checks
    /// that none is left unmapped).
    pub const ALL: [&str; 23] = [
        ABORTED_BOUND,
        ABORTED_UNEXECUTED,
        SINGLE_ACTIVE_RESULT,
        RESULT_HAS_MAIL,
        IDS_STARTED,
        TORN_DOWN,
        NO_SPURIOUS_FAILURE,
        SINGLE_FAILURE,
        NO_LEAKED_RESULT,
        SILENT_AFTER_END,
        IGNORED_IS_SILENT,
        RESULT_CREATED_ONCE,
        REMOVE_ON_TASK_THREAD,
        EXECUTED_INCREASE,
        ACK_XOR_DECLINE,
        ACK_ONCE,
        COMPLETE_MONOTONIC,
        HANDLE_ONCE,
        ANSWER_AFTER_EXECUTED,
        ABORTED_NOT_EXECUTED,
        RESULT_NOT_VANISHED,
        IGNORED_IS_UNCHANGED,
        RECOVERED_INPUT_CAPTURED,
    ];
}

/// A broken task invariant (the shared [`Violation`](super::Violation)).
pub type TaskViolation = super::Violation;

fn violation(invariant: &'static str, detail: String) -> Result<(), TaskViolation> {
    Err(TaskViolation { invariant, detail })
}

fn above(id: CheckpointId, mark: Option<CheckpointId>) -> bool {
    mark.is_none_or(|m| id > m)
}

fn at_or_below(id: CheckpointId, mark: Option<CheckpointId>) -> bool {
    mark.is_some_and(|m| id <= m)
}

/// Checks one state:
/// * `aborted_bound`: the aborted-id memory holds at most `aborted_ids_max` ids;
/// * `aborted_unexecuted`: every remembered aborted id is above the last executed id;
/// * `single_active_result`: at most one write result is not failed;
/// * `result_has_mail`: every write result still has its checkpoint mail pending
///   (so the task thread will remove it);
/// * `ids_started`: results and mails are for started ids, async parts for executed ids;
/// * `torn_down`: a failed or closed task holds no results, mails or async parts.
pub fn check_state(s: &TaskState) -> Result<(), TaskViolation> {
    let aborted = s.aborted_ids();
    if aborted.len() > s.config().aborted_ids_max {
        return violation(
            names::ABORTED_BOUND,
            format!(
                "{} ids remembered, bound {}",
                aborted.len(),
                s.config().aborted_ids_max
            ),
        );
    }
    if let Some(id) = aborted.iter().find(|id| !above(**id, s.last_executed())) {
        return violation(
            names::ABORTED_UNEXECUTED,
            format!(
                "aborted id {id} at or below last executed {:?}",
                s.last_executed()
            ),
        );
    }
    let results = s.write_results();
    let active = || {
        results
            .iter()
            .filter(|(_, st)| !matches!(st, ResultStatus::Failed(_)))
            .map(|(id, _)| *id)
    };
    if active().nth(1).is_some() {
        let active: Vec<CheckpointId> = active().collect();
        return violation(
            names::SINGLE_ACTIVE_RESULT,
            format!("active results {active:?}"),
        );
    }
    let mails = s.pending_mails();
    if let Some((id, _)) = results.iter().find(|(id, _)| !mails.contains(id)) {
        return violation(
            names::RESULT_HAS_MAIL,
            format!("result {id} has no pending mail"),
        );
    }
    if let Some((id, _)) = results
        .iter()
        .find(|(id, _)| !at_or_below(*id, s.last_started()))
    {
        return violation(names::IDS_STARTED, format!("result {id} never started"));
    }
    if let Some(id) = mails.iter().find(|id| !at_or_below(**id, s.last_started())) {
        return violation(names::IDS_STARTED, format!("mail {id} never started"));
    }
    let parts = s.async_parts();
    if let Some(id) = parts
        .iter()
        .find(|id| !at_or_below(**id, s.last_executed()))
    {
        return violation(
            names::IDS_STARTED,
            format!("async part {id} never executed"),
        );
    }
    match s.lifecycle() {
        Lifecycle::Running | Lifecycle::Finished => {}
        Lifecycle::Failed | Lifecycle::Closed => {
            if !results.is_empty() || !mails.is_empty() || !parts.is_empty() {
                return violation(
                    names::TORN_DOWN,
                    format!(
                        "{:?} task holds results {results:?}, mails {mails:?}, async parts {parts:?}",
                        s.lifecycle()
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Checks one step's effects: `no_spurious_failure` (every
/// [`TaskEffect::Fail`] is genuine) and `single_failure` (at most one
/// [`TaskEffect::Fail`]).
pub fn check_effects(effects: &[TaskEffect]) -> Result<(), TaskViolation> {
    let mut failures = 0usize;
    for e in effects {
        if let TaskEffect::Fail(reason) = e {
            if !reason.is_genuine() {
                return violation(names::NO_SPURIOUS_FAILURE, format!("FailTask({reason:?})"));
            }
            failures = failures.saturating_add(1);
        }
    }
    if failures > 1 {
        return violation(
            names::SINGLE_FAILURE,
            format!("{failures} FailTask effects"),
        );
    }
    Ok(())
}

/// `no_leaked_result`: when nothing is outstanding (no scheduled mail, no
/// writer work, no async part: see [`TaskState::has_outstanding_work`]), no
/// write result is left.
pub fn check_quiescent(s: &TaskState) -> Result<(), TaskViolation> {
    if s.has_outstanding_work() {
        return Ok(());
    }
    let results = s.write_results();
    if results.is_empty() {
        Ok(())
    } else {
        violation(
            names::NO_LEAKED_RESULT,
            format!("quiescent with results {results:?}"),
        )
    }
}

/// `recovered_input_captured`: a step that creates a write result
/// (`Writer(Start(N))`) while `before` replays in-flight channel state
/// either is past fetching it and captures, for every input channel still
/// consuming recovered input, what that channel has not consumed yet
/// (`Writer(CaptureRecovered { checkpoint: N, channels })`, in the same
/// step), or it breaks the rule: a checkpoint without that input restores
/// a job that lost it.
pub fn check_recovery_capture(
    before: &TaskState,
    effects: &[TaskEffect],
) -> Result<(), TaskViolation> {
    let Some(recovery) = before.recovery() else {
        return Ok(());
    };
    for e in effects {
        let TaskEffect::Writer(WriterCommand::Start(checkpoint)) = e else {
            continue;
        };
        if recovery == Recovery::AwaitingChannelState {
            return violation(
                names::RECOVERED_INPUT_CAPTURED,
                format!("{checkpoint} started before the in-flight channel state was fetched"),
            );
        }
        let channels = recovery.channels();
        let captured = effects.iter().any(|c| {
            *c == TaskEffect::Writer(WriterCommand::CaptureRecovered {
                checkpoint: *checkpoint,
                channels,
            })
        });
        if channels > 0 && !captured {
            return violation(
                names::RECOVERED_INPUT_CAPTURED,
                format!(
                    "{checkpoint} started while {channels} input channel(s) still consume recovered input, without capturing it"
                ),
            );
        }
    }
    Ok(())
}

/// What the monitor knows about one created write result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
struct Track {
    settled: bool,
    removed: bool,
    in_async: bool,
}

/// A stateful checker fed every `(event, effects, outcome)` of one task, in
/// order. Cross-step rules: `result_created_once`, `remove_on_task_thread`,
/// `executed_increase`, `complete_monotonic`, `handle_once` (a state handle
/// is acked or discarded only in the step whose `AsyncPartCompleted`
/// delivered it, and only once), `ack_once`, `ack_xor_decline`,
/// `answer_after_executed` (once the task thread has executed checkpoint N,
/// by starting its async part or declining it, nothing at or below N is
/// acked or declined again except by an async part still running),
/// `silent_after_end` (nothing after close or a task failure),
/// `ignored_is_silent`, plus [`check_effects`] on every step; call
/// [`TaskMonitor::leaked`] at quiescence.
///
/// Memory is bounded by the live state, not by the number of checkpoints
/// seen: answers (acks, declines) are remembered only above the executed
/// floor or while their async part runs, and each step costs O(its effects
/// times log of what is remembered).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct TaskMonitor {
    ended: bool,
    last_executed: Option<CheckpointId>,
    last_complete: Option<CheckpointId>,
    tracks: IdMap<Track>,
    /// The highest checkpoint the task thread executed (async part started,
    /// or declined while executing its mail / trigger).
    floor: Option<CheckpointId>,
    /// Async parts started and not yet completed, failed or cancelled.
    running: IdSet,
    acked: IdSet,
    declined: IdSet,
    /// Checkpoints the task was told are aborted before it executed them
    /// (forgotten once executed past, or once a newer checkpoint started:
    /// then they can never execute).
    told_aborted: IdSet,
    /// Checkpoints the task started (a trigger or barrier it did not
    /// ignore) and has not answered: no ack or decline yet, no async part
    /// that ended or was cancelled, no stale mail that dropped it, and the
    /// task attempt still running. See [`TaskMonitor::unanswered`].
    unanswered: IdSet,
}

impl Hash for TaskMonitor {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Destructured so that a new field cannot silently drop out of the
        // hash; every collection writes its length: hashed without it, `[a, b] + []` and `[a] + [b]` write the same bytes.
        let TaskMonitor {
            ended,
            last_executed,
            last_complete,
            tracks,
            floor,
            running,
            acked,
            declined,
            told_aborted,
            unanswered,
        } = self;
        ended.hash(h);
        last_executed.hash(h);
        last_complete.hash(h);
        // Each collection writes its length, then its entries ascending.
        tracks.hash(h);
        floor.hash(h);
        running.hash(h);
        acked.hash(h);
        declined.hash(h);
        told_aborted.hash(h);
        unanswered.hash(h);
    }
}

impl TaskMonitor {
    /// A monitor for a fresh task.
    #[must_use]
    pub fn new() -> TaskMonitor {
        TaskMonitor::default()
    }

    /// `result_not_vanished`: every write result created and not removed
    /// (by an effect the host sees) is still held by the task state. A result
    /// that disappears silently is one whose writer work nobody will ever
    /// settle.
    pub fn check_results(&self, state: &TaskState) -> Result<(), TaskViolation> {
        if self.ended {
            return Ok(());
        }
        let held = state.write_results();
        match self
            .tracks
            .iter()
            .find(|(id, t)| !t.removed && !held.iter().any(|(h, _)| h == *id))
        {
            Some((id, _)) => violation(
                names::RESULT_NOT_VANISHED,
                format!("write result {id} vanished without being failed or removed"),
            ),
            None => Ok(()),
        }
    }

    /// Write results created and not yet both completed/failed and removed.
    /// Empty at quiescence unless a result leaked.
    #[must_use]
    pub fn leaked(&self) -> Vec<CheckpointId> {
        self.tracks.keys().copied().collect()
    }

    /// Checkpoints the task started and never answered (the rule "every
    /// trigger a task received is acknowledged or declined"): a trigger or
    /// barrier it did not ignore, with no ack or decline since, whose async
    /// part neither ended (an ack, a decline, or a discard because a newer
    /// checkpoint completed) nor was cancelled by the coordinator's abort,
    /// whose mail did not run stale (a newer checkpoint ran first), in a
    /// task attempt that neither failed nor closed. Empty where a run ends
    /// unless a checkpoint hangs on the task until the coordinator expires
    /// it (FLINK-40518).
    #[must_use]
    pub fn unanswered(&self) -> &[CheckpointId] {
        self.unanswered.as_slice()
    }

    /// How many checkpoints the monitor remembers (write results in flight,
    /// running async parts, answers above the executed floor): bounded by
    /// the task's live state.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.tracks.len()
            + self.running.len()
            + self.acked.len()
            + self.declined.len()
            + self.unanswered.len()
    }

    fn track(&mut self, id: CheckpointId, f: impl FnOnce(&mut Track)) {
        if let Some(t) = self.tracks.get_mut(&id) {
            f(t);
            if t.settled && t.removed {
                self.tracks.remove(&id);
            }
        }
    }

    /// An ack or decline of `id` must be for a checkpoint above the executed
    /// floor, or for an async part still running.
    fn answer_allowed(&self, id: CheckpointId) -> Result<(), TaskViolation> {
        if at_or_below(id, self.floor) && !self.running.contains(&id) {
            return violation(
                names::ANSWER_AFTER_EXECUTED,
                format!("{id} answered after the task executed {:?}", self.floor),
            );
        }
        Ok(())
    }

    fn raise_floor(&mut self, id: CheckpointId) {
        if !at_or_below(id, self.floor) {
            self.floor = Some(id);
        }
    }

    /// Forgets answers that can no longer be repeated legitimately: at or
    /// below the floor, with no async part running.
    fn prune(&mut self) {
        let Some(floor) = self.floor else {
            return;
        };
        let running = &self.running;
        for set in [&mut self.acked, &mut self.declined] {
            set.retain(|id| id > floor || running.contains(&id));
        }
    }

    /// Observes one step. On `Err` the monitor may be partly updated.
    pub fn observe(
        &mut self,
        event: &TaskEvent,
        effects: &[TaskEffect],
        outcome: &Outcome,
    ) -> Result<(), TaskViolation> {
        if self.ended && !effects.is_empty() {
            return violation(names::SILENT_AFTER_END, format!("{event:?} -> {effects:?}"));
        }
        // Whatever the reducer made of it: a notify-aborted for a checkpoint
        // not executed yet means it must never execute.
        match event {
            TaskEvent::NotifyAborted { checkpoint } => {
                if !self.ended && !at_or_below(*checkpoint, self.last_executed) {
                    self.told_aborted.insert(*checkpoint);
                }
            }
            TaskEvent::BarrierReceived { checkpoint, .. }
            | TaskEvent::TriggerCheckpoint { checkpoint } => {
                let newer = *checkpoint;
                self.told_aborted.retain(|id| id >= newer);
            }
            TaskEvent::CheckpointMail { .. }
            | TaskEvent::CancelMarker { .. }
            | TaskEvent::NotifyComplete { .. }
            | TaskEvent::WriterCompleted { .. }
            | TaskEvent::WriterFailed { .. }
            | TaskEvent::AsyncPartCompleted { .. }
            | TaskEvent::AsyncPartReused { .. }
            | TaskEvent::AsyncPartFailed { .. }
            | TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished
            | TaskEvent::Close => {}
        }
        // A start the task did not ignore awaits its answer; a stale mail
        // (a newer checkpoint ran first) or an async part's end settles it
        // (an ack or decline in its effects, or a discard: subsumed).
        if let (
            TaskEvent::BarrierReceived { checkpoint, .. }
            | TaskEvent::TriggerCheckpoint { checkpoint },
            Outcome::Applied | Outcome::Skipped(_),
            false,
        ) = (event, outcome, self.ended)
        {
            self.unanswered.insert(*checkpoint);
        }
        if let (TaskEvent::CheckpointMail { checkpoint }, Outcome::Skipped(SkipReason::Stale)) =
            (event, outcome)
        {
            self.unanswered.remove(checkpoint);
        }
        if let (
            TaskEvent::AsyncPartCompleted { checkpoint, .. }
            | TaskEvent::AsyncPartReused { checkpoint, .. }
            | TaskEvent::AsyncPartFailed { checkpoint },
            Outcome::Applied,
        ) = (event, outcome)
        {
            self.unanswered.remove(checkpoint);
        }
        match outcome {
            Outcome::Applied | Outcome::Skipped(_) => {}
            Outcome::Ignored(_) | Outcome::Rejected(_) => {
                if !effects.is_empty() {
                    return violation(
                        names::IGNORED_IS_SILENT,
                        format!("{outcome:?} -> {effects:?}"),
                    );
                }
                return Ok(());
            }
        }
        check_effects(effects)?;
        let on_task = event.thread() == Thread::Task;
        // The handle this step may use, once: the one its event delivered.
        let mut handle = event.handle();
        // The checkpoint this step executes, if its event runs one.
        let executes = event.executes();
        for e in effects {
            match e {
                TaskEffect::Writer(WriterCommand::Start(checkpoint)) => {
                    if self.tracks.contains_key(checkpoint) {
                        return violation(names::RESULT_CREATED_ONCE, format!("{checkpoint}"));
                    }
                    self.tracks.insert(*checkpoint, Track::default());
                }
                TaskEffect::Writer(WriterCommand::Abort {
                    checkpoint,
                    cleanup,
                }) => {
                    if *cleanup && !on_task {
                        return violation(
                            names::REMOVE_ON_TASK_THREAD,
                            format!("{event:?} removed result {checkpoint}"),
                        );
                    }
                    let cleanup = *cleanup;
                    self.track(*checkpoint, |t| {
                        t.settled = true;
                        t.removed |= cleanup;
                    });
                }
                TaskEffect::AsyncPart(AsyncCommand::Start(checkpoint)) => {
                    if !on_task {
                        return violation(
                            names::REMOVE_ON_TASK_THREAD,
                            format!("{event:?} took result {checkpoint}"),
                        );
                    }
                    if at_or_below(*checkpoint, self.last_executed) {
                        return violation(
                            names::EXECUTED_INCREASE,
                            format!("{checkpoint} after {:?}", self.last_executed),
                        );
                    }
                    if self.told_aborted.contains(checkpoint) {
                        return violation(
                            names::ABORTED_NOT_EXECUTED,
                            format!("{checkpoint} executed after the task was told it is aborted"),
                        );
                    }
                    self.last_executed = Some(*checkpoint);
                    let executed = *checkpoint;
                    self.told_aborted.retain(|id| id > executed);
                    self.raise_floor(*checkpoint);
                    self.running.insert(*checkpoint);
                    self.track(*checkpoint, |t| {
                        t.removed = true;
                        t.in_async = true;
                    });
                }
                TaskEffect::AsyncPart(AsyncCommand::Cancel(checkpoint)) => {
                    self.unanswered.remove(checkpoint);
                    self.running.remove(checkpoint);
                    self.track(*checkpoint, |t| t.settled |= t.in_async);
                }
                TaskEffect::Coordinator(ToCoordinator::Ack {
                    checkpoint,
                    handle: h,
                }) => {
                    Self::use_handle(&mut handle, *h, event)?;
                    if self.declined.contains(checkpoint) {
                        return violation(
                            names::ACK_XOR_DECLINE,
                            format!("{checkpoint} acked after decline"),
                        );
                    }
                    self.unanswered.remove(checkpoint);
                    if self.acked.insert(*checkpoint).is_some() {
                        return violation(names::ACK_ONCE, format!("{checkpoint}"));
                    }
                    self.answer_allowed(*checkpoint)?;
                }
                TaskEffect::Coordinator(ToCoordinator::Decline { checkpoint, .. }) => {
                    self.unanswered.remove(checkpoint);
                    if self.acked.contains(checkpoint) {
                        return violation(
                            names::ACK_XOR_DECLINE,
                            format!("{checkpoint} declined after ack"),
                        );
                    }
                    if self.declined.insert(*checkpoint).is_some() {
                        return violation(
                            names::ACK_XOR_DECLINE,
                            format!("{checkpoint} declined twice"),
                        );
                    }
                    self.answer_allowed(*checkpoint)?;
                    if executes == Some(*checkpoint) {
                        self.raise_floor(*checkpoint);
                    }
                }
                TaskEffect::Discard(h) => Self::use_handle(&mut handle, *h, event)?,
                TaskEffect::Operators(OperatorNotice::Complete(checkpoint)) => {
                    if at_or_below(*checkpoint, self.last_complete) {
                        return violation(
                            names::COMPLETE_MONOTONIC,
                            format!("{checkpoint} after {:?}", self.last_complete),
                        );
                    }
                    self.last_complete = Some(*checkpoint);
                }
                TaskEffect::Fail(_) => self.ended = true,
                TaskEffect::Mail(_)
                | TaskEffect::Writer(WriterCommand::CaptureRecovered { .. })
                | TaskEffect::Downstream(ChannelItem::Barrier(_))
                | TaskEffect::Downstream(ChannelItem::CancelMarker(_))
                | TaskEffect::Operators(OperatorNotice::Aborted(_)) => {}
            }
        }
        match event {
            TaskEvent::WriterCompleted { checkpoint } | TaskEvent::WriterFailed { checkpoint } => {
                self.track(*checkpoint, |t| t.settled = true);
            }
            TaskEvent::AsyncPartCompleted { checkpoint, .. }
            | TaskEvent::AsyncPartReused { checkpoint, .. }
            | TaskEvent::AsyncPartFailed { checkpoint } => {
                self.running.remove(checkpoint);
                self.track(*checkpoint, |t| t.settled |= t.in_async);
            }
            TaskEvent::Close => self.ended = true,
            TaskEvent::BarrierReceived { .. }
            | TaskEvent::TriggerCheckpoint { .. }
            | TaskEvent::CheckpointMail { .. }
            | TaskEvent::CancelMarker { .. }
            | TaskEvent::NotifyAborted { .. }
            | TaskEvent::NotifyComplete { .. }
            | TaskEvent::OperatorFailed
            | TaskEvent::EndOfInput
            | TaskEvent::RecoveryStarted { .. }
            | TaskEvent::ChannelRecovered
            | TaskEvent::RecoveryFinished => {}
        }
        if self.ended {
            // Nothing may follow; what was remembered can never be used.
            self.unanswered.clear();
            self.running.clear();
            self.acked.clear();
            self.declined.clear();
        } else {
            self.prune();
        }
        Ok(())
    }

    /// A step may ack or discard only the handle its own event delivered,
    /// and only once.
    fn use_handle(
        allowed: &mut Option<StateHandle>,
        handle: StateHandle,
        event: &TaskEvent,
    ) -> Result<(), TaskViolation> {
        if *allowed == Some(handle) {
            *allowed = None;
            return Ok(());
        }
        violation(
            names::HANDLE_ONCE,
            format!("{handle} acked or discarded by {event:?}, which did not deliver it (or it was used already)"),
        )
    }
}

/// Runs [`check_state`] on the state after the step,
/// [`check_recovery_capture`] on the step, the monitor's
/// cross-step rules, and checks that an `Ignored` / `Rejected` event left the
/// state unchanged: the one-call form for tests, proptest, the model, loom and
/// fuzz targets.
pub fn check_all(
    monitor: &mut TaskMonitor,
    before: &TaskState,
    event: &TaskEvent,
    step: &Step,
    after: &TaskState,
) -> Result<(), TaskViolation> {
    let Step { effects, outcome } = step;
    if matches!(outcome, Outcome::Ignored(_) | Outcome::Rejected(_)) && before != after {
        return violation(
            names::IGNORED_IS_UNCHANGED,
            format!("{event:?} changed the state"),
        );
    }
    check_state(after)?;
    check_recovery_capture(before, effects)?;
    monitor.observe(event, effects, outcome)?;
    monitor.check_results(after)
}

#[cfg(test)]
mod tests;
