//! The compression benchmark (`strata bench zip`), after the TAQ case study: every
//! column of a table through every spec of a grid, measuring the stored size, the
//! write time (with and without fsync) and the read time (whole column and random
//! row ranges, cold and warm cache), each against an uncompressed copy written and
//! read the same way in the same run.
//!
//! Per spec the table is written column by column into its own directory (a real
//! splayed table, `.d` and parted index included), then read back. Columns are
//! written one after the other, each with the store's parallel block writer on the
//! benchmark's thread pool, so a column's time is its own.

mod cache;
pub mod measure;
pub mod query;
mod seed_queries;
mod tables;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use strata_codec::CompressionSpec;
use strata_codec::auto::choose;
use strata_store::attribute::{check_attribute, index_path, write_index};
use strata_store::{Attribute, ColumnType, Durability, StoreError, Table, TableSpec, write_atomic};

pub use cache::ColdCache;
pub use query::{QueryShape, SymbolSlice};
pub use seed_queries::{SEED_QUERIES_TABLE, SeedQueryDay};
pub use tables::{AUTO_TABLE, RESULTS_TABLE, SMALL_TABLE_ROWS, TABLE_ROW, TARGETS_TABLE};

use crate::column_stats::{ColumnStatistics, table_statistics};
use crate::recommend::{Recommendation, recommend};
use crate::report::Report;

/// The default grid: seed 000's 17 kdb+ configurations, Strata's type-aware chains,
/// and `auto` for each objective.
pub const DEFAULT_SPECS: &[&str] = &[
    "gzip:1",
    "gzip:5",
    "gzip:6",
    "gzip:9",
    "lz4hc:1",
    "lz4hc:5",
    "lz4hc:9",
    "lz4hc:12",
    "lz4hc:16",
    "qipc",
    "snappy",
    "zstd:-7",
    "zstd:1",
    "zstd:10",
    "zstd:12",
    "zstd:14",
    "zstd:22",
    "pco:4",
    "delta+pco:4",
    "dec+pco:4",
    "delta+zstd:1",
    "delta+shuffle+zstd:1",
    "xor+zstd:1",
    "dec+zstd:1",
    "auto",
    "auto:write",
    "auto:read",
];

/// Label of the uncompressed baseline every ratio is relative to.
pub const BASELINE: &str = "none";

/// What the compression benchmark runs.
pub struct ZipOptions {
    /// Specs to measure (`none` is always measured too, as the baseline). A spec that
    /// cannot apply to a column is adapted to it, as a table spec's default is (the
    /// stored spec is reported).
    pub specs: Vec<CompressionSpec>,
    /// If set, every spec uses blocks of `2^lbs` bytes.
    pub lbs: Option<u8>,
    /// Writes per column and spec; the fastest counts. Reads run once cold and once
    /// warm.
    pub repeats: usize,
    /// Random row ranges read per column.
    pub range_count: usize,
    /// Rows per random range.
    pub range_rows: usize,
    /// How cold reads are made cold.
    pub cold: ColdCache,
    /// Threads writing and reading (a rayon pool of this size).
    pub threads: usize,
    /// The cold tier's write budget: at most this many times the uncompressed write.
    pub cold_write_budget: f64,
    /// Extra query shapes to time per spec and table.
    pub queries: Vec<Box<dyn QueryShape>>,
    /// When set, seed 000's fourteen SQL queries also run on a copy of this day
    /// written with each spec (slow: every spec writes the whole day again).
    pub seed_queries: Option<SeedQueryDay>,
}

impl ZipOptions {
    /// [`DEFAULT_SPECS`], lbs as the specs say (17), one write each, 64 ranges of
    /// 1024 rows, all cores, a 20x cold-tier write budget.
    pub fn new() -> ZipOptions {
        ZipOptions {
            specs: DEFAULT_SPECS.iter().map(|s| s.parse().expect("default specs are valid")).collect(),
            lbs: None,
            repeats: 1,
            range_count: 64,
            range_rows: 1024,
            cold: ColdCache::detect(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cold_write_budget: 20.0,
            queries: Vec::new(),
            seed_queries: None,
        }
    }
}

impl Default for ZipOptions {
    fn default() -> ZipOptions {
        ZipOptions::new()
    }
}

/// One table to benchmark: its name and its rows (symbol columns keyed as read).
pub struct ZipTable {
    /// Name used in reports and file names (`quote`).
    pub name: String,
    /// The rows.
    pub table: Table,
    /// The symbol column to give the parted attribute, if the table is sorted by it.
    pub parted: Option<String>,
}

/// What one (table, column, spec) measurement found; times in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnResult {
    /// Table name.
    pub table: String,
    /// Column name.
    pub column: String,
    /// Column type.
    pub ty: ColumnType,
    /// The grid spec, as given.
    pub spec: String,
    /// The spec stored for this column.
    pub stored_spec: CompressionSpec,
    /// Uncompressed bytes.
    pub raw_bytes: u64,
    /// Bytes on disk.
    pub stored_bytes: u64,
    /// Write to the page cache.
    pub write: f64,
    /// Write then fsync.
    pub write_fsync: f64,
    /// Whole-column read, cold cache.
    pub read_cold: f64,
    /// Whole-column read, warm cache.
    pub read_warm: f64,
    /// Random row ranges, cold cache.
    pub ranges_cold: f64,
    /// Random row ranges, warm cache.
    pub ranges_warm: f64,
}

/// A query shape's times on one spec's copy of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// Table name.
    pub table: String,
    /// The query shape's name.
    pub query: String,
    /// The grid spec.
    pub spec: String,
    /// Seconds, cold cache.
    pub cold: f64,
    /// Seconds, warm cache.
    pub warm: f64,
}

/// Why `auto` chose what it chose for a column.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoResult {
    /// Table name.
    pub table: String,
    /// Column name.
    pub column: String,
    /// The grid spec (`auto`, `auto:write`, ...).
    pub spec: String,
    /// The chosen chain.
    pub chosen: CompressionSpec,
    /// Why.
    pub reason: String,
}

/// Everything one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ZipResults {
    /// Per table, column and spec (the baseline included).
    pub columns: Vec<ColumnResult>,
    /// Per table, query shape and spec.
    pub queries: Vec<QueryResult>,
    /// `auto`'s choices.
    pub autos: Vec<AutoResult>,
    /// Column statistics per table.
    pub statistics: Vec<(String, Vec<ColumnStatistics>)>,
    /// The grid specs in order, baseline first.
    pub specs: Vec<String>,
    /// How cold reads were made cold.
    pub cold: ColdCache,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

/// The benchmark's report and the per-table tier recommendations.
pub struct ZipOutcome {
    /// Tables, charts and notes.
    pub report: Report,
    /// Per table: the hot, mid and cold table specs.
    pub recommendations: Vec<(String, Recommendation)>,
    /// The raw results.
    pub results: ZipResults,
}

/// Runs the benchmark over `tables`, writing copies under `scratch` (removed spec by
/// spec as the run goes). With `progress`, a bar is drawn on a terminal.
pub fn run(
    tables: &[ZipTable],
    options: &ZipOptions,
    scratch: &Path,
    progress: bool,
) -> Result<ZipOutcome, StoreError> {
    let started = Instant::now();
    let invalid = |why: String| Err(StoreError::Invalid(format!("bench zip: {why}")));
    if tables.iter().any(|t| t.table.is_empty()) || tables.is_empty() {
        return invalid("no rows to measure".into());
    }
    if options.repeats == 0 || options.threads == 0 {
        return invalid("repeats and threads must be at least 1".into());
    }
    let mut specs: Vec<CompressionSpec> = vec![CompressionSpec::none()];
    specs.extend(options.specs.iter().filter(|s| s.is_compressed()).cloned());
    if let Some(lbs) = options.lbs {
        for spec in &mut specs {
            spec.lbs = lbs;
        }
        if let Some(bad) = specs.iter().find(|s| s.check_ranges().is_err()) {
            return invalid(format!("--lbs {lbs}: {}", bad.check_ranges().unwrap_err()));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| StoreError::Invalid(format!("cannot start {} threads: {e}", options.threads)))?;
    let columns: usize = tables.iter().map(|t| t.table.names().len()).sum();
    let steps = (columns + usize::from(options.seed_queries.is_some())) * specs.len();
    let bar = crate::progress::bar(progress, steps as u64);
    let mut results = ZipResults {
        columns: Vec::new(),
        queries: Vec::new(),
        autos: Vec::new(),
        statistics: Vec::new(),
        specs: specs.iter().map(ToString::to_string).collect(),
        cold: options.cold,
        elapsed: Duration::ZERO,
    };
    pool.install(|| -> Result<(), StoreError> {
        for table in tables {
            results.statistics.push((table.name.clone(), table_statistics(&table.table)));
            let mut queries: Vec<Box<dyn QueryShape>> = Vec::new();
            if let Some(sym) = &table.parted {
                queries.push(Box::new(SymbolSlice { symbol_column: sym.clone() }));
            }
            for (i, spec) in specs.iter().enumerate() {
                let dir = scratch.join(format!("spec{i}")).join(&table.name);
                measure_spec(table, spec, &dir, options, &queries, &bar, &mut results)?;
                std::fs::remove_dir_all(scratch.join(format!("spec{i}")))
                    .map_err(|source| StoreError::Io { path: dir.clone(), source })?;
            }
        }
        if let Some(seed) = &options.seed_queries {
            let timed = seed_queries::measure(seed, &specs, scratch, options.cold, options.repeats, &bar)?;
            results.queries.extend(timed);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    results.elapsed = started.elapsed();
    let recommendations = tables
        .iter()
        .map(|t| (t.name.clone(), recommend(&results, &t.name, t.parted.as_deref(), options.cold_write_budget)))
        .collect::<Vec<_>>();
    let report = tables::report(&results, &recommendations, options);
    Ok(ZipOutcome { report, recommendations, results })
}

/// Writes and reads every column of `table` with `spec` in `dir`.
fn measure_spec(
    table: &ZipTable,
    spec: &CompressionSpec,
    dir: &Path,
    options: &ZipOptions,
    queries: &[Box<dyn QueryShape>],
    bar: &ProgressBar,
    results: &mut ZipResults,
) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
    let label = spec.to_string();
    let uniform = TableSpec::uniform(spec.clone());
    let none = CompressionSpec::none();
    let mut written = Vec::with_capacity(table.table.names().len());
    for (name, column) in table.table.iter() {
        bar.set_message(format!("{} {label} {name}", table.name));
        let effective = uniform.spec_for(name, column.ty(), &none)?;
        let attribute = if table.parted.as_deref() == Some(name) { Attribute::Parted } else { Attribute::None };
        let figures = measure::write_column(dir, name, column, attribute, &effective, options.repeats)?;
        if let Some(objective) = effective.auto {
            let bytes = column.offsets_buffer().map_or(column.value_bytes(), |o| o.as_slice());
            let choice = choose(column.ty().element_kind(), bytes, objective, effective.lbs)
                .map_err(|source| StoreError::Codec { path: dir.join(name), block: None, source })?;
            results.autos.push(AutoResult {
                table: table.name.clone(),
                column: name.to_string(),
                spec: label.clone(),
                chosen: figures.stored_spec.clone(),
                reason: choice.reason,
            });
        }
        written.push(figures);
        bar.inc(1);
    }
    finish_table(dir, table)?;

    let names: Vec<&str> = table.table.names().iter().map(String::as_str).collect();
    let files: Vec<PathBuf> = table.table.iter().flat_map(|(n, c)| measure::column_paths(dir, n, c)).collect();
    let file_refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let rows = table.table.len();
    let ranges = random_ranges(rows, options.range_count, options.range_rows);
    // Cold then warm, a whole pass at a time, so one cache drop serves a pass.
    let pass = |read: &dyn Fn(&str) -> Result<f64, StoreError>| -> Result<(Vec<f64>, Vec<f64>), StoreError> {
        options.cold.evict(&file_refs).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        let cold = names.iter().map(|n| read(n)).collect::<Result<Vec<_>, _>>()?;
        let warm = names.iter().map(|n| read(n)).collect::<Result<Vec<_>, _>>()?;
        Ok((cold, warm))
    };
    let (read_cold, read_warm) = pass(&|n| measure::read_whole(dir, n))?;
    let (ranges_cold, ranges_warm) = pass(&|n| measure::read_ranges(dir, n, &ranges))?;
    for (i, ((name, column), w)) in table.table.iter().zip(written).enumerate() {
        results.columns.push(ColumnResult {
            table: table.name.clone(),
            column: name.to_string(),
            ty: column.ty(),
            spec: label.clone(),
            stored_spec: w.stored_spec,
            raw_bytes: column.value_bytes().len() as u64 + column.offsets().map_or(0, |o| 8 * o.len() as u64),
            stored_bytes: w.stored_bytes,
            write: w.write_secs,
            write_fsync: w.write_fsync_secs,
            read_cold: read_cold[i],
            read_warm: read_warm[i],
            ranges_cold: ranges_cold[i],
            ranges_warm: ranges_warm[i],
        });
    }
    for query in queries.iter().chain(&options.queries) {
        options.cold.evict(&file_refs).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        let time = || -> Result<f64, StoreError> {
            let start = Instant::now();
            query.run(dir)?;
            Ok(start.elapsed().as_secs_f64())
        };
        let cold = time()?;
        let warm = time()?;
        results.queries.push(QueryResult {
            table: table.name.clone(),
            query: query.name(),
            spec: label.clone(),
            cold,
            warm,
        });
    }
    Ok(())
}

/// Makes the directory of column files a splayed table: `.d`, and the parted index.
fn finish_table(dir: &Path, table: &ZipTable) -> Result<(), StoreError> {
    let order: String = table.table.names().iter().map(|n| format!("{n}\n")).collect();
    write_atomic(&dir.join(strata_store::COLUMN_ORDER_FILE), order.as_bytes(), Durability::Rename)?;
    if let Some(sym) = &table.parted
        && let Some(index) = check_attribute(sym, table.table.column(sym)?, Attribute::Parted)?
    {
        write_index(&index_path(dir, sym, Attribute::Parted), &index, Durability::Rename)?;
    }
    Ok(())
}

/// `count` row ranges of `len` rows spread over `rows` by a fixed hash, the same for
/// every spec.
pub fn random_ranges(rows: usize, count: usize, len: usize) -> Vec<(usize, usize)> {
    let mut rng = crate::rng::SplitMix64::new(0x5A49_5052);
    (0..count)
        .map(|_| {
            let start = rng.below(rows.saturating_sub(len).max(1) as u64) as usize;
            (start, (start + len).min(rows))
        })
        .collect()
}

#[cfg(test)]
mod tests;
