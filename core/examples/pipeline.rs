//! A runnable pipeline on the async host: a numbered source, a keyed
//! counter whose state is checkpointed, and a two-phase-commit sink, with
//! periodic checkpoints into a durable store in DIR. `kill -9` it at any
//! moment and run it again: it resumes from the latest completed checkpoint
//! and the committed output holds every record exactly once.
//!
//! `cargo run --release -p ckpt-core --features async-host --example pipeline -- DIR`

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ckpt_core::host::pipeline::run_cli(&args)
}
