//! `strata bench ...`: benchmarks, each printed as tables and saved as CSV and HTML.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use strata_bench::{CodecBenchOptions, Report, codecs, table_write};
use strata_codec::CompressionSpec;

use super::CliResult;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Ratio, compress and decompress MB/s per codec spec on built-in tick-shaped
    /// columns, single- and multi-threaded.
    #[command(
        after_help = "Examples:\n  strata bench codecs\n  strata bench codecs --rows 4000000 --specs zstd:1,lz4hc:9,pco:8 --threads 1,2"
    )]
    Codecs(CodecsArgs),
    /// Whole-table writes of the built-in trade table per spec, on one thread and on
    /// every core.
    #[command(after_help = "Examples:\n  strata bench write --rows 4000000")]
    Write(WriteArgs),
    /// Compression per column and spec on TAQ data or a database table: size, write
    /// and read time ratios (cold and warm), auto's choices and tier recommendations.
    #[command(
        after_help = "Examples:\n  strata bench zip                                   # built-in TAQ day\n  strata bench zip --db hdb --table quote --partition 2025.01.02"
    )]
    Zip(super::bench_zip::ZipArgs),
    /// zipPerf's grid: lbs 12..20 x algorithm x level on a data shape or a column.
    #[command(
        after_help = "Examples:\n  strata bench zipgrid --shape sorted\n  strata bench zipgrid --db hdb --table quote --column bid --partition 2025.01.02"
    )]
    Zipgrid(super::bench_zip::ZipgridArgs),
    /// KX Nano's storage tests through Strata's storage calls on one or more
    /// directories with N worker processes, and `compare` for result sets side by side.
    #[command(
        after_help = "Examples:\n  strata bench io /mnt/nvme /mnt/nfs --procs 1,2 --scale small\n  strata bench io /tmp --scale tiny"
    )]
    Io(super::bench_io::IoArgs),
    /// Tickerplant profiling (as KX's white paper): tplog, tppub, rdbrecv, rdbupd,
    /// feed-to-RDB latency and CPU by rows per update, row width, publish mode and
    /// subscribers.
    #[command(after_help = "Examples:\n  strata bench tick --seconds 3")]
    Tick(super::bench_tick::TickArgs),
    /// An analyst's TAQ queries on Strata (in process, over IPC, as `strata sql`)
    /// against DuckDB and Polars with the day in memory, alternated in one run.
    #[command(
        after_help = "Examples:\n  STRATA_PYTHON=~/.cache/strata/venv/bin/python strata bench query\n  STRATA_PYTHON=python3 strata bench query --quotes 1000000 --trades 50000 --syms 1000"
    )]
    Query(super::bench_query::QueryArgs),
    /// A table read into pyarrow, polars and pandas from Strata (the Python
    /// package), from Parquet and from a DuckDB file, against a memory copy.
    #[command(after_help = "Examples:\n  STRATA_PYTHON=python3 strata bench read --rows 1000000")]
    Read(super::bench_read::ReadArgs),
    /// A result written as CSV, JSON and Parquet by `strata sql` and by DuckDB's
    /// COPY, with the process start shown apart.
    #[command(after_help = "Examples:\n  STRATA_PYTHON=python3 strata bench output")]
    Output(super::bench_read::OutputArgs),
    /// Open and query cost as a database grows to thousands of date partitions:
    /// in process, as `strata sql` processes and through an HDB.
    #[command(after_help = "Examples:\n  strata bench scale --sizes 1,100,1000")]
    Scale(super::bench_scale::ScaleArgs),
    /// Kill -9 under a sync feed: a tickerplant, an RDB and an HDB killed at random
    /// (also during end of day) and restarted; every acknowledged row must be stored
    /// exactly once.
    #[command(after_help = "Examples:\n  strata bench chaos --minutes 10")]
    Chaos(super::bench_chaos::ChaosArgs),
}

/// Where a report goes besides the terminal.
#[derive(Args)]
pub struct ReportArgs {
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Arguments of `strata bench codecs`.
#[derive(Args)]
pub struct CodecsArgs {
    /// Rows per built-in column.
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Specs to compare (comma-separated); default: kdb+'s algorithms and Strata's chains.
    #[arg(long, value_delimiter = ',')]
    specs: Vec<CompressionSpec>,
    /// Thread counts (comma-separated); default: 1 and every core.
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Runs per measurement; the fastest counts.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[command(flatten)]
    report: ReportArgs,
}

/// Arguments of `strata bench write`.
#[derive(Args)]
pub struct WriteArgs {
    /// Rows in the built-in trade table.
    #[arg(long, default_value_t = 2_000_000)]
    rows: usize,
    /// Writes per configuration; the fastest counts.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Directory to write the table in (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    report: ReportArgs,
}

/// Prints `report` and saves it as CSV files and `<name>.html` under `out`.
pub fn publish(report: &Report, out: &Path, name: &str) -> CliResult {
    println!("{}", report.to_terminal());
    std::fs::create_dir_all(out)?;
    let csvs = report.write_csv(&out.join(format!("{name}.csv")))?;
    let html = out.join(format!("{name}.html"));
    report.write_html(&html)?;
    for path in csvs.iter().chain([&html]) {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> CliResult {
    match command {
        BenchCommand::Query(args) => super::bench_query::run(args),
        BenchCommand::Scale(args) => super::bench_scale::run(args),
        BenchCommand::Read(args) => super::bench_read::run_read(args),
        BenchCommand::Output(args) => super::bench_read::run_output(args),
        BenchCommand::Codecs(args) => {
            let mut options = CodecBenchOptions { rows: args.rows, repeats: args.repeats, ..Default::default() };
            if !args.specs.is_empty() {
                options.specs = args.specs;
            }
            if !args.threads.is_empty() {
                options.threads = args.threads;
            }
            let report = codecs::run(&options, true)?;
            publish(&report, &args.report.out, "codecs")
        }
        BenchCommand::Write(args) => {
            let mut options = table_write::TableWriteOptions::new(args.rows);
            options.repeats = args.repeats;
            let scratch = tempfile_dir(args.dir.as_deref())?;
            let report = table_write::run(&options, &scratch)?;
            std::fs::remove_dir_all(&scratch).ok();
            publish(&report, &args.report.out, "table-write")
        }
        BenchCommand::Zip(args) => super::bench_zip::run_zip(args),
        BenchCommand::Zipgrid(args) => super::bench_zip::run_zipgrid(args),
        BenchCommand::Io(args) => super::bench_io::run(args),
        BenchCommand::Tick(args) => super::bench_tick::run(args),
        BenchCommand::Chaos(args) => super::bench_chaos::run(args),
    }
}

/// A fresh scratch directory under `base` (or the system temp directory).
fn tempfile_dir(base: Option<&Path>) -> std::io::Result<PathBuf> {
    let base = base.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("strata-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
