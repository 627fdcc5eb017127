//! `strata bench zipgrid`: the zipPerf method. One data set (a generated shape or a
//! column of a database) is written with every combination of block size (lbs
//! 12..20), algorithm (0..5, and 6 = pcodec) and level, and each write is timed
//! (averaged over k repeats), read back once from a cold cache and its compression
//! factor taken. Results can be filtered (`writeTime<0.3,compFactor>2`), summarised
//! and saved to, or reloaded from, CSV.

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use strata_codec::{Algorithm, CompressionSpec};
use strata_store::column::write_column_file;
use strata_store::{Attribute, Column, ColumnType, Durability, StoreError};

use crate::report::{Caveat, Cell, Column as ReportColumn, Goal, Report, ScatterChart, Table};
use crate::rng::SplitMix64;
use crate::zip::ColdCache;
use crate::zip::measure::read_whole;

/// Title of the results table (its CSV is what [`load_csv`] reads back).
pub const GRID_TABLE: &str = "zipgrid results";

/// A generated data shape, as in the zipPerf blog's experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataShape {
    /// Longs drawn uniformly from 0..1000 (`n?1000`).
    Random,
    /// The same, sorted ascending.
    Sorted,
    /// The same values grouped in runs, unsorted (contiguous groups).
    Contiguous,
    /// Random booleans.
    Booleans,
    /// Random three-letter symbols (`n?`3`).
    Symbols,
}

impl FromStr for DataShape {
    type Err = String;

    fn from_str(text: &str) -> Result<DataShape, String> {
        Ok(match text {
            "random" => DataShape::Random,
            "sorted" => DataShape::Sorted,
            "contiguous" => DataShape::Contiguous,
            "booleans" => DataShape::Booleans,
            "symbols" => DataShape::Symbols,
            other => {
                return Err(format!(
                    "unknown data shape {other:?}; shapes: random, sorted, contiguous, booleans, symbols"
                ));
            }
        })
    }
}

/// The data measured: a name for reports and a column.
#[derive(Clone, Debug)]
pub struct GridSource {
    /// Shape or column name.
    pub name: String,
    /// The values.
    pub column: Column,
}

impl GridSource {
    /// `n` values of `shape`, deterministic for `seed`.
    pub fn shape(shape: DataShape, n: usize, seed: u64) -> GridSource {
        let mut rng = SplitMix64::new(seed);
        let longs = |rng: &mut SplitMix64| (0..n).map(|_| rng.below(1000) as i64).collect::<Vec<i64>>();
        let column = match shape {
            DataShape::Random => Column::from_values(ColumnType::Long, longs(&mut rng)),
            DataShape::Sorted => {
                let mut v = longs(&mut rng);
                v.sort_unstable();
                Column::from_values(ColumnType::Long, v)
            }
            DataShape::Contiguous => {
                // Sorted runs, then the runs shuffled: grouped but not ordered.
                let mut v = longs(&mut rng);
                v.sort_unstable();
                let mut runs: Vec<&[i64]> = v.chunk_by(|a, b| a == b).collect();
                for i in (1..runs.len()).rev() {
                    runs.swap(i, rng.below(i as u64 + 1) as usize);
                }
                Column::from_values(ColumnType::Long, runs.concat())
            }
            DataShape::Booleans => {
                Column::from_values(ColumnType::Boolean, (0..n).map(|_| rng.below(2) as u8).collect())
            }
            DataShape::Symbols => {
                return GridSource {
                    name: "symbols".into(),
                    column: Column::from_symbols(
                        (0..n).map(|_| (0..3).map(|_| (b'a' + rng.below(26) as u8) as char).collect::<String>()),
                    ),
                };
            }
        }
        .expect("shapes have their type's width");
        let name = format!("{shape:?}").to_lowercase();
        GridSource { name, column }
    }

    /// A column of real data.
    pub fn column(name: &str, column: &Column) -> GridSource {
        GridSource { name: name.to_string(), column: column.clone() }
    }
}

/// The grid and the repeats.
#[derive(Clone, Debug, PartialEq)]
pub struct GridOptions {
    /// Block size exponents.
    pub lbs: Vec<u8>,
    /// Algorithm numbers (0 none, 1 qipc, 2 gzip, 3 snappy, 4 lz4hc, 5 zstd, 6 pco).
    pub algorithms: Vec<u8>,
    /// Writes per configuration, averaged.
    pub repeats: usize,
}

impl GridOptions {
    /// lbs 12..20, algorithms 0..6, one write each.
    pub fn new() -> GridOptions {
        GridOptions { lbs: (12..=20).collect(), algorithms: (0..=6).collect(), repeats: 1 }
    }
}

impl Default for GridOptions {
    fn default() -> GridOptions {
        GridOptions::new()
    }
}

/// One configuration's figures (zipPerf's result schema; times in milliseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct GridRow {
    /// Block size exponent.
    pub lbs: u8,
    /// Algorithm number.
    pub alg: u8,
    /// Level.
    pub lvl: i32,
    /// The data's name.
    pub data_type: String,
    /// Values written.
    pub data_count: u64,
    /// Uncompressed bytes written; 0 when unknown. Not in the saved CSV, which
    /// keeps zipPerf's schema, so results reloaded from it have 0.
    pub data_bytes: u64,
    /// Raw bytes over file bytes; NaN for algorithm 0 (not compressed).
    pub comp_factor: f64,
    /// Mean write time, ms.
    pub write_time: f64,
    /// One cold read, ms.
    pub read_time: f64,
    /// The configuration's whole test, ms.
    pub test_time: f64,
}

/// The configurations of the grid: every lbs x (algorithm, level), with the
/// uncompressed configuration once (as `0 0 0`).
pub fn configurations(options: &GridOptions) -> Vec<(u8, u8, i32)> {
    let mut configs = Vec::new();
    if options.algorithms.contains(&0) {
        configs.push((0, 0, 0));
    }
    for &lbs in &options.lbs {
        for alg in options.algorithms.iter().filter(|&&a| a != 0).filter_map(|&a| Algorithm::from_code(a)) {
            for level in alg.levels() {
                configs.push((lbs, alg.code(), level));
            }
        }
    }
    configs
}

/// Runs the grid on `source`, writing under `scratch`. Configurations a codec cannot
/// apply to (pcodec on bytes) are skipped.
pub fn run(
    source: &GridSource,
    options: &GridOptions,
    scratch: &Path,
    progress: bool,
) -> Result<Vec<GridRow>, StoreError> {
    if options.repeats == 0 {
        return Err(StoreError::Invalid("zipgrid: k (repeats) must be at least 1".into()));
    }
    if let Some(bad) = options.lbs.iter().find(|l| !(12..=20).contains(*l)) {
        return Err(StoreError::Invalid(format!("zipgrid: lbs {bad} is out of range 12..20")));
    }
    if let Some(bad) = options.algorithms.iter().find(|a| Algorithm::from_code(**a).is_none()) {
        return Err(StoreError::Invalid(format!("zipgrid: algorithm {bad} is not one of 0..6")));
    }
    std::fs::create_dir_all(scratch).map_err(|source| StoreError::Io { path: scratch.to_path_buf(), source })?;
    let kind = source.column.ty().element_kind();
    let configs: Vec<(u8, u8, i32)> = configurations(options)
        .into_iter()
        .filter(|&(lbs, alg, lvl)| spec_of(lbs, alg, lvl).check_suitable(kind).is_ok())
        .collect();
    let bar = crate::progress::bar(progress, configs.len() as u64);
    let column = &source.column;
    let bytes = column.offsets_buffer().map_or(column.value_bytes(), |o| o.as_slice());
    let ty = source.column.ty();
    let path = scratch.join("tmpData");
    let mut rows = Vec::with_capacity(configs.len());
    for (lbs, alg, lvl) in configs {
        bar.set_message(format!("lbs {lbs} alg {alg} level {lvl}"));
        let spec = spec_of(lbs, alg, lvl);
        let test_start = Instant::now();
        let mut write_total = 0.0;
        for _ in 0..options.repeats {
            let _ = std::fs::remove_file(&path);
            let start = Instant::now();
            write_column_file(&path, ty, Attribute::None, &spec, bytes, Durability::Rename)?;
            write_total += start.elapsed().as_secs_f64();
        }
        ColdCache::Fadvise.evict(&[&path]).map_err(|source| StoreError::Io { path: path.clone(), source })?;
        let read = read_whole(scratch, "tmpData")?;
        let stored = std::fs::metadata(&path).map_err(|source| StoreError::Io { path: path.clone(), source })?.len();
        rows.push(GridRow {
            lbs,
            alg,
            lvl,
            data_type: source.name.clone(),
            data_count: column.len() as u64,
            data_bytes: bytes.len() as u64,
            comp_factor: if alg == 0 { f64::NAN } else { bytes.len() as f64 / stored.max(1) as f64 },
            write_time: 1e3 * write_total / options.repeats as f64,
            read_time: 1e3 * read,
            test_time: 1e3 * test_start.elapsed().as_secs_f64(),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

fn spec_of(lbs: u8, alg: u8, lvl: i32) -> CompressionSpec {
    let algorithm = Algorithm::from_code(alg).expect("checked algorithm");
    CompressionSpec::new(algorithm, lvl, lbs).unwrap_or_else(|_| CompressionSpec::none())
}

/// A constraint on a metric, such as `writeTime<0.3`.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// The metric: compFactor, writeTime, readTime, testTime, lbs, alg or lvl.
    pub metric: String,
    /// `<`, `<=`, `>`, `>=` or `=`.
    pub op: String,
    /// The bound.
    pub value: f64,
}

const METRICS: [&str; 7] = ["compFactor", "writeTime", "readTime", "testTime", "lbs", "alg", "lvl"];

/// Parses `writeTime<0.3,compFactor>2` into constraints.
pub fn parse_filters(text: &str) -> Result<Vec<Constraint>, String> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let item = item.trim();
            let at = item.find(['<', '>', '=']).ok_or_else(|| format!("--where {item:?}: expected metric<value"))?;
            let (metric, rest) = item.split_at(at);
            let op_len = if rest.starts_with("<=") || rest.starts_with(">=") { 2 } else { 1 };
            let (op, value) = rest.split_at(op_len);
            if !METRICS.contains(&metric.trim()) {
                return Err(format!("--where {item:?}: unknown metric {metric:?}; metrics: {}", METRICS.join(", ")));
            }
            let value = value.trim().parse().map_err(|_| format!("--where {item:?}: {value:?} is not a number"))?;
            Ok(Constraint { metric: metric.trim().to_string(), op: op.to_string(), value })
        })
        .collect()
}

fn metric(row: &GridRow, name: &str) -> f64 {
    match name {
        "compFactor" => row.comp_factor,
        "writeTime" => row.write_time,
        "readTime" => row.read_time,
        "testTime" => row.test_time,
        "lbs" => row.lbs as f64,
        "alg" => row.alg as f64,
        _ => row.lvl as f64,
    }
}

fn holds(row: &GridRow, c: &Constraint) -> bool {
    let v = metric(row, &c.metric);
    match c.op.as_str() {
        "<" => v < c.value,
        "<=" => v <= c.value,
        ">" => v > c.value,
        ">=" => v >= c.value,
        _ => v == c.value,
    }
}

/// The algorithm's name for its zipPerf number (the number itself if unknown).
fn algorithm_name(alg: u8) -> String {
    Algorithm::from_code(alg).map_or_else(|| alg.to_string(), |a| a.name().to_string())
}

/// A configuration as a person reads it: `zstd:5@17` (algorithm, level if it has
/// levels, `@lbs`); `none` for the uncompressed one.
fn config_label(r: &GridRow) -> String {
    match Algorithm::from_code(r.alg) {
        Some(Algorithm::None) => "none".to_string(),
        Some(a) if a.levels().start() == a.levels().end() => format!("{}@{}", a.name(), r.lbs),
        _ => format!("{}:{}@{}", algorithm_name(r.alg), r.lvl, r.lbs),
    }
}

/// A table of `rows` in zipPerf's schema (so the grid's CSV reloads with
/// [`load_csv`] and reads as zipPerf's does); with `names`, an `algorithm`
/// column after `alg` names each number, for the summaries people read.
fn results_table(title: &str, rows: &[&GridRow], names: bool) -> Table {
    let mut columns = vec![ReportColumn::number("lbs", 0), ReportColumn::number("alg", 0)];
    if names {
        columns.push(ReportColumn::text("algorithm"));
    }
    columns.extend([
        ReportColumn::number("lvl", 0),
        ReportColumn::text("dataType"),
        ReportColumn::number("dataCount", 0),
        ReportColumn::number("compFactor", 3).higher_is_better(),
        ReportColumn::number("writeTime", 3).lower_is_better(),
        ReportColumn::number("readTime", 3).lower_is_better(),
        ReportColumn::number("testTime", 3),
    ]);
    let mut table = Table::new(title, columns);
    for r in rows {
        let mut cells = vec![Cell::Number(r.lbs as f64), Cell::Number(r.alg as f64)];
        if names {
            cells.push(algorithm_name(r.alg).into());
        }
        cells.extend([
            Cell::Number(r.lvl as f64),
            r.data_type.as_str().into(),
            Cell::Number(r.data_count as f64),
            r.comp_factor.into(),
            r.write_time.into(),
            r.read_time.into(),
            r.test_time.into(),
        ]);
        table.push_row(cells);
        for (name, ms) in [("writeTime", r.write_time), ("readTime", r.read_time)] {
            if let Some(caveat) = Caveat::for_timing(ms / 1e3) {
                let at = table.column_index(name).expect("the results table has its time columns");
                table.flag(table.rows.len() - 1, at, caveat);
            }
        }
    }
    table
}

/// The warning for block sizes the data fits in whole: such configurations
/// compress it as one block, so they differ from each other only by noise.
fn one_block_warning(rows: &[GridRow]) -> Option<String> {
    let bytes = rows.iter().map(|r| r.data_bytes).max().filter(|b| *b > 0)?;
    let lbs = rows.iter().filter(|r| r.alg != 0 && (1u64 << r.lbs) >= bytes).map(|r| r.lbs).min()?;
    Some(format!(
        "Too little data for the larger blocks: the data is {} KB, so at lbs {lbs} and above (blocks of \
         {} KiB) it is one block and those configurations differ only by noise. Give a larger n.",
        bytes / 1000,
        (1u64 << lbs) / 1024,
    ))
}

/// The report: all results (saved first, so its CSV reloads with [`load_csv`]),
/// max/min/avg per metric, the best configurations per metric, the rows meeting
/// `filters`, and a ratio-against-write-time chart.
pub fn report(rows: &[GridRow], filters: &[Constraint]) -> Report {
    let mut report = Report::new("zipgrid: block size x algorithm x level");
    report.push_note(
        "zipPerf's method: each configuration writes the data (writeTime, ms, mean of k writes), reads it \
         back once after posix_fadvise(DONTNEED) (readTime, ms) and reports raw bytes / file bytes \
         (compFactor; blank for algorithm 0). Algorithms: 0 none, 1 qipc, 2 gzip, 3 snappy, 4 lz4hc, \
         5 zstd, 6 pco. Times are in milliseconds. The chart labels configurations as algorithm:level@lbs.",
    );
    if let Some(warning) = one_block_warning(rows) {
        report.push_warning(warning);
    }
    let all: Vec<&GridRow> = rows.iter().collect();
    report.push_table(results_table(GRID_TABLE, &all, false).in_appendix());
    let mut summary = Table::new(
        "summary",
        vec![
            ReportColumn::text("metric"),
            ReportColumn::number("max", 3),
            ReportColumn::number("min", 3),
            ReportColumn::number("avg", 3),
        ],
    );
    for name in ["compFactor", "writeTime", "readTime"] {
        let values: Vec<f64> = rows.iter().map(|r| metric(r, name)).filter(|v| v.is_finite()).collect();
        let avg = values.iter().sum::<f64>() / values.len().max(1) as f64;
        let max = values.iter().copied().fold(f64::NAN, f64::max);
        let min = values.iter().copied().fold(f64::NAN, f64::min);
        summary.push_row(vec![name.into(), max.into(), min.into(), avg.into()]);
    }
    report.push_table(summary);
    for (name, higher) in [("compFactor", true), ("writeTime", false), ("readTime", false)] {
        let mut best: Vec<&GridRow> = rows.iter().filter(|r| metric(r, name).is_finite()).collect();
        best.sort_by(|a, b| {
            let o = metric(a, name).total_cmp(&metric(b, name));
            if higher { o.reverse() } else { o }
        });
        best.truncate(5);
        report.push_table(results_table(&format!("best by {name}"), &best, true));
    }
    if !filters.is_empty() {
        let kept: Vec<&GridRow> = rows.iter().filter(|r| filters.iter().all(|c| holds(r, c))).collect();
        let text: Vec<String> = filters.iter().map(|c| format!("{}{}{}", c.metric, c.op, c.value)).collect();
        report.push_table(results_table(&format!("where {}", text.join(",")), &kept, true));
    }
    report.push_chart(chart(rows));
    report
}

/// Compression factor against write time, one point per compressing
/// configuration, coloured by algorithm, the best trade-offs labelled.
fn chart(rows: &[GridRow]) -> ScatterChart {
    let mut points = Table::new(
        "points",
        vec![ReportColumn::text("config"), ReportColumn::number("writeTime", 3), ReportColumn::number("compFactor", 3)],
    );
    for r in rows.iter().filter(|r| r.alg != 0) {
        points.push_row(vec![config_label(r).into(), r.write_time.into(), r.comp_factor.into()]);
    }
    let mut chart = ScatterChart::from_table(
        "compression factor vs write time: the best trade-offs labelled",
        &points,
        "writeTime",
        "compFactor",
        "config",
    )
    .expect("the points table has these columns")
    .with_log_x()
    .with_log_y()
    .with_series(|label| label.split([':', '@']).next().unwrap_or_default().to_string())
    .with_front_labels(Goal::Lower, Goal::Higher);
    chart.x_label = "write time, ms".into();
    chart.y_label = "compression factor (raw bytes / file bytes)".into();
    chart
}

/// Reads results saved by an earlier run (the report's first CSV).
pub fn load_csv(path: &Path) -> Result<Vec<GridRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let at = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("{}: no column {name} in the header", path.display()))
    };
    let idx = [
        at("lbs")?,
        at("alg")?,
        at("lvl")?,
        at("dataType")?,
        at("dataCount")?,
        at("compFactor")?,
        at("writeTime")?,
        at("readTime")?,
        at("testTime")?,
    ];
    lines
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, line)| {
            let fields: Vec<&str> = line.split(',').collect();
            let bad = |what: &str| format!("{}: line {}: {what}", path.display(), i + 2);
            let field = |k: usize| fields.get(idx[k]).copied().ok_or_else(|| bad("too few fields"));
            let number = |k: usize| -> Result<f64, String> {
                let f = field(k)?;
                if f.is_empty() { Ok(f64::NAN) } else { f.parse().map_err(|_| bad(&format!("{f:?} is not a number"))) }
            };
            Ok(GridRow {
                lbs: number(0)? as u8,
                alg: number(1)? as u8,
                lvl: number(2)? as i32,
                data_type: field(3)?.to_string(),
                data_count: number(4)? as u64,
                data_bytes: 0,
                comp_factor: number(5)?,
                write_time: number(6)?,
                read_time: number(7)?,
                test_time: number(8)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_grid_has_zipperfs_532_configurations_plus_pco() {
        let mut options = GridOptions::new();
        options.algorithms = (0..=5).collect();
        assert_eq!(configurations(&options).len(), 532);
        assert_eq!(configurations(&GridOptions::new()).len(), 532 + 9 * 13);
    }

    #[test]
    fn shapes_have_their_structure() {
        let sorted = GridSource::shape(DataShape::Sorted, 1000, 1).column;
        assert!(sorted.values::<i64>().windows(2).all(|w| w[0] <= w[1]));
        let grouped = GridSource::shape(DataShape::Contiguous, 5000, 1).column;
        let v = grouped.values::<i64>();
        let runs = 1 + v.windows(2).filter(|w| w[0] != w[1]).count();
        let mut distinct = v.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(runs, distinct.len(), "each value in one run");
        assert!(v.windows(2).any(|w| w[0] > w[1]), "but not sorted");
        assert_eq!(GridSource::shape(DataShape::Booleans, 10, 1).column.ty(), ColumnType::Boolean);
        assert_eq!(GridSource::shape(DataShape::Symbols, 10, 1).column.ty(), ColumnType::Symbol);
        assert!("zigzag".parse::<DataShape>().unwrap_err().contains("contiguous"));
    }

    #[test]
    fn a_small_grid_runs_filters_and_round_trips_through_csv() {
        let dir = tempfile::tempdir().unwrap();
        let source = GridSource::shape(DataShape::Random, 20_000, 3);
        let options = GridOptions { lbs: vec![12, 17], algorithms: vec![0, 2, 3, 6], repeats: 2 };
        let rows = run(&source, &options, dir.path(), false).unwrap();
        assert_eq!(rows.len(), 1 + 2 * (10 + 1 + 13));
        assert!(rows[0].comp_factor.is_nan() && rows[0].alg == 0);
        // gzip level 0 stores without compressing: its factor is just under 1.
        let compressing = rows[1..].iter().filter(|r| !(r.alg == 2 && r.lvl == 0));
        assert!(compressing.clone().all(|r| r.comp_factor > 1.5 && r.write_time > 0.0 && r.read_time > 0.0));
        let filters = parse_filters("compFactor>2, writeTime<1000").unwrap();
        let report = report(&rows, &filters);
        let kept = report.tables().find(|t| t.title.starts_with("where ")).unwrap();
        assert!(!kept.rows.is_empty() && kept.rows.len() < rows.len());
        let csv = dir.path().join("grid.csv");
        report.write_csv(&csv).unwrap();
        let back = load_csv(&csv).unwrap();
        assert_eq!(back.len(), rows.len());
        assert_eq!((back[5].lbs, back[5].alg, back[5].lvl), (rows[5].lbs, rows[5].alg, rows[5].lvl));
        assert!((back[5].comp_factor - rows[5].comp_factor).abs() < 1e-9);
        assert!(back[0].comp_factor.is_nan());
        let bytes = GridSource::shape(DataShape::Booleans, 5000, 1);
        let rows =
            run(&bytes, &GridOptions { lbs: vec![12], algorithms: vec![6, 3], repeats: 1 }, dir.path(), false).unwrap();
        assert_eq!(rows.len(), 1, "pco cannot store booleans: skipped");
    }

    fn row(lbs: u8, alg: u8, lvl: i32, comp_factor: f64, write_time: f64) -> GridRow {
        GridRow {
            lbs,
            alg,
            lvl,
            data_type: "random".into(),
            data_count: 10_000,
            data_bytes: 80_000,
            comp_factor,
            write_time,
            read_time: 1.0,
            test_time: 2.0,
        }
    }

    #[test]
    fn the_chart_names_algorithms_and_labels_only_the_best_trade_offs() {
        let rows = [
            row(12, 0, 0, f64::NAN, 0.5),
            row(12, 5, 1, 2.0, 1.0),
            row(12, 5, 9, 3.0, 4.0),
            row(17, 2, 6, 2.5, 8.0), // slower than gzip:1 and compresses less: not labelled
            row(17, 6, 8, 4.0, 9.0),
            row(17, 3, 0, 1.5, 0.8),
            row(12, 2, 1, 2.6, 2.0),
        ];
        let report = report(&rows, &[]);
        let chart = report.charts().next().unwrap();
        assert_eq!(chart.series(), ["zstd", "gzip", "pco", "snappy"]);
        let labelled: Vec<&str> =
            chart.points.iter().zip(chart.labelled()).filter(|(_, l)| *l).map(|(p, _)| p.label.as_str()).collect();
        assert_eq!(labelled, ["zstd:1@12", "zstd:9@12", "pco:8@17", "snappy@17", "gzip:1@12"]);
        let svg = chart.to_svg();
        assert!(svg.contains(r#"class="legend">gzip</text>"#) && svg.contains(r#"class="legend">pco</text>"#));
        assert!(!svg.contains(r#"class="label">gzip:6@17</text>"#) && svg.contains("<title>gzip:6@17: 8, 2.5</title>"));
        let table = report.table(GRID_TABLE).unwrap();
        assert!(table.appendix && table.column_index("algorithm").is_none(), "zipPerf's schema, to reload");
        let best = report.table("best by compFactor").unwrap();
        assert_eq!(best.rows[0][best.column_index("algorithm").unwrap()], Cell::from("pco"));
    }

    #[test]
    fn data_that_fits_in_one_block_is_warned_about() {
        let rows = [row(12, 5, 1, 2.0, 1.0), row(16, 5, 1, 2.0, 1.0), row(17, 5, 1, 2.0, 1.0), row(20, 5, 1, 2.0, 1.0)];
        let warning = one_block_warning(&rows).unwrap();
        assert!(warning.contains("the data is 80 KB, so at lbs 17 and above (blocks of 128 KiB)"), "{warning}");
        let big: Vec<GridRow> = rows.iter().map(|r| GridRow { data_bytes: 1 << 21, ..r.clone() }).collect();
        assert_eq!(one_block_warning(&big), None);
        let unknown: Vec<GridRow> = rows.iter().map(|r| GridRow { data_bytes: 0, ..r.clone() }).collect();
        assert_eq!(one_block_warning(&unknown), None, "results reloaded from CSV");
    }

    #[test]
    fn timings_below_the_timer_resolution_are_marked() {
        let table = results_table("t", &[&row(12, 5, 1, 2.0, 0.0)], false);
        let write = table.column_index("writeTime").unwrap();
        assert!(
            matches!(table.flags.get(&(0, write)), Some(Caveat::BelowTimerResolution { seconds, .. }) if *seconds == 0.0)
        );
        assert_eq!(table.flags.len(), 1, "the 1 ms read is fine");
    }

    #[test]
    fn bad_filters_and_files_are_explained() {
        assert!(parse_filters("speed>2").unwrap_err().contains("unknown metric"));
        assert!(parse_filters("writeTime<fast").unwrap_err().contains("not a number"));
        assert!(parse_filters("writeTime").unwrap_err().contains("metric<value"));
        assert_eq!(parse_filters("lvl>=3").unwrap()[0].op, ">=");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        std::fs::write(&path, "lbs,alg\n1,2\n").unwrap();
        assert!(load_csv(&path).unwrap_err().contains("no column lvl"));
    }
}
