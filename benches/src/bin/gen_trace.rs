//! Writes the replay bench's generated trace (`ckpt_benches::replay::long_trace`)
//! as JSON lines on stdout, for timing `ckpt-model replay` by hand.
//!
//! `cargo run --release -p ckpt-benches --bin gen_trace -- LINES > trace.jsonl`

use std::io::Write;

use clap::Parser;

/// Writes the replay bench's generated trace as JSON lines on stdout.
#[derive(Parser)]
#[command(name = "gen_trace")]
struct Args {
    /// Event lines to generate (underscores allowed: 1_000_000).
    #[arg(default_value = "10000", value_parser = lines)]
    lines: usize,
}

fn lines(s: &str) -> Result<usize, String> {
    s.replace('_', "")
        .parse()
        .map_err(|e| format!("`{s}`: {e}"))
}

fn main() {
    let lines = Args::parse().lines;
    let trace = ckpt_benches::replay::long_trace(lines);
    let out = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(out);
    if let Err(e) = ckpt_core::trace::write_trace(&mut w, &trace).and_then(|()| w.flush()) {
        eprintln!("gen_trace: {e}");
        std::process::exit(1);
    }
}
