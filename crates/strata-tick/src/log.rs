//! One line per event that matters, on stderr: UTC time, the process's role, what
//! happened. Lines are written whole so processes sharing a terminal stay readable.
//! Events a client can cause at will (refused logins, bad messages) go through a
//! [`Throttle`], so a client cannot fill the disk or drown the other lines.

use std::io::Write;
use std::time::{Duration, Instant};

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

/// The shortest time between two lines from one [`Throttle`].
pub const THROTTLE_PERIOD: Duration = Duration::from_secs(1);

/// At most one line per [`THROTTLE_PERIOD`] from one source (a connection, or a
/// server's refusals); the lines held back in between are counted in the next one.
#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    /// A throttle that lets its first line through.
    pub const fn new() -> Throttle {
        Throttle { last: None, held: 0 }
    }

    /// Writes the line `message` builds (see [`line`]), unless one went out less
    /// than [`THROTTLE_PERIOD`] ago: then only counts it. Returns whether it was written.
    pub fn line(&mut self, role: &str, message: impl FnOnce() -> String) -> bool {
        let now = Instant::now();
        if self.last.is_some_and(|last| now.duration_since(last) < THROTTLE_PERIOD) {
            self.held += 1;
            return false;
        }
        let message = message();
        match std::mem::take(&mut self.held) {
            0 => line(role, &message),
            held => line(role, &format!("{message} (and {held} more like it not logged since the last)")),
        }
        self.last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_gives_one_line_and_the_next_counts_the_rest() {
        let mut throttle = Throttle::new();
        assert!(throttle.line("test", || "first".into()));
        let mut built = 0;
        for _ in 0..1000 {
            assert!(!throttle.line("test", || {
                built += 1;
                "again".into()
            }));
        }
        assert_eq!((built, throttle.held), (0, 1000), "held back lines are counted, not formatted");
        // As if the period had passed.
        throttle.last = Some(Instant::now() - THROTTLE_PERIOD);
        assert!(throttle.line("test", || "later".into()));
        assert_eq!(throttle.held, 0);
    }
}
