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
