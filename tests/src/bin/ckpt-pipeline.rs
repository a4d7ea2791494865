//! The reference pipeline as a binary of this crate, so the crash tests can
//! start it as a child process (`CARGO_BIN_EXE_ckpt-pipeline`) and `kill -9`
//! it: the same source file as `cargo run -p ckpt-core --features
//! async-host --example pipeline`, compiled here.

#[cfg(not(loom))]
#[path = "../../../core/examples/pipeline/app.rs"]
mod app;

#[cfg(not(loom))]
fn main() -> std::process::ExitCode {
    app::main()
}

#[cfg(loom)]
fn main() {}
