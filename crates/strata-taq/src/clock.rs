//! When events happen: a U-shaped intraday activity profile from 04:00 to 20:00
//! (extended hours included, as in daily TAQ), and bursty nanosecond event times.

use crate::rng::{Rng, cumulative};

/// Nanoseconds per second.
pub const NS: i64 = 1_000_000_000;
/// First second of the day's data: 04:00.
pub const SESSION_START: i64 = 4 * 3600;
/// End of the day's data: 20:00.
pub const SESSION_END: i64 = 20 * 3600;
const OPEN: f64 = 9.5 * 3600.0;
const CLOSE: f64 = 16.0 * 3600.0;

/// The intraday activity profile, one weight per second of the session, ready to
/// draw seconds from.
#[derive(Clone, Debug)]
pub struct Profile {
    cumulative: Vec<f64>,
}

impl Profile {
    /// Quiet pre-market, a spike at the open, a midday lull, a run-up to the close
    /// and a thin evening.
    pub fn us_equities() -> Profile {
        let weights: Vec<f64> = (SESSION_START..SESSION_END)
            .map(|s| {
                let t = s as f64;
                if t < OPEN {
                    0.03 + 0.1 * (-(OPEN - t) / 900.0).exp()
                } else if t < CLOSE {
                    1.0 + 4.0 * (-(t - OPEN) / 1200.0).exp() + 2.5 * (-(CLOSE - t) / 900.0).exp()
                } else {
                    0.02 + 0.4 * (-(t - CLOSE) / 300.0).exp()
                }
            })
            .collect();
        Profile { cumulative: cumulative(&weights) }
    }

    /// A random instant of the session, nanoseconds since midnight.
    pub fn draw(&self, rng: &mut Rng) -> i64 {
        let second = SESSION_START + rng.pick(&self.cumulative) as i64;
        second * NS + rng.below(NS as u64) as i64
    }
}

/// How event times cluster.
#[derive(Clone, Copy, Debug)]
pub struct Bursts {
    /// Mean events per burst.
    pub mean_size: f64,
    /// Share of events stamped with exactly the previous event's time.
    pub repeat: f64,
    /// Shortest and longest gap inside a burst, nanoseconds (log-uniform between).
    pub gap_ns: (f64, f64),
}

/// `n` sorted event times (ns since midnight) for one instrument: bursts that start
/// at instants drawn from `profile`, events inside a burst microseconds to
/// milliseconds apart, some stamped with the same nanosecond as the one before.
pub fn event_times(n: usize, profile: &Profile, bursts: Bursts, rng: &mut Rng) -> Vec<i64> {
    let mut times = Vec::with_capacity(n + 16);
    while times.len() < n {
        let mut t = profile.draw(rng);
        let size = rng.geometric(bursts.mean_size) as usize;
        for i in 0..size.min(n - times.len()) {
            if i > 0 && !rng.chance(bursts.repeat) {
                t += rng.log_uniform(bursts.gap_ns.0, bursts.gap_ns.1) as i64;
            }
            times.push(t.min(SESSION_END * NS - 1));
        }
    }
    times.sort_unstable();
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_sorted_inside_the_session_and_busiest_after_the_open() {
        let profile = Profile::us_equities();
        let mut rng = Rng::new(4);
        let bursts = Bursts { mean_size: 3.0, repeat: 0.1, gap_ns: (1e3, 1e7) };
        let times = event_times(50_000, &profile, bursts, &mut rng);
        assert_eq!(times.len(), 50_000);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(times[0] >= SESSION_START * NS && *times.last().unwrap() < SESSION_END * NS);
        let in_minute = |start: i64| times.iter().filter(|&&t| t >= start * NS && t < (start + 60) * NS).count();
        let open = (OPEN as i64) + 1;
        assert!(in_minute(open) > 3 * in_minute(12 * 3600), "open beats midday");
        assert!(in_minute(12 * 3600) > 3 * in_minute(5 * 3600), "midday beats pre-market");
        let repeats = times.windows(2).filter(|w| w[0] == w[1]).count() as f64 / times.len() as f64;
        assert!(repeats > 0.03 && repeats < 0.1, "{repeats}");
    }
}
