//! TLS for kdb+ IPC, as kdb+ offers it: the same messages inside a TLS session
//! (TLS 1.2 or 1.3, rustls with the ring provider), a server certificate, and
//! optionally client certificates a server requires.
//!
//! - [`ServerTls`]: a server's certificate and key, the CA its clients'
//!   certificates must come from (if it asks for them), and whether plain
//!   connections are still accepted on the same port ([`TlsMode`], kdb+'s `-E 1`
//!   and `-E 2`). A connection is told apart by its first byte: a TLS session
//!   starts with a handshake record ([`TLS_HANDSHAKE_RECORD`]), a kdb+ handshake
//!   with a user name or a capability byte, never that value.
//! - [`ClientTls`]: the CAs a client trusts and the certificate it shows when asked.
//!   A client reaches a server over TLS when the address says `tcps://host:port`
//!   (kdb+'s form for TLS handles); [`set_default_client`] says which CAs the
//!   process trusts for those ([`default_client`] falls back to kdb+'s
//!   `SSL_CA_CERT_FILE`).
//! - [`TlsSocket`]: one TLS session over a socket, read by one thread
//!   ([`TlsReader`]) while others write ([`TlsWriter`]), as the servers' reader and
//!   writer threads do with a plain socket. Neither holds the session while it
//!   waits on the socket, so a writer blocked by a peer that does not read cannot
//!   stop the reader.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

use crate::error::IpcError;
use crate::handshake::{self, Peer};

/// The first byte of a TLS session (a handshake record, 22), which no kdb+
/// handshake starts with: a server accepting both tells them apart by it.
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// Plaintext encrypted per step when writing: the session's send buffer holds
/// one step's records at a time.
const WRITE_STEP: usize = 32 << 10;
/// Encrypted bytes read from the socket per read at most (a TLS record is at most
/// about 16 KiB; larger reads take several records at once).
const READ_STEP: usize = 32 << 10;
/// Encrypted bytes read per read at first: an idle connection keeps a small
/// buffer; each read that fills it doubles it, up to [`READ_STEP`].
const FIRST_READ_STEP: usize = 4 << 10;
/// The address prefix that asks for TLS, as in kdb+'s `:tcps://host:port`.
pub const TLS_SCHEME: &str = "tcps://";
/// The environment variable kdb+ takes its trusted CAs from, used when the process
/// was not given any ([`default_client`]).
pub const CA_ENV: &str = "SSL_CA_CERT_FILE";

/// Whether a server with TLS still accepts plain connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Only TLS connections (kdb+'s `-E 2`); plain clients are refused with a
    /// logged reason.
    Required,
    /// TLS and plain connections on the same port (kdb+'s `-E 1`), for moving
    /// clients to TLS one at a time.
    Optional,
}

impl std::str::FromStr for TlsMode {
    type Err = String;

    fn from_str(s: &str) -> Result<TlsMode, String> {
        match s {
            "required" => Ok(TlsMode::Required),
            "optional" => Ok(TlsMode::Optional),
            other => Err(format!("TLS mode {other:?}: expected `required` or `optional`")),
        }
    }
}

/// The crypto provider: ring (it builds quicker than aws-lc-rs, with no C build
/// step of its own beyond ring's assembly).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(what: impl std::fmt::Display) -> IpcError {
    IpcError::Handshake(format!("TLS: {what}"))
}

/// The certificates of a PEM file (a chain: the first is the process's own).
fn load_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, IpcError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| tls_error(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(tls_error(format!("{what} {}: no CERTIFICATE in the PEM file", path.display())));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, IpcError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| tls_error(format!("key {}: {e}", path.display())))
}

/// The CAs of a PEM file, for checking the other side's certificate.
fn load_roots(path: &Path, what: &str) -> Result<Arc<RootCertStore>, IpcError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path, what)? {
        roots.add(cert).map_err(|e| tls_error(format!("{what} {}: {e}", path.display())))?;
    }
    Ok(Arc::new(roots))
}

/// A server's side of TLS.
#[derive(Clone, Debug)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    mode: TlsMode,
}

impl ServerTls {
    /// Reads the server's certificate chain and key (PEM files), and with
    /// `client_ca` the CAs whose certificates clients must show (a client without
    /// one is refused). Errors name the file.
    pub fn load(cert: &Path, key: &Path, client_ca: Option<&Path>, mode: TlsMode) -> Result<ServerTls, IpcError> {
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?;
        let builder = match client_ca {
            Some(ca) => builder.with_client_cert_verifier(
                WebPkiClientVerifier::builder_with_provider(load_roots(ca, "client CA")?, provider)
                    .build()
                    .map_err(|e| tls_error(format!("client CA {}: {e}", ca.display())))?,
            ),
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(load_certs(cert, "certificate")?, load_key(key)?)
            .map_err(|e| tls_error(format!("certificate {} with key {}: {e}", cert.display(), key.display())))?;
        Ok(ServerTls { config: Arc::new(config), mode })
    }

    /// Whether plain connections are accepted too.
    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// Runs the server side of a TLS handshake over `io` (the caller bounds its
    /// reads in time), then the kdb+ handshake inside the session with `check`
    /// ([`handshake::accept_with`]): who connected, and the session to wrap in a
    /// [`TlsSocket`].
    pub fn accept<S: Read + Write>(
        &self,
        io: &mut S,
        check: impl FnOnce(&str, &str) -> Result<(), String>,
    ) -> Result<(Peer, ServerConnection), IpcError> {
        let mut session = ServerConnection::new(self.config.clone()).map_err(tls_error)?;
        while session.is_handshaking() {
            session.complete_io(io).map_err(|e| tls_error(format!("handshake: {e}")))?;
        }
        let peer = handshake::accept_with(&mut rustls::Stream::new(&mut session, io), check)?;
        while session.wants_write() {
            session.write_tls(io).map_err(|e| IpcError::io("answering the handshake", e))?;
        }
        Ok((peer, session))
    }
}

/// A client's side of TLS: the CAs it trusts, and the certificate it shows to a
/// server that asks for one.
#[derive(Clone, Debug)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl ClientTls {
    /// Trusts the CAs of the PEM file `ca`; shows `identity` (certificate chain
    /// and key PEM files) to servers that require client certificates.
    pub fn load(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<ClientTls, IpcError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .with_root_certificates(load_roots(ca, "CA")?);
        let config = match identity {
            Some((cert, key)) => builder
                .with_client_auth_cert(load_certs(cert, "certificate")?, load_key(key)?)
                .map_err(|e| tls_error(format!("certificate {} with key {}: {e}", cert.display(), key.display())))?,
            None => builder.with_no_client_auth(),
        };
        Ok(ClientTls { config: Arc::new(config) })
    }

    /// Runs the client side of a TLS handshake with `host` (a name or address the
    /// server's certificate must carry) over `socket`.
    pub fn connect(&self, socket: TcpStream, host: &str) -> Result<Arc<TlsSocket>, IpcError> {
        let name =
            ServerName::try_from(host.to_string()).map_err(|e| tls_error(format!("server name {host:?}: {e}")))?;
        let mut session = ClientConnection::new(self.config.clone(), name).map_err(tls_error)?;
        let mut io = &socket;
        while session.is_handshaking() {
            session.complete_io(&mut io).map_err(|e| tls_error(format!("handshake with {host}: {e}")))?;
        }
        Ok(TlsSocket::new(socket, session))
    }
}

/// The CAs the process trusts for `tcps://` addresses, once set.
static DEFAULT_CLIENT: RwLock<Option<ClientTls>> = RwLock::new(None);

/// Sets what the process's `tcps://` connections trust and show (the command
/// line's `--tls-ca`, and its certificate).
pub fn set_default_client(tls: ClientTls) {
    *DEFAULT_CLIENT.write().unwrap_or_else(|p| p.into_inner()) = Some(tls);
}

/// What a `tcps://` connection uses: [`set_default_client`]'s, or else the CAs of
/// the file that kdb+'s `SSL_CA_CERT_FILE` names.
pub fn default_client() -> Result<ClientTls, IpcError> {
    if let Some(tls) = DEFAULT_CLIENT.read().unwrap_or_else(|p| p.into_inner()).clone() {
        return Ok(tls);
    }
    match std::env::var_os(CA_ENV) {
        Some(ca) => ClientTls::load(Path::new(&ca), None),
        None => Err(tls_error(format!(
            "a {TLS_SCHEME} address needs the CAs to trust: give --tls-ca FILE (or set {CA_ENV})"
        ))),
    }
}

/// `host:port` of an address, and whether it asks for TLS: `tcps://host:port` (or
/// kdb+'s `:tcps://host:port`) does; `host:port`, `:host:port` and `tcp://host:port`
/// do not.
pub fn split_address(addr: &str) -> (&str, bool) {
    let addr = addr.strip_prefix(':').unwrap_or(addr);
    if let Some(rest) = addr.strip_prefix(TLS_SCHEME) {
        return (rest, true);
    }
    (addr.strip_prefix("tcp://").unwrap_or(addr), false)
}

/// The host part of `host:port` (brackets of an IPv6 address removed).
pub fn host_of(host_port: &str) -> &str {
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// One TLS session over a socket, shared by a reader and writers.
pub struct TlsSocket {
    socket: TcpStream,
    session: Mutex<rustls::Connection>,
    /// Encrypted bytes on their way to the socket; held from encryption to the end
    /// of the write, so records reach the socket in the order they were sealed.
    outgoing: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for TlsSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSocket").field("socket", &self.socket).finish_non_exhaustive()
    }
}

impl TlsSocket {
    /// Wraps a session whose handshake is done (plaintext it has already received
    /// stays in it, for the first read).
    pub fn new(socket: TcpStream, session: impl Into<rustls::Connection>) -> Arc<TlsSocket> {
        let mut session = session.into();
        // Each write drains the session's records before the next: no bound needed.
        session.set_buffer_limit(None);
        Arc::new(TlsSocket { socket, session: Mutex::new(session), outgoing: Mutex::new(Vec::new()) })
    }

    /// The socket under the session (for timeouts, shutdown, addresses).
    pub fn socket(&self) -> &TcpStream {
        &self.socket
    }

    fn session(&self) -> MutexGuard<'_, rustls::Connection> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Encrypts up to [`WRITE_STEP`] bytes of `plain` (everything the session has to
    /// send besides) and writes the records to the socket; how much of `plain` went.
    fn send(&self, plain: &[u8]) -> io::Result<usize> {
        let mut outgoing = self.outgoing.lock().unwrap_or_else(|p| p.into_inner());
        let taken = {
            let mut session = self.session();
            let taken = session.writer().write(&plain[..plain.len().min(WRITE_STEP)])?;
            while session.wants_write() {
                session.write_tls(&mut *outgoing)?;
            }
            taken
        };
        let written = (&self.socket).write_all(&outgoing);
        outgoing.clear();
        if outgoing.capacity() > 4 * WRITE_STEP {
            outgoing.shrink_to(WRITE_STEP);
        }
        written.map(|()| taken)
    }
}

/// The reading side of a [`TlsSocket`] (one per session).
pub struct TlsReader {
    tls: Arc<TlsSocket>,
    /// Encrypted bytes read from the socket, not yet given to the session.
    raw: Vec<u8>,
    start: usize,
    end: usize,
}

impl TlsReader {
    /// The reading side of `tls`.
    pub fn new(tls: Arc<TlsSocket>) -> TlsReader {
        TlsReader { tls, raw: Vec::new(), start: 0, end: 0 }
    }
}

impl Read for TlsReader {
    /// Plaintext the session has; when it has none, feeds it what the socket
    /// brings (without holding the session while waiting). `Ok(0)` when the peer
    /// closed the session or the socket.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let reply = {
                let mut session = self.tls.session();
                match session.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if self.start == self.end {
                    false
                } else {
                    let mut pending = &self.raw[self.start..self.end];
                    self.start += session.read_tls(&mut pending)?;
                    let processed = session.process_new_packets();
                    let reply = session.wants_write();
                    if let Err(e) = processed {
                        drop(session);
                        // The alert that says why, if the socket takes it.
                        let _ = self.tls.send(&[]);
                        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}")));
                    }
                    if !reply {
                        continue;
                    }
                    true
                }
            };
            if reply {
                // A key update or similar the session answers at once.
                self.tls.send(&[])?;
                continue;
            }
            if self.raw.is_empty() {
                self.raw = vec![0; FIRST_READ_STEP];
            } else if self.end == self.raw.len() && self.raw.len() < READ_STEP {
                self.raw.resize(2 * self.raw.len(), 0);
            }
            let n = (&self.tls.socket).read(&mut self.raw)?;
            if n == 0 {
                return Ok(0);
            }
            (self.start, self.end) = (0, n);
        }
    }
}

/// A writing side of a [`TlsSocket`]; clones write to the same session, each write
/// whole records in order.
#[derive(Clone, Debug)]
pub struct TlsWriter(pub Arc<TlsSocket>);

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.0.send(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_say_whether_they_want_tls() {
        assert_eq!(split_address("tcps://db1:5010"), ("db1:5010", true));
        assert_eq!(split_address(":tcps://127.0.0.1:5010"), ("127.0.0.1:5010", true));
        assert_eq!(split_address(":db1:5010"), ("db1:5010", false));
        assert_eq!(split_address("tcp://db1:5010"), ("db1:5010", false));
        assert_eq!(split_address("db1:5010"), ("db1:5010", false));
        assert_eq!(host_of("db1:5010"), "db1");
        assert_eq!(host_of("[::1]:5010"), "::1");
        assert_eq!("optional".parse::<TlsMode>(), Ok(TlsMode::Optional));
        assert!("E2".parse::<TlsMode>().unwrap_err().contains("required"));
    }

    #[test]
    fn missing_or_empty_pem_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let err = ClientTls::load(&empty, None).unwrap_err().to_string();
        assert!(err.contains("empty.pem") && err.contains("no CERTIFICATE"), "{err}");
        let missing = dir.path().join("missing.pem");
        let err = ServerTls::load(&missing, &missing, None, TlsMode::Required).unwrap_err().to_string();
        assert!(err.contains("missing.pem"), "{err}");
    }
}
