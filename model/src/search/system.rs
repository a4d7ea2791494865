//! The stateright model: an exhaustive scheduler over the [one world](crate::world).
//! Its actions are the world's enabled actions, its transitions the world's
//! steps; what this module adds is the properties (each `always` paired
//! with a `sometimes` witness) and the liveness check at run ends. What the
//! Explorer shows of it is given from above, as a [`Presenter`] (the render
//! layer's `render::explorer::View`).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ckpt_core::invariants;
use ckpt_core::DeclineReason;
use stateright::{Model, Property};

use crate::search::engine::{fingerprint, Expand};
use crate::world::{Action, ModelConfig, Msg, Reduction, Sim, Topology, World, ROUTED};

/// The model's state: the world's.
pub type SysState = World;

/// The model: the world's dynamics plus the choice of properties.
#[derive(Clone, Debug)]
pub struct SysModel {
    /// The world: the configuration and its dynamics.
    pub sim: Sim,
    /// Only the `always` properties (for shortest counterexamples).
    pub safety_only: bool,
    /// Set to stop a search (a resource limit): every successor is then
    /// out of bounds, so the checker's workers drain and end.
    pub stop: Option<Arc<AtomicBool>>,
    /// Search from these states (each with the actions that reach it from
    /// the initial state) instead of the initial state: a shard's
    /// frontier ([`crate::search::shard`]).
    pub roots: Option<Roots>,
    /// Partial-order reduction: expand an ample set of one task's local
    /// steps where one exists ([`Sim::ample`]).
    pub reduction: Reduction,
    /// How the Explorer shows actions, steps and paths (`None`: the world's
    /// descriptions and stateright's defaults).
    pub presenter: Option<Arc<dyn Presenter>>,
}

/// How the Explorer shows the model: given by the layer that renders
/// (`render::explorer::View`), so that the model, below it, does not depend
/// on it.
pub trait Presenter: std::fmt::Debug + Send + Sync {
    /// An action's label in the lists of actions.
    fn action(&self, sim: &Sim, action: &Action) -> String;
    /// What a step shows when selected: the step, then the state it leads
    /// to (`None`: `action` is not enabled in `last`).
    fn step(&self, sim: &Sim, last: &World, action: Action) -> Option<String>;
    /// A picture of the path (SVG).
    fn path(&self, sim: &Sim, actions: &[Action]) -> Option<String>;
}

/// Start states of a search, each with the actions that reach it.
pub type Roots = Arc<Vec<(World, Vec<Action>)>>;

/// The actions that reach `first` from the initial state, if it is one of
/// `roots` (the frontier state a shard's path starts at).
#[must_use]
pub fn prefix_of<'a>(roots: &'a [(World, Vec<Action>)], first: &World) -> Option<&'a [Action]> {
    roots
        .iter()
        .find(|(s, _)| s == first)
        .map(|(_, p)| p.as_slice())
}

impl Deref for SysModel {
    type Target = Sim;
    fn deref(&self) -> &Sim {
        &self.sim
    }
}

/// Property names (stable; tests and the JSON summary use them). A name
/// does not repeat its expectation: output and the Explorer print it after
/// `always`, `sometimes` or `eventually`.
pub mod props {
    /// No [`TaskEffect::Fail`](ckpt_core::task::TaskEffect::Fail) for a
    /// non-genuine reason.
    pub const NO_SPURIOUS_FAILURE: &str = "no spurious task failure";
    /// Completion only with every ack: a checkpoint's plan waits for every
    /// task (a task that is down is never planned as finished).
    pub const COMPLETE_ALL_ACKS: &str = "checkpoint completes only with all acks";
    /// Completed ids increase.
    pub const COMPLETED_INCREASE: &str = "completed checkpoint ids increase";
    /// Pending / queue bounded.
    pub const PENDING_BOUNDED: &str = "pending checkpoints bounded";
    /// Write results completed or failed and removed at quiescence.
    pub const NO_LEAKED_RESULT: &str = "write results settled and removed when quiet";
    /// Handles retained or discarded exactly once.
    pub const HANDLES: &str = "state handles retained or discarded exactly once";
    /// Nothing emitted after shutdown.
    pub const NOTHING_AFTER_SHUTDOWN: &str = "nothing after shutdown";
    /// Committed state is never deleted (and a commit finds all its state).
    pub const DURABLE: &str = "committed state is never lost";
    /// A restore restores the store's latest checkpoint with all its state.
    pub const RESTORE: &str = "a restore is of the store's latest checkpoint";
    /// Checkpoint ids never repeat, across failovers too.
    pub const IDS: &str = "checkpoint ids never repeat";
    /// Tasks hear of a completion only after the store committed it.
    pub const NOTIFY: &str = "completion is notified only after the store committed";
    /// The store commits in the one legal order, and accepts every legal
    /// commit (it agrees with the coordinator on what may be committed).
    pub const COMMIT_ORDER: &str = "the store and the coordinator agree on the commit order";
    /// A stop-with-savepoint is the job's last checkpoint: nothing is
    /// triggered after it was asked for, and the job stops on it only with
    /// nothing else in flight.
    pub const STOP: &str = "a stop-with-savepoint is the job's last checkpoint";
    /// A checkpoint that starts on a task replaying in-flight channel
    /// state holds the input not yet replayed (core's
    /// `recovered_input_captured`).
    pub const RECOVERY: &str = "a checkpoint during recovery holds the input not yet recovered";
    /// A checkpoint a task was told is aborted (before it executed) never
    /// executes.
    pub const ABORT_HONOURED: &str = "an aborted checkpoint never executes on a task";
    /// A task that finishes fails no checkpoint count and no job
    /// (FLINK-33186), and a job whose tasks all finished ends on its final
    /// checkpoint (FLIP-147).
    pub const FINISH: &str = "a finish fails nothing and the job ends on its final checkpoint";
    /// A physical file (`--shared-files`) is deleted once, and only after
    /// its last reference (no segment in it still exists).
    pub const FILES: &str = "a physical file is deleted once, after its last reference";
    /// Every other core invariant.
    pub const OTHER: &str = "every other core invariant";
    /// Sometimes: the state of a checkpoint in doubt at shutdown is kept
    /// because the store committed it.
    pub const S_IN_DOUBT_KEPT: &str = "a checkpoint in doubt at shutdown is kept by the store";
    /// Sometimes: a task is notified that a checkpoint completed.
    pub const S_NOTIFIED: &str = "a task is notified that a checkpoint completed";
    /// Sometimes: a checkpoint id is allocated twice by... (never): a new id
    /// is used after a checkpoint was aborted (ids keep growing).
    pub const S_ID_AFTER_ABORT: &str = "a new checkpoint is triggered after one was aborted";
    /// Sometimes (failovers or a savepoint start): a checkpoint is restored.
    pub const S_RESTORED: &str = "a checkpoint's state is restored";
    /// Sometimes: a checkpoint completes.
    pub const S_COMPLETES: &str = "a checkpoint completes";
    /// Sometimes: an abort, then a later completion.
    pub const S_ABORT_THEN_COMPLETE: &str = "one is aborted and a later one completes";
    /// Sometimes: an abort overtakes a checkpoint on a task (declined).
    pub const S_ABORT_RACE: &str = "a task declines a checkpoint the coordinator aborted";
    /// Sometimes: two checkpoints complete.
    pub const S_TWO_COMPLETE: &str = "two checkpoints complete";
    /// Sometimes: the concurrency bound throttles a request.
    pub const S_THROTTLED: &str = "a request waits for the concurrency bound";
    /// Sometimes: quiet after a checkpoint ran on every task.
    pub const S_QUIET: &str = "the system is quiet after checkpointing";
    /// Sometimes: a handle is discarded.
    pub const S_DISCARD: &str = "a state handle is discarded";
    /// Sometimes: a message reaches a shut-down coordinator.
    pub const S_AFTER_SHUTDOWN: &str = "a message arrives after shutdown";
    /// Sometimes (only with `--savepoints` > 0): a savepoint completes.
    pub const S_SAVEPOINT: &str = "a savepoint completes";
    /// Sometimes (only with `--task-failures` > 0): a checkpoint that waited
    /// for a restarted task attempt completes.
    pub const S_FAILOVER: &str = "a checkpoint completes after a task failover";
    /// Sometimes (only with `--savepoints`): a savepoint commits after a
    /// newer checkpoint.
    pub const S_SAVEPOINT_AFTER_NEWER: &str = "a savepoint commits after a newer checkpoint";
    /// Sometimes (savepoints and more checkpoints than retained): the
    /// store's retention evicts a checkpoint and keeps an older savepoint.
    pub const S_SAVEPOINT_OUTLIVED: &str = "a savepoint outlives the retention of checkpoints";
    /// Sometimes (job failovers with concurrent checkpoints): a restore
    /// waits for a completion in flight.
    pub const S_RESTORE_WAITED: &str = "a restore waits for a checkpoint being stored";
    /// Sometimes (`--zombie-coordinators`): a deposed coordinator's write
    /// is refused.
    pub const S_FENCED: &str = "a deposed coordinator's write is refused";
    /// Sometimes (`--shared-state`): a checkpoint commits with state a
    /// stored checkpoint holds.
    pub const S_SHARED: &str = "a checkpoint commits state another stored checkpoint holds";
    /// Sometimes (`--shared-files`): a physical file that two logical
    /// handles shared is deleted after its last reference.
    pub const S_SHARED_FILE_DELETED: &str =
        "a physical file shared by two handles is deleted after its last reference";
    /// Sometimes (`--dispose-savepoints`): the user disposes of a savepoint.
    pub const S_DISPOSED: &str = "a savepoint is disposed of";
    /// Sometimes (`--stop-with-savepoint`): the job stops on a savepoint
    /// and a new run starts from it.
    pub const S_STOP_RESUMED: &str = "a job stopped with a savepoint resumes from it";
    /// Sometimes (`--finished-tasks`, every task): every task finished and
    /// the job finished on its final checkpoint.
    pub const S_FINISHED: &str =
        "every task finished and the job ended on its final checkpoint (with its last task when checkpoints after finish are off)";
    /// Eventually: every run ends quiet (no deadlock, nothing stuck).
    pub const E_QUIET: &str = "every run ends quiet";
    /// At every run end (a state with no action left): no task waits for
    /// alignment on a checkpoint announced on only some of its inputs.
    pub const E_ALIGNED: &str = "at run end no task waits for alignment";
    /// At every run end: no trigger request is in progress or queued.
    pub const E_NO_TRIGGER_STUCK: &str = "at run end no trigger stays in progress";
    /// At every run end: the scheduler is not on with periodic firings
    /// left (its timer would be armed, and the run would not have ended).
    pub const E_PERIODIC_ARMED: &str = "at run end the periodic trigger is not dead";
    /// At every run end: every checkpoint a task started (a trigger or
    /// barrier it did not ignore) was acknowledged or declined, or its
    /// async part ended or was cancelled, or its attempt ended (core's
    /// `TaskMonitor::unanswered`). A write result left behind is
    /// `E_RESULTS_REMOVED`'s; this one sees a checkpoint that started
    /// without one and hangs (FLINK-40518).
    pub const E_ANSWERED: &str = "at run end every trigger a task received is answered";
    /// Sometimes (`--recovering-tasks`): a checkpoint starts while a
    /// restarted task's input channels still consume recovered input, and
    /// captures it.
    pub const S_DURING_RECOVERY: &str = "a checkpoint is taken during recovery";
    /// At every run end: every write result ever started was removed.
    pub const E_RESULTS_REMOVED: &str = "at run end every started write result is removed";
    /// Sometimes (join): a task with several inputs saw a checkpoint on all.
    pub const S_ALIGNED: &str = "a task with several inputs sees a checkpoint on all of them";
    /// Sometimes: the periodic timer fires twice.
    pub const S_PERIODIC_AGAIN: &str = "the periodic trigger fires again";
    /// Sometimes: a started write result is removed by the task thread.
    pub const S_RESULT_REMOVED: &str = "a checkpoint runs on every task";

    /// Each `always` property and the `sometimes` that keeps it honest.
    pub const PAIRS: [(&str, &str); 17] = [
        (NO_SPURIOUS_FAILURE, S_ABORT_RACE),
        (COMPLETE_ALL_ACKS, S_COMPLETES),
        (COMPLETED_INCREASE, S_TWO_COMPLETE),
        (PENDING_BOUNDED, S_THROTTLED),
        (NO_LEAKED_RESULT, S_QUIET),
        (HANDLES, S_DISCARD),
        (NOTHING_AFTER_SHUTDOWN, S_AFTER_SHUTDOWN),
        (DURABLE, S_IN_DOUBT_KEPT),
        (IDS, S_ID_AFTER_ABORT),
        (NOTIFY, S_NOTIFIED),
        (ABORT_HONOURED, S_ABORT_RACE),
        (OTHER, S_ABORT_THEN_COMPLETE),
        (E_QUIET, S_QUIET),
        (E_NO_TRIGGER_STUCK, S_THROTTLED),
        (E_PERIODIC_ARMED, S_PERIODIC_AGAIN),
        (E_RESULTS_REMOVED, S_RESULT_REMOVED),
        (E_ANSWERED, S_RESULT_REMOVED),
    ];

    /// Opt-in pairs: (always, sometimes, the flag that must be > 0 for the
    /// `sometimes` to be checked). With the flag at 0 the `sometimes` is not
    /// part of the model (nothing could witness it) and `check` says so.
    pub const OPT_IN_PAIRS: [(&str, &str, &str); 14] = [
        (RECOVERY, S_DURING_RECOVERY, "--recovering-tasks with --task-failures"),
        (STOP, S_STOP_RESUMED, "--stop-with-savepoint"),
        (FINISH, S_FINISHED, "--finished-tasks as many as --tasks"),
        (COMPLETED_INCREASE, S_SAVEPOINT, "--savepoints"),
        (COMMIT_ORDER, S_SAVEPOINT_AFTER_NEWER, "--savepoints"),
        (
            DURABLE,
            S_SAVEPOINT_OUTLIVED,
            "--savepoints and more --checkpoints than the one completed checkpoint the world retains",
        ),
        (
            RESTORE,
            S_RESTORE_WAITED,
            "--job-failovers with --max-concurrent 2 and --checkpoints 2",
        ),
        (
            DURABLE,
            S_FENCED,
            "--zombie-coordinators and --coordinator-failovers",
        ),
        (DURABLE, S_SHARED, "--shared-state"),
        (FILES, S_SHARED_FILE_DELETED, "--shared-files"),
        (HANDLES, S_DISPOSED, "--dispose-savepoints and --savepoints"),
        (COMPLETE_ALL_ACKS, S_FAILOVER, "--task-failures"),
        (
            RESTORE,
            S_RESTORED,
            "--coordinator-failovers, --job-failovers, --savepoint-restore or --stop-with-savepoint",
        ),
        (E_ALIGNED, S_ALIGNED, "--topology join"),
    ];
}

/// Which property an invariant name belongs to: every name of the core's
/// invariant modules and the world's own checks is mapped explicitly (a
/// test checks that none falls through), so a renamed invariant cannot
/// silently land in the catch-all.
#[must_use]
pub fn property_of(invariant: &str) -> &'static str {
    classify(invariant).unwrap_or(props::OTHER)
}

/// The explicit mapping behind [`property_of`]; `None` for a name nobody
/// mapped.
#[must_use]
pub fn classify(invariant: &str) -> Option<&'static str> {
    use invariants::checked as k;
    use invariants::coordinator::names as c;
    use invariants::durability::names as d;
    use invariants::files::names as f;
    use invariants::task::names as t;
    let p = match invariant {
        t::NO_SPURIOUS_FAILURE | t::SINGLE_FAILURE => props::NO_SPURIOUS_FAILURE,
        c::COMPLETE_ALL_ACKS | c::PLAN_WAITS_FOR_ALL => props::COMPLETE_ALL_ACKS,
        c::COMPLETED_INCREASE | c::COMPLETED | t::EXECUTED_INCREASE | t::COMPLETE_MONOTONIC => {
            props::COMPLETED_INCREASE
        }
        c::PENDING_BOUNDED | c::ONE_QUEUED | c::QUEUE_BOUNDED => props::PENDING_BOUNDED,
        t::NO_LEAKED_RESULT | t::RESULT_HAS_MAIL | t::RESULT_NOT_VANISHED => {
            props::NO_LEAKED_RESULT
        }
        c::NO_DISCARD_RETAINED
        | c::NO_LEAK
        | c::DISCARD_ONCE
        | t::HANDLE_ONCE
        | d::HANDLE_ENDS_ONCE => props::HANDLES,
        d::NO_DISCARD_COMMITTED
        | d::COMMITTED_STATE_EXISTS
        | c::NO_DISCARD_WHILE_STORING
        | c::HAND_OVER_SPARES_SHARED
        | c::SAVEPOINT_KEPT => props::DURABLE,
        d::RESTORE_LATEST | c::RESTORE_NOT_BEHIND => props::RESTORE,
        d::COMMIT_ORDER => props::COMMIT_ORDER,
        d::IDS_NEVER_REPEAT => props::IDS,
        d::NOTIFY_AFTER_COMMIT | c::COMPLETE_AFTER_STORE => props::NOTIFY,
        c::STOP_IS_LAST => props::STOP,
        c::FINISH_NOT_A_FAILURE | c::FINISH_AFTER_FINAL | c::NO_RESTART_AFTER_FINISH => {
            props::FINISH
        }
        f::FILE_DELETED_ONCE | f::REFS_MATCH_SEGMENTS => props::FILES,
        t::ABORTED_NOT_EXECUTED => props::ABORT_HONOURED,
        t::RECOVERED_INPUT_CAPTURED => props::RECOVERY,
        c::NOTHING_AFTER_SHUTDOWN | c::SHUTDOWN_QUIET | t::SILENT_AFTER_END => {
            props::NOTHING_AFTER_SHUTDOWN
        }
        c::ACK_COUNT
        | c::QUEUE_RESUMABLE
        | c::TIMERS
        | c::ONE_COMPLETING
        | c::RECENT
        | c::REFUSED_UNCHANGED
        | c::NO_UNREACHABLE
        | c::IN_DOUBT_AFTER_SHUTDOWN
        | c::TRIGGER_ONLY_PENDING
        | c::ATTEMPTS_FORWARD
        | c::GENERATION_FORWARD
        | c::AWAITED_STATE_KEPT
        | t::ANSWER_AFTER_EXECUTED
        | t::ABORTED_BOUND
        | t::ABORTED_UNEXECUTED
        | t::SINGLE_ACTIVE_RESULT
        | t::IDS_STARTED
        | t::TORN_DOWN
        | t::IGNORED_IS_SILENT
        | t::RESULT_CREATED_ONCE
        | t::REMOVE_ON_TASK_THREAD
        | t::ACK_XOR_DECLINE
        | t::ACK_ONCE
        | t::IGNORED_IS_UNCHANGED
        | k::DETERMINISTIC
        | ROUTED => props::OTHER,
        _ => return None,
    };
    Some(p)
}

fn violated(s: &World, prop: &str) -> bool {
    s.violation
        .as_ref()
        .is_some_and(|v| property_of(v.invariant) == prop)
}

impl SysModel {
    /// A model of `cfg`.
    #[must_use]
    pub fn new(cfg: ModelConfig) -> SysModel {
        SysModel {
            sim: Sim::new(cfg),
            safety_only: false,
            stop: None,
            roots: None,
            reduction: Reduction::Off,
            presenter: None,
        }
    }

    /// The model with `presenter` for the Explorer.
    #[must_use]
    pub fn with_presenter(mut self, presenter: Arc<dyn Presenter>) -> SysModel {
        self.presenter = Some(presenter);
        self
    }

    /// Collect transition coverage.
    #[must_use]
    pub fn with_coverage(mut self) -> SysModel {
        self.sim = self.sim.with_coverage();
        self
    }

    /// Every state quiet: no messages, answers, mails, inputs or work.
    #[must_use]
    pub fn quiet(s: &World) -> bool {
        s.quiet()
    }

    /// Whether a run ends in `s` without a violation: nothing is enabled.
    /// (A state with a violation also has no action, but its run ended in
    /// the violation, which its own property reports.)
    #[must_use]
    pub fn run_ended(&self, s: &World) -> bool {
        thread_local! {
            static BUF: std::cell::RefCell<Vec<Action>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        if s.violation.is_some() {
            return false;
        }
        // Fast path: a pending I/O request is always answerable and the
        // first in-flight message is always deliverable (`Sim::enabled`),
        // so the run has not ended; no need to list the actions.
        if !s.io.is_empty() || !s.net.is_empty() {
            return false;
        }
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.clear();
            self.sim.enabled(s, &mut b);
            b.is_empty()
        })
    }

    /// The actions [`Model::actions`] lists, and, when partial-order
    /// reduction narrowed them, their successors (already computed to
    /// decide it): `stepped[i]` is `s` after `out[i]`, or `stepped` is
    /// empty and the caller steps them ([`Model::next_state`]).
    pub fn expand(&self, s: &World, out: &mut Vec<Action>, stepped: &mut Vec<World>) {
        self.sim.enabled(s, out);
        self.sim.ample_stepped(s, out, self.reduction, stepped);
    }
}

/// ckpt's answers to the depth-first engine's [`Expand`]: under symmetry a
/// state's key is a fingerprint of its orbit
/// ([`crate::search::symmetry::orbit_min_fingerprint`], equal to
/// [`crate::search::symmetry::orbit_min`] with [`fingerprint`] without
/// building the renamed worlds), otherwise its
/// [`fingerprint`]; the actions and pre-stepped successors are
/// [`SysModel::expand`]'s (partial-order reduction as the model is set).
#[derive(Clone, Copy, Debug)]
pub struct CkptExpand {
    /// Deduplicate orbits under task symmetry.
    pub symmetry: bool,
}

impl Expand<SysModel> for CkptExpand {
    fn key(&self, _: &SysModel, s: &World) -> u64 {
        if self.symmetry {
            crate::search::symmetry::orbit_min_fingerprint(s)
        } else {
            fingerprint(s)
        }
    }

    fn expand(&self, m: &SysModel, s: &World, out: &mut Vec<Action>, stepped: &mut Vec<World>) {
        m.expand(s, out, stepped);
    }
}

impl Model for SysModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        match &self.roots {
            Some(roots) => roots.iter().map(|(s, _)| s.clone()).collect(),
            None => vec![self.sim.init()],
        }
    }

    fn actions(&self, s: &World, out: &mut Vec<Action>) {
        self.sim.enabled(s, out);
        self.sim.ample(s, out, self.reduction);
    }

    fn next_state(&self, s: &World, a: Action) -> Option<World> {
        self.sim.step(s, a, None)
    }

    fn within_boundary(&self, _: &World) -> bool {
        self.stop
            .as_ref()
            .is_none_or(|stop| !stop.load(Ordering::Relaxed))
    }

    fn format_action(&self, a: &Action) -> String {
        match &self.presenter {
            Some(p) => p.action(&self.sim, a),
            None => self.sim.describe(a),
        }
    }

    fn format_step(&self, last: &World, action: Action) -> Option<String> {
        self.presenter.as_ref()?.step(&self.sim, last, action)
    }

    fn as_svg(&self, path: stateright::Path<World, Action>) -> Option<String> {
        self.presenter
            .as_ref()?
            .path(&self.sim, &path.into_actions())
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut p = vec![
            Property::<Self>::always(props::NO_SPURIOUS_FAILURE, |_, s| {
                !violated(s, props::NO_SPURIOUS_FAILURE)
            }),
            Property::<Self>::always(props::COMPLETE_ALL_ACKS, |_, s| {
                !violated(s, props::COMPLETE_ALL_ACKS)
            }),
            Property::<Self>::always(props::COMPLETED_INCREASE, |_, s| {
                !violated(s, props::COMPLETED_INCREASE)
            }),
            Property::<Self>::always(props::PENDING_BOUNDED, |_, s| {
                !violated(s, props::PENDING_BOUNDED)
            }),
            Property::<Self>::always(props::NO_LEAKED_RESULT, |_, s| {
                !violated(s, props::NO_LEAKED_RESULT)
            }),
            Property::<Self>::always(props::HANDLES, |_, s| !violated(s, props::HANDLES)),
            Property::<Self>::always(props::NOTHING_AFTER_SHUTDOWN, |_, s| {
                !violated(s, props::NOTHING_AFTER_SHUTDOWN)
            }),
            Property::<Self>::always(props::DURABLE, |_, s| !violated(s, props::DURABLE)),
            Property::<Self>::always(props::RESTORE, |_, s| !violated(s, props::RESTORE)),
            Property::<Self>::always(props::IDS, |_, s| !violated(s, props::IDS)),
            Property::<Self>::always(props::NOTIFY, |_, s| !violated(s, props::NOTIFY)),
            Property::<Self>::always(props::COMMIT_ORDER, |_, s| {
                !violated(s, props::COMMIT_ORDER)
            }),
            Property::<Self>::always(props::STOP, |_, s| !violated(s, props::STOP)),
            Property::<Self>::always(props::FINISH, |_, s| !violated(s, props::FINISH)),
            Property::<Self>::always(props::RECOVERY, |_, s| !violated(s, props::RECOVERY)),
            Property::<Self>::always(props::ABORT_HONOURED, |_, s| {
                !violated(s, props::ABORT_HONOURED)
            }),
            Property::<Self>::always(props::OTHER, |_, s| !violated(s, props::OTHER)),
        ];
        // What must hold where a run ends, as `always (run ended => P)`:
        // exact at terminal states (no path dependence, shortest paths by
        // BFS), with the run end computed from the world's enabled actions.
        p.extend([
            Property::<Self>::always(props::E_NO_TRIGGER_STUCK, |m, s| {
                !m.run_ended(s)
                    || (s.coord.in_flight().is_none() && s.coord.queued().next().is_none())
            }),
            Property::<Self>::always(props::E_PERIODIC_ARMED, |m, s| {
                let dead = s.coord.is_periodic_scheduling() && s.used.triggers < m.cfg.checkpoints;
                !(dead && m.run_ended(s))
            }),
            Property::<Self>::always(props::E_RESULTS_REMOVED, |m, s| {
                !m.run_ended(s)
                    || s.tasks
                        .iter()
                        .all(|t| t.st.write_results().is_empty() && t.monitor.leaked().is_empty())
            }),
            Property::<Self>::always(props::E_ANSWERED, |m, s| {
                !m.run_ended(s) || s.tasks.iter().all(|t| t.monitor.unanswered().is_empty())
            }),
        ]);
        if self.cfg.topology == Topology::Join && self.cfg.tasks >= 3 {
            p.push(Property::<Self>::always(props::E_ALIGNED, |m, s| {
                !m.run_ended(s) || s.history.disrupted || s.aligned()
            }));
        }
        if self.cfg.shared_files {
            p.push(Property::<Self>::always(props::FILES, |_, s| {
                !violated(s, props::FILES)
            }));
        }
        if self.safety_only {
            return p;
        }
        p.extend([
            Property::<Self>::sometimes(props::S_COMPLETES, |_, s| {
                s.coord.latest_completed().is_some()
            }),
            Property::<Self>::sometimes(props::S_ABORT_THEN_COMPLETE, |_, s| {
                s.history.abort_then_complete
            }),
            Property::<Self>::sometimes(props::S_ABORT_RACE, |m, s| {
                // A downstream task (one that is not triggered) declined
                // because the abort overtook its checkpoint mail.
                s.net.iter().any(|x| {
                    crate::world::is_decline(x, DeclineReason::AbortedByCoordinator)
                        && !m.settings().tasks_to_trigger.contains(&x.task())
                })
            }),
            Property::<Self>::sometimes(props::S_TWO_COMPLETE, |_, s| {
                let latest = s.coord.latest_completed();
                s.tasks
                    .iter()
                    .any(|t| t.st.last_completed().is_some_and(|c| Some(c) < latest))
            }),
            Property::<Self>::sometimes(props::S_THROTTLED, |_, s| {
                s.coord.pending_count() >= s.coord.config().max_concurrent()
                    && s.coord.queued().next().is_some()
            }),
            Property::<Self>::sometimes(props::S_QUIET, |_, s| {
                s.violation.is_none()
                    && s.quiet()
                    && s.tasks.iter().all(|t| t.st.last_executed().is_some())
            }),
            Property::<Self>::sometimes(props::S_DISCARD, |_, s| s.ledger.discarded() > 0),
            Property::<Self>::sometimes(props::S_AFTER_SHUTDOWN, |_, s| {
                s.coord.is_shutdown() && s.net.iter().any(Msg::to_coordinator)
            }),
            Property::<Self>::sometimes(props::S_IN_DOUBT_KEPT, |_, s| s.history.in_doubt_kept),
            Property::<Self>::sometimes(props::S_ID_AFTER_ABORT, |_, s| {
                s.history
                    .abort_seen
                    .is_some_and(|a| s.coord.last_id().is_some_and(|l| l > a))
            }),
            Property::<Self>::sometimes(props::S_NOTIFIED, |_, s| {
                s.tasks.iter().any(|t| t.st.last_completed().is_some())
            }),
            Property::<Self>::sometimes(props::S_PERIODIC_AGAIN, |_, s| s.used.triggers >= 2),
            Property::<Self>::sometimes(props::S_RESULT_REMOVED, |_, s| {
                s.tasks.iter().all(|t| t.st.last_executed().is_some())
            }),
        ]);
        if self.cfg.topology == Topology::Join && self.cfg.tasks >= 3 {
            p.push(Property::<Self>::sometimes(props::S_ALIGNED, |_, s| {
                s.tasks.iter().any(|t| {
                    t.inputs.len() > 1
                        && t.inputs.iter().all(|c| c.seen.is_some())
                        && t.inputs.windows(2).all(|w| w[0].seen == w[1].seen)
                })
            }));
        }
        if self.cfg.savepoints > 0 {
            p.push(Property::<Self>::sometimes(props::S_SAVEPOINT, |_, s| {
                s.coord.completed().any(|c| c.is_savepoint())
            }));
            p.push(Property::<Self>::sometimes(
                props::S_SAVEPOINT_AFTER_NEWER,
                |_, s| s.history.savepoint_after_newer,
            ));
            if self.cfg.checkpoints > self.cfg.retained {
                p.push(Property::<Self>::sometimes(
                    props::S_SAVEPOINT_OUTLIVED,
                    |_, s| s.history.savepoint_outlived,
                ));
            }
            if self.cfg.dispose_savepoints {
                p.push(Property::<Self>::sometimes(props::S_DISPOSED, |_, s| {
                    s.history.disposed
                }));
            }
        }
        if self.cfg.job_failovers > 0 && self.cfg.max_concurrent > 1 && self.cfg.checkpoints > 1 {
            p.push(Property::<Self>::sometimes(
                props::S_RESTORE_WAITED,
                |_, s| s.history.restore_waited,
            ));
        }
        if self.cfg.zombie_coordinators > 0 && self.cfg.coordinator_failovers > 0 {
            p.push(Property::<Self>::sometimes(props::S_FENCED, |_, s| {
                s.history.fenced
            }));
        }
        if self.cfg.shared_state {
            p.push(Property::<Self>::sometimes(props::S_SHARED, |_, s| {
                s.history.shared_committed
            }));
        }
        if self.cfg.shared_files {
            p.push(Property::<Self>::sometimes(
                props::S_SHARED_FILE_DELETED,
                |_, s| s.history.shared_file_deleted,
            ));
        }
        if self.cfg.stop_with_savepoint {
            p.push(Property::<Self>::sometimes(
                props::S_STOP_RESUMED,
                |_, s| s.history.stop_resumed,
            ));
        }
        if self.cfg.finished_tasks > 0 && u32::from(self.cfg.finished_tasks) >= self.cfg.tasks {
            p.push(Property::<Self>::sometimes(props::S_FINISHED, |_, s| {
                s.history.finished_on_final
            }));
        }
        if self.cfg.recovering_tasks > 0 && self.cfg.task_failures > 0 {
            p.push(Property::<Self>::sometimes(
                props::S_DURING_RECOVERY,
                |_, s| s.history.captured_recovered,
            ));
        }
        if self.cfg.task_failures > 0 {
            p.push(Property::<Self>::sometimes(props::S_FAILOVER, |_, s| {
                s.history.failover_complete
            }));
        }
        if self.cfg.coordinator_failovers > 0
            || self.cfg.job_failovers > 0
            || self.cfg.savepoint_restore
            || self.cfg.stop_with_savepoint
        {
            p.push(Property::<Self>::sometimes(props::S_RESTORED, |_, s| {
                s.history.restored
            }));
        }
        // stateright judges an `eventually` only at terminal states (a state
        // with no successor inside the boundary); the model is acyclic, so
        // those are exactly where runs end.
        p.extend([Property::<Self>::eventually(props::E_QUIET, |m, s| {
            // A job that finished (every task finished) has no use for
            // the periodic firings it had left.
            let finished = matches!(
                s.coord.finish_phase(),
                Some(ckpt_core::coordinator::FinishPhase::Finished { .. })
            );
            s.violation.is_some()
                || (s.quiet()
                    && (s.used.triggers >= m.cfg.checkpoints || finished)
                    && s.coord.pending_count() == 0
                    && s.coord.in_flight().is_none()
                    && s.coord.queued().next().is_none())
        })]);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::LEAKED;

    #[test]
    fn every_invariant_name_maps_to_a_property_explicitly() {
        let names = invariants::coordinator::names::ALL
            .iter()
            .chain(invariants::task::names::ALL.iter())
            .chain(invariants::durability::names::ALL.iter())
            .chain(invariants::files::names::ALL.iter())
            .chain([invariants::checked::DETERMINISTIC, ROUTED, LEAKED].iter());
        for name in names {
            assert!(classify(name).is_some(), "invariant {name} is not mapped");
        }
        assert_eq!(classify("no-such-invariant"), None);
    }
}
