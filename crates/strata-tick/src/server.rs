//! The network side of every tick process: a listener whose connections each get a
//! reader thread (handshake, then whole messages, as many as one read brings, into one
//! bounded event queue that a single core thread drains) and a byte-bounded
//! [`Outbox`]: a send goes straight to the socket when the connection's writer thread
//! has nothing queued, and through that thread when the peer falls behind.
//!
//! Bounds: the event queue holds [`EVENT_QUEUE`] batches of messages, each what one
//! read returned (at most [`strata_ipc::reader::CHUNK`] bytes, or one larger message);
//! a full queue stops the readers, so TCP pushes back on publishers. Each outbox holds
//! at most its configured bytes, and a peer that does not read is dropped before
//! passing it.
//!
//! Any host that can reach the port can open connections, so each costs little
//! until it logs in and sends data: a connection in its handshake holds no login
//! slot, at most [`PRE_LOGIN_CONNECTIONS`] are in their handshake at once (past it the
//! oldest is dropped) and each has [`HANDSHAKE_TIMEOUT`] to finish; at most
//! [`max_connections`] are logged in at once. A logged-in connection's read buffer
//! grows with the bytes that arrive, never with what a header promises; a message
//! must arrive whole within [`MESSAGE_DEADLINE`] once started; the partial messages of
//! all connections share [`PARTIAL_MESSAGE_BYTES`]; and a connection silent for
//! a while gives its buffer back. Refusals are logged at most once a second
//! ([`log::Throttle`]). A server reachable from other hosts without a credentials
//! file says so when it starts.
//!
//! With TLS ([`ServerConfig::tls`]) the TLS handshake is part of the handshake
//! (the same deadline, the same bound on connections), the reader thread reads the
//! session through a [`TlsReader`] and sends go through the writer thread (a TLS
//! record cannot be half-written from another thread, so there is no direct send).

use std::collections::VecDeque;
use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, unbounded};
use rustix::io::Errno;
use rustix::net::SendFlags;
use strata_ipc::reader::{FrameReader, PartialBudget, ReadLimits};
use strata_ipc::tls::{ServerTls, TLS_HANDSHAKE_RECORD, TlsMode, TlsReader, TlsSocket, TlsWriter};
use strata_ipc::{Credentials, HEADER_LEN, Header, K, MessageKind, encode_message, handshake};

use crate::error::TickError;
use crate::log;

/// Batches of messages waiting for the core thread, across all connections.
pub const EVENT_QUEUE: usize = 512;
/// Frames waiting in one outbox (besides its byte bound), so tiny frames cannot
/// make the queue's own slots outgrow the bytes they carry. The queue takes memory
/// for the frames it holds only, in small blocks, and gives it back as they go.
const OUTBOX_FRAMES: usize = 1 << 20;
/// Bytes the writer thread gathers before each write to the socket.
const WRITE_BUFFER: usize = 64 << 10;
/// Written frames the writer thread hands back for reuse ([`Outbox::send_from`]).
const SPARE_FRAMES: usize = 8;
/// The largest buffer kept for reuse: reusing memory spares the kernel zeroing new
/// pages for every batch (on some virtual machines a host fault each too), and a
/// burst larger than this gives its memory back.
pub const KEPT_BUFFER_BYTES: usize = 16 << 20;
/// How long a new connection has to complete its handshake (all of it: a client
/// sending a byte at a time gets no longer).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a message may take to arrive whole once its first bytes have (a client
/// that promises a large message and goes silent is dropped then).
pub const MESSAGE_DEADLINE: Duration = Duration::from_secs(60);
/// How often a silent connection's reader wakes to check [`MESSAGE_DEADLINE`] (and,
/// with nothing in progress, to give its buffer back).
const READ_TICK: Duration = Duration::from_secs(15);
/// Bytes all of one server's connections may hold in read buffers beyond a small
/// first chunk each: partial messages, mostly. A message is taken in as its bytes
/// arrive, so this bounds what clients can make a server allocate by sending
/// headers that promise large messages.
pub const PARTIAL_MESSAGE_BYTES: usize = 1 << 30;
/// Connections a server keeps open at once unless [`set_max_connections`] says
/// otherwise: each has two threads, so this bounds threads and memory too.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The process's bound on open connections per server (the servers' command-line
/// flag `--max-connections` sets it once at start, before any server starts).
static MAX_CONNECTIONS: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_CONNECTIONS);

/// Sets how many connections each server started afterwards keeps open at once
/// (at least 1); clients past it are refused with a log line.
pub fn set_max_connections(max: usize) {
    MAX_CONNECTIONS.store(max.max(1), Ordering::Relaxed);
}

/// How many connections a server started now keeps open at once.
pub fn max_connections() -> usize {
    MAX_CONNECTIONS.load(Ordering::Relaxed)
}

/// A connection's number, unique for the life of the process.
pub type ConnId = u64;

/// What the reader threads tell the core thread.
#[derive(Debug)]
pub enum Event {
    /// A client completed its handshake.
    Opened {
        /// The connection.
        id: ConnId,
        /// Its address.
        peer: SocketAddr,
        /// The user it gave.
        user: String,
        /// Where to send it messages.
        outbox: Outbox,
    },
    /// Whole messages from one read of a connection, in the order sent.
    Frames {
        /// The connection.
        id: ConnId,
        /// The messages.
        frames: Frames,
    },
    /// The connection ended.
    Closed {
        /// The connection.
        id: ConnId,
        /// Why.
        reason: String,
    },
}

/// Messages read together: each one's header and body (the bytes after the header,
/// as sent: possibly compressed, possibly big-endian).
#[derive(Debug, Default)]
pub struct Frames {
    bodies: Vec<u8>,
    /// Each message's header and where its body starts in `bodies`.
    spans: Vec<(Header, usize)>,
}

impl Frames {
    /// Adds one message.
    pub fn push(&mut self, header: Header, body: &[u8]) {
        self.spans.push((header, self.bodies.len()));
        self.bodies.extend_from_slice(body);
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no message is held.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Each message's header and body, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Header, &[u8])> {
        self.spans.iter().map(|&(header, start)| (header, &self.bodies[start..start + header.len - HEADER_LEN]))
    }
}

/// Why a frame was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboxError {
    /// The queue would pass its byte bound: the peer is not keeping up.
    Full {
        /// Bytes already queued.
        queued: usize,
        /// The bound.
        limit: usize,
    },
    /// The connection is gone.
    Closed,
}

/// The sending side of one connection: frames go to its writer thread through a
/// queue bounded in bytes.
#[derive(Clone, Debug)]
pub struct Outbox {
    id: ConnId,
    tx: Sender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    limit: usize,
    remote: bool,
    link: Link,
    sent_bytes: Arc<AtomicU64>,
    /// Buffers the writer thread has written out, emptied, for the next batch.
    spare: Receiver<Vec<u8>>,
    /// Held while sending, so frames from two threads never interleave and a
    /// direct write cannot overtake a frame another thread is queueing.
    sending: Arc<Mutex<()>>,
}

impl Outbox {
    /// The connection.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Whether the peer is on another host (so large messages are compressed).
    pub fn remote(&self) -> bool {
        self.remote
    }

    /// Bytes waiting to be written.
    pub fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Bytes written to the socket so far.
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes.load(Ordering::Relaxed)
    }

    /// Sends framed messages (one or several end to end); see [`Outbox::send_from`].
    pub fn send(&self, mut frame: Vec<u8>) -> Result<(), OutboxError> {
        self.send_from(&mut frame)
    }

    /// Sends the framed messages in `pending` and leaves it empty. When nothing is
    /// queued (the writer thread is idle, every earlier byte is in the socket) they
    /// go straight to the socket from the calling thread, without waiting: a peer
    /// that keeps up costs no thread wake-up per message, and `pending` keeps its
    /// memory for the next batch (a fresh buffer per batch costs the kernel a
    /// zeroed page per 4 KiB). Whatever the socket does not take at once is moved to
    /// the writer thread's queue, and `pending` takes a buffer the writer thread has
    /// already written out, so a subscriber that lags costs no new memory per batch
    /// either.
    pub fn send_from(&self, pending: &mut Vec<u8>) -> Result<(), OutboxError> {
        if pending.is_empty() {
            return Ok(());
        }
        let _sending = self.sending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Link::Plain(socket) = &self.link
            && self.queued.load(Ordering::Acquire) == 0
        {
            let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
            match rustix::net::send(&**socket, pending, flags) {
                Ok(written) => {
                    self.sent_bytes.fetch_add(written as u64, Ordering::Relaxed);
                    pending.drain(..written);
                    if pending.is_empty() {
                        return Ok(());
                    }
                }
                Err(Errno::AGAIN | Errno::INTR) => {}
                Err(_) => {
                    pending.clear();
                    return Err(OutboxError::Closed);
                }
            }
        }
        // The batch goes to the writer thread; the next one reuses a buffer it has
        // written out, when there is one.
        let frame = std::mem::replace(pending, self.spare.try_recv().unwrap_or_default());
        let len = frame.len();
        let queued = self.queued.fetch_add(len, Ordering::AcqRel);
        if queued + len > self.limit || self.tx.len() >= OUTBOX_FRAMES {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return Err(OutboxError::Full { queued, limit: self.limit });
        }
        match self.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.queued.fetch_sub(len, Ordering::AcqRel);
                match e {
                    TrySendError::Full(_) => Err(OutboxError::Full { queued, limit: self.limit }),
                    TrySendError::Disconnected(_) => Err(OutboxError::Closed),
                }
            }
        }
    }

    /// Encodes and queues `value` as a message of `kind`.
    pub fn send_value(&self, kind: MessageKind, value: &K) -> Result<(), OutboxError> {
        self.send(encode_message(kind, value, self.remote))
    }

    /// Closes the connection (both directions); its reader reports `Closed`.
    pub fn close(&self) {
        let _ = self.link.socket().shutdown(std::net::Shutdown::Both);
    }
}

/// A connection's socket, plain or under a TLS session.
#[derive(Clone, Debug)]
enum Link {
    Plain(Arc<TcpStream>),
    Tls(Arc<TlsSocket>),
}

impl Link {
    fn socket(&self) -> &TcpStream {
        match self {
            Link::Plain(socket) => socket,
            Link::Tls(tls) => tls.socket(),
        }
    }
}

/// How a server accepts and bounds its connections.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The process's role, for log lines (`tp`, `rdb`, ...).
    pub role: &'static str,
    /// Address to listen on, e.g. `127.0.0.1:5010` (port 0 picks a free one).
    pub listen: String,
    /// Users allowed to connect; `None` lets anyone in.
    pub credentials: Option<Credentials>,
    /// TLS: the certificate, whether clients need certificates, and whether plain
    /// connections are still accepted; `None` for plain TCP only.
    pub tls: Option<ServerTls>,
    /// The largest message accepted from a client.
    pub max_message: usize,
    /// Bytes each connection's outbox may hold.
    pub outbox_limit: usize,
}

/// Connections a server lets be in their handshake at once, apart from the
/// logged-in ones: past it the oldest still handshaking is dropped, so sockets that
/// connect and never log in cannot keep clients out (they hold no login slot, and
/// each lasts at most [`HANDSHAKE_TIMEOUT`] or until [`PRE_LOGIN_CONNECTIONS`] newer
/// ones arrive).
pub const PRE_LOGIN_CONNECTIONS: usize = 64;

/// What every connection of one server shares.
struct Shared {
    config: ServerConfig,
    /// Connections logged in now.
    open: AtomicUsize,
    /// The bound on `open`, read from [`max_connections`] at start.
    max_connections: usize,
    /// Connections in their handshake, oldest first, with a handle to drop them by.
    handshaking: Mutex<VecDeque<(ConnId, TcpStream)>>,
    /// Refused connections (bad handshakes, wrong passwords, too many clients) are
    /// logged through this, at most one line a second.
    refusals: Mutex<log::Throttle>,
    /// What every connection's read buffer may hold together
    /// ([`PARTIAL_MESSAGE_BYTES`]).
    partial: Arc<PartialBudget>,
}

impl Shared {
    fn refused(&self, peer: SocketAddr, why: impl std::fmt::Display) {
        let mut throttle = self.refusals.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        throttle.line(self.config.role, || format!("refused {peer}: {why}"));
    }
}

/// Counts a connection open until dropped.
struct OpenSlot<'a>(&'a AtomicUsize);

impl Drop for OpenSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A listening server: the events of all its connections, and its address.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Connection events, in arrival order per connection.
    pub events: Receiver<Event>,
    /// Set to stop accepting.
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Binds and starts accepting.
    pub fn start(config: ServerConfig) -> Result<Server, TickError> {
        let listener = TcpListener::bind(&config.listen)
            .map_err(|e| TickError::Other(format!("{}: cannot listen on {}: {e}", config.role, config.listen)))?;
        let addr = listener.local_addr().map_err(|e| TickError::Other(format!("{}: {e}", config.role)))?;
        if !addr.ip().is_loopback() && config.credentials.is_none() {
            log::line(
                config.role,
                &format!(
                    "WARNING: listening on {addr}, reachable from other hosts, without --credentials: anyone who \
                     can reach this port can read every table and send updates; give --credentials FILE of \
                     user:password lines, or --bind 127.0.0.1 (see SECURITY.md)"
                ),
            );
        }
        let (tx, events) = bounded(EVENT_QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let role = config.role;
        let shared = Arc::new(Shared {
            config,
            open: AtomicUsize::new(0),
            max_connections: max_connections(),
            refusals: Mutex::new(log::Throttle::new()),
            partial: Arc::new(PartialBudget::new(PARTIAL_MESSAGE_BYTES)),
            handshaking: Mutex::new(VecDeque::new()),
        });
        thread::Builder::new()
            .name(format!("{role}-accept"))
            .spawn(move || accept_loop(listener, shared, tx, stopping))
            .map_err(|e| TickError::Other(format!("cannot start the accept thread: {e}")))?;
        Ok(Server { addr, events, stop })
    }

    /// Stops accepting connections (those open stay open).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, tx: Sender<Event>, stop: Arc<AtomicBool>) {
    let next_id = AtomicU64::new(1);
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        if !shared.start_handshake(id, &stream) {
            continue;
        }
        let (connection, tx) = (shared.clone(), tx.clone());
        let spawned = thread::Builder::new()
            .name(format!("{}-conn{id}", shared.config.role))
            .spawn(move || serve_connection(id, stream, &connection, tx));
        if spawned.is_err() {
            shared.end_handshake(id);
        }
    }
}

impl Shared {
    /// Counts connection `id` as handshaking, dropping the oldest one still
    /// handshaking when [`PRE_LOGIN_CONNECTIONS`] are; `false` if it cannot be kept.
    fn start_handshake(&self, id: ConnId, stream: &TcpStream) -> bool {
        let Ok(handle) = stream.try_clone() else { return false };
        let mut handshaking = self.handshaking.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if handshaking.len() >= PRE_LOGIN_CONNECTIONS
            && let Some((_, oldest)) = handshaking.pop_front()
        {
            let _ = oldest.shutdown(std::net::Shutdown::Both);
            if let Ok(peer) = oldest.peer_addr() {
                self.refused(
                    peer,
                    format_args!("{PRE_LOGIN_CONNECTIONS} connections were in their handshake: the oldest is dropped"),
                );
            }
        }
        handshaking.push_back((id, handle));
        true
    }

    /// Connection `id`'s handshake ended (either way).
    fn end_handshake(&self, id: ConnId) {
        let mut handshaking = self.handshaking.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        handshaking.retain(|(held, _)| *held != id);
    }

    /// Takes a logged-in slot, or says why there is none.
    fn take_login_slot(&self) -> Result<(), String> {
        if self.open.fetch_add(1, Ordering::AcqRel) >= self.max_connections {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Err(format!(
                "{} connections are logged in, the most allowed (--max-connections)",
                self.max_connections
            ));
        }
        Ok(())
    }
}

/// The handshake's side of a new connection: every read waits at most until
/// `deadline`, so a client sending a byte at a time cannot hold a connection (and
/// its threads) open past [`HANDSHAKE_TIMEOUT`] without logging in.
struct HandshakeStream<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl HandshakeStream<'_> {
    /// Runs `read` on the socket with a timeout of what is left until the deadline.
    fn bounded<T>(&self, read: impl FnOnce(&TcpStream) -> std::io::Result<T>) -> std::io::Result<T> {
        let timed_out = || {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no complete handshake within {} s", HANDSHAKE_TIMEOUT.as_secs()),
            )
        };
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        self.stream.set_read_timeout(Some(left))?;
        match read(self.stream) {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(timed_out())
            }
            read => read,
        }
    }

    /// The first byte the client sent, left in the socket.
    fn peek_first(&self) -> std::io::Result<u8> {
        let mut byte = [0u8; 1];
        match self.bounded(|s| s.peek(&mut byte))? {
            0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => Ok(byte[0]),
        }
    }
}

impl Read for HandshakeStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.bounded(|mut s| s.read(buf))
    }
}

impl Write for HandshakeStream<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// The writer thread's side of a socket the reader also uses (one descriptor for
/// both: a connection costs one file descriptor).
struct SharedSocket(Arc<TcpStream>);

impl Write for SharedSocket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.0).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        (&*self.0).flush()
    }
}

/// The handshakes of a new connection within [`HANDSHAKE_TIMEOUT`]: TLS (when the
/// server has it and the client starts it, or must), then kdb+'s with the
/// credentials checked. The user, and the connection's socket or TLS session.
///
/// A logged-in slot is taken once the credentials check passes, before the client
/// is told it is in (so a full server refuses in the handshake); `slot` says
/// whether it was, for the caller to give it back.
fn open(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    slot: &std::cell::Cell<bool>,
) -> Result<(String, Link), String> {
    let config = &shared.config;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let check = |user: &str, password: &str| {
        if let Some(credentials) = &config.credentials {
            credentials.verify(user, password, peer.ip(), deadline).map_err(|e| e.to_string())?;
        }
        shared.take_login_slot()?;
        slot.set(true);
        Ok(())
    };
    let mut io = HandshakeStream { stream: &stream, deadline };
    let tls = match &config.tls {
        Some(tls) => {
            let first = io.peek_first().map_err(|e| format!("handshake: {e}"))?;
            match (first == TLS_HANDSHAKE_RECORD, tls.mode()) {
                (true, _) => Some(tls),
                (false, TlsMode::Optional) => None,
                (false, TlsMode::Required) => {
                    return Err("a plain (not TLS) connection, and this server requires TLS (--tls-mode \
                                required): connect with TLS (tcps://host:port)"
                        .into());
                }
            }
        }
        None => None,
    };
    match tls {
        Some(tls) => {
            let (peer, session) = tls.accept(&mut io, check).map_err(|e| e.to_string())?;
            Ok((peer.user, Link::Tls(TlsSocket::new(stream, session))))
        }
        None => {
            let peer = handshake::accept_with(&mut io, check).map_err(|e| e.to_string())?;
            Ok((peer.user, Link::Plain(Arc::new(stream))))
        }
    }
}

/// Handshake, writer thread, then the read loop.
fn serve_connection(id: ConnId, stream: TcpStream, shared: &Shared, tx: Sender<Event>) {
    let config = &shared.config;
    let peer = match stream.peer_addr() {
        Ok(p) => p,
        Err(_) => {
            shared.end_handshake(id);
            return;
        }
    };
    let slot = std::cell::Cell::new(false);
    let opened = open(stream, peer, shared, &slot);
    shared.end_handshake(id);
    let _slot = slot.get().then(|| OpenSlot(&shared.open));
    let (user, link) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            shared.refused(peer, e);
            return;
        }
    };
    // The reader wakes this often while the peer is silent, to hold it to
    // MESSAGE_DEADLINE (an idle connection just keeps waiting).
    let _ = link.socket().set_read_timeout(Some(READ_TICK));
    let _ = link.socket().set_nodelay(true);
    // Unbounded in frames (bounded by `OUTBOX_FRAMES` and the byte limit when
    // sending): memory for frames queued only, none for an idle connection.
    let (frames_tx, frames_rx) = unbounded::<Vec<u8>>();
    let (spare_tx, spare_rx) = bounded::<Vec<u8>>(SPARE_FRAMES);
    let outbox = Outbox {
        id,
        tx: frames_tx,
        queued: Arc::new(AtomicUsize::new(0)),
        limit: config.outbox_limit,
        remote: !peer.ip().is_loopback(),
        link: link.clone(),
        sent_bytes: Arc::new(AtomicU64::new(0)),
        spare: spare_rx,
        sending: Arc::new(Mutex::new(())),
    };
    let (queued, sent) = (outbox.queued.clone(), outbox.sent_bytes.clone());
    let name = format!("{}-send{id}", config.role);
    let _ = match &link {
        Link::Plain(socket) => {
            let write_half = SharedSocket(socket.clone());
            thread::Builder::new().name(name).spawn(move || write_loop(write_half, frames_rx, spare_tx, queued, sent))
        }
        Link::Tls(tls) => {
            let write_half = TlsWriter(tls.clone());
            thread::Builder::new().name(name).spawn(move || write_loop(write_half, frames_rx, spare_tx, queued, sent))
        }
    };
    if tx.send(Event::Opened { id, peer, user, outbox: outbox.clone() }).is_err() {
        return;
    }
    let limits = ReadLimits { message_deadline: Some(MESSAGE_DEADLINE), budget: Some(shared.partial.clone()) };
    let reason = match &link {
        Link::Plain(socket) => read_loop(id, FrameReader::with_limits(&**socket, config.max_message, limits), &tx),
        Link::Tls(tls) => {
            read_loop(id, FrameReader::with_limits(TlsReader::new(tls.clone()), config.max_message, limits), &tx)
        }
    };
    outbox.close();
    let _ = tx.send(Event::Closed { id, reason });
}

fn read_loop(id: ConnId, mut reader: FrameReader<impl Read>, tx: &Sender<Event>) -> String {
    loop {
        match reader.fill() {
            Ok(true) => {}
            Ok(false) => return "closed by peer".into(),
            Err(e) if e.is_disconnect() => return "closed by peer".into(),
            // A bad header loses the message boundary: the stream cannot continue.
            Err(e) => return e.to_string(),
        }
        let mut frames = Frames::default();
        let ended = loop {
            match reader.next_buffered() {
                Ok(Some((header, body))) => frames.push(header, body),
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        if !frames.is_empty() && tx.send(Event::Frames { id, frames }).is_err() {
            return "server stopping".into();
        }
        if let Some(reason) = ended {
            return reason;
        }
    }
}

/// Writes queued frames to the socket, everything queued in one flush, and hands
/// the emptied buffers back through `spare` (when there is room and they are not
/// over [`KEPT_BUFFER_BYTES`]).
fn write_loop(
    stream: impl Write,
    frames: Receiver<Vec<u8>>,
    spare: Sender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    sent: Arc<AtomicU64>,
) {
    // The buffer is made when there is something to write: an idle connection has none.
    let Ok(first) = frames.recv() else { return };
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER, stream);
    let mut next = Some(first);
    while let Some(frame) = next.take().or_else(|| frames.recv().ok()) {
        let mut batch = vec![frame];
        while let Ok(more) = frames.try_recv() {
            batch.push(more);
            if batch.len() >= 4096 {
                break;
            }
        }
        let mut bytes = 0;
        for frame in &batch {
            if writer.write_all(frame).is_err() {
                return;
            }
            bytes += frame.len();
        }
        if writer.flush().is_err() {
            return;
        }
        queued.fetch_sub(bytes, Ordering::AcqRel);
        sent.fetch_add(bytes as u64, Ordering::Relaxed);
        for mut frame in batch {
            if frame.capacity() <= KEPT_BUFFER_BYTES {
                frame.clear();
                let _ = spare.try_send(frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use strata_ipc::{Atom, Connection};

    use super::*;

    #[test]
    fn a_direct_send_empties_the_pending_bytes_and_keeps_their_memory() {
        let server = Server::start(ServerConfig {
            role: "test",
            listen: "127.0.0.1:0".into(),
            credentials: None,
            tls: None,
            max_message: 1 << 20,
            outbox_limit: 1 << 20,
        })
        .unwrap();
        let mut client = Connection::connect(&server.addr.to_string(), "me").unwrap();
        let outbox = match server.events.recv_timeout(Duration::from_secs(5)).unwrap() {
            Event::Opened { outbox, user, .. } => {
                assert_eq!(user, "me");
                outbox
            }
            _ => panic!("the first event is the handshake"),
        };
        let mut pending = Vec::with_capacity(1 << 16);
        for i in 0..3i64 {
            pending.extend(encode_message(MessageKind::Async, &K::Atom(Atom::Long(i)), false));
        }
        let capacity = pending.capacity();
        outbox.send_from(&mut pending).unwrap();
        assert!(pending.is_empty() && pending.capacity() == capacity, "emptied, memory kept");
        assert_eq!(outbox.queued_bytes(), 0, "nothing left for the writer thread");
        for i in 0..3i64 {
            let (_, value) = client.receive().unwrap().expect("a message");
            assert_eq!(value, K::Atom(Atom::Long(i)));
        }
    }

    #[test]
    fn a_lagging_peer_gets_its_batches_in_reused_buffers() {
        let server = Server::start(ServerConfig {
            role: "test",
            listen: "127.0.0.1:0".into(),
            credentials: None,
            tls: None,
            max_message: 1 << 20,
            outbox_limit: 64 << 20,
        })
        .unwrap();
        let mut client = Connection::connect(&server.addr.to_string(), "").unwrap();
        let Event::Opened { outbox, .. } = server.events.recv_timeout(Duration::from_secs(5)).unwrap() else {
            panic!("the first event is the handshake")
        };
        // 12 MB in 60 KB messages: more than a loopback socket holds.
        let batch = |tag: i64| -> Vec<u8> {
            (0..200)
                .flat_map(|i| {
                    encode_message(
                        MessageKind::Async,
                        &K::List(vec![K::Atom(Atom::Long(tag + i)), K::string(&"x".repeat(60_000))]),
                        false,
                    )
                })
                .collect()
        };
        let mut pending = batch(0);
        let capacity = pending.capacity();
        outbox.send_from(&mut pending).unwrap();
        assert!(outbox.queued_bytes() > 0, "the peer is not reading: the rest waits for the writer thread");
        assert!(pending.is_empty() && pending.capacity() == 0, "no written-out buffer to reuse yet");
        let read = |client: &mut Connection, from: i64| {
            for i in from..from + 200 {
                let (_, value) = client.receive().unwrap().expect("a message");
                let K::List(items) = value else { panic!("a list") };
                assert_eq!(items[0], K::Atom(Atom::Long(i)), "in order");
            }
        };
        read(&mut client, 0);
        let deadline = Instant::now() + Duration::from_secs(10);
        while outbox.spare.is_empty() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        pending = batch(1000);
        outbox.send_from(&mut pending).unwrap();
        assert!(pending.is_empty(), "sent or queued");
        assert!(pending.capacity() >= capacity, "the written-out buffer came back: {} bytes", pending.capacity());
        read(&mut client, 1000);
    }
}
