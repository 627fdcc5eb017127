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
}
