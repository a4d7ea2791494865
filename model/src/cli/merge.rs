//! `ckpt-model merge`: the `--json` reports of `check --shard K/N` runs,
//! read back as typed reports, combined into one verdict by the rule a
//! single check uses ([`Verdict::decide`]).

use std::collections::BTreeSet;
use std::path::PathBuf;

use ckpt_model::render::json::{CheckJson, MergeJson, PropertyJson, ShardJson, SCHEMA_VERSION};
use ckpt_model::render::text;
use ckpt_model::search::report::{Completion, Kind, Question, Status, Verdict};

use crate::cli::args::MergeArgs;
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;

/// Reads one shard's report, and its shard.
fn read(p: &PathBuf) -> Result<(CheckJson, ShardJson), String> {
    let text =
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let v: CheckJson = serde_json::from_str(text.trim())
        .map_err(|e| format!("{} is not the --json report of a check: {e}", p.display()))?;
    match v.shard.clone() {
        Some(shard) if v.command == "check" => Ok((v, shard)),
        _ => Err(format!(
            "{} is not the --json report of a `check --shard K/N` run",
            p.display()
        )),
    }
}

/// A property over every shard: violated or witnessed if any shard says
/// so; holds or not witnessed only if every shard says so of a complete
/// whole.
fn combine(kind: Kind, statuses: &[Status], whole: bool, all: usize) -> Status {
    let every = |s: Status| statuses.len() == all && statuses.iter().all(|x| *x == s);
    match kind {
        Kind::Sometimes if statuses.contains(&Status::Witnessed) => Status::Witnessed,
        Kind::Sometimes if whole && every(Status::NotWitnessed) => Status::NotWitnessed,
        Kind::Sometimes => Status::NotWitnessedSoFar,
        _ if statuses.contains(&Status::Violated) => Status::Violated,
        _ if whole && every(Status::Holds) => Status::Holds,
        _ => Status::Inconclusive,
    }
}

/// Runs `merge`.
pub fn run(args: &MergeArgs) -> ExitStatus {
    let mut reports = Vec::new();
    for p in &args.reports {
        match read(p) {
            Ok((v, shard)) => reports.push((p, v, shard)),
            Err(e) => return usage_error(&e),
        }
    }
    let Some((first_path, first, first_shard)) = reports.first() else {
        return usage_error("no reports");
    };
    // The search flags that change which frontier states a shard owns are
    // in the key (`symmetry`); the others (`--no-reduction`, `--engine`)
    // change only how a shard searches below its own states, completely
    // either way.
    let key = |v: &CheckJson, s: &ShardJson| (v.flags.clone(), s.count, s.split_depth, s.symmetry);
    let want = key(first, first_shard);
    if let Some((p, ..)) = reports.iter().find(|(_, _, s)| s.symmetry.is_none()) {
        return usage_error(&format!(
            "{}: a shard report written before shards recorded their split's symmetry: run that shard again",
            p.display()
        ));
    }
    if let Some((p, ..)) = reports.iter().find(|(_, v, s)| key(v, s) != want) {
        return usage_error(&format!(
            "{} is a shard of another run (flags, shard count, split depth or symmetry differ from {})",
            p.display(),
            first_path.display()
        ));
    }
    let (flags, count, split_depth, _) = want;
    let mut seen = BTreeSet::new();
    for (p, _, shard) in &reports {
        let k = shard.index;
        if !seen.insert(k) {
            return usage_error(&format!("{}: shard {k} given twice", p.display()));
        }
    }
    let missing: Vec<u64> = (0..count).filter(|k| !seen.contains(k)).collect();
    let cut = reports
        .iter()
        .any(|(_, v, _)| v.completion != Completion::Complete);
    let whole = missing.is_empty() && !cut;
    let properties: Vec<PropertyJson> = first
        .properties
        .iter()
        .map(|p| {
            let statuses: Vec<Status> = reports
                .iter()
                .filter_map(|(_, v, _)| v.properties.iter().find(|q| q.name == p.name))
                .map(|q| q.status)
                .collect();
            PropertyJson {
                name: p.name.clone(),
                kind: p.kind,
                status: combine(p.kind, &statuses, whole, reports.len()),
            }
        })
        .collect();
    let violated = properties.iter().any(|p| p.status == Status::Violated);
    let question = first
        .question
        .unwrap_or(if flags.starts_with("--semantics fixed ") {
            Question::EveryPropertyHolds
        } else {
            Question::BugIsFound
        });
    let verdict = Verdict::decide(violated, whole, false, question);
    // The shortest counterexample over the shards (the lowest shard on a tie).
    let best = reports
        .iter()
        .filter_map(|(_, v, s)| Some((v.counterexample.as_ref()?, s)))
        .min_by_key(|(c, s)| (c.action_count, s.index));
    let note = if !missing.is_empty() {
        format!("shards {missing:?} of {count} are missing")
    } else if cut
        && reports.iter().all(|(_, v, _)| {
            matches!(
                v.completion,
                Completion::Complete | Completion::StoppedAtViolation
            )
        })
    {
        // Shards stopped at their violation (all a legacy semantics
        // asks): that is the verdict, not a doubt about it.
        Completion::StoppedAtViolation
            .cut_reason()
            .unwrap_or_default()
            .into()
    } else if cut {
        "a shard's search was cut short".into()
    } else if verdict == Verdict::Inconclusive {
        "no shard found the known bug of this semantics: no verdict".into()
    } else {
        String::new()
    };
    let code = match verdict {
        Verdict::Violated => ExitStatus::Violated,
        Verdict::Inconclusive => ExitStatus::Inconclusive,
        Verdict::Holds => ExitStatus::Ok,
    };
    let states: usize = reports.iter().map(|(_, v, _)| v.states).sum();
    let unique: usize = reports.iter().map(|(_, v, _)| v.unique_states).sum();
    if args.json {
        let v = MergeJson {
            schema_version: SCHEMA_VERSION,
            command: "merge".into(),
            flags,
            shards: count,
            split_depth,
            reports: reports.len(),
            missing,
            verdict,
            verdict_note: note,
            states,
            unique_states: unique,
            properties,
            counterexample: best.map(|(c, _)| c.clone()),
            counterexample_shard: best.map(|(_, s)| s.index),
            exit_status: code.code(),
        };
        outln!("{}", serde_json::to_string(&v).unwrap_or_default());
        return code;
    }
    outln!(
        "ckpt-model merge: {} of {count} shards (split depth {split_depth}) of ckpt-model check \
         {flags}",
        reports.len(),
    );
    outln!(
        "  {states} states, {unique} unique summed over the shards (states below frontier \
         states of different shards are counted in each: at least a single run's count)"
    );
    for p in &properties {
        outln!(
            "  [{:<20}] {:<10} {}",
            p.status.as_str(),
            p.kind.as_str(),
            p.name
        );
    }
    if let Some((c, shard)) = best {
        outln!(
            "\nproperty `{}` violated (shard {}); shortest counterexample over the shards: {} \
             actions, {} steps",
            c.property,
            shard.index,
            c.action_count,
            c.step_count
        );
        if let Some(x) = &c.violation {
            outln!("  invariant `{}` violated: {}", x.invariant, x.detail);
        }
        out!(
            "{}",
            shard.counterexample_text.as_deref().unwrap_or_default()
        );
    }
    outln!("verdict: {}", text::verdict(verdict, &note));
    code
}
