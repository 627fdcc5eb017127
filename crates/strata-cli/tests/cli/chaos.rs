//! `strata bench chaos` end to end: real tickerplant, RDB and HDB processes killed
//! with SIGKILL at random moments (the RDB also while it writes an end of day) under
//! a sync feed; the run fails unless every acknowledged row is stored exactly once
//! and nothing refused or never sent is stored. Short runs, several seeds.

use super::common::*;

fn chaos(seed: &str) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let report = ok(&[
        "bench",
        "chaos",
        "--minutes",
        "0.4",
        "--seed",
        seed,
        "--kill-every",
        "1-3",
        "--end-of-day-every",
        "3",
        "--rate",
        "400",
        "--dir",
        dir.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(report.contains("PASS: nothing acknowledged lost, nothing duplicated"), "{report}");
    let csv = std::fs::read_to_string(out.path().join("chaos.csv")).unwrap();
    assert!(csv.contains("processes killed"), "the outcome table is saved as CSV:\n{csv}");
}

#[test]
fn chaos_seed_1_loses_and_duplicates_nothing() {
    chaos("1");
}

#[test]
fn chaos_seed_2_loses_and_duplicates_nothing() {
    chaos("2");
}
