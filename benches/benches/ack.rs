//! Ack throughput: per-ack time at 1, 100, 10 000 and 100 000 tasks with 1
//! and 4 pending checkpoints, for the in-place reducer (a new effect list per
//! ack, `apply`, and a queue the host lends and clears, `apply_into`), the
//! pure reducer with every previous state kept, and two baselines written in `ckpt-benches`:
//! the floor (Vec slot + bitset) and a Flink-like design (hash map from
//! 128-bit attempt ids, removed per ack).
//!
//! One iteration acknowledges every slot of freshly armed pending checkpoints
//! in a scattered order (building them is untimed: criterion's
//! `iter_batched` setup; dropping them too). The last ack of each checkpoint
//! is included, so its completion start (collecting the handles to finalize)
//! is amortised over the acks as it is in a real run. The pure-retained
//! variant acks the first `RETAIN_CAP` slots of the same order (see
//! `ckpt_benches::RETAIN_CAP`).

use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};

use ckpt_benches::{
    ack_in_place, ack_in_place_lent, ack_pure_retained, all_acked, armed, kept_storage,
    scattered_order, FlinkLike, Floor, CONCURRENCY, RETAIN_CAP, SIZES,
};

mod common;

fn batch(acks: usize) -> BatchSize {
    if acks >= 10_000 {
        BatchSize::PerIteration
    } else {
        BatchSize::SmallInput
    }
}

fn ack(c: &mut Criterion) {
    let mut g = c.benchmark_group("ack");
    for n in SIZES {
        for conc in CONCURRENCY {
            let order = scattered_order(n, conc);
            let total = order.len();
            let id = format!("{n}x{conc}");

            // Each driver does what it claims, once, before it is timed.
            let mut f = Floor::armed(n, conc);
            f.ack_all(&order);
            assert!(f.all_acked());
            let mut k = FlinkLike::armed(n, conc);
            k.ack_all(&order);
            assert!(k.all_acked());
            let mut a = armed(n, conc);
            ack_in_place(&mut a, &order);
            assert!(all_acked(&a), "in-place acks missing at {id}");
            drop((f, k, a));

            // Big iterations: equal iteration counts per sample (10 iterations
            // minimum instead of 55 for criterion's linear sampling).
            g.sampling_mode(if n >= 10_000 {
                SamplingMode::Flat
            } else {
                SamplingMode::Auto
            });
            g.throughput(Throughput::Elements(total as u64));
            g.bench_function(BenchmarkId::new("floor", &id), |b| {
                b.iter_batched(
                    || Floor::armed(n, conc),
                    |mut f| {
                        f.ack_all(&order);
                        f
                    },
                    batch(total),
                );
            });
            g.bench_function(BenchmarkId::new("flink_like", &id), |b| {
                b.iter_batched(
                    || FlinkLike::armed(n, conc),
                    |mut f| {
                        f.ack_all(&order);
                        f
                    },
                    batch(total),
                );
            });
            g.bench_function(BenchmarkId::new("in_place", &id), |b| {
                b.iter_batched(
                    || armed(n, conc),
                    |mut a| {
                        ack_in_place(&mut a, &order);
                        a
                    },
                    batch(total),
                );
            });

            // One queue for the whole run, as a host keeps one: after the
            // first step it has the capacity of the longest step.
            let mut queue = Vec::new();
            g.bench_function(BenchmarkId::new("in_place_lent", &id), |b| {
                b.iter_batched(
                    || armed(n, conc),
                    |mut a| {
                        ack_in_place_lent(&mut a, &order, &mut queue);
                        a
                    },
                    batch(total),
                );
            });

            let part = &order[..total.min(RETAIN_CAP)];
            g.throughput(Throughput::Elements(part.len() as u64));
            g.bench_function(BenchmarkId::new("pure_retained", &id), |b| {
                b.iter_batched(
                    || {
                        let a = armed(n, conc);
                        let kept = kept_storage(&a.state, part.len());
                        (a, kept)
                    },
                    |(mut a, mut kept)| {
                        ack_pure_retained(&mut a, part, &mut kept);
                        (a, kept)
                    },
                    // Kept states are big: no large batches of them.
                    if part.len() >= 256 {
                        BatchSize::PerIteration
                    } else {
                        BatchSize::SmallInput
                    },
                );
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = ack
}
criterion_main!(benches);
