//! A damaged latest checkpoint must not break exactly-once, tested as a
//! user meets it: the reference pipeline (`ckpt-pipeline`, the example's
//! code) on the real disk is `kill -9`ed right after its sink committed the
//! latest checkpoint's output, that checkpoint is damaged (every kind of
//! damage: a flipped byte, a truncation, an empty file, another
//! checkpoint's metadata swapped in; a state file deleted, flipped, or
//! another checkpoint's swapped in), and the pipeline is started again:
//!
//! * the start is refused with a clear message naming the damaged file and
//!   exit status 3, before any output is written, with nothing in the
//!   directory changed (the sink's committed output included);
//! * after the file is repaired, the directory resumes and the run ends
//!   with every record committed exactly once;
//! * with `--retained 1` (nothing older to fall back to) the same holds;
//! * a damaged *older* checkpoint is quarantined with its state files (the
//!   start goes ahead: the newest is whole), and once repaired it is read
//!   again.
//!
//! Throughout, the committed output never holds a record twice.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::host::fs::{Fs, StdFs};
use ckpt_core::host::pipeline::{committed_epoch, verify_output};
use ckpt_core::host::store::{meta_path, state_path, Metadata};
use ckpt_core::{CheckpointId, TaskId};

const RECORDS: u64 = 30_000;
const SINK: TaskId = TaskId(2);

fn args(dir: &Path, retained: u32, records: u64) -> Vec<String> {
    [
        dir.to_string_lossy().as_ref(),
        "--records",
        &records.to_string(),
        "--keys",
        "5",
        "--interval-ms",
        "30",
        "--rate",
        "30000",
        "--retained",
        &retained.to_string(),
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn command(dir: &Path, retained: u32) -> Command {
    command_for(dir, retained, RECORDS)
}

fn command_for(dir: &Path, retained: u32, records: u64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ckpt-pipeline"));
    c.args(args(dir, retained, records))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run(dir: &Path, retained: u32) -> Output {
    command(dir, retained).output().expect("run the pipeline")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The newest `chk-N.meta` on disk.
fn latest_meta(fs: &dyn Fs) -> Option<CheckpointId> {
    fs.list("checkpoints")
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_prefix("chk-")?.strip_suffix(".meta")?.parse().ok())
        .map(CheckpointId)
        .max()
}

fn stored_ids(fs: &dyn Fs) -> Vec<CheckpointId> {
    let mut ids: Vec<CheckpointId> = fs
        .list("checkpoints")
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_prefix("chk-")?.strip_suffix(".meta")?.parse().ok())
        .map(CheckpointId)
        .collect();
    ids.sort();
    ids
}

/// Starts the pipeline in `dir` and `kill -9`s it once its sink has
/// committed the output of the latest stored checkpoint (and at least
/// `min_stored` checkpoints are stored); retries the kill until, after it,
/// that still holds. Returns that checkpoint.
fn kill_after_a_committed_epoch(
    dir: &Path,
    fs: &dyn Fs,
    retained: u32,
    min_stored: usize,
) -> CheckpointId {
    for attempt in 0..20 {
        let mut child = command(dir, retained).spawn().expect("start the pipeline");
        let mut waited = Duration::ZERO;
        loop {
            let n = latest_meta(fs);
            let c = committed_epoch(fs, SINK).unwrap();
            if n.is_some() && n == c && stored_ids(fs).len() >= min_stored {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "the pipeline ended before its sink committed a checkpoint ({status}): {}",
                    text(&child.wait_with_output().unwrap())
                );
            }
            assert!(
                waited < Duration::from_secs(60),
                "no committed checkpoint after 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
            waited += Duration::from_millis(5);
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        verify_output(fs, RECORDS, false).expect("exactly once after the kill");
        let n = latest_meta(fs);
        if n.is_some()
            && n == committed_epoch(fs, SINK).unwrap()
            && stored_ids(fs).len() >= min_stored
        {
            return n.unwrap_or_default();
        }
        eprintln!(
            "attempt {attempt}: the kill landed between a commit and the sink's commit; again"
        );
    }
    panic!("never killed right after the sink committed the latest checkpoint");
}

/// Every file under `dir` (but the leader records, which a start claims,
/// and the lock file) with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(at).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with("leader") || rel == Path::new("lock") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn handles_of(fs: &dyn Fs, id: CheckpointId) -> Vec<ckpt_core::StateHandle> {
    Metadata::decode(&fs.read(&meta_path(id)).unwrap())
        .unwrap()
        .handles
}

/// A damage: what it does to checkpoint `n` (with `older`, a previous
/// stored checkpoint, when there is one); returns the damaged file, which
/// the error must name, and its contents before (`None`: it did not exist).
type Damage = fn(&dyn Fs, CheckpointId, Option<CheckpointId>) -> (String, Option<Vec<u8>>);

fn flip(fs: &dyn Fs, path: &str, at: usize) -> (String, Option<Vec<u8>>) {
    let good = fs.read(path).unwrap();
    let mut bad = good.clone();
    let i = at.min(bad.len() - 1);
    bad[i] ^= 0x10;
    fs.write(path, &bad).unwrap();
    (path.to_string(), Some(good))
}

const DAMAGES: &[(&str, Damage)] = &[
    ("metadata: one byte flipped", |fs, n, _| {
        flip(fs, &meta_path(n), 40)
    }),
    ("metadata: truncated", |fs, n, _| {
        let path = meta_path(n);
        let good = fs.read(&path).unwrap();
        fs.write(&path, &good[..good.len() - 6]).unwrap();
        (path, Some(good))
    }),
    ("metadata: empty", |fs, n, _| {
        let path = meta_path(n);
        let good = fs.read(&path).unwrap();
        fs.write(&path, b"").unwrap();
        (path, Some(good))
    }),
    (
        "metadata: another checkpoint's file swapped in",
        |fs, n, older| {
            let path = meta_path(n);
            let good = fs.read(&path).unwrap();
            let other = fs
                .read(&meta_path(older.expect("an older checkpoint")))
                .unwrap();
            fs.write(&path, &other).unwrap();
            (path, Some(good))
        },
    ),
    ("state file deleted", |fs, n, _| {
        let path = state_path(handles_of(fs, n)[1]);
        let good = fs.read(&path).unwrap();
        fs.remove(&path).unwrap();
        (path, Some(good))
    }),
    ("state file: one byte flipped", |fs, n, _| {
        flip(fs, &state_path(handles_of(fs, n)[2]), 30)
    }),
    (
        "state file: another checkpoint's swapped in",
        |fs, n, older| {
            let path = state_path(handles_of(fs, n)[0]);
            let good = fs.read(&path).unwrap();
            let other_handle = handles_of(fs, older.expect("an older checkpoint"))[0];
            fs.write(&path, &fs.read(&state_path(other_handle)).unwrap())
                .unwrap();
            (path, Some(good))
        },
    ),
];

fn fresh_dir(name: &str) -> (PathBuf, Arc<dyn Fs>) {
    let dir = std::env::temp_dir().join(format!("ckpt-damage-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fs: Arc<dyn Fs> = Arc::new(StdFs::new(&dir).unwrap());
    (dir, fs)
}

/// The pipeline refuses to restore behind the sink's committed output, for
/// every kind of damage, with nothing changed; repaired, it resumes and
/// ends exactly once.
fn refused_then_repaired(what: &str, damage: Damage, retained: u32) {
    let (dir, fs) = fresh_dir(&format!(
        "{}-{retained}",
        what.replace([' ', ':', '\''], "_")
    ));
    let n = kill_after_a_committed_epoch(&dir, &*fs, retained, if retained > 1 { 2 } else { 1 });
    let older = stored_ids(&*fs).into_iter().rev().nth(1);
    let (file, good) = damage(&*fs, n, older);
    let before = snapshot(&dir);
    let out = run(&dir, retained);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{what}: {shown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("already committed the output of checkpoint {n}")),
        "{what}: {shown}"
    );
    assert!(
        stderr.contains(&file),
        "{what}: the message does not name {file}: {shown}"
    );
    assert!(
        out.stdout.is_empty(),
        "{what}: a refused start printed {shown}"
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "{what}: the refused start changed the directory"
    );
    verify_output(&*fs, RECORDS, false).unwrap_or_else(|e| panic!("{what}: {e}"));
    // The same answer every time, until a human repairs it.
    assert_eq!(run(&dir, retained).status.code(), Some(3), "{what}");
    // Repaired: the exact bytes back.
    match good {
        Some(bytes) => fs.write(&file, &bytes).unwrap(),
        None => fs.remove(&file).unwrap(),
    }
    let out = run(&dir, retained);
    let shown = text(&out);
    assert!(
        out.status.success(),
        "{what}: the repaired directory did not resume: {shown}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("started: restored checkpoint {n} ")),
        "{what}: {shown}"
    );
    assert!(stdout.contains("0 damaged"), "{what}: {shown}");
    let report = verify_output(&*fs, RECORDS, true).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(report.records, RECORDS);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_latest_checkpoint_the_sink_committed_is_refused_and_resumes_once_repaired() {
    for (what, damage) in DAMAGES {
        refused_then_repaired(what, *damage, 2);
    }
}

#[test]
fn with_one_checkpoint_retained_a_damaged_latest_is_refused_not_restarted_from_scratch() {
    let kinds = [DAMAGES[0], DAMAGES[2], DAMAGES[4]];
    for (what, damage) in kinds {
        refused_then_repaired(what, damage, 1);
    }
}

/// A damaged checkpoint older than the one restored does not stop the
/// start: it is quarantined (`*.corrupt`) with its state files, which no
/// start deletes, and once repaired and renamed back it is read again.
#[test]
fn a_damaged_older_checkpoint_is_quarantined_with_its_state_and_can_be_repaired() {
    let (dir, fs) = fresh_dir("older");
    let n = kill_after_a_committed_epoch(&dir, &*fs, 2, 2);
    let older = stored_ids(&*fs)
        .into_iter()
        .rev()
        .nth(1)
        .expect("two stored");
    let handles = handles_of(&*fs, older);
    let (file, good) = flip(&*fs, &meta_path(older), 30);
    let out = run(&dir, 2);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("started: restored checkpoint {n} ")),
        "{shown}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&file),
        "{shown}"
    );
    let quarantined = format!("{file}.corrupt");
    assert!(fs.exists(&quarantined), "{shown}");
    for h in &handles {
        assert!(
            fs.exists(&state_path(*h)),
            "quarantined state {} deleted",
            state_path(*h)
        );
    }
    verify_output(&*fs, RECORDS, true).unwrap();
    // A later start (the source extended to twice as many records, so the
    // job runs and recovery reads the store again) keeps them too.
    let more = (2 * RECORDS).to_string();
    let out = command_for(&dir, 2, 2 * RECORDS).output().unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 quarantined in all"),
        "{shown}"
    );
    for h in &handles {
        assert!(fs.exists(&state_path(*h)), "{shown}");
    }
    verify_output(&*fs, 2 * RECORDS, true).unwrap();
    // Repaired and renamed back: read again as a stored checkpoint.
    fs.remove(&quarantined).unwrap();
    fs.write(&file, &good.unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ckpt-pipeline"))
        .args([
            dir.to_string_lossy().as_ref(),
            "--verify",
            "--records",
            &more,
        ])
        .output()
        .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0 damaged, 0 quarantined"),
        "{shown}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
