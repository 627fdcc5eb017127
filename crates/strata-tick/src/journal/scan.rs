//! Reading a journal file: its records in order, and what lies between them when
//! the file is damaged.
//!
//! A record is valid when its length is 1 to [`MAX_RECORD`] bytes, it fits in the
//! file and its payload's crc32c matches. After an invalid record the rest of the
//! file is searched, byte by byte, for an offset where a chain of records starts:
//! [`RESYNC_WALK`] plausible headers, then [`RESYNC_CHAIN`] valid records (fewer
//! where the file ends). If one is found, the bytes before it are damage inside the
//! file; if none is, they are a torn tail (an interrupted write, zeros a crash left,
//! a record cut short).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{MAGIC, MAX_RECORD, RECORD_HEADER, Recovery, ScanReport};
use crate::error::TickError;

/// Bytes read from the file at once when reading in order: few system calls per
/// record, and a bounded buffer beside the largest record.
const READ_CHUNK: usize = 1 << 20;

/// Valid records in a row that mark an offset as a record boundary when searching
/// past damage (fewer when the file, or a torn last record, ends the chain). Two
/// checksums make a false boundary in arbitrary bytes a 2^-64 chance per offset,
/// and a single damaged record costs none of its neighbours.
const RESYNC_CHAIN: usize = 2;

/// Headers walked from a candidate boundary, lengths only, before any checksum is
/// computed (fewer when the walk reaches the end of the file). A length is
/// plausible in at most one of four random words and a checksum may cost up to
/// [`MAX_RECORD`] bytes of reading, so bytes that are no records must fail here:
/// without this walk a 4 KiB damaged block in a 10 GB journal meant hundreds of
/// checksums over hundreds of MB each.
const RESYNC_WALK: usize = 16;

/// One stretch of a journal file, in file order.
pub(super) enum Piece<'a> {
    /// A valid record: `bytes` is its header and payload.
    Record { offset: u64, bytes: &'a [u8] },
    /// Bytes with valid records after them that are no valid record.
    Damaged { offset: u64, bytes: u64 },
    /// Bytes to the end of the file in which no valid record starts.
    Torn { offset: u64, bytes: u64 },
}

/// Walks a journal's pieces from the first record to the end of the file as it was
/// when opened (later appends are not read).
pub(super) struct Walker {
    reader: Reader,
    at: u64,
}

impl Walker {
    /// Opens `path` and checks its magic.
    pub(super) fn open(path: &Path) -> Result<Walker, TickError> {
        let file = File::open(path).map_err(|e| TickError::io(path, e))?;
        let len = file.metadata().map_err(|e| TickError::io(path, e))?.len();
        let mut reader = Reader { file, path: path.to_path_buf(), len, buf: Vec::new(), buf_at: 0 };
        if reader.bytes(0, MAGIC.len())? != Some(MAGIC.as_slice()) {
            return Err(TickError::Journal(format!(
                "{}: not a Strata journal (expected the {:?} header)",
                path.display(),
                std::str::from_utf8(MAGIC).expect("ASCII")
            )));
        }
        Ok(Walker { reader, at: MAGIC.len() as u64 })
    }

    /// The file's length when opened.
    pub(super) fn file_bytes(&self) -> u64 {
        self.reader.len
    }

    /// The next piece, `None` at the end of the file.
    pub(super) fn next(&mut self) -> Result<Option<Piece<'_>>, TickError> {
        let at = self.at;
        if at >= self.reader.len {
            return Ok(None);
        }
        if let Some(len) = self.reader.record_len(at)? {
            let size = RECORD_HEADER + len;
            self.at = at + size as u64;
            let bytes = self.reader.bytes(at, size)?.expect("checked just before");
            return Ok(Some(Piece::Record { offset: at, bytes }));
        }
        match self.resync(at + 1)? {
            Some(next) => {
                self.at = next;
                Ok(Some(Piece::Damaged { offset: at, bytes: next - at }))
            }
            None => {
                self.at = self.reader.len;
                Ok(Some(Piece::Torn { offset: at, bytes: self.reader.len - at }))
            }
        }
    }

    /// Valid records from here to the end of the file, past any damage.
    pub(super) fn count_rest(&mut self) -> Result<u64, TickError> {
        let mut records = 0;
        while let Some(piece) = self.next()? {
            records += matches!(piece, Piece::Record { .. }) as u64;
        }
        Ok(records)
    }

    /// The first offset at or after `from` where a chain of valid records starts.
    fn resync(&mut self, from: u64) -> Result<Option<u64>, TickError> {
        let mut at = from;
        // The smallest record is a header and one byte.
        while at + (RECORD_HEADER as u64) < self.reader.len {
            if self.chain_at(at)? {
                return Ok(Some(at));
            }
            at += 1;
        }
        Ok(None)
    }

    /// Whether a chain of valid records starts at `start`: [`RESYNC_WALK`] headers
    /// of plausible lengths, then [`RESYNC_CHAIN`] valid records, either walk
    /// ending early only where the file ends or a record runs past its end. (A
    /// second damaged header within the walk hides the boundary: the records
    /// between go to the side file with the damage, not into the journal.)
    fn chain_at(&mut self, start: u64) -> Result<bool, TickError> {
        let mut at = start;
        for hop in 0..RESYNC_WALK {
            if hop > 0 && self.reader.ends_torn(at)? {
                break;
            }
            match self.reader.plausible(at, hop > 0)? {
                Some(len) => at += (RECORD_HEADER + len) as u64,
                None => return Ok(false),
            }
        }
        let mut at = start;
        for record in 0..RESYNC_CHAIN {
            if record > 0 && self.reader.ends_torn(at)? {
                break;
            }
            match self.reader.record_len(at)? {
                Some(len) => at += (RECORD_HEADER + len) as u64,
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

/// Buffered positional reads of a journal file.
struct Reader {
    file: File,
    path: PathBuf,
    /// The file's length when opened, lowered if it turns out shorter (a writer cut
    /// a failed write back meanwhile).
    len: u64,
    buf: Vec<u8>,
    /// Where `buf` starts in the file.
    buf_at: u64,
}

impl Reader {
    /// The `n` bytes at `at`, or `None` past the end of the file.
    fn bytes(&mut self, at: u64, n: usize) -> Result<Option<&[u8]>, TickError> {
        let end = at + n as u64;
        if end > self.len {
            return Ok(None);
        }
        if at < self.buf_at || end > self.buf_at + self.buf.len() as u64 {
            self.fill(at, n)?;
            if end > self.len {
                return Ok(None);
            }
        }
        let from = (at - self.buf_at) as usize;
        Ok(Some(&self.buf[from..from + n]))
    }

    /// Reads from `at` at least `n` bytes (a chunk when there are more).
    fn fill(&mut self, at: u64, n: usize) -> Result<(), TickError> {
        let want = (n.max(READ_CHUNK) as u64).min(self.len - at) as usize;
        self.buf.resize(want, 0);
        self.buf_at = at;
        let mut got = 0;
        while got < want {
            match self.file.read_at(&mut self.buf[got..], at + got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TickError::io(&self.path, e)),
            }
        }
        if got < want {
            self.len = at + got as u64;
            self.buf.truncate(got);
        }
        Ok(())
    }

    /// The length and checksum of the header at `at`. With `peek` (a look ahead
    /// while searching past damage) a header outside the buffer is read on its own,
    /// so the buffer stays where the search is.
    fn header(&mut self, at: u64, peek: bool) -> Result<Option<(usize, u32)>, TickError> {
        let mut head = [0u8; RECORD_HEADER];
        let end = at + RECORD_HEADER as u64;
        if end > self.len {
            return Ok(None);
        }
        if peek && (at < self.buf_at || end > self.buf_at + self.buf.len() as u64) {
            if self.file.read_exact_at(&mut head, at).is_err() {
                return Ok(None);
            }
        } else {
            match self.bytes(at, RECORD_HEADER)? {
                Some(bytes) => head.copy_from_slice(bytes),
                None => return Ok(None),
            }
        }
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        Ok(Some((len, u32::from_le_bytes(head[4..].try_into().expect("4 bytes")))))
    }

    /// The payload length of the header at `at` if a record of that length could
    /// start there: not empty (a payload never is, and zeros are what a crash
    /// leaves), at most [`MAX_RECORD`], within the file. The checksum is not checked.
    fn plausible(&mut self, at: u64, peek: bool) -> Result<Option<usize>, TickError> {
        Ok(self
            .header(at, peek)?
            .map(|(len, _)| len)
            .filter(|&len| (1..=MAX_RECORD).contains(&len) && at + (RECORD_HEADER + len) as u64 <= self.len))
    }

    /// Whether the file ends at `at` or with an incomplete record starting there
    /// (a partial header, or a plausible length running past the end).
    fn ends_torn(&mut self, at: u64) -> Result<bool, TickError> {
        Ok(match self.header(at, true)? {
            None => true,
            Some((len, _)) => (1..=MAX_RECORD).contains(&len) && at + (RECORD_HEADER + len) as u64 > self.len,
        })
    }

    /// The payload length of the valid record at `at`, if one starts there.
    fn record_len(&mut self, at: u64) -> Result<Option<usize>, TickError> {
        let Some(len) = self.plausible(at, false)? else { return Ok(None) };
        let Some((_, crc)) = self.header(at, false)? else { return Ok(None) };
        let Some(payload) = self.bytes(at + RECORD_HEADER as u64, len)? else { return Ok(None) };
        Ok((crc32c::crc32c(payload) == crc).then_some(len))
    }
}

/// [`super::replay_with`]'s body: see there.
pub(super) fn replay_with(
    path: &Path,
    limit: Option<u64>,
    recovery: Recovery,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), TickError>,
) -> Result<ScanReport, TickError> {
    let mut walker = Walker::open(path)?;
    let mut report = ScanReport::empty(walker.file_bytes());
    while limit.is_none_or(|l| report.records < l) {
        match walker.next()? {
            None | Some(Piece::Torn { .. }) => break,
            Some(Piece::Record { offset, bytes }) => {
                each(report.records, &bytes[RECORD_HEADER..])?;
                report.records += 1;
                report.valid_bytes = offset + bytes.len() as u64;
            }
            Some(Piece::Damaged { offset, bytes }) => match recovery {
                Recovery::Refuse => {
                    let valid_after = walker.count_rest()?;
                    return Err(TickError::JournalCorrupt {
                        path: path.display().to_string(),
                        record: report.records,
                        offset,
                        bytes,
                        valid_after,
                    });
                }
                Recovery::Skip => {
                    report.skipped_regions += 1;
                    report.skipped_bytes += bytes;
                }
            },
        }
    }
    Ok(report)
}
