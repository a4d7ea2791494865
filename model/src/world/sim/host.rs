//! The host's side: carrying out I/O (with fencing), the store's commits, cleaners, the in-doubt hand-over and the failover recipes, exactly as the crate docs tell a host.

use super::*;

impl Sim {
    /// The host carries out one I/O request of `who`'s, successfully
    /// unless `ok` is false (an injected fault), and says what to answer.
    /// A request that writes durable state (the id counter, metadata, the
    /// commit) is refused when a newer generation was claimed: that is the
    /// fencing of a deposed leader.
    pub(super) fn carry_out(&self, n: &mut World, who: Leader, io: Io, ok: bool) -> IoAnswer {
        let failed = |why: &str| IoAnswer::Failed(IoFailure(why.into()));
        if !ok {
            if let Io::Store(checkpoint) = io {
                // Definitely not stored: its metadata goes.
                n.durable.metadata.retain(|m| m.id != checkpoint);
            }
            return failed("injected");
        }
        let coord = match who {
            Leader::Current => n.coord.clone(),
            Leader::Zombie => match &n.zombie {
                Some(z) => z.coord.clone(),
                None => return failed("no such coordinator"),
            },
        };
        if !matches!(io, Io::Hooks(_)) && Self::fenced(n, coord.generation()) {
            n.history.fenced = true;
            return failed("refused: a newer generation holds the store");
        }
        match io {
            Io::Allocate(_) => {
                // The durable counter advances, then answers.
                let id = n
                    .durable
                    .counter
                    .map_or(CheckpointId(1), |l| l.next().unwrap_or(l));
                n.durable.counter = Some(id);
                IoAnswer::Ok { id }
            }
            Io::Hooks(id) => IoAnswer::Ok { id },
            Io::Finalize(checkpoint) => match finalize_record(&coord, checkpoint) {
                Some(meta) => {
                    n.durable.metadata.retain(|m| m.id != checkpoint);
                    let at = n.durable.metadata.partition_point(|m| m.id < checkpoint);
                    n.durable.metadata.insert(at, meta);
                    IoAnswer::Ok { id: checkpoint }
                }
                None => failed("not finalizing"),
            },
            Io::Store(checkpoint) => {
                // A store write that already committed (the old leader's,
                // whose answer a failover overtook) answers as it did.
                if n.durable.ledger.holds(checkpoint) || self.commit(n, checkpoint) {
                    IoAnswer::Ok { id: checkpoint }
                } else {
                    failed("refused")
                }
            }
        }
    }

    /// The store commits checkpoint `checkpoint` from its finalized
    /// metadata, if that is a legal commit ([`ckpt_core::commit`]; the
    /// legacy store of `StoreRefusesOlderSavepoint` wants every commit
    /// above everything it holds). The oldest checkpoints beyond retention
    /// leave the store; their state is the coordinator's to delete (or,
    /// after a shutdown, the host's, as `ResolveInDoubt` lists it). `false`
    /// when nothing was committed: no metadata, or the store refused.
    pub(super) fn commit(&self, n: &mut World, checkpoint: CheckpointId) -> bool {
        let Some(at) = n.durable.metadata.iter().position(|m| m.id == checkpoint) else {
            return false;
        };
        let Some(meta) = n.durable.metadata.get(at).cloned() else {
            return false;
        };
        let legal = if self.cfg.semantics.is(LegacyBug::StoreRefusesOlderSavepoint) {
            n.durable.ledger.store().iter().all(|s| s.id < checkpoint)
        } else {
            n.durable.ledger.may_commit(checkpoint, meta.savepoint)
        };
        if !legal {
            if let Err(v) = n.durable.ledger.refused(checkpoint, meta.savepoint) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
            return false;
        }
        n.durable.metadata.remove(at);
        let store = n.durable.ledger.store();
        if meta.savepoint && store.iter().any(|s| s.id > checkpoint) {
            n.history.savepoint_after_newer = true;
        }
        if meta
            .handles
            .iter()
            .any(|h| store.iter().any(|s| s.handles.contains(h)))
        {
            n.history.shared_committed = true;
        }
        match n.durable.ledger.commit(meta) {
            Ok(evicted) => {
                if !evicted.is_empty() && n.durable.ledger.store().iter().any(|s| s.savepoint) {
                    n.history.savepoint_outlived = true;
                }
            }
            Err(v) => {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
        true
    }

    /// An ack the coordinator did not take (it is shut down), or whose last
    /// copy the network lost, leaves its state with the host, which deletes
    /// it unless the store references it or the coordinator owns it (what
    /// a host's cleaner spares: the store's checkpoints and
    /// `CoordinatorState::owned_handles`, which includes a checkpoint in
    /// doubt), or it is already gone.
    pub(super) fn reclaim(&self, n: &mut World, h: StateHandle) {
        let stored = n
            .durable
            .ledger
            .store()
            .iter()
            .any(|c| c.handles.contains(&h));
        let owned = n.coord.owned_handles().contains(&h);
        if !stored && !owned && n.durable.ledger.exists(h) {
            if let Err(v) = self.delete_state(n, h, Deleter::Host) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
    }

    /// The host resolves the checkpoint a shut-down coordinator left in
    /// doubt, once its finalize or store answer is in, exactly as
    /// `ResolveInDoubt` says: the store holds it, `discard_if_stored` goes;
    /// it does not, its metadata goes, then `discard_if_not_stored`.
    pub(super) fn resolve_in_doubt(&self, n: &mut World, answered: CheckpointId) {
        let Some(d) = n.durable.in_doubt.clone() else {
            return;
        };
        if d.checkpoint != answered {
            return;
        }
        n.durable.in_doubt = None;
        let list = if n.durable.ledger.holds(d.checkpoint) {
            n.history.in_doubt_kept = true;
            d.if_stored
        } else {
            n.durable.metadata.retain(|m| m.id != d.checkpoint);
            d.if_not_stored
        };
        for h in list {
            if let Err(v) = self.delete_state(n, h, Deleter::Host) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
    }

    /// Step 1 of the failover recipes: every running task attempt is
    /// stopped (closed): its mailbox and input channels go, and it runs
    /// nothing until [`Sim::start_tasks`]. Returns the attempts stopped.
    pub(super) fn stop_all(
        &self,
        n: &mut World,
        mut log: Option<&mut Vec<Delivery>>,
    ) -> Vec<(TaskId, AttemptNo)> {
        let mut stopped = Vec::new();
        for i in 0..n.tasks.len() {
            let t = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            let Some(side) = n.tasks.get(i) else { continue };
            if side.is_down() {
                continue;
            }
            stopped.push((t, side.attempt));
            self.task_event(n, t, TEv::Close, log.as_deref_mut());
            if let Some(side) = n.tasks.get_mut(i) {
                side.mailbox.clear();
                for c in &mut side.inputs {
                    c.queue.clear();
                }
            }
        }
        stopped
    }

    /// The crate docs' stop recipe, once `Stop` came: every task attempt
    /// stops, then the coordinator shuts down with the job finished. The
    /// job stays down until [`Action::ResumeJob`].
    pub(super) fn stop_job(
        &self,
        n: &mut World,
        savepoint: CheckpointId,
        mut log: Option<&mut Vec<Delivery>>,
    ) {
        n.stopped_with = Some(savepoint);
        self.stop_all(n, log.as_deref_mut());
        let status = JobStatus::Finished;
        self.coord_event(n, CEv::Shutdown { status }, log);
    }

    /// What the docs tell a host to do once `Finish` came: every task has
    /// finished already; the coordinator shuts down with the job finished.
    pub(super) fn finish_job(
        &self,
        n: &mut World,
        final_checkpoint: Option<CheckpointId>,
        log: Option<&mut Vec<Delivery>>,
    ) {
        // The job ended as its setting says: on its final checkpoint, or
        // (checkpoints after finish off) with its last task.
        n.history.finished_on_final =
            final_checkpoint.is_some() == self.cfg.checkpoints_after_finish;
        let status = JobStatus::Finished;
        self.coord_event(n, CEv::Shutdown { status }, log);
    }

    /// The last steps of the failover recipes, once `JobCommand::Restore`
    /// came: a fresh task state per task under its next attempt, then
    /// `TaskRunning` for each.
    pub(super) fn start_tasks(&self, n: &mut World, mut log: Option<&mut Vec<Delivery>>) {
        // Never for a job that finished (the finish wins over the restore
        // of its step, as `coord_event` routes them).
        if let Err(v) = check_restart(&n.coord) {
            n.violation.get_or_insert_with(|| Box::new(v));
        }
        n.awaiting_restore = false;
        for side in &mut n.tasks {
            let fresh = self.restarted_task(AttemptNo(side.attempt.0.saturating_add(1)));
            side.restart(fresh);
        }
        for i in 0..n.tasks.len() {
            let task = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            let attempt = n.tasks.get(i).map_or(AttemptNo(0), |s| s.attempt);
            self.coord_event(n, CEv::TaskRunning { task, attempt }, log.as_deref_mut());
        }
    }

    /// The coordinator's process died (`committed`: the store write of that
    /// checkpoint had become durable), or, with `zombie_coordinators`, it
    /// lost leadership and keeps running with its outstanding I/O. The
    /// crate docs' recovery recipe follows: the tasks are stopped; the new
    /// leader claims a generation above the store's newest; recovery
    /// removes what the store does not reference (half-written metadata,
    /// state files no stored checkpoint holds, as `FileStore::open` does);
    /// a new coordinator takes `Recover` from the store and the id counter,
    /// then `Restore { Latest }`; fresh task attempts start from it.
    pub(super) fn coordinator_failover(
        &self,
        n: &mut World,
        committed: Option<CheckpointId>,
        mut log: Option<&mut Vec<Delivery>>,
    ) {
        if let Some(c) = committed {
            self.commit(n, c);
        }
        let io = std::mem::take(&mut n.io);
        if n.used.zombies < self.cfg.zombie_coordinators && !io.is_empty() {
            n.used.zombies = n.used.zombies.saturating_add(1);
            n.zombie = Some(Box::new(Zombie {
                coord: n.coord.clone(),
                ledger: n.ledger.clone(),
                io,
            }));
        }
        self.stop_all(n, log.as_deref_mut());
        n.durable.metadata.clear();
        n.durable.in_doubt = None;
        let stray: Vec<StateHandle> = n
            .durable
            .ledger
            .live()
            .filter(|h| {
                !n.durable
                    .ledger
                    .store()
                    .iter()
                    .any(|c| c.handles.contains(h))
            })
            .collect();
        for h in stray {
            if let Err(v) = self.delete_state(n, h, Deleter::Host) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
        n.job_failover_due = false;
        n.scheduler_stopped = false;
        n.awaiting_restore = true;
        n.coord = match CoordinatorState::from_settings(self.settings.clone()) {
            Ok(c) => Sealed::new(c),
            Err(e) => panic!("settings rejected after validation: {e}"),
        };
        n.ledger = Sealed::new(HandleLedger::new());
        let checkpoints = n
            .durable
            .ledger
            .store()
            .iter()
            .map(|c| RecoveredCheckpoint {
                checkpoint: c.id,
                savepoint: c.savepoint,
                timestamp: c.timestamp,
                handles: c.handles.clone(),
            })
            .collect();
        let last_id = n.durable.counter;
        let generation = Generation(n.durable.fence.0.saturating_add(1));
        let recovered = self.coord_event(
            n,
            CEv::Recover {
                checkpoints,
                last_id,
                generation,
            },
            log.as_deref_mut(),
        );
        // The claim (create-if-absent in a real store) is of the
        // coordinator's own generation: the one every write carries.
        n.durable.fence = n.durable.fence.max(n.coord.generation());
        // The new coordinator must take over everything the store holds; a
        // refused recovery would restore nothing and leak the stored state.
        if let Outcome::Rejected(e) = &recovered {
            if let Err(v) = n.durable.ledger.nothing_restored(Some(&e.to_string())) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
        self.restore_latest(n, log.as_deref_mut());
        self.coord_event(n, CEv::StartScheduler, log);
    }

    /// A job failover after `JobCommand::Fail`, the crate docs' recipe:
    /// every task attempt is stopped, the coordinator hears `TaskFailed` for
    /// each, then `Restore { Latest }`; the tasks start again when
    /// `JobCommand::Restore` comes (at once, or when a completion in flight
    /// has answered).
    pub(super) fn job_failover(&self, n: &mut World, mut log: Option<&mut Vec<Delivery>>) {
        let stopped = self.stop_all(n, log.as_deref_mut());
        for (task, attempt) in stopped {
            self.coord_event(n, CEv::TaskFailed { task, attempt }, log.as_deref_mut());
        }
        n.awaiting_restore = true;
        self.restore_latest(n, log);
    }

    pub(super) fn restore_latest(&self, n: &mut World, log: Option<&mut Vec<Delivery>>) {
        let source = RestoreSource::Latest {
            error_if_none: false,
        };
        // What is restored (now or later) is checked where
        // `JobCommand::Restore` is routed.
        self.coord_event(n, CEv::Restore { source }, log);
    }
}
