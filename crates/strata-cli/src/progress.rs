//! Progress of the long commands (`import`, `export`, `gen`, `compress`,
//! `verify`) on standard error: a bar with an ETA for each step the storage
//! library reports, drawn only when standard error is a terminal, so redirected or
//! piped runs (scripts, CI, tests) get exactly the output they got before.

use std::io::IsTerminal;
use std::sync::{Mutex, MutexGuard, PoisonError};

use indicatif::ProgressBar;
use strata_bench::progress::styled_bar;
use strata_store::progress::{NoProgress, Progress, Unit};

/// The observer a command hands the library: bars on a terminal, else nothing.
pub fn on_stderr() -> Box<dyn Progress> {
    if std::io::stderr().is_terminal() { Box::new(TerminalProgress::default()) } else { Box::new(NoProgress) }
}

/// Draws the current step as a bar on stderr and clears it when the step ends
/// (or, for a step an error cut short, when the command ends, before the error is
/// printed).
#[derive(Default)]
struct TerminalProgress {
    bar: Mutex<Option<ProgressBar>>,
}

impl TerminalProgress {
    fn bar(&self) -> MutexGuard<'_, Option<ProgressBar>> {
        // A bar is only drawn: one left by a panicking thread is still fine to use.
        self.bar.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How a bar counts `unit`s: done and total, and for bytes the rate.
fn count(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "{bytes}/{total_bytes} ({binary_bytes_per_sec})",
        Unit::Rows => "{human_pos}/{human_len} rows",
    }
}

impl Progress for TerminalProgress {
    fn start(&self, step: &str, total: u64, unit: Unit) {
        let bar = styled_bar(total, count(unit));
        bar.set_message(step.to_string());
        if let Some(unfinished) = self.bar().replace(bar) {
            unfinished.finish_and_clear();
        }
    }

    fn advance(&self, done: u64) {
        if let Some(bar) = self.bar().as_ref() {
            bar.inc(done);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        self.finish();
    }
}
