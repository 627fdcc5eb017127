//! Message framing: the 8-byte header (byte order, message type, compressed flag,
//! total length), kdb+'s IPC compression for large messages to remote peers, and
//! reading and writing whole messages on a stream.
//!
//! ```
//! use strata_ipc::{K, MessageKind, encode_message, read_message};
//! let bytes = encode_message(MessageKind::Sync, &K::symbol("a"), false);
//! assert_eq!(bytes, [1, 1, 0, 0, 11, 0, 0, 0, 0xf5, b'a', 0]);
//! let (header, value) = read_message(&mut &bytes[..], 1 << 20).unwrap().unwrap();
//! assert_eq!((header.kind, value), (MessageKind::Sync, K::symbol("a")));
//! ```

use std::borrow::Cow;
use std::io::{ErrorKind, Read};

use strata_codec::qipc;

use crate::decode::decode;
use crate::encode::{encode, encoded_len};
use crate::error::IpcError;
use crate::value::K;

/// Bytes in a message header.
pub const HEADER_LEN: usize = 8;
/// kdb+ compresses only messages longer than this, and only to remote peers.
pub const COMPRESSION_THRESHOLD: usize = 2000;
/// The default bound on one message (uncompressed), so a peer cannot make a
/// process allocate without limit.
pub const DEFAULT_MAX_MESSAGE: usize = 256 << 20;

/// The most bytes one message holds, header included: protocol v3 counts them in
/// 32 bits.
pub const MAX_MESSAGE_LEN: usize = u32::MAX as usize;

/// The three message types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MessageKind {
    /// No reply expected (`neg[h] x`).
    Async = 0,
    /// The sender waits for a response (`h x`).
    Sync = 1,
    /// The answer to a sync message.
    Response = 2,
}

/// A parsed message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Byte 0 was 0: the body's numbers are big-endian.
    pub big_endian: bool,
    /// Byte 1.
    pub kind: MessageKind,
    /// Byte 2: the body is IPC-compressed.
    pub compressed: bool,
    /// Bytes 4..8: the whole message's length on the wire, header included.
    pub len: usize,
}

impl Header {
    /// Parses the first 8 bytes of a message.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Result<Header, IpcError> {
        let big_endian = match bytes[0] {
            0 => true,
            1 => false,
            b => return Err(IpcError::Header(format!("byte order {b} is neither 0 (big) nor 1 (little endian)"))),
        };
        let kind = match bytes[1] {
            0 => MessageKind::Async,
            1 => MessageKind::Sync,
            2 => MessageKind::Response,
            b => return Err(IpcError::Header(format!("message type {b} is not 0 async, 1 sync or 2 response"))),
        };
        let compressed = match bytes[2] {
            0 => false,
            1 => true,
            b => return Err(IpcError::Header(format!("compressed flag {b} is not 0 or 1"))),
        };
        let raw: [u8; 4] = bytes[4..8].try_into().expect("4 bytes");
        let len = if big_endian { u32::from_be_bytes(raw) } else { u32::from_le_bytes(raw) } as usize;
        let min = if compressed { HEADER_LEN + 4 } else { HEADER_LEN + 1 };
        if len < min {
            return Err(IpcError::Header(format!("length {len} is shorter than the smallest message ({min} bytes)")));
        }
        Ok(Header { big_endian, kind, compressed, len })
    }
}

/// A whole message: header and `value`, little-endian. With `compress` (the peer is
/// not on this host), a message over [`COMPRESSION_THRESHOLD`] bytes is sent
/// IPC-compressed when that at least halves it, as kdb+ does. A value past
/// [`MAX_MESSAGE_LEN`] (a query's answer with no memory limit) is sent as an error
/// saying how large it was: what a caller waiting for it should get.
pub fn encode_message(kind: MessageKind, value: &K, compress: bool) -> Vec<u8> {
    encode_message_within(kind, value, compress, MAX_MESSAGE_LEN)
}

fn encode_message_within(kind: MessageKind, value: &K, compress: bool, max_len: usize) -> Vec<u8> {
    let len = HEADER_LEN + encoded_len(value);
    if len > max_len {
        let error = K::Error(IpcError::TooLarge { len, max_len }.to_string());
        return encode_message(kind, &error, compress);
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&[1, kind as u8, 0, 0, 0, 0, 0, 0]);
    encode(value, &mut out);
    finish_message(out, compress)
}

/// Fills in the length of a message built in place (header bytes 0..8 then the
/// body) and compresses it when `compress` allows, as [`encode_message`] does.
pub fn finish_message(mut message: Vec<u8>, compress: bool) -> Vec<u8> {
    let len = u32::try_from(message.len()).expect("a protocol v3 message is under 4 GiB");
    message[4..8].copy_from_slice(&len.to_le_bytes());
    if compress
        && message.len() > COMPRESSION_THRESHOLD
        && let Some(packed) = compress_message(&message)
    {
        return packed;
    }
    message
}

/// `message` (header and body) IPC-compressed, or `None` when that would not halve it.
pub fn compress_message(message: &[u8]) -> Option<Vec<u8>> {
    let limit = (message.len() / 2).checked_sub(HEADER_LEN + 4)?;
    let stream = qipc::compress(&message[HEADER_LEN..], limit)?;
    let mut out = Vec::with_capacity(HEADER_LEN + 4 + stream.len());
    out.extend_from_slice(&message[..HEADER_LEN]);
    out[2] = 1;
    out.extend_from_slice(&(message.len() as u32).to_le_bytes());
    out.extend_from_slice(&stream);
    let total = out.len() as u32;
    out[4..8].copy_from_slice(&total.to_le_bytes());
    Some(out)
}

/// The body of a message (the bytes after its header), decompressed if needed. A
/// compressed message may not expand beyond `max_len`.
pub fn message_body<'a>(header: &Header, body: &'a [u8], max_len: usize) -> Result<Cow<'a, [u8]>, IpcError> {
    if !header.compressed {
        return Ok(Cow::Borrowed(body));
    }
    let raw: [u8; 4] = body[..4].try_into().expect("header checked the length");
    let total = if header.big_endian { u32::from_be_bytes(raw) } else { u32::from_le_bytes(raw) } as usize;
    if total <= HEADER_LEN || total > max_len {
        return Err(IpcError::Header(format!(
            "compressed message claims {total} bytes uncompressed; allowed {}..={max_len}",
            HEADER_LEN + 1
        )));
    }
    qipc::decompress(&body[4..], total - HEADER_LEN)
        .map(Cow::Owned)
        .map_err(|e| IpcError::Decode { offset: 4, detail: e.to_string() })
}

/// The body of a message as [`crate::view`] reads it: decompressed, and for a
/// big-endian message re-encoded in little-endian order (decoding checks it then).
pub fn plain_body<'a>(header: &Header, body: &'a [u8], max_len: usize) -> Result<Cow<'a, [u8]>, IpcError> {
    let body = message_body(header, body, max_len)?;
    if !header.big_endian {
        return Ok(body);
    }
    Ok(Cow::Owned(crate::encode::to_bytes(&decode(&body, true)?)))
}

/// Decodes the body of a message whose header is `header`.
pub fn decode_body(header: &Header, body: &[u8], max_len: usize) -> Result<K, IpcError> {
    decode(&message_body(header, body, max_len)?, header.big_endian)
}

/// Reads one message's raw bytes into `buf` (which is reused): `Ok(None)` on a clean
/// end of stream before a header, an error on a torn message or one over `max_len`.
pub fn read_frame<R: Read>(reader: &mut R, buf: &mut Vec<u8>, max_len: usize) -> Result<Option<Header>, IpcError> {
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match reader.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(IpcError::io("reading a message header", ErrorKind::UnexpectedEof.into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(IpcError::io("reading a message header", e)),
        }
    }
    let header = Header::parse(&head)?;
    if header.len > max_len {
        return Err(IpcError::Header(format!("message of {} bytes exceeds the limit of {max_len}", header.len)));
    }
    buf.clear();
    buf.resize(header.len - HEADER_LEN, 0);
    reader.read_exact(buf).map_err(|e| IpcError::io(format!("reading a {}-byte message", header.len), e))?;
    Ok(Some(header))
}

/// Reads and decodes one message; `Ok(None)` on a clean end of stream.
pub fn read_message<R: Read>(reader: &mut R, max_len: usize) -> Result<Option<(Header, K)>, IpcError> {
    let mut buf = Vec::new();
    match read_frame(reader, &mut buf, max_len)? {
        Some(header) => Ok(Some((header, decode_body(&header, &buf, max_len)?))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value past the bound goes out as an error naming both sizes; one at it
    /// goes out as itself.
    #[test]
    fn values_past_one_message_go_out_as_an_error() {
        let value = K::string("abc");
        let len = HEADER_LEN + encoded_len(&value);
        let decoded = |message: Vec<u8>| decode(&message[HEADER_LEN..], false).unwrap();
        assert_eq!(decoded(encode_message_within(MessageKind::Response, &value, false, len)), value);
        let K::Error(error) = decoded(encode_message_within(MessageKind::Response, &value, false, len - 1)) else {
            panic!("an error")
        };
        assert!(error.contains(&format!("{len} bytes")) && error.contains("WHERE or LIMIT"), "{error}");
    }
}
