//! A runnable pipeline on the async host: a numbered source (several with
//! `--sources`: fan-in), a keyed counter whose state is checkpointed, and a
//! two-phase-commit sink, with periodic checkpoints into a durable store
//! in DIR. `kill -9` it at any moment and run it again: it resumes from the
//! latest completed checkpoint and the committed output holds every record
//! exactly once.
//!
//! `cargo run --release -p ckpt-core --features async-host --example pipeline -- DIR`
//! (`--help` lists the flags). The command is `app.rs`; `ckpt-tests` builds
//! the same file as its `ckpt-pipeline` binary, which the crash tests start
//! and `kill -9`.

mod app;

fn main() -> std::process::ExitCode {
    app::main()
}
