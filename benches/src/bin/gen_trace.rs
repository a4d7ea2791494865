//! Writes the replay bench's generated trace (`ckpt_benches::replay::long_trace`)
//! as JSON lines on stdout, for timing `ckpt-model replay` by hand.
//!
//! `cargo run --release -p ckpt-benches --bin gen_trace -- LINES > trace.jsonl`

use std::io::Write;

fn main() {
    let lines = std::env::args()
        .nth(1)
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(10_000usize);
    let trace = ckpt_benches::replay::long_trace(lines);
    let out = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(out);
    if let Err(e) = ckpt_core::trace::write_trace(&mut w, &trace).and_then(|()| w.flush()) {
        eprintln!("gen_trace: {e}");
        std::process::exit(1);
    }
}
