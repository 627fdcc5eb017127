//! What the workers measured and how Nano turns it into figures: throughput summed
//! over workers, latency averaged, and the "accuracy" of the simultaneous start.

use super::catalogue::{Test, Unit};

/// How much a test did in one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// Bytes moved (throughput tests) or operations made (latency tests).
    pub amount: u64,
    /// Nano's `repeat` column: how many times the timed operation ran.
    pub repeat: u64,
    /// Nano's `length` column: values per operation.
    pub length: u64,
}

/// One worker's run of one test.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The worker's index.
    pub worker: usize,
    /// Wall-clock start, nanoseconds since the Unix epoch (comparable across workers).
    pub start_ns: u64,
    /// Wall-clock end, `start_ns + elapsed_ns`.
    pub end_ns: u64,
    /// Monotonic duration in nanoseconds (at least 1).
    pub elapsed_ns: u64,
    /// What was done.
    pub work: Work,
}

impl Measurement {
    /// Decimal MB/s (bytes per microsecond) or milliseconds per operation.
    pub fn value(&self, unit: Unit) -> f64 {
        let elapsed = self.elapsed_ns.max(1) as f64;
        match unit {
            Unit::MBps => self.work.amount as f64 * 1e3 / elapsed,
            Unit::Ms => elapsed / 1e6 / self.work.amount.max(1) as f64,
        }
    }
}

/// Device throughput sampled from `/proc/diskstats` around a test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskRates {
    /// MB/s read by the devices under the tested directories.
    pub read_mbps: f64,
    /// MB/s written.
    pub write_mbps: f64,
}

/// Every worker's run of one test, with the devices' throughput meanwhile.
#[derive(Clone, Debug, PartialEq)]
pub struct TestOutcome {
    /// The test.
    pub test: Test,
    /// One per worker, in worker order.
    pub measurements: Vec<Measurement>,
    /// Device throughput during the test (none when no device was found).
    pub disk: Option<DiskRates>,
}

impl TestOutcome {
    /// Nano's throughput: the sum of the workers' MB/s.
    pub fn throughput(&self) -> f64 {
        self.measurements.iter().map(|m| m.value(Unit::MBps)).sum()
    }

    /// Mean latency over workers, in ms.
    pub fn avg_latency(&self) -> f64 {
        let values: Vec<f64> = self.measurements.iter().map(|m| m.value(Unit::Ms)).collect();
        values.iter().sum::<f64>() / values.len().max(1) as f64
    }

    /// Worst latency over workers, in ms.
    pub fn max_latency(&self) -> f64 {
        self.measurements.iter().map(|m| m.value(Unit::Ms)).fold(0.0, f64::max)
    }

    /// Nano's accuracy: `100 * (1 - spread of the start times / mean duration)`; 100
    /// means every worker started at the same instant.
    pub fn accuracy(&self) -> f64 {
        let starts = self.measurements.iter().map(|m| m.start_ns);
        let (Some(first), Some(last)) = (starts.clone().min(), starts.max()) else { return 100.0 };
        let mean = self.measurements.iter().map(|m| m.elapsed_ns as f64).sum::<f64>() / self.measurements.len() as f64;
        100.0 * (1.0 - (last - first) as f64 / mean.max(1.0))
    }
}

/// Every test of one process count.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcsRun {
    /// Worker processes.
    pub procs: usize,
    /// Outcomes in run order.
    pub outcomes: Vec<TestOutcome>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(worker: usize, start_ns: u64, elapsed_ns: u64, amount: u64) -> Measurement {
        Measurement {
            worker,
            start_ns,
            end_ns: start_ns + elapsed_ns,
            elapsed_ns,
            work: Work { amount, repeat: 1, length: 1 },
        }
    }

    #[test]
    fn nano_sums_throughput_and_averages_latency() {
        let outcome = TestOutcome {
            test: Test::CloseOpen,
            measurements: vec![m(0, 1_000, 2_000_000, 4_000_000), m(1, 1_500, 4_000_000, 4_000_000)],
            disk: None,
        };
        // 4 MB in 2 ms = 2000 MB/s, in 4 ms = 1000 MB/s.
        assert!((outcome.throughput() - 3000.0).abs() < 1e-9);
        // 2 ms / 4e6 ops and 4 ms / 4e6 ops.
        assert!((outcome.avg_latency() - 0.75e-6).abs() < 1e-15);
        assert!((outcome.max_latency() - 1e-6).abs() < 1e-15);
        // Starts 500 ns apart over a 3 ms mean.
        assert!((outcome.accuracy() - 100.0 * (1.0 - 500.0 / 3e6)).abs() < 1e-9);
    }
}
