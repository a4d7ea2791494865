//! What the process tests share: a child `ckpt-node` process with its
//! stdout lines (timestamped), a run's directories (the coordinator's, the
//! task manager's and the store they share), the coordinator's and the
//! task manager's command lines, and the checks made over their lines, the
//! store's log, the committed output and what each directory holds after a
//! run.

#![allow(
    dead_code,
    reason = "each test binary that includes this module uses a part of it"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ckpt_core::host::fs::StdFs;
use ckpt_core::host::pipeline::verify_output_of;
use ckpt_core::host::store::{CHECKPOINT_DIR, STATE_DIR};
use ckpt_core::CheckpointId;
use ckpt_node::objstore::{LogEntry, LOG_DIR};

/// How long any one wait may take before the test fails (a hang guard,
/// not a measurement).
pub const DEADLINE: Duration = Duration::from_secs(90);

/// One child process and the lines of its stdout, each with the instant the
/// test read it, collected by a thread.
pub struct Proc {
    pub name: String,
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
    /// When the process was started.
    pub started: Instant,
}

impl Proc {
    /// Starts `ckpt-node ARGS`, under `prefix` (for example `ip netns exec
    /// NS`) when it is not empty.
    pub fn spawn(name: &str, prefix: &[String], args: &[String]) -> Proc {
        let bin = env!("CARGO_BIN_EXE_ckpt-node");
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let started = Instant::now();
        let mut child = cmd
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ckpt-node");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let tag = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("[{tag}] {line}");
                sink.lock().unwrap().push((Instant::now(), line));
            }
        });
        Proc {
            name: name.to_string(),
            child,
            lines,
            started,
        }
    }

    /// Its lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Its lines so far with the instant each was read.
    pub fn timed_lines(&self) -> Vec<(Instant, String)> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until some line satisfies `pred`; returns it.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&[String]) -> Option<String>) -> String {
        let t0 = Instant::now();
        loop {
            if let Some(l) = pred(&self.lines()) {
                return l;
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "{}: no {what} within {DEADLINE:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until it has printed `n` commits.
    pub fn wait_for_commits(&self, n: usize) {
        self.wait_for("commits", |ls| {
            (ls.iter()
                .filter(|l| l.contains("committed checkpoint "))
                .count()
                >= n)
                .then(String::new)
        });
    }

    /// Its exit status if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Waits for the process to exit (at most [`DEADLINE`]; then it is
    /// killed and the wait fails).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            if t0.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("{} did not finish within {DEADLINE:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the process to exit; its status must be success.
    pub fn wait_success(&mut self) {
        let status = self.wait_exit();
        assert!(status.success(), "{} exited with {status}", self.name);
    }

    /// `kill -9` (std's `Child::kill` sends SIGKILL on Unix), then reaps it.
    pub fn kill9(&mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A fresh directory for one run.
pub fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ckpt-node-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One run's directories: each process's own (`--dir`) and the object
/// store's root (`--store`), the only thing the processes share (with
/// `LocalFileSystem` the bucket is a directory).
pub struct Dirs {
    root: PathBuf,
    /// Every coordinator's `--dir`.
    pub coordinator: PathBuf,
    /// Every task manager's `--dir`: its lock and the sink's output.
    pub task: PathBuf,
    /// The object store: the coordinator's log and metadata, the state
    /// files.
    pub store: PathBuf,
}

impl Dirs {
    /// Fresh, empty directories for one run.
    pub fn new(tag: &str) -> Dirs {
        let root = tempdir(tag);
        let d = Dirs {
            coordinator: root.join("coordinator"),
            task: root.join("task"),
            store: root.join("store"),
            root,
        };
        for dir in [&d.coordinator, &d.task, &d.store] {
            std::fs::create_dir_all(dir).unwrap();
        }
        d
    }

    /// Each thing is where it belongs and nowhere else: the store holds
    /// the log, the metadata and the state files and no sink output or
    /// lock; the task manager's directory holds its lock and the sink's
    /// output and no checkpoint; the coordinator keeps nothing in its own.
    pub fn check_separate(&self) {
        let names = |dir: &Path| -> Vec<String> {
            let mut n: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            n.sort();
            n
        };
        assert_eq!(
            names(&self.coordinator),
            Vec::<String>::new(),
            "the coordinator's own directory"
        );
        let task = names(&self.task);
        assert!(
            task.contains(&"task.lock".to_string()) && task.contains(&"sink".to_string()),
            "the task manager's directory: {task:?}"
        );
        let store = names(&self.store);
        assert!(
            store.contains(&LOG_DIR.to_string()) && store.contains(&STATE_DIR.to_string()),
            "the store: {store:?}"
        );
        for checkpointing in [LOG_DIR, STATE_DIR, CHECKPOINT_DIR] {
            assert!(
                !task.contains(&checkpointing.to_string()),
                "{checkpointing} in the task manager's directory: {task:?}"
            );
        }
        for output in ["sink", "task.lock"] {
            assert!(
                !store.contains(&output.to_string()),
                "{output} in the store: {store:?}"
            );
        }
    }

    /// Removes them all.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Starts a coordinator with its own directory and the run's store,
/// listening on `listen`, checkpoints every 50 ms, every step checked;
/// returns it with the address it printed.
pub fn coordinator(
    name: &str,
    prefix: &[String],
    dirs: &Dirs,
    listen: &str,
    extra: &[&str],
) -> (Proc, String) {
    let mut args: Vec<String> = [
        "coordinator",
        "--dir",
        dirs.coordinator.to_str().unwrap(),
        "--store",
        dirs.store.to_str().unwrap(),
        "--listen",
        listen,
        "--interval-ms",
        "50",
        "--check-invariants",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let p = Proc::spawn(name, prefix, &args);
    let line = p.wait_for("listening line", |ls| {
        ls.iter().find(|l| l.contains("listening on")).cloned()
    });
    let addr = line
        .split_whitespace()
        .nth(3)
        .expect("coordinator: listening on ADDR")
        .to_string();
    (p, addr)
}

/// Starts a task manager with its own directory and the run's store for
/// `records` records from `sources` numbered sources, at `rate` per second
/// in all, connecting to `addr`, every step checked.
pub fn task_manager(
    name: &str,
    dirs: &Dirs,
    addr: &str,
    records: u64,
    rate: u64,
    sources: u32,
) -> Proc {
    let args: Vec<String> = [
        "task",
        "--dir",
        dirs.task.to_str().unwrap(),
        "--store",
        dirs.store.to_str().unwrap(),
        "--coordinator",
        addr,
        "--records",
        &records.to_string(),
        "--rate",
        &(rate / u64::from(sources.max(1))).to_string(),
        "--sources",
        &sources.to_string(),
        "--check-invariants",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Proc::spawn(name, &[], &args)
}

/// The checkpoint named at the end of `line` after `marker` (`none`: `None`).
pub fn checkpoint_after(line: &str, marker: &str) -> Option<Option<CheckpointId>> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let word = rest.split_whitespace().next()?;
    if word == "none" {
        return Some(None);
    }
    Some(Some(CheckpointId(word.parse().ok()?)))
}

/// The generation a coordinator printed in its listening line.
pub fn generation_of(p: &Proc) -> u64 {
    p.lines()
        .iter()
        .find_map(|l| {
            l.contains("listening on")
                .then(|| l.split_whitespace().last()?.parse().ok())
                .flatten()
        })
        .expect("a listening line with the generation")
}

/// Every restore one coordinator process printed (at start and after each
/// failover) is the latest checkpoint it had printed as committed before it
/// (within one process the lines are in the order of its driver's steps), or,
/// for the first, `at_start`. Returns how many failovers it restored from.
pub fn check_restores(lines: &[String], at_start: Option<CheckpointId>) -> usize {
    let mut latest = at_start;
    let mut failovers = 0;
    for l in lines {
        if let Some(c) = checkpoint_after(l, "committed checkpoint ") {
            latest = c;
        } else if let Some(c) = checkpoint_after(l, "restored checkpoint ") {
            assert_eq!(
                c, latest,
                "restore at start is not the latest committed: {l}"
            );
        } else if let Some(c) = checkpoint_after(l, "restore checkpoint ") {
            assert_eq!(
                c, latest,
                "failover restore is not the latest committed: {l}"
            );
            failovers += 1;
        }
    }
    failovers
}

/// The log of the store rooted at `dir`, in position order.
pub fn read_log(dir: &Path) -> Vec<LogEntry> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join(LOG_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.len() == 20 && n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            serde_json::from_slice(&std::fs::read(dir.join(LOG_DIR).join(n)).unwrap()).unwrap()
        })
        .collect()
}

/// The newest checkpoint committed in the log before the claim of
/// `generation` (what a leader of that generation must restore); `None`
/// as the outer value when that generation never claimed the store.
pub fn latest_before_claim(log: &[LogEntry], generation: u64) -> Option<Option<CheckpointId>> {
    let mut latest = None;
    for e in log {
        match e {
            LogEntry::Claim { generation: g, .. } if g.0 == generation => return Some(latest),
            LogEntry::Commit { checkpoint, .. } => latest = latest.max(Some(*checkpoint)),
            _ => {}
        }
    }
    None
}

/// Committed ids strictly increase in the log, the id counter never moves
/// back, and no leader writes after a newer generation's claim (fencing).
pub fn check_log(log: &[LogEntry]) {
    let commits: Vec<CheckpointId> = log
        .iter()
        .filter_map(|e| match e {
            LogEntry::Commit { checkpoint, .. } => Some(*checkpoint),
            _ => None,
        })
        .collect();
    assert!(
        commits.windows(2).all(|w| w[0] < w[1]),
        "committed ids are not strictly increasing: {commits:?}"
    );
    let ids: Vec<u64> = log
        .iter()
        .filter_map(|e| match e {
            LogEntry::Ids { next, .. } => Some(*next),
            _ => None,
        })
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "the id counter moved back: {ids:?}"
    );
    let mut newest_claim = 0;
    for (position, e) in log.iter().enumerate() {
        let writer = match e {
            LogEntry::Claim { generation, .. } => {
                assert!(
                    generation.0 > newest_claim,
                    "log position {position}: claim of {} after {newest_claim}",
                    generation.0
                );
                newest_claim = generation.0;
                continue;
            }
            LogEntry::Ids { generation, .. }
            | LogEntry::Commit { generation, .. }
            | LogEntry::Dispose { generation, .. }
            | LogEntry::Quarantine { generation, .. } => generation.0,
        };
        assert_eq!(
            writer, newest_claim,
            "log position {position}: generation {writer} wrote after the claim of {newest_claim}: {e:?}"
        );
    }
}

/// The committed output in a task manager's directory `dir` holds each of
/// `records` records of `sources` numbered sources exactly once.
pub fn check_output(dir: &Path, records: u64, sources: u32) {
    let fs = StdFs::new(dir).unwrap();
    let report = verify_output_of(&fs, records, sources, true).expect("exactly-once output");
    assert_eq!(report.records, records);
}
