//! `strata stats`: size and encoding per column (`strata stats PATH`), or the value
//! statistics of a table's columns (`strata stats columns DB TABLE`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::column_stats::{statistics_report, table_statistics};
use strata_store::{Database, Date, TableLocation, stats_path};
use strata_taq::reference::{QUOTE, QUOTE_ROWS, TRADE, TRADE_ROWS};

use super::CliResult;
use super::bench::publish;
use crate::output::stats_table;

/// Arguments of `strata stats`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct StatsArgs {
    /// A column file, a table directory or a partition directory.
    #[arg(required = true)]
    path: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<StatsCommand>,
}

/// Statistics other than sizes.
#[derive(Subcommand)]
pub enum StatsCommand {
    /// Per column: type, raw bytes, distinct values, value changes and entropy (the
    /// TAQ case study's column table); `quote` and `trade` are shown beside the real
    /// day the TAQ generator is calibrated to.
    Columns(ColumnsArgs),
}

/// Arguments of `strata stats columns`.
#[derive(Args)]
pub struct ColumnsArgs {
    /// Database root.
    db: PathBuf,
    /// Table name.
    table: String,
    /// Date partition (default: the splayed table, else the latest partition holding
    /// the table).
    #[arg(long)]
    partition: Option<Date>,
    /// Also save the table as CSV and HTML in this directory.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `strata stats`.
pub fn run(args: StatsArgs) -> CliResult {
    match (args.command, args.path) {
        (Some(StatsCommand::Columns(columns)), _) => run_columns(columns),
        (None, Some(path)) => {
            println!("{}", stats_table(&stats_path(&path)?));
            Ok(())
        }
        (None, None) => Err("give a path, or `columns DB TABLE`".into()),
    }
}

fn run_columns(args: ColumnsArgs) -> CliResult {
    let db = Database::open_existing(&args.db)?;
    let location = match args.partition {
        Some(date) => TableLocation::Partition(date, args.table.clone()),
        None if db.root().join(&args.table).is_dir() => TableLocation::Splayed(args.table.clone()),
        None => {
            let latest = db
                .partitions()?
                .into_iter()
                .rev()
                .find(|d| db.tables(Some(*d)).is_ok_and(|served| served.contains(&args.table)));
            match latest {
                Some(date) => TableLocation::Partition(date, args.table.clone()),
                None => return Err(format!("{}: no table {} in any partition", args.db.display(), args.table).into()),
            }
        }
    };
    let table = db.read_table(&location)?;
    let stats = table_statistics(&table);
    let reference = match args.table.as_str() {
        "quote" => Some((&QUOTE[..], QUOTE_ROWS)),
        "trade" => Some((&TRADE[..], TRADE_ROWS)),
        _ => None,
    };
    let name = match &location {
        TableLocation::Partition(date, table) => format!("{table} ({date})"),
        TableLocation::Splayed(table) => table.clone(),
    };
    let report = statistics_report(&name, &stats, reference);
    match &args.out {
        Some(out) => publish(&report, out, &format!("column-stats-{}", args.table)),
        None => {
            println!("{}", report.to_terminal());
            Ok(())
        }
    }
}
