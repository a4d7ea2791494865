//! The divergence catalog: every way ckpt's coordinator is known to decide
//! differently from Flink's, by name, with the pattern that recognizes it,
//! what each Flink version does (and the evidence: `tests/flink/FINDINGS.md`
//! scenarios and the jars' methods), what ckpt does, and why.
//!
//! Two classes:
//!
//! * [`Class::Choice`]: a documented, deliberate difference (mostly a
//!   safety choice of ckpt's). Counted, never a failure.
//! * [`Class::Gap`]: a difference ckpt should not have, or needs a
//!   per-version switch in the reducer to match: a proposed fix is given.
//!   Counted, and a failure unless the run allows it (`--allow NAME`).
//!
//! A recognizer looks at one event's two decisions and, when its pattern is
//! there, takes exactly the part it explains out of both (usually by making
//! ckpt's side say what Flink's says, or the other way round) and returns
//! `true`. The comparator applies recognizers until the two decisions are
//! equal; whatever no recognizer takes out is an unexplained divergence.
//!
//! The recognizers live by behaviour: `stop` (stop-with-savepoint),
//! `counting` (the failure counter), `scheduling` (the queue, the periodic
//! timer, master hooks, the plan, the trigger's options), `tasks` (attempts,
//! failures, restarts, late messages) and `store` (completion, savepoints in
//! the store, store failures, shutdown). [`CATALOG`] is the order they run
//! in: a recognizer sees what the ones before it left.

use serde_json::Value;

use super::ckpt_side::TaskView;
use super::decision::{Abort, AckClass, Decision, RequestEnd, TriggerMsg};
use super::event::{Event, SeqConfig, TriggerAsk};
use super::profile::{FlinkProfile, Version};

mod counting;
mod scheduling;
mod stop;
mod store;
mod tasks;

use counting::*;
use scheduling::*;
use stop::*;
use store::*;
use tasks::*;

/// What a recognizer sees.
pub struct Ctx<'a> {
    /// The version compared against.
    pub profile: &'a FlinkProfile,
    /// The sequence's configuration.
    pub config: &'a SeqConfig,
    /// The event (`None`: the end of the sequence).
    pub event: Option<&'a Event>,
    /// Its index.
    pub index: usize,
    /// ckpt's decision for the previous event (its state is the state
    /// before this one).
    pub before_ckpt: &'a Decision,
    /// Flink's, likewise.
    pub before_flink: &'a Decision,
    /// ckpt's tasks after the event.
    pub ckpt_tasks: &'a [TaskView],
    /// ckpt's stop-with-savepoint was requested or done before the event
    /// and still is after it.
    pub ckpt_stopping: bool,
    /// ckpt's job finished (every task finished, `JobCommand::Finish`
    /// emitted) before the event.
    pub ckpt_job_finished: bool,
    /// Flink's response line for the event (its `state` has more than
    /// the decision record: `triggering`, `hooks_waiting`, `tasks`).
    pub flink_line: &'a Value,
    /// Flink's response line for the previous event.
    pub before_flink_line: &'a Value,
}

impl Ctx<'_> {
    fn version(&self) -> Version {
        self.profile.version
    }
    fn gen2(&self) -> bool {
        self.version().is_gen2()
    }
    /// Flink was starting a request before the event (`isTriggering`: a
    /// master hook is outstanding).
    fn flink_was_triggering(&self) -> bool {
        self.before_flink_line
            .pointer("/state/triggering")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
    /// Flink's checkpoints with a master hook outstanding before the event.
    fn flink_hooks_waiting(&self) -> Vec<u64> {
        self.before_flink_line
            .pointer("/state/hooks_waiting")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|h| h.get("checkpoint").and_then(Value::as_u64))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn is_savepoint_before(&self, id: u64) -> bool {
        self.before_ckpt
            .state
            .pending
            .iter()
            .any(|p| p.checkpoint == id && p.savepoint)
    }
}

/// What happens to the comparison of the sequence after an entry matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// The states still agree: go on comparing.
    Continue,
    /// Only the failure counter (and fail-job) are apart: go on, without
    /// comparing them until both counters agree again (after the next
    /// completion both are 0).
    MaskCounter,
    /// The two coordinators' states are apart for good: the sequence is
    /// not compared further.
    Stop,
}

/// Whether a difference is a documented choice or a gap with a fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A deliberate, documented choice of ckpt's.
    Choice,
    /// A gap in ckpt; `fix` is the proposed reducer change.
    Gap {
        /// The proposed change.
        fix: &'static str,
    },
}

/// One catalog entry.
pub struct Entry {
    /// Its name (`--allow` takes it, the summary counts it).
    pub name: &'static str,
    /// Choice or gap.
    pub class: Class,
    /// The event pattern that recognizes it, in words.
    pub pattern: &'static str,
    /// What Flink does, per version, and the evidence.
    pub flink: &'static str,
    /// What ckpt does.
    pub ckpt: &'static str,
    /// Why ckpt does it (or why it is a gap).
    pub why: &'static str,
    /// What follows for the comparison.
    pub after: After,
    /// The recognizer.
    pub recognize: fn(&Ctx<'_>, &mut Decision, &mut Decision) -> bool,
}

impl Entry {
    /// Whether this is a gap (a failure unless allowed).
    pub fn is_gap(&self) -> bool {
        matches!(self.class, Class::Gap { .. })
    }
}

/// The entry called `name`.
pub fn by_name(name: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.name == name)
}

/// Whether a request ended in `d` failed with `why`.
fn request_failed(d: &Decision, why: Abort) -> bool {
    d.requests
        .iter()
        .any(|(_, e)| matches!(e, RequestEnd::Failed(w) if *w == why))
}

fn user_trigger(ctx: &Ctx<'_>, forced: Option<bool>) -> bool {
    match (ctx.event, forced) {
        (Some(Event::Trigger(TriggerAsk::Checkpoint { forced: f })), Some(want)) => *f == want,
        (Some(Event::Trigger(_)), None) => true,
        _ => false,
    }
}

/// Removes from `c.requests` the failure `why` of the newest user request
/// when `f` has no end for it; true if it did.
fn take_request_failure(c: &mut Decision, f: &Decision, why: &Abort) -> bool {
    let Some(pos) = c
        .requests
        .iter()
        .position(|(_, e)| *e == RequestEnd::Failed(why.clone()))
    else {
        return false;
    };
    let ordinal = c.requests[pos].0;
    if f.requests.iter().any(|(o, _)| *o == ordinal) {
        return false;
    }
    c.requests.remove(pos);
    true
}

fn make_state_equal(c: &mut Decision, f: &Decision) {
    c.state = f.state.clone();
}

/// Every entry, in the order the comparator tries them.
pub static CATALOG: &[Entry] = &[
    Entry {
        name: "finished-slot-prefilled",
        class: Class::Choice,
        pattern: "a checkpoint planned after a task finished: ckpt's pending checkpoint shows the finished task's slot as acknowledged, Flink leaves the task out of the tasks to wait for",
        flink: "1.20/2.3 (FLIP-147): DefaultCheckpointPlanCalculator puts finished tasks in the plan's finished list, not in tasksToWaitFor; their operators report finished-on-restore state",
        ckpt: "the plan keeps one slot per task; a finished task's slot is pre-filled (Acked, no state handle) when the checkpoint is triggered",
        why: "one slot per task keeps the ack table's shape fixed for a job; a pre-filled slot waits for nothing, as Flink's omitted task does",
        after: After::Continue,
        recognize: finished_slot,
    },
    Entry {
        name: "no-rpc-to-finished-tasks",
        class: Class::Choice,
        pattern: "a checkpoint completes or is aborted after a task finished: Flink notifies the finished execution too, ckpt does not",
        flink: "1.20/2.3: notifyCheckpointOnComplete / notifyCheckpointAborted go to every task to commit to, finished executions included (the RPC to a finished task is dropped by its TaskExecutor); 1.11 likewise for the tasks it commits to",
        ckpt: "the host sends no RPC to a finished attempt (CoordinatorEvent::TaskFinished): its operators ran to their end and commit nothing more",
        why: "a finished task has nothing left to commit or abort; the RPC would be dropped on arrival",
        after: After::Continue,
        recognize: no_rpc_to_finished,
    },
    Entry {
        name: "finished-job-refuses-triggers",
        class: Class::Choice,
        pattern: "every task finished and the job finished (JobCommand::Finish); the sequence restarts or triggers anyway: ckpt refuses, Flink's coordinator triggers",
        flink: "every version: the coordinator has no finished state of its own; the scheduler ends a job whose executions all finished and restarts nothing",
        ckpt: "FinishPhase::Finished: every later request is rejected (NotAllRequiredTasksRunning); the host shuts down on JobCommand::Finish",
        why: "a finished job ends: a checkpoint after its final one would commit side effects behind the state the job ended on",
        after: After::Stop,
        recognize: finished_job_refuses,
    },
    Entry {
        name: "failed-counts-as-finished-1.20",
        class: Class::Choice,
        pattern: "1.20/2.3: a task finished and another is down: Flink plans the checkpoint (and allocates its id), ckpt refuses it (NotAllRequiredTasksRunning; a periodic firing triggers nothing)",
        flink: "1.20/2.3 (observed here): DefaultCheckpointPlanCalculator counts a FAILED execution as finished (FLINK-40482), so a plan that should wait for the failed task's state leaves it out",
        ckpt: "a task that is down blocks the trigger (LegacyBug::FailedCountsAsFinished reproduces Flink's plan)",
        why: "a checkpoint that leaves out a failed task's state completes without it: the restore loses that task's state (FLINK-40482)",
        after: After::Stop,
        recognize: failed_counts_as_finished,
    },
    Entry {
        name: "finish-aborts-waiting-checkpoints",
        class: Class::Choice,
        pattern: "a task finishes while checkpoints still wait for its ack: ckpt aborts them (uncounted) and notifies the other tasks, Flink keeps them pending",
        flink: "every version: a task's finish (Execution.markFinished) is not reported to the CheckpointCoordinator; a pending checkpoint waiting for it completes if its ack came, else expires (FLINK-33186: a task that finishes between plan and trigger fails the checkpoint, accepted upstream as a limitation)",
        ckpt: "TaskFinished aborts every pending checkpoint still waiting for the task, AbortReason::TaskFinished, counted as no failure",
        why: "the finished task's state at that barrier no longer exists: waiting for it can only end in an expiry, and counting it as a failure (Flink's FLINK-33186) fails jobs whose sources simply finish",
        after: After::Stop,
        recognize: finish_aborts_waiting,
    },
    Entry {
        name: "final-checkpoint-after-all-finished",
        class: Class::Choice,
        pattern: "1.20/2.3: a trigger after every task finished: ckpt plans the job's final checkpoint (every slot pre-filled; a stop-with-savepoint's savepoint likewise) and completes it, waits for its master hooks, or fails it in its finalize or store (with a failure armed); Flink fails the trigger",
        flink: "1.20/2.3: the final checkpoint is taken while the tasks, their input ended, wait in RUNNING for it (they finish after it completes); once every execution is FINISHED the plan calculator refuses to trigger",
        ckpt: "TaskFinished comes first; the first checkpoint planned with every task finished is the final one, and JobCommand::Finish follows its commit",
        why: "ckpt's TaskFinished is Flink's later moment, the task's end after its final checkpoint: a host whose task commits output on notifications (a transactional sink) keeps the task running after its last record until it was notified complete of a checkpoint taken after that record, and only then feeds EndOfInput and reports TaskFinished (the crate docs' recipe, pinned by a scenario test). The job's closing checkpoint, with every slot pre-filled, then records every task as finished, so a later restore reruns none",
        after: After::Stop,
        recognize: final_checkpoint,
    },
    Entry {
        name: "restarted-after-finish-notified",
        class: Class::Choice,
        pattern: "1.20/2.3: a checkpoint planned while a task was finished ends (completes or expires) after that task was started again: ckpt notifies the task's new attempt, Flink does not",
        flink: "1.20/2.3: notifyCheckpointOnComplete / notifyCheckpointAborted go to the executions of the checkpoint's plan (tasksToCommitTo); an attempt deployed after the plan is not among them",
        ckpt: "notifies every task attempt running when the checkpoint ends; the finished task's slot was pre-filled, so its restart aborts nothing",
        why: "the task side takes notifications of checkpoints it never took as it takes any other (notify-complete only moves its last completed id forward, an abort of a checkpoint it never started is remembered and changes nothing), and a restarted attempt learns the newest committed id one checkpoint sooner",
        after: After::Continue,
        recognize: restarted_after_finish_notified,
    },
    Entry {
        name: "trigger-mode-not-carried",
        class: Class::Choice,
        pattern: "a trigger RPC: Flink's options name the alignment (aligned here), the mode (exactly-once) and the location (the default one: the harness gives savepoints no target); ckpt's carry only the type and a savepoint's target",
        flink: "every version: CheckpointOptions carries isUnalignedCheckpoint / getAlignment (1.20/2.3), isExactlyOnceMode and the target location; the harness runs aligned exactly-once checkpoints (Flink refuses max concurrent above 1 with unaligned checkpoints), and a savepoint is always aligned",
        ckpt: "CheckpointOptions::{FullCheckpoint, Savepoint { target }, SynchronousSavepoint { target, drain }}: the task's channel-state writer takes every checkpoint unaligned (savepoints included) and exactly-once; the location is the host's",
        why: "the alignment is the task's in ckpt (its writer lifecycle is the unaligned one). ckpt restores a savepoint only into the same topology, where its in-flight channel state restores like a checkpoint's; a host that rescales from savepoints needs them aligned, which ckpt does not build",
        after: After::Continue,
        recognize: trigger_mode,
    },
    Entry {
        name: "trigger-to-current-attempt",
        class: Class::Choice,
        pattern: "a task's slot of a checkpoint waiting for its master hooks was acknowledged before the trigger RPC went out (an ack ahead of its trigger: a misbehaving source), and a new attempt of the task runs when the hooks answer: ckpt sends the trigger RPC to the task's current attempt, Flink to the older attempt the trigger was planned for",
        flink: "every version: the trigger goes to the executions taken when the trigger started (1.11: the Execution[] of getTriggerExecutions, passed to snapshotTaskState; 1.20/2.3: the CheckpointPlan's getTasksToTrigger), whatever runs since; the harness's gateway accepts every RPC. On a cluster the TaskExecutor answers an RPC for an attempt it no longer runs with a CheckpointException (TASK_CHECKPOINT_FAILURE, 'checkpoint request for unknown task'): 1.11's RpcTaskManagerGateway drops that answer, 1.20/2.3's triggerCheckpointRequest aborts the pending checkpoint with it",
        ckpt: "trigger_tasks addresses each RPC to the task's attempt known when it is sent (after the hooks answered); the pending checkpoint keeps waiting for the attempts it was planned with: the slot acknowledged before stays acknowledged, an ack of the checkpoint from the new attempt is Ignored::UnknownTask (its state handle discarded unless a live checkpoint holds it), a decline from it Ignored::StaleAttempt",
        why: "ckpt addresses every RPC to the task's running attempt (as its notifications, restarted-after-finish-notified); the planned attempt is gone and an RPC to it would be dropped on arrival (1.11) or fail the checkpoint (1.20/2.3). With correct tasks this pattern is not reached: a source acknowledges only after its trigger, and a new attempt while the trigger waits for the hooks aborts the checkpoints still waiting for the old one (task-failure-aborts-at-once); the one slot acknowledged before its trigger is a finished task's pre-filled one, and Flink's plan sends that task no RPC, which this entry does not take. After a source's early ack ckpt's checkpoint may complete with that ack's state for the source and the other tasks' states cut at the new attempt's barrier; Flink's waits for barriers that never come and expires (1.11) or is aborted (1.20/2.3)",
        after: After::Continue,
        recognize: trigger_to_current_attempt,
    },
    Entry {
        name: "last-subsumed-not-carried",
        class: Class::Choice,
        pattern: "a completion in 1.20/2.3 whose notify-complete carries lastSubsumed; ckpt's NotifyComplete has no such field (the value is checked: it is a checkpoint that left ckpt's store in the same event)",
        flink: "1.11: notifyCheckpointComplete(attempt, job, id, ts), no such argument. 1.20/2.3: notifyCheckpointOnComplete(..., lastSubsumedCheckpointId), the id this completion evicted when it was discard-on-subsume, else -1 (FINDINGS.md, notify-args)",
        ckpt: "NotifyComplete { task, attempt, checkpoint, timestamp }",
        why: "Flink's tasks use it to release shared state of the subsumed checkpoint; ckpt's coordinator owns every handle and never discards one a live checkpoint holds, and a task reuses only the handle of a checkpoint it was told completed, so tasks need no subsumption notice",
        after: After::Continue,
        recognize: last_subsumed,
    },
    Entry {
        name: "fail-job-latch",
        class: Class::Choice,
        pattern: "the job is failed on both sides; ckpt's counter stays above the tolerance while Flink's starts from 0 (and may fail the job again before a success)",
        flink: "every version: CheckpointFailureManager resets its counter to 0 when it fails the job and counts again (FINDINGS.md, failure-reset)",
        ckpt: "FailJob once; the counter and the latch stay until a checkpoint completes",
        why: "after FailJob the host restarts the job from the latest checkpoint; a second FailJob while that restart runs would only restart it again. The counter is masked until both sides agree again (after the next completion both are 0)",
        after: After::MaskCounter,
        recognize: fail_job_latch,
    },
    Entry {
        name: "savepoint-failures-not-counted",
        class: Class::Choice,
        pattern: "a savepoint aborted with a reason Flink counts (a counted decline; 1.11 also expiry; 1.20/2.3 also a failed finalize) and only the failure counter / fail-job differ",
        flink: "every version counts an ordinary savepoint's counted decline like a checkpoint's (and fails the job at once for a synchronous one); 1.11 also counts its expiry (FINDINGS.md, failure-savepoints)",
        ckpt: "savepoints never count towards the tolerable failures",
        why: "a savepoint is the user's operation; its failure is reported to the user (RequestFailed) and must not fail a healthy job's periodic checkpointing",
        after: After::MaskCounter,
        recognize: savepoint_not_counted,
    },
    Entry {
        name: "trigger-failures-counted",
        class: Class::Choice,
        pattern: "an id-counter or master-hook failure (TRIGGER_CHECKPOINT_FAILURE) and ckpt's counter is above Flink's",
        flink: "never counted: 1.11 does not call the failure manager for trigger failures before a pending checkpoint exists, 1.20/2.3 call handleCheckpointException, which ignores TRIGGER_CHECKPOINT_FAILURE (FINDINGS.md, failure-trigger)",
        ckpt: "IdAllocationFailed and MasterHooksFailed count",
        why: "an id counter or master hook that keeps failing means no checkpoint can ever complete; counting it fails the job after the tolerable number instead of letting it run unprotected forever",
        after: After::MaskCounter,
        recognize: trigger_failure_counted,
    },
    Entry {
        name: "finalize-failures-counted-1.11",
        class: Class::Choice,
        pattern: "1.11: a failed metadata or store write, and only the counter differs",
        flink: "1.11: FINALIZE_CHECKPOINT_FAILURE is not a counted reason; a failed store write comes after handleCheckpointSuccess reset the counter. 1.20/2.3 count both (FINDINGS.md, failure-io)",
        ckpt: "FinalizeFailed and StoreFailed count",
        why: "1.20 and 2.3 count both; 1.11's not counting a failed metadata or store write let a broken store go unnoticed",
        after: After::MaskCounter,
        recognize: finalize_failure_counting,
    },
    Entry {
        name: "already-queued",
        class: Class::Choice,
        pattern: "a non-forced user trigger that ckpt rejects with AlreadyQueued while Flink queues it",
        flink: "every version queues every request (CheckpointRequestDecider, up to 1000, then TOO_MANY_CHECKPOINT_REQUESTS); there is no 'already queued' rejection (FINDINGS.md, periodic)",
        ckpt: "at most one non-forced request waits; a second is rejected (TriggerRejection::AlreadyQueued)",
        why: "a waiting non-forced request already stands for 'a checkpoint as soon as possible'; a queue of them only replays the same wish later, each a checkpoint nobody waits for",
        after: After::Stop,
        recognize: already_queued,
    },
    Entry {
        name: "periodic-paused-while-queued",
        class: Class::Choice,
        pattern: "periodic scheduling on, a request waits in the queue, ckpt's periodic timer is cancelled and Flink's is armed",
        flink: "every version keeps the periodic timer running while requests wait; each firing queues another periodic request (FINDINGS.md, periodic)",
        ckpt: "the periodic timer is cancelled while a non-forced request waits for a free slot and re-armed one interval after it resumes (the seed's TOO_MANY_CONCURRENT_CHECKPOINTS)",
        why: "with one waiting request standing for the next checkpoint (see already-queued), further firings have nothing to add",
        after: After::Stop,
        recognize: periodic_paused,
    },
    Entry {
        name: "task-failure-aborts-at-once",
        class: Class::Choice,
        pattern: "a task attempt fails (or a new attempt replaces it) under Flink's default scheduler: ckpt aborts the checkpoints waiting for it (TaskFailed), Flink aborts nothing",
        flink: "1.11 calls failUnacknowledgedPendingCheckpointsFor only under legacy scheduling; 1.20 never calls it, 2.3 has no such method; the pending checkpoints wait until the scheduler's restart aborts them (JOB_FAILOVER_REGION) or they expire (FINDINGS.md, task-failure)",
        ckpt: "aborts, at once, every pending checkpoint still waiting for that attempt's ack, and only those",
        why: "such a checkpoint can never complete (the attempt that owes the ack is gone); aborting it at once frees its slot and its state instead of holding both until the timeout; the checkpoints the task already acknowledged can still complete",
        after: After::Stop,
        recognize: task_failure_aborts,
    },
    Entry {
        name: "restart-aborts-as-task-failure",
        class: Class::Choice,
        pattern: "a restart: ckpt aborts the checkpoints waiting for a failed task as TaskFailed, Flink aborts them as JOB_FAILOVER_REGION",
        flink: "every version: SchedulerBase.restoreState aborts every pending checkpoint with JOB_FAILOVER_REGION (FINDINGS.md, task-failure)",
        ckpt: "hears TaskFailed for each stopped attempt first (aborting the checkpoints waiting for it, TaskFailed), then Restore ends the rest (Restored)",
        why: "the same checkpoints end, for the same cause, and neither reason counts; ckpt's reason says which attempt they waited for",
        after: After::Continue,
        recognize: restart_reasons,
    },
    Entry {
        name: "notify-aborted-running-only",
        class: Class::Choice,
        pattern: "Flink sends notify-aborted to a task's current attempt that ckpt knows is not running",
        flink: "every version notifies every task of the commit set whose current execution has a slot, whatever its state: failed attempts too (FINDINGS.md, notification arguments)",
        ckpt: "notifies running attempts only",
        why: "a failed attempt has no task to receive the message; the RPC could only fail",
        after: After::Continue,
        recognize: notify_only_running,
    },
    Entry {
        name: "late-ack-memory",
        class: Class::Choice,
        pattern: "an ack for a checkpoint that recently ended: ckpt calls it late, Flink unknown (1.20/2.3: it ended other than by expiry; 1.11: its store write failed)",
        flink: "1.11 remembers the last 16 completed and aborted ids (not one whose store write failed); 1.20/2.3 keep only recentExpiredCheckpoints, so an ack after a completion, decline or subsumption is unknown (receiveAcknowledgeMessage answers false). The state is discarded either way (FINDINGS.md, late-messages)",
        ckpt: "remembers the last 16 ids that ended, however they ended (Ignored::LateMessage)",
        why: "only the classification differs (the handle is discarded on both sides); a late message after a completion is as expected as one after an expiry",
        after: After::Continue,
        recognize: late_ack_memory,
    },
    Entry {
        name: "shutdown-keeps-periodic-timer",
        class: Class::Choice,
        pattern: "after a shutdown Flink's periodic timer is still armed, ckpt's is not",
        flink: "every version: shutdown() does not cancel the periodic trigger (FINDINGS.md, periodic); its firing does nothing",
        ckpt: "Shutdown cancels every timer",
        why: "a shut-down coordinator has nothing to time",
        after: After::Continue,
        recognize: shutdown_timer,
    },
    Entry {
        name: "periodic-fixed-rate-1.11",
        class: Class::Choice,
        pattern: "1.11, periodic scheduling on both sides: the next periodic firing differs (a periodic request ran later than its firing, e.g. queued until an expiry freed a slot)",
        flink: "1.11: CheckpointCoordinator.scheduleTriggerWithDelay calls timer.scheduleAtFixedRate(new ScheduledTrigger(), initialDelay, baseInterval): firings stay on the fixed grid whenever the request runs. 1.20/2.3 re-arm one interval after each trigger (scheduleTriggerWithDelay per trigger), as ckpt does",
        ckpt: "the periodic timer is re-armed one interval after the periodic checkpoint was triggered",
        why: "matches 1.20/2.3: a late checkpoint does not pull the next one closer than the interval",
        after: After::Stop,
        recognize: periodic_fixed_rate,
    },
    Entry {
        name: "restore-newest-id-1.11",
        class: Class::Choice,
        pattern: "1.11, a restart: the store holds savepoints that completed out of id order; ckpt restores the highest id, Flink the entry added last",
        flink: "1.11: CompletedCheckpointStore.getLatestCheckpoint returns getAllCheckpoints().get(size - 1), the checkpoint added last; a savepoint does not subsume pending savepoints (dropSubsumedCheckpoints skips them), so an older savepoint can complete after a newer one. 1.20/2.3 store no ordinary savepoints and a checkpoint's completion subsumes older pending ones, so completion order is id order there",
        ckpt: "restores the retained checkpoint with the highest id",
        why: "the highest id holds the newest state (its barrier came later); completion order says only which write finished last",
        after: After::Stop,
        recognize: restore_last_added,
    },
    Entry {
        name: "restart-notifies-stopping-attempts",
        class: Class::Choice,
        pattern: "a restart: ckpt sends notify-aborted to old attempts of other tasks while it hears the tasks fail one by one; Flink sends none",
        flink: "every version: the scheduler resets every vertex for a new execution before it aborts the pending checkpoints, and a new attempt without a slot is not notified",
        ckpt: "the first TaskFailed aborts the checkpoints waiting for that task and notifies the attempts still running, which the host stops next",
        why: "ckpt hears of failures one at a time; those messages go to attempts that are being stopped and change nothing",
        after: After::Continue,
        recognize: restart_notifies,
    },
    Entry {
        name: "shutdown-does-not-notify",
        class: Class::Choice,
        pattern: "a shutdown (or the end) aborts pending checkpoints: Flink sends notify-aborted for them, ckpt does not",
        flink: "every version: shutdown aborts them with CHECKPOINT_COORDINATOR_SHUTDOWN through the usual abort path, which notifies the tasks",
        ckpt: "no notify-aborted for AbortReason::Shutdown",
        why: "a coordinator shuts down with its job: the host stops the tasks, a notification can only race with that",
        after: After::Continue,
        recognize: shutdown_silent,
    },
    Entry {
        name: "store-shut-down",
        class: Class::Choice,
        pattern: "after a shutdown Flink's completed store is empty, ckpt still lists its retained checkpoints",
        flink: "every version shuts the store down with the coordinator (the standalone store forgets its checkpoints; the retention policy decides about their files)",
        ckpt: "ShutdownServices tells the host to shut its store down; the reducer's view of what was retained stays for the host's in-doubt and cleanup decisions",
        why: "the store is the host's; nothing is decided from that list after a shutdown",
        after: After::Continue,
        recognize: store_shut_down,
    },
    Entry {
        name: "hooks-serialize-triggers",
        class: Class::Choice,
        pattern: "a master hook of a pending checkpoint is outstanding; a new request: ckpt allocates an id and calls the hooks for it, Flink queues it (and, if the outstanding checkpoint ends within the same advance, triggers it then, with a later timestamp)",
        flink: "every version: the trigger stays in progress until the master hooks (coordinator checkpoints) answered; requests queue meanwhile (FINDINGS.md, hook-expiry; 1.11 even after the checkpoint expired, FLINK-26394)",
        ckpt: "the request leaves flight at id allocation; the next checkpoint's hooks may run while the previous ones' are outstanding",
        why: "the seed's two-lock trigger: the trigger lock covers the id allocation only, so one checkpoint's slow operator coordinator does not hold the next one back; each checkpoint's tasks are triggered only after its own hooks answered, and a host whose coordinators cannot overlap runs the hook calls one at a time",
        after: After::Stop,
        recognize: hooks_serialize,
    },
    Entry {
        name: "savepoint-completion-1.20",
        class: Class::Choice,
        pattern: "1.20/2.3: a savepoint completes: ckpt notifies the tasks, retains it and subsumes older pending checkpoints; Flink does none of these",
        flink: "1.20/2.3: completePendingCheckpoint stores only checkpoints (if !props.isSavepoint()), and cleanupAfterCompletedCheckpoint notifies and drops subsumed checkpoints only for checkpoints and synchronous savepoints (FINDINGS.md, savepoint-store, savepoint-subsumes). 1.11 stores, notifies and subsumes like ckpt",
        ckpt: "completes a savepoint like a checkpoint (finalize, store, notify, subsume older checkpoints) and keeps it until disposed of",
        why: "ckpt follows 1.11: a savepoint is committed, notified to the tasks (their side effects committed) and restorable, so a job never restarts behind it; 1.20 and 2.3 keep an ordinary savepoint outside the job's history and notify nothing, which is what lets them restore an older checkpoint",
        after: After::Stop,
        recognize: savepoint_completion,
    },
    Entry {
        name: "start-scheduler-aborts-pending-1.20",
        class: Class::Choice,
        pattern: "a scheduler start with checkpoints pending: ckpt aborts them (SchedulerStopped), Flink keeps them",
        flink: "1.20/2.3: startCheckpointScheduler only schedules the periodic trigger and leaves pending checkpoints alone; 1.11 calls stopCheckpointScheduler first, as ckpt does (observed by this comparator: no divergence in 1.11)",
        ckpt: "StartScheduler stops first (the seed's stopCheckpointScheduler), aborting every pending checkpoint",
        why: "ckpt follows the seed and 1.11: StartScheduler restarts periodic scheduling (stop, then start), which ends the run of checkpoints started before it; a host that only wants periodic triggering on does not send it while it is on",
        after: After::Stop,
        recognize: start_aborts,
    },
    Entry {
        name: "hook-expiry-wedge-1.11",
        class: Class::Choice,
        pattern: "1.11: a master hook of a checkpoint that is no longer pending (expired, aborted) never answered; Flink queues every later request, ckpt triggers it",
        flink: "1.11 keeps the trigger in progress until the hook answers, even after its checkpoint expired: FLINK-26394 (FINDINGS.md, hook-expiry); 1.20/2.3 clear it on expiry",
        ckpt: "fixed: the trigger is not held by the hooks of a checkpoint that ended (LegacyBug::HookExpiryWedgesTrigger reproduces 1.11)",
        why: "the bug wedges periodic checkpointing for good when an operator coordinator never answers",
        after: After::Stop,
        recognize: hook_expiry_wedge,
    },
    Entry {
        name: "trigger-needs-waited-tasks-1.11",
        class: Class::Choice,
        pattern: "1.11: a task that is waited for but not triggered is not running: ckpt refuses the trigger (NotAllRequiredTasksRunning) or, for a periodic firing, triggers nothing, while 1.11 triggers (and notifies aborted if that checkpoint expires in the same advance)",
        flink: "1.11 checks only the tasks to trigger (FINDINGS.md, tasks-not-running); 1.20/2.3 require every task to wait for RUNNING, as ckpt does",
        ckpt: "every task to trigger and to wait for must be running",
        why: "a checkpoint that waits for an ack no running attempt can send can only expire; 1.20/2.3 made the same change",
        after: After::Stop,
        recognize: trigger_waits_for_all,
    },
    Entry {
        name: "store-failure-reported-complete-1.11",
        class: Class::Choice,
        pattern: "1.11: the store write of a fully acknowledged checkpoint fails: 1.11 completes its future (and resets the failure counter) first, then discards it and notifies aborted; ckpt fails it",
        flink: "1.11: completePendingCheckpoint completes the future and calls handleCheckpointSuccess before addCheckpoint; on its failure it discards the state, sends notify-aborted and throws FINALIZE_CHECKPOINT_FAILURE without telling the failure manager (FINDINGS.md, failure-io). 1.20/2.3 fail the future and count it, as ckpt does",
        ckpt: "StoreFailed: the request fails, the failure counts, the tasks are told it was aborted",
        why: "a checkpoint the store does not hold has not completed: telling the user it did is 1.11's bug",
        after: After::MaskCounter,
        recognize: store_failure_1_11,
    },
    Entry {
        name: "duplicate-ack-state-discarded",
        class: Class::Choice,
        pattern: "a duplicate ack carrying a handle that no checkpoint holds: ckpt discards it, Flink does not",
        flink: "every version: a DUPLICATE ack is ignored and its state left alone (FINDINGS.md, late-messages)",
        ckpt: "the second handle is an orphan: it is discarded unless a live checkpoint holds it",
        why: "nobody else will ever delete it: leaving it leaks the state",
        after: After::Continue,
        recognize: duplicate_discard,
    },
    Entry {
        name: "savepoints-outside-retention-1.11",
        class: Class::Choice,
        pattern: "1.11: a completed savepoint counts towards the store's retention and evicts an older entry that ckpt keeps",
        flink: "1.11 adds savepoints to the store and counts them (with retained=1 a savepoint evicts the previous checkpoint, discarding its state; an evicted savepoint's state is kept) (FINDINGS.md, savepoint-store)",
        ckpt: "retained_max counts checkpoints only; savepoints stay until the user disposes of them (LegacyBug::SavepointExpiresWithRetention reproduces counting them)",
        why: "a savepoint is the user's: it must not push the job's latest checkpoint out of the store, nor be pushed out by checkpoints",
        after: After::Stop,
        recognize: savepoint_retention_1_11,
    },
    Entry {
        name: "expiry-unreported",
        class: Class::Choice,
        pattern: "a checkpoint that expires within the advance that created it (1.11 also: while its master hook is outstanding): it is gone from Flink's pending checkpoints, but the harness reports no abort (and, 1.11 with a hook outstanding, no notification)",
        flink: "every version disposes of the expired checkpoint; the harness's aborted list is read from the checkpoints pending around each timer firing and from completion futures, and a checkpoint created and expired inside one advance (or, 1.11, whose trigger still waits for a hook: FLINK-26394) is not in it",
        ckpt: "aborts it (Expired) and notifies the tasks",
        why: "a reporting limit of the harness (in every version), not a decision: the checkpoint ends on both sides at the same time; ckpt's notification for a checkpoint no task was triggered for is harmless (the task forgets an id it never started)",
        after: After::Continue,
        recognize: expiry_unreported,
    },
    Entry {
        name: "decline-from-other-attempt-ignored",
        class: Class::Choice,
        pattern: "a decline from a task attempt the pending checkpoint was not triggered for (a newer attempt): ckpt ignores it, Flink aborts the checkpoint",
        flink: "receiveDeclineMessage aborts the pending checkpoint with that id whichever attempt sent the decline (observed in 1.11 here)",
        ckpt: "Ignored::StaleAttempt: the checkpoint waits for the attempt it triggered; another attempt's word about it is not news",
        why: "the new attempt never took part in that checkpoint; the old attempt's ack (already counted) stands",
        after: After::Stop,
        recognize: decline_other_attempt,
    },
    Entry {
        name: "stop-suspends-scheduler",
        class: Class::Choice,
        pattern: "a stop-with-savepoint request: ckpt stops periodic scheduling, aborts the checkpoints waiting for acks (Suspended) and drops the queued requests, and if the request is refused resumes periodic scheduling one interval later; Flink's coordinator triggers the synchronous savepoint and leaves the rest as it was (the savepoint's trigger RPCs, its type sync/terminate, stay compared)",
        flink: "every version: CheckpointCoordinator.triggerSynchronousSavepoint(terminate, target) (1.11) / (terminate, target, formatType) (1.20/2.3) only builds forSyncSavepoint properties (SAVEPOINT_SUSPEND / SAVEPOINT_TERMINATE, 1.20/2.3: SavepointType.suspend / terminate) and calls triggerSavepointInternal; the scheduler stops the periodic trigger around it: SchedulerBase.stopWithSavepoint calls checkpointCoordinator.stopCheckpointScheduler() first (aborting the pending checkpoints with CHECKPOINT_COORDINATOR_SUSPEND) and starts it again when the savepoint fails (1.11 startCheckpointScheduler, 1.20/2.3 startCheckpointSchedulerIfSuitable). The harness calls the coordinator method alone",
        ckpt: "TriggerKind::StopWithSavepoint is one reducer event doing what SchedulerBase.stopWithSavepoint does around the coordinator: StopScheduler, then the forced synchronous savepoint (CheckpointOptions::SynchronousSavepoint { drain: terminate }); periodic scheduling resumes (re-armed one interval after now) if it fails",
        why: "ckpt has no scheduler layer outside the reducer: the stop's whole coordinator-side protocol is in it, so a stop cannot race with a periodic checkpoint (FLIP-34 requires the savepoint to be the last one)",
        after: After::Stop,
        recognize: stop_suspends,
    },
    Entry {
        name: "stopping-refuses-triggers",
        class: Class::Choice,
        pattern: "a user trigger (checkpoint, savepoint, another stop), or a periodic firing after the scheduler was started again, while a stop-with-savepoint is requested or done: ckpt rejects it (TriggerRejection::Stopping), Flink's coordinator triggers or queues it (a periodic firing: triggers a checkpoint, or fails it at the id counter, using up an armed id failure that ckpt's refusal never reaches and counting nothing)",
        flink: "every version: the coordinator has no stop state; triggerCheckpoint / triggerSavepoint / triggerSynchronousSavepoint go through the CheckpointRequestDecider as ever (the scheduler refuses them once the job leaves RUNNING: StopWithSavepoint state in 1.20/2.3's adaptive scheduler, SchedulerBase's job status in 1.11)",
        ckpt: "StopPhase::Requested / Stopped: every fresh request, periodic or the user's, is rejected with TriggerRejection::Stopping until the stop fails",
        why: "FLIP-34: the stop's savepoint must be the job's last checkpoint (the sources stop after it); a checkpoint triggered behind it could commit side effects after the savepoint the job restarts from",
        after: After::Stop,
        recognize: stopping_refuses,
    },
    Entry {
        name: "sync-savepoint-failure-fails-job",
        class: Class::Choice,
        pattern: "a savepoint is aborted for a reason savepoint-failures-not-counted does not take (e.g. Suspended, when a scheduler start aborts the stop's savepoint) and Flink fails the job while ckpt does not; only the failure counter / fail-job differ",
        flink: "every version (observed here in each): 1.11: CheckpointCoordinator.abortPendingCheckpoint calls CheckpointFailureManager.handleSynchronousSavepointFailure for a synchronous savepoint, which fails the job for every reason but a pre-flight failure; 1.20/2.3: handleJobLevelCheckpointException / handleTaskLevelCheckpointException take the CheckpointProperties, and a failed synchronous savepoint fails the job there too (seen here with the tolerance not reached)",
        ckpt: "a failed stop-with-savepoint ends the stop (the request fails with its reason, RequestFailed) and periodic scheduling resumes as it was; the job keeps running",
        why: "the stop failed, not the job: the user is told (RequestFailed) and may stop again; failing a healthy job because its stop failed turns a refused stop into a restart",
        after: After::MaskCounter,
        recognize: sync_savepoint_fails_job,
    },
    Entry {
        name: "stop-savepoint-retained-1.20",
        class: Class::Choice,
        pattern: "1.20/2.3: a synchronous savepoint (a stop-with-savepoint) completes and both sides notify the tasks; ckpt's store holds it, Flink's does not (so with a store failure armed, ckpt's store write of it fails: ckpt notifies aborted, discards its state and fails the stop, while Flink, which never writes it, notifies complete)",
        flink: "1.11 adds it to the store like every savepoint. 1.20/2.3: CheckpointCoordinator.completePendingCheckpoint adds only checkpoints to the store (addCompletedCheckpointToStoreAndSubsumeOldest is skipped for savepoints) but sends notifyCheckpointOnComplete for a synchronous savepoint (the tasks finish on it); the job ends and the savepoint's path is returned to the user, who restarts from it explicitly",
        ckpt: "the stop's savepoint is committed to the store (retained, the restore target, latest_completed) before JobCommand::Stop is emitted",
        why: "the job ends on that savepoint: a later start recovers from the store and must restore exactly it (TriggerKind::StopWithSavepoint), not an older checkpoint taken before the stop; the host needs no path handed back out of band",
        after: After::Stop,
        recognize: stop_savepoint_retained,
    },
];
