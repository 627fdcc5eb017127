//! An update on the wire: the data of `upd[table; x]` checked against the table's
//! schema and held as kdb+ wire bytes, one buffer per column, ready to be copied into
//! a journal record, a published message or the RDB's column builders. Nothing here
//! builds a [`K`]: the tickerplant's hot path is byte copies.
//!
//! `x` may be one row (a list of atoms), a list of columns or a table, with or
//! without the `time` column (the tickerplant adds it: the time of receipt). Any
//! mismatch is an error naming the table, the column and what was expected.

pub mod one_pass;

use strata_ipc::MessageKind;
use strata_ipc::view::{View, fixed_width, texts};

use crate::clock;
use crate::schema::{ColumnKind, TableSchema};

/// The columns of one or more updates of one table, as wire bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WireColumns {
    rows: usize,
    /// Per column: fixed-width values, NUL-terminated symbol texts, or (strings)
    /// whole char vectors one after another.
    columns: Vec<Vec<u8>>,
}

impl WireColumns {
    /// No rows, room for `columns` columns.
    pub fn new(columns: usize) -> WireColumns {
        WireColumns { rows: 0, columns: vec![Vec::new(); columns] }
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The bytes of column `i` (see the type's doc).
    pub fn column(&self, i: usize) -> &[u8] {
        &self.columns[i]
    }

    /// Forgets the rows, keeping the buffers.
    pub fn clear(&mut self) {
        self.rows = 0;
        self.columns.iter_mut().for_each(Vec::clear);
    }

    /// Appends the rows of `other` (same table).
    pub fn extend(&mut self, other: &WireColumns) {
        for (held, new) in self.columns.iter_mut().zip(&other.columns) {
            held.extend_from_slice(new);
        }
        self.rows += other.rows;
    }

    /// Checks `data` against `schema` and appends its rows, adding the time column
    /// (`now_nanos`, local) when `data` has none. On an error nothing is appended.
    pub fn append_update(&mut self, schema: &TableSchema, data: &View<'_>, now_nanos: i64) -> Result<usize, String> {
        match self.try_append(schema, data, now_nanos) {
            Ok(rows) => {
                self.rows += rows;
                Ok(rows)
            }
            Err(e) => {
                // Back to the rows held before (found again rather than remembered:
                // errors are rare, updates are not).
                for (column, kind) in self.columns.iter_mut().zip(&schema.kinds) {
                    let len = row_values(column, *kind).take(self.rows).map(<[u8]>::len).sum();
                    column.truncate(len);
                }
                Err(e)
            }
        }
    }

    fn try_append(&mut self, schema: &TableSchema, data: &View<'_>, now_nanos: i64) -> Result<usize, String> {
        let table = &schema.name;
        let full = schema.columns.len();
        let (items, count) = match data {
            View::Table { columns, .. } => {
                let names = data.symbols().expect("a table has names");
                let expected = if columns + 1 == full { &schema.columns[1..] } else { &schema.columns[..] };
                if *columns != expected.len() || names.clone().zip(expected).any(|(g, e)| g != e.as_bytes()) {
                    let given: Vec<String> = names.map(|g| String::from_utf8_lossy(g).into_owned()).collect();
                    return Err(format!(
                        "{table}: table columns ({}) do not match the schema ({})",
                        given.join(" "),
                        schema.columns.join(" ")
                    ));
                }
                (data.items().expect("a table has columns"), *columns)
            }
            View::List { count, .. } => (data.items().expect("a list has items"), *count),
            other => {
                return Err(format!(
                    "{table}: expected a row, a list of columns or a table, got a {}",
                    other.describe()
                ));
            }
        };
        let with_time = match count {
            n if n == full => true,
            n if n + 1 == full => false,
            n => {
                return Err(format!(
                    "{table}: expected {full} columns ({}) or {} without time, got {n}",
                    schema.columns.join(" "),
                    full - 1
                ));
            }
        };
        let offset = usize::from(!with_time);
        let undecodable = |e: strata_ipc::IpcError| format!("{table}: {e}");
        let sym = items.clone().nth(1 - offset).expect("at least two columns").map_err(undecodable)?;
        let single_row = matches!(sym, View::Atom { .. });
        let rows = sym.count();
        if !with_time {
            self.push_time(schema.kinds[0], rows, now_nanos);
        }
        for (i, item) in items.enumerate() {
            let item = &item.map_err(undecodable)?;
            let at = i + offset;
            let (name, kind) = (&schema.columns[at], schema.kinds[at]);
            let fitted = if single_row {
                push_atom(&mut self.columns[at], item, kind)
            } else {
                push_column(&mut self.columns[at], item, kind)
            };
            match fitted {
                Some(n) if n == rows => {}
                Some(n) => return Err(format!("{table}: column {name} has {n} rows, sym has {rows}")),
                None => {
                    let form = if single_row { "atom" } else { "vector" };
                    return Err(format!("{table}: column {name} expects {} {form}", kind.name()));
                }
            }
        }
        Ok(rows)
    }

    fn push_time(&mut self, kind: ColumnKind, rows: usize, now_nanos: i64) {
        let value = match kind {
            ColumnKind::Vector(12) => clock::kdb_timestamp(now_nanos),
            _ => clock::time_of_day(now_nanos),
        };
        let column = &mut self.columns[0];
        column.reserve(rows * 8);
        for _ in 0..rows {
            column.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// Appends the columns as a list of vectors (or lists of strings), as a
    /// journal record and a published table hold them.
    pub fn write_columns(&self, kinds: &[ColumnKind], out: &mut Vec<u8>) {
        for (kind, bytes) in kinds.iter().zip(&self.columns) {
            match kind {
                ColumnKind::Vector(code) => out.extend_from_slice(&[*code, 0]),
                ColumnKind::Strings => out.extend_from_slice(&[0, 0]),
            }
            out.extend_from_slice(&(self.rows as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }

    /// The rows whose `sym` (column 1) `keep` accepts: `None` when no row is kept
    /// (kdb+tick's `sel`: nothing is sent then), the same columns when every row is.
    pub fn select(&self, kinds: &[ColumnKind], mut keep: impl FnMut(&[u8]) -> bool) -> Option<Selected<'_>> {
        let wanted: Vec<bool> = texts(&self.columns[1]).map(&mut keep).collect();
        let kept = wanted.iter().filter(|&&k| k).count();
        match kept {
            0 => None,
            k if k == self.rows => Some(Selected::All(self)),
            _ => {
                let mut out = WireColumns::new(self.columns.len());
                out.rows = kept;
                for ((bytes, kind), column) in self.columns.iter().zip(kinds).zip(&mut out.columns) {
                    for (value, _) in row_values(bytes, *kind).zip(&wanted).filter(|(_, k)| **k) {
                        column.extend_from_slice(value);
                    }
                }
                Some(Selected::Some(out))
            }
        }
    }
}

/// What a symbol filter leaves of some columns.
pub enum Selected<'a> {
    /// Every row.
    All(&'a WireColumns),
    /// Some rows.
    Some(WireColumns),
}

impl Selected<'_> {
    /// The columns.
    pub fn columns(&self) -> &WireColumns {
        match self {
            Selected::All(c) => c,
            Selected::Some(c) => c,
        }
    }
}

/// Each row's bytes of a column of `kind` (see [`WireColumns`]).
fn row_values(bytes: &[u8], kind: ColumnKind) -> Box<dyn Iterator<Item = &[u8]> + '_> {
    match kind {
        ColumnKind::Vector(11) => Box::new(bytes.split_inclusive(|&b| b == 0)),
        ColumnKind::Vector(code) => Box::new(bytes.chunks_exact(fixed_width(code).expect("a vector type"))),
        ColumnKind::Strings => {
            let mut rest = bytes;
            Box::new(std::iter::from_fn(move || {
                let len = u32::from_le_bytes(rest.get(2..6)?.try_into().expect("4 bytes")) as usize;
                let (item, tail) = rest.split_at(6 + len);
                rest = tail;
                Some(item)
            }))
        }
    }
}

/// Appends one row's value `item` as a column of `kind` holds it; `None` when it does
/// not fit, else the rows it adds (1).
fn push_atom(column: &mut Vec<u8>, item: &View<'_>, kind: ColumnKind) -> Option<usize> {
    match (*item, kind) {
        (View::Atom { code, bytes }, ColumnKind::Vector(want)) if code == want => {
            column.extend_from_slice(bytes);
            if code == 11 {
                column.push(0);
            }
        }
        (View::Vector { code: 10, bytes, .. }, ColumnKind::Strings) => push_string(column, bytes),
        (View::Atom { code: 10, bytes }, ColumnKind::Strings) => push_string(column, bytes),
        _ => return None,
    }
    Some(1)
}

/// Appends a whole column `item`; `None` when it does not fit, else its rows.
fn push_column(column: &mut Vec<u8>, item: &View<'_>, kind: ColumnKind) -> Option<usize> {
    match (*item, kind) {
        (View::Vector { code, count, bytes, .. }, ColumnKind::Vector(want)) if code == want => {
            column.extend_from_slice(bytes);
            Some(count)
        }
        (View::List { count, .. }, ColumnKind::Strings) => {
            let start = column.len();
            for string in item.items().expect("a list has items") {
                match string {
                    Ok(View::Vector { code: 10, bytes, .. }) => push_string(column, bytes),
                    _ => {
                        column.truncate(start);
                        return None;
                    }
                }
            }
            Some(count)
        }
        // An empty general list is q's untyped empty: it fits any column.
        (View::List { count: 0, .. }, _) => Some(0),
        _ => None,
    }
}

fn push_string(column: &mut Vec<u8>, text: &[u8]) {
    column.extend_from_slice(&[10, 0]);
    column.extend_from_slice(&(text.len() as u32).to_le_bytes());
    column.extend_from_slice(text);
}

/// An update message: `(`upd; `table; data)`, the function named by symbol or string
/// (`upd` or `.u.upd`, as feeds and PyKX send it), optionally with a fourth item, the
/// publish time (a timestamp) a tickerplant adds for hop timing. Returns the table's
/// name, the data and that time.
pub fn update_message<'a>(message: &View<'a>) -> Option<(&'a str, View<'a>, Option<i64>)> {
    let View::List { count: 3 | 4, .. } = message else { return None };
    let mut items = message.items()?;
    if !matches!(items.next()?.ok()?.text()?, "upd" | ".u.upd") {
        return None;
    }
    let table = items.next()?.ok()?.text()?;
    let data = items.next()?.ok()?;
    let stamp = match items.next() {
        None => None,
        Some(Ok(View::Atom { code: 12, bytes })) => Some(i64::from_le_bytes(bytes.try_into().ok()?)),
        Some(_) => return None,
    };
    Some((table, data, stamp))
}

/// Appends a symbol atom's wire form.
fn put_symbol(out: &mut Vec<u8>, text: &str) {
    out.push(0xf5);
    out.extend_from_slice(text.as_bytes());
    out.push(0);
}

/// Appends the journal payload of an update of `table`: the wire form of
/// `(`upd; `table; list of columns)`, exactly what kdb+'s tickerplant logs.
pub fn journal_record(out: &mut Vec<u8>, schema: &TableSchema, columns: &WireColumns) {
    out.extend_from_slice(&[0, 0, 3, 0, 0, 0]);
    put_symbol(out, "upd");
    put_symbol(out, &schema.name);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(schema.columns.len() as u32).to_le_bytes());
    columns.write_columns(&schema.kinds, out);
}

/// Appends the async message `(`upd; `table; table[; stamp])` as subscribers receive
/// it (header included, uncompressed); `stamp` is a kdb+ timestamp for hop timing.
pub fn publish_message(out: &mut Vec<u8>, schema: &TableSchema, columns: &WireColumns, stamp: Option<i64>) {
    let start = out.len();
    out.extend_from_slice(&[1, MessageKind::Async as u8, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(if stamp.is_some() { 4u32 } else { 3 }).to_le_bytes());
    put_symbol(out, "upd");
    put_symbol(out, &schema.name);
    out.extend_from_slice(&[98, 0, 99, 11, 0]);
    out.extend_from_slice(&(schema.columns.len() as u32).to_le_bytes());
    for name in &schema.columns {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(schema.columns.len() as u32).to_le_bytes());
    columns.write_columns(&schema.kinds, out);
    if let Some(stamp) = stamp {
        out.push(0xf4);
        out.extend_from_slice(&stamp.to_le_bytes());
    }
    let len = (out.len() - start) as u32;
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use strata_ipc::view::view;
    use strata_ipc::{Atom, K, Table, Vector, decode, to_bytes};

    use super::*;
    use crate::schema::Schema;

    fn trade() -> Schema {
        Schema::parse("sym", "trade time:timespan sym:symbol price:float size:int note:string\n").unwrap()
    }

    /// `data` appended to empty columns of the trade table, or the error.
    fn append(data: &K, now: i64) -> Result<WireColumns, String> {
        let schema = trade();
        let mut columns = WireColumns::new(5);
        let bytes = to_bytes(data);
        columns.append_update(&schema.tables[0], &view(&bytes).unwrap(), now)?;
        Ok(columns)
    }

    /// The columns as q values, through the journal's encoding.
    fn decoded(columns: &WireColumns) -> Vec<K> {
        let mut record = Vec::new();
        journal_record(&mut record, &trade().tables[0], columns);
        let K::List(mut items) = decode(&record, false).unwrap() else { panic!() };
        assert_eq!(items[..2], [K::symbol("upd"), K::symbol("trade")]);
        let K::List(columns) = items.pop().unwrap() else { panic!() };
        columns
    }

    #[test]
    fn rows_columns_and_tables_become_the_same_columns() {
        let row = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Float(1.5)), K::Atom(Atom::Int(100)), K::string("hi")]);
        let one = append(&row, 5 * clock::DAY_NANOS + 42).unwrap();
        assert_eq!(one.rows(), 1);
        let columns = decoded(&one);
        assert_eq!(columns[0], K::vector(Vector::Timespan(vec![42])), "time added");
        assert_eq!(columns[1], K::symbols(["IBM"]));
        assert_eq!(columns[4], K::List(vec![K::string("hi")]));

        let given = vec![
            K::vector(Vector::Timespan(vec![1, 2])),
            K::symbols(["A", "B"]),
            K::vector(Vector::Float(vec![1.0, 2.0])),
            K::vector(Vector::Int(vec![1, 2])),
            K::List(vec![K::string("a"), K::string("b")]),
        ];
        let from_list = append(&K::List(given.clone()), 0).unwrap();
        assert_eq!(decoded(&from_list), given);
        let names = trade().tables[0].columns.clone();
        let table = Table::new(names.into_iter().zip(given.clone()).collect()).unwrap();
        assert_eq!(append(&K::Table(table), 0).unwrap(), from_list);

        let mut both = one.clone();
        both.extend(&from_list);
        assert_eq!(both.rows(), 3);
        assert_eq!(decoded(&both)[1], K::symbols(["IBM", "A", "B"]));
    }

    #[test]
    fn mismatches_name_the_column_and_append_nothing() {
        let wrong_type = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Long(1)), K::Atom(Atom::Int(1)), K::string("")]);
        assert_eq!(append(&wrong_type, 0).unwrap_err(), "trade: column price expects float atom");
        let short = K::List(vec![K::symbol("IBM")]);
        assert!(append(&short, 0).unwrap_err().contains("expected 5 columns (time sym price size note) or 4"));
        let ragged = K::List(vec![
            K::symbols(["A", "B"]),
            K::vector(Vector::Float(vec![1.0])),
            K::vector(Vector::Int(vec![1, 2])),
            K::List(vec![K::string("a"), K::string("b")]),
        ]);
        assert_eq!(append(&ragged, 0).unwrap_err(), "trade: column price has 1 rows, sym has 2");
        assert!(append(&K::Identity, 0).unwrap_err().contains("got a (::)"));
        let renamed = Table::new(vec![("sym".into(), K::symbols(["A"])), ("px".into(), K::symbols(["B"]))]).unwrap();
        assert!(append(&K::Table(renamed), 0).unwrap_err().contains("table columns (sym px) do not match"));

        let schema = trade();
        let mut columns = WireColumns::new(5);
        let good =
            to_bytes(&K::List(vec![K::symbol("A"), K::Atom(Atom::Float(1.0)), K::Atom(Atom::Int(1)), K::string("")]));
        columns.append_update(&schema.tables[0], &view(&good).unwrap(), 0).unwrap();
        let before = columns.clone();
        let bad =
            to_bytes(&K::List(vec![K::symbol("B"), K::Atom(Atom::Float(2.0)), K::Atom(Atom::Long(2)), K::string("")]));
        assert!(columns.append_update(&schema.tables[0], &view(&bad).unwrap(), 0).is_err());
        assert_eq!(columns, before, "a refused update leaves no trace");
    }

    #[test]
    fn symbol_filters_keep_whole_rows() {
        let given = K::List(vec![
            K::symbols(["A", "B", "A"]),
            K::vector(Vector::Float(vec![1.0, 2.0, 3.0])),
            K::vector(Vector::Int(vec![1, 2, 3])),
            K::List(vec![K::string("x"), K::string("yy"), K::string("")]),
        ]);
        let columns = append(&given, 0).unwrap();
        let kinds = trade().tables[0].kinds.clone();
        let only_a = columns.select(&kinds, |s| s == b"A").unwrap();
        let kept = decoded(only_a.columns());
        assert_eq!(kept[1], K::symbols(["A", "A"]));
        assert_eq!(kept[3], K::vector(Vector::Int(vec![1, 3])));
        assert_eq!(kept[4], K::List(vec![K::string("x"), K::string("")]));
        assert!(matches!(columns.select(&kinds, |_| true), Some(Selected::All(_))));
        assert!(columns.select(&kinds, |s| s == b"C").is_none());
    }

    #[test]
    fn published_messages_decode_as_tables() {
        let given = K::List(vec![
            K::symbols(["A"]),
            K::vector(Vector::Float(vec![1.0])),
            K::vector(Vector::Int(vec![1])),
            K::List(vec![K::string("x")]),
        ]);
        let columns = append(&given, 7).unwrap();
        let schema = trade();
        let mut message = Vec::new();
        publish_message(&mut message, &schema.tables[0], &columns, Some(9));
        let (_, value) = strata_ipc::read_message(&mut &message[..], 1 << 20).unwrap().unwrap();
        let K::List(items) = value else { panic!() };
        assert_eq!(items.len(), 4);
        let K::Table(t) = &items[2] else { panic!() };
        assert_eq!(t.names(), schema.tables[0].columns);
        assert_eq!(t.column("time"), Some(&K::vector(Vector::Timespan(vec![7]))));
        assert_eq!(items[3], K::Atom(Atom::Timestamp(9)));
    }
}
