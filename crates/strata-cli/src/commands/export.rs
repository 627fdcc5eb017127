//! `strata export --db DIR --table TABLE --out FILE`: a table out as CSV or Parquet.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use strata_query::output::Format as OutputFormat;
use strata_store::{Database, Date, TableLocation, interchange};

use super::{CliResult, database_arg};

/// Output formats.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Csv,
    Parquet,
}

/// Arguments of `strata export`.
#[derive(Args)]
pub struct ExportArgs {
    /// Database root.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// Table name.
    #[arg(long)]
    table: Option<String>,
    /// The database and table as plain arguments (`strata export DIR TABLE`, deprecated).
    #[arg(hide = true)]
    old: Vec<String>,
    /// The date partition to export (YYYY.MM.DD); without it, the splayed table.
    #[arg(long)]
    partition: Option<Date>,
    /// Output format; default: the one --out's extension names (.csv, .parquet).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Output file.
    #[arg(long)]
    out: PathBuf,
}

/// Runs `strata export`.
pub fn run(args: ExportArgs) -> CliResult {
    const USAGE: &str = "strata export --db DIR --table TABLE --out FILE";
    let mut positional = args.old.clone();
    let root = database_arg::database(args.db.clone(), &mut positional, USAGE)?;
    let table = database_arg::table(args.table.clone(), &mut positional, USAGE)?;
    database_arg::no_more(&positional, USAGE)?;
    let db = Database::open_existing(&root)?;
    let location = match args.partition {
        Some(date) => TableLocation::Partition(date, table),
        None => TableLocation::Splayed(table),
    };
    let format = match (args.format, OutputFormat::from_path(&args.out)) {
        (Some(format), _) => format,
        (None, Some(OutputFormat::Csv)) => Format::Csv,
        (None, Some(OutputFormat::Parquet)) => Format::Parquet,
        (None, _) => {
            return Err(format!(
                "{}: give --format csv or parquet (or an --out ending in .csv or .parquet)",
                args.out.display()
            )
            .into());
        }
    };
    let table = db.read_table(&location)?;
    match format {
        Format::Csv => interchange::write_csv(&table, &args.out)?,
        Format::Parquet => interchange::write_parquet(&table, &args.out)?,
    }
    println!("exported {} rows to {}", table.len(), args.out.display());
    Ok(())
}
