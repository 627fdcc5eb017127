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
    #[command(flatten)]
    table: database_arg::TableArgs,
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
    let (root, table) = args.table.resolve("strata export --db DIR --table TABLE --out FILE")?;
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
    let progress = crate::progress::on_stderr();
    match format {
        Format::Csv => interchange::write_csv_with_progress(&table, &args.out, &*progress)?,
        Format::Parquet => interchange::write_parquet_with_progress(&table, &args.out, &*progress)?,
    }
    println!("exported {} rows to {}", table.len(), args.out.display());
    Ok(())
}
