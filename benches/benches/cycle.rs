//! The full checkpoint cycle, in place: trigger -> id allocated -> every ack
//! (scattered order) -> finalize -> store -> notify every task (and discard
//! the evicted previous checkpoint's handles), at 1, 100, 10 000 and 100 000
//! tasks. Throughput is in tasks, so criterion's elements/s is tasks/s and
//! `report` prints the least-squares slope (time per task).

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

use ckpt_benches::{Cycle, SIZES};

mod common;

fn cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("cycle");
    for n in SIZES {
        let mut cyc = Cycle::new(n);
        // Warm into the steady state (a previous checkpoint to evict) and check.
        for _ in 0..2 {
            let count = cyc.run();
            assert!(count.completed && count.acked == n as usize && count.notified == n as usize);
        }
        g.sampling_mode(if n >= 10_000 {
            SamplingMode::Flat
        } else {
            SamplingMode::Auto
        });
        g.throughput(Throughput::Elements(u64::from(n)));
        g.bench_function(BenchmarkId::new("in_place", n), |b| b.iter(|| cyc.run()));
        let count = cyc.run();
        assert!(count.completed && count.discarded == n as usize);
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = cycle
}
criterion_main!(benches);
