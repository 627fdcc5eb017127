//! Splayed tables on disk: a directory with one file per column and a `.d` file
//! listing the column order.
//!
//! A string column `c` is two files: `c` (the `i64` offsets, starting at 0) and `c#`
//! (the UTF-8 bytes), as kdb+ splits nested columns. Parted and grouped columns keep
//! their index in `c.parted` / `c.grouped`. A table is written into a temporary
//! directory and renamed into place, so readers see the old table or the new one.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use strata_codec::CompressionSpec;

use crate::attribute::{AttributeIndex, check_attribute, decode_index, index_path, write_index};
use crate::column::{ColumnFile, FileStats, write_column_file};
use crate::column_data::{Column, SymbolDomain};
use crate::durable::{Durability, sync_parent, write_atomic};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::progress::{NoProgress, Progress, Unit};
use crate::snapshot::{DirSnapshot, remove_unless_read};
use crate::table::{Table, is_valid_name};
use crate::table_spec::{TableSpec, adapt};
use crate::types::{Attribute, ColumnType};

/// The file listing a table's columns in order, one name per line.
pub const COLUMN_ORDER_FILE: &str = ".d";

/// How to write a table.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// Compression per column.
    pub spec: TableSpec,
    /// The spec for columns the table spec leaves to the database.
    pub database_default: CompressionSpec,
    /// Attributes to validate and record, by column.
    pub attributes: Vec<(String, Attribute)>,
    /// fsync or not.
    pub durability: Durability,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            spec: TableSpec::default(),
            database_default: CompressionSpec::none(),
            attributes: Vec::new(),
            durability: Durability::Fsync,
        }
    }
}

/// Writes `table` as a splayed table at `dir`, replacing any table there. Symbol
/// columns must already be keyed against the database's sym file. Attributes are
/// checked before anything is written; columns (and their blocks) are written in
/// parallel on the current rayon pool.
pub fn write_splayed(dir: &Path, table: &Table, options: &WriteOptions) -> Result<()> {
    write_splayed_with_progress(dir, table, options, &NoProgress)
}

/// [`write_splayed`], telling `progress` one step in [`Unit::Bytes`] of column
/// values ([`Column::written_bytes`]), advanced as each column's files are written.
pub(crate) fn write_splayed_with_progress(
    dir: &Path,
    table: &Table,
    options: &WriteOptions,
    progress: &dyn Progress,
) -> Result<()> {
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if parent.is_dir() {
        remove_leftovers(parent, &name)?;
    }
    let mut attributes = vec![Attribute::None; table.names().len()];
    for (name, attribute) in &options.attributes {
        let i = table.names().iter().position(|n| n == name).ok_or_else(|| table.column(name).unwrap_err())?;
        attributes[i] = *attribute;
    }
    let indexes = table
        .iter()
        .zip(&attributes)
        .map(|((name, column), attribute)| check_attribute(name, column, *attribute))
        .collect::<Result<Vec<_>>>()?;
    let specs = table
        .iter()
        .map(|(name, column)| options.spec.spec_for(name, column.ty(), &options.database_default))
        .collect::<Result<Vec<_>>>()?;

    let created_parent = !parent.exists();
    fs::create_dir_all(parent).at(parent)?;
    if created_parent && options.durability == Durability::Fsync {
        // A new partition directory must survive a power cut too.
        sync_parent(parent)?;
    }
    let staging = staging_dir(parent, &name);
    fs::create_dir(&staging).at(&staging)?;
    let durability = options.durability;
    let bytes = table.columns().iter().map(Column::written_bytes).sum();
    progress.start(&format!("writing {name}"), bytes, Unit::Bytes);
    let written = (0..table.names().len()).into_par_iter().try_for_each(|i| {
        let (name, column) = (&table.names()[i], &table.columns()[i]);
        let path = staging.join(name);
        if column.ty() == ColumnType::String {
            let offsets = column.offsets_buffer().expect("string offsets");
            write_column_file(&path, ColumnType::String, attributes[i], &specs[i], offsets, durability)?;
            let data_spec = adapt(&specs[i], ColumnType::Char.element_kind());
            write_column_file(
                &string_data_path(&path),
                ColumnType::Char,
                Attribute::None,
                &data_spec,
                column.value_bytes(),
                durability,
            )?;
        } else {
            write_column_file(&path, column.ty(), attributes[i], &specs[i], column.value_bytes(), durability)?;
        }
        if let Some(index) = &indexes[i] {
            write_index(&index_path(&staging, name, attributes[i]), index, durability)?;
        }
        progress.advance(column.written_bytes());
        Ok::<(), StoreError>(())
    });
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    let order: String = table.names().iter().map(|n| format!("{n}\n")).collect();
    write_atomic(&staging.join(COLUMN_ORDER_FILE), order.as_bytes(), durability)?;
    if durability == Durability::Fsync {
        sync_parent(&staging.join(COLUMN_ORDER_FILE))?;
    }
    replace_dir(&staging, dir, durability)?;
    progress.finish();
    Ok(())
}

/// A new staging directory name for table `name` in `parent`:
/// `.<name>.tmp.<pid>.<n>`, which [`remove_leftovers`] clears when its writer died.
pub(crate) fn staging_dir(parent: &Path, name: &str) -> PathBuf {
    static STAGING_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = STAGING_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    parent.join(format!(".{name}.tmp.{}.{unique}", std::process::id()))
}

/// Removes staging and retired directories of table `name` left in `parent` by writers
/// that died mid-write. They never hold the table's real name, so they are garbage.
///
/// One exception: if the table itself is missing, a writer died between moving the old
/// table aside and moving the new one in (the fallback path of [`replace_dir`]); the
/// retired copy is then whole and is put back first.
pub(crate) fn remove_leftovers(parent: &Path, name: &str) -> Result<()> {
    let (staging, retired) = (format!(".{name}.tmp."), format!(".{name}.old."));
    let target = parent.join(name);
    if !target.exists() {
        for entry in fs::read_dir(parent).at(parent)? {
            let entry = entry.at(parent)?;
            if entry.file_name().to_string_lossy().starts_with(&retired)
                && entry.path().join(COLUMN_ORDER_FILE).is_file()
            {
                fs::rename(entry.path(), &target).at(&target)?;
                break;
            }
        }
    }
    for entry in fs::read_dir(parent).at(parent)? {
        let entry = entry.at(parent)?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with(&staging) || file_name.starts_with(&retired) {
            remove_unless_read(&entry.path(), COLUMN_ORDER_FILE)?;
        }
    }
    Ok(())
}

/// Moves `staging` to `target`. An existing table is swapped out in one atomic
/// `renameat2(RENAME_EXCHANGE)`, so the real name always holds a whole table; where the
/// file system cannot exchange, the old table is moved aside first (and restored by
/// [`remove_leftovers`] if the writer dies in between).
pub(crate) fn replace_dir(staging: &Path, target: &Path, durability: Durability) -> Result<()> {
    let had_old = target.exists();
    let exchanged = had_old
        && rustix::fs::renameat_with(
            rustix::fs::CWD,
            staging,
            rustix::fs::CWD,
            target,
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .is_ok();
    let retired = if exchanged {
        staging.to_path_buf()
    } else {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let retired = target.with_file_name(format!(".{name}.old.{}", std::process::id()));
        if had_old {
            fs::rename(target, &retired).at(target)?;
        }
        fs::rename(staging, target).at(target)?;
        retired
    };
    if durability == Durability::Fsync {
        sync_parent(target)?;
    }
    if had_old {
        // A version a reader still holds stays, for the next write to remove.
        remove_unless_read(&retired, COLUMN_ORDER_FILE)?;
    }
    Ok(())
}

/// The data file of string column file `path` (`c` -> `c#`).
pub fn string_data_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().expect("column file name").to_os_string();
    name.push("#");
    path.with_file_name(name)
}

/// A splayed table directory, opened for reading: one version of it, whatever
/// writers rename meanwhile ([`DirSnapshot`]), so every column read through it
/// comes from the same write.
#[derive(Clone, Debug)]
pub struct SplayedTable {
    dir: PathBuf,
    names: Vec<String>,
    snapshot: Arc<DirSnapshot>,
}

/// Size, encoding and attribute of one column of a table.
#[derive(Clone, Debug)]
pub struct ColumnStats {
    /// Column name.
    pub name: String,
    /// Column type.
    pub ty: ColumnType,
    /// Attribute.
    pub attribute: Attribute,
    /// Rows.
    pub rows: u64,
    /// Uncompressed bytes (offsets plus data for strings).
    pub raw_bytes: u64,
    /// Bytes on disk (both files for strings, plus any attribute index).
    pub stored_bytes: u64,
    /// Encoding of the column file.
    pub spec: CompressionSpec,
}

impl ColumnStats {
    /// Raw bytes per stored byte.
    pub fn ratio(&self) -> f64 {
        if self.stored_bytes == 0 { 0.0 } else { self.raw_bytes as f64 / self.stored_bytes as f64 }
    }
}

impl SplayedTable {
    /// Opens the table at `dir` by reading its `.d`.
    pub fn open(dir: &Path) -> Result<SplayedTable> {
        let order = dir.join(COLUMN_ORDER_FILE);
        let snapshot = Arc::new(DirSnapshot::open(dir, COLUMN_ORDER_FILE)?);
        let text = snapshot.read_to_string(COLUMN_ORDER_FILE)?;
        let names: Vec<String> = text.lines().map(str::to_string).collect();
        if let Some(bad) = names.iter().find(|n| !is_valid_name(n)) {
            return Err(corrupt(&order, format!("column name {bad:?} is not an identifier")));
        }
        Ok(SplayedTable { dir: dir.to_path_buf(), names, snapshot })
    }

    /// The table's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Column names in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The path of column `name`'s file, or an error listing the columns.
    pub fn column_path(&self, name: &str) -> Result<PathBuf> {
        if !self.names.iter().any(|n| n == name) {
            return Err(StoreError::Invalid(format!(
                "{}: no column {name}; columns are: {}",
                self.dir.display(),
                self.names.join(", ")
            )));
        }
        Ok(self.dir.join(name))
    }

    /// Opens column `name`'s file (the offsets file for strings), of the version of
    /// the table this was opened on.
    pub fn column_file(&self, name: &str) -> Result<ColumnFile> {
        // Tests slow readers here, between a table's open and its columns'.
        crate::fault::point("read.column-open");
        let path = self.column_path(name)?;
        ColumnFile::from_file(&path, self.snapshot.open_file(name)?)
    }

    /// The index stored for column `name`'s `attribute` (parted or grouped), of the
    /// same version.
    pub fn attribute_index(&self, name: &str, attribute: Attribute) -> Result<AttributeIndex> {
        let path = index_path(&self.dir, name, attribute);
        let file_name = path.file_name().expect("an index file name").to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut self.snapshot.open_file(&file_name)?, &mut bytes).at(&path)?;
        decode_index(&path, &bytes)
    }

    /// Opens the data file of string column `name` (`name#`), of the same version.
    pub fn string_data_file(&self, name: &str) -> Result<ColumnFile> {
        let path = string_data_path(&self.column_path(name)?);
        ColumnFile::from_file(&path, self.snapshot.open_file(&format!("{name}#"))?)
    }

    /// Reads column `name` whole. Symbol columns are keyed into `domain` (the
    /// database's sym list).
    pub fn read_column(&self, name: &str, domain: &SymbolDomain) -> Result<Column> {
        let path = self.column_path(name)?;
        let file = self.column_file(name)?;
        let wrap = |e: StoreError| match e {
            StoreError::Invalid(msg) => corrupt(&path, msg),
            other => other,
        };
        match file.ty() {
            ColumnType::String => {
                let data = self.string_data_file(name)?.all_values()?;
                Column::from_string_buffers(file.all_values()?, data).map_err(wrap)
            }
            ColumnType::Symbol => {
                Column::from_buffer(ColumnType::Symbol, file.all_values()?, Some(domain.clone())).map_err(wrap)
            }
            ty => Column::from_buffer(ty, file.all_values()?, None).map_err(wrap),
        }
    }

    /// Reads the whole table.
    pub fn read(&self, domain: &SymbolDomain) -> Result<Table> {
        let columns =
            self.names.par_iter().map(|n| Ok((n.clone(), self.read_column(n, domain)?))).collect::<Result<Vec<_>>>()?;
        Table::new(columns)
    }

    /// Size and encoding of every column.
    pub fn stats(&self) -> Result<Vec<ColumnStats>> {
        self.names
            .iter()
            .map(|name| {
                let path = self.column_path(name)?;
                let file = self.column_file(name)?;
                let FileStats { ty, mut rows, mut raw_bytes, mut stored_bytes, spec, .. } = file.stats(&path);
                if ty == ColumnType::String {
                    let data = self.string_data_file(name)?.stats(&path);
                    rows = rows.saturating_sub(1);
                    raw_bytes += data.raw_bytes;
                    stored_bytes += data.stored_bytes;
                }
                let attribute = file.attribute();
                if matches!(attribute, Attribute::Parted | Attribute::Grouped) {
                    let index = index_path(&self.dir, name, attribute);
                    stored_bytes += fs::metadata(&index).at(&index)?.len();
                }
                Ok(ColumnStats { name: name.clone(), ty, attribute, rows, raw_bytes, stored_bytes, spec })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn every_type_round_trips_through_a_splayed_table() {
        let dir = tempfile::tempdir().unwrap();
        let n = 1000usize;
        let mut columns = Vec::new();
        for ty in ColumnType::ALL {
            let column = match ty {
                ColumnType::String => Column::from_strings((0..n).map(|i| format!("id-{i}"))),
                ColumnType::Symbol => Column::from_symbol_keys(
                    (0..n as u32).map(|i| i % 3).collect(),
                    Arc::new(vec!["A".into(), "B".into(), "C".into()]),
                )
                .unwrap(),
                _ => {
                    let bytes: Vec<u8> = (0..n * ty.width()).map(|i| (i % 2) as u8).collect();
                    Column::from_buffer(ty, arrow_buffer::Buffer::from_vec(bytes), None).unwrap()
                }
            };
            columns.push((format!("c_{ty}"), column));
        }
        let table = Table::new(columns).unwrap();
        let domain: SymbolDomain = Arc::new(vec!["A".into(), "B".into(), "C".into()]);
        for spec in ["none", "zstd:1@12", "delta+pco:4"] {
            let options = WriteOptions {
                spec: TableSpec::uniform(spec.parse().unwrap()),
                durability: Durability::Rename,
                ..Default::default()
            };
            let path = dir.path().join("t");
            write_splayed(&path, &table, &options).unwrap();
            let back = SplayedTable::open(&path).unwrap().read(&domain).unwrap();
            assert_eq!(back, table, "{spec}");
            let stats = SplayedTable::open(&path).unwrap().stats().unwrap();
            assert!(stats.iter().all(|s| s.rows == n as u64));
        }
        let names: Vec<_> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, ["t"], "no staging or retired directories remain");
    }

    #[test]
    fn a_table_moved_aside_by_a_dead_writer_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let old =
            Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![1i64, 2]).unwrap())]).unwrap();
        write_splayed(&path, &old, &WriteOptions::default()).unwrap();
        // A writer on the fallback path died after moving the old table aside.
        fs::rename(&path, dir.path().join(".t.old.999")).unwrap();
        let bad =
            Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![3i64, 1]).unwrap())]).unwrap();
        let options = WriteOptions { attributes: vec![("x".into(), Attribute::Sorted)], ..Default::default() };
        assert!(write_splayed(&path, &bad, &options).is_err(), "refused before anything is touched");
        let new = Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![7i64]).unwrap())]).unwrap();
        let failing =
            WriteOptions { spec: TableSpec::parse("[columns]\nx = \"xor+pco\"\n").unwrap(), ..Default::default() };
        assert!(write_splayed(&path, &new, &failing).is_err());
        assert_eq!(SplayedTable::open(&path).unwrap().read(&Arc::new(vec![])).unwrap(), old, "restored");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_broken_attribute_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let table =
            Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![3i64, 1, 2]).unwrap())]).unwrap();
        let options = WriteOptions { attributes: vec![("x".into(), Attribute::Sorted)], ..Default::default() };
        let err = write_splayed(&dir.path().join("t"), &table, &options).unwrap_err().to_string();
        assert!(err.contains("column x") && err.contains("sorted"), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn auto_is_resolved_per_column_and_the_chosen_chain_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let n = 50_000;
        // A random walk on a cent grid: no repeating pattern for an LZ codec to find.
        let mut cents = 100_000i64;
        let walk: Vec<f64> = (0..n as u64)
            .map(|i| {
                cents += ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61) as i64) - 3;
                cents as f64 / 100.0
            })
            .collect();
        let table = Table::new(vec![
            (
                "time".into(),
                Column::from_values(ColumnType::Timespan, (0..n as i64).map(|i| i * 1_003 + i % 5).collect::<Vec<_>>())
                    .unwrap(),
            ),
            ("price".into(), Column::from_values(ColumnType::Float, walk).unwrap()),
            ("cond".into(), Column::from_values(ColumnType::Char, vec![b'R'; n]).unwrap()),
            ("id".into(), Column::from_strings((0..n).map(|i| format!("T{i}")))),
        ])
        .unwrap();
        let options = WriteOptions {
            spec: TableSpec::parse("default = \"auto\"\n").unwrap(),
            durability: Durability::Rename,
            ..Default::default()
        };
        let path = dir.path().join("t");
        write_splayed(&path, &table, &options).unwrap();
        let opened = SplayedTable::open(&path).unwrap();
        assert_eq!(opened.read(&Arc::new(vec![])).unwrap(), table);
        for stats in opened.stats().unwrap() {
            assert!(!stats.spec.is_auto() && stats.spec.is_compressed(), "{}: {}", stats.name, stats.spec);
            assert!(stats.ratio() > 1.5, "{}: {} at {:.2}", stats.name, stats.spec, stats.ratio());
        }
        let price = opened.stats().unwrap().into_iter().find(|s| s.name == "price").unwrap();
        assert!(price.spec.filters.contains(&strata_codec::Filter::Decimal), "{}", price.spec);
    }
}
