//! Table schemas for a tickerplant: which columns each table has and of what types
//! ([`crate::update`] checks every `upd` against them).
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

use strata_ipc::{Attribute, K, Table, Vector, value::type_name};
use strata_store::ColumnType;

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
    /// kdb+'s name of the type (`float`, ...), or `string`.
    pub fn name(self) -> &'static str {
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
