//! The transition coverage table: for each (machine, phase of its state
//! before the event, event kind, outcome kind), how often three layers
//! exercised it over the one world (`ckpt_model::world`):
//!
//! * `model`: the exhaustive checker (fixed semantics, no reduction) on the
//!   default configuration and on each opt-in bound in a small world, for at
//!   most `--model-secs` seconds in all;
//! * `props`: system stories drawn from the property tests' strategy
//!   (`ckpt_tests::strategies::system_story`, 120 actions, healed);
//! * `fuzz`: the `system_events` fuzz inputs (the committed seeds and
//!   `fuzz/corpus-work/system_events` when present), decoded as the fuzz
//!   target decodes them.
//!
//! The coordinator-only and task-only fuzz targets drive one machine without
//! the world and are not counted here. After the table: the event kinds no
//! layer reached, and per machine the (phase, event kind) pairs of the full
//! grid no layer reached (many cannot happen: a closed task gets nothing
//! but late events, a coordinator with nothing completing gets no answer
//! but a late one).
//!
//! ```text
//! ckpt-coverage [--model-secs S] [--stories N] [--fuzz-dir DIR]...
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use ckpt_core::task::Semantics;
use ckpt_model::world::coverage::{
    flush_coverage, Coverage, COORD_EVENT_KINDS, COORD_PHASES, TASK_EVENT_KINDS, TASK_PHASES,
};
use ckpt_model::world::ModelConfig;
use ckpt_model::{run_check, CheckOptions};
use ckpt_tests::fuzzing::{ACTIONS_MAX, HEAL_BOUND};
use ckpt_tests::stories::system::{run_recording, SysAction, SystemSpec, SystemStory};
use ckpt_tests::strategies::{system_story, SystemMix};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const LAYERS: [&str; 3] = ["model", "props", "fuzz"];

/// The transition coverage of the model checker, the property stories and
/// the fuzz inputs, side by side.
#[derive(clap::Parser)]
#[command(name = "ckpt-coverage")]
struct Args {
    /// Seconds the model layer may search, over all its worlds.
    #[arg(long, default_value_t = 60)]
    model_secs: u64,
    /// System stories drawn from the property tests' strategy.
    #[arg(long, default_value_t = 256)]
    stories: usize,
    /// Directories of `system_events` fuzz inputs (default: the committed
    /// seeds and `fuzz/corpus-work/system_events`); repeatable.
    #[arg(long = "fuzz-dir", value_name = "DIR")]
    fuzz_dirs: Vec<PathBuf>,
}

fn args() -> Args {
    let mut a = <Args as clap::Parser>::parse();
    if a.fuzz_dirs.is_empty() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        a.fuzz_dirs = vec![
            root.join("fuzz/corpus/system_events"),
            root.join("fuzz/corpus-work/system_events"),
        ];
    }
    a
}

/// The model layer's worlds: the default configuration, then each opt-in
/// bound in a small world (2 tasks, 1 checkpoint, no faults), so that the
/// transitions only those bounds reach are counted too.
fn model_configs() -> Vec<ModelConfig> {
    let small = ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    };
    vec![
        ModelConfig::default(),
        ModelConfig {
            tasks: 1,
            savepoints: 1,
            user_checkpoints: 1,
            master_hooks: 1,
            ..small.clone()
        },
        ModelConfig {
            task_failures: 1,
            ..small.clone()
        },
        ModelConfig {
            scheduler_restarts: 1,
            ..small.clone()
        },
        ModelConfig {
            coordinator_failovers: 1,
            ..small.clone()
        },
        ModelConfig {
            job_failovers: 1,
            tolerable_failures: 0,
            ..small.clone()
        },
        ModelConfig {
            end_of_input: 1,
            checkpoints: 2,
            ..small.clone()
        },
        ModelConfig {
            savepoint_restore: true,
            ..small.clone()
        },
        ModelConfig {
            end_of_input: 1,
            task_failures: 1,
            faults: 1,
            io_faults: false,
            ..small.clone()
        },
        ModelConfig {
            end_of_input: 1,
            coordinator_failovers: 1,
            ..small.clone()
        },
        ModelConfig {
            finished_tasks: 2,
            checkpoints: 2,
            ..small
        },
    ]
}

fn model_layer(secs: u64) -> Coverage {
    let configs = model_configs();
    let per = Duration::from_secs(secs.max(1)) / u32::try_from(configs.len()).unwrap_or(1);
    let mut total = Coverage::new();
    for cfg in &configs {
        let opts = CheckOptions {
            coverage: true,
            time_limit: Some(per.max(Duration::from_secs(1))),
            ..CheckOptions::default()
        };
        let report = run_check(cfg, &opts);
        for (k, n) in report.coverage.unwrap_or_default() {
            *total.entry(k).or_default() += n;
        }
    }
    total
}

/// Why no layer can reach (machine, phase, event kind), when that follows
/// from how the world and the reducers are built; `None` for a pair that
/// could happen (a gap of the layers, if none reached it).
fn unreachable_because(machine: &str, phase: &str, event: &str) -> Option<&'static str> {
    let local_work = [
        "CheckpointMail",
        "WriterCompleted",
        "WriterFailed",
        "AsyncPartCompleted",
        "AsyncPartFailed",
    ];
    match machine {
        "task" => {
            if phase == "failed" || phase == "closed" {
                Some("a failed or closed attempt runs nothing (its queues are dropped, its work torn down; a restart is a new attempt)")
            } else if phase.ends_with("quiet") && local_work.contains(&event) {
                Some("a quiet task has no mail, write result or async part for this to be about")
            } else if phase.starts_with("finished")
                && (event == "BarrierReceived" || event == "CancelMarker")
            {
                Some("only sources finish their input and go on running, and sources have no input channel (a task that finishes with --finished-tasks takes nothing more)")
            } else if phase.starts_with("finished") && event == "CheckpointMail" {
                Some("only sources finish, a source executes on its trigger, and checkpoint mails come only from barriers")
            } else if phase.starts_with("finished") && event.starts_with("Writer") {
                Some("only sources finish, and a source executes on its trigger, which removes the write result it started (no writer work outlives the trigger)")
            } else if phase.starts_with("finished") && event == "EndOfInput" {
                Some("a source's input ends once")
            } else {
                None
            }
        }
        _ => {
            let stopped = [
                "StopScheduler",
                "TaskFailed",
                "TaskFinished",
                "Shutdown",
                "Restore",
                "Recover",
            ];
            if phase == "shut down" && event.starts_with("TimerFired") {
                Some("shutdown cancels every timer")
            } else if phase == "shut down" && stopped.contains(&event) {
                Some("the world stops, fails, shuts down and fails over nothing once the job is shut down (a stopped scheduler may still be started, a failed task restarted)")
            } else if (phase == "idle" || phase == "triggering") && event == "TimerFired(Timeout)" {
                Some("a timeout is armed only while its checkpoint is pending")
            } else if phase == "pending" && event == "Restore" {
                Some("a job failover fails every task first, which aborts every checkpoint still waiting for an ack; a coordinator failover or a savepoint start restores on a fresh coordinator")
            } else if phase != "idle" && event == "Recover" {
                Some("Recover goes to a new coordinator only")
            } else if phase != "completing"
                && phase != "shut down"
                && (event.starts_with("FinalizeDone") || event.starts_with("StoreDone"))
            {
                Some("the world answers a finalize or store while its checkpoint is completing, and only shutdown ends that (a stop lets it complete; a failed-over coordinator's I/O goes with it); late answers are the coordinator-only fuzz target's")
            } else {
                None
            }
        }
    }
}

fn record(story: &SystemStory, cov: &Arc<Mutex<Coverage>>) {
    // A violation is reported by the tests; here only coverage counts.
    let _ = run_recording(story, Semantics::Fixed, Some(HEAL_BOUND), cov);
}

fn take(cov: &Arc<Mutex<Coverage>>) -> Coverage {
    flush_coverage();
    cov.lock().map(|m| m.clone()).unwrap_or_default()
}

fn props_layer(n: usize) -> Coverage {
    let cov = Arc::new(Mutex::new(Coverage::new()));
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = system_story(120, SystemMix::PROPERTIES);
    for _ in 0..n {
        if let Ok(tree) = strategy.new_tree(&mut runner) {
            record(&tree.current(), &cov);
        }
    }
    take(&cov)
}

fn fuzz_layer(dirs: &[PathBuf]) -> (Coverage, usize) {
    let cov = Arc::new(Mutex::new(Coverage::new()));
    let mut inputs = 0;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(data) = std::fs::read(e.path()) else {
                continue;
            };
            // Decoded exactly as `ckpt_tests::fuzzing::system_events` does.
            let mut u = Unstructured::new(&data);
            let Ok(spec) = SystemSpec::arbitrary(&mut u) else {
                continue;
            };
            let mut actions = Vec::new();
            while actions.len() < ACTIONS_MAX {
                match SysAction::arbitrary(&mut u) {
                    Ok(a) => actions.push(a),
                    Err(_) => break,
                }
                if u.is_empty() {
                    break;
                }
            }
            inputs += 1;
            record(&SystemStory { spec, actions }, &cov);
        }
    }
    (take(&cov), inputs)
}

fn main() {
    let a = args();
    eprintln!(
        "model: checking the default configuration for at most {} s",
        a.model_secs
    );
    let model = model_layer(a.model_secs);
    eprintln!("props: {} stories", a.stories);
    let props = props_layer(a.stories);
    let (fuzz, inputs) = fuzz_layer(&a.fuzz_dirs);
    eprintln!("fuzz: {inputs} inputs");
    let layers = [&model, &props, &fuzz];

    type Row = (&'static str, &'static str, &'static str, String);
    let mut rows: BTreeMap<Row, [u64; 3]> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for (k, n) in layer.iter() {
            if let Some(c) = rows.entry(k.clone()).or_default().get_mut(i) {
                *c += n;
            }
        }
    }
    println!(
        "{:<12} {:<18} {:<28} {:<64} {:>10} {:>10} {:>10}",
        "machine", "phase", "event", "outcome", LAYERS[0], LAYERS[1], LAYERS[2]
    );
    for ((machine, phase, event, outcome), counts) in &rows {
        println!(
            "{machine:<12} {phase:<18} {event:<28} {outcome:<64} {:>10} {:>10} {:>10}",
            counts[0], counts[1], counts[2]
        );
    }
    let only = |i: usize| {
        rows.values()
            .filter(|c| c[i] > 0 && c.iter().enumerate().all(|(j, n)| j == i || *n == 0))
            .count()
    };
    println!(
        "\n{} (machine, phase, event, outcome) rows; per layer: model {}, props {}, fuzz {}; \
         reached by one layer only: model {}, props {}, fuzz {}",
        rows.len(),
        model.len(),
        props.len(),
        fuzz.len(),
        only(0),
        only(1),
        only(2)
    );
    let reached: BTreeSet<(&str, &str)> = rows.keys().map(|(m, _, e, _)| (*m, *e)).collect();
    let grid: BTreeSet<(&str, &str, &str)> = rows.keys().map(|(m, p, e, _)| (*m, *p, *e)).collect();
    let mut refuted_any = false;
    for (machine, kinds, phases) in [
        ("coordinator", &COORD_EVENT_KINDS[..], &COORD_PHASES[..]),
        ("task", &TASK_EVENT_KINDS[..], &TASK_PHASES[..]),
    ] {
        let missing: Vec<&str> = kinds
            .iter()
            .copied()
            .filter(|k| !reached.contains(&(machine, *k)))
            .collect();
        println!("{machine} event kinds no layer reached: {missing:?}");
        // A reason is a claim: a layer reaching a pair it calls impossible
        // refutes it.
        let refuted: Vec<String> = grid
            .iter()
            .filter(|(m, p, k)| *m == machine && unreachable_because(m, p, k).is_some())
            .map(|(_, p, k)| format!("{p} / {k}"))
            .collect();
        if !refuted.is_empty() {
            println!(
                "{machine}: REACHED, though called impossible: {}",
                refuted.join("; ")
            );
            refuted_any = true;
        }
        let mut by_construction: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut gaps = Vec::new();
        for p in phases {
            for k in kinds {
                if grid.contains(&(machine, *p, *k)) {
                    continue;
                }
                match unreachable_because(machine, p, k) {
                    Some(why) => by_construction
                        .entry(why)
                        .or_default()
                        .push(format!("{p} / {k}")),
                    None => gaps.push(format!("{p} / {k}")),
                }
            }
        }
        let cannot: usize = by_construction.values().map(Vec::len).sum();
        println!(
            "{machine} (phase, event kind) pairs: {} of {} reached, {cannot} cannot happen, {} gaps",
            phases.len() * kinds.len() - cannot - gaps.len(),
            phases.len() * kinds.len(),
            gaps.len()
        );
        for (why, pairs) in &by_construction {
            println!("  cannot happen ({why}): {}", pairs.join("; "));
        }
        println!(
            "  gaps (could happen, no layer reached): {}",
            gaps.join("; ")
        );
    }
    if refuted_any {
        std::process::exit(1);
    }
}
