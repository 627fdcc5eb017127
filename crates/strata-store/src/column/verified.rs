//! Which plain column files this process has already checked against their values
//! checksum, so the check costs one read of each file per process, not one per
//! query. A file is known by its device, inode, length and modification and change
//! times, read from the open descriptor: Strata never rewrites a column file in
//! place (a rewrite is a new file renamed over the old, a new inode), so a file
//! written since its check is always checked again. Damage made in place by
//! something else after a file's check, within the file system's time stamp
//! granularity, is found by the next process, or by `strata verify`.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, OnceLock};

/// What identifies one version of one file on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileVersion {
    /// The version of the open `file` (`None` when it cannot be stat'ed: then it is
    /// checked on every open).
    pub(crate) fn of(file: &File) -> Option<FileVersion> {
        let m = file.metadata().ok()?;
        Some(FileVersion {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// Bound on the versions remembered; past it the set starts again (files are then
/// checked again: slower, never wrong).
const REMEMBERED: usize = 1 << 20;

fn checked() -> &'static Mutex<HashSet<FileVersion>> {
    static CHECKED: OnceLock<Mutex<HashSet<FileVersion>>> = OnceLock::new();
    CHECKED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Whether `version` was checked already in this process.
pub(crate) fn was_checked(version: Option<FileVersion>) -> bool {
    version.is_some_and(|v| checked().lock().is_ok_and(|set| set.contains(&v)))
}

/// Records that `version` passed its check.
pub(crate) fn record_checked(version: Option<FileVersion>) {
    if let (Some(v), Ok(mut set)) = (version, checked().lock()) {
        if set.len() >= REMEMBERED {
            set.clear();
        }
        set.insert(v);
    }
}
