//! `strata stats`: size and encoding per column (`strata stats PATH`), or the value
//! statistics of a table's columns (`strata stats columns --db DIR --table TABLE`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::column_stats::{statistics_report, table_statistics};
use strata_store::{Database, Date, TableLocation, stats_path};
use strata_taq::reference::{QUOTE, QUOTE_ROWS, TRADE, TRADE_ROWS};

use super::bench::publish;
use super::{CliResult, database_arg};
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
    #[command(
        after_help = "Examples:\n  strata stats columns --db hdb --table quote --partition 2025.01.02 --out reports"
    )]
    Columns(ColumnsArgs),
}

/// Arguments of `strata stats columns`.
#[derive(Args)]
pub struct ColumnsArgs {
    #[command(flatten)]
    table: database_arg::TableArgs,
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
        (None, None) => Err("give a path, or `columns --db DIR --table TABLE`".into()),
    }
}

fn run_columns(args: ColumnsArgs) -> CliResult {
    let (root, table_name) = args.table.resolve("strata stats columns --db DIR --table TABLE")?;
    let db = Database::open_existing(&root)?;
    let location = match args.partition {
        Some(date) => TableLocation::Partition(date, table_name.clone()),
        None if db.root().join(&table_name).is_dir() => TableLocation::Splayed(table_name.clone()),
        None => {
            let latest = db
                .partitions()?
                .into_iter()
                .rev()
                .find(|d| db.tables(Some(*d)).is_ok_and(|served| served.contains(&table_name)));
            match latest {
                Some(date) => TableLocation::Partition(date, table_name.clone()),
                None => return Err(format!("{}: no table {table_name} in any partition", root.display()).into()),
            }
        }
    };
    let table = db.read_table(&location)?;
    let stats = table_statistics(&table);
    let reference = match table_name.as_str() {
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
        Some(out) => publish(&report, out, &format!("column-stats-{table_name}")),
        None => {
            println!("{}", report.to_terminal());
            Ok(())
        }
    }
}
