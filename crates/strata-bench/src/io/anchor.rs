//! The anchor: Strata's sequential write and cold read of the huge vector against
//! `dd` moving the same bytes in the same directory, so the figures read as a share
//! of what the device gives a plain tool.
//!
//! Write: Strata writes the column file and fsyncs it; `dd` copies the same bytes
//! (Strata's file, just written and so in the page cache) to a new file in 1 MiB
//! blocks with `conv=fdatasync`. Not `/dev/zero`: storage that compresses or detects
//! zeros writes them far faster than real data, which would flatter `dd`. Read: after
//! a flush, Strata maps the column and touches every page; `dd` reads its copy in
//! 1 MiB blocks to `/dev/null`. The best of a few alternating rounds counts for each,
//! so drift in the machine falls on both.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::IoBenchError;
use super::flush::{FlushMode, flush};
use super::machine::Root;
use super::ops;
use super::vectors;

/// Rounds of each measurement; the best counts.
pub const ROUNDS: usize = 5;
const MIB: usize = 1 << 20;

/// One operation on one directory: Strata's figure against `dd`'s.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorRow {
    /// The directory.
    pub root: PathBuf,
    /// Its file system.
    pub fs_type: String,
    /// `sequential write` or `sequential read (cold)`.
    pub operation: &'static str,
    /// Bytes moved per round.
    pub bytes: u64,
    /// Strata's best MB/s.
    pub strata_mbps: f64,
    /// `dd`'s best MB/s (none when `dd` could not run).
    pub dd_mbps: Option<f64>,
}

impl AnchorRow {
    /// Strata's figure as a percentage of `dd`'s.
    pub fn percent_of_dd(&self) -> Option<f64> {
        self.dd_mbps.filter(|d| *d > 0.0).map(|d| 100.0 * self.strata_mbps / d)
    }
}

/// Measures the anchor in `dir` (a scratch directory under `root`, removed after)
/// with a file of `longs` 8-byte values (a whole number of MiB).
pub fn measure(root: &Root, dir: &Path, longs: usize, mode: FlushMode) -> Result<Vec<AnchorRow>, IoBenchError> {
    std::fs::create_dir_all(dir).map_err(|e| IoBenchError::io(dir, e))?;
    let result = measure_in(root, dir, longs, mode);
    std::fs::remove_dir_all(dir).map_err(|e| IoBenchError::io(dir, e))?;
    result
}

fn measure_in(root: &Root, dir: &Path, longs: usize, mode: FlushMode) -> Result<Vec<AnchorRow>, IoBenchError> {
    let (strata_file, dd_file) = (dir.join("readhuge"), dir.join("ddfile"));
    let column = vectors::til(longs);
    let bytes = (longs * 8) as u64;
    let blocks = (longs * 8).div_ceil(MIB);
    let mut best = [0.0f64; 4];
    let mut dd_ok = true;
    for _ in 0..ROUNDS {
        let clock = Instant::now();
        ops::write_column(&strata_file, &column)?;
        ops::sync_files(std::slice::from_ref(&strata_file))?;
        best[0] = best[0].max(mbps(bytes, clock));

        let dd_write = [
            format!("if={}", strata_file.display()),
            format!("of={}", dd_file.display()),
            "bs=1M".into(),
            format!("count={blocks}"),
            "conv=fdatasync".into(),
        ];
        dd_ok &= dd(&dd_write, bytes, &mut best[1]);

        flush(mode, &[dir.to_path_buf()])?;
        let clock = Instant::now();
        ops::read_touching(&strata_file)?;
        best[2] = best[2].max(mbps(bytes, clock));

        flush(mode, &[dir.to_path_buf()])?;
        let dd_read = [format!("if={}", dd_file.display()), "of=/dev/null".into(), "bs=1M".into()];
        dd_ok &= dd(&dd_read, bytes, &mut best[3]);
    }
    let row = |operation, strata_mbps, dd_mbps: f64| AnchorRow {
        root: root.path.clone(),
        fs_type: root.fs_type.clone(),
        operation,
        bytes,
        strata_mbps,
        dd_mbps: dd_ok.then_some(dd_mbps),
    };
    Ok(vec![row("sequential write", best[0], best[1]), row("sequential read (cold)", best[2], best[3])])
}

fn mbps(bytes: u64, since: Instant) -> f64 {
    bytes as f64 / since.elapsed().as_secs_f64().max(1e-9) / 1e6
}

/// Runs `dd` with `args`, keeping the best MB/s in `best`; false if it did not run.
fn dd(args: &[String], bytes: u64, best: &mut f64) -> bool {
    let clock = Instant::now();
    let status = Command::new("dd").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !matches!(status, Ok(s) if s.success()) {
        return false;
    }
    *best = best.max(mbps(bytes, clock));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strata_and_dd_both_measure_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::probe(dir.path()).unwrap();
        let scratch = dir.path().join("anchor");
        let rows = measure(&root, &scratch, 1 << 17, FlushMode::Fadvise).unwrap();
        assert_eq!(rows.len(), 2);
        for row in &rows {
            assert_eq!(row.bytes, 1 << 20);
            assert!(row.strata_mbps > 0.0 && row.dd_mbps.unwrap() > 0.0, "{row:?}");
            assert!(row.percent_of_dd().unwrap() > 0.0);
        }
        assert!(!scratch.exists(), "the scratch directory is removed");
    }
}
