//! `strata bench scale`: query and open cost as a database grows to thousands of
//! date partitions.

use std::path::PathBuf;

use clap::Args;
use strata_bench::scale::{self, ScaleBenchOptions};

use super::CliResult;

/// Arguments of `strata bench scale`.
#[derive(Args)]
pub struct ScaleArgs {
    /// Database sizes to measure, in date partitions (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,250,1000,2500")]
    sizes: Vec<usize>,
    /// Quotes in each day.
    #[arg(long, default_value_t = 2_000)]
    quotes: usize,
    /// Trades in each day.
    #[arg(long, default_value_t = 200)]
    trades: usize,
    /// Symbols in each day.
    #[arg(long, default_value_t = 50)]
    syms: usize,
    /// Warm runs per measurement; the fastest counts.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Where the database grows (kept afterwards); default: a temporary directory,
    /// removed at the end.
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Runs `strata bench scale`.
pub fn run(args: ScaleArgs) -> CliResult {
    let temporary = args.scratch.is_none();
    let scratch = args
        .scratch
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("strata-bench-scale-{}", std::process::id())));
    if !temporary && scratch.join("db").exists() {
        return Err(
            format!("{}: a database is already there; give an empty --scratch", scratch.join("db").display()).into()
        );
    }
    let mut options = ScaleBenchOptions::new(scratch.clone(), std::env::current_exe()?);
    options.sizes = args.sizes;
    options.repeats = args.repeats;
    options.day.quotes = args.quotes;
    options.day.trades = args.trades;
    options.day.syms = args.syms;
    let report = scale::run(&options, true).map_err(|e| e.to_string());
    if temporary {
        std::fs::remove_dir_all(&scratch).ok();
    }
    super::bench::publish(&report?, &args.out, "scale")
}
