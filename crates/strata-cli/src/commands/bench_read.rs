//! `strata bench read` and `strata bench output`: a table read into pyarrow, polars
//! and pandas from Strata, Parquet and a DuckDB file; a result written as CSV, JSON
//! and Parquet by `strata sql` and by DuckDB.

use std::path::PathBuf;

use clap::Args;
use strata_bench::read_bench::{self, Mode, ReadBenchOptions};

use super::CliResult;

/// Arguments of `strata bench read`.
#[derive(Args)]
pub struct ReadArgs {
    /// Rows of the table (eight columns: a symbol, a timespan, three floats, an int,
    /// a long and a short).
    #[arg(long, default_value_t = 10_000_000)]
    rows: usize,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `strata bench output`.
#[derive(Args)]
pub struct OutputArgs {
    /// Rows of the result (the same eight columns as `bench read`).
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    #[command(flatten)]
    common: CommonArgs,
}

/// What both benchmarks take.
#[derive(Args)]
struct CommonArgs {
    /// Runs of each (engine, target); the best and the median are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Where the stores are written (kept afterwards); default: a temporary
    /// directory, removed at the end.
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Runs `strata bench read` in the Python named by `STRATA_PYTHON`, which must
/// import `strata` (installed, or laid out in `STRATA_PY_DIR` as scripts/test-all
/// does).
pub fn run_read(args: ReadArgs) -> CliResult {
    run(Mode::Read, args.rows, args.common, "read")
}

/// Runs `strata bench output` (DuckDB in the Python named by `STRATA_PYTHON`).
pub fn run_output(args: OutputArgs) -> CliResult {
    run(Mode::Output { strata: std::env::current_exe()? }, args.rows, args.common, "output")
}

fn run(mode: Mode, rows: usize, common: CommonArgs, name: &str) -> CliResult {
    let python = std::env::var_os("STRATA_PYTHON").map(PathBuf::from).ok_or(
        "set STRATA_PYTHON to a Python interpreter with the strata package, pyarrow, polars, pandas and duckdb \
         (scripts/requirements-test.txt), e.g. ~/.cache/strata/venv/bin/python",
    )?;
    let temporary = common.scratch.is_none();
    let scratch = common
        .scratch
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("strata-bench-{name}-{}", std::process::id())));
    let mut options = ReadBenchOptions::new(scratch.clone(), python);
    options.mode = mode;
    options.rows = rows;
    options.rounds = common.rounds;
    options.package_dir = std::env::var_os("STRATA_PY_DIR").map(PathBuf::from);
    let report = read_bench::run(&options, true).map_err(|e| e.to_string());
    if temporary {
        std::fs::remove_dir_all(&scratch).ok();
    }
    super::bench::publish(&report?, &common.out, name)
}
