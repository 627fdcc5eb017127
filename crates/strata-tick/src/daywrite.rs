//! Writing a day down: the one code path for "write these tables as partition D",
//! shared by the RDB's end of day, its start-up recovery and `strata eod`.
//!
//! A day is written as the RDB always has (sorted by `sym,time`, parted on `sym`,
//! compressed by the table spec) and as one atomic partition write
//! ([`strata_store::Database::write_partition`]): readers see all of the day's
//! tables or none. A day whose end of day never finished (the RDB was killed during
//! or before it) is written again from its journal: the tickerplant never deletes
//! journals, so a rolled journal `<schema>YYYY.MM.DD` stays until its day is written,
//! and [`earlier_journals`] finds the ones before the current day's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use strata_codec::CompressionSpec;
use strata_store::{
    Attribute, Database, Date, Partition, PartitionStatus, PartitionTable, Table, TableSpec, TableWrite,
};

use crate::error::TickError;
use crate::journal::{self, journal_date};
use crate::livetable::column_type;
use crate::schema::{Schema, TableSchema};

/// Each table's spec for end of day, by table name.
pub type TableSpecs = HashMap<String, TableSpec>;

/// Each of `tables`' specs from `--table-spec` (one file for every table, or a
/// directory of `<table>.toml`, as `strata bench zip` recommends), checked against
/// the table's column types: a spec that cannot apply to its column is an error
/// naming the file, the table and the column.
pub fn table_specs<'s>(
    path: Option<&Path>,
    tables: impl IntoIterator<Item = &'s TableSchema>,
) -> Result<TableSpecs, TickError> {
    tables
        .into_iter()
        .map(|table| {
            let spec = table_spec(path, &table.name)?;
            for (name, kind) in table.columns.iter().zip(&table.kinds) {
                spec.spec_for(name, column_type(*kind), &CompressionSpec::none()).map_err(|e| {
                    let from = path.map_or(String::new(), |p| format!("{}: ", p.display()));
                    TickError::Other(format!("table spec {from}table {}: {e}", table.name))
                })?;
            }
            Ok((table.name.clone(), spec))
        })
        .collect()
}

/// The compression for `table`: `spec` is a file for all tables or a directory of
/// `<table>.toml` files (a missing file means the database default).
fn table_spec(spec: Option<&Path>, table: &str) -> Result<TableSpec, TickError> {
    match spec {
        None => Ok(TableSpec::default()),
        Some(dir) if dir.is_dir() => {
            let file = dir.join(format!("{table}.toml"));
            if file.is_file() { Ok(TableSpec::load(&file)?) } else { Ok(TableSpec::default()) }
        }
        Some(file) => Ok(TableSpec::load(file)?),
    }
}

/// How a day's table is written: sorted by `sym,time`, parted on `sym`, `spec`.
pub fn day_write(spec: TableSpec) -> TableWrite {
    TableWrite { spec, sort_by: vec!["sym".into(), "time".into()], attributes: vec![("sym".into(), Attribute::Parted)] }
}

/// Writes `tables` as partition `date` of `db` in one atomic step (a table the
/// partition already serves is merged, see `Database::write_partition`).
pub fn write_day(db: &Database, date: Date, tables: &[(&str, &Table)], specs: &TableSpecs) -> Result<(), TickError> {
    let hows: Vec<TableWrite> =
        tables.iter().map(|(name, _)| day_write(specs.get(*name).cloned().unwrap_or_default())).collect();
    let parts: Vec<PartitionTable<'_>> =
        tables.iter().zip(&hows).map(|((name, table), how)| PartitionTable { name, table, how }).collect();
    Ok(db.write_partition(date, &parts)?)
}

/// The journals of the same schema as `current` (`<schema>YYYY.MM.DD`, in the same
/// directory) with an earlier date, oldest first: the days an RDB following
/// `current` may have left unwritten.
pub fn earlier_journals(current: &Path) -> Result<Vec<(Date, PathBuf)>, TickError> {
    let today = journal_date(current).ok_or_else(|| {
        TickError::Journal(format!("{}: a journal's name ends with its date, YYYY.MM.DD", current.display()))
    })?;
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let schema = &name[..name.len() - today.to_string().len()];
    let dir = match current.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dates = journal::journal_dates(dir, schema)?.into_iter().filter(|d| *d < today);
    Ok(dates.map(|d| (d, journal::journal_path(dir, schema, d))).collect())
}

/// The tables of `names` that partition `date` does not serve (all of them when the
/// partition does not exist).
pub fn missing_tables(db: &Database, date: Date, names: &[&str]) -> Result<Vec<String>, TickError> {
    let served = match db.partition(date)? {
        Some(Partition { status: PartitionStatus::BadRecord(why), dir, .. }) => {
            return Err(TickError::Other(format!(
                "{}: partition {date} is not served ({why}); an operator must repair or move it",
                dir.display()
            )));
        }
        Some(p) => p.tables,
        None => Vec::new(),
    };
    Ok(names.iter().filter(|n| !served.iter().any(|s| s == *n)).map(|n| n.to_string()).collect())
}

/// Day `date`'s tables that partition `date` lacks, replayed from `journal` (through
/// the RDB's own replay); `None` when the partition already serves every table of
/// `schema`.
pub fn unwritten_tables(
    db: &Database,
    journal: &Path,
    date: Date,
    schema: &Schema,
) -> Result<Option<Vec<(String, Table)>>, TickError> {
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    let missing = missing_tables(db, date, &names)?;
    if missing.is_empty() {
        return Ok(None);
    }
    let tables = crate::rdb::journal_tables(journal, schema)?;
    Ok(Some(tables.into_iter().filter(|(name, _)| missing.contains(name)).collect()))
}

/// What [`write_from_journal`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DayOutcome {
    /// The partition already served every table: left alone.
    AlreadyComplete,
    /// These tables (name, rows) were written from the journal.
    Written(Vec<(String, usize)>),
}

/// `strata eod`: writes day `date` from `journal` into `db`, only the tables its
/// partition lacks, so running it again changes nothing.
pub fn write_from_journal(
    db: &Database,
    journal: &Path,
    date: Date,
    schema: &Schema,
    specs: &TableSpecs,
) -> Result<DayOutcome, TickError> {
    let Some(tables) = unwritten_tables(db, journal, date, schema)? else { return Ok(DayOutcome::AlreadyComplete) };
    let refs: Vec<(&str, &Table)> = tables.iter().map(|(n, t)| (n.as_str(), t)).collect();
    write_day(db, date, &refs, specs)?;
    Ok(DayOutcome::Written(tables.iter().map(|(n, t)| (n.clone(), t.len())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journals_of_earlier_days_are_found_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["sym2024.01.02", "sym2024.01.03", "sym2024.01.04", "symx2024.01.01", "sym2024.01.0x", "other"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let current = dir.path().join("sym2024.01.04");
        let found = earlier_journals(&current).unwrap();
        let names: Vec<String> = found.iter().map(|(d, _)| d.to_string()).collect();
        assert_eq!(names, ["2024.01.02", "2024.01.03"]);
        assert_eq!(journal_date(&found[0].1), Some("2024.01.02".parse().unwrap()));
        assert!(earlier_journals(&dir.path().join("nodate")).is_err());
    }
}
