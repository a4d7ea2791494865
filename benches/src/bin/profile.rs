//! Runs one benchmark driver a fixed number of times, for profilers
//! (`valgrind --tool=callgrind --toggle-collect='ckpt_benches::*ack*'`):
//! instruction counts are stable on a noisy machine where times are not.
//!
//! `profile VARIANT TASKS PENDING [REPS]` with VARIANT one of `floor`,
//! `flink_like`, `in_place`, `pure_retained`, `cycle`.

use ckpt_benches::{
    ack_in_place, ack_pure_retained, armed, scattered_order, Cycle, FlinkLike, Floor, RETAIN_CAP,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg =
        |i: usize, d: usize| -> usize { args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d) };
    let variant = args.first().map_or("in_place", String::as_str);
    let tasks = u32::try_from(arg(1, 10_000)).unwrap_or(10_000);
    let pending = arg(2, 1);
    let reps = arg(3, 3);
    let order = scattered_order(tasks, pending);
    let mut acks = 0usize;
    for _ in 0..reps {
        match variant {
            "floor" => {
                let mut f = Floor::armed(tasks, pending);
                f.ack_all(&order);
                acks += order.len();
            }
            "flink_like" => {
                let mut f = FlinkLike::armed(tasks, pending);
                f.ack_all(&order);
                acks += order.len();
            }
            "in_place" => {
                let mut a = armed(tasks, pending);
                ack_in_place(&mut a, &order);
                acks += order.len();
            }
            "pure_retained" => {
                let part = &order[..order.len().min(RETAIN_CAP)];
                let mut a = armed(tasks, pending);
                let mut kept = Vec::with_capacity(part.len());
                ack_pure_retained(&mut a, part, &mut kept);
                acks += part.len();
            }
            "cycle" => {
                let mut c = Cycle::new(tasks);
                c.run();
                acks += c.run().acked;
            }
            other => {
                eprintln!("unknown variant {other}");
                std::process::exit(2);
            }
        }
    }
    println!("{variant} {tasks}x{pending}: {acks} acks");
}
