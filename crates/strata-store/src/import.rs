//! Importing a CSV or Parquet file (`strata import`), or Arrow record batches held
//! in memory (the Python package's `db.write`), into a table: read the rows with
//! the table's schema in mind, bring them to that schema, and write them as the
//! import's mode says. Every source goes through [`import`], so the rules below are
//! the same for all.
//!
//! - **Types.** A table that exists already has its types: the schema of a
//!   partitioned table ([`crate::Database::table_schema`]), the stored columns of a
//!   splayed one. A CSV's columns take them (over inference, under `--types`), so
//!   a price column is parsed as the float it is stored as and a value that is not
//!   a number is an error naming its line and column, not a reason to read the
//!   column as symbols. Parquet files and Arrow batches carry their own types.
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

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::append::stored_schema;
use crate::arrow::table_from_record_batches;
use crate::cast::{CastFailure, cast_column};
use crate::database::{Database, TableLocation, TableWrite, WriteMode, WriteOutcome};
use crate::error::{Result, StoreError};
use crate::interchange::{read_csv_with, read_parquet_with_progress};
use crate::progress::Progress;
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

/// Where an import's rows come from.
#[derive(Clone, Copy, Debug)]
pub enum ImportSource<'a> {
    /// A CSV file with a header row; its columns take the table's types.
    Csv(&'a Path),
    /// A Parquet file, or a directory of `*.parquet` files.
    Parquet(&'a Path),
    /// Arrow record batches in memory, all of `schema`; `label` names them in errors
    /// (e.g. "polars DataFrame").
    Arrow {
        /// What the batches are, for error messages.
        label: &'a str,
        /// Their schema.
        schema: &'a SchemaRef,
        /// The rows, in order.
        batches: &'a [RecordBatch],
    },
}

impl ImportSource<'_> {
    /// The source's name in errors: the file, or the batches' label.
    fn label(&self) -> &Path {
        match self {
            ImportSource::Csv(path) | ImportSource::Parquet(path) => path,
            ImportSource::Arrow { label, .. } => Path::new(label),
        }
    }

    /// Whether the source carries its column types (only a CSV does not).
    fn typed(&self) -> bool {
        !matches!(self, ImportSource::Csv(_))
    }

    /// The source's rows as a table, CSV columns taking `known` types; `progress`
    /// hears the reading of a file.
    fn read(
        &self,
        overrides: &[(String, ColumnType)],
        known: &[(String, ColumnType)],
        progress: &dyn Progress,
    ) -> Result<Table> {
        match self {
            ImportSource::Csv(path) => read_csv_with(path, overrides, known, progress),
            ImportSource::Parquet(path) => read_parquet_with_progress(path, overrides, progress),
            ImportSource::Arrow { label, schema, batches } => table_from_record_batches(schema, batches, overrides)
                .map_err(|e| StoreError::Invalid(format!("{label}: {e}"))),
        }
    }
}

/// Imports `file` (CSV or Parquet, see [`is_parquet`]) into `location` of `db`;
/// `progress` hears the steps [`import`] says.
pub fn import_file(
    db: &Database,
    file: &Path,
    location: &TableLocation,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let source = if is_parquet(file) { ImportSource::Parquet(file) } else { ImportSource::Csv(file) };
    import(db, source, location, options, progress)
}

/// Imports the rows of `source` into `location` of `db` (see the module doc).
/// `progress` hears the reading of a file (a CSV: the scan for types, then every
/// row, in bytes; Parquet: rows) and the write (bytes of column values).
pub fn import(
    db: &Database,
    source: ImportSource<'_>,
    location: &TableLocation,
    options: &ImportOptions,
    progress: &dyn Progress,
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
    let (file, typed) = (source.label(), source.typed());
    let table = source.read(&options.overrides, known_types, progress)?;
    let (rows, columns) = (table.len(), table.names().len());
    if table.is_empty() && !typed && !exists {
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
            if options.cast { conform(file, schema, &ordered, typed, &mut cast)? } else { ordered }
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
    let outcome = db.write_table_as(location, &table, &options.how, mode, progress)?;
    Ok(ImportReport { rows, columns, cast, outcome })
}

/// `table` with each column of another type than `schema`'s cast to it, or the
/// error naming the source, table, column and the first value that would change
/// (by CSV line unless the source is `typed`).
fn conform(
    file: &Path,
    schema: &TableSchema,
    table: &Table,
    typed: bool,
    cast: &mut Vec<(String, ColumnType, ColumnType)>,
) -> Result<Table> {
    let mut columns = Vec::with_capacity(table.names().len());
    for (name, column) in table.iter() {
        let column = match schema.type_of(name) {
            Some(stored) if stored != column.ty() => {
                let converted =
                    cast_column(column, stored).map_err(|failure| cast_error(file, schema, name, typed, failure))?;
                cast.push((name.to_string(), column.ty(), stored));
                converted
            }
            _ => column.clone(),
        };
        columns.push((name.to_string(), column));
    }
    Table::new(columns)
}

fn cast_error(file: &Path, schema: &TableSchema, column: &str, typed: bool, failure: CastFailure) -> StoreError {
    let at = match &failure {
        // Rows count from 0 after the header, which is line 1 of a CSV.
        CastFailure::Value { row, value, problem } if !typed => {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::progress::{NoProgress, ProgressLog, Unit};

    fn batch(prices: Vec<f64>) -> RecordBatch {
        let n = prices.len();
        let schema = Schema::new(vec![
            Field::new("sym", DataType::Utf8, false),
            Field::new("price", DataType::Float64, true),
            Field::new("size", DataType::Int64, true),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("s{}", i % 3)))),
                Arc::new(Float64Array::from(prices)),
                Arc::new(Int64Array::from_iter((0..n as i64).map(|i| (i != 1).then_some(i)))),
            ],
        )
        .unwrap()
    }

    fn import_batches(
        db: &Database,
        location: &TableLocation,
        batches: &[RecordBatch],
        mode: WriteMode,
    ) -> Result<ImportReport> {
        let source = ImportSource::Arrow { label: "test batches", schema: &batches[0].schema(), batches };
        import(db, source, location, &ImportOptions { mode, ..ImportOptions::default() }, &NoProgress)
    }

    #[test]
    fn imports_tell_their_steps_in_bytes_and_rows_up_to_their_totals() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let day = TableLocation::Partition("2024.01.02".parse().unwrap(), "trade".into());
        // Enough rows for several CSV reads and Parquet batches.
        let n = 200_000;
        let csv = dir.path().join("trades.csv");
        let text: String = (0..n).map(|i| format!("s{},{}.5,{i}\n", i % 7, i % 100)).collect();
        std::fs::write(&csv, format!("sym,price,size\n{text}")).unwrap();
        let csv_bytes = std::fs::metadata(&csv).unwrap().len();

        let log = ProgressLog::default();
        import_file(&db, &csv, &day, &ImportOptions::default(), &log).unwrap();
        let steps = log.complete_steps().unwrap();
        let (scan, read, write) = (&steps[0], &steps[1], &steps[2]);
        assert_eq!(steps.len(), 3, "{steps:?}");
        assert_eq!(
            (scan.name.as_str(), scan.total, scan.unit),
            ("scanning trades.csv for column types", csv_bytes, Unit::Bytes)
        );
        assert_eq!((read.name.as_str(), read.total, read.unit), ("reading trades.csv", csv_bytes, Unit::Bytes));
        assert!(read.advances.len() > 10, "the read is told as it goes: {:?}", read.advances);
        // Symbol keys, floats, longs.
        assert_eq!((write.name.as_str(), write.total, write.unit), ("writing trade", n * (4 + 8 + 8), Unit::Bytes));
        assert_eq!(write.advances.len(), 3, "one advance per column");

        let parquet = dir.path().join("trades.parquet");
        crate::interchange::write_parquet(&db.read_table(&day).unwrap(), &parquet).unwrap();
        let log = ProgressLog::default();
        let options = ImportOptions { mode: WriteMode::Append, ..ImportOptions::default() };
        import_file(&db, &parquet, &day, &options, &log).unwrap();
        let steps = log.complete_steps().unwrap();
        let named: Vec<_> = steps.iter().map(|s| (s.name.as_str(), s.total, s.unit)).collect();
        assert_eq!(
            named,
            [("reading trades.parquet", n, Unit::Rows), ("appending to trade", n * (4 + 8 + 8), Unit::Bytes)]
        );
        assert!(steps[0].advances.len() > 1, "one advance per record batch: {:?}", steps[0].advances);
    }

    #[test]
    fn arrow_batches_import_under_the_rules_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let day = TableLocation::Partition("2024.01.02".parse().unwrap(), "trade".into());
        let report = import_batches(&db, &day, &[batch(vec![1.0, 2.0]), batch(vec![3.0])], WriteMode::Fail).unwrap();
        assert_eq!((report.rows, report.outcome.rows_after), (3, 3));
        let table = db.read_table(&day).unwrap();
        assert_eq!(table.names(), ["sym", "price", "size"]);
        assert_eq!(table.column("size").unwrap().ty(), ColumnType::Long);
        assert_eq!(table.column("size").unwrap().values::<i64>(), [0, i64::MIN, 0], "an Arrow null is 0N");

        let refused = import_batches(&db, &day, &[batch(vec![4.0])], WriteMode::Fail).unwrap_err();
        assert!(refused.to_string().contains("trade"), "{refused}");
        let appended = import_batches(&db, &day, &[batch(vec![4.0])], WriteMode::Append).unwrap();
        assert_eq!((appended.outcome.rows_before, appended.outcome.rows_after), (Some(3), 4));

        // Another day with price as integers: the schema refuses it, naming the column.
        let schema = Schema::new(vec![
            Field::new("sym", DataType::Utf8, false),
            Field::new("price", DataType::Int64, true),
            Field::new("size", DataType::Int64, true),
        ]);
        let ints = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec!["s0"])),
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![1])),
            ],
        )
        .unwrap();
        let next = TableLocation::Partition("2024.01.03".parse().unwrap(), "trade".into());
        let wrong = import_batches(&db, &next, &[ints], WriteMode::Fail).unwrap_err();
        assert!(wrong.to_string().contains("column price"), "{wrong}");
        assert_eq!(db.partitions().unwrap().len(), 1, "nothing written");
    }
}
