//! The interrupt: Ctrl-C, SIGTERM (what Kubernetes sends to stop a pod)
//! and SIGHUP (a closed terminal) stop a run the same way, with the report
//! so far; a second one exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cli::exit::ExitStatus;

/// A flag set by the first Ctrl-C, SIGTERM or SIGHUP; a second one exits at
/// once with [`ExitStatus::Interrupted`].
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let installed = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(i32::from(ExitStatus::Interrupted.code()));
        }
    });
    if let Err(e) = installed {
        eprintln!(
            "warning: no interrupt handler ({e}): Ctrl-C or SIGTERM ends the run without a report"
        );
    }
    flag
}
