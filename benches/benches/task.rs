//! Task side: whole checkpoint cycles of one subtask per second, in place
//! (`TaskState::apply`) and pure (`task::reduce`, old state dropped). See
//! `ckpt_benches::TaskCycle` for the event sequences (complete, source,
//! NotifyAborted before the mail, abort while the async part runs).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use ckpt_benches::{expected_used, TaskCycle, TaskDriver};

mod common;

fn task(c: &mut Criterion) {
    let mut g = c.benchmark_group("task");
    g.throughput(Throughput::Elements(1));
    for cycle in TaskCycle::ALL {
        let mut d = TaskDriver::new();
        assert_eq!(d.run_in_place(cycle), expected_used(cycle));
        g.bench_function(BenchmarkId::new("in_place", cycle.name()), |b| {
            b.iter(|| d.run_in_place(cycle));
        });
        assert_eq!(d.run_in_place(cycle), expected_used(cycle));
        assert!(!d.state.has_outstanding_work());

        let mut p = TaskDriver::new();
        assert_eq!(p.run_pure(cycle), expected_used(cycle));
        g.bench_function(BenchmarkId::new("pure", cycle.name()), |b| {
            b.iter(|| p.run_pure(cycle));
        });
        assert_eq!(p.run_pure(cycle), expected_used(cycle));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = task
}
criterion_main!(benches);
