//! The built-in trade table, and the table-write benchmark: how long writing a whole
//! splayed table takes per compression spec, on one thread and on all of them.
//!
//! A table write compresses columns and their blocks in parallel on a rayon pool; the
//! benchmark runs the same write inside pools of different sizes, so the speed-up of
//! the parallel write is measured in one run against the single-threaded write.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use strata_codec::CompressionSpec;
use strata_store::{Column, ColumnType, Durability, SplayedTable, Table, TableSpec, WriteOptions, write_splayed};

use crate::data::{SampleColumn, trade_columns};
use crate::report::{Cell, Column as ReportColumn, Report, Table as ReportTable};

/// A ticker-like name for symbol key `key`: `A`, `B`, ..., `AA`, `AB`, ...
pub fn ticker(key: u32) -> String {
    let mut n = key as u64 + 1;
    let mut letters = Vec::new();
    while n > 0 {
        n -= 1;
        letters.push(b'A' + (n % 26) as u8);
        n /= 26;
    }
    letters.reverse();
    String::from_utf8(letters).expect("ASCII letters")
}

/// The kdb+ type each built-in trade column is stored as.
fn column_type(name: &str) -> ColumnType {
    match name {
        "time" => ColumnType::Timestamp,
        "price" => ColumnType::Float,
        "size" => ColumnType::Int,
        "seq" => ColumnType::Long,
        "cond" => ColumnType::Char,
        "sym" => ColumnType::Symbol,
        other => unreachable!("no built-in column {other}"),
    }
}

/// The built-in trade table (`time price size seq cond sym`) with `rows` rows,
/// deterministic for `seed`, as [`crate::data`] generates its columns.
pub fn trade_table(rows: usize, seed: u64) -> Table {
    let columns = trade_columns(rows, seed);
    let domain_len = columns
        .iter()
        .filter(|c| c.name == "sym")
        .flat_map(|c| c.bytes.chunks_exact(4).map(|k| u32::from_le_bytes(k.try_into().expect("4"))))
        .max()
        .map_or(0, |k| k + 1);
    let domain = Arc::new((0..domain_len).map(ticker).collect::<Vec<_>>());
    let named = columns
        .into_iter()
        .map(|SampleColumn { name, bytes, .. }| {
            let ty = column_type(name);
            let sym_domain = (ty == ColumnType::Symbol).then(|| domain.clone());
            let column = Column::from_buffer(ty, arrow_buffer::Buffer::from_vec(bytes), sym_domain)
                .expect("generated columns are whole values");
            (name.to_string(), column)
        })
        .collect();
    Table::new(named).expect("generated columns have equal lengths")
}

/// What the table-write benchmark runs.
#[derive(Clone, Debug)]
pub struct TableWriteOptions {
    /// Rows in the built-in trade table.
    pub rows: usize,
    /// Labelled table specs to write with.
    pub specs: Vec<(String, TableSpec)>,
    /// Thread counts to write with; the first is the baseline for the speed-up.
    pub threads: Vec<usize>,
    /// Writes per configuration; the fastest counts.
    pub repeats: usize,
}

impl TableWriteOptions {
    /// A sensible default: plain, zstd:1, lz4hc:5, gzip:6 and a type-aware spec, on
    /// one thread and on every core.
    pub fn new(rows: usize) -> TableWriteOptions {
        let uniform = |s: &str| TableSpec::uniform(s.parse::<CompressionSpec>().expect("valid spec"));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        TableWriteOptions {
            rows,
            specs: vec![
                ("none".into(), uniform("none")),
                ("zstd:1".into(), uniform("zstd:1")),
                ("lz4hc:5".into(), uniform("lz4hc:5")),
                ("gzip:6".into(), uniform("gzip:6")),
                ("typed".into(), typed_spec()),
            ],
            threads: if cores > 1 { vec![1, cores] } else { vec![1] },
            repeats: 3,
        }
    }
}

/// A type-aware table spec for the built-in trade table: pcodec for numbers,
/// delta for sequence-like integers, zstd for the rest.
pub fn typed_spec() -> TableSpec {
    TableSpec::parse(
        "default = \"zstd:1\"\n[columns]\ntime = \"pco:4\"\nprice = \"dec+pco:4\"\nsize = \"pco:4\"\nseq = \"delta+pco:4\"\nsym = \"zstd:1\"\n",
    )
    .expect("a valid table spec")
}

/// Writes the built-in table under `dir` once per spec and thread count and reports
/// seconds, raw MB/s, speed-up against the first thread count, and size on disk.
pub fn run(options: &TableWriteOptions, dir: &Path) -> Result<Report, strata_store::StoreError> {
    let table = trade_table(options.rows, crate::data::DEFAULT_SEED);
    let raw_bytes: usize = table.columns().iter().map(|c| c.value_bytes().len()).sum();
    let mut rows = ReportTable::new(
        "table write",
        vec![
            ReportColumn::text("spec"),
            ReportColumn::number("threads", 0),
            ReportColumn::number("seconds", 3).lower_is_better(),
            ReportColumn::number("raw_MBps", 0).higher_is_better(),
            ReportColumn::number("speedup", 2).higher_is_better(),
            ReportColumn::number("stored_MB", 2).lower_is_better(),
            ReportColumn::number("ratio", 2).higher_is_better(),
        ],
    );
    for (label, spec) in &options.specs {
        let target = dir.join("bench_write");
        let write_options =
            WriteOptions { spec: spec.clone(), durability: Durability::Rename, ..WriteOptions::default() };
        let pools = options
            .threads
            .iter()
            .map(|&threads| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .map_err(|e| strata_store::StoreError::Invalid(format!("cannot start {threads} threads: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Thread counts take turns within each repeat, so drift in the machine's load
        // or page cache falls on all of them alike.
        let mut best = vec![f64::INFINITY; pools.len()];
        for _ in 0..options.repeats.max(1) {
            for (pool, best) in pools.iter().zip(&mut best) {
                let start = Instant::now();
                pool.install(|| write_splayed(&target, &table, &write_options))?;
                *best = best.min(start.elapsed().as_secs_f64());
            }
        }
        let stored: u64 = SplayedTable::open(&target)?.stats()?.iter().map(|s| s.stored_bytes).sum();
        for (&threads, &seconds) in options.threads.iter().zip(&best) {
            rows.push_row(vec![
                Cell::from(label.as_str()),
                Cell::Number(threads as f64),
                Cell::Number(seconds),
                Cell::Number(raw_bytes as f64 / 1e6 / seconds),
                Cell::Number(best[0] / seconds),
                Cell::Number(stored as f64 / 1e6),
                Cell::Number(raw_bytes as f64 / stored as f64),
            ]);
        }
    }
    let mut report = Report::new(format!("table write: {} rows, {:.1} MB raw", options.rows, raw_bytes as f64 / 1e6));
    report.push_note("Best of the repeats; no fsync, so the figures are CPU and page-cache cost, not the disk's.");
    report.push_table(rows);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickers_count_like_spreadsheet_columns() {
        assert_eq!(ticker(0), "A");
        assert_eq!(ticker(25), "Z");
        assert_eq!(ticker(26), "AA");
        assert_eq!(ticker(27), "AB");
    }

    #[test]
    fn the_built_in_table_has_trade_columns() {
        let table = trade_table(1000, 7);
        assert_eq!(table.names(), ["time", "price", "size", "seq", "cond", "sym"]);
        assert_eq!(table.len(), 1000);
        assert_eq!(table.column("sym").unwrap().ty(), ColumnType::Symbol);
        assert_eq!(trade_table(1000, 7), table, "deterministic");
    }

    #[test]
    fn the_write_benchmark_reports_every_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = TableWriteOptions::new(20_000);
        options.threads = vec![1, 2];
        options.repeats = 1;
        let report = run(&options, dir.path()).unwrap();
        let table = report.table("table write").unwrap();
        assert_eq!(table.to_csv().lines().count(), 1 + options.specs.len() * 2);
        assert!(report.to_terminal().contains("typed"));
    }
}
