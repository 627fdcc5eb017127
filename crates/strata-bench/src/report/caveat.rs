//! Figures not to trust: timings below what the clock can resolve, and data too
//! small for a figure to mean much. Reports mark such cells instead of colouring
//! noise as if it were a result.

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Why a figure should not be trusted; shown beside the cell and above its table.
#[derive(Clone, Debug, PartialEq)]
pub enum Caveat {
    /// A timing behind the figure is shorter than the timer's resolution, so it
    /// counts clock ticks rather than work (and a ratio of it is noise).
    BelowTimerResolution {
        /// The timing, in seconds.
        seconds: f64,
        /// The timer's resolution, in seconds (see [`timer_resolution`]).
        resolution: f64,
    },
    /// The data behind the figure is too small for it to say much; the text says
    /// what was small and what dominates instead (shown as is).
    SmallData(String),
}

impl Caveat {
    /// A [`Caveat::BelowTimerResolution`] if `seconds` is below this process's
    /// [`timer_resolution`]; `None` for longer timings and for non-finite ones
    /// (which the report shows blank anyway).
    pub fn for_timing(seconds: f64) -> Option<Caveat> {
        Caveat::for_timing_at(seconds, timer_resolution())
    }

    /// [`Caveat::for_timing`] against a given resolution (for tests and for
    /// results measured elsewhere).
    pub fn for_timing_at(seconds: f64, resolution: Duration) -> Option<Caveat> {
        let resolution = resolution.as_secs_f64();
        (seconds.is_finite() && seconds < resolution).then_some(Caveat::BelowTimerResolution { seconds, resolution })
    }

    /// The first caveat among `timings` (seconds): for a figure, such as a ratio,
    /// computed from several timings.
    pub fn for_timings(timings: impl IntoIterator<Item = f64>) -> Option<Caveat> {
        timings.into_iter().find_map(Caveat::for_timing)
    }

    /// What the caveat says about every cell it marks, without the cell's own
    /// numbers: cells with the same summary are counted together above a table
    /// ("3 cells marked: <summary>").
    pub fn summary(&self) -> String {
        match self {
            Caveat::BelowTimerResolution { resolution, .. } => format!(
                "a timing behind each is below the timer's resolution ({}), so it counts clock ticks, not work",
                format_seconds(*resolution)
            ),
            Caveat::SmallData(text) => text.clone(),
        }
    }
}

impl fmt::Display for Caveat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caveat::BelowTimerResolution { seconds, resolution } => write!(
                f,
                "timed at {}, below the timer's resolution of {}",
                format_seconds(*seconds),
                format_seconds(*resolution)
            ),
            Caveat::SmallData(text) => f.write_str(text),
        }
    }
}

/// Seconds in the unit that reads best: ns, µs, ms or s.
pub fn format_seconds(seconds: f64) -> String {
    let abs = seconds.abs();
    if abs < 1e-6 {
        format!("{:.0} ns", seconds * 1e9)
    } else if abs < 1e-3 {
        format!("{:.1} µs", seconds * 1e6)
    } else if abs < 1.0 {
        format!("{:.1} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// Readings of the clock made to find its resolution; the smallest step wins.
const RESOLUTION_SAMPLES: usize = 200;
/// Bound on the readings while waiting for the clock to move in one sample: a
/// clock that has not moved after this many reads is coarse, and the wait so far
/// is a lower bound of its step.
const MAX_SPINS: usize = 1_000_000;

/// The smallest step `Instant` shows in this process: the shortest non-zero
/// difference between two consecutive readings, over a few hundred tries. It
/// includes the cost of reading the clock, so it is what a timing can resolve in
/// practice (tens of nanoseconds on a TSC clock, microseconds or more on some
/// virtual machines). Measured once, on first use.
pub fn timer_resolution() -> Duration {
    static RESOLUTION: OnceLock<Duration> = OnceLock::new();
    *RESOLUTION.get_or_init(measure_resolution)
}

fn measure_resolution() -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..RESOLUTION_SAMPLES {
        let start = Instant::now();
        let mut now = Instant::now();
        for _ in 0..MAX_SPINS {
            if now != start {
                break;
            }
            now = Instant::now();
        }
        let step = now.duration_since(start);
        if step > Duration::ZERO {
            best = best.min(step);
        }
    }
    // A clock that never moved in any sample: report one nanosecond, the finest
    // `Instant` can express, rather than an impossible maximum.
    if best == Duration::MAX { Duration::from_nanos(1) } else { best }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resolution_is_a_small_positive_step() {
        let r = timer_resolution();
        assert!(r > Duration::ZERO && r < Duration::from_millis(20), "{r:?}");
    }

    #[test]
    fn only_timings_below_the_resolution_are_flagged() {
        let res = Duration::from_nanos(40);
        assert_eq!(
            Caveat::for_timing_at(25e-9, res),
            Some(Caveat::BelowTimerResolution { seconds: 25e-9, resolution: 40e-9 })
        );
        assert_eq!(Caveat::for_timing_at(40e-9, res), None, "at the resolution is measurable");
        assert_eq!(Caveat::for_timing_at(1e-3, res), None);
        assert_eq!(Caveat::for_timing_at(f64::NAN, res), None);
        assert!(Caveat::for_timings([1.0, 0.0]).is_some(), "a zero timing is always below");
    }

    #[test]
    fn caveats_explain_themselves_in_readable_units() {
        let c = Caveat::BelowTimerResolution { seconds: 25e-9, resolution: 4e-5 };
        assert_eq!(c.to_string(), "timed at 25 ns, below the timer's resolution of 40.0 µs");
        assert!(c.summary().contains("(40.0 µs)"));
        assert_eq!(format_seconds(0.0123), "12.3 ms");
        assert_eq!(format_seconds(2.5), "2.50 s");
    }
}
