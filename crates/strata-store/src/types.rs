//! Column types with kdb+'s type numbers, their widths and their Arrow layouts.

use std::fmt;

use arrow_schema::{DataType, TimeUnit};
use strata_codec::{ElementKind, NumericClass};

/// The type of a column, numbered as kdb+ numbers its vector types.
///
/// Fixed-width types store little-endian values in Arrow's layout: timestamps as
/// nanoseconds since the Unix epoch, dates as days since the Unix epoch, times as
/// milliseconds since midnight. Symbols are `u32` indices into the database's `sym`
/// file; strings are an offsets file plus a data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ColumnType {
    /// One byte per value, 0 or 1.
    Boolean = 1,
    /// Unsigned byte.
    Byte = 4,
    /// 16-bit signed integer.
    Short = 5,
    /// 32-bit signed integer.
    Int = 6,
    /// 64-bit signed integer.
    Long = 7,
    /// 32-bit float.
    Real = 8,
    /// 64-bit float.
    Float = 9,
    /// One byte character.
    Char = 10,
    /// `u32` index into the database's `sym` file.
    Symbol = 11,
    /// Nanoseconds since 1970-01-01T00:00, `i64`.
    Timestamp = 12,
    /// Months since 1970-01, `i32`.
    Month = 13,
    /// Days since 1970-01-01, `i32`.
    Date = 14,
    /// Nanoseconds, `i64`.
    Timespan = 16,
    /// Minutes since midnight, `i32`.
    Minute = 17,
    /// Seconds since midnight, `i32`.
    Second = 18,
    /// Milliseconds since midnight, `i32`.
    Time = 19,
    /// Variable-length UTF-8: `i64` end offsets in the column file, bytes in `col#`.
    String = 0,
}

impl ColumnType {
    /// Every type.
    pub const ALL: [ColumnType; 17] = [
        ColumnType::Boolean,
        ColumnType::Byte,
        ColumnType::Short,
        ColumnType::Int,
        ColumnType::Long,
        ColumnType::Real,
        ColumnType::Float,
        ColumnType::Char,
        ColumnType::Symbol,
        ColumnType::Timestamp,
        ColumnType::Month,
        ColumnType::Date,
        ColumnType::Timespan,
        ColumnType::Minute,
        ColumnType::Second,
        ColumnType::Time,
        ColumnType::String,
    ];

    /// The type stored with kdb+'s number `code`.
    pub fn from_code(code: u8) -> Option<ColumnType> {
        ColumnType::ALL.iter().copied().find(|t| t.code() == code)
    }

    /// kdb+'s type number (0 for strings, kdb+'s general list).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The name used in schemas and reports (kdb+'s names).
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Boolean => "boolean",
            ColumnType::Byte => "byte",
            ColumnType::Short => "short",
            ColumnType::Int => "int",
            ColumnType::Long => "long",
            ColumnType::Real => "real",
            ColumnType::Float => "float",
            ColumnType::Char => "char",
            ColumnType::Symbol => "symbol",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Month => "month",
            ColumnType::Date => "date",
            ColumnType::Timespan => "timespan",
            ColumnType::Minute => "minute",
            ColumnType::Second => "second",
            ColumnType::Time => "time",
            ColumnType::String => "string",
        }
    }

    /// The type a name (or kdb+'s one-letter type char) denotes.
    pub fn from_name(name: &str) -> Option<ColumnType> {
        let by_char = match name {
            "b" => Some(ColumnType::Boolean),
            "x" => Some(ColumnType::Byte),
            "h" => Some(ColumnType::Short),
            "i" => Some(ColumnType::Int),
            "j" => Some(ColumnType::Long),
            "e" => Some(ColumnType::Real),
            "f" => Some(ColumnType::Float),
            "c" => Some(ColumnType::Char),
            "s" => Some(ColumnType::Symbol),
            "p" => Some(ColumnType::Timestamp),
            "m" => Some(ColumnType::Month),
            "d" => Some(ColumnType::Date),
            "n" => Some(ColumnType::Timespan),
            "u" => Some(ColumnType::Minute),
            "v" => Some(ColumnType::Second),
            "t" => Some(ColumnType::Time),
            "*" | "C" => Some(ColumnType::String),
            _ => None,
        };
        by_char.or_else(|| ColumnType::ALL.iter().copied().find(|t| t.name() == name))
    }

    /// Bytes per value in the column file (8 for strings: their offsets).
    pub fn width(self) -> usize {
        match self {
            ColumnType::Boolean | ColumnType::Byte | ColumnType::Char => 1,
            ColumnType::Short => 2,
            ColumnType::Int
            | ColumnType::Real
            | ColumnType::Symbol
            | ColumnType::Month
            | ColumnType::Date
            | ColumnType::Minute
            | ColumnType::Second
            | ColumnType::Time => 4,
            ColumnType::Long
            | ColumnType::Float
            | ColumnType::Timestamp
            | ColumnType::Timespan
            | ColumnType::String => 8,
        }
    }

    /// How codecs see the values of the column file.
    pub fn element_kind(self) -> ElementKind {
        let class = match self {
            ColumnType::Boolean | ColumnType::Byte | ColumnType::Char => NumericClass::Opaque,
            ColumnType::Real | ColumnType::Float => NumericClass::Float,
            ColumnType::Symbol => NumericClass::Unsigned,
            _ => NumericClass::Signed,
        };
        ElementKind::new(self.width(), class)
    }

    /// Whether the type has a null value (every type but boolean and byte, as in
    /// kdb+; see [`crate::nulls`] for which value it is).
    pub fn has_null(self) -> bool {
        !matches!(self, ColumnType::Boolean | ColumnType::Byte)
    }

    /// Whether per-block min/max are kept for this type (all but strings, whose
    /// offsets say nothing about the values).
    pub fn has_block_bounds(self) -> bool {
        self != ColumnType::String
    }

    /// The Arrow type a column of this type is presented as. Fixed-width types other
    /// than booleans share Arrow's byte layout, so plain files map without a copy.
    pub fn arrow_type(self) -> DataType {
        match self {
            ColumnType::Boolean => DataType::Boolean,
            ColumnType::Byte => DataType::UInt8,
            ColumnType::Short => DataType::Int16,
            ColumnType::Int | ColumnType::Month | ColumnType::Minute => DataType::Int32,
            ColumnType::Long => DataType::Int64,
            ColumnType::Real => DataType::Float32,
            ColumnType::Float => DataType::Float64,
            ColumnType::Char => DataType::FixedSizeBinary(1),
            ColumnType::Symbol => DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
            ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, None),
            ColumnType::Date => DataType::Date32,
            ColumnType::Timespan => DataType::Duration(TimeUnit::Nanosecond),
            ColumnType::Second => DataType::Time32(TimeUnit::Second),
            ColumnType::Time => DataType::Time32(TimeUnit::Millisecond),
            ColumnType::String => DataType::LargeUtf8,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kdb+ attribute: a promise about the order of a column's values that readers use
/// to find rows faster. Writing with an attribute checks the promise first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Attribute {
    /// No promise.
    #[default]
    None = 0,
    /// Values never decrease.
    Sorted = 1,
    /// No value appears twice.
    Unique = 2,
    /// Each distinct value occupies one contiguous run; the runs are indexed.
    Parted = 3,
    /// The rows of each distinct value are indexed.
    Grouped = 4,
}

impl Attribute {
    /// The attribute with kdb+'s code (`s`=1, `u`=2, `p`=3, `g`=4).
    pub fn from_code(code: u8) -> Option<Attribute> {
        [Attribute::None, Attribute::Sorted, Attribute::Unique, Attribute::Parted, Attribute::Grouped]
            .get(code as usize)
            .copied()
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Attribute::None => "none",
            Attribute::Sorted => "sorted",
            Attribute::Unique => "unique",
            Attribute::Parted => "parted",
            Attribute::Grouped => "grouped",
        }
    }

    /// The attribute a name (or kdb+'s letter) denotes.
    pub fn from_name(name: &str) -> Option<Attribute> {
        Some(match name {
            "none" | "" => Attribute::None,
            "sorted" | "s" => Attribute::Sorted,
            "unique" | "u" => Attribute::Unique,
            "parted" | "p" => Attribute::Parted,
            "grouped" | "g" => Attribute::Grouped,
            _ => return None,
        })
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_widths_agree() {
        for t in ColumnType::ALL {
            assert_eq!(ColumnType::from_code(t.code()), Some(t));
            assert_eq!(ColumnType::from_name(t.name()), Some(t));
            assert_eq!(t.element_kind().width, t.width());
        }
        assert_eq!(ColumnType::from_code(3), None);
        assert_eq!(ColumnType::from_name("p"), Some(ColumnType::Timestamp));
        for code in 0..5 {
            assert_eq!(Attribute::from_code(code).unwrap() as u8, code);
        }
    }
}
