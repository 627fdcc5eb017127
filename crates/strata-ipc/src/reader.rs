//! Reading whole messages from a stream in large chunks: one `read` brings in as many
//! messages as the socket holds, and each is handed out as a slice of the buffer,
//! without a copy or an allocation per message.
//!
//! ```
//! use strata_ipc::{K, MessageKind, encode_message, reader::FrameReader};
//! let mut bytes = encode_message(MessageKind::Async, &K::symbol("a"), false);
//! bytes.extend(encode_message(MessageKind::Sync, &K::symbol("b"), false));
//! let mut reader = FrameReader::new(&bytes[..], 1 << 20);
//! assert!(reader.fill().unwrap());
//! let (first, body) = reader.next_buffered().unwrap().unwrap();
//! assert_eq!((first.kind, body), (MessageKind::Async, &[0xf5, b'a', 0][..]));
//! let (second, _) = reader.next_buffered().unwrap().unwrap();
//! assert_eq!(second.kind, MessageKind::Sync);
//! assert!(reader.next_buffered().unwrap().is_none());
//! assert!(!reader.fill().unwrap(), "a clean end of stream");
//! ```

use std::io::{ErrorKind, Read};

use crate::error::IpcError;
use crate::frame::{HEADER_LEN, Header};

/// The most bytes asked of the stream per read (a message larger than this grows
/// the buffer to its size, up to the message bound).
pub const CHUNK: usize = 256 << 10;
/// Bytes asked of the stream per read at first: a connection that sends little
/// (a handshake, a query now and then) keeps a small buffer; each read that fills
/// the buffer doubles it, up to [`CHUNK`].
pub const FIRST_CHUNK: usize = 4 << 10;

/// Whole messages from a byte stream, read in chunks of up to [`CHUNK`] bytes.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes asked per read now: from [`FIRST_CHUNK`] up to [`CHUNK`].
    chunk: usize,
    /// First byte not yet handed out.
    start: usize,
    /// End of the bytes read.
    end: usize,
    max_message: usize,
}

impl<R: Read> FrameReader<R> {
    /// A reader of messages of at most `max_message` bytes (header included) from `inner`.
    pub fn new(inner: R, max_message: usize) -> FrameReader<R> {
        FrameReader { inner, buf: Vec::new(), chunk: FIRST_CHUNK, start: 0, end: 0, max_message }
    }

    /// The stream.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Bytes read but not yet handed out (a partial message, or whole ones not asked for).
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The header of the message at the front of the buffer, once its 8 bytes are in.
    fn front_header(&self) -> Result<Option<Header>, IpcError> {
        if self.end - self.start < HEADER_LEN {
            return Ok(None);
        }
        let head = self.buf[self.start..self.start + HEADER_LEN].try_into().expect("8 bytes");
        let header = Header::parse(head)?;
        if header.len > self.max_message {
            return Err(IpcError::Header(format!(
                "message of {} bytes exceeds the limit of {}",
                header.len, self.max_message
            )));
        }
        Ok(Some(header))
    }

    /// The next whole message already buffered, without reading: its header and its
    /// body (the bytes after the header, still compressed when the header says so).
    /// A header that cannot be parsed is an error and the stream cannot continue.
    pub fn next_buffered(&mut self) -> Result<Option<(Header, &[u8])>, IpcError> {
        let Some(header) = self.front_header()? else { return Ok(None) };
        if self.end - self.start < header.len {
            return Ok(None);
        }
        let body = self.start + HEADER_LEN..self.start + header.len;
        self.start += header.len;
        Ok(Some((header, &self.buf[body])))
    }

    /// Reads until at least one whole message is buffered. `Ok(false)` on a clean end
    /// of stream (nothing partial left); an error when the stream ends inside a message.
    pub fn fill(&mut self) -> Result<bool, IpcError> {
        loop {
            let needed = match self.front_header()? {
                Some(header) if self.end - self.start >= header.len => return Ok(true),
                Some(header) => header.len,
                None => HEADER_LEN,
            };
            self.make_room(needed);
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) if self.start == self.end => return Ok(false),
                Ok(0) => {
                    let context = format!("reading a message ({} of its bytes arrived)", self.end - self.start);
                    return Err(IpcError::io(context, ErrorKind::UnexpectedEof.into()));
                }
                Ok(n) => {
                    self.end += n;
                    // The stream had at least as much as there was room for: read more at once.
                    if self.end == self.buf.len() {
                        self.chunk = (self.chunk * 2).min(CHUNK);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(IpcError::io("reading a message", e)),
            }
        }
    }

    /// The next message, reading when none is buffered; `Ok(None)` on a clean end of
    /// stream.
    pub fn next_frame(&mut self) -> Result<Option<(Header, &[u8])>, IpcError> {
        if !self.fill()? {
            return Ok(None);
        }
        self.next_buffered()
    }

    /// Moves the unread bytes to the front and sizes the buffer for a message of
    /// `needed` bytes; a buffer grown for one large message shrinks back afterwards.
    fn make_room(&mut self, needed: usize) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let wanted = needed.max(self.chunk);
        if self.buf.len() < wanted || (self.buf.len() > wanted && self.end <= self.chunk) {
            self.buf.resize(wanted, 0);
            self.buf.shrink_to(wanted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{K, MessageKind, Vector, encode_message};

    /// A stream that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn messages_split_across_reads_and_larger_than_a_chunk_come_out_whole() {
        let big = K::vector(Vector::Long((0..100_000).collect()));
        let mut stream = Vec::new();
        for i in 0..5 {
            stream.extend(encode_message(MessageKind::Async, &K::symbol(format!("m{i}")), false));
            stream.extend(encode_message(MessageKind::Async, &big, false));
        }
        for step in [1, 7, 4096, CHUNK * 4] {
            let mut reader = FrameReader::new(Trickle { bytes: &stream, step }, 1 << 24);
            let mut seen = Vec::new();
            while let Some((header, body)) = reader.next_frame().unwrap() {
                seen.push((header.len, crate::decode(body, false).unwrap()));
            }
            assert_eq!(seen.len(), 10, "step {step}");
            assert_eq!(seen[9].1, big);
            assert_eq!(seen[8].1, K::symbol("m4"));
            assert!(reader.buf.len() <= CHUNK * 4, "the buffer shrinks back after a large message");
        }
    }

    #[test]
    fn the_buffer_starts_small_and_grows_while_reads_fill_it() {
        let small = encode_message(MessageKind::Async, &K::symbol("a"), false);
        let mut reader = FrameReader::new(&small[..], 1 << 20);
        assert!(reader.fill().unwrap());
        assert_eq!(reader.buf.len(), FIRST_CHUNK, "a small message leaves the buffer small");
        let mut stream = Vec::new();
        while stream.len() < 4 * CHUNK {
            stream.extend(encode_message(MessageKind::Async, &K::vector(Vector::Long((0..500).collect())), false));
        }
        let mut reader = FrameReader::new(&stream[..], 1 << 20);
        let mut messages = 0;
        while reader.next_frame().unwrap().is_some() {
            messages += 1;
        }
        assert_eq!(messages, stream.len() / long_message_len(500));
        assert_eq!(reader.buf.len(), CHUNK, "a stream that fills every read grows it to CHUNK");
    }

    fn long_message_len(longs: usize) -> usize {
        encode_message(MessageKind::Async, &K::vector(Vector::Long((0..longs as i64).collect())), false).len()
    }

    #[test]
    fn a_cut_message_a_bad_header_and_an_oversized_message_are_errors() {
        let bytes = encode_message(MessageKind::Async, &K::symbol("abc"), false);
        let mut reader = FrameReader::new(&bytes[..bytes.len() - 1], 1 << 20);
        let err = reader.fill().unwrap_err();
        assert!(err.is_disconnect() && err.to_string().contains("12 of its bytes"), "{err}");
        let mut reader = FrameReader::new(&[7u8, 0, 0, 0, 9, 0, 0, 0, 0][..], 1 << 20);
        assert!(reader.fill().unwrap_err().to_string().contains("byte order 7"));
        let mut reader = FrameReader::new(&bytes[..], 8);
        assert!(reader.fill().unwrap_err().to_string().contains("exceeds the limit of 8"));
    }
}
