//! Timing one column: writing it with a spec (with and without fsync), reading it
//! whole, and reading random row ranges.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use strata_codec::CompressionSpec;
use strata_store::column::{ColumnFile, write_column_file};
use strata_store::{Attribute, Column, ColumnType, Durability, Result, StoreError, TableSpec, string_data_path};

/// What writing one column cost and produced.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteFigures {
    /// Seconds to encode and write the column's files (to the page cache), best of
    /// the repeats.
    pub write_secs: f64,
    /// Seconds to write and then fsync them, best of the repeats.
    pub write_fsync_secs: f64,
    /// Bytes on disk, all of the column's files.
    pub stored_bytes: u64,
    /// The spec the file records (what `auto` chose, or what a default adapted to).
    pub stored_spec: CompressionSpec,
}

/// The files holding `name` under `dir`: one, or two for strings (offsets, text).
pub fn column_paths(dir: &Path, name: &str, column: &Column) -> Vec<PathBuf> {
    let path = dir.join(name);
    if column.ty() == ColumnType::String { vec![string_data_path(&path), path] } else { vec![path] }
}

/// Writes `column` as `dir/name` with `spec` (`repeats` times, keeping the fastest)
/// and reports the cost, the stored size and the stored spec.
pub fn write_column(
    dir: &Path,
    name: &str,
    column: &Column,
    attribute: Attribute,
    spec: &CompressionSpec,
    repeats: usize,
) -> Result<WriteFigures> {
    let path = dir.join(name);
    let mut parts: Vec<(PathBuf, ColumnType, Attribute, CompressionSpec, &[u8])> = Vec::new();
    if column.ty() == ColumnType::String {
        let offsets = column.offsets_buffer().expect("string offsets");
        parts.push((path.clone(), ColumnType::String, attribute, spec.clone(), offsets.as_slice()));
        // The text file gets the spec adapted to bytes, as a table write does.
        let text_spec = TableSpec::uniform(spec.clone()).spec_for(name, ColumnType::Char, &CompressionSpec::none())?;
        parts.push((string_data_path(&path), ColumnType::Char, Attribute::None, text_spec, column.value_bytes()));
    } else {
        parts.push((path.clone(), column.ty(), attribute, spec.clone(), column.value_bytes()));
    }
    let (mut write_secs, mut write_fsync_secs) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        for (file, ty, attribute, spec, bytes) in &parts {
            write_column_file(file, *ty, *attribute, spec, bytes, Durability::Rename)?;
        }
        let written = start.elapsed().as_secs_f64();
        for (file, ..) in &parts {
            File::open(file)
                .and_then(|f| f.sync_all())
                .map_err(|source| StoreError::Io { path: file.clone(), source })?;
        }
        write_secs = write_secs.min(written);
        write_fsync_secs = write_fsync_secs.min(start.elapsed().as_secs_f64());
    }
    let mut stored_bytes = 0;
    for (file, ..) in &parts {
        stored_bytes += std::fs::metadata(file).map_err(|source| StoreError::Io { path: file.clone(), source })?.len();
    }
    let stored_spec = ColumnFile::open(&path)?.spec();
    Ok(WriteFigures { write_secs, write_fsync_secs, stored_bytes, stored_spec })
}

/// Reads every value of the column at `dir/name` and touches every byte, seconds.
pub fn read_whole(dir: &Path, name: &str) -> Result<f64> {
    let path = dir.join(name);
    let start = Instant::now();
    let file = ColumnFile::open(&path)?;
    let mut sum = touch(&file.all_values()?);
    if file.ty() == ColumnType::String {
        sum ^= touch(&ColumnFile::open(&string_data_path(&path))?.all_values()?);
    }
    std::hint::black_box(sum);
    Ok(start.elapsed().as_secs_f64())
}

/// Reads `ranges` (row ranges) of the column at `dir/name`, seconds. For strings the
/// text of the rows is read too.
pub fn read_ranges(dir: &Path, name: &str, ranges: &[(usize, usize)]) -> Result<f64> {
    let path = dir.join(name);
    let start = Instant::now();
    let file = ColumnFile::open(&path)?;
    let text = (file.ty() == ColumnType::String).then(|| ColumnFile::open(&string_data_path(&path))).transpose()?;
    let rows = if text.is_some() { file.len().saturating_sub(1) } else { file.len() };
    let mut sum = 0;
    for &(lo, hi) in ranges {
        let (lo, hi) = (lo.min(rows), hi.min(rows));
        match &text {
            Some(text) => {
                let offsets = file.values(lo, hi + 1)?;
                let offsets: &[i64] = offsets.typed_data();
                let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
                sum ^= touch(&text.values(first, last)?);
            }
            None => sum ^= touch(&file.values(lo, hi)?),
        }
    }
    std::hint::black_box(sum);
    Ok(start.elapsed().as_secs_f64())
}

/// Folds the bytes so every page of a mapped file is really read.
fn touch(bytes: &[u8]) -> u64 {
    let words = bytes.chunks_exact(8).fold(0u64, |a, c| a.wrapping_add(u64::from_le_bytes(c.try_into().expect("8"))));
    bytes.chunks_exact(8).remainder().iter().fold(words, |a, &b| a.wrapping_add(b as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_plain_compressed_and_string_columns() {
        let dir = tempfile::tempdir().unwrap();
        let longs = Column::from_values(ColumnType::Long, (0..100_000i64).collect::<Vec<_>>()).unwrap();
        let strings = Column::from_strings((0..20_000).map(|i| format!("id{i}")));
        for spec in ["none", "zstd:1", "auto", "dec+pco:4"] {
            // Adapted to the column's type, as the benchmark does before calling.
            let uniform = TableSpec::uniform(spec.parse().unwrap());
            let spec = uniform.spec_for("x", ColumnType::Long, &CompressionSpec::none()).unwrap();
            let w = write_column(dir.path(), "x", &longs, Attribute::Sorted, &spec, 2).unwrap();
            assert!(w.write_secs > 0.0 && w.write_fsync_secs >= w.write_secs);
            assert!(!w.stored_spec.is_auto());
            assert_eq!(w.stored_spec.is_compressed(), spec.is_compressed());
            assert!(read_whole(dir.path(), "x").unwrap() > 0.0);
            assert!(read_ranges(dir.path(), "x", &[(5, 900), (99_000, 100_000)]).unwrap() > 0.0);
            let s = write_column(dir.path(), "s", &strings, Attribute::None, &spec, 1).unwrap();
            assert_eq!(column_paths(dir.path(), "s", &strings).len(), 2);
            if !spec.is_compressed() {
                assert!(s.stored_bytes > strings.value_bytes().len() as u64);
            }
            read_whole(dir.path(), "s").unwrap();
            read_ranges(dir.path(), "s", &[(0, 10), (19_990, 20_000)]).unwrap();
        }
    }
}
