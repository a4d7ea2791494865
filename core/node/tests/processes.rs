//! The pipeline across real OS processes on loopback: a `ckpt-node
//! coordinator` and a `ckpt-node task` (the task manager running the three
//! tasks), the store on `ObjStore` over `LocalFileSystem` in a temporary
//! directory. Checked after each run: the committed output holds every
//! record exactly once (`verify_output`), committed ids strictly increase in
//! the store's log, and every restore (at start, after a failover, after a
//! coordinator restart) is the latest checkpoint committed before it: the
//! last commit the coordinator process printed before the restore (its
//! lines are in its driver's order), and for a new leader the newest commit
//! in the store's log before its claim.
//!
//! The kill tests `kill -9` a process once the coordinator has committed a
//! seeded number of checkpoints (plus a seeded delay), start it again, and
//! let the run finish; the cut test breaks the connection between the two
//! (a proxy between them shuts its sockets) with both processes alive. Each run prints its seed; `CKPT_NODE_SEED=<seed>`
//! reruns one seed alone. The source is rate-limited so a run lasts about
//! two seconds; every wait has a deadline (a hung run fails, it never
//! blocks the suite).

use std::io::{BufRead, BufReader};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ckpt_core::host::fs::StdFs;
use ckpt_core::host::pipeline::verify_output;
use ckpt_core::host::runtime::SplitMix64;
use ckpt_core::CheckpointId;
use ckpt_node::objstore::{LogEntry, LOG_DIR};

const RECORDS: u64 = 20_000;
const RATE: u64 = 10_000;
/// How long any one wait may take before the test fails (a hang guard,
/// not a measurement).
const DEADLINE: Duration = Duration::from_secs(90);

/// One child process and the lines of its stdout, collected by a thread.
struct Proc {
    name: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn spawn(name: &str, args: &[&str]) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ckpt-node"))
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
                sink.lock().unwrap().push(line);
            }
        });
        Proc {
            name: name.to_string(),
            child,
            lines,
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until some line satisfies `pred`; returns it.
    fn wait_for(&self, what: &str, pred: impl Fn(&[String]) -> Option<String>) -> String {
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

    /// Waits for the process to exit; its status must be success.
    fn wait_success(&mut self) {
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            if t0.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("{} did not finish within {DEADLINE:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `kill -9` (std's `Child::kill` sends SIGKILL on Unix), then reaps it.
    fn kill9(&mut self) {
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

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ckpt-node-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn coordinator(dir: &Path, listen: &str) -> (Proc, String) {
    let p = Proc::spawn(
        "coordinator",
        &[
            "coordinator",
            "--dir",
            dir.to_str().unwrap(),
            "--listen",
            listen,
            "--interval-ms",
            "50",
            "--check-invariants",
        ],
    );
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

fn task_manager(dir: &Path, addr: &str) -> Proc {
    Proc::spawn(
        "task",
        &[
            "task",
            "--dir",
            dir.to_str().unwrap(),
            "--coordinator",
            addr,
            "--records",
            &RECORDS.to_string(),
            "--rate",
            &RATE.to_string(),
            "--check-invariants",
        ],
    )
}

/// The checkpoint named at the end of `line` after `marker` (`none`: `None`).
fn checkpoint_after(line: &str, marker: &str) -> Option<Option<CheckpointId>> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let word = rest.split_whitespace().next()?;
    if word == "none" {
        return Some(None);
    }
    Some(Some(CheckpointId(word.parse().ok()?)))
}

/// Every restore one coordinator process printed (at start and after each
/// failover) is the latest checkpoint it had printed as committed before it
/// (within one process the lines are in the order of its driver's steps), or,
/// for the first, `at_start`. Returns how many failovers it restored from.
fn check_restores(lines: &[String], at_start: Option<CheckpointId>) -> usize {
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

/// The store's log, in position order.
fn read_log(dir: &Path) -> Vec<LogEntry> {
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
/// `generation` (what a leader of that generation must restore), and every
/// committed id (which must never repeat).
fn latest_before_claim(log: &[LogEntry], generation: u64) -> Option<CheckpointId> {
    let mut latest = None;
    for e in log {
        match e {
            LogEntry::Claim { generation: g, .. } if g.0 == generation => return latest,
            LogEntry::Commit { checkpoint, .. } => latest = latest.max(Some(*checkpoint)),
            _ => {}
        }
    }
    panic!("no claim of generation {generation} in the log")
}

fn check_log(log: &[LogEntry]) {
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
}

fn check_output(dir: &Path) {
    let fs = StdFs::new(dir).unwrap();
    let report = verify_output(&fs, RECORDS, true).expect("exactly-once output");
    assert_eq!(report.records, RECORDS);
}

fn seeds() -> Vec<u64> {
    match std::env::var("CKPT_NODE_SEED") {
        Ok(s) => vec![s.parse().expect("CKPT_NODE_SEED is a number")],
        Err(_) => vec![1, 2],
    }
}

/// The number of commits to wait for and the extra delay before a kill.
fn kill_moment(seed: u64) -> (usize, Duration) {
    let mut rng = SplitMix64::new(seed);
    let commits = 3 + rng.below_or_eq(12) as usize;
    let delay = Duration::from_millis(rng.below_or_eq(40));
    (commits, delay)
}

fn committed_lines(p: &Proc) -> usize {
    p.lines()
        .iter()
        .filter(|l| l.contains("committed checkpoint "))
        .count()
}

#[test]
fn the_pipeline_across_two_processes_commits_every_record_exactly_once() {
    let dir = tempdir("plain");
    let (mut c, addr) = coordinator(&dir, "127.0.0.1:0");
    let mut t = task_manager(&dir, &addr);
    t.wait_success();
    c.wait_success();
    check_output(&dir);
    assert_eq!(check_restores(&c.lines(), None), 0);
    assert!(committed_lines(&c) > 0);
    check_log(&read_log(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kill_9_of_the_task_manager_restores_the_latest_committed_checkpoint() {
    for seed in seeds() {
        let (commits, delay) = kill_moment(seed);
        println!("seed {seed}: kill -9 the task manager after {commits} commits + {delay:?}");
        let dir = tempdir(&format!("kill-task-{seed}"));
        let (mut c, addr) = coordinator(&dir, "127.0.0.1:0");
        let mut t1 = task_manager(&dir, &addr);
        c.wait_for("commits", |ls| {
            (ls.iter()
                .filter(|l| l.contains("committed checkpoint "))
                .count()
                >= commits)
                .then(String::new)
        });
        std::thread::sleep(delay);
        t1.kill9();
        let mut t2 = task_manager(&dir, &addr);
        t2.wait_success();
        c.wait_success();
        check_output(&dir);
        // The coordinator failed over once and restored its latest commit;
        // the new task manager was deployed from that checkpoint.
        let lines = c.lines();
        assert_eq!(check_restores(&lines, None), 1, "seed {seed}");
        let restored = lines
            .iter()
            .find_map(|l| checkpoint_after(l, "restore checkpoint "))
            .expect("a failover line");
        let deployed = t2
            .lines()
            .iter()
            .find_map(|l| checkpoint_after(l, "restored from checkpoint "))
            .expect("the new task manager's deploy");
        assert_eq!(deployed, restored, "seed {seed}");
        assert!(restored.is_some(), "seed {seed}: killed before any commit");
        check_log(&read_log(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn kill_9_of_the_coordinator_a_new_leader_fences_it_and_redeploys_on_the_surviving_task_manager() {
    for seed in seeds() {
        let (commits, delay) = kill_moment(seed);
        println!("seed {seed}: kill -9 the coordinator after {commits} commits + {delay:?}");
        let dir = tempdir(&format!("kill-coord-{seed}"));
        let (mut c1, addr) = coordinator(&dir, "127.0.0.1:0");
        let mut t = task_manager(&dir, &addr);
        c1.wait_for("commits", |ls| {
            (ls.iter()
                .filter(|l| l.contains("committed checkpoint "))
                .count()
                >= commits)
                .then(String::new)
        });
        std::thread::sleep(delay);
        c1.kill9();
        // The same address: the task manager reconnects with back-off.
        let (mut c2, addr2) = coordinator(&dir, &addr);
        assert_eq!(addr2, addr);
        t.wait_success();
        c2.wait_success();
        check_output(&dir);
        let log = read_log(&dir);
        check_log(&log);
        // The new leader claimed generation 2 and restored the newest
        // checkpoint the log held before its claim (a commit of the old
        // leader that landed after its last printed line counts too).
        let at_start = latest_before_claim(&log, 2);
        let lines2 = c2.lines();
        assert!(
            lines2.iter().any(|l| l.contains("generation 2")),
            "seed {seed}"
        );
        check_restores(&lines2, at_start);
        let printed_by_old = c1
            .lines()
            .iter()
            .rev()
            .find_map(|l| checkpoint_after(l, "committed checkpoint "))
            .flatten();
        assert!(at_start >= printed_by_old, "seed {seed}");
        // The surviving task manager served both generations, in order, and
        // was redeployed from the new leader's restore.
        let tl = t.lines();
        let served: Vec<&String> = tl
            .iter()
            .filter(|l| l.contains("serving generation"))
            .collect();
        assert_eq!(served.len(), 2, "seed {seed}: {served:?}");
        let redeployed = tl
            .iter()
            .rev()
            .find_map(|l| checkpoint_after(l, "restored from checkpoint "))
            .expect("a deploy");
        assert_eq!(redeployed, at_start, "seed {seed}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A TCP proxy in front of the coordinator whose connections can be cut
/// (both sockets shut down) while both processes stay alive.
struct Proxy {
    addr: String,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(to: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let to = to.to_string();
        let sockets = Arc::clone(&open);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(&to) else {
                    continue;
                };
                let pairs = [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ];
                sockets.lock().unwrap().extend([client, server]);
                for (mut from, mut into) in pairs {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut into);
                        let _ = into.shutdown(Shutdown::Write);
                    });
                }
            }
        });
        Proxy { addr, open }
    }

    /// Breaks every connection made so far; later ones pass again.
    fn cut(&self) {
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

#[test]
fn a_broken_connection_with_both_processes_alive_fails_over_to_the_latest_committed_checkpoint() {
    for seed in seeds() {
        let (commits, delay) = kill_moment(seed);
        println!("seed {seed}: cut the connection after {commits} commits + {delay:?}");
        let dir = tempdir(&format!("cut-{seed}"));
        let (mut c, addr) = coordinator(&dir, "127.0.0.1:0");
        let proxy = Proxy::start(&addr);
        let mut t = task_manager(&dir, &proxy.addr);
        c.wait_for("commits", |ls| {
            (ls.iter()
                .filter(|l| l.contains("committed checkpoint "))
                .count()
                >= commits)
                .then(String::new)
        });
        std::thread::sleep(delay);
        proxy.cut();
        t.wait_success();
        c.wait_success();
        check_output(&dir);
        // One failover, restored from the latest commit; the surviving task
        // manager stopped its old attempts (refused as stale if it said
        // Hello before the coordinator saw the break) and was redeployed
        // from that checkpoint under the same generation.
        let lines = c.lines();
        assert_eq!(check_restores(&lines, None), 1, "seed {seed}");
        let restored = lines
            .iter()
            .find_map(|l| checkpoint_after(l, "restore checkpoint "))
            .expect("a failover line");
        let tl = t.lines();
        let deploys: Vec<Option<CheckpointId>> = tl
            .iter()
            .filter_map(|l| checkpoint_after(l, "restored from checkpoint "))
            .collect();
        assert_eq!(deploys, vec![None, restored], "seed {seed}");
        let served = tl
            .iter()
            .filter(|l| l.contains("serving generation"))
            .count();
        assert_eq!(served, 1, "seed {seed}: one generation throughout");
        check_log(&read_log(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
