//! The process's memory, for `--memory-limit-mb` and the peak every report
//! carries: resident (`VmRSS`) and peak resident (`VmHWM`) set sizes, read
//! by `procfs` from `/proc/self/status` on Linux; `None` elsewhere.

/// The process's resident memory now, in MiB.
#[must_use]
pub fn rss_mb() -> Option<f64> {
    status_kb(|s| s.vmrss).map(mib)
}

/// The process's peak resident memory so far, in MiB.
#[must_use]
pub fn peak_rss_mb() -> Option<f64> {
    status_kb(|s| s.vmhwm).map(mib)
}

#[allow(clippy::cast_precision_loss)]
fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

#[cfg(target_os = "linux")]
fn status_kb(field: impl Fn(&procfs::process::Status) -> Option<u64>) -> Option<u64> {
    let status = procfs::process::Process::myself().ok()?.status().ok()?;
    field(&status)
}

#[cfg(not(target_os = "linux"))]
fn status_kb<T>(_: impl Fn(&T) -> Option<u64>) -> Option<u64> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn a_running_process_has_a_resident_size_at_most_its_peak() {
        let (now, peak) = (super::rss_mb(), super::peak_rss_mb());
        assert!(now.is_some_and(|n| n > 0.0), "{now:?}");
        assert!(
            now.zip(peak).is_some_and(|(n, p)| n <= p),
            "{now:?} {peak:?}"
        );
    }
}
