//! Query results written out: a terminal table, CSV, JSON lines or Parquet. Text
//! dictionaries (symbols, chars) are written as plain text, so any reader sees
//! strings.

use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::compute::cast;

use crate::error::{QueryError, Result};

mod parquet_file;
mod table;
mod text;

pub use parquet_file::write_parquet;
pub use table::{DEFAULT_TABLE_ROWS, write_table};
use text::{TextFormat, write_text};

/// How results are printed or saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A boxed table for a terminal, long results cut to their first and last
    /// rows ([`write_table`]).
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON object per row.
    Json,
    /// A Parquet file (zstd).
    Parquet,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Format, String> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "parquet" => Ok(Format::Parquet),
            other => Err(format!("unknown format {other}; expected table, csv, json or parquet")),
        }
    }
}

impl Format {
    /// The format a file's extension names: `.csv`, `.json` (also `.jsonl`,
    /// `.ndjson`: each is one object per line), `.parquet` (also `.pq`), in any case.
    pub fn from_path(path: &std::path::Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(Format::Csv),
            "json" | "jsonl" | "ndjson" => Some(Format::Json),
            "parquet" | "pq" => Some(Format::Parquet),
            _ => None,
        }
    }
}

/// A timespan as a person reads it: `09:30:23.889931298`, with kdb+'s day count in
/// front when it spans a day or more (`1D02:00:00.000000001`) and a sign when
/// negative.
pub fn timespan_text(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let secs = n / 1_000_000_000;
    let days = match secs / 86_400 {
        0 => String::new(),
        d => format!("{d}D"),
    };
    format!("{sign}{days}{:02}:{:02}:{:02}.{:09}", secs / 3600 % 24, secs / 60 % 60, secs % 60, n % 1_000_000_000)
}

/// A duration column as [`timespan_text`] strings (nulls stay null).
fn timespans_as_text(column: &ArrayRef) -> std::result::Result<ArrayRef, datafusion::arrow::error::ArrowError> {
    let nanos = cast(column, &DataType::Duration(arrow_schema::TimeUnit::Nanosecond))?;
    let nanos = nanos.as_primitive::<arrow_array::types::DurationNanosecondType>();
    Ok(Arc::new(nanos.iter().map(|v| v.map(timespan_text)).collect::<arrow_array::StringArray>()))
}

/// `batches` with dictionary columns cast to their value type (text), and
/// durations (timespans) as text ([`timespan_text`]), or with
/// `durations_as_nanos` as `Int64` nanoseconds (for files, which keep numbers).
pub fn plain_text(batches: &[RecordBatch], durations_as_nanos: bool) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let Some(first) = batches.first() else { return Ok((Arc::new(Schema::empty()), Vec::new())) };
    let source = first.schema();
    let fields: Vec<Field> = source
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => Field::new(f.name(), value.as_ref().clone(), f.is_nullable()),
            DataType::Duration(_) if durations_as_nanos => Field::new(f.name(), DataType::Int64, f.is_nullable()),
            DataType::Duration(_) => Field::new(f.name(), DataType::Utf8, f.is_nullable()),
            _ => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let out = batches
        .iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| match (c.data_type(), f.data_type()) {
                    (from, to) if from == to => Ok(c.clone()),
                    (DataType::Duration(_), DataType::Utf8) => timespans_as_text(c),
                    (_, to) => cast(c, to),
                })
                .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
            RecordBatch::try_new_with_options(
                schema.clone(),
                columns,
                &arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
            )
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| QueryError::Invalid(format!("cannot convert results to text: {e}")))?;
    Ok((schema, out))
}

/// Writes `batches` to `out` as `format`, a table showing at most
/// [`DEFAULT_TABLE_ROWS`] rows (Parquet needs a seekable file: use
/// [`write_parquet`]).
pub fn write(batches: &[RecordBatch], format: Format, out: &mut dyn Write) -> Result<()> {
    match format {
        Format::Table => write_table(batches, DEFAULT_TABLE_ROWS, out),
        Format::Csv => write_text(batches, TextFormat::Csv, out),
        Format::Json => write_text(batches, TextFormat::JsonLines, out),
        Format::Parquet => Err(QueryError::Invalid("Parquet output needs a file: give --out".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000_000_000;

    #[test]
    fn timespans_read_as_times_of_day() {
        assert_eq!(timespan_text(9 * H + 30 * 60_000_000_000 + 23_889_931_298), "09:30:23.889931298");
        assert_eq!(timespan_text(0), "00:00:00.000000000");
        assert_eq!(timespan_text(26 * H + 1), "1D02:00:00.000000001");
        assert_eq!(timespan_text(-H), "-01:00:00.000000000");
        assert_eq!(timespan_text(i64::MIN + 1).chars().next(), Some('-'));
    }

    #[test]
    fn text_outputs_show_timespans_as_times_and_nulls_as_empty() {
        let times = arrow_array::DurationNanosecondArray::from(vec![Some(9 * H + 1), None]);
        let n = arrow_array::Int64Array::from(vec![1, 2]);
        let batch = RecordBatch::try_from_iter([("time", Arc::new(times) as ArrayRef), ("n", Arc::new(n) as ArrayRef)])
            .unwrap();
        let mut csv = Vec::new();
        write(std::slice::from_ref(&batch), Format::Csv, &mut csv).unwrap();
        assert_eq!(String::from_utf8(csv).unwrap(), "time,n\n09:00:00.000000001,1\n,2\n");
        let mut json = Vec::new();
        write(std::slice::from_ref(&batch), Format::Json, &mut json).unwrap();
        assert_eq!(String::from_utf8(json).unwrap(), "{\"time\":\"09:00:00.000000001\",\"n\":1}\n{\"n\":2}\n");
        let (schema, _) = plain_text(&[batch], true).unwrap();
        assert_eq!(schema.field(0).data_type(), &DataType::Int64, "files keep nanoseconds");
    }
}
