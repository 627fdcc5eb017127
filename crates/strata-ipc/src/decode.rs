//! Deserialisation of kdb+'s wire form into q values. Every malformed input is an
//! error naming the byte offset and what was expected, never a panic; lengths are
//! checked against the bytes that remain before anything is allocated, and nesting
//! is bounded so a hostile message cannot exhaust the stack.

use std::ops::{Deref, DerefMut};

use crate::cursor::Cursor;
use crate::encode::Wire;
use crate::error::IpcError;
use crate::value::{Atom, K, Table, Vector, VectorName, code, type_name};
use strata_store::Attribute;

/// Deepest nesting of lists, dictionaries and tables a message may have.
pub const MAX_DEPTH: usize = 64;

/// Decodes one value that fills `bytes` exactly (a message body after its header).
///
/// ```
/// use strata_ipc::{K, Atom, decode};
/// assert_eq!(decode(&[0xfa, 1, 0, 0, 0], false).unwrap(), K::Atom(Atom::Int(1)));
/// let err = decode(&[0xfa, 1, 0], false).unwrap_err().to_string();
/// assert_eq!(err, "malformed message at byte 0: int atom: expected 4 bytes of an int, only 2 remain");
/// ```
pub fn decode(bytes: &[u8], big_endian: bool) -> Result<K, IpcError> {
    let mut reader = Reader { cursor: Cursor::new(bytes), big_endian };
    let value = reader.value(0)?;
    if reader.pos != bytes.len() {
        return Err(reader.error(format!("{} bytes left over after a complete value", bytes.len() - reader.pos)));
    }
    Ok(value)
}

struct Reader<'a> {
    cursor: Cursor<'a>,
    big_endian: bool,
}

// The reader is a cursor that also knows the message's byte order.
impl<'a> Deref for Reader<'a> {
    type Target = Cursor<'a>;
    fn deref(&self) -> &Cursor<'a> {
        &self.cursor
    }
}

impl DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.cursor
    }
}

impl<'a> Reader<'a> {
    fn one<T: Wire>(&mut self, what: &str) -> Result<T, IpcError> {
        let big = self.big_endian;
        Ok(T::get(self.take(T::WIDTH, what)?, big))
    }

    fn count(&mut self, min_item_bytes: usize, what: impl std::fmt::Display) -> Result<usize, IpcError> {
        let at = self.pos;
        let n = self.one::<i32>("a count")?;
        let remaining = self.bytes.len() - self.pos;
        if n < 0 || (n as usize).saturating_mul(min_item_bytes) > remaining {
            self.pos = at;
            return Err(self.error(format!("{what} count {n} does not fit the {remaining} bytes that follow")));
        }
        Ok(n as usize)
    }

    fn symbol(&mut self) -> Result<String, IpcError> {
        let text = self.cursor.symbol()?;
        Ok(String::from_utf8(text.to_vec()).expect("the cursor checked the text is UTF-8"))
    }

    fn many<T: Wire>(&mut self, n: usize) -> Result<Vec<T>, IpcError> {
        let big = self.big_endian;
        let bytes = self.take(n * T::WIDTH, "vector data")?;
        Ok(bytes.chunks_exact(T::WIDTH).map(|b| T::get(b, big)).collect())
    }

    fn attribute(&mut self) -> Result<Attribute, IpcError> {
        let at = self.pos;
        let b = self.byte("an attribute")?;
        Attribute::from_code(b).ok_or_else(|| IpcError::Decode {
            offset: at,
            detail: format!("attribute byte {b} is not one of 0 (none), 1 s, 2 u, 3 p, 4 g"),
        })
    }

    fn value(&mut self, depth: usize) -> Result<K, IpcError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("values nest deeper than {MAX_DEPTH} levels")));
        }
        let at = self.pos;
        let ty = self.byte("a type byte")? as i8;
        match ty {
            code::ERROR => Ok(K::Error(self.symbol()?)),
            -19..=-1 => self.atom((-ty) as u8).map(K::Atom).map_err(|e| relocate(e, at, ty)),
            1..=19 => {
                let attribute = self.attribute()?;
                Ok(K::Vector(self.vector(ty as u8)?, attribute))
            }
            code::LIST => {
                self.attribute()?;
                let n = self.count(2, "list")?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Ok(K::List(items))
            }
            code::DICT | code::SORTED_DICT => {
                let keys = self.value(depth + 1)?;
                let values = self.value(depth + 1)?;
                if keys.count() != values.count() {
                    return Err(IpcError::Decode {
                        offset: at,
                        detail: format!("dictionary has {} keys but {} values", keys.count(), values.count()),
                    });
                }
                Ok(K::Dict { keys: Box::new(keys), values: Box::new(values), sorted: ty == code::SORTED_DICT })
            }
            code::TABLE => {
                let sorted = self.attribute()? == Attribute::Sorted;
                let dict_at = self.pos;
                match self.value(depth + 1)? {
                    K::Dict { keys, values, .. } => {
                        let (K::Vector(Vector::Symbol(names), _), K::List(columns)) = (*keys, *values) else {
                            return Err(IpcError::Decode {
                                offset: dict_at,
                                detail: "a table's dictionary must map a symbol vector to a general list".into(),
                            });
                        };
                        Table::from_parts(names, columns, sorted)
                            .map(K::Table)
                            .map_err(|detail| IpcError::Decode { offset: at, detail })
                    }
                    other => Err(IpcError::Decode {
                        offset: dict_at,
                        detail: format!("a table holds a dictionary, not a {}", other.describe()),
                    }),
                }
            }
            code::LAMBDA => {
                let context = self.symbol()?;
                match self.value(depth + 1)? {
                    K::Vector(Vector::Char(body), _) => {
                        Ok(K::Lambda { context, body: String::from_utf8_lossy(&body).into_owned() })
                    }
                    other => {
                        Err(self.error(format!("a lambda's body must be a char vector, not a {}", other.describe())))
                    }
                }
            }
            code::UNARY => {
                let op = self.byte("a primitive")?;
                if op == 0 {
                    Ok(K::Identity)
                } else {
                    Err(IpcError::Decode { offset: at, detail: format!("unary primitive {op} is not supported") })
                }
            }
            other => Err(IpcError::Decode {
                offset: at,
                detail: format!(
                    "type {other} is not supported (atoms -1..-19, vectors 1..19, list 0, table 98, dictionary 99/127, lambda 100, (::), error -128)"
                ),
            }),
        }
    }

    fn atom(&mut self, code: u8) -> Result<Atom, IpcError> {
        Ok(match code {
            1 => Atom::Boolean(self.one("a boolean")?),
            2 => Atom::Guid(self.one("a guid")?),
            4 => Atom::Byte(self.one("a byte")?),
            5 => Atom::Short(self.one("a short")?),
            6 => Atom::Int(self.one("an int")?),
            7 => Atom::Long(self.one("a long")?),
            8 => Atom::Real(self.one("a real")?),
            9 => Atom::Float(self.one("a float")?),
            10 => Atom::Char(self.one("a char")?),
            11 => Atom::Symbol(self.symbol()?),
            12 => Atom::Timestamp(self.one("a timestamp")?),
            13 => Atom::Month(self.one("a month")?),
            14 => Atom::Date(self.one("a date")?),
            15 => Atom::Datetime(self.one("a datetime")?),
            16 => Atom::Timespan(self.one("a timespan")?),
            17 => Atom::Minute(self.one("a minute")?),
            18 => Atom::Second(self.one("a second")?),
            19 => Atom::Time(self.one("a time")?),
            _ => return Err(self.error(format!("type -{code} is not a q atom type"))),
        })
    }

    fn vector(&mut self, code: u8) -> Result<Vector, IpcError> {
        let width = match code {
            1 | 4 | 10 | 11 => 1,
            2 => 16,
            5 => 2,
            6 | 8 | 13 | 14 | 17 | 18 | 19 => 4,
            7 | 9 | 12 | 15 | 16 => 8,
            _ => return Err(self.error(format!("type {code} is not a q vector type"))),
        };
        let n = self.count(width, VectorName(code))?;
        Ok(match code {
            1 => Vector::Boolean(self.many(n)?),
            2 => Vector::Guid(self.many(n)?),
            4 => Vector::Byte(self.take(n, "bytes")?.to_vec()),
            5 => Vector::Short(self.many(n)?),
            6 => Vector::Int(self.many(n)?),
            7 => Vector::Long(self.many(n)?),
            8 => Vector::Real(self.many(n)?),
            9 => Vector::Float(self.many(n)?),
            10 => Vector::Char(self.take(n, "chars")?.to_vec()),
            11 => Vector::Symbol((0..n).map(|_| self.symbol()).collect::<Result<_, _>>()?),
            12 => Vector::Timestamp(self.many(n)?),
            13 => Vector::Month(self.many(n)?),
            14 => Vector::Date(self.many(n)?),
            15 => Vector::Datetime(self.many(n)?),
            16 => Vector::Timespan(self.many(n)?),
            17 => Vector::Minute(self.many(n)?),
            18 => Vector::Second(self.many(n)?),
            _ => Vector::Time(self.many(n)?),
        })
    }
}

/// Points an atom's error at its type byte and says which atom it was.
fn relocate(error: IpcError, at: usize, ty: i8) -> IpcError {
    match error {
        IpcError::Decode { detail, .. } => {
            IpcError::Decode { offset: at, detail: format!("{} atom: {detail}", type_name((-ty) as u8)) }
        }
        other => other,
    }
}
