//! `strata verify --db DB [--partition D] [--table T]`: checks every file of a database
//! (or of one partition or table) and prints what is damaged, where, and what can
//! be rebuilt. Exits non-zero when anything is damaged.

use std::time::Instant;

use clap::Args;
use strata_store::verify::{VerifyScope, verify_database_with_progress};
use strata_store::{Database, Date};

use super::{CliResult, database_arg};
use crate::output::human_bytes;

/// Arguments of `strata verify`.
#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    database: database_arg::DatabaseArgs,
    /// Only this date partition (YYYY.MM.DD).
    #[arg(long)]
    partition: Option<Date>,
    /// Only tables of this name.
    #[arg(long)]
    table: Option<String>,
}

/// Runs `strata verify`.
pub fn run(args: VerifyArgs) -> CliResult {
    let root = args.database.resolve("strata verify --db DIR")?;
    let db = Database::open_existing(&root)?;
    let started = Instant::now();
    let scope = VerifyScope { partition: args.partition, table: args.table };
    let report = verify_database_with_progress(&db, &scope, &*crate::progress::on_stderr())?;
    for finding in &report.findings {
        println!("{finding}");
    }
    println!(
        "verified {} files ({}) of {} tables in {} partitions in {:.2} s: {} damaged, {} notes",
        report.files,
        human_bytes(report.bytes),
        report.tables,
        report.partitions,
        started.elapsed().as_secs_f64(),
        report.damaged(),
        report.findings.len() - report.damaged()
    );
    if report.is_intact() {
        Ok(())
    } else {
        Err(format!("{}: {} damaged (listed above)", root.display(), report.damaged()).into())
    }
}
