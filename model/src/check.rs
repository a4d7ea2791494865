//! Running the checker: options, the report, the shortest counterexample,
//! and rendering it (numbered steps, a JSON-lines trace, a Mermaid diagram).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_core::invariants::Violation;
use ckpt_core::task::Semantics;
use ckpt_core::trace::{write_trace, Trace, TraceLine};
use ckpt_core::TaskId;
use serde::Serialize;
use stateright::{Checker, HasDiscoveries, Model, Path};

use crate::system::{
    props, semantics_name, Action, Coverage, Delivery, ModelConfig, Network, Reduction, SysModel,
    SysState, Topology,
};

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Worker threads.
    pub threads: usize,
    /// Breadth-first (shortest paths; stateright's BFS has no symmetry
    /// reduction) instead of depth-first.
    pub bfs: bool,
    /// Symmetry reduction over tasks (DFS only).
    pub symmetry: bool,
    /// Print a progress line on stderr: rewritten in place (`\r`) on a
    /// terminal, one plain line per report otherwise.
    pub progress: bool,
    /// How often the progress line is reported.
    pub progress_every: Duration,
    /// Collect transition coverage.
    pub coverage: bool,
    /// Stop when the first property fails (legacy runs).
    pub stop_at_failure: bool,
    /// Stop searching after this long (stateright's `timeout`); the
    /// verdict is then inconclusive unless a violation was found.
    pub time_limit: Option<Duration>,
    /// Explore paths of at most this many actions (stateright's
    /// `target_max_depth`); inconclusive if a longer path existed.
    pub max_depth: Option<usize>,
    /// Set (by a Ctrl-C handler) to stop: the report then holds the counts
    /// and discoveries so far, and the checker threads are left to the
    /// process's exit.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Stop once about this many unique states were found (checked every
    /// 50 ms, so a run may overshoot by what it finds in that time).
    pub max_states: Option<usize>,
    /// Stop once the process's resident memory exceeds this many MiB (read
    /// from `/proc/self/status` every 50 ms; Linux only, ignored elsewhere).
    pub memory_limit_mb: Option<u64>,
    /// Search from these states (each with the actions that reach it from
    /// the initial state) instead of the initial state (`--shard`); the
    /// counterexample then starts at the initial state all the same.
    pub roots: Option<crate::system::Roots>,
    /// Partial-order reduction ([`crate::world::Sim::ample`]).
    pub reduction: Reduction,
    /// Which checker runs a depth-first search.
    pub engine: Engine,
}

/// Which checker runs a depth-first `check` (breadth-first searches are
/// stateright's either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// ckpt's own DFS ([`crate::engine`]): stateright's semantics and
    /// counts, less overhead per state.
    #[default]
    Ckpt,
    /// stateright's `DfsChecker` (`--engine stateright`).
    Stateright,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            threads: 1,
            bfs: false,
            symmetry: true,
            progress: false,
            progress_every: Duration::from_secs(1),
            coverage: false,
            stop_at_failure: false,
            time_limit: None,
            max_depth: None,
            interrupt: None,
            max_states: None,
            memory_limit_mb: None,
            roots: None,
            reduction: Reduction::Off,
            engine: Engine::Ckpt,
        }
    }
}

/// Whether the search covered the whole bounded state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Completion {
    /// Every reachable state was checked.
    Complete,
    /// The run was asked to stop at its first violation (a legacy
    /// semantics, whose question is "is the bug found") and did: the other
    /// properties were not decided, so none of them is reported as holding.
    StoppedAtViolation,
    /// `--time-limit` ran out first.
    TimeLimit,
    /// States beyond `--max-depth` were not expanded.
    MaxDepth,
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// `--max-states` was reached: the report is partial.
    StateLimit,
    /// `--memory-limit-mb` was exceeded: the report is partial.
    MemoryLimit,
}

/// The overall answer of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole bounded space was searched and no `always` / `eventually`
    /// property failed.
    Holds,
    /// A property failed (definitive, whatever the bounds).
    Violated,
    /// No violation was found, but the search did not cover the space (a
    /// limit, an interrupt), or it was expected to find one and could not:
    /// not a proof of anything.
    Inconclusive,
}

/// What one property came to.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyResult {
    /// Name.
    pub name: &'static str,
    /// `always`, `sometimes` or `eventually`.
    pub kind: &'static str,
    /// `holds`, `violated`, `witnessed`, `not witnessed`, or, when the search
    /// was cut short, `inconclusive` (no violation found so far) and `not
    /// witnessed so far`.
    pub status: &'static str,
}

/// A counterexample: the actions from the initial state, and the violation.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The property that failed.
    pub property: &'static str,
    /// The actions, in order.
    pub actions: Vec<Action>,
    /// The invariant violation at the last state, if a safety property.
    pub violation: Option<Violation>,
}

/// The result of one check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The configuration checked.
    pub config: ModelConfig,
    /// States generated (with repeats).
    pub states: usize,
    /// Unique states (fingerprints; representatives under symmetry).
    pub unique: usize,
    /// Longest path explored (in states: the initial state is depth 1).
    pub depth: usize,
    /// Wall time of the search.
    pub seconds: f64,
    /// Wall time of the whole check (search, shortest counterexample).
    pub total_seconds: f64,
    /// Whether the search covered the bounded space.
    pub completion: Completion,
    /// Every property.
    pub properties: Vec<PropertyResult>,
    /// The (shortest, when a safety property failed) counterexample.
    pub counterexample: Option<Counterexample>,
    /// Transition coverage, if collected.
    pub coverage: Option<Coverage>,
    /// The process's peak resident memory (`VmHWM`) in MiB when the check
    /// ended (Linux; `None` elsewhere).
    pub peak_memory_mb: Option<f64>,
    /// Whether partial-order reduction was on (the counts are then of the
    /// reduced graph).
    pub reduction: bool,
    /// The checker that searched (breadth-first: always stateright's).
    pub engine: Engine,
}

impl CheckReport {
    /// Whether every `always` and `eventually` property holds over the
    /// whole bounded space (false when the search was cut short).
    #[must_use]
    pub fn holds(&self) -> bool {
        self.verdict() == Verdict::Holds
    }

    /// The overall answer.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        if self.properties.iter().any(|p| p.status == "violated") {
            Verdict::Violated
        } else if self.completion == Completion::Complete {
            Verdict::Holds
        } else {
            Verdict::Inconclusive
        }
    }
}

/// Whether the `--semantics` / topology combination can reach the bug the
/// semantics reintroduces: `Err` names the flags that make it reachable. A
/// checker must not answer "holds" for a question it could not ask.
pub fn reachable(cfg: &ModelConfig) -> Result<(), String> {
    match cfg.semantics {
        Semantics::Fixed => Ok(()),
        Semantics::Legacy(bug) => crate::zoo::needs(bug, cfg).map_err(|missing| {
            format!(
                "--semantics {} cannot be reached in this configuration: it needs {missing} \
                 (or --semantics all, which moves each variant to the smallest world that \
                 reaches it)",
                crate::world::semantics_name(cfg.semantics)
            )
        }),
    }
}

/// Checks combinations of flags that are accepted by the parser but mean
/// nothing (or something else than they say).
pub fn validate(cfg: &ModelConfig) -> Result<(), String> {
    if cfg.topology == Topology::Join && cfg.tasks < 3 {
        return Err(format!(
            "--topology join needs --tasks 3 or more: with {} task{} there is only one source \
             and join is the fanout topology",
            cfg.tasks,
            if cfg.tasks == 1 { "" } else { "s" }
        ));
    }
    reachable(cfg)
}

/// For `--semantics all`: the nearest configuration in which the
/// semantics' bug is reachable, and a note saying what was changed.
#[must_use]
pub fn make_reachable(cfg: &ModelConfig) -> (ModelConfig, Option<String>) {
    if reachable(cfg).is_ok() {
        return (cfg.clone(), None);
    }
    let c = match cfg.semantics {
        Semantics::Fixed => return (cfg.clone(), None),
        Semantics::Legacy(bug) => crate::zoo::entry(bug).config,
    };
    let note = flags(&c);
    (c, Some(note))
}

/// The CLI spelling of a topology.
#[must_use]
pub fn topology_name(t: Topology) -> &'static str {
    match t {
        Topology::Fanout => "fanout",
        Topology::Join => "join",
    }
}

/// The CLI spelling of a network.
#[must_use]
pub fn network_name(n: Network) -> &'static str {
    match n {
        Network::Ordered => "ordered",
        Network::Reorder => "reorder",
        Network::ReorderDupDrop => "reorder-dup-drop",
    }
}

/// The configuration as the command-line flags that select it (every
/// bound, switches only when set), for banners and reports.
#[must_use]
pub fn flags(c: &ModelConfig) -> String {
    let mut f = format!(
        "--semantics {} --tasks {} --topology {} --checkpoints {} --max-concurrent {} --network {} --faults {}",
        semantics_name(c.semantics),
        c.tasks,
        topology_name(c.topology),
        c.checkpoints,
        c.max_concurrent,
        network_name(c.network),
        c.faults
    );
    for (off, flag) in [
        (!c.io_faults, " --no-io-faults"),
        (!c.task_faults, " --no-task-faults"),
        (!c.shutdown, " --no-shutdown"),
    ] {
        if off {
            f.push_str(flag);
        }
    }
    for (n, flag) in [
        (c.savepoints, "--savepoints"),
        (c.task_failures, "--task-failures"),
        (c.scheduler_restarts, "--scheduler-restarts"),
        (c.user_checkpoints, "--user-checkpoints"),
        (
            u8::try_from(c.master_hooks).unwrap_or(u8::MAX),
            "--master-hooks",
        ),
        (c.coordinator_failovers, "--coordinator-failovers"),
        (c.job_failovers, "--job-failovers"),
        (c.end_of_input, "--end-of-input"),
        (c.zombie_coordinators, "--zombie-coordinators"),
    ] {
        if n > 0 {
            f.push_str(&format!(" {flag} {n}"));
        }
    }
    for (on, flag) in [
        (c.savepoint_restore, " --savepoint-restore"),
        (c.shared_state, " --shared-state"),
        (c.dispose_savepoints, " --dispose-savepoints"),
    ] {
        if on {
            f.push_str(flag);
        }
    }
    f
}

/// A progress reporter on stderr: `\r`-rewritten on a terminal, plain lines
/// otherwise (a log gets one line per report, not one huge line).
#[derive(Debug)]
pub struct Progress {
    tty: bool,
    every: Duration,
    last: Instant,
    drawn: bool,
}

impl Progress {
    /// A reporter printing every `every`.
    #[must_use]
    pub fn new(every: Duration) -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            every,
            last: Instant::now(),
            drawn: false,
        }
    }

    /// Whether a report is due (and marks it done).
    pub fn due(&mut self) -> bool {
        if self.last.elapsed() < self.every {
            return false;
        }
        self.last = Instant::now();
        true
    }

    /// Prints one report.
    pub fn show(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{text}\x1b[K");
            self.drawn = true;
        } else {
            let _ = writeln!(err, "{}", text.trim_start());
        }
        let _ = err.flush();
    }

    /// Ends the progress line on a terminal, so what follows starts on a
    /// clean line.
    pub fn finish(&mut self) {
        if self.tty && self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `n` and the noun, singular or plural.
#[must_use]
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

struct Finished {
    states: usize,
    unique: usize,
    depth: usize,
    discoveries: std::collections::HashMap<&'static str, Path<SysState, Action>>,
    interrupted: bool,
    /// A resource limit that stopped the search.
    limit: Option<Completion>,
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`) in MiB; `None`
/// where there is no such file (not Linux) or no such field.
#[must_use]
pub fn proc_status_mb(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| {
        l.strip_prefix(field)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let kb: f64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())?;
    Some(kb / 1024.0)
}

/// The process's resident memory now, in MiB.
#[must_use]
pub fn rss_mb() -> Option<f64> {
    proc_status_mb("VmRSS")
}

/// The process's peak resident memory so far, in MiB.
#[must_use]
pub fn peak_rss_mb() -> Option<f64> {
    proc_status_mb("VmHWM")
}

/// Which limit of `opts` the running search has reached. The time limit is
/// also given to stateright, which does not always honour it (a DFS with
/// symmetry was seen running 13 times past it), so it is enforced here too.
fn limit_reached(opts: &CheckOptions, unique: usize, start: Instant) -> Option<Completion> {
    if opts.time_limit.is_some_and(|t| start.elapsed() >= t) {
        return Some(Completion::TimeLimit);
    }
    if opts.max_states.is_some_and(|n| unique >= n) {
        return Some(Completion::StateLimit);
    }
    let limit = opts.memory_limit_mb?;
    #[allow(clippy::cast_precision_loss)]
    let over = rss_mb().is_some_and(|mb| mb > limit as f64);
    over.then_some(Completion::MemoryLimit)
}

fn interrupted(opts: &CheckOptions) -> bool {
    opts.interrupt
        .as_ref()
        .is_some_and(|f| f.load(Ordering::SeqCst))
}

/// Waits for a spawned checker (with the progress line when asked) and
/// takes its counts. On an interrupt it returns the counts so far without
/// joining. BFS and DFS checkers are different types, hence the generic.
fn finish<C: Checker<SysModel>>(
    checker: C,
    start: Instant,
    opts: &CheckOptions,
    stop: Option<Arc<AtomicBool>>,
) -> Finished {
    let mut progress = opts.progress.then(|| Progress::new(opts.progress_every));
    let mut last = (Instant::now(), 0usize);
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(50));
        if interrupted(opts) {
            if let Some(p) = progress.as_mut() {
                p.finish();
            }
            return Finished {
                states: checker.state_count(),
                unique: checker.unique_state_count(),
                depth: checker.max_depth(),
                discoveries: checker.discoveries(),
                interrupted: true,
                limit: None,
            };
        }
        if let Some(limit) = limit_reached(opts, checker.unique_state_count(), start) {
            if let Some(p) = progress.as_mut() {
                p.finish();
            }
            // The discoveries so far are taken before the model is told to
            // stop: once it is, every successor is out of bounds and every
            // state looks terminal (which would fake `eventually` failures).
            let f = Finished {
                states: checker.state_count(),
                unique: checker.unique_state_count(),
                depth: checker.max_depth(),
                discoveries: checker.discoveries(),
                interrupted: false,
                limit: Some(limit),
            };
            if let Some(stop) = &stop {
                stop.store(true, Ordering::SeqCst);
                // The workers now drain their queues without expanding
                // anything: join them rather than leave them running.
                let _ = checker.join();
            }
            return f;
        }
        if let Some(p) = progress.as_mut() {
            if p.due() {
                let unique = checker.unique_state_count();
                let rate = (unique.saturating_sub(last.1)) as f64
                    / last.0.elapsed().as_secs_f64().max(1e-9);
                last = (Instant::now(), unique);
                p.show(&format!(
                    "  {:>6.1}s  states {:>11}  unique {:>10}  {:>9.0} unique/s  depth {:>3}",
                    start.elapsed().as_secs_f64(),
                    checker.state_count(),
                    unique,
                    rate,
                    checker.max_depth()
                ));
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p.finish();
    }
    let c = checker.join();
    flush_coverage_here();
    Finished {
        states: c.state_count(),
        unique: c.unique_state_count(),
        depth: c.max_depth(),
        discoveries: c.discoveries(),
        interrupted: false,
        limit: None,
    }
}

/// The model's initial state is built on this thread (stateright calls
/// `init_states` where the checker is spawned): flush its coverage, or the
/// setup's `StartScheduler` would be reported as never delivered.
fn flush_coverage_here() {
    crate::system::flush_coverage();
}

/// stateright's depth bound for "paths of at most `n` actions": depth
/// counts states (the initial one is depth 1), and states at the bound are
/// not checked.
fn depth_bound(actions: usize) -> usize {
    actions.saturating_add(2)
}

/// Runs the checker over `cfg`.
#[must_use]
pub fn run_check(cfg: &ModelConfig, opts: &CheckOptions) -> CheckReport {
    let mut model = SysModel::new(cfg.clone());
    if opts.coverage {
        model = model.with_coverage();
    }
    let stop =
        (opts.max_states.is_some() || opts.memory_limit_mb.is_some() || opts.time_limit.is_some())
            .then(|| Arc::new(AtomicBool::new(false)));
    model.stop.clone_from(&stop);
    model.roots.clone_from(&opts.roots);
    model.reduction = opts.reduction;
    let coverage = model.coverage.clone();
    let properties = model.properties();
    let start = Instant::now();
    let mut builder = model.clone().checker().threads(opts.threads.max(1));
    if opts.stop_at_failure {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    if let Some(t) = opts.time_limit {
        builder = builder.timeout(t);
    }
    if let Some(d) = opts.max_depth {
        builder = builder.target_max_depth(depth_bound(d));
    }
    let symmetry = opts.symmetry && crate::symmetry::reduces(cfg);
    let f = if opts.roots.as_ref().is_some_and(|r| r.is_empty()) {
        // A shard that owns no frontier state has nothing to search.
        Finished {
            states: 0,
            unique: 0,
            depth: 0,
            discoveries: std::collections::HashMap::new(),
            interrupted: false,
            limit: None,
        }
    } else if opts.bfs {
        finish(builder.spawn_bfs(), start, opts, stop.clone())
    } else if opts.engine == Engine::Ckpt {
        let e = crate::engine::spawn(
            model,
            crate::engine::EngineOptions {
                threads: opts.threads.max(1),
                symmetry,
                target_max_depth: opts.max_depth.map(depth_bound),
                finish_when_any_failure: opts.stop_at_failure,
            },
        );
        finish(e, start, opts, stop.clone())
    } else {
        if symmetry {
            builder = builder.symmetry();
        }
        finish(builder.spawn_dfs(), start, opts, stop.clone())
    };
    let seconds = start.elapsed().as_secs_f64();
    let completion = if f.interrupted {
        Completion::Interrupted
    } else if let Some(limit) = f.limit {
        limit
    } else if opts.max_depth.is_some_and(|d| f.depth >= depth_bound(d)) {
        // stateright records the depth of a state before skipping it as
        // past the bound: a state was left unexpanded.
        Completion::MaxDepth
    } else if opts.time_limit.is_some_and(|t| start.elapsed() >= t) {
        Completion::TimeLimit
    } else if opts.stop_at_failure
        && properties.iter().any(|p| {
            p.expectation != stateright::Expectation::Sometimes
                && f.discoveries.contains_key(p.name)
        })
    {
        // The checker may have stopped with states unexplored: what it did
        // not find is not known to hold.
        Completion::StoppedAtViolation
    } else {
        Completion::Complete
    };
    let cut = completion != Completion::Complete;
    let mut results = Vec::new();
    let mut failed: Option<(&'static str, Path<SysState, Action>)> = None;
    for p in &properties {
        let found = f.discoveries.get(p.name);
        let (kind, status) = match p.expectation {
            stateright::Expectation::Always => (
                "always",
                match (found.is_some(), cut) {
                    (true, _) => "violated",
                    (false, false) => "holds",
                    (false, true) => "inconclusive",
                },
            ),
            stateright::Expectation::Eventually => (
                "eventually",
                match (found.is_some(), cut) {
                    (true, _) => "violated",
                    (false, false) => "holds",
                    (false, true) => "inconclusive",
                },
            ),
            stateright::Expectation::Sometimes => (
                "sometimes",
                match (found.is_some(), cut) {
                    (true, _) => "witnessed",
                    (false, false) => "not witnessed",
                    (false, true) => "not witnessed so far",
                },
            ),
        };
        if status == "violated" && failed.is_none() {
            if let Some(path) = found {
                failed = Some((p.name, path.clone()));
            }
        }
        results.push(PropertyResult {
            name: p.name,
            kind,
            status,
        });
    }
    let counterexample = failed.map(|(name, path)| {
        let last = path.last_state().violation.clone();
        let actions: Vec<Action> = from_initial(opts, path);
        let dfs = Counterexample {
            property: name,
            actions,
            violation: last.clone(),
        };
        let resources = matches!(
            f.limit,
            Some(Completion::StateLimit | Completion::MemoryLimit)
        );
        if last.is_some() && !f.interrupted && !resources {
            // A safety violation: find the shortest path with BFS (within
            // what is left of the time limit).
            let left = opts.time_limit.map(|t| {
                t.saturating_sub(start.elapsed())
                    .max(Duration::from_secs(1))
            });
            let o = CheckOptions {
                time_limit: left,
                ..opts.clone()
            };
            shortest_violation_within(cfg, &o).unwrap_or(dfs)
        } else {
            dfs
        }
    });
    let coverage = coverage.and_then(|c| c.lock().ok().map(|m| m.clone()));
    CheckReport {
        config: cfg.clone(),
        states: f.states,
        unique: f.unique,
        depth: f.depth,
        seconds,
        total_seconds: start.elapsed().as_secs_f64(),
        completion,
        properties: results,
        counterexample,
        coverage,
        peak_memory_mb: peak_rss_mb(),
        reduction: opts.reduction != Reduction::Off,
        engine: if opts.bfs {
            Engine::Stateright
        } else {
            opts.engine
        },
    }
}

/// A path's actions from the initial state: a search from `opts.roots`
/// starts at a frontier state, whose own prefix goes first.
fn from_initial(opts: &CheckOptions, path: Path<SysState, Action>) -> Vec<Action> {
    let prefix: Vec<Action> = opts
        .roots
        .as_ref()
        .and_then(|roots| {
            let first = path.clone().into_states().into_iter().next()?;
            crate::shard::prefix_of(roots, &first).map(<[Action]>::to_vec)
        })
        .unwrap_or_default();
    let mut actions = prefix;
    actions.extend(path.into_actions());
    actions
}

fn bfs_safety(
    cfg: &ModelConfig,
    opts: &CheckOptions,
    max_depth: Option<usize>,
) -> Option<Counterexample> {
    let mut model = SysModel::new(cfg.clone());
    model.safety_only = true;
    model.roots.clone_from(&opts.roots);
    model.reduction = opts.reduction;
    let stop =
        (opts.max_states.is_some() || opts.memory_limit_mb.is_some() || opts.time_limit.is_some())
            .then(|| Arc::new(AtomicBool::new(false)));
    model.stop.clone_from(&stop);
    let names: Vec<&'static str> = model.properties().iter().map(|p| p.name).collect();
    let mut b = model
        .checker()
        .threads(opts.threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures);
    if let Some(d) = max_depth {
        b = b.target_max_depth(d);
    }
    if let Some(t) = opts.time_limit {
        b = b.timeout(t);
    }
    let quiet = CheckOptions {
        progress: false,
        ..opts.clone()
    };
    let f = finish(b.spawn_bfs(), Instant::now(), &quiet, stop);
    let mut best: Option<Counterexample> = None;
    for name in names {
        if let Some(path) = f.discoveries.get(name) {
            let violation = path.last_state().violation.clone();
            let actions = from_initial(opts, path.clone());
            if best
                .as_ref()
                .is_none_or(|b| actions.len() < b.actions.len())
            {
                best = Some(Counterexample {
                    property: name,
                    actions,
                    violation,
                });
            }
        }
    }
    best
}

/// The shortest path to a safety violation, by breadth-first search over a
/// model with only the `always` properties (TOOLING pitfall 4). stateright
/// overwrites a discovery with later ones found in the same work block, so
/// the search is repeated with a depth bound below the path found until no
/// shorter one exists.
#[must_use]
pub fn shortest_violation(cfg: &ModelConfig, threads: usize) -> Option<Counterexample> {
    shortest_violation_within(
        cfg,
        &CheckOptions {
            threads,
            ..CheckOptions::default()
        },
    )
}

/// [`shortest_violation`] with `opts`' threads, time limit and interrupt
/// (a search cut short returns the shortest path found so far).
#[must_use]
pub fn shortest_violation_within(cfg: &ModelConfig, opts: &CheckOptions) -> Option<Counterexample> {
    let mut best = bfs_safety(cfg, opts, None)?;
    // A search from frontier states (`roots`, all at the same depth): the
    // depth bound counts from them.
    let base = opts
        .roots
        .as_ref()
        .and_then(|r| r.first())
        .map_or(0, |(_, p)| p.len());
    loop {
        // Depth counts states (the initial one is depth 1): checking every
        // state of depth <= k looks at every path of at most k - 1 actions.
        let k = best.actions.len();
        if k <= base || interrupted(opts) {
            return Some(best);
        }
        match bfs_safety(cfg, opts, Some(k - base + 1)) {
            Some(shorter) if shorter.actions.len() < k => best = shorter,
            Some(_) | None => return Some(best),
        }
    }
}

/// One rendered step of a counterexample.
#[derive(Clone, Debug)]
pub struct RenderedStep {
    /// The action.
    pub action: Action,
    /// Its description.
    pub text: String,
    /// What it delivered.
    pub deliveries: Vec<Delivery>,
}

/// Replays `actions` from the initial state, logging every delivery. The
/// first element is the initial `StartScheduler`.
#[must_use]
pub fn render(cfg: &ModelConfig, actions: &[Action]) -> (Vec<Delivery>, Vec<RenderedStep>) {
    let model = SysModel::new(cfg.clone());
    let (mut s, init) = model.init_with_log();
    let mut steps = Vec::new();
    for a in actions {
        let mut log = Vec::new();
        match model.step(&s, *a, Some(&mut log)) {
            Some(n) => s = n,
            None => break,
        }
        steps.push(RenderedStep {
            action: *a,
            text: model.describe(a),
            deliveries: log,
        });
    }
    (init, steps)
}

fn who(cfg: &ModelConfig, line: &TraceLine) -> String {
    match line {
        TraceLine::Coordinator { .. } => "coordinator".to_string(),
        TraceLine::Task { task, .. } => {
            let n = cfg.tasks.max(1);
            if task.0 < n {
                format!("task {task}")
            } else {
                format!("task {} (attempt {})", task.0 % n, task.0 / n)
            }
        }
        TraceLine::Header { .. } => String::new(),
    }
}

fn event_text(line: &TraceLine) -> String {
    match line {
        TraceLine::Coordinator { event, .. } => plain_ids(&format!("{event:?}")),
        TraceLine::Task { event, .. } => plain_ids(&format!("{event:?}")),
        TraceLine::Header { .. } => String::new(),
    }
}

/// Strips the id newtypes from a debug rendering: `CheckpointId(1)` -> `1`,
/// `Ok(CheckpointId(1))` -> `Ok(1)`.
#[must_use]
pub fn plain_ids(s: &str) -> String {
    let mut out = s.to_string();
    for name in [
        "CheckpointId(",
        "RequestId(",
        "TaskId(",
        "AttemptNo(",
        "StateHandle(",
        "Millis(",
        "JobId(",
    ] {
        while let Some(at) = out.find(name) {
            let inner = at + name.len();
            let Some(close) = out.get(inner..).and_then(|r| r.find(')')) else {
                break;
            };
            let value = out.get(inner..inner + close).unwrap_or("").to_string();
            out.replace_range(at..=inner + close, &value);
        }
    }
    out
}

/// The counterexample as numbered human-readable steps. A *step* is one
/// event delivered to one machine, numbered from 1 (the setup's
/// `StartScheduler` is step 1): the same numbers `ckpt-model replay` prints
/// for the `--trace-out` trace. Each action of the checker is a heading
/// over the steps it caused (some actions deliver nothing).
#[must_use]
pub fn format_steps(cfg: &ModelConfig, actions: &[Action]) -> String {
    let (init, steps) = render(cfg, actions);
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let mut n = 0usize;
    let mut deliveries = |line: &mut dyn FnMut(String), ds: &[Delivery]| {
        for d in ds {
            n += 1;
            line(format!(
                "    {n:>3}  {} <- {}  => {}",
                who(cfg, &d.line),
                event_text(&d.line),
                plain_ids(&d.outcome)
            ));
            if !d.effects.is_empty() {
                let fx: Vec<String> = d.effects.iter().map(|e| plain_ids(e)).collect();
                line(format!("         effects: {}", fx.join(", ")));
            }
            if let Some(v) = &d.violation {
                line(format!("         VIOLATION: {v}"));
            }
        }
    };
    line("  setup: the coordinator's scheduler starts".into());
    deliveries(&mut line, &init);
    for (i, st) in steps.iter().enumerate() {
        line(format!("  action {}: {}", i + 1, plain_ids(&st.text)));
        deliveries(&mut line, &st.deliveries);
        if st.deliveries.is_empty() {
            line("         (no machine event: the network / mailbox changed)".into());
        }
    }
    out
}

/// The number of steps (events delivered) of a counterexample, setup
/// included: the last one is where the violation shows.
#[must_use]
pub fn step_count(cfg: &ModelConfig, actions: &[Action]) -> usize {
    let (init, steps) = render(cfg, actions);
    init.len() + steps.iter().map(|s| s.deliveries.len()).sum::<usize>()
}

/// The counterexample's steps as JSON objects: `step` (1-based, as in
/// `format_steps` and `replay`), `action` (1-based index of the checker
/// action that caused it, 0 for the setup), `action_text`, `machine`
/// (`coordinator` or `task`), `task` and `attempt` (tasks), `now`, and the
/// core's own serde form of `event`, `outcome` and `effects` (the events are
/// replayed through the reducers to get them), plus `violation`.
#[must_use]
pub fn structured_steps(cfg: &ModelConfig, actions: &[Action]) -> Vec<serde_json::Value> {
    let (init, steps) = render(cfg, actions);
    let trace = to_trace(cfg, actions);
    let mut coord = trace
        .coordinator
        .clone()
        .and_then(|s| ckpt_core::coordinator::CoordinatorState::from_settings(s).ok());
    let mut tasks: std::collections::BTreeMap<TaskId, ckpt_core::task::TaskState> = trace
        .tasks
        .iter()
        .filter_map(|(t, c)| {
            ckpt_core::task::TaskState::new(c.clone())
                .ok()
                .map(|s| (*t, s))
        })
        .collect();
    let labelled = init
        .iter()
        .map(|d| {
            (
                0usize,
                "setup: the coordinator's scheduler starts".to_string(),
                d,
            )
        })
        .chain(steps.iter().enumerate().flat_map(|(i, st)| {
            st.deliveries
                .iter()
                .map(move |d| (i + 1, plain_ids(&st.text), d))
        }));
    let n = cfg.tasks.max(1);
    let mut out = Vec::new();
    for (k, (action, text, d)) in labelled.enumerate() {
        let violation = d
            .violation
            .as_ref()
            .map(|v| serde_json::json!({"invariant": v.invariant, "detail": v.detail}));
        let v = match &d.line {
            TraceLine::Coordinator { now, event } => {
                let (outcome, effects) = match coord.as_ref() {
                    Some(c) => {
                        let t = ckpt_core::coordinator::reduce(c, *now, event.clone());
                        let r = (
                            serde_json::to_value(&t.step.outcome).unwrap_or_default(),
                            serde_json::to_value(&t.step.effects).unwrap_or_default(),
                        );
                        coord = Some(t.state);
                        r
                    }
                    None => (serde_json::Value::Null, serde_json::Value::Null),
                };
                serde_json::json!({
                    "step": k + 1, "action": action, "action_text": text,
                    "machine": "coordinator", "now": now.0,
                    "event": serde_json::to_value(event).unwrap_or_default(),
                    "outcome": outcome, "effects": effects, "violation": violation,
                })
            }
            TraceLine::Task { now, task, event } => {
                let (outcome, effects) = match tasks.get_mut(task) {
                    Some(st) => {
                        let t = ckpt_core::task::reduce(st, *now, event.clone());
                        let r = (
                            serde_json::to_value(&t.step.outcome).unwrap_or_default(),
                            serde_json::to_value(&t.step.effects).unwrap_or_default(),
                        );
                        *st = t.state;
                        r
                    }
                    None => (serde_json::Value::Null, serde_json::Value::Null),
                };
                serde_json::json!({
                    "step": k + 1, "action": action, "action_text": text,
                    "machine": "task", "task": task.0 % n, "attempt": task.0 / n,
                    "trace_task": task.0, "now": now.0,
                    "event": serde_json::to_value(event).unwrap_or_default(),
                    "outcome": outcome, "effects": effects, "violation": violation,
                })
            }
            TraceLine::Header { .. } => continue,
        };
        out.push(v);
    }
    out
}

/// The counterexample as a core trace (replayable by
/// `ckpt_core::trace::replay`). A restarted task attempt gets its own task
/// machine (id `task + attempt * tasks`, see [`crate::world::Sim::trace_task`]),
/// since a trace knows no restarts.
#[must_use]
pub fn to_trace(cfg: &ModelConfig, actions: &[Action]) -> Trace {
    let model = SysModel::new(cfg.clone());
    let (init, steps) = render(cfg, actions);
    // One task machine per (task, attempt): see `SysModel::trace_task`.
    let n = cfg.tasks.max(1) * (1 + u32::from(cfg.task_failures));
    Trace {
        coordinator: Some(model.settings().clone()),
        tasks: (0..n)
            .map(|t| (TaskId(t), model.task_config().clone()))
            .collect(),
        steps: init
            .into_iter()
            .chain(steps.into_iter().flat_map(|s| s.deliveries))
            .map(|d| d.line)
            .collect(),
    }
}

/// Writes the trace as JSON lines.
pub fn write_trace_file(
    path: &std::path::Path,
    cfg: &ModelConfig,
    actions: &[Action],
) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    write_trace(std::io::BufWriter::new(f), &to_trace(cfg, actions))
}

fn mermaid_text(s: &str) -> String {
    let s: String = plain_ids(s)
        .chars()
        .map(|c| match c {
            ';' | '#' | '\n' => ',',
            '{' | '}' => ' ',
            _ => c,
        })
        .collect();
    let s = s.replace("checkpoint: ", "cp ");
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 140 {
        format!("{}...", s.chars().take(137).collect::<String>())
    } else {
        s
    }
}

/// The counterexample as a Mermaid sequence diagram: the coordinator, the
/// host's I/O, and each task's netty / task / writer / async threads as
/// lanes; only the lanes that take part are declared. Each arrow is one
/// checker action, labelled with the steps (events delivered, numbered as in
/// `format_steps` and `replay`) it caused.
#[must_use]
pub fn to_mermaid(cfg: &ModelConfig, actions: &[Action], title: &str) -> String {
    let arrows = crate::explorer::arrows(cfg, actions);
    let mut body = String::new();
    let mut used: Vec<String> = Vec::new();
    let mut use_lane = |l: &str| {
        if !used.iter().any(|u| u == l) {
            used.push(l.to_string());
        }
    };
    for a in &arrows {
        use_lane(&a.from);
        use_lane(&a.to);
        body.push_str(&format!(
            "    {}->>{}: {}. {}\n",
            a.from,
            a.to,
            a.steps,
            mermaid_text(&a.text)
        ));
        for (lane, v) in &a.violations {
            use_lane(lane);
            body.push_str(&format!(
                "    Note over {lane}: VIOLATION {}\n",
                mermaid_text(v)
            ));
        }
    }
    let mut o = String::from("sequenceDiagram\n");
    o.push_str(&format!("    title {}\n", mermaid_text(title)));
    for (id, name) in crate::explorer::lanes(cfg) {
        if used.contains(&id) {
            o.push_str(&format!("    participant {id} as {name}\n"));
        }
    }
    o.push_str(&body);
    o
}

/// Every `always` property paired with its `sometimes`, for docs and output.
#[must_use]
pub fn pairs() -> &'static [(&'static str, &'static str)] {
    &props::PAIRS
}

/// Expected verdict: fixed holds, every legacy variant is caught.
#[must_use]
pub fn expected_holds(s: Semantics) -> bool {
    matches!(s, Semantics::Fixed)
}
