//! One version of a table directory for a reader, while writers replace it.
//!
//! A write never changes a published table in place: it builds a new directory
//! and exchanges it with the old one in one `renameat2` (a partition or a splayed
//! table), then removes the old one. A reader that resolved the table by path and
//! opened its columns one by one, as queries do, could read some columns from the
//! old version and some from the new, or find the old one deleted under it. So:
//!
//! * A reader opens the table directory once ([`DirSnapshot::open`]), takes a
//!   shared `flock` on it, and opens every file through that handle (`openat`):
//!   whatever is renamed meanwhile, it reads the version it opened, all of it.
//! * A writer removes a retired version only if it can take an exclusive lock on
//!   every table directory in it without waiting ([`remove_unless_read`]); a version
//!   still being read stays, under its staging or retired name, and the next write of
//!   that partition (or table) removes it once its readers are done.
//! * A reader that opens a directory just as a writer removes it finds its `.d`
//!   gone once it holds the lock, and resolves the path again: it then reads the new
//!   version.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags, flock, open, openat};
use rustix::io::Errno;

use crate::error::{Result, StoreError};

/// Times a reader resolves a table's path again when the version it opened was
/// removed before it could lock it (each retry follows a completed replacement).
const RESOLVE_ATTEMPTS: usize = 8;

/// A table directory held open, read-locked, for reading one version of it.
#[derive(Debug)]
pub struct DirSnapshot {
    path: PathBuf,
    dir: OwnedFd,
}

fn io_error(path: &Path, errno: Errno) -> StoreError {
    StoreError::Io { path: path.to_path_buf(), source: errno.into() }
}

impl DirSnapshot {
    /// Opens and read-locks the directory at `path`, which must hold `marker` (a
    /// table's `.d`): a directory whose marker is gone was removed by a writer as
    /// it was opened, and the path is resolved again.
    pub fn open(path: &Path, marker: &str) -> Result<DirSnapshot> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dir = open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| io_error(path, e))?;
            flock(&dir, FlockOperation::LockShared).map_err(|e| io_error(path, e))?;
            match rustix::fs::accessat(&dir, marker, rustix::fs::Access::EXISTS, rustix::fs::AtFlags::empty()) {
                Ok(()) => return Ok(DirSnapshot { path: path.to_path_buf(), dir }),
                Err(Errno::NOENT) if attempt < RESOLVE_ATTEMPTS => continue,
                Err(e) => return Err(io_error(&path.join(marker), e)),
            }
        }
    }

    /// The path the directory was opened by (for messages: the version read may
    /// since have been renamed).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens file `name` of this version of the directory.
    pub fn open_file(&self, name: &str) -> Result<File> {
        let fd = openat(&self.dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| io_error(&self.path.join(name), e))?;
        Ok(File::from(fd))
    }

    /// File `name` of this version as text.
    pub fn read_to_string(&self, name: &str) -> Result<String> {
        let mut text = String::new();
        self.open_file(name)?
            .read_to_string(&mut text)
            .map_err(|e| StoreError::Io { path: self.path.join(name), source: e })?;
        Ok(text)
    }
}

/// Removes the retired version at `dir` (a partition, or one table) unless a
/// reader holds it: every directory in it holding a `marker` file (and `dir`
/// itself) is locked exclusively without waiting first. `Ok(false)`: something still
/// reads it, and it stays for a later write to remove.
pub(crate) fn remove_unless_read(dir: &Path, marker: &str) -> Result<bool> {
    let mut tables = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        tables.extend(entries.flatten().map(|e| e.path()).filter(|p| p.join(marker).is_file()));
    }
    let mut locks = Vec::with_capacity(tables.len());
    for table in &tables {
        let Ok(fd) = open(table, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else {
            continue;
        };
        match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => locks.push(fd),
            Err(Errno::WOULDBLOCK) => return Ok(false),
            Err(e) => return Err(io_error(table, e)),
        }
    }
    std::fs::remove_dir_all(dir).map_err(|e| StoreError::Io { path: dir.to_path_buf(), source: e })?;
    drop(locks);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join(".d"), "a\n").unwrap();
        std::fs::write(path.join("a"), text).unwrap();
        path
    }

    #[test]
    fn a_reader_keeps_its_version_through_an_exchange_and_holds_off_its_removal() {
        let root = tempfile::tempdir().unwrap();
        let live = table(root.path(), "t", "old");
        let staged = table(root.path(), ".t.new", "new");
        let reader = DirSnapshot::open(&live, ".d").unwrap();
        rustix::fs::renameat_with(rustix::fs::CWD, &staged, rustix::fs::CWD, &live, rustix::fs::RenameFlags::EXCHANGE)
            .unwrap();
        // The old version is now at the staging name; the reader still reads it.
        assert!(!remove_unless_read(&staged, ".d").unwrap(), "a version being read is kept");
        let mut text = String::new();
        reader.open_file("a").unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "old");
        drop(reader);
        assert!(remove_unless_read(&staged, ".d").unwrap(), "removed once its reader is done");
        assert!(!staged.exists());
        assert_eq!(DirSnapshot::open(&live, ".d").unwrap().read_to_string("a").unwrap(), "new");
    }

    #[test]
    fn a_partition_is_kept_while_any_of_its_tables_is_read() {
        let root = tempfile::tempdir().unwrap();
        let partition = root.path().join("2024.01.02");
        let trade = table(&partition, "trade", "x");
        table(&partition, "quote", "y");
        let reader = DirSnapshot::open(&trade, ".d").unwrap();
        assert!(!remove_unless_read(&partition, ".d").unwrap());
        assert!(partition.join("quote").exists(), "nothing of it is removed");
        drop(reader);
        assert!(remove_unless_read(&partition, ".d").unwrap());
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let err = DirSnapshot::open(&root.path().join("gone"), ".d").unwrap_err().to_string();
        assert!(err.contains("gone"), "{err}");
    }
}
