//! Prints the README tables from criterion's saved results.
//!
//! `cargo run --release -p ckpt-benches --bin report [CRITERION_DIR]`
//! (default: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else
//! `target/criterion`).

use std::path::PathBuf;

use ckpt_benches::report;

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(report::default_dir, PathBuf::from);
    let records = report::load(&dir);
    println!("<!-- criterion results from {} -->\n", dir.display());
    print!("{}", report::render(&records, &report::load_model(&dir)));
}
