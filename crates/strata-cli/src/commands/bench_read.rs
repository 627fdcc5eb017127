//! `strata bench read`: a table read into pyarrow, polars and pandas from Strata,
//! Parquet and a DuckDB file.

use std::path::PathBuf;

use clap::Args;
use strata_bench::read_bench::{self, ReadBenchOptions};

use super::CliResult;

/// Arguments of `strata bench read`.
#[derive(Args)]
pub struct ReadArgs {
    /// Rows of the table (eight columns: a symbol, a timespan, three floats, an int,
    /// a long and a short).
    #[arg(long, default_value_t = 10_000_000)]
    rows: usize,
    /// Reads of each (engine, target); the best and the median are reported.
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
pub fn run(args: ReadArgs) -> CliResult {
    let python = std::env::var_os("STRATA_PYTHON").map(PathBuf::from).ok_or(
        "set STRATA_PYTHON to a Python interpreter with the strata package, pyarrow, polars, pandas and duckdb \
         (scripts/requirements-test.txt), e.g. ~/.cache/strata/venv/bin/python",
    )?;
    let temporary = args.scratch.is_none();
    let scratch = args
        .scratch
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("strata-bench-read-{}", std::process::id())));
    let mut options = ReadBenchOptions::new(scratch.clone(), python);
    options.rows = args.rows;
    options.rounds = args.rounds;
    options.package_dir = std::env::var_os("STRATA_PY_DIR").map(PathBuf::from);
    let report = read_bench::run(&options, true).map_err(|e| e.to_string());
    if temporary {
        std::fs::remove_dir_all(&scratch).ok();
    }
    super::bench::publish(&report?, &args.out, "read")
}
