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

use std::sync::{Arc, OnceLock};

use arrow_array::types::*;
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, LargeStringArray, PrimitiveArray, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;
use strata_store::{ColumnType, SymbolDomain};

/// The Arrow type SQL sees for a column of type `ty`.
pub fn sql_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Symbol => DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
        ColumnType::Char => DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8)),
        other => other.arrow_type(),
    }
}

/// The dictionary of a table's symbol columns: the sym list as one `Utf8` array,
/// shared by every batch.
pub fn symbol_values(domain: &SymbolDomain) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(domain.iter()))
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

/// The Arrow array of `rows` values of type `ty`, sharing `values`' buffers.
/// `symbols` is the table's symbol dictionary. Fails (with the reason) when a symbol
/// key lies outside the sym list or string data is not UTF-8.
pub fn to_array(ty: ColumnType, rows: usize, values: StoredValues, symbols: &ArrayRef) -> Result<ArrayRef, String> {
    fn primitive<T: ArrowPrimitiveType>(buffer: Buffer, rows: usize) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buffer, 0, rows), None))
    }
    let buffer = match values {
        StoredValues::Strings { offsets, data } => {
            let offsets = OffsetBuffer::new(ScalarBuffer::<i64>::new(offsets, 0, rows + 1));
            return LargeStringArray::try_new(offsets, data, None)
                .map(|a| Arc::new(a) as ArrayRef)
                .map_err(|e| e.to_string());
        }
        StoredValues::Fixed(buffer) => buffer,
    };
    Ok(match ty {
        ColumnType::Boolean => {
            let bytes = buffer.as_slice();
            Arc::new(BooleanArray::new(BooleanBuffer::collect_bool(rows, |i| bytes[i] != 0), None))
        }
        ColumnType::Byte => primitive::<UInt8Type>(buffer, rows),
        ColumnType::Short => primitive::<Int16Type>(buffer, rows),
        ColumnType::Int | ColumnType::Month | ColumnType::Minute => primitive::<Int32Type>(buffer, rows),
        ColumnType::Long => primitive::<Int64Type>(buffer, rows),
        ColumnType::Real => primitive::<Float32Type>(buffer, rows),
        ColumnType::Float => primitive::<Float64Type>(buffer, rows),
        ColumnType::Timestamp => primitive::<TimestampNanosecondType>(buffer, rows),
        ColumnType::Date => primitive::<Date32Type>(buffer, rows),
        ColumnType::Timespan => primitive::<DurationNanosecondType>(buffer, rows),
        ColumnType::Second => primitive::<Time32SecondType>(buffer, rows),
        ColumnType::Time => primitive::<Time32MillisecondType>(buffer, rows),
        ColumnType::Char => {
            let keys = PrimitiveArray::<UInt8Type>::new(ScalarBuffer::new(buffer, 0, rows), None);
            // Every byte indexes the 256-entry dictionary: no check needed.
            Arc::new(unsafe { DictionaryArray::new_unchecked(keys, char_values()) })
        }
        ColumnType::Symbol => {
            let keys = PrimitiveArray::<UInt32Type>::new(ScalarBuffer::new(buffer, 0, rows), None);
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
            to_array(ColumnType::Char, 3, StoredValues::Fixed(bytes), &symbol_values(&Arc::new(vec![]))).unwrap();
        let dict = array.as_dictionary::<UInt8Type>();
        assert_eq!(dict.keys().values().inner().as_ptr(), ptr, "no copy");
        let text = datafusion::arrow::compute::cast(&array, &DataType::Utf8).unwrap();
        assert_eq!(text.as_string::<i32>().value(1), "P");

        let symbols = symbol_values(&Arc::new(vec!["A".into(), "B".into()]));
        let keys = Buffer::from_vec(vec![1u32, 0, 1]);
        let array = to_array(ColumnType::Symbol, 3, StoredValues::Fixed(keys), &symbols).unwrap();
        assert_eq!(array.data_type(), &sql_type(ColumnType::Symbol));
        let bad = to_array(ColumnType::Symbol, 1, StoredValues::Fixed(Buffer::from_vec(vec![7u32])), &symbols);
        assert!(bad.unwrap_err().contains("symbol key 7 at row 0"));
    }
}
