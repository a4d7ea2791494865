//! The progress line on stderr: drawn in place by `indicatif` on a
//! terminal, one plain line per report otherwise (a log gets a line per
//! report, not one line rewritten thousands of times).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress reporter that reports at most every `every`.
#[derive(Debug)]
pub struct Progress {
    /// The line on a terminal; `None` when stderr is not one.
    bar: Option<ProgressBar>,
    every: Duration,
    last: Instant,
}

impl Progress {
    /// A reporter printing every `every`.
    #[must_use]
    pub fn new(every: Duration) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{msg}") {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            every,
            last: Instant::now(),
        }
    }

    /// Whether a report is due (and marks it done).
    pub fn due(&mut self) -> bool {
        if self.last.elapsed() < self.every {
            return false;
        }
        self.last = Instant::now();
        true
    }

    /// Prints one report.
    pub fn show(&mut self, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(text.to_string()),
            None => eprintln!("{}", text.trim_start()),
        }
    }

    /// Clears the line on a terminal, so what follows starts on a clean
    /// line.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
