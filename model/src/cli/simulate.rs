//! `ckpt-model simulate`: seeded random walks judged by `check`'s
//! properties, for configurations too big to search.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ckpt_core::task::Semantics;
use ckpt_model::render::flags::{flags, plural};
use ckpt_model::render::json::{SimulateJson, ViolationJson, WalkJson, SCHEMA_VERSION};
use ckpt_model::render::replay::Replay;
use ckpt_model::render::text;
use ckpt_model::search::simulate::{simulate, SimulateOptions};
use ckpt_model::zoo::validate;

use crate::cli::args::SimulateArgs;
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;
use crate::cli::interrupt::interrupt_flag;
use crate::cli::output::Output;

/// Runs `simulate`.
pub fn run(args: &SimulateArgs) -> ExitStatus {
    let sem: Semantics = args.semantics;
    let cfg = args.model.config(sem);
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    let out = match args.trace_out.as_deref().map(Output::prepare).transpose() {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let interrupt = interrupt_flag();
    let opts = SimulateOptions {
        seed: args.seed,
        walks: args.walks,
        depth: args.depth as usize,
        time_limit: args.time_limit,
        keep_going: args.keep_going,
        interrupt: Some(Arc::clone(&interrupt)),
    };
    let r = simulate(&cfg, &opts, usize::from(args.model.threads));
    let first = r.violations.first();
    let replay = first.map(|v| Replay::new(&cfg, &v.counterexample.actions));
    let replay_flags = |seed: u64| {
        format!(
            "ckpt-model simulate {} --seed {seed} --walks 1 --depth {}",
            flags(&cfg),
            args.depth
        )
    };
    let mut wrote = None;
    if let Some(o) = out {
        let res = match &replay {
            Some(rp) => o.write(&rp.trace_bytes(), "counterexample trace"),
            None => Ok(o.discard("counterexample trace")),
        };
        match res {
            Ok(msg) => wrote = Some(msg),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitStatus::Usage;
            }
        }
    }
    let code = if interrupt.load(Ordering::SeqCst) {
        ExitStatus::Interrupted
    } else if first.is_some() {
        ExitStatus::Violated
    } else {
        ExitStatus::Ok
    };
    if args.json {
        let v = SimulateJson {
            schema_version: SCHEMA_VERSION,
            command: "simulate".into(),
            config: serde_json::to_value(&cfg).unwrap_or_default(),
            flags: flags(&cfg),
            seed: args.seed,
            depth: args.depth,
            walks: r.walks,
            walks_per_second: r.walks_per_second(),
            steps: r.steps,
            ended: r.ended,
            cut: r.cut,
            longest: r.longest,
            seconds: r.seconds,
            stopped: r.stopped,
            witnessed: r.witnessed.iter().map(|s| (*s).to_string()).collect(),
            not_witnessed: r.not_witnessed.iter().map(|s| (*s).to_string()).collect(),
            violations: r
                .violations
                .iter()
                .map(|v| WalkJson {
                    property: v.counterexample.property.into(),
                    walk: v.walk,
                    seed: v.seed,
                    replay: replay_flags(v.seed),
                    action_count: v.counterexample.actions.len(),
                    step_count: Replay::new(&cfg, &v.counterexample.actions).step_count(),
                    violation: v.counterexample.violation.as_ref().map(|x| ViolationJson {
                        invariant: x.invariant.to_string(),
                        detail: x.detail.clone(),
                    }),
                })
                .collect(),
            outputs: wrote.into_iter().collect(),
            exit_status: code.code(),
        };
        outln!("{}", serde_json::to_string(&v).unwrap_or_default());
        return code;
    }
    outln!(
        "ckpt-model simulate {} --seed {} --walks {} --depth {}",
        flags(&cfg),
        args.seed,
        args.walks,
        args.depth
    );
    let walks = usize::try_from(r.walks).unwrap_or(usize::MAX);
    outln!(
        "  {} ({} ended, {} cut at the depth bound), {} actions, longest {}; {:.2} s, {:.0} walks/s{}",
        plural(walks, "walk", "walks"),
        r.ended,
        r.cut,
        r.steps,
        r.longest,
        r.seconds,
        r.walks_per_second(),
        if r.stopped { " (stopped early)" } else { "" }
    );
    outln!(
        "  sometimes witnessed: {} of {}",
        r.witnessed.len(),
        r.witnessed.len() + r.not_witnessed.len()
    );
    for name in &r.not_witnessed {
        outln!("  [not witnessed       ] sometimes  {name}");
    }
    if let (Some(v), Some(rp)) = (first, &replay) {
        let cx = &v.counterexample;
        let n = rp.step_count();
        outln!(
            "\nproperty `{}` violated by walk {} (seed {}) at step {n}: {}, {}",
            cx.property,
            v.walk,
            v.seed,
            plural(cx.actions.len(), "action", "actions"),
            plural(n, "step", "steps")
        );
        outln!("  replay this walk alone: {}", replay_flags(v.seed));
        if let Some(x) = &cx.violation {
            outln!("  {x}");
        }
        out!("{}", text::steps(rp));
        if r.violations.len() > 1 {
            outln!("({} walks violated a property)", r.violations.len());
        }
    }
    if let Some(w) = &wrote {
        outln!("{w}");
    }
    match code {
        ExitStatus::Violated => outln!("verdict: violated"),
        ExitStatus::Interrupted => outln!("verdict: interrupted; no violation found so far"),
        _ => outln!(
            "verdict: no violation found in {} (random walks: not a proof)",
            plural(walks, "walk", "walks")
        ),
    }
    code
}
