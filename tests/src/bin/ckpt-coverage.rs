//! The transition coverage table: for each (machine, event kind, outcome
//! kind), how often three layers exercised it over the one world
//! (`ckpt_model::world`):
//!
//! * `model`: the exhaustive checker on the default configuration (fixed
//!   semantics), for at most `--model-secs` seconds;
//! * `props`: system stories drawn from the property tests' strategy
//!   (`ckpt_tests::strategies::system_story`, 120 actions, healed);
//! * `fuzz`: the `system_events` fuzz inputs (the committed seeds and
//!   `fuzz/corpus-work/system_events` when present), decoded as the fuzz
//!   target decodes them.
//!
//! The coordinator-only and task-only fuzz targets drive one machine without
//! the world and are not counted here. Event kinds that no layer reached are
//! listed after the table.
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
use ckpt_model::check::{run_check, CheckOptions};
use ckpt_model::world::coverage::{flush_coverage, Coverage, COORD_EVENT_KINDS, TASK_EVENT_KINDS};
use ckpt_model::world::ModelConfig;
use ckpt_tests::fuzzing::{ACTIONS_MAX, HEAL_BOUND};
use ckpt_tests::stories::system::{run_recording, SysAction, SystemSpec, SystemStory};
use ckpt_tests::strategies::{system_story, SystemMix};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const LAYERS: [&str; 3] = ["model", "props", "fuzz"];

fn usage() -> ! {
    eprintln!("usage: ckpt-coverage [--model-secs S] [--stories N] [--fuzz-dir DIR]...");
    std::process::exit(2);
}

struct Args {
    model_secs: u64,
    stories: usize,
    fuzz_dirs: Vec<PathBuf>,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut a = Args {
        model_secs: 60,
        stories: 256,
        fuzz_dirs: vec![
            root.join("fuzz/corpus/system_events"),
            root.join("fuzz/corpus-work/system_events"),
        ],
    };
    let mut it = std::env::args().skip(1);
    let mut custom_dirs = Vec::new();
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--model-secs" => a.model_secs = value.parse().unwrap_or_else(|_| usage()),
            "--stories" => a.stories = value.parse().unwrap_or_else(|_| usage()),
            "--fuzz-dir" => custom_dirs.push(PathBuf::from(value)),
            _ => usage(),
        }
    }
    if !custom_dirs.is_empty() {
        a.fuzz_dirs = custom_dirs;
    }
    a
}

fn model_layer(secs: u64) -> Coverage {
    let opts = CheckOptions {
        coverage: true,
        time_limit: Some(Duration::from_secs(secs)),
        ..CheckOptions::default()
    };
    let report = run_check(&ModelConfig::default(), &opts);
    report.coverage.unwrap_or_default()
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

    let mut rows: BTreeMap<(&'static str, &'static str, String), [u64; 3]> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for (k, n) in layer.iter() {
            if let Some(c) = rows.entry(k.clone()).or_default().get_mut(i) {
                *c += n;
            }
        }
    }
    println!(
        "{:<12} {:<28} {:<64} {:>10} {:>10} {:>10}",
        "machine", "event", "outcome", LAYERS[0], LAYERS[1], LAYERS[2]
    );
    for ((machine, event, outcome), counts) in &rows {
        println!(
            "{machine:<12} {event:<28} {outcome:<64} {:>10} {:>10} {:>10}",
            counts[0], counts[1], counts[2]
        );
    }
    let only = |i: usize| {
        rows.values()
            .filter(|c| c[i] > 0 && c.iter().enumerate().all(|(j, n)| j == i || *n == 0))
            .count()
    };
    println!(
        "\n{} (machine, event, outcome) rows; per layer: model {}, props {}, fuzz {}; \
         reached by one layer only: model {}, props {}, fuzz {}",
        rows.len(),
        model.len(),
        props.len(),
        fuzz.len(),
        only(0),
        only(1),
        only(2)
    );
    let reached: BTreeSet<(&str, &str)> = rows.keys().map(|(m, e, _)| (*m, *e)).collect();
    for (machine, kinds) in [
        ("coordinator", &COORD_EVENT_KINDS[..]),
        ("task", &TASK_EVENT_KINDS[..]),
    ] {
        let missing: Vec<&str> = kinds
            .iter()
            .copied()
            .filter(|k| !reached.contains(&(machine, *k)))
            .collect();
        println!("{machine} event kinds no layer reached: {missing:?}");
    }
}
