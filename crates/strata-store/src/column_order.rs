//! Whether a table directory's `.d` and its column files agree: the list is not
//! empty, every listed column has its file, no column file is left out and no name is
//! listed twice. A `.d` that lost a line would otherwise drop that column from every
//! read without a word, and an empty one would read as a table of no rows.
//!
//! Readers call [`check_column_order`] when they open a table (cheap: one directory
//! listing); `strata verify` reports every [`OrderProblem`] instead of the first.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::column::{COMPRESSED_MAGIC, PLAIN_MAGIC};
use crate::database::{Database, TableLocation};
use crate::error::{IoContext, Result, StoreError};
use crate::splayed::{COLUMN_ORDER_FILE, SplayedTable};
use crate::table::{Table, is_valid_name};
use crate::types::ColumnType;

/// One way a table's `.d` disagrees with its directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderProblem {
    /// `.d` lists no column at all.
    Empty,
    /// `.d` lists `column`, which has no file.
    Missing {
        /// The listed name.
        column: String,
    },
    /// A column file `column` is in the directory but not in `.d`.
    Unlisted {
        /// The file's name.
        column: String,
    },
    /// `.d` lists `column` more than once.
    Duplicate {
        /// The repeated name.
        column: String,
    },
}

impl std::fmt::Display for OrderProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrderProblem::Empty => write!(f, "{COLUMN_ORDER_FILE} lists no column (a table has at least one)"),
            OrderProblem::Missing { column } => {
                write!(f, "{COLUMN_ORDER_FILE} lists column {column}, which has no file")
            }
            OrderProblem::Unlisted { column } => {
                write!(f, "column file {column} is not listed in {COLUMN_ORDER_FILE}")
            }
            OrderProblem::Duplicate { column } => write!(f, "{COLUMN_ORDER_FILE} lists column {column} twice"),
        }
    }
}

/// Every disagreement between the column names `names` (as `.d` lists them) and the
/// files in the table directory `dir`. A file counts as a column file when its name
/// is an identifier and it starts with a column file's magic bytes, so other files
/// (string data `c#`, attribute indexes `c.parted`, hidden files) are never flagged.
pub fn column_order_problems(dir: &Path, names: &[String]) -> Result<Vec<OrderProblem>> {
    let mut problems = Vec::new();
    if names.is_empty() {
        problems.push(OrderProblem::Empty);
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            problems.push(OrderProblem::Duplicate { column: name.clone() });
        } else if !dir.join(name).is_file() {
            problems.push(OrderProblem::Missing { column: name.clone() });
        }
    }
    let mut unlisted = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_valid_name(&name) && !names.contains(&name) && is_column_file(&entry.path()) {
            unlisted.push(name);
        }
    }
    unlisted.sort();
    problems.extend(unlisted.into_iter().map(|column| OrderProblem::Unlisted { column }));
    Ok(problems)
}

/// Whether `path` is a regular file starting with a column file's magic.
fn is_column_file(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && (&magic == PLAIN_MAGIC || &magic == COMPRESSED_MAGIC)
}

/// Fails with the first [`OrderProblem`] of `table`, as a [`StoreError::Corrupt`] on
/// its `.d` naming the table directory and the column.
pub fn check_column_order(table: &SplayedTable) -> Result<()> {
    match column_order_problems(table.dir(), table.names())?.into_iter().next() {
        None => Ok(()),
        Some(problem) => Err(StoreError::Corrupt {
            path: order_file(table.dir()),
            detail: format!("table {}: {problem}", table.dir().display()),
        }),
    }
}

fn order_file(dir: &Path) -> PathBuf {
    dir.join(COLUMN_ORDER_FILE)
}

/// Reads the table at `location` whole (what [`Database::read_table`] does), after
/// checking its `.d` against its files and, when the database's configuration asks
/// ([`crate::DbConfig::verify_plain_checksums`]), every plain column file's values
/// against their checksum.
pub(crate) fn read_table_checked(db: &Database, location: &TableLocation) -> Result<Table> {
    let table = db.open_table(location)?;
    check_column_order(&table)?;
    if db.config().verify_plain_checksums {
        for name in table.names() {
            let file = table.column_file(name)?.checked(true)?;
            if file.ty() == ColumnType::String {
                table.string_data_file(name)?.checked(true)?;
            }
        }
    }
    table.read(&db.symbols()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column_data::Column;
    use crate::durable::Durability;
    use crate::splayed::{WriteOptions, write_splayed};

    fn table_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let table = Table::new(vec![
            ("a".into(), Column::from_values(ColumnType::Long, vec![1i64, 2]).unwrap()),
            ("s".into(), Column::from_strings(["x", "y"])),
            ("b".into(), Column::from_values(ColumnType::Long, vec![3i64, 4]).unwrap()),
        ])
        .unwrap();
        let options = WriteOptions { durability: Durability::Rename, ..Default::default() };
        write_splayed(&path, &table, &options).unwrap();
        (dir, path)
    }

    #[test]
    fn an_intact_table_has_no_problems() {
        let (_dir, path) = table_dir();
        check_column_order(&SplayedTable::open(&path).unwrap()).unwrap();
    }

    #[test]
    fn every_disagreement_is_named() {
        let (_dir, path) = table_dir();
        let cases = [
            ("", vec![OrderProblem::Empty, unlisted("a"), unlisted("b"), unlisted("s")]),
            ("a\ns\n", vec![unlisted("b")]),
            ("a\ns\nb\nc\n", vec![OrderProblem::Missing { column: "c".into() }]),
            ("a\ns\nb\na\n", vec![OrderProblem::Duplicate { column: "a".into() }]),
        ];
        for (order, expected) in cases {
            fs::write(path.join(COLUMN_ORDER_FILE), order).unwrap();
            let table = SplayedTable::open(&path).unwrap();
            assert_eq!(column_order_problems(&path, table.names()).unwrap(), expected, "{order:?}");
            let err = check_column_order(&table).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()) && err.contains(&expected[0].to_string()), "{err}");
        }
    }

    fn unlisted(column: &str) -> OrderProblem {
        OrderProblem::Unlisted { column: column.into() }
    }
}
