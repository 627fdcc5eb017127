//! The codec benchmark (`strata bench codecs`): every sample column through every
//! suitable compression spec, single-threaded and on a thread pool, with ratio,
//! compress and decompress throughput and a round-trip check.
//!
//! ```no_run
//! use strata_bench::codecs::{CodecBenchOptions, run};
//! let report = run(&CodecBenchOptions::default(), true).unwrap();
//! println!("{}", report.to_terminal());
//! ```

mod measure;
mod summary;

use strata_codec::{CodecError, CompressionSpec};

use crate::data::{self, DEFAULT_SEED, SampleColumn};
use crate::report::{Caveat, Cell, Column, Goal, Report, ScatterChart, Table};

/// The specs measured by default, in the order they are reported: kdb+'s codecs at
/// common levels, pcodec, and Strata's filter chains.
pub const DEFAULT_SPECS: &[&str] = &[
    "none",
    "qipc",
    "gzip:1",
    "gzip:6",
    "snappy",
    "lz4hc:0",
    "lz4hc:9",
    "zstd:-7",
    "zstd:1",
    "zstd:3",
    "zstd:19",
    "pco:4",
    "pco:8",
    "delta+zstd:1",
    "dod+zstd:1",
    "delta+shuffle+zstd:1",
    "shuffle+zstd:1",
    "xor+zstd:1",
    "shuffle+lz4hc:0",
    "delta+pco:8",
    "dec+delta+zstd:1",
    "dec+zstd:1",
    "dec+pco:4",
];

/// Title of the report's table with one row per (column, spec, threads).
pub const RESULTS_TABLE: &str = "Codecs by column";
/// Title of the report's table with one row per column comparing against zstd:1.
pub const SUMMARY_TABLE: &str = "Best per column vs zstd:1";

/// [`DEFAULT_SPECS`] parsed.
pub fn default_specs() -> Vec<CompressionSpec> {
    DEFAULT_SPECS.iter().map(|s| s.parse().expect("default specs are valid")).collect()
}

/// One thread and, if the machine has more, one per available core.
pub fn default_threads() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 { vec![1, cores] } else { vec![1] }
}

/// What the codec benchmark measures.
#[derive(Clone, Debug, PartialEq)]
pub struct CodecBenchOptions {
    /// Values per sample column (see [`data::trade_columns`]); must be positive.
    pub rows: usize,
    /// Specs to try; those unsuitable for a column's element kind are skipped for it.
    pub specs: Vec<CompressionSpec>,
    /// Thread counts to measure with: 1 runs on the calling thread, more on a rayon
    /// pool of that size. Duplicates are measured once.
    pub threads: Vec<usize>,
    /// Times each compress and decompress pass runs; the fastest counts.
    pub repeats: usize,
    /// Seed for the sample data; the same seed gives the same bytes everywhere.
    pub seed: u64,
}

impl Default for CodecBenchOptions {
    /// One million rows, [`DEFAULT_SPECS`], [`default_threads`], best of 3.
    fn default() -> CodecBenchOptions {
        CodecBenchOptions {
            rows: 1_000_000,
            specs: default_specs(),
            threads: default_threads(),
            repeats: 3,
            seed: DEFAULT_SEED,
        }
    }
}

/// Why the codec benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum CodecBenchError {
    /// The options cannot be run (zero rows, no specs, a zero thread count, ...).
    #[error("codec bench options: {0}")]
    InvalidOptions(String),
    /// A codec refused a block: a bug in the codec or in the spec's suitability check.
    #[error("column '{column}', spec {spec}, block {block}: {source}")]
    Codec {
        /// The sample column.
        column: String,
        /// The spec, as written.
        spec: String,
        /// The block's index within the column.
        block: usize,
        /// The codec's error (boxed: it is large and errors are rare).
        #[source]
        source: Box<CodecError>,
    },
    /// A block decompressed to bytes other than those compressed.
    #[error(
        "column '{column}', spec {spec}, block {block}: decompressed bytes differ from the input at byte {offset} of the block"
    )]
    RoundTrip {
        /// The sample column.
        column: String,
        /// The spec, as written.
        spec: String,
        /// The block's index within the column.
        block: usize,
        /// The first differing byte, counted from the start of the block.
        offset: usize,
    },
    /// The thread pool for a thread count could not be started.
    #[error("could not start a pool of {threads} threads: {detail}")]
    ThreadPool {
        /// The pool size asked for.
        threads: usize,
        /// The pool builder's message.
        detail: String,
    },
}

/// One row of the results: a column, a spec, a thread count and what was measured.
#[derive(Clone, Debug, PartialEq)]
struct Measurement {
    column: &'static str,
    spec: CompressionSpec,
    threads: usize,
    figures: measure::Figures,
}

/// Runs the codec benchmark and returns its report: notes on what was measured, the
/// results table ([`RESULTS_TABLE`]), the summary table ([`SUMMARY_TABLE`]) and one
/// ratio-vs-speed chart per column.
///
/// With `progress`, a progress bar is drawn on stderr when stderr is a terminal.
/// Every block's round trip is verified; a mismatch or codec error stops the run.
pub fn run(opts: &CodecBenchOptions, progress: bool) -> Result<Report, CodecBenchError> {
    let threads = validate(opts)?;
    let pools = threads
        .iter()
        .map(|&n| {
            if n == 1 {
                return Ok(None);
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("codec-bench-{i}"))
                .build()
                .map(Some)
                .map_err(|e| CodecBenchError::ThreadPool { threads: n, detail: e.to_string() })
        })
        .collect::<Result<Vec<_>, _>>()?;

    let columns = data::trade_columns(opts.rows, opts.seed);
    let plan: Vec<(&SampleColumn, &CompressionSpec)> = columns
        .iter()
        .flat_map(|c| opts.specs.iter().filter(|s| s.check_suitable(c.kind).is_ok()).map(move |s| (c, s)))
        .collect();
    let bar = crate::progress::bar(progress, (plan.len() * threads.len()) as u64);

    let mut measurements = Vec::with_capacity(plan.len() * threads.len());
    for (column, spec) in plan {
        for (&n, pool) in threads.iter().zip(&pools) {
            bar.set_message(format!("{} {spec} x{n}", column.name));
            let figures = measure::measure(column, spec, pool.as_ref(), opts.repeats)?;
            measurements.push(Measurement { column: column.name, spec: spec.clone(), threads: n, figures });
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(build_report(opts, &threads, &columns, &measurements))
}

/// Checks the options and returns the thread counts to use, sorted and deduplicated.
fn validate(opts: &CodecBenchOptions) -> Result<Vec<usize>, CodecBenchError> {
    let invalid = |why: String| Err(CodecBenchError::InvalidOptions(why));
    if opts.rows == 0 {
        return invalid("rows must be at least 1".into());
    }
    if opts.repeats == 0 {
        return invalid("repeats must be at least 1".into());
    }
    if opts.specs.is_empty() {
        return invalid("no specs to measure".into());
    }
    if let Some(spec) = opts.specs.iter().find(|s| s.check_ranges().is_err()) {
        let why = spec.check_ranges().unwrap_err();
        return invalid(format!("spec {spec}: {why}"));
    }
    if opts.threads.is_empty() || opts.threads.contains(&0) {
        return invalid(format!("thread counts must be 1 or more, got {:?}", opts.threads));
    }
    let mut threads = opts.threads.clone();
    threads.sort_unstable();
    threads.dedup();
    Ok(threads)
}

fn build_report(
    opts: &CodecBenchOptions,
    threads: &[usize],
    columns: &[SampleColumn],
    measurements: &[Measurement],
) -> Report {
    let mut report = Report::new("Strata codec benchmark");
    report.push_note(format!(
        "{} rows per column, seed {:#x}; each spec splits a column into blocks of 2^lbs raw bytes \
         (128 KiB unless the spec says @lbs) and compresses them independently. \
         ratio = raw bytes / stored bytes (blocks that do not shrink are stored raw); \
         MBps = raw megabytes (10^6 bytes) per second, best of {} repeats; \
         threads = 1 runs on one thread, more spread the blocks over a pool of that size ({:?}; {} cores available). \
         Every block's round trip was verified. Throughputs are wall-clock: other load on the machine lowers them.",
        opts.rows,
        opts.seed,
        opts.repeats,
        threads,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    ));
    for column in columns {
        report.push_note(format!(
            "{}: {} ({:.1} MB)",
            column.name,
            column.description,
            column.bytes.len() as f64 / 1e6
        ));
    }

    let mut results = Table::new(
        RESULTS_TABLE,
        vec![
            Column::text("column"),
            Column::text("spec"),
            Column::number("threads", 0),
            Column::number("ratio", 2).higher_is_better(),
            Column::number("compress_MBps", 1).higher_is_better(),
            Column::number("decompress_MBps", 1).higher_is_better(),
        ],
    );
    for (row, m) in measurements.iter().enumerate() {
        results.push_row(vec![
            m.column.into(),
            m.spec.to_string().into(),
            m.threads.into(),
            m.figures.ratio.into(),
            m.figures.compress_mbps.into(),
            m.figures.decompress_mbps.into(),
        ]);
        let Some(column) = columns.iter().find(|c| c.name == m.column) else { continue };
        let blocks = column.bytes.len().div_ceil(m.spec.block_bytes());
        for (at, mbps) in [(4, m.figures.compress_mbps), (5, m.figures.decompress_mbps)] {
            // The throughput's timing, back from bytes over MB/s.
            if let Some(caveat) = Caveat::for_timing(column.bytes.len() as f64 / (mbps * 1e6)) {
                results.flag(row, at, caveat);
            } else if m.threads > blocks {
                results.flag(row, at, Caveat::SmallData(STARVED.into()));
            }
        }
    }
    if results.flags.values().any(|c| *c == Caveat::SmallData(STARVED.into())) {
        report.push_warning(format!(
            "Too little data for the thread counts: some columns hold fewer blocks than threads, so threads \
             sit idle and those speeds understate a larger column's (marked in the results). Give more \
             --rows: {} rows make a block of 8-byte values.",
            (1usize << strata_codec::DEFAULT_LBS) / 8
        ));
    }
    let results = results.in_appendix();

    let baseline_threads = threads[0];
    let summary = summary::table(measurements, baseline_threads);
    let charts: Vec<ScatterChart> = columns
        .iter()
        .map(|column| {
            let title = format!(
                "{}: ratio vs compress speed ({baseline_threads} thread{})",
                column.name,
                if baseline_threads == 1 { "" } else { "s" }
            );
            ScatterChart::from_table_where(title, &results, "compress_MBps", "ratio", "spec", |row| {
                row[0] == Cell::from(column.name) && row[2] == Cell::from(baseline_threads)
            })
            .expect("the results table has these columns")
            .with_log_x()
            .with_log_y()
            .with_series(spec_family)
            .with_front_labels(Goal::Higher, Goal::Higher)
        })
        .collect();

    report.push_table(results);
    report.push_table(summary);
    for chart in charts {
        report.push_chart(chart);
    }
    report
}

/// Why a multi-thread figure of a column with fewer blocks than threads is flagged.
const STARVED: &str = "fewer blocks than threads: some threads had no work";

/// The series a codec spec's point belongs to in charts: its codec (`zstd` for
/// `delta+zstd:1`), or `auto`; the text itself if it is not a spec.
pub(crate) fn spec_family(spec: &str) -> String {
    match spec.parse::<CompressionSpec>() {
        Ok(s) if s.is_auto() => "auto".to_string(),
        Ok(s) => s.algorithm.name().to_string(),
        Err(_) => spec.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(specs: &[&str]) -> CodecBenchOptions {
        CodecBenchOptions {
            rows: 20_000,
            specs: specs.iter().map(|s| s.parse().unwrap()).collect(),
            threads: vec![1, 2],
            repeats: 1,
            seed: 7,
        }
    }

    #[test]
    fn default_specs_parse_and_default_threads_start_at_one() {
        assert_eq!(default_specs().len(), DEFAULT_SPECS.len());
        assert_eq!(default_threads()[0], 1);
    }

    #[test]
    fn run_measures_every_suitable_pair_at_every_thread_count() {
        let report = run(&tiny(&["zstd:1", "pco:4", "delta+zstd:1"]), false).unwrap();
        let results = report.table(RESULTS_TABLE).unwrap();
        let names: Vec<&str> = results.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["column", "spec", "threads", "ratio", "compress_MBps", "decompress_MBps"]);
        // zstd:1 suits all 6 columns; pco all but cond; delta the 5 integer ones
        // minus price (a float) and cond: time, size, seq, sym.
        assert_eq!(results.rows.len(), (6 + 5 + 4) * 2);
        let has = |column: &str, spec: &str| {
            results.rows.iter().any(|r| r[0] == Cell::from(column) && r[1] == Cell::from(spec))
        };
        assert!(has("price", "pco:4") && !has("price", "delta+zstd:1"));
        assert!(has("cond", "zstd:1") && !has("cond", "pco:4"));
        for row in &results.rows {
            let threads = row[2].as_number().unwrap();
            assert!(threads == 1.0 || threads == 2.0);
            for cell in &row[3..] {
                let v = cell.as_number().unwrap();
                assert!(v.is_finite() && v > 0.0, "{row:?}");
            }
            assert!(row[3].as_number().unwrap() > 1.0, "tick data compresses: {row:?}");
        }
        assert_eq!(report.charts().count(), 6);
        assert!(report.to_html().contains("<svg"));
    }

    #[test]
    fn summary_compares_the_best_chain_with_zstd1() {
        let report = run(&tiny(&["zstd:1", "pco:8", "lz4hc:0"]), false).unwrap();
        let summary = report.table(SUMMARY_TABLE).unwrap();
        assert_eq!(summary.rows.len(), 6);
        let col = |name: &str| summary.column_index(name).unwrap();
        let price = summary.rows.iter().find(|r| r[0] == Cell::from("price")).unwrap();
        assert_eq!(price[col("chain_spec")], Cell::from("pco:8"));
        assert_eq!(price[col("chain_beats_zstd1_ratio")], Cell::from(true));
        let cond = summary.rows.iter().find(|r| r[0] == Cell::from("cond")).unwrap();
        assert_eq!(cond[col("chain_spec")], Cell::Empty, "no chain suits chars");
        assert!(cond[col("zstd1_ratio")].as_number().unwrap() > 1.0);
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        let mut opts = tiny(&["zstd:1"]);
        opts.rows = 0;
        assert!(run(&opts, false).unwrap_err().to_string().contains("rows"));
        let mut opts = tiny(&["zstd:1"]);
        opts.threads = vec![1, 0];
        assert!(run(&opts, false).unwrap_err().to_string().contains("thread"));
        let mut opts = tiny(&[]);
        assert!(run(&opts, false).unwrap_err().to_string().contains("specs"));
        opts.specs = vec![CompressionSpec { level: 99, ..CompressionSpec::none() }];
        let err = run(&opts, false).unwrap_err().to_string();
        assert!(err.contains("level 99"), "{err}");
    }

    #[test]
    fn duplicate_thread_counts_are_measured_once() {
        let mut opts = tiny(&["snappy"]);
        opts.threads = vec![2, 1, 2];
        opts.rows = 2_000;
        let report = run(&opts, false).unwrap();
        assert_eq!(report.table(RESULTS_TABLE).unwrap().rows.len(), 6 * 2);
    }
}
