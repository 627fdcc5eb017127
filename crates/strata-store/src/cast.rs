//! Lossless casts between column types, for `strata import --cast`: rows offered
//! to a table whose schema stores another type are converted only when no value
//! changes, and otherwise refused naming the first value that would.
//!
//! What converts (kdb+ nulls map to the target's null; a value without a null in
//! the target, or one that would change, is a [`CastFailure`]):
//! - integers (boolean, byte, short, int, long) to any other integer whose range
//!   holds the value (boolean: 0 and 1 only);
//! - integers to real or float when the number is exactly representable
//!   (below 2^24 for real, 2^53 for float, or any exactly representable value);
//! - real and float to an integer when the number is whole and in range, float to
//!   real when exactly representable, real to float always;
//! - date to timestamp (midnight UTC), timestamp to date when at midnight;
//! - symbol and string to each other, and any type to symbol or string (its text
//!   form, as CSV export writes it); symbol and string to any other type by parsing
//!   the text as a CSV import would.
//!
//! Anything else has no lossless cast and is refused naming both types.

use arrow_array::StringArray;

use crate::arrow::{Failure, convert, text};
use crate::column_data::Column;
use crate::types::ColumnType;

/// Why a column could not be cast.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CastFailure {
    /// No lossless conversion exists between the two types.
    #[error("there is no lossless cast from {from} to {to}")]
    Unsupported {
        /// The column's type.
        from: ColumnType,
        /// The type wanted.
        to: ColumnType,
    },
    /// One value would change (or cannot be held) as the target type.
    #[error("row {row}: value {value} {problem}")]
    Value {
        /// Row within the column, from 0.
        row: usize,
        /// The value as text.
        value: String,
        /// What would happen to it.
        problem: String,
    },
}

/// `column` as type `to`, when every value converts without change.
///
/// ```
/// use strata_store::{Column, ColumnType, cast::cast_column};
///
/// let sizes = Column::from_values(ColumnType::Int, vec![100i32, i32::MIN, 300]).unwrap();
/// let wide = cast_column(&sizes, ColumnType::Long).unwrap();
/// assert_eq!(wide.values::<i64>(), [100, i64::MIN, 300], "the int null becomes the long null");
/// let prices = Column::from_values(ColumnType::Float, vec![1.0f64, 2.5]).unwrap();
/// let err = cast_column(&prices, ColumnType::Long).unwrap_err().to_string();
/// assert_eq!(err, "row 1: value 2.5 is not a whole number");
/// ```
pub fn cast_column(column: &Column, to: ColumnType) -> Result<Column, CastFailure> {
    let from = column.ty();
    let unsupported = CastFailure::Unsupported { from, to };
    if from == to {
        return Ok(column.clone());
    }
    if matches!(to, ColumnType::Symbol | ColumnType::String) {
        let texts = texts(column);
        return Ok(match to {
            ColumnType::Symbol => Column::from_symbols(&texts),
            _ => Column::from_strings(&texts),
        });
    }
    if matches!(from, ColumnType::Symbol | ColumnType::String) {
        let texts = texts(column);
        let array = StringArray::from_iter_values(&texts);
        return convert(&array, to).map_err(|failure| match failure {
            Failure::Unsupported => unsupported,
            Failure::Value { row, value, problem } => CastFailure::Value { row, value: format!("{value:?}"), problem },
        });
    }
    if let Some(values) = integers(column) {
        return match to {
            ColumnType::Real | ColumnType::Float => to_floats(&values, to),
            _ if is_integer(to) => to_integers(&values, to),
            _ => Err(unsupported),
        };
    }
    if let Some(values) = floats(column) {
        return match to {
            ColumnType::Real | ColumnType::Float => to_floats_exact(&values, to),
            _ if is_integer(to) => {
                let mut whole = Vec::with_capacity(values.len());
                for (row, v) in values.iter().enumerate() {
                    whole.push(match v {
                        None => None,
                        Some(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 2f64.powi(63) => Some(*x as i64),
                        Some(x) => return Err(value_failure(row, x, "is not a whole number")),
                    });
                }
                to_integers(&whole, to)
            }
            _ => Err(unsupported),
        };
    }
    match (from, to) {
        (ColumnType::Date, ColumnType::Timestamp) => {
            let days = column.values::<i32>();
            let ns = days.iter().map(|&d| if d == i32::MIN { i64::MIN } else { i64::from(d) * NS_PER_DAY }).collect();
            // Every date in a timestamp's range: ±106 751 days around 1970.
            if let Some(row) = days.iter().position(|&d| d != i32::MIN && i64::from(d).abs() > i64::MAX / NS_PER_DAY) {
                return Err(value_failure(row, &column.display(row), "is out of range for timestamp"));
            }
            Ok(Column::from_values(to, ns).expect("width matches"))
        }
        (ColumnType::Timestamp, ColumnType::Date) => {
            let ns = column.values::<i64>();
            let mut days = Vec::with_capacity(ns.len());
            for (row, &v) in ns.iter().enumerate() {
                if v == i64::MIN {
                    days.push(i32::MIN);
                } else if v.rem_euclid(NS_PER_DAY) != 0 {
                    return Err(value_failure(row, &column.display(row), "is not at midnight"));
                } else {
                    days.push(v.div_euclid(NS_PER_DAY) as i32);
                }
            }
            Ok(Column::from_values(to, days).expect("width matches"))
        }
        _ => Err(unsupported),
    }
}

const NS_PER_DAY: i64 = 86_400_000_000_000;

fn is_integer(ty: ColumnType) -> bool {
    matches!(ty, ColumnType::Boolean | ColumnType::Byte | ColumnType::Short | ColumnType::Int | ColumnType::Long)
}

/// Every value's text form (empty for nulls), as CSV export writes it.
fn texts(column: &Column) -> Vec<String> {
    (0..column.len())
        .map(|row| {
            let mut out = String::new();
            text::write_value(&mut out, column, row);
            out
        })
        .collect()
}

/// An integer column's values, `None` for kdb+ nulls; `None` for other types.
fn integers(column: &Column) -> Option<Vec<Option<i64>>> {
    fn nullable<T: Copy + PartialEq + Into<i64>>(values: &[T], null: Option<T>) -> Vec<Option<i64>> {
        values.iter().map(|&v| if Some(v) == null { None } else { Some(v.into()) }).collect()
    }
    Some(match column.ty() {
        ColumnType::Boolean | ColumnType::Byte => nullable::<u8>(column.values(), None),
        ColumnType::Short => nullable(column.values::<i16>(), Some(i16::MIN)),
        ColumnType::Int => nullable(column.values::<i32>(), Some(i32::MIN)),
        ColumnType::Long => nullable(column.values::<i64>(), Some(i64::MIN)),
        _ => return None,
    })
}

/// A real or float column's values as `f64`, `None` for NaN (the null).
fn floats(column: &Column) -> Option<Vec<Option<f64>>> {
    let keep = |x: f64| if x.is_nan() { None } else { Some(x) };
    Some(match column.ty() {
        ColumnType::Real => column.values::<f32>().iter().map(|&x| keep(f64::from(x))).collect(),
        ColumnType::Float => column.values::<f64>().iter().map(|&x| keep(x)).collect(),
        _ => return None,
    })
}

fn value_failure(row: usize, value: &dyn std::fmt::Display, problem: &str) -> CastFailure {
    CastFailure::Value { row, value: value.to_string(), problem: problem.to_string() }
}

/// Integers (nulls as `None`) as integer type `to`, each checked against its range.
fn to_integers(values: &[Option<i64>], to: ColumnType) -> Result<Column, CastFailure> {
    // The range of non-null values: the minimum of a signed type is its null.
    let (lo, hi) = match to {
        ColumnType::Boolean => (0, 1),
        ColumnType::Byte => (0, 255),
        ColumnType::Short => (i64::from(i16::MIN) + 1, i64::from(i16::MAX)),
        ColumnType::Int => (i64::from(i32::MIN) + 1, i64::from(i32::MAX)),
        _ => (i64::MIN + 1, i64::MAX),
    };
    for (row, v) in values.iter().enumerate() {
        match v {
            None if matches!(to, ColumnType::Boolean | ColumnType::Byte) => {
                return Err(value_failure(row, &"null", &format!("has no {to} form (a {to} has no null)")));
            }
            Some(x) if !(lo..=hi).contains(x) => {
                return Err(value_failure(row, x, &format!("does not fit a {to} ({lo}..{hi})")));
            }
            _ => {}
        }
    }
    let column = match to {
        ColumnType::Boolean | ColumnType::Byte => {
            Column::from_values(to, values.iter().map(|v| v.unwrap_or(0) as u8).collect())
        }
        ColumnType::Short => Column::from_values(to, values.iter().map(|v| v.map_or(i16::MIN, |x| x as i16)).collect()),
        ColumnType::Int => Column::from_values(to, values.iter().map(|v| v.map_or(i32::MIN, |x| x as i32)).collect()),
        _ => Column::from_values(to, values.iter().map(|v| v.unwrap_or(i64::MIN)).collect()),
    };
    Ok(column.expect("width matches"))
}

/// Integers (nulls as `None`) as real or float, each exactly representable.
fn to_floats(values: &[Option<i64>], to: ColumnType) -> Result<Column, CastFailure> {
    let as_float = values.iter().map(|v| v.map(|x| x as f64)).collect::<Vec<_>>();
    for (row, (v, f)) in values.iter().zip(&as_float).enumerate() {
        if let (Some(x), Some(f)) = (v, f) {
            let exact = match to {
                ColumnType::Real => (*x as f32) as i128 == i128::from(*x),
                _ => *f as i128 == i128::from(*x),
            };
            if !exact {
                return Err(value_failure(row, x, &format!("is not exactly representable as a {to}")));
            }
        }
    }
    to_floats_exact(&as_float, to)
}

/// Numbers (nulls as `None`) as real or float, each exactly representable.
fn to_floats_exact(values: &[Option<f64>], to: ColumnType) -> Result<Column, CastFailure> {
    if to == ColumnType::Float {
        return Ok(Column::from_values(to, values.iter().map(|v| v.unwrap_or(f64::NAN)).collect()).expect("width"));
    }
    let mut reals = Vec::with_capacity(values.len());
    for (row, v) in values.iter().enumerate() {
        reals.push(match v {
            None => f32::NAN,
            Some(x) if f64::from(*x as f32) == *x => *x as f32,
            Some(x) => return Err(value_failure(row, x, "is not exactly representable as a real")),
        });
    }
    Ok(Column::from_values(to, reals).expect("width matches"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(values: &[i64]) -> Column {
        Column::from_values(ColumnType::Long, values.to_vec()).unwrap()
    }

    #[test]
    fn integers_narrow_only_when_every_value_fits() {
        let ok = cast_column(&longs(&[1, i64::MIN, -5]), ColumnType::Int).unwrap();
        assert_eq!(ok.values::<i32>(), [1, i32::MIN, -5]);
        let err = cast_column(&longs(&[1, 3_000_000_000]), ColumnType::Int).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("row 1: value 3000000000 does not fit a int ({}..{})", i32::MIN + 1, i32::MAX)
        );
        let err = cast_column(&longs(&[1, i64::MIN]), ColumnType::Byte).unwrap_err();
        assert!(matches!(err, CastFailure::Value { row: 1, .. }), "{err}");
        assert_eq!(cast_column(&longs(&[0, 1]), ColumnType::Boolean).unwrap().values::<u8>(), [0, 1]);
    }

    #[test]
    fn floats_and_integers_convert_only_exactly() {
        let big = (1i64 << 53) + 1;
        assert!(cast_column(&longs(&[1 << 53]), ColumnType::Float).is_ok());
        let err = cast_column(&longs(&[7, big]), ColumnType::Float).unwrap_err().to_string();
        assert!(err.starts_with("row 1: value 9007199254740993 is not exactly representable"), "{err}");
        assert!(cast_column(&longs(&[i64::MAX]), ColumnType::Real).is_err());
        let floats = Column::from_values(ColumnType::Float, vec![2.0f64, f64::NAN, -3.0]).unwrap();
        assert_eq!(cast_column(&floats, ColumnType::Long).unwrap().values::<i64>(), [2, i64::MIN, -3]);
        let tenth = Column::from_values(ColumnType::Float, vec![0.5f64, 0.1]).unwrap();
        assert!(cast_column(&tenth, ColumnType::Real).unwrap_err().to_string().starts_with("row 1: value 0.1"));
    }

    #[test]
    fn text_parses_and_other_pairs_are_refused() {
        let prices = Column::from_symbols(["1.5", "", "2"]);
        let cast = cast_column(&prices, ColumnType::Float).unwrap();
        assert_eq!(cast.values::<f64>()[0], 1.5);
        assert!(cast.values::<f64>()[1].is_nan());
        let err = cast_column(&Column::from_symbols(["1.5", "abc"]), ColumnType::Float).unwrap_err().to_string();
        assert!(err.starts_with("row 1: value \"abc\" is not a float"), "{err}");
        let back = cast_column(&longs(&[42, i64::MIN]), ColumnType::Symbol).unwrap();
        assert_eq!((back.symbol(0), back.symbol(1)), ("42", ""));
        let times = Column::from_values(ColumnType::Timespan, vec![1i64]).unwrap();
        assert_eq!(
            cast_column(&times, ColumnType::Long).unwrap_err(),
            CastFailure::Unsupported { from: ColumnType::Timespan, to: ColumnType::Long }
        );
        let midnight = Column::from_values(ColumnType::Timestamp, vec![NS_PER_DAY, NS_PER_DAY + 1]).unwrap();
        assert!(cast_column(&midnight, ColumnType::Date).unwrap_err().to_string().contains("not at midnight"));
    }
}
