//! `strata stats`: size and encoding per column.

use std::path::PathBuf;

use clap::Args;
use strata_store::stats_path;

use super::CliResult;
use crate::output::stats_table;

/// Arguments of `strata stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// A column file, a table directory or a partition directory.
    path: PathBuf,
}

/// Runs `strata stats`.
pub fn run(args: StatsArgs) -> CliResult {
    println!("{}", stats_table(&stats_path(&args.path)?));
    Ok(())
}
