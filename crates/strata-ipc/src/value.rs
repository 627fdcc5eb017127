//! q values as they travel over kdb+ IPC: atoms, typed vectors, general lists,
//! dictionaries, tables, lambdas and errors.
//!
//! Temporal values keep kdb+'s wire form: timestamps are nanoseconds and dates days
//! since 2000.01.01, months are months since 2000.01, datetimes are fractional days
//! since 2000.01.01. [`crate::arrow`] converts to Strata's Unix-epoch columns.

use std::fmt;

pub use strata_store::Attribute;

/// Days from 1970.01.01 (Strata's epoch) to 2000.01.01 (kdb+'s).
pub const EPOCH_OFFSET_DAYS: i32 = 10_957;
/// Nanoseconds from 1970.01.01 to 2000.01.01.
pub const EPOCH_OFFSET_NANOS: i64 = EPOCH_OFFSET_DAYS as i64 * 86_400 * 1_000_000_000;
/// Months from 1970.01 to 2000.01.
pub const EPOCH_OFFSET_MONTHS: i32 = 360;

/// Declares the kdb+ types that have both an atom and a vector form, with their
/// type numbers and type characters, so the enums and their dispatch stay in step.
macro_rules! q_types {
    ($($variant:ident($t:ty) = $code:literal, $ch:literal;)*) => {
        /// One q atom (a scalar of a kdb+ type; wire type number is the negative code).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Atom {
            $(
                #[doc = concat!("kdb+ type -", stringify!($code), " (`", $ch, "`).")]
                $variant($t),
            )*
        }

        /// A typed q vector (wire type number is the positive code).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Vector {
            $(
                #[doc = concat!("kdb+ type ", stringify!($code), " (`", $ch, "`).")]
                $variant(Vec<$t>),
            )*
        }

        impl Atom {
            /// kdb+'s type number of the vector form (the atom's wire code is its negation).
            pub fn code(&self) -> u8 {
                match self { $(Atom::$variant(_) => $code,)* }
            }

            /// This atom as a one-element vector (what `enlist` does).
            pub fn enlist(self) -> Vector {
                match self { $(Atom::$variant(v) => Vector::$variant(vec![v]),)* }
            }
        }

        impl Vector {
            /// kdb+'s type number.
            pub fn code(&self) -> u8 {
                match self { $(Vector::$variant(_) => $code,)* }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(Vector::$variant(v) => v.len(),)* }
            }

            /// Whether the vector has no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// An empty vector of kdb+ type `code`, with room for `capacity` elements.
            pub fn with_capacity(code: u8, capacity: usize) -> Option<Vector> {
                match code { $($code => Some(Vector::$variant(Vec::with_capacity(capacity))),)* _ => None }
            }

            /// Element `i` as an atom.
            pub fn get(&self, i: usize) -> Option<Atom> {
                match self { $(Vector::$variant(v) => v.get(i).cloned().map(Atom::$variant),)* }
            }

            /// Appends `atom`; `false` (and no change) when its type differs.
            pub fn push(&mut self, atom: Atom) -> bool {
                match (self, atom) {
                    $((Vector::$variant(v), Atom::$variant(a)) => { v.push(a); true })*
                    _ => false,
                }
            }

            /// Appends every element of `other`; `false` (and no change) when its
            /// type differs.
            pub fn extend_from(&mut self, other: &Vector) -> bool {
                match (self, other) {
                    $((Vector::$variant(v), Vector::$variant(o)) => { v.extend_from_slice(o); true })*
                    _ => false,
                }
            }

            /// The elements at `rows`, in that order.
            pub fn take(&self, rows: &[usize]) -> Vector {
                match self { $(Vector::$variant(v) => Vector::$variant(rows.iter().map(|&r| v[r].clone()).collect()),)* }
            }

            /// Removes every element, keeping the allocation.
            pub fn clear(&mut self) {
                match self { $(Vector::$variant(v) => v.clear(),)* }
            }
        }

        /// kdb+'s type character for type number `code` (`b`, `j`, `s`, ...).
        pub fn type_char(code: u8) -> Option<char> {
            match code { $($code => Some($ch),)* _ => None }
        }

        /// kdb+'s type number for type character `ch`.
        pub fn code_of_char(ch: char) -> Option<u8> {
            match ch { $($ch => Some($code),)* _ => None }
        }
    };
}

q_types! {
    Boolean(bool) = 1, 'b';
    Guid([u8; 16]) = 2, 'g';
    Byte(u8) = 4, 'x';
    Short(i16) = 5, 'h';
    Int(i32) = 6, 'i';
    Long(i64) = 7, 'j';
    Real(f32) = 8, 'e';
    Float(f64) = 9, 'f';
    Char(u8) = 10, 'c';
    Symbol(String) = 11, 's';
    Timestamp(i64) = 12, 'p';
    Month(i32) = 13, 'm';
    Date(i32) = 14, 'd';
    Datetime(f64) = 15, 'z';
    Timespan(i64) = 16, 'n';
    Minute(i32) = 17, 'u';
    Second(i32) = 18, 'v';
    Time(i32) = 19, 't';
}

/// Wire type numbers of the non-atom, non-vector kinds.
pub mod code {
    /// General list.
    pub const LIST: i8 = 0;
    /// Table (flip of a dictionary of columns).
    pub const TABLE: i8 = 98;
    /// Dictionary.
    pub const DICT: i8 = 99;
    /// Lambda: context symbol and source text.
    pub const LAMBDA: i8 = 100;
    /// Unary primitive; value 0 is the identity `(::)`, q's generic null.
    pub const UNARY: i8 = 101;
    /// Dictionary with the sorted attribute (`s#`).
    pub const SORTED_DICT: i8 = 127;
    /// Error.
    pub const ERROR: i8 = -128;
}

/// A q value.
#[derive(Clone, Debug, PartialEq)]
pub enum K {
    /// A scalar.
    Atom(Atom),
    /// A typed vector and its attribute.
    Vector(Vector, Attribute),
    /// A general list (type 0): any values, such as a function call `(`f;x;y)`.
    List(Vec<K>),
    /// A dictionary: keys and values of equal count. Keyed tables are dictionaries
    /// from a table of keys to a table of values.
    Dict {
        /// The keys (a vector, list or table).
        keys: Box<K>,
        /// The values (same count as the keys).
        values: Box<K>,
        /// Whether the dictionary carries the sorted attribute (wire type 127).
        sorted: bool,
    },
    /// A table: named columns of equal length.
    Table(Table),
    /// A lambda's source, e.g. `{x+y}`, and its context (empty for the root).
    Lambda {
        /// The context (namespace) without the dot, empty for the root.
        context: String,
        /// The source text.
        body: String,
    },
    /// The identity `(::)`: what a function without a result returns.
    Identity,
    /// An error, such as a q signal `'type`.
    Error(String),
}

impl K {
    /// A vector without an attribute.
    pub fn vector(values: Vector) -> K {
        K::Vector(values, Attribute::None)
    }

    /// A symbol atom.
    pub fn symbol(s: impl Into<String>) -> K {
        K::Atom(Atom::Symbol(s.into()))
    }

    /// A symbol vector.
    pub fn symbols<S: Into<String>>(items: impl IntoIterator<Item = S>) -> K {
        K::vector(Vector::Symbol(items.into_iter().map(Into::into).collect()))
    }

    /// A char vector (a q string).
    pub fn string(s: &str) -> K {
        K::vector(Vector::Char(s.as_bytes().to_vec()))
    }

    /// A dictionary without the sorted attribute.
    pub fn dict(keys: K, values: K) -> K {
        K::Dict { keys: Box::new(keys), values: Box::new(values), sorted: false }
    }

    /// The text of a symbol atom or a char vector (how q names functions).
    pub fn as_text(&self) -> Option<&str> {
        match self {
            K::Atom(Atom::Symbol(s)) => Some(s),
            K::Vector(Vector::Char(c), _) => std::str::from_utf8(c).ok(),
            _ => None,
        }
    }

    /// The symbols of a symbol atom (one) or symbol vector.
    pub fn as_symbols(&self) -> Option<Vec<&str>> {
        match self {
            K::Atom(Atom::Symbol(s)) => Some(vec![s.as_str()]),
            K::Vector(Vector::Symbol(v), _) => Some(v.iter().map(String::as_str).collect()),
            _ => None,
        }
    }

    /// kdb+'s `count`: elements of a vector or list, rows of a table, entries of a
    /// dictionary, 1 for anything else.
    pub fn count(&self) -> usize {
        match self {
            K::Vector(v, _) => v.len(),
            K::List(items) => items.len(),
            K::Dict { keys, .. } => keys.count(),
            K::Table(t) => t.len(),
            _ => 1,
        }
    }

    /// kdb+'s type number as it appears on the wire (negative for atoms).
    pub fn wire_type(&self) -> i8 {
        match self {
            K::Atom(a) => -(a.code() as i8),
            K::Vector(v, _) => v.code() as i8,
            K::List(_) => code::LIST,
            K::Dict { sorted: false, .. } => code::DICT,
            K::Dict { sorted: true, .. } => code::SORTED_DICT,
            K::Table(_) => code::TABLE,
            K::Lambda { .. } => code::LAMBDA,
            K::Identity => code::UNARY,
            K::Error(_) => code::ERROR,
        }
    }

    /// A short description for error messages: `long vector`, `symbol atom`, ...
    pub fn describe(&self) -> String {
        match self {
            K::Atom(a) => format!("{} atom", type_name(a.code())),
            K::Vector(v, _) => format!("{} vector", type_name(v.code())),
            K::List(_) => "general list".into(),
            K::Dict { .. } => "dictionary".into(),
            K::Table(_) => "table".into(),
            K::Lambda { .. } => "lambda".into(),
            K::Identity => "(::)".into(),
            K::Error(e) => format!("error '{e}"),
        }
    }
}

/// "`type` vector" for error messages, formatted only when one is made (decoding
/// is every message's hot path).
#[derive(Clone, Copy)]
pub(crate) struct VectorName(pub(crate) u8);

impl std::fmt::Display for VectorName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} vector", type_name(self.0))
    }
}

/// kdb+'s name for type number `code` (`long`, `symbol`, ...).
pub fn type_name(code: u8) -> &'static str {
    match code {
        0 => "general",
        1 => "boolean",
        2 => "guid",
        4 => "byte",
        5 => "short",
        6 => "int",
        7 => "long",
        8 => "real",
        9 => "float",
        10 => "char",
        11 => "symbol",
        12 => "timestamp",
        13 => "month",
        14 => "date",
        15 => "datetime",
        16 => "timespan",
        17 => "minute",
        18 => "second",
        19 => "time",
        _ => "unknown",
    }
}

/// A q table: column names and columns of equal length. Columns are vectors, or
/// general lists (such as a string column: a list of char vectors).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    names: Vec<String>,
    columns: Vec<K>,
    sorted: bool,
}

impl Table {
    /// A table of `(name, column)` pairs; every column must be a vector or a general
    /// list and all must have the same count.
    pub fn new(columns: Vec<(String, K)>) -> Result<Table, String> {
        let (names, columns): (Vec<String>, Vec<K>) = columns.into_iter().unzip();
        Table::from_parts(names, columns, false)
    }

    /// A table from names and columns, checking that they match; `sorted` is the
    /// table's `s#` attribute.
    pub fn from_parts(names: Vec<String>, columns: Vec<K>, sorted: bool) -> Result<Table, String> {
        if names.len() != columns.len() {
            return Err(format!("a table has {} column names but {} columns", names.len(), columns.len()));
        }
        for (name, column) in names.iter().zip(&columns) {
            if !matches!(column, K::Vector(..) | K::List(_)) {
                return Err(format!("table column {name} is a {}, not a vector or list", column.describe()));
            }
        }
        if let Some(first) = columns.first().map(K::count)
            && let Some(i) = columns.iter().position(|c| c.count() != first)
        {
            return Err(format!(
                "table column {} has {} rows, column {} has {first}",
                names[i],
                columns[i].count(),
                names[0]
            ));
        }
        Ok(Table { names, columns, sorted })
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, K::count)
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column names in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Columns in order.
    pub fn columns(&self) -> &[K] {
        &self.columns
    }

    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&K> {
        self.names.iter().position(|n| n == name).map(|i| &self.columns[i])
    }

    /// Whether the table has the sorted attribute.
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }

    /// Names and columns, taken apart.
    pub fn into_parts(self) -> (Vec<String>, Vec<K>) {
        (self.names, self.columns)
    }
}

impl fmt::Display for K {
    /// A compact q-like rendering for logs and error messages (not a parser's input).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            K::Atom(Atom::Symbol(s)) => write!(f, "`{s}"),
            K::Atom(a) => write!(f, "{a:?}"),
            K::Vector(Vector::Char(c), _) => write!(f, "{:?}", String::from_utf8_lossy(c)),
            K::Vector(v, _) => write!(f, "{} {} values", v.len(), type_name(v.code())),
            K::List(items) => write!(f, "list of {}", items.len()),
            K::Dict { keys, .. } => write!(f, "dictionary of {}", keys.count()),
            K::Table(t) => write!(f, "table of {} rows ({})", t.len(), t.names.join(" ")),
            K::Lambda { body, .. } => f.write_str(body),
            K::Identity => f.write_str("::"),
            K::Error(e) => write!(f, "'{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes_and_chars_agree() {
        for code in [1u8, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19] {
            let ch = type_char(code).unwrap();
            assert_eq!(code_of_char(ch), Some(code));
            assert_eq!(Vector::with_capacity(code, 0).unwrap().code(), code);
            assert_ne!(type_name(code), "unknown");
        }
        assert_eq!(type_char(3), None);
        assert_eq!(Vector::with_capacity(0, 0), None);
    }

    #[test]
    fn tables_check_their_columns() {
        let ok = Table::new(vec![
            ("a".into(), K::vector(Vector::Long(vec![1, 2]))),
            ("b".into(), K::List(vec![K::string("x"), K::string("y")])),
        ]);
        assert_eq!(ok.unwrap().len(), 2);
        let ragged = Table::new(vec![
            ("a".into(), K::vector(Vector::Long(vec![1, 2]))),
            ("b".into(), K::vector(Vector::Long(vec![1]))),
        ]);
        assert_eq!(ragged.unwrap_err(), "table column b has 1 rows, column a has 2");
        let atom = Table::new(vec![("a".into(), K::Atom(Atom::Long(1)))]);
        assert!(atom.unwrap_err().contains("long atom"));
    }

    #[test]
    fn vectors_grow_only_by_their_own_type() {
        let mut v = Vector::Long(vec![1]);
        assert!(v.push(Atom::Long(2)));
        assert!(!v.push(Atom::Int(3)));
        assert!(v.extend_from(&Vector::Long(vec![3, 4])));
        assert!(!v.extend_from(&Vector::Float(vec![1.0])));
        assert_eq!(v, Vector::Long(vec![1, 2, 3, 4]));
        assert_eq!(v.take(&[3, 0]), Vector::Long(vec![4, 1]));
        assert_eq!(Atom::Symbol("a".into()).enlist(), Vector::Symbol(vec!["a".into()]));
    }
}
