//! `kill -9` the reference pipeline (`ckpt-pipeline`, the same code as the
//! `pipeline` example) at seeded random moments, restart it each time, and
//! check after every kill that the committed output has no record twice and
//! consistent counts, and that every file of every retained checkpoint is on
//! disk; at the end, after a clean run, that every record is committed
//! exactly once.
//!
//! The same with fan-in (`--sources 2`: two numbered sources into the
//! counter), each source's records exactly once.
//!
//! `CKPT_CRASH_SEED=N` picks the kill points, `CKPT_CRASH_KILLS=N` runs more
//! of them (default 5 for the chain, 3 for fan-in: a few seconds; the
//! measured cost is in `tests/README.md`). The sources are throttled
//! (60,000 records/s in all) so that a run outlives the kill points.
#![cfg(not(loom))]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::host::fs::{Fs, StdFs};
use ckpt_core::host::pipeline::verify_output_of;
use ckpt_core::host::runtime::SplitMix64;
use ckpt_core::host::store::{state_path, Metadata, CHECKPOINT_DIR};

const RECORDS: u64 = 300_000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn spawn(dir: &str, sources: u32) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ckpt-pipeline"))
        .args([
            dir,
            "--records",
            &RECORDS.to_string(),
            "--sources",
            &sources.to_string(),
            "--keys",
            "7",
            "--interval-ms",
            "40",
            "--rate",
            &(60_000 / u64::from(sources)).to_string(),
            "--check",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the pipeline")
}

/// Every metadata file on disk decodes and every state file it names exists
/// (read directly, without opening the store, which would repair things).
fn check_retained_files(fs: &dyn Fs) -> usize {
    let mut retained = 0;
    for name in fs.list(CHECKPOINT_DIR).unwrap() {
        if !name.ends_with(".meta") {
            continue;
        }
        let path = format!("{CHECKPOINT_DIR}/{name}");
        let meta = Metadata::decode(&fs.read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{path} is not valid metadata: {e}"));
        for h in &meta.handles {
            assert!(
                fs.exists(&state_path(*h)),
                "state {h} of retained checkpoint {} is missing",
                meta.checkpoint
            );
        }
        retained += 1;
    }
    retained
}

#[test]
fn kill_9_at_random_moments_then_exactly_once() {
    crash_run(1, 5);
}

#[test]
fn kill_9_with_fan_in_then_exactly_once() {
    crash_run(2, 3);
}

/// `kills` (or `CKPT_CRASH_KILLS`) kills of the pipeline with `sources`
/// sources, then a clean run to the end.
fn crash_run(sources: u32, kills: u64) {
    let seed = env_u64("CKPT_CRASH_SEED", 0xC0FFEE);
    let kills = env_u64("CKPT_CRASH_KILLS", kills);
    let dir = std::env::temp_dir().join(format!(
        "ckpt-crash-{}-{seed}-{sources}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_s = dir.to_string_lossy().into_owned();
    let fs = Arc::new(StdFs::new(&dir).unwrap());
    let mut rng = SplitMix64::new(seed);
    let mut killed = 0;
    for k in 0..kills {
        let mut child = spawn(&dir_s, sources);
        let delay_ms = 20 + rng.below_or_eq(1_200);
        std::thread::sleep(Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the pipeline ended before kill {k} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        killed += 1;
        let report = verify_output_of(&*fs, RECORDS, sources, false).unwrap_or_else(|e| {
            panic!("seed {seed}, {sources} sources, after kill {k} at {delay_ms} ms: {e} (rerun with CKPT_CRASH_SEED={seed})")
        });
        let retained = check_retained_files(&*fs);
        eprintln!(
            "{sources} sources, kill {k} after {delay_ms} ms: {} records committed, {retained} checkpoints retained",
            report.records
        );
    }
    // A clean run to the end resumes from the latest checkpoint.
    let child = spawn(&dir_s, sources);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "seed {seed}: final run failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{killed} kills; final run: {stdout}");
    let report = verify_output_of(&*fs, RECORDS, sources, true)
        .unwrap_or_else(|e| panic!("seed {seed}: {e} (rerun with CKPT_CRASH_SEED={seed})"));
    assert_eq!(report.records, RECORDS);
    assert!(check_retained_files(&*fs) >= 1);
    let _ = std::fs::remove_dir_all(&dir);
}
