//! Results as a Parquet file, each row group's columns encoded and compressed in
//! parallel. Compression is most of a Parquet write (zstd over float columns), and
//! the columns of a row group are independent, so every core takes a share of them;
//! the file is the one [`ArrowWriter`] writes one column at a time.

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowLeafColumn, compute_leaves};
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use super::plain_text;
use crate::error::{QueryError, Result};

/// Writes `batches` to the Parquet file `path` (zstd level 3), text dictionaries as
/// strings and timespans as `Int64` nanoseconds (Parquet has no duration type).
pub fn write_parquet(batches: &[RecordBatch], schema: &SchemaRef, path: &Path) -> Result<()> {
    let level = ZstdLevel::try_new(3).map_err(|e| QueryError::Invalid(format!("{}: {e}", path.display())))?;
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(level)).build();
    write_with(batches, schema, path, props)
}

/// [`write_parquet`] with the writer's properties given.
fn write_with(batches: &[RecordBatch], schema: &SchemaRef, path: &Path, props: WriterProperties) -> Result<()> {
    let (plain_schema, batches) = plain_text(batches, true)?;
    let schema = if batches.is_empty() { schema.clone() } else { plain_schema };
    let fail = |e: &dyn std::fmt::Display| QueryError::Invalid(format!("{}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let rows_per_group = props.max_row_group_row_count().unwrap_or(usize::MAX);
    // The ArrowWriter lays out the file (schema, Arrow metadata); its parts then
    // take the row groups one at a time.
    let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| fail(&e))?;
    let (mut file_writer, factory) = writer.into_serialized_writer().map_err(|e| fail(&e))?;
    for (index, group) in row_groups(&batches, rows_per_group).iter().enumerate() {
        let writers = factory.create_column_writers(index).map_err(|e| fail(&e))?;
        let leaves = leaf_columns(&schema, group, writers.len()).map_err(|e| fail(&e))?;
        let chunks = writers
            .into_par_iter()
            .zip(leaves)
            .map(|(writer, leaves)| encode(writer, &leaves))
            .collect::<std::result::Result<Vec<_>, ParquetError>>()
            .map_err(|e| fail(&e))?;
        let mut row_group = file_writer.next_row_group().map_err(|e| fail(&e))?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group).map_err(|e| fail(&e))?;
        }
        row_group.close().map_err(|e| fail(&e))?;
    }
    file_writer.close().map_err(|e| fail(&e))?;
    Ok(())
}

/// `batches` cut into row groups of at most `rows_per_group` rows (slices, no copy).
fn row_groups(batches: &[RecordBatch], rows_per_group: usize) -> Vec<Vec<RecordBatch>> {
    let mut groups = Vec::new();
    let mut group: Vec<RecordBatch> = Vec::new();
    let mut rows_in_group = 0;
    for batch in batches {
        let mut start = 0;
        while start < batch.num_rows() {
            let rows = (rows_per_group - rows_in_group).min(batch.num_rows() - start);
            group.push(batch.slice(start, rows));
            rows_in_group += rows;
            start += rows;
            if rows_in_group == rows_per_group {
                groups.push(std::mem::take(&mut group));
                rows_in_group = 0;
            }
        }
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// The leaf columns of `group`, one list per Parquet leaf (a nested field has
/// several), in the order of the row group's column writers.
fn leaf_columns(
    schema: &SchemaRef,
    group: &[RecordBatch],
    leaf_count: usize,
) -> std::result::Result<Vec<Vec<ArrowLeafColumn>>, ParquetError> {
    let mut leaves: Vec<Vec<ArrowLeafColumn>> = (0..leaf_count).map(|_| Vec::with_capacity(group.len())).collect();
    for batch in group {
        let mut leaf = 0;
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            for column_leaf in compute_leaves(field, column)? {
                let slot = leaves.get_mut(leaf).ok_or_else(|| {
                    ParquetError::General(format!("{} leaf columns for {leaf_count} column writers", leaf + 1))
                })?;
                slot.push(column_leaf);
                leaf += 1;
            }
        }
    }
    Ok(leaves)
}

/// One column chunk: `leaves` encoded and compressed by `writer`.
fn encode(
    mut writer: ArrowColumnWriter,
    leaves: &[ArrowLeafColumn],
) -> std::result::Result<parquet::arrow::arrow_writer::ArrowColumnChunk, ParquetError> {
    for leaf in leaves {
        writer.write(leaf)?;
    }
    writer.close()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int64Array, ListArray, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;

    fn batch(start: i64, rows: usize) -> RecordBatch {
        let values = start..start + rows as i64;
        let n: ArrayRef = Arc::new(Int64Array::from_iter_values(values.clone()));
        let x: ArrayRef = Arc::new(Float64Array::from_iter(values.clone().map(|v| (v % 3 != 0).then_some(v as f64))));
        let s: ArrayRef = Arc::new(StringArray::from_iter_values(values.clone().map(|v| format!("s{}", v % 7))));
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(
            values.map(|v| Some(vec![Some(v), None])),
        ));
        RecordBatch::try_from_iter([("n", n), ("x", x), ("s", s), ("list", list)]).unwrap()
    }

    #[test]
    fn row_groups_cut_batches_at_the_group_size() {
        let batches = [batch(0, 5), batch(5, 3), batch(8, 9)];
        let sizes: Vec<Vec<usize>> =
            row_groups(&batches, 4).iter().map(|g| g.iter().map(RecordBatch::num_rows).collect()).collect();
        assert_eq!(sizes, [vec![4], vec![1, 3], vec![4], vec![4], vec![1]]);
    }

    #[test]
    fn parallel_columns_read_back_as_written_with_nested_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.parquet");
        let batches = [batch(0, 1000), batch(1000, 1)];
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(300)).build();
        write_with(&batches, &batches[0].schema(), &path, props).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = reader.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, [300, 300, 300, 101]);
        let read: Vec<RecordBatch> = reader.build().unwrap().collect::<std::result::Result<_, _>>().unwrap();
        let read = datafusion::arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        let written = datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        assert_eq!(read, written);
    }
}
