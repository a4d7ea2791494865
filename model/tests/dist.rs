//! The distributed search (`search::dist`, `ckpt-model dist`) against the
//! single-run searches: the same unique counts (summed over the owners, so
//! no state is searched twice), the same verdicts, shortest
//! counterexamples, in threads and in processes, and a resumed run (after
//! a stop or a `kill -9`) ending with the uninterrupted run's counts.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::search::dist::engine::{search, Cluster, Codec, DistOptions, DistReport, Key};
use ckpt_model::search::dist::twophase::{self, TwoPhase};
use ckpt_model::search::engine::fingerprint;
use ckpt_model::search::exact::exact_unique_states_reduced;
use ckpt_model::search::symmetry::orbit_min;
use ckpt_model::{shortest_violation, ModelConfig, Reduction, SysModel, Topology};
use stateright::{Checker, Model};

fn opts(threads: usize) -> DistOptions {
    DistOptions {
        cluster: Cluster::Threads(threads),
        checkpoint_dir: None,
        resume: false,
        config: "test".into(),
        stop_after_round: None,
        progress: false,
    }
}

fn two_phase(rms: usize, o: &DistOptions) -> DistReport {
    let key: Key<TwoPhase> = Arc::new(fingerprint);
    search(
        Arc::new(TwoPhase { rms }),
        key,
        Some(Arc::new(twophase::codec())),
        o,
    )
    .unwrap()
}

fn ckpt(cfg: &ModelConfig, o: &DistOptions) -> Result<DistReport, String> {
    let mut model = SysModel::new(cfg.clone());
    model.reduction = Reduction::Ample;
    let key: Key<SysModel> = Arc::new(|s| orbit_min(s, fingerprint));
    search(Arc::new(model), key, Some(Arc::new(Codec::world())), o)
}

#[test]
fn two_phase_counts_equal_stateright_bfs_in_one_and_two_workers() {
    for rms in [3, 5] {
        let sr = TwoPhase { rms }.checker().spawn_bfs().join();
        for threads in [1, 2] {
            let r = two_phase(rms, &opts(threads));
            assert_eq!(
                r.unique,
                sr.unique_state_count() as u64,
                "{rms} RMs, {threads} workers"
            );
            assert_eq!(r.shares.iter().map(|s| s.judged).sum::<u64>(), r.unique);
            assert_eq!(r.shares.len(), threads);
            assert!(r.violation.is_none());
            assert_eq!(r.discovered, ["abort agreement", "commit agreement"]);
        }
    }
    assert_eq!(two_phase(5, &opts(2)).unique, 8_832);
}

#[test]
fn ckpt_counts_equal_the_exact_search_with_symmetry_and_reduction() {
    let cfg = ModelConfig {
        tasks: 1,
        ..ModelConfig::default()
    };
    let exact = exact_unique_states_reduced(&cfg, true, Reduction::Ample, 1_000_000);
    assert_eq!(exact, 2_746, "the count `check --tasks 1` reports");
    for threads in [1, 2] {
        let r = ckpt(&cfg, &opts(threads)).unwrap();
        assert_eq!(r.unique, exact as u64, "{threads} workers");
        assert!(r.violation.is_none());
        assert!(r.shares.iter().all(|s| s.owned > 0), "{:?}", r.shares);
    }
}

/// The pinned configurations of `tests/engine.rs` that a debug build
/// searches in seconds.
fn pinned() -> Vec<(&'static str, ModelConfig)> {
    let small = ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    };
    vec![
        ("2 tasks, 1 checkpoint", small.clone()),
        (
            "3 tasks, join",
            ModelConfig {
                tasks: 3,
                topology: Topology::Join,
                ..small.clone()
            },
        ),
        (
            "savepoints",
            ModelConfig {
                tasks: 1,
                savepoints: 1,
                ..small.clone()
            },
        ),
        (
            "task failures",
            ModelConfig {
                task_failures: 1,
                ..small.clone()
            },
        ),
        (
            "coordinator failover",
            ModelConfig {
                coordinator_failovers: 1,
                ..small.clone()
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
fn one_two_and_four_workers_count_the_exact_search_on_the_pinned_configurations() {
    // The two settings whose reachable set does not depend on the order of
    // the search (so one exact count holds for any number of owners):
    // reduction without symmetry (an ample set is a function of the state),
    // and symmetry without reduction (the orbits are what they are).
    for (name, cfg) in pinned() {
        for (symmetry, reduction) in [(false, Reduction::Ample), (true, Reduction::Off)] {
            let exact = exact_unique_states_reduced(&cfg, symmetry, reduction, 10_000_000) as u64;
            let mut model = SysModel::new(cfg.clone());
            model.reduction = reduction;
            let model = Arc::new(model);
            for threads in [1, 2, 4] {
                let key: Key<SysModel> = if symmetry {
                    Arc::new(|s| orbit_min(s, fingerprint))
                } else {
                    Arc::new(fingerprint)
                };
                let r = search(
                    Arc::clone(&model),
                    key,
                    Some(Arc::new(Codec::world())),
                    &opts(threads),
                )
                .unwrap();
                let what = format!("{name}, symmetry {symmetry}, {reduction:?}, {threads} workers");
                assert_eq!(r.unique, exact, "{what}");
                assert_eq!(
                    r.shares.iter().map(|s| s.judged).sum::<u64>(),
                    exact,
                    "{what}"
                );
                assert!(r.violation.is_none(), "{what}");
            }
        }
    }
}

#[test]
fn a_legacy_bug_is_found_with_a_shortest_counterexample() {
    let cfg = ModelConfig {
        checkpoints: 1,
        faults: 0,
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        ..ModelConfig::default()
    };
    for cfg in [
        cfg.clone(),
        ModelConfig {
            semantics: cfg.semantics,
            ..ModelConfig::default()
        },
    ] {
        let cx = shortest_violation(&cfg, 1).unwrap();
        for threads in [1, 2, 4] {
            let r = ckpt(&cfg, &opts(threads)).unwrap();
            let (name, path) = r.violation.unwrap();
            assert_eq!(name, cx.property, "{threads} workers");
            assert_eq!(
                path.len() - 1,
                cx.actions.len(),
                "actions on the path, {threads} workers"
            );
        }
    }
}

#[test]
fn a_stopped_ckpt_run_resumes_from_its_encoded_frontier() {
    let cfg = ModelConfig {
        checkpoints: 1,
        ..ModelConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let whole = ckpt(&cfg, &opts(2)).unwrap();
    let mut o = opts(2);
    o.checkpoint_dir = Some(dir.path().to_path_buf());
    o.stop_after_round = Some(5);
    let cut = ckpt(&cfg, &o).unwrap();
    assert!(cut.stopped && cut.unique < whole.unique);
    o.stop_after_round = None;
    o.resume = true;
    // The frontier is stored in the world's encoding: a run without it
    // (states rebuilt from their paths) is refused, not misread.
    let key: Key<SysModel> = Arc::new(|s| orbit_min(s, fingerprint));
    let mut model = SysModel::new(cfg.clone());
    model.reduction = Reduction::Ample;
    let refused = search(Arc::new(model), key, None, &o).unwrap_err();
    assert!(refused.contains("state encoding"), "{refused}");
    let resumed = ckpt(&cfg, &o).unwrap();
    assert_eq!(resumed.started_at_round, 6);
    assert_eq!(
        (resumed.unique, resumed.generated, resumed.max_depth),
        (whole.unique, whole.generated, whole.max_depth)
    );
    assert!(resumed.violation.is_none());
}

#[test]
fn a_stopped_run_resumes_to_the_same_counts_and_a_changed_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let whole = two_phase(5, &opts(2));
    let mut o = opts(2);
    o.checkpoint_dir = Some(dir.path().to_path_buf());
    o.stop_after_round = Some(6);
    let cut = two_phase(5, &o);
    assert!(cut.stopped && cut.unique < whole.unique);
    o.stop_after_round = None;
    // A new run in the same directory is refused: it would append to the
    // visited files, and a later resume could take the earlier run's round.
    let key: Key<TwoPhase> = Arc::new(fingerprint);
    let again = search(Arc::new(TwoPhase { rms: 5 }), key.clone(), None, &o).unwrap_err();
    assert!(again.contains("earlier run"), "{again}");
    o.resume = true;
    let mut other = o.clone();
    other.config = "another".into();
    let refused = search(Arc::new(TwoPhase { rms: 5 }), key, None, &other).unwrap_err();
    assert!(refused.contains("another run"), "{refused}");
    let resumed = two_phase(5, &o);
    assert_eq!(resumed.started_at_round, 7);
    assert_eq!(
        (
            resumed.unique,
            resumed.generated,
            resumed.max_depth,
            &resumed.discovered
        ),
        (
            whole.unique,
            whole.generated,
            whole.max_depth,
            &whole.discovered
        )
    );
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt-model"))
}

/// A free port on loopback with the three after it free too (the default
/// addresses are consecutive, one per process).
fn free_ports() -> u16 {
    loop {
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX - 3
            && (1..4).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok())
        {
            return p;
        }
    }
}

fn unique_of(stdout: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("unique states: "))
        .unwrap_or_else(|| panic!("{text}"));
    line["unique states: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn two_processes_on_loopback_count_what_one_does() {
    let port = free_ports().to_string();
    let out = bin()
        .args([
            "dist",
            "--two-phase",
            "5",
            "--threads",
            "1",
            "--local-processes",
            "2",
            "--port",
            &port,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(unique_of(&out.stdout), 8_832);
    assert!(String::from_utf8_lossy(&out.stdout).contains("w1 "));
}

#[test]
fn one_two_and_four_processes_on_loopback_count_the_exact_search() {
    let cfg = ModelConfig {
        checkpoints: 1,
        ..ModelConfig::default()
    };
    let exact = exact_unique_states_reduced(&cfg, false, Reduction::Ample, 10_000_000) as u64;
    for p in [1u16, 2, 4] {
        let port = free_ports().to_string();
        let out = bin()
            .args([
                "dist",
                "--checkpoints",
                "1",
                "--no-symmetry",
                "--threads",
                "1",
            ])
            .args(["--local-processes", &p.to_string(), "--port", &port])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{p} processes: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(unique_of(&out.stdout), exact, "{p} processes");
        assert!(text.contains("verdict: holds"), "{text}");
        assert!(text.contains(&format!("w{} ", p - 1)), "{text}");
    }
}

fn newest_round(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .split(".round-")
                .nth(1)?
                .parse()
                .ok()
        })
        .max()
}

#[test]
fn a_run_killed_at_a_level_resumes_to_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    // The level to kill at, varied from run to run (2..=11 of 22).
    let level = 2 + u64::from(std::process::id()) % 10;
    let args = ["dist", "--tasks", "1", "--threads", "2"];
    let mut child = bin()
        .args(args)
        .args(["--checkpoint-dir", &d])
        .spawn()
        .unwrap();
    while newest_round(dir.path()).is_none_or(|r| r < level) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap_or(()); // SIGKILL on Unix
    child.wait().unwrap();
    let out = bin().args(args).args(["--resume", &d]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(unique_of(&out.stdout), 2_746);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("verdict: holds"), "{text}");
}

#[test]
fn a_process_whose_checkpoint_dir_holds_an_earlier_run_fails_the_whole_run() {
    // Two processes with a checkpoint directory each (one per machine, as
    // a cluster without a shared volume has them): process 1's holds an
    // earlier run's key file. Both must fail (exit 2), process 0 included:
    // had process 1 just quit, process 0 would have searched alone and
    // reported a partial count as the verdict.
    let d0 = tempfile::tempdir().unwrap();
    let d1 = tempfile::tempdir().unwrap();
    std::fs::write(d1.path().join("worker-1.visited"), [1u8; 8]).unwrap();
    let port = free_ports().to_string();
    let p0 = two_phase_process(&port, "0", d0.path().as_os_str());
    let p1 = two_phase_process(&port, "1", d1.path().as_os_str());
    let (o0, o1) = (within_a_minute(p0), within_a_minute(p1));
    for (o, why) in [(&o0, "another worker refused"), (&o1, "earlier run")] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{err}");
    }
    // Nothing was committed in the clean directory.
    assert_eq!(std::fs::read_dir(d0.path()).unwrap().count(), 0);
}

#[test]
fn a_resume_with_one_damaged_worker_file_fails_every_worker() {
    // Worker 1's manifest of the last round is cut short: worker 1 refuses,
    // and worker 0, whose files are intact, must not go on alone (it would
    // report a search without worker 1's share as the result).
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(2);
    o.checkpoint_dir = Some(dir.path().to_path_buf());
    o.stop_after_round = Some(6);
    let cut = two_phase(5, &o);
    assert!(cut.stopped);
    let manifest = dir.path().join("worker-1.round-6");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();
    o.stop_after_round = None;
    o.resume = true;
    let key: Key<TwoPhase> = Arc::new(fingerprint);
    let codec = Some(Arc::new(twophase::codec()));
    let refused = search(Arc::new(TwoPhase { rms: 5 }), key, codec, &o).unwrap_err();
    // Worker 1's own reason, not worker 0's report that another refused.
    assert!(
        refused.contains("worker-1.round-6") && !refused.starts_with("another worker"),
        "{refused}"
    );
    // Nothing of the resumed round was committed, by either worker.
    for w in 0..2 {
        assert!(!dir.path().join(format!("worker-{w}.round-7")).exists());
    }
}

#[test]
fn a_process_that_cannot_write_its_checkpoint_fails_the_whole_run() {
    // Process 1's checkpoint directory cannot be created (under /proc), so
    // its first commit fails and it leaves the run after the first round.
    // Process 0 must not go on alone: its next round's statistics lack
    // process 1's record, and it fails too.
    let d0 = tempfile::tempdir().unwrap();
    let d1 = format!("/proc/ckpt-dist-test-{}", std::process::id());
    let port = free_ports().to_string();
    let p0 = two_phase_process(&port, "0", d0.path().as_os_str());
    let p1 = two_phase_process(&port, "1", std::ffi::OsStr::new(&d1));
    let (o0, o1) = (within_a_minute(p0), within_a_minute(p1));
    for (o, why) in [(&o0, "another worker left"), (&o1, "cannot create")] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{err}");
    }
}

/// Process `process` of a two-process two-phase commit search (3 resource
/// managers) on loopback from `port`, checkpointing into `dir`.
fn two_phase_process(port: &str, process: &str, dir: &std::ffi::OsStr) -> std::process::Child {
    bin()
        .args(["dist", "--two-phase", "3", "--threads", "1"])
        .args(["--processes", "2", "--process", process, "--port", port])
        .arg("--checkpoint-dir")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's output once it exits; killed (and the test failed) if it
/// runs for a minute: a process whose peer never came (its port taken
/// between `free_ports` and the spawn) would wait for it forever.
fn within_a_minute(mut child: std::process::Child) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{:?}", child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
