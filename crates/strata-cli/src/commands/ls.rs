//! `strata ls`: what a database holds.

use std::path::PathBuf;

use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use strata_store::{Database, TableLocation};

use super::CliResult;
use crate::output::human_bytes;

/// Arguments of `strata ls`.
#[derive(Args)]
pub struct LsArgs {
    /// Database root.
    db: PathBuf,
}

/// Runs `strata ls`.
pub fn run(args: LsArgs) -> CliResult {
    let db = Database::open(&args.db)?;
    let mut out = Table::new();
    out.load_style(UTF8_FULL_CONDENSED);
    out.set_header(["partition", "table", "rows", "columns", "raw", "stored", "ratio"]);
    let mut locations: Vec<(String, TableLocation)> =
        db.tables(None)?.into_iter().map(|t| ("-".to_string(), TableLocation::Splayed(t))).collect();
    for date in db.partitions()? {
        for t in db.tables(Some(date))? {
            locations.push((date.to_string(), TableLocation::Partition(date, t)));
        }
    }
    for (partition, location) in &locations {
        let stats = db.open_table(location)?.stats()?;
        let raw: u64 = stats.iter().map(|s| s.raw_bytes).sum();
        let stored: u64 = stats.iter().map(|s| s.stored_bytes).sum();
        let columns: Vec<String> = stats.iter().map(|s| format!("{}:{}", s.name, s.ty)).collect();
        out.add_row(vec![
            partition.clone(),
            location.table().to_string(),
            stats.first().map_or(0, |s| s.rows).to_string(),
            columns.join(" "),
            human_bytes(raw),
            human_bytes(stored),
            format!("{:.2}", if stored == 0 { 0.0 } else { raw as f64 / stored as f64 }),
        ]);
    }
    println!(
        "database {} ({} symbols, {} partitions)",
        db.root().display(),
        db.symbols()?.len(),
        db.partitions()?.len()
    );
    println!("{out}");
    Ok(())
}
