//! The coordinator and its tasks together: a random scheduler over the one
//! world of `ckpt-model` ([`ckpt_model::world`]), whose module docs state
//! the semantics (network, mailboxes, data channels, I/O, timers, task
//! failover). The stateright model explores the same world exhaustively;
//! this scheduler walks it at random with realistic timing, long runs and
//! many more faults.
//!
//! A story is a [`SystemSpec`] (the world's shape and timing, folded into
//! small ranges) and a list of [`SysAction`]s, each resolved against the
//! actions the world enables at that moment, so every action is meaningful
//! in every state and a shrunk story stays a valid story. Timers are not
//! picked like other actions: the scheduler keeps a clock, and
//! [`SysAction::Tick`] / [`SysAction::FireNextTimer`] fire what is due,
//! earliest first, as a host's timer thread would. Every event goes through
//! the world's checked step with [`Rigor::Full`] (determinism, pure equals
//! in place, every invariant).
//!
//! [`SystemDriver::heal`] stops the faults and keeps the world moving
//! (deliver, answer, run mails and local work, restart failed tasks, start a
//! stopped scheduler, and fire the next timer when nothing else can
//! happen): a checkpoint must then complete within a bounded number of
//! steps.

use std::sync::{Arc, Mutex};

use arbitrary::Arbitrary;
use ckpt_core::coordinator::{CoordinatorState, Timer};
use ckpt_core::invariants::checked::Rigor;
use ckpt_core::invariants::Violation;
use ckpt_core::task::{Semantics, TaskState};
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{CheckpointId, Millis};
use ckpt_model::world::coverage::Coverage;
use ckpt_model::world::{Action, Delivery, ModelConfig, Network, Sim, Timing, Topology, World};

use super::Failure;

/// The shape of the system (folded into small ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct SystemSpec {
    /// Downstream tasks (folded to 0..=2).
    pub downstream: u8,
    /// Master hooks registered.
    pub hooks: bool,
    /// Interval (folded to 10..=109 ms).
    pub interval: u8,
    /// Timeout (folded to 20..=219 ms).
    pub timeout: u8,
    /// Minimum pause (folded to 0..=49 ms).
    pub min_pause: u8,
    /// Max concurrent (folded to 1..=2).
    pub max_concurrent: u8,
    /// Tolerable failures (folded to 0..=2).
    pub tolerable: u8,
    /// Retained (folded to 1..=2).
    pub retained: u8,
    /// Aborted-id memory of the tasks (folded to 1..=3); the quotient of
    /// that fold, folded to 0..=2, is the number of restarted attempts per
    /// task that replay in-flight channel state (`recovering_tasks`).
    pub aborted_ids_max: u8,
    /// Two sources joined into one downstream task (3 tasks) instead of one
    /// source fanned out.
    pub join: bool,
    /// A source may reach the end of its input (then no checkpoint can
    /// complete any more, and healing is not required), and, fan-out
    /// only, every task may finish (`finished_tasks`).
    pub finish: bool,
}

impl SystemSpec {
    /// Number of tasks (source included).
    #[must_use]
    pub fn tasks(&self) -> u32 {
        if self.join {
            3
        } else {
            u32::from(self.downstream % 3) + 1
        }
    }

    /// The world this spec describes: a duplicating, dropping, reordering
    /// RPC network, every fault kind, generous budgets, no shutdown.
    #[must_use]
    pub fn world(&self, semantics: Semantics) -> ModelConfig {
        ModelConfig {
            tasks: self.tasks(),
            checkpoints: u8::MAX,
            max_concurrent: self.max_concurrent % 2 + 1,
            network: Network::ReorderDupDrop,
            faults: u8::MAX,
            io_faults: true,
            task_faults: true,
            shutdown: false,
            topology: if self.join {
                Topology::Join
            } else {
                Topology::Fanout
            },
            semantics,
            savepoints: 4,
            task_failures: 8,
            scheduler_restarts: 4,
            user_checkpoints: 8,
            master_hooks: u32::from(self.hooks),
            timing: Timing {
                interval_ms: u64::from(self.interval % 100) + 10,
                timeout_ms: u64::from(self.timeout % 200) + 20,
                min_pause_ms: u64::from(self.min_pause % 50),
            },
            tolerable_failures: self.tolerable % 3,
            retained: self.retained % 2 + 1,
            aborted_ids_max: self.aborted_ids_max % 3 + 1,
            coordinator_failovers: 2,
            job_failovers: 4,
            savepoint_restore: false,
            end_of_input: u8::from(self.finish),
            shared_state: self.retained % 2 == 1,
            zombie_coordinators: 1,
            dispose_savepoints: true,
            stop_with_savepoint: true,
            // A story whose source may end its input may also finish its
            // tasks (FLIP-147, the final checkpoint); fan-out only, as in
            // the model.
            finished_tasks: if self.finish && !self.join {
                u8::try_from(self.tasks()).unwrap_or(u8::MAX)
            } else {
                0
            },
            checkpoints_after_finish: true,
            shared_files: self.retained.is_multiple_of(2),
            // Restarted attempts that replay channel state (0..=2), from
            // the bits of `aborted_ids_max` its fold leaves unused.
            recovering_tasks: self.aborted_ids_max / 3 % 3,
        }
    }
}

/// One abstract step of a system story. Indices pick among what the world
/// enables (modulo its length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum SysAction {
    /// Take one enabled action that makes progress ([`Kind::Progress`]):
    /// deliver a message, answer an I/O request, run a mail, a barrier, a
    /// cancel marker, writer or async work, restart a failed task, start a
    /// stopped scheduler.
    Act(u8),
    /// Inject one enabled fault ([`Kind::Fault`]): drop or duplicate a
    /// message, fail an I/O answer, a writer or an async part.
    Fault(u8),
    /// Fail a task genuinely or kill the coordinator's process
    /// ([`Kind::Crash`]).
    Crash(u8),
    /// A user request ([`Kind::User`]): a savepoint, a (forced) checkpoint,
    /// a scheduler stop.
    User(u8),
    /// Deliver every message in flight, oldest first (no faults).
    Flush,
    /// Time passes; due timers fire, earliest first.
    Tick(u16),
    /// Time jumps to the next timer deadline; it fires.
    FireNextTimer,
}

/// A whole system story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct SystemStory {
    /// The shape.
    pub spec: SystemSpec,
    /// The actions (the scheduler is started first).
    pub actions: Vec<SysAction>,
}

/// Counters of what happened (for reports and generator checks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysStats {
    /// World actions taken.
    pub actions: usize,
    /// Events delivered to the machines.
    pub events: usize,
    /// Messages dropped by the network.
    pub dropped: usize,
    /// Messages duplicated.
    pub duplicated: usize,
    /// Checkpoints completed (the new latest ids, in order).
    pub completed: Vec<CheckpointId>,
    /// Task restarts.
    pub restarts: usize,
    /// Faults injected.
    pub faults: usize,
}

/// Drives the world with a random schedule.
#[derive(Clone, Debug)]
pub struct SystemDriver {
    sim: Sim,
    /// The world now.
    pub world: World,
    /// Every event delivered, with its effects and outcome.
    pub log: Vec<Delivery>,
    /// Counters.
    pub stats: SysStats,
    /// The enabled actions' buffer, reused by every choice (listing them
    /// is the driver's most frequent call; a fresh `Vec` each time cost a
    /// tenth of a fuzz execution in reallocations).
    enabled: Vec<Action>,
}

/// How the scheduler sorts the world's actions (each [`SysAction`] picks
/// within one kind, so the generators control the mix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Moves the world on (also what healing takes).
    Progress,
    /// A fault of the network, the host's I/O or a task's local work.
    Fault,
    /// A genuine task failure.
    Crash,
    /// A user request.
    User,
    /// A timer: fired by the clock, never picked.
    Timer,
}

/// The kind of a world action.
#[must_use]
pub fn kind(a: &Action) -> Kind {
    match a {
        Action::Answer(_, ok) | Action::Writer(_, _, ok) | Action::Async(_, _, ok) => {
            if *ok {
                Kind::Progress
            } else {
                Kind::Fault
            }
        }
        Action::Deliver(_)
        | Action::Netty(..)
        | Action::Input(..)
        | Action::Mailbox(_)
        | Action::RestartTask(_)
        | Action::StartScheduler
        | Action::JobFailover
        | Action::ResumeJob
        | Action::ZombieAnswer(_)
        | Action::Recovery(..)
        | Action::AsyncReused(..) => Kind::Progress,
        Action::Duplicate(_) | Action::Drop(_) => Kind::Fault,
        Action::FailTask(_) | Action::CoordinatorFailover { .. } => Kind::Crash,
        Action::Shutdown
        | Action::Savepoint
        | Action::UserCheckpoint { .. }
        | Action::StopScheduler
        | Action::EndOfInput(_)
        | Action::FinishTask(_)
        | Action::StopWithSavepoint
        | Action::DisposeSavepoint(_) => Kind::User,
        Action::Fire(_) => Kind::Timer,
    }
}

impl SystemDriver {
    /// A fresh world with the scheduler started; its log renders every
    /// delivery's effects and outcome.
    #[must_use]
    pub fn new(spec: &SystemSpec, semantics: Semantics) -> Self {
        Self::with_sim(Sim::new(spec.world(semantics)).with_rigor(Rigor::Full))
    }

    /// As [`SystemDriver::new`], but the log keeps only the trace lines and
    /// violations (no `Debug` rendering per delivery: for the fuzz target,
    /// where it was a fifth of the time).
    #[must_use]
    pub fn unrendered(spec: &SystemSpec, semantics: Semantics) -> Self {
        Self::with_sim(
            Sim::new(spec.world(semantics))
                .with_rigor(Rigor::Full)
                .without_rendering(),
        )
    }

    /// The driver keeps one world and never fingerprints it: the parts a
    /// step changes are not hashed (`Sim::without_sealing`; a hash, if
    /// asked for, is computed then).
    fn with_sim(sim: Sim) -> Self {
        let sim = sim.without_sealing();
        let (world, log) = sim.init_with_log();
        SystemDriver {
            sim,
            world,
            stats: SysStats {
                events: log.len(),
                ..SysStats::default()
            },
            log,
            enabled: Vec::with_capacity(64),
        }
    }

    /// The coordinator now.
    #[must_use]
    pub fn coordinator(&self) -> &CoordinatorState {
        &self.world.coord
    }

    /// The current task attempts' states.
    #[must_use]
    pub fn task_states(&self) -> Vec<TaskState> {
        self.world.tasks.iter().map(|t| t.st.clone()).collect()
    }

    /// Everything delivered so far as a trace (task attempts are separate
    /// machines, keyed as the world keys them).
    #[must_use]
    pub fn trace(&self) -> Trace {
        let mut tasks = Vec::new();
        for d in &self.log {
            if let TraceLine::Task { task, .. } = &d.line {
                if !tasks.iter().any(|(t, _)| t == task) {
                    tasks.push((*task, self.sim.task_config().clone()));
                }
            }
        }
        tasks.sort_by_key(|(t, _)| *t);
        Trace {
            coordinator: Some(self.sim.settings().clone()),
            tasks,
            steps: self.log.iter().map(|d| d.line.clone()).collect(),
        }
    }

    /// The `pick`-th (modulo their number) enabled action of kind `want`,
    /// in the world's order; `None` if no action of that kind is enabled.
    fn pick_enabled(&mut self, want: Kind, pick: usize) -> Option<Action> {
        self.list_enabled();
        self.enabled.retain(|a| kind(a) == want);
        super::pick(&self.enabled, pick)
    }

    /// The first enabled action `wanted` accepts, in the world's order.
    fn first_enabled(&mut self, wanted: impl Fn(&Action) -> bool) -> Option<Action> {
        self.list_enabled();
        self.enabled.iter().copied().find(wanted)
    }

    /// Refills the buffer with every action enabled now.
    fn list_enabled(&mut self) {
        self.enabled.clear();
        self.sim.enabled(&self.world, &mut self.enabled);
    }

    /// Takes one world action; the first violation it records is returned.
    fn take(&mut self, a: Action) -> Result<(), Violation> {
        let before = self.log.len();
        let latest = self.world.coord.latest_completed();
        if !self
            .sim
            .step_in_place(&mut self.world, a, Some(&mut self.log))
        {
            return Ok(());
        }
        self.stats.actions += 1;
        self.stats.events += self.log.len() - before;
        match a {
            Action::Drop(_) => self.stats.dropped += 1,
            Action::Duplicate(_) => self.stats.duplicated += 1,
            Action::RestartTask(_) => self.stats.restarts += 1,
            Action::Fire(_)
            | Action::Answer(..)
            | Action::Deliver(_)
            | Action::Netty(..)
            | Action::Input(..)
            | Action::Mailbox(_)
            | Action::Writer(..)
            | Action::Async(..)
            | Action::Shutdown
            | Action::Savepoint
            | Action::UserCheckpoint { .. }
            | Action::FailTask(_)
            | Action::StopScheduler
            | Action::StartScheduler
            | Action::CoordinatorFailover { .. }
            | Action::JobFailover
            | Action::EndOfInput(_)
            | Action::ZombieAnswer(_)
            | Action::AsyncReused(..)
            | Action::StopWithSavepoint
            | Action::ResumeJob
            | Action::FinishTask(_)
            | Action::Recovery(..)
            | Action::DisposeSavepoint(_) => {}
        }
        if a.is_fault() {
            self.stats.faults += 1;
        }
        let now = self.world.coord.latest_completed();
        if now != latest {
            if let Some(cp) = now {
                self.stats.completed.push(cp);
            }
        }
        match &self.world.violation {
            Some(v) => Err(Violation::clone(v)),
            None => Ok(()),
        }
    }

    /// The armed timer due first (deadline, then the timer order), if it
    /// may fire.
    fn next_timer(&self) -> Option<(Timer, Millis)> {
        self.world
            .coord
            .timers()
            .filter(|(t, _)| self.sim.may_fire(&self.world, **t))
            .map(|(t, at)| (*t, *at))
            .min_by_key(|(t, at)| (*at, *t))
    }

    /// Fires every timer due at the world's clock, earliest first.
    fn fire_due(&mut self) -> Result<(), Violation> {
        // Each firing consumes its timer or a periodic firing; the periodic
        // timer re-arms in the future, so this ends.
        for _ in 0..64 {
            match self.next_timer() {
                Some((timer, at)) if at <= self.world.now => self.take(Action::Fire(timer))?,
                Some(_) | None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Jumps to the next deadline and fires it; `false` if none is armed.
    fn fire_next(&mut self) -> Result<bool, Violation> {
        match self.next_timer() {
            Some((timer, _)) => self.take(Action::Fire(timer)).map(|()| true),
            None => Ok(false),
        }
    }

    /// Resolves and runs one abstract action.
    pub fn act(&mut self, action: SysAction) -> Result<(), Violation> {
        match action {
            SysAction::Act(i) | SysAction::Fault(i) | SysAction::Crash(i) | SysAction::User(i) => {
                let want = match action {
                    SysAction::Fault(_) => Kind::Fault,
                    SysAction::Crash(_) => Kind::Crash,
                    SysAction::User(_) => Kind::User,
                    SysAction::Act(_)
                    | SysAction::Flush
                    | SysAction::Tick(_)
                    | SysAction::FireNextTimer => Kind::Progress,
                };
                match self.pick_enabled(want, usize::from(i)) {
                    Some(a) => self.take(a),
                    None => Ok(()),
                }
            }
            SysAction::Flush => {
                for _ in 0..256 {
                    match self.sim.first_deliver(&self.world) {
                        Some(a) => self.take(a)?,
                        None => break,
                    }
                }
                Ok(())
            }
            SysAction::Tick(ms) => {
                let now = self.world.now.saturating_add(u64::from(ms));
                self.sim.advance(&mut self.world, now);
                self.fire_due()
            }
            SysAction::FireNextTimer => self.fire_next().map(|_| ()),
        }
    }

    /// Faults stop: the first enabled action that makes progress is taken
    /// (see the module docs), and when nothing else can happen time jumps
    /// to the next timer. Returns the first checkpoint completed after
    /// healing began, or a `liveness` violation if none completes within
    /// `bound` steps.
    pub fn heal(&mut self, bound: usize) -> Result<CheckpointId, Violation> {
        let before = self.stats.completed.len();
        for _ in 0..bound {
            if let Some(cp) = self.stats.completed.get(before) {
                return Ok(*cp);
            }
            if let Some(a) = self.first_enabled(|a| kind(a) == Kind::Progress) {
                self.take(a)?;
                continue;
            }
            if !self.fire_next()? {
                return Err(Violation::new(
                    "liveness",
                    "healed system is stuck: nothing in flight, no mail, no timer armed",
                ));
            }
        }
        if let Some(cp) = self.stats.completed.get(before) {
            return Ok(*cp);
        }
        Err(Violation::new(
            "liveness",
            format!(
                "no checkpoint completed within {bound} steps after healing \
                 (pending {:?}, in flight {}, timers {:?})",
                self.world
                    .coord
                    .pending()
                    .map(|p| (p.id(), p.phase(), p.remaining()))
                    .collect::<Vec<_>>(),
                self.world.net.len(),
                self.world.coord.timers().collect::<Vec<_>>()
            ),
        ))
    }
}

/// Runs a story, checking every invariant after every step; with
/// `heal_bound`, then heals and requires a completion within that many
/// steps.
pub fn run(
    story: &SystemStory,
    semantics: Semantics,
    heal_bound: Option<usize>,
) -> Result<SystemDriver, Box<Failure>> {
    drive_story(SystemDriver::new(&story.spec, semantics), story, heal_bound)
}

/// As [`run`], with a driver that does not render its log
/// ([`SystemDriver::unrendered`]): the same checks, for the fuzz target.
pub fn run_unrendered(
    story: &SystemStory,
    semantics: Semantics,
    heal_bound: Option<usize>,
) -> Result<SystemDriver, Box<Failure>> {
    drive_story(
        SystemDriver::unrendered(&story.spec, semantics),
        story,
        heal_bound,
    )
}

/// As [`run_unrendered`], recording every transition of every machine
/// into `coverage` (the transition coverage table, `ckpt-coverage`).
pub fn run_recording(
    story: &SystemStory,
    semantics: Semantics,
    heal_bound: Option<usize>,
    coverage: &Arc<Mutex<Coverage>>,
) -> Result<SystemDriver, Box<Failure>> {
    let mut sim = Sim::new(story.spec.world(semantics))
        .with_rigor(Rigor::Full)
        .without_rendering();
    sim.coverage = Some(Arc::clone(coverage));
    drive_story(SystemDriver::with_sim(sim), story, heal_bound)
}

fn drive_story(
    mut d: SystemDriver,
    story: &SystemStory,
    heal_bound: Option<usize>,
) -> Result<SystemDriver, Box<Failure>> {
    if let Some(v) = d.world.violation.as_deref().cloned() {
        return Err(Failure::at(0, v, d.trace()));
    }
    super::drive(
        &mut d,
        story.actions.iter().copied(),
        SystemDriver::act,
        SystemDriver::trace,
    )?;
    // A source whose input ended declines every later checkpoint, and a
    // job that finished (every task finished, its final checkpoint
    // committed) or that a stop-with-savepoint ended (until the user
    // starts it again, which is no healing step) takes none: nothing can
    // complete after that, so healing has nothing to show. Tasks that
    // finished while others run leave the plans, which trigger the
    // others: healing still applies.
    let job_finished = matches!(
        d.world.coord.finish_phase(),
        Some(ckpt_core::coordinator::FinishPhase::Finished { .. })
    );
    let finished = d.world.used.end_of_input > 0 || job_finished || d.world.stopped_with.is_some();
    if let (Some(bound), false) = (heal_bound, finished) {
        if let Err(violation) = d.heal(bound) {
            return Err(Failure::at(story.actions.len(), violation, d.trace()));
        }
    }
    Ok(d)
}
