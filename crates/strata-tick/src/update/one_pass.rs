//! The update messages a tick plane carries nearly always, read in one pass against
//! the schema: `(`upd; `t; data)` with one row of atoms, a list of vectors or a table
//! as `data`, and `(`upd; `t; table; stamp)` as a tickerplant publishes it. Each item
//! is checked as it is copied into the table's [`WireColumns`]; the message is not
//! viewed first and no item is walked twice.
//!
//! Anything else, and anything wrong, is left to the general path ([`view`] then
//! [`WireColumns::append_update`]), which accepts it or refuses it with an error
//! naming what was wrong. This path accepts only what that one accepts, with the
//! same columns, so callers try it first and fall back on `None`.
//!
//! [`view`]: strata_ipc::view::view

use strata_ipc::value::code;
use strata_ipc::view::{ascii_symbols_len, fixed_width};

use super::WireColumns;
use crate::schema::{ColumnKind, TableSchema};

/// The type of a symbol vector; its atom's wire type is the negation, as is a
/// timestamp atom's of 12.
const SYMBOLS: u8 = 11;
const SYMBOL_ATOM: i8 = -11;
const TIMESTAMP_ATOM: i8 = -12;

/// An update read in one pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnePass {
    /// The table's number in the schema.
    pub table: usize,
    /// Rows appended.
    pub rows: usize,
    /// The publish time, for a message that carries one.
    pub stamp: Option<i64>,
}

/// Whether a message may carry a publish time (a fourth item): subscribers take it,
/// a tickerplant does not (its general path answers such a message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// `(`upd; `t; data)` only.
    Refused,
    /// Also `(`upd; `t; data; timestamp)`.
    Accepted,
}

/// Reads `body` (a whole message body, plain and little-endian) as an update of
/// one of `tables`, appending its rows to that table's entry of `scratch`, which
/// must hold no rows (the time column is added, at `now_nanos`, when `data` has
/// none). `None`, with `scratch` as it was, when the message is not of a shape
/// read here or not right: the general path then decides.
pub fn read_update<'s>(
    body: &[u8],
    tables: impl IntoIterator<Item = &'s TableSchema>,
    scratch: &mut [WireColumns],
    now_nanos: i64,
    stamp: Stamp,
) -> Option<OnePass> {
    let mut bytes = Bytes { bytes: body, pos: 0 };
    let items = bytes.list_header()?;
    if !(items == 3 || (items == 4 && stamp == Stamp::Accepted)) {
        return None;
    }
    if !matches!(bytes.symbol_atom()?, b"upd" | b".u.upd") {
        return None;
    }
    let name = bytes.symbol_atom()?;
    let (table, schema) = tables.into_iter().enumerate().find(|(_, t)| t.name.as_bytes() == name)?;
    let columns = scratch.get_mut(table).filter(|c| c.is_empty())?;
    let read = columns.read_data(&mut bytes, schema, now_nanos).and_then(|rows| {
        let stamp = if items == 4 { Some(bytes.timestamp_atom()?) } else { None };
        (bytes.pos == body.len()).then_some(OnePass { table, rows, stamp })
    });
    match read {
        Some(read) => columns.rows = read.rows,
        None => columns.clear(),
    }
    read
}

impl WireColumns {
    /// Appends the rows of `data` (one row of atoms, a list of vectors or a table),
    /// leaving the row count to the caller; `None` on anything else.
    fn read_data(&mut self, bytes: &mut Bytes<'_>, schema: &TableSchema, now_nanos: i64) -> Option<usize> {
        let full = schema.kinds.len();
        let (given, single_row) = match bytes.byte()? as i8 {
            code::LIST => {
                let given = bytes.list_after_type()?;
                // One row is a list of atoms, as feeds send it.
                (given, (*bytes.bytes.get(bytes.pos)? as i8) < 0)
            }
            code::TABLE => {
                bytes.attribute()?;
                if !matches!(bytes.byte()? as i8, code::DICT | code::SORTED_DICT) || bytes.byte()? != SYMBOLS {
                    return None;
                }
                bytes.attribute()?;
                let given = bytes.count()?;
                let names = schema.columns.get(full.checked_sub(given)?..)?;
                if given == 0 || names.iter().any(|name| bytes.symbol() != Some(name.as_bytes())) {
                    return None;
                }
                ((bytes.list_header()? == given).then_some(given)?, false)
            }
            _ => return None,
        };
        let offset = full.checked_sub(given).filter(|&o| o <= 1 && given > 0)?;
        let mut rows = None;
        for (column, kind) in self.columns[offset..].iter_mut().zip(&schema.kinds[offset..]) {
            let ColumnKind::Vector(ty) = *kind else { return None };
            let count = if single_row { bytes.atom(ty, column)? } else { bytes.vector(ty, column)? };
            if *rows.get_or_insert(count) != count {
                return None;
            }
        }
        let rows = rows?;
        if offset == 1 {
            self.push_time(schema.kinds[0], rows, now_nanos);
        }
        Some(rows)
    }
}

/// A position in a message body; every read is bounds-checked and gives `None`
/// past the end.
struct Bytes<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len())?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Some(taken)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    /// An attribute byte, one of the five kdb+ has.
    fn attribute(&mut self) -> Option<u8> {
        self.byte().filter(|&a| a <= 4)
    }

    fn count(&mut self) -> Option<usize> {
        let n = i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        usize::try_from(n).ok()
    }

    /// A general list's item count, from its type byte on.
    fn list_header(&mut self) -> Option<usize> {
        (self.byte()? as i8 == code::LIST).then_some(())?;
        self.list_after_type()
    }

    fn list_after_type(&mut self) -> Option<usize> {
        self.attribute()?;
        self.count()
    }

    /// `count` ASCII symbols, each with its NUL.
    fn symbol_run(&mut self, count: usize) -> Option<&'a [u8]> {
        let len = ascii_symbols_len(self.bytes.get(self.pos..)?, count)?;
        self.take(len)
    }

    /// An ASCII symbol's text; its NUL is read too.
    fn symbol(&mut self) -> Option<&'a [u8]> {
        self.symbol_run(1).map(|run| &run[..run.len() - 1])
    }

    fn symbol_atom(&mut self) -> Option<&'a [u8]> {
        (self.byte()? as i8 == SYMBOL_ATOM).then_some(())?;
        self.symbol()
    }

    fn timestamp_atom(&mut self) -> Option<i64> {
        (self.byte()? as i8 == TIMESTAMP_ATOM).then_some(())?;
        Some(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// An atom of vector type `ty`, appended to `column` as [`WireColumns`] holds
    /// it; the rows it adds (1).
    fn atom(&mut self, ty: u8, column: &mut Vec<u8>) -> Option<usize> {
        (self.byte()? as i8 == (ty as i8).wrapping_neg()).then_some(())?;
        let value = match ty {
            SYMBOLS => self.symbol_run(1)?,
            _ => self.take(fixed_width(ty)?)?,
        };
        column.extend_from_slice(value);
        Some(1)
    }

    /// A vector of type `ty`, appended to `column`; its length.
    fn vector(&mut self, ty: u8, column: &mut Vec<u8>) -> Option<usize> {
        (self.byte()? == ty).then_some(())?;
        self.attribute()?;
        let count = self.count()?;
        let values = match ty {
            SYMBOLS => self.symbol_run(count)?,
            _ => self.take(count.checked_mul(fixed_width(ty)?)?)?,
        };
        column.extend_from_slice(values);
        Some(count)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use strata_ipc::view::view;
    use strata_ipc::{Atom, K, Table, Vector, to_bytes};

    use super::*;
    use crate::schema::Schema;
    use crate::update::update_message;

    const NOW: i64 = 3 * crate::clock::DAY_NANOS + 77;

    fn schema() -> Schema {
        Schema::parse(
            "sym",
            "quote time:timespan sym:symbol bid:float\ntrade time:timespan sym:symbol ex:char size:int\n",
        )
        .unwrap()
    }

    /// An update as read: the table's number, its columns and the stamp.
    type Read = (usize, WireColumns, Option<i64>);

    /// What the one-pass reader made of `body`.
    fn one_pass(body: &[u8], stamp: Stamp) -> Option<Read> {
        let schema = schema();
        let mut scratch: Vec<WireColumns> = schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect();
        match read_update(body, &schema.tables, &mut scratch, NOW, stamp) {
            Some(read) => {
                assert_eq!(scratch[read.table].rows(), read.rows);
                Some((read.table, scratch.swap_remove(read.table), read.stamp))
            }
            None => {
                assert!(scratch.iter().all(|c| c.is_empty() && c.columns.iter().all(Vec::is_empty)), "left as it was");
                None
            }
        }
    }

    /// What the general path makes of `body`: `None` when it is not an update at
    /// all, else the update's columns or the error refusing it.
    fn general(body: &[u8], stamp: Stamp) -> Option<Result<Read, String>> {
        let schema = schema();
        let message = view(body).ok()?;
        let (table, data, carried) = update_message(&message)?;
        if carried.is_some() && stamp == Stamp::Refused {
            return None;
        }
        let Some(at) = schema.tables.iter().position(|t| t.name == table) else {
            return Some(Err(format!("no table {table}")));
        };
        let mut columns = WireColumns::new(schema.tables[at].columns.len());
        Some(columns.append_update(&schema.tables[at], &data, NOW).map(|_| (at, columns, carried)))
    }

    fn upd(table: &str, data: K) -> Vec<u8> {
        to_bytes(&K::List(vec![K::symbol(".u.upd"), K::symbol(table), data]))
    }

    fn trade_columns(rows: usize, with_time: bool) -> Vec<K> {
        let mut columns = vec![
            K::symbols((0..rows).map(|i| format!("S{i}"))),
            K::vector(Vector::Char((0..rows).map(|i| b'A' + i as u8).collect())),
            K::vector(Vector::Int((0..rows as i32).collect())),
        ];
        if with_time {
            columns.insert(0, K::vector(Vector::Timespan((0..rows as i64).collect())));
        }
        columns
    }

    #[test]
    fn the_common_shapes_are_read_as_the_general_path_reads_them() {
        let row = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Char(b'N')), K::Atom(Atom::Int(100))]);
        let timed_row = K::List(vec![
            K::Atom(Atom::Timespan(5)),
            K::symbol("IBM"),
            K::Atom(Atom::Char(b'N')),
            K::Atom(Atom::Int(100)),
        ]);
        let names = |with_time: bool| ["time", "sym", "ex", "size"][usize::from(!with_time)..].to_vec();
        let table = |with_time: bool| {
            K::Table(
                Table::new(names(with_time).into_iter().map(String::from).zip(trade_columns(3, with_time)).collect())
                    .unwrap(),
            )
        };
        let published = to_bytes(&K::List(vec![
            K::symbol("upd"),
            K::symbol("trade"),
            table(true),
            K::Atom(Atom::Timestamp(12345)),
        ]));
        let messages = [
            upd("trade", row),
            upd("trade", timed_row),
            upd("trade", K::List(trade_columns(4, false))),
            upd("trade", K::List(trade_columns(4, true))),
            upd("trade", K::List(trade_columns(0, true))),
            upd("trade", table(false)),
            upd("trade", table(true)),
            upd("quote", K::List(vec![K::symbols(["A", "B"]), K::vector(Vector::Float(vec![1.0, 2.0]))])),
        ];
        for body in messages.iter().chain([&published]) {
            let read = one_pass(body, Stamp::Accepted).unwrap_or_else(|| panic!("not read in one pass: {body:?}"));
            assert_eq!(Some(Ok(read)), general(body, Stamp::Accepted));
        }
        assert_eq!(one_pass(&published, Stamp::Accepted).unwrap().2, Some(12345));
        let time = one_pass(&messages[0], Stamp::Refused).unwrap().1;
        assert_eq!(time.column(0), (77i64).to_le_bytes(), "time added at receipt: the time of day");
    }

    #[test]
    fn other_shapes_and_mistakes_are_left_to_the_general_path() {
        let published = to_bytes(&K::List(vec![
            K::symbol("upd"),
            K::symbol("trade"),
            K::List(trade_columns(1, true)),
            K::Atom(Atom::Timestamp(1)),
        ]));
        let mixed = K::List(vec![K::symbol("IBM"), K::vector(Vector::Char(vec![b'N'])), K::Atom(Atom::Int(1))]);
        let ragged = K::List(vec![
            K::symbols(["A", "B"]),
            K::vector(Vector::Char(vec![b'N'])),
            K::vector(Vector::Int(vec![1, 2])),
        ]);
        let wrong_type = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Char(b'N')), K::Atom(Atom::Long(1))]);
        let unicode = K::List(vec![K::symbol("caf\u{e9}"), K::Atom(Atom::Char(b'N')), K::Atom(Atom::Int(1))]);
        let cases = [
            (published, Stamp::Refused),
            (upd("trade", mixed), Stamp::Accepted),
            (upd("trade", ragged), Stamp::Accepted),
            (upd("trade", wrong_type), Stamp::Accepted),
            (upd("nosuch", K::List(trade_columns(1, false))), Stamp::Accepted),
            (upd("trade", K::List(trade_columns(1, false)[..2].to_vec())), Stamp::Accepted),
            (upd("trade", unicode.clone()), Stamp::Accepted),
            (to_bytes(&K::List(vec![K::symbol("sub"), K::symbol("trade"), K::List(vec![])])), Stamp::Accepted),
        ];
        for (body, stamp) in &cases {
            assert_eq!(one_pass(body, *stamp), None, "{body:?}");
        }
        // The general path refuses the mistakes and accepts what was only unusual.
        assert!(matches!(general(&cases[2].0, Stamp::Accepted), Some(Err(e)) if e.contains("has 1 rows")));
        assert!(matches!(general(&upd("trade", unicode), Stamp::Accepted), Some(Ok(_))));
    }

    /// Update messages of every shape read here, right and wrong, before mutation.
    fn any_update() -> impl Strategy<Value = Vec<u8>> {
        let rows = 0usize..4;
        (rows, any::<bool>(), 0u8..4, any::<bool>()).prop_map(|(rows, with_time, shape, stamped)| {
            let data = match shape {
                0 => K::List(trade_columns(rows, with_time)),
                1 => K::Table(
                    Table::new(
                        ["time", "sym", "ex", "size"][usize::from(!with_time)..]
                            .iter()
                            .map(|s| s.to_string())
                            .zip(trade_columns(rows.max(1), with_time))
                            .collect(),
                    )
                    .unwrap(),
                ),
                2 => K::List(vec![K::symbol("IBM"), K::Atom(Atom::Char(b'N')), K::Atom(Atom::Int(rows as i32))]),
                _ => K::List(vec![K::symbols(["A"]), K::vector(Vector::Float(vec![1.5]))]),
            };
            let table = if shape == 3 { "quote" } else { "trade" };
            let mut items = vec![K::symbol("upd"), K::symbol(table), data];
            if stamped {
                items.push(K::Atom(Atom::Timestamp(9)));
            }
            to_bytes(&K::List(items))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whatever the one-pass reader accepts, even from damaged, cut or
        /// lengthened bytes, the general path accepts with the same columns.
        #[test]
        fn one_pass_accepts_only_what_the_general_path_accepts(
            body in any_update(),
            // Small values are type, attribute and count bytes.
            damage in proptest::collection::vec((any::<prop::sample::Index>(), prop_oneof![0u8..24, any::<u8>()]), 0..3),
            cut in proptest::option::of(any::<prop::sample::Index>()),
            tail in proptest::collection::vec(any::<u8>(), 0..2),
            accepted in any::<bool>(),
        ) {
            let mut body = body;
            body.extend(tail);
            for (at, byte) in damage {
                let at = at.index(body.len());
                body[at] = byte;
            }
            if let Some(cut) = cut {
                body.truncate(cut.index(body.len()));
            }
            let stamp = if accepted { Stamp::Accepted } else { Stamp::Refused };
            if let Some(read) = one_pass(&body, stamp) {
                prop_assert_eq!(Some(Ok(read)), general(&body, stamp));
            }
        }
    }
}
