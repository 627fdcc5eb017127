//! Arrow arrays to columns: the type mapping, unit scaling and null filling.
//!
//! Errors come back as a [`Failure`] carrying the row within the array, so each
//! caller can say where that row is (a row of a table, a line of a CSV file).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_buffer::{ArrowNativeType, Buffer, NullBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::text;
use crate::column_data::Column;
use crate::date::Date;
use crate::nulls::null_value;
use crate::types::ColumnType;

/// Why an array could not become a column.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No conversion from the array's Arrow type to the wanted column type.
    Unsupported,
    /// One value does not fit: `value {value:?} {problem}` describes it.
    Value {
        /// Row within the array.
        row: usize,
        /// The value as text.
        value: String,
        /// What is wrong, e.g. "does not fit a long".
        problem: String,
    },
}

/// The column type an Arrow type becomes when nothing asks for another.
pub(crate) fn natural_type(data_type: &DataType) -> Option<ColumnType> {
    Some(match data_type {
        DataType::Boolean => ColumnType::Boolean,
        DataType::UInt8 => ColumnType::Byte,
        DataType::Int8 | DataType::Int16 => ColumnType::Short,
        DataType::Int32 | DataType::UInt16 => ColumnType::Int,
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => ColumnType::Long,
        DataType::Float16 | DataType::Float32 => ColumnType::Real,
        DataType::Float64 => ColumnType::Float,
        DataType::Timestamp(..) => ColumnType::Timestamp,
        DataType::Date32 | DataType::Date64 => ColumnType::Date,
        DataType::Duration(_) => ColumnType::Timespan,
        DataType::Time32(TimeUnit::Second) => ColumnType::Second,
        DataType::Time32(_) | DataType::Time64(_) => ColumnType::Time,
        DataType::FixedSizeBinary(1) => ColumnType::Char,
        DataType::Null => ColumnType::Symbol,
        t if is_text(t) => ColumnType::Symbol,
        DataType::Dictionary(_, values) if is_text(values) => ColumnType::Symbol,
        _ => return None,
    })
}

fn is_text(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// `array` as a column of type `target`, sharing its buffers where the layouts agree
/// and there are no nulls.
pub(crate) fn convert(array: &dyn Array, target: ColumnType) -> Result<Column, Failure> {
    if !target.has_null()
        && let Some(row) = array.logical_nulls().and_then(|nulls| nulls.iter().position(|valid| !valid))
    {
        return Err(no_null(row, target));
    }
    let data_type = array.data_type();
    if *data_type == DataType::Null {
        return Ok(null_column(target, array.len()));
    }
    if let Some(unit) = integer_unit(data_type) {
        return from_integers(array, unit, target);
    }
    match (data_type, target) {
        (DataType::Float16, ColumnType::Real) => {
            Ok(fill(target, array.as_primitive::<Float16Type>().values().iter().map(|v| v.to_f32()), array, f32::NAN))
        }
        (DataType::Float32, ColumnType::Real) | (DataType::Float64, ColumnType::Float) => {
            Ok(same_layout(array, target))
        }
        (DataType::Float32, ColumnType::Float) => {
            Ok(fill(target, array.as_primitive::<Float32Type>().values().iter().map(|v| *v as f64), array, f64::NAN))
        }
        (DataType::Float64, ColumnType::Real) => {
            Ok(fill(target, array.as_primitive::<Float64Type>().values().iter().map(|v| *v as f32), array, f32::NAN))
        }
        (DataType::Boolean, ColumnType::Boolean) => {
            // Without nulls: those were refused above.
            let values = array.as_boolean().values();
            Ok(Column::from_values(target, values.iter().map(u8::from).collect()).expect("bytes"))
        }
        (DataType::FixedSizeBinary(1), ColumnType::Char) => Ok(same_layout(array, target)),
        (DataType::Dictionary(key, values), ColumnType::Symbol) if is_text(values) => {
            if **key == DataType::UInt32 && nulls_are_empty_texts(array) {
                // The keys already are Strata's symbol layout: share them.
                let dictionary = array.as_dictionary::<UInt32Type>();
                let domain = texts_to_domain(text_values(dictionary.values().as_ref()).expect("text values"));
                let keys = dictionary.keys().values().inner().clone();
                return Ok(Column::from_buffer(ColumnType::Symbol, keys, Some(Arc::new(domain)))
                    .expect("dictionary keys index their values"));
            }
            Ok(from_text(&text_values(array).expect("text"), target)?)
        }
        (DataType::LargeUtf8, ColumnType::String) if nulls_are_empty_texts(array) => {
            let strings = array.as_string::<i64>();
            let offsets = strings.offsets();
            if offsets[0] == 0 {
                // Share offsets and data; the data may run past the last offset.
                let data = strings.values().slice_with_length(0, offsets[offsets.len() - 1] as usize);
                return Ok(Column::from_string_buffers(offsets.inner().inner().clone(), data)
                    .expect("Arrow offsets are valid"));
            }
            Ok(from_text(&text_values(array).expect("text"), target)?)
        }
        _ => match text_values(array) {
            Some(texts) => from_text(&texts, target),
            None => Err(Failure::Unsupported),
        },
    }
}

/// A column of `len` kdb+ nulls of type `ty`. Booleans and bytes have no null:
/// only empty columns of them are asked for (a null of theirs is refused first).
pub(crate) fn null_column(ty: ColumnType, len: usize) -> Column {
    match ty {
        ColumnType::Symbol => Column::from_symbols(std::iter::repeat_n("", len)),
        ColumnType::String => Column::from_strings(std::iter::repeat_n("", len)),
        _ => {
            let null = null_value(ty).unwrap_or_else(|| vec![0; ty.width()]);
            Column::from_buffer(ty, Buffer::from_vec(null.repeat(len)), None).expect("whole values")
        }
    }
}

/// The failure for a null at `row` of a column of `target`, a type kdb+ gives no
/// null (boolean, byte): storing a 0 nobody wrote would be a wrong value.
fn no_null(row: usize, target: ColumnType) -> Failure {
    Failure::Value {
        row,
        value: String::new(),
        problem: format!(
            "is missing (null), and a {target} column has no null (kdb+ has none for booleans and bytes): give \
             the column a type that has one (short for 0/1 values, symbol for text) or fill in the value"
        ),
    }
}

/// Whether every null of a text or text-dictionary array is an empty text underneath
/// (as in arrays made from Strata columns, whose nulls are empty symbols and
/// strings), so its buffers can be shared as they are.
fn nulls_are_empty_texts(array: &dyn Array) -> bool {
    let Some(nulls) = array.nulls() else { return true };
    let empty_at: Box<dyn Fn(usize) -> bool + '_> = match array.data_type() {
        DataType::LargeUtf8 => {
            let strings = array.as_string::<i64>();
            Box::new(move |row| strings.value_length(row) == 0)
        }
        DataType::Dictionary(key, _) if **key == DataType::UInt32 => {
            let dictionary = array.as_dictionary::<UInt32Type>();
            let Some(values) = text_values(dictionary.values().as_ref()) else { return false };
            let keys = dictionary.keys().values();
            Box::new(move |row| values.get(keys[row] as usize).is_some_and(|v| v.is_none_or(str::is_empty)))
        }
        _ => return false,
    };
    (0..array.len()).all(|row| nulls.is_valid(row) || empty_at(row))
}

/// Whether every null of `array` already holds `target`'s kdb+ null in `values` (as
/// in arrays made from Strata columns), so the values can be shared as they are.
fn nulls_hold_kdb_nulls(array: &dyn Array, values: &[u8], target: ColumnType) -> bool {
    let Some(nulls) = array.nulls() else { return true };
    match crate::nulls::fixed_validity(target, values) {
        Some(kdb) => nulls.iter().zip(kdb.iter()).all(|(valid, kdb_valid)| valid || !kdb_valid),
        None => false,
    }
}

/// The values of a fixed-width array whose layout is the target's, shared when every
/// null already holds the type's null (no nulls, or an array made from a column).
fn same_layout(array: &dyn Array, target: ColumnType) -> Column {
    let width = target.width();
    let data = array.to_data();
    let values = data.buffers()[0].slice_with_length(data.offset() * width, data.len() * width);
    let column = Column::from_buffer(target, values, None).expect("same width");
    if nulls_hold_kdb_nulls(array, column.value_bytes(), target) {
        return column;
    }
    let nulls = array.nulls().expect("an array without nulls holds no other null");
    let mut bytes = column.value_bytes().to_vec();
    let null = null_value(target).expect("a null of a type without one is refused first");
    for row in nulls.iter().enumerate().filter(|(_, valid)| !valid).map(|(row, _)| row) {
        bytes[row * width..(row + 1) * width].copy_from_slice(&null);
    }
    Column::from_buffer(target, Buffer::from_vec(bytes), None).expect("same width")
}

/// Collects `values`, replacing the array's null slots with `null`.
fn fill<T: ArrowNativeType>(target: ColumnType, values: impl Iterator<Item = T>, array: &dyn Array, null: T) -> Column {
    let nulls = array.nulls();
    let out: Vec<T> =
        values.enumerate().map(|(row, v)| if nulls.is_some_and(|n| n.is_null(row)) { null } else { v }).collect();
    Column::from_values(target, out).expect("width matches the type")
}

/// What the integers of an integer-backed Arrow type count.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Unit {
    /// Plain integers.
    Plain,
    /// Days since the epoch (Date32).
    Days,
    /// Milliseconds since the epoch, whole days (Date64).
    EpochMillis,
    /// Since the epoch (Timestamp).
    Instant(TimeUnit),
    /// Since midnight (Time32, Time64).
    TimeOfDay(TimeUnit),
    /// A duration.
    Span(TimeUnit),
}

fn integer_unit(data_type: &DataType) -> Option<Unit> {
    Some(match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => Unit::Plain,
        DataType::Date32 => Unit::Days,
        DataType::Date64 => Unit::EpochMillis,
        DataType::Timestamp(unit, _) => Unit::Instant(*unit),
        DataType::Time32(unit) | DataType::Time64(unit) => Unit::TimeOfDay(*unit),
        DataType::Duration(unit) => Unit::Span(*unit),
        _ => return None,
    })
}

fn nanos_per(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// How a source integer becomes a target integer.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Scale {
    Mul(i64),
    /// Floor division, so instants before the epoch land on the right day.
    FloorDiv(i64),
    /// To months since 1970-01, from a count of units of which this many make a day.
    Month(i64),
}

impl Scale {
    fn apply(self, v: i64) -> Option<i64> {
        match self {
            Scale::Mul(m) => v.checked_mul(m),
            Scale::FloorDiv(d) => Some(v.div_euclid(d)),
            Scale::Month(per_day) => {
                let (year, month, _) = Date(i32::try_from(v.div_euclid(per_day)).ok()?).ymd();
                Some((i64::from(year) - 1970) * 12 + i64::from(month) - 1)
            }
        }
    }
}

/// Scales from `unit` to `target`'s unit, where that is a sensible conversion.
fn scale(unit: Unit, target: ColumnType) -> Option<Scale> {
    const NS_PER_DAY: i64 = 86_400_000_000_000;
    // Nanoseconds per unit of the clock-like targets.
    let clock_ns = match target {
        ColumnType::Timespan => Some(1),
        ColumnType::Time => Some(1_000_000),
        ColumnType::Second => Some(1_000_000_000),
        ColumnType::Minute => Some(60_000_000_000),
        _ => None,
    };
    Some(match (unit, target) {
        (Unit::Plain, ColumnType::Char | ColumnType::Symbol | ColumnType::String) => return None,
        (Unit::Plain, _) => Scale::Mul(1),
        (Unit::Instant(u), ColumnType::Timestamp) => Scale::Mul(nanos_per(u)),
        (Unit::Instant(u), ColumnType::Date) => Scale::FloorDiv(NS_PER_DAY / nanos_per(u)),
        (Unit::Instant(u), ColumnType::Month) => Scale::Month(NS_PER_DAY / nanos_per(u)),
        (Unit::Days, ColumnType::Timestamp) => Scale::Mul(NS_PER_DAY),
        (Unit::Days, ColumnType::Date) => Scale::Mul(1),
        (Unit::Days, ColumnType::Month) => Scale::Month(1),
        (Unit::EpochMillis, ColumnType::Timestamp) => Scale::Mul(1_000_000),
        (Unit::EpochMillis, ColumnType::Date) => Scale::FloorDiv(86_400_000),
        (Unit::EpochMillis, ColumnType::Month) => Scale::Month(86_400_000),
        (Unit::Span(u), ColumnType::Timespan) => Scale::Mul(nanos_per(u)),
        (Unit::TimeOfDay(u), _) if clock_ns.is_some() => {
            let (per, want) = (nanos_per(u), clock_ns.expect("checked"));
            if per >= want { Scale::Mul(per / want) } else { Scale::FloorDiv(want / per) }
        }
        _ => return None,
    })
}

fn from_integers(array: &dyn Array, unit: Unit, target: ColumnType) -> Result<Column, Failure> {
    let scale = scale(unit, target).ok_or(Failure::Unsupported)?;
    let data_type = array.data_type();
    let unsigned = matches!(data_type, DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64);
    let layout_matches = scale == Scale::Mul(1)
        && data_type.primitive_width() == Some(target.width())
        && match target {
            ColumnType::Byte => *data_type == DataType::UInt8,
            ColumnType::Boolean | ColumnType::Real | ColumnType::Float => false,
            _ => !unsigned,
        };
    if layout_matches {
        return Ok(same_layout(array, target));
    }
    let ints = integers(array)?;
    let nulls = array.nulls();
    match target {
        // Booleans and bytes arrive without nulls (refused in `convert`): their 0 fills nothing.
        ColumnType::Boolean => narrow(target, &ints, nulls, scale, 0u8, |v| Some(u8::from(v != 0))),
        ColumnType::Byte => narrow(target, &ints, nulls, scale, 0u8, |v| u8::try_from(v).ok()),
        ColumnType::Short => narrow(target, &ints, nulls, scale, i16::MIN, |v| i16::try_from(v).ok()),
        ColumnType::Real => narrow(target, &ints, nulls, scale, f32::NAN, |v| Some(v as f32)),
        ColumnType::Float => narrow(target, &ints, nulls, scale, f64::NAN, |v| Some(v as f64)),
        ColumnType::Long | ColumnType::Timestamp | ColumnType::Timespan => {
            narrow(target, &ints, nulls, scale, i64::MIN, Some)
        }
        _ => narrow(target, &ints, nulls, scale, i32::MIN, |v| i32::try_from(v).ok()),
    }
}

/// The values of an integer-backed array as `i64` (null slots hold anything).
fn integers(array: &dyn Array) -> Result<Vec<i64>, Failure> {
    fn widen<T: ArrowPrimitiveType>(array: &dyn Array) -> Vec<i64> {
        array.as_primitive::<T>().values().iter().map(|v| v.as_usize() as i64).collect()
    }
    fn signed<T: ArrowPrimitiveType>(array: &dyn Array) -> Vec<i64>
    where
        T::Native: Into<i64>,
    {
        array.as_primitive::<T>().values().iter().map(|v| (*v).into()).collect()
    }
    Ok(match array.data_type() {
        DataType::Int8 => signed::<Int8Type>(array),
        DataType::Int16 => signed::<Int16Type>(array),
        DataType::UInt8 => widen::<UInt8Type>(array),
        DataType::UInt16 => widen::<UInt16Type>(array),
        DataType::UInt32 => widen::<UInt32Type>(array),
        DataType::UInt64 => {
            let nulls = array.nulls();
            let values = array.as_primitive::<UInt64Type>().values();
            let mut out = Vec::with_capacity(values.len());
            for (row, v) in values.iter().enumerate() {
                match i64::try_from(*v) {
                    Ok(v) => out.push(v),
                    Err(_) if nulls.is_some_and(|n| n.is_null(row)) => out.push(0),
                    Err(_) => {
                        return Err(Failure::Value {
                            row,
                            value: v.to_string(),
                            problem: "does not fit a long (above 2^63-1)".into(),
                        });
                    }
                }
            }
            out
        }
        DataType::Int32 | DataType::Date32 | DataType::Time32(_) => {
            let data = array.to_data();
            let values: &[i32] = &data.buffers()[0].typed_data()[data.offset()..data.offset() + data.len()];
            values.iter().map(|v| i64::from(*v)).collect()
        }
        _ => {
            // Every other integer-backed type is 64-bit.
            let data = array.to_data();
            data.buffers()[0].typed_data::<i64>()[data.offset()..data.offset() + data.len()].to_vec()
        }
    })
}

/// Scales and narrows each non-null value, failing on the first that does not fit.
fn narrow<T: ArrowNativeType>(
    target: ColumnType,
    ints: &[i64],
    nulls: Option<&NullBuffer>,
    scale: Scale,
    null: T,
    fit: impl Fn(i64) -> Option<T>,
) -> Result<Column, Failure> {
    let mut out = Vec::with_capacity(ints.len());
    for (row, &v) in ints.iter().enumerate() {
        if nulls.is_some_and(|n| n.is_null(row)) {
            out.push(null);
            continue;
        }
        let fitted = scale.apply(v).and_then(&fit).ok_or_else(|| Failure::Value {
            row,
            value: v.to_string(),
            problem: format!("does not fit a {target}"),
        })?;
        out.push(fitted);
    }
    Ok(Column::from_values(target, out).expect("width matches the type"))
}

/// The rows of a text or text-dictionary array (`None` for nulls), or `None` for
/// other arrays.
fn text_values(array: &dyn Array) -> Option<Vec<Option<&str>>> {
    Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().collect(),
        DataType::Utf8View => array.as_string_view().iter().collect(),
        DataType::Dictionary(_, values) if is_text(values) => {
            let dictionary = array.as_any_dictionary();
            let values = text_values(dictionary.values().as_ref())?;
            if values.is_empty() {
                return Some(vec![None; array.len()]); // only nulls can index nothing
            }
            let nulls = array.nulls();
            let keys = dictionary.normalized_keys();
            keys.iter()
                .enumerate()
                .map(|(row, &key)| if nulls.is_some_and(|n| n.is_null(row)) { None } else { values[key] })
                .collect()
        }
        _ => return None,
    })
}

fn texts_to_domain(texts: Vec<Option<&str>>) -> Vec<String> {
    texts.into_iter().map(|t| t.unwrap_or_default().to_string()).collect()
}

/// Text rows as a column of `target`: symbols are interned, strings copied, other
/// types parsed from their text forms (see [`text`]). Nulls and blank text become the
/// type's kdb+ null.
fn from_text(texts: &[Option<&str>], target: ColumnType) -> Result<Column, Failure> {
    /// Parses each text; `null` is the type's null (`None`: it has none, so a blank
    /// text is refused).
    fn parse_each<T: ArrowNativeType>(
        texts: &[Option<&str>],
        target: ColumnType,
        null: Option<T>,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Column, Failure> {
        let mut out = Vec::with_capacity(texts.len());
        for (row, text) in texts.iter().enumerate() {
            let value = match text.map(str::trim) {
                None | Some("") => null.ok_or_else(|| no_null(row, target))?,
                Some(trimmed) => parse(trimmed).ok_or_else(|| Failure::Value {
                    row,
                    value: text.unwrap_or_default().to_string(),
                    problem: format!("is not a {target} (expected {})", text::expected_form(target)),
                })?,
            };
            out.push(value);
        }
        Ok(Column::from_values(target, out).expect("width matches the type"))
    }
    const NS_PER_MINUTE: i128 = 60_000_000_000;
    match target {
        ColumnType::Symbol => {
            let mut index = HashMap::<&str, u32>::new();
            let mut domain = Vec::new();
            let keys = texts
                .iter()
                .map(|t| {
                    let s = t.unwrap_or_default();
                    *index.entry(s).or_insert_with(|| {
                        domain.push(s.to_string());
                        (domain.len() - 1) as u32
                    })
                })
                .collect();
            Ok(Column::from_symbol_keys(keys, Arc::new(domain)).expect("keys come from the domain"))
        }
        ColumnType::String => Ok(Column::from_strings(texts.iter().map(|t| t.unwrap_or_default()))),
        ColumnType::Char => {
            let mut out = Vec::with_capacity(texts.len());
            for (row, text) in texts.iter().enumerate() {
                let mut chars = text.unwrap_or_default().chars();
                // A char is a byte: code points up to U+00FF map to it (Latin-1).
                out.push(match (chars.next(), chars.next()) {
                    (None, _) => b' ',
                    (Some(c), None) if (c as u32) < 256 => c as u8,
                    _ => {
                        return Err(Failure::Value {
                            row,
                            value: text.unwrap_or_default().to_string(),
                            problem: "is not a single character".into(),
                        });
                    }
                });
            }
            Ok(Column::from_values(target, out).expect("bytes"))
        }
        ColumnType::Boolean => parse_each(texts, target, None, text::parse_bool),
        ColumnType::Byte => parse_each(texts, target, None, |s| s.parse::<u8>().ok()),
        ColumnType::Short => parse_each(texts, target, Some(i16::MIN), |s| s.parse().ok()),
        ColumnType::Int => parse_each(texts, target, Some(i32::MIN), |s| s.parse().ok()),
        ColumnType::Long => parse_each(texts, target, Some(i64::MIN), |s| s.parse().ok()),
        ColumnType::Real => parse_each(texts, target, Some(f32::NAN), |s| s.parse().ok()),
        ColumnType::Float => parse_each(texts, target, Some(f64::NAN), |s| s.parse().ok()),
        ColumnType::Timestamp => parse_each(texts, target, Some(i64::MIN), text::parse_timestamp),
        ColumnType::Timespan => parse_each(texts, target, Some(i64::MIN), text::parse_timespan),
        ColumnType::Month => parse_each(texts, target, Some(i32::MIN), text::parse_month),
        ColumnType::Date => parse_each(texts, target, Some(i32::MIN), text::parse_date),
        ColumnType::Minute => parse_each(texts, target, Some(i32::MIN), |s| text::parse_clock_in(s, NS_PER_MINUTE)),
        ColumnType::Second => parse_each(texts, target, Some(i32::MIN), |s| text::parse_clock_in(s, 1_000_000_000)),
        ColumnType::Time => parse_each(texts, target, Some(i32::MIN), |s| text::parse_clock_in(s, 1_000_000)),
    }
}
