//! What stateright's Explorer (`ckpt-model explore`) shows: a compact view
//! of a world instead of its `Debug` dump, a description of each step (the
//! events it delivered to which machine, with their outcomes and effects),
//! a sequence diagram of the path so far (SVG), and the Explorer address of
//! a counterexample found by `check`.
//!
//! The Explorer shows, for a selected step, [`step_view`] (stateright's
//! `format_step`: the step, then the state it leads to); the initial state
//! has no step and shows the `Debug` dump, as does the "Complete State?"
//! box. Explorer addresses are paths of *action indices*
//! (`#/steps/<init>/<i1>/<i2>/...`, each the position of the action among
//! the actions the state before enables), so one printed by `check` opens
//! the same path in an Explorer started with the same flags.

use std::fmt::Write as _;

use ckpt_core::coordinator::{AckSlot, PendingPhase, Timer, TriggerKind};
use ckpt_core::route::ChannelItem;
use ckpt_core::task::{Lifecycle, ResultStatus};
use ckpt_core::trace::TraceLine;

use crate::render::plain::{plain, plain_debug};
use crate::render::replay::Replay;
use crate::world::{Action, Delivery, ModelConfig, Sim, World};

/// The Explorer's views of the model ([`step_view`], [`to_svg`], plain
/// action labels), handed to the model as its
/// [`Presenter`](crate::search::system::Presenter).
#[derive(Clone, Copy, Debug, Default)]
pub struct View;

impl crate::search::system::Presenter for View {
    fn action(&self, sim: &Sim, action: &Action) -> String {
        plain_debug(&sim.describe(action))
    }

    fn step(&self, sim: &Sim, last: &World, action: Action) -> Option<String> {
        step_view(sim, last, action)
    }

    fn path(&self, sim: &Sim, actions: &[Action]) -> Option<String> {
        Some(to_svg(&Replay::new(&sim.cfg, actions)))
    }
}

fn opt<T: std::fmt::Display>(x: Option<T>) -> String {
    x.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn list<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> String) -> String {
    let v: Vec<String> = items.into_iter().map(f).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

fn trigger_kind(k: &TriggerKind) -> &'static str {
    match k {
        TriggerKind::Periodic => "periodic",
        TriggerKind::Checkpoint { forced: true } => "forced checkpoint",
        TriggerKind::Checkpoint { forced: false } => "checkpoint",
        TriggerKind::Savepoint { .. } => "savepoint",
        TriggerKind::StopWithSavepoint { .. } => "stop-with-savepoint",
    }
}

fn timer(t: Timer) -> String {
    match t {
        Timer::Periodic => "periodic".into(),
        Timer::Timeout(c) => format!("timeout {c}"),
    }
}

fn phase(p: PendingPhase) -> &'static str {
    match p {
        PendingPhase::AwaitingHooks => "awaiting master hooks",
        PendingPhase::AwaitingAcks => "awaiting acks",
        PendingPhase::Finalizing => "finalizing",
        PendingPhase::Storing => "storing",
    }
}

fn item(i: &ChannelItem) -> String {
    match i {
        ChannelItem::Barrier(c) => format!("barrier {c}"),
        ChannelItem::CancelMarker(c) => format!("cancel {c}"),
    }
}

/// The world in a few lines: time and the coordinator (phase, pending
/// checkpoints with their ack slots, requests, retained checkpoints,
/// timers), then one block per task (attempt, lifecycle, ids, mailbox,
/// input channels, write results, async parts, aborted ids), the network,
/// the host's pending I/O, the store, the budgets used and the violation.
/// Empty parts are left out.
#[must_use]
pub fn state_view(cfg: &ModelConfig, w: &World) -> String {
    let mut o = String::new();
    let c = &w.coord;
    let run = if c.is_shutdown() {
        "shut down".to_string()
    } else if c.is_periodic_scheduling() {
        "running, periodic scheduling on".to_string()
    } else {
        "running, periodic scheduling off".to_string()
    };
    let _ = writeln!(
        o,
        "t={} coordinator: {run}; last id {}, latest completed {}{}",
        w.now,
        opt(c.last_id()),
        opt(c.latest_completed()),
        if c.job_failed() { "; JOB FAILED" } else { "" }
    );
    for p in c.pending() {
        let acks = list(p.acks().zip(c.config().tasks_to_wait()), |(a, t)| match a {
            AckSlot::Waiting => format!("t{t} waiting"),
            AckSlot::Acked(_) => format!("t{t} acked"),
        });
        let _ = writeln!(
            o,
            "  pending {} ({}): {}; {acks}",
            p.id(),
            trigger_kind(p.kind()),
            phase(p.phase())
        );
    }
    if c.in_flight().is_some() || c.queued().next().is_some() {
        let _ = writeln!(
            o,
            "  requests: in flight {}; queued {}",
            c.in_flight().map_or_else(
                || "-".into(),
                |r| format!("{} ({})", r.id().0, trigger_kind(r.kind()))
            ),
            list(c.queued(), |r| format!(
                "{} ({})",
                r.id().0,
                trigger_kind(r.kind())
            ))
        );
    }
    if c.completed().next().is_some() || c.in_doubt().is_some() {
        let _ = writeln!(
            o,
            "  retained: {}{}",
            list(c.completed(), |x| if x.is_savepoint() {
                format!("{} (savepoint)", x.id())
            } else {
                x.id().to_string()
            }),
            c.in_doubt()
                .map_or_else(String::new, |d| format!("; in doubt {}", d.id()))
        );
    }
    if c.timers().next().is_some() {
        let _ = writeln!(
            o,
            "  timers: {}",
            list(c.timers(), |(t, at)| format!("{} @ {at}", timer(*t)))
        );
    }
    for (i, t) in w.tasks.iter().enumerate() {
        let st = &t.st;
        let life = match st.lifecycle() {
            Lifecycle::Running => "running",
            Lifecycle::Finished => "input finished",
            Lifecycle::Failed => "FAILED",
            Lifecycle::Closed => "closed",
        };
        let _ = writeln!(
            o,
            "task {i} (attempt {}): {life}; started {}, executed {}, completed {}",
            t.attempt,
            opt(st.last_started()),
            opt(st.last_executed()),
            opt(st.last_completed())
        );
        if !t.mailbox.is_empty() {
            let _ = writeln!(o, "  mailbox: {}", list(&t.mailbox, ToString::to_string));
        }
        for ch in &t.inputs {
            if !ch.queue.is_empty() || ch.seen.is_some() {
                let _ = writeln!(
                    o,
                    "  input from task {}: [{}], last barrier seen {}",
                    ch.from,
                    ch.queue.iter().map(item).collect::<Vec<_>>().join(", "),
                    opt(ch.seen)
                );
            }
        }
        if !st.write_results().is_empty() {
            let _ = writeln!(
                o,
                "  write results: {}",
                list(st.write_results().iter(), |(id, r)| match r {
                    ResultStatus::InProgress => format!("{id} in progress"),
                    ResultStatus::Completed => format!("{id} completed"),
                    ResultStatus::Failed(why) => format!("{id} failed ({why:?})"),
                })
            );
        }
        if !st.async_parts().is_empty() {
            let _ = writeln!(
                o,
                "  async parts: {}",
                list(st.async_parts(), |c| c.to_string())
            );
        }
        if !st.aborted_ids().is_empty() {
            let _ = writeln!(
                o,
                "  aborted ids: {}",
                list(st.aborted_ids(), |c| c.to_string())
            );
        }
    }
    if !w.net.is_empty() {
        let _ = writeln!(
            o,
            "network ({}):",
            if w.ordered_net {
                "ordered per link"
            } else {
                "unordered"
            }
        );
        for m in &w.net {
            let _ = writeln!(o, "  {m}");
        }
    }
    if !w.io.is_empty() {
        let _ = writeln!(o, "host I/O: {}", list(&w.io, ToString::to_string));
    }
    let _ = writeln!(
        o,
        "store: id counter {}, metadata written {}{}",
        opt(w.durable.counter),
        list(&w.durable.metadata, |m| m.id.to_string()),
        w.durable
            .in_doubt
            .as_ref()
            .map_or_else(String::new, |d| format!(", in doubt {}", d.checkpoint))
    );
    let u = &w.used;
    let budgets = [
        ("periodic firings", u.triggers, cfg.checkpoints),
        ("faults", u.faults, cfg.faults),
        ("savepoints", u.savepoints, cfg.savepoints),
        ("user checkpoints", u.user_checkpoints, cfg.user_checkpoints),
        ("task failures", u.task_failures, cfg.task_failures),
        ("scheduler stops", u.scheduler_stops, cfg.scheduler_restarts),
        (
            "coordinator failovers",
            u.coordinator_failovers,
            cfg.coordinator_failovers,
        ),
        ("job failovers", u.job_failovers, cfg.job_failovers),
        ("ends of input", u.end_of_input, cfg.end_of_input),
        ("finished tasks", u.finished_tasks, cfg.finished_tasks),
    ];
    let _ = writeln!(
        o,
        "budgets used: {}",
        list(
            budgets.iter().filter(|(_, _, max)| *max > 0),
            |(n, used, max)| { format!("{n} {used}/{max}") }
        )
    );
    if let Some(v) = &w.violation {
        let _ = writeln!(o, "VIOLATION: {}", plain_debug(&v.to_string()));
    }
    o
}

fn delivery_lines(cfg: &ModelConfig, ds: &[Delivery], o: &mut String) {
    let n = cfg.tasks.max(1);
    for d in ds {
        let (who, event) = match &d.line {
            TraceLine::Coordinator { event, .. } => ("coordinator".to_string(), plain(event)),
            TraceLine::Task { task, event, .. } => (
                format!("task {} (attempt {})", task.0 % n, task.0 / n),
                plain(event),
            ),
            TraceLine::Header { .. } | TraceLine::End { .. } => continue,
        };
        let _ = writeln!(o, "  {who} <- {event}  => {}", plain_debug(&d.outcome));
        for e in &d.effects {
            let _ = writeln!(o, "      -> {}", plain_debug(e));
        }
        if let Some(v) = &d.violation {
            let _ = writeln!(o, "      VIOLATION: {}", plain_debug(&v.to_string()));
        }
    }
}

/// One step for the Explorer: what the action is, the events it delivered
/// (machine, event, outcome, effects), then the state it leads to
/// ([`state_view`]). `None` when the action is not enabled in `last`.
#[must_use]
pub fn step_view(sim: &Sim, last: &World, action: Action) -> Option<String> {
    let mut log = Vec::new();
    let next = sim.step(last, action, Some(&mut log))?;
    let mut o = format!("STEP: {}\n", plain_debug(&sim.describe(&action)));
    if log.is_empty() {
        o.push_str("  (no machine event: the network, a channel or a mailbox changed)\n");
    }
    delivery_lines(&sim.cfg, &log, &mut o);
    o.push_str("\nSTATE AFTER:\n");
    o.push_str(&state_view(&sim.cfg, &next));
    Some(o)
}

/// One arrow of a sequence diagram: one checker action, from the lane that
/// acts to the lane it reaches, with the steps (events delivered, numbered
/// from 1 as `check` and `replay` number them) it caused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    /// The lane that acts (`C`, `IO`, `T0`, `N0`, `W0`, `A0`, ...).
    pub from: String,
    /// The lane it reaches.
    pub to: String,
    /// The step numbers (`4`, `4-5`, or `-` when nothing was delivered).
    pub steps: String,
    /// What the action did, with the events it delivered (its label).
    pub text: String,
    /// Violations found, with the lane they show on.
    pub violations: Vec<(String, String)>,
}

/// The lanes of a diagram of `cfg`, in order: id and title.
#[must_use]
pub fn lanes(cfg: &ModelConfig) -> Vec<(String, String)> {
    let mut lanes: Vec<(String, String)> = vec![
        ("C".into(), "Coordinator".into()),
        ("IO".into(), "Host I/O".into()),
    ];
    for t in 0..cfg.tasks.max(1) {
        for (lane, name) in [
            ("N", "netty"),
            ("T", "task"),
            ("W", "writer"),
            ("A", "async"),
        ] {
            lanes.push((format!("{lane}{t}"), format!("T{t} {name}")));
        }
    }
    lanes
}

fn short(d: &Delivery) -> String {
    let ev = crate::render::text::event(&d.line);
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

/// The arrows of a replayed path (the setup's steps are not an arrow; they
/// are numbered first).
#[must_use]
pub fn arrows(r: &Replay) -> Vec<Arrow> {
    let cfg = &r.config;
    let mut next_step = r.setup.len() + 1;
    let mut out = Vec::new();
    for st in &r.actions {
        let deliveries: Vec<&Delivery> = st.steps.iter().map(|s| &s.delivery).collect();
        let count = deliveries.len();
        let steps_label = match count {
            0 => "-".to_string(),
            1 => format!("{next_step}"),
            _ => format!("{}-{}", next_step, next_step + count - 1),
        };
        next_step += count;
        let detail = deliveries
            .iter()
            .map(|d| short(d))
            .collect::<Vec<_>>()
            .join(" / ");
        let (from, to, text): (String, String, String) = match st.action {
            Action::Fire(t) => (
                "C".into(),
                "C".into(),
                format!("{} fires: {detail}", timer(t)),
            ),
            Action::Answer(io, ok) => (
                "IO".into(),
                "C".into(),
                format!("{io} {}: {detail}", if ok { "ok" } else { "FAILS" }),
            ),
            Action::Deliver(m) => {
                if m.to_coordinator() {
                    (
                        format!("T{}", m.task()),
                        "C".into(),
                        format!("{m}: {detail}"),
                    )
                } else {
                    (
                        "C".into(),
                        format!("T{}", m.task()),
                        format!("{m} (to the mailbox)"),
                    )
                }
            }
            Action::Duplicate(m) => ("C".into(), "C".into(), format!("network duplicates {m}")),
            Action::Drop(m) => ("C".into(), "C".into(), format!("network drops {m}")),
            Action::Netty(t, up) => (
                format!("T{up}"),
                format!("N{t}"),
                format!("barrier: {detail}"),
            ),
            Action::Input(t, up) => (
                format!("T{up}"),
                format!("T{t}"),
                format!("cancel marker: {detail}"),
            ),
            Action::Mailbox(t) => (format!("T{t}"), format!("T{t}"), format!("mail: {detail}")),
            Action::Writer(t, _, _) => (format!("W{t}"), format!("T{t}"), detail.clone()),
            Action::Async(t, _, _) | Action::AsyncReused(t, _) => {
                (format!("A{t}"), format!("T{t}"), detail.clone())
            }
            Action::ZombieAnswer(io) => (
                "IO".into(),
                "Z".into(),
                format!("{io} (deposed coordinator): {detail}"),
            ),
            Action::DisposeSavepoint(_) => {
                ("C".into(), "C".into(), format!("{}: {detail}", st.text))
            }
            Action::Shutdown => ("C".into(), "C".into(), format!("shutdown: {detail}")),
            Action::Savepoint => ("C".into(), "C".into(), format!("savepoint: {detail}")),
            Action::StopScheduler
            | Action::StartScheduler
            | Action::UserCheckpoint { .. }
            | Action::CoordinatorFailover { .. }
            | Action::StopWithSavepoint
            | Action::ResumeJob
            | Action::JobFailover => ("C".into(), "C".into(), format!("{}: {detail}", st.text)),
            Action::EndOfInput(t) => (
                format!("T{t}"),
                format!("T{t}"),
                format!("{}: {detail}", st.text),
            ),
            Action::FailTask(t) => (format!("T{t}"), "C".into(), format!("task fails: {detail}")),
            Action::FinishTask(t) => (
                format!("T{t}"),
                "C".into(),
                format!("task finishes: {detail}"),
            ),
            Action::RestartTask(t) => (
                format!("T{t}"),
                "C".into(),
                format!("task restarts: {detail}"),
            ),
        };
        let violations = deliveries
            .iter()
            .filter_map(|d| {
                let v = d.violation.as_ref()?;
                let lane = match &d.line {
                    TraceLine::Task { task, .. } => format!("T{}", task.0 % cfg.tasks.max(1)),
                    TraceLine::Coordinator { .. }
                    | TraceLine::Header { .. }
                    | TraceLine::End { .. } => "C".into(),
                };
                Some((lane, v.to_string()))
            })
            .collect();
        out.push(Arrow {
            from,
            to,
            steps: steps_label,
            text: plain_debug(&text),
            violations,
        });
    }
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!(
            "{}...",
            s.chars().take(n.saturating_sub(3)).collect::<String>()
        )
    } else {
        s.to_string()
    }
}

/// The path as an SVG sequence diagram: one lifeline per lane that takes
/// part, one arrow per action, its label (the step numbers it caused and
/// what it did) in a column right of the lifelines, violations in red.
#[must_use]
pub fn to_svg(r: &Replay) -> String {
    let cfg = &r.config;
    let arrows = arrows(r);
    let used: Vec<(String, String)> = lanes(cfg)
        .into_iter()
        .filter(|(id, _)| {
            arrows
                .iter()
                .any(|a| a.from == *id || a.to == *id || a.violations.iter().any(|(l, _)| l == id))
                || id == "C"
        })
        .collect();
    let col = 120usize;
    let row = 34usize;
    let top = 40usize;
    let x_of = |lane: &str| {
        used.iter()
            .position(|(id, _)| id == lane)
            .map_or(60, |i| 60 + i * col)
    };
    let rows: usize = arrows.iter().map(|a| 1 + a.violations.len()).sum();
    // Labels go in one column right of every lifeline.
    let text_x = 30 + used.len() * col;
    let width = text_x + 680;
    let height = top + 20 + rows.max(1) * row;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"monospace\" font-size=\"11\">\n"
    );
    for (id, name) in &used {
        let x = x_of(id);
        let _ = writeln!(
            o,
            "<text x=\"{x}\" y=\"20\" text-anchor=\"middle\" fill=\"#eee\" font-weight=\"bold\">{}</text>\
             <line x1=\"{x}\" y1=\"28\" x2=\"{x}\" y2=\"{height}\" stroke=\"#888\" stroke-dasharray=\"3,3\"/>",
            xml(name)
        );
    }
    let mut y = top;
    for a in &arrows {
        let (x1, x2) = (x_of(&a.from), x_of(&a.to));
        let label = if a.steps == "-" {
            xml(&clip(&a.text, 96))
        } else {
            xml(&clip(&format!("{}. {}", a.steps, a.text), 96))
        };
        if x1 == x2 {
            let _ = writeln!(
                o,
                "<path d=\"M{x1},{y} h24 v10 h-20\" fill=\"none\" stroke=\"#6cf\"/>\
                 <polygon points=\"{x1},{} {},{} {},{}\" fill=\"#6cf\"/>",
                y + 10,
                x1 + 6,
                y + 7,
                x1 + 6,
                y + 13
            );
        } else {
            let dir: i64 = if x2 > x1 { -1 } else { 1 };
            let tip = i64::try_from(x2).unwrap_or(0);
            let back = tip + dir * 7;
            let _ = writeln!(
                o,
                "<line x1=\"{x1}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#6cf\"/>\
                 <polygon points=\"{tip},{y} {back},{} {back},{}\" fill=\"#6cf\"/>",
                y - 4,
                y + 4
            );
        }
        let _ = writeln!(
            o,
            "<text x=\"{text_x}\" y=\"{}\" fill=\"#ddd\">{label}</text>",
            y + 4
        );
        y += row;
        for (lane, v) in &a.violations {
            let _ = writeln!(
                o,
                "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#f66\"/>\
                 <text x=\"{text_x}\" y=\"{y}\" fill=\"#f66\" font-weight=\"bold\">VIOLATION {}</text>",
                x_of(lane),
                y - 4,
                xml(&clip(&plain_debug(v), 96))
            );
            y += row;
        }
    }
    o.push_str("</svg>\n");
    o
}
