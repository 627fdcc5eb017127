//! `strata bench query`: seed 000's query set on Strata and, in the same run, on
//! DuckDB and Polars over the same data exported to Parquet.
//!
//! Each engine runs every query cold (page cache emptied of the engine's files with
//! `posix_fadvise(DONTNEED)`, a fresh engine or connection) and then warm (the best
//! of `repeats` runs). The report gives per-query times, Strata's time as a ratio of
//! each other engine's, and the geometric means.

mod queries;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use strata_query::Engine;
use strata_query::datafusion::arrow::array::cast::AsArray;
use strata_query::datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use strata_query::datafusion::arrow::compute::cast;
use strata_query::datafusion::arrow::datatypes::{DataType, Int64Type};
use strata_store::{Database, TableWrite};
use strata_taq::TaqConfig;

pub use queries::{Parameters, Query, seed_queries};

use crate::io::flush::{FlushMode, flush};
use crate::report::{Cell, Column, Report, Table};

/// The Python driver of DuckDB and Polars, written next to the Parquet files.
const ENGINES_PY: &str = include_str!("engines.py");

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
}

impl QueryBenchOptions {
    /// Ten million quotes and half a million trades (the target day).
    pub fn new(scratch: PathBuf, python: PathBuf) -> QueryBenchOptions {
        let taq = TaqConfig { quotes: 10_000_000, trades: 500_000, syms: 2_000, ..TaqConfig::default() };
        QueryBenchOptions { db: None, taq, scratch, repeats: 3, python }
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

const TABLES: [&str; 4] = ["quote", "trade", "quoteNorm", "tradeNorm"];

/// Runs the benchmark and builds its report, with a progress bar on a terminal
/// when `progress` is set.
pub fn run(options: &QueryBenchOptions, progress: bool) -> BenchResult<Report> {
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
            let day = strata_taq::generate(&options.taq);
            let db = Database::open(&root)?;
            strata_taq::write_day(&db, options.taq.date, &day, &TableWrite::default())?;
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
        let columns = stored_columns(&engine, table)?;
        let batches = engine.sql(&format!("SELECT {} FROM {table}", columns.join(", ")))?;
        let path = parquet_dir.join(format!("{table}.parquet"));
        strata_query::output::write_parquet(&batches, &batches[0].schema(), &path)?;
        exported.push((table, path));
    }
    let parameters = pick_parameters(&engine, &date)?;
    let queries = seed_queries(&parameters);
    drop(engine);

    progress("running the queries on Strata");
    let evict = || flush(FlushMode::Fadvise, std::slice::from_ref(&db_root)).map(drop).map_err(Into::into);
    let strata = run_strata(&db_root, &queries, options.repeats, &evict)?;
    progress("running the queries on DuckDB and Polars");
    let others = run_python(options, &exported, &queries)?;
    bar.finish_and_clear();
    Ok(report(&queries, &strata, &others, &parameters, options))
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

/// Runs DuckDB and Polars through the Python driver; returns their timings by
/// engine name, in query order.
fn run_python(
    options: &QueryBenchOptions,
    tables: &[(&str, PathBuf)],
    queries: &[Query],
) -> BenchResult<Vec<(String, Vec<Timing>)>> {
    let script = options.scratch.join("engines.py");
    std::fs::write(&script, ENGINES_PY)?;
    let spec = options.scratch.join("spec.json");
    std::fs::write(&spec, spec_json(tables, queries, options.repeats))?;
    let out = options.scratch.join("engines.tsv");
    let status = Command::new(&options.python).arg(&script).arg(&spec).arg(&out).status().map_err(|e| {
        format!("cannot run {} (set STRATA_PYTHON to a Python with duckdb and polars): {e}", options.python.display())
    })?;
    if !status.success() {
        return Err(format!("{} {} failed ({status})", options.python.display(), script.display()).into());
    }
    let text = std::fs::read_to_string(&out)?;
    let mut engines: Vec<(String, Vec<Timing>)> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [engine, name, cold, warm, rows] = f.as_slice() else {
            return Err(format!("{}: bad line {line:?}", out.display()).into());
        };
        let timing = Timing { cold_ms: cold.parse()?, warm_ms: warm.parse()?, rows: rows.parse()? };
        let position = queries.iter().position(|q| q.name == *name).ok_or_else(|| format!("unknown query {name}"))?;
        if !engines.iter().any(|(e, _)| e == engine) {
            engines.push((engine.to_string(), vec![Timing::default(); queries.len()]));
        }
        let slot = engines.iter_mut().find(|(e, _)| e == engine).expect("just added");
        slot.1[position] = timing;
    }
    Ok(engines)
}

/// The driver's input as JSON.
fn spec_json(tables: &[(&str, PathBuf)], queries: &[Query], repeats: usize) -> String {
    fn s(text: &str) -> String {
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

fn report(
    queries: &[Query],
    strata: &[Timing],
    others: &[(String, Vec<Timing>)],
    p: &Parameters,
    options: &QueryBenchOptions,
) -> Report {
    let mut columns = vec![
        Column::text("query"),
        Column::number("rows", 0),
        Column::number("strata cold ms", 1).lower_is_better(),
        Column::number("strata warm ms", 2).lower_is_better(),
    ];
    for (engine, _) in others {
        columns.push(Column::number(format!("{engine} cold ms"), 1).lower_is_better());
        columns.push(Column::number(format!("{engine} warm ms"), 2).lower_is_better());
    }
    for (engine, _) in others {
        columns.push(Column::number(format!("strata/{engine} warm"), 3).lower_is_better());
        columns.push(Column::number(format!("strata/{engine} cold"), 3).lower_is_better());
    }
    columns.push(Column::text("rows agree"));
    let mut table = Table::new("query times (ms) and Strata's ratio to each engine (below 1: Strata faster)", columns);
    for (i, q) in queries.iter().enumerate() {
        let mut row: Vec<Cell> =
            vec![q.name.clone().into(), strata[i].rows.into(), strata[i].cold_ms.into(), strata[i].warm_ms.into()];
        for (_, t) in others {
            row.push(t[i].cold_ms.into());
            row.push(t[i].warm_ms.into());
        }
        for (_, t) in others {
            row.push((strata[i].warm_ms / t[i].warm_ms).into());
            row.push((strata[i].cold_ms / t[i].cold_ms).into());
        }
        row.push(others.iter().all(|(_, t)| t[i].rows == strata[i].rows).into());
        table.push_row(row);
    }
    let mut row: Vec<Cell> = vec![
        "geometric mean".into(),
        Cell::Empty,
        geomean(strata.iter().map(|t| t.cold_ms)).into(),
        geomean(strata.iter().map(|t| t.warm_ms)).into(),
    ];
    for (_, t) in others {
        row.push(geomean(t.iter().map(|x| x.cold_ms)).into());
        row.push(geomean(t.iter().map(|x| x.warm_ms)).into());
    }
    for (_, t) in others {
        row.push(geomean(strata.iter().zip(t).map(|(s, o)| s.warm_ms / o.warm_ms)).into());
        row.push(geomean(strata.iter().zip(t).map(|(s, o)| s.cold_ms / o.cold_ms)).into());
    }
    row.push(Cell::Empty);
    table.push_row(row);
    let mut setup = Table::new("set-up", vec![Column::text("what"), Column::text("value")]);
    let data = match &options.db {
        Some(db) => db.display().to_string(),
        None => format!(
            "generated: {} quotes, {} trades, {} symbols, seed {}",
            options.taq.quotes, options.taq.trades, options.taq.syms, options.taq.seed
        ),
    };
    for (what, value) in [
        ("data", data),
        ("date", p.date.clone()),
        ("someSyms", p.some_syms.join(" ")),
        ("infreqIdList", p.infrequent.join(" ")),
        ("VFVA stand-in", p.one_sym.clone()),
        ("CIIG.W stand-in", p.rare_sym.clone()),
        ("size thresholds (seed 500000, 700000, 4000)", format!("{}, {}, {}", p.big_size, p.bigger_size, p.deep)),
        ("cold", "page cache emptied of the engine's files (posix_fadvise DONTNEED), fresh engine".into()),
        ("warm", format!("best of {} further runs", options.repeats)),
    ] {
        setup.push_row(vec![what.into(), value.into()]);
    }
    let mut queries_table =
        Table::new("the queries", vec![Column::text("query"), Column::text("q"), Column::text("Strata SQL")]);
    for q in queries {
        queries_table.push_row(vec![
            q.name.clone().into(),
            q.q.into(),
            q.strata.first().cloned().unwrap_or_default().into(),
        ]);
    }
    let mut report = Report::new("query set: Strata vs DuckDB vs Polars");
    report.push_table(table);
    report.push_table(setup);
    report.push_table(queries_table);
    report
}
