//! A Jepsen-style test of the pipeline across real OS processes: a
//! `ckpt-node coordinator` and a `ckpt-node task` (the task manager running
//! the three tasks), each on a directory of its own and sharing only the
//! object store (`--store`), under a seeded schedule of faults, then a
//! checker over what the processes printed, the store's log, the store's
//! objects, the committed output and what each directory holds.
//!
//! **The pipeline** has 1 or 2 numbered sources (drawn from the seed,
//! printed with it; with 2, both processes get `--sources 2` and the
//! counter reads from both: fan-in), at 10,000 records per second in all.
//!
//! **The faults** (each run draws 2 to 5 from its seed, at seeded moments,
//! some overlapping):
//!
//! * `kill-coordinator`, `kill-task`: `kill -9` of the process, a seeded
//!   down time (0 to 300 ms), a new process started (the coordinator on the
//!   same address, directory and store: it claims the next generation, recovers
//!   from the store and redeploys on the surviving task manager).
//! * `cut`: the proxy between the task manager and the coordinator shuts
//!   both sockets of every connection (a reset with both processes alive).
//! * `stall`: the proxy stops forwarding in both directions for 100 to
//!   1,500 ms, then forwards what it held (a network that drops packets
//!   and retransmits: TCP turns loss into delay, or, past the checkpoint
//!   timeout, into timed-out checkpoints and a failover).
//! * `delay`: for 200 to 800 ms every chunk waits 5 to 65 ms (jittered, in
//!   order: TCP never reorders within a connection).
//! * `stale-delivery` (reordering across connections): the proxy holds
//!   what the task manager sends, resets the task manager's side, lets it
//!   reconnect, and only then delivers the held messages (acks of attempts
//!   the coordinator has failed over) to the coordinator on the old
//!   connection.
//! * `depose`: a second coordinator is started on a new address while the
//!   first is alive and the proxy is pointed at it; what the task manager
//!   sends the old leader is held (20 to 220 ms), the task manager's side is
//!   reset, it reconnects to the new leader, and once that one has claimed
//!   the store the old one gets what was held (acks that may complete its
//!   checkpoint): the old leader must be refused at its next store write
//!   (exit 3) or never write again (the log check below). The summary counts
//!   both outcomes.
//! * `partition` (only where the test runs as root with `ip` and `nft`):
//!   the coordinator runs in its own network namespace joined to the test's
//!   by a veth pair, and an nftables rule inside that namespace drops every
//!   packet on the veth for 100 to 1,500 ms (a real partition: the kernel's
//!   TCP retransmits across it). Without root, this kind is not drawn, and
//!   the run says so.
//!
//! **The checker**, after every run: every process that ended exited 0
//! (the last coordinator and task manager) or 3 (a deposed leader); the
//! committed output holds every record exactly once; the store holds no
//! sink output, the task manager's directory no checkpoint, the
//! coordinators' directory nothing; committed ids
//! strictly increase in the store's log, the id counter never moves back,
//! and no generation writes after a newer claim; every restore is at the
//! latest committed checkpoint (a leader's restore at start at the newest
//! commit in the log before its claim, each failover's at the latest commit
//! that process made before it); and a final recovery of the store (a
//! checker leader claiming the next generation) finds every checkpoint the
//! log says is stored whole (no committed checkpoint's state missing) and
//! restores the newest commit.
//!
//! Each run prints its seed and its faults. `CKPT_JEPSEN_SEED=S` reruns one
//! seed; `CKPT_JEPSEN_RUNS=N` (from seed `CKPT_JEPSEN_FIRST`, default 1)
//! sets the number of runs (CI: [`CI_RUNS`]); a soak is
//! `CKPT_JEPSEN_RUNS=500 cargo test --release -p ckpt-node --test jepsen -- --nocapture`.
//! The summary line counts faults by kind, violations, and the recovery
//! time (from the replacement process's start to the tasks deployed again)
//! after each kind of kill.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ckpt_core::host::runtime::SplitMix64;
use ckpt_core::host::store::OpenOptions;
use ckpt_core::{CheckpointId, JobId};
use ckpt_node::objstore::{LogEntry, ObjStore};
use common::{
    check_log, check_output, check_restores, checkpoint_after, coordinator, generation_of,
    latest_before_claim, read_log, task_manager, Dirs, Proc, DEADLINE,
};

/// Records per run, and the source's rate: a run without faults lasts
/// about 2 s, so the faults land while the job runs.
const RECORDS: u64 = 20_000;
const RATE: u64 = 10_000;
/// Runs in CI (about 3.5 s each in the test profile).
const CI_RUNS: u64 = 24;
/// The coordinator's checkpoint timeout in these runs: shorter than the
/// longest stall and partition, so both kinds of outcome (a late ack and
/// a timed-out checkpoint) are drawn.
const TIMEOUT_MS: &str = "1000";

// ---------------------------------------------------------------- proxy

/// What the proxy does to the bytes it forwards, for every connection.
#[derive(Default)]
struct Control {
    /// Forward nothing (hold it) while set.
    stalled: AtomicBool,
    /// Latency added to each chunk, and the jitter above it, in ms.
    latency_ms: AtomicU64,
    jitter_ms: AtomicU64,
    /// Seeds the jitter.
    seed: AtomicU64,
}

/// One direction of one proxied connection: chunks read from one socket,
/// waiting to be written to the other, in order.
#[derive(Default)]
struct Pipe {
    state: Mutex<PipeState>,
    wake: Condvar,
}

#[derive(Default)]
struct PipeState {
    chunks: VecDeque<(Instant, Vec<u8>)>,
    /// The reading side ended (end of stream or error).
    eof: bool,
    /// Hold this pipe's chunks (a stale delivery in preparation).
    held: bool,
    /// Drop whatever is queued and stop (the connection was cut).
    dead: bool,
}

/// One proxied connection.
struct Link {
    client: TcpStream,
    server: TcpStream,
    /// Task manager to coordinator.
    up: Arc<Pipe>,
    down: Arc<Pipe>,
}

/// A seeded TCP proxy between the task manager and the coordinator.
struct Proxy {
    addr: String,
    upstream: Arc<Mutex<String>>,
    control: Arc<Control>,
    links: Arc<Mutex<Vec<Link>>>,
}

impl Proxy {
    fn start(to: &str, seed: u64) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let upstream = Arc::new(Mutex::new(to.to_string()));
        let control = Arc::new(Control::default());
        control.seed.store(seed, Ordering::Relaxed);
        let links: Arc<Mutex<Vec<Link>>> = Arc::default();
        let (up_to, ctl, all) = (
            Arc::clone(&upstream),
            Arc::clone(&control),
            Arc::clone(&links),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let to = up_to.lock().unwrap().clone();
                let Ok(server) = TcpStream::connect_timeout(
                    &to.parse().expect("an address"),
                    Duration::from_secs(2),
                ) else {
                    // Nobody there (a killed coordinator): the task manager
                    // sees its connection end and backs off.
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let up = Arc::new(Pipe::default());
                let down = Arc::new(Pipe::default());
                for (from, into, pipe) in [(&client, &server, &up), (&server, &client, &down)] {
                    let (r, w) = (from.try_clone().unwrap(), into.try_clone().unwrap());
                    let (p1, p2) = (Arc::clone(pipe), Arc::clone(pipe));
                    std::thread::spawn(move || read_into(r, &p1));
                    let ctl = Arc::clone(&ctl);
                    std::thread::spawn(move || write_from(w, &p2, &ctl));
                }
                all.lock().unwrap().push(Link {
                    client,
                    server,
                    up,
                    down,
                });
            }
        });
        Proxy {
            addr,
            upstream,
            control,
            links,
        }
    }

    fn point_at(&self, to: &str) {
        *self.upstream.lock().unwrap() = to.to_string();
    }

    /// Breaks every connection made so far; later ones pass again.
    fn cut(&self) {
        for l in self.links.lock().unwrap().drain(..) {
            for p in [&l.up, &l.down] {
                p.state.lock().unwrap().dead = true;
                p.wake.notify_all();
            }
            let _ = l.client.shutdown(Shutdown::Both);
            let _ = l.server.shutdown(Shutdown::Both);
        }
    }

    fn stall(&self, on: bool) {
        self.control.stalled.store(on, Ordering::SeqCst);
        for l in self.links.lock().unwrap().iter() {
            l.up.wake.notify_all();
            l.down.wake.notify_all();
        }
    }

    fn delay(&self, latency_ms: u64, jitter_ms: u64) {
        self.control.latency_ms.store(latency_ms, Ordering::SeqCst);
        self.control.jitter_ms.store(jitter_ms, Ordering::SeqCst);
    }

    /// Holds what the task manager sends on every current connection, then
    /// (after `hold`) resets the task manager's side of them; returns the
    /// held connections, whose coordinator side stays open.
    fn hold_and_reset_client(&self, hold: Duration) -> Vec<Link> {
        let links: Vec<Link> = self.links.lock().unwrap().drain(..).collect();
        for l in &links {
            l.up.state.lock().unwrap().held = true;
        }
        std::thread::sleep(hold);
        for l in &links {
            let _ = l.client.shutdown(Shutdown::Both);
        }
        links
    }

    /// Delivers what `links` held to the coordinator, then closes them.
    fn release(links: Vec<Link>) {
        for l in links {
            {
                let mut s = l.up.state.lock().unwrap();
                s.held = false;
                s.eof = true;
            }
            l.up.wake.notify_all();
            // The writer closes the server side once the held chunks are out.
        }
    }
}

fn read_into(mut from: TcpStream, pipe: &Pipe) {
    use std::io::Read;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).unwrap_or(0);
        let mut s = pipe.state.lock().unwrap();
        if n == 0 || s.dead {
            s.eof = true;
            pipe.wake.notify_all();
            return;
        }
        s.chunks.push_back((Instant::now(), buf[..n].to_vec()));
        pipe.wake.notify_all();
    }
}

fn write_from(mut into: TcpStream, pipe: &Pipe, ctl: &Control) {
    use std::io::Write;
    let mut rng = SplitMix64::new(ctl.seed.load(Ordering::Relaxed));
    let mut last_due = Instant::now();
    loop {
        let chunk = {
            let mut s = pipe.state.lock().unwrap();
            loop {
                if s.dead {
                    return;
                }
                let blocked = s.held || ctl.stalled.load(Ordering::SeqCst);
                if !blocked {
                    if let Some((at, _)) = s.chunks.front() {
                        let lat = ctl.latency_ms.load(Ordering::SeqCst);
                        let jit = ctl.jitter_ms.load(Ordering::SeqCst);
                        let extra = if lat == 0 {
                            0
                        } else {
                            lat + rng.below_or_eq(jit)
                        };
                        let due = (*at + Duration::from_millis(extra)).max(last_due);
                        let now = Instant::now();
                        if due <= now {
                            last_due = due;
                            break s.chunks.pop_front().map(|(_, c)| c);
                        }
                        s = pipe.wake.wait_timeout(s, due - now).unwrap().0;
                        continue;
                    }
                    if s.eof {
                        break None;
                    }
                }
                s = pipe
                    .wake
                    .wait_timeout(s, Duration::from_millis(5))
                    .unwrap()
                    .0;
            }
        };
        match chunk {
            Some(c) => {
                if into.write_all(&c).is_err() {
                    pipe.state.lock().unwrap().dead = true;
                    return;
                }
            }
            None => {
                let _ = into.shutdown(Shutdown::Write);
                return;
            }
        }
    }
}

// ---------------------------------------------------------- namespaces

/// A network namespace for the coordinator, joined to the test's by a veth
/// pair, where an nftables rule can drop every packet (a partition).
struct Netns {
    name: String,
    /// The coordinator's address inside (port 0).
    inside: String,
    veth_inside: String,
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Where the run is root and `ip` and `nft` work: a namespace; `None`
    /// otherwise (`CKPT_JEPSEN_NETNS=0` refuses it too).
    fn create(run: u64) -> Option<Netns> {
        if std::env::var("CKPT_JEPSEN_NETNS").as_deref() == Ok("0") {
            return None;
        }
        let root = std::fs::read_to_string("/proc/self/status")
            .ok()?
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))?;
        if !root || sh(&["nft", "--version"]).is_err() {
            return None;
        }
        remove_stale_namespaces();
        let pid = std::process::id();
        let id = pid % 10_000;
        let tag = format!("{id}x{}", run % 1_000);
        let name = format!("ckptj-{pid}-{}", run % 1_000);
        let (outside, inside) = (format!("cjo{tag}"), format!("cji{tag}"));
        let (a, b) = ((id % 200) as u8 + 20, (run % 60) as u8 * 4);
        let ns = Netns {
            name: name.clone(),
            inside: format!("10.{a}.{b}.2:0"),
            veth_inside: inside.clone(),
        };
        let setup = || -> Result<(), String> {
            sh(&["ip", "netns", "add", &name])?;
            sh(&[
                "ip", "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ])?;
            sh(&["ip", "link", "set", &inside, "netns", &name])?;
            sh(&[
                "ip",
                "addr",
                "add",
                &format!("10.{a}.{b}.1/30"),
                "dev",
                &outside,
            ])?;
            sh(&["ip", "link", "set", &outside, "up"])?;
            let exec = ["ip", "netns", "exec", name.as_str()];
            let cidr = format!("10.{a}.{b}.2/30");
            for cmd in [
                vec!["ip", "addr", "add", cidr.as_str(), "dev", inside.as_str()],
                vec!["ip", "link", "set", inside.as_str(), "up"],
                vec!["ip", "link", "set", "lo", "up"],
            ] {
                let full: Vec<&str> = exec.iter().copied().chain(cmd).collect();
                sh(&full)?;
            }
            Ok(())
        };
        match setup() {
            Ok(()) => Some(ns),
            Err(e) => {
                println!("jepsen: no network namespace ({e}); partitions not drawn");
                None
            }
        }
    }

    fn prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn partition(&self, on: bool) {
        let rules = format!(
            "table inet ckptj {{ chain i {{ type filter hook input priority 0; iifname \"{v}\" drop; }}; chain o {{ type filter hook output priority 0; oifname \"{v}\" drop; }}; }}",
            v = self.veth_inside
        );
        let r = if on {
            sh(&["ip", "netns", "exec", &self.name, "nft", &rules])
        } else {
            sh(&[
                "ip", "netns", "exec", &self.name, "nft", "delete", "table", "inet", "ckptj",
            ])
        };
        r.expect("nft");
    }
}

/// Deletes the namespaces (and with them their veth pairs) that a test
/// process which is gone left behind (killed before its `Drop` ran).
fn remove_stale_namespaces() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let owner = name
            .strip_prefix("ckptj-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = owner {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = sh(&["ip", "netns", "del", name]);
            }
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace removes its end of the veth pair, and with
        // it the pair.
        let _ = sh(&["ip", "netns", "del", &self.name]);
    }
}

// -------------------------------------------------------------- faults

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    KillCoordinator,
    KillTask,
    Cut,
    Stall,
    Delay,
    StaleDelivery,
    Depose,
    Partition,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::KillCoordinator => "kill-coordinator",
            Kind::KillTask => "kill-task",
            Kind::Cut => "cut",
            Kind::Stall => "stall",
            Kind::Delay => "delay",
            Kind::StaleDelivery => "stale-delivery",
            Kind::Depose => "depose",
            Kind::Partition => "partition",
        }
    }
}

/// One fault: when it starts (after the job's first commit), what, and
/// its length (down time, stall, delay window, hold) in ms.
#[derive(Clone, Copy, Debug)]
struct Fault {
    at_ms: u64,
    kind: Kind,
    len_ms: u64,
    /// Latency and jitter of a delay.
    latency_ms: u64,
    jitter_ms: u64,
}

fn schedule(seed: u64, partitions: bool) -> Vec<Fault> {
    let mut rng = SplitMix64::new(seed ^ 0x6a65_7073_656e);
    // Every kind; the last, `Partition`, only where namespaces work.
    const KINDS: [Kind; 8] = [
        Kind::KillCoordinator,
        Kind::KillTask,
        Kind::Cut,
        Kind::Stall,
        Kind::Delay,
        Kind::StaleDelivery,
        Kind::Depose,
        Kind::Partition,
    ];
    let kinds = if partitions {
        &KINDS[..]
    } else {
        &KINDS[..KINDS.len() - 1]
    };
    let n = 2 + rng.below_or_eq(3);
    let mut at = 0;
    (0..n)
        .map(|_| {
            at += rng.below_or_eq(600);
            let kind = kinds[rng.below_or_eq(kinds.len() as u64 - 1) as usize];
            let len_ms = match kind {
                Kind::KillCoordinator | Kind::KillTask => rng.below_or_eq(300),
                Kind::Stall | Kind::Partition => 100 + rng.below_or_eq(1_400),
                Kind::Delay => 200 + rng.below_or_eq(600),
                Kind::StaleDelivery | Kind::Depose => 20 + rng.below_or_eq(200),
                Kind::Cut => 0,
            };
            Fault {
                at_ms: at,
                kind,
                len_ms,
                latency_ms: 5 + rng.below_or_eq(40),
                jitter_ms: rng.below_or_eq(20),
            }
        })
        .collect()
}

// ----------------------------------------------------------------- run

/// What one run measured.
#[derive(Default)]
struct RunReport {
    injected: BTreeMap<&'static str, u64>,
    skipped: BTreeMap<&'static str, u64>,
    /// Replacement start to tasks deployed, after a coordinator kill and
    /// after a task-manager kill.
    coordinator_recovery_ms: Vec<u64>,
    task_recovery_ms: Vec<u64>,
    /// Deposed leaders that met the refusal (exit 3) by the end of the run,
    /// and those still running that never wrote again (the log check).
    deposed_fenced: u64,
    deposed_silent: u64,
}

/// The first deploy a task manager printed after `since`.
fn deployed_after(t: &Proc, since: Instant) -> Option<Instant> {
    t.timed_lines()
        .into_iter()
        .find(|(at, l)| *at >= since && l.contains("restored from checkpoint "))
        .map(|(at, _)| at)
}

fn run(seed: u64, run_no: u64) -> RunReport {
    let netns = Netns::create(run_no).map(Arc::new);
    let faults = schedule(seed, netns.is_some());
    let sources = sources_of(seed);
    println!(
        "jepsen seed {seed} (sources {sources}): {} (partitions {})",
        faults
            .iter()
            .map(|f| format!("{}@{}ms/{}ms", f.kind.name(), f.at_ms, f.len_ms))
            .collect::<Vec<_>>()
            .join(", "),
        if netns.is_some() {
            "drawn"
        } else {
            "not drawn: not root or no nft"
        }
    );
    let dirs = Dirs::new(&format!("jepsen-{seed}"));
    let prefix = netns.as_ref().map(|n| n.prefix()).unwrap_or_default();
    let listen = netns
        .as_ref()
        .map_or("127.0.0.1:0".to_string(), |n| n.inside.clone());
    let sources_arg = sources.to_string();
    let extra = ["--timeout-ms", TIMEOUT_MS, "--sources", &sources_arg];
    let mut gen_no = 1;
    let (c, addr) = coordinator("coordinator-1", &prefix, &dirs, &listen, &extra);
    let mut coord_addr = addr;
    let proxy = Arc::new(Proxy::start(&coord_addr, seed));
    let mut coords: Vec<Proc> = vec![c];
    let mut current = 0usize;
    // The coordinators deposed (alive when the next leader started).
    let mut deposed: Vec<usize> = Vec::new();
    let mut tasks: Vec<Proc> = vec![task_manager(
        "task-1",
        &dirs,
        &proxy.addr,
        RECORDS,
        RATE,
        sources,
    )];
    let mut report = RunReport::default();
    coords[current].wait_for_commits(1);
    let t0 = Instant::now();
    // The faults with a length heal on a thread of their own, so that a
    // wait for a redeploy never waits on a heal; `active` says until when.
    let mut active: Vec<(Instant, Kind)> = Vec::new();
    let mut healers = Vec::new();
    for f in &faults {
        let when = t0 + Duration::from_millis(f.at_ms);
        if let Some(wait) = when.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let now = Instant::now();
        active.retain(|(until, _)| *until > now);
        let finished = tasks.last_mut().is_some_and(|t| t.exited().is_some());
        // Kills and their restarts are carried out in full before the next
        // fault, so no fault meets a process that is down.
        let skip = finished || active.iter().any(|(_, k)| *k == f.kind);
        if skip {
            *report.skipped.entry(f.kind.name()).or_default() += 1;
            continue;
        }
        *report.injected.entry(f.kind.name()).or_default() += 1;
        // A recovery time is recorded only for a kill with no other fault on.
        let alone = active.is_empty();
        let len = Duration::from_millis(f.len_ms);
        let heal_after = |kind: Kind, active: &mut Vec<(Instant, Kind)>| {
            active.push((Instant::now() + len, kind));
            let (proxy, netns) = (Arc::clone(&proxy), netns.clone());
            std::thread::spawn(move || {
                std::thread::sleep(len);
                match kind {
                    Kind::Stall => proxy.stall(false),
                    Kind::Delay => proxy.delay(0, 0),
                    Kind::Partition => {
                        if let Some(n) = netns {
                            n.partition(false);
                        }
                    }
                    _ => {}
                }
            })
        };
        match f.kind {
            Kind::KillCoordinator => {
                coords[current].kill9();
                std::thread::sleep(len);
                gen_no += 1;
                let (c, a) = coordinator(
                    &format!("coordinator-{gen_no}"),
                    &prefix,
                    &dirs,
                    &coord_addr,
                    &extra,
                );
                assert_eq!(a, coord_addr, "seed {seed}: the same address");
                let started = c.started;
                coords.push(c);
                current = coords.len() - 1;
                if let Some(at) = wait_deployed(tasks.last().unwrap(), started) {
                    if alone {
                        report
                            .coordinator_recovery_ms
                            .push(at.duration_since(started).as_millis() as u64);
                    }
                }
            }
            Kind::KillTask => {
                tasks.last_mut().unwrap().kill9();
                std::thread::sleep(len);
                let t = task_manager(
                    &format!("task-{}", tasks.len() + 1),
                    &dirs,
                    &proxy.addr,
                    RECORDS,
                    RATE,
                    sources,
                );
                let started = t.started;
                tasks.push(t);
                if let Some(at) = wait_deployed(tasks.last().unwrap(), started) {
                    if alone {
                        report
                            .task_recovery_ms
                            .push(at.duration_since(started).as_millis() as u64);
                    }
                }
            }
            Kind::Cut => proxy.cut(),
            Kind::Stall => {
                proxy.stall(true);
                healers.push(heal_after(Kind::Stall, &mut active));
            }
            Kind::Delay => {
                proxy.delay(f.latency_ms, f.jitter_ms);
                healers.push(heal_after(Kind::Delay, &mut active));
            }
            Kind::Partition => {
                if let Some(n) = &netns {
                    n.partition(true);
                }
                healers.push(heal_after(Kind::Partition, &mut active));
            }
            Kind::StaleDelivery => {
                let held = proxy.hold_and_reset_client(len);
                // The task manager reconnects (back-off from 20 ms) and says
                // Hello on a new connection before the held bytes arrive.
                std::thread::sleep(Duration::from_millis(150));
                Proxy::release(held);
            }
            Kind::Depose => {
                gen_no += 1;
                let fresh = netns
                    .as_ref()
                    .map_or("127.0.0.1:0".to_string(), |n| n.inside.clone());
                let (c, a) = coordinator(
                    &format!("coordinator-{gen_no}"),
                    &prefix,
                    &dirs,
                    &fresh,
                    &extra,
                );
                coords.push(c);
                deposed.push(current);
                current = coords.len() - 1;
                coord_addr = a;
                proxy.point_at(&coord_addr);
                // What the task manager sent the old leader is held; the
                // task manager reconnects to the new one; once the new
                // leader claimed the store, the old one gets what was held
                // (acks that may complete its checkpoint: its store write
                // must then be refused).
                let held = proxy.hold_and_reset_client(len);
                coords[current].wait_for("the new leader's claim", |ls| {
                    ls.iter().find(|l| l.contains("recovered:")).cloned()
                });
                Proxy::release(held);
            }
        }
    }
    // Every fault heals, and the job finishes.
    for h in healers {
        h.join().expect("a heal");
    }
    tasks.last_mut().unwrap().wait_success();
    coords[current].wait_success();
    check(seed, sources, &dirs, &mut coords, current, &tasks);
    for i in deposed {
        match coords[i].exited() {
            Some(_) => report.deposed_fenced += 1,
            None => report.deposed_silent += 1,
        }
    }
    drop(coords);
    drop(tasks);
    drop(netns);
    dirs.remove();
    report
}

/// The number of numbered sources of a run (1 or 2: fan-in into the
/// counter), drawn from the seed apart from the fault schedule, so a seed
/// keeps the schedule it had before sources were drawn.
fn sources_of(seed: u64) -> u32 {
    let mut rng = SplitMix64::new(seed ^ 0x5eed_0f5a_0c35);
    1 + u32::from(rng.below_or_eq(1) == 1)
}

/// Waits (at most [`DEADLINE`]) for the task manager's first deploy after
/// `since`; `None` when it exited first (the job finished).
fn wait_deployed(t: &Proc, since: Instant) -> Option<Instant> {
    let t0 = Instant::now();
    while t0.elapsed() < DEADLINE {
        if let Some(at) = deployed_after(t, since) {
            return Some(at);
        }
        if t.lines()
            .iter()
            .any(|l| l.contains("stopped by the coordinator"))
        {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("{}: not redeployed within {DEADLINE:?}", t.name);
}

/// The checker over one run (see the module docs).
fn check(
    seed: u64,
    sources: u32,
    dirs: &Dirs,
    coords: &mut [Proc],
    current: usize,
    tasks: &[Proc],
) {
    check_output(&dirs.task, RECORDS, sources);
    dirs.check_separate();
    let log = read_log(&dirs.store);
    check_log(&log);
    let mut newest_commit = None;
    for e in &log {
        if let LogEntry::Commit { checkpoint, .. } = e {
            newest_commit = Some(*checkpoint);
        }
    }
    for (i, c) in coords.iter_mut().enumerate() {
        let g = generation_of(c);
        let lines = c.lines();
        match latest_before_claim(&log, g) {
            Some(at_start) => {
                check_restores(&lines, at_start);
            }
            None => assert!(
                !lines.iter().any(|l| l.contains("committed checkpoint ")),
                "seed {seed}: generation {g} committed without a claim"
            ),
        }
        if i != current {
            // Killed (no exit code), or deposed: refused (3), never failed.
            if let Some(status) = c.exited() {
                assert!(
                    matches!(status.code(), None | Some(3)),
                    "seed {seed}: coordinator of generation {g} exited {status}"
                );
            }
        }
        for l in &lines {
            if l.contains("recovered:") {
                assert!(
                    l.contains(", 0 damaged"),
                    "seed {seed}: a leader found a committed checkpoint damaged: {l}"
                );
            }
        }
    }
    // Every deploy a task manager received restores a checkpoint some leader
    // chose to restore.
    let chosen: Vec<Option<CheckpointId>> = coords
        .iter()
        .flat_map(|c| c.lines())
        .filter_map(|l| {
            checkpoint_after(&l, "restored checkpoint ")
                .or_else(|| checkpoint_after(&l, "restore checkpoint "))
        })
        .collect();
    for t in tasks {
        for l in t.lines() {
            if let Some(c) = checkpoint_after(&l, "restored from checkpoint ") {
                assert!(
                    chosen.contains(&c),
                    "seed {seed}: {} deployed from {c:?}, which no leader restored ({chosen:?})",
                    t.name
                );
            }
        }
    }
    // A checker leader recovers the store: every checkpoint the log says is
    // stored is whole, and the newest commit is restored.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let objects: Arc<dyn object_store::ObjectStore> =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&dirs.store).unwrap());
    let job: JobId = ckpt_core::host::pipeline::PIPELINE_JOB;
    let (store, recovery) = rt.block_on(async {
        let generation = ObjStore::next_generation(&*objects, job).await.unwrap();
        ObjStore::open(
            Arc::clone(&objects),
            OpenOptions {
                job,
                retained_max: 2,
                generation,
                committed: None,
                check_state: None,
            },
        )
        .await
        .unwrap()
    });
    assert!(
        recovery.damaged.is_empty(),
        "seed {seed}: committed checkpoints with state missing: {:?}",
        recovery.damaged
    );
    let latest: Option<CheckpointId> = recovery.latest().map(|c| c.checkpoint);
    assert_eq!(latest, newest_commit, "seed {seed}: the store's latest");
    drop(store);
}

fn seeds() -> Vec<u64> {
    if let Ok(s) = std::env::var("CKPT_JEPSEN_SEED") {
        return vec![s.parse().expect("CKPT_JEPSEN_SEED is a number")];
    }
    let runs = std::env::var("CKPT_JEPSEN_RUNS")
        .map(|s| s.parse().expect("CKPT_JEPSEN_RUNS is a number"))
        .unwrap_or(CI_RUNS);
    let first = std::env::var("CKPT_JEPSEN_FIRST")
        .map(|s| s.parse().expect("CKPT_JEPSEN_FIRST is a number"))
        .unwrap_or(1);
    (first..first + runs).collect()
}

fn percentile(v: &mut [u64], p: usize) -> Option<u64> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[(v.len() - 1) * p / 100])
}

#[test]
fn seeded_faults_between_real_processes_lose_no_record_and_no_committed_checkpoint() {
    let mut total = RunReport::default();
    let mut failed: Vec<(u64, String)> = Vec::new();
    let seeds = seeds();
    for (i, seed) in seeds.iter().enumerate() {
        let r = std::panic::catch_unwind(|| run(*seed, i as u64));
        match r {
            Ok(r) => {
                for (k, n) in r.injected {
                    *total.injected.entry(k).or_default() += n;
                }
                for (k, n) in r.skipped {
                    *total.skipped.entry(k).or_default() += n;
                }
                total
                    .coordinator_recovery_ms
                    .extend(r.coordinator_recovery_ms);
                total.task_recovery_ms.extend(r.task_recovery_ms);
                total.deposed_fenced += r.deposed_fenced;
                total.deposed_silent += r.deposed_silent;
            }
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!("jepsen seed {seed}: FAILED {why}");
                failed.push((*seed, why));
            }
        }
    }
    let fmt = |m: &BTreeMap<&str, u64>| {
        m.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (c, t) = (
        &mut total.coordinator_recovery_ms,
        &mut total.task_recovery_ms,
    );
    println!(
        "jepsen: {} runs, faults injected: {}; skipped (job finished, or the same kind still on): {}; failed runs {}; deposed leaders refused at a write {}, silent to the end {}; recovery ms after a coordinator kill p50 {:?} p99 {:?} (n {}), after a task-manager kill p50 {:?} p99 {:?} (n {})",
        seeds.len(),
        fmt(&total.injected),
        fmt(&total.skipped),
        failed.len(),
        total.deposed_fenced,
        total.deposed_silent,
        percentile(c, 50),
        percentile(c, 99),
        c.len(),
        percentile(t, 50),
        percentile(t, 99),
        t.len(),
    );
    assert!(
        failed.is_empty(),
        "failing seeds (rerun one with CKPT_JEPSEN_SEED): {failed:?}"
    );
}

// ------------------------------------------- the checker's own failures

/// A log as a deposed leader would leave it if the store did not fence it.
#[test]
#[should_panic(expected = "wrote after the claim")]
fn the_log_check_fails_on_a_write_of_a_deposed_generation() {
    use ckpt_core::Generation;
    let job = ckpt_core::host::pipeline::PIPELINE_JOB;
    check_log(&[
        LogEntry::Claim {
            job,
            generation: Generation(1),
        },
        LogEntry::Claim {
            job,
            generation: Generation(2),
        },
        LogEntry::Commit {
            generation: Generation(1),
            checkpoint: CheckpointId(3),
            evicted: vec![],
        },
    ]);
}

#[test]
#[should_panic(expected = "not strictly increasing")]
fn the_log_check_fails_on_a_reused_checkpoint_id() {
    use ckpt_core::Generation;
    let job = ckpt_core::host::pipeline::PIPELINE_JOB;
    let commit = |g, c| LogEntry::Commit {
        generation: Generation(g),
        checkpoint: CheckpointId(c),
        evicted: vec![],
    };
    check_log(&[
        LogEntry::Claim {
            job,
            generation: Generation(1),
        },
        commit(1, 4),
        LogEntry::Claim {
            job,
            generation: Generation(2),
        },
        commit(2, 4),
    ]);
}

#[test]
#[should_panic(expected = "the id counter moved back")]
fn the_log_check_fails_on_a_counter_that_moves_back() {
    use ckpt_core::Generation;
    let job = ckpt_core::host::pipeline::PIPELINE_JOB;
    let ids = |g, next| LogEntry::Ids {
        generation: Generation(g),
        next,
    };
    check_log(&[
        LogEntry::Claim {
            job,
            generation: Generation(1),
        },
        ids(1, 9),
        LogEntry::Claim {
            job,
            generation: Generation(2),
        },
        ids(2, 5),
    ]);
}

/// A failover that restores a checkpoint older than the latest committed.
#[test]
#[should_panic(expected = "failover restore is not the latest committed")]
fn the_restore_check_fails_on_a_restore_behind_the_latest_commit() {
    let lines: Vec<String> = [
        "coordinator: recovered: restored checkpoint none (store latest none), 0 damaged",
        "coordinator: committed checkpoint 1",
        "coordinator: committed checkpoint 2",
        "coordinator: failover (task manager lost): restore checkpoint 1 (store latest 2)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    check_restores(&lines, None);
}

/// The proxy's stale delivery: bytes sent on a connection that was reset
/// on the client's side reach the server after a newer connection's.
#[test]
fn the_proxy_delivers_held_bytes_after_a_newer_connection() {
    use std::io::{Read, Write};
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = Proxy::start(&server.local_addr().unwrap().to_string(), 1);
    let mut old = TcpStream::connect(&proxy.addr).unwrap();
    let (mut old_in, _) = server.accept().unwrap();
    // Wait until the proxy knows the link before holding it.
    while proxy.links.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let holding = {
        let p = &proxy;
        std::thread::scope(|s| {
            let h = s.spawn(|| p.hold_and_reset_client(Duration::from_millis(100)));
            std::thread::sleep(Duration::from_millis(20));
            old.write_all(b"old").unwrap();
            h.join().unwrap()
        })
    };
    let mut new = TcpStream::connect(&proxy.addr).unwrap();
    let (mut new_in, _) = server.accept().unwrap();
    new.write_all(b"new").unwrap();
    let mut buf = [0u8; 3];
    new_in.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"new");
    old_in
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    assert!(
        old_in.read(&mut buf).is_err(),
        "the old connection's bytes are held"
    );
    Proxy::release(holding);
    old_in.set_read_timeout(Some(DEADLINE)).unwrap();
    old_in.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"old");
    assert_eq!(old_in.read(&mut buf).unwrap(), 0, "then the old one closes");
}
