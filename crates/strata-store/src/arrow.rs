//! Columns and tables to and from Arrow arrays and record batches.
//!
//! **Strata to Arrow** uses [`ColumnType::arrow_type`] and shares buffers: fixed-width
//! values, symbol keys and string offsets and data are handed to Arrow without a copy
//! (the arrays hold the same reference-counted [`arrow_buffer::Buffer`]s). Booleans are
//! the exception, packed into Arrow's bitmap; symbols carry their domain as the
//! dictionary's `Utf8` values. kdb+ nulls (see [`crate::nulls`]) become Arrow nulls:
//! the values stay as stored and a validity bitmap marks them, built only for columns
//! that hold a null; fields are nullable for every type but boolean and byte. Record
//! batch fields carry the column type's name under
//! [`TYPE_METADATA_KEY`], so minute, month and char columns (Arrow `Int32`, `Int32`
//! and `FixedSizeBinary(1)`) come back as what they were.
//!
//! **Arrow to Strata** maps each Arrow type to its natural column type:
//!
//! | Arrow | column type |
//! |---|---|
//! | Boolean | boolean |
//! | UInt8 | byte |
//! | Int8, Int16 | short |
//! | Int32, UInt16 | int |
//! | Int64, UInt32, UInt64 (error above `i64::MAX`) | long |
//! | Float16, Float32 / Float64 | real / float |
//! | Utf8, LargeUtf8, Utf8View, Dictionary(_, text), Null | symbol |
//! | Timestamp (any unit, any zone) | timestamp (ns since the Unix epoch, UTC) |
//! | Date32, Date64 | date |
//! | Duration (any unit) | timespan (ns) |
//! | Time32(s) | second |
//! | Time32(ms), Time64 | time (ms since midnight, truncated) |
//! | FixedSizeBinary(1) | char |
//!
//! A wanted type (from `strata.type` metadata or the caller) converts where that makes
//! sense: integers to any integer, float or temporal type (range-checked), temporal
//! types between units (timestamps to dates, Time64 to timespan, ...), floats between
//! widths, and text to any type by parsing its text form (ISO-8601 and kdb+ literals,
//! as CSV holds them; one-character text to char). Anything else is an error naming
//! the column, the Arrow type and the wanted type.
//!
//! **Nulls.** kdb+ has no validity bitmap but typed nulls, so an Arrow null becomes:
//! `i64::MIN` for long, timestamp and timespan; `i32::MIN` for int, date, month,
//! minute, second and time; `i16::MIN` for short; NaN for real and float; the empty
//! symbol or string for text; a space for char. Blank text converted to a non-text
//! type is null too. Booleans and bytes have no null: an Arrow null (or blank text)
//! for one is an error naming the column and row, never a 0. Both ways round, so a
//! table survives Arrow, Parquet and CSV with its nulls.

mod from_arrow;
pub(crate) mod text;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, FixedSizeBinaryArray, LargeStringArray,
    PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::column_data::Column;
use crate::error::{Result, StoreError};
use crate::nulls::column_validity;
use crate::table::Table;
use crate::types::ColumnType;
pub(crate) use from_arrow::{Failure, convert};
use from_arrow::{natural_type, null_column};

/// The field metadata key holding a column's Strata type name (`"minute"`, ...).
pub const TYPE_METADATA_KEY: &str = "strata.type";

/// `column` as an Arrow array of type [`ColumnType::arrow_type`], sharing the
/// column's buffers (booleans excepted, which are packed into a bitmap, and the
/// symbol domain, copied into the dictionary's values). kdb+ nulls are Arrow nulls:
/// a validity bitmap is built when the column holds one.
///
/// ```
/// use arrow_array::{Array, cast::AsArray, types::Int64Type};
/// use strata_store::{Column, ColumnType, arrow::column_to_arrow};
///
/// let column = Column::from_values(ColumnType::Long, vec![1i64, 2, 3]).unwrap();
/// let array = column_to_arrow(&column);
/// assert_eq!(array.as_primitive::<Int64Type>().values(), &[1, 2, 3]);
/// assert_eq!(array.to_data().buffers()[0].as_ptr(), column.values_buffer().as_ptr(), "no copy");
/// assert_eq!(array.null_count(), 0);
///
/// let with_null = Column::from_values(ColumnType::Long, vec![1i64, i64::MIN]).unwrap();
/// assert!(column_to_arrow(&with_null).is_null(1), "0N is an Arrow null");
/// ```
pub fn column_to_arrow(column: &Column) -> ArrayRef {
    fn primitive<T: ArrowPrimitiveType>(column: &Column, nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(column.values_buffer().clone(), 0, column.len()), nulls))
    }
    let nulls = column_validity(column);
    let array: ArrayRef = match column.ty() {
        ColumnType::Boolean => {
            let bytes = column.value_bytes();
            Arc::new(BooleanArray::new(BooleanBuffer::collect_bool(column.len(), |i| bytes[i] != 0), None))
        }
        ColumnType::Byte => primitive::<UInt8Type>(column, nulls),
        ColumnType::Short => primitive::<Int16Type>(column, nulls),
        ColumnType::Int | ColumnType::Month | ColumnType::Minute => primitive::<Int32Type>(column, nulls),
        ColumnType::Long => primitive::<Int64Type>(column, nulls),
        ColumnType::Real => primitive::<Float32Type>(column, nulls),
        ColumnType::Float => primitive::<Float64Type>(column, nulls),
        ColumnType::Timestamp => primitive::<TimestampNanosecondType>(column, nulls),
        ColumnType::Date => primitive::<Date32Type>(column, nulls),
        ColumnType::Timespan => primitive::<DurationNanosecondType>(column, nulls),
        ColumnType::Second => primitive::<Time32SecondType>(column, nulls),
        ColumnType::Time => primitive::<Time32MillisecondType>(column, nulls),
        ColumnType::Char => Arc::new(FixedSizeBinaryArray::new(1, column.values_buffer().clone(), nulls)),
        ColumnType::Symbol => {
            let keys = PrimitiveArray::<UInt32Type>::new(
                ScalarBuffer::new(column.values_buffer().clone(), 0, column.len()),
                nulls,
            );
            let domain = column.domain().expect("a symbol column has a domain");
            let values = Arc::new(StringArray::from_iter_values(domain.iter()));
            Arc::new(DictionaryArray::try_new(keys, values).expect("symbol keys index the domain"))
        }
        ColumnType::String => {
            let offsets = column.offsets_buffer().expect("a string column has offsets").clone();
            let offsets = OffsetBuffer::new(ScalarBuffer::new(offsets, 0, column.len() + 1));
            Arc::new(LargeStringArray::new(offsets, column.values_buffer().clone(), nulls))
        }
    };
    debug_assert_eq!(array.data_type(), &column.ty().arrow_type());
    array
}

/// `table` as one record batch sharing its buffers (see [`column_to_arrow`]); each
/// field is nullable when its type has a null and carries its column type under
/// [`TYPE_METADATA_KEY`].
pub fn table_to_record_batch(table: &Table) -> Result<RecordBatch> {
    let fields: Vec<Field> = table
        .iter()
        .map(|(name, column)| {
            let metadata = HashMap::from([(TYPE_METADATA_KEY.to_string(), column.ty().name().to_string())]);
            Field::new(name, column.ty().arrow_type(), column.ty().has_null()).with_metadata(metadata)
        })
        .collect();
    let arrays = table.columns().iter().map(column_to_arrow).collect();
    let options = RecordBatchOptions::new().with_row_count(Some(table.len()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(|e| StoreError::Invalid(format!("cannot make an Arrow record batch of the table: {e}")))
}

/// The column `name` held in `array`, as `field_type` if given (from metadata or the
/// caller), else as the natural type of the array's Arrow type (see the module doc).
/// Buffers are shared, not copied, when the layouts agree and there are no nulls:
/// fixed-width values, `UInt32` dictionary keys, and `LargeUtf8` offsets and data.
/// Arrow nulls become kdb+ nulls. Errors name the column, and the row or the Arrow
/// type and the wanted type.
pub fn column_from_arrow(name: &str, array: &dyn Array, field_type: Option<ColumnType>) -> Result<Column> {
    let target = match field_type {
        Some(ty) => ty,
        None => natural_type(array.data_type()).ok_or_else(|| no_natural_type(name, array.data_type()))?,
    };
    convert(array, target).map_err(|failure| describe(failure, name, array.data_type(), target, 0))
}

/// A table of the `batches` (all of `schema`), concatenated in order. Each column's
/// type is, first, its entry in `overrides`; then the field's [`TYPE_METADATA_KEY`]
/// metadata; then the natural type of its Arrow type. An override naming no column is
/// an error listing the columns. A single batch's buffers are shared as in
/// [`column_from_arrow`]; several batches are copied into one column each.
pub fn table_from_record_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    overrides: &[(String, ColumnType)],
) -> Result<Table> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    check_overrides(&names, overrides)?;
    if let Some(batch) = batches.iter().find(|b| b.num_columns() != names.len()) {
        return Err(StoreError::Invalid(format!(
            "a record batch has {} columns, the schema {} ({})",
            batch.num_columns(),
            names.len(),
            names.join(", ")
        )));
    }
    let mut columns = Vec::with_capacity(names.len());
    for (i, field) in schema.fields().iter().enumerate() {
        let name = field.name();
        let wanted = match overrides.iter().rev().find(|(n, _)| n == name) {
            Some((_, ty)) => Some(*ty),
            None => stored_type(field)?,
        };
        let target = match wanted {
            Some(ty) => ty,
            None => natural_type(field.data_type()).ok_or_else(|| no_natural_type(name, field.data_type()))?,
        };
        let mut parts = Vec::with_capacity(batches.len());
        let mut first_row = 0;
        for batch in batches {
            let array = batch.column(i);
            let part = convert(array.as_ref(), target)
                .map_err(|failure| describe(failure, name, array.data_type(), target, first_row))?;
            parts.push(part);
            first_row += batch.num_rows();
        }
        columns.push((name.clone(), concat_columns(target, &parts)?));
    }
    Table::new(columns)
}

/// Checks that every override names one of `names`.
pub(crate) fn check_overrides(names: &[&str], overrides: &[(String, ColumnType)]) -> Result<()> {
    match overrides.iter().find(|(name, _)| !names.contains(&name.as_str())) {
        Some((name, ty)) => Err(StoreError::Invalid(format!(
            "type override {name}={ty} names no column; columns are: {}",
            names.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The type recorded in a field's metadata, if any.
fn stored_type(field: &Field) -> Result<Option<ColumnType>> {
    match field.metadata().get(TYPE_METADATA_KEY) {
        None => Ok(None),
        Some(name) => ColumnType::from_name(name).map(Some).ok_or_else(|| {
            StoreError::Invalid(format!(
                "column {}: unknown {TYPE_METADATA_KEY} {name:?} in its metadata",
                field.name()
            ))
        }),
    }
}

fn no_natural_type(name: &str, data_type: &DataType) -> StoreError {
    StoreError::Invalid(format!("column {name}: Arrow type {data_type} has no Strata column type"))
}

/// The error for a conversion failure of column `name`, whose rows start at
/// `first_row` of the table.
fn describe(failure: Failure, name: &str, data_type: &DataType, target: ColumnType, first_row: usize) -> StoreError {
    StoreError::Invalid(match failure {
        Failure::Unsupported => format!("column {name}: Arrow type {data_type} cannot be read as a {target} column"),
        Failure::Value { row, value, problem } => {
            format!("column {name}: row {}: value {value:?} {problem}", first_row + row)
        }
    })
}

/// The converted batches of one column as one column of type `ty` (an empty one for
/// no batches). Symbols are re-keyed into a merged domain unless all share one.
pub(crate) fn concat_columns(ty: ColumnType, parts: &[Column]) -> Result<Column> {
    if let Some(part) = parts.iter().find(|p| p.ty() != ty) {
        return Err(StoreError::Invalid(format!("cannot append a {} column to a {ty} column", part.ty())));
    }
    match parts {
        [] => return Ok(null_column(ty, 0)),
        [one] => return Ok(one.clone()),
        _ => {}
    }
    match ty {
        ColumnType::String => {
            let rows: usize = parts.iter().map(Column::len).sum();
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0i64);
            let mut data = Vec::with_capacity(parts.iter().map(|p| p.value_bytes().len()).sum());
            for part in parts {
                let base = data.len() as i64;
                offsets.extend(part.offsets().expect("string offsets")[1..].iter().map(|o| o + base));
                data.extend_from_slice(part.value_bytes());
            }
            Column::from_string_buffers(Buffer::from_vec(offsets), Buffer::from_vec(data))
        }
        ColumnType::Symbol => {
            let first = parts[0].domain().expect("symbol domain");
            let mut keys = Vec::with_capacity(parts.iter().map(Column::len).sum());
            if parts.iter().all(|p| Arc::ptr_eq(p.domain().expect("symbol domain"), first)) {
                parts.iter().for_each(|p| keys.extend_from_slice(p.values::<u32>()));
                return Column::from_symbol_keys(keys, first.clone());
            }
            let mut index = HashMap::<&str, u32>::new();
            let mut domain = Vec::new();
            for part in parts {
                let rekey: Vec<u32> = part
                    .domain()
                    .expect("symbol domain")
                    .iter()
                    .map(|s| {
                        *index.entry(s).or_insert_with(|| {
                            domain.push(s.clone());
                            (domain.len() - 1) as u32
                        })
                    })
                    .collect();
                keys.extend(part.values::<u32>().iter().map(|k| rekey[*k as usize]));
            }
            Column::from_symbol_keys(keys, Arc::new(domain))
        }
        _ => {
            let mut bytes = MutableBuffer::with_capacity(parts.iter().map(|p| p.value_bytes().len()).sum());
            parts.iter().for_each(|p| bytes.extend_from_slice(p.value_bytes()));
            Column::from_buffer(ty, bytes.into(), None)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
