//! Attributes: checking that a column keeps its promise, and the indexes that
//! parted and grouped columns store beside themselves.
//!
//! Index file (`<column>.parted` or `<column>.grouped`):
//! ```text
//! magic "STRATTRI", kind u8 (3 parted, 4 grouped), 7 zero bytes, entries u64,
//! then per entry: value bits u64, start u64, end u64
//!   (parted: rows start..end hold the value;
//!    grouped: positions start..end of the row list that follows hold its rows),
//! grouped only: row count u64, rows u64 each; finally crc32c of everything before, u32
//! ```
//! Values are identified by their raw bits (symbol keys for symbols), in order of
//! first appearance.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::column_data::Column;
use crate::durable::{Durability, write_atomic};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::types::{Attribute, ColumnType};

const MAGIC: &[u8; 8] = b"STRATTRI";

/// Rows per distinct value, stored for parted and grouped columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeIndex {
    /// Each value's contiguous row range `start..end`, in row order.
    Parted(Vec<PartedRun>),
    /// Each value's rows, ascending, in order of first appearance.
    Grouped(Vec<(u64, Vec<u64>)>),
}

/// One value's rows in a parted column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartedRun {
    /// The value's raw bits (a symbol key for symbol columns).
    pub value: u64,
    /// First row.
    pub start: u64,
    /// One past the last row.
    pub end: u64,
}

impl AttributeIndex {
    /// The rows holding `value`, for a parted index: one range or none.
    pub fn parted_rows(&self, value: u64) -> Option<std::ops::Range<u64>> {
        match self {
            AttributeIndex::Parted(runs) => runs.iter().find(|r| r.value == value).map(|r| r.start..r.end),
            AttributeIndex::Grouped(_) => None,
        }
    }
}

/// The file holding `column`'s index for `attribute` inside `table_dir`.
pub fn index_path(table_dir: &Path, column: &str, attribute: Attribute) -> PathBuf {
    table_dir.join(format!("{column}.{}", attribute.name()))
}

/// Checks that `column` (named `name`) keeps `attribute`'s promise, returning the
/// index to store for parted and grouped. The error names the column, the row and the
/// value that break it.
pub fn check_attribute(name: &str, column: &Column, attribute: Attribute) -> Result<Option<AttributeIndex>> {
    let broken = |row: usize, why: &str| {
        StoreError::Invalid(format!(
            "column {name}: cannot apply the {attribute} attribute: row {row} (value {}) {why}",
            column.display(row)
        ))
    };
    match attribute {
        Attribute::None => Ok(None),
        Attribute::Sorted => {
            let order = column.row_order();
            match (1..column.len()).find(|&i| order(i - 1, i).is_gt()) {
                Some(row) => {
                    Err(broken(row, &format!("is less than row {} (value {})", row - 1, column.display(row - 1))))
                }
                None => Ok(None),
            }
        }
        Attribute::Unique => {
            let mut seen: HashMap<Vec<u8>, usize> = HashMap::with_capacity(column.len());
            for row in 0..column.len() {
                let key = match column.value_bits(row) {
                    Some(bits) => bits.to_le_bytes().to_vec(),
                    None => column.string(row).as_bytes().to_vec(),
                };
                if let Some(first) = seen.insert(key, row) {
                    return Err(broken(row, &format!("repeats row {first}")));
                }
            }
            Ok(None)
        }
        Attribute::Parted | Attribute::Grouped if column.ty() == ColumnType::String => Err(StoreError::Invalid(
            format!("column {name}: the {attribute} attribute needs a fixed-width or symbol column, not string"),
        )),
        Attribute::Parted => {
            let mut runs: Vec<PartedRun> = Vec::new();
            let mut seen: HashMap<u64, usize> = HashMap::new();
            for row in 0..column.len() {
                let value = column.value_bits(row).expect("fixed width");
                match runs.last_mut() {
                    Some(run) if run.value == value => run.end += 1,
                    _ => {
                        if let Some(first) = seen.insert(value, row) {
                            return Err(broken(
                                row,
                                &format!("appeared before at row {first} and the rows between differ"),
                            ));
                        }
                        runs.push(PartedRun { value, start: row as u64, end: row as u64 + 1 });
                    }
                }
            }
            Ok(Some(AttributeIndex::Parted(runs)))
        }
        Attribute::Grouped => {
            let mut groups: Vec<(u64, Vec<u64>)> = Vec::new();
            let mut slot: HashMap<u64, usize> = HashMap::new();
            for row in 0..column.len() {
                let value = column.value_bits(row).expect("fixed width");
                let i = *slot.entry(value).or_insert_with(|| {
                    groups.push((value, Vec::new()));
                    groups.len() - 1
                });
                groups[i].1.push(row as u64);
            }
            Ok(Some(AttributeIndex::Grouped(groups)))
        }
    }
}

/// Writes an index file atomically.
pub fn write_index(path: &Path, index: &AttributeIndex, durability: Durability) -> Result<()> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    let (kind, entries) = match index {
        AttributeIndex::Parted(runs) => (Attribute::Parted, runs.len()),
        AttributeIndex::Grouped(groups) => (Attribute::Grouped, groups.len()),
    };
    out.push(kind as u8);
    out.extend_from_slice(&[0; 7]);
    out.extend_from_slice(&(entries as u64).to_le_bytes());
    match index {
        AttributeIndex::Parted(runs) => {
            for r in runs {
                for v in [r.value, r.start, r.end] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        AttributeIndex::Grouped(groups) => {
            let mut at = 0u64;
            for (value, rows) in groups {
                for v in [*value, at, at + rows.len() as u64] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                at += rows.len() as u64;
            }
            out.extend_from_slice(&at.to_le_bytes());
            for (_, rows) in groups {
                for r in rows {
                    out.extend_from_slice(&r.to_le_bytes());
                }
            }
        }
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    write_atomic(path, &out, durability)
}

/// Reads an index file written by [`write_index`], checking its checksum and shape.
pub fn read_index(path: &Path) -> Result<AttributeIndex> {
    decode_index(path, &std::fs::read(path).at(path)?)
}

/// The index in `bytes`, read from `path` (named in errors).
pub fn decode_index(path: &Path, bytes: &[u8]) -> Result<AttributeIndex> {
    let bad = |what: &str| corrupt(path, format!("attribute index: {what}"));
    if bytes.len() < 28 || &bytes[..8] != MAGIC {
        return Err(bad("bad magic or too short"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4")) {
        return Err(bad("checksum mismatch"));
    }
    let words: Vec<u64> = body[16..].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))).collect();
    let n = *words.first().ok_or_else(|| bad("no entry count"))? as usize;
    let entries = words.get(1..1 + 3 * n).ok_or_else(|| bad("fewer entries than its count"))?;
    let triples = entries.chunks_exact(3).map(|t| (t[0], t[1], t[2]));
    match Attribute::from_code(body[8]) {
        Some(Attribute::Parted) => {
            Ok(AttributeIndex::Parted(triples.map(|(value, start, end)| PartedRun { value, start, end }).collect()))
        }
        Some(Attribute::Grouped) => {
            let rows = words.get(2 + 3 * n..).ok_or_else(|| bad("row list missing"))?;
            triples
                .map(|(value, start, end)| {
                    rows.get(start as usize..end as usize)
                        .map(|r| (value, r.to_vec()))
                        .ok_or_else(|| bad("row range outside the row list"))
                })
                .collect::<Result<_>>()
                .map(AttributeIndex::Grouped)
        }
        _ => Err(bad(&format!("unknown index kind {}", body[8]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parted_index_lists_each_run() {
        let col = Column::from_symbols(["B", "B", "A", "C", "C", "C"]);
        let Some(index) = check_attribute("sym", &col, Attribute::Parted).unwrap() else { panic!("an index") };
        assert_eq!(
            index,
            AttributeIndex::Parted(vec![
                PartedRun { value: 0, start: 0, end: 2 },
                PartedRun { value: 1, start: 2, end: 3 },
                PartedRun { value: 2, start: 3, end: 6 },
            ])
        );
        assert_eq!(index.parted_rows(2), Some(3..6));
        assert_eq!(index.parted_rows(9), None);
    }

    #[test]
    fn broken_promises_name_the_row_and_value() {
        let col = Column::from_symbols(["B", "A", "B"]);
        let err = check_attribute("sym", &col, Attribute::Parted).unwrap_err().to_string();
        assert!(err.contains("column sym") && err.contains("row 2") && err.contains("value B"), "{err}");
        let ints = Column::from_values(ColumnType::Long, vec![1i64, 3, 2]).unwrap();
        let err = check_attribute("x", &ints, Attribute::Sorted).unwrap_err().to_string();
        assert!(err.contains("row 2 (value 2) is less than row 1 (value 3)"), "{err}");
        let err =
            check_attribute("x", &Column::from_strings(["a", "b", "a"]), Attribute::Unique).unwrap_err().to_string();
        assert!(err.contains("row 2") && err.contains("repeats row 0"), "{err}");
        assert!(check_attribute("x", &Column::from_strings(["a"]), Attribute::Grouped).is_err());
        assert!(check_attribute("x", &Column::from_symbols(["A", "B", "C"]), Attribute::Sorted).is_ok());
    }

    #[test]
    fn indexes_round_trip_through_files() {
        let dir = tempfile::tempdir().unwrap();
        let col = Column::from_values(ColumnType::Int, vec![5i32, 7, 5, 5, 9]).unwrap();
        for attribute in [Attribute::Grouped, Attribute::Parted] {
            let index = match check_attribute("v", &col, attribute) {
                Ok(Some(index)) => index,
                Ok(None) => panic!("an index"),
                Err(_) => continue, // not parted: 5 repeats after 7
            };
            let path = index_path(dir.path(), "v", attribute);
            write_index(&path, &index, Durability::Rename).unwrap();
            assert_eq!(read_index(&path).unwrap(), index);
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[30] ^= 1;
            std::fs::write(&path, bytes).unwrap();
            assert!(read_index(&path).unwrap_err().to_string().contains("checksum"));
        }
    }
}
