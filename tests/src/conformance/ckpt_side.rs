//! ckpt's side: drives `ckpt_core`'s coordinator reducer with a sequence's
//! events and normalizes what it decides into a [`Decision`].
//!
//! **Every read of ckpt's events, effects and outcomes is in this file**, so
//! that a change of the effect type (the routed shape being introduced in
//! main) is a change here only.
//!
//! The host this side plays answers every I/O request at once, within the
//! same event, because Flink runs its id counter, metadata write and store
//! write synchronously (inside the trigger call and inside the completing
//! ack): an id allocation gets the next id of a counter that starts at 1
//! (Flink's `StandaloneCheckpointIDCounter`), finalize and store succeed
//! unless the sequence armed a failure (`FailNext*`), and each armed failure
//! is used once, by the next such request.

use std::collections::{BTreeMap, VecDeque};

use ckpt_core::coordinator::{
    AbortReason, AckSlot, Applied, CheckpointOptions, CoordinatorEffect as E, CoordinatorError,
    CoordinatorEvent, CoordinatorState, Ignored, IoAnswer, IoRequest, JobCommand, JobStatus,
    Outcome, Report, RequestId, RestoreSource, Timer, TriggerKind, TriggerRejection,
};
use ckpt_core::route::TaskMessage;
use ckpt_core::{
    AttemptNo, CheckpointId, DeclineReason, IoFailure, JobId, Millis, StateHandle, TaskId,
};

use super::decision::{
    Abort, AbortedMsg, AckClass, Armed, CompleteMsg, Decision, PendingView, RequestEnd, StateView,
    TriggerMsg,
};
use super::event::{Event, Reason, SeqConfig, Status, TriggerAsk};
use super::profile::FlinkProfile;

/// Why ckpt's side could not take an event: the sequence asked for
/// something its host could not do (a generator bug, or a sequence that no
/// longer makes sense after shrinking), or the reducer refused the event as
/// host misuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideError(pub String);

impl std::fmt::Display for SideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a task attempt is, as the sequence generator needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskView {
    /// The current attempt number.
    pub attempt: u32,
    /// Whether it runs.
    pub running: bool,
    /// Whether that attempt finished (`TaskFinished`).
    pub finished: bool,
}

/// ckpt's coordinator and the host around it for one sequence.
#[derive(Clone, Debug)]
pub struct CkptSide {
    state: CoordinatorState,
    profile: FlinkProfile,
    tasks: u32,
    now: u64,
    next_id: u64,
    fail_store: bool,
    fail_finalize: bool,
    fail_id: bool,
    /// User requests: ckpt's request id to the ordinal of the user trigger.
    user: BTreeMap<RequestId, u32>,
    users: u32,
    ended: bool,
}

#[derive(Default)]
struct Acc {
    triggers: Vec<TriggerMsg>,
    hooks: Vec<u64>,
    completes: Vec<CompleteMsg>,
    aborts: Vec<AbortedMsg>,
    completed: Vec<(u64, bool)>,
    aborted: Vec<(u64, Abort)>,
    requests: Vec<(u32, RequestEnd)>,
    discarded: Vec<u64>,
    fail_job: u32,
    ack: Option<AckClass>,
    restored: Option<Option<u64>>,
}

const JOB: JobId = JobId(1);

impl CkptSide {
    /// A fresh coordinator with the sequence's settings under `profile`.
    pub fn new(profile: FlinkProfile, config: &SeqConfig) -> Result<CkptSide, SideError> {
        let state = CoordinatorState::from_settings(profile.settings(config))
            .map_err(|e| SideError(format!("ckpt refused the configuration: {e}")))?;
        Ok(CkptSide {
            state,
            profile,
            tasks: config.tasks,
            now: 0,
            next_id: 1,
            fail_store: false,
            fail_finalize: false,
            fail_id: false,
            user: BTreeMap::new(),
            users: 0,
            ended: false,
        })
    }

    /// The current manual time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The pending checkpoints: `(id, savepoint, tasks not yet acked,
    /// waiting for its master hooks)`.
    pub fn pending(&self) -> Vec<(u64, bool, Vec<u32>, bool)> {
        let wait = self.state.config().tasks_to_wait().to_vec();
        self.state
            .pending()
            .map(|p| {
                let missing = p
                    .acks()
                    .zip(&wait)
                    .filter(|(a, _)| *a == AckSlot::Waiting)
                    .map(|(_, t)| t.0)
                    .collect();
                let hooks = p.phase() == ckpt_core::coordinator::PendingPhase::AwaitingHooks;
                (p.id().0, p.kind().is_savepoint(), missing, hooks)
            })
            .collect()
    }

    /// Ids that recently ended (late messages name them).
    pub fn recent(&self) -> Vec<u64> {
        self.state.recent_ids().map(|c| c.0).collect()
    }

    /// The last id the counter handed out (0: none).
    pub fn last_id(&self) -> u64 {
        self.next_id - 1
    }

    /// Each task's current attempt and whether it runs.
    pub fn tasks(&self) -> Vec<TaskView> {
        (0..self.tasks)
            .map(|t| {
                let s = self.state.task_status(TaskId(t));
                TaskView {
                    attempt: s.map_or(0, |s| s.attempt.0),
                    running: s.is_some_and(|s| s.running),
                    finished: s.is_some_and(|s| s.finished),
                }
            })
            .collect()
    }

    /// Whether the coordinator is shut down.
    pub fn is_shutdown(&self) -> bool {
        self.state.is_shutdown()
    }

    /// Whether a stop-with-savepoint is requested or done (until it fails).
    pub fn is_stopping(&self) -> bool {
        self.state.stop_phase().is_some()
    }

    /// Whether the job finished (every task finished and
    /// `JobCommand::Finish` was emitted).
    pub fn is_job_finished(&self) -> bool {
        matches!(
            self.state.finish_phase(),
            Some(ckpt_core::coordinator::FinishPhase::Finished { .. })
        )
    }

    /// Whether periodic scheduling is on.
    pub fn is_periodic(&self) -> bool {
        self.state.is_periodic_scheduling()
    }

    /// The next timer deadline, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.state.next_deadline().map(|(_, at)| at.0)
    }

    fn attempt_of(&self, task: u32, stale: bool) -> Result<AttemptNo, SideError> {
        let s = self
            .state
            .task_status(TaskId(task))
            .ok_or_else(|| SideError(format!("task {task} is not part of the job")))?;
        if stale {
            s.attempt
                .0
                .checked_sub(1)
                .map(AttemptNo)
                .ok_or_else(|| SideError(format!("task {task} has no attempt before its first")))
        } else {
            Ok(s.attempt)
        }
    }

    /// Applies one event and returns what ckpt decided.
    pub fn apply(&mut self, event: &Event) -> Result<Decision, SideError> {
        let mut acc = Acc::default();
        match event {
            Event::Trigger(ask) => {
                let kind = match ask {
                    TriggerAsk::Checkpoint { forced } => {
                        TriggerKind::Checkpoint { forced: *forced }
                    }
                    TriggerAsk::Savepoint => TriggerKind::Savepoint {
                        target: "savepoints".to_owned(),
                    },
                    TriggerAsk::StopWithSavepoint { terminate } => TriggerKind::StopWithSavepoint {
                        target: "savepoints".to_owned(),
                        drain: *terminate,
                    },
                };
                self.users += 1;
                let ordinal = self.users;
                let outcome =
                    self.feed(CoordinatorEvent::Trigger { kind }, &mut acc, Some(ordinal))?;
                match outcome {
                    Outcome::Applied(Applied::TriggerRejected { reason, .. }) => {
                        acc.requests
                            .push((ordinal, RequestEnd::Failed(rejection(reason))));
                    }
                    // A shut-down coordinator ignores the request; its host
                    // fails the user's future with that reason.
                    Outcome::Ignored(Ignored::Shutdown) => {
                        acc.requests
                            .push((ordinal, RequestEnd::Failed(Abort::Shutdown)));
                    }
                    _ => {}
                }
            }
            Event::Advance { ms } => {
                let target = self.now.saturating_add(*ms);
                // Each firing removes its timer or re-arms it later; the
                // bound only guards against a reducer bug.
                for _ in 0..10_000 {
                    match self.state.next_deadline() {
                        Some((timer, at)) if at.0 <= target => {
                            self.now = self.now.max(at.0);
                            self.feed(CoordinatorEvent::TimerFired { timer }, &mut acc, None)?;
                        }
                        _ => break,
                    }
                }
                self.now = target;
            }
            Event::Ack {
                task,
                checkpoint,
                state,
                stale,
            } => {
                let attempt = self.attempt_of(*task, *stale)?;
                let outcome = self.feed(
                    CoordinatorEvent::Acknowledge {
                        job: JOB,
                        task: TaskId(*task),
                        attempt,
                        checkpoint: CheckpointId(*checkpoint),
                        state: state.map(StateHandle),
                    },
                    &mut acc,
                    None,
                )?;
                acc.ack = Some(ack_class(&outcome));
            }
            Event::Decline {
                task,
                checkpoint,
                reason,
                stale,
            } => {
                let attempt = self.attempt_of(*task, *stale)?;
                self.feed(
                    CoordinatorEvent::Decline {
                        job: JOB,
                        task: TaskId(*task),
                        attempt,
                        checkpoint: CheckpointId(*checkpoint),
                        reason: decline_reason(*reason),
                    },
                    &mut acc,
                    None,
                )?;
            }
            Event::TaskFailed { task, .. } => {
                let attempt = self.attempt_of(*task, false)?;
                self.feed(
                    CoordinatorEvent::TaskFailed {
                        task: TaskId(*task),
                        attempt,
                    },
                    &mut acc,
                    None,
                )?;
            }
            Event::TaskFinished { task } => {
                let attempt = self.attempt_of(*task, false)?;
                self.feed(
                    CoordinatorEvent::TaskFinished {
                        task: TaskId(*task),
                        attempt,
                    },
                    &mut acc,
                    None,
                )?;
            }
            Event::TaskRunning { task } => {
                let attempt = self.attempt_of(*task, false)?;
                self.feed(
                    CoordinatorEvent::TaskRunning {
                        task: TaskId(*task),
                        attempt: AttemptNo(attempt.0 + 1),
                    },
                    &mut acc,
                    None,
                )?;
            }
            Event::Restart => {
                let tasks = self.tasks();
                for (t, v) in (0u32..).zip(&tasks) {
                    if v.running {
                        self.feed(
                            CoordinatorEvent::TaskFailed {
                                task: TaskId(t),
                                attempt: AttemptNo(v.attempt),
                            },
                            &mut acc,
                            None,
                        )?;
                    }
                }
                self.feed(
                    CoordinatorEvent::Restore {
                        source: RestoreSource::Latest {
                            error_if_none: false,
                        },
                    },
                    &mut acc,
                    None,
                )?;
                for (t, v) in (0u32..).zip(&tasks) {
                    self.feed(
                        CoordinatorEvent::TaskRunning {
                            task: TaskId(t),
                            attempt: AttemptNo(v.attempt + 1),
                        },
                        &mut acc,
                        None,
                    )?;
                }
            }
            Event::StopScheduler => {
                self.feed(CoordinatorEvent::StopScheduler, &mut acc, None)?;
            }
            Event::StartScheduler => {
                self.feed(CoordinatorEvent::StartScheduler, &mut acc, None)?;
            }
            Event::Shutdown(status) => {
                let status = match status {
                    Status::Canceled => JobStatus::Canceled,
                    Status::Failed => JobStatus::Failed,
                    Status::Suspended => JobStatus::Suspended,
                };
                self.feed(CoordinatorEvent::Shutdown { status }, &mut acc, None)?;
            }
            Event::FailNextStore => self.fail_store = true,
            Event::FailNextFinalize => self.fail_finalize = true,
            Event::FailNextId => self.fail_id = true,
            Event::HookDone { checkpoint, ok } => {
                let result = if *ok {
                    Ok(())
                } else {
                    Err(IoFailure("injected hook failure".to_owned()))
                };
                self.feed(
                    CoordinatorEvent::MasterHooksDone {
                        checkpoint: CheckpointId(*checkpoint),
                        result,
                    },
                    &mut acc,
                    None,
                )?;
            }
        }
        Ok(self.decision(acc))
    }

    /// The end of the sequence: a shutdown with `CANCELED` unless the
    /// coordinator is shut down already (the harness's `end`).
    pub fn end(&mut self) -> Result<Decision, SideError> {
        self.ended = true;
        if self.state.is_shutdown() {
            return Ok(self.decision(Acc::default()));
        }
        self.apply(&Event::Shutdown(Status::Canceled))
    }

    /// The decision record of the current state with no event (the state
    /// before the first event).
    pub fn snapshot(&self) -> Decision {
        self.decision(Acc::default())
    }

    /// Feeds one event and every I/O answer it leads to; returns the first
    /// event's outcome.
    fn feed(
        &mut self,
        first: CoordinatorEvent,
        acc: &mut Acc,
        user: Option<u32>,
    ) -> Result<Outcome, SideError> {
        let mut queue = VecDeque::from([first]);
        let mut first_outcome = None;
        while let Some(event) = queue.pop_front() {
            let shown = format!("{event:?}");
            let step = self.state.apply(Millis(self.now), event);
            if let Outcome::Rejected(e) = &step.outcome {
                return Err(rejected(e, &shown));
            }
            if first_outcome.is_none() {
                if let Some(ordinal) = user {
                    if let Some(r) = request_of(&step.outcome) {
                        self.user.insert(r, ordinal);
                    }
                }
                first_outcome = Some(step.outcome.clone());
            }
            for effect in step.effects {
                self.effect(effect, acc, &mut queue);
            }
        }
        first_outcome.ok_or_else(|| SideError("no event was fed".to_owned()))
    }

    fn effect(&mut self, effect: E, acc: &mut Acc, queue: &mut VecDeque<CoordinatorEvent>) {
        match effect {
            E::Io {
                request,
                generation: _,
            } => {
                let failure = match &request {
                    IoRequest::AllocateId { request: _ } => std::mem::take(&mut self.fail_id)
                        .then(|| IoFailure("injected id-counter failure".to_owned())),
                    IoRequest::Finalize {
                        checkpoint: _,
                        kind: _,
                        timestamp: _,
                        externalized: _,
                        handles: _,
                    } => std::mem::take(&mut self.fail_finalize)
                        .then(|| IoFailure("injected finalize failure".to_owned())),
                    IoRequest::Store { checkpoint: _ } => std::mem::take(&mut self.fail_store)
                        .then(|| IoFailure("injected store failure".to_owned())),
                    IoRequest::MasterHooks {
                        checkpoint,
                        timestamp: _,
                    } => {
                        acc.hooks.push(checkpoint.0);
                        return;
                    }
                };
                let answer = match failure {
                    Some(f) => IoAnswer::Failed(f),
                    None => {
                        let id = CheckpointId(self.next_id);
                        if request.checkpoint().is_none() {
                            self.next_id += 1;
                        }
                        IoAnswer::Ok { id }
                    }
                };
                queue.push_back(request.answer(answer));
            }
            E::Rpc {
                task,
                attempt,
                message,
                generation: _,
            } => match message {
                TaskMessage::Trigger {
                    checkpoint,
                    timestamp,
                    options,
                } => acc.triggers.push(TriggerMsg {
                    checkpoint: checkpoint.0,
                    task: task.0,
                    attempt: attempt.0,
                    savepoint: matches!(
                        options,
                        CheckpointOptions::Savepoint { .. }
                            | CheckpointOptions::SynchronousSavepoint { .. }
                    ),
                    sync: matches!(options, CheckpointOptions::SynchronousSavepoint { .. }),
                    terminate: matches!(
                        options,
                        CheckpointOptions::SynchronousSavepoint { drain: true, .. }
                    ),
                    ts: Some(timestamp.0),
                    // ckpt's options carry the type and a savepoint's
                    // target only.
                    mode: None,
                }),
                TaskMessage::NotifyComplete {
                    checkpoint,
                    timestamp,
                } => acc.completes.push(CompleteMsg {
                    checkpoint: checkpoint.0,
                    task: task.0,
                    attempt: attempt.0,
                    ts: Some(timestamp.0),
                    // ckpt's message has no such field.
                    last_subsumed: None,
                }),
                TaskMessage::NotifyAborted {
                    checkpoint,
                    latest_completed,
                    timestamp,
                } => acc.aborts.push(AbortedMsg {
                    checkpoint: checkpoint.0,
                    task: task.0,
                    attempt: attempt.0,
                    ts: Some(timestamp.0),
                    latest_completed: self
                        .profile
                        .aborted_carries_latest
                        .then_some(latest_completed.map(|c| c.0)),
                }),
            },
            E::Report(Report::Completed {
                checkpoint,
                request,
                savepoint,
            }) => {
                acc.completed.push((checkpoint.0, savepoint));
                if let Some(o) = self.user.get(&request) {
                    acc.requests.push((*o, RequestEnd::Completed(checkpoint.0)));
                }
            }
            E::Report(Report::Aborted {
                checkpoint,
                request,
                reason,
            }) => {
                acc.aborted.push((checkpoint.0, abort(reason)));
                if let Some(o) = self.user.get(&request) {
                    acc.requests.push((*o, RequestEnd::Failed(abort(reason))));
                }
            }
            E::Report(Report::RequestFailed { request, reason }) => {
                if let Some(o) = self.user.get(&request) {
                    acc.requests.push((*o, RequestEnd::Failed(abort(reason))));
                }
            }
            E::Discard {
                handle,
                generation: _,
                checkpoint: _,
            } => acc.discarded.push(handle.0),
            E::Job(JobCommand::Fail(_)) => acc.fail_job += 1,
            E::Job(JobCommand::Restore {
                checkpoint,
                handles: _,
            }) => {
                acc.restored = Some(checkpoint.map(|c| c.0));
            }
            // Timers are read back from the state (next_deadline); the rest
            // needs nothing from a host whose I/O never stays outstanding
            // (`JobCommand::Stop`, the end of a stop-with-savepoint, has no
            // coordinator counterpart in Flink: its scheduler ends the job;
            // the savepoint's completion and notifications are compared;
            // `JobCommand::Finish` ends a job whose tasks all finished,
            // which Flink's scheduler, not its coordinator, does).
            E::Timer { timer: _, at: _ }
            | E::Job(JobCommand::Stop {
                savepoint: _,
                drain: _,
            })
            | E::Job(JobCommand::ResetIdCounter {
                generation: _,
                next: _,
            })
            | E::Job(JobCommand::Finish {
                final_checkpoint: _,
            })
            | E::Job(JobCommand::ShutdownServices(_))
            | E::Job(JobCommand::ResolveInDoubt {
                checkpoint: _,
                discard_if_stored: _,
                discard_if_not_stored: _,
            }) => {}
        }
    }

    fn decision(&self, mut acc: Acc) -> Decision {
        let wait = self.state.config().tasks_to_wait().to_vec();
        let pending = self
            .state
            .pending()
            .map(|p| {
                let mut acked: Vec<u32> = p
                    .acks()
                    .zip(&wait)
                    .filter(|(a, _)| matches!(a, AckSlot::Acked(_)))
                    .map(|(_, t)| t.0)
                    .collect();
                acked.sort_unstable();
                PendingView {
                    checkpoint: p.id().0,
                    savepoint: p.kind().is_savepoint(),
                    acked,
                    ts: Some(p.timestamp().0),
                }
            })
            .collect();
        let queued = self.state.queued().count() + usize::from(self.state.in_flight().is_some());
        acc.triggers.sort();
        acc.hooks.sort_unstable();
        acc.hooks.dedup();
        acc.completes.sort();
        acc.aborts.sort();
        acc.completed.sort_unstable();
        acc.aborted.sort();
        acc.requests.sort();
        acc.discarded.sort_unstable();
        Decision {
            triggers: acc.triggers,
            hooks: acc.hooks,
            completes: acc.completes,
            aborts: acc.aborts,
            completed: acc.completed,
            aborted: acc.aborted,
            requests: acc.requests,
            discarded: acc.discarded,
            fail_job: Some(acc.fail_job),
            ack: acc.ack,
            restored: acc.restored,
            state: StateView {
                pending,
                queued: u32::try_from(queued).unwrap_or(u32::MAX),
                store: self
                    .state
                    .completed()
                    .map(|c| (c.id().0, c.is_savepoint()))
                    .collect(),
                failure_counter: Some(self.state.counted_failures()),
                periodic: self.state.is_periodic_scheduling(),
                periodic_at: self.state.timer_deadline(Timer::Periodic).map(|m| m.0),
                shutdown: self.state.is_shutdown(),
                armed: Armed {
                    store: self.fail_store,
                    finalize: self.fail_finalize,
                    id: self.fail_id,
                },
            },
        }
    }
}

fn rejected(e: &CoordinatorError, event: &str) -> SideError {
    SideError(format!("ckpt rejected {event} as host misuse: {e}"))
}

fn request_of(outcome: &Outcome) -> Option<RequestId> {
    match outcome {
        Outcome::Applied(
            Applied::AllocatingId { request }
            | Applied::Queued { request, .. }
            | Applied::TriggerRejected { request, .. }
            | Applied::CheckpointTriggered { request, .. }
            | Applied::RequestEnded { request, .. },
        ) => Some(*request),
        _ => None,
    }
}

fn ack_class(outcome: &Outcome) -> AckClass {
    match outcome {
        Outcome::Applied(_) => AckClass::Success,
        Outcome::Ignored(Ignored::DuplicateAck) => AckClass::Duplicate,
        Outcome::Ignored(Ignored::UnknownTask | Ignored::StaleAttempt) => AckClass::UnknownTask,
        Outcome::Ignored(Ignored::CheckpointDiscarded) => AckClass::Discarded,
        Outcome::Ignored(Ignored::LateMessage) => AckClass::Late,
        Outcome::Ignored(Ignored::Shutdown) => AckClass::Shutdown,
        Outcome::Ignored(_) | Outcome::Rejected(_) => AckClass::UnknownCheckpoint,
    }
}

fn decline_reason(r: Reason) -> DeclineReason {
    match r {
        Reason::TaskNotReady => DeclineReason::TaskNotReady,
        Reason::TaskClosing => DeclineReason::TaskClosing,
        Reason::Subsumed => DeclineReason::Subsumed,
        Reason::CancelledOnBarrier => DeclineReason::CancelledOnBarrier,
        Reason::WriterFailed => DeclineReason::WriterFailed,
        Reason::SnapshotFailed => DeclineReason::SnapshotFailed,
    }
}

/// ckpt's decline reason under its Flink name (PROTOCOL.md's table).
pub fn flink_decline_name(r: DeclineReason) -> &'static str {
    match r {
        DeclineReason::TaskNotReady => "CHECKPOINT_DECLINED_TASK_NOT_READY",
        DeclineReason::TaskClosing => "CHECKPOINT_DECLINED_TASK_CLOSING",
        DeclineReason::Subsumed => "CHECKPOINT_DECLINED_SUBSUMED",
        DeclineReason::CancelledOnBarrier => "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER",
        DeclineReason::WriterFailed | DeclineReason::SnapshotFailed => "CHECKPOINT_ASYNC_EXCEPTION",
        DeclineReason::AbortedByCoordinator => "ckpt:AbortedByCoordinator",
        DeclineReason::WriteResultMissing => "ckpt:WriteResultMissing",
    }
}

fn rejection(r: TriggerRejection) -> Abort {
    match r {
        TriggerRejection::PeriodicSchedulerShutdown => Abort::PeriodicSchedulerShutdown,
        TriggerRejection::AlreadyQueued => Abort::AlreadyQueued,
        TriggerRejection::MinimumTimeBetweenCheckpoints => Abort::MinimumTimeBetweenCheckpoints,
        TriggerRejection::NotAllRequiredTasksRunning => Abort::NotAllRequiredTasksRunning,
        TriggerRejection::QueueFull => Abort::TooManyRequests,
        TriggerRejection::TooManySavepoints => Abort::TooManySavepoints,
        TriggerRejection::Stopping => Abort::Stopping,
    }
}

/// ckpt's abort reason in the shared enum.
fn abort(r: AbortReason) -> Abort {
    match r {
        AbortReason::Expired => Abort::Expired,
        AbortReason::Declined(d) => Abort::Declined(flink_decline_name(d).to_owned()),
        AbortReason::Subsumed => Abort::Subsumed,
        AbortReason::TaskFailed => Abort::TaskFailure,
        // Sequences drawn with `--finished-tasks` feed `TaskFinished`.
        // Flink's coordinator is not told of a finish and aborts nothing
        // (`finish-aborts-waiting-checkpoints` takes ckpt's aborts out);
        // the reason it gives for a task that is no longer running is this.
        AbortReason::TaskFinished => Abort::NotAllRequiredTasksRunning,
        AbortReason::Restored => Abort::Failover,
        AbortReason::MasterHooksFailed | AbortReason::IdAllocationFailed => Abort::TriggerFailure,
        AbortReason::FinalizeFailed | AbortReason::StoreFailed => Abort::FinalizeFailure,
        AbortReason::SchedulerStopped => Abort::Suspended,
        AbortReason::Shutdown => Abort::Shutdown,
        AbortReason::Rejected(r) => rejection(r),
    }
}
