//! End-to-end test of `strata bench scale` at a tiny size: real `strata sql`
//! processes and a real HDB over a growing database.

use super::common::*;

#[test]
fn scale_measures_every_path_at_every_size_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let (scratch, out) = (dir.path().join("scratch"), dir.path().join("out"));
    let args = ["bench", "scale", "--sizes", "3,1", "--repeats", "1", "--quotes", "300", "--trades", "40"];
    let text = ok(&[&args[..], &["--scratch", scratch.to_str().unwrap(), "--out", out.to_str().unwrap()]].concat());
    assert!(text.contains("targets (largest database against the smallest)"), "{text}");
    let csv = std::fs::read_to_string(out.join("scale-measurements.csv")).unwrap();
    for size in ["1", "3"] {
        for (path, what) in [
            ("library", "open"),
            ("library", "one day"),
            ("strata sql", "one day"),
            ("strata sql", "all days"),
            ("hdb", "start until it answers"),
            ("hdb", "one day"),
        ] {
            let row = format!("{size},{path},{what},");
            assert!(csv.lines().any(|l| l.starts_with(&row)), "no {row} in\n{csv}");
        }
    }
    // strata sql reports its own peak memory: a real figure on every row.
    for line in csv.lines().filter(|l| l.contains(",strata sql,")) {
        let peak: f64 = line.split(',').nth(5).unwrap().parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(peak > 1.0, "{line}");
    }
    assert!(std::fs::read_to_string(out.join("scale.html")).unwrap().contains("<svg"));
    // --scratch is kept, and refused when a database is already there.
    assert!(scratch.join("db").join("tradeNorm.schema").is_file());
    let err = fails(&[&args[..], &["--scratch", scratch.to_str().unwrap(), "--out", out.to_str().unwrap()]].concat());
    assert!(err.contains("a database is already there"), "{err}");
}
