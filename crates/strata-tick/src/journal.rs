//! The tickerplant's journal: one file per day, `DIR/<schema>YYYY.MM.DD`, holding
//! every update as a checksummed record so a restart (or an RDB) can replay the day.
//!
//! ```text
//! 0   "STRJRNL1"                              file magic and version
//! 8   record: len u32 | crc32c(payload) u32 | payload (len bytes)
//!     ...
//! ```
//! A payload is the kdb+ wire form (no message header) of `(`upd; `table; data)`,
//! exactly what a kdb+ tickerplant logs. A record whose length runs past the end of
//! the file or whose checksum fails ends the valid part: opening for append counts
//! the valid records and truncates anything after them (a torn tail from a crash),
//! reporting how many bytes went.
//!
//! The journal keeps itself out of the page cache as it grows ([`recycle`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::TickError;

mod recycle;

use recycle::PageRecycler;
pub use recycle::RECYCLE_WINDOW;

/// The first bytes of every journal.
pub const MAGIC: &[u8; 8] = b"STRJRNL1";
/// Bytes before each payload: length and checksum.
pub const RECORD_HEADER: usize = 8;
/// The largest record accepted when reading; anything larger is corruption.
pub const MAX_RECORD: usize = 1 << 30;
/// Group commit writes the buffer out once it holds this many bytes.
const GROUP_BUFFER: usize = 1 << 20;

/// When the journal's bytes are forced to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Never: the OS writes back when it likes (kdb+'s behaviour).
    None,
    /// At most this often, from the tickerplant's loop.
    Every(Duration),
    /// Before a sync caller's update is acknowledged (and every 1 s otherwise).
    BeforeAck,
}

impl std::str::FromStr for FsyncPolicy {
    type Err = String;

    /// `none`, `ack`, or a period such as `100ms` or `1s`.
    fn from_str(s: &str) -> Result<FsyncPolicy, String> {
        let period = |digits: &str, unit: u64| digits.parse::<u64>().ok().map(|n| Duration::from_millis(n * unit));
        match s {
            "none" => Ok(FsyncPolicy::None),
            "ack" => Ok(FsyncPolicy::BeforeAck),
            _ => s
                .strip_suffix("ms")
                .and_then(|d| period(d, 1))
                .or_else(|| s.strip_suffix('s').and_then(|d| period(d, 1000)))
                .filter(|d| !d.is_zero())
                .map(FsyncPolicy::Every)
                .ok_or_else(|| format!("fsync policy {s:?}: expected none, ack, or a period such as 100ms or 1s")),
        }
    }
}

/// How updates reach the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// One `write` per update, as kdb+ does.
    PerUpdate,
    /// Updates are buffered and written together when the tickerplant has drained
    /// its input (or 1 MiB is buffered): fewer system calls under load.
    Group,
}

/// What scanning a journal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanReport {
    /// Valid records.
    pub records: u64,
    /// Bytes up to the end of the last valid record.
    pub valid_bytes: u64,
    /// The file's length: more than `valid_bytes` means a torn or corrupt tail.
    pub file_bytes: u64,
}

impl ScanReport {
    /// Bytes after the last valid record.
    pub fn torn_bytes(&self) -> u64 {
        self.file_bytes - self.valid_bytes
    }
}

/// The journal file for `schema` on `date` in `dir`: `dir/<schema>YYYY.MM.DD`.
pub fn journal_path(dir: &Path, schema: &str, date: strata_store::Date) -> PathBuf {
    dir.join(format!("{schema}{date}"))
}

/// Reads records from `path` in order, calling `each(index, payload)` for at most
/// `limit` of them, and stops at the first invalid record. Returns what it found;
/// the caller decides whether a torn tail matters.
pub fn replay(
    path: &Path,
    limit: Option<u64>,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), TickError>,
) -> Result<ScanReport, TickError> {
    let mut file = File::open(path).map_err(|e| TickError::io(path, e))?;
    let file_bytes = file.metadata().map_err(|e| TickError::io(path, e))?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 20, &mut file);
    let mut magic = [0u8; 8];
    if reader.read_exact(&mut magic).is_err() || &magic != MAGIC {
        return Err(TickError::Journal(format!(
            "{}: not a Strata journal (expected the {:?} header)",
            path.display(),
            std::str::from_utf8(MAGIC).expect("ASCII")
        )));
    }
    let mut report = ScanReport { records: 0, valid_bytes: MAGIC.len() as u64, file_bytes };
    let mut payload = Vec::new();
    while limit.is_none_or(|l| report.records < l) {
        let mut head = [0u8; RECORD_HEADER];
        if reader.read_exact(&mut head).is_err() {
            break;
        }
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if len > MAX_RECORD || report.valid_bytes + (RECORD_HEADER + len) as u64 > file_bytes {
            break;
        }
        payload.resize(len, 0);
        if reader.read_exact(&mut payload).is_err() || crc32c::crc32c(&payload) != crc {
            break;
        }
        each(report.records, &payload)?;
        report.records += 1;
        report.valid_bytes += (RECORD_HEADER + len) as u64;
    }
    Ok(report)
}

/// Counts the valid records of `path` without handing them out.
pub fn scan(path: &Path) -> Result<ScanReport, TickError> {
    replay(path, None, |_, _| Ok(()))
}

/// A journal open for appending.
pub struct Journal {
    path: PathBuf,
    file: Arc<File>,
    records: u64,
    bytes: u64,
    pending: Vec<u8>,
    mode: WriteMode,
    fsync: FsyncPolicy,
    unsynced: bool,
    last_sync: Instant,
    pages: PageRecycler,
}

impl Journal {
    /// Opens (or creates) the journal at `path` for appending. An existing file is
    /// scanned: its valid records are counted and a torn tail is truncated; the
    /// report says how much.
    pub fn open(path: &Path, mode: WriteMode, fsync: FsyncPolicy) -> Result<(Journal, ScanReport), TickError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| TickError::io(path, e))?;
        let len = file.metadata().map_err(|e| TickError::io(path, e))?.len();
        let report = if len == 0 {
            file.write_all(MAGIC).map_err(|e| TickError::io(path, e))?;
            file.sync_all().map_err(|e| TickError::io(path, e))?;
            strata_store::sync_parent(path).map_err(|e| TickError::Journal(e.to_string()))?;
            ScanReport { records: 0, valid_bytes: MAGIC.len() as u64, file_bytes: MAGIC.len() as u64 }
        } else {
            let report = scan(path)?;
            if report.torn_bytes() > 0 {
                file.set_len(report.valid_bytes).map_err(|e| TickError::io(path, e))?;
                file.sync_all().map_err(|e| TickError::io(path, e))?;
            }
            report
        };
        file.seek(SeekFrom::Start(report.valid_bytes)).map_err(|e| TickError::io(path, e))?;
        let file = Arc::new(file);
        let journal = Journal {
            path: path.to_path_buf(),
            pages: PageRecycler::new(file.clone(), report.valid_bytes),
            file,
            records: report.records,
            bytes: report.valid_bytes,
            pending: Vec::with_capacity(GROUP_BUFFER),
            mode,
            fsync,
            unsynced: false,
            last_sync: Instant::now(),
        };
        Ok((journal, report))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records appended so far, including those read at open (`.u.i` in kdb+).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes in the file once pending writes are flushed.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends one record whose payload `write_payload` appends to the buffer it is
    /// given (so callers encode straight into the journal's buffer). In
    /// [`WriteMode::PerUpdate`] the record is written at once.
    pub fn append_with(&mut self, write_payload: impl FnOnce(&mut Vec<u8>)) -> Result<(), TickError> {
        let start = self.pending.len();
        self.pending.extend_from_slice(&[0; RECORD_HEADER]);
        write_payload(&mut self.pending);
        let payload = &self.pending[start + RECORD_HEADER..];
        let len = u32::try_from(payload.len()).ok().filter(|&l| l as usize <= MAX_RECORD).ok_or_else(|| {
            TickError::Journal(format!("an update of {} bytes is over the 1 GiB limit", payload.len()))
        })?;
        let crc = crc32c::crc32c(payload);
        self.pending[start..start + 4].copy_from_slice(&len.to_le_bytes());
        self.pending[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        self.records += 1;
        self.bytes += (RECORD_HEADER + len as usize) as u64;
        if self.mode == WriteMode::PerUpdate || self.pending.len() >= GROUP_BUFFER {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes buffered records to the file (not necessarily to disk).
    pub fn write_pending(&mut self) -> Result<(), TickError> {
        if !self.pending.is_empty() {
            (&*self.file).write_all(&self.pending).map_err(|e| TickError::io(&self.path, e))?;
            self.pending.clear();
            self.unsynced = true;
            self.pages.written(self.bytes);
        }
        Ok(())
    }

    /// Writes pending records and forces them to disk.
    pub fn sync(&mut self) -> Result<(), TickError> {
        self.write_pending()?;
        if self.unsynced {
            self.file.sync_data().map_err(|e| TickError::io(&self.path, e))?;
            self.unsynced = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Called when the tickerplant has drained its input: writes pending records and
    /// syncs if the policy says it is time. `acking` says a sync caller waits.
    pub fn commit(&mut self, acking: bool) -> Result<(), TickError> {
        self.write_pending()?;
        let due = match self.fsync {
            FsyncPolicy::None => false,
            FsyncPolicy::BeforeAck => acking || self.last_sync.elapsed() >= Duration::from_secs(1),
            FsyncPolicy::Every(period) => self.last_sync.elapsed() >= period,
        };
        if due && self.unsynced { self.sync() } else { Ok(()) }
    }

    /// The fsync policy.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.fsync
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Best effort: a clean shutdown leaves nothing buffered.
        let _ = self.write_pending();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn payloads(path: &Path) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        replay(path, None, |_, p| {
            out.push(p.to_vec());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn records_survive_reopen_and_torn_tails_are_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym2025.01.02");
        for mode in [WriteMode::PerUpdate, WriteMode::Group] {
            let (mut j, report) = Journal::open(&path, mode, FsyncPolicy::None).unwrap();
            let before = report.records;
            for i in 0..10u8 {
                j.append_with(|b| b.extend_from_slice(&[i; 5])).unwrap();
            }
            j.commit(false).unwrap();
            assert_eq!(j.records(), before + 10);
        }
        assert_eq!(payloads(&path).len(), 20);
        let full = std::fs::metadata(&path).unwrap().len();
        // Tear the last record in half.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 7).unwrap();
        let (j, report) = Journal::open(&path, WriteMode::PerUpdate, FsyncPolicy::None).unwrap();
        assert_eq!(report.records, 19);
        assert_eq!(report.torn_bytes(), 13 - 7);
        assert_eq!(j.records(), 19);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full - 13, "tail truncated");
        drop(j);
        // A flipped byte inside a payload fails its checksum and ends the valid part.
        let mut bytes = std::fs::read(&path).unwrap();
        let at = MAGIC.len() + 5 * 13 + RECORD_HEADER + 2;
        bytes[at] ^= 0xFF;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(scan(&path).unwrap().records, 5);
        assert_eq!(replay(&path, Some(3), |_, _| Ok(())).unwrap().records, 3);
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"not a journal at all").unwrap();
        let err = Journal::open(&path, WriteMode::Group, FsyncPolicy::None).err().unwrap().to_string();
        assert!(err.contains("not a Strata journal"), "{err}");
    }

    #[test]
    fn fsync_policies_parse() {
        assert_eq!("none".parse(), Ok(FsyncPolicy::None));
        assert_eq!("ack".parse(), Ok(FsyncPolicy::BeforeAck));
        assert_eq!("250ms".parse(), Ok(FsyncPolicy::Every(Duration::from_millis(250))));
        assert_eq!("2s".parse(), Ok(FsyncPolicy::Every(Duration::from_secs(2))));
        assert!("0ms".parse::<FsyncPolicy>().is_err());
        assert!("often".parse::<FsyncPolicy>().is_err());
    }

    proptest! {
        #[test]
        fn any_cut_keeps_exactly_the_whole_records(sizes in prop::collection::vec(0usize..300, 1..20), cut in 0.0f64..1.0) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("j");
            let (mut j, _) = Journal::open(&path, WriteMode::Group, FsyncPolicy::None).unwrap();
            let mut ends = vec![MAGIC.len() as u64];
            for (i, n) in sizes.iter().enumerate() {
                j.append_with(|b| b.extend(std::iter::repeat_n(i as u8, *n))).unwrap();
                ends.push(j.bytes());
            }
            drop(j);
            let total = *ends.last().unwrap();
            let keep = MAGIC.len() as u64 + ((total - MAGIC.len() as u64) as f64 * cut) as u64;
            OpenOptions::new().write(true).open(&path).unwrap().set_len(keep).unwrap();
            let whole = ends.iter().filter(|&&e| e <= keep).count() as u64 - 1;
            let (_, report) = Journal::open(&path, WriteMode::Group, FsyncPolicy::None).unwrap();
            prop_assert_eq!(report.records, whole);
            prop_assert_eq!(std::fs::metadata(&path).unwrap().len(), ends[whole as usize]);
            let got = payloads(&path);
            for (i, p) in got.iter().enumerate() {
                prop_assert_eq!(p.len(), sizes[i]);
                prop_assert!(p.iter().all(|&b| b == i as u8));
            }
        }
    }
}
