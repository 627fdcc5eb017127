//! q tables to and from Strata tables and Arrow record batches.
//!
//! Each vector type maps to the Strata column type of the same kdb+ number; a
//! general list of char vectors is a string column. Temporal values move between
//! kdb+'s 2000.01.01 epoch and Strata's Unix epoch (timestamps, dates, months);
//! nulls and infinities (the extreme values) stay what they are. GUID and datetime
//! vectors have no Strata column type and are refused with the column's name.
//!
//! ```
//! use strata_ipc::{K, Table, Vector, arrow::{table_to_record_batch, table_from_record_batch}};
//! let t = Table::new(vec![
//!     ("sym".into(), K::symbols(["a", "b"])),
//!     ("px".into(), K::vector(Vector::Float(vec![1.5, 2.5]))),
//! ]).unwrap();
//! let batch = table_to_record_batch(&t).unwrap();
//! assert_eq!(batch.num_rows(), 2);
//! assert_eq!(table_from_record_batch(&batch).unwrap(), t);
//! ```

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt8Type;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use strata_store::{Column, ColumnType};

use crate::error::IpcError;
use crate::value::{EPOCH_OFFSET_DAYS, EPOCH_OFFSET_MONTHS, EPOCH_OFFSET_NANOS, K, Table, Vector, type_name};

/// Shifts a value between epochs unless it is a null or an infinity (the minimum,
/// maximum and `-max` sentinels), which mean the same in both.
macro_rules! shift {
    ($values:expr, $t:ty, $offset:expr) => {
        $values
            .iter()
            .map(|&v: &$t| if v == <$t>::MIN || v == <$t>::MAX || v == -<$t>::MAX { v } else { v + $offset })
            .collect::<Vec<$t>>()
    };
}

/// A q column (vector, or list of char vectors) as a Strata column.
pub fn column_to_store(name: &str, column: &K) -> Result<Column, IpcError> {
    let store = |r: strata_store::Result<Column>| r.map_err(|e| IpcError::Convert(format!("column {name}: {e}")));
    let vector = match column {
        K::Vector(v, _) => v,
        K::List(items) => {
            let strings: Option<Vec<&[u8]>> = items
                .iter()
                .map(|item| match item {
                    K::Vector(Vector::Char(c), _) => Some(c.as_slice()),
                    _ => None,
                })
                .collect();
            let strings = strings.ok_or_else(|| {
                IpcError::Convert(format!("column {name}: a general list converts only when every item is a string"))
            })?;
            return Ok(Column::from_strings(strings.iter().map(|s| String::from_utf8_lossy(s))));
        }
        other => return Err(IpcError::Convert(format!("column {name}: a {} is not a column", other.describe()))),
    };
    match vector {
        Vector::Boolean(v) => store(Column::from_values(ColumnType::Boolean, v.iter().map(|&b| b as u8).collect())),
        Vector::Byte(v) => store(Column::from_values(ColumnType::Byte, v.clone())),
        Vector::Short(v) => store(Column::from_values(ColumnType::Short, v.clone())),
        Vector::Int(v) => store(Column::from_values(ColumnType::Int, v.clone())),
        Vector::Long(v) => store(Column::from_values(ColumnType::Long, v.clone())),
        Vector::Real(v) => store(Column::from_values(ColumnType::Real, v.clone())),
        Vector::Float(v) => store(Column::from_values(ColumnType::Float, v.clone())),
        Vector::Char(v) => store(Column::from_values(ColumnType::Char, v.clone())),
        Vector::Symbol(v) => Ok(Column::from_symbols(v)),
        Vector::Timestamp(v) => store(Column::from_values(ColumnType::Timestamp, shift!(v, i64, EPOCH_OFFSET_NANOS))),
        Vector::Month(v) => store(Column::from_values(ColumnType::Month, shift!(v, i32, EPOCH_OFFSET_MONTHS))),
        Vector::Date(v) => store(Column::from_values(ColumnType::Date, shift!(v, i32, EPOCH_OFFSET_DAYS))),
        Vector::Timespan(v) => store(Column::from_values(ColumnType::Timespan, v.clone())),
        Vector::Minute(v) => store(Column::from_values(ColumnType::Minute, v.clone())),
        Vector::Second(v) => store(Column::from_values(ColumnType::Second, v.clone())),
        Vector::Time(v) => store(Column::from_values(ColumnType::Time, v.clone())),
        Vector::Guid(_) | Vector::Datetime(_) => Err(IpcError::Convert(format!(
            "column {name}: {} vectors have no Strata column type",
            type_name(vector.code())
        ))),
    }
}

/// A Strata column as a q column (strings become a list of char vectors).
pub fn column_from_store(column: &Column) -> K {
    let n = column.len();
    let vector = match column.ty() {
        ColumnType::String => {
            return K::List((0..n).map(|i| K::string(column.string(i))).collect());
        }
        ColumnType::Symbol => Vector::Symbol((0..n).map(|i| column.symbol(i).to_string()).collect()),
        ColumnType::Boolean => Vector::Boolean(column.values::<u8>().iter().map(|&b| b != 0).collect()),
        ColumnType::Byte => Vector::Byte(column.values::<u8>().to_vec()),
        ColumnType::Char => Vector::Char(column.values::<u8>().to_vec()),
        ColumnType::Short => Vector::Short(column.values::<i16>().to_vec()),
        ColumnType::Int => Vector::Int(column.values::<i32>().to_vec()),
        ColumnType::Long => Vector::Long(column.values::<i64>().to_vec()),
        ColumnType::Real => Vector::Real(column.values::<f32>().to_vec()),
        ColumnType::Float => Vector::Float(column.values::<f64>().to_vec()),
        ColumnType::Timestamp => Vector::Timestamp(shift!(column.values::<i64>(), i64, -EPOCH_OFFSET_NANOS)),
        ColumnType::Month => Vector::Month(shift!(column.values::<i32>(), i32, -EPOCH_OFFSET_MONTHS)),
        ColumnType::Date => Vector::Date(shift!(column.values::<i32>(), i32, -EPOCH_OFFSET_DAYS)),
        ColumnType::Timespan => Vector::Timespan(column.values::<i64>().to_vec()),
        ColumnType::Minute => Vector::Minute(column.values::<i32>().to_vec()),
        ColumnType::Second => Vector::Second(column.values::<i32>().to_vec()),
        ColumnType::Time => Vector::Time(column.values::<i32>().to_vec()),
    };
    K::vector(vector)
}

/// A q table as a Strata table.
pub fn table_to_store(table: &Table) -> Result<strata_store::Table, IpcError> {
    let columns = table
        .names()
        .iter()
        .zip(table.columns())
        .map(|(name, column)| Ok((name.clone(), column_to_store(name, column)?)))
        .collect::<Result<Vec<_>, IpcError>>()?;
    strata_store::Table::new(columns).map_err(|e| IpcError::Convert(e.to_string()))
}

/// A Strata table as a q table.
pub fn table_from_store(table: &strata_store::Table) -> Table {
    let columns = table.iter().map(|(name, column)| (name.to_string(), column_from_store(column))).collect();
    Table::new(columns).expect("a Strata table's columns have equal lengths")
}

/// A q table as one Arrow record batch (through [`table_to_store`]).
pub fn table_to_record_batch(table: &Table) -> Result<RecordBatch, IpcError> {
    strata_store::arrow::table_to_record_batch(&table_to_store(table)?).map_err(|e| IpcError::Convert(e.to_string()))
}

/// An Arrow record batch as a q table (Arrow types map as `strata_store::arrow` says).
pub fn table_from_record_batch(batch: &RecordBatch) -> Result<Table, IpcError> {
    let batch = zero_untyped_nulls(batch)?;
    let table = strata_store::arrow::table_from_record_batches(&batch.schema(), std::slice::from_ref(&batch), &[])
        .map_err(|e| IpcError::Convert(e.to_string()))?;
    Ok(table_from_store(&table))
}

/// `batch` with the nulls of its boolean and `UInt8` (byte) columns as `0b` and
/// `0x00`. Other nulls become kdb+'s typed nulls (`0N`, `0n`, `` ` ``, ...) on the
/// way to q, but kdb+ has no null for booleans and bytes and fills such gaps with 0
/// itself (an outer join's missing booleans are `0b`), so a q client gets what q
/// would give; the store refuses them instead, as an import must not invent a value.
fn zero_untyped_nulls(batch: &RecordBatch) -> Result<RecordBatch, IpcError> {
    if !batch
        .columns()
        .iter()
        .any(|c| matches!(c.data_type(), DataType::Boolean | DataType::UInt8) && c.null_count() > 0)
    {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .map(|column| -> ArrayRef {
            match (column.data_type(), column.nulls()) {
                (DataType::Boolean, Some(nulls)) => {
                    let values = column.as_boolean().values() & nulls.inner();
                    Arc::new(BooleanArray::new(values, None))
                }
                (DataType::UInt8, Some(_)) => {
                    let bytes = column.as_primitive::<UInt8Type>();
                    Arc::new(bytes.iter().map(|b| Some(b.unwrap_or(0))).collect::<UInt8Array>())
                }
                _ => column.clone(),
            }
        })
        .collect();
    RecordBatch::try_new(batch.schema(), columns).map_err(|e| IpcError::Convert(e.to_string()))
}

/// Query results (record batches of `schema`, in order) as one q table, typed for q
/// users: text columns become symbols, except `LargeUtf8` (Strata's string columns)
/// which become lists of strings and one-byte text dictionaries (how SQL sees Strata's
/// char columns) which become chars; other types map as `strata_store::arrow` says.
/// A type with no q counterpart is an error naming the column.
///
/// Column names become q identifiers as kdb+'s `.Q.id` makes them (`count(*)` is
/// `count`, `1x` is `a1x`), made distinct with a number where two collide, so an
/// unaliased SQL expression is a column a q client can use.
pub fn table_from_record_batches(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Table, IpcError> {
    let schema = &q_identifiers(schema);
    let batches = batches
        .iter()
        .map(|b| {
            let renamed = RecordBatch::try_new(schema.clone(), b.columns().to_vec())
                .map_err(|e| IpcError::Convert(e.to_string()))?;
            zero_untyped_nulls(&renamed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let batches = batches.as_slice();
    let convert = |overrides: &[(String, ColumnType)]| {
        strata_store::arrow::table_from_record_batches(schema, batches, overrides)
            .map_err(|e| IpcError::Convert(e.to_string()))
    };
    let mut overrides = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let ty = match field.data_type() {
            DataType::LargeUtf8 => ColumnType::String,
            // A one-byte dictionary of longer texts (a symbol with few values) is
            // not a char column: it stays symbols.
            DataType::Dictionary(key, value)
                if **key == DataType::UInt8
                    && **value == DataType::Utf8
                    && batches.iter().all(|b| single_byte_texts(b.column(i))) =>
            {
                ColumnType::Char
            }
            _ => continue,
        };
        overrides.push((field.name().clone(), ty));
    }
    let table = convert(&overrides)?;
    Ok(table_from_store(&table))
}

/// `schema` with each field named as a q identifier ([`q_identifier`]), distinct.
fn q_identifiers(schema: &SchemaRef) -> SchemaRef {
    let mut taken: Vec<String> = Vec::with_capacity(schema.fields().len());
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let base = q_identifier(field.name());
            let name =
                (0..).map(|n| if n == 0 { base.clone() } else { format!("{base}{n}") }).find(|c| !taken.contains(c));
            let name = name.expect("an unbounded range has a free name");
            taken.push(name.clone());
            field.as_ref().clone().with_name(name)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `name` as kdb+'s `.Q.id` makes a column name: characters other than letters,
/// digits and `_` removed, and `a` put in front of a name that would start with a
/// digit or `_` or be empty.
pub fn q_identifier(name: &str) -> String {
    let kept: String = name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    match kept.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => kept,
        _ => format!("a{kept}"),
    }
}

/// Whether every value of a text dictionary column is a q char: at most one
/// character, a Latin-1 code point (how Strata's char columns read in SQL).
fn single_byte_texts(column: &ArrayRef) -> bool {
    let Some(dictionary) = column.as_any_dictionary_opt() else { return false };
    let Some(values) = dictionary.values().as_string_opt::<i32>() else { return false };
    values.iter().flatten().all(|t| {
        let mut chars = t.chars();
        chars.next().is_none_or(|c| (c as u32) < 256) && chars.next().is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_shift_but_nulls_stay() {
        let t = Table::new(vec![
            ("time".into(), K::vector(Vector::Timestamp(vec![0, i64::MIN, i64::MAX]))),
            ("date".into(), K::vector(Vector::Date(vec![0, i32::MIN, 1]))),
            ("month".into(), K::vector(Vector::Month(vec![0, 12, i32::MIN]))),
        ])
        .unwrap();
        let store = table_to_store(&t).unwrap();
        assert_eq!(store.column("time").unwrap().values::<i64>(), [EPOCH_OFFSET_NANOS, i64::MIN, i64::MAX]);
        assert_eq!(store.column("date").unwrap().values::<i32>(), [10_957, i32::MIN, 10_958]);
        assert_eq!(store.column("month").unwrap().values::<i32>(), [360, 372, i32::MIN]);
        assert_eq!(table_from_store(&store), t);
    }

    #[test]
    fn every_store_type_round_trips_and_guids_are_refused() {
        let columns = vec![
            ("b".into(), K::vector(Vector::Boolean(vec![true, false]))),
            ("x".into(), K::vector(Vector::Byte(vec![1, 255]))),
            ("h".into(), K::vector(Vector::Short(vec![-1, i16::MIN]))),
            ("i".into(), K::vector(Vector::Int(vec![7, 8]))),
            ("j".into(), K::vector(Vector::Long(vec![7, i64::MIN]))),
            ("e".into(), K::vector(Vector::Real(vec![1.5, f32::NAN]))),
            ("f".into(), K::vector(Vector::Float(vec![2.5, -0.0]))),
            ("c".into(), K::vector(Vector::Char(b"ab".to_vec()))),
            ("s".into(), K::symbols(["IBM", ""])),
            ("n".into(), K::vector(Vector::Timespan(vec![1, 2]))),
            ("u".into(), K::vector(Vector::Minute(vec![1, 2]))),
            ("v".into(), K::vector(Vector::Second(vec![1, 2]))),
            ("t".into(), K::vector(Vector::Time(vec![1, 2]))),
            ("str".into(), K::List(vec![K::string("hello"), K::string("")])),
        ];
        let t = Table::new(columns).unwrap();
        let back = table_from_record_batch(&table_to_record_batch(&t).unwrap()).unwrap();
        // NaN != NaN, so compare the encoded bytes instead of the values.
        assert_eq!(crate::to_bytes(&K::Table(back)), crate::to_bytes(&K::Table(t)));
        let guid = Table::new(vec![("g".into(), K::vector(Vector::Guid(vec![[0; 16]])))]).unwrap();
        let err = table_to_store(&guid).unwrap_err().to_string();
        assert!(err.contains("column g") && err.contains("guid"), "{err}");
        let mixed = Table::new(vec![("m".into(), K::List(vec![K::string("a"), K::symbol("b")]))]).unwrap();
        assert!(table_to_store(&mixed).unwrap_err().to_string().contains("column m"));
    }

    #[test]
    fn query_results_keep_chars_and_strings_and_may_be_empty() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, DictionaryArray, Float64Array, LargeStringArray, StringArray, UInt8Array};
        use arrow_schema::{Field, Schema};

        let chars: ArrayRef = Arc::new(
            DictionaryArray::try_new(UInt8Array::from(vec![0, 1]), Arc::new(StringArray::from(vec!["N", "P"])))
                .unwrap(),
        );
        let words: ArrayRef = Arc::new(
            DictionaryArray::try_new(UInt8Array::from(vec![1, 0]), Arc::new(StringArray::from(vec!["IBM", "MSFT"])))
                .unwrap(),
        );
        let columns: Vec<ArrayRef> = vec![
            chars,
            words,
            Arc::new(LargeStringArray::from(vec!["a note", ""])),
            Arc::new(StringArray::from(vec!["x", "y"])),
            Arc::new(Float64Array::from(vec![Some(1.5), None])),
        ];
        let schema = Arc::new(Schema::new(
            ["ex", "sym", "note", "label", "px"]
                .iter()
                .zip(&columns)
                .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let t = table_from_record_batches(&schema, &[batch.clone(), batch]).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.column("ex"), Some(&K::vector(Vector::Char(b"NPNP".to_vec()))));
        assert_eq!(t.column("sym"), Some(&K::symbols(["MSFT", "IBM", "MSFT", "IBM"])));
        assert_eq!(t.column("note").unwrap().count(), 4);
        assert!(matches!(t.column("note"), Some(K::List(items)) if items[0] == K::string("a note")));
        assert_eq!(t.column("label"), Some(&K::symbols(["x", "y", "x", "y"])));
        let Some(K::Vector(Vector::Float(px), _)) = t.column("px") else { panic!() };
        assert!(px[0] == 1.5 && px[1].is_nan(), "an Arrow null is q's float null");
        let empty = table_from_record_batches(&schema, &[]).unwrap();
        assert_eq!((empty.len(), empty.names().len()), (0, 5));
    }

    #[test]
    fn sql_nulls_reach_q_as_typed_nulls_and_as_0_for_booleans_and_bytes() {
        use arrow_array::{DurationNanosecondArray, Int64Array, StringArray};
        use arrow_schema::{Field, Schema};

        let columns: Vec<ArrayRef> = vec![
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(true)])),
            Arc::new(UInt8Array::from(vec![None, Some(7), Some(9)])),
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(DurationNanosecondArray::from(vec![None, Some(5), None])),
            Arc::new(StringArray::from(vec![None, Some("x"), Some("y")])),
        ];
        let schema = Arc::new(Schema::new(
            ["b", "x", "j", "n", "s"]
                .iter()
                .zip(&columns)
                .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let t = table_from_record_batches(&schema, std::slice::from_ref(&batch)).unwrap();
        assert_eq!(t.column("b"), Some(&K::vector(Vector::Boolean(vec![true, false, true]))));
        assert_eq!(t.column("x"), Some(&K::vector(Vector::Byte(vec![0, 7, 9]))));
        assert_eq!(t.column("j"), Some(&K::vector(Vector::Long(vec![1, i64::MIN, 3]))), "0N");
        assert_eq!(t.column("n"), Some(&K::vector(Vector::Timespan(vec![i64::MIN, 5, i64::MIN]))), "0Nn");
        assert_eq!(t.column("s"), Some(&K::symbols(["", "x", "y"])), "the null symbol");
        assert_eq!(table_from_record_batch(&batch).unwrap(), t);
    }

    #[test]
    fn sql_column_names_become_distinct_q_identifiers() {
        assert_eq!(q_identifier("count(*)"), "count");
        assert_eq!(q_identifier("sum(t.size)"), "sumtsize");
        assert_eq!(q_identifier("1x"), "a1x");
        assert_eq!(q_identifier("_x"), "a_x");
        assert_eq!(q_identifier("*"), "a");
        assert_eq!(q_identifier("vwap"), "vwap");
        let schema = Arc::new(Schema::new(vec![
            Field::new("count(*)", DataType::Int64, false),
            Field::new("count", DataType::Int64, false),
            Field::new("count()", DataType::Int64, false),
        ]));
        let columns: Vec<ArrayRef> =
            (0..3).map(|i| Arc::new(arrow_array::Int64Array::from(vec![i])) as ArrayRef).collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let table = table_from_record_batches(&schema, &[batch]).unwrap();
        assert_eq!(table.names(), ["count", "count1", "count2"]);
    }
}
