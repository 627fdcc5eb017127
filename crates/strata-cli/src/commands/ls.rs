//! `strata ls`: what a database holds, and what of it is not served: partitions
//! without a completion record, with a bad one, table directories the record does
//! not list, and staging directories left by writers that died.

use std::path::{Path, PathBuf};

use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use strata_store::{Database, PartitionStatus, SplayedTable};

use super::{CliResult, database_arg};
use crate::output::human_bytes;

/// Arguments of `strata ls`.
#[derive(Args)]
pub struct LsArgs {
    #[command(flatten)]
    database: database_arg::DatabaseArgs,
}

/// One table directory to list: where it is and what `ls` says of it.
struct Listed {
    partition: String,
    name: String,
    dir: PathBuf,
    /// Rows the completion record gives, to check against the files.
    recorded_rows: Option<u64>,
    status: String,
}

/// Runs `strata ls`.
pub fn run(args: LsArgs) -> CliResult {
    let db = Database::open_existing(&args.database.resolve("strata ls --db DIR")?)?;
    let mut listed: Vec<Listed> = db
        .tables(None)?
        .into_iter()
        .map(|t| Listed {
            partition: "-".into(),
            dir: db.root().join(&t),
            name: t,
            recorded_rows: None,
            status: "splayed".into(),
        })
        .collect();
    let survey = db.survey()?;
    let mut served = 0;
    for p in &survey.partitions {
        let (status, record) = match &p.status {
            PartitionStatus::Complete(record) => ("complete".to_string(), Some(record)),
            PartitionStatus::NoRecord => ("no completion record (written before records; served)".to_string(), None),
            PartitionStatus::BadRecord(why) => (format!("NOT SERVED: {why}"), None),
        };
        let in_place = db.partition_dir(p.date) == p.dir;
        served += usize::from(p.is_served() && in_place);
        let status = if in_place { status } else { "NOT SERVED: not in the segment its date maps to".into() };
        let mut add = |name: &String, status: String| {
            listed.push(Listed {
                partition: p.date.to_string(),
                name: name.clone(),
                dir: p.dir.join(name),
                recorded_rows: record.and_then(|r| r.rows(name)),
                status,
            })
        };
        for name in &p.tables {
            add(name, status.clone());
        }
        for name in &p.unlisted {
            let why =
                if p.is_served() { "NOT SERVED: not in the completion record".to_string() } else { status.clone() };
            add(name, why);
        }
        if p.tables.is_empty() && p.unlisted.is_empty() {
            add(&"-".to_string(), format!("{status}; no tables"));
        }
    }
    let mut out = Table::new();
    out.load_style(UTF8_FULL_CONDENSED);
    out.set_header(["partition", "table", "rows", "columns", "raw", "stored", "ratio", "status"]);
    for item in &listed {
        out.add_row(row(item));
    }
    println!("database {} ({} symbols, {served} partitions served)", db.root().display(), db.symbols()?.len());
    println!("{out}");
    for leftover in &survey.leftovers {
        println!(
            "leftover {} (an interrupted partition write: never served; removed by the next write of its date)",
            leftover.display()
        );
    }
    Ok(())
}

/// A table's row: sizes from its files, or the error that stops reading them.
fn row(item: &Listed) -> Vec<String> {
    let mut cells = vec![item.partition.clone(), item.name.clone()];
    if item.name == "-" {
        cells.extend(["-", "-", "-", "-", "-"].map(String::from));
        cells.push(item.status.clone());
        return cells;
    }
    match stats(&item.dir) {
        Ok((rows, columns, raw, stored)) => {
            let mut status = item.status.clone();
            if let Some(recorded) = item.recorded_rows.filter(|r| *r != rows) {
                status = format!("{status}; ROWS DIFFER: the record says {recorded}");
            }
            cells.extend([
                rows.to_string(),
                columns,
                human_bytes(raw),
                human_bytes(stored),
                format!("{:.2}", if stored == 0 { 0.0 } else { raw as f64 / stored as f64 }),
                status,
            ]);
        }
        Err(e) => {
            cells.extend(["?", "?", "?", "?", "?"].map(String::from));
            cells.push(format!("{}; UNREADABLE: {e}", item.status));
        }
    }
    cells
}

/// Rows, `name:type` columns, raw and stored bytes of the table at `dir`.
fn stats(dir: &Path) -> strata_store::Result<(u64, String, u64, u64)> {
    let stats = SplayedTable::open(dir)?.stats()?;
    let raw = stats.iter().map(|s| s.raw_bytes).sum();
    let stored = stats.iter().map(|s| s.stored_bytes).sum();
    let columns: Vec<String> = stats.iter().map(|s| format!("{}:{}", s.name, s.ty)).collect();
    Ok((stats.first().map_or(0, |s| s.rows), columns.join(" "), raw, stored))
}
