//! The report for people: the counts, every property, the coverage, the
//! counterexample as numbered steps, and the verdict line.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use ckpt_core::trace::TraceLine;

use crate::render::flags::{flags, plural};
use crate::render::plain::{plain, plain_debug};
use crate::render::replay::{Replay, Step};
use crate::search::report::{CheckReport, Verdict};
use crate::search::system::props;
use crate::world::coverage::{COORD_EVENT_KINDS, TASK_EVENT_KINDS};
use crate::world::ModelConfig;

/// The machine a trace line is delivered to: `coordinator`, `task N`, or
/// `task N (attempt A)` for a restarted attempt.
#[must_use]
pub fn machine(cfg: &ModelConfig, line: &TraceLine) -> String {
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
        TraceLine::Header { .. } | TraceLine::End { .. } => String::new(),
    }
}

/// The event of a trace line, plainly.
#[must_use]
pub fn event(line: &TraceLine) -> String {
    match line {
        TraceLine::Coordinator { event, .. } => plain(event),
        TraceLine::Task { event, .. } => plain(event),
        TraceLine::Header { .. } | TraceLine::End { .. } => String::new(),
    }
}

fn step_lines(cfg: &ModelConfig, s: &Step, out: &mut String) {
    let d = &s.delivery;
    let _ = writeln!(
        out,
        "    {:>3}  {} <- {}  => {}",
        s.number,
        machine(cfg, &d.line),
        event(&d.line),
        plain_debug(&d.outcome)
    );
    if !d.effects.is_empty() {
        let fx: Vec<String> = d.effects.iter().map(|e| plain_debug(e)).collect();
        let _ = writeln!(out, "         effects: {}", fx.join(", "));
    }
    if let Some(v) = &d.violation {
        let _ = writeln!(out, "         VIOLATION: {v}");
    }
}

/// The counterexample as numbered steps under one heading per checker
/// action (some actions deliver nothing): the numbers `ckpt-model replay`
/// prints for the `--trace-out` trace.
#[must_use]
pub fn steps(r: &Replay) -> String {
    let mut out = String::from("  setup: the coordinator's scheduler starts\n");
    for s in &r.setup {
        step_lines(&r.config, s, &mut out);
    }
    for (i, a) in r.actions.iter().enumerate() {
        let _ = writeln!(out, "  action {}: {}", i + 1, plain_debug(&a.text));
        for s in &a.steps {
            step_lines(&r.config, s, &mut out);
        }
        if a.steps.is_empty() {
            out.push_str("         (no machine event: the network / mailbox changed)\n");
        }
    }
    out
}

/// The verdict line's text: the word, and the note when there is one.
#[must_use]
pub fn verdict(v: Verdict, note: &str) -> String {
    if note.is_empty() {
        v.as_str().to_string()
    } else {
        format!("{}: {note}", v.as_str())
    }
}

/// Why a never-delivered event kind is expected to be missing.
fn gap_reason(kind: &str) -> &'static str {
    match kind {
        "StopScheduler" => " (needs --scheduler-restarts)",
        "TaskFailed" | "TaskRunning" | "OperatorFailed" => " (needs --task-failures)",
        "Trigger" => " (needs --savepoints or --user-checkpoints)",
        "MasterHooksDone" => " (needs --master-hooks)",
        "Recover" => " (needs --coordinator-failovers)",
        "Restore" => " (needs a failover or --savepoint-restore)",
        "EndOfInput" => " (needs --end-of-input or --finished-tasks)",
        "TaskFinished" => " (needs --finished-tasks)",
        "DisposeSavepoint" => " (needs --dispose-savepoints and --savepoints)",
        "AsyncPartReused" => " (needs --shared-state)",
        "Close" => " (needs --coordinator-failovers or --job-failovers)",
        "CheckpointIdAllocated(err)" | "FinalizeDone(err)" | "StoreDone(err)" => {
            " (needs --faults and I/O faults)"
        }
        "WriterFailed" | "AsyncPartFailed" => " (needs --faults and task faults)",
        "Shutdown" => " (--no-shutdown)",
        _ => "",
    }
}

/// Why a report's coverage is of part of the space only (then it cannot
/// say what was never delivered), or `None` for a complete search.
#[must_use]
pub fn coverage_partial(r: &CheckReport, sharded: bool) -> Option<&'static str> {
    if sharded {
        return Some("a shard searches part of the space below its frontier");
    }
    r.completion.cut_reason().map(|_| match r.completion {
        crate::search::report::Completion::StoppedAtViolation => {
            "the search stopped at its first violation"
        }
        crate::search::report::Completion::TimeLimit => "the time limit cut the search",
        crate::search::report::Completion::MaxDepth => "--max-depth cut the search",
        crate::search::report::Completion::Interrupted => "the search was interrupted",
        _ => "a resource limit stopped the search",
    })
}

/// The opt-in witnesses left out of this model, with the flag that adds
/// them.
#[must_use]
pub fn not_checked(r: &CheckReport) -> Vec<(&'static str, &'static str)> {
    props::OPT_IN_PAIRS
        .iter()
        .filter(|(_, name, _)| !r.properties.iter().any(|p| p.name == *name))
        .map(|(_, name, flag)| (*name, *flag))
        .collect()
}

/// The report's body: the banner, the counts, every property, and the
/// coverage (partial for a shard or a search cut short).
#[must_use]
pub fn report(r: &CheckReport, sharded: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "ckpt-model check {}", flags(&r.config));
    let _ = writeln!(
        o,
        "  {} states, {} unique{}, depth {}; search {:.2} s, total {:.2} s",
        r.states,
        r.unique,
        if r.reduction {
            " (partial-order reduction)"
        } else {
            ""
        },
        r.depth,
        r.seconds,
        r.total_seconds
    );
    if let Some(mb) = r.peak_memory_mb {
        let _ = writeln!(o, "  peak memory {mb:.1} MiB (VmHWM)");
    }
    for p in &r.properties {
        let _ = writeln!(
            o,
            "  [{:<20}] {:<10} {}",
            p.status.as_str(),
            p.kind.as_str(),
            p.name
        );
    }
    for (name, flag) in not_checked(r) {
        let _ = writeln!(
            o,
            "  [{:<20}] {:<10} {name} (needs {flag})",
            "not checked", "sometimes"
        );
    }
    if let Some(cov) = &r.coverage {
        let pairs = |m: &str| {
            cov.keys()
                .filter(|(x, ..)| *x == m)
                .map(|(_, _, e, o)| (e, o))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let rows = |m: &str| cov.keys().filter(|(x, ..)| *x == m).count();
        let _ = writeln!(
            o,
            "  coverage: {} coordinator (event, outcome) pairs, {} task pairs; \
             {} / {} (phase, event, outcome) rows",
            pairs("coordinator"),
            pairs("task"),
            rows("coordinator"),
            rows("task")
        );
        let gaps = |machine: &str, kinds: &[&'static str]| -> Vec<String> {
            kinds
                .iter()
                .filter(|k| !cov.keys().any(|(m, _, x, _)| *m == machine && x == *k))
                .map(|k| format!("{k}{}", gap_reason(k)))
                .collect()
        };
        let c = gaps("coordinator", &COORD_EVENT_KINDS);
        let t = gaps("task", &TASK_EVENT_KINDS);
        if let Some(why) = coverage_partial(r, sharded) {
            let _ = writeln!(
                o,
                "  coverage is partial ({why}): what was never delivered is not known"
            );
        } else if c.is_empty() && t.is_empty() {
            o.push_str("  every event kind was delivered\n");
        } else {
            o.push_str("  never delivered:\n");
            for (machine, g) in [("coordinator", c), ("task", t)] {
                if !g.is_empty() {
                    let _ = writeln!(o, "    {machine}: {}", g.join(", "));
                }
            }
        }
    }
    o
}

/// The counterexample section: the property, its length in actions and
/// steps, the violation, the numbered steps and the Explorer address.
#[must_use]
pub fn counterexample(property: &str, r: &Replay, violation: Option<&str>) -> String {
    let n = r.step_count();
    let mut o = format!(
        "\nproperty `{property}` violated at step {n}; shortest counterexample: {}, {}\n",
        plural(r.actions.len(), "action", "actions"),
        plural(n, "step", "steps")
    );
    o.push_str(
        "(a step is one event delivered to one machine, numbered from 1 as `ckpt-model replay` \
         numbers the --trace-out trace)\n",
    );
    if let Some(v) = violation {
        let _ = writeln!(o, "  {v}");
    }
    o.push_str(&steps(r));
    if let Some(frag) = r.explorer_fragment() {
        let _ = writeln!(
            o,
            "open it in the Explorer: run `ckpt-model explore {}`, then open \
             http://127.0.0.1:3000/{frag}",
            flags(&r.config)
        );
    }
    o
}
