//! Running the checker: options, the report, the shortest counterexample,
//! and rendering it (numbered steps, a JSON-lines trace, a Mermaid diagram).

use std::io::Write;
use std::time::{Duration, Instant};

use ckpt_core::invariants::Violation;
use ckpt_core::task::Semantics;
use ckpt_core::trace::{write_trace, Trace, TraceLine};
use ckpt_core::TaskId;
use serde::Serialize;
use stateright::{Checker, HasDiscoveries, Model, Path};

use crate::system::{props, Action, Coverage, Delivery, ModelConfig, SysModel, SysState};

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
    /// Print a live progress line on stderr.
    pub progress: bool,
    /// Collect transition coverage.
    pub coverage: bool,
    /// Stop when the first property fails (legacy runs).
    pub stop_at_failure: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            threads: 1,
            bfs: false,
            symmetry: true,
            progress: false,
            coverage: false,
            stop_at_failure: false,
        }
    }
}

/// What one property came to.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyResult {
    /// Name.
    pub name: &'static str,
    /// `always`, `sometimes` or `eventually`.
    pub kind: &'static str,
    /// `holds`, `violated`, `witnessed`, `not witnessed`.
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
    /// Longest path explored.
    pub depth: usize,
    /// Wall time.
    pub seconds: f64,
    /// Every property.
    pub properties: Vec<PropertyResult>,
    /// The (shortest, when a safety property failed) counterexample.
    pub counterexample: Option<Counterexample>,
    /// Transition coverage, if collected.
    pub coverage: Option<Coverage>,
}

impl CheckReport {
    /// Whether every `always` and `eventually` property holds.
    #[must_use]
    pub fn holds(&self) -> bool {
        self.properties.iter().all(|p| p.status != "violated")
    }
}

fn progress_loop<M: Model, C: Checker<M>>(checker: &C, start: Instant, on: bool) {
    if !on {
        return;
    }
    let mut last = (Instant::now(), 0usize);
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(250));
        if last.0.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let unique = checker.unique_state_count();
        let rate = (unique.saturating_sub(last.1)) as f64 / last.0.elapsed().as_secs_f64();
        last = (Instant::now(), unique);
        eprint!(
            "\r  {:>6.1}s  states {:>11}  unique {:>10}  {:>9.0} unique/s  depth {:>3}   ",
            start.elapsed().as_secs_f64(),
            checker.state_count(),
            unique,
            rate,
            checker.max_depth()
        );
        let _ = std::io::stderr().flush();
    }
    if start.elapsed() >= Duration::from_secs(1) {
        eprintln!();
    }
}

/// Waits for a spawned checker (with the progress line when `on`) and takes
/// its counts: states, unique states, depth, discoveries. BFS and DFS
/// checkers are different types, hence the generic over the checker.
fn finish<C: Checker<SysModel>>(
    checker: C,
    start: Instant,
    on: bool,
) -> (
    usize,
    usize,
    usize,
    std::collections::HashMap<&'static str, Path<SysState, Action>>,
) {
    progress_loop(&checker, start, on);
    let c = checker.join();
    (
        c.state_count(),
        c.unique_state_count(),
        c.max_depth(),
        c.discoveries(),
    )
}

/// Runs the checker over `cfg`.
#[must_use]
pub fn run_check(cfg: &ModelConfig, opts: &CheckOptions) -> CheckReport {
    let mut model = SysModel::new(cfg.clone());
    if opts.coverage {
        model = model.with_coverage();
    }
    let coverage = model.coverage.clone();
    let properties = model.properties();
    let start = Instant::now();
    let mut builder = model.clone().checker().threads(opts.threads.max(1));
    if opts.stop_at_failure {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    let (states, unique, depth, discoveries) = if opts.bfs {
        finish(builder.spawn_bfs(), start, opts.progress)
    } else {
        if opts.symmetry {
            builder = builder.symmetry();
        }
        finish(builder.spawn_dfs(), start, opts.progress)
    };
    let seconds = start.elapsed().as_secs_f64();
    let mut results = Vec::new();
    let mut failed: Option<(&'static str, Path<SysState, Action>)> = None;
    for p in &properties {
        let found = discoveries.get(p.name);
        let (kind, status) = match p.expectation {
            stateright::Expectation::Always => {
                ("always", if found.is_some() { "violated" } else { "holds" })
            }
            stateright::Expectation::Eventually => (
                "eventually",
                if found.is_some() { "violated" } else { "holds" },
            ),
            stateright::Expectation::Sometimes => (
                "sometimes",
                if found.is_some() {
                    "witnessed"
                } else {
                    "not witnessed"
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
        let actions: Vec<Action> = path.into_actions();
        if last.is_some() {
            // A safety violation: find the shortest path with BFS.
            shortest_violation(cfg, opts.threads).unwrap_or(Counterexample {
                property: name,
                actions,
                violation: last,
            })
        } else {
            Counterexample {
                property: name,
                actions,
                violation: None,
            }
        }
    });
    let coverage = coverage.and_then(|c| c.lock().ok().map(|m| m.clone()));
    CheckReport {
        config: cfg.clone(),
        states,
        unique,
        depth,
        seconds,
        properties: results,
        counterexample,
        coverage,
    }
}

fn bfs_safety(
    cfg: &ModelConfig,
    threads: usize,
    max_depth: Option<usize>,
) -> Option<Counterexample> {
    let mut model = SysModel::new(cfg.clone());
    model.safety_only = true;
    let names: Vec<&'static str> = model.properties().iter().map(|p| p.name).collect();
    let mut b = model
        .checker()
        .threads(threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures);
    if let Some(d) = max_depth {
        b = b.target_max_depth(d);
    }
    let c = b.spawn_bfs().join();
    let d = c.discoveries();
    let mut best: Option<Counterexample> = None;
    for name in names {
        if let Some(path) = d.get(name) {
            let violation = path.last_state().violation.clone();
            let actions = path.clone().into_actions();
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
    let mut best = bfs_safety(cfg, threads, None)?;
    loop {
        // Depth counts states (the initial one is depth 1): checking every
        // state of depth <= k looks at every path of at most k - 1 actions.
        let k = best.actions.len();
        if k == 0 {
            return Some(best);
        }
        match bfs_safety(cfg, threads, Some(k + 1)) {
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

/// The counterexample as numbered human-readable steps.
#[must_use]
pub fn format_steps(cfg: &ModelConfig, actions: &[Action]) -> String {
    let (init, steps) = render(cfg, actions);
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line("   0. init: coordinator <- StartScheduler".into());
    for d in &init {
        line(format!("        effects: {}", d.effects.join(", ")));
    }
    for (i, st) in steps.iter().enumerate() {
        line(format!("  {:>2}. {}", i + 1, st.text));
        for d in &st.deliveries {
            let (who, ev) = match &d.line {
                TraceLine::Coordinator { event, .. } => {
                    ("coordinator".to_string(), format!("{event:?}"))
                }
                TraceLine::Task { task, event, .. } => {
                    let n = cfg.tasks.max(1);
                    let who = if task.0 < n {
                        format!("task {task}")
                    } else {
                        format!("task {} (attempt {})", task.0 % n, task.0 / n)
                    };
                    (who, format!("{event:?}"))
                }
                TraceLine::Header { .. } => (String::new(), String::new()),
            };
            line(format!("        {who} <- {ev}  => {}", d.outcome));
            if !d.effects.is_empty() {
                line(format!("        effects: {}", d.effects.join(", ")));
            }
            if let Some(v) = &d.violation {
                line(format!("        VIOLATION: {v}"));
            }
        }
        if st.deliveries.is_empty() {
            line("        (no machine event: the network / mailbox changed)".into());
        }
    }
    out
}

/// The counterexample as a core trace (replayable by
/// `ckpt_core::trace::replay`). A restarted task attempt gets its own task
/// machine (id `task + attempt * tasks`, see [`SysModel::trace_task`]),
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
    let s: String = s
        .chars()
        .map(|c| match c {
            ';' | '#' | '\n' => ',',
            '{' | '}' => ' ',
            _ => c,
        })
        .collect();
    let s = s.replace("CheckpointId", "").replace("checkpoint: ", "cp ");
    if s.len() > 140 {
        format!("{}...", s.chars().take(137).collect::<String>())
    } else {
        s
    }
}

fn short(d: &Delivery) -> String {
    let ev = match &d.line {
        TraceLine::Coordinator { event, .. } => format!("{event:?}"),
        TraceLine::Task { event, .. } => format!("{event:?}"),
        TraceLine::Header { .. } => String::new(),
    };
    let fx: Vec<String> = d
        .effects
        .iter()
        .map(|e| e.split([' ', '{']).next().unwrap_or("").to_string())
        .collect();
    if fx.is_empty() {
        format!("{ev} => {}", d.outcome)
    } else {
        format!("{ev} => {}", fx.join(", "))
    }
}

/// The counterexample as a Mermaid sequence diagram: the coordinator, the
/// host's I/O, the network, and each task's netty / task / writer / async
/// threads as lanes.
#[must_use]
pub fn to_mermaid(cfg: &ModelConfig, actions: &[Action], title: &str) -> String {
    let (_, steps) = render(cfg, actions);
    let mut o = String::from("sequenceDiagram\n");
    o.push_str(&format!("    title {}\n", mermaid_text(title)));
    o.push_str("    participant C as Coordinator\n    participant IO as Host I/O\n");
    for t in 0..cfg.tasks.max(1) {
        for (lane, name) in [
            ("N", "netty"),
            ("T", "task"),
            ("W", "writer"),
            ("A", "async"),
        ] {
            o.push_str(&format!("    participant {lane}{t} as T{t} {name}\n"));
        }
    }
    for (i, st) in steps.iter().enumerate() {
        let n = i + 1;
        let detail = st
            .deliveries
            .iter()
            .map(short)
            .collect::<Vec<_>>()
            .join(" / ");
        let arrow = |from: String, to: String, text: String| {
            format!("    {from}->>{to}: {n}. {}\n", mermaid_text(&text))
        };
        let line = match st.action {
            Action::Fire(t) => arrow(
                "C".into(),
                "C".into(),
                format!("timer {t:?} fires: {detail}"),
            ),
            Action::Answer(io, ok) => arrow(
                "IO".into(),
                "C".into(),
                format!("{io:?} {}: {detail}", if ok { "ok" } else { "FAILS" }),
            ),
            Action::Deliver(m) => {
                if m.to_coordinator() {
                    arrow(
                        format!("T{}", m.task()),
                        "C".into(),
                        format!("{m:?}: {detail}"),
                    )
                } else {
                    arrow(
                        "C".into(),
                        format!("T{}", m.task()),
                        format!("{m:?} enqueued in mailbox"),
                    )
                }
            }
            Action::Duplicate(m) => format!(
                "    Note over C: {n}. network duplicates {}\n",
                mermaid_text(&format!("{m:?}"))
            ),
            Action::Drop(m) => format!(
                "    Note over C: {n}. network drops {}\n",
                mermaid_text(&format!("{m:?}"))
            ),
            Action::Netty(t, up) => arrow(
                format!("T{up}"),
                format!("N{t}"),
                format!("barrier: {detail}"),
            ),
            Action::Input(t, up) => arrow(
                format!("T{up}"),
                format!("T{t}"),
                format!("cancel marker: {detail}"),
            ),
            Action::Mailbox(t) => {
                arrow(format!("T{t}"), format!("T{t}"), format!("mail: {detail}"))
            }
            Action::Writer(t, _, _) => arrow(format!("W{t}"), format!("T{t}"), detail.clone()),
            Action::Async(t, _, _) => arrow(format!("A{t}"), format!("T{t}"), detail.clone()),
            Action::Shutdown => arrow("C".into(), "C".into(), format!("shutdown: {detail}")),
            Action::Savepoint => arrow("C".into(), "C".into(), format!("savepoint: {detail}")),
            Action::StopScheduler
            | Action::StartScheduler
            | Action::UserCheckpoint { .. }
            | Action::CoordinatorFailover { .. }
            | Action::JobFailover => {
                arrow("C".into(), "C".into(), format!("{}: {detail}", st.text))
            }
            Action::FailTask(t) => {
                arrow(format!("T{t}"), "C".into(), format!("task fails: {detail}"))
            }
            Action::RestartTask(t) => arrow(
                format!("T{t}"),
                "C".into(),
                format!("task restarts: {detail}"),
            ),
        };
        o.push_str(&line);
        for d in &st.deliveries {
            if let Some(v) = &d.violation {
                let lane = match &d.line {
                    TraceLine::Task { task, .. } => format!("T{task}"),
                    TraceLine::Coordinator { .. } | TraceLine::Header { .. } => "C".into(),
                };
                o.push_str(&format!(
                    "    Note over {lane}: VIOLATION {}\n",
                    mermaid_text(&v.to_string())
                ));
            }
        }
    }
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
