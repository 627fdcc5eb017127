//! `strata import`: CSV or Parquet into a table.

use std::path::PathBuf;

use clap::Args;
use strata_codec::CompressionSpec;
use strata_store::import::{ImportOptions, import_file};
use strata_store::{
    Attribute, ColumnType, Database, Date, SchemaMismatch, StoreError, TableLocation, TableSchema, TableSpec,
    TableWrite, WriteMode,
};

use super::CliResult;
use super::write_mode::Mode;

/// Arguments of `strata import`.
#[derive(Args)]
pub struct ImportArgs {
    /// The CSV (with a header row) or Parquet file (or directory of Parquet files).
    file: PathBuf,
    /// Database root.
    #[arg(long)]
    db: PathBuf,
    /// Table name.
    #[arg(long)]
    table: String,
    /// Write into this date partition (YYYY.MM.DD) instead of a splayed table.
    #[arg(long)]
    partition: Option<Date>,
    /// One compression spec for every column, e.g. `zstd:1` or `delta+pco:8`.
    #[arg(long, conflicts_with = "table_spec")]
    spec: Option<CompressionSpec>,
    /// A table spec file (TOML: `default = ...` and a `[columns]` table).
    #[arg(long)]
    table_spec: Option<PathBuf>,
    /// Sort by these columns first (comma-separated), like `xasc`.
    #[arg(long, value_delimiter = ',')]
    sort: Vec<String>,
    /// Apply the parted attribute to this column (it must be grouped in runs).
    #[arg(long)]
    parted: Option<String>,
    /// Column types to use instead of inferred ones: `col=type,...` with kdb+ type
    /// names (`timestamp`, `symbol`, `string`, `char`, ...) or letters (`p`, `s`, `C`).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// What to do when the table is already there (in the partition, or at the
    /// root): refuse, add the rows after the stored ones, or replace the table.
    #[arg(long, value_enum, default_value_t = Mode::Fail)]
    mode: Mode,
    /// Convert columns whose type differs from the table's stored type, when no
    /// value changes (int to long, long to float below 2^53, text to numbers, ...);
    /// the first value that would change is an error.
    #[arg(long)]
    cast: bool,
}

/// Parses `col=type` overrides.
fn parse_overrides(items: &[String]) -> Result<Vec<(String, ColumnType)>, String> {
    items
        .iter()
        .map(|item| {
            let (col, ty) = item.split_once('=').ok_or_else(|| format!("--types: {item:?} is not col=type"))?;
            let ty = ColumnType::from_name(ty.trim()).ok_or_else(|| {
                let names: Vec<&str> = ColumnType::ALL.iter().map(|t| t.name()).collect();
                format!("--types: unknown type {ty:?} for column {col}; types are {}", names.join(", "))
            })?;
            Ok((col.trim().to_string(), ty))
        })
        .collect()
}

/// Runs `strata import`.
pub fn run(args: ImportArgs) -> CliResult {
    let overrides = parse_overrides(&args.types)?;
    let spec = match (&args.spec, &args.table_spec) {
        (Some(s), _) => TableSpec::uniform(s.clone()),
        (None, Some(path)) => TableSpec::load(path)?,
        (None, None) => TableSpec::default(),
    };
    let how = TableWrite {
        spec,
        sort_by: args.sort.clone(),
        attributes: args.parted.iter().map(|c| (c.clone(), Attribute::Parted)).collect(),
    };
    let mode = WriteMode::from(args.mode);
    let db = Database::open(&args.db)?;
    let location = match args.partition {
        Some(date) => TableLocation::Partition(date, args.table.clone()),
        None => TableLocation::Splayed(args.table.clone()),
    };
    let options = ImportOptions { overrides, how, mode, cast: args.cast };
    let progress = crate::progress::on_stderr();
    let report = import_file(&db, &args.file, &location, &options, &*progress).map_err(|e| match e {
        StoreError::Schema { problem: SchemaMismatch::Type { .. }, .. } if !args.cast => {
            format!("{e}; --cast converts the column when no value changes").into()
        }
        other => Box::<dyn std::error::Error>::from(other),
    })?;
    let (file, dir) = (args.file.display(), db.table_dir(&location));
    let outcome = &report.outcome;
    match (outcome.rows_before, args.mode) {
        (Some(before), Mode::Append) => println!(
            "appended {} rows x {} columns from {file} to {}: {before} rows before, {} after",
            report.rows,
            report.columns,
            dir.display(),
            outcome.rows_after
        ),
        (Some(before), _) => println!(
            "imported {} rows x {} columns from {file} into {}, replacing its {before} rows",
            report.rows,
            report.columns,
            dir.display()
        ),
        (None, _) => {
            println!("imported {} rows x {} columns from {file} into {}", report.rows, report.columns, dir.display())
        }
    }
    for (column, from, to) in &report.cast {
        println!("cast column {column} from {from} to {to} (no value changed)");
    }
    for dropped in &outcome.dropped {
        println!("dropped the {} attribute of column {}: {}", dropped.attribute, dropped.column, dropped.reason);
    }
    if outcome.schema_recorded {
        println!(
            "recorded the schema of table {} in {}",
            outcome.table,
            TableSchema::path(db.root(), &outcome.table).display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_names_and_letters() {
        let parsed = parse_overrides(&["time=timestamp".into(), "sym=s".into()]).unwrap();
        assert_eq!(parsed, [("time".to_string(), ColumnType::Timestamp), ("sym".to_string(), ColumnType::Symbol)]);
        assert!(parse_overrides(&["time".into()]).unwrap_err().contains("col=type"));
        assert!(parse_overrides(&["x=wide".into()]).unwrap_err().contains("timestamp"));
    }
}
