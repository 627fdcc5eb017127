//! Date partitions that appear whole or not at all.
//!
//! A partition `<segment>/YYYY.MM.DD/` is built in a hidden staging directory of the
//! same segment, `<segment>/.YYYY.MM.DD.staging-<pid>-<n>` (never parsed as a date,
//! on the same file system so the last step is a rename), and published by one
//! `renameat2(RENAME_EXCHANGE)` with the old partition (or a plain rename when there
//! is none), after which the segment directory is fsynced. A reader therefore sees
//! all of a day's tables or none of them.
//!
//! Every partition Strata writes carries a completion record, [`PARTITION_RECORD`],
//! written last and durably inside the staging directory:
//!
//! ```text
//! strata-partition 1
//! date 2024.01.02
//! table quote 2000000
//! table trade 2000000
//! crc32c 0x1a2b3c4d        <- crc32c of every byte before this line
//! ```
//!
//! The record is the authority ([`PartitionStatus`]): a partition serves exactly the
//! tables its record lists; a table directory it does not list is not served; a
//! record that fails its checksum, names another date or lists a table that is not
//! on disk makes the whole partition unserved. A partition without a record (written
//! before records existed) is served as it is, and `strata ls` marks it.
//!
//! Writes into a partition are serialised per segment by an `flock` on
//! [`WRITE_LOCK`], so any staging directory found while holding it is a leftover of
//! a writer that died and is removed.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{FlockOperation, flock};

use crate::date::Date;
use crate::durable::{Durability, sync_parent, write_atomic};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::snapshot::remove_unless_read;
use crate::splayed::COLUMN_ORDER_FILE;
use crate::table::is_valid_name;

/// The completion record's file name inside a partition.
pub const PARTITION_RECORD: &str = ".partition";
/// The lock file in a segment root that partition writers hold.
pub const WRITE_LOCK: &str = ".partition-write.lock";
/// The first line of a completion record: format name and version.
const RECORD_HEADER: &str = "strata-partition 1";
/// Marks a staging directory: `.YYYY.MM.DD.staging-<pid>-<n>`.
const STAGING_MARK: &str = ".staging-";
/// Marks a partition moved aside where the file system cannot exchange directories:
/// `.YYYY.MM.DD.retired-<pid>-<n>`.
const RETIRED_MARK: &str = ".retired-";

/// What a partition's completion record says: its date and each table with its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionRecord {
    /// The partition's date.
    pub date: Date,
    /// Tables and their row counts, sorted by name.
    pub tables: Vec<(String, u64)>,
}

impl PartitionRecord {
    /// The record's text, checksum line included.
    pub fn encode(&self) -> String {
        let mut text = format!("{RECORD_HEADER}\ndate {}\n", self.date);
        for (name, rows) in &self.tables {
            text.push_str(&format!("table {name} {rows}\n"));
        }
        crate::text_record::seal(text)
    }

    /// Parses a record read from `path`, checking its checksum first.
    pub fn decode(path: &Path, text: &str) -> Result<PartitionRecord> {
        let bad = |what: String| corrupt(path, format!("completion record: {what}"));
        let body = crate::text_record::open(text, &bad)?;
        let mut lines = body.lines();
        if lines.next() != Some(RECORD_HEADER) {
            return Err(bad(format!("first line is not {RECORD_HEADER:?}")));
        }
        let date = lines
            .next()
            .and_then(|l| l.strip_prefix("date "))
            .ok_or_else(|| bad("second line is not `date YYYY.MM.DD`".into()))?
            .parse::<Date>()
            .map_err(|e| bad(e.to_string()))?;
        let mut tables: Vec<(String, u64)> = Vec::new();
        for (n, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(' ').collect();
            let ["table", name, rows] = fields[..] else {
                return Err(bad(format!("line {}: {line:?} is not `table <name> <rows>`", n + 3)));
            };
            let rows = rows.parse().map_err(|_| bad(format!("line {}: row count {rows:?}", n + 3)))?;
            if !is_valid_name(name) || tables.last().is_some_and(|(last, _)| last.as_str() >= name) {
                return Err(bad(format!("line {}: table {name:?} is not an identifier in name order", n + 3)));
            }
            tables.push((name.to_string(), rows));
        }
        let record = PartitionRecord { date, tables };
        crate::text_record::exact(&record.encode(), text, &bad)?;
        Ok(record)
    }

    /// Reads the record in partition directory `dir`; `None` when it has none.
    pub fn read(dir: &Path) -> Result<Option<PartitionRecord>> {
        let path = dir.join(PARTITION_RECORD);
        match fs::read_to_string(&path) {
            Ok(text) => PartitionRecord::decode(&path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(corrupt(&path, "completion record: not UTF-8 text"))
            }
            Err(e) => Err(StoreError::Io { path, source: e }),
        }
    }

    /// Writes the record into `dir` atomically (temporary file, fsync, rename, fsync
    /// of `dir` as `durability` asks).
    pub fn write(&self, dir: &Path, durability: Durability) -> Result<()> {
        write_atomic(&dir.join(PARTITION_RECORD), self.encode().as_bytes(), durability)
    }

    /// Rows the record gives table `name`.
    pub fn rows(&self, name: &str) -> Option<u64> {
        self.tables.iter().find(|(t, _)| t == name).map(|(_, rows)| *rows)
    }
}

/// How many times [`Partition::inspect`] reads a partition whose record lists a
/// table its listing lacks.
const INSPECT_ATTEMPTS: usize = 3;

/// Whether and why a partition is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionStatus {
    /// A valid completion record: the tables it lists are served.
    Complete(PartitionRecord),
    /// No completion record (written before records existed): every table
    /// directory with a `.d` is served, and `strata ls` marks the partition.
    NoRecord,
    /// A record that fails its checksum, names another date, or lists a table not
    /// on disk: nothing in the partition is served.
    BadRecord(String),
}

/// A partition directory as readers may see it.
#[derive(Clone, Debug)]
pub struct Partition {
    /// Its date.
    pub date: Date,
    /// Its directory.
    pub dir: PathBuf,
    /// Whether and why it is served.
    pub status: PartitionStatus,
    /// Tables served, sorted (empty for a bad record).
    pub tables: Vec<String>,
    /// Table directories on disk that are not served (not in the record).
    pub unlisted: Vec<String>,
}

impl Partition {
    /// Reads partition directory `dir` of `date` and applies the rule above.
    ///
    /// The listing and the record are read through the path, one after the other,
    /// so a write published between them (the partition exchanged for a new one,
    /// the old one being removed while it is listed) can pair a listing missing a
    /// table with a record that names it. A missing table is therefore read again a
    /// few times before the partition is called damaged: a write's race is gone on
    /// the next read, damage stays.
    pub fn inspect(dir: &Path, date: Date) -> Result<Partition> {
        let (mut partition, mut missing) = Partition::inspect_once(dir, date)?;
        for _ in 1..INSPECT_ATTEMPTS {
            if !missing {
                break;
            }
            (partition, missing) = Partition::inspect_once(dir, date)?;
        }
        Ok(partition)
    }

    /// One reading of [`Partition::inspect`], and whether its record listed a table
    /// the listing did not find.
    fn inspect_once(dir: &Path, date: Date) -> Result<(Partition, bool)> {
        let mut on_disk = Vec::new();
        for entry in fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_valid_name(&name) && entry.path().join(COLUMN_ORDER_FILE).is_file() {
                on_disk.push(name);
            }
        }
        on_disk.sort();
        let mut missing_table = false;
        let status = match PartitionRecord::read(dir) {
            Ok(None) => PartitionStatus::NoRecord,
            Err(e) => PartitionStatus::BadRecord(e.to_string()),
            Ok(Some(record)) if record.date != date => {
                PartitionStatus::BadRecord(format!("the completion record is for {}", record.date))
            }
            Ok(Some(record)) => match record.tables.iter().find(|(t, _)| !on_disk.contains(t)) {
                Some((missing, _)) => {
                    missing_table = true;
                    PartitionStatus::BadRecord(format!(
                        "the completion record lists table {missing}, which is not on disk"
                    ))
                }
                None => PartitionStatus::Complete(record),
            },
        };
        let tables: Vec<String> = match &status {
            PartitionStatus::Complete(record) => record.tables.iter().map(|(t, _)| t.clone()).collect(),
            PartitionStatus::NoRecord => on_disk.clone(),
            PartitionStatus::BadRecord(_) => Vec::new(),
        };
        let unlisted = on_disk.into_iter().filter(|t| !tables.contains(t)).collect();
        Ok((Partition { date, dir: dir.to_path_buf(), status, tables, unlisted }, missing_table))
    }

    /// Whether readers see it.
    pub fn is_served(&self) -> bool {
        !matches!(self.status, PartitionStatus::BadRecord(_))
    }
}

/// Whether `name` (a segment root's entry) is a staging or retired directory of
/// some partition: the date it was for, if so.
pub fn leftover_date(name: &str) -> Option<Date> {
    let rest = name.strip_prefix('.')?;
    let at = rest.find(STAGING_MARK).or_else(|| rest.find(RETIRED_MARK))?;
    rest[..at].parse().ok()
}

/// An exclusive lock on a segment's partition writes, released on drop.
pub(crate) struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Waits for the lock of `segment`.
    pub(crate) fn acquire(segment: &Path) -> Result<WriteLock> {
        let path = segment.join(WRITE_LOCK);
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).at(&path)?;
        flock(&file, FlockOperation::LockExclusive).map_err(|e| StoreError::Io { path, source: e.into() })?;
        Ok(WriteLock { _file: file })
    }
}

/// Under the write lock: puts back a partition a dead writer moved aside on the
/// no-exchange path (it is whole; its replacement never arrived), then removes every
/// other staging and retired directory of `date` in `segment`.
pub(crate) fn clear_leftovers(segment: &Path, date: Date, _lock: &WriteLock) -> Result<()> {
    let target = segment.join(date.to_string());
    let retired_prefix = format!(".{date}{RETIRED_MARK}");
    let mut leftovers = Vec::new();
    for entry in fs::read_dir(segment).at(segment)? {
        let entry = entry.at(segment)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if leftover_date(&name) == Some(date) {
            leftovers.push((name, entry.path()));
        }
    }
    leftovers.sort();
    for (name, path) in &leftovers {
        if name.starts_with(&retired_prefix) && !target.exists() {
            fs::rename(path, &target).at(&target)?;
        } else {
            // One a reader still holds stays, for a later write.
            remove_unless_read(path, COLUMN_ORDER_FILE)?;
        }
    }
    Ok(())
}

static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A partition being built: removed on drop unless published.
pub(crate) struct Staging {
    dir: PathBuf,
    published: bool,
}

impl Staging {
    /// Creates `<segment>/.YYYY.MM.DD.staging-<pid>-<n>`.
    pub(crate) fn create(segment: &Path, date: Date, _lock: &WriteLock) -> Result<Staging> {
        let unique = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = segment.join(format!(".{date}{STAGING_MARK}{}-{unique}", std::process::id()));
        fs::create_dir(&dir).at(&dir)?;
        Ok(Staging { dir, published: false })
    }

    /// The staging directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the staging directory the partition at `target` in one step: exchanged
    /// with the old partition if there is one (which is then removed), renamed
    /// otherwise; the segment directory is fsynced before the old one goes.
    pub(crate) fn publish(mut self, target: &Path, durability: Durability) -> Result<()> {
        if durability == Durability::Fsync {
            File::open(&self.dir).and_then(|d| d.sync_all()).at(&self.dir)?;
        }
        let had_old = target.exists();
        let exchanged = had_old
            && rustix::fs::renameat_with(
                rustix::fs::CWD,
                &self.dir,
                rustix::fs::CWD,
                target,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .is_ok();
        let old = if exchanged {
            Some(self.dir.clone())
        } else if had_old {
            // No exchange here: move the old partition aside, then the new one in. A
            // death in between leaves the retired copy, which the next write puts back.
            let name =
                self.dir.file_name().expect("staging name").to_string_lossy().replace(STAGING_MARK, RETIRED_MARK);
            let retired = self.dir.with_file_name(name);
            fs::rename(target, &retired).at(target)?;
            fs::rename(&self.dir, target).at(target)?;
            Some(retired)
        } else {
            fs::rename(&self.dir, target).at(target)?;
            None
        };
        self.published = true;
        if durability == Durability::Fsync {
            sync_parent(target)?;
        }
        if let Some(old) = old {
            // The new partition is in place; the old one is garbage, and one left by
            // a failure here is removed by the next write of this date.
            // A reader still holding it keeps it, until a later write.
            let _ = remove_unless_read(&old, COLUMN_ORDER_FILE);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Hard-links every file of table directory `from` into a new directory `to` (same
/// file system), so a partition rewrite carries an unchanged table over without
/// copying it.
pub(crate) fn link_table(from: &Path, to: &Path, durability: Durability) -> Result<()> {
    fs::create_dir(to).at(to)?;
    for entry in fs::read_dir(from).at(from)? {
        let entry = entry.at(from)?;
        if entry.file_type().at(&entry.path())?.is_file() {
            let name = entry.file_name();
            if crate::durable::is_temp_name(&name.to_string_lossy()) {
                continue;
            }
            fs::hard_link(entry.path(), to.join(&name)).at(&to.join(&name))?;
        }
    }
    if durability == Durability::Fsync {
        File::open(to).and_then(|d| d.sync_all()).at(to)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_named() {
        let record = PartitionRecord {
            date: "2024.01.02".parse().unwrap(),
            tables: vec![("quote".into(), 5), ("trade".into(), 7)],
        };
        let path = Path::new("db/2024.01.02/.partition");
        let text = record.encode();
        assert_eq!(PartitionRecord::decode(path, &text).unwrap(), record);
        let flipped = text.replace("trade 7", "trade 8");
        let err = PartitionRecord::decode(path, &flipped).unwrap_err().to_string();
        assert!(err.contains("db/2024.01.02/.partition") && err.contains("checksum"), "{err}");
        for cut in [1, text.len() / 2, text.len() - 1] {
            assert!(PartitionRecord::decode(path, &text[..cut]).is_err(), "torn at {cut}");
        }
        assert_eq!(leftover_date(".2024.01.02.staging-12-0"), Some(record.date));
        assert_eq!(leftover_date(".2024.01.02.retired-12-0"), Some(record.date));
        assert_eq!(leftover_date(".trade.tmp.1.0"), None);
        assert_eq!(leftover_date("2024.01.02"), None);
    }

    /// A record naming a table that stays missing is damage, however often it is
    /// read again; the partition serves nothing, and the reason names the table.
    #[test]
    fn a_table_the_record_lists_and_the_disk_lacks_unserves_the_partition() {
        let dir = tempfile::tempdir().unwrap();
        let date: Date = "2024.01.02".parse().unwrap();
        let part = dir.path().join("2024.01.02");
        fs::create_dir_all(part.join("quote")).unwrap();
        fs::write(part.join("quote").join(COLUMN_ORDER_FILE), "").unwrap();
        let record = PartitionRecord { date, tables: vec![("quote".into(), 5), ("trade".into(), 7)] };
        fs::write(part.join(PARTITION_RECORD), record.encode()).unwrap();
        let partition = Partition::inspect(&part, date).unwrap();
        assert!(!partition.is_served() && partition.tables.is_empty());
        let PartitionStatus::BadRecord(why) = &partition.status else { panic!("{:?}", partition.status) };
        assert!(why.contains("table trade, which is not on disk"), "{why}");
        // With the table there, the same record serves both.
        fs::create_dir_all(part.join("trade")).unwrap();
        fs::write(part.join("trade").join(COLUMN_ORDER_FILE), "").unwrap();
        let partition = Partition::inspect(&part, date).unwrap();
        assert_eq!(partition.tables, ["quote", "trade"]);
    }
}
