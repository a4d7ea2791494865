//! Runs one benchmark driver a fixed number of times, for profilers
//! (`valgrind --tool=callgrind --toggle-collect='ckpt_benches::*ack*'`):
//! instruction counts are stable on a noisy machine where times are not.
//!
//! `profile VARIANT TASKS PENDING [REPS]` with VARIANT one of `floor`,
//! `flink_like`, `in_place`, `in_place_lent`, `pure_retained`, `cycle`. It also prints the
//! fastest repetition's time per ack (the acks alone, without building or
//! dropping the states): on a machine whose speed drifts, the minimum over
//! repetitions of two builds run one after the other is a fairer A/B than
//! two criterion runs minutes apart.

use ckpt_benches::{
    ack_in_place, ack_in_place_lent, ack_pure_retained, armed, scattered_order, Cycle, FlinkLike,
    Floor, RETAIN_CAP,
};

/// Runs one benchmark driver a fixed number of times, for profilers.
#[derive(clap::Parser)]
#[command(name = "profile")]
struct Args {
    /// The driver.
    #[arg(default_value = "in_place", value_parser = ["floor", "flink_like", "in_place", "in_place_lent", "pure_retained", "cycle"])]
    variant: String,
    /// Tasks acknowledging.
    #[arg(default_value_t = 10_000)]
    tasks: u32,
    /// Checkpoints pending at once.
    #[arg(default_value_t = 1)]
    pending: usize,
    /// Repetitions.
    #[arg(default_value_t = 3)]
    reps: usize,
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let variant = args.variant.as_str();
    let tasks = args.tasks;
    let pending = args.pending;
    let reps = args.reps;
    let order = scattered_order(tasks, pending);
    let mut acks = 0usize;
    let mut best_ns_per_ack = f64::INFINITY;
    // The cycle runs checkpoint after checkpoint on one coordinator, as
    // criterion's `cycle` group does (warmed by one cycle).
    let mut cycle = (variant == "cycle").then(|| {
        let mut c = Cycle::new(tasks);
        c.run();
        c
    });
    // The lent queue lives as long as the host: one for every repetition.
    let mut queue = Vec::new();
    for _ in 0..reps {
        let before = acks;
        let timed = match variant {
            "floor" => {
                let mut f = Floor::armed(tasks, pending);
                let t0 = std::time::Instant::now();
                f.ack_all(&order);
                acks += order.len();
                t0.elapsed()
            }
            "flink_like" => {
                let mut f = FlinkLike::armed(tasks, pending);
                let t0 = std::time::Instant::now();
                f.ack_all(&order);
                acks += order.len();
                t0.elapsed()
            }
            "in_place" => {
                let mut a = armed(tasks, pending);
                let t0 = std::time::Instant::now();
                ack_in_place(&mut a, &order);
                acks += order.len();
                t0.elapsed()
            }
            "in_place_lent" => {
                let mut a = armed(tasks, pending);
                let t0 = std::time::Instant::now();
                ack_in_place_lent(&mut a, &order, &mut queue);
                acks += order.len();
                t0.elapsed()
            }
            "pure_retained" => {
                let part = &order[..order.len().min(RETAIN_CAP)];
                let mut a = armed(tasks, pending);
                let mut kept = ckpt_benches::kept_storage(&a.state, part.len());
                let t0 = std::time::Instant::now();
                ack_pure_retained(&mut a, part, &mut kept);
                let timed = t0.elapsed();
                acks += part.len();
                // Dropped after the clock stops.
                drop((a, kept));
                timed
            }
            "cycle" => {
                let Some(c) = cycle.as_mut() else {
                    unreachable!("built above for the cycle")
                };
                let t0 = std::time::Instant::now();
                acks += c.run().acked;
                t0.elapsed()
            }
            other => {
                eprintln!("unknown variant {other}");
                std::process::exit(2);
            }
        };
        let n = acks - before;
        if n > 0 {
            best_ns_per_ack = best_ns_per_ack.min(timed.as_nanos() as f64 / n as f64);
        }
    }
    println!("{variant} {tasks}x{pending}: {acks} acks; fastest repetition {best_ns_per_ack:.1} ns per ack");
}
