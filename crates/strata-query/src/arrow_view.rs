//! How Strata columns look to SQL, and Arrow arrays over their stored values.
//!
//! Fixed-width values keep the store's buffers, so a plain (memory-mapped) column
//! reaches Arrow without a copy. Two types change shape for SQL:
//! - symbols are `Dictionary(UInt32, Utf8)`: the stored `u32` keys are the dictionary
//!   keys and the database's sym list, built once per table, is the dictionary, so
//!   `sym = 'IBM'` compares text while the data stays keys;
//! - chars are `Dictionary(UInt8, Utf8)` over a fixed 256-entry dictionary (byte `b`
//!   is the character with code point `b`), so `ex = 'N'` works on the stored bytes
//!   without a copy. (The store's own Arrow form, `FixedSizeBinary(1)`, does not
//!   compare with text in SQL.)
//!
//! kdb+'s typed nulls (see [`strata_store::nulls`]) are SQL NULLs: arrays carry a
//! validity bitmap where a value is null, built only when the store's null counts do
//! not already say the rows hold none, and only when one is found.

use std::sync::{Arc, OnceLock};

use arrow_array::types::*;
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, LargeStringArray, PrimitiveArray, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use strata_store::nulls::{fixed_validity, string_validity, symbol_validity};
use strata_store::{ColumnType, SymbolDomain};

/// The field SQL sees for a column `name` of type `ty`: nullable when the type has a
/// null.
pub fn sql_field(name: &str, ty: ColumnType) -> Field {
    Field::new(name, sql_type(ty), ty.has_null())
}

/// The Arrow type SQL sees for a column of type `ty`.
pub fn sql_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Symbol => DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
        ColumnType::Char => DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8)),
        other => other.arrow_type(),
    }
}

/// The dictionary of a table's symbol columns.
#[derive(Clone, Debug)]
pub struct SymbolDictionary {
    /// The sym list as one `Utf8` array, shared by every batch.
    pub values: ArrayRef,
    /// The key of the empty symbol (kdb+'s null symbol), if the list has one.
    pub empty_key: Option<u32>,
}

/// The dictionary of the symbols of `domain`.
pub fn symbol_values(domain: &SymbolDomain) -> SymbolDictionary {
    SymbolDictionary {
        values: Arc::new(StringArray::from_iter_values(domain.iter())),
        empty_key: strata_store::nulls::empty_symbol_key(domain),
    }
}

/// The 256 one-character strings that char columns index.
fn char_values() -> ArrayRef {
    static VALUES: OnceLock<ArrayRef> = OnceLock::new();
    VALUES
        .get_or_init(|| Arc::new(StringArray::from_iter_values((0u8..=255).map(|b| char::from(b).to_string()))))
        .clone()
}

/// Values of one column over a row range, as read from the store.
pub enum StoredValues {
    /// Little-endian fixed-width values (symbol keys for symbols).
    Fixed(Buffer),
    /// A string column: `rows + 1` offsets starting at 0, and the UTF-8 bytes.
    Strings {
        /// Offsets, rebased to start at 0.
        offsets: Buffer,
        /// The bytes the offsets index.
        data: Buffer,
    },
}

impl StoredValues {
    /// The values of several row ranges of one column, one after another (the
    /// scan gathers short ranges, such as a time window in every symbol's run, into
    /// one batch rather than a batch per range).
    pub fn concat(pieces: Vec<StoredValues>) -> StoredValues {
        let mut fixed = MutableBuffer::new(0);
        let (mut offsets, mut data) = (vec![0i64], MutableBuffer::new(0));
        let mut strings = false;
        for piece in pieces {
            match piece {
                StoredValues::Fixed(values) => fixed.extend_from_slice(values.as_slice()),
                StoredValues::Strings { offsets: piece_offsets, data: piece_data } => {
                    strings = true;
                    let base = data.len() as i64;
                    offsets.extend(piece_offsets.typed_data::<i64>()[1..].iter().map(|o| o + base));
                    data.extend_from_slice(piece_data.as_slice());
                }
            }
        }
        if strings {
            StoredValues::Strings { offsets: Buffer::from_vec(offsets), data: data.into() }
        } else {
            StoredValues::Fixed(fixed.into())
        }
    }
}

/// The Arrow array of `rows` values of type `ty`, sharing `values`' buffers.
/// `symbols` is the table's symbol dictionary. `may_hold_nulls`: whether the rows
/// may hold kdb+ nulls (false when the column file's null counts say they hold
/// none; then no value is looked at for them). Fails (with the reason) when a symbol
/// key lies outside the sym list or string data is not UTF-8.
pub fn to_array(
    ty: ColumnType,
    rows: usize,
    values: StoredValues,
    symbols: &SymbolDictionary,
    may_hold_nulls: bool,
) -> Result<ArrayRef, String> {
    fn primitive<T: ArrowPrimitiveType>(buffer: Buffer, rows: usize, nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buffer, 0, rows), nulls))
    }
    let buffer = match values {
        StoredValues::Strings { offsets, data } => {
            let offsets = OffsetBuffer::new(ScalarBuffer::<i64>::new(offsets, 0, rows + 1));
            let nulls = if may_hold_nulls { string_validity(&offsets) } else { None };
            return LargeStringArray::try_new(offsets, data, nulls)
                .map(|a| Arc::new(a) as ArrayRef)
                .map_err(|e| e.to_string());
        }
        StoredValues::Fixed(buffer) => buffer,
    };
    let nulls = match ty {
        _ if !may_hold_nulls => None,
        ColumnType::Symbol => symbol_validity(&buffer.typed_data::<u32>()[..rows], symbols.empty_key),
        _ => fixed_validity(ty, &buffer.as_slice()[..rows * ty.width()]),
    };
    Ok(match ty {
        ColumnType::Boolean => {
            let bytes = buffer.as_slice();
            Arc::new(BooleanArray::new(BooleanBuffer::collect_bool(rows, |i| bytes[i] != 0), None))
        }
        ColumnType::Byte => primitive::<UInt8Type>(buffer, rows, nulls),
        ColumnType::Short => primitive::<Int16Type>(buffer, rows, nulls),
        ColumnType::Int | ColumnType::Month | ColumnType::Minute => primitive::<Int32Type>(buffer, rows, nulls),
        ColumnType::Long => primitive::<Int64Type>(buffer, rows, nulls),
        ColumnType::Real => primitive::<Float32Type>(buffer, rows, nulls),
        ColumnType::Float => primitive::<Float64Type>(buffer, rows, nulls),
        ColumnType::Timestamp => primitive::<TimestampNanosecondType>(buffer, rows, nulls),
        ColumnType::Date => primitive::<Date32Type>(buffer, rows, nulls),
        ColumnType::Timespan => primitive::<DurationNanosecondType>(buffer, rows, nulls),
        ColumnType::Second => primitive::<Time32SecondType>(buffer, rows, nulls),
        ColumnType::Time => primitive::<Time32MillisecondType>(buffer, rows, nulls),
        ColumnType::Char => {
            let keys = PrimitiveArray::<UInt8Type>::new(ScalarBuffer::new(buffer, 0, rows), nulls);
            // Every byte indexes the 256-entry dictionary: no check needed.
            Arc::new(unsafe { DictionaryArray::new_unchecked(keys, char_values()) })
        }
        ColumnType::Symbol => {
            let keys = PrimitiveArray::<UInt32Type>::new(ScalarBuffer::new(buffer, 0, rows), nulls);
            let symbols = &symbols.values;
            let limit = symbols.len() as u32;
            if let Some(row) = keys.values().iter().position(|k| *k >= limit) {
                return Err(format!(
                    "symbol key {} at row {row} of the range is outside the sym list of {limit} symbols",
                    keys.value(row)
                ));
            }
            // SAFETY: every key was checked against the dictionary's length above.
            Arc::new(unsafe { DictionaryArray::new_unchecked(keys, symbols.clone()) })
        }
        ColumnType::String => unreachable!("strings arrive as StoredValues::Strings"),
    })
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;

    use super::*;

    #[test]
    fn chars_and_symbols_become_text_dictionaries_over_the_same_bytes() {
        let bytes = Buffer::from_vec(b"NPQ".to_vec());
        let ptr = bytes.as_ptr();
        let array =
            to_array(ColumnType::Char, 3, StoredValues::Fixed(bytes), &symbol_values(&Arc::new(vec![])), true).unwrap();
        let dict = array.as_dictionary::<UInt8Type>();
        assert_eq!(dict.keys().values().inner().as_ptr(), ptr, "no copy");
        let text = datafusion::arrow::compute::cast(&array, &DataType::Utf8).unwrap();
        assert_eq!(text.as_string::<i32>().value(1), "P");

        let symbols = symbol_values(&Arc::new(vec!["A".into(), "B".into()]));
        let keys = Buffer::from_vec(vec![1u32, 0, 1]);
        let array = to_array(ColumnType::Symbol, 3, StoredValues::Fixed(keys), &symbols, true).unwrap();
        assert_eq!(array.data_type(), &sql_type(ColumnType::Symbol));
        let bad = to_array(ColumnType::Symbol, 1, StoredValues::Fixed(Buffer::from_vec(vec![7u32])), &symbols, true);
        assert!(bad.unwrap_err().contains("symbol key 7 at row 0"));
    }

    #[test]
    fn kdb_nulls_are_sql_nulls_unless_the_store_says_there_are_none() {
        let none = symbol_values(&Arc::new(vec![]));
        let longs = || StoredValues::Fixed(Buffer::from_vec(vec![1i64, i64::MIN, 3]));
        let array = to_array(ColumnType::Timespan, 3, longs(), &none, true).unwrap();
        assert_eq!((array.null_count(), array.is_null(1)), (1, true));
        assert_eq!(array.data_type(), &sql_type(ColumnType::Timespan));
        let unchecked = to_array(ColumnType::Long, 3, longs(), &none, false).unwrap();
        assert!(unchecked.nulls().is_none(), "counts said none: no value is looked at");
        let clean = to_array(ColumnType::Long, 1, StoredValues::Fixed(Buffer::from_vec(vec![5i64])), &none, true);
        assert!(clean.unwrap().nulls().is_none(), "no bitmap without a null");

        let symbols = symbol_values(&Arc::new(vec!["A".into(), String::new()]));
        let keys = StoredValues::Fixed(Buffer::from_vec(vec![1u32, 0]));
        let array = to_array(ColumnType::Symbol, 2, keys, &symbols, true).unwrap();
        assert!(array.is_null(0) && array.is_valid(1));
        let chars = StoredValues::Fixed(Buffer::from_vec(b"A ".to_vec()));
        assert!(to_array(ColumnType::Char, 2, chars, &none, true).unwrap().is_null(1));
        let strings = StoredValues::Strings {
            offsets: Buffer::from_vec(vec![0i64, 0, 2]),
            data: Buffer::from_vec(b"ab".to_vec()),
        };
        assert!(to_array(ColumnType::String, 2, strings, &none, true).unwrap().is_null(0));
        let floats = StoredValues::Fixed(Buffer::from_vec(vec![f64::NAN, 1.0]));
        assert!(to_array(ColumnType::Float, 2, floats, &none, true).unwrap().is_null(0), "NaN is null");
        let bools = StoredValues::Fixed(Buffer::from_vec(vec![0u8, 1]));
        assert!(to_array(ColumnType::Boolean, 2, bools, &none, true).unwrap().nulls().is_none());
        assert!(!sql_field("b", ColumnType::Boolean).is_nullable() && sql_field("x", ColumnType::Long).is_nullable());
    }
}
