//! Opening an existing journal for appending: a torn tail is cut; damage inside the
//! file is refused or, when asked, quarantined. Bytes leave a journal only after a
//! copy of them is on disk in a side file beside it, so nothing written is lost to
//! a repair: an operator can always look at (and put back) what was cut.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use strata_store::{AtomicFile, Durability, sync_parent};

use super::scan::{Piece, Walker};
use super::{MAGIC, Recovery, ScanReport};
use crate::error::TickError;

/// Side files tried per offset before giving up: each failed open that crashed
/// before its cut leaves one, and this many means something else is wrong.
const SIDE_FILE_VERSIONS: u32 = 100;

/// Why bytes were cut out of a journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// An incomplete last record, or bytes after the last valid record in which no
    /// valid record starts (zeros a crash left): kept in `<journal>.torn-<offset>`.
    TornTail,
    /// Bytes between valid records that are no valid record, cut with
    /// [`Recovery::Skip`]: kept in `<journal>.damaged-<offset>`.
    Damaged,
}

/// Bytes cut out of a journal, and the side file that keeps them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAside {
    /// Why they were cut.
    pub cut: Cut,
    /// Where they were in the journal.
    pub offset: u64,
    /// How many.
    pub bytes: u64,
    /// The side file (synced, with its directory, before the journal changed).
    pub path: PathBuf,
}

/// What opening a journal found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    /// The file as it was found (`records` valid records, now all in the journal).
    pub scan: ScanReport,
    /// What was cut out, in file order.
    pub set_aside: Vec<SetAside>,
}

/// Reads the whole journal at `path`, then: damage with `Recovery::Refuse` is an
/// error and nothing changes; damage with `Recovery::Skip` is copied to side files
/// and the journal rewritten as its valid records; a torn tail is copied to a side
/// file and truncated.
pub(super) fn recover(path: &Path, recovery: Recovery) -> Result<Recovered, TickError> {
    let mut walker = Walker::open(path)?;
    let mut scan = ScanReport::empty(walker.file_bytes());
    // (valid records before, offset, bytes) per damaged stretch.
    let mut damaged = Vec::new();
    let mut torn = None;
    while let Some(piece) = walker.next()? {
        match piece {
            Piece::Record { offset, bytes } => {
                scan.records += 1;
                scan.valid_bytes = offset + bytes.len() as u64;
            }
            Piece::Damaged { offset, bytes } => {
                damaged.push((scan.records, offset, bytes));
                scan.skipped_regions += 1;
                scan.skipped_bytes += bytes;
            }
            Piece::Torn { offset, bytes } => torn = Some((offset, bytes)),
        }
    }
    drop(walker);
    if let Some(&(record, offset, bytes)) = damaged.first()
        && recovery == Recovery::Refuse
    {
        return Err(TickError::JournalCorrupt {
            path: path.display().to_string(),
            record,
            offset,
            bytes,
            valid_after: scan.records - record,
        });
    }
    let mut set_aside = Vec::new();
    for &(_, offset, bytes) in &damaged {
        set_aside.push(keep_copy(path, Cut::Damaged, offset, bytes)?);
    }
    if let Some((offset, bytes)) = torn {
        set_aside.push(keep_copy(path, Cut::TornTail, offset, bytes)?);
    }
    if !damaged.is_empty() {
        rewrite(path)?;
    } else if let Some((offset, _)) = torn {
        truncate(path, offset)?;
    }
    Ok(Recovered { scan, set_aside })
}

/// Copies `bytes` bytes at `offset` of `journal` to a new side file beside it,
/// `<journal>.torn-<offset>` or `<journal>.damaged-<offset>` (`.1`, `.2`, ... added
/// when that exists), and syncs it and the directory.
fn keep_copy(journal: &Path, cut: Cut, offset: u64, bytes: u64) -> Result<SetAside, TickError> {
    let name = journal.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tag = match cut {
        Cut::TornTail => "torn",
        Cut::Damaged => "damaged",
    };
    let base = format!("{name}.{tag}-{offset}");
    let (path, mut out) = create_new(journal, &base)?;
    let mut source = File::open(journal).map_err(|e| TickError::io(journal, e))?;
    source.seek(SeekFrom::Start(offset)).map_err(|e| TickError::io(journal, e))?;
    let copied = std::io::copy(&mut source.take(bytes), &mut out).map_err(|e| TickError::io(&path, e))?;
    if copied != bytes {
        return Err(TickError::Journal(format!(
            "{}: copied {copied} of the {bytes} bytes at offset {offset} to {}: the journal shrank meanwhile",
            journal.display(),
            path.display()
        )));
    }
    out.sync_all().map_err(|e| TickError::io(&path, e))?;
    sync_parent(&path)?;
    Ok(SetAside { cut, offset, bytes, path })
}

/// A new file named `base` (or `base.N`) beside `journal`.
fn create_new(journal: &Path, base: &str) -> Result<(PathBuf, File), TickError> {
    for version in 0..SIDE_FILE_VERSIONS {
        let name = if version == 0 { base.to_string() } else { format!("{base}.{version}") };
        let path = journal.with_file_name(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(TickError::io(&path, e)),
        }
    }
    Err(TickError::Journal(format!(
        "{}: {SIDE_FILE_VERSIONS} side files named {base} exist already; move them away and start again",
        journal.display()
    )))
}

/// Rewrites the journal as its valid records only: a temporary file beside it,
/// synced, renamed over it, the directory synced. A crash on the way leaves the
/// journal as it was.
fn rewrite(path: &Path) -> Result<(), TickError> {
    let mut out = AtomicFile::create(path, Durability::Fsync)?;
    out.write_all(MAGIC)?;
    let mut walker = Walker::open(path)?;
    while let Some(piece) = walker.next()? {
        if let Piece::Record { bytes, .. } = piece {
            out.write_all(bytes)?;
        }
    }
    out.commit()?;
    Ok(())
}

/// Cuts the journal at `at` and syncs it.
fn truncate(path: &Path, at: u64) -> Result<(), TickError> {
    let file = OpenOptions::new().write(true).open(path).map_err(|e| TickError::io(path, e))?;
    file.set_len(at).map_err(|e| TickError::io(path, e))?;
    file.sync_all().map_err(|e| TickError::io(path, e))
}
