//! The RDB's symbol table: every symbol it has seen gets a `u32` key, in order of
//! first appearance, shared by all its tables (as a kdb+ RDB's symbols share one
//! domain). Symbol columns are held as keys, so an update's symbols cost a hash
//! lookup each and no allocation once seen.

use std::collections::HashMap;
use std::sync::Arc;

use strata_store::SymbolDomain;

/// Symbols seen so far and their keys.
#[derive(Debug, Default)]
pub struct SymbolTable {
    /// Hashed with foldhash, seeded per process: every symbol of every update is
    /// looked up here, and SipHash took most of that time on short symbols.
    keys: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    names: Vec<String>,
    /// The names as last handed out: rebuilt only when new symbols arrived.
    snapshot: SymbolDomain,
}

impl SymbolTable {
    /// The key of the symbol with text `bytes` (UTF-8; anything else is kept with
    /// replacement characters), assigning the next key to a new symbol.
    pub fn key(&mut self, bytes: &[u8]) -> u32 {
        if let Some(&key) = self.keys.get(bytes) {
            return key;
        }
        let key = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct symbols");
        self.names.push(String::from_utf8_lossy(bytes).into_owned());
        self.keys.insert(bytes.into(), key);
        key
    }

    /// Symbols held.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no symbol has been seen.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every symbol by key, as a symbol column's domain. Keys only grow, so a domain
    /// handed out earlier stays valid for the keys it covers.
    pub fn domain(&mut self) -> SymbolDomain {
        if self.snapshot.len() != self.names.len() {
            self.snapshot = Arc::new(self.names.clone());
        }
        self.snapshot.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_first_appearance_and_domains_grow() {
        let mut table = SymbolTable::default();
        assert_eq!((table.key(b"IBM"), table.key(b"MSFT"), table.key(b"IBM")), (0, 1, 0));
        let first = table.domain();
        assert!(Arc::ptr_eq(&first, &table.domain()), "no copy while nothing is new");
        assert_eq!(table.key(b"\xff"), 2);
        let second = table.domain();
        assert_eq!(*second, ["IBM", "MSFT", "\u{fffd}"]);
        assert_eq!(*first, ["IBM", "MSFT"], "an earlier domain is unchanged");
    }
}
