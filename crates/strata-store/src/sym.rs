//! The database's `sym` file: the list of distinct symbols that symbol columns index.
//!
//! One symbol per line, in the order they were first written; a symbol's key is its
//! line number, so the file is append-only and keys never change. Writers hold an
//! exclusive `flock` on the file while they read what other processes added and
//! append their own new symbols, so several writer processes can share one database.
//! A line without its newline is the tail of an interrupted append and is dropped.
//!
//! Beside it, `sym.crc` records how long the file was after the last complete append
//! and the crc32c of those bytes (see [`SymRecord`]). Writers update it under the same
//! lock, after the appended symbols are synced; readers read it *before* the sym file.
//! Since the file only grows, the bytes a record covers are always there when it is
//! read, so a shorter file or a different checksum is damage (a deleted line shifts
//! every key after it), never a race. Lines past the recorded length are the append
//! of a writer that died before updating the record: no column can use their keys
//! yet, and they are kept (the next append records them).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{FlockOperation, flock};

use crate::column_data::{Column, SymbolDomain};
use crate::durable::Durability;
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::types::ColumnType;

/// The `sym` file of a database.
#[derive(Clone, Debug)]
pub struct SymFile {
    path: PathBuf,
}

impl SymFile {
    /// The sym file at `path` (created on first write).
    pub fn new(path: &Path) -> SymFile {
        SymFile { path: path.to_path_buf() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The integrity record's path: `sym.crc` beside `sym`.
    pub fn record_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(RECORD_SUFFIX);
        self.path.with_file_name(name)
    }

    /// Every symbol, in key order, after checking the file against its record. A
    /// missing file (with no record) is an empty domain; a file written before
    /// records existed (no record) is accepted as it is.
    pub fn load(&self) -> Result<SymbolDomain> {
        Ok(Arc::new(self.check()?.symbols))
    }

    /// Reads the file and its record and checks one against the other: the symbols,
    /// and how the record relates to the file. A record that does not match is an
    /// error naming the file and what the record expected.
    pub fn check(&self) -> Result<SymCheck> {
        // The record first: the file can only have grown since it was written.
        let record = SymRecord::read(&self.record_path())?;
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(StoreError::Io { path: self.path.clone(), source: e }),
        };
        if let Some(record) = &record {
            record.check(&self.path, &bytes)?;
        }
        let (symbols, complete) = parse_bytes(&self.path, &bytes)?;
        let status = match record {
            None => RecordStatus::Missing,
            Some(record) if record.len == complete => RecordStatus::Matches,
            Some(record) => RecordStatus::Behind { record: record.len },
        };
        Ok(SymCheck { symbols, complete_bytes: complete, file_bytes: bytes.len() as u64, status })
    }

    /// Keys for `symbols`, appending the ones not yet in the file, under the file
    /// lock. Returns the keys and the whole domain after the append.
    pub fn enumerate<S: AsRef<str>>(&self, symbols: &[S], durability: Durability) -> Result<(Vec<u32>, SymbolDomain)> {
        for s in symbols {
            let s = s.as_ref();
            if s.contains(['\n', '\r']) {
                return Err(StoreError::Invalid(format!(
                    "{}: symbol {s:?} contains a line break, which the sym file cannot hold",
                    self.path.display()
                )));
            }
        }
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&self.path).at(&self.path)?;
        flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| StoreError::Io { path: self.path.clone(), source: e.into() })?;
        if valid_len_is_new(&file) && durability == Durability::Fsync {
            // A sym file just created must survive a power cut with its first symbols.
            crate::durable::sync_parent(&self.path)?;
        }
        let record_path = self.record_path();
        let record = SymRecord::read(&record_path)?;
        let bytes = read_all(&self.path, &mut file)?;
        if let Some(record) = &record {
            record.check(&self.path, &bytes)?;
        }
        let (mut domain, valid_len) = parse_bytes(&self.path, &bytes)?;
        let mut index: HashMap<&str, u32> = HashMap::with_capacity(domain.len());
        for (k, s) in domain.iter().enumerate() {
            index.insert(s.as_str(), k as u32);
        }
        let mut added = Vec::new();
        let mut keys = Vec::with_capacity(symbols.len());
        let mut new_keys: HashMap<&str, u32> = HashMap::new();
        for s in symbols {
            let s = s.as_ref();
            let key = match index.get(s).or_else(|| new_keys.get(s)) {
                Some(k) => *k,
                None => {
                    let k = u32::try_from(domain.len() + added.len())
                        .map_err(|_| StoreError::Invalid("the sym file is full (2^32 symbols)".into()))?;
                    new_keys.insert(s, k);
                    added.push(s);
                    k
                }
            };
            keys.push(key);
        }
        if !added.is_empty() {
            let mut text = String::new();
            for s in &added {
                text.push_str(s);
                text.push('\n');
            }
            file.set_len(valid_len).at(&self.path)?;
            file.seek(SeekFrom::Start(valid_len)).at(&self.path)?;
            file.write_all(text.as_bytes()).at(&self.path)?;
            if durability == Durability::Fsync {
                file.sync_data().at(&self.path)?;
            }
        }
        let recorded = record.map(|r| r.len);
        if !added.is_empty() || recorded != Some(valid_len) {
            // The appended bytes are synced above: the record never covers bytes a
            // power cut could take back.
            let mut crc = crc32c::crc32c(&bytes[..valid_len as usize]);
            for s in &added {
                crc = crc32c::crc32c_append(crc32c::crc32c_append(crc, s.as_bytes()), b"\n");
            }
            let len = valid_len + added.iter().map(|s| s.len() as u64 + 1).sum::<u64>();
            SymRecord { len, crc }.write(&record_path, durability)?;
        }
        let added: Vec<String> = added.iter().map(|s| s.to_string()).collect();
        drop(index);
        domain.extend(added);
        // Closing the file releases the lock.
        Ok((keys, Arc::new(domain)))
    }

    /// The same symbols re-keyed against this database's sym file, adding new ones.
    /// Only the distinct symbols in use are looked up, so this is cheap for long
    /// columns over small domains.
    pub fn enumerate_column(&self, column: &Column, durability: Durability) -> Result<Column> {
        assert_eq!(column.ty(), ColumnType::Symbol, "only symbol columns are enumerated");
        let local = column.domain().expect("symbol domain");
        let keys = column.values::<u32>();
        let mut used = vec![false; local.len()];
        for &k in keys {
            used[k as usize] = true;
        }
        let names: Vec<&str> = local.iter().zip(&used).filter(|(_, u)| **u).map(|(s, _)| s.as_str()).collect();
        let (db_keys, domain) = self.enumerate(&names, durability)?;
        let mut remap = vec![u32::MAX; local.len()];
        for ((old, _), new) in local.iter().enumerate().filter(|(i, _)| used[*i]).zip(db_keys) {
            remap[old] = new;
        }
        Column::from_symbol_keys(keys.iter().map(|&k| remap[k as usize]).collect(), domain)
    }
}

/// Whether the (locked) sym file is still empty, i.e. this writer may have created it.
fn valid_len_is_new(file: &File) -> bool {
    file.metadata().map(|m| m.len() == 0).unwrap_or(false)
}

/// The whole (locked) file.
fn read_all(path: &Path, file: &mut File) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).at(path)?;
    file.read_to_end(&mut bytes).at(path)?;
    Ok(bytes)
}

/// The symbols in the file's bytes and the length of its complete lines.
fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<(Vec<String>, u64)> {
    let complete = bytes.iter().rposition(|b| *b == b'\n').map(|p| p + 1).unwrap_or(0);
    let text = std::str::from_utf8(&bytes[..complete])
        .map_err(|e| corrupt(path, format!("sym file is not UTF-8 at byte {}", e.valid_up_to())))?;
    let symbols: Vec<String> = text.split_terminator('\n').map(str::to_string).collect();
    Ok((symbols, complete as u64))
}

/// What follows the sym file's name for its record's (`sym` -> `sym.crc`).
pub const RECORD_SUFFIX: &str = ".crc";
const RECORD_MAGIC: &[u8; 8] = b"STRSYMCK";
/// magic, length u64, crc32c of the covered bytes u32, crc32c of bytes 0..20 u32.
const RECORD_LEN: usize = 24;

/// The sym file's integrity record (`sym.crc`, 24 bytes, little-endian):
///
/// ```text
/// 0  "STRSYMCK"   8  length u64   16  crc32c(sym[0..length]) u32   20  crc32c(record[0..20]) u32
/// ```
/// Replaced whole (temporary file and rename), so it is the old record or the new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymRecord {
    /// Bytes of the sym file the record covers: whole lines, so a line end or 0.
    pub len: u64,
    /// crc32c of those bytes.
    pub crc: u32,
}

impl SymRecord {
    fn encode(&self) -> [u8; RECORD_LEN] {
        let mut r = [0u8; RECORD_LEN];
        r[0..8].copy_from_slice(RECORD_MAGIC);
        r[8..16].copy_from_slice(&self.len.to_le_bytes());
        r[16..20].copy_from_slice(&self.crc.to_le_bytes());
        let own = crc32c::crc32c(&r[0..20]);
        r[20..24].copy_from_slice(&own.to_le_bytes());
        r
    }

    /// The record at `path`; `None` when there is none (a sym file from before
    /// records, or no sym file yet).
    pub fn read(path: &Path) -> Result<Option<SymRecord>> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::Io { path: path.to_path_buf(), source: e }),
        };
        if bytes.len() != RECORD_LEN || &bytes[0..8] != RECORD_MAGIC {
            return Err(corrupt(
                path,
                format!("sym record is {} bytes, expected {RECORD_LEN} starting \"STRSYMCK\"", bytes.len()),
            ));
        }
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if word(20) != crc32c::crc32c(&bytes[0..20]) {
            return Err(corrupt(path, "sym record fails its own checksum"));
        }
        let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        Ok(Some(SymRecord { len, crc: word(16) }))
    }

    fn write(&self, path: &Path, durability: Durability) -> Result<()> {
        crate::durable::write_atomic(path, &self.encode(), durability)
    }

    /// Checks that `bytes` (the sym file at `path`) start with the bytes recorded.
    fn check(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let have = bytes.len() as u64;
        if have < self.len {
            return Err(corrupt(
                path,
                format!(
                    "sym file is {have} bytes, its record ({RECORD_SUFFIX}) says {} were written: lines are \
                     missing and every symbol key after them would shift",
                    self.len
                ),
            ));
        }
        let covered = &bytes[..self.len as usize];
        let computed = crc32c::crc32c(covered);
        if computed != self.crc || covered.last().is_some_and(|b| *b != b'\n') {
            return Err(corrupt(
                path,
                format!(
                    "sym file's first {} bytes have crc32c {computed:#010x}, its record ({RECORD_SUFFIX}) \
                     expects {:#010x}: symbols were changed, reordered or removed",
                    self.len, self.crc
                ),
            ));
        }
        Ok(())
    }
}

/// A sym file read and checked against its record.
#[derive(Clone, Debug, PartialEq)]
pub struct SymCheck {
    /// The symbols, in key order.
    pub symbols: Vec<String>,
    /// Bytes of complete lines.
    pub complete_bytes: u64,
    /// The file's length (more than `complete_bytes` after a torn append).
    pub file_bytes: u64,
    /// How the record relates to the file.
    pub status: RecordStatus,
}

/// How a sym file's record relates to it (a record that does not match is an error,
/// not a status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordStatus {
    /// No record: a sym file written before records (it gets one on the next write).
    Missing,
    /// The record covers every complete line.
    Matches,
    /// Complete lines follow the `record` bytes it covers: a writer died between
    /// its append and the record update.
    Behind {
        /// Bytes the record covers.
        record: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_new_symbols_append() {
        let dir = tempfile::tempdir().unwrap();
        let sym = SymFile::new(&dir.path().join("sym"));
        let (k1, d1) = sym.enumerate(&["IBM", "AAPL", "IBM"], Durability::Rename).unwrap();
        assert_eq!(k1, [0, 1, 0]);
        assert_eq!(*d1, ["IBM", "AAPL"]);
        let (k2, d2) = sym.enumerate(&["MSFT", "AAPL", ""], Durability::Rename).unwrap();
        assert_eq!(k2, [2, 1, 3]);
        assert_eq!(d2.len(), 4);
        assert_eq!(*sym.load().unwrap(), *d2);
    }

    #[test]
    fn a_torn_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym");
        std::fs::write(&path, "A\nB\nCC").unwrap();
        let sym = SymFile::new(&path);
        assert_eq!(*sym.load().unwrap(), ["A", "B"]);
        let (keys, _) = sym.enumerate(&["D"], Durability::Rename).unwrap();
        assert_eq!(keys, [2]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "A\nB\nD\n");
    }

    #[test]
    fn columns_are_rekeyed_into_the_database_domain() {
        let dir = tempfile::tempdir().unwrap();
        let sym = SymFile::new(&dir.path().join("sym"));
        sym.enumerate(&["X", "Y"], Durability::Rename).unwrap();
        let local = Column::from_symbols(["Y", "Z", "Y"]);
        let stored = sym.enumerate_column(&local, Durability::Rename).unwrap();
        assert_eq!(stored.values::<u32>(), [1, 2, 1]);
        assert_eq!(stored, local);
        assert!(sym.enumerate(&["bad\nsym"], Durability::Rename).is_err());
        let err = sym.enumerate(&["A\r"], Durability::Rename).unwrap_err().to_string();
        assert!(err.contains("line break") && err.contains("sym"), "{err}");
    }
    #[test]
    fn the_record_catches_removed_changed_and_emptied_symbols() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym");
        let sym = SymFile::new(&path);
        sym.enumerate(&["IBM", "AAPL", "MSFT"], Durability::Rename).unwrap();
        assert_eq!(sym.check().unwrap().status, RecordStatus::Matches);
        for (damage, expected) in [
            ("AAPL\nMSFT\n", "sym file is 10 bytes, its record (.crc) says 14 were written"),
            ("IBM\nAAPX\nMSFT\n", "expects"),
            ("", "sym file is 0 bytes"),
            ("MSFT\nAAPL\nIBM\n", "expects"),
        ] {
            std::fs::write(&path, damage).unwrap();
            let err = sym.load().unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()) && err.contains(expected), "{damage:?}: {err}");
            let err = sym.enumerate(&["X"], Durability::Rename).unwrap_err().to_string();
            assert!(err.contains(expected), "a damaged sym file is not appended to: {err}");
        }
        std::fs::remove_file(&path).unwrap();
        assert!(sym.load().unwrap_err().to_string().contains("sym file is 0 bytes"), "a lost sym file");
        std::fs::write(&path, "IBM\nAAPL\nMSFT\n").unwrap();
        assert_eq!(sym.load().unwrap().len(), 3);
        std::fs::write(sym.record_path(), b"garbage").unwrap();
        assert!(sym.load().unwrap_err().to_string().contains("sym.crc: sym record is 7 bytes"));
    }

    #[test]
    fn an_append_cut_off_before_its_record_is_kept_and_recorded_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym");
        let sym = SymFile::new(&path);
        sym.enumerate(&["A", "B"], Durability::Rename).unwrap();
        // A writer appended and synced, then died before writing the record.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"C\nD").unwrap();
        let check = sym.check().unwrap();
        assert_eq!(check.symbols, ["A", "B", "C"]);
        assert_eq!(check.status, RecordStatus::Behind { record: 4 });
        let (keys, _) = sym.enumerate(&["B"], Durability::Rename).unwrap();
        assert_eq!(keys, [1]);
        assert_eq!(sym.check().unwrap().status, RecordStatus::Matches, "recorded by the next writer");
        sym.enumerate(&["E"], Durability::Rename).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "A\nB\nC\nE\n", "the torn line is dropped");
        assert_eq!(sym.check().unwrap().status, RecordStatus::Matches);
    }

    #[test]
    fn a_sym_file_from_before_records_is_accepted_and_recorded_on_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sym");
        std::fs::write(&path, "X\nY\n").unwrap();
        let sym = SymFile::new(&path);
        assert_eq!(sym.check().unwrap().status, RecordStatus::Missing);
        assert_eq!(*sym.load().unwrap(), ["X", "Y"]);
        sym.enumerate(&["Y"], Durability::Rename).unwrap();
        assert_eq!(sym.check().unwrap().status, RecordStatus::Matches);
        std::fs::write(&path, "Y\n").unwrap();
        assert!(sym.load().is_err(), "now recorded, damage is caught");
    }
}
