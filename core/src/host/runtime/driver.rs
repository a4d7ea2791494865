//! The coordinator driver: one tokio task that owns the
//! [`CoordinatorState`] and the [`FileStore`], applies every event (task
//! RPCs, timers, failure reports, user requests, the answers to its own
//! I/O) and carries out every effect; global failover (stop every attempt,
//! restore the latest completed checkpoint, start new attempts) and the
//! end of the job (shutdown, stop-with-savepoint).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::ctx::Ctx;
use super::group::TaskGroup;
use super::net::ToCoordinator;
use super::statefile;
use super::{JobError, JobSpec};
use crate::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorState, IoAnswer, IoRequest, JobCommand,
    JobStatus, Outcome as COutcome, Report, RestoreSource, Timer,
};
use crate::host::store::{state_path, Discarded, FileStore, Recovery, StateCheck, StoreError};
use crate::invariants::coordinator::{check_all as check_coordinator, HandleLedger};
use crate::types::{AttemptNo, CheckpointId, Generation, IoFailure, Millis, StateHandle, TaskId};

pub(super) struct Driver {
    pub(super) ctx: Arc<Ctx>,
    pub(super) spec: JobSpec,
    pub(super) state: CoordinatorState,
    pub(super) store: FileStore,
    pub(super) ledger: Option<HandleLedger>,
    pub(super) timers: BTreeMap<Timer, Millis>,
    pub(super) answers: std::collections::VecDeque<CoordinatorEvent>,
    pub(super) group: TaskGroup,
    pub(super) next_attempt: Vec<AttemptNo>,
    pub(super) restore_target: Option<(CheckpointId, Vec<StateHandle>)>,
    pub(super) fail_job: bool,
    /// The stop-with-savepoint committed: the job ends on it.
    pub(super) stop: Option<CheckpointId>,
    /// The leader generation this driver claimed; every store write names it.
    pub(super) generation: Generation,
    /// A commit's outcome is unknown (`StoreError::OutcomeUnknown`), or the
    /// id counter could not be reset: the driver stops before its next
    /// event, as after a crash.
    pub(super) halted: Option<String>,
}

/// The store's check of the state files of the checkpoint to restore.
pub(super) fn state_check() -> StateCheck {
    Arc::new(|checkpoint, handle, bytes| {
        statefile::decode_for(checkpoint, handle, bytes).map(|_| ())
    })
}

impl Driver {
    /// Hands the store's recovery to the fresh coordinator as it is
    /// (`Recover` with the checkpoints, the counter's last id and the
    /// generation the store claimed, then `Restore { Latest }`), and checks
    /// that the coordinator restores the store's latest.
    pub(super) fn recover(&mut self, recovery: &Recovery) -> Result<(), JobError> {
        let outcome = self.apply(recovery.recover_event());
        if !outcome.is_applied() {
            return Err(JobError::Recover(format!("{outcome:?}")));
        }
        let latest = recovery.latest().map(|c| c.checkpoint);
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        });
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        if restored != latest {
            return Err(JobError::Recover(format!(
                "the coordinator restores {restored:?}, the store's latest is {latest:?}"
            )));
        }
        Ok(())
    }

    pub(super) fn apply(&mut self, event: CoordinatorEvent) -> COutcome {
        let now = self.ctx.now();
        self.ctx.record_coordinator(now, &event);
        self.ctx.coordinator_events.fetch_add(1, Ordering::Relaxed);
        let before = self.ledger.as_ref().map(|_| self.state.clone());
        let step = self.state.apply(now, event.clone());
        if let (Some(ledger), Some(before)) = (self.ledger.as_mut(), before.as_ref()) {
            if let Err(v) = check_coordinator(ledger, before, &event, &step, &self.state) {
                self.ctx.violation(format!("coordinator: {v}"));
            }
        }
        for e in step.effects {
            // Halted: nothing more is carried out, as after a crash.
            if self.halted.is_some() {
                break;
            }
            self.carry_out(e);
        }
        step.outcome
    }

    fn io_failure(e: &StoreError) -> IoFailure {
        IoFailure(e.to_string())
    }

    fn carry_out(&mut self, e: CoordinatorEffect) {
        match e {
            CoordinatorEffect::Timer {
                timer,
                at: Some(at),
            } => {
                self.timers.insert(timer, at);
            }
            CoordinatorEffect::Timer { timer, at: None } => {
                self.timers.remove(&timer);
            }
            CoordinatorEffect::Io {
                generation,
                request: req,
            } => {
                let answer = match &req {
                    // The answer names the request (`IoRequest::answer`).
                    IoRequest::AllocateId { request: _ } => self.store.allocate_id(generation),
                    // This host's hooks take the checkpoint only.
                    IoRequest::MasterHooks {
                        checkpoint,
                        timestamp: _,
                    } => {
                        let checkpoint = *checkpoint;
                        match self.spec.hooks.iter().try_for_each(|h| h(checkpoint)) {
                            Ok(()) => Ok(checkpoint),
                            Err(why) => {
                                self.answers
                                    .push_back(req.answer(IoAnswer::Failed(IoFailure(why))));
                                return;
                            }
                        }
                    }
                    IoRequest::Finalize {
                        checkpoint,
                        timestamp,
                        handles,
                        kind,
                        // The store keeps every stored checkpoint on
                        // shutdown (it deletes nothing then), externalized
                        // or not: there is nothing to record.
                        externalized: _,
                    } => self
                        .store
                        .finalize(
                            generation,
                            *checkpoint,
                            kind.is_savepoint(),
                            *timestamp,
                            handles,
                        )
                        .map(|()| *checkpoint),
                    IoRequest::Store { checkpoint } => {
                        let stored = self.store.store(self.generation, *checkpoint);
                        self.ctx.stats().store_latest = self.store.holdings().latest();
                        match stored {
                            Ok(committed) => {
                                if let Some(e) = committed.retention {
                                    self.ctx.log(format!(
                                        "checkpoint {checkpoint} stored; its eviction failed: {e}"
                                    ));
                                }
                                Ok(*checkpoint)
                            }
                            // Neither answer is true (the store's docs):
                            // the request stays unanswered and the driver
                            // stops as if it had crashed.
                            Err(e @ StoreError::OutcomeUnknown { .. }) => {
                                self.ctx.log(format!("halting: {e}"));
                                self.halted = Some(e.to_string());
                                return;
                            }
                            Err(e) => Err(e),
                        }
                    }
                };
                let answer = match answer {
                    Ok(id) => IoAnswer::Ok { id },
                    Err(e) => IoAnswer::Failed(Self::io_failure(&e)),
                };
                self.answers.push_back(req.answer(answer));
            }
            // The tasks do not check the coordinator's generation: this
            // driver is the only leader their network reaches.
            CoordinatorEffect::Rpc {
                task,
                attempt,
                message,
                generation: _,
            } => self.ctx.net.to_task(task, attempt, message.event()),
            // The store's fence takes the generation this driver claimed,
            // the one the coordinator recovered under.
            CoordinatorEffect::Discard {
                handle,
                checkpoint,
                generation: _,
            } => self.discard(handle, checkpoint),
            // Reports feed the counters; no user future waits on a request.
            CoordinatorEffect::Report(Report::Completed {
                checkpoint,
                request: _,
                savepoint: _,
            }) => {
                let completed = {
                    let mut s = self.ctx.stats();
                    s.completed += 1;
                    s.last_completed = Some(checkpoint);
                    s.completed
                };
                self.ctx.completed.send_replace(completed);
            }
            CoordinatorEffect::Report(Report::Aborted {
                checkpoint: _,
                request: _,
                reason: _,
            }) => {
                self.ctx.stats().aborted += 1;
            }
            CoordinatorEffect::Report(Report::RequestFailed {
                request: _,
                reason: _,
            })
            | CoordinatorEffect::Job(JobCommand::ShutdownServices(_)) => {}
            CoordinatorEffect::Job(JobCommand::Fail(_)) => self.fail_job = true,
            // The tasks of this host run no drain phase of their own (a
            // drained source simply has no more records): the job ends.
            CoordinatorEffect::Job(JobCommand::Stop {
                savepoint,
                drain: _,
            }) => {
                self.stop = Some(savepoint);
            }
            // This host reports no `TaskFinished`: nothing can finish the job.
            CoordinatorEffect::Job(JobCommand::Finish {
                final_checkpoint: _,
            }) => {
                self.ctx
                    .violation("job finished, no task reported finished".into());
            }
            CoordinatorEffect::Job(JobCommand::ResetIdCounter { generation, next }) => {
                // The crate docs: a counter that could not be reset may
                // hand out an id again, so this coordinator stops and the
                // next one recovers from the store.
                if let Err(e) = self.store.reset_counter(generation, next) {
                    self.ctx
                        .log(format!("halting: id counter reset to {next} failed: {e}"));
                    self.halted = Some(format!("id counter reset to {next} failed: {e}"));
                }
            }
            CoordinatorEffect::Job(JobCommand::Restore {
                checkpoint,
                handles,
            }) => self.restore_target = checkpoint.map(|c| (c, handles)),
            CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
                checkpoint,
                discard_if_stored,
                discard_if_not_stored,
            }) => {
                // This driver answers its own store I/O before it reads the
                // next message, so the outcome is known here: discard the
                // list for what the store holds.
                let stored = self.store.holdings().stored().any(|(c, _)| c == checkpoint);
                let list = if stored {
                    discard_if_stored
                } else {
                    discard_if_not_stored
                };
                for h in list {
                    self.discard(h, checkpoint);
                }
            }
        }
    }

    fn discard(&mut self, handle: StateHandle, checkpoint: CheckpointId) {
        match self.store.discard(self.generation, handle) {
            Ok(Discarded::Deleted | Discarded::AlreadyGone) => {}
            Ok(Discarded::Savepoint { savepoint }) => self.ctx.log(format!(
                "DiscardState of {} (checkpoint {checkpoint}) declined: savepoint {savepoint} holds it",
                state_path(handle)
            )),
            // Every stored checkpoint that holds the file is one whose
            // eviction failed (`Committed::retention`): the coordinator let
            // go of them, the store did not, and a later commit's eviction
            // deletes the file. Not a broken rule.
            Ok(Discarded::Refused { checkpoint: held })
                if self
                    .store
                    .holdings()
                    .held_only_beyond_retention(handle, self.store.retained_max()) =>
            {
                self.ctx.log(format!(
                    "DiscardState of {} (checkpoint {checkpoint}) deferred: checkpoint {held}, whose eviction failed, still holds it",
                    state_path(handle)
                ));
            }
            Ok(Discarded::Refused { checkpoint: held }) => {
                self.ctx.violation(format!(
                    "durability guard: DiscardState of {} (checkpoint {checkpoint}) refused: stored checkpoint {held} holds it",
                    state_path(handle)
                ));
            }
            Err(e) => self.ctx.log(format!("discard {}: {e}", state_path(handle))),
        }
    }

    /// Applies the answers to the driver's own I/O (each after the
    /// simulated I/O latency, if any) before anything else is read.
    async fn drain_answers(&mut self) {
        while let Some(ev) = self.answers.pop_front() {
            if self.halted.is_some() {
                return;
            }
            self.ctx.io_pause().await;
            self.apply(ev);
        }
    }

    pub(super) fn start_attempts(&mut self) -> Result<(), JobError> {
        let restore = self
            .restore_target
            .as_ref()
            .map(|(id, handles)| (*id, handles.as_slice()));
        let next = &self.next_attempt;
        self.group.start(
            |task| next.get(task.0 as usize).copied().unwrap_or_default(),
            restore,
        )?;
        for next in &mut self.next_attempt {
            *next = AttemptNo(next.0.saturating_add(1));
        }
        Ok(())
    }

    /// Global failover: stop every attempt, report them failed, restore the
    /// latest completed checkpoint, start new attempts.
    async fn failover(&mut self, why: &str) {
        self.ctx.stats().failovers += 1;
        self.ctx.log(format!("failover: {why}"));
        let running = self.group.running();
        self.group.stop().await;
        for (task, attempt) in running {
            if self.halted.is_some() {
                break;
            }
            self.apply(CoordinatorEvent::TaskFailed { task, attempt });
            self.drain_answers().await;
        }
        if self.halted.is_some() {
            // A commit the failover waited for has an unknown outcome: the
            // run loop stops before anything is restored.
            return;
        }
        self.fail_job = false;
        self.restore_target = None;
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        });
        self.drain_answers().await;
        if self.halted.is_some() {
            return;
        }
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        if restored != self.store.holdings().latest() {
            self.ctx.stats().store_disagreements += 1;
            self.ctx.violation(format!(
                "failover restores {restored:?} but the store's latest is {:?}",
                self.store.holdings().latest()
            ));
        }
        if let Err(e) = self.start_attempts() {
            self.ctx
                .violation(format!("failover could not restart the tasks: {e}"));
            return;
        }
        for (task, attempt) in self.group.running() {
            self.answers
                .push_back(CoordinatorEvent::TaskRunning { task, attempt });
        }
        self.drain_answers().await;
    }

    fn sync_store_stats(&self) {
        let mut stats = self.ctx.stats();
        stats.store = self.store.stats().clone();
        if stats.halted.is_none() {
            stats.halted.clone_from(&self.halted);
        }
    }

    pub(super) async fn run(
        mut self,
        mut rx: mpsc::Receiver<ToCoordinator>,
        mut failures: mpsc::UnboundedReceiver<(TaskId, AttemptNo)>,
    ) {
        loop {
            self.drain_answers().await;
            self.sync_store_stats();
            if self.halted.is_some() {
                // No `Shutdown`: it would hand the unanswered commit to the
                // host in doubt, and settling that now would be a guess.
                // The attempts stop; the next start reads the store.
                self.group.stop().await;
                return;
            }
            if let Some(savepoint) = self.stop {
                // The crate docs' stop recipe: every attempt stops, then the
                // coordinator shuts down with the job finished.
                self.group.stop().await;
                self.apply(CoordinatorEvent::Shutdown {
                    status: JobStatus::Finished,
                });
                self.drain_answers().await;
                self.ctx.stats().stopped_with = Some(savepoint);
                self.sync_store_stats();
                return;
            }
            if self.fail_job {
                self.failover("tolerable checkpoint failures exceeded")
                    .await;
                continue;
            }
            let next_timer = self.timers.values().min().copied();
            let deadline = next_timer.map(|at| self.ctx.start + Duration::from_millis(at.0));
            tokio::select! {
                biased;
                () = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let now = self.ctx.now();
                    let due: Vec<Timer> = self
                        .timers
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(t, _)| *t)
                        .collect();
                    for timer in due {
                        // Halted: no event after the crash point.
                        if self.halted.is_some() {
                            break;
                        }
                        if self.timers.get(&timer).is_some_and(|at| *at <= now) {
                            self.timers.remove(&timer);
                            self.apply(CoordinatorEvent::TimerFired { timer });
                            self.drain_answers().await;
                        }
                    }
                }
                Some((task, attempt)) = failures.recv() => {
                    if self.group.is_current(task, attempt) {
                        self.failover(&format!("task {task} attempt {attempt} failed")).await;
                    }
                }
                msg = rx.recv() => match msg {
                    Some(ToCoordinator::Rpc(ev)) => {
                        self.apply(ev);
                    }
                    Some(ToCoordinator::DisposeSavepoint(savepoint, reply)) => {
                        let disposed = self.store.dispose_savepoint(self.generation, savepoint);
                        if disposed.is_ok() {
                            self.ctx.stats().store_latest = self.store.holdings().latest();
                            self.apply(CoordinatorEvent::DisposeSavepoint {
                                checkpoint: savepoint,
                            });
                        }
                        let _ = reply.send(disposed);
                    }
                    Some(ToCoordinator::Shutdown(status, done)) => {
                        self.apply(CoordinatorEvent::Shutdown { status });
                        self.drain_answers().await;
                        self.group.stop().await;
                        self.sync_store_stats();
                        let _ = done.send(());
                        return;
                    }
                    None => return,
                },
            }
            tokio::task::yield_now().await;
        }
    }
}
