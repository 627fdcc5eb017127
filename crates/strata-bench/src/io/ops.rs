//! The storage operations the tests time, each through Strata's own calls: column
//! files written, appended, amended and mapped by `strata-store`, tables sorted and
//! written as splayed tables, symbols enumerated against a sym file. Where Nano times
//! a plain OS operation (an fsync, a `read`, a stat) these do the same.

use std::fs::File;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use strata_codec::CompressionSpec;
use strata_store::attribute::{check_attribute, index_path, write_index};
use strata_store::column::{ColumnFile, append_column_file, write_column_file};
use strata_store::{Attribute, Column, ColumnType, Durability, SplayedTable, SymFile, WriteOptions, write_splayed};

use super::IoBenchError;
use super::vectors::distinct_sample;
use crate::rng::SplitMix64;

/// Bytes between the reads that fault in a mapped page.
const PAGE: usize = 4096;
/// Nano's page length in longs: random reads start on 4 KiB boundaries.
const PAGE_LONGS: usize = PAGE / 8;

/// Writes `column` as a plain column file, atomically and without fsync (Nano's
/// `set` does not sync either; the sync tests do). Returns the value bytes written.
pub fn write_column(path: &Path, column: &Column) -> Result<u64, IoBenchError> {
    write_column_file(
        path,
        column.ty(),
        Attribute::None,
        &CompressionSpec::none(),
        column.value_bytes(),
        Durability::Rename,
    )?;
    Ok(column.value_bytes().len() as u64)
}

/// Keys a symbol column against the sym file `sym` (adding new symbols), as every
/// Strata write of a symbol column does.
pub fn enumerate(sym: &Path, column: &Column) -> Result<Column, IoBenchError> {
    Ok(SymFile::new(sym).enumerate_column(column, Durability::Rename)?)
}

/// Appends raw values to a column file; the file is opened and closed each time.
pub fn append(path: &Path, values: &[u8]) -> Result<(), IoBenchError> {
    Ok(append_column_file(path, values, Durability::Rename)?)
}

/// fsyncs the files at `paths` (Nano's `system "sync f"`); returns their bytes.
pub fn sync_files(paths: &[PathBuf]) -> Result<u64, IoBenchError> {
    let mut bytes = 0;
    for path in paths {
        let file = File::open(path).map_err(|e| IoBenchError::io(path, e))?;
        file.sync_all().map_err(|e| IoBenchError::io(path, e))?;
        bytes += file.metadata().map_err(|e| IoBenchError::io(path, e))?.len();
    }
    Ok(bytes)
}

/// fsyncs every file of directory `dir`, then the directory; returns the bytes.
pub fn sync_dir(dir: &Path) -> Result<u64, IoBenchError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| IoBenchError::io(dir, e))? {
        let path = entry.map_err(|e| IoBenchError::io(dir, e))?.path();
        if path.is_file() {
            files.push(path);
        }
    }
    let bytes = sync_files(&files)?;
    sync_files(&[dir.to_path_buf()])?;
    Ok(bytes)
}

/// Maps a column file and touches every page, so each is read from the device or
/// the cache (kdb+'s `get` then `-23!`). Returns the value bytes.
pub fn read_touching(path: &Path) -> Result<u64, IoBenchError> {
    let file = ColumnFile::open(path)?;
    let values = file.all_values()?;
    black_box(touch(&values));
    Ok(values.len() as u64)
}

/// One byte of every page of `bytes`, summed, so the reads cannot be optimised away.
fn touch(bytes: &[u8]) -> u64 {
    bytes.iter().step_by(PAGE).map(|b| *b as u64).sum()
}

/// Overwrites the 8-byte values at `positions` of a column file with `value`, the way
/// Strata changes a sealed column: read it, amend in memory, write it anew and rename
/// it over the old file (kdb+'s `@[file;i;:;v]`).
pub fn replace(path: &Path, positions: &[u64], value: [u8; 8]) -> Result<(), IoBenchError> {
    let file = ColumnFile::open(path)?;
    let (ty, count) = (file.ty(), file.len() as u64);
    if ty.width() != 8 {
        return Err(IoBenchError::Invalid(format!("{}: replace needs 8-byte values, not {ty}", path.display())));
    }
    let mut values = file.all_values()?.to_vec();
    drop(file);
    for &p in positions {
        if p >= count {
            return Err(IoBenchError::Invalid(format!("{}: position {p} past {count} values", path.display())));
        }
        values[p as usize * 8..p as usize * 8 + 8].copy_from_slice(&value);
    }
    write_column_file(path, ty, Attribute::None, &CompressionSpec::none(), &values, Durability::Rename)?;
    Ok(())
}

/// Sorts the splayed table at `table` by `sym` on disk, like kdb+'s
/// `` `sym xasc `:db/tbl ``: read it, sort (stable), write it back. Returns the value
/// bytes of the table.
pub fn disk_sort(sym: &Path, table: &Path) -> Result<u64, IoBenchError> {
    let domain = SymFile::new(sym).load()?;
    let sorted = SplayedTable::open(table)?.read(&domain)?.xasc(&["sym"])?;
    let options = WriteOptions { durability: Durability::Rename, ..WriteOptions::default() };
    write_splayed(table, &sorted, &options)?;
    Ok(sorted.columns().iter().map(|c| c.value_bytes().len() as u64).sum())
}

/// Rewrites column `sym` of `table` with the parted attribute and its index, like
/// kdb+'s `` @[`:db/tbl;`sym;`p#] ``. Returns the column's bytes; the files written
/// are the column and its index.
pub fn add_parted(sym: &Path, table: &Path) -> Result<(u64, [PathBuf; 2]), IoBenchError> {
    let domain = SymFile::new(sym).load()?;
    let opened = SplayedTable::open(table)?;
    let column = opened.read_column("sym", &domain)?;
    let index = check_attribute("sym", &column, Attribute::Parted)?.expect("parted columns have an index");
    let path = opened.column_path("sym")?;
    write_column_file(
        &path,
        ColumnType::Symbol,
        Attribute::Parted,
        &CompressionSpec::none(),
        column.value_bytes(),
        Durability::Rename,
    )?;
    let index_file = index_path(table, "sym", Attribute::Parted);
    write_index(&index_file, &index, Durability::Rename)?;
    Ok((column.value_bytes().len() as u64, [path, index_file]))
}

/// The requests of one random-read pass: which file, from which value, how many.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomReads {
    /// `(file index, first value)` per request, in the order they are made.
    pub requests: Vec<(usize, usize)>,
    /// Values per request.
    pub longs: usize,
}

impl RandomReads {
    /// Nano's plan: `total_bytes` spread evenly over `files` files of `file_len` longs,
    /// each request at a distinct random page-aligned offset, requests shuffled across
    /// the files. The same seed gives the same plan.
    pub fn plan(files: usize, file_len: usize, longs: usize, total_bytes: u64, seed: u64) -> RandomReads {
        let mut rng = SplitMix64::new(seed);
        let per_file = (total_bytes / (longs as u64 * 8 * files as u64)).max(1) as usize;
        let pages = (file_len.saturating_sub(longs) / PAGE_LONGS + 1) as u64;
        let mut requests: Vec<(usize, usize)> = (0..files)
            .flat_map(|f| {
                let offsets = distinct_sample(&mut rng, pages, per_file);
                offsets.into_iter().map(move |page| (f, page as usize * PAGE_LONGS))
            })
            .collect();
        for i in (1..requests.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            requests.swap(i, j);
        }
        RandomReads { requests, longs }
    }

    /// Bytes the pass reads (the requested values, not the device's read-ahead).
    pub fn bytes(&self) -> u64 {
        (self.requests.len() * self.longs * 8) as u64
    }

    /// Makes every request, copying its values out as kdb+'s indexing does: from the
    /// files `mapped` once beforehand, or (`mapped` empty) mapping the file anew for
    /// each request from `paths`.
    pub fn run(&self, paths: &[PathBuf], mapped: &[ColumnFile]) -> Result<u64, IoBenchError> {
        let mut buffer = vec![0u8; self.longs * 8];
        let mut check = 0u64;
        for &(f, start) in &self.requests {
            let values = match mapped.get(f) {
                Some(file) => file.values(start, start + self.longs)?,
                None => ColumnFile::open(&paths[f])?.values(start, start + self.longs)?,
            };
            buffer.copy_from_slice(&values);
            check = check.wrapping_add(buffer[0] as u64);
        }
        black_box(check);
        Ok(self.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::vectors::{int_vector, longs};

    #[test]
    fn replace_amends_only_the_given_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        assert_eq!(write_column(&path, &longs(vec![1, 2, 3, 4])).unwrap(), 32);
        replace(&path, &[3, 1], 42i64.to_le_bytes()).unwrap();
        let back = ColumnFile::open(&path).unwrap().all_values().unwrap();
        assert_eq!(back.typed_data::<i64>(), [1, 42, 3, 42]);
        let err = replace(&path, &[4], [0; 8]).unwrap_err().to_string();
        assert!(err.contains("position 4 past 4 values"), "{err}");
        append(&path, longs(vec![5]).value_bytes()).unwrap();
        assert_eq!(read_touching(&path).unwrap(), 40);
        assert!(sync_files(&[path]).unwrap() > 40);
    }

    #[test]
    fn random_reads_are_page_aligned_distinct_and_in_range() {
        let plan = RandomReads::plan(4, 64 * PAGE_LONGS, 500, 4 * 8 * 500 * 10, 1);
        assert_eq!(plan.requests.len(), 40);
        assert_eq!(plan.bytes(), 160_000);
        for f in 0..4 {
            let mut starts: Vec<usize> = plan.requests.iter().filter(|r| r.0 == f).map(|r| r.1).collect();
            assert_eq!(starts.len(), 10);
            assert!(starts.iter().all(|s| s % PAGE_LONGS == 0 && s + 500 <= 64 * PAGE_LONGS));
            starts.sort();
            starts.dedup();
            assert_eq!(starts.len(), 10, "no offset twice in a file");
        }
        assert_eq!(RandomReads::plan(4, 64 * PAGE_LONGS, 500, 160_000, 1), plan, "deterministic");
        assert_ne!(plan.requests.iter().map(|r| r.0).collect::<Vec<_>>()[..8], [0; 8], "shuffled across files");
    }

    #[test]
    fn random_reads_run_mapped_and_unmapped() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("r{i}"))).collect();
        for p in &paths {
            write_column(p, &longs(int_vector(8 * PAGE_LONGS, 1))).unwrap();
        }
        let plan = RandomReads::plan(2, 8 * PAGE_LONGS, PAGE_LONGS, 2 * PAGE as u64 * 3, 7);
        let mapped: Vec<ColumnFile> = paths.iter().map(|p| ColumnFile::open(p).unwrap()).collect();
        assert_eq!(plan.run(&paths, &mapped).unwrap(), 6 * PAGE as u64);
        assert_eq!(plan.run(&paths, &[]).unwrap(), 6 * PAGE as u64);
    }
}
