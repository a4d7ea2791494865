//! The `ckpt-model` binary's own modules: the arguments ([`args`]), the
//! exit statuses ([`exit`]), the output files ([`output`]), the interrupt
//! ([`interrupt`]), and one module per command, which this one dispatches
//! to (and none of them imports it).

use std::io::Write;
use std::time::Instant;

/// `println!` for what a command prints on stdout: a reader that closed the
/// pipe (`ckpt-model zoo | head -1`) or a stdout that cannot be written ends
/// the process with [`exit::ExitStatus::OutputFailed`] instead of a panic.
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for stdout, with [`outln!`]'s handling of a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

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
use output::stdout_failed;

/// Runs the command `cli` names; `started` is when the process started.
pub fn run(cli: Cli, started: Instant) -> ExitStatus {
    // Not `explore`: a server whose first lines were read (its address,
    // through `| head -1`) goes on serving; its 141 is not promised.
    if !matches!(cli.cmd, Cmd::Explore(_)) {
        watch_stdout();
    }
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

/// Writes `args` to stdout; when that fails (the reader closed the pipe,
/// the disk is full), exits at once with [`ExitStatus::OutputFailed`]: the
/// rest of the report has nowhere to go, and a panic's backtrace would
/// bury the output that did arrive. A closed pipe is silent, as with any
/// Unix filter; any other error is named on stderr.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args) {
        stdout_failed(&e);
    }
}

/// Ends the process with [`ExitStatus::OutputFailed`] as soon as stdout's
/// reader is gone (the read end of its pipe closed: a pager quit, a
/// consumer that died), not at the next write, which for a search that
/// prints nothing on stdout until its report is the end of the search
/// (minutes and gigabytes later). A thread waits in
/// `poll(2)` for the error condition a pipe's write end reports then; a
/// terminal, a file or `/dev/null` never reports it, and stdout that
/// cannot be polled is not watched (its next write still fails as before).
#[cfg(unix)]
fn watch_stdout() {
    use rustix::event::{poll, PollFd, PollFlags};
    let watch = || {
        let stdout = std::io::stdout();
        loop {
            let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
            match poll(&mut fds, None) {
                Ok(_) => {
                    let got = fds[0].revents();
                    if got.intersects(PollFlags::ERR | PollFlags::HUP) {
                        std::process::exit(i32::from(ExitStatus::OutputFailed.code()));
                    }
                    if got.contains(PollFlags::NVAL) {
                        return;
                    }
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
    };
    // A run without the watch is still correct: only later to notice.
    let _ = std::thread::Builder::new()
        .name("stdout-watch".into())
        .spawn(watch);
}

/// Elsewhere the next write notices, as before.
#[cfg(not(unix))]
fn watch_stdout() {}

/// Prints the JSON Schema of one `--json` output.
fn schema(output: &str) -> ExitStatus {
    let name = format!("{output}.schema.json");
    match ckpt_model::render::json::schemas()
        .into_iter()
        .find(|(n, _)| *n == name)
    {
        Some((_, text)) => {
            out!("{text}");
            ExitStatus::Ok
        }
        None => usage_error(&format!("no schema for `{output}`")),
    }
}
