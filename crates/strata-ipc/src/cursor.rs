//! A position in a message's bytes, with bounds-checked reads whose errors say
//! where and what was expected: shared by the decoder and the zero-copy view.

use std::fmt::Display;

use crate::error::IpcError;

/// Bytes being read and the offset of the next one.
#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    /// The whole buffer being read.
    pub(crate) bytes: &'a [u8],
    /// Offset of the next unread byte.
    pub(crate) pos: usize,
    /// The bytes were read whole once already (the items of a viewed list): texts
    /// are known to be UTF-8 and tables to be rectangular, so those checks are
    /// skipped. Bounds are checked regardless.
    pub(crate) checked: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of bytes not read before.
    pub(crate) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0, checked: false }
    }

    /// A cursor at the start of bytes already read whole by a cursor from [`Cursor::new`].
    pub(crate) fn rereading(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0, checked: true }
    }

    /// A decode error at the current offset.
    pub(crate) fn error(&self, detail: String) -> IpcError {
        IpcError::Decode { offset: self.pos, detail }
    }

    /// The next `n` bytes, or an error naming `what` was being read (formatted only
    /// then: this is every message's hot path).
    pub(crate) fn take(&mut self, n: usize, what: impl Display) -> Result<&'a [u8], IpcError> {
        match self.pos.checked_add(n).filter(|&end| end <= self.bytes.len()) {
            Some(end) => {
                let slice = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(slice)
            }
            None => Err(self.error(format!(
                "expected {n} bytes of {what}, only {} remain",
                self.bytes.len().saturating_sub(self.pos)
            ))),
        }
    }

    /// The next byte.
    pub(crate) fn byte(&mut self, what: &str) -> Result<u8, IpcError> {
        Ok(self.take(1, what)?[0])
    }

    /// The next symbol, NUL-terminated UTF-8 text: its bytes without the NUL.
    pub(crate) fn symbol(&mut self) -> Result<&'a [u8], IpcError> {
        let start = self.pos;
        let Some(len) = self.bytes[start..].iter().position(|&b| b == 0) else {
            return Err(self.error("a symbol without its terminating NUL".into()));
        };
        let text = &self.bytes[start..start + len];
        if !self.checked && !text.is_ascii() {
            std::str::from_utf8(text).map_err(|e| self.error(format!("symbol is not UTF-8: {e}")))?;
        }
        self.pos = start + len + 1;
        Ok(text)
    }

    /// The next `count` symbols as one span, each with its NUL: a symbol vector's
    /// bytes. One pass finds the `count`-th NUL (whole 64-byte chunks are counted at
    /// once, which the compiler vectorises) and one ASCII check covers the span;
    /// anything else (too few NULs, non-ASCII text) is read again symbol by symbol,
    /// so errors and UTF-8 checks are exactly [`Cursor::symbol`]'s.
    pub(crate) fn symbols(&mut self, count: usize) -> Result<&'a [u8], IpcError> {
        let start = self.pos;
        match nul_run_len(&self.bytes[start..], count) {
            Some(len) if self.checked || self.bytes[start..start + len].is_ascii() => {
                self.pos = start + len;
                Ok(&self.bytes[start..start + len])
            }
            _ => {
                for _ in 0..count {
                    self.symbol()?;
                }
                Ok(&self.bytes[start..self.pos])
            }
        }
    }
}

/// Runs of fewer symbols than this are scanned byte by byte from the start.
const SHORT_RUN: usize = 16;

/// The length of the shortest prefix of `bytes` holding `count` NULs (ending with
/// the last of them), or `None` when `bytes` holds fewer.
pub(crate) fn nul_run_len(bytes: &[u8], count: usize) -> Option<usize> {
    if count == 0 {
        return Some(0);
    }
    let mut left = count;
    let mut at = 0;
    // A few symbols (a table's names, one row's sym) end within a chunk or two:
    // counting whole chunks first would only add work.
    let chunks = if count < SHORT_RUN { &[][..] } else { bytes };
    for chunk in chunks.chunks_exact(64) {
        let nuls = chunk.iter().filter(|&&b| b == 0).count();
        if nuls >= left {
            break;
        }
        left -= nuls;
        at += 64;
    }
    for (i, &b) in bytes[at..].iter().enumerate() {
        if b == 0 {
            left -= 1;
            if left == 0 {
                return Some(at + i + 1);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` symbols read one by one: what [`Cursor::symbols`] must agree with.
    fn one_by_one(bytes: &[u8], count: usize) -> Result<usize, String> {
        let mut cursor = Cursor::new(bytes);
        (0..count).try_for_each(|_| cursor.symbol().map(drop)).map_err(|e| e.to_string())?;
        Ok(cursor.pos)
    }

    fn at_once(bytes: &[u8], count: usize) -> Result<usize, String> {
        let mut cursor = Cursor::new(bytes);
        let span = cursor.symbols(count).map_err(|e| e.to_string())?;
        assert_eq!(span.len(), cursor.pos);
        Ok(cursor.pos)
    }

    #[test]
    fn a_symbol_run_ends_where_symbol_by_symbol_reading_ends() {
        // Short and long symbols, so runs end inside, at and past 64-byte chunks.
        let mut bytes = Vec::new();
        for i in 0..200 {
            bytes.extend(std::iter::repeat_n(b'A' + (i % 26) as u8, i % 70));
            bytes.push(0);
        }
        bytes.extend_from_slice(b"tail");
        for count in [0, 1, 2, 3, 17, 63, 64, 65, 100, 199, 200] {
            assert_eq!(at_once(&bytes, count), one_by_one(&bytes, count), "{count} symbols");
        }
        let short = at_once(&bytes, 201).unwrap_err();
        assert_eq!(short, one_by_one(&bytes, 201).unwrap_err());
        assert!(short.contains("without its terminating NUL"), "{short}");
    }

    #[test]
    fn non_ascii_symbols_are_checked_as_utf8_one_by_one() {
        let good = "IBM\0caf\u{e9}\0\u{4e2d}\0".as_bytes();
        assert_eq!(at_once(good, 3), Ok(good.len()));
        let bad = b"IBM\0ok\0\xff\xfe\0";
        let err = at_once(bad, 3).unwrap_err();
        assert_eq!(err, one_by_one(bad, 3).unwrap_err());
        assert!(err.contains("byte 7: symbol is not UTF-8"), "{err}");
        assert_eq!(nul_run_len(b"a\0b\0", 3), None);
        assert_eq!(nul_run_len(b"", 0), Some(0));
    }
}
