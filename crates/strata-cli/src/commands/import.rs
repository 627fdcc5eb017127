//! `strata import`: CSV or Parquet into a table.

use std::path::PathBuf;

use clap::Args;
use strata_codec::CompressionSpec;
use strata_store::{Attribute, ColumnType, Database, Date, TableLocation, TableSpec, TableWrite, interchange};

use super::CliResult;

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
    let is_parquet = args.file.is_dir() || args.file.extension().is_some_and(|e| e == "parquet" || e == "pq");
    let table = if is_parquet {
        interchange::read_parquet(&args.file, &overrides)?
    } else {
        interchange::read_csv(&args.file, &overrides)?
    };
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
    let db = Database::open(&args.db)?;
    let location = match args.partition {
        Some(date) => TableLocation::Partition(date, args.table.clone()),
        None => TableLocation::Splayed(args.table.clone()),
    };
    db.write_table(&location, &table, &how)?;
    println!(
        "imported {} rows x {} columns from {} into {}",
        table.len(),
        table.names().len(),
        args.file.display(),
        db.table_dir(&location).display()
    );
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
