//! Importing a CSV or Parquet file into a table (`strata import`): read the file
//! with the table's schema in mind, bring it to that schema, and write it as the
//! import's mode says.
//!
//! - **Types.** A table that exists already has its types: the schema of a
//!   partitioned table ([`crate::Database::table_schema`]), the stored columns of a
//!   splayed one. A CSV's columns take them (over inference, under `--types`), so
//!   a price column is parsed as the float it is stored as and a value that is not
//!   a number is an error naming its line and column, not a reason to read the
//!   column as symbols. Parquet files carry their own types.
//! - **Conforming.** Columns are put in the schema's order when the names agree.
//!   A column of another type is refused ([`crate::StoreError::Schema`]) unless
//!   `cast` is set, which converts it when no value changes ([`crate::cast`]) and
//!   otherwise names the first value that would.
//! - **Modes** ([`WriteMode`]): `Fail` (the default) refuses a table that is
//!   there, `Append` adds the rows ([`crate::append`]), `Replace` swaps the table.
//! - **Empty input** (a header-only CSV, a Parquet file of no rows) never touches a
//!   table that is there unless the mode is `Replace`; appending it is a no-op.
//!   Into a table that does not exist yet it creates an empty one (as kdb+'s
//!   `.Q.dpft` writes an empty table and DuckDB's `CREATE TABLE AS` of an empty
//!   file does) when every column's type is known (from the schema, `--types` or
//!   the Parquet file); a CSV header alone gives no types, and fixing a schema of
//!   guessed symbols would refuse every real day after, so that is an error.

use std::path::Path;

use crate::append::stored_schema;
use crate::cast::{CastFailure, cast_column};
use crate::database::{Database, TableLocation, TableWrite, WriteMode, WriteOutcome};
use crate::error::{Result, StoreError};
use crate::interchange::{read_csv_with, read_parquet};
use crate::schema::TableSchema;
use crate::table::Table;
use crate::types::ColumnType;

/// How to import a file.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Column types given by the user (`--types`); they win over the table's.
    pub overrides: Vec<(String, ColumnType)>,
    /// Sort, attributes and compression of the write.
    pub how: TableWrite,
    /// What to do with a table that is there ([`WriteMode::Merge`] is taken as
    /// [`WriteMode::Fail`]).
    pub mode: WriteMode,
    /// Convert columns of another type than the table's when no value changes.
    pub cast: bool,
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// Rows read from the file.
    pub rows: usize,
    /// Columns read from the file.
    pub columns: usize,
    /// Columns converted by `cast`: name, type in the file, type stored.
    pub cast: Vec<(String, ColumnType, ColumnType)>,
    /// What the write did (the rows before and after, attributes dropped, whether
    /// the schema was recorded).
    pub outcome: WriteOutcome,
}

/// Whether `file` is read as Parquet: a directory or a `.parquet`/`.pq` file.
pub fn is_parquet(file: &Path) -> bool {
    file.is_dir() || file.extension().is_some_and(|e| e == "parquet" || e == "pq")
}

/// Imports `file` (CSV or Parquet, see [`is_parquet`]) into `location` of `db`.
pub fn import_file(
    db: &Database,
    file: &Path,
    location: &TableLocation,
    options: &ImportOptions,
) -> Result<ImportReport> {
    let mode = if options.mode == WriteMode::Merge { WriteMode::Fail } else { options.mode };
    let name = location.table();
    let dir = db.table_dir(location);
    let exists = match location {
        TableLocation::Splayed(_) => dir.join(crate::splayed::COLUMN_ORDER_FILE).is_file(),
        TableLocation::Partition(date, _) => db.tables(Some(*date)).is_ok_and(|t| t.iter().any(|t| t == name)),
    };
    // The types the rows must have: a partitioned table's schema (kept even by a
    // replace unless no other partition holds the table), a splayed table's stored
    // columns (which a replace may change).
    let known = match location {
        TableLocation::Partition(date, _) if mode == WriteMode::Replace => db.table_schema_beside(name, *date)?,
        TableLocation::Partition(..) => db.table_schema(name)?,
        TableLocation::Splayed(_) if exists && mode != WriteMode::Replace => Some(stored_schema(name, &dir)?),
        TableLocation::Splayed(_) => None,
    };
    let known_types = known.as_ref().map_or(&[][..], |k| k.columns.as_slice());
    let parquet = is_parquet(file);
    let table = if parquet {
        read_parquet(file, &options.overrides)?
    } else {
        read_csv_with(file, &options.overrides, known_types)?
    };
    let (rows, columns) = (table.len(), table.names().len());
    if table.is_empty() && !parquet && !exists {
        let untyped: Vec<&str> = table
            .names()
            .iter()
            .map(String::as_str)
            .filter(|n| !options.overrides.iter().any(|(o, _)| o == n) && !known_types.iter().any(|(k, _)| k == n))
            .collect();
        if !untyped.is_empty() {
            return Err(StoreError::Invalid(format!(
                "{}: no rows, so no types for columns {}; give them with --types (col=type,...) to create an empty \
                 table {name}",
                file.display(),
                untyped.join(", ")
            )));
        }
    }
    let mut cast = Vec::new();
    let table = match &known {
        Some(schema) => {
            let ordered = schema.reorder(&table)?;
            if options.cast { conform(file, schema, &ordered, parquet, &mut cast)? } else { ordered }
        }
        None => table,
    };
    if table.is_empty() && exists && mode == WriteMode::Append {
        // Nothing to add, but the columns must still be the table's.
        if let Some(schema) = &known {
            schema.check(&table, file)?;
        }
        let stored = db.open_table(location)?.stats()?.first().map_or(0, |s| s.rows);
        let outcome = WriteOutcome {
            table: name.to_string(),
            rows_before: Some(stored),
            rows_after: stored,
            dropped: Vec::new(),
            schema_recorded: false,
        };
        return Ok(ImportReport { rows, columns, cast, outcome });
    }
    let outcome = db.write_table_as(location, &table, &options.how, mode)?;
    Ok(ImportReport { rows, columns, cast, outcome })
}

/// `table` with each column of another type than `schema`'s cast to it, or the
/// error naming the file, table, column and the first value that would change.
fn conform(
    file: &Path,
    schema: &TableSchema,
    table: &Table,
    parquet: bool,
    cast: &mut Vec<(String, ColumnType, ColumnType)>,
) -> Result<Table> {
    let mut columns = Vec::with_capacity(table.names().len());
    for (name, column) in table.iter() {
        let column = match schema.type_of(name) {
            Some(stored) if stored != column.ty() => {
                let converted =
                    cast_column(column, stored).map_err(|failure| cast_error(file, schema, name, parquet, failure))?;
                cast.push((name.to_string(), column.ty(), stored));
                converted
            }
            _ => column.clone(),
        };
        columns.push((name.to_string(), column));
    }
    Table::new(columns)
}

fn cast_error(file: &Path, schema: &TableSchema, column: &str, parquet: bool, failure: CastFailure) -> StoreError {
    let at = match &failure {
        // Rows count from 0 after the header, which is line 1 of a CSV.
        CastFailure::Value { row, value, problem } if !parquet => {
            format!("line {} (row {row}): value {value} {problem}", row + 2)
        }
        other => other.to_string(),
    };
    StoreError::Invalid(format!(
        "{}: table {}: column {column}: cannot cast to the stored {}: {at}",
        file.display(),
        schema.table,
        schema.type_of(column).map_or("type", ColumnType::name)
    ))
}
