//! `ckpt-model check`: one semantics (or a shard of it), or `--semantics
//! all`, the fixed semantics and every knob each where it is reachable.

use std::sync::Arc;
use std::time::Instant;

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::render::flags::{flags, plural};
use ckpt_model::render::json::{AllJson, CheckJson, ShardJson, VariantJson, SCHEMA_VERSION};
use ckpt_model::render::mermaid::to_mermaid;
use ckpt_model::render::replay::Replay;
use ckpt_model::render::text;
use ckpt_model::search::options::{CheckOptions, Engine};
use ckpt_model::search::report::{Completion, Question, Verdict};
use ckpt_model::search::run::run_check;
use ckpt_model::search::shard::{run_shard, ShardSpec};
use ckpt_model::world::{semantics_name, Reduction};
use ckpt_model::zoo::{make_reachable, validate, validate_offering_all};

use crate::cli::args::{default_progress_every, CheckArgs, EngineArg, SemanticsArg};
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;
use crate::cli::interrupt::interrupt_flag;
use crate::cli::output::Output;

/// Runs `check`.
pub fn run(args: &CheckArgs, started: Instant) -> ExitStatus {
    let m = &args.model;
    let interrupt = interrupt_flag();
    let opts = |stop| CheckOptions {
        threads: usize::from(m.threads),
        bfs: args.bfs,
        symmetry: !args.no_symmetry,
        progress: !args.quiet && !args.json,
        progress_every: args.progress_every.unwrap_or_else(default_progress_every),
        coverage: true,
        stop_at_failure: stop,
        time_limit: args.time_limit,
        max_depth: args.max_depth.map(|d| d as usize),
        interrupt: Some(Arc::clone(&interrupt)),
        max_states: args
            .max_states
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        memory_limit_mb: args.memory_limit_mb,
        roots: None,
        reduction: if args.no_reduction {
            Reduction::Off
        } else {
            Reduction::Ample
        },
        engine: match args.engine {
            EngineArg::Ckpt => Engine::Ckpt,
            EngineArg::Stateright => Engine::Stateright,
        },
    };
    let sem = match args.semantics {
        SemanticsArg::All => {
            if args.trace_out.is_some() || args.diagram.is_some() {
                return usage_error(
                    "--trace-out and --diagram need one semantics (fixed or a knob), not \
                     --semantics all",
                );
            }
            if args.shard.is_some() {
                return usage_error("--shard needs one semantics, not --semantics all");
            }
            return all(args, &opts(false), started);
        }
        SemanticsArg::One(s) => s,
    };
    let cfg = m.config(sem);
    // `--semantics all` is offered only to a command line that would take it.
    let all_accepted = args.trace_out.is_none() && args.diagram.is_none() && args.shard.is_none();
    let valid = if all_accepted {
        validate_offering_all(&cfg)
    } else {
        validate(&cfg)
    };
    if let Err(e) = valid {
        return usage_error(&e);
    }
    let mut outputs = Vec::new();
    for (p, label) in [(&args.trace_out, "trace"), (&args.diagram, "diagram")] {
        if let Some(p) = p {
            match Output::prepare(p) {
                Ok(o) => outputs.push((o, label)),
                Err(e) => return usage_error(&e),
            }
        }
    }
    let stop = Question::of(sem) == Question::BugIsFound;
    let (report, shard) = match args.shard {
        Some((index, count)) => {
            let spec = ShardSpec {
                index,
                count,
                split_depth: usize::from(args.split_depth),
            };
            let (r, info) = run_shard(&cfg, &opts(stop), spec);
            (r, Some(info))
        }
        None => (run_check(&cfg, &opts(stop)), None),
    };
    // The one replay of the counterexample every output reads.
    let replay = report
        .counterexample
        .as_ref()
        .map(|cx| Replay::new(&cfg, &cx.actions));
    let mut done = Vec::new();
    let mut write_failed = false;
    for (o, label) in outputs {
        let r = match (&report.counterexample, &replay, label) {
            (Some(_), Some(r), "trace") => o.write(&r.trace_bytes(), "counterexample trace"),
            (Some(cx), Some(r), _) => {
                let title = format!("{} violated ({})", cx.property, semantics_name(sem));
                o.write(to_mermaid(r, &title).as_bytes(), "counterexample diagram")
            }
            _ => Ok(o.discard(&format!("counterexample {label}"))),
        };
        match r {
            Ok(msg) => done.push(msg),
            Err(e) => {
                eprintln!("error: {e}");
                write_failed = true;
            }
        }
    }
    let mut code = ExitStatus::of_check(&report);
    if write_failed && code == ExitStatus::Ok {
        code = ExitStatus::Usage;
    }
    let steps = replay.as_ref().map(text::steps);
    if args.json {
        let mut v = CheckJson::new(&report, replay.as_ref(), shard.is_some());
        v.wall_seconds = started.elapsed().as_secs_f64();
        v.outputs = done;
        v.exit_status = code.code();
        v.shard = shard.as_ref().map(|i| ShardJson::new(i, steps));
        outln!("{}", serde_json::to_string(&v).unwrap_or_default());
        return code;
    }
    out!("{}", text::report(&report, shard.is_some()));
    if let Some(i) = &shard {
        outln!(
            "  shard {}/{} at split depth {}: owns {} of {} frontier states ({} unique states \
             above the frontier, searched by every shard)",
            i.spec.index,
            i.spec.count,
            i.spec.split_depth,
            i.owned,
            i.frontier,
            i.prefix_unique
        );
    }
    if let (Some(cx), Some(r)) = (&report.counterexample, &replay) {
        let v = cx.violation.as_ref().map(ToString::to_string);
        out!("{}", text::counterexample(cx.property, r, v.as_deref()));
    }
    for d in &done {
        outln!("{d}");
    }
    outln!(
        "verdict: {}",
        text::verdict(report.verdict, &report.verdict_note)
    );
    code
}

/// `check --semantics all`: fixed, then every knob, each in the smallest
/// world that reaches it when the given one does not; one row per variant.
fn all(args: &CheckArgs, opts: &CheckOptions, started: Instant) -> ExitStatus {
    let m = &args.model;
    let base = m.config(Semantics::Fixed);
    if let Err(e) = validate(&base) {
        return usage_error(&e);
    }
    let variants = std::iter::once(Semantics::Fixed)
        .chain(LegacyBug::ALL.iter().map(|b| Semantics::Legacy(*b)));
    let mut rows = Vec::new();
    let mut code = ExitStatus::Ok;
    for sem in variants {
        let (cfg, note) = make_reachable(&m.config(sem));
        let question = Question::of(sem);
        let mut o = opts.clone();
        o.stop_at_failure = question == Question::BugIsFound;
        // A legacy bug is searched breadth-first: it sits near the root, and
        // a depth-first search may wander a large space before reaching it.
        o.bfs = o.bfs || question == Question::BugIsFound;
        let r = run_check(&cfg, &o);
        let expected = match question {
            Question::EveryPropertyHolds => Verdict::Holds,
            Question::BugIsFound => Verdict::Violated,
        };
        let row = match (r.completion, r.verdict) {
            (Completion::Interrupted, _) => ExitStatus::Interrupted,
            (_, v) if v == expected => ExitStatus::Ok,
            (Completion::StateLimit | Completion::MemoryLimit, _) => ExitStatus::Limit,
            // A knob searched through the whole space where it is
            // reachable and not caught, or fixed violated: CI's "every
            // legacy variant must be caught".
            (Completion::Complete, _) | (_, Verdict::Violated) => ExitStatus::Violated,
            (_, Verdict::Holds | Verdict::Inconclusive) => ExitStatus::Inconclusive,
        };
        code = code.worse(row);
        let interrupted = r.completion == Completion::Interrupted;
        rows.push((sem, r, note, expected, row));
        if interrupted {
            break;
        }
    }
    if args.json {
        let variants = rows
            .iter()
            .map(|(sem, r, note, expected, row)| {
                let replay = r
                    .counterexample
                    .as_ref()
                    .map(|c| Replay::new(&r.config, &c.actions));
                let mut report = CheckJson::new(r, replay.as_ref(), false);
                report.wall_seconds = started.elapsed().as_secs_f64();
                report.exit_status = ExitStatus::of_check(r).code();
                VariantJson {
                    semantics: semantics_name(*sem).into(),
                    changed_to: note.clone(),
                    verdict: r.verdict,
                    expected: *expected,
                    as_expected: *row == ExitStatus::Ok,
                    report,
                }
            })
            .collect();
        let v = AllJson {
            schema_version: SCHEMA_VERSION,
            command: "check".into(),
            semantics: "all".into(),
            variants,
            wall_seconds: started.elapsed().as_secs_f64(),
            exit_status: code.code(),
        };
        outln!("{}", serde_json::to_string(&v).unwrap_or_default());
        return code;
    }
    outln!(
        "ckpt-model check {} --semantics all",
        flags(&base).replacen("--semantics fixed ", "", 1)
    );
    outln!(
        "{:<30} {:>10} {:>10} {:>6} {:>8}  {:<34} {:<9} changed to",
        "semantics",
        "states",
        "unique",
        "depth",
        "seconds",
        "verdict",
        "expected"
    );
    for (sem, r, note, expected, row) in &rows {
        let v = match &r.counterexample {
            Some(c) => format!(
                "violated ({}, {})",
                plural(c.actions.len(), "action", "actions"),
                plural(
                    Replay::new(&r.config, &c.actions).step_count(),
                    "step",
                    "steps"
                )
            ),
            None if r.verdict == Verdict::Inconclusive && r.completion == Completion::Complete => {
                "not found (no verdict)".into()
            }
            None => r.verdict.as_str().into(),
        };
        outln!(
            "{:<30} {:>10} {:>10} {:>6} {:>8.2}  {:<34} {:<9} {}{}",
            semantics_name(*sem),
            r.states,
            r.unique,
            r.depth,
            r.seconds,
            v,
            expected.as_str(),
            note.as_deref().unwrap_or("-"),
            match row {
                ExitStatus::Ok => "",
                ExitStatus::Inconclusive => "  <-- INCONCLUSIVE",
                ExitStatus::Interrupted => "  <-- INTERRUPTED",
                ExitStatus::Limit => "  <-- RESOURCE LIMIT",
                ExitStatus::Violated | ExitStatus::Usage | ExitStatus::OutputFailed =>
                    "  <-- UNEXPECTED",
            }
        );
    }
    outln!(
        "{}",
        match code {
            ExitStatus::Ok => "verdict: as expected (fixed holds, every legacy variant is caught)",
            ExitStatus::Inconclusive => "verdict: inconclusive (a bound cut a search short)",
            ExitStatus::Interrupted => "verdict: interrupted (inconclusive)",
            ExitStatus::Limit => "verdict: a resource limit stopped a search (inconclusive)",
            ExitStatus::Violated | ExitStatus::Usage | ExitStatus::OutputFailed =>
                "verdict: UNEXPECTED",
        }
    );
    code
}
