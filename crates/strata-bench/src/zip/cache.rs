//! Making files cold before a read: drop the whole page cache when we may (root),
//! else ask the kernel to forget each file's pages (`posix_fadvise(DONTNEED)`).

use std::fs::File;
use std::io::Write;
use std::path::Path;

use rustix::fs::{Advice, fadvise};

use crate::io::flush::FlushMode;

/// How cold reads are made cold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColdCache {
    /// `sync; echo 3 > /proc/sys/vm/drop_caches`: every clean page goes (root only).
    DropCaches,
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on each file after an fsync: only the
    /// files read, and a hint the kernel may partly ignore.
    Fadvise,
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

impl ColdCache {
    /// Drop caches when this process may write `/proc/sys/vm/drop_caches`, else fadvise.
    pub fn detect() -> ColdCache {
        let writable = std::fs::OpenOptions::new().write(true).open(DROP_CACHES).is_ok();
        if writable { ColdCache::DropCaches } else { ColdCache::Fadvise }
    }

    /// How the report names the method.
    pub fn describe(self) -> &'static str {
        match self {
            ColdCache::DropCaches => {
                "page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before each cold pass"
            }
            ColdCache::Fadvise => {
                "posix_fadvise(DONTNEED) on each file (after fsync) before each cold read; not root, so the page cache could not be dropped"
            }
        }
    }

    /// The same method as the I/O benchmark's flush mode, for evicting whole
    /// directory trees.
    pub fn flush_mode(self) -> FlushMode {
        match self {
            ColdCache::DropCaches => FlushMode::Drop,
            ColdCache::Fadvise => FlushMode::Fadvise,
        }
    }

    /// Makes `files` cold. With [`ColdCache::DropCaches`] the whole cache is dropped,
    /// so callers evict once before a pass over many files.
    pub fn evict(self, files: &[&Path]) -> std::io::Result<()> {
        match self {
            ColdCache::DropCaches => {
                rustix::fs::sync();
                File::options().write(true).open(DROP_CACHES)?.write_all(b"3\n")
            }
            ColdCache::Fadvise => {
                for path in files {
                    let file = File::open(path)?;
                    // Dirty pages cannot be dropped: write them out first.
                    file.sync_all()?;
                    fadvise(&file, 0, None, Advice::DontNeed)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fadvise_eviction_works_on_real_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        ColdCache::Fadvise.evict(&[&path]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 1 << 16, "the file is intact");
        assert!(ColdCache::Fadvise.evict(&[&dir.path().join("missing")]).is_err());
        assert!(
            ColdCache::detect().describe().contains("page cache") || ColdCache::detect().describe().contains("fadvise")
        );
    }
}
