//! The pipeline command as a user meets it (`ckpt-pipeline`, the example's
//! code): its arguments and their bounds, `--help`, the directory lock, a
//! rerun on a finished directory, the progress line against the final
//! line, `--verify`, `--trace` and `--sources` (fan-in).
#![cfg(not(loom))]

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::host::fs::{Fs, StdFs};
use ckpt_core::host::pipeline::{verify_output, verify_output_of, COMMITTED_DIR};
use ckpt_core::trace::{read_trace, replay};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt-pipeline"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run the pipeline")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `--verify --records 20000` on `dir` succeeds and says every record was
/// committed once.
fn verifies_20000_exactly_once(dir: &str) {
    let out = run(&[dir, "--verify", "--records", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("output: 20000 records committed exactly once"),
        "{}",
        text(&out)
    );
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ckpt-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn help_exits_zero_and_documents_every_flag() {
    let out = run(&["--help"]);
    assert!(out.status.success(), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--records",
        "--sources",
        "--keys",
        "--interval-ms",
        "--retained",
        "--rate",
        "--check-invariants",
        "--trace",
        "--verify",
        "--quiet",
        "Exit status",
    ] {
        assert!(
            help.contains(flag),
            "--help does not mention {flag}:\n{help}"
        );
    }
}

/// Out-of-range and malformed arguments are usage errors (status 2) that
/// say what is wrong, and nothing is created.
#[test]
fn bad_arguments_are_usage_errors_that_name_the_bound() {
    let dir = fresh_dir("bad-args");
    let d = s(&dir);
    let cases: &[(&[&str], &str)] = &[
        (&["--interval-ms", "18446744073709551615"], "--interval-ms"),
        (&["--interval-ms", "0"], "--interval-ms"),
        (&["--retained", "0"], "--retained"),
        (&["--keys", "0"], "--keys"),
        (&["--records", "0"], "--records"),
        (&["--records", "lots"], "--records"),
        (&["--rate", "-1"], "-1"),
        (&["--bogus"], "--bogus"),
        (&["/tmp/a-second-directory"], "unexpected argument"),
        (&["--verify", "--trace", "t.jsonl"], "cannot be used with"),
    ];
    for (extra, says) in cases {
        let mut args = vec![d.as_str()];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{extra:?}: {}", text(&out));
        assert!(!dir.exists(), "{extra:?}: a usage error created {d}");
    }
    // No directory at all.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_regular_file_as_the_directory_is_a_clear_usage_error() {
    let dir = fresh_dir("file");
    std::fs::write(&dir, b"not a directory").unwrap();
    let out = run(&[&s(&dir)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a directory"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_file(&dir);
}

/// A second process on a directory in use is refused (status 3) and
/// leaves the first one's files alone; once the first is gone (even by
/// `kill -9`) the directory is free again.
#[test]
fn a_second_process_on_the_same_directory_is_refused() {
    let dir = fresh_dir("lock");
    let d = s(&dir);
    let mut first = bin()
        .args([&d, "--records", "unbounded", "--rate", "20000", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first one is running (its start line is out).
    let fs = StdFs::new(&dir).unwrap();
    let mut waited = 0;
    while !fs.exists("leader/gen-00000000000000000001") {
        assert!(first.try_wait().unwrap().is_none(), "the first run ended");
        assert!(waited < 60_000, "the first run never started");
        std::thread::sleep(Duration::from_millis(10));
        waited += 10;
    }
    for args in [vec![d.as_str()], vec![d.as_str(), "--verify"]] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("in use by another pipeline process"),
            "{}",
            text(&out)
        );
    }
    assert!(
        !fs.exists("leader/gen-00000000000000000002"),
        "the refused process claimed a generation"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let out = run(&[&d, "--verify"]);
    assert!(out.status.success(), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A finished directory: the rerun says so and adds nothing (no
/// transaction, no checkpoint); `--verify` checks it, and with the wrong
/// record count says what is missing. The progress line's abort count is
/// the final line's.
#[test]
fn a_finished_directory_reruns_as_a_no_op_and_verifies() {
    let dir = fresh_dir("finished");
    let d = s(&dir);
    let out = run(&[&d, "--records", "20000", "--interval-ms", "20"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // "records committed ... (completed C, aborted A), failovers F"
    let last_progress = stderr
        .lines()
        .rfind(|l| l.starts_with("records committed"))
        .unwrap_or_else(|| panic!("no progress line: {shown}"));
    let progress_aborted: u64 = last_progress
        .split("aborted ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{last_progress}"));
    let done = stdout
        .lines()
        .find(|l| l.starts_with("done:"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        done.contains(&format!("completed, {progress_aborted} aborted")),
        "progress says aborted {progress_aborted}, the final line: {done}"
    );
    let fs = StdFs::new(&dir).unwrap();
    let txns = fs.list(COMMITTED_DIR).unwrap();
    let metas = fs.list("checkpoints").unwrap();
    let ids = fs.read("ids").unwrap();

    let out = run(&[&d, "--records", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already complete: 20000 records"),
        "{}",
        text(&out)
    );
    assert_eq!(
        fs.list(COMMITTED_DIR).unwrap(),
        txns,
        "the rerun added transactions"
    );
    assert_eq!(
        fs.list("checkpoints").unwrap(),
        metas,
        "the rerun added checkpoints"
    );
    assert_eq!(fs.read("ids").unwrap(), ids);

    verifies_20000_exactly_once(&d);
    let out = run(&[&d, "--verify", "--records", "30000"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("10000 records missing (first: 20000)"),
        "{}",
        text(&out)
    );
    verify_output(&fs, 20_000, true).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--sources 2`: the fan-in pipeline (two numbered sources into the
/// counter) commits every record once; the directory keeps its number of
/// sources (another is refused with status 3, nothing changed), and
/// `--verify` without the flag checks the output as two sources'.
#[test]
fn two_sources_fan_in_and_the_directory_keeps_its_number() {
    let dir = fresh_dir("fan-in");
    let d = s(&dir);
    let out = run(&[
        &d,
        "--sources",
        "2",
        "--records",
        "20000",
        "--interval-ms",
        "20",
        "--check-invariants",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("done: 20000 records committed exactly once"),
        "{}",
        text(&out)
    );
    let fs = StdFs::new(&dir).unwrap();
    assert_eq!(fs.read("sources").unwrap(), b"2\n");
    verify_output_of(&fs, 20_000, 2, true).unwrap();
    // The two sources' records are interleaved: as one source's they are
    // out of order.
    assert!(verify_output(&fs, 20_000, true).is_err());
    let txns = fs.list(COMMITTED_DIR).unwrap();
    let out = run(&[&d, "--sources", "1", "--records", "20000"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("started with 2 sources, not 1"),
        "{}",
        text(&out)
    );
    assert_eq!(fs.list(COMMITTED_DIR).unwrap(), txns);
    assert_eq!(fs.read("sources").unwrap(), b"2\n");
    verifies_20000_exactly_once(&d);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--trace FILE` writes the reducers' events, which replay clean.
#[test]
fn the_trace_flag_writes_a_trace_that_replays() {
    let dir = fresh_dir("trace");
    let trace = dir.with_extension("jsonl");
    let out = run(&[
        &s(&dir),
        "--records",
        "5000",
        "--interval-ms",
        "20",
        "--check-invariants",
        "--trace",
        &s(&trace),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let file = std::fs::File::open(&trace).unwrap();
    let t = read_trace(BufReader::new(file)).unwrap();
    assert!(!t.steps.is_empty());
    let report = replay(&t).unwrap_or_else(|e| panic!("the trace does not replay: {e}"));
    assert_eq!(report.steps.len(), t.steps.len());
    assert!(report.violation.is_none(), "{:?}", report.violation);
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let fs: Arc<dyn Fs> = Arc::new(StdFs::new(&dir).unwrap());
    verify_output(&*fs, 5_000, true).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&trace);
}
