//! Table schemas for a tickerplant, and turning each `upd` into columns that fit.
//!
//! A schema file has one table per line: its name, then `column:type` pairs, with
//! kdb+'s type names or letters (`timespan`/`n`, `symbol`/`s`, `float`/`f`, ...,
//! `string` for text). As in kdb+tick the first two columns must be `time` (a
//! timespan or timestamp) and `sym` (a symbol). `#` starts a comment.
//!
//! ```text
//! trade time:timespan sym:symbol price:float size:int cond:char
//! quote time:timespan sym:symbol bid:float ask:float bsize:int asize:int
//! ```

use std::path::Path;

use strata_ipc::{Atom, Attribute, K, Table, Vector, value::type_name};
use strata_store::ColumnType;

use crate::clock;
use crate::error::TickError;

/// How one column's values travel: a typed vector, or a list of strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// A vector of kdb+ type number `code`.
    Vector(u8),
    /// A general list of char vectors (Strata's string column).
    Strings,
}

impl ColumnKind {
    fn name(self) -> &'static str {
        match self {
            ColumnKind::Vector(code) => type_name(code),
            ColumnKind::Strings => "string",
        }
    }

    /// An empty column of this kind.
    pub fn empty(self) -> K {
        match self {
            ColumnKind::Vector(code) => {
                K::vector(Vector::with_capacity(code, 0).expect("schema codes are vector types"))
            }
            ColumnKind::Strings => K::List(Vec::new()),
        }
    }
}

/// One table's columns.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSchema {
    /// The table's name.
    pub name: String,
    /// Column names, `time` and `sym` first.
    pub columns: Vec<String>,
    /// Column kinds, in the same order.
    pub kinds: Vec<ColumnKind>,
}

/// Columns that fit a table, ready to log and publish.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// One column per schema column, each `rows` long.
    pub columns: Vec<K>,
    /// Rows in the update.
    pub rows: usize,
}

impl TableSchema {
    /// The empty table, with `g#` on `sym` as kdb+tick hands it to subscribers.
    pub fn empty_table(&self) -> Table {
        let columns = self
            .columns
            .iter()
            .zip(&self.kinds)
            .map(|(name, kind)| {
                let mut column = kind.empty();
                if name == "sym"
                    && let K::Vector(_, attribute) = &mut column
                {
                    *attribute = Attribute::Grouped;
                }
                (name.clone(), column)
            })
            .collect();
        Table::new(columns).expect("empty columns")
    }

    fn describe_columns(&self) -> String {
        self.columns.join(" ")
    }

    /// Turns the data of `upd[table; x]` into whole columns. `x` may be one row (a
    /// list of atoms), a list of columns, or a table, with or without the `time`
    /// column; a missing time column is filled with `now_nanos` (local time). Any
    /// mismatch is an error naming the table, the column, and what was expected.
    pub fn normalize(&self, x: K, now_nanos: i64) -> Result<Update, String> {
        let items = match x {
            K::Table(t) => {
                let (names, columns) = t.into_parts();
                let expected =
                    if names.len() + 1 == self.columns.len() { &self.columns[1..] } else { &self.columns[..] };
                if names != expected {
                    return Err(format!(
                        "{}: table columns ({}) do not match the schema ({})",
                        self.name,
                        names.join(" "),
                        self.describe_columns()
                    ));
                }
                columns
            }
            K::List(items) => items,
            other => {
                return Err(format!(
                    "{}: expected a row, a list of columns or a table, got a {}",
                    self.name,
                    other.describe()
                ));
            }
        };
        let full = self.columns.len();
        let with_time = match items.len() {
            n if n == full => true,
            n if n + 1 == full => false,
            n => {
                return Err(format!(
                    "{}: expected {full} columns ({}) or {} without time, got {n}",
                    self.name,
                    self.describe_columns(),
                    full - 1
                ));
            }
        };
        let sym_item = &items[if with_time { 1 } else { 0 }];
        let single_row = matches!(sym_item, K::Atom(_));
        let rows = if single_row { 1 } else { sym_item.count() };
        let mut columns = Vec::with_capacity(full);
        if !with_time {
            columns.push(self.time_column(rows, now_nanos));
        }
        let offset = if with_time { 0 } else { 1 };
        for (i, item) in items.into_iter().enumerate() {
            let (name, kind) = (&self.columns[i + offset], self.kinds[i + offset]);
            let column = if single_row { enlist(item, kind) } else { Some(item).filter(|c| fits(c, kind)) };
            let column = column.ok_or_else(|| {
                format!(
                    "{}: column {name} expects {} {}",
                    self.name,
                    kind.name(),
                    if single_row { "atom" } else { "vector" }
                )
            })?;
            if column.count() != rows {
                return Err(format!("{}: column {name} has {} rows, sym has {rows}", self.name, column.count()));
            }
            columns.push(column);
        }
        Ok(Update { columns, rows })
    }

    fn time_column(&self, rows: usize, now_nanos: i64) -> K {
        let vector = match self.kinds[0] {
            ColumnKind::Vector(12) => Vector::Timestamp(vec![clock::kdb_timestamp(now_nanos); rows]),
            _ => Vector::Timespan(vec![clock::time_of_day(now_nanos); rows]),
        };
        K::vector(vector)
    }
}

/// Whether `column` is a whole column of `kind`.
fn fits(column: &K, kind: ColumnKind) -> bool {
    match (column, kind) {
        (K::Vector(v, _), ColumnKind::Vector(code)) => v.code() == code,
        (K::List(items), ColumnKind::Strings) => items.iter().all(|i| matches!(i, K::Vector(Vector::Char(_), _))),
        // An empty general list is q's untyped empty: it fits any column.
        (K::List(items), _) => items.is_empty(),
        _ => false,
    }
}

/// One row's value as a one-row column, if it has the column's type.
fn enlist(item: K, kind: ColumnKind) -> Option<K> {
    match (item, kind) {
        (K::Atom(a), ColumnKind::Vector(code)) if a.code() == code => Some(K::vector(a.enlist())),
        (K::Vector(Vector::Char(c), _), ColumnKind::Strings) => Some(K::List(vec![K::vector(Vector::Char(c))])),
        (K::Atom(Atom::Char(c)), ColumnKind::Strings) => Some(K::List(vec![K::vector(Vector::Char(vec![c]))])),
        _ => None,
    }
}

/// Every table a tickerplant carries, from one schema file.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// The schema's name (the file name without extension): journals are
    /// `<name>YYYY.MM.DD`.
    pub name: String,
    /// The tables, in file order.
    pub tables: Vec<TableSchema>,
}

impl Schema {
    /// Reads a schema file.
    pub fn load(path: &Path) -> Result<Schema, TickError> {
        let text = std::fs::read_to_string(path).map_err(|e| TickError::io(path, e))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sym").to_string();
        Schema::parse(&name, &text).map_err(|e| TickError::Schema(format!("{}: {e}", path.display())))
    }

    /// Parses schema text (see the module doc).
    pub fn parse(name: &str, text: &str) -> Result<Schema, String> {
        let mut tables: Vec<TableSchema> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            let Some(table) = words.next() else { continue };
            let at = |what: String| format!("line {}: {what}", n + 1);
            if !strata_store::is_valid_name(table) {
                return Err(at(format!("table name {table:?} is not an identifier")));
            }
            if tables.iter().any(|t| t.name == table) {
                return Err(at(format!("table {table} is defined twice")));
            }
            let mut schema = TableSchema { name: table.to_string(), columns: Vec::new(), kinds: Vec::new() };
            for word in words {
                let (column, ty) = word
                    .split_once(':')
                    .ok_or_else(|| at(format!("{word:?} should be column:type, e.g. price:float")))?;
                let ty =
                    ColumnType::from_name(ty).ok_or_else(|| at(format!("column {column}: unknown type {ty:?}")))?;
                if !strata_store::is_valid_name(column) || schema.columns.iter().any(|c| c == column) {
                    return Err(at(format!("column name {column:?} is not an identifier or repeats")));
                }
                schema.columns.push(column.to_string());
                schema.kinds.push(match ty {
                    ColumnType::String => ColumnKind::Strings,
                    other => ColumnKind::Vector(other.code()),
                });
            }
            let time_ok = matches!(schema.kinds.first(), Some(ColumnKind::Vector(12 | 16)));
            let sym_ok = schema.kinds.get(1) == Some(&ColumnKind::Vector(11));
            if schema.columns.len() < 2
                || schema.columns[0] != "time"
                || schema.columns[1] != "sym"
                || !time_ok
                || !sym_ok
            {
                return Err(at(format!(
                    "table {table}: the first two columns must be time (timespan or timestamp) and sym (symbol), as in kdb+tick"
                )));
            }
            tables.push(schema);
        }
        if tables.is_empty() {
            return Err("no tables defined".into());
        }
        Ok(Schema { name: name.to_string(), tables })
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The schema of a table as a subscriber received it (`.u.sub`'s answer).
    pub fn from_tables(name: &str, tables: &[(String, Table)]) -> Result<Schema, String> {
        let tables = tables
            .iter()
            .map(|(table, empty)| {
                let kinds = empty
                    .columns()
                    .iter()
                    .zip(empty.names())
                    .map(|(c, n)| match c {
                        K::Vector(v, _) => Ok(ColumnKind::Vector(v.code())),
                        K::List(_) => Ok(ColumnKind::Strings),
                        other => Err(format!("{table}: column {n} is a {}", other.describe())),
                    })
                    .collect::<Result<_, String>>()?;
                Ok(TableSchema { name: table.clone(), columns: empty.names().to_vec(), kinds })
            })
            .collect::<Result<_, String>>()?;
        Ok(Schema { name: name.to_string(), tables })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trade() -> Schema {
        Schema::parse("sym", "# the seed's trade\ntrade time:timespan sym:symbol price:float size:int note:string\n")
            .unwrap()
    }

    #[test]
    fn rows_columns_and_tables_normalize() {
        let schema = trade();
        let t = schema.table("trade").unwrap();
        let row = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Float(1.5)), K::Atom(Atom::Int(100)), K::string("hi")]);
        let update = t.normalize(row, 5 * clock::DAY_NANOS + 42).unwrap();
        assert_eq!(update.rows, 1);
        assert_eq!(update.columns[0], K::vector(Vector::Timespan(vec![42])), "time added");
        assert_eq!(update.columns[4], K::List(vec![K::string("hi")]));
        let columns = K::List(vec![
            K::vector(Vector::Timespan(vec![1, 2])),
            K::symbols(["A", "B"]),
            K::vector(Vector::Float(vec![1.0, 2.0])),
            K::vector(Vector::Int(vec![1, 2])),
            K::List(vec![K::string("a"), K::string("b")]),
        ]);
        let update = t.normalize(columns.clone(), 0).unwrap();
        assert_eq!(update.rows, 2);
        let K::List(items) = columns else { unreachable!() };
        let table = Table::new(t.columns.iter().cloned().zip(items).collect()).unwrap();
        assert_eq!(t.normalize(K::Table(table), 0).unwrap(), update);
    }

    #[test]
    fn mismatches_name_the_column() {
        let schema = trade();
        let t = schema.table("trade").unwrap();
        let wrong_type = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Long(1)), K::Atom(Atom::Int(1)), K::string("")]);
        assert_eq!(t.normalize(wrong_type, 0).unwrap_err(), "trade: column price expects float atom");
        let short = K::List(vec![K::symbol("IBM")]);
        assert!(t.normalize(short, 0).unwrap_err().contains("expected 5 columns (time sym price size note)"));
        let ragged = K::List(vec![
            K::symbols(["A", "B"]),
            K::vector(Vector::Float(vec![1.0])),
            K::vector(Vector::Int(vec![1, 2])),
            K::List(vec![K::string("a"), K::string("b")]),
        ]);
        assert_eq!(t.normalize(ragged, 0).unwrap_err(), "trade: column price has 1 rows, sym has 2");
        assert!(t.normalize(K::Identity, 0).unwrap_err().contains("got a (::)"));
    }

    #[test]
    fn schema_files_follow_kdb_tick_rules() {
        assert!(Schema::parse("s", "t sym:symbol time:timespan\n").unwrap_err().contains("line 1"));
        assert!(Schema::parse("s", "t time:timespan sym:symbol x:blob\n").unwrap_err().contains("unknown type"));
        assert!(Schema::parse("s", "\n# nothing\n").unwrap_err().contains("no tables"));
        let s = Schema::parse("s", "q time:p sym:s bid:f\n").unwrap();
        assert_eq!(s.tables[0].kinds, [ColumnKind::Vector(12), ColumnKind::Vector(11), ColumnKind::Vector(9)]);
        let empty = s.tables[0].empty_table();
        assert_eq!(empty.len(), 0);
        let back = Schema::from_tables("s", &[("q".into(), empty)]).unwrap();
        assert_eq!(back, s);
    }
}
