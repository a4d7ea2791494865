//! The task driver: one attempt of one subtask, as tokio tasks that play
//! the roles of a Flink task's threads around one [`TaskState`]:
//!
//! * **netty**: one per input channel (a task with several upstream tasks
//!   has one channel from each: fan-in); reads it (per-link FIFO,
//!   lossless); records go to the one input queue the task thread reads; a
//!   barrier is delivered to the reducer at once (`BarrierReceived { via:
//!   Netty }`: the first barrier of a checkpoint starts it, the writer
//!   begins, the checkpoint mail is scheduled; a later one of the same
//!   checkpoint on another input is `Ignored(AlreadyStarted)` by the
//!   reducer and ends that input's part of the channel state, below) and
//!   then placed in the input queue as a position marker; a cancel marker
//!   goes to the input queue for the task thread. A closed channel while
//!   the attempt runs is a broken connection: a task failure, never a lost
//!   barrier.
//! * **rpc**: moves the coordinator's notifications (trigger, notify-aborted,
//!   notify-complete) into the **mailbox**. Every one of them goes through
//!   the mailbox; a mail is never withdrawn.
//! * **task thread**: runs mails first (strict priority), then one input
//!   element (a record through the operator, a cancel marker to the
//!   reducer); a source operator emits when neither is waiting. Because the
//!   checkpoint mail is in the mailbox before the barrier marker is in the
//!   input queue, the task thread never processes a record from after the
//!   barrier before the checkpoint's mail ran.
//! * **writer**: the channel-state writer (every checkpoint is unaligned;
//!   there is no aligned mode). [`WriterCommand::Start`]`(N)` opens `N`'s
//!   capture with the records in the input queue (every one of them is before
//!   `N`'s barrier on its own input: unprocessed input before the barrier);
//!   from then on every record that arrives on an input whose barrier of `N`
//!   has not arrived yet is appended to it (in-flight data of `N`: the
//!   operator processes it after the snapshot). When the barrier of `N` (or a
//!   newer one) has arrived on every input, the capture goes to the writer,
//!   which reports `WriterCompleted{N}`; a task with one input completes it
//!   at its barrier, a source at once. [`WriterCommand::Abort`] of `N` and
//!   the cancelled async part of `N` drop it.
//!   [`super::JobOptions::legacy_first_barrier_channel_state`]
//!   (checker-only) completes it at the first barrier instead, as this host
//!   did before fan-in, so the records of a slower input are lost.
//! * **async part**: one per [`AsyncCommand::Start`]`(N)`: waits for the
//!   writer's result, writes the state handle's file (operator snapshot + the
//!   channel state the operator had not processed at the snapshot) durably,
//!   reports `AsyncPartCompleted{N, handle}`; a cancelled one deletes what it
//!   wrote.
//!
//! Every reducer call happens under the attempt's lock and its effects are
//! dispatched in order before the lock is released (writer commands, mails,
//! RPCs); effects that need the operator or an `await` (barriers
//! downstream, the snapshot, notifications to the operator) are returned to
//! the task thread, the only thread that emits them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use super::statefile::{handle_for, TaskSnapshot};
use super::{Ctx, DataMsg, Operator, Record, SourcePoll};
use crate::host::store::{state_path, write_state};
use crate::invariants::task::{check_all, TaskMonitor};
use crate::route::ChannelItem;
use crate::task::{
    AsyncCommand, OperatorNotice, Outcome, TaskConfig, TaskEffect, TaskEvent, TaskState,
    WriterCommand,
};
use crate::types::{AttemptNo, CheckpointId, TaskId, Thread};

/// Bound of a task's mailbox. The rpc role waits for space (a mail, once
/// accepted from the network, is never lost); checkpoint mails are at most
/// one per started checkpoint.
pub const MAILBOX_MAX: usize = 256;
/// Bound of a task's input queue (records waiting for the task thread); the
/// netty role waits for space (backpressure to the upstream channel).
pub const INPUT_MAX: usize = 4_096;
/// Bound of a data channel between two tasks (messages, each a batch).
pub const DATA_CHANNEL_MAX: usize = 64;
/// Records a source emits per batch.
pub const SOURCE_BATCH_MAX: usize = 256;

enum Input {
    Record { pos: u64, record: Record },
    Barrier,
    Cancel(CheckpointId),
}

enum WriteSlot {
    Done(Vec<(u64, Record)>),
    Failed,
}

enum WriterCmd {
    /// The channel state of the checkpoint is complete: these records.
    Start(CheckpointId, Vec<(u64, Record)>),
    Abort(CheckpointId),
}

/// A checkpoint's channel state while it is being captured: from its first
/// barrier until its barrier arrived on every input.
struct Capture {
    /// The in-flight records so far, with their input-queue positions.
    records: Vec<(u64, Record)>,
    /// The inputs whose barrier of this checkpoint has not arrived yet.
    waiting: std::collections::BTreeSet<usize>,
}

/// What the task thread must do after a reducer call, in order.
enum Deferred {
    Data(DataMsg),
    Snapshot(CheckpointId, Arc<AtomicBool>),
    NotifyComplete(CheckpointId),
    NotifyAborted(CheckpointId),
}

struct Core {
    state: TaskState,
    monitor: Option<TaskMonitor>,
    mailbox: VecDeque<TaskEvent>,
    input: VecDeque<Input>,
    next_pos: u64,
    processed_pos: u64,
    async_parts: BTreeMap<CheckpointId, Arc<AtomicBool>>,
    /// Channel state being captured, per checkpoint.
    captures: BTreeMap<CheckpointId, Capture>,
    writer: mpsc::UnboundedSender<WriterCmd>,
    failed: bool,
}

impl Core {
    /// The barrier of `checkpoint` arrived on input `input`: that input's
    /// part of the channel state of every capture up to `checkpoint` is
    /// complete (per-link FIFO: a barrier of a newer checkpoint on an input
    /// comes after every older one there). Hands each capture whose inputs
    /// have all delivered their barrier to the writer.
    fn barrier_on(&mut self, input: usize, checkpoint: CheckpointId) {
        let done: Vec<CheckpointId> = self
            .captures
            .range_mut(..=checkpoint)
            .filter_map(|(id, c)| {
                c.waiting.remove(&input);
                c.waiting.is_empty().then_some(*id)
            })
            .collect();
        for id in done {
            if let Some(c) = self.captures.remove(&id) {
                let _ = self.writer.send(WriterCmd::Start(id, c.records));
            }
        }
    }

    /// A record arrived on input `input` at position `pos`: in-flight data
    /// of every checkpoint still waiting for that input's barrier.
    /// Returns how many captures took it.
    fn capture(&mut self, input: usize, pos: u64, record: Record) -> u64 {
        let mut n = 0;
        for c in self.captures.values_mut() {
            if c.waiting.contains(&input) {
                c.records.push((pos, record));
                n += 1;
            }
        }
        n
    }
}

struct Shared {
    task: TaskId,
    attempt: AttemptNo,
    ctx: Arc<Ctx>,
    core: Mutex<Core>,
    /// Wakes the task thread (mail or input arrived).
    wake: Notify,
    /// Wakes producers waiting for mailbox or input space.
    space: Notify,
    writes: Mutex<BTreeMap<CheckpointId, WriteSlot>>,
    writes_changed: Notify,
    /// Set when the job stops this attempt: a data channel closing then is
    /// the teardown, not a broken connection.
    stopping: AtomicBool,
    /// Input channels (upstream tasks); 0 for a source.
    inputs: usize,
}

/// A running task attempt.
pub(crate) struct Attempt {
    pub attempt: AttemptNo,
    tasks: JoinSet<()>,
    shared: Arc<Shared>,
}

/// How to start an attempt.
pub(crate) struct AttemptSpec {
    pub task: TaskId,
    pub attempt: AttemptNo,
    pub config: TaskConfig,
    pub operator: Box<dyn Operator>,
    pub restored: Option<TaskSnapshot>,
    pub restored_from: Option<CheckpointId>,
    /// One data channel from each upstream task.
    pub inputs: Vec<mpsc::Receiver<DataMsg>>,
    pub downstream: Vec<mpsc::Sender<DataMsg>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Applies one event under the lock and dispatches its effects; returns
    /// what the task thread must do and the outcome.
    fn apply(&self, core: &mut Core, event: TaskEvent, deferred: &mut Vec<Deferred>) -> Outcome {
        let now = self.ctx.now();
        let before = core.state.clone();
        let step = core.state.apply(now, event.clone());
        self.ctx.record_task(self.task, self.attempt, now, &event);
        self.ctx.count_task_event();
        if let Some(m) = core.monitor.as_mut() {
            if let Err(v) = check_all(m, &before, &event, &step, &core.state) {
                self.ctx
                    .violation(format!("task {} attempt {}: {v}", self.task, self.attempt));
            }
        }
        let from_task_thread = event.thread() == Thread::Task;
        for e in &step.effects {
            match *e {
                TaskEffect::Writer(WriterCommand::Start(checkpoint)) => {
                    // Everything queued is before this checkpoint's barrier
                    // on its own input (no input has delivered it yet, or
                    // only the one delivering it now).
                    let inflight: Vec<(u64, Record)> = core
                        .input
                        .iter()
                        .filter_map(|i| match i {
                            Input::Record { pos, record } => Some((*pos, *record)),
                            Input::Barrier | Input::Cancel(_) => None,
                        })
                        .collect();
                    if self.inputs == 0 || self.ctx.options.legacy_first_barrier_channel_state {
                        let _ = core.writer.send(WriterCmd::Start(checkpoint, inflight));
                    } else {
                        core.captures.insert(
                            checkpoint,
                            Capture {
                                records: inflight,
                                waiting: (0..self.inputs).collect(),
                            },
                        );
                    }
                }
                // This host's writer keeps its results in memory (at most
                // MAILBOX_MAX) and removes none on abort, with `cleanup` or
                // without; a capture still open is dropped.
                TaskEffect::Writer(WriterCommand::Abort {
                    checkpoint,
                    cleanup: _,
                }) => {
                    core.captures.remove(&checkpoint);
                    let _ = core.writer.send(WriterCmd::Abort(checkpoint));
                }
                // This host restores no in-flight channel state (no task
                // config it builds sets `replays_channel_state`), so no
                // input is ever left to replay or capture.
                TaskEffect::Writer(WriterCommand::CaptureRecovered { .. }) => {}
                TaskEffect::Mail(checkpoint) => {
                    core.mailbox
                        .push_back(TaskEvent::CheckpointMail { checkpoint });
                    self.wake.notify_one();
                }
                TaskEffect::Downstream(ChannelItem::Barrier(checkpoint)) => {
                    deferred.push(Deferred::Data(DataMsg::Barrier(checkpoint)));
                }
                TaskEffect::Downstream(ChannelItem::CancelMarker(checkpoint)) => {
                    deferred.push(Deferred::Data(DataMsg::Cancel(checkpoint)));
                }
                TaskEffect::AsyncPart(AsyncCommand::Start(checkpoint)) => {
                    let cancel = Arc::new(AtomicBool::new(false));
                    core.async_parts.insert(checkpoint, Arc::clone(&cancel));
                    deferred.push(Deferred::Snapshot(checkpoint, cancel));
                }
                TaskEffect::AsyncPart(AsyncCommand::Cancel(checkpoint)) => {
                    // Nobody will write the channel state it was waiting for.
                    core.captures.remove(&checkpoint);
                    if let Some(flag) = core.async_parts.remove(&checkpoint) {
                        flag.store(true, Ordering::SeqCst);
                    }
                    self.writes_changed.notify_waiters();
                }
                TaskEffect::Coordinator(msg) => {
                    core.async_parts.remove(&msg.checkpoint());
                    self.ctx
                        .net
                        .to_coordinator(msg.event(self.ctx.job, self.task, self.attempt));
                }
                TaskEffect::Discard(handle) => {
                    // Never acknowledged, so no stored checkpoint holds it.
                    self.ctx.delete_unacked_state(handle);
                }
                TaskEffect::Operators(OperatorNotice::Complete(checkpoint)) => {
                    deferred.push(Deferred::NotifyComplete(checkpoint));
                }
                TaskEffect::Operators(OperatorNotice::Aborted(checkpoint)) => {
                    deferred.push(Deferred::NotifyAborted(checkpoint));
                }
                TaskEffect::Fail(reason) => {
                    core.failed = true;
                    self.ctx
                        .task_failed(self.task, self.attempt, reason.is_genuine());
                }
            }
        }
        if !from_task_thread && !deferred.is_empty() {
            self.ctx.violation(format!(
                "task {}: {event:?} (not on the task thread) left task-thread work",
                self.task
            ));
            deferred.clear();
        }
        step.outcome
    }

    fn deliver(&self, event: TaskEvent) -> Outcome {
        let mut deferred = Vec::new();
        let mut core = lock(&self.core);
        self.apply(&mut core, event, &mut deferred)
    }

    fn fail(&self, why: &str) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let mut core = lock(&self.core);
        if core.failed {
            return;
        }
        core.failed = true;
        drop(core);
        self.ctx.log(format!(
            "task {} attempt {}: {why}",
            self.task, self.attempt
        ));
        self.ctx.task_failed(self.task, self.attempt, true);
    }
}

impl Attempt {
    /// Starts the attempt's tokio tasks.
    pub fn start(ctx: &Arc<Ctx>, spec: AttemptSpec) -> Result<Attempt, String> {
        let state = TaskState::new(spec.config.clone()).map_err(|e| e.to_string())?;
        ctx.declare_task(spec.task, spec.attempt, &spec.config);
        let (writer_tx, writer_rx) = mpsc::unbounded_channel();
        let mut input = VecDeque::new();
        let mut next_pos = 0;
        let mut operator = spec.operator;
        if let Some(snap) = &spec.restored {
            operator
                .restore(spec.restored_from, Some(&snap.operator))
                .map_err(|e| e.to_string())?;
            for r in &snap.channel {
                next_pos += 1;
                input.push_back(Input::Record {
                    pos: next_pos,
                    record: *r,
                });
            }
        } else {
            operator
                .restore(spec.restored_from, None)
                .map_err(|e| e.to_string())?;
        }
        let shared = Arc::new(Shared {
            task: spec.task,
            attempt: spec.attempt,
            ctx: Arc::clone(ctx),
            core: Mutex::new(Core {
                state,
                monitor: ctx.options.check_invariants.then(TaskMonitor::new),
                mailbox: VecDeque::new(),
                input,
                next_pos,
                processed_pos: 0,
                async_parts: BTreeMap::new(),
                captures: BTreeMap::new(),
                writer: writer_tx,
                failed: false,
            }),
            wake: Notify::new(),
            space: Notify::new(),
            writes: Mutex::new(BTreeMap::new()),
            writes_changed: Notify::new(),
            stopping: AtomicBool::new(false),
            inputs: spec.inputs.len(),
        });
        let (rpc_tx, rpc_rx) = mpsc::channel(super::net::TASK_INBOX_MAX);
        ctx.net.register(
            spec.task,
            Some(super::net::TaskInbox {
                attempt: spec.attempt,
                tx: rpc_tx,
            }),
        );
        let mut tasks = JoinSet::new();
        tasks.spawn(rpc_role(Arc::clone(&shared), rpc_rx));
        tasks.spawn(writer_role(Arc::clone(&shared), writer_rx));
        for (input, up) in spec.inputs.into_iter().enumerate() {
            tasks.spawn(netty_role(Arc::clone(&shared), input, up));
        }
        let (async_tx, async_rx) = mpsc::unbounded_channel();
        tasks.spawn(async_role(Arc::clone(&shared), async_rx));
        tasks.spawn(task_thread(
            Arc::clone(&shared),
            operator,
            spec.downstream,
            async_tx,
        ));
        Ok(Attempt {
            attempt: spec.attempt,
            tasks,
            shared,
        })
    }

    /// Marks the attempt as being stopped (before any attempt of the job is
    /// stopped, so closing channels are not taken for broken connections).
    pub fn begin_stop(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
    }

    /// Stops every role of the attempt (at their next await) and waits for
    /// them; then closes the reducer (`Close`).
    pub async fn stop(mut self) {
        self.begin_stop();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.shared.deliver(TaskEvent::Close);
    }
}

async fn rpc_role(shared: Arc<Shared>, mut rx: mpsc::Receiver<TaskEvent>) {
    while let Some(mail) = rx.recv().await {
        loop {
            let space = shared.space.notified();
            {
                let mut core = lock(&shared.core);
                if core.mailbox.len() < MAILBOX_MAX {
                    core.mailbox.push_back(mail);
                    shared.wake.notify_one();
                    break;
                }
            }
            space.await;
        }
    }
}

/// The netty role of input channel `input`.
async fn netty_role(shared: Arc<Shared>, input: usize, mut rx: mpsc::Receiver<DataMsg>) {
    while let Some(msg) = rx.recv().await {
        match msg {
            DataMsg::Records(records) => {
                for record in records {
                    loop {
                        let space = shared.space.notified();
                        {
                            let mut core = lock(&shared.core);
                            if core.input.len() < INPUT_MAX {
                                core.next_pos += 1;
                                let pos = core.next_pos;
                                if !core.captures.is_empty() {
                                    let n = core.capture(input, pos, record);
                                    shared.ctx.channel_records_captured(n);
                                }
                                core.input.push_back(Input::Record { pos, record });
                                shared.wake.notify_one();
                                break;
                            }
                        }
                        space.await;
                    }
                }
            }
            DataMsg::Barrier(checkpoint) => {
                // The mail goes to the mailbox (under the lock) before the
                // marker goes to the input queue (under the same lock).
                let mut deferred = Vec::new();
                let mut core = lock(&shared.core);
                shared.apply(
                    &mut core,
                    TaskEvent::BarrierReceived {
                        checkpoint,
                        via: Thread::Netty,
                    },
                    &mut deferred,
                );
                core.barrier_on(input, checkpoint);
                core.input.push_back(Input::Barrier);
                shared.wake.notify_one();
            }
            DataMsg::Cancel(checkpoint) => {
                let mut core = lock(&shared.core);
                core.input.push_back(Input::Cancel(checkpoint));
                shared.wake.notify_one();
            }
        }
    }
    // The upstream attempt went away while this one runs: a broken
    // connection fails the task (a stopped job aborts this role first).
    shared.fail("upstream data channel closed (broken connection)");
}

async fn writer_role(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<WriterCmd>) {
    while let Some(cmd) = rx.recv().await {
        match cmd {
            WriterCmd::Start(checkpoint, inflight) => {
                let aborted = matches!(
                    lock(&shared.writes).get(&checkpoint),
                    Some(WriteSlot::Failed)
                );
                if aborted {
                    continue;
                }
                lock(&shared.writes).insert(checkpoint, WriteSlot::Done(inflight));
                shared.writes_changed.notify_waiters();
                shared.deliver(TaskEvent::WriterCompleted { checkpoint });
            }
            WriterCmd::Abort(checkpoint) => {
                lock(&shared.writes).insert(checkpoint, WriteSlot::Failed);
                shared.writes_changed.notify_waiters();
            }
        }
        // Old results are of no use once newer ones exist (bounded memory).
        let mut w = lock(&shared.writes);
        while w.len() > MAILBOX_MAX {
            w.pop_first();
        }
    }
}

/// One async part's job.
struct AsyncJob {
    checkpoint: CheckpointId,
    cancel: Arc<AtomicBool>,
    operator: Vec<u8>,
    processed_pos: u64,
}

async fn async_role(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<AsyncJob>) {
    let mut parts = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            job = rx.recv() => match job {
                Some(job) => {
                    parts.spawn(async_part(Arc::clone(&shared), job));
                }
                None => break,
            },
            Some(_) = parts.join_next(), if !parts.is_empty() => {}
        }
    }
    while parts.join_next().await.is_some() {}
}

async fn async_part(shared: Arc<Shared>, job: AsyncJob) {
    let checkpoint = job.checkpoint;
    // Wait for the writer's result of this checkpoint.
    let inflight = loop {
        let changed = shared.writes_changed.notified();
        if job.cancel.load(Ordering::SeqCst) {
            return;
        }
        match lock(&shared.writes).remove(&checkpoint) {
            Some(WriteSlot::Done(records)) => break Some(records),
            Some(WriteSlot::Failed) => break None,
            None => {}
        }
        changed.await;
    };
    let Some(inflight) = inflight else {
        shared.deliver(TaskEvent::AsyncPartFailed { checkpoint });
        return;
    };
    let channel: Vec<Record> = inflight
        .into_iter()
        .filter(|(pos, _)| *pos > job.processed_pos)
        .map(|(_, r)| r)
        .collect();
    let Some(handle) = handle_for(checkpoint, shared.task) else {
        shared.deliver(TaskEvent::AsyncPartFailed { checkpoint });
        return;
    };
    let bytes = TaskSnapshot {
        task: shared.task,
        checkpoint,
        operator: job.operator,
        channel,
    }
    .encode();
    shared.ctx.io_pause().await;
    if job.cancel.load(Ordering::SeqCst) {
        return;
    }
    if let Err(e) = write_state(&*shared.ctx.fs, handle, &bytes) {
        shared.ctx.log(format!(
            "task {} checkpoint {checkpoint}: state write failed: {e}",
            shared.task
        ));
        let _ = shared.ctx.fs.remove(&state_path(handle));
        shared.deliver(TaskEvent::AsyncPartFailed { checkpoint });
        return;
    }
    let outcome = shared.deliver(TaskEvent::AsyncPartCompleted { checkpoint, handle });
    match outcome {
        Outcome::Applied | Outcome::Skipped(_) => {}
        Outcome::Ignored(_) | Outcome::Rejected(_) => {
            // Cancelled meanwhile: nobody owns what it wrote.
            shared.ctx.delete_unacked_state(handle);
        }
    }
}

async fn task_thread(
    shared: Arc<Shared>,
    mut operator: Box<dyn Operator>,
    downstream: Vec<mpsc::Sender<DataMsg>>,
    async_tx: mpsc::UnboundedSender<AsyncJob>,
) {
    let mut out: Vec<Record> = Vec::with_capacity(SOURCE_BATCH_MAX);
    let mut source_done = !operator.is_source();
    loop {
        let woken = shared.wake.notified();
        let mut deferred = Vec::new();
        let step = {
            let mut core = lock(&shared.core);
            if core.failed {
                None
            } else if let Some(mail) = core.mailbox.pop_front() {
                shared.space.notify_waiters();
                shared.apply(&mut core, mail, &mut deferred);
                Some(true)
            } else if let Some(input) = core.input.pop_front() {
                shared.space.notify_waiters();
                match input {
                    Input::Record { pos, record } => {
                        core.processed_pos = pos;
                        drop(core);
                        if let Err(e) = operator.process(record, &mut out) {
                            shared.ctx.log(format!("task {}: {e}", shared.task));
                            shared.deliver(TaskEvent::OperatorFailed);
                        }
                    }
                    Input::Barrier => {}
                    Input::Cancel(checkpoint) => {
                        shared.apply(
                            &mut core,
                            TaskEvent::CancelMarker { checkpoint },
                            &mut deferred,
                        );
                    }
                }
                Some(true)
            } else {
                Some(false)
            }
        };
        let Some(busy) = step else {
            // Failed: wait to be stopped by the job.
            std::future::pending::<()>().await;
            return;
        };
        for d in deferred {
            match d {
                Deferred::Data(msg) => {
                    flush(&mut out, &downstream).await;
                    send_all(&downstream, &msg).await;
                }
                Deferred::Snapshot(checkpoint, cancel) => {
                    let processed_pos = lock(&shared.core).processed_pos;
                    match operator.snapshot(checkpoint) {
                        Ok(bytes) => {
                            let _ = async_tx.send(AsyncJob {
                                checkpoint,
                                cancel,
                                operator: bytes,
                                processed_pos,
                            });
                        }
                        Err(e) => {
                            shared.ctx.log(format!(
                                "task {} checkpoint {checkpoint}: snapshot failed: {e}",
                                shared.task
                            ));
                            shared.deliver(TaskEvent::AsyncPartFailed { checkpoint });
                        }
                    }
                }
                Deferred::NotifyComplete(checkpoint) => {
                    if let Err(e) = operator.notify_complete(checkpoint) {
                        shared.ctx.log(format!("task {}: {e}", shared.task));
                        shared.deliver(TaskEvent::OperatorFailed);
                    }
                }
                Deferred::NotifyAborted(checkpoint) => operator.notify_aborted(checkpoint),
            }
        }
        if !out.is_empty() && (out.len() >= SOURCE_BATCH_MAX || !busy) {
            flush(&mut out, &downstream).await;
        }
        if busy {
            tokio::task::consume_budget().await;
            continue;
        }
        if !source_done {
            match operator.poll_source(SOURCE_BATCH_MAX, &mut out) {
                Ok(SourcePoll::Emitted) => {
                    flush(&mut out, &downstream).await;
                    shared.ctx.source_emitted();
                    tokio::task::yield_now().await;
                    continue;
                }
                Ok(SourcePoll::Idle(delay)) => {
                    tokio::select! {
                        biased;
                        () = woken => {}
                        () = tokio::time::sleep(delay) => {}
                    }
                    continue;
                }
                Ok(SourcePoll::Exhausted) => source_done = true,
                Err(e) => {
                    shared.ctx.log(format!("task {}: {e}", shared.task));
                    shared.deliver(TaskEvent::OperatorFailed);
                    continue;
                }
            }
        }
        woken.await;
    }
}

async fn flush(out: &mut Vec<Record>, downstream: &[mpsc::Sender<DataMsg>]) {
    if out.is_empty() {
        return;
    }
    let batch = std::mem::take(out);
    send_all(downstream, &DataMsg::Records(batch)).await;
}

async fn send_all(downstream: &[mpsc::Sender<DataMsg>], msg: &DataMsg) {
    for d in downstream {
        // A closed downstream channel means that attempt is gone; the job is
        // failing over and will stop this attempt too.
        let _ = d.send(msg.clone()).await;
    }
}

impl Attempt {
    /// The task.
    pub fn task(&self) -> TaskId {
        self.shared.task
    }
}
