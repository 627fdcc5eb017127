//! `strata bench query`: an analyst workload on a TAQ day ([`workload`]) run by
//! Strata and, alternated per query in the same run, by DuckDB and Polars holding
//! the same day in memory, as their users run repeated queries.
//!
//! Strata runs each query three ways ([`strata_runs`]): the library in process, an
//! HDB over kdb+ IPC, and a `strata sql` process. DuckDB (in memory, and from a
//! database file) and Polars (DataFrames in memory) run in a Python driver
//! ([`driver`]) that loads the day once, reports the load separately, and checks each
//! answer against Strata's row for row. Every engine runs every query cold (page
//! cache emptied of its files with `posix_fadvise(DONTNEED)` where it has files, a
//! fresh engine or connection where that means anything) and then warm (the best of
//! `repeats` runs), materialising the full result. The report ([`figures`]) gives
//! per-query times, Strata's ratios to in-memory DuckDB and Polars, and geometric
//! means per family and overall.
//!
//! Seed 000's fourteen queries ([`seed_queries`]) stay here for `strata bench zip`
//! and `--print-queries`.

mod driver;
mod figures;
mod queries;
mod strata_runs;
pub mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use strata_query::Engine;
use strata_query::datafusion::arrow::array::cast::AsArray;
use strata_query::datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use strata_query::datafusion::arrow::compute::cast;
use strata_query::datafusion::arrow::datatypes::{DataType, Int64Type};
use strata_store::{Column as StoreColumn, ColumnType, Database, TableWrite, WriteMode};
use strata_taq::{TaqConfig, TaqDay};

pub use queries::{Parameters, Query, seed_queries};

use crate::io::flush::{FlushMode, flush};
use crate::report::Report;

/// What to run.
#[derive(Clone, Debug)]
pub struct QueryBenchOptions {
    /// An existing database with quote, trade, quoteNorm and tradeNorm; `None`
    /// generates a TAQ day into `scratch`.
    pub db: Option<PathBuf>,
    /// The day to generate when there is no database.
    pub taq: TaqConfig,
    /// A scratch directory (generated database, Parquet files, driver script).
    pub scratch: PathBuf,
    /// Warm runs per query; the fastest counts.
    pub repeats: usize,
    /// The Python interpreter with duckdb and polars.
    pub python: PathBuf,
    /// The `strata` binary, run as `strata hdb` and `strata sql`.
    pub strata: PathBuf,
    /// The families to run (names of [`workload::FAMILIES`]); empty runs them all.
    pub families: Vec<String>,
}

impl QueryBenchOptions {
    /// Five million quotes, 250,000 trades, 2,000 symbols.
    pub fn new(scratch: PathBuf, python: PathBuf, strata: PathBuf) -> QueryBenchOptions {
        let taq = TaqConfig { quotes: 5_000_000, trades: 250_000, syms: 2_000, ..TaqConfig::default() };
        QueryBenchOptions { db: None, taq, scratch, repeats: 3, python, strata, families: Vec::new() }
    }
}

/// Anything the benchmark can fail with.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One engine's figures for one query.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Timing {
    /// First run, after the engine's files were made cold, on a fresh engine.
    pub cold_ms: f64,
    /// Best of the warm runs.
    pub warm_ms: f64,
    /// Rows the query returned.
    pub rows: usize,
}

/// The tables the workload reads, exported to Parquet for DuckDB and Polars.
const TABLES: [&str; 2] = ["quoteNorm", "tradeNorm"];

/// Runs the benchmark and builds its report, with a progress bar on a terminal
/// when `progress` is set.
pub fn run(options: &QueryBenchOptions, progress: bool) -> BenchResult<Report> {
    workload::check_families(&options.families)?;
    let bar = crate::progress::spinner(progress);
    let progress = |what: &str| {
        bar.set_message(what.to_string());
        bar.tick();
    };
    std::fs::create_dir_all(&options.scratch)?;
    let db_root = match &options.db {
        Some(db) => db.clone(),
        None => {
            let root = options.scratch.join("db");
            progress(&format!("generating {} quotes and {} trades", options.taq.quotes, options.taq.trades));
            let day = microsecond_times(strata_taq::generate(&options.taq))?;
            let db = Database::open(&root)?;
            // A rerun on the same scratch regenerates the day: merging would hold it twice.
            strata_taq::write_day(&db, options.taq.date, &day, &TableWrite::default(), WriteMode::Replace)?;
            root
        }
    };
    let engine = Engine::open(&db_root)?;
    let date = single_date(&engine)?;
    progress("exporting the tables to Parquet");
    let parquet_dir = options.scratch.join("parquet");
    std::fs::create_dir_all(&parquet_dir)?;
    let mut exported = Vec::new();
    for table in TABLES {
        // In symbol then time order, as stored: Polars' per-symbol windows and as-of
        // joins take the frames' order (a query's batches need not keep it).
        let columns = stored_columns(&engine, table)?;
        let batches = engine.sql(&format!("SELECT {} FROM {table} ORDER BY sym, time", columns.join(", ")))?;
        let path = parquet_dir.join(format!("{table}.parquet"));
        strata_query::output::write_parquet(&batches, &batches[0].schema(), &path)?;
        exported.push((table, path));
    }
    let parameters = workload::pick_workload_parameters(&engine, &date)?;
    let queries = workload::of_families(workload::workload(&parameters), &options.families)?;
    drop(engine);

    let answers = options.scratch.join("answers");
    std::fs::create_dir_all(&answers)?;
    progress("loading the day into DuckDB and Polars");
    let spec = driver::spec_json(&exported, &options.scratch, &answers, &parameters, &queries, options.repeats);
    let mut others = driver::Driver::start(&options.python, &options.scratch, &spec)?;
    progress("starting an HDB");
    let mut hdb = crate::process::Hdb::start(&options.strata, &db_root)?;
    let evict = || flush(FlushMode::Fadvise, std::slice::from_ref(&db_root)).map(drop).map_err(Into::into);
    let side =
        strata_runs::StrataSide { root: &db_root, strata: &options.strata, repeats: options.repeats, evict: &evict };
    let mut measured = Vec::new();
    for (i, query) in queries.iter().enumerate() {
        progress(&format!("{}/{}: {}", i + 1, queries.len(), query.name));
        let strata = strata_runs::run_query(&side, &mut hdb, &query.sql, &strata_runs::answer_path(&answers, i))
            .map_err(|e| format!("{}: {e}", query.name))?;
        let others = others.run(i).map_err(|e| format!("{}: {e}", query.name))?;
        measured.push(figures::Measured { strata, others });
    }
    bar.finish_and_clear();
    let setup = figures::Setup { options, parameters: &parameters, loads: &others.loads, hdb_ready_ms: hdb.ready_ms };
    Ok(figures::report(&queries, &measured, &setup))
}

/// The day with each table's times floored to whole microseconds and made distinct
/// within each symbol (a time not after the one before it, in a run of times that
/// did not go back, moves to one microsecond after it). DuckDB's TIME then holds
/// them exactly, and every as-of match and "first by time" has one answer, so the
/// engines' results can be compared row for row.
fn microsecond_times(day: TaqDay) -> BenchResult<TaqDay> {
    let distinct = |table: &strata_store::Table| -> BenchResult<strata_store::Table> {
        let times = table.column("Time")?.values::<i64>();
        let mut out = Vec::with_capacity(times.len());
        let (mut before, mut before_out) = (i64::MIN, i64::MIN);
        for &t in times {
            let mut us = t - t.rem_euclid(1_000);
            if t >= before && us <= before_out {
                us = before_out + 1_000;
            }
            out.push(us);
            (before, before_out) = (t, us);
        }
        Ok(table.with_column("Time", StoreColumn::from_values(ColumnType::Timespan, out)?)?)
    };
    Ok(TaqDay { quote: distinct(&day.quote)?, trade: distinct(&day.trade)? })
}

/// The query set for the database at `db` (parameters picked from its data) as
/// JSON: `{"queries": [{"name", "strata": [...], "duckdb": [...], "polars"}]}`,
/// for checking results against other engines.
pub fn query_set_json(db: &Path) -> BenchResult<String> {
    let engine = Engine::open(db)?;
    let date = single_date(&engine)?;
    let queries = seed_queries(&pick_parameters(&engine, &date)?);
    Ok(spec_json(&[], &queries, 0))
}

/// The one partition date of the database (the query set is one day's).
pub(crate) fn single_date(engine: &Engine) -> BenchResult<String> {
    let out = engine.sql("SELECT DISTINCT CAST(date AS VARCHAR) AS d FROM quote")?;
    let dates = strings(&out, "d");
    match dates.as_slice() {
        [one] => Ok(one.clone()),
        other => Err(format!("the query set needs one date partition; quote has {}", other.len()).into()),
    }
}

fn stored_columns(engine: &Engine, table: &str) -> BenchResult<Vec<String>> {
    let schema = engine.schema_of(&format!("SELECT * FROM {table}"))?;
    Ok(schema.fields().iter().map(|f| f.name().clone()).filter(|n| n != "date" && n != "i").collect())
}

fn strings(batches: &[RecordBatch], column: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let c = column_as(b, column, &DataType::Utf8);
        let s = c.as_string::<i32>();
        out.extend((0..s.len()).map(|i| s.value(i).to_string()));
    }
    out
}

fn numbers(batches: &[RecordBatch], column: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let c = column_as(b, column, &DataType::Int64);
        out.extend(c.as_primitive::<Int64Type>().values().iter().copied());
    }
    out
}

fn column_as(batch: &RecordBatch, column: &str, to: &DataType) -> ArrayRef {
    let c = batch.column_by_name(column).expect("a column the query names");
    cast(c, to).expect("text and integer columns cast")
}

/// Symbols and thresholds picked from the data (so the queries return rows on any
/// generated day, as the seed's constants did on real data).
pub(crate) fn pick_parameters(engine: &Engine, date: &str) -> BenchResult<Parameters> {
    let d = format!("date = '{date}'");
    let counts =
        engine.sql(&format!("SELECT sym, count(*) AS n FROM quoteNorm WHERE {d} GROUP BY sym ORDER BY n DESC, sym"))?;
    let syms = strings(&counts, "sym");
    if syms.len() < 20 {
        return Err(format!("the query set needs at least 20 symbols; quoteNorm has {}", syms.len()).into());
    }
    let quantile = |q: f64, sql: &str| -> BenchResult<i64> {
        let mut v = numbers(&engine.sql(sql)?, "v");
        v.sort_unstable();
        Ok(v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1))).copied().unwrap_or(0))
    };
    let sizes = format!("SELECT size AS v FROM tradeNorm WHERE {d}");
    let infrequent: Vec<String> = syms[syms.len() - 10..].to_vec();
    let deep_sql = format!(
        "SELECT bsize + asize AS v FROM quoteNorm WHERE {d} AND sym IN ({})",
        infrequent.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
    );
    Ok(Parameters {
        date: date.to_string(),
        some_syms: vec![syms[0].clone(), syms[syms.len() / 10].clone(), syms[syms.len() / 4].clone()],
        one_sym: syms[syms.len() / 2].clone(),
        rare_sym: syms[syms.len() - 11].clone(),
        infrequent,
        big_size: quantile(0.999, &sizes)?,
        bigger_size: quantile(0.9995, &sizes)?,
        deep: quantile(0.9, &deep_sql)?,
        quote_columns: stored_columns(engine, "quote")?,
        trade_columns: stored_columns(engine, "trade")?,
    })
}

/// Times each query on a fresh engine over `root`: once right after `evict` made
/// the files cold, then the best of `repeats` warm runs.
pub(crate) fn run_strata(
    root: &Path,
    queries: &[Query],
    repeats: usize,
    evict: &dyn Fn() -> BenchResult<()>,
) -> BenchResult<Vec<Timing>> {
    let mut timings = Vec::new();
    for query in queries {
        evict()?;
        let engine = Engine::open(root)?;
        let once = |engine: &Engine| -> BenchResult<(f64, usize)> {
            let started = Instant::now();
            let mut rows = 0;
            for sql in &query.strata {
                rows += engine.sql(sql)?.iter().map(RecordBatch::num_rows).sum::<usize>();
            }
            Ok((started.elapsed().as_secs_f64() * 1e3, rows))
        };
        let (cold_ms, rows) = once(&engine)?;
        let mut warm_ms = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            warm_ms = warm_ms.min(once(&engine)?.0);
        }
        timings.push(Timing { cold_ms, warm_ms, rows });
    }
    Ok(timings)
}

/// `text` as a JSON string.
pub(crate) fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The seed query set as JSON (`--print-queries`).
fn spec_json(tables: &[(&str, PathBuf)], queries: &[Query], repeats: usize) -> String {
    let s = json_string;
    let tables: Vec<String> =
        tables.iter().map(|(n, p)| format!("{}: {}", s(n), s(&p.display().to_string()))).collect();
    let queries: Vec<String> = queries
        .iter()
        .map(|q| {
            let list = |v: &[String]| v.iter().map(|x| s(x)).collect::<Vec<_>>().join(", ");
            format!(
                "{{\"name\": {}, \"strata\": [{}], \"duckdb\": [{}], \"polars\": {}}}",
                s(&q.name),
                list(&q.strata),
                list(&q.duckdb),
                s(&q.polars)
            )
        })
        .collect();
    format!("{{\"tables\": {{{}}}, \"repeats\": {repeats}, \"queries\": [{}]}}", tables.join(", "), queries.join(", "))
}

/// The geometric mean of `values` (each floored at 0.001); NaN when there are none.
pub(crate) fn geomean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut log_sum, mut n) = (0.0, 0usize);
    for v in values {
        log_sum += v.max(1e-3).ln();
        n += 1;
    }
    if n == 0 { f64::NAN } else { (log_sum / n as f64).exp() }
}
