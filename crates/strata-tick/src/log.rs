//! One line per event that matters, on stderr: UTC time, the process's role, what
//! happened. Lines are written whole so processes sharing a terminal stay readable.

use std::io::Write;

/// Writes `2025-01-02T14:30:00.123Z <role>: <message>` to stderr.
pub fn line(role: &str, message: &str) {
    let nanos = crate::clock::Clock::default().now_nanos();
    let date = crate::clock::date_of(nanos);
    let (y, m, d) = date.ymd();
    let ms = crate::clock::time_of_day(nanos) / 1_000_000;
    let (h, min, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let text = format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z {role}: {message}\n");
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The shortest time between two lines of one [`Throttled`] event: a full disk
/// refusing 100 000 updates a second must not fill the log too.
pub const THROTTLE_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// An event that may repeat fast, logged at most once per [`THROTTLE_PERIOD`] with
/// how many times it happened since its last line.
#[derive(Debug, Default)]
pub struct Throttled {
    last_line: Option<std::time::Instant>,
    unlogged: u64,
}

impl Throttled {
    /// Counts `times` more occurrences; when a line is due, writes
    /// `message(occurrences since the last line)`.
    pub fn event(&mut self, role: &str, times: u64, message: impl FnOnce(u64) -> String) {
        self.unlogged += times;
        if self.last_line.is_none_or(|at| at.elapsed() >= THROTTLE_PERIOD) {
            line(role, &message(std::mem::take(&mut self.unlogged)));
            self.last_line = Some(std::time::Instant::now());
        }
    }
}
