//! A position in a message's bytes, with bounds-checked reads whose errors say
//! where and what was expected: shared by the decoder and the zero-copy view.

use crate::error::IpcError;

/// Bytes being read and the offset of the next one.
pub(crate) struct Cursor<'a> {
    /// The whole buffer being read.
    pub(crate) bytes: &'a [u8],
    /// Offset of the next unread byte.
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    /// A decode error at the current offset.
    pub(crate) fn error(&self, detail: String) -> IpcError {
        IpcError::Decode { offset: self.pos, detail }
    }

    /// The next `n` bytes, or an error naming `what` was being read.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], IpcError> {
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
}
