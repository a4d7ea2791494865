//! `ckpt-model replay FILE`: a JSON-lines trace through the real reducers,
//! every invariant checked at every step, streamed (memory bounded by the
//! machines' live state, whatever the trace's length).

use std::io::{BufWriter, StdoutLock, Write};
use std::sync::atomic::Ordering;
use std::time::Instant;

use ckpt_core::trace::{Expected, Replayer, TraceReader};
use ckpt_model::render::flags::plural;
use ckpt_model::render::plain::plain_debug;
use ckpt_model::search::progress::Progress;
use ckpt_model::world::semantics_name;

use crate::cli::args::{default_progress_every, ReplayArgs};
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;
use crate::cli::interrupt::interrupt_flag;
use crate::cli::output::stdout_failed;

/// Stdout, buffered (a long trace prints a line per step); a write or a
/// flush that fails ends the run at once with
/// [`ExitStatus::OutputFailed`], as `outln!` does for the other commands.
struct Out(BufWriter<StdoutLock<'static>>);

impl Out {
    fn new() -> Out {
        Out(BufWriter::with_capacity(1 << 16, std::io::stdout().lock()))
    }

    /// What `write!` and `writeln!` call: writes `args`, and never returns
    /// an error (a failed write ends the process).
    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) {
        if let Err(e) = self.0.write_fmt(args) {
            stdout_failed(&e);
        }
    }

    /// Flushes what is buffered.
    fn flush(&mut self) {
        if let Err(e) = self.0.flush() {
            stdout_failed(&e);
        }
    }
}

/// Runs `replay`.
pub fn run(args: &ReplayArgs) -> ExitStatus {
    let file = &args.file;
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) => return usage_error(&format!("cannot open {}: {e}", file.display())),
    };
    let mut reader = match TraceReader::new(std::io::BufReader::with_capacity(1 << 16, f)) {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("{}: {e}", file.display())),
    };
    if let Some(sem) = args.semantics {
        let header = reader.header();
        let was: Vec<&str> = header
            .coordinator
            .iter()
            .map(|c| c.semantics)
            .chain(header.tasks.iter().map(|(_, c)| c.semantics))
            .map(semantics_name)
            .collect();
        let machines = if header.coordinator.is_some() {
            "the coordinator and every task replay"
        } else {
            "every task replays"
        };
        reader.header_mut().set_semantics(sem);
        outln!(
            "semantics overridden: {machines} as `{}` (the header says {})",
            semantics_name(sem),
            summarize(&was)
        );
    }
    if reader.version() < 2 {
        eprintln!(
            "warning: {} is a version-{} trace, written before traces ended with an end line: \
             a copy cut short at a line boundary cannot be told from the whole trace",
            file.display(),
            reader.version()
        );
    }
    let mut replayer = match Replayer::new(reader.header()) {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("{}: {e}", file.display())),
    };
    let interrupt = interrupt_flag();
    let mut out = Out::new();
    let start = Instant::now();
    let mut progress = Progress::new(args.progress_every.unwrap_or_else(default_progress_every));
    let mut last = (Instant::now(), 0usize);
    let mut rejected: Vec<(usize, String, String)> = Vec::new();
    let mut violation = None;
    let mut tick = 0u32;
    while let Some(line) = reader.next() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                out.flush();
                progress.finish();
                return usage_error(&format!(
                    "{}: {e} (after {})",
                    file.display(),
                    plural(replayer.steps(), "step", "steps")
                ));
            }
        };
        let s = match replayer.step(&line) {
            Ok(s) => s,
            Err(e) => {
                out.flush();
                progress.finish();
                return usage_error(&format!("{}: {e}", file.display()));
            }
        };
        if !args.quiet {
            writeln!(
                out,
                "{:>5}  {} <- {}  => {}",
                s.step,
                s.machine,
                plain_debug(&s.event),
                plain_debug(&s.outcome)
            );
            for e in &s.effects {
                writeln!(out, "         {}", plain_debug(e));
            }
        }
        if let Some(r) = &s.rejected {
            if !args.quiet {
                writeln!(out, "         HOST MISUSE: {r}");
            }
            rejected.push((s.step, s.machine.clone(), r.clone()));
        }
        if let Some(v) = s.violation {
            violation = Some((s.step, s.machine, v));
            // The rest is read, not replayed: a trace cut short or damaged
            // after its violation is still an input error.
            for rest in reader.by_ref() {
                if let Err(e) = rest {
                    out.flush();
                    progress.finish();
                    return usage_error(&format!("{}: {e}", file.display()));
                }
            }
            break;
        }
        tick = tick.wrapping_add(1);
        if tick.is_multiple_of(1024) {
            if interrupt.load(Ordering::SeqCst) {
                break;
            }
            if progress.due() {
                out.flush();
                let n = replayer.steps();
                let rate = (n - last.1) as f64 / last.0.elapsed().as_secs_f64().max(1e-9);
                last = (Instant::now(), n);
                progress.show(&format!(
                    "  replay {}: {n} steps, {:.0} steps/s, {:.1} s",
                    file.display(),
                    rate,
                    start.elapsed().as_secs_f64()
                ));
            }
        }
    }
    progress.finish();
    let steps = replayer.steps();
    let secs = start.elapsed().as_secs_f64();
    let misuse = if rejected.is_empty() {
        String::new()
    } else {
        let first: Vec<String> = rejected
            .iter()
            .take(3)
            .map(|(n, m, r)| format!("step {n} ({m}): {r}"))
            .collect();
        format!(
            "{} refused as host misuse ({}{})",
            plural(rejected.len(), "step was", "steps were"),
            first.join("; "),
            if rejected.len() > 3 { "; ..." } else { "" }
        )
    };
    // What the end line recorded, against what this replay found (unless
    // the semantics were overridden: then it is another question).
    let recorded = reader.end().and_then(|e| e.expect.clone());
    let found = match &violation {
        None => Expected::Clean,
        Some((n, _, v)) => Expected::Violation {
            step: *n,
            invariant: v.invariant.to_string(),
        },
    };
    let interrupted = interrupt.load(Ordering::SeqCst);
    let comparison = match (&recorded, args.semantics) {
        (Some(r), None) if !interrupted => Some(if *r == found {
            format!("as recorded in the trace: {r}")
        } else {
            format!("NOT as recorded in the trace, which says: {r}")
        }),
        (Some(r), Some(_)) => Some(format!(
            "the trace records, with its own semantics: {r} (not compared: --semantics overrides them)"
        )),
        _ => None,
    };
    let code = if let Some((n, machine, v)) = &violation {
        writeln!(out, "step {n} ({machine}): {v}");
        if !misuse.is_empty() {
            writeln!(out, "also: {misuse}");
        }
        ExitStatus::Violated
    } else if interrupt.load(Ordering::SeqCst) {
        writeln!(
            out,
            "interrupted after {}: no invariant violated so far (inconclusive)",
            plural(steps, "step", "steps")
        );
        ExitStatus::Interrupted
    } else if !misuse.is_empty() {
        if args.allow_rejected {
            writeln!(
                out,
                "{}, every invariant holds; {misuse} (allowed by --allow-rejected)",
                plural(steps, "step", "steps")
            );
            ExitStatus::Ok
        } else {
            writeln!(
                out,
                "{}, every invariant holds, but {misuse}: a recorded trace should have none \
                 (--allow-rejected accepts them)",
                plural(steps, "step", "steps")
            );
            ExitStatus::Violated
        }
    } else {
        writeln!(
            out,
            "{}, every invariant holds",
            plural(steps, "step", "steps")
        );
        ExitStatus::Ok
    };
    if let Some(c) = &comparison {
        writeln!(out, "{c}");
    }
    out.flush();
    if secs >= 1.0 {
        eprintln!(
            "replayed {} in {secs:.2} s ({:.0} steps/s)",
            plural(steps, "step", "steps"),
            steps as f64 / secs
        );
    }
    code
}

fn summarize(names: &[&str]) -> String {
    let mut uniq: Vec<&str> = names.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    match uniq.as_slice() {
        [] => "no machines".into(),
        [one] => format!("`{one}`"),
        many => many
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}
