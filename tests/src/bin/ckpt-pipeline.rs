//! The reference pipeline as a binary of this crate, so the crash test can
//! start it as a child process (`CARGO_BIN_EXE_ckpt-pipeline`) and `kill -9`
//! it. Same code as `cargo run -p ckpt-core --features async-host --example
//! pipeline`.

#[cfg(not(loom))]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ckpt_core::host::pipeline::run_cli(&args)
}

#[cfg(loom)]
fn main() {}
