//! Counters every tick process keeps and answers over IPC (`.strata.counters[]`),
//! and the per-hop latency histograms seed 001's profiling method reads: tplog (TP
//! journal write), tppub (TP publish), rdbrecv (TP publish to RDB receipt) and
//! rdbupd (RDB insert).

use std::time::Duration;

use hdrhistogram::Histogram;
use strata_ipc::{Atom, K, Vector};

/// Message, row and byte counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages received.
    pub messages: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Rows accepted (updates) or inserted (RDB).
    pub rows: u64,
    /// Updates accepted.
    pub updates: u64,
    /// Messages refused (bad table, columns, types, unknown function).
    pub rejected: u64,
    /// Messages whose bytes did not decode.
    pub malformed: u64,
    /// Messages published to subscribers.
    pub published: u64,
    /// Bytes published to subscribers.
    pub published_bytes: u64,
    /// Updates not delivered to a subscriber because its queue was full.
    pub dropped: u64,
    /// Subscribers disconnected because they did not keep up.
    pub slow_disconnects: u64,
}

impl Counters {
    /// The counters as `(name, value)` pairs.
    pub fn pairs(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("messages", self.messages),
            ("bytes", self.bytes),
            ("rows", self.rows),
            ("updates", self.updates),
            ("rejected", self.rejected),
            ("malformed", self.malformed),
            ("published", self.published),
            ("publishedBytes", self.published_bytes),
            ("dropped", self.dropped),
            ("slowDisconnects", self.slow_disconnects),
        ]
    }
}

/// One update in this many has its processing times (tplog, tppub, rdbupd) timed:
/// the clock readings cost as much as journaling and publishing a one-row update,
/// and a median needs only a sample.
pub const TIMED_EVERY: u64 = 16;

/// A latency histogram in nanoseconds, 1 ns to 100 s at 3 significant digits.
#[derive(Clone, Debug)]
pub struct Latency {
    histogram: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency { histogram: Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds") }
    }
}

impl Latency {
    /// Records one duration.
    pub fn record(&mut self, d: Duration) {
        self.record_nanos(d.as_nanos() as u64);
    }

    /// Records one duration in nanoseconds (clamped into range).
    pub fn record_nanos(&mut self, nanos: u64) {
        self.histogram.saturating_record(nanos.max(1));
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.histogram.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `q`-quantile (0..=1) in microseconds.
    pub fn micros(&self, q: f64) -> f64 {
        self.histogram.value_at_quantile(q) as f64 / 1000.0
    }

    /// Adds another histogram's samples.
    pub fn merge(&mut self, other: &Latency) {
        let _ = self.histogram.add(&other.histogram);
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.histogram.reset();
    }
}

/// The answer to `.strata.counters[]`: a dictionary from names to long atoms, plus
/// `<hop>p50us` / `<hop>p99us` float entries for each non-empty latency.
pub fn counters_dict(counters: &Counters, gauges: &[(&str, u64)], hops: &[(&str, &Latency)]) -> K {
    let mut names = Vec::new();
    let mut values = Vec::new();
    for (name, value) in counters.pairs().into_iter().chain(gauges.iter().copied()) {
        names.push(name.to_string());
        values.push(K::Atom(Atom::Long(value as i64)));
    }
    for (hop, latency) in hops {
        if !latency.is_empty() {
            for (suffix, q) in [("p50us", 0.5), ("p99us", 0.99)] {
                names.push(format!("{hop}{suffix}"));
                values.push(K::Atom(Atom::Float(latency.micros(q))));
            }
        }
    }
    K::dict(K::vector(Vector::Symbol(names)), K::List(values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_report_quantiles() {
        let mut l = Latency::default();
        for us in 1..=100u64 {
            l.record(Duration::from_micros(us));
        }
        assert!((l.micros(0.5) - 50.0).abs() < 0.1);
        assert!((l.micros(0.99) - 99.0).abs() < 0.1);
        let d = counters_dict(&Counters { rows: 7, ..Default::default() }, &[("subscribers", 2)], &[("tplog", &l)]);
        let K::Dict { keys, values, .. } = d else { panic!() };
        let names = keys.as_symbols().unwrap();
        assert!(names.contains(&"tplogp99us") && names.contains(&"subscribers"));
        assert_eq!(values.count(), names.len());
    }
}
