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
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::IpcError;
use crate::frame::{HEADER_LEN, Header};

/// The most bytes asked of the stream per read (a message larger than this grows
/// the buffer as its bytes arrive, up to the message bound).
pub const CHUNK: usize = 256 << 10;
/// Bytes asked of the stream per read at first: a connection that sends little
/// (a handshake, a query now and then) keeps a small buffer; each read that fills
/// the buffer doubles it, up to [`CHUNK`].
pub const FIRST_CHUNK: usize = 4 << 10;

/// The bytes every connection of a server may hold in buffers beyond
/// [`FIRST_CHUNK`] each (partial messages, mostly), shared by their readers: a
/// reader that would pass it fails with [`IpcError::Limit`] instead of allocating.
#[derive(Debug)]
pub struct PartialBudget {
    limit: usize,
    held: AtomicUsize,
}

impl PartialBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> PartialBudget {
        PartialBudget { limit, held: AtomicUsize::new(0) }
    }

    /// Bytes held now, across every reader.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    fn reserve(&self, bytes: usize) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Bounds a server puts on what one connection's messages may take of it.
#[derive(Clone, Debug, Default)]
pub struct ReadLimits {
    /// How long a message may take to arrive whole once it has started (`None`: no
    /// bound). The stream must have a read timeout set (a fraction of this) for the
    /// bound to be checked while the peer is silent: a read that times out with no
    /// message in progress is an idle connection and the reader keeps waiting.
    pub message_deadline: Option<Duration>,
    /// The budget shared with the server's other connections (`None`: no bound).
    pub budget: Option<Arc<PartialBudget>>,
}

/// Whole messages from a byte stream, read in chunks of up to [`CHUNK`] bytes.
/// Memory is taken as bytes arrive, never as a header promises: the buffer for a
/// message larger than a chunk doubles only when the bytes received fill it.
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
    limits: ReadLimits,
    /// When the reader started waiting for the rest of the message at the front.
    waiting_since: Option<Instant>,
    /// Bytes of `limits.budget` this reader holds.
    reserved: usize,
}

impl<R: Read> FrameReader<R> {
    /// A reader of messages of at most `max_message` bytes (header included) from `inner`.
    pub fn new(inner: R, max_message: usize) -> FrameReader<R> {
        FrameReader::with_limits(inner, max_message, ReadLimits::default())
    }

    /// A reader as [`FrameReader::new`] makes, within `limits`.
    pub fn with_limits(inner: R, max_message: usize, limits: ReadLimits) -> FrameReader<R> {
        FrameReader {
            inner,
            buf: Vec::new(),
            chunk: FIRST_CHUNK,
            start: 0,
            end: 0,
            max_message,
            limits,
            waiting_since: None,
            reserved: 0,
        }
    }

    /// The stream.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Bytes read but not yet handed out (a partial message, or whole ones not asked for).
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Bytes the buffer holds now (what an idle connection costs).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
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
        self.waiting_since = None;
        Ok(Some((header, &self.buf[body])))
    }

    /// Reads until at least one whole message is buffered. `Ok(false)` on a clean end
    /// of stream (nothing partial left); an error when the stream ends inside a message
    /// or a limit is passed.
    pub fn fill(&mut self) -> Result<bool, IpcError> {
        loop {
            let needed = match self.front_header()? {
                Some(header) if self.end - self.start >= header.len => return Ok(true),
                Some(header) => header.len,
                None => HEADER_LEN,
            };
            self.make_room(needed)?;
            if self.start < self.end && self.waiting_since.is_none() {
                self.waiting_since = Some(Instant::now());
            }
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
                Err(e) if is_timeout(&e) && self.limits.message_deadline.is_some() => self.timed_out(needed)?,
                Err(e) => return Err(IpcError::io("reading a message", e)),
            }
            self.check_deadline(needed)?;
        }
    }

    /// A read timed out: an idle connection gives its buffer back and keeps waiting;
    /// one inside a message is checked against the deadline.
    fn timed_out(&mut self, needed: usize) -> Result<(), IpcError> {
        if self.start == self.end {
            self.buf = Vec::new();
            self.start = 0;
            self.end = 0;
            self.chunk = FIRST_CHUNK;
            return self.set_reserved(0);
        }
        self.check_deadline(needed)
    }

    fn check_deadline(&self, needed: usize) -> Result<(), IpcError> {
        let (Some(deadline), Some(since)) = (self.limits.message_deadline, self.waiting_since) else { return Ok(()) };
        if since.elapsed() <= deadline {
            return Ok(());
        }
        Err(IpcError::Limit(format!(
            "a message of {needed} bytes did not arrive whole within {} s ({} of its bytes came): closing the \
             connection",
            deadline.as_secs_f64(),
            self.end - self.start
        )))
    }

    /// The next message, reading when none is buffered; `Ok(None)` on a clean end of
    /// stream.
    pub fn next_frame(&mut self) -> Result<Option<(Header, &[u8])>, IpcError> {
        if !self.fill()? {
            return Ok(None);
        }
        self.next_buffered()
    }

    /// Moves the unread bytes to the front and sizes the buffer for the next read
    /// towards a message of `needed` bytes: room for a chunk, or for as many bytes as
    /// have arrived (doubling), never more than the message needs; a buffer grown for
    /// one large message shrinks back afterwards.
    fn make_room(&mut self, needed: usize) -> Result<(), IpcError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let wanted = if needed <= self.chunk { self.chunk } else { needed.min(self.chunk.max(2 * self.end)) };
        let grow = self.buf.len() < wanted && self.end == self.buf.len();
        let shrink = self.buf.len() > wanted && self.end <= self.chunk;
        if self.buf.len() < wanted.min(self.chunk) || grow || shrink {
            self.set_reserved(wanted.saturating_sub(FIRST_CHUNK))?;
            self.buf.resize(wanted, 0);
            self.buf.shrink_to(wanted);
        }
        Ok(())
    }

    /// Holds `bytes` of the shared budget (taking or giving back the difference).
    fn set_reserved(&mut self, bytes: usize) -> Result<(), IpcError> {
        let Some(budget) = &self.limits.budget else { return Ok(()) };
        if bytes > self.reserved {
            if !budget.reserve(bytes - self.reserved) {
                return Err(IpcError::Limit(format!(
                    "messages in progress on all connections would hold more than {} bytes (this one wants {bytes}): \
                     closing the connection",
                    budget.limit
                )));
            }
        } else {
            budget.release(self.reserved - bytes);
        }
        self.reserved = bytes;
        Ok(())
    }
}

impl<R> Drop for FrameReader<R> {
    fn drop(&mut self) {
        if let Some(budget) = &self.limits.budget {
            budget.release(self.reserved);
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
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

    /// A peer that sends `bytes`, then stays silent: each further read times out
    /// (as a socket with a read timeout does).
    struct ThenSilent<'a> {
        bytes: &'a [u8],
    }

    impl Read for ThenSilent<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.bytes.is_empty() {
                std::thread::sleep(Duration::from_millis(5));
                return Err(ErrorKind::WouldBlock.into());
            }
            let n = out.len().min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// A header promising a message of `len` bytes, then `sent` bytes of it.
    fn promise(len: usize, sent: usize) -> Vec<u8> {
        let mut bytes = vec![1u8, 0, 0, 0];
        bytes.extend((len as u32).to_le_bytes());
        bytes.resize(HEADER_LEN + sent, 0);
        bytes
    }

    #[test]
    fn a_promised_message_takes_memory_as_its_bytes_arrive_and_must_arrive_in_time() {
        let bytes = promise(256 << 20, 10_000);
        let limits = ReadLimits { message_deadline: Some(Duration::from_millis(50)), budget: None };
        let mut reader = FrameReader::with_limits(ThenSilent { bytes: &bytes }, 1 << 30, limits);
        let started = Instant::now();
        let err = reader.fill().unwrap_err();
        assert!(matches!(err, IpcError::Limit(_)) && err.to_string().contains("did not arrive whole"), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(reader.capacity() <= 4 * 10_000, "{} bytes held for 10 kB received", reader.capacity());
    }

    #[test]
    fn an_idle_connection_waits_past_the_deadline_and_gives_its_buffer_back() {
        let small = encode_message(MessageKind::Async, &K::symbol("a"), false);
        let limits = ReadLimits { message_deadline: Some(Duration::from_millis(1)), budget: None };
        let mut reader = FrameReader::with_limits(ThenSilent { bytes: &small }, 1 << 20, limits);
        assert!(reader.next_frame().unwrap().is_some());
        assert!(reader.capacity() > 0);
        // Silence with nothing in progress is not a fault: the buffer goes, the
        // reader waits on (stopped here by the reader's own check of a new message).
        assert!(reader.timed_out(HEADER_LEN).is_ok());
        assert_eq!(reader.capacity(), 0);
    }

    #[test]
    fn partial_messages_of_all_connections_share_one_bound() {
        let budget = Arc::new(PartialBudget::new(1 << 20));
        let limits = || ReadLimits { message_deadline: None, budget: Some(budget.clone()) };
        let bytes = promise(64 << 20, 700 << 10);
        let mut first = FrameReader::with_limits(Trickle { bytes: &bytes, step: 64 << 10 }, 1 << 30, limits());
        let err = first.fill().unwrap_err();
        assert!(err.to_string().contains("cut") || err.is_disconnect(), "the first fits the budget: {err}");
        assert!(budget.held() > 512 << 10, "it holds what it received: {}", budget.held());
        let mut second = FrameReader::with_limits(Trickle { bytes: &bytes, step: 64 << 10 }, 1 << 30, limits());
        let err = second.fill().unwrap_err();
        assert!(matches!(err, IpcError::Limit(_)) && err.to_string().contains("all connections"), "{err}");
        drop(first);
        drop(second);
        assert_eq!(budget.held(), 0, "every byte is given back");
    }
}
