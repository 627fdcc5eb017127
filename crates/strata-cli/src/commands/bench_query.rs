//! `strata bench query`: an analyst workload on Strata (library, HDB over IPC,
//! `strata sql`), DuckDB and Polars with the day in memory.

use std::path::PathBuf;

use clap::Args;
use strata_bench::query_bench::{self, QueryBenchOptions};

use super::CliResult;

/// Arguments of `strata bench query`.
#[derive(Args)]
pub struct QueryArgs {
    /// A database holding one day of quote, trade, quoteNorm and tradeNorm; without
    /// one, a TAQ day is generated (5M quotes, 250k trades by default).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Quotes in the generated day.
    #[arg(long, default_value_t = 5_000_000)]
    quotes: usize,
    /// Trades in the generated day.
    #[arg(long, default_value_t = 250_000)]
    trades: usize,
    /// Symbols in the generated day.
    #[arg(long, default_value_t = 2_000)]
    syms: usize,
    /// Warm runs per query; the fastest counts.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Scratch directory (generated database, Parquet files); default: a temporary one.
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Only write the TAQ compression study's fourteen queries for --db (Strata, DuckDB and Polars
    /// texts) as JSON to this file and stop.
    #[arg(long, requires = "db")]
    print_queries: Option<PathBuf>,
    /// Only these query families (comma-separated: select, derive, aggregate, bars, pivot,
    /// window, extreme, sequence, asof, forms); all by default.
    #[arg(long, value_delimiter = ',')]
    families: Vec<String>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Runs `strata bench query`. DuckDB and Polars run in the Python named by
/// `STRATA_PYTHON`.
pub fn run(args: QueryArgs) -> CliResult {
    if let (Some(path), Some(db)) = (&args.print_queries, &args.db) {
        std::fs::write(path, query_bench::query_set_json(db).map_err(|e| e.to_string())?)?;
        return Ok(());
    }
    let python = std::env::var_os("STRATA_PYTHON").map(PathBuf::from).ok_or(
        "set STRATA_PYTHON to a Python interpreter with duckdb and polars (scripts/requirements-test.txt), \
         e.g. ~/.cache/strata/venv/bin/python",
    )?;
    let temporary = args.scratch.is_none();
    let scratch = args
        .scratch
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("strata-bench-query-{}", std::process::id())));
    let mut options = QueryBenchOptions::new(scratch.clone(), python, std::env::current_exe()?);
    options.db = args.db.clone();
    options.repeats = args.repeats;
    options.families = args.families.clone();
    options.taq.quotes = args.quotes;
    options.taq.trades = args.trades;
    options.taq.syms = args.syms;
    let report = query_bench::run(&options, true).map_err(|e| e.to_string());
    if temporary {
        std::fs::remove_dir_all(&scratch).ok();
    }
    super::bench::publish(&report?, &args.out, "query")
}
