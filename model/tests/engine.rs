//! ckpt's own depth-first engine against stateright's `DfsChecker`: the
//! same counts, depths and property statuses on the pinned configurations
//! (with and without symmetry and partial-order reduction), every knob of
//! the bug zoo found as its property by both, and two workers reaching the
//! states one worker reaches.

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::{
    run_check, CheckOptions, CheckReport, Completion, Engine, ModelConfig, Network, Reduction,
    Status, SysModel, Topology, Verdict,
};
use stateright::Model;

fn small() -> ModelConfig {
    ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    }
}

fn run(
    cfg: &ModelConfig,
    engine: Engine,
    threads: usize,
    f: impl Fn(&mut CheckOptions),
) -> CheckReport {
    let mut opts = CheckOptions {
        engine,
        threads,
        ..CheckOptions::default()
    };
    f(&mut opts);
    run_check(cfg, &opts)
}

fn statuses(r: &CheckReport) -> Vec<(&'static str, Status)> {
    r.properties.iter().map(|p| (p.name, p.status)).collect()
}

/// The configurations the model tests pin, and opt-in bounds that reach
/// the coordinator's other phases.
fn configurations() -> Vec<(&'static str, ModelConfig)> {
    vec![
        ("2 tasks, 1 checkpoint", small()),
        (
            "3 tasks",
            ModelConfig {
                tasks: 3,
                ..small()
            },
        ),
        (
            "3 tasks, join",
            ModelConfig {
                tasks: 3,
                topology: Topology::Join,
                ..small()
            },
        ),
        (
            "ordered, 2 checkpoints",
            ModelConfig {
                network: Network::Ordered,
                faults: 0,
                ..ModelConfig::default()
            },
        ),
        (
            "savepoints",
            ModelConfig {
                tasks: 1,
                savepoints: 1,
                ..small()
            },
        ),
        (
            "task failures",
            ModelConfig {
                task_failures: 1,
                ..small()
            },
        ),
        (
            "coordinator failover",
            ModelConfig {
                coordinator_failovers: 1,
                ..small()
            },
        ),
        (
            "hooks and user checkpoints",
            ModelConfig {
                tasks: 1,
                master_hooks: 1,
                user_checkpoints: 1,
                ..small()
            },
        ),
        (
            "2 tasks, 1 checkpoint, 1 fault",
            ModelConfig {
                checkpoints: 1,
                ..ModelConfig::default()
            },
        ),
    ]
}

#[test]
fn one_worker_counts_what_stateright_counts_on_every_pinned_configuration() {
    for (name, cfg) in configurations() {
        for symmetry in [false, true] {
            for reduction in [Reduction::Off, Reduction::Ample] {
                let set = |o: &mut CheckOptions| {
                    o.symmetry = symmetry;
                    o.reduction = reduction;
                };
                let ours = run(&cfg, Engine::Ckpt, 1, set);
                let theirs = run(&cfg, Engine::Stateright, 1, set);
                let what = format!("{name}, symmetry {symmetry}, {reduction:?}");
                assert_eq!(ours.completion, Completion::Complete, "{what}");
                assert_eq!(ours.verdict(), Verdict::Holds, "{what}");
                assert_eq!(
                    (ours.states, ours.unique, ours.depth),
                    (theirs.states, theirs.unique, theirs.depth),
                    "{what}: (states, unique, depth)"
                );
                assert_eq!(statuses(&ours), statuses(&theirs), "{what}");
            }
        }
    }
}

#[test]
fn a_depth_bound_cuts_both_engines_at_the_same_states() {
    let cfg = ModelConfig {
        checkpoints: 1,
        ..ModelConfig::default()
    };
    let set = |o: &mut CheckOptions| o.max_depth = Some(9);
    let ours = run(&cfg, Engine::Ckpt, 1, set);
    let theirs = run(&cfg, Engine::Stateright, 1, set);
    assert_eq!(ours.completion, Completion::MaxDepth);
    assert_eq!(theirs.completion, Completion::MaxDepth);
    assert_eq!(
        (ours.states, ours.unique, ours.depth),
        (theirs.states, theirs.unique, theirs.depth)
    );
    assert_eq!(statuses(&ours), statuses(&theirs));
}

#[test]
fn every_run_end_knob_of_the_zoo_is_found_as_its_property_by_both_engines() {
    // The knobs whose property is judged where a run ends (terminal states,
    // which the engine must recognise as stateright does); the seed bug is
    // the next test's. Each is found depth-first, then re-searched
    // breadth-first (stateright's either way) for the shortest path.
    let entries: Vec<_> = ckpt_model::zoo::entries()
        .into_iter()
        .filter(|e| e.property.starts_with("at run end"))
        .collect();
    assert!(
        entries.len() >= 3,
        "the zoo's run-end knobs: {}",
        entries.len()
    );
    for entry in entries {
        let set = |o: &mut CheckOptions| {
            o.stop_at_failure = true;
            o.reduction = Reduction::Ample;
        };
        let ours = run(&entry.config, Engine::Ckpt, 1, set);
        let theirs = run(&entry.config, Engine::Stateright, 1, set);
        let bug = entry.bug;
        assert_eq!(ours.verdict(), Verdict::Violated, "{bug:?}");
        assert_eq!(theirs.verdict(), Verdict::Violated, "{bug:?}");
        let (Some(a), Some(b)) = (&ours.counterexample, &theirs.counterexample) else {
            panic!("{bug:?}: a violation without a counterexample");
        };
        assert_eq!(a.property, entry.property, "{bug:?}");
        assert_eq!(b.property, entry.property, "{bug:?}");
        // Each keeps a different run end when several are found (the engine
        // its first, stateright its last of a block): ours must be a real
        // path of the model that ends where the property fails.
        let model = SysModel::new(entry.config.clone());
        let init = model.init_states().remove(0);
        let path = stateright::Path::from_actions(&model, init, a.actions.iter())
            .unwrap_or_else(|| panic!("{bug:?}: the engine's path is not the model's"));
        let property = model
            .properties()
            .into_iter()
            .find(|p| p.name == entry.property)
            .expect("the zoo's property is the model's");
        assert!(
            !(property.condition)(&model, path.last_state()),
            "{bug:?}: the property holds where the engine's path ends"
        );
    }
}

#[test]
fn two_workers_reach_the_states_one_worker_reaches() {
    // Without symmetry the reachable set (of the reduced graph too: its
    // ample sets are a function of the state) does not depend on the order
    // of the search, so every count but `states` by thread is fixed.
    for (name, cfg) in configurations() {
        for reduction in [Reduction::Off, Reduction::Ample] {
            let set = |o: &mut CheckOptions| {
                o.symmetry = false;
                o.reduction = reduction;
            };
            let one = run(&cfg, Engine::Ckpt, 1, set);
            let two = run(&cfg, Engine::Ckpt, 2, set);
            let what = format!("{name}, {reduction:?}");
            assert_eq!(two.completion, Completion::Complete, "{what}");
            assert_eq!(one.unique, two.unique, "{what}");
            assert_eq!(one.states, two.states, "{what}");
            assert_eq!(statuses(&one), statuses(&two), "{what}");
        }
    }
}

#[test]
fn the_seed_bug_is_found_with_its_shortest_counterexample() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..ModelConfig::default()
    };
    for threads in [1, 2] {
        let r = run(&cfg, Engine::Ckpt, threads, |o| o.stop_at_failure = true);
        assert_eq!(r.verdict(), Verdict::Violated);
        assert_eq!(r.completion, Completion::StoppedAtViolation);
        let c = r.counterexample.expect("a counterexample");
        assert_eq!(c.actions.len(), 9, "threads {threads}");
    }
}
