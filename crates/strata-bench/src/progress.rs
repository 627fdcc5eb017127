//! Progress bars on stderr, drawn only when stderr is a terminal so piped output and
//! CI logs stay clean: the benchmarks' bars and spinners, and [`styled_bar`], the
//! one bar style every long `strata` command shares.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` in Strata's style (elapsed time, the bar, the count, the ETA,
/// the message), ticking on its own so time and ETA move between advances. `count`
/// shows how much is done, in indicatif's template keys: `{pos}/{len}` for steps,
/// `{bytes}/{total_bytes}` for bytes. It draws on stderr: callers check first that
/// stderr is a terminal.
pub fn styled_bar(total: u64, count: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let template = format!("{{elapsed_precise}} [{{bar:30}}] {count} ETA {{eta}} {{msg}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A bar of `steps` steps, or a hidden one when `progress` is off or stderr is not a terminal.
pub(crate) fn bar(progress: bool, steps: u64) -> ProgressBar {
    if !progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    styled_bar(steps, "{pos}/{len}")
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
