//! The `ckpt-model` binary's own modules: the arguments ([`args`]), the
//! exit statuses ([`exit`]), the output files ([`output`]), the interrupt
//! ([`interrupt`]), and one module per command, which this one dispatches
//! to (and none of them imports it).

use std::time::Instant;

pub mod args;
pub mod check;
pub mod dist;
pub mod exit;
pub mod explore;
pub mod interrupt;
pub mod merge;
pub mod output;
pub mod replay;
pub mod simulate;
pub mod zoo;

use args::{Cli, Cmd};
use exit::{usage_error, ExitStatus};

/// Runs the command `cli` names; `started` is when the process started.
pub fn run(cli: Cli, started: Instant) -> ExitStatus {
    match cli.cmd {
        Cmd::Check(a) => check::run(&a, started),
        Cmd::Explore(a) => explore::run(&a),
        Cmd::Replay(a) => replay::run(&a),
        Cmd::Zoo(a) => zoo::run(&a),
        Cmd::Simulate(a) => simulate::run(&a),
        Cmd::Dist(a) => dist::run(&a),
        Cmd::Merge(a) => merge::run(&a),
        Cmd::Schema(a) => schema(&a.output),
    }
}

/// Prints the JSON Schema of one `--json` output.
fn schema(output: &str) -> ExitStatus {
    let name = format!("{output}.schema.json");
    match ckpt_model::render::json::schemas()
        .into_iter()
        .find(|(n, _)| *n == name)
    {
        Some((_, text)) => {
            print!("{text}");
            ExitStatus::Ok
        }
        None => usage_error(&format!("no schema for `{output}`")),
    }
}
