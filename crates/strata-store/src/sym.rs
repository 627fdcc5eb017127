//! The database's `sym` file: the list of distinct symbols that symbol columns index.
//!
//! One symbol per line, in the order they were first written; a symbol's key is its
//! line number, so the file is append-only and keys never change. Writers hold an
//! exclusive `flock` on the file while they read what other processes added and
//! append their own new symbols, so several writer processes can share one database.
//! A line without its newline is the tail of an interrupted append and is dropped.

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

    /// Every symbol, in key order. A missing file is an empty domain.
    pub fn load(&self) -> Result<SymbolDomain> {
        match File::open(&self.path) {
            Ok(mut file) => Ok(Arc::new(parse(&self.path, &mut file)?.0)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Arc::new(Vec::new())),
            Err(e) => Err(StoreError::Io { path: self.path.clone(), source: e }),
        }
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
        let (mut domain, valid_len) = parse(&self.path, &mut file)?;
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

/// The symbols in the file and the length of its complete lines.
fn parse(path: &Path, file: &mut File) -> Result<(Vec<String>, u64)> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).at(path)?;
    file.read_to_end(&mut bytes).at(path)?;
    let complete = bytes.iter().rposition(|b| *b == b'\n').map(|p| p + 1).unwrap_or(0);
    let text = std::str::from_utf8(&bytes[..complete])
        .map_err(|e| corrupt(path, format!("sym file is not UTF-8 at byte {}", e.valid_up_to())))?;
    let symbols: Vec<String> = text.split_terminator('\n').map(str::to_string).collect();
    Ok((symbols, complete as u64))
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
}
