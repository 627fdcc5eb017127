//! Logins and TLS over real sockets: a credentials file's argon2, MD5 (kdb+) and
//! plain forms, wrong passwords slowed per address; TLS with a Rust client and an
//! RDB subscribing over it, plain clients refused when TLS is required (and let in
//! when it is optional), client certificates required and checked, and a stalled
//! TLS handshake dropped at the same deadline as a plain one.
//!
//! Certificates come from `scripts/test-certs` (the `openssl` command), made once
//! per test run: a CA, a server certificate for 127.0.0.1 and localhost, a client
//! certificate, and a client certificate from a CA the servers do not trust.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use strata_ipc::credentials::{FAILURE_BURST, FAILURE_REFILL, hash_password};
use strata_ipc::tls::{ClientTls, ServerTls, TlsMode};
use strata_ipc::{Connection, Credentials, IpcError, K};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::server::HANDSHAKE_TIMEOUT;
use strata_tick::tickerplant::{self, TickerplantHandle};

use super::common::*;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The certificates (`scripts/test-certs`), in a directory that lives as long as
/// the test process.
fn certs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-certs");
        let out = Command::new("bash").arg(&script).arg(&dir).output().expect("bash runs scripts/test-certs");
        assert!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
        dir
    })
}

fn cert(name: &str) -> PathBuf {
    certs().join(name)
}

fn server_tls(mode: TlsMode, client_ca: bool) -> ServerTls {
    let ca = client_ca.then(|| cert("ca.pem"));
    ServerTls::load(&cert("server.pem"), &cert("server.key"), ca.as_deref(), mode).unwrap()
}

/// A client trusting the test CA, showing `identity` (`client` or `rogue`) if given.
fn client_tls(identity: Option<&str>) -> ClientTls {
    let files = identity.map(|who| (cert(&format!("{who}.pem")), cert(&format!("{who}.key"))));
    ClientTls::load(&cert("ca.pem"), files.as_ref().map(|(c, k)| (c.as_path(), k.as_path()))).unwrap()
}

fn tls_tp(mode: TlsMode, client_ca: bool) -> TickerplantHandle {
    let mut config = config(None);
    config.tls = Some(server_tls(mode, client_ca));
    tickerplant::start(config).unwrap()
}

fn connect_tls(addr: impl ToString, tls: &ClientTls) -> Result<Connection, IpcError> {
    Connection::connect_with(&addr.to_string(), "", TIMEOUT, Some(tls))
}

/// Whether the server closes `stream` (rather than leaving it open) within 20 s.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut byte = [0u8; 1];
    matches!(stream.read(&mut byte), Ok(0))
        || matches!(stream.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

#[test]
fn argon2_md5_and_plain_logins_are_checked_over_a_socket() {
    let file = format!(
        "# argon2id from strata passwd, md5 and plain from a kdb+ -u file\n\
         quant:{}\ntrader:5f4dcc3b5aa765d61d8327deb882cf99\nops:ops-pw\n",
        hash_password("argon-secret").unwrap()
    );
    let mut config = config(None);
    config.credentials = Some(Credentials::parse(&file).unwrap());
    let tp = tickerplant::start(config).unwrap();
    let addr = tp.addr.to_string();
    for login in ["quant:argon-secret", "trader:password", "ops:ops-pw"] {
        let mut conn = Connection::connect(&addr, login).unwrap_or_else(|e| panic!("{login}: {e}"));
        assert_eq!(conn.sync(&K::string(".u.i")).unwrap(), K::Atom(strata_ipc::Atom::Long(0)));
    }
    // One wrong attempt each (under the per-address burst), each refused.
    for login in ["quant:argon-secre", "trader:5f4dcc3b5aa765d61d8327deb882cf99", "ops:ops-pw2", "nobody:argon-secret"]
    {
        let err = Connection::connect(&addr, login).err().unwrap_or_else(|| panic!("{login} got in"));
        assert!(err.to_string().contains("access refused"), "{login}: {err}");
    }
}

#[test]
fn wrong_passwords_slow_the_address_down_and_the_server_keeps_serving() {
    let mut config = config(None);
    config.credentials = Some(Credentials::parse(&format!("quant:{}\n", hash_password("right").unwrap())).unwrap());
    let tp = tickerplant::start(config).unwrap();
    let addr = tp.addr.to_string();
    let mut logged_in = Connection::connect(&addr, "quant:right").unwrap();
    // The first login forgave the address; now a burst of wrong passwords at once.
    let guesses: Vec<_> = (0..4 * FAILURE_BURST)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || Connection::connect(&addr, &format!("quant:guess{i}")).is_err())
        })
        .collect();
    assert!(guesses.into_iter().all(|g| g.join().unwrap()), "every guess refused");
    let refused = Connection::connect(&addr, "quant:right").err().expect("the address is slowed: not even checked");
    assert!(refused.to_string().contains("access refused"), "{refused}");
    assert_eq!(logged_in.sync(&K::string(".u.i")).unwrap(), K::Atom(strata_ipc::Atom::Long(0)), "still serving");
    // One attempt per refill period comes back.
    std::thread::sleep(FAILURE_REFILL + Duration::from_millis(100));
    Connection::connect(&addr, "quant:right").expect("after the refill period the right password works");
}

#[test]
fn a_rust_client_and_an_rdb_talk_to_a_tickerplant_over_tls() {
    let db = tempfile::tempdir().unwrap();
    let tp = tls_tp(TlsMode::Required, false);
    let tls = client_tls(None);
    let mut feed = connect_tls(tp.addr, &tls).unwrap();
    assert!(feed.is_tls());
    // The RDB subscribes through tcps:// with the process's trusted CAs.
    strata_ipc::tls::set_default_client(tls.clone());
    let rdb = rdb::start(RdbConfig {
        tls: Some(server_tls(TlsMode::Required, false)),
        ..rdb_config(format!("tcps://{}", tp.addr), db.path())
    })
    .unwrap();
    // Enough rows to span many TLS records in both directions.
    let rows = 3000;
    for i in 0..rows {
        feed.send_async(&upd("trade", trade_row(if i % 2 == 0 { "IBM" } else { "MSFT" }, 1.5, i))).unwrap();
    }
    feed.flush().unwrap();
    let mut query = connect_tls(rdb.addr.unwrap(), &tls).unwrap();
    eventually("the RDB to hold every row sent over TLS", || {
        query.sync(&K::string("count trade")).unwrap() == K::Atom(strata_ipc::Atom::Long(i64::from(rows)))
    });
    let big = query.sync(&K::string("select from trade")).unwrap();
    let K::Table(table) = big else { panic!("{big:?}") };
    assert_eq!(table.len(), rows as usize, "a reply of many records arrives whole");
}

#[test]
fn a_plain_client_is_refused_when_tls_is_required_and_let_in_when_optional() {
    let required = tls_tp(TlsMode::Required, false);
    let err = Connection::connect_timeout(&required.addr.to_string(), "", TIMEOUT).err().expect("refused");
    assert!(err.to_string().contains("access refused") || err.is_disconnect(), "{err}");
    connect_tls(required.addr, &client_tls(None)).unwrap().sync(&K::string(".u.i")).unwrap();

    let optional = tls_tp(TlsMode::Optional, false);
    connect(optional.addr).sync(&K::string(".u.i")).unwrap();
    connect_tls(optional.addr, &client_tls(None)).unwrap().sync(&K::string(".u.i")).unwrap();
}

#[test]
fn a_client_certificate_is_required_when_the_server_names_a_client_ca() {
    let tp = tls_tp(TlsMode::Required, true);
    let answer = |tls: &ClientTls| connect_tls(tp.addr, tls).and_then(|mut c| c.sync(&K::string(".u.i")));
    answer(&client_tls(Some("client"))).expect("a certificate from the client CA");
    let none = answer(&client_tls(None)).expect_err("no certificate: refused");
    let rogue = answer(&client_tls(Some("rogue"))).expect_err("a certificate from another CA: refused");
    for err in [none, rogue] {
        let text = err.to_string();
        assert!(text.contains("TLS") || text.contains("access refused") || err.is_disconnect(), "{err}");
    }
}

#[test]
fn a_client_checks_the_server_certificate() {
    let tp = tls_tp(TlsMode::Required, false);
    let stranger = ClientTls::load(&cert("rogue-ca.pem"), None).unwrap();
    let err = connect_tls(tp.addr, &stranger).err().expect("a server certificate from an untrusted CA");
    assert!(err.to_string().contains("TLS") && err.to_string().contains("certificate"), "{err}");
}

#[test]
fn a_stalled_tls_handshake_is_dropped_at_the_handshake_deadline() {
    let tp = tls_tp(TlsMode::Required, false);
    let mut stream = TcpStream::connect(tp.addr).unwrap();
    let started = Instant::now();
    // The first bytes of a TLS record, then nothing.
    stream.write_all(&[0x16, 0x03, 0x01]).unwrap();
    assert!(closed_by_server(&mut stream), "dropped");
    assert!(started.elapsed() >= HANDSHAKE_TIMEOUT - Duration::from_millis(500), "not before the deadline");
}
