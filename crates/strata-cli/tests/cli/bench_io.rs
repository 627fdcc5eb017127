//! End-to-end tests of `strata bench io`: a tiny-scale run with real worker
//! processes writing real files, then `strata bench io compare` on its results.

use std::path::{Path, PathBuf};

use strata_bench::io::catalogue::{Suite, Test, Unit};

use super::common::*;

/// Rows of a PSV file as maps from column name to cell.
fn psv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('|').collect();
    lines.map(|l| header.iter().map(|h| h.to_string()).zip(l.split('|').map(str::to_string)).collect()).collect()
}

fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} in {row:?}"))
}

/// Display names of the catalogue's tests with `unit`, with their test types.
fn catalogue(unit: Unit) -> Vec<(String, String)> {
    Suite::all()
        .into_iter()
        .flat_map(Suite::tests)
        .filter(|t: &Test| t.unit() == unit)
        .map(|t| (t.testtype().to_string(), t.name()))
        .collect()
}

#[test]
fn a_tiny_run_measures_every_test_in_every_process_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let (data, out) = (dir.path().join("data"), dir.path().join("reports"));
    let (data_arg, out_arg) = (data.to_str().unwrap(), out.to_str().unwrap());
    let printed = ok(&[
        "bench",
        "io",
        data_arg,
        "--procs",
        "1,2",
        "--scale",
        "tiny",
        "--threads",
        "1",
        "--flush",
        "fadvise",
        "--out",
        out_arg,
    ]);
    for needle in ["throughput, 2 processes", "latency, 1 process", "anchor: Strata vs dd", "sequential read (cold)"] {
        assert!(printed.contains(needle), "{needle} in\n{printed}");
    }
    let runs: Vec<PathBuf> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "one result directory: {runs:?}");
    let run = &runs[0];
    assert!(run.file_name().unwrap().to_string_lossy().starts_with("io-"));

    let throughput = psv(&run.join("throughput_total.psv"));
    let expected = catalogue(Unit::MBps);
    assert_eq!(throughput.len(), 2 * expected.len(), "every throughput test once per process count");
    for procs in ["1", "2"] {
        for (testtype, name) in &expected {
            let row = throughput
                .iter()
                .find(|r| r["numproc"] == procs && r["test"] == *name && r["testtype"] == *testtype)
                .unwrap_or_else(|| panic!("{procs} procs: no row for {testtype} | {name}"));
            assert!(number(row, "throughput") > 0.0, "{row:?}");
            assert_eq!(row["unit"], "MB/sec");
        }
    }
    for name in ["write int huge", "open append mid sym, sync once", "mmap, random read 4k", "add attribute"] {
        assert!(expected.iter().any(|(_, n)| n == name), "Nano's {name} is in the catalogue");
    }
    let latency = psv(&run.join("latency_total.psv"));
    assert_eq!(latency.len(), 2 * catalogue(Unit::Ms).len());
    assert!(
        latency.iter().all(|r| number(r, "avgLatency") > 0.0 && number(r, "maxLatency") >= number(r, "avgLatency"))
    );

    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    for (procs, workers) in [(1, 1), (2, 2)] {
        let sub = run.join(format!("{procs}p"));
        for worker in 0..workers {
            let detailed = psv(&sub.join(format!("detailed-{host}-{worker}.psv")));
            assert_eq!(detailed.len(), expected.len() + catalogue(Unit::Ms).len());
            assert!(detailed.iter().all(|r| number(r, "result") > 0.0 && r["threadnr"] == "1"), "{detailed:?}");
        }
        assert!(sub.join(format!("iostat-{host}.psv")).is_file());
        assert_eq!(psv(&sub.join(format!("{host}-throughput.psv"))).len(), expected.len());
    }
    assert!(run.join("io.html").is_file() && run.join("config.yaml").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(&data).unwrap().collect();
    assert!(leftovers.is_empty(), "test data is removed: {leftovers:?}");

    // The whole run against its single-process part: identical figures, ratio 1.
    let one = run.join("1p").join(format!("{host}-throughput.psv"));
    let compared = ok(&[
        "bench",
        "io",
        "compare",
        run.join("throughput_total.psv").to_str().unwrap(),
        one.to_str().unwrap(),
        "--labels",
        "all,single",
        "--out",
        dir.path().join("compare").to_str().unwrap(),
    ]);
    for needle in [
        "high-impact writes, 1 process",
        "reads from page cache, 2 processes",
        "all/single",
        "GEOMETRIC MEAN",
        "MAX RATIO",
        "are missing from some set",
    ] {
        assert!(compared.contains(needle), "{needle} in\n{compared}");
    }
    let csv = std::fs::read_to_string(dir.path().join("compare/io-compare.csv")).unwrap();
    let ratios: Vec<f64> = csv.lines().skip(1).filter_map(|l| l.rsplit(',').next()?.parse().ok()).collect();
    assert!(!ratios.is_empty() && ratios.iter().all(|r| (r - 1.0).abs() < 1e-12), "{csv}");
}

#[test]
fn bad_directories_and_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    let out = strata(&["bench", "io", file.to_str().unwrap(), "--scale", "tiny"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plain-file"), "{err}");

    let missing = dir.path().join("missing.psv");
    let out = strata(&["bench", "io", "compare", missing.to_str().unwrap(), file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("missing.psv"), "{err}");
    let out = strata(&["bench", "io", "compare", file.to_str().unwrap(), file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plain-file: line 1: no column \"numproc\""), "{err}");
}
