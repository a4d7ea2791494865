//! The `ckpt-model` command as a user meets it: exit statuses, refusals,
//! bounds, interrupts, output files, replay, explore, and the output for
//! people and for tools. Each test runs the built binary on a small
//! configuration.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt-model"))
}

fn run(args: &[&str]) -> Output {
    bin()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run ckpt-model: {e}"))
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory for this test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
    d
}

/// A small fixed configuration (2 tasks, 1 checkpoint, no faults: 652
/// unique states).
const SMALL: [&str; 5] = ["--checkpoints", "1", "--faults", "0", "--quiet"];

/// A check that searches for minutes (3 tasks x 2 checkpoints, 1 fault): for
/// tests that stop one early (the default check ends in about a second).
const LONG_CHECK: [&str; 5] = ["check", "--tasks", "3", "--checkpoints", "2"];

/// [`LONG_CHECK`] followed by `more`.
fn long_check<'a>(more: &[&'a str]) -> Vec<&'a str> {
    LONG_CHECK.iter().chain(more).copied().collect()
}

/// The long search, `--quiet`, started in the background with its
/// output where the test wants it (the tests that stop it midway).
fn spawn_long_check(stdout: Stdio, stderr: Stdio) -> std::process::Child {
    bin()
        .args(long_check(&["--quiet"]))
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

// ----- wrong or missing answers ----------------------------------------------

#[test]
fn legacy_cancel_on_fanout_is_refused_naming_the_flags_that_reach_it() {
    let o = run(&["check", "--semantics", "legacy-cancel"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--topology join --tasks 3"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("holds"), "{}", stdout(&o));
    // The same refusal for explore.
    let o = run(&["explore", "--semantics", "legacy-cancel", "--port", "0"]);
    assert_eq!(code(&o), 2);
}

/// A knob its world cannot reach is refused with the flags that reach it;
/// `--semantics all` is offered only where it would be accepted (`check`,
/// without `--shard`, `--trace-out` or `--diagram`).
#[test]
fn only_check_offers_semantics_all_for_an_unreachable_knob() {
    let offers = "or --semantics all";
    let o = run(&["check", "--semantics", "legacy", "--tasks", "1"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("--tasks 2"), "{}", stderr(&o));
    assert!(stderr(&o).contains(offers), "{}", stderr(&o));
    for args in [
        &[
            "explore",
            "--semantics",
            "legacy",
            "--tasks",
            "1",
            "--port",
            "0",
        ][..],
        &["dist", "--semantics", "legacy", "--tasks", "1"],
        &["simulate", "--semantics", "legacy", "--tasks", "1"],
        &[
            "dist",
            "--semantics",
            "legacy-notify-out-of-order",
            "--checkpoints",
            "1",
        ],
        &[
            "check",
            "--semantics",
            "legacy",
            "--tasks",
            "1",
            "--shard",
            "0/2",
        ],
    ] {
        let o = run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("cannot be reached in this configuration: it needs"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains(offers), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn combinations_that_cannot_ask_their_question_are_refused() {
    // Each combination, and what its refusal (exit 2) must name.
    let cases: [(&[&str], &str); 5] = [
        (
            &["check", "--semantics", "legacy", "--tasks", "1"],
            "--tasks 2",
        ),
        (
            &["check", "--topology", "join", "--tasks", "2"],
            "--tasks 3",
        ),
        // A flag that only adds to another one's events, without it.
        (
            &["check", "--zombie-coordinators", "1"],
            "needs --coordinator-failovers",
        ),
        (
            &["check", "--checkpoints", "0"],
            "needs --stop-with-savepoint",
        ),
        (
            &["check", "--recovering-tasks", "1"],
            "needs --task-failures",
        ),
    ];
    for (args, why) in cases {
        let o = run(args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn zero_threads_is_refused_and_limits_show_in_help() {
    let o = run(&["check", "--threads", "0"]);
    assert_eq!(code(&o), 2);
    let help = stdout(&run(&["check", "--help"]));
    for limit in [
        "Number of tasks (1..=8)",
        "(1..=64)",
        "(0..=8)",
        "--time-limit",
        "--max-depth",
    ] {
        assert!(help.contains(limit), "{limit} missing from\n{help}");
    }
    assert!(stdout(&run(&["--help"])).contains("130"));
}

#[test]
fn semantics_all_switches_legacy_cancel_to_a_join_and_says_so() {
    let o = run(&[
        "check",
        "--semantics",
        "all",
        "--checkpoints",
        "1",
        "--faults",
        "0",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.starts_with("legacy-cancel"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains("--tasks 3") && row.contains("--topology join"),
        "{row}"
    );
    assert!(row.contains("violated"), "{row}");
}

/// `dist` with a knob in a world too small for its bug: no violation in the
/// whole space is no verdict, as in `check` (exit 3), never "holds".
#[test]
fn dist_never_answers_holds_for_a_knob_it_did_not_catch() {
    // One task: no second handle shares a physical file (333 unique states).
    let knob = [
        "--semantics",
        "legacy-double-release",
        "--tasks",
        "1",
        "--checkpoints",
        "1",
        "--network",
        "reorder-dup-drop",
        "--faults",
        "1",
        "--no-io-faults",
        "--no-task-faults",
        "--shared-files",
        "--quiet",
    ];
    let check = run(&[&["check"][..], &knob].concat());
    assert_eq!(code(&check), 3, "{}", stdout(&check));
    let o = run(&[&["dist", "--threads", "1"][..], &knob].concat());
    let out = stdout(&o);
    assert_eq!(code(&o), 3, "{out}{}", stderr(&o));
    assert!(!out.contains("holds"), "{out}");
    assert!(
        out.contains(
            "verdict: inconclusive: no violation found, but --semantics legacy-double-release \
             is known to be buggy: this configuration did not reach its bug"
        ),
        "{out}"
    );
}

// ----- long runs ----------------------------------------------------------------

#[test]
fn a_time_limit_is_inconclusive_not_holds() {
    let o = run(&long_check(&["--time-limit", "0.3", "--quiet"]));
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("verdict: inconclusive"), "{out}");
    assert!(out.contains("[inconclusive"), "{out}");
    assert!(!out.contains("[holds"), "{out}");
}

#[test]
fn a_time_limit_stops_a_symmetric_search_on_time() {
    // stateright alone let this search (3.6 M unique states, symmetry on)
    // run to its end, minutes past the limit.
    let started = Instant::now();
    let o = run(&[
        "check",
        "--tasks",
        "3",
        "--checkpoints",
        "2",
        "--faults",
        "0",
        "--network",
        "ordered",
        "--time-limit",
        "1",
        "--quiet",
    ]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stdout(&o).contains("the time limit ran out"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn partial_order_reduction_is_on_by_default_and_says_so() {
    let mut args = vec!["check"];
    args.extend(SMALL);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("639 unique (partial-order reduction)"),
        "{}",
        stdout(&o)
    );
    args.push("--no-reduction");
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains(", 652 unique, "), "{}", stdout(&o));
    args.push("--json");
    args.retain(|a| *a != "--quiet");
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&run(&args))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["reduction"], false);
    assert_eq!(v["unique_states"], 652);
}

#[test]
fn both_engines_count_the_same_states_and_the_report_names_the_engine() {
    let mut counts = Vec::new();
    for engine in ["ckpt", "stateright"] {
        let mut args = vec!["check", "--threads", "1", "--json", "--engine", engine];
        args.extend(SMALL.iter().filter(|a| **a != "--quiet"));
        let o = run(&args);
        assert_eq!(code(&o), 0, "{}", stdout(&o));
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
        assert_eq!(v["engine"], engine);
        counts.push((
            v["states"].clone(),
            v["unique_states"].clone(),
            v["depth"].clone(),
        ));
    }
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0].1, 639);
    let o = run(&["check", "--engine", "spin"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn a_state_limit_stops_with_a_partial_report_and_exit_4() {
    let o = run(&["check", "--max-states", "2000", "--quiet"]);
    assert_eq!(code(&o), 4, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("stopped at the state limit"), "{out}");
    assert!(out.contains("partial report"), "{out}");
    assert!(out.contains("[inconclusive"), "{out}");
    assert!(out.contains("[witnessed"), "{out}");
    assert!(!out.contains("[holds"), "{out}");
    assert!(!out.contains("[violated"), "{out}");
    assert!(out.contains("peak memory"), "{out}");
    // The JSON report says the same.
    let o = run(&["check", "--max-states", "2000", "--json"]);
    assert_eq!(code(&o), 4, "{}", stdout(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(v["completion"], "state-limit");
    assert_eq!(v["exit_status"], 4);
    assert!(v["unique_states"].as_u64().is_some_and(|n| n >= 2000));
    assert!(v["peak_memory_mb"].as_f64().is_some_and(|m| m > 0.0));
}

#[test]
fn a_memory_limit_stops_with_a_partial_report_and_exit_4() {
    // Any process is above 1 MiB resident: the first check stops it.
    let o = run(&["check", "--memory-limit-mb", "1", "--quiet"]);
    assert_eq!(code(&o), 4, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("stopped at the memory limit"), "{out}");
    assert!(!out.contains("[holds"), "{out}");
}

#[test]
fn a_violation_found_before_a_limit_is_still_definitive() {
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--max-states",
        "100000000",
        "--quiet",
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("verdict: violated"), "{}", stdout(&o));
}

#[test]
fn a_complete_run_reports_its_peak_memory() {
    let mut args = vec!["check"];
    args.extend(SMALL);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("peak memory"), "{}", stdout(&o));
}

#[test]
fn max_depth_cuts_the_search_and_says_so_only_when_it_did() {
    let mut args = vec!["check"];
    args.extend(SMALL);
    let cut: Vec<&str> = args.iter().copied().chain(["--max-depth", "3"]).collect();
    let o = run(&cut);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("--max-depth were not explored"),
        "{}",
        stdout(&o)
    );
    let wide: Vec<&str> = args.iter().copied().chain(["--max-depth", "200"]).collect();
    let o = run(&wide);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("verdict: holds"));
}

#[test]
fn a_violation_within_a_bound_is_definitive() {
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--max-depth",
        "40",
        "--quiet",
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
}

#[test]
fn progress_is_plain_lines_when_stderr_is_not_a_terminal() {
    let o = run(&long_check(&[
        "--time-limit",
        "1.2",
        "--progress-every",
        "0.2",
    ]));
    assert_eq!(code(&o), 3);
    let err = stderr(&o);
    assert!(!err.contains('\r'), "{err:?}");
    assert!(
        err.lines().filter(|l| l.contains("unique/s")).count() >= 2,
        "{err:?}"
    );
}

#[test]
fn ctrl_c_prints_the_counts_so_far_and_exits_130() {
    let child = spawn_long_check(Stdio::piped(), Stdio::piped());
    std::thread::sleep(Duration::from_millis(1_500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(killed.success());
    let o = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(&o), 130, "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("unique"), "{out}");
    assert!(out.contains("verdict: inconclusive: interrupted"), "{out}");
}

#[test]
fn a_reader_that_closes_stdout_ends_a_search_at_once_with_141() {
    // A search prints nothing on stdout until its report: without a watch
    // on stdout it would search on for minutes after its reader left.
    let mut child = spawn_long_check(Stdio::piped(), Stdio::null());
    std::thread::sleep(Duration::from_millis(1_000));
    drop(child.stdout.take());
    let closed = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break s;
        }
        if closed.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still searching 20 s after its reader closed stdout");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(141));
}

#[test]
fn sigterm_is_an_interrupt_with_the_partial_report() {
    // What Kubernetes sends to stop a pod; stdout is a file, as in a job.
    let d = scratch("sigterm");
    let out = d.join("report.txt");
    let file = std::fs::File::create(&out).unwrap_or_else(|e| panic!("{e}"));
    let mut child = spawn_long_check(Stdio::from(file), Stdio::piped());
    std::thread::sleep(Duration::from_millis(1_500));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(killed.success());
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(
        text.contains("verdict: inconclusive: interrupted"),
        "{text}"
    );
    assert!(text.contains("unique"), "{text}");
    assert!(text.contains("coverage is partial"), "{text}");
    assert!(!text.contains("never delivered:"), "{text}");
}

#[test]
fn an_unwritable_output_fails_before_the_search() {
    let t0 = Instant::now();
    for flag in ["--trace-out", "--diagram"] {
        let o = run(&[
            "check",
            "--semantics",
            "legacy",
            flag,
            "/nonexistent-dir/out.txt",
        ]);
        assert_eq!(code(&o), 2, "{}", stdout(&o));
        assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "searched anyway: {}", stdout(&o));
    }
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn an_existing_file_survives_a_clean_run_and_no_file_is_created() {
    // The tool replaces a path only with what it wrote in this run: a clean
    // run writes nothing, so what was there (a file, a link to one) stays.
    let d = scratch("survives");
    let trace = d.join("notes.txt");
    let target = d.join("target.txt");
    let link = d.join("link.mmd");
    std::fs::write(&trace, "mine").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&target, "also mine").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|e| panic!("{e}"));
    let t = trace.to_string_lossy().into_owned();
    let m = link.to_string_lossy().into_owned();
    let mut args = vec!["check"];
    args.extend(SMALL);
    args.extend(["--trace-out", &t, "--diagram", &m]);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(
        std::fs::read_to_string(&trace).ok().as_deref(),
        Some("mine")
    );
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some("also mine")
    );
    assert!(std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()));
    assert!(
        stdout(&o).contains("is not from this run"),
        "{}",
        stdout(&o)
    );
    // Nothing else was left in the directory (no temporary file).
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    // A path that does not exist is not created by a clean run.
    let fresh = d.join("fresh.jsonl");
    let f = fresh.to_string_lossy().into_owned();
    let mut args = vec!["simulate", "--walks", "20", "--trace-out", &f];
    args.extend(&SMALL[..4]);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(!fresh.exists());
    assert!(stdout(&o).contains("not written"), "{}", stdout(&o));
}

#[test]
fn a_counterexample_is_written_through_a_symbolic_link() {
    let d = scratch("through-link");
    let target = d.join("real.jsonl");
    let link = d.join("bug.jsonl");
    std::fs::write(&target, "old").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|e| panic!("{e}"));
    let l = link.to_string_lossy().into_owned();
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--checkpoints",
        "1",
        "--faults",
        "0",
        "--quiet",
        "--trace-out",
        &l,
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()));
    let text = std::fs::read_to_string(&target).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.starts_with("{\"kind\":\"header\""), "{text}");
    let r = run(&["replay", &l, "--quiet"]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
}

#[test]
fn a_link_to_dev_stdout_is_written_to_the_output_not_over_it() {
    // stdout is a regular file here, as in `check ... > report.txt`: the
    // trace is added to it, the file is not replaced by the trace.
    let d = scratch("dev-stdout");
    let link = d.join("trace.jsonl");
    std::os::unix::fs::symlink("/dev/stdout", &link).unwrap_or_else(|e| panic!("{e}"));
    let out = d.join("report.txt");
    let file = std::fs::File::create(&out).unwrap_or_else(|e| panic!("{e}"));
    let l = link.to_string_lossy().into_owned();
    let status = bin()
        .args([
            "check",
            "--semantics",
            "legacy",
            "--checkpoints",
            "1",
            "--faults",
            "0",
            "--quiet",
            "--trace-out",
            &l,
        ])
        .stdout(Stdio::from(file))
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(1));
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("\"kind\":\"end\""), "{text}");
    assert!(text.contains("verdict: violated"), "{text}");
    assert!(std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()));
}

#[test]
fn a_directory_as_an_output_is_refused_before_the_search() {
    let d = scratch("dir-output");
    let p = d.to_string_lossy().into_owned();
    for flag in ["--trace-out", "--diagram"] {
        let o = run(&["check", flag, &p]);
        assert_eq!(code(&o), 2, "{}", stdout(&o));
        assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "searched anyway: {}", stdout(&o));
    }
    assert!(d.is_dir());
}

/// `zoo --traces DIR` checks every row's file before the first search: a
/// file it cannot write (here a directory where the last row's trace goes;
/// permissions would not stop root) or a DIR under a regular file is exit
/// 2 with nothing searched, not a table followed by an error.
#[test]
fn zoo_traces_are_checked_before_any_search() {
    let d = scratch("zoo-traces");
    // The two FLINK-17869 rows (about a second of searching); the second
    // one's file is in the way.
    std::fs::create_dir(d.join("zoo_flink_17869_legacy_cancel.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let blocked = d.to_string_lossy().into_owned();
    std::fs::write(d.join("a-file"), b"").unwrap_or_else(|e| panic!("{e}"));
    let under_a_file = d.join("a-file").join("traces");
    let under_a_file = under_a_file.to_string_lossy().into_owned();
    for dir in [&blocked, &under_a_file] {
        let o = run(&["zoo", "--only", "FLINK-17869", "--traces", dir]);
        assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).is_empty(), "searched anyway: {}", stdout(&o));
        assert!(stderr(&o).contains("cannot "), "{}", stderr(&o));
    }
    // Nothing was written, and no temporary file was left behind.
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    left.sort();
    assert_eq!(left, ["a-file", "zoo_flink_17869_legacy_cancel.jsonl"]);
}

/// `zoo --only` with a text that selects no race is a usage error, not an
/// empty table that passes: nothing was asked.
#[test]
fn zoo_only_matching_no_race_is_a_usage_error() {
    let o = run(&["zoo", "--only", "no-such-race"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).is_empty(), "printed a table: {}", stdout(&o));
    assert!(
        stderr(&o).contains("no race of the zoo matches --only no-such-race"),
        "{}",
        stderr(&o)
    );
}

/// `zoo --check-traces DIR`: a DIR that does not exist is a usage error
/// before any search; a trace missing from an existing DIR fails the check
/// (exit 1) and says it is missing, not that it differs.
#[test]
fn zoo_check_traces_tells_a_missing_directory_and_a_missing_trace() {
    let d = scratch("zoo-check-traces");
    let absent = d.join("absent").to_string_lossy().into_owned();
    let o = run(&["zoo", "--only", "33186", "--check-traces", &absent]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).is_empty(), "searched anyway: {}", stdout(&o));
    assert!(stderr(&o).contains("--check-traces"), "{}", stderr(&o));
    let empty = d.to_string_lossy().into_owned();
    let o = run(&["zoo", "--only", "33186", "--check-traces", &empty]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("zoo_flink_33186_legacy_finish_fails_checkpoint.jsonl: missing"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("differs"), "{}", stderr(&o));
}

// ----- replay ---------------------------------------------------------------------

/// The legacy counterexample as a trace and a diagram; returns check's
/// stdout.
fn legacy_counterexample(d: &std::path::Path) -> String {
    let t = d.join("bug.jsonl").to_string_lossy().into_owned();
    let m = d.join("bug.mmd").to_string_lossy().into_owned();
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--quiet",
        "--trace-out",
        &t,
        "--diagram",
        &m,
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    stdout(&o)
}

#[test]
fn check_and_replay_number_the_steps_alike_and_replay_can_switch_semantics() {
    let d = scratch("numbering");
    let out = legacy_counterexample(&d);
    let at = out
        .split("violated at step ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    assert!(out.contains("wrote the counterexample trace to"), "{out}");
    let trace = d.join("bug.jsonl").to_string_lossy().into_owned();
    let o = run(&["replay", &trace]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let r = stdout(&o);
    assert!(
        r.contains(&format!(
            "step {at} (task 1): invariant `no_spurious_failure`"
        )),
        "check said step {at}; replay:\n{r}"
    );
    // The same story against the fixed reducer: a decline, exit 0.
    let o = run(&["replay", &trace, "--semantics", "fixed"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let r = stdout(&o);
    assert!(r.contains("overridden"), "{r}");
    assert!(r.contains("AbortedByCoordinator"), "{r}");
    assert!(
        r.contains(&format!("{at} steps, every invariant holds")),
        "{r}"
    );
}

/// `--semantics` replaces every machine's semantics, the coordinator's
/// too: the committed durability counterexample (a coordinator-side knob)
/// replays clean against the fixed reducers, as model/README.md says.
#[test]
fn replay_semantics_overrides_the_coordinator_too() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/traces/durability_discard_while_storing_legacy.jsonl"
    );
    let o = run(&["replay", trace, "--quiet"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let o = run(&["replay", trace, "--semantics", "fixed", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let r = stdout(&o);
    assert!(
        r.contains("the coordinator and every task replay as `fixed`"),
        "{r}"
    );
    assert!(r.contains("every invariant holds"), "{r}");
}

/// The zoo prints `--checkpoints 0` for its stop-with-savepoint world; the
/// flag takes it.
#[test]
fn checkpoints_zero_is_a_configuration_the_flags_can_select() {
    let o = run(&[
        "check",
        "--semantics",
        "legacy-stop-before-commit",
        "--tasks",
        "1",
        "--checkpoints",
        "0",
        "--faults",
        "0",
        "--no-shutdown",
        "--stop-with-savepoint",
        "--quiet",
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
}

const HEADER: &str = r#"{"kind":"header","version":1,"coordinator":null,"tasks":[[0,{"semantics":"Fixed","aborted_ids_max":16}]]}"#;

#[test]
fn replay_reports_host_misuse_and_fails_unless_allowed() {
    let d = scratch("misuse");
    let f = d.join("misuse.jsonl");
    std::fs::write(
        &f,
        format!(
            "{HEADER}\n{}\n",
            r#"{"kind":"task","now":0,"task":0,"event":{"BarrierReceived":{"checkpoint":1,"via":"Writer"}}}"#
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = f.to_string_lossy().into_owned();
    let o = run(&["replay", &p]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("1 step, every invariant holds, but 1 step was refused"),
        "{out}"
    );
    assert!(
        out.contains("WrongThread") || out.contains("Writer"),
        "{out}"
    );
    let o = run(&["replay", &p, "--allow-rejected"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

#[test]
fn replay_of_invalid_utf8_is_an_input_error() {
    let d = scratch("utf8");
    let f = d.join("bad.jsonl");
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(b"{\"kind\":\"task\",\"now\":0,\"task\":0,\"event\":\"\xff\"}\n");
    std::fs::write(&f, bytes).unwrap_or_else(|e| panic!("{e}"));
    let o = run(&["replay", &f.to_string_lossy()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("line 2, byte"), "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8"), "{}", stderr(&o));
}

// ----- explore -------------------------------------------------------------------

#[test]
fn explore_refuses_a_taken_port_and_semantics_all() {
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap_or_else(|e| panic!("{e}"));
    let port = taken
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port()
        .to_string();
    let o = run(&["explore", "--port", &port]);
    assert_eq!(code(&o), 2, "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("cannot serve"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("serving"), "{}", stdout(&o));
    let o = run(&["explore", "--semantics", "all", "--port", "0"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn explore_on_port_0_prints_the_real_port() {
    let mut child = bin()
        .args([
            "explore",
            "--port",
            "0",
            "--checkpoints",
            "1",
            "--faults",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut banner = String::new();
    for _ in 0..2 {
        let _ = lines.read_line(&mut banner);
    }
    let _ = child.kill();
    let _ = child.wait();
    let url = banner
        .split("http://127.0.0.1:")
        .nth(1)
        .unwrap_or_else(|| panic!("{banner}"));
    let port: u16 = url
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    assert_ne!(port, 0, "{banner}");
    assert!(banner.contains("--topology fanout"), "{banner}");
    let mut rest = String::new();
    let _ = lines.read_to_string(&mut rest);
}

// ----- output for people and for tools -------------------------------------------

#[test]
fn banners_use_the_flags_spellings() {
    let mut args = vec!["check"];
    args.extend(SMALL);
    let out = stdout(&run(&args));
    assert!(
        out.starts_with("ckpt-model check --semantics fixed --tasks 2 --topology fanout"),
        "{out}"
    );
    assert!(out.contains("--network reorder"), "{out}");
    for internal in ["Fanout", "Reorder", "ModelConfig", "1 tasks"] {
        assert!(!out.contains(internal), "{internal} in\n{out}");
    }
    assert!(!out.contains("StartScheduler"), "setup delivers it:\n{out}");
}

#[test]
fn a_legacy_run_stopped_at_its_violation_claims_nothing_else_holds() {
    // A legacy semantics stops at its first violation: the properties it
    // did not get to decide must not read "holds".
    let o = run(&["check", "--semantics", "legacy", "--json"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(v["completion"], "stopped-at-violation");
    assert_eq!(v["verdict"], "violated");
    let props = v["properties"].as_array().unwrap_or_else(|| panic!("{v}"));
    for p in props {
        assert_ne!(p["status"], "holds", "{p}");
        assert_ne!(p["status"], "not witnessed", "{p}");
    }
    assert!(props.iter().any(|p| p["status"] == "violated"), "{v}");
    let o = run(&["check", "--semantics", "legacy"]);
    assert!(
        stdout(&o).contains("the other properties were not decided"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn json_has_a_schema_structured_steps_and_what_was_not_checked() {
    let o = run(&["check", "--semantics", "legacy", "--json"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["verdict"], "violated");
    assert_eq!(v["exit_status"], 1);
    let wall = v["wall_seconds"].as_f64().unwrap_or(0.0);
    let search = v["search_seconds"].as_f64().unwrap_or(f64::MAX);
    assert!(wall >= search, "{wall} {search}");
    assert!(v["not_checked"].as_array().is_some_and(|a| !a.is_empty()));
    // The reason as the text report words it: the flags that add it.
    for n in v["not_checked"].as_array().into_iter().flatten() {
        assert!(
            n["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("needs --")),
            "{n}"
        );
    }
    let cx = &v["counterexample"];
    let steps = cx["steps"].as_array().unwrap_or_else(|| panic!("{cx}"));
    assert_eq!(Some(steps.len() as u64), cx["step_count"].as_u64());
    assert_eq!(steps[0]["event"], "StartScheduler");
    let last = &steps[steps.len() - 1];
    assert_eq!(last["machine"], "task");
    assert!(
        last["event"]["CheckpointMail"]["checkpoint"].is_u64(),
        "{last}"
    );
    assert!(last["effects"][0]["Fail"].is_string(), "{last}");
    assert_eq!(last["violation"]["invariant"], "no_spurious_failure");
    let explorer = &cx["explorer"];
    assert!(
        explorer["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("ckpt-model explore --semantics legacy ")),
        "{explorer}"
    );
    let fragment = explorer["fragment"].as_str().unwrap_or_default();
    assert_eq!(
        Some(fragment.split('/').count() as u64 - 2),
        cx["action_count"].as_u64().map(|n| n + 1),
        "{fragment}"
    );
}

#[test]
fn mermaid_declares_only_the_lanes_used_and_prints_ids_plainly() {
    let d = scratch("mermaid");
    let _ = legacy_counterexample(&d);
    let m = std::fs::read_to_string(d.join("bug.mmd")).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.starts_with("sequenceDiagram"));
    let declared: Vec<&str> = m
        .lines()
        .filter_map(|l| l.trim().strip_prefix("participant "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for lane in &declared {
        let used = m.lines().any(|l| {
            l.contains(&format!("{lane}->>"))
                || l.contains(&format!(">>{lane}:"))
                || l.contains(&format!("over {lane}:"))
        });
        assert!(used, "{lane} declared but unused\n{m}");
    }
    assert!(!declared.contains(&"W1"), "{m}");
    for raw in ["Ok((", "CheckpointId(", "RequestId("] {
        assert!(!m.contains(raw), "{raw} in\n{m}");
    }
}

#[test]
fn a_long_replay_streams_with_plain_progress_lines() {
    // One task, 30,000 checkpoints, 5 events each: 150,000 steps. Every
    // monitor keeps only live obligations, so this is linear.
    let d = scratch("long");
    let f = d.join("long.jsonl");
    let mut text = format!("{HEADER}\n");
    for c in 1..=30_000u64 {
        for ev in [
            format!(r#"{{"BarrierReceived":{{"checkpoint":{c},"via":"Netty"}}}}"#),
            format!(r#"{{"WriterCompleted":{{"checkpoint":{c}}}}}"#),
            format!(r#"{{"CheckpointMail":{{"checkpoint":{c}}}}}"#),
            format!(r#"{{"AsyncPartCompleted":{{"checkpoint":{c},"handle":{c}}}}}"#),
            format!(r#"{{"NotifyComplete":{{"checkpoint":{c}}}}}"#),
        ] {
            text.push_str(&format!(
                "{{\"kind\":\"task\",\"now\":{c},\"task\":0,\"event\":{ev}}}\n"
            ));
        }
    }
    std::fs::write(&f, text).unwrap_or_else(|e| panic!("{e}"));
    let o = run(&[
        "replay",
        &f.to_string_lossy(),
        "--quiet",
        "--progress-every",
        "0.05",
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("150000 steps, every invariant holds"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert!(!err.contains('\r'), "{err:?}");
    assert!(err.lines().any(|l| l.contains("steps/s")), "{err:?}");
}

/// A served Explorer, stopped however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` from the Explorer at `port` (HTTP/1.0: the server closes).
fn http_get(port: u16, path: &str) -> String {
    use std::io::Write;
    // `explore` announces the address once it answers; retry a little anyway.
    let started = Instant::now();
    let mut s = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) if started.elapsed() > Duration::from_secs(20) => panic!("{e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()
}

#[test]
fn the_printed_explorer_address_opens_the_counterexample_in_the_explorer() {
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--checkpoints",
        "1",
        "--faults",
        "0",
        "--quiet",
    ]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("open it in the Explorer: run `ckpt-model explore "))
        .unwrap_or_else(|| panic!("no Explorer line in\n{out}"));
    let flags: Vec<&str> = line
        .split('`')
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .skip(2)
        .collect();
    let fragment = line
        .split("http://127.0.0.1:3000/")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let indices: Vec<&str> = fragment
        .strip_prefix("#/steps/")
        .unwrap_or_else(|| panic!("{fragment}"))
        .split('/')
        .collect();
    // The init index, then one per action (9 in the seed's story).
    assert_eq!(indices.len(), 10, "{fragment}");

    // Serve the same model and ask for the step the address ends with, as
    // the Explorer's page does: the steps after the path's prefix.
    let mut child = KillOnDrop(
        bin()
            .arg("explore")
            .args(&flags)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut banner = String::new();
    for _ in 0..2 {
        let _ = lines.read_line(&mut banner);
    }
    let port: u16 = banner
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let (last, prefix) = indices.split_last().unwrap_or_else(|| panic!("empty"));
    let body = http_get(port, &format!("/.states/{}", prefix.join("/")));
    drop(child);
    let steps: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let step = steps
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|s| s["actionIndex"].as_u64() == last.parse().ok())
        })
        .unwrap_or_else(|| panic!("no step {last} in {steps}"));
    let view = step["outcome"].as_str().unwrap_or_default();
    assert!(
        view.starts_with("STEP: task 1 task thread: runs its next mail"),
        "{view}"
    );
    assert!(
        view.contains("VIOLATION: invariant `no_spurious_failure`"),
        "{view}"
    );
    assert!(view.contains("task 1 (attempt 0): FAILED"), "{view}");
    assert!(view.lines().count() < 25, "{view}");
    let svg = step["svg"].as_str().unwrap_or_default();
    assert!(
        svg.starts_with("<svg") && svg.contains("VIOLATION"),
        "{svg}"
    );
}

// ----- simulate -----------------------------------------------------------------

#[test]
fn simulate_finds_the_seed_bug_with_a_fixed_seed_and_the_walk_replays_alone() {
    let dir = scratch("simulate");
    let trace = dir.join("walk.jsonl");
    let trace_s = trace.to_string_lossy().into_owned();
    let o = run(&[
        "simulate",
        "--semantics",
        "legacy",
        "--seed",
        "1",
        "--walks",
        "20000",
        "--trace-out",
        &trace_s,
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("walks/s"), "{out}");
    assert!(out.contains("verdict: violated"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("replay this walk alone: "))
        .unwrap_or_else(|| panic!("{out}"));
    let cmd = line
        .split("replay this walk alone: ckpt-model ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let again = run(&args);
    assert_eq!(code(&again), 1, "{}", stdout(&again));
    let property = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("property `"))
            .map(|l| l.split('`').nth(1).unwrap_or("").to_string())
    };
    assert_eq!(
        property(&out),
        property(&stdout(&again)),
        "{}",
        stdout(&again)
    );
    assert!(
        stdout(&again).contains("violated by walk 0"),
        "{}",
        stdout(&again)
    );
    // The trace replays through the core and shows the violation.
    let r = run(&["replay", &trace_s, "--quiet"]);
    assert_eq!(code(&r), 1, "{}", stdout(&r));
}

#[test]
fn simulate_finds_nothing_on_the_fixed_semantics() {
    let o = run(&["simulate", "--seed", "1", "--walks", "3000"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("verdict: no violation found in 3000 walks"),
        "{}",
        stdout(&o)
    );
    let o = run(&["simulate", "--seed", "1", "--walks", "500", "--json"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(v["walks"], 500);
    assert!(v["walks_per_second"].as_f64().is_some_and(|w| w > 0.0));
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(0));
}

// ----- shard and merge ------------------------------------------------------------

#[test]
fn shards_merge_into_the_single_run_verdict() {
    let dir = scratch("shards");
    // Shard k of 3 of the small check with `more` flags, its report's path.
    let shard = |k: u64, more: &[&str]| {
        let mut args = vec!["check"];
        args.extend(SMALL);
        args.extend(more);
        let s = format!("{k}/3");
        args.extend(["--shard", &s, "--json"]);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{}", stdout(&o));
        let f = dir.join(format!("shard-{k}{}.json", more.join("")));
        std::fs::write(&f, o.stdout).unwrap_or_else(|e| panic!("{e}"));
        f.to_string_lossy().into_owned()
    };
    let files: Vec<String> = (0..3).map(|k| shard(k, &[])).collect();
    let all: Vec<&str> = std::iter::once("merge")
        .chain(files.iter().map(String::as_str))
        .collect();
    let o = run(&all);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("verdict: holds"), "{}", stdout(&o));
    // A shard missing: no verdict.
    let o = run(&all[..3]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(stdout(&o).contains("missing"), "{}", stdout(&o));
    // A shard of another run is refused.
    let o = run(&[
        "check",
        "--checkpoints",
        "1",
        "--faults",
        "1",
        "--shard",
        "0/3",
        "--json",
    ]);
    let other = dir.join("other.json");
    std::fs::write(&other, o.stdout).unwrap_or_else(|e| panic!("{e}"));
    let other_s = other.to_string_lossy().into_owned();
    let o = run(&["merge", &other_s, all[2], all[3]]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    // So is a shard of the same configuration split without symmetry: it
    // owns other frontier states (some states would be nobody's). Three
    // tasks: two interchangeable downstream tasks, which symmetry reduces.
    let plain = shard(0, &["--tasks", "3", "--no-symmetry"]);
    let (one, two) = (shard(1, &["--tasks", "3"]), shard(2, &["--tasks", "3"]));
    let o = run(&["merge", &plain, &one, &two]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("symmetry differ"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn merged_legacy_shards_report_the_violation() {
    let dir = scratch("legacy-shards");
    let mut files = Vec::new();
    for k in 0..2 {
        let shard = format!("{k}/2");
        let o = run(&[
            "check",
            "--semantics",
            "legacy",
            "--shard",
            &shard,
            "--json",
        ]);
        let f = dir.join(format!("shard-{k}.json"));
        std::fs::write(&f, o.stdout).unwrap_or_else(|e| panic!("{e}"));
        files.push(f.to_string_lossy().into_owned());
    }
    let o = run(&["merge", &files[0], &files[1]]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("shortest counterexample over the shards: 9 actions"),
        "{out}"
    );
    assert!(out.contains("verdict: violated"), "{out}");
}

#[test]
fn a_shard_that_owns_nothing_is_never_holds_and_absurd_counts_are_refused() {
    let o = run(&["check", "--shard", "0/18446744073709551615"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("at most 65536 shards"),
        "{}",
        stderr(&o)
    );
    // At split depth 1 the small world's frontier is one state: one shard
    // of ten owns it, the other nine search nothing of their own.
    let mut owners = 0;
    let mut nothing = 0;
    for k in 0..10 {
        let shard = format!("{k}/10");
        let mut args = vec!["check"];
        args.extend(SMALL);
        args.extend(["--shard", &shard, "--split-depth", "1"]);
        let o = run(&args);
        let out = stdout(&o);
        assert!(out.contains("coverage is partial"), "{out}");
        assert!(!out.contains("never delivered:"), "{out}");
        if out.contains("owns 0 of 1 frontier states") {
            assert_eq!(code(&o), 3, "{out}");
            assert!(
                out.contains("verdict: inconclusive: searched nothing"),
                "{out}"
            );
            nothing += 1;
        } else {
            assert_eq!(code(&o), 0, "{out}");
            assert!(out.contains("verdict: holds"), "{out}");
            owners += 1;
        }
    }
    assert_eq!((owners, nothing), (1, 9));
}

#[test]
fn a_seconds_flag_names_its_bound() {
    for flag in ["--time-limit", "--progress-every"] {
        let o = run(&["check", flag, "1e300"]);
        assert_eq!(code(&o), 2, "{}", stdout(&o));
        assert!(
            stderr(&o).contains("at most 31536000 (one year)"),
            "{}",
            stderr(&o)
        );
    }
}

// ----- one vocabulary, one list of choices, one address ----------------------

/// The values clap lists after `[possible values: ` on stderr.
fn possible_values(err: &str) -> Vec<String> {
    err.split("[possible values: ")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or_else(|| panic!("no list in {err}"))
        .split(", ")
        .map(str::to_string)
        .collect()
}

#[test]
fn a_semantics_error_lists_exactly_the_values_the_command_accepts() {
    let mut one: Vec<String> = vec!["fixed".into()];
    one.extend(
        ckpt_model::zoo::entries()
            .iter()
            .map(|e| ckpt_model::world::legacy_name(e.bug).to_string()),
    );
    for cmd in [
        vec!["explore", "--port", "0"],
        vec!["simulate"],
        vec!["replay", "x.jsonl"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--semantics", "bogus"]);
        let o = run(&args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert_eq!(possible_values(&stderr(&o)), one, "{cmd:?}");
    }
    // `all` is check's only: the others refuse it with the same list.
    let o = run(&["explore", "--semantics", "all", "--port", "0"]);
    assert_eq!(code(&o), 2);
    assert_eq!(possible_values(&stderr(&o)), one, "{}", stderr(&o));
    let o = run(&["check", "--semantics", "bogus"]);
    assert_eq!(code(&o), 2);
    let mut all = one.clone();
    all.push("all".into());
    assert_eq!(possible_values(&stderr(&o)), all);
}

#[test]
fn zoo_and_check_count_actions_and_steps_alike() {
    let o = run(&["zoo", "--only", "legacy-netty-abort"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let out = stdout(&o);
    let header = out.lines().next().unwrap_or_default();
    assert!(header.contains("| actions | steps |"), "{header}");
    let row = out
        .lines()
        .find(|l| l.contains("`legacy-netty-abort`"))
        .unwrap_or_else(|| panic!("{out}"));
    let o = run(&[
        "check",
        "--semantics",
        "legacy-netty-abort",
        "--checkpoints",
        "1",
        "--faults",
        "0",
        "--quiet",
    ]);
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains("shortest counterexample: "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    // "..., shortest counterexample: 9 actions, 8 steps"
    let counts: Vec<&str> = line
        .split("shortest counterexample: ")
        .nth(1)
        .unwrap_or_default()
        .split(", ")
        .map(|w| w.split(' ').next().unwrap_or_default())
        .collect();
    assert_eq!(counts.len(), 2, "{line}");
    assert!(
        row.contains(&format!("| {} | {} |", counts[0], counts[1])),
        "zoo: {row}\ncheck: {line}"
    );
}

#[test]
fn the_model_guide_shows_the_explorer_address_check_prints() {
    let o = run(&[
        "check",
        "--semantics",
        "legacy",
        "--quiet",
        "--threads",
        "1",
    ]);
    assert_eq!(code(&o), 1);
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("open it in the Explorer"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .unwrap_or_else(|e| panic!("model/README.md: {e}"));
    assert!(
        readme.contains(&line),
        "model/README.md should show\n{line}"
    );
}

#[test]
fn a_trace_cut_at_a_line_boundary_is_an_error_not_a_clean_replay() {
    let d = scratch("truncated");
    let _ = legacy_counterexample(&d);
    let whole = std::fs::read_to_string(d.join("bug.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = whole.lines().collect();
    assert!(lines.last().is_some_and(|l| l.contains("\"kind\":\"end\"")));
    let t = d.join("bug.jsonl").to_string_lossy().into_owned();
    let o = run(&["replay", &t, "--quiet"]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("as recorded in the trace: invariant `no_spurious_failure`"),
        "{}",
        stdout(&o)
    );
    // Every cut before the end line: exit 2, never "every invariant holds".
    for keep in 1..lines.len() {
        let cut = d.join(format!("cut-{keep}.jsonl"));
        let text: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&cut, text).unwrap_or_else(|e| panic!("{e}"));
        let o = run(&["replay", &cut.to_string_lossy(), "--quiet"]);
        assert_eq!(code(&o), 2, "cut after {keep} lines: {}", stdout(&o));
        assert!(stderr(&o).contains("cut short"), "{}", stderr(&o));
        assert!(
            !stdout(&o).contains("every invariant holds"),
            "{}",
            stdout(&o)
        );
    }
    // A version-1 trace (no end line) replays, with a warning.
    let v1 = d.join("v1.jsonl");
    let text: String = lines[..lines.len() - 1]
        .iter()
        .map(|l| format!("{}\n", l.replacen("\"version\":2", "\"version\":1", 1)))
        .collect();
    std::fs::write(&v1, text).unwrap_or_else(|e| panic!("{e}"));
    let o = run(&["replay", &v1.to_string_lossy(), "--quiet"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stderr(&o).contains("version-1 trace"), "{}", stderr(&o));
}

#[test]
fn the_explorer_serves_ckpts_page_in_plain_text_and_forwards_the_rest() {
    let mut child = KillOnDrop(
        bin()
            .args([
                "explore",
                "--port",
                "0",
                "--checkpoints",
                "1",
                "--faults",
                "0",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut banner = String::new();
    for _ in 0..2 {
        let _ = lines.read_line(&mut banner);
    }
    let port: u16 = banner
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let page = http_get(port, "/");
    let script = http_get(port, "/app.js");
    let status = http_get(port, "/.status");
    drop(child);
    // The start page says what to click, names the world by its flags.
    assert!(page.contains("How to explore"), "{page}");
    assert!(page.contains("Next Action Choices"), "{page}");
    assert!(
        page.contains("ckpt-model explore --semantics fixed --tasks 2"),
        "{page}"
    );
    // No glyph that needs an emoji font (stateright's marks are U+1F50E,
    // U+2705, U+26A0, U+2B06, U+2B07).
    for text in [&page, &script] {
        assert!(
            !text
                .chars()
                .any(|c| ('\u{2600}'..='\u{2BFF}').contains(&c) || c > '\u{1F000}'),
            "an emoji in the page"
        );
    }
    assert!(script.contains("[VIOLATED]") && script.contains("Loading the path"));
    // The API is stateright's, passed through.
    let v: serde_json::Value =
        serde_json::from_str(&status).unwrap_or_else(|e| panic!("{e}: {status}"));
    assert!(
        v["properties"].as_array().is_some_and(|p| !p.is_empty()),
        "{v}"
    );
}

/// A reader that stops reading (`ckpt-model zoo | head -1`) ends the run
/// with 141 and no panic: the zoo prints its header at once and a row per
/// race as it is found, seconds later, into a pipe already closed.
#[test]
fn a_closed_stdout_ends_the_run_with_141_and_no_panic() {
    let mut child = bin()
        .arg("zoo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run ckpt-model: {e}"));
    let mut first = String::new();
    {
        let out = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        BufReader::new(out)
            .read_line(&mut first)
            .unwrap_or_else(|e| panic!("{e}"));
    } // the read end is closed here
    let o = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(first.starts_with("| race |"), "first line: {first}");
    assert_eq!(code(&o), 141, "stderr: {}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "stderr: {}", stderr(&o));
}

/// `replay` buffers its stdout; a write or the flush that fails ends it
/// with 141 as every other command does (`/dev/full`: the error is named;
/// a pipe whose reader is gone: silent), not with the replay's own status.
#[test]
fn replay_ends_with_141_when_stdout_cannot_be_written() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/traces/flink_17869_legacy.jsonl"
    );
    for quiet in [false, true] {
        let mut args = vec!["replay", trace];
        if quiet {
            args.push("--quiet");
        }
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap_or_else(|e| panic!("/dev/full: {e}"));
        let o = bin()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(full)
            .output()
            .unwrap_or_else(|e| panic!("cannot run ckpt-model: {e}"));
        assert_eq!(code(&o), 141, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("error: writing to stdout"),
            "{}",
            stderr(&o)
        );
        let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
        drop(reader);
        let o = bin()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(writer)
            .output()
            .unwrap_or_else(|e| panic!("cannot run ckpt-model: {e}"));
        assert_eq!(code(&o), 141, "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}
