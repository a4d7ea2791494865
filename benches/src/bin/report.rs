//! Prints the tables of `benches/README.md` from criterion's saved results.
//!
//! `cargo run --release -p ckpt-benches --bin report [CRITERION_DIR]`
//! (default: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else
//! `target/criterion`).

use std::path::PathBuf;

use ckpt_benches::report;
use clap::Parser;

/// Prints the benchmark tables of `benches/README.md` from criterion's saved results.
#[derive(Parser)]
#[command(name = "report")]
struct Args {
    /// Criterion's output directory (default: `$CRITERION_HOME`, else
    /// `$CARGO_TARGET_DIR/criterion`, else `target/criterion`).
    criterion_dir: Option<PathBuf>,
}

fn main() {
    let dir = Args::parse()
        .criterion_dir
        .unwrap_or_else(report::default_dir);
    let records = report::load(&dir);
    println!("<!-- criterion results from {} -->\n", dir.display());
    print!("{}", report::render(&records, &report::load_model(&dir)));
}
