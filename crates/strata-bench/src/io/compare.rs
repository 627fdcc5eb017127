//! `strata bench io compare`: result sets side by side, the way the KX file-system
//! study lays them out: per process count, four tables (high-impact writes, other
//! writes, reads from disk, reads from the page cache), a ratio column of the first
//! set against each other, and a geometric-mean and a maximum row under each table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::IoBenchError;
use super::psv::{ThroughputRow, read_throughput};
use crate::report::{Cell, Column, Report, Table};

/// Writes that decide end-of-day and ingestion speed (the study's "high-impact"
/// table): vector writes from small to huge, mid-size appends, sort and attribute.
pub const HIGH_IMPACT: [&str; 10] = [
    "add attribute",
    "disk sort",
    "open append mid float, sync once",
    "open append mid sym, sync once",
    "write float large",
    "write int huge",
    "write int large",
    "write int medium",
    "write int small",
    "write sym large",
];

/// Which table a test goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// [`HIGH_IMPACT`] tests.
    HighImpactWrites,
    /// Every other test that writes to disk (small appends, replaces, syncs).
    OtherWrites,
    /// Reads whose test type starts `read disk`.
    DiskReads,
    /// Reads whose test type starts `read mem`.
    CacheReads,
    /// Anything else (Nano's CPU tests, say).
    Other,
}

impl Category {
    /// The category of a test by its test type and display name.
    pub fn of(testtype: &str, test: &str) -> Category {
        if HIGH_IMPACT.contains(&test) {
            Category::HighImpactWrites
        } else if testtype.contains("write disk") {
            Category::OtherWrites
        } else if testtype.starts_with("read disk") {
            Category::DiskReads
        } else if testtype.starts_with("read mem") {
            Category::CacheReads
        } else {
            Category::Other
        }
    }

    /// The table's heading.
    pub fn title(self) -> &'static str {
        match self {
            Category::HighImpactWrites => "high-impact writes",
            Category::OtherWrites => "other writes",
            Category::DiskReads => "reads from disk",
            Category::CacheReads => "reads from page cache",
            Category::Other => "other tests",
        }
    }
}

/// One labelled set of results (one file system, say).
#[derive(Clone, Debug, PartialEq)]
pub struct ResultSet {
    /// The column heading.
    pub label: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Its rows.
    pub rows: Vec<ThroughputRow>,
}

/// One test across the sets.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRow {
    /// Nano's test type.
    pub testtype: String,
    /// Display name.
    pub test: String,
    /// MB/s per set (none where a set lacks the test).
    pub values: Vec<Option<f64>>,
    /// First set's MB/s over each other set's (one fewer than `values`).
    pub ratios: Vec<Option<f64>>,
}

/// One table: a process count and a category.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Worker processes.
    pub numproc: usize,
    /// Which tests.
    pub category: Category,
    /// Tests sorted by test type, then name.
    pub rows: Vec<CompareRow>,
    /// Geometric mean per set, over the rows every set has.
    pub geomean: Vec<f64>,
    /// Geometric mean of each ratio column over the same rows.
    pub geomean_ratios: Vec<f64>,
    /// Largest value per set over those rows.
    pub max: Vec<f64>,
    /// Largest ratio per ratio column over those rows.
    pub max_ratios: Vec<f64>,
    /// How many rows every set has (the rows the summaries cover).
    pub complete: usize,
}

/// Compares the sets: one [`Comparison`] per process count and category present.
pub fn compare(sets: &[ResultSet]) -> Vec<Comparison> {
    let keys: BTreeSet<(usize, Category, &str, &str)> = sets
        .iter()
        .flat_map(|s| &s.rows)
        .map(|r| (r.numproc, Category::of(&r.testtype, &r.test), r.testtype.as_str(), r.test.as_str()))
        .collect();
    let mut comparisons: Vec<Comparison> = Vec::new();
    for (numproc, category, testtype, test) in keys {
        let values: Vec<Option<f64>> = sets
            .iter()
            .map(|s| {
                s.rows
                    .iter()
                    .find(|r| r.numproc == numproc && r.testtype == testtype && r.test == test)
                    .map(|r| r.throughput)
            })
            .collect();
        let ratios = values[1..].iter().map(|v| ratio(values[0], *v)).collect();
        let row = CompareRow { testtype: testtype.into(), test: test.into(), values, ratios };
        match comparisons.last_mut() {
            Some(c) if c.numproc == numproc && c.category == category => c.rows.push(row),
            _ => comparisons.push(Comparison {
                numproc,
                category,
                rows: vec![row],
                geomean: Vec::new(),
                geomean_ratios: Vec::new(),
                max: Vec::new(),
                max_ratios: Vec::new(),
                complete: 0,
            }),
        }
    }
    for c in &mut comparisons {
        let complete: Vec<&CompareRow> =
            c.rows.iter().filter(|r| r.values.iter().chain(&r.ratios).all(Option::is_some)).collect();
        let column = |pick: &dyn Fn(&CompareRow) -> f64| complete.iter().map(|r| pick(r)).collect::<Vec<f64>>();
        let n = sets.len();
        c.geomean = (0..n).map(|k| geometric_mean(&column(&|r| r.values[k].expect("complete")))).collect();
        c.max = (0..n).map(|k| maximum(&column(&|r| r.values[k].expect("complete")))).collect();
        c.geomean_ratios = (0..n - 1).map(|k| geometric_mean(&column(&|r| r.ratios[k].expect("complete")))).collect();
        c.max_ratios = (0..n - 1).map(|k| maximum(&column(&|r| r.ratios[k].expect("complete")))).collect();
        c.complete = complete.len();
    }
    comparisons
}

/// `a / b`, when both are known and `b` is positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The geometric mean of positive values (NaN when there are none or one is not
/// positive: a mean of logs cannot include it).
pub fn geometric_mean(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|v| *v <= 0.0) {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

fn maximum(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

/// Reads the sets at `paths` (throughput files, or result directories holding one),
/// labelled by `labels` or else by their directory or file name.
pub fn load(paths: &[PathBuf], labels: &[String]) -> Result<Vec<ResultSet>, IoBenchError> {
    if paths.len() < 2 {
        return Err(IoBenchError::Invalid("compare needs at least two result files".into()));
    }
    if !labels.is_empty() && labels.len() != paths.len() {
        return Err(IoBenchError::Invalid(format!("{} labels for {} result files", labels.len(), paths.len())));
    }
    let mut sets: Vec<ResultSet> = Vec::new();
    for (i, given) in paths.iter().enumerate() {
        let path = throughput_file(given)?;
        let rows = read_throughput(&path)?;
        if rows.is_empty() {
            return Err(IoBenchError::psv(&path, 2, "no results below the header"));
        }
        let mut label = labels.get(i).cloned().unwrap_or_else(|| default_label(&path));
        if sets.iter().any(|s| s.label == label) {
            label = format!("{label}#{}", i + 1);
        }
        sets.push(ResultSet { label, path, rows });
    }
    Ok(sets)
}

/// The throughput file at `path`, or inside result directory `path`.
fn throughput_file(path: &Path) -> Result<PathBuf, IoBenchError> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let total = path.join("throughput_total.psv");
    if total.is_file() {
        return Ok(total);
    }
    let found: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| IoBenchError::io(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-throughput.psv"))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(IoBenchError::Invalid(format!(
            "{}: expected throughput_total.psv or one *-throughput.psv, found {}",
            path.display(),
            found.len()
        ))),
    }
}

/// A file's label: its directory for Nano's generic names, else its stem.
fn default_label(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let generic = name == "throughput_total.psv" || name.ends_with("-throughput.psv");
    let source = if generic { path.parent().and_then(Path::file_name) } else { path.file_stem() };
    source.map(|s| s.to_string_lossy().into_owned()).unwrap_or(name)
}

/// The comparison as a report: one table per process count and category.
pub fn report(sets: &[ResultSet]) -> Report {
    let labels: Vec<&str> = sets.iter().map(|s| s.label.as_str()).collect();
    let mut report = Report::new(format!("Strata I/O comparison: {}", labels.join(" vs ")));
    for set in sets {
        report.push_note(format!("{}: {} ({} results)", set.label, set.path.display(), set.rows.len()));
    }
    report.push_note(format!(
        "Figures are MB/s (higher is better). Ratio columns are {} / each other set: above 1 means {} \
         was faster. GEOMETRIC MEAN and MAX RATIO rows cover the tests every set has.",
        labels[0], labels[0]
    ));
    for c in compare(sets) {
        let mut columns = vec![Column::text("testtype"), Column::text("test")];
        columns.extend(labels.iter().map(|l| Column::number(*l, 0)));
        columns.extend(labels[1..].iter().map(|l| Column::number(format!("{}/{l}", labels[0]), 2).higher_is_better()));
        let procs = if c.numproc == 1 { "1 process".to_string() } else { format!("{} processes", c.numproc) };
        let mut table = Table::new(format!("{}, {procs}", c.category.title()), columns);
        for row in &c.rows {
            let mut cells = vec![Cell::from(row.testtype.as_str()), Cell::from(row.test.as_str())];
            cells.extend(row.values.iter().chain(&row.ratios).map(|v| Cell::from(*v)));
            table.push_row(cells);
        }
        for (name, values, ratios) in
            [("GEOMETRIC MEAN", &c.geomean, &c.geomean_ratios), ("MAX RATIO", &c.max, &c.max_ratios)]
        {
            let mut cells = vec![Cell::from(name), Cell::Empty];
            cells.extend(values.iter().chain(ratios).map(|v| if v.is_nan() { Cell::Empty } else { Cell::from(*v) }));
            table.push_row(cells);
        }
        if c.complete < c.rows.len() {
            report.push_note(format!(
                "{}: {} of {} tests are missing from some set and left out of the summary rows.",
                table.title,
                c.rows.len() - c.complete,
                c.rows.len()
            ));
        }
        report.push_table(table);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::psv::THROUGHPUT_HEADER;

    /// A throughput file in Nano's format from `(numproc, testtype, test, MB/s)`.
    fn psv(dir: &Path, name: &str, rows: &[(usize, &str, &str, f64)]) -> PathBuf {
        let mut text = format!("{THROUGHPUT_HEADER}\n");
        for (numproc, testtype, test, mbps) in rows {
            text.push_str(&format!("{numproc}|8|l64|{testtype}|{test}|set|99.9|{mbps}|MB/sec|||\n"));
        }
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn ratios_geometric_means_and_maxima_follow_the_study() {
        let dir = tempfile::tempdir().unwrap();
        // The study's first single-process write table, two of its rows.
        let xfs = psv(
            dir.path(),
            "xfs.psv",
            &[(1, "write disk", "write int huge", 3367.0), (1, "write disk", "write float large", 2098.0)],
        );
        let ext4 = psv(
            dir.path(),
            "ext4.psv",
            &[(1, "write disk", "write int huge", 2170.0), (1, "write disk", "write float large", 1304.0)],
        );
        let sets = load(&[xfs, ext4], &[]).unwrap();
        assert_eq!((sets[0].label.as_str(), sets[1].label.as_str()), ("xfs", "ext4"));
        let c = &compare(&sets)[0];
        assert_eq!((c.numproc, c.category, c.complete), (1, Category::HighImpactWrites, 2));
        assert_eq!(c.rows[0].test, "write float large", "sorted by name within a test type");
        assert!(close(c.rows[0].ratios[0].unwrap(), 2098.0 / 1304.0));
        assert!(close(c.geomean[0], (3367.0f64 * 2098.0).sqrt()));
        assert!(close(c.geomean[1], (2170.0f64 * 1304.0).sqrt()));
        assert!(close(c.geomean_ratios[0], c.geomean[0] / c.geomean[1]), "mean of ratios = ratio of means");
        assert_eq!((c.max[0], c.max[1]), (3367.0, 2170.0));
        assert!(close(c.max_ratios[0], 2098.0 / 1304.0), "the largest ratio, not the ratio of the largest values");
    }

    #[test]
    fn tables_split_by_category_and_process_count() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            (1, "write disk", "sync int small", 100.0),
            (1, "read disk", "random read 4k", 20.0),
            (1, "read mem", "random read 4k", 1000.0),
            (1, "read disk write mem", "sequential read int huge", 2000.0),
            (4, "read mem write disk", "add attribute", 50.0),
            (4, "cpu read mem", "aggregate int huge", 9.0),
        ];
        let a = psv(dir.path(), "a.psv", &rows);
        let b = psv(dir.path(), "b.psv", &rows[..5]);
        let c = psv(dir.path(), "c.psv", &rows.map(|(n, t, s, v)| (n, t, s, v / 4.0)));
        let sets = load(&[a, b, c], &["A".into(), "B".into(), "C".into()]).unwrap();
        let got: Vec<(usize, Category, usize)> =
            compare(&sets).iter().map(|c| (c.numproc, c.category, c.rows.len())).collect();
        assert_eq!(
            got,
            [
                (1, Category::OtherWrites, 1),
                (1, Category::DiskReads, 2),
                (1, Category::CacheReads, 1),
                (4, Category::HighImpactWrites, 1),
                (4, Category::Other, 1),
            ]
        );
        let comparisons = compare(&sets);
        let disk = &comparisons[1];
        assert_eq!(disk.rows[0].ratios, [Some(1.0), Some(4.0)]);
        assert!(close(disk.geomean_ratios[1], 4.0) && close(disk.max_ratios[0], 1.0));
        let other = &comparisons[4];
        assert_eq!((other.complete, other.rows[0].values[1], other.rows[0].ratios[0]), (0, None, None));
        assert!(other.geomean[0].is_nan(), "no complete row: no mean");

        let report = report(&sets);
        let text = report.to_terminal();
        for needle in [
            "reads from disk, 1 process",
            "high-impact writes, 4 processes",
            "GEOMETRIC MEAN",
            "MAX RATIO",
            "A/C",
            "4.00",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
        assert!(text.contains("1 of 1 tests are missing"), "{text}");
        assert!(report.to_html().contains("A/B"));
    }

    #[test]
    fn inputs_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let a = psv(dir.path(), "a.psv", &[(1, "write disk", "write int small", 1.0)]);
        assert!(load(std::slice::from_ref(&a), &[]).unwrap_err().to_string().contains("at least two"));
        assert!(load(&[a.clone(), a.clone()], &["x".into()]).unwrap_err().to_string().contains("1 labels for 2"));
        let twice = load(&[a.clone(), a.clone()], &[]).unwrap();
        assert_eq!((twice[0].label.as_str(), twice[1].label.as_str()), ("a", "a#2"));
        let empty = psv(dir.path(), "e.psv", &[]);
        assert!(load(&[a.clone(), empty], &[]).unwrap_err().to_string().contains("e.psv: line 2: no results"));
        let missing = dir.path().join("nope.psv");
        assert!(load(&[a.clone(), missing], &[]).unwrap_err().to_string().contains("nope.psv"));
        let run = dir.path().join("run-ext4");
        std::fs::create_dir(&run).unwrap();
        std::fs::copy(&a, run.join("throughput_total.psv")).unwrap();
        assert_eq!(load(&[a, run], &[]).unwrap()[1].label, "run-ext4", "a result directory is labelled by its name");
    }
}
