//! Serialisation of q values into kdb+'s little-endian wire form (what `-8!` gives,
//! without the 8-byte message header).

use arrow_buffer::ToByteSlice;

use crate::value::{Atom, K, Vector, code};

/// A fixed-width element as kdb+ lays it out: little-endian on encode; decode takes
/// the message's byte order.
pub(crate) trait Wire: Sized + Copy {
    /// Bytes per element.
    const WIDTH: usize;
    /// Appends the little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
    /// Reads one element from exactly `WIDTH` bytes.
    fn get(bytes: &[u8], big_endian: bool) -> Self;
    /// Appends the little-endian bytes of every element.
    fn put_all(values: &[Self], out: &mut Vec<u8>) {
        out.reserve(values.len() * Self::WIDTH);
        for v in values {
            v.put(out);
        }
    }
}

macro_rules! wire_number {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const WIDTH: usize = size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8], big_endian: bool) -> Self {
                let array = bytes.try_into().expect("caller passes WIDTH bytes");
                if big_endian { <$t>::from_be_bytes(array) } else { <$t>::from_le_bytes(array) }
            }
            /// One copy of the whole slice where memory already holds the wire's
            /// byte order.
            fn put_all(values: &[Self], out: &mut Vec<u8>) {
                if cfg!(target_endian = "little") {
                    out.extend_from_slice(values.to_byte_slice());
                } else {
                    out.reserve(values.len() * Self::WIDTH);
                    values.iter().for_each(|v| v.put(out));
                }
            }
        }
    )*};
}

wire_number!(u8, i16, i32, i64, f32, f64);

impl Wire for bool {
    const WIDTH: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn get(bytes: &[u8], _: bool) -> Self {
        bytes[0] != 0
    }
}

impl Wire for [u8; 16] {
    const WIDTH: usize = 16;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self);
    }
    fn get(bytes: &[u8], _: bool) -> Self {
        // GUIDs are byte strings: their order does not depend on the message's.
        bytes.try_into().expect("caller passes 16 bytes")
    }
}

/// Appends the wire form of `value` to `out`.
///
/// ```
/// use strata_ipc::{K, Vector, encode};
/// let mut out = Vec::new();
/// encode(&K::vector(Vector::Int(vec![1])), &mut out);
/// assert_eq!(out, [0x06, 0x00, 0x01, 0, 0, 0, 0x01, 0, 0, 0]);
/// ```
pub fn encode(value: &K, out: &mut Vec<u8>) {
    match value {
        K::Atom(atom) => {
            out.push(value.wire_type() as u8);
            encode_atom(atom, out);
        }
        K::Vector(vector, attribute) => {
            out.push(vector.code());
            out.push(*attribute as u8);
            put_len(vector.len(), out);
            encode_vector(vector, out);
        }
        K::List(items) => {
            out.extend_from_slice(&[code::LIST as u8, 0]);
            put_len(items.len(), out);
            for item in items {
                encode(item, out);
            }
        }
        K::Dict { keys, values, sorted } => {
            out.push(if *sorted { code::SORTED_DICT } else { code::DICT } as u8);
            encode(keys, out);
            encode(values, out);
        }
        K::Table(table) => {
            out.extend_from_slice(&[code::TABLE as u8, table.is_sorted() as u8, code::DICT as u8]);
            out.extend_from_slice(&[11, 0]);
            put_len(table.names().len(), out);
            for name in table.names() {
                put_symbol(name, out);
            }
            out.extend_from_slice(&[code::LIST as u8, 0]);
            put_len(table.columns().len(), out);
            for column in table.columns() {
                encode(column, out);
            }
        }
        K::Lambda { context, body } => {
            out.push(code::LAMBDA as u8);
            put_symbol(context, out);
            encode(&K::string(body), out);
        }
        K::Identity => out.extend_from_slice(&[code::UNARY as u8, 0]),
        K::Error(text) => {
            out.push(code::ERROR as u8);
            put_symbol(text, out);
        }
    }
}

/// The wire form of `value` as a new buffer.
pub fn to_bytes(value: &K) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(value));
    encode(value, &mut out);
    out
}

/// How many bytes [`encode`] appends for `value`, so that a message of a large
/// answer is allocated once instead of grown by doubling (each growth copying
/// all that was written).
pub fn encoded_len(value: &K) -> usize {
    // Type byte, attribute byte and 32-bit count.
    const VECTOR_HEADER: usize = 6;
    match value {
        K::Atom(Atom::Symbol(s)) => 1 + symbol_len(s),
        K::Atom(atom) => 1 + fixed_width(atom.code()),
        K::Vector(Vector::Symbol(v), _) => VECTOR_HEADER + v.iter().map(|s| symbol_len(s)).sum::<usize>(),
        K::Vector(vector, _) => VECTOR_HEADER + vector.len() * fixed_width(vector.code()),
        K::List(items) => VECTOR_HEADER + items.iter().map(encoded_len).sum::<usize>(),
        K::Dict { keys, values, .. } => 1 + encoded_len(keys) + encoded_len(values),
        K::Table(table) => {
            3 + VECTOR_HEADER
                + table.names().iter().map(|n| symbol_len(n)).sum::<usize>()
                + VECTOR_HEADER
                + table.columns().iter().map(encoded_len).sum::<usize>()
        }
        K::Lambda { context, body } => 1 + symbol_len(context) + VECTOR_HEADER + body.len(),
        K::Identity => 2,
        K::Error(text) => 1 + symbol_len(text),
    }
}

/// Bytes of a symbol on the wire: its text up to any NUL, and the NUL.
fn symbol_len(s: &str) -> usize {
    s.bytes().position(|b| b == 0).unwrap_or(s.len()) + 1
}

/// Bytes of one atom or vector element of kdb+ type number `code` (not symbols).
fn fixed_width(code: u8) -> usize {
    match code {
        2 => 16,
        5 => 2,
        6 | 8 | 13 | 14 | 17 | 18 | 19 => 4,
        7 | 9 | 12 | 15 | 16 => 8,
        _ => 1,
    }
}

fn put_len(len: usize, out: &mut Vec<u8>) {
    // Protocol v3 counts are 32-bit; larger vectors need capability 5+ (not offered).
    let len = u32::try_from(len).expect("a q vector holds at most 2^31 elements");
    out.extend_from_slice(&len.to_le_bytes());
}

/// A symbol: its UTF-8 bytes and a terminating NUL. A NUL inside would end it early,
/// so text stops at the first NUL, as q's own symbols do.
fn put_symbol(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    out.extend_from_slice(&bytes[..end]);
    out.push(0);
}

fn encode_atom(atom: &Atom, out: &mut Vec<u8>) {
    match atom {
        Atom::Boolean(v) => v.put(out),
        Atom::Guid(v) => v.put(out),
        Atom::Byte(v) | Atom::Char(v) => v.put(out),
        Atom::Short(v) => v.put(out),
        Atom::Int(v) | Atom::Month(v) | Atom::Date(v) | Atom::Minute(v) | Atom::Second(v) | Atom::Time(v) => v.put(out),
        Atom::Long(v) | Atom::Timestamp(v) | Atom::Timespan(v) => v.put(out),
        Atom::Real(v) => v.put(out),
        Atom::Float(v) | Atom::Datetime(v) => v.put(out),
        Atom::Symbol(s) => put_symbol(s, out),
    }
}

fn encode_vector(vector: &Vector, out: &mut Vec<u8>) {
    match vector {
        Vector::Boolean(v) => Wire::put_all(v, out),
        Vector::Guid(v) => Wire::put_all(v, out),
        Vector::Byte(v) | Vector::Char(v) => out.extend_from_slice(v),
        Vector::Short(v) => Wire::put_all(v, out),
        Vector::Int(v)
        | Vector::Month(v)
        | Vector::Date(v)
        | Vector::Minute(v)
        | Vector::Second(v)
        | Vector::Time(v) => Wire::put_all(v, out),
        Vector::Long(v) | Vector::Timestamp(v) | Vector::Timespan(v) => Wire::put_all(v, out),
        Vector::Real(v) => Wire::put_all(v, out),
        Vector::Float(v) | Vector::Datetime(v) => Wire::put_all(v, out),
        Vector::Symbol(v) => {
            for s in v {
                put_symbol(s, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forms the property tests do not generate: lambdas, every atom width,
    /// symbols cut at a NUL, a sorted dictionary.
    #[test]
    fn encoded_len_is_what_encode_writes() {
        let values = [
            K::Lambda { context: "q".into(), body: "{x+y}".into() },
            K::symbol("ab\0cd"),
            K::Error("type\0more".into()),
            K::symbols(["a\0b", "", "xyz"]),
            K::Atom(Atom::Short(1)),
            K::Atom(Atom::Real(1.0)),
            K::Atom(Atom::Month(1)),
            K::Atom(Atom::Date(1)),
            K::Atom(Atom::Datetime(1.0)),
            K::Atom(Atom::Timespan(1)),
            K::Atom(Atom::Minute(1)),
            K::Atom(Atom::Second(1)),
            K::Atom(Atom::Time(1)),
            K::Atom(Atom::Byte(1)),
            K::vector(Vector::Guid(vec![[7; 16]; 3])),
            K::vector(Vector::Short(vec![1, 2, 3])),
            K::Dict {
                keys: Box::new(K::symbols(["a"])),
                values: Box::new(K::vector(Vector::Long(vec![1]))),
                sorted: true,
            },
        ];
        for value in values {
            assert_eq!(to_bytes(&value).len(), encoded_len(&value), "{value:?}");
        }
    }
}
