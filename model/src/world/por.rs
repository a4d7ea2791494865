//! Partial-order reduction: ample sets of one task's local steps.
//!
//! In a state where several things may happen next, the exhaustive search
//! normally tries every order. When one task's local steps (its mailbox, its
//! input channels, its writer and async threads) can neither influence nor
//! be influenced by anything else that may happen before them, trying them
//! first is enough: every other order reaches the same states, or a state
//! this search also reaches. [`Sim::ample`] picks such a set of actions (an
//! *ample set*) and the search expands only those.
//!
//! ## When a task's steps form an ample set
//!
//! `A` = every enabled local action of one task `t` (mailbox, netty, input,
//! writer, async). The search takes `A` instead of everything enabled when
//! all of the following hold; each line says what would otherwise break.
//!
//! * **Nothing outside can change `t`, now or later.** No task failure,
//!   coordinator failover, job failover (nor one due), end of input of
//!   `t` or finish of any task (`--finished-tasks`) is left in the run's
//!   budgets, and no task is down (so no restart).
//!   Each of those rewrites `t`'s state or drops its queues.
//! * **No new local action of `t` can appear before one of `A` runs.** Its
//!   mailbox is not empty (a delivered mail only queues behind the head,
//!   and `Mailbox(t)` is already in `A`) or no mail can reach it (none is in
//!   flight to `t` and the coordinator will never emit another: shut down,
//!   or nothing pending, requested or outstanding and nothing left in the
//!   budgets that could start a checkpoint: `Sim::coordinator_done`),
//!   every input channel is not empty
//!   (an upstream item only queues behind the head), and `A` holds no fault
//!   variant (a failing writer / async part draws from the fault budget all
//!   fault actions share; with budget left, such a task is not used).
//!   Writer and async work only come from `t`'s own steps.
//! * **Every step in `A` commutes with everything outside `A`**, checked on
//!   its successor: it records no violation; `t` is not down after it; it
//!   appends nothing to `t`'s own mailbox (a checkpoint mail queued behind
//!   an RPC mail is exactly the FLINK-17869 race: the order matters); it
//!   deletes no state file that existed (a delete is ordered against the
//!   store's commits). What remains is local to `t`, appends to the RPC
//!   network and to downstream channel tails (which commute with every
//!   delivery and with the receivers' takes from the heads), and records a
//!   new state file of `t`'s own (no other action names it). A step's
//!   outcome depends only on `t`'s state and the heads of its queues (the
//!   task reducer does not read the clock), and nothing outside `A` changes
//!   those, so the check made here holds wherever the step runs later.
//!
//! ## Why verdicts are preserved
//!
//! The state graph is acyclic (every action consumes budget or work), so
//! the cycle proviso holds. Take any run from the state that ends in a
//! violation, or in a run end (no action left). Every action of `A` stays
//! enabled until it runs (only `t` takes from its queues) and a run end has
//! none left, so the run contains some `a` of `A`; everything before `a`
//! is outside `A` and commutes with it, so `a` first, then the rest, is a
//! run too, and reaches the same end, or an earlier violation (a quiet
//! state reached sooner may be checked sooner). Hence every violation and
//! every run end found without reduction is found with it, or another
//! violation is found first: the verdict of each `always` property over
//! violations and run ends is the same. Symmetry reduction composes (each
//! state's ample set is valid on its own; the argument is an induction on
//! the length of the shortest bad run). `sometimes` witnesses are *not*
//! preserved in general (a witness may be a state in between); the model
//! tests check that every witness of the pinned configurations is still
//! reached, and `check` reports any that is not.

use ckpt_core::task::Lifecycle;
use ckpt_core::TaskId;

use super::sim::{Action, Sim};
use super::state::World;

/// Which partial-order reduction a search applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Every enabled action is expanded.
    #[default]
    Off,
    /// Ample sets of one task's local steps (module docs).
    Ample,
    /// Unsound on purpose, for the tests that show the validation catches
    /// an unsound reduction: as `Ample`, but an empty mailbox or input
    /// channel counts as one nothing can reach, and a step that queues a
    /// mail in its own task's mailbox counts as independent, so a task's
    /// local steps always run before any RPC mail or barrier that could
    /// overtake them (the order FLINK-17869 lives in is not explored).
    LegacyIgnoresArrivals,
}

impl Sim {
    /// Narrows `enabled` (every action enabled in `s`, from
    /// [`Sim::enabled`]) to an ample set when one task's local steps form
    /// one (module docs); leaves it whole otherwise. Returns whether it
    /// narrowed.
    pub fn ample(&self, s: &World, enabled: &mut Vec<Action>, how: Reduction) -> bool {
        self.ample_stepped(s, enabled, how, &mut Vec::new())
    }

    /// [`Sim::ample`], keeping the successors it computed to decide: when
    /// it narrows, `stepped[i]` is `s` after `enabled[i]` (a search need not
    /// step them again); otherwise `stepped` is left empty.
    pub fn ample_stepped(
        &self,
        s: &World,
        enabled: &mut Vec<Action>,
        how: Reduction,
        stepped: &mut Vec<World>,
    ) -> bool {
        stepped.clear();
        let sound = match how {
            Reduction::Off => return false,
            Reduction::Ample => true,
            Reduction::LegacyIgnoresArrivals => false,
        };
        if enabled.len() < 2 || !self.nothing_rewrites_tasks(s) {
            return false;
        }
        let mut local = Vec::new();
        for t in 0..s.tasks.len() {
            let t = TaskId(u32::try_from(t).unwrap_or(u32::MAX));
            local.clear();
            local.extend(enabled.iter().copied().filter(|a| local_to(a) == Some(t)));
            if local.is_empty() || local.len() == enabled.len() {
                continue;
            }
            if self.ample_for(s, t, &local, sound, stepped) {
                enabled.clear();
                enabled.extend_from_slice(&local);
                return true;
            }
        }
        stepped.clear();
        false
    }

    /// No action now or later rewrites a task's state from outside: no
    /// failure, failover, restart or finish left, and no task down.
    fn nothing_rewrites_tasks(&self, s: &World) -> bool {
        let cfg = &self.cfg;
        s.used.task_failures >= cfg.task_failures
            && s.used.coordinator_failovers >= cfg.coordinator_failovers
            && s.used.job_failovers >= cfg.job_failovers
            && !s.job_failover_due
            && !self.may_finish(s)
            && s.tasks.iter().all(|side| !side.is_down())
    }

    /// Whether `local` (every enabled local action of `t`) is an ample set.
    fn ample_for(
        &self,
        s: &World,
        t: TaskId,
        local: &[Action],
        sound: bool,
        stepped: &mut Vec<World>,
    ) -> bool {
        let Some(side) = s.tasks.get(t.0 as usize) else {
            return false;
        };
        let may_end = (s.used.end_of_input < self.cfg.end_of_input
            && self.settings().tasks_to_trigger.contains(&t)
            && side.st.lifecycle() == Lifecycle::Running)
            || self.may_finish(s);
        if may_end
            || (sound && side.mailbox.is_empty() && self.may_mail(s, t))
            || (sound
                && side
                    .inputs
                    .iter()
                    .any(|c| c.queue.is_empty() && !self.inert(s, c.from)))
            || local.iter().any(Action::is_fault)
        {
            return false;
        }
        stepped.clear();
        for a in local {
            match self.commutes(s, t, *a, sound) {
                Some(n) => stepped.push(n),
                None => return false,
            }
        }
        true
    }

    /// Whether a task may still finish (`finished_tasks` budget left): a
    /// finish rewrites a task from outside and may start the final
    /// checkpoint, so while one may come no task's steps are ample.
    fn may_finish(&self, s: &World) -> bool {
        s.used.finished_tasks < self.cfg.finished_tasks
    }

    /// Whether an RPC mail may still reach `t`: one is in flight, or the
    /// coordinator may still emit one (it is not [`Sim::coordinator_done`]).
    fn may_mail(&self, s: &World, t: TaskId) -> bool {
        !self.coordinator_done(s) || s.net.iter().any(|m| !m.to_coordinator() && m.task() == t)
    }

    /// Whether the coordinator will never emit another mail, whatever
    /// happens next (asked only where no failover is left,
    /// [`Sim::nothing_rewrites_tasks`]). Either it is shut down (a
    /// shut-down coordinator emits nothing), or it has nothing left to say:
    /// no checkpoint pending (the mails of a completion or an abort, to
    /// every task, are sent in the step that ends it), no request in flight
    /// or queued, no I/O outstanding, and nothing left in the run's budgets
    /// that could start a checkpoint (periodic firings, savepoints, user
    /// checkpoints, a scheduler restart, an end of input). What may still
    /// reach it then, a late ack or decline or a stale timeout, finds no
    /// checkpoint and is ignored, so this stays true until the run ends.
    fn coordinator_done(&self, s: &World) -> bool {
        let cfg = &self.cfg;
        s.coord.is_shutdown()
            || (s.used.triggers >= cfg.checkpoints
                && s.used.savepoints >= cfg.savepoints
                && s.used.user_checkpoints >= cfg.user_checkpoints
                && s.used.scheduler_stops >= cfg.scheduler_restarts
                && !s.scheduler_stopped
                && s.used.end_of_input >= cfg.end_of_input
                && !self.may_finish(s)
                && s.io.is_empty()
                && s.coord.pending_count() == 0
                && s.coord.in_flight().is_none()
                && s.coord.queued().next().is_none())
    }

    /// Whether task `u` will never step again: no mail may reach it, its
    /// mailbox is empty, it has no input channel (a source) and no
    /// outstanding work, and its input may not end.
    fn inert(&self, s: &World, u: TaskId) -> bool {
        let Some(side) = s.tasks.get(u.0 as usize) else {
            return false;
        };
        let may_end = (s.used.end_of_input < self.cfg.end_of_input
            && self.settings().tasks_to_trigger.contains(&u))
            || self.may_finish(s);
        !may_end
            && !self.may_mail(s, u)
            && side.mailbox.is_empty()
            && side.inputs.is_empty()
            && !side.st.has_outstanding_work()
    }

    /// The successor check of the module docs for one local step of `t`:
    /// the successor if the step passes it.
    fn commutes(&self, s: &World, t: TaskId, a: Action, sound: bool) -> Option<World> {
        let n = self.step(s, a, None)?;
        let (Some(before), Some(after)) = (s.tasks.get(t.0 as usize), n.tasks.get(t.0 as usize))
        else {
            return None;
        };
        let kept = match a {
            Action::Mailbox(_) => before.mailbox.get(1..).unwrap_or(&[]),
            _ => &before.mailbox[..],
        };
        let commutes = n.violation.is_none()
            && !after.is_down()
            && (!sound || after.mailbox == kept)
            && s.durable.ledger.live().all(|h| n.durable.ledger.exists(h));
        commutes.then_some(n)
    }
}

/// The task whose local step `a` is (`None` for everything else).
fn local_to(a: &Action) -> Option<TaskId> {
    match a {
        Action::Netty(t, _)
        | Action::Input(t, _)
        | Action::Mailbox(t)
        | Action::Writer(t, _, _)
        | Action::Async(t, _, _)
        | Action::AsyncReused(t, _) => Some(*t),
        Action::Fire(_)
        | Action::Answer(..)
        | Action::Deliver(_)
        | Action::Duplicate(_)
        | Action::Drop(_)
        | Action::Shutdown
        | Action::Savepoint
        | Action::UserCheckpoint { .. }
        | Action::FailTask(_)
        | Action::RestartTask(_)
        | Action::StopScheduler
        | Action::StartScheduler
        | Action::CoordinatorFailover { .. }
        | Action::JobFailover
        | Action::EndOfInput(_)
        | Action::ZombieAnswer(_)
        | Action::StopWithSavepoint
        | Action::ResumeJob
        | Action::DisposeSavepoint(_)
        | Action::FinishTask(_) => None,
    }
}
