//! Emptying the page cache before a suite, so its reads come from the device.
//!
//! As root, Nano's way: `sync`, then `echo 3 > /proc/sys/vm/drop_caches`. Otherwise
//! the next best: sync, then `posix_fadvise(POSIX_FADV_DONTNEED)` on every file under
//! the tested directories, which drops their clean pages (metadata and other
//! processes' mappings may stay cached, so the report says reads were not fully cold).

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rustix::fs::{Advice, fadvise};

use super::IoBenchError;

/// How to flush, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushMode {
    /// Drop the whole page cache when allowed (root), else advise per file.
    Auto,
    /// Drop the whole page cache; fail if not allowed.
    Drop,
    /// Sync, then advise the kernel to drop each tested file's pages.
    Fadvise,
    /// Do nothing: every read may be served from the cache.
    None,
}

impl FromStr for FlushMode {
    type Err = String;

    fn from_str(text: &str) -> Result<FlushMode, String> {
        match text {
            "auto" => Ok(FlushMode::Auto),
            "drop" => Ok(FlushMode::Drop),
            "fadvise" => Ok(FlushMode::Fadvise),
            "none" => Ok(FlushMode::None),
            other => Err(format!("unknown flush mode {other:?}; expected auto, drop, fadvise or none")),
        }
    }
}

/// What a flush did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// The whole page cache was dropped.
    DropCaches,
    /// Each file's pages were advised away.
    Fadvise,
    /// Nothing.
    Nothing,
}

impl fmt::Display for Flushed {
    /// A sentence for the report.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flushed::DropCaches => "page cache dropped before each suite (sync; echo 3 > /proc/sys/vm/drop_caches)",
            Flushed::Fadvise => {
                "page cache NOT dropped (needs root): each file's pages were advised away with \
                 posix_fadvise(DONTNEED) after a sync, so reads are mostly but not fully cold"
            }
            Flushed::Nothing => "page cache NOT flushed (--flush none): reads labelled 'disk' may come from memory",
        })
    }
}

/// Flushes as `mode` asks for the files under `dirs`.
pub fn flush(mode: FlushMode, dirs: &[PathBuf]) -> Result<Flushed, IoBenchError> {
    match mode {
        FlushMode::None => Ok(Flushed::Nothing),
        FlushMode::Drop => drop_caches(),
        FlushMode::Fadvise => advise_away(dirs),
        FlushMode::Auto => drop_caches().or_else(|_| advise_away(dirs)),
    }
}

fn drop_caches() -> Result<Flushed, IoBenchError> {
    rustix::fs::sync();
    let control = Path::new("/proc/sys/vm/drop_caches");
    std::fs::write(control, b"3\n").map_err(|e| IoBenchError::io(control, e))?;
    Ok(Flushed::DropCaches)
}

fn advise_away(dirs: &[PathBuf]) -> Result<Flushed, IoBenchError> {
    // Dirty pages cannot be dropped: write them out first.
    rustix::fs::sync();
    for dir in dirs {
        advise_tree(dir)?;
    }
    Ok(Flushed::Fadvise)
}

fn advise_tree(path: &Path) -> Result<(), IoBenchError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| IoBenchError::io(path, e))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(|e| IoBenchError::io(path, e))? {
            advise_tree(&entry.map_err(|e| IoBenchError::io(path, e))?.path())?;
        }
    } else if meta.is_file() {
        let file = File::open(path).map_err(|e| IoBenchError::io(path, e))?;
        fadvise(&file, 0, None, Advice::DontNeed).map_err(|e| IoBenchError::io(path, e.into()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advising_walks_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f"), vec![7u8; 1 << 16]).unwrap();
        assert_eq!(flush(FlushMode::Fadvise, &[dir.path().to_path_buf()]).unwrap(), Flushed::Fadvise);
        assert_eq!(flush(FlushMode::None, &[]).unwrap(), Flushed::Nothing);
        let missing = flush(FlushMode::Fadvise, &[dir.path().join("gone")]).unwrap_err().to_string();
        assert!(missing.contains("gone"), "{missing}");
        assert!("sometimes".parse::<FlushMode>().unwrap_err().contains("auto, drop, fadvise or none"));
    }
}
