//! `strata bench scale`: what a query costs as a database grows from one day to
//! years of them.
//!
//! One database grows day by day (weekdays from 2016.01.04, each the same small
//! generated TAQ day written through `strata_taq::write_day`); at each size asked
//! for, the benchmark times:
//! - opening the database in process (`Engine::open`);
//! - a one-day VWAP by symbol, a one-week count by day and a whole-history count,
//!   in process (the first run on a fresh engine, then the best warm run);
//! - the same queries as `strata sql` processes (process start included), with
//!   each process's peak memory;
//! - an HDB (`strata hdb`) started on the database: time until it answers, its
//!   first one-day query, the best warm one, and its resident memory.
//!
//! The files are in the page cache throughout (they were just written): the
//! figures are what opening and planning cost, not disk reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strata_query::Engine;
use strata_store::{Database, Date, DbConfig, Durability, TableWrite, WriteMode};
use strata_taq::TaqConfig;

use crate::process::{Hdb, run_sql};
use crate::report::{Cell, Column, Report, ScatterChart, Table};

/// What to run.
#[derive(Clone, Debug)]
pub struct ScaleBenchOptions {
    /// Database sizes in date partitions, measured in ascending order.
    pub sizes: Vec<usize>,
    /// The day written under every date (its `date` is ignored).
    pub day: TaqConfig,
    /// Warm runs per measurement; the fastest counts.
    pub repeats: usize,
    /// Where the database grows (removed by the caller).
    pub scratch: PathBuf,
    /// The `strata` executable, run as `strata sql` and `strata hdb`.
    pub strata: PathBuf,
}

impl ScaleBenchOptions {
    /// 1, 250, 1000 and 2500 partitions (one trading year is about 250) of a small
    /// day: 2000 quotes, 200 trades, 50 symbols.
    pub fn new(scratch: PathBuf, strata: PathBuf) -> ScaleBenchOptions {
        let day = TaqConfig { quotes: 2_000, trades: 200, syms: 50, ..TaqConfig::default() };
        ScaleBenchOptions { sizes: vec![1, 250, 1000, 2500], day, repeats: 5, scratch, strata }
    }
}

/// Anything the benchmark can fail with.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The queries timed at every size, on the database's newest day(s).
#[derive(Clone, Debug)]
struct Workload {
    /// `(name, SQL)` in report order.
    queries: Vec<(&'static str, String)>,
}

/// The one-day query's name (the one the targets are about).
const ONE_DAY: &str = "one day";

impl Workload {
    /// Queries over a database whose newest partition is `newest`.
    fn new(newest: Date) -> Workload {
        let iso = |d: Date| {
            let (y, m, day) = d.ymd();
            format!("{y:04}-{m:02}-{day:02}")
        };
        let week_start = Date(newest.0 - 6);
        Workload {
            queries: vec![
                ("select 1", "SELECT 1 AS one".to_string()),
                (
                    ONE_DAY,
                    format!(
                        "SELECT sym, sum(price * size) / sum(size) AS vwap, count(*) AS n FROM tradeNorm \
                         WHERE date = '{}' GROUP BY sym ORDER BY sym",
                        iso(newest)
                    ),
                ),
                (
                    "one week",
                    format!(
                        "SELECT date, count(*) AS n, sum(size) AS volume FROM tradeNorm \
                         WHERE date BETWEEN '{}' AND '{}' GROUP BY date ORDER BY date",
                        iso(week_start),
                        iso(newest)
                    ),
                ),
                ("all days", "SELECT count(*) AS n FROM tradeNorm".to_string()),
            ],
        }
    }
}

/// One measurement: a query (or the open) through one path at one size.
#[derive(Clone, Debug)]
struct Row {
    partitions: usize,
    path: &'static str,
    what: &'static str,
    first_ms: f64,
    warm_ms: f64,
    peak_mib: Option<f64>,
    rows: Option<usize>,
}

/// Which figure of a [`Row`] a report column or target reads.
type Figure = fn(&Row) -> Option<f64>;

/// Weekdays from 2016.01.04: `n` trading dates, ascending.
fn trading_dates(n: usize) -> Vec<Date> {
    let start = Date::from_ymd(2016, 1, 4).expect("a real date");
    // 2016.01.04 is a Monday: day k of the week is (days since it) mod 7.
    (0..).map(|k| Date(start.0 + k)).filter(|d| (d.0 - start.0).rem_euclid(7) < 5).take(n).collect()
}

/// Runs the benchmark and builds its report, with a progress bar on a terminal
/// when `progress` is set.
pub fn run(options: &ScaleBenchOptions, progress: bool) -> BenchResult<Report> {
    let mut sizes = options.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let largest = *sizes.last().ok_or("no database sizes to measure")?;
    if sizes[0] == 0 {
        return Err("a database size is a number of partitions, at least 1".into());
    }
    let dates = trading_dates(largest);
    let root = options.scratch.join("db");
    let mut db = Database::open(&root)?;
    // Building is not what is measured: no fsync per file.
    db.set_config(DbConfig { durability: Durability::Rename, ..db.config().clone() })?;
    let day = strata_taq::generate(&options.day);
    let bar = crate::progress::bar(progress, (largest + sizes.len()) as u64);
    let mut rows = Vec::new();
    let mut written = 0;
    // Every day holds the same rows: the one-day answer must not change with size.
    let mut one_day_answer: Option<String> = None;
    for &size in &sizes {
        for &date in &dates[written..size] {
            bar.set_message(format!("writing day {} of {size}", written + 1));
            // Fail, not merge: days left by an earlier run on the same scratch would
            // be measured as part of this run's sizes.
            strata_taq::write_day(&db, date, &day, &TableWrite::default(), WriteMode::Fail)?;
            written += 1;
            bar.inc(1);
        }
        bar.set_message(format!("measuring {size} partitions"));
        let workload = Workload::new(dates[size - 1]);
        let answer = one_day(&root, &workload)?;
        match &one_day_answer {
            Some(first) if *first != answer => {
                return Err(format!(
                    "the one-day answer at {size} partitions differs from the one at {}:\n{answer}\n{first}",
                    sizes[0]
                )
                .into());
            }
            Some(_) => {}
            None => one_day_answer = Some(answer),
        }
        rows.extend(measure(options, &root, size, &workload)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(report(options, &rows))
}

/// The one-day query's answer over the database at `root`, as text (the `date`
/// left out: it is the newest day, which moves as the database grows).
fn one_day(root: &Path, workload: &Workload) -> BenchResult<String> {
    let (_, sql) = workload.queries.iter().find(|(what, _)| *what == ONE_DAY).expect("the one-day query");
    let batches = Engine::open(root)?.sql(sql)?;
    Ok(strata_query::datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
}

/// Every measurement of the database at `root`, which holds `size` partitions.
fn measure(options: &ScaleBenchOptions, root: &Path, size: usize, workload: &Workload) -> BenchResult<Vec<Row>> {
    let repeats = options.repeats.max(1);
    let mut rows = Vec::new();
    let row = |path, what, first_ms, warm_ms, peak_mib, rows| Row {
        partitions: size,
        path,
        what,
        first_ms,
        warm_ms,
        peak_mib,
        rows,
    };

    // In process: the open, then each query first on a fresh engine and warm.
    let mut opens = Vec::new();
    for _ in 0..repeats {
        let started = Instant::now();
        drop(Engine::open(root)?);
        opens.push(ms(started.elapsed()));
    }
    rows.push(row("library", "open", opens[0], min(&opens), None, None));
    for (what, sql) in &workload.queries {
        let engine = Engine::open(root)?;
        let (first, answer) = timed(|| engine.sql(sql))?;
        let mut warm = Vec::new();
        for _ in 0..repeats {
            warm.push(timed(|| engine.sql(sql))?.0);
        }
        let n = answer.iter().map(|b| b.num_rows()).sum();
        rows.push(row("library", what, first, min(&warm), None, Some(n)));
    }

    // `strata sql` processes: what every script and shell command pays.
    for (what, sql) in &workload.queries {
        let mut runs = Vec::new();
        for _ in 0..repeats + 1 {
            runs.push(run_sql(&options.strata, root, sql)?);
        }
        let times: Vec<f64> = runs.iter().map(|r| r.wall_ms).collect();
        let peak = runs.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
        rows.push(row("strata sql", what, times[0], min(&times[1..]), Some(peak), None));
    }

    // An HDB: its start, its first query and warm ones.
    let mut hdb = Hdb::start(&options.strata, root)?;
    rows.push(row("hdb", "start until it answers", hdb.ready_ms, hdb.ready_ms, None, None));
    for (what, sql) in workload.queries.iter().filter(|(what, _)| *what != "select 1") {
        let first = hdb.query(sql)?;
        let mut warm = Vec::new();
        for _ in 0..repeats {
            warm.push(hdb.query(sql)?);
        }
        rows.push(row("hdb", what, first, min(&warm), hdb.peak_mib(), None));
    }
    Ok(rows)
}

/// Runs `work`, returning its time in ms and its result.
fn timed<T, E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    work: impl FnOnce() -> Result<T, E>,
) -> BenchResult<(f64, T)> {
    let started = Instant::now();
    let out = work().map_err(Into::into)?;
    Ok((ms(started.elapsed()), out))
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The report: every measurement, the targets, and the one-day curve.
fn report(options: &ScaleBenchOptions, rows: &[Row]) -> Report {
    let mut report = Report::new("Query cost by number of date partitions");
    report.push_note(format!(
        "Each partition is the same generated day ({} quotes, {} trades, {} symbols; quote, trade, quoteNorm, \
         tradeNorm) under its own weekday from 2016-01-04. Queries run on the newest day(s). first = first run \
         (a fresh engine, a new process, or an HDB's first query); warm = best of {} more. strata sql times include \
         process start and database open; peak MiB is the process's peak resident memory (the HDB's after its \
         queries). Files are in the page cache: this measures open and planning cost, not disk reads.",
        options.day.quotes,
        options.day.trades,
        options.day.syms,
        options.repeats.max(1)
    ));
    let mut all = Table::new(
        "measurements",
        vec![
            Column::number("partitions", 0),
            Column::text("path"),
            Column::text("what"),
            Column::number("first ms", 2),
            Column::number("warm ms", 2),
            Column::number("peak MiB", 1),
            Column::number("rows", 0),
        ],
    );
    for r in rows {
        all.push_row(vec![
            (r.partitions as f64).into(),
            r.path.into(),
            r.what.into(),
            r.first_ms.into(),
            r.warm_ms.into(),
            r.peak_mib.map_or(Cell::Empty, Cell::from),
            r.rows.map_or(Cell::Empty, |n| (n as f64).into()),
        ]);
    }
    report.push_table(targets(rows));
    report.push_table(curve(rows));
    let chart = ScatterChart::from_table_where(
        "one-day query, warm ms by partitions",
        &all,
        "partitions",
        "warm ms",
        "path",
        |row| matches!(&row[2], Cell::Text(w) if w == ONE_DAY),
    );
    report.push_table(all.in_appendix());
    if let Ok(chart) = chart {
        report.push_chart(chart.with_log_x().with_series(str::to_string).without_labels());
    }
    report
}

/// One row per size: the figures the issue is about, side by side.
fn curve(rows: &[Row]) -> Table {
    let columns: [(&str, &str, &str, Figure); 7] = [
        ("open (library, warm)", "library", "open", |r| Some(r.warm_ms)),
        ("one day (library, warm)", "library", ONE_DAY, |r| Some(r.warm_ms)),
        ("one day (strata sql, warm)", "strata sql", ONE_DAY, |r| Some(r.warm_ms)),
        ("one day (HDB, first)", "hdb", ONE_DAY, |r| Some(r.first_ms)),
        ("one day (HDB, warm)", "hdb", ONE_DAY, |r| Some(r.warm_ms)),
        ("all days (strata sql, warm)", "strata sql", "all days", |r| Some(r.warm_ms)),
        ("strata sql one-day peak MiB", "strata sql", ONE_DAY, |r| r.peak_mib),
    ];
    let mut headers = vec![Column::number("partitions", 0)];
    headers.extend(columns.iter().map(|(name, ..)| Column::number(*name, if name.ends_with("MiB") { 1 } else { 2 })));
    let mut table = Table::new("by size (ms unless marked)", headers);
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.partitions).collect();
    sizes.dedup();
    for size in sizes {
        let mut row: Vec<Cell> = vec![(size as f64).into()];
        for (_, path, what, value) in &columns {
            let found = rows.iter().find(|r| r.partitions == size && r.path == *path && r.what == *what);
            row.push(found.and_then(value).map_or(Cell::Empty, Cell::from));
        }
        table.push_row(row);
    }
    table
}

/// The targets at the largest size against the smallest, each with its
/// figure and whether it is met.
fn targets(rows: &[Row]) -> Table {
    let mut table = Table::new(
        "targets (largest database against the smallest)",
        vec![Column::text("target"), Column::number("smallest", 2), Column::number("largest", 2), Column::text("met")],
    );
    let sizes: Vec<usize> = rows.iter().map(|r| r.partitions).collect();
    let (Some(&small), Some(&large)) = (sizes.iter().min(), sizes.iter().max()) else { return table };
    let find = |size: usize, path: &str, what: &str| {
        rows.iter().find(|r| r.partitions == size && r.path == path && r.what == what)
    };
    let mut check = |target: &str, path: &str, what: &str, value: Figure, met: &dyn Fn(f64, f64) -> bool| {
        let (Some(a), Some(b)) = (find(small, path, what).and_then(value), find(large, path, what).and_then(value))
        else {
            return;
        };
        table.push_row(vec![target.into(), a.into(), b.into(), if met(a, b) { "yes" } else { "no" }.into()]);
    };
    check(
        "one-day query via strata sql (ms, warm) within 1.5x",
        "strata sql",
        ONE_DAY,
        |r| Some(r.warm_ms),
        &|a, b| b <= 1.5 * a,
    );
    check("open in process (ms) under 20", "library", "open", |r| Some(r.warm_ms), &|_, b| b < 20.0);
    check("HDB first one-day query (ms) under 50", "hdb", ONE_DAY, |r| Some(r.first_ms), &|_, b| b < 50.0);
    check("strata sql one-day peak memory (MiB) flat: within 1.25x", "strata sql", ONE_DAY, |r| r.peak_mib, &|a, b| {
        b <= 1.25 * a
    });
    check("HDB memory after one-day queries (MiB) flat: within 1.25x", "hdb", ONE_DAY, |r| r.peak_mib, &|a, b| {
        b <= 1.25 * a
    });
    table
}
