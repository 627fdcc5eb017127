//! A blocking client connection: handshake, then sync requests, async messages and
//! reading what the server sends (subscriptions push async messages).

use std::io::{BufWriter, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::IpcError;
use crate::frame::{DEFAULT_MAX_MESSAGE, Header, MessageKind, decode_body, encode_message};
use crate::handshake::offer;
use crate::reader::FrameReader;
use crate::value::K;

/// A client connection to a kdb+ (or Strata) process.
pub struct Connection {
    reader: FrameReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    peer: String,
    compress: bool,
    capability: u8,
    max_message: usize,
}

impl Connection {
    /// Connects to `addr` (`host:port`) and runs the handshake with `user_password`
    /// (`user:password`, or empty).
    pub fn connect(addr: &str, user_password: &str) -> Result<Connection, IpcError> {
        let stream = TcpStream::connect(addr).map_err(|e| IpcError::io(format!("connecting to {addr}"), e))?;
        Connection::over(stream, addr, user_password)
    }

    /// Like [`Connection::connect`], giving up after `timeout` per address tried.
    pub fn connect_timeout(addr: &str, user_password: &str, timeout: Duration) -> Result<Connection, IpcError> {
        let addrs: Vec<_> = addr.to_socket_addrs().map_err(|e| IpcError::io(format!("resolving {addr}"), e))?.collect();
        let mut last = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(stream) => return Connection::over(stream, addr, user_password),
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| std::io::ErrorKind::AddrNotAvailable.into());
        Err(IpcError::io(format!("connecting to {addr}"), e))
    }

    fn over(mut stream: TcpStream, addr: &str, user_password: &str) -> Result<Connection, IpcError> {
        stream.set_nodelay(true).map_err(|e| IpcError::io(format!("configuring {addr}"), e))?;
        let capability = offer(&mut stream, user_password)?;
        let compress = !stream.peer_addr().map(|a| a.ip().is_loopback()).unwrap_or(true);
        let read_half = stream.try_clone().map_err(|e| IpcError::io(format!("cloning {addr}"), e))?;
        Ok(Connection {
            reader: FrameReader::new(read_half, DEFAULT_MAX_MESSAGE),
            writer: BufWriter::with_capacity(1 << 16, stream),
            peer: addr.to_string(),
            compress,
            capability,
            max_message: DEFAULT_MAX_MESSAGE,
        })
    }

    /// The capability the server agreed to.
    pub fn capability(&self) -> u8 {
        self.capability
    }

    /// The address this connection was opened to.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The underlying socket (for timeouts or shutdown).
    pub fn socket(&self) -> &TcpStream {
        self.writer.get_ref()
    }

    /// Sends `request` synchronously and waits for its response; a q error in the
    /// response is [`IpcError::Remote`]. Async messages that arrive in between are
    /// dropped, so call this only on connections that are not subscribed.
    pub fn sync(&mut self, request: &K) -> Result<K, IpcError> {
        self.request(&encode_message(MessageKind::Sync, request, self.compress))
    }

    /// Sends an already framed sync message and waits for its response, as
    /// [`Connection::sync`] does.
    pub fn request(&mut self, message: &[u8]) -> Result<K, IpcError> {
        self.write_raw(message)?;
        self.flush()?;
        loop {
            let (header, value) = self.receive()?.ok_or_else(|| {
                IpcError::io(format!("waiting for {}", self.peer), std::io::ErrorKind::UnexpectedEof.into())
            })?;
            if header.kind == MessageKind::Response {
                return match value {
                    K::Error(e) => Err(IpcError::Remote(e)),
                    v => Ok(v),
                };
            }
        }
    }

    /// Queues `message` as an async message; it goes out on the next
    /// [`Connection::flush`], sync call, or when the 64 KiB buffer fills.
    pub fn send_async(&mut self, message: &K) -> Result<(), IpcError> {
        self.write(MessageKind::Async, message)
    }

    /// Writes `value` as a message of `kind` into the send buffer.
    pub fn write(&mut self, kind: MessageKind, value: &K) -> Result<(), IpcError> {
        let bytes = encode_message(kind, value, self.compress);
        self.write_raw(&bytes)
    }

    /// Writes an already framed message into the send buffer.
    pub fn write_raw(&mut self, message: &[u8]) -> Result<(), IpcError> {
        self.writer.write_all(message).map_err(|e| IpcError::io(format!("sending to {}", self.peer), e))
    }

    /// Sends everything buffered.
    pub fn flush(&mut self) -> Result<(), IpcError> {
        self.writer.flush().map_err(|e| IpcError::io(format!("sending to {}", self.peer), e))
    }

    /// Reads the next message of any kind; `Ok(None)` when the server closed.
    pub fn receive(&mut self) -> Result<Option<(Header, K)>, IpcError> {
        let Some((header, body)) = self.reader.next_frame()? else {
            return Ok(None);
        };
        let value = decode_body(&header, body, self.max_message)?;
        Ok(Some((header, value)))
    }

    /// The incoming side, for callers that read messages in place (a subscriber
    /// taking many published messages per read) rather than decoded one by one.
    pub fn reader(&mut self) -> &mut FrameReader<TcpStream> {
        &mut self.reader
    }

    /// Whether the connection compresses large messages (the peer is remote).
    pub fn compresses(&self) -> bool {
        self.compress
    }
}
