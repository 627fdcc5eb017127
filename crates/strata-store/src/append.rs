//! Appending rows to a stored table without re-encoding it (`strata import --mode
//! append`).
//!
//! The stored table is never touched: its files are copied into a staging table
//! directory (`copy_file_range`, which shares extents where the file system can),
//! the new rows are appended to the copies (plain files: values, sync, then the
//! header's count; compressed files: the tail block and a new index and trailer
//! after the old trailer, see [`crate::column`]), and the caller swaps the staging
//! directory in (a partition through its staging partition and completion record, a
//! splayed table by exchanging directories). A crash at any point leaves the old
//! table whole and a staging leftover the next write removes.
//!
//! Attributes are checked again over all the rows: a column whose attribute still
//! holds is rewritten with it (and its index); one whose attribute the new rows
//! break (a `sorted` time that steps back, a `parted` symbol that appears again
//! after another) is rewritten without it, and the append reports that it dropped
//! it and why. New rows are sorted by the write's sort columns among themselves;
//! stored rows are never reordered. Each column keeps its stored encoding.

use std::fs::{self, File};
use std::path::Path;

use arrow_buffer::MutableBuffer;

use crate::attribute::{check_attribute, index_path, write_index};
use crate::column::{ColumnFile, append_column_file, write_column_file};
use crate::column_data::Column;
use crate::database::{Database, TableWrite};
use crate::durable::{Durability, is_temp_name};
use crate::error::{IoContext, Result, StoreError};
use crate::progress::{Progress, Unit};
use crate::schema::TableSchema;
use crate::splayed::{COLUMN_ORDER_FILE, SplayedTable, string_data_path};
use crate::table::Table;
use crate::types::{Attribute, ColumnType};

/// An attribute an append had to drop because the new rows break it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedAttribute {
    /// The column.
    pub column: String,
    /// The attribute it had.
    pub attribute: Attribute,
    /// Why it no longer holds (the row and value that break it).
    pub reason: String,
}

/// What an append did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Appended {
    /// Rows before.
    pub rows_before: u64,
    /// Rows after.
    pub rows_after: u64,
    /// Attributes dropped.
    pub dropped: Vec<DroppedAttribute>,
}

/// The names and stored types of the table at `dir`, read from its column files'
/// headers.
pub(crate) fn stored_schema(name: &str, dir: &Path) -> Result<TableSchema> {
    let table = SplayedTable::open(dir)?;
    let columns =
        table.names().iter().map(|n| Ok((n.clone(), table.column_file(n)?.ty()))).collect::<Result<Vec<_>>>()?;
    Ok(TableSchema { table: name.to_string(), columns })
}

/// Builds at `staged` (which must not exist) the table stored at `stored` followed
/// by `rows`. `rows` must have the stored columns (names, order, types); symbol
/// columns are keyed against `db`'s sym file, and files synced as `db` says. `how.spec` is not used (columns keep their
/// encoding); an attribute in `how.attributes` must be the one stored.
/// `progress` hears one step in [`Unit::Bytes`] of the new rows' values, advanced
/// as each column is appended to (after the stored files are copied).
pub(crate) fn append_table(
    name: &str,
    stored: &Path,
    staged: &Path,
    rows: &Table,
    how: &TableWrite,
    db: &Database,
    progress: &dyn Progress,
) -> Result<Appended> {
    let (sym, durability) = (db.sym(), db.config().durability);
    let old = SplayedTable::open(stored)?;
    crate::column_order::check_column_order(&old)?;
    let files = old.names().iter().map(|n| old.column_file(n)).collect::<Result<Vec<ColumnFile>>>()?;
    let schema = TableSchema {
        table: name.to_string(),
        columns: old.names().iter().cloned().zip(files.iter().map(ColumnFile::ty)).collect(),
    };
    schema.check(rows, stored)?;
    for (column, wanted) in &how.attributes {
        let i = old.names().iter().position(|n| n == column).ok_or_else(|| {
            StoreError::Invalid(format!(
                "no column {column} for the {wanted} attribute; columns are: {}",
                schema.names()
            ))
        })?;
        if files[i].attribute() != *wanted {
            return Err(StoreError::Invalid(format!(
                "column {column} is stored with attribute {}, not {wanted}: an append keeps the stored attributes \
                 (replace the table to change them)",
                files[i].attribute()
            )));
        }
    }
    let rows_before = match files.first() {
        Some(f) if f.ty() == ColumnType::String => f.len().saturating_sub(1),
        Some(f) => f.len(),
        None => 0,
    } as u64;
    let sorted;
    let rows = if how.sort_by.is_empty() {
        rows
    } else {
        let by: Vec<&str> = how.sort_by.iter().map(String::as_str).collect();
        sorted = rows.xasc(&by)?;
        &sorted
    };
    let indexes: Vec<_> = old
        .names()
        .iter()
        .zip(&files)
        .filter(|(_, f)| matches!(f.attribute(), Attribute::Parted | Attribute::Grouped))
        .map(|(n, f)| index_path(stored, n, f.attribute()))
        .collect();
    drop(files);
    copy_table(stored, staged, &indexes, durability)?;

    let bytes = rows.columns().iter().map(Column::written_bytes).sum();
    progress.start(&format!("appending to {name}"), bytes, Unit::Bytes);
    let mut dropped = Vec::new();
    for (column, new) in rows.iter() {
        let path = staged.join(column);
        let new = if new.ty() == ColumnType::Symbol { sym.enumerate_column(new, durability)? } else { new.clone() };
        let file = ColumnFile::open(&path)?;
        let (attribute, spec) = (file.attribute(), file.spec());
        drop(file);
        if attribute == Attribute::None {
            append_values(&path, &new, durability)?;
            progress.advance(new.written_bytes());
            continue;
        }
        let domain = sym.load()?;
        let full = joined(&old.read_column(column, &domain)?, &new)?;
        let (kept, index) = match check_attribute(column, &full, attribute) {
            Ok(index) => (attribute, index),
            Err(e) => {
                let reason = e.to_string();
                let reason = reason.strip_prefix(&format!("column {column}: ")).unwrap_or(&reason).to_string();
                dropped.push(DroppedAttribute { column: column.to_string(), attribute, reason });
                (Attribute::None, None)
            }
        };
        rewrite(&path, &full, kept, &spec, durability)?;
        if let Some(index) = index {
            write_index(&index_path(staged, column, kept), &index, durability)?;
        }
        progress.advance(new.written_bytes());
    }
    if durability == Durability::Fsync {
        // The staged directory's entries (copies, the linked .d, rewritten files)
        // must be on disk before it replaces the stored table.
        File::open(staged).and_then(|d| d.sync_all()).at(staged)?;
    }
    progress.finish();
    Ok(Appended { rows_before, rows_after: rows_before + rows.len() as u64, dropped })
}

/// Copies every file of table `from` into a new directory `to`, except the
/// attribute indexes `skip` (rewritten by the append). `.d` is hard-linked: it does
/// not change.
fn copy_table(from: &Path, to: &Path, skip: &[std::path::PathBuf], durability: Durability) -> Result<()> {
    fs::create_dir(to).at(to)?;
    for entry in fs::read_dir(from).at(from)? {
        let entry = entry.at(from)?;
        let name = entry.file_name();
        let source = entry.path();
        if !entry.file_type().at(&source)?.is_file() || is_temp_name(&name.to_string_lossy()) || skip.contains(&source)
        {
            continue;
        }
        let target = to.join(&name);
        if name == COLUMN_ORDER_FILE {
            fs::hard_link(&source, &target).at(&target)?;
        } else {
            fs::copy(&source, &target).map_err(|e| StoreError::Write {
                path: crate::durable::final_path(&target),
                temp: target.clone(),
                source: e,
            })?;
            if durability == Durability::Fsync {
                File::open(&target).and_then(|f| f.sync_all()).at(&target)?;
            }
        }
    }
    Ok(())
}

/// Appends `new`'s values to column file `path` (and for strings the offsets,
/// shifted past the stored bytes, and the bytes to `path#`).
fn append_values(path: &Path, new: &Column, durability: Durability) -> Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    if new.ty() != ColumnType::String {
        return append_column_file(path, new.value_bytes(), durability);
    }
    let data = string_data_path(path);
    let base = ColumnFile::open(&data)?.len() as i64;
    let offsets = new.offsets().expect("string offsets");
    let mut shifted = MutableBuffer::with_capacity(8 * (offsets.len() - 1));
    for offset in &offsets[1..] {
        shifted.extend_from_slice(&(offset + base).to_le_bytes());
    }
    append_column_file(&data, new.value_bytes(), durability)?;
    append_column_file(path, shifted.as_slice(), durability)
}

/// The stored column followed by the new one, both keyed against the same sym file
/// for symbols (their keys are concatenated as they are).
fn joined(stored: &Column, new: &Column) -> Result<Column> {
    match stored.ty() {
        ColumnType::String => stored.concat(new),
        ty => {
            let mut bytes = MutableBuffer::with_capacity(stored.value_bytes().len() + new.value_bytes().len());
            bytes.extend_from_slice(stored.value_bytes());
            bytes.extend_from_slice(new.value_bytes());
            let domain = if ty == ColumnType::Symbol { new.domain().cloned() } else { None };
            Column::from_buffer(ty, bytes.into(), domain)
        }
    }
}

/// Writes `column` whole over column file `path` with `attribute` and `spec`.
fn rewrite(
    path: &Path,
    column: &Column,
    attribute: Attribute,
    spec: &strata_codec::CompressionSpec,
    durability: Durability,
) -> Result<()> {
    if column.ty() == ColumnType::String {
        let offsets = column.offsets_buffer().expect("string offsets");
        write_column_file(path, ColumnType::String, attribute, spec, offsets, durability)?;
        let data_spec = crate::table_spec::adapt(spec, ColumnType::Char.element_kind());
        write_column_file(
            &string_data_path(path),
            ColumnType::Char,
            Attribute::None,
            &data_spec,
            column.value_bytes(),
            durability,
        )
    } else {
        write_column_file(path, column.ty(), attribute, spec, column.value_bytes(), durability)
    }
}
