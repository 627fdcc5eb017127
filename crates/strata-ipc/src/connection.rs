//! A blocking client connection: handshake, then sync requests, async messages and
//! reading what the server sends (subscriptions push async messages). Over plain
//! TCP, or TLS when the address says `tcps://host:port` (kdb+'s form).

use std::io::{BufWriter, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use crate::error::IpcError;
use crate::frame::{DEFAULT_MAX_MESSAGE, Header, MessageKind, decode_body, encode_message};
use crate::handshake::offer;
use crate::reader::FrameReader;
use crate::tls::{self, ClientTls, TlsReader, TlsWriter};
use crate::value::K;

/// The incoming side of a connection: the socket, or the TLS session over it.
pub enum Incoming {
    /// Plain TCP.
    Plain(Arc<TcpStream>),
    /// TLS.
    Tls(TlsReader),
}

impl Read for Incoming {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Incoming::Plain(socket) => (&**socket).read(buf),
            Incoming::Tls(reader) => reader.read(buf),
        }
    }
}

/// The outgoing side of a connection, which another thread may hold beside the
/// connection (to send requests while the connection's owner reads): whole writes
/// go out in order.
#[derive(Clone, Debug)]
pub enum Outgoing {
    /// Plain TCP.
    Plain(Arc<TcpStream>),
    /// TLS.
    Tls(TlsWriter),
}

impl Outgoing {
    /// The socket (for timeouts, shutdown, addresses).
    pub fn socket(&self) -> &TcpStream {
        match self {
            Outgoing::Plain(socket) => socket,
            Outgoing::Tls(writer) => writer.0.socket(),
        }
    }
}

impl Write for Outgoing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Outgoing::Plain(socket) => (&**socket).write(buf),
            Outgoing::Tls(writer) => writer.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Outgoing::Plain(socket) => (&**socket).flush(),
            Outgoing::Tls(writer) => writer.flush(),
        }
    }
}

/// Both sides of a fresh connection, for its handshake.
struct Duplex<'a>(&'a mut Incoming, &'a mut Outgoing);

impl Read for Duplex<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Duplex<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.1.flush()
    }
}

/// A client connection to a kdb+ (or Strata) process.
pub struct Connection {
    reader: FrameReader<Incoming>,
    writer: BufWriter<Outgoing>,
    peer: String,
    compress: bool,
    capability: u8,
    max_message: usize,
}

impl Connection {
    /// Connects to `addr` (`host:port`, or `tcps://host:port` for TLS with the
    /// process's [`tls::default_client`]) and runs the handshake with
    /// `user_password` (`user:password`, or empty).
    pub fn connect(addr: &str, user_password: &str) -> Result<Connection, IpcError> {
        let (host_port, wants_tls) = tls::split_address(addr);
        let tls = if wants_tls { Some(tls::default_client()?) } else { None };
        let stream = TcpStream::connect(host_port).map_err(|e| IpcError::io(format!("connecting to {addr}"), e))?;
        Connection::over(stream, addr, user_password, tls.as_ref())
    }

    /// Like [`Connection::connect`], giving up after `timeout` per address tried.
    pub fn connect_timeout(addr: &str, user_password: &str, timeout: Duration) -> Result<Connection, IpcError> {
        let wants_tls = tls::split_address(addr).1;
        let tls = if wants_tls { Some(tls::default_client()?) } else { None };
        Connection::connect_with(addr, user_password, timeout, tls.as_ref())
    }

    /// Connects to `addr` (`host:port`; a `tcps://` prefix is allowed) over TLS
    /// with `tls` when given, plain TCP otherwise, giving up after `timeout` per
    /// address tried; the server's certificate must name the host of `addr`.
    pub fn connect_with(
        addr: &str,
        user_password: &str,
        timeout: Duration,
        tls: Option<&ClientTls>,
    ) -> Result<Connection, IpcError> {
        let host_port = tls::split_address(addr).0;
        let addrs: Vec<_> =
            host_port.to_socket_addrs().map_err(|e| IpcError::io(format!("resolving {addr}"), e))?.collect();
        let mut last = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(stream) => return Connection::over(stream, addr, user_password, tls),
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| std::io::ErrorKind::AddrNotAvailable.into());
        Err(IpcError::io(format!("connecting to {addr}"), e))
    }

    fn over(
        stream: TcpStream,
        addr: &str,
        user_password: &str,
        tls: Option<&ClientTls>,
    ) -> Result<Connection, IpcError> {
        stream.set_nodelay(true).map_err(|e| IpcError::io(format!("configuring {addr}"), e))?;
        let compress = !stream.peer_addr().map(|a| a.ip().is_loopback()).unwrap_or(true);
        let (mut incoming, mut outgoing) = match tls {
            Some(tls) => {
                let session = tls.connect(stream, tls::host_of(tls::split_address(addr).0))?;
                (Incoming::Tls(TlsReader::new(session.clone())), Outgoing::Tls(TlsWriter(session)))
            }
            None => {
                let socket = Arc::new(stream);
                (Incoming::Plain(socket.clone()), Outgoing::Plain(socket))
            }
        };
        let capability = offer(&mut Duplex(&mut incoming, &mut outgoing), user_password)?;
        Ok(Connection {
            reader: FrameReader::new(incoming, DEFAULT_MAX_MESSAGE),
            writer: BufWriter::with_capacity(1 << 16, outgoing),
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
        self.writer.get_ref().socket()
    }

    /// A handle that sends on this connection from another thread (bytes written
    /// to it bypass this connection's send buffer: flush that first).
    pub fn outgoing(&self) -> Outgoing {
        self.writer.get_ref().clone()
    }

    /// Whether the connection runs over TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.writer.get_ref(), Outgoing::Tls(_))
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
    pub fn reader(&mut self) -> &mut FrameReader<Incoming> {
        &mut self.reader
    }

    /// Whether the connection compresses large messages (the peer is remote).
    pub fn compresses(&self) -> bool {
        self.compress
    }
}
