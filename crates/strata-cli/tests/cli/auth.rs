//! Passwords and TLS through the command line: `strata passwd` with the password
//! piped in, a server checking what it wrote, a client process whose password
//! never appears in its command line (what `ps` shows), and a tickerplant serving
//! TLS only with an RDB subscribing to it over TLS.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use strata_ipc::tls::ClientTls;
use strata_ipc::{Atom, Connection, K};

use super::common::*;

const SCHEMA: &str = "trade time:timespan sym:symbol price:float size:int\n";

/// A `strata` server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `strata ARGS` and waits until it listens on `port` (20 s at most).
fn serve(args: &[&str], port: u16, log: &Path) -> Server {
    let log = std::fs::File::create(log).unwrap();
    let child = Command::new(binary()).args(args).stdout(Stdio::null()).stderr(log).spawn().unwrap();
    let mut server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(server.0.try_wait().unwrap().is_none(), "strata {args:?} exited");
        assert!(Instant::now() < deadline, "strata {args:?} does not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Waits (20 s at most) for a line of the server log `log` with `what` and the
/// refused peer's address.
fn logged(log: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(log).unwrap();
        if text.lines().any(|l| l.contains("refused 127.0.0.1:") && l.contains(what)) {
            return;
        }
        assert!(Instant::now() < deadline, "no refusal with {what:?} logged:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `strata passwd FILE USER` with `stdin` piped in.
fn passwd(file: &Path, user: &str, stdin: &str) -> Output {
    let mut child = Command::new(binary())
        .args(["passwd", file.to_str().unwrap(), user])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn tp_args(dir: &Path, port: u16) -> Vec<String> {
    let schema = dir.join("sym.schema");
    std::fs::write(&schema, SCHEMA).unwrap();
    vec!["tp".into(), "--schema".into(), schema.display().to_string(), "--port".into(), port.to_string()]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn passwd_takes_the_password_from_piped_stdin_and_a_server_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "# kdb+ -u file\ntrader:5f4dcc3b5aa765d61d8327deb882cf99\nquant:old\n").unwrap();
    let done = passwd(&users, "quant", "s3cret words\n");
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(passwd(&users, "ops", "ops-pw\r\n").status.success());
    let text = std::fs::read_to_string(&users).unwrap();
    assert!(text.contains("\nquant:$argon2id$") && text.contains("\nops:$argon2id$"), "{text}");
    assert!(!text.contains("s3cret") && !text.contains("quant:old"), "{text}");
    assert_eq!(std::fs::metadata(&users).unwrap().permissions().mode() & 0o777, 0o600);
    let empty = passwd(&users, "dave", "\n");
    assert!(!empty.status.success() && String::from_utf8_lossy(&empty.stderr).contains("empty password"));
    let extra = fails(&["passwd", users.to_str().unwrap(), "dave", "a-password"]);
    assert!(extra.contains("unexpected argument"), "no password argument: {extra}");

    let port = free_port();
    let mut args = tp_args(dir.path(), port);
    args.extend(["--credentials".into(), users.display().to_string()]);
    let _tp = serve(&strs(&args), port, &dir.path().join("tp.log"));
    let addr = format!("127.0.0.1:{port}");
    for login in ["quant:s3cret words", "ops:ops-pw", "trader:password"] {
        let mut conn = Connection::connect(&addr, login).unwrap_or_else(|e| panic!("{login}: {e}"));
        assert_eq!(conn.sync(&K::string(".u.i")).unwrap(), K::Atom(Atom::Long(0)));
    }
    // Past the refusal log's throttle period (the start-up probe was refused too).
    std::thread::sleep(Duration::from_millis(1100));
    assert!(Connection::connect(&addr, "quant:old").is_err());
    logged(&dir.path().join("tp.log"), "user \"quant\" refused");
}

#[test]
fn a_client_process_password_is_never_in_its_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "feed:tp-secret\n").unwrap();
    let (tp_port, rdb_port) = (free_port(), free_port());
    let mut args = tp_args(dir.path(), tp_port);
    args.extend(["--credentials".into(), users.display().to_string()]);
    let _tp = serve(&strs(&args), tp_port, &dir.path().join("tp.log"));
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "tp-secret\n").unwrap();
    let tp = format!("127.0.0.1:{tp_port}");
    let db = dir.path().join("hdb").display().to_string();
    let (port, secret) = (rdb_port.to_string(), secret.display().to_string());
    let rdb_args = ["rdb", "--tp", &tp, "--db", &db, "--port", &port, "--user", "feed", "--password-file", &secret];
    // Listening means it has logged in upstream and subscribed.
    let rdb = serve(&rdb_args, rdb_port, &dir.path().join("rdb.log"));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", rdb.0.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("--user feed") && !cmdline.contains("tp-secret"), "ps shows: {cmdline}");
    let refused = fails(&["rdb", "--tp", &tp, "--db", &db, "--port", "0", "--user", "feed:tp-secret"]);
    assert!(refused.contains("--password-file") && !refused.contains("tp-secret"), "{refused}");
}

/// The test certificates, made by `scripts/test-certs` in `dir`.
fn certs(dir: &Path) -> PathBuf {
    let certs = dir.join("certs");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-certs");
    let out = Command::new("bash").arg(&script).arg(&certs).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    certs
}

#[test]
fn a_tickerplant_serves_tls_only_and_an_rdb_subscribes_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs(dir.path());
    let pem = |name: &str| certs.join(name).display().to_string();
    let (tp_port, rdb_port) = (free_port(), free_port());
    let mut args = tp_args(dir.path(), tp_port);
    args.extend(["--tls-cert".into(), pem("server.pem"), "--tls-key".into(), pem("server.key")]);
    let _tp = serve(&strs(&args), tp_port, &dir.path().join("tp.log"));
    let tp = format!("127.0.0.1:{tp_port}");
    let db = dir.path().join("hdb").display().to_string();
    let port = rdb_port.to_string();
    let ca = pem("ca.pem");
    let _rdb = serve(
        &["rdb", "--tp", &tp, "--tls", "--tls-ca", &ca, "--db", &db, "--port", &port],
        rdb_port,
        &dir.path().join("rdb.log"),
    );
    let tls = ClientTls::load(&certs.join("ca.pem"), None).unwrap();
    let mut feed = Connection::connect_with(&tp, "", Duration::from_secs(10), Some(&tls)).unwrap();
    let row = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Float(1.0)), K::Atom(Atom::Int(7))]);
    feed.sync(&K::List(vec![K::symbol(".u.upd"), K::symbol("trade"), row])).unwrap();
    let mut rdb = Connection::connect(&format!("127.0.0.1:{rdb_port}"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while rdb.sync(&K::string("count trade")).unwrap() != K::Atom(Atom::Long(1)) {
        assert!(Instant::now() < deadline, "the row published over TLS never reached the RDB");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1100));
    assert!(Connection::connect(&tp, "").is_err(), "a plain client is refused");
    logged(&dir.path().join("tp.log"), "requires TLS");
}
