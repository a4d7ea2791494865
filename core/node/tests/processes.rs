//! The pipeline across real OS processes on loopback: a `ckpt-node
//! coordinator` and a `ckpt-node task` (the task manager running the three
//! tasks), each on a directory of its own, sharing only the object store
//! (`--store`: `ObjStore` over `LocalFileSystem` for the coordinator, the
//! state files as objects of it for the task manager). Checked after each
//! run: each directory holds only what belongs there, the committed output holds every
//! record exactly once (`verify_output`), committed ids strictly increase in
//! the store's log, and every restore (at start, after a failover, after a
//! coordinator restart) is the latest checkpoint committed before it: the
//! last commit the coordinator process printed before the restore (its
//! lines are in its driver's order), and for a new leader the newest commit
//! in the store's log before its claim.
//!
//! One run has two numbered sources (fan-in into the counter), its task
//! manager killed and started again, and a task manager asking for another
//! number of sources on that directory refused.
//!
//! The kill tests `kill -9` a process once the coordinator has committed a
//! seeded number of checkpoints (plus a seeded delay), start it again, and
//! let the run finish; the cut test breaks the connection between the two
//! (a proxy between them shuts its sockets) with both processes alive. Each run prints its seed; `CKPT_NODE_SEED=<seed>`
//! reruns one seed alone. The source is rate-limited so a run lasts about
//! two seconds; every wait has a deadline (a hung run fails, it never
//! blocks the suite).

mod common;

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ckpt_core::host::runtime::SplitMix64;
use ckpt_core::CheckpointId;
use ckpt_node::objstore::LogEntry;
use common::{
    check_log, check_restores, checkpoint_after, latest_before_claim, read_log, Dirs, Proc,
};

const RECORDS: u64 = 20_000;
const RATE: u64 = 10_000;

fn coordinator(dirs: &Dirs, listen: &str) -> (Proc, String) {
    common::coordinator("coordinator", &[], dirs, listen, &[])
}

fn task_manager(dirs: &Dirs, addr: &str) -> Proc {
    common::task_manager("task", dirs, addr, RECORDS, RATE, 1)
}

/// The output exactly once, the store's log, and every file in its place.
fn check_run(dirs: &Dirs) -> Vec<LogEntry> {
    check_run_of(dirs, 1)
}

/// [`check_run`] for a pipeline of `sources` numbered sources.
fn check_run_of(dirs: &Dirs, sources: u32) -> Vec<LogEntry> {
    common::check_output(&dirs.task, RECORDS, sources);
    dirs.check_separate();
    let log = read_log(&dirs.store);
    check_log(&log);
    log
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
    let dirs = Dirs::new("plain");
    let (mut c, addr) = coordinator(&dirs, "127.0.0.1:0");
    let mut t = task_manager(&dirs, &addr);
    t.wait_success();
    c.wait_success();
    check_run(&dirs);
    assert_eq!(check_restores(&c.lines(), None), 0);
    assert!(committed_lines(&c) > 0);
    dirs.remove();
}

/// Fan-in across the processes: two numbered sources into the counter
/// (both processes given `--sources 2`), the task manager killed once the
/// coordinator committed a seeded number of checkpoints and started again
/// without the flag (its directory keeps 2); every record exactly once.
/// Then a task manager asking for another number on that directory is
/// refused (status 3) with its output unchanged.
#[test]
fn two_sources_across_two_processes_commit_every_record_exactly_once() {
    let seed = seeds()[0];
    let (commits, delay) = kill_moment(seed);
    println!(
        "seed {seed}: two sources, kill -9 the task manager after {commits} commits + {delay:?}"
    );
    let dirs = Dirs::new(&format!("sources-{seed}"));
    let (mut c, addr) = common::coordinator(
        "coordinator",
        &[],
        &dirs,
        "127.0.0.1:0",
        &["--sources", "2"],
    );
    let mut t1 = common::task_manager("task-1", &dirs, &addr, RECORDS, RATE, 2);
    c.wait_for_commits(commits);
    std::thread::sleep(delay);
    t1.kill9();
    let mut t2 = Proc::spawn(
        "task-2",
        &[],
        &[
            "task",
            "--dir",
            dirs.task.to_str().unwrap(),
            "--store",
            dirs.store.to_str().unwrap(),
            "--coordinator",
            &addr,
            "--records",
            &RECORDS.to_string(),
            "--rate",
            &(RATE / 2).to_string(),
            "--check-invariants",
        ]
        .map(String::from),
    );
    t2.wait_success();
    c.wait_success();
    check_run_of(&dirs, 2);
    assert_eq!(check_restores(&c.lines(), None), 1, "seed {seed}");
    assert_eq!(
        std::fs::read(dirs.task.join("sources")).unwrap(),
        b"2\n",
        "the directory keeps its number of sources"
    );
    // Another number on the same directory: refused before anything runs.
    let before = std::fs::read_dir(dirs.task.join("sink/committed"))
        .unwrap()
        .count();
    let mut t3 = common::task_manager("task-3", &dirs, &addr, RECORDS, RATE, 1);
    let status = t3.wait_exit();
    assert_eq!(status.code(), Some(3), "seed {seed}: {status}");
    assert_eq!(
        std::fs::read_dir(dirs.task.join("sink/committed"))
            .unwrap()
            .count(),
        before
    );
    dirs.remove();
}

#[test]
fn kill_9_of_the_task_manager_restores_the_latest_committed_checkpoint() {
    for seed in seeds() {
        let (commits, delay) = kill_moment(seed);
        println!("seed {seed}: kill -9 the task manager after {commits} commits + {delay:?}");
        let dirs = Dirs::new(&format!("kill-task-{seed}"));
        let (mut c, addr) = coordinator(&dirs, "127.0.0.1:0");
        let mut t1 = task_manager(&dirs, &addr);
        c.wait_for_commits(commits);
        std::thread::sleep(delay);
        t1.kill9();
        let mut t2 = task_manager(&dirs, &addr);
        t2.wait_success();
        c.wait_success();
        check_run(&dirs);
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
        dirs.remove();
    }
}

#[test]
fn kill_9_of_the_coordinator_a_new_leader_fences_it_and_redeploys_on_the_surviving_task_manager() {
    for seed in seeds() {
        let (commits, delay) = kill_moment(seed);
        println!("seed {seed}: kill -9 the coordinator after {commits} commits + {delay:?}");
        let dirs = Dirs::new(&format!("kill-coord-{seed}"));
        let (mut c1, addr) = coordinator(&dirs, "127.0.0.1:0");
        let mut t = task_manager(&dirs, &addr);
        c1.wait_for_commits(commits);
        std::thread::sleep(delay);
        c1.kill9();
        // The same address: the task manager reconnects with back-off.
        let (mut c2, addr2) = coordinator(&dirs, &addr);
        assert_eq!(addr2, addr);
        t.wait_success();
        c2.wait_success();
        let log = check_run(&dirs);
        // The new leader claimed generation 2 and restored the newest
        // checkpoint the log held before its claim (a commit of the old
        // leader that landed after its last printed line counts too).
        let at_start = latest_before_claim(&log, 2).expect("generation 2 claimed the store");
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
        dirs.remove();
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
        let dirs = Dirs::new(&format!("cut-{seed}"));
        let (mut c, addr) = coordinator(&dirs, "127.0.0.1:0");
        let proxy = Proxy::start(&addr);
        let mut t = task_manager(&dirs, &proxy.addr);
        c.wait_for_commits(commits);
        std::thread::sleep(delay);
        proxy.cut();
        t.wait_success();
        c.wait_success();
        check_run(&dirs);
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
        dirs.remove();
    }
}
