//! Crash-safe writes: write under a temporary name, fsync, rename over the real name.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StoreError};

/// How far a write goes before it is considered done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// fsync each file and its directory before a rename is relied on: a power cut
    /// leaves either the old or the new file, never a torn one.
    #[default]
    Fsync,
    /// Rename without fsync: a process crash never tears a file, but a power cut may
    /// lose recent writes. Faster on slow disks.
    Rename,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A file being written under a temporary name in its final directory; it replaces
/// the real name only in [`AtomicFile::commit`], and disappears if dropped first.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
    durability: Durability,
}

impl AtomicFile {
    /// Starts writing a file that will become `target`.
    pub fn create(target: &Path, durability: Durability) -> Result<AtomicFile> {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = target.with_file_name(format!(".{name}.tmp.{}.{unique}", std::process::id()));
        let file = File::create(&temp).map_err(|source| StoreError::Write {
            path: final_path(target),
            temp: temp.clone(),
            source,
        })?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            durability,
        })
    }

    /// Appends bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let written = self.writer.as_mut().expect("not committed").write_all(bytes);
        written.map_err(|source| self.write_failed(source))
    }

    /// The error of a failed write, naming the file by its final name.
    fn write_failed(&self, source: std::io::Error) -> StoreError {
        StoreError::Write { path: final_path(&self.target), temp: self.temp.clone(), source }
    }

    /// Flushes, syncs as the durability asks, and renames over the target.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.as_mut().expect("committed once");
        let mut done = writer.flush();
        if self.durability == Durability::Fsync && done.is_ok() {
            done = writer.get_ref().sync_all();
        }
        done.map_err(|source| self.write_failed(source))?;
        fs::rename(&self.temp, &self.target).at(&self.target)?;
        // Renamed: nothing is left for Drop to clean up.
        self.writer = None;
        if self.durability == Durability::Fsync {
            sync_parent(&self.target)?;
        }
        Ok(())
    }
}

/// Lets streaming writers (Parquet's `ArrowWriter`, ...) write into the temporary
/// file. Errors here carry no path; prefer [`AtomicFile::write_all`] where a
/// [`crate::StoreError`] is wanted.
impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Writes `bytes` to `target` atomically.
pub fn write_atomic(target: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    let mut file = AtomicFile::create(target, durability)?;
    file.write_all(bytes)?;
    file.commit()
}

/// fsyncs the directory holding `path`, so a rename or a new file in it survives a
/// power cut.
pub fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Opens an existing file for reading and writing (appends).
pub(crate) fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new().read(true).write(true).open(path).at(path)
}

/// The name `path` has once complete: every temporary component `.NAME.tmp.*` (an
/// [`AtomicFile`]'s, or the staging directory of a table being written) becomes
/// `NAME`, so errors name the table and column a user knows.
pub fn final_path(path: &Path) -> PathBuf {
    path.components()
        .map(|part| {
            let text = part.as_os_str().to_string_lossy();
            match text.strip_prefix('.').and_then(|rest| rest.split_once(".tmp.")) {
                Some((name, _)) if !name.is_empty() => std::ffi::OsString::from(name),
                _ => part.as_os_str().to_os_string(),
            }
        })
        .collect()
}

/// Whether `name` is a temporary file left by an interrupted [`AtomicFile`].
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_map_to_the_table_and_column() {
        let staged = Path::new("/db/2025.01.02/.trade.tmp.41.0/.price.tmp.41.7");
        assert_eq!(final_path(staged), Path::new("/db/2025.01.02/trade/price"));
        assert_eq!(final_path(Path::new("db/.d")), Path::new("db/.d"));
    }

    #[test]
    fn dropped_writes_leave_the_old_file_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("col");
        write_atomic(&path, b"old", Durability::Fsync).unwrap();
        let mut half = AtomicFile::create(&path, Durability::Fsync).unwrap();
        half.write_all(b"new but unfinished").unwrap();
        drop(half);
        assert_eq!(fs::read(&path).unwrap(), b"old");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("col")], "no temporary file is left behind");
    }
}
