//! Whole checkpoints through the async host (tokio, durable store on an
//! in-memory file system, then on the real disk with its calls inline on
//! the workers and through `OffWorkerFs`) and through the `Mutex` host (one
//! driving thread, no I/O), at 1, 100 and 1 000 tasks; recovery on the real
//! disk, inline and off the workers. Throughput is in reducer
//! events, so criterion's elements/s is events/s; checkpoints/s is
//! 1 / time per iteration.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use ckpt_benches::hosts::{AsyncCycle, MutexCycle, Recovery, HOST_SIZES};

mod common;

fn hosts(c: &mut Criterion) {
    let mut g = c.benchmark_group("hosts");
    for n in HOST_SIZES {
        let mut m = MutexCycle::new(n);
        let warm = m.run();
        assert!(warm.completed);
        g.throughput(Throughput::Elements(warm.events()));
        g.bench_function(BenchmarkId::new("mutex", n), |b| b.iter(|| m.run()));

        let mut a = AsyncCycle::new(n);
        let warm = a.run();
        assert!(warm.completed);
        g.throughput(Throughput::Elements(warm.events()));
        g.bench_function(BenchmarkId::new("async", n), |b| b.iter(|| a.run()));
        drop(a);

        // The real disk: the store's and the state files' fsyncs inline on
        // the two workers, then through `OffWorkerFs`.
        for (name, off) in [("async-disk", false), ("async-disk-off-worker", true)] {
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{n}"));
            let mut a = AsyncCycle::on_disk(n, &dir, off);
            assert!(a.run().completed);
            g.bench_function(BenchmarkId::new(name, n), |b| b.iter(|| a.run()));
        }
    }
    g.finish();
}

/// Time from process start to a running job after a crash: open the store
/// (recovery on the real disk), restore the latest checkpoint, read every
/// task's state file, start every task.
fn recovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("recovery");
    for n in HOST_SIZES {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recovery-{n}"));
        let r = Recovery::new(&dir, n, false);
        g.bench_function(BenchmarkId::new("async", n), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| r.recover().0).sum())
        });
        drop(r);
        let r = Recovery::new(&dir, n, true);
        g.bench_function(BenchmarkId::new("async-off-worker", n), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| r.recover().0).sum())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = hosts, recovery
}
criterion_main!(benches);
