//! Progress of long storage work (imports, exports, table writes, conversions,
//! verification), told to an observer that may show it; the library draws nothing.
//!
//! Work is a sequence of steps. Each step is [`Progress::start`]ed with its total
//! in a [`Unit`], [`Progress::advance`]d as parts of it are done, and
//! [`Progress::finish`]ed. When a step succeeds its advances sum to its total; a
//! step that fails is left unfinished (the error says why). Advances may come from
//! several threads at once (columns and tables are worked on in parallel), hence
//! `Sync`. Callers that show nothing pass [`NoProgress`]; a function with many
//! callers keeps its signature and has a `*_with_progress` twin that takes one.

use std::io::{self, Read};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a step counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes: of a file read, or of column values written or checked.
    Bytes,
    /// Table rows.
    Rows,
}

/// Hears how far long work has got (see the module doc for the contract).
pub trait Progress: Sync {
    /// A step begins: `step` says what it does ("reading trades.csv"), `total` how
    /// many `unit`s it will do.
    fn start(&self, step: &str, total: u64, unit: Unit);
    /// `done` more units of the current step are done.
    fn advance(&self, done: u64);
    /// The current step is done.
    fn finish(&self);
}

/// An observer that ignores everything: for callers that show no progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _step: &str, _total: u64, _unit: Unit) {}
    fn advance(&self, _done: u64) {}
    fn finish(&self) {}
}

/// A step counted in [`Unit::Bytes`] of a file: a reader that advances the step
/// by every byte read through it, up to the file's size when the step started.
pub(crate) struct CountingReader<'a, R> {
    inner: R,
    progress: &'a dyn Progress,
    read: u64,
    total: u64,
}

impl<'a, R: Read> CountingReader<'a, R> {
    /// Starts step `step` of `total` bytes, read from `inner`.
    pub(crate) fn start(inner: R, progress: &'a dyn Progress, step: &str, total: u64) -> Self {
        progress.start(step, total, Unit::Bytes);
        CountingReader { inner, progress, read: 0, total }
    }

    /// Finishes the step: whatever was not read (a scan that stopped early, a file
    /// that shrank) counts as done.
    pub(crate) fn finish(self) {
        self.progress.advance(self.total - self.read.min(self.total));
        self.progress.finish();
    }
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        let before = self.read.min(self.total);
        self.read += read as u64;
        // A file that grew after the step started never takes it past its total.
        self.progress.advance(self.read.min(self.total) - before);
        Ok(read)
    }
}

/// One step as a [`ProgressLog`] heard it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedStep {
    /// What the step does.
    pub name: String,
    /// Its total.
    pub total: u64,
    /// What it counts.
    pub unit: Unit,
    /// The advances, in the order heard.
    pub advances: Vec<u64>,
    /// Whether it finished.
    pub finished: bool,
}

impl LoggedStep {
    /// The units advanced in all.
    pub fn done(&self) -> u64 {
        self.advances.iter().sum()
    }
}

/// An observer that keeps everything it hears, for tests of the functions that
/// report progress (and for callers that want the steps afterwards).
#[derive(Debug, Default)]
pub struct ProgressLog {
    heard: Mutex<Heard>,
}

/// What a [`ProgressLog`] heard: the steps, and the calls that broke the contract.
#[derive(Debug, Default)]
struct Heard {
    steps: Vec<LoggedStep>,
    breaches: Vec<String>,
}

impl ProgressLog {
    /// The steps heard so far, in order.
    pub fn steps(&self) -> Vec<LoggedStep> {
        self.heard().steps.clone()
    }

    /// The steps, when every one finished with advances summing to its total and
    /// every call kept the contract (no step started inside another, no advance
    /// outside a step or past its total); otherwise what went wrong first.
    pub fn complete_steps(&self) -> Result<Vec<LoggedStep>, String> {
        let heard = self.heard();
        if let Some(breach) = heard.breaches.first() {
            return Err(breach.clone());
        }
        match heard.steps.iter().find(|s| !s.finished || s.done() != s.total) {
            Some(step) => Err(format!(
                "step {:?} {} with {} of {} units: {:?}",
                step.name,
                if step.finished { "finished" } else { "did not finish" },
                step.done(),
                step.total,
                step.advances
            )),
            None => Ok(heard.steps.clone()),
        }
    }

    fn heard(&self) -> MutexGuard<'_, Heard> {
        // A panic elsewhere while holding the lock leaves the log as it was.
        self.heard.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Progress for ProgressLog {
    fn start(&self, step: &str, total: u64, unit: Unit) {
        let mut heard = self.heard();
        if let Some(open) = heard.steps.last().filter(|s| !s.finished) {
            let breach = format!("step {step:?} started inside step {:?}", open.name);
            heard.breaches.push(breach);
        }
        heard.steps.push(LoggedStep { name: step.to_string(), total, unit, advances: Vec::new(), finished: false });
    }

    fn advance(&self, done: u64) {
        let mut heard = self.heard();
        let breach = match heard.steps.last_mut() {
            Some(step) if step.finished => Some(format!("an advance of {done} after step {:?} finished", step.name)),
            Some(step) => {
                step.advances.push(done);
                (step.done() > step.total)
                    .then(|| format!("step {:?} advanced to {} past its total {}", step.name, step.done(), step.total))
            }
            None => Some(format!("an advance of {done} outside any step")),
        };
        heard.breaches.extend(breach);
    }

    fn finish(&self) {
        let mut heard = self.heard();
        match heard.steps.last_mut() {
            Some(step) if !step.finished => step.finished = true,
            _ => heard.breaches.push("a finish outside any step".to_string()),
        }
    }
}
