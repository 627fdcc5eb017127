//! The tickerplant's journal: one file per day, `DIR/<schema>YYYY.MM.DD`, holding
//! every update as a checksummed record so a restart (or an RDB) can replay the day.
//!
//! ```text
//! 0   "STRJRNL1"                              file magic and version
//! 8   record: len u32 | crc32c(payload) u32 | payload (len bytes, never empty)
//!     ...
//! ```
//! A payload is the kdb+ wire form (no message header) of `(`upd; `table; data)`,
//! exactly what a kdb+ tickerplant logs.
//!
//! Reading ([`scan`]) tells a torn tail (an incomplete last record, or bytes after
//! the last valid record in which no valid record starts, such as zeros) from damage
//! inside the file (an invalid record with valid records after it). Opening for
//! append ([`Journal::open`], [`repair`]) copies a torn tail to a side file and cuts
//! it; damage is refused ([`TickError::JournalCorrupt`]) unless [`Recovery::Skip`]
//! asks to copy it aside and keep every valid record. Replay follows the same rules
//! without changing the file.
//!
//! The file always holds exactly the records counted as written: a write that
//! fails is cut back and its records are forgotten ([`Journal::write_pending`]).
//! The journal keeps itself out of the page cache as it grows ([`recycle`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_store::Date;

use crate::error::TickError;

mod recycle;
mod repair;
mod scan;

use recycle::PageRecycler;
pub use recycle::RECYCLE_WINDOW;
pub use repair::{Cut, Recovered, SetAside};

/// The first bytes of every journal.
pub const MAGIC: &[u8; 8] = b"STRJRNL1";
/// Bytes before each payload: length and checksum.
pub const RECORD_HEADER: usize = 8;
/// The largest record accepted when reading; anything larger is corruption.
pub const MAX_RECORD: usize = 1 << 30;
/// The group-commit buffer's starting capacity. How much it holds is bounded by its
/// writer, which commits when [`Journal::pending_bytes`] reach its batch bound.
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
    /// Updates are buffered and written together when the writer commits (the
    /// tickerplant does when it has drained its input or its batch is full): fewer
    /// system calls under load, and a batch is written whole or refused whole.
    Group,
}

/// What reading a journal does with damage inside the file: an invalid record with
/// valid records after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recovery {
    /// Stop with [`TickError::JournalCorrupt`], changing nothing: an operator looks.
    #[default]
    Refuse,
    /// Step over the damaged bytes to the next valid record and keep every valid
    /// record after them. Opening for append first copies the bytes to a side file.
    Skip,
}

impl std::str::FromStr for Recovery {
    type Err = String;

    /// `refuse` or `skip`.
    fn from_str(s: &str) -> Result<Recovery, String> {
        match s {
            "refuse" => Ok(Recovery::Refuse),
            "skip" => Ok(Recovery::Skip),
            _ => Err(format!("journal recovery {s:?}: expected refuse or skip")),
        }
    }
}

/// What reading a journal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanReport {
    /// Valid records read.
    pub records: u64,
    /// Bytes up to the end of the last valid record read.
    pub valid_bytes: u64,
    /// The file's length: more than `valid_bytes` means a torn tail (or records not
    /// read for a limit).
    pub file_bytes: u64,
    /// Damaged stretches stepped over with [`Recovery::Skip`] (each one or more
    /// records that failed their checks).
    pub skipped_regions: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
}

impl ScanReport {
    /// Nothing read yet of a file of `file_bytes` bytes.
    fn empty(file_bytes: u64) -> ScanReport {
        ScanReport { records: 0, valid_bytes: MAGIC.len() as u64, file_bytes, skipped_regions: 0, skipped_bytes: 0 }
    }

    /// Bytes after the last valid record.
    pub fn torn_bytes(&self) -> u64 {
        self.file_bytes - self.valid_bytes
    }
}

/// The journal file for `schema` on `date` in `dir`: `dir/<schema>YYYY.MM.DD`.
pub fn journal_path(dir: &Path, schema: &str, date: strata_store::Date) -> PathBuf {
    dir.join(format!("{schema}{date}"))
}

/// The date a journal's file name ends with (`<schema>YYYY.MM.DD`); `None` for a
/// name that does not end so.
pub fn journal_date(path: &Path) -> Option<Date> {
    let name = path.file_name()?.to_str()?;
    let suffix = name.get(name.len().checked_sub(DATE_CHARS)?..)?;
    // `parse` also takes YYYY-MM-DD: only the name a journal gets counts.
    suffix.parse().ok().filter(|d: &Date| d.to_string() == suffix)
}

/// The journal of `date` beside journal `path` (same directory and schema).
pub fn journal_of(path: &Path, date: Date) -> Option<PathBuf> {
    journal_date(path)?;
    let name = path.file_name()?.to_str()?;
    Some(path.with_file_name(format!("{}{date}", &name[..name.len() - DATE_CHARS])))
}

/// The characters of a journal name's date, `YYYY.MM.DD`.
const DATE_CHARS: usize = 10;

/// The dates of the journals of `schema` in `dir` (files named exactly
/// `<schema>YYYY.MM.DD`; side files and other names are left out), oldest first.
/// A missing directory has none.
pub fn journal_dates(dir: &Path, schema: &str) -> Result<Vec<Date>, TickError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(TickError::io(dir, e)),
    };
    let mut dates = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| TickError::io(dir, e))?.file_name();
        let date = name.to_str().and_then(|n| n.strip_prefix(schema)).and_then(|d| d.parse::<Date>().ok());
        // `parse` also takes YYYY-MM-DD: only the name a journal gets counts.
        if let Some(date) = date.filter(|d| name.to_str() == journal_path(Path::new(""), schema, *d).to_str()) {
            dates.push(date);
        }
    }
    dates.sort_unstable();
    Ok(dates)
}

/// Reads records from `path` in order, calling `each(index, payload)` for at most
/// `limit` of them. A torn tail ends the replay (the report says how many bytes
/// were not read); damage inside the file is [`TickError::JournalCorrupt`]
/// (`replay_with` with [`Recovery::Refuse`]).
pub fn replay(
    path: &Path,
    limit: Option<u64>,
    each: impl FnMut(u64, &[u8]) -> Result<(), TickError>,
) -> Result<ScanReport, TickError> {
    replay_with(path, limit, Recovery::Refuse, each)
}

/// [`replay`] with a choice for damage inside the file: [`Recovery::Skip`] steps
/// over it in memory (the file is only read), `index` counting valid records only,
/// and reports what it skipped in [`ScanReport::skipped_regions`] and
/// [`ScanReport::skipped_bytes`].
pub fn replay_with(
    path: &Path,
    limit: Option<u64>,
    recovery: Recovery,
    each: impl FnMut(u64, &[u8]) -> Result<(), TickError>,
) -> Result<ScanReport, TickError> {
    scan::replay_with(path, limit, recovery, each)
}

/// Counts the valid records of `path` without handing them out (damage refused).
pub fn scan(path: &Path) -> Result<ScanReport, TickError> {
    replay(path, None, |_, _| Ok(()))
}

/// A journal open for appending. The file holds exactly `written_records` records
/// in `written_bytes` bytes; records appended since the last write wait in
/// `pending`.
pub struct Journal {
    path: PathBuf,
    file: Arc<File>,
    written_records: u64,
    written_bytes: u64,
    pending: Vec<u8>,
    pending_records: u64,
    /// A failed write may have left bytes past `written_bytes`: they are cut before
    /// anything else is written.
    tail_to_cut: bool,
    mode: WriteMode,
    fsync: FsyncPolicy,
    unsynced: bool,
    last_sync: Instant,
    pages: PageRecycler,
}

impl Journal {
    /// Opens (or creates) the journal at `path` for appending. An existing file is
    /// read to the end: a torn tail is copied to a side file and cut; damage inside
    /// it is refused or set aside as `recovery` says ([`repair`]). The report says
    /// what was found and what was cut.
    pub fn open(
        path: &Path,
        mode: WriteMode,
        fsync: FsyncPolicy,
        recovery: Recovery,
    ) -> Result<(Journal, Recovered), TickError> {
        let existing = std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
        let recovered = if existing {
            repair::recover(path, recovery)?
        } else {
            create(path)?;
            let magic = MAGIC.len() as u64;
            Recovered { scan: ScanReport::empty(magic), set_aside: Vec::new() }
        };
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| TickError::io(path, e))?;
        let end = file.metadata().map_err(|e| TickError::io(path, e))?.len();
        let file = Arc::new(file);
        let journal = Journal {
            path: path.to_path_buf(),
            pages: PageRecycler::new(file.clone(), end),
            file,
            written_records: recovered.scan.records,
            written_bytes: end,
            pending: Vec::with_capacity(GROUP_BUFFER),
            pending_records: 0,
            tail_to_cut: false,
            mode,
            fsync,
            unsynced: false,
            last_sync: Instant::now(),
        };
        Ok((journal, recovered))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records appended so far, including those read at open and those pending
    /// (`.u.j` in kdb+; after [`Journal::write_pending`], what the file holds).
    pub fn records(&self) -> u64 {
        self.written_records + self.pending_records
    }

    /// Bytes in the file once pending writes are made.
    pub fn bytes(&self) -> u64 {
        self.written_bytes + self.pending.len() as u64
    }

    /// Bytes appended and not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Appends one record whose payload `write_payload` appends to the buffer it is
    /// given (so callers encode straight into the journal's buffer). In
    /// [`WriteMode::PerUpdate`] the record is written at once, and on an error it
    /// is not in the journal. An empty or over-large payload is refused.
    pub fn append_with(&mut self, write_payload: impl FnOnce(&mut Vec<u8>)) -> Result<(), TickError> {
        let start = self.pending.len();
        self.pending.extend_from_slice(&[0; RECORD_HEADER]);
        write_payload(&mut self.pending);
        let payload = &self.pending[start + RECORD_HEADER..];
        let Some(len) = u32::try_from(payload.len()).ok().filter(|&l| (1..=MAX_RECORD).contains(&(l as usize))) else {
            let len = payload.len();
            self.pending.truncate(start);
            return Err(TickError::Journal(format!(
                "{}: an update of {len} bytes cannot be journaled (1 byte to 1 GiB)",
                self.path.display()
            )));
        };
        let crc = crc32c::crc32c(payload);
        self.pending[start..start + 4].copy_from_slice(&len.to_le_bytes());
        self.pending[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        self.pending_records += 1;
        if self.mode == WriteMode::PerUpdate {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes pending records to the file (not necessarily to disk). On an error
    /// (a full disk, say) the pending records are dropped, the file is cut back to
    /// the records written before, and [`Journal::records`] counts those only: the
    /// caller refuses the updates it appended since the last write.
    pub fn write_pending(&mut self) -> Result<(), TickError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = self.cut_tail().and_then(|()| {
            self.file.write_all_at(&self.pending, self.written_bytes).map_err(|e| TickError::io(&self.path, e))
        });
        let records = std::mem::take(&mut self.pending_records);
        let bytes = self.pending.len() as u64;
        self.pending.clear();
        if let Err(e) = written {
            // Part of the write may have landed: cut it now if possible, else
            // before the next write.
            self.tail_to_cut = true;
            let _ = self.cut_tail();
            return Err(e);
        }
        self.written_records += records;
        self.written_bytes += bytes;
        self.unsynced = true;
        self.pages.written(self.written_bytes);
        Ok(())
    }

    /// Cuts what a failed write left past the written records, and syncs the cut
    /// so a crash cannot bring refused records back.
    fn cut_tail(&mut self) -> Result<(), TickError> {
        if self.tail_to_cut {
            self.file.set_len(self.written_bytes).map_err(|e| TickError::io(&self.path, e))?;
            self.file.sync_all().map_err(|e| TickError::io(&self.path, e))?;
            self.tail_to_cut = false;
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

/// Creates an empty journal at `path`: the magic, synced with the directory.
fn create(path: &Path) -> Result<(), TickError> {
    let mut file =
        OpenOptions::new().write(true).create(true).truncate(true).open(path).map_err(|e| TickError::io(path, e))?;
    file.write_all(MAGIC).map_err(|e| TickError::io(path, e))?;
    file.sync_all().map_err(|e| TickError::io(path, e))?;
    strata_store::sync_parent(path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_journal_name_gives_its_day_and_its_neighbours() {
        let path = Path::new("/j/sym2026.11.25");
        let day: Date = "2026.11.25".parse().unwrap();
        assert_eq!(journal_date(path), Some(day));
        assert_eq!(journal_of(path, Date(day.0 + 1)).unwrap(), Path::new("/j/sym2026.11.26"));
        assert_eq!(journal_date(Path::new("/j/sym")), None);
        assert_eq!(journal_of(Path::new("/j/notadate.x"), day), None);
    }

    fn payloads(path: &Path) -> Vec<Vec<u8>> {
        payloads_with(path, Recovery::Refuse).unwrap()
    }

    fn payloads_with(path: &Path, recovery: Recovery) -> Result<Vec<Vec<u8>>, TickError> {
        let mut out = Vec::new();
        replay_with(path, None, recovery, |_, p| {
            out.push(p.to_vec());
            Ok(())
        })?;
        Ok(out)
    }

    fn open(path: &Path, recovery: Recovery) -> Result<(Journal, Recovered), TickError> {
        Journal::open(path, WriteMode::Group, FsyncPolicy::None, recovery)
    }

    /// A journal of `sizes.len()` records, record `i` being `sizes[i]` bytes of
    /// `i`; returns where each record starts, and the end.
    fn write_journal(path: &Path, sizes: &[usize]) -> Vec<u64> {
        let (mut j, _) = open(path, Recovery::Refuse).unwrap();
        let mut starts = vec![j.bytes()];
        for (i, n) in sizes.iter().enumerate() {
            j.append_with(|b| b.extend(std::iter::repeat_n(i as u8, *n))).unwrap();
            starts.push(j.bytes());
        }
        j.commit(false).unwrap();
        starts
    }

    fn flip_bit(path: &Path, at: u64, bit: u8) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at as usize] ^= 1 << bit;
        std::fs::write(path, &bytes).unwrap();
    }

    /// Files in `dir` other than `journal`.
    fn side_files(dir: &Path, journal: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p != journal).collect();
        files.sort();
        files
    }

    #[test]
    fn records_survive_reopen_and_a_torn_tail_is_kept_in_a_side_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym2025.01.02");
        for mode in [WriteMode::PerUpdate, WriteMode::Group] {
            let (mut j, recovered) = Journal::open(&path, mode, FsyncPolicy::None, Recovery::Refuse).unwrap();
            let before = recovered.scan.records;
            for i in 0..10u8 {
                j.append_with(|b| b.extend_from_slice(&[i; 5])).unwrap();
            }
            j.commit(false).unwrap();
            assert_eq!(j.records(), before + 10);
        }
        assert_eq!(payloads(&path).len(), 20);
        let original = std::fs::read(&path).unwrap();
        let full = original.len() as u64;
        // Tear the last record (13 bytes): cut its last 7.
        OpenOptions::new().write(true).open(&path).unwrap().set_len(full - 7).unwrap();
        let (j, recovered) = open(&path, Recovery::Refuse).unwrap();
        assert_eq!(recovered.scan.records, 19);
        assert_eq!(recovered.scan.torn_bytes(), 13 - 7);
        assert_eq!(j.records(), 19);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full - 13, "tail truncated");
        let [cut] = &recovered.set_aside[..] else { panic!("{recovered:?}") };
        assert_eq!((cut.cut, cut.offset, cut.bytes), (Cut::TornTail, full - 13, 6));
        assert_eq!(cut.path, dir.path().join(format!("sym2025.01.02.torn-{}", full - 13)));
        assert_eq!(std::fs::read(&cut.path).unwrap(), &original[(full - 13) as usize..(full - 7) as usize]);
        drop(j);
        assert_eq!(replay(&path, Some(3), |_, _| Ok(())).unwrap().records, 3);
    }

    #[test]
    fn a_zero_filled_tail_is_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let starts = write_journal(&path, &[3, 4, 5]);
        let end = *starts.last().unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&[0; 4096]).unwrap();
        drop(file);
        // Replay stops at the zeros (len 0 is no record) and says how many bytes.
        let report = replay(&path, None, |_, _| Ok(())).unwrap();
        assert_eq!((report.records, report.valid_bytes, report.torn_bytes()), (3, end, 4096));
        let (j, recovered) = open(&path, Recovery::Refuse).unwrap();
        assert_eq!(j.records(), 3);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), end);
        let [cut] = &recovered.set_aside[..] else { panic!("{recovered:?}") };
        assert_eq!((cut.cut, cut.offset), (Cut::TornTail, end));
        assert_eq!(std::fs::read(&cut.path).unwrap(), vec![0; 4096]);
    }

    #[test]
    fn damage_inside_is_refused_by_default_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let starts = write_journal(&path, &[40; 20]);
        flip_bit(&path, starts[7] + RECORD_HEADER as u64 + 11, 3);
        let before = std::fs::read(&path).unwrap();
        let expect = |e: TickError| match e {
            TickError::JournalCorrupt { path: p, record, offset, bytes, valid_after } => {
                assert_eq!(p, path.display().to_string());
                assert_eq!((record, offset, bytes, valid_after), (7, starts[7], 48, 12));
            }
            other => panic!("{other}"),
        };
        expect(open(&path, Recovery::Refuse).err().unwrap());
        expect(scan(&path).unwrap_err());
        // A replay that stops before the damage does not see it.
        assert_eq!(replay(&path, Some(7), |_, _| Ok(())).unwrap().records, 7);
        expect(replay(&path, Some(8), |_, _| Ok(())).unwrap_err());
        let message = open(&path, Recovery::Refuse).err().unwrap().to_string();
        assert!(message.contains("record 7 at byte") && message.contains("12 valid records follow"), "{message}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "refusing changes nothing");
        assert!(side_files(dir.path(), &path).is_empty());
    }

    #[test]
    fn replay_can_skip_damage_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let starts = write_journal(&path, &[40; 20]);
        // A length of zero in record 3, a checksum bit in record 12.
        OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&[0; 4], starts[3]).unwrap();
        flip_bit(&path, starts[12] + 5, 0);
        let before = std::fs::read(&path).unwrap();
        let mut indexes = Vec::new();
        let mut kept = Vec::new();
        let report = replay_with(&path, None, Recovery::Skip, |i, p| {
            indexes.push(i);
            kept.push(p[0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(indexes, (0..18).collect::<Vec<u64>>());
        let expected: Vec<u8> = (0..20).filter(|&i| i != 3 && i != 12).collect();
        assert_eq!(kept, expected);
        assert_eq!((report.records, report.skipped_regions, report.skipped_bytes), (18, 2, 96));
        assert_eq!(report.valid_bytes, report.file_bytes);
        assert_eq!(std::fs::read(&path).unwrap(), before, "replay only reads");
    }

    #[test]
    fn skip_sets_damage_aside_and_keeps_every_valid_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let starts = write_journal(&path, &[40; 20]);
        flip_bit(&path, starts[7] + RECORD_HEADER as u64 + 11, 3);
        let damaged = std::fs::read(&path).unwrap();
        let (mut j, recovered) = open(&path, Recovery::Skip).unwrap();
        assert_eq!((recovered.scan.records, recovered.scan.skipped_regions), (19, 1));
        assert_eq!(j.records(), 19);
        let [cut] = &recovered.set_aside[..] else { panic!("{recovered:?}") };
        assert_eq!((cut.cut, cut.offset, cut.bytes), (Cut::Damaged, starts[7], 48));
        assert_eq!(std::fs::read(&cut.path).unwrap(), &damaged[starts[7] as usize..starts[8] as usize]);
        assert_eq!(side_files(dir.path(), &path), vec![cut.path.clone()], "no temporary file is left");
        let kept: Vec<u8> = payloads(&path).iter().map(|p| p[0]).collect();
        assert_eq!(kept, (0..20).filter(|&i| i != 7).collect::<Vec<u8>>());
        // The journal is a plain sequence of records again: appends follow them.
        j.append_with(|b| b.push(99)).unwrap();
        j.commit(false).unwrap();
        assert_eq!(j.records(), 20);
        assert_eq!(scan(&path).unwrap().records, 20);
        drop(j);
        let (_, recovered) = open(&path, Recovery::Refuse).unwrap();
        assert_eq!(recovered.scan.records, 20);
        assert!(recovered.set_aside.is_empty());
    }

    #[test]
    fn empty_payloads_are_refused_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let (mut j, _) = open(&path, Recovery::Refuse).unwrap();
        j.append_with(|b| b.push(1)).unwrap();
        let err = j.append_with(|_| {}).unwrap_err().to_string();
        assert!(err.contains("0 bytes cannot be journaled"), "{err}");
        j.append_with(|b| b.push(2)).unwrap();
        j.commit(false).unwrap();
        assert_eq!(j.records(), 2);
        assert_eq!(payloads(&path), vec![vec![1], vec![2]]);
    }

    #[test]
    fn journal_dates_are_the_journals_of_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["sym2025.01.03", "sym2025.01.02", "sym2025.01.03.torn-8", "sym2025-01-04", "quote2025.01.05"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let dates = journal_dates(dir.path(), "sym").unwrap();
        assert_eq!(dates, vec!["2025.01.02".parse().unwrap(), "2025.01.03".parse().unwrap()]);
        assert!(journal_dates(&dir.path().join("none"), "sym").unwrap().is_empty());
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"not a journal at all").unwrap();
        let err = open(&path, Recovery::Skip).err().unwrap().to_string();
        assert!(err.contains("not a Strata journal"), "{err}");
    }

    #[test]
    fn fsync_policies_and_recoveries_parse() {
        assert_eq!("none".parse(), Ok(FsyncPolicy::None));
        assert_eq!("ack".parse(), Ok(FsyncPolicy::BeforeAck));
        assert_eq!("250ms".parse(), Ok(FsyncPolicy::Every(Duration::from_millis(250))));
        assert_eq!("2s".parse(), Ok(FsyncPolicy::Every(Duration::from_secs(2))));
        assert!("0ms".parse::<FsyncPolicy>().is_err());
        assert!("often".parse::<FsyncPolicy>().is_err());
        assert_eq!("refuse".parse(), Ok(Recovery::Refuse));
        assert_eq!("skip".parse(), Ok(Recovery::Skip));
        assert!("repair".parse::<Recovery>().is_err());
    }

    proptest! {
        #[test]
        fn any_cut_keeps_exactly_the_whole_records(sizes in prop::collection::vec(1usize..300, 1..20), cut in 0.0f64..1.0) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("j");
            let ends = write_journal(&path, &sizes);
            let total = *ends.last().unwrap();
            let original = std::fs::read(&path).unwrap();
            let keep = MAGIC.len() as u64 + ((total - MAGIC.len() as u64) as f64 * cut) as u64;
            OpenOptions::new().write(true).open(&path).unwrap().set_len(keep).unwrap();
            let whole = ends.iter().filter(|&&e| e <= keep).count() as u64 - 1;
            let (_, recovered) = open(&path, Recovery::Refuse).unwrap();
            prop_assert_eq!(recovered.scan.records, whole);
            let kept = ends[whole as usize];
            prop_assert_eq!(std::fs::metadata(&path).unwrap().len(), kept);
            match &recovered.set_aside[..] {
                [] => prop_assert_eq!(kept, keep),
                [torn] => prop_assert_eq!(std::fs::read(&torn.path).unwrap(), &original[kept as usize..keep as usize]),
                more => prop_assert!(false, "{more:?}"),
            }
            let got = payloads(&path);
            for (i, p) in got.iter().enumerate() {
                prop_assert_eq!(p.len(), sizes[i]);
                prop_assert!(p.iter().all(|&b| b == i as u8));
            }
        }

        #[test]
        fn a_flipped_bit_costs_at_most_the_record_it_hits(
            sizes in prop::collection::vec(1usize..300, 1..20),
            at in 0.0f64..1.0,
            bit in 0u8..8,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("j");
            let starts = write_journal(&path, &sizes);
            let total = *starts.last().unwrap();
            let flipped = MAGIC.len() as u64 + ((total - MAGIC.len() as u64) as f64 * at) as u64;
            flip_bit(&path, flipped, bit);
            let hit = starts.iter().rposition(|&s| s <= flipped).unwrap();
            let expected: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != hit)
                .map(|(i, &n)| vec![i as u8; n])
                .collect();
            prop_assert_eq!(&payloads_with(&path, Recovery::Skip).unwrap(), &expected, "replay skipping in memory");
            let (j, recovered) = open(&path, Recovery::Skip).unwrap();
            prop_assert_eq!(j.records(), expected.len() as u64);
            prop_assert_eq!(recovered.set_aside.len(), 1);
            prop_assert_eq!(recovered.set_aside[0].offset, starts[hit]);
            prop_assert_eq!(&payloads(&path), &expected, "the journal after setting the damage aside");
        }
    }
}
