//! The bug zoo: every historical checkpoint race this project reproduces
//! as a legacy knob in the reducers ([`LegacyBug`]), with the smallest
//! world in which the model checker finds it and the property it breaks.
//!
//! `ckpt-model zoo` checks each entry (the fixed semantics must hold in the
//! same world; the legacy semantics must be caught) and prints the table the
//! bug zoo of `model/README.md` shows. The same entries decide which `check --semantics ...`
//! combinations can reach their bug at all ([`needs`], [`validate`]).
//!
//! The catalog is one table: [`needs`] (what world a knob needs) and
//! [`entry`] (its story, property and smallest world) each have one arm per
//! [`LegacyBug`]; a new knob is one arm in each.

use ckpt_core::{LegacyBug, Semantics};
use stateright::{Expectation, Model};

use crate::render::flags::flags;
use crate::search::options::CheckOptions;
use crate::search::report::{Counterexample, Verdict};
use crate::search::run::run_check;
use crate::search::shortest::shortest_violation_within;
use crate::search::system::{props, SysModel};
use crate::world::{legacy_name, semantics_name, ModelConfig, Network, Reduction, Topology};

/// One race of the zoo.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The knob in the reducers that reintroduces the race.
    pub bug: LegacyBug,
    /// One line: what went wrong.
    pub story: &'static str,
    /// The property the checker reports broken.
    pub property: &'static str,
    /// The smallest world in which the model finds it (legacy semantics).
    pub config: ModelConfig,
}

fn base() -> ModelConfig {
    ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    }
}

fn join(mut c: ModelConfig) -> ModelConfig {
    c.tasks = 3;
    c.topology = Topology::Join;
    c
}

/// What world the bug needs: `Err` names what is missing from `cfg`
/// (a checker must not answer "holds" for a question it could not ask).
pub fn needs(bug: LegacyBug, cfg: &ModelConfig) -> Result<(), String> {
    let mut missing: Vec<&str> = Vec::new();
    let joined = cfg.topology == Topology::Join && cfg.tasks >= 3;
    match bug {
        LegacyBug::AbortRemovesResult
        | LegacyBug::AbortIgnoresNettyStart
        | LegacyBug::AbortedStartLeaks => {
            if cfg.tasks < 2 {
                missing.push("--tasks 2 (a downstream task that gets the barrier on netty)");
            }
        }
        LegacyBug::CancelForgetsAbort
        | LegacyBug::StaleMailExecutes
        | LegacyBug::SkipWithoutCancelMarker => {
            if !joined {
                missing.push("--topology join --tasks 3 (a task with two upstream sources)");
            }
        }
        LegacyBug::ObsoleteBarrierFails => {
            if !joined {
                missing.push("--topology join --tasks 3");
            }
            if cfg.checkpoints < 2 {
                missing.push("--checkpoints 2");
            }
        }
        LegacyBug::AbortedResultBlocksStart | LegacyBug::NewerBarrierDropsResult => {
            if cfg.tasks < 2 {
                missing.push("--tasks 2");
            }
            if cfg.checkpoints < 2 {
                missing.push("--checkpoints 2");
            }
        }
        LegacyBug::NotifyCompleteOutOfOrder => {
            if cfg.checkpoints < 2 {
                missing.push("--checkpoints 2");
            }
            if cfg.network == Network::Ordered {
                missing.push("--network reorder (ordered links deliver notifications in order)");
            }
        }
        LegacyBug::TriggerAfterFinishFails => {
            if cfg.end_of_input == 0 {
                missing.push("--end-of-input 1");
            }
        }
        LegacyBug::HookExpiryWedgesTrigger => {
            if cfg.master_hooks == 0 {
                missing.push("--master-hooks 1");
            }
            if cfg.shutdown {
                missing.push("--no-shutdown (shutdown clears the wedged trigger)");
            }
        }
        LegacyBug::LateHooksTriggerTasks => {
            if cfg.master_hooks == 0 {
                missing.push("--master-hooks 1");
            }
        }
        LegacyBug::AbortAllLeavesQueueStuck => {
            if cfg.task_failures == 0 {
                missing.push("--task-failures 1");
            }
            if cfg.checkpoints < 2 {
                missing.push("--checkpoints 2");
            }
            if cfg.shutdown {
                missing.push("--no-shutdown (shutdown clears the stuck queue)");
            }
        }
        LegacyBug::EffectsAfterShutdown => {
            if !cfg.shutdown {
                missing.push("shutdown (drop --no-shutdown)");
            }
        }
        LegacyBug::DiscardWhileStoring => {
            if !cfg.shutdown && cfg.scheduler_restarts == 0 {
                missing.push("shutdown or --scheduler-restarts 1");
            }
        }
        LegacyBug::RestoreBehindCompletion => {
            if cfg.job_failovers == 0 {
                missing.push("--job-failovers 1");
            }
            if cfg.max_concurrent < 2 || cfg.checkpoints < 2 {
                missing.push("--max-concurrent 2 --checkpoints 2 (one expires while one stores)");
            }
        }
        LegacyBug::InDoubtListsSharedState => {
            if !cfg.shared_state {
                missing.push("--shared-state");
            }
            if !cfg.shutdown {
                missing.push("shutdown (drop --no-shutdown)");
            }
            if cfg.checkpoints < 2 {
                missing.push("--checkpoints 2");
            }
        }
        LegacyBug::SavepointExpiresWithRetention => {
            if cfg.savepoints == 0 {
                missing.push("--savepoints 1");
            }
        }
        LegacyBug::RestoreLastCommitted => {
            if cfg.savepoints == 0 {
                missing.push("--savepoints 1");
            }
            if cfg.coordinator_failovers == 0 && cfg.job_failovers == 0 {
                missing.push("--coordinator-failovers 1 or --job-failovers 1");
            }
        }
        LegacyBug::NoFencing => {
            if cfg.zombie_coordinators == 0 || cfg.coordinator_failovers == 0 {
                missing.push("--coordinator-failovers 1 --zombie-coordinators 1");
            }
        }
        LegacyBug::StoreRefusesOlderSavepoint => {
            if cfg.savepoints == 0 {
                missing.push("--savepoints 1");
            }
        }
        LegacyBug::StopLaunchesSecondCheckpoint => {
            if !cfg.stop_with_savepoint {
                missing.push("--stop-with-savepoint");
            }
            if cfg.checkpoints == 0 {
                missing.push("--checkpoints 1 (a periodic trigger to launch)");
            }
        }
        LegacyBug::StopBeforeCommit => {
            if !cfg.stop_with_savepoint {
                missing.push("--stop-with-savepoint");
            }
        }
        LegacyBug::FailedCountsAsFinished => {
            if cfg.task_failures == 0 {
                missing.push("--task-failures 1");
            }
        }
        LegacyBug::FinishFailsCheckpoint => {
            if cfg.finished_tasks == 0 {
                missing.push("--finished-tasks 1");
            }
        }
        LegacyBug::LogicalFileReleasedTwice => {
            if !cfg.shared_files {
                missing.push("--shared-files");
            }
            if cfg.network != Network::ReorderDupDrop || cfg.faults == 0 {
                missing.push("--network reorder-dup-drop --faults 1 (a duplicated ack discards its handle twice)");
            }
        }
        LegacyBug::SubsumedPartDiscarded => {
            if cfg.savepoints == 0 {
                missing.push("--savepoints 1");
            }
            if cfg.checkpoints == 0 {
                missing.push("--checkpoints 1 (a newer checkpoint to complete first)");
            }
            if cfg.max_concurrent < 2 {
                missing.push("--max-concurrent 2 (a checkpoint beside the savepoint)");
            }
        }
        LegacyBug::NoOpWhileChannelsRecover => {
            if cfg.task_failures == 0 || cfg.recovering_tasks == 0 {
                missing.push("--task-failures 1 --recovering-tasks 1 (a task restarts with channel state to replay)");
            }
            if cfg.tasks < 2 {
                missing.push("--tasks 2 (a task with an input channel)");
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join(", "))
    }
}

/// Whether the `--semantics` / topology combination can reach the bug the
/// semantics reintroduces: `Err` names the flags that make it reachable. A
/// checker must not answer "holds" for a question it could not ask.
pub fn reachable(cfg: &ModelConfig) -> Result<(), String> {
    match cfg.semantics {
        Semantics::Fixed => Ok(()),
        Semantics::Legacy(bug) => needs(bug, cfg).map_err(|missing| {
            format!(
                "--semantics {} cannot be reached in this configuration: it needs {missing}",
                semantics_name(cfg.semantics)
            )
        }),
    }
}

/// Checks combinations of flags that are accepted by the parser but mean
/// nothing (or something else than they say), then [`reachable`].
pub fn validate(cfg: &ModelConfig) -> Result<(), String> {
    meaningful(cfg)?;
    reachable(cfg)
}

/// [`validate`] for `check`, the one command with `--semantics all`: a knob
/// its world cannot reach is also pointed to `--semantics all` (the other
/// commands refuse it, so their refusals name the flags only).
pub fn validate_offering_all(cfg: &ModelConfig) -> Result<(), String> {
    meaningful(cfg)?;
    reachable(cfg).map_err(|e| {
        format!(
            "{e} (or --semantics all, which moves each variant to the smallest world that \
             reaches it)"
        )
    })
}

/// The combinations of flags that the parser accepts but that mean nothing
/// (or something else than they say).
fn meaningful(cfg: &ModelConfig) -> Result<(), String> {
    if cfg.topology == Topology::Join && cfg.tasks < 3 {
        return Err(format!(
            "--topology join needs --tasks 3 or more: with {} task{} there is only one source \
             and join is the fanout topology",
            cfg.tasks,
            if cfg.tasks == 1 { "" } else { "s" }
        ));
    }
    if cfg.finished_tasks > 0 && cfg.topology == Topology::Join {
        // The coordinator triggers the running tasks itself only once every
        // source finished: a join task would wait on the finished source.
        return Err("--finished-tasks needs --topology fanout".into());
    }
    // Each of these only adds to what the other flag makes happen: without
    // it the flag would change nothing, and a verdict would answer a
    // question the search never asked.
    if cfg.zombie_coordinators > 0 && cfg.coordinator_failovers == 0 {
        return Err(
            "--zombie-coordinators needs --coordinator-failovers 1 or more: a deposed \
                    leader exists only after a failover"
                .into(),
        );
    }
    if cfg.checkpoints == 0 && !cfg.stop_with_savepoint {
        return Err(
            "--checkpoints 0 needs --stop-with-savepoint: without a periodic checkpoint the \
                    stop's savepoint is the only checkpoint there is"
                .into(),
        );
    }
    if cfg.recovering_tasks > 0 && cfg.task_failures == 0 {
        return Err(
            "--recovering-tasks needs --task-failures 1 or more: only a restarted task \
                    recovers"
                .into(),
        );
    }
    Ok(())
}

/// For `--semantics all`: the nearest configuration in which the
/// semantics' bug is reachable, and the flags of that world when it had to
/// change.
#[must_use]
pub fn make_reachable(cfg: &ModelConfig) -> (ModelConfig, Option<String>) {
    match cfg.semantics {
        Semantics::Legacy(bug) if reachable(cfg).is_err() => {
            let c = entry(bug).config;
            let note = flags(&c);
            (c, Some(note))
        }
        Semantics::Fixed | Semantics::Legacy(_) => (cfg.clone(), None),
    }
}

/// The file name a knob's counterexample gets under `tests/traces/`: its
/// first ticket and its knob (`zoo_flink_17994_legacy_stale_mail`).
#[must_use]
pub fn trace_name(bug: LegacyBug) -> String {
    let first = bug.tickets().split(',').next().unwrap_or("race").trim();
    let ticket: String = first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("zoo_{ticket}_{}", legacy_name(bug).replace('-', "_"))
}

/// Every entry, in [`LegacyBug::ALL`] order.
#[must_use]
pub fn entries() -> Vec<Entry> {
    LegacyBug::ALL.iter().map(|b| entry(*b)).collect()
}

/// The entry of one bug.
#[must_use]
pub fn entry(bug: LegacyBug) -> Entry {
    let (story, property, config) = match bug {
        LegacyBug::AbortRemovesResult => (
            "notify-aborted runs before the checkpoint mail and removes its write result; the mail fails the task",
            props::NO_SPURIOUS_FAILURE,
            base(),
        ),
        LegacyBug::CancelForgetsAbort => (
            "a cancel marker removes the write result but forgets the abort; the mail fails the task",
            props::NO_SPURIOUS_FAILURE,
            join(base()),
        ),
        LegacyBug::StaleMailExecutes => (
            "a checkpoint mail runs after a cancel marker already ended its checkpoint and declines it again",
            props::OTHER,
            join(base()),
        ),
        LegacyBug::ObsoleteBarrierFails => (
            "a slow source's barrier arrives after a newer one and trips an assertion",
            props::NO_SPURIOUS_FAILURE,
            join(ModelConfig {
                checkpoints: 2,
                max_concurrent: 2,
                shutdown: false,
                ..base()
            }),
        ),
        LegacyBug::AbortIgnoresNettyStart => (
            "notify-aborted ignores a checkpoint started by netty; the task executes an aborted checkpoint",
            props::ABORT_HONOURED,
            base(),
        ),
        LegacyBug::SkipWithoutCancelMarker => (
            "a declined checkpoint sends no cancel marker; the task downstream waits for alignment forever",
            props::E_ALIGNED,
            join(base()),
        ),
        LegacyBug::AbortedStartLeaks => (
            "an abort before the barrier: start still creates the write result and nobody removes it",
            props::NO_LEAKED_RESULT,
            base(),
        ),
        LegacyBug::AbortedResultBlocksStart => (
            "start 2 while aborted checkpoint 1's result waits for its mail throws",
            props::NO_SPURIOUS_FAILURE,
            ModelConfig {
                checkpoints: 2,
                ..base()
            },
        ),
        LegacyBug::NewerBarrierDropsResult => (
            "a newer barrier replaces an unfinished write result without failing it; it is never settled",
            props::NO_LEAKED_RESULT,
            ModelConfig {
                checkpoints: 2,
                ..base()
            },
        ),
        LegacyBug::NotifyCompleteOutOfOrder => (
            "notify-complete 1 arrives after notify-complete 2 and commits again",
            props::COMPLETED_INCREASE,
            ModelConfig {
                tasks: 1,
                checkpoints: 2,
                max_concurrent: 2,
                ..base()
            },
        ),
        LegacyBug::TriggerAfterFinishFails => (
            "a trigger reaches a source that finished its input and fails it",
            props::NO_SPURIOUS_FAILURE,
            ModelConfig {
                end_of_input: 1,
                ..base()
            },
        ),
        LegacyBug::HookExpiryWedgesTrigger => (
            "a checkpoint expires while its master hooks run; the trigger stays in progress forever",
            props::E_NO_TRIGGER_STUCK,
            ModelConfig {
                master_hooks: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::LateHooksTriggerTasks => (
            "master hooks answer for an expired checkpoint; the tasks are triggered for it anyway",
            props::OTHER,
            ModelConfig {
                master_hooks: 1,
                ..base()
            },
        ),
        LegacyBug::AbortAllLeavesQueueStuck => (
            "a request queued at the concurrency bound is not resumed when a task failure aborts the pending one",
            props::OTHER,
            ModelConfig {
                checkpoints: 2,
                task_failures: 1,
                shutdown: false,
                network: Network::Ordered,
                ..base()
            },
        ),
        LegacyBug::EffectsAfterShutdown => (
            "an id allocated after shutdown still triggers the tasks",
            props::NOTHING_AFTER_SHUTDOWN,
            base(),
        ),
        LegacyBug::DiscardWhileStoring => (
            "shutdown while finalizing discards the state the store may hold",
            props::DURABLE,
            base(),
        ),
        LegacyBug::RestoreBehindCompletion => (
            "a job failover restores an older checkpoint while a newer one stores; it commits behind the restore",
            props::RESTORE,
            ModelConfig {
                tasks: 1,
                checkpoints: 2,
                max_concurrent: 2,
                job_failovers: 1,
                ..base()
            },
        ),
        LegacyBug::InDoubtListsSharedState => (
            "the in-doubt hand-over lists state a retained checkpoint shares; the host deletes it",
            props::DURABLE,
            ModelConfig {
                tasks: 1,
                checkpoints: 2,
                shared_state: true,
                ..base()
            },
        ),
        LegacyBug::SavepointExpiresWithRetention => (
            "savepoints count towards retention: a savepoint pushes a checkpoint the store keeps out, or is pushed out, and the state goes",
            props::DURABLE,
            ModelConfig {
                tasks: 1,
                savepoints: 1,
                ..base()
            },
        ),
        LegacyBug::RestoreLastCommitted => (
            "a savepoint commits after a newer checkpoint; a failover restores the savepoint",
            props::RESTORE,
            ModelConfig {
                tasks: 1,
                max_concurrent: 2,
                savepoints: 1,
                coordinator_failovers: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::NoFencing => (
            "a deposed coordinator's metadata and store writes land after the new leader recovered and restored",
            props::RESTORE,
            ModelConfig {
                tasks: 1,
                coordinator_failovers: 1,
                zombie_coordinators: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::StoreRefusesOlderSavepoint => (
            "the store refuses a savepoint that finishes after a newer checkpoint",
            props::COMMIT_ORDER,
            ModelConfig {
                tasks: 1,
                max_concurrent: 2,
                savepoints: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::StopLaunchesSecondCheckpoint => (
            "the stop-with-savepoint leaves periodic checkpointing on; a checkpoint is triggered while the job stops",
            props::STOP,
            ModelConfig {
                tasks: 1,
                max_concurrent: 2,
                stop_with_savepoint: true,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::StopBeforeCommit => (
            "the stop-with-savepoint completes on its last ack, before the store committed it; the job stops on state it may not hold",
            props::NOTIFY,
            ModelConfig {
                tasks: 1,
                checkpoints: 0,
                stop_with_savepoint: true,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::FailedCountsAsFinished => (
            "the plan counts a failed task as finished; a checkpoint triggered while it is down completes without its state",
            props::COMPLETE_ALL_ACKS,
            ModelConfig {
                task_failures: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::FinishFailsCheckpoint => (
            "a task finishes after the plan, before it took the checkpoint; the checkpoint fails as a counted failure and the job fails",
            props::FINISH,
            ModelConfig {
                tasks: 1,
                finished_tasks: 1,
                ..base()
            },
        ),
        LegacyBug::LogicalFileReleasedTwice => (
            "a logical file discarded twice releases its physical file twice; the file is deleted under a segment still referenced",
            props::FILES,
            ModelConfig {
                network: Network::ReorderDupDrop,
                faults: 1,
                io_faults: false,
                task_faults: false,
                shared_files: true,
                ..base()
            },
        ),
        LegacyBug::NoOpWhileChannelsRecover => (
            "the recovery trigger goes NO_OP when the drain ends, while a channel still replays; a checkpoint then is neither taken nor declined",
            props::E_ANSWERED,
            ModelConfig {
                tasks: 2,
                task_failures: 1,
                recovering_tasks: 1,
                shutdown: false,
                ..base()
            },
        ),
        LegacyBug::SubsumedPartDiscarded => (
            "a newer checkpoint completes before a task's part of a savepoint; the task discards the part as subsumed and the savepoint waits for an ack that never comes",
            props::OTHER,
            ModelConfig {
                tasks: 1,
                max_concurrent: 2,
                savepoints: 1,
                ..base()
            },
        ),
    };
    Entry {
        bug,
        story,
        property,
        config: ModelConfig {
            semantics: Semantics::Legacy(bug),
            ..config
        },
    }
}

/// What checking one entry found.
#[derive(Clone, Debug)]
pub struct Row {
    /// The entry checked.
    pub entry: Entry,
    /// The fixed semantics' verdict in the same world.
    pub fixed: Verdict,
    /// The depth (actions) the fixed check covered.
    pub fixed_depth: usize,
    /// Seconds the fixed check took.
    pub fixed_seconds: f64,
    /// The legacy counterexample (shortest for safety properties), if found.
    pub found: Option<Counterexample>,
    /// Seconds to the legacy counterexample (or to giving up).
    pub seconds: f64,
}

impl Row {
    /// Whether the entry passes: fixed holds, the legacy bug is found, and
    /// as the property the entry names.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.fixed != Verdict::Violated
            && self
                .found
                .as_ref()
                .is_some_and(|c| c.property == self.entry.property)
    }
}

/// Whether `property` is an `eventually` in the model of `cfg` (judged at
/// terminal states, found by a depth-first run rather than the
/// shortest-path search, which checks the `always` properties only). Read
/// from the model's own property list: the names do not say it (the
/// run-end properties are `always`s named "at run end ...", the one
/// `eventually` is "every run ends quiet").
#[must_use]
pub fn is_liveness(cfg: &ModelConfig, property: &str) -> bool {
    SysModel::new(cfg.clone())
        .properties()
        .iter()
        .any(|p| p.name == property && p.expectation == Expectation::Eventually)
}

/// Checks one entry: the fixed semantics in the entry's world, then the
/// legacy one (breadth-first shortest path for a safety property; the
/// first run end that breaks a liveness property otherwise). Each search is
/// cut at `limit`.
#[must_use]
pub fn check_entry(entry: &Entry, threads: usize, limit: std::time::Duration) -> Row {
    check_entry_reduced(entry, threads, limit, Reduction::Off)
}

/// [`check_entry`] with partial-order reduction `reduction` in every search
/// (the validation that the reduction still finds every knob).
#[must_use]
pub fn check_entry_reduced(
    entry: &Entry,
    threads: usize,
    limit: std::time::Duration,
    reduction: Reduction,
) -> Row {
    let opts = CheckOptions {
        threads,
        time_limit: Some(limit),
        reduction,
        ..CheckOptions::default()
    };
    let start = std::time::Instant::now();
    let found = if is_liveness(&entry.config, entry.property) {
        let r = run_check(
            &entry.config,
            &CheckOptions {
                stop_at_failure: true,
                ..opts.clone()
            },
        );
        r.counterexample
    } else {
        shortest_violation_within(&entry.config, &opts)
    };
    let seconds = start.elapsed().as_secs_f64();
    // The fixed reducers in the same world, over every path at least as long
    // as the counterexample (the whole space when it is small): the knob,
    // and nothing else, is what breaks the property.
    let fixed_cfg = ModelConfig {
        semantics: Semantics::Fixed,
        ..entry.config.clone()
    };
    let depth = found.as_ref().map_or(64, |c| c.actions.len() + 4);
    let start = std::time::Instant::now();
    let fixed = run_check(
        &fixed_cfg,
        &CheckOptions {
            max_depth: Some(depth),
            ..opts
        },
    );
    Row {
        entry: entry.clone(),
        fixed: fixed.verdict(),
        fixed_depth: depth,
        fixed_seconds: start.elapsed().as_secs_f64(),
        found,
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_is_read_from_the_model_not_from_the_name() {
        let cfg = ModelConfig::default();
        // The one `eventually`: its name does not start with "eventually"
        // (what this function used to test, so it never said yes).
        assert!(!props::E_QUIET.starts_with("eventually"));
        assert!(is_liveness(&cfg, props::E_QUIET));
        assert!(!is_liveness(&cfg, props::NO_SPURIOUS_FAILURE));
        assert!(!is_liveness(&cfg, "no such property"));
    }
}
