//! Reading kdb+ wire bytes in place: a [`View`] says what a value is and where its
//! bytes lie, without building a [`K`]. The tick plane's hot paths use views to check
//! an update against a schema and copy its columns straight into a journal record, a
//! published message or column builders, with no allocation per message.
//!
//! [`view`] accepts exactly the bytes [`decode`](crate::decode) accepts, but only in
//! little-endian order (what every kdb+ client sends);
//! [`plain_body`](crate::frame::plain_body) rewrites a big-endian body first.
//!
//! ```
//! use strata_ipc::{K, Vector, to_bytes, view::{View, view}};
//! let bytes = to_bytes(&K::List(vec![K::symbol("upd"), K::vector(Vector::Int(vec![7, 8]))]));
//! let View::List { count: 2, .. } = view(&bytes).unwrap() else { panic!() };
//! let mut items = view(&bytes).unwrap().items().unwrap();
//! assert_eq!(items.next().unwrap().unwrap().text(), Some("upd"));
//! let View::Vector { code: 6, count: 2, bytes, .. } = items.next().unwrap().unwrap() else { panic!() };
//! assert_eq!(bytes, [7, 0, 0, 0, 8, 0, 0, 0]);
//! ```

use crate::cursor::Cursor;
use crate::decode::MAX_DEPTH;
use crate::error::IpcError;
use crate::value::{Attribute, K, VectorName, code, type_name};

/// Bytes per element of a fixed-width vector type, `None` for symbols (variable) and
/// for numbers that are not q vector types.
pub fn fixed_width(code: u8) -> Option<usize> {
    match code {
        1 | 4 | 10 => Some(1),
        2 => Some(16),
        5 => Some(2),
        6 | 8 | 13 | 14 | 17 | 18 | 19 => Some(4),
        7 | 9 | 12 | 15 | 16 => Some(8),
        _ => None,
    }
}

/// One q value as it lies in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View<'a> {
    /// An atom of vector type `code` (the wire type is its negation); `bytes` is its
    /// value, for a symbol the text without its NUL.
    Atom {
        /// kdb+ type number of the vector form.
        code: u8,
        /// The value's bytes.
        bytes: &'a [u8],
    },
    /// A vector: for symbols `bytes` holds `count` NUL-terminated texts, otherwise
    /// `count` little-endian values.
    Vector {
        /// kdb+ type number.
        code: u8,
        /// The attribute byte.
        attribute: u8,
        /// Elements.
        count: usize,
        /// The elements' bytes.
        bytes: &'a [u8],
    },
    /// A general list: `count` values laid end to end in `items`.
    List {
        /// Items.
        count: usize,
        /// The items' bytes.
        items: &'a [u8],
    },
    /// A table: column names (NUL-terminated texts) and columns (list items), every
    /// column a vector or a general list of `rows` items.
    Table {
        /// Whether the table has the sorted attribute.
        sorted: bool,
        /// Columns.
        columns: usize,
        /// Rows.
        rows: usize,
        /// The names' bytes.
        names: &'a [u8],
        /// The columns' bytes.
        items: &'a [u8],
    },
    /// Anything else (dictionary, lambda, `(::)`, error): [`decode`](crate::decode)
    /// its bytes when it matters.
    Other {
        /// The wire type.
        wire_type: i8,
        /// kdb+'s count of it.
        count: usize,
        /// The whole value's bytes, type byte included.
        bytes: &'a [u8],
    },
}

impl<'a> View<'a> {
    /// kdb+'s `count`, as [`K::count`] gives it.
    pub fn count(&self) -> usize {
        match self {
            View::Atom { .. } => 1,
            View::Vector { count, .. } | View::List { count, .. } | View::Other { count, .. } => *count,
            View::Table { rows, .. } => *rows,
        }
    }

    /// The text of a symbol atom or a char vector (how q names functions).
    pub fn text(&self) -> Option<&'a str> {
        match self {
            View::Atom { code: 11, bytes } | View::Vector { code: 10, bytes, .. } => std::str::from_utf8(bytes).ok(),
            _ => None,
        }
    }

    /// The items of a list, or the columns of a table.
    pub fn items(&self) -> Option<Items<'a>> {
        match *self {
            View::List { count, items } => Some(Items { cursor: Cursor::rereading(items), left: count }),
            View::Table { columns, items, .. } => Some(Items { cursor: Cursor::rereading(items), left: columns }),
            _ => None,
        }
    }

    /// The texts of a symbol vector, or a table's column names.
    pub fn symbols(&self) -> Option<Symbols<'a>> {
        match *self {
            View::Vector { code: 11, bytes, .. } | View::Table { names: bytes, .. } => Some(Symbols { bytes }),
            _ => None,
        }
    }

    /// A short description for error messages, as [`K::describe`] words it.
    pub fn describe(&self) -> String {
        match self {
            View::Atom { code, .. } => format!("{} atom", type_name(*code)),
            View::Vector { code, .. } => format!("{} vector", type_name(*code)),
            View::List { .. } => "general list".into(),
            View::Table { .. } => "table".into(),
            View::Other { wire_type: code::DICT | code::SORTED_DICT, .. } => "dictionary".into(),
            View::Other { wire_type: code::LAMBDA, .. } => "lambda".into(),
            View::Other { wire_type: code::UNARY, .. } => "(::)".into(),
            View::Other { bytes, .. } => {
                // An error: its type byte, its text, its NUL.
                let text = bytes.get(1..bytes.len().saturating_sub(1)).unwrap_or_default();
                format!("error '{}", String::from_utf8_lossy(text))
            }
        }
    }
}

/// The values of a list (or the columns of a table), in order.
#[derive(Clone)]
pub struct Items<'a> {
    cursor: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<View<'a>, IpcError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The list was checked whole when it was viewed: this cannot fail, but a
        // failure is passed on rather than assumed away.
        Some(self.cursor.value(1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Items<'_> {}

/// The texts of a symbol vector, as bytes (checked UTF-8 when viewed).
#[derive(Clone)]
pub struct Symbols<'a> {
    bytes: &'a [u8],
}

impl<'a> Iterator for Symbols<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let end = self.bytes.iter().position(|&b| b == 0)?;
        let text = &self.bytes[..end];
        self.bytes = &self.bytes[end + 1..];
        Some(text)
    }
}

/// The NUL-terminated texts laid end to end in `bytes` (a symbol vector's bytes, or
/// symbols gathered from atoms), without their NULs; bytes after the last NUL are
/// not a text.
pub fn texts(bytes: &[u8]) -> Symbols<'_> {
    Symbols { bytes }
}

/// The length of the `count` symbols at the start of `bytes`, each with its NUL,
/// when they are all ASCII (so valid UTF-8); `None` when `bytes` holds fewer or any
/// is not ASCII, for a caller that then reads them the checked way ([`view`]).
pub fn ascii_symbols_len(bytes: &[u8], count: usize) -> Option<usize> {
    crate::cursor::nul_run_len(bytes, count).filter(|&len| bytes[..len].is_ascii())
}

/// Views one value that fills `bytes` exactly (a message body after its header, in
/// little-endian order).
pub fn view(bytes: &[u8]) -> Result<View<'_>, IpcError> {
    let mut cursor = Cursor::new(bytes);
    let value = cursor.value(0)?;
    if cursor.pos != bytes.len() {
        return Err(cursor.error(format!("{} bytes left over after a complete value", bytes.len() - cursor.pos)));
    }
    Ok(value)
}

/// The value a view shows, decoded (for slow paths and tests).
pub fn to_value(view: &View<'_>) -> Result<K, IpcError> {
    let mut out = Vec::new();
    write(view, &mut out);
    crate::decode(&out, false)
}

/// Appends the wire form of `view` (what it was read from).
pub fn write(view: &View<'_>, out: &mut Vec<u8>) {
    match *view {
        View::Atom { code, bytes } => {
            out.push((code as i8).wrapping_neg() as u8);
            out.extend_from_slice(bytes);
            if code == 11 {
                out.push(0);
            }
        }
        View::Vector { code, attribute, count, bytes } => {
            out.extend_from_slice(&[code, attribute]);
            out.extend_from_slice(&(count as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        View::List { count, items } => {
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&(count as u32).to_le_bytes());
            out.extend_from_slice(items);
        }
        View::Table { sorted, columns, names, items, .. } => {
            out.extend_from_slice(&[code::TABLE as u8, sorted as u8, code::DICT as u8, 11, 0]);
            out.extend_from_slice(&(columns as u32).to_le_bytes());
            out.extend_from_slice(names);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&(columns as u32).to_le_bytes());
            out.extend_from_slice(items);
        }
        View::Other { bytes, .. } => out.extend_from_slice(bytes),
    }
}

impl<'a> Cursor<'a> {
    fn attribute(&mut self) -> Result<u8, IpcError> {
        let at = self.pos;
        let b = self.byte("an attribute")?;
        match Attribute::from_code(b) {
            Some(_) => Ok(b),
            None => Err(IpcError::Decode {
                offset: at,
                detail: format!("attribute byte {b} is not one of 0 (none), 1 s, 2 u, 3 p, 4 g"),
            }),
        }
    }

    fn count(&mut self, min_item_bytes: usize, what: impl std::fmt::Display) -> Result<usize, IpcError> {
        let at = self.pos;
        let n = i32::from_le_bytes(self.take(4, "a count")?.try_into().expect("4 bytes"));
        let remaining = self.bytes.len() - self.pos;
        if n < 0 || (n as usize).saturating_mul(min_item_bytes) > remaining {
            self.pos = at;
            return Err(self.error(format!("{what} count {n} does not fit the {remaining} bytes that follow")));
        }
        Ok(n as usize)
    }

    fn value(&mut self, depth: usize) -> Result<View<'a>, IpcError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("values nest deeper than {MAX_DEPTH} levels")));
        }
        let at = self.pos;
        let ty = self.byte("a type byte")? as i8;
        match ty {
            -19..=-1 => {
                let code = ty.unsigned_abs();
                let name = type_name(code);
                let article = if name.starts_with('i') { "an" } else { "a" };
                let bytes = match fixed_width(code) {
                    Some(width) => self.take(width, format_args!("{article} {name}")),
                    None if code == 11 => self.symbol(),
                    None => Err(self.error(format!("type -{code} is not a q atom type"))),
                }
                .map_err(|e| relocate(e, at, code))?;
                Ok(View::Atom { code, bytes })
            }
            1..=19 => {
                let code = ty as u8;
                let attribute = self.attribute()?;
                let what = VectorName(code);
                let (count, bytes) = match fixed_width(code) {
                    Some(width) => {
                        let count = self.count(width, what)?;
                        (count, self.take(count * width, "vector data")?)
                    }
                    None if code != 11 => return Err(self.error(format!("type {code} is not a q vector type"))),
                    None => {
                        let count = self.count(1, what)?;
                        (count, self.symbols(count)?)
                    }
                };
                Ok(View::Vector { code, attribute, count, bytes })
            }
            code::LIST => {
                self.attribute()?;
                let count = self.count(2, "list")?;
                let start = self.pos;
                for _ in 0..count {
                    self.value(depth + 1)?;
                }
                Ok(View::List { count, items: &self.bytes[start..self.pos] })
            }
            code::TABLE => self.table(at, depth),
            code::DICT | code::SORTED_DICT => {
                let keys = self.value(depth + 1)?;
                let values = self.value(depth + 1)?;
                if keys.count() != values.count() {
                    return Err(IpcError::Decode {
                        offset: at,
                        detail: format!("dictionary has {} keys but {} values", keys.count(), values.count()),
                    });
                }
                Ok(View::Other { wire_type: ty, count: keys.count(), bytes: &self.bytes[at..self.pos] })
            }
            code::LAMBDA => {
                self.symbol()?;
                match self.value(depth + 1)? {
                    View::Vector { code: 10, .. } => {
                        Ok(View::Other { wire_type: ty, count: 1, bytes: &self.bytes[at..self.pos] })
                    }
                    other => {
                        Err(self.error(format!("a lambda's body must be a char vector, not a {}", other.describe())))
                    }
                }
            }
            code::UNARY => match self.byte("a primitive")? {
                0 => Ok(View::Other { wire_type: ty, count: 1, bytes: &self.bytes[at..self.pos] }),
                op => Err(IpcError::Decode { offset: at, detail: format!("unary primitive {op} is not supported") }),
            },
            code::ERROR => {
                self.symbol()?;
                Ok(View::Other { wire_type: ty, count: 1, bytes: &self.bytes[at..self.pos] })
            }
            other => Err(IpcError::Decode {
                offset: at,
                detail: format!(
                    "type {other} is not supported (atoms -1..-19, vectors 1..19, list 0, table 98, dictionary 99/127, lambda 100, (::), error -128)"
                ),
            }),
        }
    }

    /// A table after its type byte at `at`: attribute, then a dictionary from a
    /// symbol vector to a general list of equally long vectors or lists.
    fn table(&mut self, at: usize, depth: usize) -> Result<View<'a>, IpcError> {
        let sorted = self.attribute()? == Attribute::Sorted as u8;
        let dict_at = self.pos;
        let bad = |detail: &str| IpcError::Decode { offset: dict_at, detail: detail.into() };
        let dict = self.byte("a type byte")? as i8;
        if dict != code::DICT && dict != code::SORTED_DICT {
            self.pos = dict_at;
            let other = self.value(depth + 1)?;
            return Err(bad(&format!("a table holds a dictionary, not a {}", other.describe())));
        }
        let keys = self.value(depth + 2)?;
        let values = self.value(depth + 2)?;
        if keys.count() != values.count() {
            return Err(IpcError::Decode {
                offset: dict_at,
                detail: format!("dictionary has {} keys but {} values", keys.count(), values.count()),
            });
        }
        let (View::Vector { code: 11, count: columns, bytes: names, .. }, View::List { items, .. }) = (keys, values)
        else {
            return Err(bad("a table's dictionary must map a symbol vector to a general list"));
        };
        let mut columns_read = Items { cursor: Cursor::rereading(items), left: columns };
        if self.checked {
            let rows = columns_read.next().transpose()?.map_or(0, |first| first.count());
            return Ok(View::Table { sorted, columns, rows, names, items });
        }
        let mut rows = None;
        let mut names_iter = Symbols { bytes: names };
        let name_of = |text: Option<&[u8]>| String::from_utf8_lossy(text.unwrap_or_default()).into_owned();
        for column in columns_read {
            let column = column?;
            let name = names_iter.next();
            let detail = match column {
                View::Vector { .. } | View::List { .. } => match rows {
                    Some(first) if column.count() != first => {
                        let (name, first_name) = (name_of(name), name_of(Symbols { bytes: names }.next()));
                        format!("table column {name} has {} rows, column {first_name} has {first}", column.count())
                    }
                    _ => {
                        rows = Some(column.count());
                        continue;
                    }
                },
                other => format!("table column {} is a {}, not a vector or list", name_of(name), other.describe()),
            };
            return Err(IpcError::Decode { offset: at, detail });
        }
        Ok(View::Table { sorted, columns, rows: rows.unwrap_or(0), names, items })
    }
}

/// Points an atom's error at its type byte and says which atom it was.
fn relocate(error: IpcError, at: usize, code: u8) -> IpcError {
    match error {
        IpcError::Decode { detail, .. } => {
            IpcError::Decode { offset: at, detail: format!("{} atom: {detail}", type_name(code)) }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Atom, Table, Vector, to_bytes};

    #[test]
    fn tables_show_names_rows_and_columns() {
        let t = Table::new(vec![
            ("sym".into(), K::symbols(["IBM", "MSFT"])),
            ("note".into(), K::List(vec![K::string("a"), K::string("bc")])),
        ])
        .unwrap();
        let bytes = to_bytes(&K::Table(t.clone()));
        let v = view(&bytes).unwrap();
        let View::Table { columns: 2, rows: 2, .. } = v else { panic!("{v:?}") };
        let names: Vec<&[u8]> = v.symbols().unwrap().collect();
        assert_eq!(names, [b"sym".as_slice(), b"note"]);
        let columns: Vec<View> = v.items().unwrap().map(Result::unwrap).collect();
        let syms: Vec<&[u8]> = columns[0].symbols().unwrap().collect();
        assert_eq!(syms, [b"IBM".as_slice(), b"MSFT"]);
        assert_eq!(columns[1].count(), 2);
        assert_eq!(to_value(&v).unwrap(), K::Table(t));
    }

    #[test]
    fn refusals_match_the_decoder() {
        let ragged = [
            98u8, 0, 99, 11, 0, 2, 0, 0, 0, b'a', 0, b'b', 0, 0, 0, 2, 0, 0, 0, 7, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
            0, 7, 0, 0, 0, 0, 0,
        ];
        let by_view = view(&ragged).unwrap_err().to_string();
        let by_decode = crate::decode(&ragged, false).unwrap_err().to_string();
        assert_eq!(by_view, by_decode);
        assert!(by_view.contains("table column b has 0 rows, column a has 1"), "{by_view}");
        for bad in [&[0xfau8, 1, 0][..], &[0x0b, 0, 1, 0, 0, 0, b'a'], &[0, 9, 0, 0, 0, 0], &[3, 0, 0, 0, 0, 0]] {
            assert_eq!(view(bad).unwrap_err().to_string(), crate::decode(bad, false).unwrap_err().to_string());
        }
        assert_eq!(view(&to_bytes(&K::Atom(Atom::Int(1)))).unwrap(), View::Atom { code: 6, bytes: &[1, 0, 0, 0] });
        let long = K::vector(Vector::Long(vec![1]));
        let bytes = to_bytes(&long);
        assert_eq!(to_value(&view(&bytes).unwrap()).unwrap(), long);
    }

    #[test]
    fn symbols_are_checked_once_and_tables_reread_inside_lists() {
        // Non-ASCII text is checked as UTF-8; invalid text is refused by both readers.
        let accented = to_bytes(&K::symbols(["Société", "IBM"]));
        let texts: Vec<&[u8]> = view(&accented).unwrap().symbols().unwrap().collect();
        assert_eq!(texts, ["Société".as_bytes(), b"IBM"]);
        let invalid = [0xf5u8, 0xc3, 0x28, 0];
        let by_view = view(&invalid).unwrap_err().to_string();
        assert!(by_view.contains("not UTF-8"), "{by_view}");
        assert_eq!(by_view, crate::decode(&invalid, false).unwrap_err().to_string());
        // A table met again as a list item keeps its rows and columns.
        let table = Table::new(vec![
            ("sym".into(), K::symbols(["A", "B", "C"])),
            ("px".into(), K::vector(Vector::Float(vec![1.0, 2.0, 3.0]))),
        ])
        .unwrap();
        let message = to_bytes(&K::List(vec![K::symbol("upd"), K::Table(table.clone()), K::symbol("end")]));
        let items: Vec<View> = view(&message).unwrap().items().unwrap().map(Result::unwrap).collect();
        let View::Table { columns: 2, rows: 3, .. } = items[1] else { panic!("{:?}", items[1]) };
        assert_eq!(to_value(&items[1]).unwrap(), K::Table(table));
        assert_eq!(items[2].text(), Some("end"));
    }
}
