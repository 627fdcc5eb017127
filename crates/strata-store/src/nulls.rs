//! kdb+'s typed nulls: which stored value of each column type is null, counting them
//! (column files record the counts) and the Arrow validity they become.
//!
//! kdb+ has no validity bitmap: each type reserves one value as its null, and Strata
//! stores them so (its files keep kdb+'s layout). Readers that hand columns to SQL or
//! to other formats turn those values into Arrow nulls, so aggregates skip them as
//! kdb+ and DuckDB do and exports write real nulls:
//!
//! | column type | null value | q |
//! |---|---|---|
//! | short | `i16::MIN` | `0Nh` |
//! | int, month, date, minute, second, time | `i32::MIN` | `0Ni 0Nm 0Nd 0Nu 0Nv 0Nt` |
//! | long, timestamp, timespan | `i64::MIN` | `0Nj 0Np 0Nn` |
//! | real, float | any NaN | `0Ne 0n` |
//! | char | a space | `" "` |
//! | symbol | the empty symbol | `` ` `` |
//! | string | the empty string | `""` |
//! | boolean, byte | none | |
//!
//! Floats: kdb+'s `0n` is a NaN and kdb+ takes every NaN for null; so does Strata
//! (DuckDB and DataFusion would count a NaN as a value). A CSV `NaN` or an empty
//! field and a Parquet null all read as NULL in SQL. Infinities (`0W`, `-0W`) are
//! values. A value equal to a type's null (an `i64::MIN` in a Parquet file, say) is
//! null once stored, as in kdb+.
//!
//! Booleans and bytes have no null, so an Arrow null or an empty CSV field for them
//! is refused on import rather than stored as a 0 nobody wrote.

use arrow_buffer::{BooleanBuffer, NullBuffer};

use crate::column_data::Column;
use crate::types::ColumnType;

/// The little-endian bytes of the null of a fixed-width type other than symbol, or
/// `None` for booleans and bytes, which have none.
pub fn null_value(ty: ColumnType) -> Option<Vec<u8>> {
    Some(match ty {
        ColumnType::Boolean | ColumnType::Byte => return None,
        ColumnType::Char => vec![b' '],
        ColumnType::Short => i16::MIN.to_le_bytes().to_vec(),
        ColumnType::Real => f32::NAN.to_le_bytes().to_vec(),
        ColumnType::Float => f64::NAN.to_le_bytes().to_vec(),
        ColumnType::Long | ColumnType::Timestamp | ColumnType::Timespan => i64::MIN.to_le_bytes().to_vec(),
        ColumnType::Int
        | ColumnType::Month
        | ColumnType::Date
        | ColumnType::Minute
        | ColumnType::Second
        | ColumnType::Time => i32::MIN.to_le_bytes().to_vec(),
        ColumnType::Symbol | ColumnType::String => unreachable!("{ty} is not fixed-width: its null is empty text"),
    })
}

/// How many of `values` (raw little-endian values of `ty`) are null: `Some(0)` for
/// booleans and bytes, `None` for symbols and strings, whose null is not told by the
/// value alone (the empty symbol's key depends on the sym file; an empty string is
/// two equal offsets, which may lie in two blocks).
///
/// ```
/// use strata_store::{ColumnType, nulls::count_nulls};
///
/// let values: Vec<u8> = [5i64, i64::MIN, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(count_nulls(ColumnType::Long, &values), Some(1));
/// assert_eq!(count_nulls(ColumnType::Timestamp, &values), Some(1));
/// assert_eq!(count_nulls(ColumnType::Symbol, &[0; 4]), None);
/// ```
pub fn count_nulls(ty: ColumnType, values: &[u8]) -> Option<u64> {
    find_nulls(ty, values, false).map(|(count, _)| count)
}

/// The validity of `values` (raw little-endian values of `ty`, a fixed-width type
/// other than symbol): `None` when no value is null, so arrays without nulls carry
/// no bitmap.
pub fn fixed_validity(ty: ColumnType, values: &[u8]) -> Option<NullBuffer> {
    find_nulls(ty, values, true).and_then(|(_, validity)| validity)
}

/// The validity of symbol `keys`, where `empty_key` is the key of the empty symbol in
/// their domain (`None` when the domain has no empty symbol: nothing is null).
pub fn symbol_validity(keys: &[u32], empty_key: Option<u32>) -> Option<NullBuffer> {
    let empty = empty_key?;
    let nulls = keys.iter().filter(|k| **k == empty).count();
    (nulls > 0).then(|| NullBuffer::new(BooleanBuffer::collect_bool(keys.len(), |i| keys[i] != empty)))
}

/// The validity of the strings `offsets` bound (`rows + 1` offsets): an empty string
/// is null.
pub fn string_validity(offsets: &[i64]) -> Option<NullBuffer> {
    let rows = offsets.len().saturating_sub(1);
    let nulls = offsets.windows(2).filter(|w| w[0] == w[1]).count();
    (nulls > 0).then(|| NullBuffer::new(BooleanBuffer::collect_bool(rows, |i| offsets[i] != offsets[i + 1])))
}

/// The key of the empty symbol (kdb+'s null symbol) in `domain`, if it has one.
pub fn empty_symbol_key(domain: &[String]) -> Option<u32> {
    domain.iter().position(String::is_empty).map(|k| k as u32)
}

/// The validity of an in-memory column (see the module doc for what is null).
pub fn column_validity(column: &Column) -> Option<NullBuffer> {
    match column.ty() {
        ColumnType::Symbol => {
            let domain = column.domain().expect("a symbol column has a domain");
            symbol_validity(column.values::<u32>(), empty_symbol_key(domain))
        }
        ColumnType::String => string_validity(column.offsets().expect("a string column has offsets")),
        ty => fixed_validity(ty, column.value_bytes()),
    }
}

/// Counts the nulls of a fixed-width type's values and, when `build`, their validity
/// (only if there is a null). `None` for symbols and strings.
fn find_nulls(ty: ColumnType, values: &[u8], build: bool) -> Option<(u64, Option<NullBuffer>)> {
    Some(match ty {
        ColumnType::Boolean | ColumnType::Byte => (0, None),
        ColumnType::Char => find::<1>(values, build, |b| b[0] == b' '),
        ColumnType::Short => find::<2>(values, build, |b| i16::from_le_bytes(b) == i16::MIN),
        ColumnType::Int
        | ColumnType::Month
        | ColumnType::Date
        | ColumnType::Minute
        | ColumnType::Second
        | ColumnType::Time => find::<4>(values, build, |b| i32::from_le_bytes(b) == i32::MIN),
        ColumnType::Long | ColumnType::Timestamp | ColumnType::Timespan => {
            find::<8>(values, build, |b| i64::from_le_bytes(b) == i64::MIN)
        }
        ColumnType::Real => find::<4>(values, build, |b| f32::from_le_bytes(b).is_nan()),
        ColumnType::Float => find::<8>(values, build, |b| f64::from_le_bytes(b).is_nan()),
        ColumnType::Symbol | ColumnType::String => return None,
    })
}

/// The count of `W`-byte values that `is_null` picks, and their validity when
/// `build` and the count is not 0. Counting first keeps the common case (no null) to
/// one branch-free pass that the compiler vectorises.
fn find<const W: usize>(
    values: &[u8],
    build: bool,
    is_null: impl Fn([u8; W]) -> bool + Copy,
) -> (u64, Option<NullBuffer>) {
    let value = |chunk: &[u8]| -> [u8; W] { chunk.try_into().expect("chunks of W bytes") };
    let count = values.chunks_exact(W).map(|c| u64::from(is_null(value(c)))).sum::<u64>();
    if count == 0 || !build {
        return (count, None);
    }
    let rows = values.len() / W;
    let valid = BooleanBuffer::collect_bool(rows, |i| !is_null(value(&values[i * W..(i + 1) * W])));
    (count, Some(NullBuffer::new(valid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<const W: usize, T: Copy>(values: &[T], to: fn(T) -> [u8; W]) -> Vec<u8> {
        values.iter().flat_map(|v| to(*v)).collect()
    }

    #[test]
    fn every_type_with_a_null_finds_it_and_only_it() {
        for ty in ColumnType::ALL {
            if matches!(ty, ColumnType::Symbol | ColumnType::String) {
                assert_eq!(count_nulls(ty, &[]), None);
                continue;
            }
            let Some(null) = null_value(ty) else {
                assert!(!ty.has_null());
                assert_eq!(count_nulls(ty, &[0, 1, 255]), Some(0), "{ty}: every byte is a value");
                assert!(fixed_validity(ty, &[0, 1, 255]).is_none());
                continue;
            };
            assert!(ty.has_null());
            // One value next to the null in every byte (the null's neighbours).
            let mut near = null.clone();
            *near.last_mut().unwrap() ^= 0x40;
            let values = [near.clone(), null.clone(), near.clone(), null.clone(), vec![0x41; null.len()]].concat();
            assert_eq!(count_nulls(ty, &values), Some(2), "{ty}");
            let validity = fixed_validity(ty, &values).unwrap();
            assert_eq!(validity.iter().collect::<Vec<_>>(), [true, false, true, false, true], "{ty}");
            assert!(fixed_validity(ty, &near).is_none(), "{ty}: no bitmap without a null");
            assert_eq!(count_nulls(ty, &[]), Some(0));
        }
    }

    #[test]
    fn any_nan_is_a_float_null_and_infinities_are_values() {
        let kdb_null = f64::from_bits(0xFFF8_0000_0000_0000); // kdb+'s 0n
        let floats = bytes(&[kdb_null, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0], f64::to_le_bytes);
        assert_eq!(count_nulls(ColumnType::Float, &floats), Some(2));
        let reals = bytes(&[f32::NAN, f32::INFINITY, f32::MIN], f32::to_le_bytes);
        assert_eq!(count_nulls(ColumnType::Real, &reals), Some(1));
        let longs = bytes(&[i64::MIN + 1, i64::MAX], i64::to_le_bytes); // -0W and 0W
        assert_eq!(count_nulls(ColumnType::Long, &longs), Some(0));
    }

    #[test]
    fn empty_symbols_and_strings_are_null() {
        let domain = vec!["IBM".to_string(), String::new()];
        assert_eq!(empty_symbol_key(&domain), Some(1));
        let validity = symbol_validity(&[0, 1, 0], Some(1)).unwrap();
        assert_eq!(validity.null_count(), 1);
        assert!(validity.is_null(1));
        assert!(symbol_validity(&[0, 1, 0], None).is_none(), "no empty symbol in the domain: no nulls");
        assert!(symbol_validity(&[0, 0], Some(1)).is_none());
        let validity = string_validity(&[0, 2, 2, 5, 5]).unwrap();
        assert_eq!(validity.iter().collect::<Vec<_>>(), [true, false, true, false]);
        assert!(string_validity(&[0, 1, 3]).is_none());
        assert!(string_validity(&[0]).is_none(), "no rows");
        let column = Column::from_symbols(["", "A", ""]);
        assert_eq!(column_validity(&column).unwrap().null_count(), 2);
    }
}
