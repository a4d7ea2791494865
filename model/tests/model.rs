//! The model's pinned figures, the exact-search cross-check, the legacy
//! counterexamples and their replay through the core.

use ckpt_core::invariants::checked::Rigor;
use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_core::trace::{parse_trace, replay, write_trace};
use ckpt_core::TaskId;
use ckpt_model::render::mermaid::to_mermaid;
use ckpt_model::render::replay::Replay;
use ckpt_model::search::exact::exact_unique_states;
use ckpt_model::search::symmetry::{canonical, permute};
use ckpt_model::{
    props, run_check, shortest_violation, CheckOptions, ModelConfig, Network, Status, SysModel,
    Topology,
};
use stateright::{Checker, Model};

/// 2 tasks, 1 checkpoint, no faults (reorder network, shutdown on).
fn small() -> ModelConfig {
    ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    }
}

/// 3 tasks (two interchangeable downstream tasks), 1 checkpoint, no faults.
fn three() -> ModelConfig {
    ModelConfig {
        tasks: 3,
        ..small()
    }
}

fn unique(cfg: &ModelConfig, symmetry: bool) -> usize {
    let b = SysModel::new(cfg.clone()).checker().threads(1);
    let c = if symmetry { b.symmetry() } else { b }.spawn_dfs().join();
    c.unique_state_count()
}

#[test]
fn pinned_unique_state_counts() {
    assert_eq!(unique(&small(), false), 652);
    assert_eq!(
        unique(&small(), true),
        652,
        "one downstream task: nothing to permute"
    );
    assert_eq!(unique(&three(), false), 12_953);
    assert_eq!(unique(&three(), true), 6_838);
}

#[test]
fn fingerprint_counts_match_an_exact_search_over_states() {
    for cfg in [small(), three()] {
        for symmetry in [false, true] {
            assert_eq!(
                unique(&cfg, symmetry),
                exact_unique_states(&cfg, symmetry, 1_000_000),
                "{cfg:?} symmetry {symmetry}"
            );
        }
    }
    let ordered = ModelConfig {
        network: Network::Ordered,
        ..three()
    };
    assert_eq!(
        unique(&ordered, true),
        exact_unique_states(&ordered, true, 1_000_000)
    );
}

#[test]
fn representative_is_canonical_over_the_orbit() {
    // Every reachable state of `three()` (two interchangeable tasks) and its
    // swapped twin have the same representative.
    let model = SysModel::new(three());
    let swap = [TaskId(0), TaskId(2), TaskId(1)];
    let mut frontier = model.init_states();
    let mut checked = 0usize;
    let mut actions = Vec::new();
    for _depth in 0..12 {
        let mut next = Vec::new();
        for s in &frontier {
            let twin = permute(s, &swap, false).unwrap_or_else(|| panic!("a symmetry"));
            assert_eq!(canonical(s), canonical(&twin));
            checked += 1;
            actions.clear();
            model.actions(s, &mut actions);
            next.extend(actions.drain(..).filter_map(|a| model.next_state(s, a)));
        }
        next.truncate(400);
        frontier = next;
    }
    assert!(checked > 1_000, "{checked}");
}

#[test]
fn fixed_holds_and_every_sometimes_is_witnessed() {
    let cfg = ModelConfig {
        network: Network::Ordered,
        ..ModelConfig {
            faults: 0,
            ..ModelConfig::default()
        }
    };
    let r = run_check(
        &cfg,
        &CheckOptions {
            coverage: true,
            ..CheckOptions::default()
        },
    );
    assert!(r.holds(), "{:?}", r.properties);
    assert!(r.counterexample.is_none());
    for p in &r.properties {
        assert_ne!(p.status, Status::NotWitnessed, "{}", p.name);
    }
    assert_eq!(r.unique, 28_290);
    let cov = r.coverage.unwrap_or_default();
    assert!(cov
        .keys()
        .any(|(m, _, k, _)| *m == "task" && *k == "NotifyAborted"));
}

#[test]
fn legacy_counterexample_is_the_seed_race_and_replays_in_core() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..small()
    };
    let cx = shortest_violation(&cfg, 1).unwrap_or_else(|| panic!("legacy bug not found"));
    assert_eq!(cx.property, props::NO_SPURIOUS_FAILURE);
    assert_eq!(cx.actions.len(), 9, "{:?}", cx.actions);
    // The same length with a fault budget and a lossy network: BFS finds
    // the shortest story, which needs no fault.
    let lossy = ModelConfig {
        network: Network::ReorderDupDrop,
        faults: 1,
        ..cfg.clone()
    };
    let cx2 = shortest_violation(&lossy, 2).unwrap_or_else(|| panic!("not found"));
    assert_eq!(cx2.actions.len(), 9);

    let trace = Replay::new(&cfg, &cx.actions).trace();
    let mut buf = Vec::new();
    write_trace(&mut buf, &trace).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(buf).unwrap_or_else(|e| panic!("{e}"));
    let parsed = parse_trace(&text).unwrap_or_else(|e| panic!("{e}"));
    let report = replay(&parsed).unwrap_or_else(|e| panic!("{e}"));
    let (at, v) = report
        .violation
        .unwrap_or_else(|| panic!("replay found nothing"));
    assert_eq!(v.invariant, "no_spurious_failure");
    assert_eq!(at, parsed.steps.len(), "the violation is the last step");

    let diagram = to_mermaid(&Replay::new(&cfg, &cx.actions), "seed");
    assert!(diagram.starts_with("sequenceDiagram"));
    assert!(diagram.contains("VIOLATION"));

    // The fixed reducer, fed the same story, declines instead.
    let fixed = Replay::new(&small(), &cx.actions).trace();
    let r = replay(&fixed).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.violation.is_none());
    assert!(r
        .steps
        .last()
        .is_some_and(|s| s.outcome.contains("AbortedByCoordinator")));
}

#[test]
fn cancel_forgets_abort_needs_and_finds_a_join() {
    let fanout = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::CancelForgetsAbort),
        ..small()
    };
    assert!(shortest_violation(&fanout, 1).is_none());
    let join = ModelConfig {
        tasks: 3,
        topology: Topology::Join,
        ..fanout
    };
    let cx = shortest_violation(&join, 1).unwrap_or_else(|| panic!("not found"));
    assert_eq!(cx.property, props::NO_SPURIOUS_FAILURE);
    assert_eq!(cx.actions.len(), 12);
    let r = replay(&Replay::new(&join, &cx.actions).trace()).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.violation.is_some());
}

// ----- opt-in bounds: savepoints, task failures, scheduler restarts -------

/// Checks `cfg` in fixed semantics (every property holds and `witness` is
/// discovered) and in legacy semantics (the seed race is still caught);
/// returns the fixed run's report.
fn holds_with_witness_and_legacy_caught(
    cfg: &ModelConfig,
    legacy: &ModelConfig,
    witness: &str,
) -> ckpt_model::CheckReport {
    let r = run_check(
        cfg,
        &CheckOptions {
            coverage: true,
            ..CheckOptions::default()
        },
    );
    assert!(r.holds(), "{:?}", r.properties);
    let w = r
        .properties
        .iter()
        .find(|p| p.name == witness)
        .unwrap_or_else(|| panic!("{witness} not checked"));
    assert_eq!(w.status, Status::Witnessed);
    let bad = run_check(
        &ModelConfig {
            semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
            ..legacy.clone()
        },
        &CheckOptions {
            stop_at_failure: true,
            ..CheckOptions::default()
        },
    );
    assert!(!bad.holds());
    let cx = bad
        .counterexample
        .unwrap_or_else(|| panic!("legacy not caught"));
    assert_eq!(cx.property, props::NO_SPURIOUS_FAILURE);
    r
}

fn covered(r: &ckpt_model::CheckReport, machine: &str, event: &str, outcome: &str) -> bool {
    r.coverage.as_ref().is_some_and(|c| {
        c.keys()
            .any(|(m, _, e, o)| *m == machine && *e == event && o == outcome)
    })
}

#[test]
fn opt_in_flags_are_off_by_default_and_their_witnesses_not_claimed() {
    let d = ModelConfig::default();
    assert_eq!(
        (d.savepoints, d.task_failures, d.scheduler_restarts),
        (0, 0, 0)
    );
    let names: Vec<&str> = SysModel::new(small())
        .properties()
        .iter()
        .map(|p| p.name)
        .collect();
    assert!(!names.contains(&props::S_SAVEPOINT));
    assert!(!names.contains(&props::S_FAILOVER));
}

#[test]
fn savepoints_hold_complete_and_legacy_is_caught() {
    // One task keeps it small: the savepoint and the periodic checkpoint
    // run concurrently (forced: past max concurrent 1).
    let cfg = ModelConfig {
        tasks: 1,
        savepoints: 1,
        ..small()
    };
    let legacy = ModelConfig {
        savepoints: 1,
        ..small()
    };
    let r = holds_with_witness_and_legacy_caught(&cfg, &legacy, props::S_SAVEPOINT);
    assert!(covered(
        &r,
        "coordinator",
        "Trigger",
        "Applied::AllocatingId"
    ));
    // 6,828 while savepoints counted towards retention: a savepoint is now
    // kept beside the retained checkpoint instead of being evicted by it.
    assert_eq!(unique(&cfg, true), 6_848);
    assert_eq!(exact_unique_states(&cfg, true, 1_000_000), 6_848);
}

#[test]
fn task_failures_hold_fail_over_and_legacy_is_caught() {
    let cfg = ModelConfig {
        task_failures: 1,
        ..small()
    };
    let r = holds_with_witness_and_legacy_caught(&cfg, &cfg, props::S_FAILOVER);
    // The genuine failure, both coordinator task events, and the old
    // attempt's acks and declines reaching the coordinator late.
    assert!(covered(&r, "task", "OperatorFailed", "Applied"));
    assert!(covered(
        &r,
        "coordinator",
        "TaskFailed",
        "Applied::TaskUpdated"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "TaskRunning",
        "Applied::TaskUpdated"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "Acknowledge",
        "Ignored::LateMessage"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "Decline",
        "Ignored::LateMessage"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "TimerFired(Periodic)",
        "Applied::PeriodicFired/TriggerRejected(NotAllRequiredTasksRunning)"
    ));
    assert_eq!(unique(&cfg, true), 5_141);
    assert_eq!(exact_unique_states(&cfg, true, 1_000_000), 5_141);
}

#[test]
fn scheduler_restarts_hold_and_legacy_is_caught() {
    let cfg = ModelConfig {
        scheduler_restarts: 1,
        ..small()
    };
    let r = holds_with_witness_and_legacy_caught(&cfg, &cfg, props::S_COMPLETES);
    assert!(covered(
        &r,
        "coordinator",
        "StopScheduler",
        "Applied::SchedulerStopped"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "StartScheduler",
        "Applied::SchedulerStarted"
    ));
    assert_eq!(unique(&cfg, true), 3_299);
    assert_eq!(exact_unique_states(&cfg, true, 1_000_000), 3_299);
}

#[test]
fn representative_is_canonical_with_restarted_attempts() {
    // Two interchangeable tasks, one of which may fail and restart: the
    // attempt travels with the task (task side, coordinator task status,
    // captured attempts, messages).
    let cfg = ModelConfig {
        task_failures: 1,
        ..three()
    };
    let model = SysModel::new(cfg);
    let swap = [TaskId(0), TaskId(2), TaskId(1)];
    let mut frontier = model.init_states();
    let mut restarted = 0usize;
    let mut actions = Vec::new();
    for _depth in 0..16 {
        let mut next = Vec::new();
        for s in &frontier {
            let twin = permute(s, &swap, false).unwrap_or_else(|| panic!("a symmetry"));
            assert_eq!(canonical(s), canonical(&twin));
            restarted += usize::from(s.tasks.iter().any(|t| t.attempt.0 > 0));
            actions.clear();
            model.actions(s, &mut actions);
            next.extend(actions.drain(..).filter_map(|a| model.next_state(s, a)));
        }
        next.truncate(400);
        frontier = next;
    }
    assert!(restarted > 100, "{restarted}");
}

#[test]
fn a_state_limit_stops_the_search_without_faking_a_failure() {
    // The default configuration has 773,552 unique states; stop far short.
    let cfg = ModelConfig::default();
    let r = run_check(
        &cfg,
        &CheckOptions {
            max_states: Some(5_000),
            ..CheckOptions::default()
        },
    );
    assert_eq!(r.completion, ckpt_model::Completion::StateLimit);
    assert!(r.unique >= 5_000 && r.unique < 773_666, "{}", r.unique);
    // The stop makes every successor out of bounds: states that look
    // terminal then must not be reported as `eventually` failures.
    assert!(
        r.properties.iter().all(|p| p.status != Status::Violated),
        "{:?}",
        r.properties
    );
    assert_eq!(r.verdict(), ckpt_model::Verdict::Inconclusive);
    assert!(r.counterexample.is_none());
}

#[test]
fn simulation_finds_the_same_first_walk_whatever_the_thread_count() {
    use ckpt_model::search::simulate::{simulate, SimulateOptions};
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..ModelConfig::default()
    };
    let opts = SimulateOptions {
        seed: 1,
        walks: 20_000,
        ..SimulateOptions::default()
    };
    let one = simulate(&cfg, &opts, 1);
    let two = simulate(&cfg, &opts, 2);
    let first = |r: &ckpt_model::search::simulate::SimulateReport| {
        r.violations
            .first()
            .map(|v| (v.walk, v.seed, v.counterexample.actions.clone()))
    };
    assert!(first(&one).is_some(), "the seed bug is found");
    assert_eq!(first(&one), first(&two));
    // On the fixed semantics the same walks find nothing.
    let fixed = simulate(&ModelConfig::default(), &opts, 2);
    assert!(fixed.violations.is_empty());
    assert_eq!(fixed.walks, 20_000);
}

/// Runs every shard of `n` and returns (per property: any shard's
/// violation / witness, in the single run's order), the summed unique
/// count and the shortest counterexample length.
fn sharded(
    cfg: &ModelConfig,
    n: u64,
    split_depth: usize,
    opts: &CheckOptions,
) -> (Vec<(&'static str, Status)>, usize, Option<usize>) {
    use ckpt_model::search::shard::{run_shard, ShardSpec};
    let reports: Vec<_> = (0..n)
        .map(|index| {
            run_shard(
                cfg,
                opts,
                ShardSpec {
                    index,
                    count: n,
                    split_depth,
                },
            )
            .0
        })
        .collect();
    let first = &reports[0];
    let statuses = first
        .properties
        .iter()
        .map(|p| {
            let all: Vec<Status> = reports
                .iter()
                .filter_map(|r| r.properties.iter().find(|q| q.name == p.name))
                .map(|q| q.status)
                .collect();
            let s = if all.contains(&Status::Violated) {
                Status::Violated
            } else if all.contains(&Status::Witnessed) {
                Status::Witnessed
            } else {
                all[0]
            };
            (p.name, s)
        })
        .collect();
    let unique = reports.iter().map(|r| r.unique).sum();
    let shortest = reports
        .iter()
        .filter_map(|r| r.counterexample.as_ref().map(|c| c.actions.len()))
        .min();
    (statuses, unique, shortest)
}

#[test]
fn shards_give_the_single_run_verdict_on_pinned_configurations() {
    let opts = CheckOptions::default();
    for cfg in [small(), three()] {
        let single = run_check(&cfg, &opts);
        assert!(single.holds(), "{cfg:?}");
        let want: Vec<(&str, Status)> = single
            .properties
            .iter()
            .map(|p| (p.name, p.status))
            .collect();
        for (n, depth) in [(1, 3), (2, 4), (3, 4), (4, 6)] {
            let (got, unique, shortest) = sharded(&cfg, n, depth, &opts);
            assert_eq!(got, want, "{n} shards at depth {depth}: {cfg:?}");
            assert!(shortest.is_none());
            // Deduplication across shards is lost: never fewer states.
            assert!(unique >= single.unique, "{unique} < {}", single.unique);
        }
    }
}

#[test]
fn shards_find_a_legacy_violation_with_the_single_run_shortest_counterexample() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..ModelConfig::default()
    };
    let opts = CheckOptions {
        stop_at_failure: true,
        ..CheckOptions::default()
    };
    let single = run_check(&cfg, &opts);
    let cx = single
        .counterexample
        .as_ref()
        .map(|c| (c.property, c.actions.len()));
    assert!(cx.is_some());
    for n in [2, 3] {
        let (got, _, shortest) = sharded(&cfg, n, 4, &opts);
        let violated: Vec<&str> = got
            .iter()
            .filter(|(_, s)| *s == Status::Violated)
            .map(|(p, _)| *p)
            .collect();
        assert_eq!(
            violated,
            vec![cx.map(|c| c.0).unwrap_or_default()],
            "{n} shards"
        );
        assert_eq!(shortest, cx.map(|c| c.1), "{n} shards");
    }
}

/// `Sim::step_in_place` (what the story driver and the random walks use)
/// does exactly what `Sim::step` does to a copy, and leaves the world
/// untouched when it refuses: on random walks through a world with every
/// kind of fault and failover, every enabled action and every action that
/// was enabled earlier in the walk (most of them stale now) is tried both
/// ways on the current world.
#[test]
fn stepping_in_place_equals_stepping_a_copy_and_a_refusal_touches_nothing() {
    use ckpt_model::Sim;
    let cfg = ModelConfig {
        tasks: 3,
        checkpoints: 2,
        network: Network::ReorderDupDrop,
        faults: 2,
        io_faults: true,
        task_faults: true,
        savepoints: 1,
        task_failures: 1,
        scheduler_restarts: 1,
        user_checkpoints: 1,
        master_hooks: 1,
        coordinator_failovers: 1,
        job_failovers: 1,
        end_of_input: 1,
        tolerable_failures: 0,
        ..ModelConfig::default()
    };
    // At both rigors: the world's own parts change in place through the
    // checked steps' in-place forms, shared ones through the pure forms.
    for sim in [Sim::new(cfg.clone()), Sim::new(cfg).with_rigor(Rigor::Full)] {
        walk_both_ways(&sim);
    }
}

/// [`stepping_in_place_equals_stepping_a_copy_and_a_refusal_touches_nothing`]'s
/// walks. Each walk's own step is taken both ways too: on a copy first (which
/// copies the parts the action changes), then in place on the walk's world,
/// whose changed parts are then its own (the coordinator's and a task's
/// checked steps take their in-place forms there; on the copies above they
/// take the pure ones).
fn walk_both_ways(sim: &ckpt_model::Sim) {
    let (mut refused, mut stepped, mut walked) = (0_usize, 0_usize, 0_usize);
    let mut failover_completions = 0_usize;
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    for walk in 0..60 {
        let mut s = sim.init();
        let mut failed = false;
        let mut seen: Vec<ckpt_model::Action> = Vec::new();
        for _depth in 0..80 {
            let mut enabled = Vec::new();
            sim.enabled(&s, &mut enabled);
            if enabled.is_empty() {
                break;
            }
            for a in &enabled {
                if !seen.contains(a) {
                    seen.push(*a);
                }
            }
            for a in &seen {
                let mut log_copy = Vec::new();
                let mut log_in_place = Vec::new();
                let copy = sim.step(&s, *a, Some(&mut log_copy));
                let mut w = s.clone();
                let took = sim.step_in_place(&mut w, *a, Some(&mut log_in_place));
                match copy {
                    Some(n) => {
                        assert!(took, "{a:?}: refused in place, taken on a copy");
                        assert_eq!(w, n, "{a:?}");
                        assert_eq!(log_in_place, log_copy, "{a:?}");
                        stepped += 1;
                    }
                    None => {
                        assert!(!took, "{a:?}: taken in place, refused on a copy");
                        assert_eq!(w, s, "{a:?}: a refusal changed the world");
                        assert!(log_in_place.is_empty(), "{a:?}");
                        refused += 1;
                    }
                }
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // Every third walk fails one task once and then only makes
            // progress (so that checkpoints complete after the restart); the
            // others pick among every enabled action.
            let directed = walk % 3 == 2;
            if directed {
                let fail = (!failed)
                    .then(|| {
                        enabled
                            .iter()
                            .copied()
                            .find(|a| matches!(a, ckpt_model::Action::FailTask(_)))
                    })
                    .flatten();
                if let Some(f) = fail {
                    failed = true;
                    enabled = vec![f];
                } else {
                    enabled.retain(progresses);
                }
                if enabled.is_empty() {
                    break;
                }
            }
            let i = usize::try_from(rng % enabled.len() as u64).unwrap();
            let a = enabled[i];
            let (mut log_copy, mut log_own) = (Vec::new(), Vec::new());
            let n = sim.step(&s, a, Some(&mut log_copy));
            let waited = s.history.failover_complete;
            assert!(sim.step_in_place(&mut s, a, Some(&mut log_own)));
            if !waited && s.history.failover_complete {
                failover_completions += 1;
            }
            assert_eq!(
                Some(&s),
                n.as_ref(),
                "{a:?}: in place on the world's own parts"
            );
            assert_eq!(log_own, log_copy, "{a:?}");
            walked += 1;
        }
    }
    // Both sides were exercised, many times, and the walks (the directed
    // ones, in practice) completed checkpoints that waited for a restarted
    // attempt (what the world reads of the coordinator before its in-place
    // step).
    assert!(
        stepped > 1_000 && refused > 1_000 && walked > 1_000,
        "{stepped} {refused} {walked}"
    );
    assert!(failover_completions > 0, "no failover completion");
}

/// An action that moves the world forward without a fault, a crash, a
/// timeout, a user's request, a task's end of input or finish, or a job
/// failover (each of which would end or reset what the walk waits for): the
/// directed walks' choices after their one task failure, taken at the
/// start of the walk.
fn progresses(a: &ckpt_model::Action) -> bool {
    use ckpt_model::Action as A;
    match a {
        // A checkpoint's timeout aborts it: not progress.
        A::Fire(t) => !matches!(t, ckpt_core::coordinator::Timer::Timeout(_)),
        A::Deliver(_)
        | A::Netty(..)
        | A::Input(..)
        | A::Mailbox(_)
        | A::RestartTask(_)
        | A::StartScheduler
        | A::ResumeJob
        | A::AsyncReused(..)
        | A::ZombieAnswer(_)
        | A::Recovery(..) => true,
        A::Answer(_, ok) | A::Writer(_, _, ok) | A::Async(_, _, ok) => *ok,
        A::Duplicate(_)
        | A::Drop(_)
        | A::Shutdown
        | A::Savepoint
        | A::UserCheckpoint { .. }
        | A::FailTask(_)
        | A::StopScheduler
        | A::CoordinatorFailover { .. }
        | A::JobFailover
        | A::EndOfInput(_)
        | A::FinishTask(_)
        | A::DisposeSavepoint(_)
        | A::StopWithSavepoint => false,
    }
}

/// `Sim::first_deliver` (what the system stories' flush asks after every
/// delivery) is the first `Action::Deliver` that `Sim::enabled` lists, on
/// the states within 14 steps of the start (at most 400 kept per depth,
/// evenly spread) under each network, with one fault to spend.
#[test]
fn first_deliver_is_the_first_delivery_enabled_lists() {
    use ckpt_model::{Action, Sim};
    const DEPTH: usize = 14;
    const KEPT: usize = 400;
    for network in [Network::Ordered, Network::Reorder, Network::ReorderDupDrop] {
        let sim = Sim::new(ModelConfig {
            network,
            faults: 1,
            ..ModelConfig::default()
        });
        let mut frontier = vec![sim.init()];
        let (mut delivering, mut behind_others, mut several) = (0, 0, 0);
        let mut actions = Vec::new();
        for _ in 0..DEPTH {
            let mut next = Vec::new();
            for w in &frontier {
                actions.clear();
                sim.enabled(w, &mut actions);
                let first = actions.iter().position(|a| matches!(a, Action::Deliver(_)));
                assert_eq!(
                    sim.first_deliver(w),
                    first.map(|i| actions[i]),
                    "{network:?}: {actions:?}"
                );
                if let Some(i) = first {
                    delivering += 1;
                    behind_others += usize::from(i > 0);
                    let deliveries = actions
                        .iter()
                        .filter(|a| matches!(a, Action::Deliver(_)))
                        .count();
                    several += usize::from(deliveries > 1);
                }
                next.extend(actions.iter().filter_map(|a| sim.step(w, *a, None)));
            }
            let stride = next.len().div_ceil(KEPT).max(1);
            frontier = next.into_iter().step_by(stride).collect();
        }
        // The question was asked where it can go wrong: a delivery listed
        // after other actions, and several messages deliverable at once.
        assert!(
            delivering > 100 && behind_others > 10 && several > 10,
            "{network:?}: {delivering} {behind_others} {several}"
        );
    }
}
