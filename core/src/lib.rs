//! # ckpt-core
//!
//! Checkpoint coordination for stream processors as two pure, total,
//! deterministic reducers: the JobManager-side **coordinator** (Flink's
//! `CheckpointCoordinator`) and one subtask's **task side** (Flink's
//! `SubtaskCheckpointCoordinator` with its channel-state writer, with
//! FLINK-17869 fixed and the pre-fix behaviour kept as a selectable legacy
//! semantics for the checkers).
//!
//! ## The contract
//!
//! ```text
//! reduce(&state, now, event) -> Transition { state', step: Step { effects, outcome, .. } }
//! ```
//!
//! (The coordinator's `Step` also reports the `clock` it used; the
//! file-merging reducer, [`files::reduce`], takes no `now`.)
//!
//! * **Pure.** No clock, randomness, threads or I/O (enforced by
//!   `core/clippy.toml`). Time is the `now` argument; timers are effects
//!   (`Timer { timer, at }`: arm, re-arm, or disarm with `at: None`) that
//!   come back as `TimerFired` events;
//!   everything that may block or fail is an effect: id allocation, master
//!   hooks, finalize and store are answered by an event; discarding state is
//!   an effect with no answer (see below).
//! * **Total.** Every `(state, event)` pair has an answer. Stale, late,
//!   duplicate, unknown and out-of-order events are `Outcome::Ignored(reason)`
//!   (which need not mean "no effects": a coordinator that ignores a late or
//!   duplicated ack still emits a `Discard` of the state it carries);
//!   host misuse is `Outcome::Rejected(error)` (a `thiserror` type), emits no
//!   effects and leaves the state unchanged but for the coordinator's clock
//!   (`now` moves forward on every event). Nothing panics on input.
//! * **Deterministic.** Same state and event, same output. No hash-ordered
//!   iteration anywhere.
//! * **Persistent.** The coordinator's state is built from copy-on-write
//!   parts behind `Arc`s, a task's from small inline sets
//!   ([`ids`]): `reduce` returns a new state and the old one stays valid and
//!   cheap to keep. The in-place forms (`apply`; for the coordinator also
//!   `apply_into`, which appends the effects to a queue the host lends)
//!   share the same code.
//!
//! ## Driving contract (what a host does)
//!
//! 1. Serialise calls per machine (one event at a time: a lock, an actor, a
//!    single thread). [`host`] is a reference embedding that does exactly this.
//! 2. Pass a `now` that does not go backwards. If it does, the coordinator
//!    uses the last time it saw and reports it in its step's `clock` (the
//!    task reducer does not read `now`).
//! 3. Carry out the effects **in the order returned**, after the call returns
//!    (with `apply_into`, in queue order: a step's effects are appended
//!    behind whatever the queue still held).
//!    Effects that answer (allocate an id, run hooks, finalize, store, timers)
//!    come back later as events; an answer that arrives after its subject is
//!    gone is ignored, so cancellation races are harmless.
//! 4. Read the outcome: `Applied` did something, `Ignored` tells you why the
//!    event was stale, late, duplicate or unknown, `Rejected` is a bug in the
//!    host (no effects); the task side also answers `Skipped` (the
//!    checkpoint was declined or cleaned up). Carry out the step's effects
//!    whatever the outcome: an ignored ack may carry a `Discard`, a skipped
//!    checkpoint its decline and cleanup.
//!
//! The per-machine tables of effects are in [`coordinator`] and [`task`].
//!
//! ## The whole loop, wired
//!
//! A coordinator and two tasks (task 0 is the source the coordinator
//! triggers, its barrier flows to task 1). Each effect names the part of the
//! host that carries it out ([`route`] has the table): every I/O request is
//! answered at once, writers and async parts complete at once, and when
//! nothing else is left the host sleeps until
//! [`next_deadline`](coordinator::CoordinatorState::next_deadline). A real
//! host has one mailbox per task and threads for netty, the writer and the
//! async parts ([`host`], `host::runtime`); here one FIFO stands for all of
//! them. A task's acknowledgement ([`route::ToCoordinator`]) carries only
//! the checkpoint and the handle: [`route::ToCoordinator::event`] adds the
//! job, task and attempt the host knows the task by.
//!
//! ```
//! use std::collections::VecDeque;
//!
//! use ckpt_core::coordinator::{
//!     CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, IoAnswer,
//! };
//! use ckpt_core::task::{AsyncCommand, TaskConfig, TaskEffect, TaskEvent, TaskState, WriterCommand};
//! use ckpt_core::{AttemptNo, CheckpointId, JobId, Millis, StateHandle, TaskId};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let job = JobId(1);
//! let mut coord = CoordinatorState::from_settings(CoordinatorSettings::with_tasks(job, 2))?;
//! let mut tasks = vec![TaskState::new(TaskConfig::default())?; 2];
//! let attempt = AttemptNo(0); // every task runs its first attempt
//! let mut to_coord = VecDeque::from([CoordinatorEvent::StartScheduler]);
//! let mut to_tasks: VecDeque<(TaskId, TaskEvent)> = VecDeque::new();
//! let (mut now, mut next_id, mut next_handle) = (Millis(0), 1, 100);
//!
//! // Run until both tasks were told that checkpoint 2 completed (commit).
//! while tasks.iter().any(|t| t.last_completed() < Some(CheckpointId(2))) {
//!     if let Some(event) = to_coord.pop_front() {
//!         for effect in coord.apply(now, event).effects {
//!             match effect {
//!                 CoordinatorEffect::Io { request, generation: _ } => {
//!                     let id = CheckpointId(next_id);
//!                     if request.checkpoint().is_none() {
//!                         next_id += 1; // an id allocation: the counter moves on
//!                     }
//!                     to_coord.push_back(request.answer(IoAnswer::Ok { id }));
//!                 }
//!                 // The RPC goes to the attempt it names, else nowhere; the
//!                 // task's mailbox gets the event the message becomes.
//!                 CoordinatorEffect::Rpc { task, attempt: a, message, generation: _ } if a == attempt => {
//!                     to_tasks.push_back((task, message.event()));
//!                 }
//!                 // Timers are read back with next_deadline(); discards,
//!                 // job commands and reports need nothing in this story.
//!                 CoordinatorEffect::Rpc { task: _, attempt: _, message: _, generation: _ }
//!                 | CoordinatorEffect::Timer { timer: _, at: _ }
//!                 | CoordinatorEffect::Discard { generation: _, checkpoint: _, handle: _ }
//!                 | CoordinatorEffect::Job(_)
//!                 | CoordinatorEffect::Report(_) => {}
//!             }
//!         }
//!     } else if let Some((task, event)) = to_tasks.pop_front() {
//!         let Some(state) = tasks.get_mut(task.0 as usize) else { continue };
//!         for effect in state.apply(now, event).effects {
//!             match effect {
//!                 TaskEffect::Mail(checkpoint) => {
//!                     to_tasks.push_back((task, TaskEvent::CheckpointMail { checkpoint }));
//!                 }
//!                 TaskEffect::Downstream(item) if task == TaskId(0) => {
//!                     to_tasks.push_back((TaskId(1), item.event()));
//!                 }
//!                 TaskEffect::Writer(WriterCommand::Start(checkpoint)) => {
//!                     to_tasks.push_back((task, TaskEvent::WriterCompleted { checkpoint }));
//!                 }
//!                 TaskEffect::AsyncPart(AsyncCommand::Start(checkpoint)) => {
//!                     next_handle += 1;
//!                     let handle = StateHandle(next_handle);
//!                     to_tasks.push_back((task, TaskEvent::AsyncPartCompleted { checkpoint, handle }));
//!                 }
//!                 TaskEffect::Coordinator(message) => {
//!                     to_coord.push_back(message.event(job, task, attempt));
//!                 }
//!                 TaskEffect::Downstream(_)
//!                 | TaskEffect::Writer(WriterCommand::Abort { checkpoint: _, cleanup: _ })
//!                 | TaskEffect::Writer(WriterCommand::CaptureRecovered { checkpoint: _, channels: _ })
//!                 | TaskEffect::AsyncPart(AsyncCommand::Cancel(_))
//!                 | TaskEffect::Discard(_)
//!                 | TaskEffect::Operators(_)
//!                 | TaskEffect::Fail(_) => {}
//!             }
//!         }
//!     } else {
//!         // Nothing to do: sleep until the next timer (the periodic trigger).
//!         let (timer, at) = coord.next_deadline().ok_or("no timer armed")?;
//!         now = at;
//!         to_coord.push_back(CoordinatorEvent::TimerFired { timer });
//!     }
//! }
//! assert_eq!(coord.completed().map(|c| c.id()).collect::<Vec<_>>(), [CheckpointId(2)]);
//! assert!(tasks.iter().all(|t| t.write_results().is_empty())); // nothing left behind
//! # Ok(())
//! # }
//! ```
//!
//! ## When an effect with no answer fails
//!
//! Most effects are answered by an event; a few are not, and their failure
//! is never reported back to a reducer, because the reducer no longer needs
//! anything from them:
//!
//! * **`Discard`** (either machine): the reducer has already let go
//!   of the handle, and nothing refers to it. A failed delete only leaks
//!   storage: log it and retry later, or leave it to a cleaner (what it
//!   may delete is below, "What a cleaner may delete"). Never delete a handle a
//!   stored checkpoint holds; a store that refuses such a discard (the
//!   async host's durability guard) has found a bug, not a transient error.
//!   The coordinator discards a handle at most once per step, but a handle
//!   delivered again after it let go of it (a network-duplicated late ack)
//!   is discarded again, so deletes must be idempotent.
//! * **RPC sends** (an `Rpc`: trigger, notify complete, notify aborted; a
//!   task's ack or decline): drop the message, as a lossy network would.
//!   A lost trigger or ack ends as the checkpoint's timeout (`Expired`,
//!   counted towards the tolerable failures unless it is a savepoint's:
//!   no savepoint failure counts, as in Flink); a lost notify-complete means
//!   the task commits at the next one (`OperatorNotice::Complete` of a
//!   later id covers the earlier ones, as a two-phase-commit sink commits
//!   every pending transaction up to it); a lost notify-aborted means the
//!   task may still finish that checkpoint (a newer one or a cancel marker
//!   also ends it), and its late ack is answered with a `Discard` of
//!   the state it carries. If the send
//!   failed because the attempt is gone, report
//!   `TaskFailed { task, attempt }`: that is what aborts the checkpoints
//!   still waiting for it.
//! * **Reports** (`Report::Completed`, `Aborted`, `RequestFailed`) and
//!   `JobCommand::ShutdownServices`: informational; log a failure.
//! * **`JobCommand::ResetIdCounter`** is the exception: a counter that could not be
//!   reset may hand out an id again, so stop this coordinator and recover a
//!   new one from the store (below) rather than go on.
//!
//! ## When the store cannot tell whether it committed
//!
//! `IoAnswer::Failed` to a `Finalize` or `Store` must mean "definitely not
//! stored": the coordinator then discards the checkpoint's state, and a
//! later `Restore { Latest }` picks an older checkpoint. When the host
//! cannot tell (the answer of its commit was lost, or the commit's sync
//! failed after the metadata was in place), it answers nothing, carries
//! out nothing more, and stops this coordinator as if it had crashed,
//! without `Shutdown` (whose `ResolveInDoubt` would have it delete one list
//! on a guess); a new coordinator recovers from the store (below), which
//! settles it. The reference store tells the three cases apart
//! (`host::store::FileStore::store`: `Ok`, `StoreError::OutcomeUnknown`,
//! any other error), and the async host's driver halts on the second
//! (`host::runtime::HostStats::halted`).
//!
//! ## After `JobCommand::Fail`, step by step
//!
//! `JobCommand::Fail` (too many consecutive counted checkpoint failures) is emitted
//! once; the coordinator keeps running and waits for the host. A host may
//! stop the job for good (`Shutdown { status: Failed }`), or run on as if
//! it had not heard it (what the model's world does once its
//! `--job-failovers` budget is spent: the coordinator goes on
//! checkpointing, and `Fail` comes again only after a completion has reset
//! the count, or from a new coordinator recovered from the store). What the async host and the model's world do otherwise,
//! and what every host that fails the job over should do:
//!
//! 1. Stop every running task attempt. Messages still in flight from them
//!    are stale from now on (the coordinator ignores an old attempt's acks).
//! 2. Send `TaskFailed { task, attempt }` for each stopped attempt and
//!    carry out the effects: the checkpoints waiting for those attempts are
//!    aborted, their acknowledged state discarded, their futures failed.
//! 3. Send `Restore { source: Latest { error_if_none: false } }`. Every
//!    checkpoint of the old run that is not out for storing ends
//!    (`AbortReason::Restored`). If a finalize or store is outstanding, the
//!    restore waits for its answer (`Applied::RestoreDeferred`): that
//!    checkpoint may be committed, and restoring an older one would rewind
//!    the job behind it. Keep answering I/O as usual.
//! 4. Wait for `JobCommand::Restore { checkpoint, handles }` (in the same step, or
//!    in the step that answers the outstanding I/O): the latest retained
//!    checkpoint, the highest id ([`commit::latest`]), or `None`: start from
//!    scratch. Until then no checkpoint can be triggered. If the step that
//!    answers the outstanding I/O also carries `JobCommand::Stop` (that I/O
//!    was a stop-with-savepoint's), the stop wins: end the job as `Stop`
//!    says and skip step 5; the `Restore` after it names the stop's
//!    savepoint, which a later start recovers from the store. So does
//!    `JobCommand::Finish` (that I/O was the final checkpoint's, every task
//!    had finished): end the job as finished; the `Restore` after it names
//!    the final checkpoint. The world checks the finish's rule where it
//!    restarts tasks (`invariants::coordinator::check_restart`, the
//!    invariant `no-restart-after-finish`).
//! 5. Start a fresh [`task::TaskState::new`] per task under the next
//!    attempt number, its operators restored from those handles, and send
//!    `TaskRunning { task, attempt }` for each; triggering resumes on the
//!    next periodic timer. The failure count resets with the next completed
//!    checkpoint.
//!
//! ## A shutdown in doubt: `ResolveInDoubt`
//!
//! A shutdown while a finalize or store is outstanding hands that
//! checkpoint over: no coordinator will hear the answer. Wait until the
//! operation has ended, read the store, and delete exactly one list (each
//! already leaves out the handles another checkpoint still needs): the store
//! holds the checkpoint, `discard_if_stored` (the state of the checkpoints
//! its commit pushed out of retention); it does not, its metadata, then
//! `discard_if_not_stored`.
//!
//! ## Recovery after a crash, or a new leader
//!
//! The durable truth is the completed-checkpoint store and the id counter,
//! not a reducer's state. A new coordinator, in this order:
//!
//! 1. Claims a generation above every earlier leader's in the store
//!    (create-if-absent), so that a deposed leader that keeps running is
//!    refused from then on: every write to the store, the id counter and the
//!    state files is made on behalf of [`coordinator::CoordinatorState::generation`],
//!    and a write on behalf of an older generation is refused. A leader's
//!    RPCs go to task attempts it deployed; a deposed leader's reach none.
//! 2. Cleans up what the store does not reference: half-written metadata,
//!    and state files no stored checkpoint holds (the old leader's pending
//!    state, acks still in flight), as `host::store::FileStore::open` does.
//! 3. Takes its first event `Recover { checkpoints, last_id, generation }`
//!    from the store (commit order, oldest first), then `Restore { Latest }`
//!    (answered at once: nothing is in flight) or `Savepoint { .. }`, then
//!    starts fresh task attempts from `JobCommand::Restore`. A fresh
//!    coordinator already counts attempt 0 of every task as running: deploy
//!    attempt 0 and send nothing for it (as the async host does; a
//!    `TaskRunning` for attempt 0 is `Ignored(StaleAttempt)`), or deploy a
//!    higher attempt and send `TaskRunning` for that one.
//!
//! The reducers' states also serialize with serde as validated, versioned
//! snapshots, for a hand-over or a debugger, not as a replacement for the
//! store: see [`snapshot`].
//!
//! ## Starting from a savepoint
//!
//! `Restore { source: Savepoint { checkpoint, handles } }` makes the
//! savepoint the coordinator's latest completed checkpoint, and tasks
//! restored from it may commit the output it holds (a two-phase-commit
//! sink commits its pending transactions on restore). So a crash after it
//! must recover that savepoint, not an older checkpoint. In this order
//! (the model's world, `--savepoint-restore`, does it on a fresh
//! coordinator):
//!
//! 1. Start the coordinator as usual: a fresh one for a new job, or
//!    `Recover` from the store (above), which may clean up files the store
//!    does not reference, so put the savepoint's files in place after it.
//!    Do not send `StartScheduler` yet: the reducer takes the savepoint
//!    only with nothing pending and no id request out, and only with an
//!    id above the last one handed out (`Recover`'s `last_id`) and below
//!    `u64::MAX`; anything else is `Rejected(SavepointRestoreConflict)`
//!    (or `IdOverflow`). **Check the id before step 2**: a store takes any
//!    new savepoint id, and ids are used up without being stored (every
//!    aborted checkpoint's), so a savepoint id above every stored id may
//!    still be at or below `last_id`; once stored it is the store's latest,
//!    which the reference store will not dispose of
//!    (`StoreError::LatestSavepoint`), and a later start would restore a
//!    savepoint the coordinator refused. Such a savepoint cannot be
//!    started from this store: start the job on a new store. (A savepoint
//!    the store already holds, whose id is the highest, is
//!    `Restore { Latest }`'s.)
//! 2. Add the savepoint to the completed-checkpoint store (its id, its
//!    handles, marked a savepoint), durably. This is a commit: the store's
//!    retention runs, as the coordinator's does at step 3.
//! 3. Send the `Restore`. With step 1's check and nothing else sent since,
//!    it is not rejected (if a host's own bug gets it rejected, the store
//!    and the coordinator may disagree on the latest: stop and recover a
//!    new coordinator from the store, which restores the store's latest).
//!    Carry out its effects in order: first
//!    `JobCommand::ResetIdCounter` (the counter moves past the savepoint's
//!    id; if that fails, stop and recover a new coordinator from the
//!    store, whose `last_id` must be at least every id it holds, the
//!    savepoint's included, or `Recover` refuses it,
//!    `RecoverProblem::IdAboveCounter`; the reference store's is,
//!    `host::store::Recovery::last_id`, and that recovery restores the
//!    savepoint as the latest), then any `Discard`s (the savepoint counts
//!    as a commit for retention: checkpoints beyond `retained_max` that a
//!    `Recover` brought are evicted, as the store evicted them when it
//!    committed the savepoint), then start the tasks from
//!    `JobCommand::Restore`.
//! 4. `StartScheduler`.
//!
//! ## Savepoints are the user's
//!
//! A savepoint completes like a checkpoint (finalize, store, notify), but
//! retention never discards it: `retained_max` counts checkpoints only, and
//! the coordinator keeps every savepoint (at most `savepoints_max`, beyond
//! which a savepoint trigger is refused) until the user disposes of it:
//! remove it from the store first, then send `DisposeSavepoint`, whose
//! `Discard`s delete what no other checkpoint holds. A savepoint may
//! commit after a newer checkpoint ([`commit`]); "latest" is always the
//! highest id.
//!
//! The coordinator never subsumes a savepoint, but a task cannot tell a
//! savepoint from a checkpoint (its events carry no options), and two
//! races follow when a savepoint runs beside a newer checkpoint (a forced
//! one, or `max_concurrent` above 1):
//!
//! * **A part finished after the newer checkpoint completed** is still
//!   acknowledged ([`task`]'s phase 4): the coordinator counts the ack
//!   towards the savepoint, still pending, and discards the state of a
//!   checkpoint it already subsumed (unless a live checkpoint holds the
//!   handle). The world checks that no task deletes its part of a
//!   checkpoint the coordinator still waits for
//!   (`invariants::coordinator::check_task_discard`);
//!   `LegacyBug::SubsumedPartDiscarded` drops such a part as subsumed, and
//!   the savepoint waits until it expires.
//! * **A task that starts the newer checkpoint before it executed the
//!   savepoint** (the newer barrier arrives before the savepoint's
//!   checkpoint mail runs) fails the savepoint's write result as subsumed,
//!   as it does for any older unexecuted checkpoint (every checkpoint here
//!   is unaligned), and declines it (`DeclineReason::Subsumed`): the
//!   savepoint is aborted (`Report::Aborted` with `Declined(Subsumed)`,
//!   not counted as a failure) and the user may trigger it again. Sources
//!   execute on their trigger and never lose a savepoint this way;
//!   downstream tasks can.
//!
//! So a savepoint beside newer checkpoints completes or is declined, never
//! hangs and never loses state. To be sure it completes, trigger nothing
//! else while it runs (`max_concurrent` 1 refuses periodic triggers
//! meanwhile; do not force a checkpoint).
//!
//! ## Finished tasks (FLIP-147)
//!
//! A task whose input ended (`TaskEvent::EndOfInput`) and that ran
//! everything it had started may finish: the host reports
//! `CoordinatorEvent::TaskFinished { task, attempt }` and from then on
//! sends that attempt no RPC (and reports no `TaskFailed` for it). With
//! `CoordinatorSettings::checkpoints_after_tasks_finish` on (Flink's
//! default since 1.15) a checkpoint's plan leaves the finished tasks out:
//! their slots hold their final state (no state handle) and, once every
//! task to trigger finished, the tasks still running are triggered
//! themselves. A checkpoint still waiting for a task when it finishes is
//! aborted (`AbortReason::TaskFinished`, not a failure: FLINK-33186 failed
//! the job). The first checkpoint triggered once every task finished is the
//! final one; when the store committed it, `JobCommand::Finish` tells the
//! host to end the job (`Shutdown { status: Finished }`), so what a later
//! recovery restores records every task as finished. Off (Flink before
//! 1.14), no checkpoint is triggered once a task finished, and the job
//! finishes with its last task, with no final checkpoint.
//!
//! `EndOfInput` and `TaskFinished` are Flink's *end* of a task, after its
//! final checkpoint, not the end of its data: the task takes no checkpoint
//! after `EndOfInput` (it declines them, `TaskClosing`) and gets no
//! notification after `TaskFinished`. So a task that commits output when
//! a checkpoint completes (a transactional sink) must not be finished at
//! its last record: the host keeps it running (its triggers and barriers
//! taken as usual) until its operators were notified complete
//! (`OperatorNotice::Complete(c)`) of a checkpoint `c` taken after that
//! record, commits there, and only then feeds `EndOfInput` and reports
//! `TaskFinished`. Once its upstream tasks finished, the plans trigger it
//! directly, so that checkpoint comes without a source. A task that
//! commits nothing on notifications may finish at its last record.
//!
//! ## Tasks in recovery (checkpointing during recovery)
//!
//! A host that restores an unaligned checkpoint's in-flight channel state
//! deploys the attempt with `TaskConfig::replays_channel_state` and reports
//! its replay to the task: `RecoveryStarted { channels }` when the state was
//! fetched, `ChannelRecovered` per input channel that consumed its part and
//! `RecoveryFinished` when the drainer pushed everything, in whatever order
//! they happen. Until the fetch every checkpoint is declined as not ready;
//! while channels still replay, a checkpoint's writer gets
//! `WriterCommand::CaptureRecovered` (insert a recovery barrier into each such
//! channel and persist what lies before it) when
//! `TaskConfig::checkpoint_during_recovery` is on (Flink 2.x), and the
//! checkpoint is declined as not ready when it is off. The [`task`] module
//! docs give the phases; a host that restores no channel state never sets
//! the flag and never sees these events or that command.
//!
//! ## Shared state (incremental state backends)
//!
//! A task whose state did not change may report an earlier checkpoint's
//! handle again (`TaskEvent::AsyncPartReused`) instead of writing a new
//! file. The coordinator then never discards a handle while any live
//! checkpoint holds it, and every discard list and hand-over leaves shared
//! handles out. The host rule: reuse only the handle of the task attempt's
//! own last acknowledgement, only once the task was notified that
//! checkpoint completed, only for a newer checkpoint, and never from or for
//! a savepoint (savepoints are self-contained: the user may dispose of one
//! at any time).
//!
//! ## Shared files (file merging)
//!
//! A host that merges small state files (Flink 1.20's file merging,
//! FLIP-306) writes each logical state handle as a segment of a shared
//! physical file. The reducers still decide, per logical handle, when it
//! goes (their `Discard` effects); [`files`] is the third pure reducer, the
//! file-merging manager, that maps handles to physical files and counts
//! references: the host sends it `SegmentWritten` for each new handle,
//! `Discard` for every discard it carries out (a repeat is ignored, typed:
//! a logical handle is released once, the FLINK-36125 fix) and `Restored`
//! after a restore (no file of before takes a new segment: ckpt's reading of
//! FLINK-35803), and deletes a physical file only on the manager's
//! `FilesEffect::Delete`: once, after its last reference.
//! [`invariants::files`] checks it ([`invariants::checked::files_step`]
//! and the file ledger). The model's world does exactly this with
//! `--shared-files`.
//!
//! ## What a cleaner may delete
//!
//! A file no checkpoint the store holds references, that
//! [`coordinator::CoordinatorState::owned_handles`] does not list (pending
//! acks, retained checkpoints and savepoints, a checkpoint in doubt), **and
//! whose ack can no longer reach the coordinator**: an ack's file whose
//! message the host knows is lost (the attempt that wrote it is stopped and
//! nothing it sent is delivered any more), one the coordinator refused
//! (`Ignored` after shutdown, `Rejected`), and at a start, before any task
//! runs, every file the store does not reference (as
//! `host::store::FileStore::open` does). `owned_handles` lists only acks
//! the coordinator has applied: a file whose ack is still on its way, or
//! not yet sent, is listed nowhere, and its checkpoint may still complete
//! with it, so "referenced by nothing" alone is not enough while tasks
//! run.
//!
//! ## Methods by kind (quinn-proto style)
//!
//! * Construction: [`coordinator::CoordinatorConfig::new`] (validation),
//!   [`coordinator::CoordinatorState::new`], [`task::TaskState::new`].
//! * Events: [`coordinator::reduce`] / [`coordinator::CoordinatorState::apply`],
//!   [`task::reduce`] / [`task::TaskState::apply`], [`files::reduce`] /
//!   [`files::FilesState::apply`] (shared files).
//! * Inspection: the accessors on the states (pending checkpoints, timers,
//!   queue, write results, ...).
//! * Checking: [`invariants`] (used by every test layer, the model checker,
//!   loom tests and fuzz targets).
//! * Replay: [`trace`] (JSON-lines traces of events with their `now`).
//!
//! ## Hosts
//!
//! * [`host`] (feature `host`, default): `TaskHost` / `CoordinatorHost`, the
//!   reducers behind one `Mutex` each, driven by the runtime's own threads.
//! * `host::runtime` (feature `async-host`): the reducers embedded in tokio,
//!   with the durable file-system checkpoint store `host::store`, user
//!   operators, global failover, leader fencing and crash recovery;
//!   `host::pipeline` holds the operators and the output check of a
//!   reference exactly-once pipeline, which the `pipeline` example runs
//!   (`cargo run --release -p ckpt-core --features async-host --example
//!   pipeline -- DIR`).

#![forbid(unsafe_code)]
// docs.rs (`[package.metadata.docs.rs]`: every feature, `--cfg docsrs`)
// marks each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

pub mod commit;
pub mod coordinator;
pub mod files;
#[cfg(feature = "host")]
#[cfg_attr(docsrs, doc(cfg(feature = "host")))]
pub mod host;
pub mod ids;
pub mod invariants;
pub mod route;
pub mod snapshot;
pub mod sync;
pub mod task;
pub mod trace;
pub mod types;

pub use types::*;
