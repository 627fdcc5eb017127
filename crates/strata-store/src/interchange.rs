//! CSV and Parquet files to and from tables.
//!
//! **CSV** files have a header row of column names (identifiers). Column types come
//! from the caller's overrides, else (importing into a table that exists,
//! [`read_csv_with`]) the types the table stores, else arrow-csv infers them from the
//! first [`CSV_INFER_ROWS`] rows: integers become long, decimals float, `true`/`false`
//! boolean, `YYYY-MM-DD` date, ISO-8601 date-times timestamp, anything else symbol.
//! arrow-csv splits the file into text fields; Strata parses them, so every type reads
//! kdb+'s forms as well as ISO-8601 ones (`2024.01.02D09:30:00.000000000`,
//! `2024.01.02`, `09:30`, `0D00:00:01`, ...) and a value that does not parse is
//! reported with the file, its line, the column, the value and the form expected.
//! Lines are counted as records, header first: a quoted field holding a newline makes
//! later line numbers smaller than an editor's. A row with too few or too many
//! fields, or bytes that are not UTF-8, is reported by line and column name; a
//! date-time outside a timestamp's range as out of range, not as malformed. Empty
//! fields are kdb+ nulls (see [`crate::nulls`]); booleans and bytes have none, so an
//! empty field for one is an error naming the line and column. [`write_csv`] prints
//! what [`read_csv`] reads back.
//!
//! **Parquet** files keep Strata's types in field metadata, so a table written with
//! [`write_parquet`] reads back unchanged; other files map as [`crate::arrow`] says.
//!
//! Both writers write a temporary file and rename it over the target
//! ([`AtomicFile`]), so a reader never sees half a file.

use std::cell::Cell;
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use arrow_csv::ReaderBuilder;
use arrow_csv::reader::Format;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::arrow::{
    Failure, check_overrides, concat_columns, convert, table_from_record_batches, table_to_record_batch, text,
};
use crate::column_data::Column;
use crate::durable::{AtomicFile, Durability};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::progress::{CountingReader, NoProgress, Progress, Unit};
use crate::table::{Table, is_valid_name};
use crate::types::ColumnType;
use quotes::QuoteCheck;

mod quotes;

/// Rows of a CSV file read to infer the types of columns without an override. Later
/// rows are checked against those types, not used to widen them.
pub const CSV_INFER_ROWS: usize = 1_000_000;

/// Rows per record batch while reading; bounds the text held at once.
const BATCH_ROWS: usize = 64 * 1024;

/// Bytes of CSV text buffered before they are written.
const CSV_WRITE_CHUNK: usize = 1 << 20;

/// zstd level of Parquet pages: fast to write, close to the best ratio for ticks.
const PARQUET_ZSTD_LEVEL: i32 = 3;

/// Reads a CSV file with a header row into a table. `overrides` give column types
/// by name (they win over inference; naming a column the header lacks is an error).
///
/// ```
/// use strata_store::{ColumnType, interchange::read_csv};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("trades.csv");
/// std::fs::write(&path, "time,sym,price\n2024.01.02D09:30:00.000000001,IBM,101.5\n").unwrap();
/// let table = read_csv(&path, &[("time".into(), ColumnType::Timestamp)]).unwrap();
/// assert_eq!(table.column("time").unwrap().values::<i64>(), [1_704_187_800_000_000_001]);
/// assert_eq!(table.column("sym").unwrap().symbol(0), "IBM");
/// ```
pub fn read_csv(path: &Path, overrides: &[(String, ColumnType)]) -> Result<Table> {
    read_csv_with(path, overrides, &[], &NoProgress)
}

/// Where a CSV column's type came from, for the hint of a value that does not parse.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TypeSource {
    /// An override.
    Given,
    /// The table's stored schema.
    Stored,
    /// Inferred from the first rows.
    Inferred,
}

/// [`read_csv`] into a table that exists: `known` gives the types of columns by
/// name (the table's schema), which columns of the header take instead of inferred
/// ones (overrides still win; names the header lacks are ignored), so a column is
/// read as what the table stores and a value that is not of that type is an error
/// naming its line and column.
///
/// `progress` hears two steps in [`Unit::Bytes`] of the file: the scan of its first
/// rows for column types (done once the types are known, even when the scan stopped
/// short of the end), then the reading of every row.
pub fn read_csv_with(
    path: &Path,
    overrides: &[(String, ColumnType)],
    known: &[(String, ColumnType)],
    progress: &dyn Progress,
) -> Result<Table> {
    let format = Format::default().with_header(true);
    // The header alone first, so errors in later lines can name columns.
    let header = BufReader::new(File::open(path).at(path)?);
    let (header, _) = format.infer_schema(header, Some(0)).map_err(|e| csv_error(path, e, &[]))?;
    let header: Vec<&str> = header.fields().iter().map(|f| f.name().as_str()).collect();
    let file_bytes = fs::metadata(path).at(path)?.len();
    let name = file_name(path);
    let step = format!("scanning {name} for column types");
    let mut scan = CountingReader::start(File::open(path).at(path)?, progress, &step, file_bytes);
    let (inferred, _) = format
        .infer_schema(BufReader::new(&mut scan), Some(CSV_INFER_ROWS))
        .map_err(|e| csv_error(path, e, &header))?;
    scan.finish();
    let names: Vec<&str> = inferred.fields().iter().map(|f| f.name().as_str()).collect();
    if names.is_empty() {
        return Err(in_file(path, "line 1: no header row"));
    }
    if let Some(bad) = names.iter().find(|n| !is_valid_name(n)) {
        return Err(in_file(
            path,
            format!("line 1: column name {bad:?} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"),
        ));
    }
    check_overrides(&names, overrides).map_err(|e| within(path, e))?;
    let types: Vec<(ColumnType, TypeSource)> = inferred
        .fields()
        .iter()
        .map(|f| match overrides.iter().rev().find(|(name, _)| name == f.name()) {
            Some((_, ty)) => (*ty, TypeSource::Given),
            None => match known.iter().find(|(name, _)| name == f.name()) {
                Some((_, ty)) => (*ty, TypeSource::Stored),
                None => (inferred_type(f.data_type()), TypeSource::Inferred),
            },
        })
        .collect();

    let text_schema = Schema::new(names.iter().map(|name| Field::new(*name, DataType::Utf8, true)).collect::<Vec<_>>());
    let unclosed = Rc::new(Cell::new(None));
    let file = QuoteCheck::new(File::open(path).at(path)?, unclosed.clone());
    let mut read = CountingReader::start(file, progress, &format!("reading {name}"), file_bytes);
    let reader = ReaderBuilder::new(Arc::new(text_schema))
        .with_format(format)
        .with_batch_size(BATCH_ROWS)
        .build(&mut read)
        .map_err(|e| csv_error(path, e, &names))?;
    let mut parts: Vec<Vec<Column>> = vec![Vec::new(); names.len()];
    let mut first_row = 0;
    for batch in reader {
        let batch = batch.map_err(|e| match unclosed.get() {
            Some(line) => in_file(path, quotes::unclosed_message(line)),
            None => csv_error(path, e, &names),
        })?;
        for (i, array) in batch.columns().iter().enumerate() {
            let (ty, source) = types[i];
            let part = convert(array.as_ref(), ty).map_err(|failure| {
                let detail = match failure {
                    Failure::Value { row, value, problem } => {
                        let hint = match source {
                            TypeSource::Inferred => format!(" (type inferred from the first {CSV_INFER_ROWS} rows; give the column a type to read it differently)"),
                            TypeSource::Stored => " (the type the table stores)".to_string(),
                            TypeSource::Given => String::new(),
                        };
                        let (problem, hint) = if ty == ColumnType::Timestamp && text::is_timestamp_out_of_range(value.trim()) {
                            (format!("is out of range for timestamp ({})", text::TIMESTAMP_RANGE), String::new())
                        } else {
                            (problem, hint)
                        };
                        // Rows count from 0 after the header, which is line 1.
                        format!("line {}: column {}: value {value:?} {problem}{hint}", first_row + row + 2, names[i])
                    }
                    Failure::Unsupported => format!("column {}: text cannot be read as {ty}", names[i]),
                };
                in_file(path, detail)
            })?;
            parts[i].push(part);
        }
        first_row += batch.num_rows();
    }
    read.finish();
    let columns = names
        .iter()
        .zip(&types)
        .zip(&parts)
        .map(|((name, (ty, _)), parts)| Ok((name.to_string(), concat_columns(*ty, parts)?)))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| within(path, e))?;
    Table::new(columns).map_err(|e| within(path, e))
}

/// The column type of a type arrow-csv inferred.
fn inferred_type(data_type: &DataType) -> ColumnType {
    match data_type {
        DataType::Boolean => ColumnType::Boolean,
        DataType::Int64 => ColumnType::Long,
        DataType::Float64 => ColumnType::Float,
        DataType::Date32 => ColumnType::Date,
        DataType::Timestamp(..) => ColumnType::Timestamp,
        _ => ColumnType::Symbol,
    }
}

/// Writes `table` as CSV with a header row, atomically. Values are in the text forms
/// [`read_csv`] reads: timestamps `2024-01-02T09:30:00.123456789` (UTC), dates
/// `2024-01-02`, months `2024-01`, minutes `09:30`, seconds `09:30:00`, times
/// `09:30:00.123`, timespans `0D09:30:00.000000000`, booleans `true`/`false`, chars as
/// the character; kdb+ nulls (char's space, the empty symbol and string included)
/// are empty fields. Fields with a comma, quote or line break are quoted.
pub fn write_csv(table: &Table, path: &Path) -> Result<()> {
    write_csv_with_progress(table, path, &NoProgress)
}

/// [`write_csv`], telling `progress` one step in [`Unit::Rows`]: the rows written.
pub fn write_csv_with_progress(table: &Table, path: &Path, progress: &dyn Progress) -> Result<()> {
    progress.start(&format!("writing {}", file_name(path)), table.len() as u64, Unit::Rows);
    let mut file = AtomicFile::create(path, Durability::default())?;
    let mut rows_buffered = 0;
    let mut out = String::with_capacity(CSV_WRITE_CHUNK + 4096);
    // Names are identifiers, so they never need quoting.
    out.push_str(&table.names().join(","));
    out.push('\n');
    // A lone empty field would be a blank line, which CSV readers skip: quote it.
    let lone = table.columns().len() == 1;
    let mut cell = String::new();
    for row in 0..table.len() {
        for (i, column) in table.columns().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            cell.clear();
            text::write_value(&mut cell, column, row);
            if cell.contains([',', '"', '\n', '\r']) || (lone && cell.is_empty()) {
                out.push('"');
                out.push_str(&cell.replace('"', "\"\""));
                out.push('"');
            } else {
                out.push_str(&cell);
            }
        }
        out.push('\n');
        rows_buffered += 1;
        if out.len() >= CSV_WRITE_CHUNK {
            file.write_all(out.as_bytes())?;
            out.clear();
            progress.advance(std::mem::take(&mut rows_buffered));
        }
    }
    file.write_all(out.as_bytes())?;
    file.commit()?;
    progress.advance(rows_buffered);
    progress.finish();
    Ok(())
}

/// Reads a Parquet file, or every `*.parquet` file of a directory in name order
/// (their columns must agree), into one table. Column types come from `overrides`,
/// then `strata.type` field metadata, then the Arrow types (see [`crate::arrow`]).
pub fn read_parquet(path: &Path, overrides: &[(String, ColumnType)]) -> Result<Table> {
    read_parquet_with_progress(path, overrides, &NoProgress)
}

/// [`read_parquet`], telling `progress` one step in [`Unit::Rows`]: the rows of
/// every file, as their record batches are read.
pub(crate) fn read_parquet_with_progress(
    path: &Path,
    overrides: &[(String, ColumnType)],
    progress: &dyn Progress,
) -> Result<Table> {
    let files = if path.is_dir() { parquet_files(path)? } else { vec![path.to_path_buf()] };
    // Every file's footer first, for the step's total.
    let builders = files.iter().map(|file| parquet_reader(file)).collect::<Result<Vec<_>>>()?;
    let rows = builders.iter().map(|b| u64::try_from(b.metadata().file_metadata().num_rows()).unwrap_or(0)).sum();
    progress.start(&format!("reading {}", file_name(path)), rows, Unit::Rows);
    let mut tables = files
        .iter()
        .zip(builders)
        .map(|(file, builder)| read_parquet_file(file, builder, overrides, progress))
        .collect::<Result<Vec<Table>>>()?;
    progress.finish();
    match tables.len() {
        0 => return Err(in_file(path, "no *.parquet files in the directory")),
        1 => return Ok(tables.remove(0)),
        _ => {}
    }
    let first = &tables[0];
    let layout = |t: &Table| t.iter().map(|(name, c)| format!("{name}:{}", c.ty())).collect::<Vec<_>>().join(", ");
    for (file, table) in files.iter().zip(&tables).skip(1) {
        if layout(table) != layout(first) {
            return Err(in_file(
                file,
                format!("columns ({}) differ from those of {} ({})", layout(table), files[0].display(), layout(first)),
            ));
        }
    }
    let columns = (0..first.columns().len())
        .map(|i| {
            let parts: Vec<Column> = tables.iter().map(|t| t.columns()[i].clone()).collect();
            Ok((first.names()[i].clone(), concat_columns(parts[0].ty(), &parts)?))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| within(path, e))?;
    Table::new(columns).map_err(|e| within(path, e))
}

/// The `*.parquet` files of directory `dir`, in name order.
fn parquet_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let file = entry.at(dir)?.path();
        if file.extension().is_some_and(|e| e == "parquet") && file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// A reader of Parquet file `path`, its footer read.
fn parquet_reader(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).at(path)?).map_err(|e| corrupt(path, e.to_string()))
}

/// The rows of Parquet file `path` (opened as `builder`), advancing `progress` by
/// each record batch's rows.
fn read_parquet_file(
    path: &Path,
    builder: ParquetRecordBatchReaderBuilder<File>,
    overrides: &[(String, ColumnType)],
    progress: &dyn Progress,
) -> Result<Table> {
    let builder = builder.with_batch_size(BATCH_ROWS);
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(|e| corrupt(path, e.to_string()))?;
    let batches = reader
        .map(|batch| {
            let batch = batch.map_err(|e| corrupt(path, e.to_string()))?;
            progress.advance(batch.num_rows() as u64);
            Ok(batch)
        })
        .collect::<Result<Vec<_>>>()?;
    table_from_record_batches(&schema, &batches, overrides).map_err(|e| within(path, e))
}

/// Writes `table` as a zstd-compressed Parquet file, atomically. Fields carry
/// `strata.type` metadata and symbols are dictionary-encoded, so [`read_parquet`]
/// restores the table exactly.
pub fn write_parquet(table: &Table, path: &Path) -> Result<()> {
    write_parquet_with_progress(table, path, &NoProgress)
}

/// [`write_parquet`], telling `progress` one step in [`Unit::Rows`]: the rows
/// handed to the writer, [`BATCH_ROWS`] at a time (the writer makes the same row
/// groups and pages of them as of the whole table).
pub fn write_parquet_with_progress(table: &Table, path: &Path, progress: &dyn Progress) -> Result<()> {
    progress.start(&format!("writing {}", file_name(path)), table.len() as u64, Unit::Rows);
    let batch = table_to_record_batch(table)?;
    let level = ZstdLevel::try_new(PARQUET_ZSTD_LEVEL).expect("a valid zstd level");
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(level)).build();
    let mut file = AtomicFile::create(path, Durability::default())?;
    let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).map_err(|e| in_file(path, e))?;
    for start in (0..batch.num_rows()).step_by(BATCH_ROWS) {
        let rows = BATCH_ROWS.min(batch.num_rows() - start);
        writer.write(&batch.slice(start, rows)).map_err(|e| in_file(path, e))?;
        progress.advance(rows as u64);
    }
    writer.close().map_err(|e| in_file(path, e))?;
    file.commit()?;
    progress.finish();
    Ok(())
}

/// The last part of `path`, to name a step by.
fn file_name(path: &Path) -> std::borrow::Cow<'_, str> {
    path.file_name().unwrap_or(path.as_os_str()).to_string_lossy()
}

/// An [`StoreError::Invalid`] that starts with `path`.
fn in_file(path: &Path, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Invalid(format!("{}: {detail}", path.display()))
}

/// `error` with `path` in front, unless it already names a path.
fn within(path: &Path, error: StoreError) -> StoreError {
    match error {
        StoreError::Invalid(detail) => in_file(path, detail),
        other => other,
    }
}

/// An arrow-csv error, without its "Csv error: " prefix, after the path; a ragged
/// row or bad UTF-8 named by column (`names`, the header) rather than field number.
fn csv_error(path: &Path, error: ArrowError, names: &[&str]) -> StoreError {
    match error {
        ArrowError::CsvError(detail) => in_file(path, csv_problem(&detail, names).unwrap_or(detail)),
        other => in_file(path, other),
    }
}

/// arrow-csv's (and the csv crate's) messages for a row with too few or too many
/// fields and for bytes that are not UTF-8 count fields by number; this says which
/// column, by name. `None` for any other message (kept as it is). The wording
/// matched is arrow-csv 59's, pinned by a test.
fn csv_problem(detail: &str, names: &[&str]) -> Option<String> {
    if let Some(rest) = detail.strip_prefix("Encountered unequal lengths between records on CSV file. Expected ") {
        let (expected, rest) = rest.split_once(" records, found ")?;
        let (found, line) = rest.split_once(" records at line ")?;
        return ragged(line, expected.parse().ok()?, found.parse().ok()?, names);
    }
    if let Some(rest) = detail.strip_prefix("incorrect number of fields for line ") {
        let (line, rest) = rest.split_once(", expected ")?;
        let (expected, found) = rest.split_once(" got ")?;
        let more = found.strip_prefix("more than ");
        let found: usize = more.unwrap_or(found).parse().ok()?;
        return ragged(line, expected.parse().ok()?, found + usize::from(more.is_some()), names);
    }
    // The reader counts fields from 1, the schema inference (the csv crate) from 0.
    let (line, column, byte) = if let Some(rest) = detail.strip_prefix("Encountered invalid UTF-8 data for line ") {
        let (line, field) = rest.split_once(" and field ")?;
        (line, field.parse::<usize>().ok()?.checked_sub(1)?, None)
    } else {
        let rest = detail.strip_prefix("Encountered UTF-8 error while reading CSV file: ")?;
        let (_, rest) = rest.split_once(" in field ")?;
        let (field, rest) = rest.split_once(" near byte index ")?;
        let (byte, line) = rest.split_once(" at line ")?;
        (line, field.parse().ok()?, Some(byte))
    };
    let at = byte.map_or(String::new(), |b| format!(" (from byte {b} of the field)"));
    Some(format!("line {line}: column {}: the text is not UTF-8{at}", names.get(column)?))
}

/// A row of `found` fields where the header has `expected`, named by column.
fn ragged(line: &str, expected: usize, found: usize, names: &[&str]) -> Option<String> {
    if names.len() != expected {
        return None;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let fields = format!("line {line}: {found} field{} where the header has {expected}", plural(found));
    Some(if found < expected {
        let missing = &names[found..];
        format!("{fields}: no value for column{} {}", plural(missing.len()), missing.join(", "))
    } else {
        format!("{fields}: a field past the last column, {}", names[expected - 1])
    })
}

#[cfg(test)]
mod tests;
