//! One schema per table: the column names and types every partition of a
//! partitioned table has, kept in a small record at the database root.
//!
//! kdb+ keeps a `.d` per partition and trusts every partition to agree; a day
//! imported from a CSV (`size` inferred as long) beside one from Parquet (`size`
//! int) then reads as garbage or not at all. Strata fixes a table's columns with
//! the first partition written and refuses any later write that differs, naming
//! the table, the column, the stored type and the offered one.
//!
//! The record, `<root>/<table>.schema` (a table name is an identifier, so it never
//! holds a dot and the file is never taken for a table or a date), is text:
//!
//! ```text
//! strata-schema 1
//! table trade
//! column time timestamp
//! column sym symbol
//! column price float
//! crc32c 0x1a2b3c4d        <- crc32c of every byte before this line
//! ```
//!
//! It is written atomically (temporary file, fsync, rename) after the first
//! partition holding the table is published, so a crash in between leaves a
//! partition without a record, which the next write adopts. A database written
//! before records existed gets its record on its next partition write, derived from
//! the newest partition holding the table ([`crate::Database::table_schema`]).
//! Removing the record (by hand) is how to accept a deliberate change of types.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::durable::{Durability, write_atomic};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::table::{Table, is_valid_name};
use crate::types::ColumnType;

/// The file name ending of a table's schema record at the database root.
pub const SCHEMA_SUFFIX: &str = ".schema";
/// The first line of a schema record: format name and version.
const SCHEMA_HEADER: &str = "strata-schema 1";

/// A table's column names and types, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// The table's name.
    pub table: String,
    /// Columns in stored order, each with its type.
    pub columns: Vec<(String, ColumnType)>,
}

/// How rows offered to a table differ from its schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaMismatch {
    /// A column has another type.
    #[error("column {column} is {offered} in the new rows but {stored} in the table's schema")]
    Type {
        /// The column.
        column: String,
        /// Its type in the schema.
        stored: ColumnType,
        /// Its type in the rows offered.
        offered: ColumnType,
    },
    /// A column of the schema is not in the rows offered.
    #[error("column {column} of the table's schema ({stored}) is missing from the new rows")]
    Missing {
        /// The column.
        column: String,
        /// Its type in the schema.
        stored: ColumnType,
    },
    /// The rows offered have a column the schema lacks.
    #[error("column {column} ({offered}) of the new rows is not in the table's schema ({columns})")]
    Extra {
        /// The column.
        column: String,
        /// Its type in the rows offered.
        offered: ColumnType,
        /// The schema's column names.
        columns: String,
    },
    /// The same columns in another order.
    #[error("the new rows have the columns in the order {offered}, the table's schema {stored}")]
    Order {
        /// The order offered.
        offered: String,
        /// The schema's order.
        stored: String,
    },
}

impl TableSchema {
    /// The schema of `table`'s rows, as table `name`.
    pub fn of(name: &str, table: &Table) -> TableSchema {
        TableSchema { table: name.to_string(), columns: table.iter().map(|(n, c)| (n.to_string(), c.ty())).collect() }
    }

    /// The record file of table `table` in database root `root`.
    pub fn path(root: &Path, table: &str) -> PathBuf {
        root.join(format!("{table}{SCHEMA_SUFFIX}"))
    }

    /// The type of column `name`, if the schema has it.
    pub fn type_of(&self, name: &str) -> Option<ColumnType> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, ty)| *ty)
    }

    /// The column names, space-separated, for messages.
    pub fn names(&self) -> String {
        self.columns.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// The record's text, checksum line included.
    pub fn encode(&self) -> String {
        let mut text = format!("{SCHEMA_HEADER}\ntable {}\n", self.table);
        for (name, ty) in &self.columns {
            text.push_str(&format!("column {name} {}\n", ty.name()));
        }
        crate::text_record::seal(text)
    }

    /// Parses a record read from `path`, checking its checksum first.
    pub fn decode(path: &Path, text: &str) -> Result<TableSchema> {
        let bad = |what: String| corrupt(path, format!("table schema record: {what}"));
        let body = crate::text_record::open(text, &bad)?;
        let mut lines = body.lines();
        if lines.next() != Some(SCHEMA_HEADER) {
            return Err(bad(format!("first line is not {SCHEMA_HEADER:?}")));
        }
        let table = lines
            .next()
            .and_then(|l| l.strip_prefix("table "))
            .filter(|t| is_valid_name(t))
            .ok_or_else(|| bad("second line is not `table <name>`".into()))?
            .to_string();
        let mut columns: Vec<(String, ColumnType)> = Vec::new();
        for (n, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(' ').collect();
            let ["column", name, ty] = fields[..] else {
                return Err(bad(format!("line {}: {line:?} is not `column <name> <type>`", n + 3)));
            };
            let ty = ColumnType::from_name(ty).ok_or_else(|| bad(format!("line {}: unknown type {ty:?}", n + 3)))?;
            if !is_valid_name(name) || columns.iter().any(|(c, _)| c == name) {
                return Err(bad(format!("line {}: column {name:?} is not an identifier, or repeats", n + 3)));
            }
            columns.push((name.to_string(), ty));
        }
        let schema = TableSchema { table, columns };
        crate::text_record::exact(&schema.encode(), text, &bad)?;
        Ok(schema)
    }

    /// Reads the record of table `table` in root `root`; `None` when there is none.
    /// A record naming another table is damage.
    pub fn read(root: &Path, table: &str) -> Result<Option<TableSchema>> {
        let path = TableSchema::path(root, table);
        let schema = match fs::read_to_string(&path) {
            Ok(text) => TableSchema::decode(&path, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(corrupt(&path, "table schema record: not UTF-8 text"));
            }
            Err(e) => return Err(StoreError::Io { path, source: e }),
        };
        if schema.table != table {
            return Err(corrupt(&path, format!("table schema record is for table {}", schema.table)));
        }
        Ok(Some(schema))
    }

    /// Writes the record into root `root` atomically.
    pub fn write(&self, root: &Path, durability: Durability) -> Result<()> {
        write_atomic(&TableSchema::path(root, &self.table), self.encode().as_bytes(), durability)
    }

    /// How `offered` (names and types in order) differs from this schema: the first
    /// missing, extra or retyped column, or else a different order; `None` when equal.
    pub fn mismatch(&self, offered: &[(String, ColumnType)]) -> Option<SchemaMismatch> {
        for (name, stored) in &self.columns {
            match offered.iter().find(|(n, _)| n == name) {
                None => return Some(SchemaMismatch::Missing { column: name.clone(), stored: *stored }),
                Some((_, ty)) if ty != stored => {
                    return Some(SchemaMismatch::Type { column: name.clone(), stored: *stored, offered: *ty });
                }
                Some(_) => {}
            }
        }
        if let Some((column, offered)) = offered.iter().find(|(n, _)| self.type_of(n).is_none()) {
            return Some(SchemaMismatch::Extra { column: column.clone(), offered: *offered, columns: self.names() });
        }
        let order: Vec<&str> = offered.iter().map(|(n, _)| n.as_str()).collect();
        if order.iter().zip(&self.columns).any(|(a, (b, _))| a != b) {
            return Some(SchemaMismatch::Order { offered: order.join(" "), stored: self.names() });
        }
        None
    }

    /// Refuses `table` unless its columns are this schema's, by name, order and type.
    /// `source` names where the schema came from (the record, or the partition it was
    /// derived from) for the message.
    pub fn check(&self, table: &Table, source: &Path) -> Result<()> {
        match self.mismatch(&TableSchema::of(&self.table, table).columns) {
            None => Ok(()),
            Some(problem) => {
                Err(StoreError::Schema { table: self.table.clone(), schema_of: source.to_path_buf(), problem })
            }
        }
    }

    /// `table` with its columns in this schema's order, when it has the same names
    /// (a CSV's column order is incidental); unchanged otherwise.
    pub fn reorder(&self, table: &Table) -> Result<Table> {
        let same_names = table.names().len() == self.columns.len()
            && self.columns.iter().all(|(n, _)| table.names().iter().any(|m| m == n));
        if !same_names {
            return Ok(table.clone());
        }
        let columns =
            self.columns.iter().map(|(n, _)| Ok((n.clone(), table.column(n)?.clone()))).collect::<Result<Vec<_>>>()?;
        Table::new(columns)
    }
}

/// An exclusive lock on creating schema records, held on the database root
/// directory itself (no lock file), released on drop. Readers need no lock: a record
/// is written whole by rename and never changes once written.
pub(crate) struct SchemaLock {
    _dir: File,
}

impl SchemaLock {
    /// Waits for the lock of database root `root`.
    pub(crate) fn acquire(root: &Path) -> Result<SchemaLock> {
        let dir = File::open(root).at(root)?;
        flock(&dir, FlockOperation::LockExclusive)
            .map_err(|e| StoreError::Io { path: root.to_path_buf(), source: e.into() })?;
        Ok(SchemaLock { _dir: dir })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> TableSchema {
        TableSchema {
            table: "trade".into(),
            columns: vec![("sym".into(), ColumnType::Symbol), ("size".into(), ColumnType::Long)],
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_named() {
        let path = Path::new("db/trade.schema");
        let text = schema().encode();
        assert_eq!(TableSchema::decode(path, &text).unwrap(), schema());
        let err = TableSchema::decode(path, &text.replace("size long", "size int")).unwrap_err().to_string();
        assert!(err.contains("db/trade.schema") && err.contains("checksum"), "{err}");
        for cut in [1, text.len() / 2, text.len() - 1] {
            assert!(TableSchema::decode(path, &text[..cut]).is_err(), "torn at {cut}");
        }
    }

    #[test]
    fn a_mismatch_names_the_first_column_that_differs() {
        let s = schema();
        let offered = |cols: &[(&str, ColumnType)]| cols.iter().map(|(n, t)| (n.to_string(), *t)).collect::<Vec<_>>();
        assert_eq!(s.mismatch(&s.columns), None);
        let retyped = s.mismatch(&offered(&[("sym", ColumnType::Symbol), ("size", ColumnType::Int)])).unwrap();
        assert_eq!(retyped.to_string(), "column size is int in the new rows but long in the table's schema");
        let missing = s.mismatch(&offered(&[("sym", ColumnType::Symbol)])).unwrap();
        assert!(matches!(missing, SchemaMismatch::Missing { ref column, .. } if column == "size"), "{missing}");
        let extra = s
            .mismatch(&offered(&[("sym", ColumnType::Symbol), ("size", ColumnType::Long), ("x", ColumnType::Int)]))
            .unwrap();
        assert!(extra.to_string().contains("column x (int)"), "{extra}");
        let order = s.mismatch(&offered(&[("size", ColumnType::Long), ("sym", ColumnType::Symbol)])).unwrap();
        assert!(matches!(order, SchemaMismatch::Order { .. }), "{order}");
    }
}
