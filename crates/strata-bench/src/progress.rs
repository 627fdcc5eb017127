//! Progress bars for the long benchmarks: drawn on stderr only when asked for and
//! stderr is a terminal, so piped output and CI logs stay clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `steps` steps, or a hidden one when `progress` is off or stderr is not a terminal.
pub(crate) fn bar(progress: bool, steps: u64) -> ProgressBar {
    if !progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps);
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A spinner with the elapsed time, for steps whose count is not known up front.
pub(crate) fn spinner(progress: bool) -> ProgressBar {
    if !progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
