//! The RDB's symbol table: every symbol it has seen gets a `u32` key, in order of
//! first appearance, shared by all its tables (as a kdb+ RDB's symbols share one
//! domain). Symbol columns are held as keys, so an update's symbols cost a lookup
//! each and no allocation once seen.
//!
//! Most tickers are short, so [`SymbolTable::keys`] reads a symbol of up to seven
//! bytes and its NUL as one 8-byte word, and looks the word up in a direct-mapped
//! cache (one multiply, one compare) before the hash table: finding each NUL,
//! hashing and comparing strings had been about 40% of the RDB's thread with
//! 100-row updates.

use std::collections::HashMap;
use std::sync::Arc;

use strata_store::SymbolDomain;

/// Slots in the short-symbol cache at first; it grows to four per symbol.
const MIN_CACHE_SLOTS: usize = 1 << 10;
/// ... up to this many (1 MiB).
const MAX_CACHE_SLOTS: usize = 1 << 16;
/// An empty cache slot: no symbol packs to it (a packed symbol's top byte is 0).
const EMPTY_SLOT: (u64, u32) = (u64::MAX, 0);

/// Symbols seen so far and their keys.
#[derive(Debug, Default)]
pub struct SymbolTable {
    /// Hashed with foldhash, seeded per process: every symbol of every update is
    /// looked up here, and SipHash took most of that time on short symbols.
    keys: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    names: Vec<String>,
    /// The names as last handed out: rebuilt only when new symbols arrived.
    snapshot: SymbolDomain,
    /// Symbols of up to 7 bytes, packed ([`pack`]), and their keys, at the slot
    /// their packed form hashes to; a power of two long once used.
    cache: Vec<(u64, u32)>,
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

    /// The keys of the NUL-terminated symbols laid end to end in `bytes` (a symbol
    /// vector's bytes as on the wire), in order; bytes after the last NUL are not a
    /// symbol. Same keys as [`SymbolTable::key`] on each text.
    pub fn keys<'a>(&'a mut self, bytes: &'a [u8]) -> Keys<'a> {
        if self.cache.is_empty() {
            self.cache = vec![EMPTY_SLOT; MIN_CACHE_SLOTS];
        }
        Keys { table: self, rest: bytes }
    }

    /// The key of a symbol of at most 7 bytes, `text`, whose packed form is `packed`.
    fn short_key(&mut self, packed: u64, text: &[u8]) -> u32 {
        let slot = (packed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.cache.len().trailing_zeros())) as usize;
        let (cached, key) = self.cache[slot];
        if cached == packed {
            return key;
        }
        let key = self.key(text);
        if self.names.len() * 4 > self.cache.len() && self.cache.len() < MAX_CACHE_SLOTS {
            // Emptied, not rehashed: the symbols come back on their next lookups.
            self.cache = vec![EMPTY_SLOT; self.cache.len() * 4];
        } else {
            self.cache[slot] = (packed, key);
        }
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

/// Keys of symbols read from wire bytes ([`SymbolTable::keys`]).
pub struct Keys<'a> {
    table: &'a mut SymbolTable,
    rest: &'a [u8],
}

impl Iterator for Keys<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if let Some(word) = self.rest.first_chunk::<8>() {
            let word = u64::from_le_bytes(*word);
            // The lowest byte flagged here is the first zero byte of the word.
            let zeros = word.wrapping_sub(0x0101_0101_0101_0101) & !word & 0x8080_8080_8080_8080;
            if zeros != 0 {
                let len = zeros.trailing_zeros() as usize / 8;
                let (text, rest) = (&self.rest[..len], &self.rest[len + 1..]);
                self.rest = rest;
                return Some(self.table.short_key(pack(word, len), text));
            }
        }
        // A longer symbol, or fewer than 8 bytes left.
        let len = self.rest.iter().position(|&b| b == 0)?;
        let text = &self.rest[..len];
        self.rest = &self.rest[len + 1..];
        Some(self.table.key(text))
    }
}

/// A symbol of `len` (at most 7) bytes read as the first bytes of little-endian
/// `word`, the bytes after it cleared: distinct symbols pack to distinct words.
fn pack(word: u64, len: usize) -> u64 {
    word & ((1u64 << (8 * len)) - 1)
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

    #[test]
    fn keys_read_from_wire_bytes_match_key() {
        // Short and long symbols, the empty one, one at the very end of the bytes
        // (fewer than 8 left) and non-ASCII bytes, many times over so the cache
        // fills, grows and collides.
        let texts: Vec<Vec<u8>> = (0..3000)
            .map(|i| match i % 5 {
                0 => format!("S{}", i % 1500).into_bytes(),
                1 => format!("LONGSYMBOL{i}").into_bytes(),
                2 => Vec::new(),
                3 => vec![0xC3, 0xA9, b'A' + (i % 26) as u8],
                _ => format!("ABCDEF{}", i % 10).into_bytes(),
            })
            .collect();
        let wire: Vec<u8> = texts.iter().flat_map(|t| t.iter().copied().chain([0])).collect();
        let mut fast = SymbolTable::default();
        let mut slow = SymbolTable::default();
        for _ in 0..2 {
            let got: Vec<u32> = fast.keys(&wire).collect();
            let want: Vec<u32> = texts.iter().map(|t| slow.key(t)).collect();
            assert_eq!(got, want);
        }
        assert_eq!(fast.domain(), slow.domain());
        assert!(fast.cache.len() > MIN_CACHE_SLOTS, "the cache grew with the symbols");
        assert_eq!(fast.keys(b"S1\0tail").collect::<Vec<_>>(), [fast.key(b"S1")], "no symbol without its NUL");
    }
}
