//! Progress of a batch of simulations on standard error: a bar on a terminal, a line at
//! every tenth otherwise (a log file gets no control characters).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts finished runs; shared by the worker threads.
pub struct RunProgress {
    bar: ProgressBar,
    /// Print a line every tenth (enabled, but standard error is not a terminal).
    plain: bool,
    prefix: String,
    done: AtomicUsize,
    total: usize,
}

impl RunProgress {
    /// `total` runs under the name `prefix`; nothing is shown unless `enabled`.
    pub fn new(prefix: &str, total: usize, enabled: bool) -> RunProgress {
        let bar = ProgressBar::with_draw_target(
            Some(total as u64),
            if enabled { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
        );
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, eta {eta} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        let plain = enabled && !std::io::stderr().is_terminal();
        RunProgress { bar, plain, prefix: prefix.to_string(), done: AtomicUsize::new(0), total }
    }

    /// One more run finished.
    pub fn inc(&self) {
        self.bar.inc(1);
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.plain && n * 10 / self.total > (n - 1) * 10 / self.total {
            eprintln!("{}: {n}/{} runs", self.prefix, self.total);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
