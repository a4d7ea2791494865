//! Trace replay throughput (lines per second) at 10 k, 100 k and 1 M lines
//! of the same generated story (`ckpt_benches::replay::long_trace`): the
//! cross-step invariants cost O(what a step changes) with memory bounded by
//! the live state, so lines/s must stay flat as the trace grows (it fell
//! tenfold from 10 k to 100 k lines when the handle ledger rescanned every
//! handle ever seen on every step).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use ckpt_benches::replay::{long_trace, replay_stream, trace_bytes, TRACE_LINES};

mod common;

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    for lines in TRACE_LINES {
        let bytes = trace_bytes(&long_trace(lines));
        assert_eq!(replay_stream(&bytes), lines);
        g.throughput(Throughput::Elements(lines as u64));
        g.bench_function(BenchmarkId::new("lines", lines), |b| {
            b.iter(|| replay_stream(&bytes));
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = replay
}
criterion_main!(benches);
