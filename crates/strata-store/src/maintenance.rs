//! Operations on whatever a path names: a column file, a table directory, a
//! partition directory or a database root. The CLI's `compress`, `decompress` and
//! `stats` go through here.

use std::fs;
use std::path::{Path, PathBuf};

use strata_codec::CompressionSpec;

use crate::column::{ColumnFile, FileStats, convert_column_file};
use crate::durable::Durability;
use crate::error::{IoContext, Result, StoreError};
use crate::progress::{Progress, Unit};
use crate::splayed::{COLUMN_ORDER_FILE, ColumnStats, SplayedTable, string_data_path};
use crate::table_spec::adapt;
use crate::types::ColumnType;

/// What a path holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// One column file.
    ColumnFile,
    /// A splayed table directory (has `.d`).
    Table,
    /// A directory of tables (a partition, or a database root's splayed tables), with
    /// the table directories found in it.
    Tables(Vec<PathBuf>),
}

/// Tells what `path` holds, or says why it is none of the kinds.
pub fn classify(path: &Path) -> Result<PathKind> {
    let meta = fs::metadata(path).at(path)?;
    if meta.is_file() {
        return Ok(PathKind::ColumnFile);
    }
    if path.join(COLUMN_ORDER_FILE).is_file() {
        return Ok(PathKind::Table);
    }
    let mut tables = Vec::new();
    for entry in fs::read_dir(path).at(path)? {
        let dir = entry.at(path)?.path();
        let hidden = dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !hidden && dir.join(COLUMN_ORDER_FILE).is_file() {
            tables.push(dir);
        }
    }
    tables.sort();
    if tables.is_empty() {
        return Err(StoreError::Invalid(format!(
            "{}: neither a column file, a table (no {COLUMN_ORDER_FILE}) nor a directory of tables",
            path.display()
        )));
    }
    Ok(PathKind::Tables(tables))
}

/// The column files of the tables or file at `path`: for each, the column name and
/// the files holding it (two for strings).
fn column_files(path: &Path) -> Result<Vec<(String, Vec<PathBuf>)>> {
    let table_files = |dir: &Path| -> Result<Vec<(String, Vec<PathBuf>)>> {
        let table = SplayedTable::open(dir)?;
        table
            .names()
            .iter()
            .map(|name| {
                let file = table.column_path(name)?;
                let mut files = vec![file.clone()];
                if ColumnFile::open(&file)?.ty() == ColumnType::String {
                    files.push(string_data_path(&file));
                }
                Ok((format!("{}/{name}", dir.file_name().unwrap_or_default().to_string_lossy()), files))
            })
            .collect()
    };
    match classify(path)? {
        PathKind::ColumnFile => Ok(vec![(path.display().to_string(), vec![path.to_path_buf()])]),
        PathKind::Table => table_files(path),
        PathKind::Tables(dirs) => Ok(dirs.iter().map(|d| table_files(d)).collect::<Result<Vec<_>>>()?.concat()),
    }
}

/// Re-encodes every column file under `path` with `spec` (adapted per column type:
/// filters or codecs that cannot apply are dropped or replaced, as for table
/// defaults), each file atomically. `none` decompresses. Returns the new stats.
/// `progress` hears one step in [`Unit::Bytes`] of the files' values
/// uncompressed, advanced as each file is re-encoded.
pub fn convert_path(
    path: &Path,
    spec: &CompressionSpec,
    durability: Durability,
    progress: &dyn Progress,
) -> Result<Vec<FileStats>> {
    let mut files = Vec::new();
    for file in column_files(path)?.into_iter().flat_map(|(_, files)| files) {
        let column = ColumnFile::open(&file)?;
        let (ty, raw_bytes) = (column.ty(), column.stats(&file).raw_bytes);
        files.push((file, ty, raw_bytes));
    }
    let verb = if *spec == CompressionSpec::none() { "decompressing" } else { "compressing" };
    let name = path.file_name().unwrap_or(path.as_os_str()).to_string_lossy();
    progress.start(&format!("{verb} {name}"), files.iter().map(|(_, _, raw)| raw).sum(), Unit::Bytes);
    let mut stats = Vec::with_capacity(files.len());
    for (file, ty, raw_bytes) in files {
        stats.push(convert_column_file(&file, &adapt(spec, ty.element_kind()), durability)?);
        progress.advance(raw_bytes);
    }
    progress.finish();
    Ok(stats)
}

/// Size and encoding of every column under `path`, named `table/column` (or the
/// file path for a single file).
pub fn stats_path(path: &Path) -> Result<Vec<ColumnStats>> {
    let from_table = |dir: &Path| -> Result<Vec<ColumnStats>> {
        let prefix = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let mut stats = SplayedTable::open(dir)?.stats()?;
        for s in &mut stats {
            s.name = format!("{prefix}/{}", s.name);
        }
        Ok(stats)
    };
    match classify(path)? {
        PathKind::ColumnFile => {
            let file = ColumnFile::open(path)?;
            let s = file.stats(path);
            Ok(vec![ColumnStats {
                name: path.display().to_string(),
                ty: s.ty,
                attribute: file.attribute(),
                rows: s.rows,
                raw_bytes: s.raw_bytes,
                stored_bytes: s.stored_bytes,
                spec: s.spec,
            }])
        }
        PathKind::Table => from_table(path),
        PathKind::Tables(dirs) => Ok(dirs.iter().map(|d| from_table(d)).collect::<Result<Vec<_>>>()?.concat()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::{NoProgress, ProgressLog};
    use crate::{Column, Database, Table, TableLocation, TableWrite};

    #[test]
    fn compress_and_decompress_a_partition() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let n = 20_000;
        let table = Table::new(vec![
            (
                "time".into(),
                Column::from_values(ColumnType::Timestamp, (0..n as i64).map(|i| i * 1000).collect()).unwrap(),
            ),
            (
                "price".into(),
                Column::from_values(ColumnType::Float, (0..n).map(|i| 100.0 + (i % 7) as f64).collect()).unwrap(),
            ),
            ("id".into(), Column::from_strings((0..n).map(|i| format!("T{i}")))),
        ])
        .unwrap();
        let date = "2024.05.01".parse().unwrap();
        db.write_table(&TableLocation::Partition(date, "trade".into()), &table, &TableWrite::default()).unwrap();
        let partition = db.partition_dir(date);
        let before = stats_path(&partition).unwrap();
        assert_eq!(
            before.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["trade/time", "trade/price", "trade/id"]
        );
        assert!(before.iter().all(|s| s.spec == CompressionSpec::none()));
        let log = ProgressLog::default();
        let converted = convert_path(&partition, &"delta+zstd:1".parse().unwrap(), Durability::Rename, &log).unwrap();
        assert_eq!(converted.len(), 4, "string columns have two files");
        // time and price, id's offsets (n + 1 of them) and its bytes.
        let id_bytes: u64 = (0..n).map(|i| format!("T{i}").len() as u64).sum();
        let raw = 2 * 8 * n as u64 + 8 * (n as u64 + 1) + id_bytes;
        let steps = log.complete_steps().unwrap();
        assert_eq!(
            steps.iter().map(|s| (s.name.as_str(), s.total)).collect::<Vec<_>>(),
            [("compressing 2024.05.01", raw)]
        );
        assert_eq!(steps[0].advances.len(), 4, "one advance per file");
        let after = stats_path(&partition).unwrap();
        assert_eq!(after[0].spec.to_string(), "delta+zstd:1");
        assert_eq!(after[1].spec.to_string(), "zstd:1", "delta cannot apply to floats");
        assert!(after.iter().zip(&before).all(|(a, b)| a.stored_bytes < b.stored_bytes && a.raw_bytes == b.raw_bytes));
        assert_eq!(db.read_table(&TableLocation::Partition(date, "trade".into())).unwrap(), table);
        let time = partition.join("trade").join("time");
        convert_path(&time, &CompressionSpec::none(), Durability::Rename, &NoProgress).unwrap();
        assert_eq!(stats_path(&partition.join("trade")).unwrap()[0].spec, CompressionSpec::none());
        assert!(classify(dir.path().join("nothing").as_path()).is_err());
    }
}
