//! Device throughput from `/proc/diskstats`, sampled around each test (Nano runs
//! `iostat` the same way): sectors read and written by the devices under the tested
//! directories, as MB/s over the test's wall time.

use std::time::Instant;

use super::results::DiskRates;

/// Bytes per sector in `/proc/diskstats` (always 512, whatever the device's).
const SECTOR: u64 = 512;

/// Counters of a set of devices at one instant.
#[derive(Clone, Debug)]
pub struct DiskSample {
    at: Instant,
    sectors_read: u64,
    sectors_written: u64,
}

/// The devices whose counters are sampled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Devices {
    names: Vec<String>,
}

impl Devices {
    /// The named devices (`/proc/diskstats` names), each counted once.
    pub fn new(names: impl IntoIterator<Item = String>) -> Devices {
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort();
        names.dedup();
        Devices { names }
    }

    /// Whether there is any device to sample.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The device names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The devices' counters now (none if there are no devices or the file is unreadable).
    pub fn sample(&self) -> Option<DiskSample> {
        if self.names.is_empty() {
            return None;
        }
        let text = std::fs::read_to_string("/proc/diskstats").ok()?;
        let (sectors_read, sectors_written) = self.sectors(&text);
        Some(DiskSample { at: Instant::now(), sectors_read, sectors_written })
    }

    /// Sectors read and written by the devices in `/proc/diskstats` text (fields 6
    /// and 10 of a device's line).
    fn sectors(&self, diskstats: &str) -> (u64, u64) {
        let mut totals = (0, 0);
        for line in diskstats.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() >= 10 && self.names.iter().any(|n| n == fields[2]) {
                totals.0 += fields[5].parse::<u64>().unwrap_or(0);
                totals.1 += fields[9].parse::<u64>().unwrap_or(0);
            }
        }
        totals
    }
}

/// MB/s read and written between two samples.
pub fn rates(before: &Option<DiskSample>, after: &Option<DiskSample>) -> Option<DiskRates> {
    let (before, after) = (before.as_ref()?, after.as_ref()?);
    let seconds = after.at.duration_since(before.at).as_secs_f64().max(1e-9);
    let mbps = |a: u64, b: u64| a.saturating_sub(b) as f64 * SECTOR as f64 / 1e6 / seconds;
    Some(DiskRates {
        read_mbps: mbps(after.sectors_read, before.sectors_read),
        write_mbps: mbps(after.sectors_written, before.sectors_written),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn sectors_are_summed_over_the_named_devices() {
        let text = "\
 254 0 vda 67774 7418 5180706 85446 13798 46930 18134088 69555 0 13936 156559
 254 1 vda1 10 0 100 0 10 0 200 0 0 0 0
 259 0 nvme0n1 1 0 4000 0 1 0 6000 0 0 0 0
";
        let devices = Devices::new(["vda".to_string(), "nvme0n1".to_string(), "vda".to_string()]);
        assert_eq!(devices.names(), ["nvme0n1", "vda"]);
        assert_eq!(devices.sectors(text), (5_184_706, 18_140_088));
        let before = Some(DiskSample { at: Instant::now(), sectors_read: 0, sectors_written: 1000 });
        let later = before.as_ref().unwrap().at + Duration::from_secs(2);
        let after = Some(DiskSample { at: later, sectors_read: 4000, sectors_written: 3000 });
        let rates = rates(&before, &after).unwrap();
        assert!((rates.read_mbps - 1.024).abs() < 1e-9 && (rates.write_mbps - 0.512).abs() < 1e-9);
        assert!(Devices::new(Vec::new()).sample().is_none());
    }
}
