//! Query results written out: a terminal table, CSV, JSON lines or Parquet. Text
//! dictionaries (symbols, chars) are written as plain text, so any reader sees
//! strings.

use std::io::Write;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::compute::cast;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{QueryError, Result};

/// How results are printed or saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A boxed table for a terminal.
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

/// `batches` with dictionary columns cast to their value type (text), and with
/// `durations_as_nanos`, durations (timespans) as `Int64` nanoseconds.
pub fn plain_text(batches: &[RecordBatch], durations_as_nanos: bool) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let Some(first) = batches.first() else { return Ok((Arc::new(Schema::empty()), Vec::new())) };
    let source = first.schema();
    let fields: Vec<Field> = source
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => Field::new(f.name(), value.as_ref().clone(), f.is_nullable()),
            DataType::Duration(_) if durations_as_nanos => Field::new(f.name(), DataType::Int64, f.is_nullable()),
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
                .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c.clone()) } else { cast(c, f.data_type()) })
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

/// Writes `batches` to `out` as `format` (Parquet needs a seekable file: use
/// [`write_parquet`]).
pub fn write(batches: &[RecordBatch], format: Format, out: &mut dyn Write) -> Result<()> {
    let (_, batches) = plain_text(batches, false)?;
    let io = |e: std::io::Error| QueryError::Invalid(format!("cannot write results: {e}"));
    let arrow = |e: datafusion::arrow::error::ArrowError| QueryError::Invalid(format!("cannot write results: {e}"));
    match format {
        Format::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).map_err(arrow)?;
            writeln!(out, "{text}").map_err(io)
        }
        Format::Csv => {
            let mut writer = datafusion::arrow::csv::WriterBuilder::new().with_header(true).build(out);
            batches.iter().try_for_each(|b| writer.write(b)).map_err(arrow)
        }
        Format::Json => {
            let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(out);
            batches.iter().try_for_each(|b| writer.write(b)).map_err(arrow)?;
            writer.finish().map_err(arrow)
        }
        Format::Parquet => Err(QueryError::Invalid("Parquet output needs a file: give --out".into())),
    }
}

/// Writes `batches` to the Parquet file `path` (zstd level 3), text dictionaries as
/// strings and timespans as `Int64` nanoseconds (Parquet has no duration type).
pub fn write_parquet(batches: &[RecordBatch], schema: &SchemaRef, path: &std::path::Path) -> Result<()> {
    let (plain_schema, batches) = plain_text(batches, true)?;
    let schema = if batches.is_empty() { schema.clone() } else { plain_schema };
    let fail = |e: &dyn std::fmt::Display| QueryError::Invalid(format!("{}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let level = ZstdLevel::try_new(3).expect("a valid zstd level");
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(level)).build();
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| fail(&e))?;
    for batch in &batches {
        writer.write(batch).map_err(|e| fail(&e))?;
    }
    writer.close().map_err(|e| fail(&e))?;
    Ok(())
}
