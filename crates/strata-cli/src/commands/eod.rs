//! `strata eod`: write a day down from its tickerplant journal by hand (what an RDB
//! does at start for a day it never finished); the work lives in
//! `strata_tick::daywrite`.

use std::path::PathBuf;

use clap::Args;
use strata_store::{Database, Date};
use strata_tick::daywrite::{self, DayOutcome};
use strata_tick::schema::Schema;

use super::CliResult;

/// Arguments of `strata eod`.
#[derive(Args)]
pub struct EodArgs {
    /// The journal of the day (`<schema>YYYY.MM.DD`, as the tickerplant names it).
    #[arg(long)]
    journal: PathBuf,
    /// The HDB root to write the partition into.
    #[arg(long)]
    db: PathBuf,
    /// The tickerplant's schema file.
    #[arg(long)]
    schema: PathBuf,
    /// Compression: a table spec file, or a directory of `<table>.toml` (as `strata rdb`).
    #[arg(long)]
    table_spec: Option<PathBuf>,
    /// The partition's date (default: the date the journal's name ends with).
    #[arg(long)]
    date: Option<Date>,
}

/// Runs `strata eod`: replays the journal and writes the tables its date's
/// partition lacks (sorted by sym,time, parted on sym); a complete partition is
/// reported and left alone, so it is safe to run again.
pub fn run(args: EodArgs) -> CliResult {
    let schema = Schema::load(&args.schema)?;
    let specs = daywrite::table_specs(args.table_spec.as_deref(), &schema.tables)?;
    let date = match args.date.or_else(|| strata_tick::journal::journal_date(&args.journal)) {
        Some(date) => date,
        None => {
            return Err(format!(
                "{}: the journal's name does not end with a date (YYYY.MM.DD); give --date",
                args.journal.display()
            )
            .into());
        }
    };
    let db = Database::open(&args.db)?;
    match daywrite::write_from_journal(&db, &args.journal, date, &schema, &specs)? {
        DayOutcome::AlreadyComplete => {
            println!("partition {date} in {} already holds every table; nothing written", args.db.display())
        }
        DayOutcome::Written(tables) => {
            let what: Vec<String> = tables.iter().map(|(name, rows)| format!("{name} ({rows} rows)")).collect();
            println!(
                "wrote partition {date} in {} from {}: {}",
                args.db.display(),
                args.journal.display(),
                what.join(", ")
            );
        }
    }
    Ok(())
}
