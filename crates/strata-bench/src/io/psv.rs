//! Nano's result files, pipe-separated with its column names and orders, so
//! notebooks and scripts written for Nano read Strata's results unchanged:
//!
//! - `detailed-HOST-<i>.psv`: one row per test for worker `i`;
//! - `iostat-HOST.psv`: device MB/s per test;
//! - `HOST-throughput.psv` and `HOST-latency.psv`: the workers' results aggregated
//!   per test, as Nano's `postproc.q` does.

use std::path::Path;

use super::IoBenchError;
use super::catalogue::Unit;
use super::results::ProcsRun;

/// Header of the detailed per-worker file.
pub const DETAILED_HEADER: &str =
    "threadnr|os|testtype|testid|test|qexpression|repeat|length|starttime|endtime|result|unit";
/// Header of the aggregated throughput file.
pub const THROUGHPUT_HEADER: &str = "numproc|threadnr|os|testtype|test|qexpression|accuracy|throughput|unit|\
iostat_read_throughput|iostat_write_throughput|iostat_readwrite_throughput";
/// Header of the aggregated latency file.
pub const LATENCY_HEADER: &str = "numproc|threadnr|os|testtype|test|qexpression|accuracy|avgLatency|maxLatency|unit";
/// Header of the device-throughput file.
pub const IOSTAT_HEADER: &str = "testid|read MB/s|write MB/s|rw MB/s";

/// A wall-clock instant as kdb+ prints a `.z.n` timespan: the UTC time of day,
/// `0D14:30:00.123456789`.
pub fn timespan(unix_ns: u64) -> String {
    let day_ns = unix_ns % 86_400_000_000_000;
    let (secs, nanos) = (day_ns / 1_000_000_000, day_ns % 1_000_000_000);
    format!("0D{:02}:{:02}:{:02}.{nanos:09}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// A number as q's `string` shows a float (7 significant digits, no trailing zeros),
/// cut to 5 characters: Nano's accuracy column.
pub fn accuracy_text(value: f64) -> String {
    let digits = 7usize.saturating_sub(value.abs().max(1.0).log10().floor() as usize + 1);
    let mut text = format!("{value:.digits$}");
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    text.chars().take(5).collect()
}

/// The detailed file of worker `worker` of `run`.
pub fn detailed(run: &ProcsRun, worker: usize, threads: usize, os: &str) -> String {
    let mut out = format!("{DETAILED_HEADER}\n");
    for outcome in &run.outcomes {
        let test = &outcome.test;
        for m in outcome.measurements.iter().filter(|m| m.worker == worker) {
            // Nano prints 4 decimals of ms; metadata calls take microseconds, so 6 keep
            // their figures (any reader of Nano's files parses either).
            let decimals = if test.unit() == Unit::Ms { 6 } else { 2 };
            out.push_str(&format!(
                "{threads}|{os}|{}|{}|{}|{}|{}|{}|{}|{}|{:.decimals$}|{}\n",
                test.testtype(),
                test.id(),
                test.name(),
                test.qexpression(),
                m.work.repeat,
                m.work.length,
                timespan(m.start_ns),
                timespan(m.end_ns),
                m.value(test.unit()),
                test.unit().psv()
            ));
        }
    }
    out
}

/// The device-throughput file of `run` (blank figures where no device was sampled).
pub fn iostat(run: &ProcsRun) -> String {
    let mut out = format!("{IOSTAT_HEADER}\n");
    for outcome in &run.outcomes {
        let (read, write, both) = iostat_cells(outcome.disk);
        out.push_str(&format!("{}|{read}|{write}|{both}\n", outcome.test.id()));
    }
    out
}

fn iostat_cells(disk: Option<super::results::DiskRates>) -> (String, String, String) {
    match disk {
        Some(d) => (
            format!("{:.2}", d.read_mbps),
            format!("{:.2}", d.write_mbps),
            format!("{:.2}", d.read_mbps + d.write_mbps),
        ),
        None => Default::default(),
    }
}

/// Throughput rows of `run` (no header), as Nano's post-processing aggregates them.
pub fn throughput_rows(run: &ProcsRun, threads: usize, os: &str) -> String {
    let mut out = String::new();
    for outcome in run.outcomes.iter().filter(|o| o.test.unit() == Unit::MBps) {
        let test = &outcome.test;
        let (read, write, both) = iostat_cells(outcome.disk);
        out.push_str(&format!(
            "{}|{threads}|{os}|{}|{}|{}|{}|{:.2}|{}|{read}|{write}|{both}\n",
            run.procs,
            test.testtype(),
            test.name(),
            test.qexpression(),
            accuracy_text(outcome.accuracy()),
            outcome.throughput(),
            Unit::MBps.psv()
        ));
    }
    out
}

/// Latency rows of `run` (no header).
pub fn latency_rows(run: &ProcsRun, threads: usize, os: &str) -> String {
    let mut out = String::new();
    for outcome in run.outcomes.iter().filter(|o| o.test.unit() == Unit::Ms) {
        let test = &outcome.test;
        out.push_str(&format!(
            "{}|{threads}|{os}|{}|{}|{}|{}|{:.6}|{:.6}|{}\n",
            run.procs,
            test.testtype(),
            test.name(),
            test.qexpression(),
            accuracy_text(outcome.accuracy()),
            outcome.avg_latency(),
            outcome.max_latency(),
            Unit::Ms.psv()
        ));
    }
    out
}

/// One row of a throughput file, as the comparison needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ThroughputRow {
    /// Worker processes.
    pub numproc: usize,
    /// Nano's test type.
    pub testtype: String,
    /// Display name.
    pub test: String,
    /// MB/s summed over workers.
    pub throughput: f64,
}

/// Reads a throughput file written by Strata or by Nano (`HOST-throughput.psv`,
/// `throughput_total.psv`): columns are found by name, so extra ones are ignored.
/// Repeated header lines (concatenated files) are skipped.
pub fn read_throughput(path: &Path) -> Result<Vec<ThroughputRow>, IoBenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| IoBenchError::io(path, e))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(IoBenchError::psv(path, 1, "empty file; expected Nano's throughput header"));
    };
    let names: Vec<&str> = header.split('|').map(str::trim).collect();
    let column = |name: &str| {
        names.iter().position(|n| *n == name).ok_or_else(|| {
            IoBenchError::psv(path, 1, format!("no column {name:?} in the header {header:?} (a Nano throughput file?)"))
        })
    };
    let (numproc, testtype, test, throughput) =
        (column("numproc")?, column("testtype")?, column("test")?, column("throughput")?);
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line == header {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != names.len() {
            let detail = format!("{} fields, expected {} like the header", cells.len(), names.len());
            return Err(IoBenchError::psv(path, i + 1, detail));
        }
        let number = |at: usize, what: &str| {
            cells[at].parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| {
                IoBenchError::psv(path, i + 1, format!("{what} {:?} is not a non-negative number", cells[at]))
            })
        };
        let procs = number(numproc, "numproc")?;
        rows.push(ThroughputRow {
            numproc: procs as usize,
            testtype: cells[testtype].to_string(),
            test: cells[test].to_string(),
            throughput: number(throughput, "throughput")?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::catalogue::Test;
    use crate::io::results::{DiskRates, Measurement, TestOutcome, Work};

    #[test]
    fn times_and_accuracy_print_like_kdb() {
        assert_eq!(timespan(1_735_828_200_123_456_789), "0D14:30:00.123456789");
        assert_eq!(accuracy_text(99.978531), "99.97");
        assert_eq!(accuracy_text(100.0), "100");
        assert_eq!(accuracy_text(-1234.5678), "-1234");
        assert_eq!(accuracy_text(5.25), "5.25");
    }

    fn run() -> ProcsRun {
        let m = |worker, start_ns| Measurement {
            worker,
            start_ns,
            end_ns: start_ns + 1_000_000,
            elapsed_ns: 1_000_000,
            work: Work { amount: 1_000_000, repeat: 1, length: 125_000 },
        };
        let disk = Some(DiskRates { read_mbps: 1.0, write_mbps: 900.0 });
        ProcsRun {
            procs: 2,
            outcomes: vec![
                TestOutcome { test: Test::AppendMidFloat, measurements: vec![m(0, 0), m(1, 10_000)], disk },
                TestOutcome { test: Test::Size, measurements: vec![m(0, 0), m(1, 0)], disk: None },
            ],
        }
    }

    #[test]
    fn files_have_nanos_columns() {
        let run = run();
        let detailed = detailed(&run, 1, 4, "l64");
        let lines: Vec<&str> = detailed.lines().collect();
        assert_eq!(lines[0], DETAILED_HEADER);
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("4|l64|write disk|.write.appendLargeFloat|open append mid float, sync once|"));
        assert!(lines[1].ends_with("|1000.00|MB/sec"), "{}", lines[1]);
        assert!(lines[2].ends_with("|0.000001|ms"), "{}", lines[2]);
        let rows = throughput_rows(&run, 4, "l64");
        assert_eq!(
            rows,
            "2|4|l64|write disk|open append mid float, sync once|append_column_file; sync_all|99|2000.00|MB/sec|\
             1.00|900.00|901.00\n"
        );
        assert!(latency_rows(&run, 4, "l64").starts_with("2|4|l64|meta|size|fs::metadata|100|0.000001|0.000001|ms"));
        assert!(iostat(&run).ends_with(".meta.size|||\n"));
    }

    #[test]
    fn throughput_files_read_back_and_bad_ones_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.psv");
        let text = format!("{THROUGHPUT_HEADER}\n{}{THROUGHPUT_HEADER}\n{}", throughput_rows(&run(), 4, "l64"), {
            let mut one = run();
            one.procs = 1;
            throughput_rows(&one, 4, "l64")
        });
        std::fs::write(&path, text).unwrap();
        let rows = read_throughput(&path).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].numproc, rows[1].numproc), (2, 1));
        assert_eq!(rows[0].test, "open append mid float, sync once");
        assert_eq!(rows[0].throughput, 2000.0);

        std::fs::write(&path, "numproc|testtype|test|throughput\n1|write disk|x|fast\n").unwrap();
        let err = read_throughput(&path).unwrap_err().to_string();
        assert!(err.contains("t.psv: line 2: throughput \"fast\""), "{err}");
        std::fs::write(&path, "numproc|testtype|test\n").unwrap();
        assert!(read_throughput(&path).unwrap_err().to_string().contains("line 1: no column \"throughput\""));
        std::fs::write(&path, "numproc|testtype|test|throughput\n1|a|b\n").unwrap();
        assert!(read_throughput(&path).unwrap_err().to_string().contains("3 fields, expected 4"));
    }
}
