//! Criterion configuration shared by every group: the full settings by
//! default, short ones with `CKPT_BENCH_QUICK=1`.

use std::time::Duration;

use criterion::Criterion;

/// Criterion's defaults (3 s warm-up, 5 s measurement, 100 samples), or with
/// `CKPT_BENCH_QUICK=1` 0.2 s / 0.6 s / 10 samples (a smoke run whose figures
/// are only indicative). Command-line flags (`--measurement-time` ...) still
/// override either.
pub fn config() -> Criterion {
    let c = Criterion::default().without_plots();
    if ckpt_benches::quick() {
        c.warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(600))
            .sample_size(10)
            .nresamples(1_000)
    } else {
        c
    }
}
