//! `ckpt-model`: model-check the coordinator and tasks over the real
//! reducers (`check`, `simulate`, `merge`, `zoo`), explore the model in
//! stateright's web UI (`explore`), or replay a JSON-lines trace through
//! the core (`replay`). The exit statuses are [`cli::exit::ExitStatus`]
//! (`ckpt-model --help` ends with them; `model/README.md` has the table).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    let started = Instant::now();
    cli::run(cli::args::Cli::parse(), started).into()
}
