//! The task reducer. One code path serves the pure [`reduce`] and the
//! in-place [`TaskState::apply`].

use super::*;
use crate::types::{CheckpointId, Millis, StateHandle, Thread};

/// The result of one event: the effects to execute in order and the
/// outcome (what [`TaskState::apply`] returns in place).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// Effects for the host, in order.
    pub effects: Vec<TaskEffect>,
    /// What happened.
    pub outcome: Outcome,
}

/// The pure result of one event: the next state and the [`Step`] that led
/// to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The next state (equal to the input state unless applied / skipped).
    pub state: TaskState,
    /// Effects (in order) and outcome.
    pub step: Step,
}

/// The pure entry point: `state` is left as it is.
#[must_use]
pub fn reduce(state: &TaskState, now: Millis, event: TaskEvent) -> Transition {
    let mut next = state.clone();
    let step = next.apply(now, event);
    Transition { state: next, step }
}

fn max_opt(a: Option<CheckpointId>, b: Option<CheckpointId>) -> Option<CheckpointId> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

fn at_or_below(id: CheckpointId, mark: Option<CheckpointId>) -> bool {
    mark.is_some_and(|m| id <= m)
}

impl TaskState {
    /// The in-place entry point (the same code path as [`reduce`]). The state
    /// is untouched when the outcome is `Ignored` or `Rejected`: every
    /// handler decides those before it mutates anything (checked in debug
    /// builds), so no copy of the state is taken.
    pub fn apply(&mut self, _now: Millis, event: TaskEvent) -> Step {
        #[cfg(debug_assertions)]
        let before = self.clone();
        let mut effects = Vec::new();
        let outcome = self.step(event, &mut effects);
        match outcome {
            Outcome::Applied | Outcome::Skipped(_) => {}
            Outcome::Ignored(_) | Outcome::Rejected(_) => {
                #[cfg(debug_assertions)]
                debug_assert!(
                    *self == before && effects.is_empty(),
                    "a refused task event changed the state or emitted effects: {outcome:?}"
                );
            }
        }
        Step { effects, outcome }
    }

    fn step(&mut self, event: TaskEvent, fx: &mut Vec<TaskEffect>) -> Outcome {
        if let TaskEvent::BarrierReceived { via, .. } = &event {
            match via {
                Thread::Netty | Thread::Task => {}
                Thread::Writer | Thread::Async => {
                    return Outcome::Rejected(TaskError::WrongThread(*via));
                }
            }
        }
        match self.lifecycle {
            Lifecycle::Running | Lifecycle::Finished => {}
            Lifecycle::Closed => return Outcome::Ignored(IgnoreReason::Closed),
            Lifecycle::Failed => {
                return match event {
                    TaskEvent::Close => {
                        self.lifecycle = Lifecycle::Closed;
                        Outcome::Applied
                    }
                    TaskEvent::BarrierReceived { .. }
                    | TaskEvent::TriggerCheckpoint { .. }
                    | TaskEvent::CheckpointMail { .. }
                    | TaskEvent::CancelMarker { .. }
                    | TaskEvent::NotifyAborted { .. }
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
                    | TaskEvent::RecoveryFinished => Outcome::Ignored(IgnoreReason::TaskFailed),
                };
            }
        }
        match event {
            TaskEvent::BarrierReceived { checkpoint, .. } => self.on_barrier(checkpoint, fx),
            TaskEvent::TriggerCheckpoint { checkpoint } => self.on_trigger(checkpoint, fx),
            TaskEvent::EndOfInput => {
                if self.lifecycle == Lifecycle::Finished {
                    return Outcome::Ignored(IgnoreReason::AlreadyFinished);
                }
                self.lifecycle = Lifecycle::Finished;
                Outcome::Applied
            }
            TaskEvent::RecoveryStarted { channels } => self.on_recovery_started(channels),
            TaskEvent::ChannelRecovered => self.on_channel_recovered(),
            TaskEvent::RecoveryFinished => self.on_recovery_finished(),
            TaskEvent::CheckpointMail { checkpoint } => self.on_mail(checkpoint, fx),
            TaskEvent::CancelMarker { checkpoint } => self.on_cancel(checkpoint, fx),
            TaskEvent::NotifyAborted { checkpoint } => self.on_notify_aborted(checkpoint, fx),
            TaskEvent::NotifyComplete { checkpoint } => {
                let out_of_order = self.legacy(LegacyBug::NotifyCompleteOutOfOrder);
                if at_or_below(checkpoint, self.last_completed) && !out_of_order {
                    return Outcome::Ignored(IgnoreReason::StaleNotifyComplete);
                }
                self.last_completed = max_opt(self.last_completed, Some(checkpoint));
                fx.push(TaskEffect::Operators(OperatorNotice::Complete(checkpoint)));
                Outcome::Applied
            }
            TaskEvent::WriterCompleted { checkpoint } => {
                self.on_writer(checkpoint, ResultStatus::Completed)
            }
            TaskEvent::WriterFailed { checkpoint } => self.on_writer(
                checkpoint,
                ResultStatus::Failed(ResultFailure::WriterFailed),
            ),
            TaskEvent::AsyncPartCompleted { checkpoint, handle } => {
                self.on_async_done(checkpoint, handle, true, fx)
            }
            TaskEvent::AsyncPartReused { checkpoint, handle } => {
                self.on_async_done(checkpoint, handle, false, fx)
            }
            TaskEvent::AsyncPartFailed { checkpoint } => {
                if self.async_parts.remove(&checkpoint).is_none() {
                    return Outcome::Ignored(IgnoreReason::NoSuchAsyncPart);
                }
                fx.push(TaskEffect::Coordinator(ToCoordinator::Decline {
                    checkpoint,
                    reason: DeclineReason::SnapshotFailed,
                }));
                Outcome::Applied
            }
            TaskEvent::OperatorFailed => {
                self.fail(FailureReason::OperatorFailed, fx);
                Outcome::Applied
            }
            TaskEvent::Close => {
                self.teardown(fx);
                self.lifecycle = Lifecycle::Closed;
                Outcome::Applied
            }
        }
    }

    fn legacy(&self, bug: LegacyBug) -> bool {
        self.config.semantics.is(bug)
    }

    /// What a trigger or barrier for `id` meets before it may start: a
    /// finished task declines it; the legacy bugs that threw fail the task.
    fn start_refusal(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Option<Outcome> {
        if self.lifecycle == Lifecycle::Finished && self.start_guard(id).is_none() {
            if self.legacy(LegacyBug::TriggerAfterFinishFails) {
                return Some(self.fail_skipping(FailureReason::TriggerAfterFinish, fx));
            }
            return Some(self.decline_start(id, DeclineReason::TaskClosing, fx));
        }
        if self.start_guard(id).is_none() {
            match self.recovery_trigger() {
                RecoveryTrigger::NotReady => {
                    return Some(self.decline_start(id, DeclineReason::TaskNotReady, fx));
                }
                RecoveryTrigger::NoOp if self.recovering_channels() > 0 => {
                    // Legacy only (FLINK-40518): the barrier handler waits
                    // for a recovery barrier the NO_OP trigger never
                    // inserts; the checkpoint is neither taken nor declined.
                    self.last_started = Some(id);
                    return Some(Outcome::Applied);
                }
                RecoveryTrigger::NoOp | RecoveryTrigger::InsertBarriers => {}
            }
        }
        if self.legacy(LegacyBug::ObsoleteBarrierFails)
            && self.last_started.is_some_and(|l| id < l)
            && !at_or_below(id, self.last_executed)
        {
            return Some(self.fail_skipping(FailureReason::ObsoleteBarrier, fx));
        }
        if self.legacy(LegacyBug::AbortedResultBlocksStart)
            && self.start_guard(id).is_none()
            && self
                .results
                .below(id)
                .iter()
                .any(|(_, st)| *st == ResultStatus::Failed(ResultFailure::Aborted))
        {
            return Some(self.fail_skipping(FailureReason::UnfinishedResultAtStart, fx));
        }
        None
    }

    /// Declines a trigger or barrier for `id` before it starts, and tells
    /// downstream, so nobody aligns on it.
    fn decline_start(
        &mut self,
        id: CheckpointId,
        reason: DeclineReason,
        fx: &mut Vec<TaskEffect>,
    ) -> Outcome {
        self.mark_executed(id);
        self.last_started = max_opt(self.last_started, Some(id));
        fx.push(TaskEffect::Downstream(ChannelItem::CancelMarker(id)));
        fx.push(TaskEffect::Coordinator(ToCoordinator::Decline {
            checkpoint: id,
            reason,
        }));
        Outcome::Skipped(SkipReason::Declined(reason))
    }

    fn on_recovery_started(&mut self, channels: u32) -> Outcome {
        match self.recovery {
            None => Outcome::Ignored(IgnoreReason::NotRecovering),
            Some(Recovery::AwaitingChannelState) => {
                self.recovery = (channels > 0).then_some(Recovery::AwaitingConsumption {
                    channels,
                    drained: false,
                });
                Outcome::Applied
            }
            Some(Recovery::AwaitingConsumption { .. } | Recovery::NoOpAwaitingChannels { .. }) => {
                Outcome::Ignored(IgnoreReason::RecoveryAlreadyStarted)
            }
        }
    }

    fn on_channel_recovered(&mut self) -> Outcome {
        match self.recovery {
            None => Outcome::Ignored(IgnoreReason::NotRecovering),
            Some(Recovery::AwaitingChannelState) => {
                Outcome::Ignored(IgnoreReason::RecoveryNotStarted)
            }
            Some(
                Recovery::AwaitingConsumption { channels: 0, .. }
                | Recovery::NoOpAwaitingChannels { channels: 0 },
            ) => Outcome::Ignored(IgnoreReason::NoChannelRecovering),
            Some(Recovery::AwaitingConsumption { channels, drained }) => {
                let channels = channels.saturating_sub(1);
                self.recovery = (channels > 0 || !drained)
                    .then_some(Recovery::AwaitingConsumption { channels, drained });
                Outcome::Applied
            }
            Some(Recovery::NoOpAwaitingChannels { channels }) => {
                let channels = channels.saturating_sub(1);
                self.recovery =
                    (channels > 0).then_some(Recovery::NoOpAwaitingChannels { channels });
                Outcome::Applied
            }
        }
    }

    fn on_recovery_finished(&mut self) -> Outcome {
        match self.recovery {
            None => Outcome::Ignored(IgnoreReason::NotRecovering),
            Some(Recovery::AwaitingChannelState) => {
                Outcome::Ignored(IgnoreReason::RecoveryNotStarted)
            }
            Some(
                Recovery::AwaitingConsumption { drained: true, .. }
                | Recovery::NoOpAwaitingChannels { .. },
            ) => Outcome::Ignored(IgnoreReason::AlreadyDrained),
            Some(Recovery::AwaitingConsumption {
                channels,
                drained: false,
            }) => {
                self.recovery = if channels == 0 {
                    None
                } else if self.legacy(LegacyBug::NoOpWhileChannelsRecover) {
                    // The review window of FLINK-40518's fix: the NO_OP
                    // swap ran when the drain completed, not when the last
                    // channel consumed its recovered input.
                    Some(Recovery::NoOpAwaitingChannels { channels })
                } else {
                    Some(Recovery::AwaitingConsumption {
                        channels,
                        drained: true,
                    })
                };
                Outcome::Applied
            }
        }
    }

    fn fail_skipping(&mut self, reason: FailureReason, fx: &mut Vec<TaskEffect>) -> Outcome {
        self.fail(reason, fx);
        Outcome::Skipped(SkipReason::TaskFailed(reason))
    }

    /// Whether `id` is not newer than every id started or executed.
    fn start_guard(&self, id: CheckpointId) -> Option<IgnoreReason> {
        if self.last_started == Some(id) {
            Some(IgnoreReason::AlreadyStarted)
        } else if at_or_below(id, max_opt(self.last_started, self.last_executed)) {
            Some(IgnoreReason::StaleCheckpoint)
        } else {
            None
        }
    }

    /// `start(id)`: subsume older unfinished results, create the result
    /// unless `id` is already aborted. Returns whether a result was created.
    fn start(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> bool {
        // At most one result is active (`single_active_result`): collected
        // inline, no allocation.
        let older: smallvec::SmallVec<[CheckpointId; crate::ids::IDS_INLINE]> = self
            .results
            .below(id)
            .iter()
            .filter(|(_, st)| !matches!(st, ResultStatus::Failed(_)))
            .map(|(k, _)| *k)
            .collect();
        for old in older {
            if self.legacy(LegacyBug::NewerBarrierDropsResult) {
                // The newer start replaced the older result without failing
                // it: its writer work is never settled.
                self.results.remove(&old);
                continue;
            }
            self.results
                .insert(old, ResultStatus::Failed(ResultFailure::Subsumed));
            fx.push(TaskEffect::Writer(WriterCommand::Abort {
                checkpoint: old,
                cleanup: false,
            }));
        }
        self.last_started = Some(id);
        if self.is_aborted(id) && !self.legacy(LegacyBug::AbortedStartLeaks) {
            return false;
        }
        self.results.insert(id, ResultStatus::InProgress);
        fx.push(TaskEffect::Writer(WriterCommand::Start(id)));
        let channels = self.recovering_channels();
        if self.recovery_trigger() == RecoveryTrigger::InsertBarriers && channels > 0 {
            fx.push(TaskEffect::Writer(WriterCommand::CaptureRecovered {
                checkpoint: id,
                channels,
            }));
        }
        true
    }

    fn on_barrier(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        if let Some(o) = self.start_refusal(id, fx) {
            return o;
        }
        if let Some(r) = self.start_guard(id) {
            return Outcome::Ignored(r);
        }
        self.start(id, fx);
        self.pending_mails.insert(id);
        fx.push(TaskEffect::Mail(id));
        Outcome::Applied
    }

    fn on_trigger(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        if let Some(o) = self.start_refusal(id, fx) {
            return o;
        }
        if let Some(r) = self.start_guard(id) {
            return Outcome::Ignored(r);
        }
        self.start(id, fx);
        self.execute(id, fx)
    }

    fn on_mail(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        if self.pending_mails.remove(&id).is_none() {
            return Outcome::Ignored(IgnoreReason::MailNotScheduled);
        }
        if at_or_below(id, self.last_executed) && !self.legacy(LegacyBug::StaleMailExecutes) {
            if self.results.remove(&id).is_some() {
                fx.push(TaskEffect::Writer(WriterCommand::Abort {
                    checkpoint: id,
                    cleanup: true,
                }));
            }
            return Outcome::Skipped(SkipReason::Stale);
        }
        self.execute(id, fx)
    }

    /// Runs checkpoint `id` (newer than the last executed one) on the task
    /// thread.
    fn execute(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        let was_aborted = self.is_aborted(id);
        self.mark_executed(id);
        let taken = self.results.remove(&id);
        if was_aborted {
            // The legacy start created a result it did not expect to exist,
            // and this skip does not clean it up.
            let cleanup = taken.is_some() && !self.legacy(LegacyBug::AbortedStartLeaks);
            return self.skip(id, cleanup, DeclineReason::AbortedByCoordinator, fx);
        }
        match taken {
            Some(ResultStatus::InProgress | ResultStatus::Completed) => {
                fx.push(TaskEffect::Downstream(ChannelItem::Barrier(id)));
                fx.push(TaskEffect::AsyncPart(AsyncCommand::Start(id)));
                self.async_parts.insert(id);
                Outcome::Applied
            }
            Some(ResultStatus::Failed(f)) => self.skip(id, true, f.into(), fx),
            None => {
                let sem = self.config.semantics;
                if sem.is(LegacyBug::AbortRemovesResult) || sem.is(LegacyBug::CancelForgetsAbort) {
                    // The pre-fix `getAndRemove` found nothing and threw.
                    self.fail(FailureReason::WriteResultMissing, fx);
                    Outcome::Skipped(SkipReason::TaskFailed(FailureReason::WriteResultMissing))
                } else {
                    self.skip(id, false, DeclineReason::WriteResultMissing, fx)
                }
            }
        }
    }

    fn skip(
        &mut self,
        id: CheckpointId,
        had_result: bool,
        reason: DeclineReason,
        fx: &mut Vec<TaskEffect>,
    ) -> Outcome {
        if had_result {
            fx.push(TaskEffect::Writer(WriterCommand::Abort {
                checkpoint: id,
                cleanup: true,
            }));
        }
        if !self.legacy(LegacyBug::SkipWithoutCancelMarker) {
            fx.push(TaskEffect::Downstream(ChannelItem::CancelMarker(id)));
        }
        fx.push(TaskEffect::Coordinator(ToCoordinator::Decline {
            checkpoint: id,
            reason,
        }));
        Outcome::Skipped(SkipReason::Declined(reason))
    }

    /// Advances the last executed id and forgets aborted ids at or below it
    /// (they can never execute).
    fn mark_executed(&mut self, id: CheckpointId) {
        self.last_executed = max_opt(self.last_executed, Some(id));
        while self.aborted.get_min().is_some_and(|min| *min <= id) {
            self.aborted.remove_min();
        }
    }

    fn on_cancel(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        if at_or_below(id, self.last_executed) {
            return Outcome::Ignored(IgnoreReason::StaleCheckpoint);
        }
        if self.results.remove(&id).is_some() {
            fx.push(TaskEffect::Writer(WriterCommand::Abort {
                checkpoint: id,
                cleanup: true,
            }));
        }
        if !self.config.semantics.is(LegacyBug::CancelForgetsAbort) {
            self.mark_executed(id);
        }
        fx.push(TaskEffect::Coordinator(ToCoordinator::Decline {
            checkpoint: id,
            reason: DeclineReason::CancelledOnBarrier,
        }));
        fx.push(TaskEffect::Downstream(ChannelItem::CancelMarker(id)));
        Outcome::Applied
    }

    fn on_notify_aborted(&mut self, id: CheckpointId, fx: &mut Vec<TaskEffect>) -> Outcome {
        if self.async_parts.remove(&id).is_some() {
            fx.push(TaskEffect::AsyncPart(AsyncCommand::Cancel(id)));
            fx.push(TaskEffect::Operators(OperatorNotice::Aborted(id)));
            return Outcome::Applied;
        }
        if at_or_below(id, self.last_executed) {
            // Finished here; only a stale leftover result may still run.
            if !self.fail_result(id, ResultFailure::Aborted, fx) {
                return Outcome::Ignored(IgnoreReason::AlreadyExecuted);
            }
            fx.push(TaskEffect::Operators(OperatorNotice::Aborted(id)));
            return Outcome::Applied;
        }
        if self.is_aborted(id) {
            return Outcome::Ignored(IgnoreReason::AlreadyAborted);
        }
        if self.legacy(LegacyBug::AbortIgnoresNettyStart)
            && self.pending_mails.contains(&id)
            && self.results.contains_key(&id)
        {
            return Outcome::Ignored(IgnoreReason::NotStartedOnTaskThread);
        }
        let legacy_remove = matches!(
            self.config.semantics,
            Semantics::Legacy(LegacyBug::AbortRemovesResult)
        ) && self.results.contains_key(&id);
        if legacy_remove {
            self.results.remove(&id);
            fx.push(TaskEffect::Writer(WriterCommand::Abort {
                checkpoint: id,
                cleanup: true,
            }));
        } else {
            self.fail_result(id, ResultFailure::Aborted, fx);
            self.remember_aborted(id);
        }
        fx.push(TaskEffect::Operators(OperatorNotice::Aborted(id)));
        Outcome::Applied
    }

    /// Fails `id`'s result without removing it, if it is not failed yet.
    fn fail_result(
        &mut self,
        id: CheckpointId,
        why: ResultFailure,
        fx: &mut Vec<TaskEffect>,
    ) -> bool {
        match self.results.get(&id) {
            Some(ResultStatus::InProgress | ResultStatus::Completed) => {
                self.results.insert(id, ResultStatus::Failed(why));
                fx.push(TaskEffect::Writer(WriterCommand::Abort {
                    checkpoint: id,
                    cleanup: false,
                }));
                true
            }
            Some(ResultStatus::Failed(_)) | None => false,
        }
    }

    fn remember_aborted(&mut self, id: CheckpointId) {
        self.aborted.insert(id);
        while self.aborted.len() > self.config.aborted_ids_max {
            match self.aborted.remove_min() {
                Some(evicted) => self.aborted_floor = max_opt(self.aborted_floor, Some(evicted)),
                None => break,
            }
        }
    }

    /// The async part of `checkpoint` finished with `handle`: acknowledged,
    /// always. The coordinator decides what a late ack's state is worth:
    /// it counts towards a checkpoint still pending (a savepoint is never
    /// subsumed, so it may still wait for this ack after a newer checkpoint
    /// completed) and discards what no live checkpoint holds otherwise.
    /// `owns` (the task wrote the state for this checkpoint, rather than
    /// reporting an earlier checkpoint's state again) matters only to the
    /// legacy knob [`LegacyBug::SubsumedPartDiscarded`], which discards an
    /// owned part as subsumed once a newer checkpoint completed.
    fn on_async_done(
        &mut self,
        checkpoint: CheckpointId,
        handle: StateHandle,
        owns: bool,
        fx: &mut Vec<TaskEffect>,
    ) -> Outcome {
        if self.async_parts.remove(&checkpoint).is_none() {
            return Outcome::Ignored(IgnoreReason::NoSuchAsyncPart);
        }
        let subsumed = self.last_completed.is_some_and(|c| c > checkpoint);
        if subsumed && self.legacy(LegacyBug::SubsumedPartDiscarded) {
            // The task cannot tell a savepoint, which the coordinator never
            // subsumes and which then waits for this ack until it expires.
            if owns {
                fx.push(TaskEffect::Discard(handle));
            }
        } else {
            fx.push(TaskEffect::Coordinator(ToCoordinator::Ack {
                checkpoint,
                handle,
            }));
        }
        Outcome::Applied
    }

    fn on_writer(&mut self, id: CheckpointId, to: ResultStatus) -> Outcome {
        match self.results.get(&id) {
            None => Outcome::Ignored(IgnoreReason::NoSuchWriteResult),
            Some(ResultStatus::Completed | ResultStatus::Failed(_)) => {
                Outcome::Ignored(IgnoreReason::WriteResultSettled)
            }
            Some(ResultStatus::InProgress) => {
                self.results.insert(id, to);
                Outcome::Applied
            }
        }
    }

    fn fail(&mut self, reason: FailureReason, fx: &mut Vec<TaskEffect>) {
        fx.push(TaskEffect::Fail(reason));
        self.teardown(fx);
        self.lifecycle = Lifecycle::Failed;
    }

    /// Removes (and fails) every result, cancels every async part, drops the
    /// mailbox.
    fn teardown(&mut self, fx: &mut Vec<TaskEffect>) {
        for id in self.results.keys() {
            fx.push(TaskEffect::Writer(WriterCommand::Abort {
                checkpoint: *id,
                cleanup: true,
            }));
        }
        for id in &self.async_parts {
            fx.push(TaskEffect::AsyncPart(AsyncCommand::Cancel(*id)));
        }
        self.results.clear();
        self.async_parts.clear();
        self.pending_mails.clear();
    }
}
