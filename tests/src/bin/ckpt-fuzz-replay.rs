//! Runs a fuzz target's harness (`ckpt_tests::fuzzing`) over inputs without
//! libFuzzer, on stable, and prints executions per second: for profilers
//! (`perf record`, `valgrind --tool=callgrind`) and for comparing the
//! harness's cost before and after a change on the same inputs.
//!
//! ```text
//! ckpt-fuzz-replay TARGET DIR|FILE [REPS]        every file (once per rep)
//! ckpt-fuzz-replay TARGET --random N LEN [SEED]  N pseudo-random inputs of LEN bytes
//! ```
//!
//! A finding panics, as under libFuzzer.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ckpt_tests::fuzzing::{run_target, TARGETS};

/// Runs a fuzz target's harness over inputs without libFuzzer.
#[derive(clap::Parser)]
#[command(name = "ckpt-fuzz-replay")]
struct Args {
    /// The fuzz target.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(TARGETS))]
    target: String,
    /// A file or a directory of inputs (every file, once per repetition).
    #[arg(required_unless_present = "random", conflicts_with = "random")]
    input: Option<PathBuf>,
    /// Repetitions of the inputs.
    #[arg(default_value_t = 1)]
    reps: u64,
    /// N pseudo-random inputs of LEN bytes, from SEED (xorshift64*).
    #[arg(long, num_args = 2..=3, value_names = ["N", "LEN", "SEED"])]
    random: Option<Vec<u64>>,
}

fn files(p: &Path) -> Vec<PathBuf> {
    if p.is_file() {
        return vec![p.to_path_buf()];
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// xorshift64*: reproducible bytes without a dependency.
fn random_input(state: &mut u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        let x = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let target = args.target.as_str();
    let inputs: Vec<Vec<u8>> = match (&args.random, &args.input) {
        (Some(r), _) => {
            let n = r.first().copied().unwrap_or(1_000);
            let len = usize::try_from(r.get(1).copied().unwrap_or(4_096)).unwrap_or(4_096);
            let mut state = r.get(2).copied().unwrap_or(0x9e37_79b9_7f4a_7c15) | 1;
            (0..n).map(|_| random_input(&mut state, len)).collect()
        }
        (None, Some(path)) => {
            let once: Vec<Vec<u8>> = files(path)
                .iter()
                .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
                .collect();
            (0..args.reps).flat_map(|_| once.clone()).collect()
        }
        (None, None) => unreachable!("clap requires an input or --random"),
    };
    let bytes: usize = inputs.iter().map(Vec::len).sum();
    let start = Instant::now();
    for data in &inputs {
        run_target(target, data);
    }
    let secs = start.elapsed().as_secs_f64();
    let n = inputs.len();
    println!(
        "{target}: {n} executions, {bytes} bytes, {secs:.2} s, {:.0} exec/s",
        if secs > 0.0 { n as f64 / secs } else { 0.0 }
    );
}
