//! `ckpt-model zoo`: every knob of the catalog checked in its smallest
//! world, as the table of `model/README.md`.

use std::time::Duration;

use ckpt_core::task::LegacyBug;
use ckpt_model::render::flags::world_flags;
use ckpt_model::render::replay::Replay;
use ckpt_model::search::report::Verdict;
use ckpt_model::world::{legacy_name, Reduction};
use ckpt_model::zoo::{check_entry_reduced, entries, trace_name};

use crate::cli::args::ZooArgs;
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;
use crate::cli::output::{write_file, Output};

/// Runs `zoo`.
pub fn run(args: &ZooArgs) -> ExitStatus {
    let reduction = if args.reduction {
        Reduction::Ample
    } else {
        Reduction::Off
    };
    let rows: Vec<_> = entries()
        .into_iter()
        .filter(|entry| {
            args.only.as_ref().is_none_or(|only| {
                entry.bug.tickets().contains(only.as_str())
                    || legacy_name(entry.bug).contains(only.as_str())
            })
        })
        .collect();
    // An `--only` that selects nothing would print an empty table and exit
    // 0: a pass for a question never asked.
    if let (Some(only), true) = (&args.only, rows.is_empty()) {
        return usage_error(&format!(
            "no race of the zoo matches --only {only} (it keeps the races whose ticket, as \
             `FLINK-33186`, or knob name, as `legacy-stale-mail`, contains it)"
        ));
    }
    // The committed traces' directory is checked before the first search,
    // as the output paths are: a mistyped one is a usage error now, not a
    // failed comparison after the table.
    if let Some(dir) = &args.check_traces {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return usage_error(&format!(
                    "--check-traces {}: not a directory",
                    dir.display()
                ))
            }
            Err(e) => return usage_error(&format!("--check-traces {}: {e}", dir.display())),
        }
    }
    // Every row's trace file is checked before the first search (as
    // `check --trace-out` is): an unwritable one is a usage error now, not
    // after minutes of searching. The check's temporary file goes at once
    // (dropped): held through the whole table, the files of rows not yet
    // written would be left behind by a Ctrl-C or a closed stdout, which
    // end the process without dropping anything. Each is written, under
    // the same rule, after its row.
    if let Some(dir) = &args.traces {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return usage_error(&format!("cannot create {}: {e}", dir.display()));
        }
        for entry in &rows {
            if let Err(e) = Output::prepare(&dir.join(trace_file(entry.bug))) {
                return usage_error(&e);
            }
        }
    }
    let limit = Duration::from_secs(args.limit);
    let mut code = ExitStatus::Ok;
    outln!(
        "| race | knob | what went wrong | property broken | world (flags) | fixed | actions | steps | time to find |"
    );
    outln!("|---|---|---|---|---|---|---:|---:|---:|");
    for entry in rows {
        let name = legacy_name(entry.bug);
        let row = check_entry_reduced(&entry, usize::from(args.threads), limit, reduction);
        let replay = row
            .found
            .as_ref()
            .map(|cx| Replay::new(&entry.config, &cx.actions));
        let (actions, steps) = match (&row.found, &replay) {
            (Some(cx), Some(r)) if cx.property == entry.property => {
                (cx.actions.len().to_string(), r.step_count().to_string())
            }
            (Some(cx), Some(r)) => (
                format!("{} (as `{}`)", cx.actions.len(), cx.property),
                r.step_count().to_string(),
            ),
            _ => ("NOT FOUND".into(), "-".into()),
        };
        if !row.ok() {
            code = ExitStatus::Violated;
        }
        outln!(
            "| {} | `{}` | {} | {} | `{}` | {} | {} | {} | {:.2} s |",
            entry.bug.tickets(),
            name,
            entry.story,
            entry.property,
            world_flags(&entry.config),
            match row.fixed {
                Verdict::Holds => "holds".to_string(),
                Verdict::Violated => "VIOLATED".to_string(),
                Verdict::Inconclusive => format!("holds to depth {}", row.fixed_depth),
            },
            actions,
            steps,
            row.seconds
        );
        let Some(r) = &replay else { continue };
        let file = trace_file(entry.bug);
        if let Some(dir) = &args.traces {
            if let Err(e) = write_file(&dir.join(&file), &r.trace_bytes(), "counterexample trace") {
                eprintln!("{e}");
                code = code.worse(ExitStatus::Usage);
            }
        }
        if let Some(dir) = &args.check_traces {
            let path = dir.join(&file);
            // A file missing from the directory is a failed check (1), said
            // as such: there is nothing it could differ from.
            let problem = match std::fs::read(&path) {
                Ok(committed) if committed == r.trace_bytes() => None,
                Ok(_) => Some((
                    "the committed trace differs from this counterexample".to_string(),
                    "regenerate",
                )),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some((
                    "missing: no trace of this counterexample is committed".to_string(),
                    "write it",
                )),
                Err(e) => Some((
                    format!("the committed trace cannot be read: {e}"),
                    "regenerate",
                )),
            };
            if let Some((problem, remedy)) = problem {
                eprintln!(
                    "{}: {problem} ({remedy} with `ckpt-model zoo --traces {}`)",
                    path.display(),
                    dir.display()
                );
                code = code.worse(ExitStatus::Violated);
            }
        }
    }
    code
}

/// The file a knob's counterexample trace is written to under `--traces
/// DIR` (and compared with under `--check-traces DIR`).
fn trace_file(bug: LegacyBug) -> String {
    format!("{}.jsonl", trace_name(bug))
}
