//! Secure by default, over real sockets: a client's SQL cannot read or write the
//! server's files nor change what other clients see, idle connections cost little
//! and are bounded in number, a hostile text request is an error (not a crash), a
//! wrong password is refused, and servers listen on loopback unless told otherwise.
//! Memory and connection bounds are measured in a child process (a real server
//! process, its RSS read from /proc) so other tests' threads do not blur them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strata_ipc::{Connection, Credentials, K, MessageKind, Vector};
use strata_store::{Column, ColumnType, Database, Table as StoreTable, TableLocation, TableWrite};
use strata_tick::hdb::{self, HdbConfig};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::server;
use strata_tick::sql::QueryLimits;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::common::*;

/// Set in a child test process to make it run a server: `kind|port|max connections|dir`.
const CHILD_ENV: &str = "STRATA_TICK_TEST_SECURITY_SERVER";

/// Idle connections (handshake only) the memory test opens.
const IDLE_CONNECTIONS: usize = 1000;
/// The most the server process's resident memory may grow for those connections:
/// 64 KiB each (measured: about 25 KiB, two threads' touched stack, the socket and the
/// bookkeeping). Before the outbox queue grew on demand each took about 32 MiB.
const IDLE_GROWTH_BOUND: u64 = IDLE_CONNECTIONS as u64 * (64 << 10);

/// Not a test of its own: the body of the server processes the tests below start.
#[test]
#[ignore = "run by the tests of this module as a child process"]
fn child_server() {
    let spec = std::env::var(CHILD_ENV).expect("run only as a security test's child");
    let [kind, port, max_connections, dir] = spec.split('|').collect::<Vec<_>>()[..] else { panic!("{spec}") };
    server::set_max_connections(max_connections.parse().unwrap());
    let listen = format!("127.0.0.1:{port}");
    match kind {
        "tp" => {
            let mut config = config(None);
            config.listen = listen;
            tickerplant::start(config).unwrap().join().unwrap();
        }
        "hdb" => {
            let config =
                HdbConfig { db: dir.into(), listen, credentials: None, tls: None, queries: QueryLimits::default() };
            hdb::start(config).unwrap().join();
        }
        other => panic!("no server kind {other}"),
    }
}

/// A server process; killed when dropped.
struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    fn start(kind: &str, max_connections: usize, dir: &Path, stderr: Stdio) -> ServerProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "tick::security::child_server", "--nocapture"])
            .env(CHILD_ENV, format!("{kind}|{port}|{max_connections}|{}", dir.display()))
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let server = ServerProcess { child, port };
        eventually("the server process to listen", || server.try_connect().is_ok());
        server
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn try_connect(&self) -> Result<Connection, strata_ipc::IpcError> {
        Connection::connect_timeout(&self.addr(), "", Duration::from_secs(5))
    }

    /// The process's resident memory in bytes (`VmRSS`).
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
    }

    /// The resident memory once it has stopped changing (threads settling).
    fn settled_rss(&self) -> u64 {
        let mut last = self.rss();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.rss();
            if now == last {
                return now;
            }
            last = now;
        }
        last
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database with one partitioned `trade` table: IBM at 100.0, MSFT at 10.0.
fn trade_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let trade = StoreTable::new(vec![
        ("sym".into(), Column::from_symbols(["IBM", "MSFT"])),
        ("price".into(), Column::from_values(ColumnType::Float, vec![100.0f64, 10.0]).unwrap()),
    ])
    .unwrap();
    let location = TableLocation::Partition("2025.01.02".parse().unwrap(), "trade".into());
    db.write_table(&location, &trade, &TableWrite::default()).unwrap();
    dir
}

fn refused(conn: &mut Connection, request: &K) -> String {
    match conn.sync(request) {
        Err(strata_ipc::IpcError::Remote(error)) => error,
        other => panic!("{request}: expected an error reply, got {other:?}"),
    }
}

/// Sends `statement` in every form a client can: as plain text (not taken as SQL,
/// as its first word does not start a query: a q-text error, whatever it says), and through `.s.e` and
/// `sql` as text and as function-call lists, which reach the SQL engine and are
/// refused there, the error naming `names` and saying why.
fn refused_in_every_form(conn: &mut Connection, statement: &str, names: &str) {
    refused(conn, &K::string(statement));
    for request in [
        K::string(&format!(".s.e[\"{statement}\"]")),
        K::string(&format!("sql \"{statement}\"")),
        K::List(vec![K::string(".s.e"), K::string(statement)]),
        K::List(vec![K::symbol("sql"), K::string(statement)]),
    ] {
        let error = refused(conn, &request);
        assert!(
            error.starts_with("refused: ") && error.contains(names) && error.contains("read-only"),
            "{request}: {error}"
        );
    }
}

fn prices(conn: &mut Connection) -> K {
    let K::Table(table) = conn.sync(&K::string("SELECT sym, price FROM trade ORDER BY sym")).unwrap() else {
        panic!("a table")
    };
    table.column("price").unwrap().clone()
}

#[test]
fn sql_over_ipc_cannot_read_or_write_files_or_change_the_catalog() {
    let db = trade_db();
    let secret = db.path().join("secret.csv");
    std::fs::write(&secret, "line\nthe-secret-line\n").unwrap();
    let written = db.path().join("written.csv");
    let hdb = start_hdb(db.path());
    let mut attacker = connect(hdb.addr);
    let mut other = connect(hdb.addr);
    let before = prices(&mut other);
    assert_eq!(before, K::vector(Vector::Float(vec![100.0, 10.0])));

    // Reading a file: the table is never created, so it cannot be selected.
    let create = format!("CREATE EXTERNAL TABLE x (line VARCHAR) STORED AS CSV LOCATION '{}'", secret.display());
    refused_in_every_form(&mut attacker, &create, "DDL");
    let error = refused(&mut attacker, &K::string("SELECT * FROM x"));
    assert!(error.contains("not found") && !error.contains("the-secret-line"), "{error}");
    let error = refused(&mut attacker, &K::string(&format!("SELECT * FROM '{}'", secret.display())));
    assert!(!error.contains("the-secret-line"), "{error}");

    // Writing a file.
    let copy = format!("COPY (SELECT 'x' AS x) TO '{}' STORED AS CSV", written.display());
    refused_in_every_form(&mut attacker, &copy, "COPY");
    assert!(!written.exists(), "COPY created {}", written.display());

    // Changing what another connection sees.
    for statement in [
        "DROP TABLE trade",
        "CREATE VIEW trade AS SELECT 'IBM' AS sym, 999.0 AS price",
        "CREATE OR REPLACE VIEW trade AS SELECT 'IBM' AS sym, 999.0 AS price",
        "INSERT INTO trade SELECT * FROM trade",
        "SET datafusion.execution.batch_size = 1",
    ] {
        refused_in_every_form(&mut attacker, statement, "read-only");
    }
    assert_eq!(prices(&mut other), before, "the second connection's answer is unchanged");
    assert_eq!(prices(&mut attacker), before);
}

/// A client asking for more rows than the HDB's query memory holds (a whole
/// table by SQL or by name, or rows SQL makes up) gets an error naming the limit
/// instead of the server gathering them all; it and the other clients go on
/// being served.
#[test]
fn an_answer_larger_than_the_query_memory_is_an_error_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let rows = 300_000;
    let trade = StoreTable::new(vec![
        ("sym".into(), Column::from_symbols((0..rows).map(|i| ["IBM", "MSFT", "AAPL"][i % 3]))),
        ("price".into(), Column::from_values(ColumnType::Float, (0..rows).map(|i| i as f64).collect()).unwrap()),
    ])
    .unwrap();
    let location = TableLocation::Partition("2025.01.02".parse().unwrap(), "trade".into());
    db.write_table(&location, &trade, &TableWrite::default()).unwrap();
    let limit_mib = 2;
    let config = HdbConfig {
        db: dir.path().into(),
        listen: "127.0.0.1:0".into(),
        credentials: None,
        tls: None,
        queries: QueryLimits { memory: Some(limit_mib << 20), ..QueryLimits::default() },
    };
    let hdb = hdb::start(config).unwrap();
    let mut greedy = connect(hdb.addr);
    let mut other = connect(hdb.addr);
    // 300k rows of a float and a symbol: 3.6 MB as Arrow; 80 MB of made-up integers.
    for statement in ["SELECT * FROM trade", "SELECT * FROM generate_series(1, 10000000)"] {
        let error = refused(&mut greedy, &K::string(statement));
        assert!(error.contains(&format!("larger than the {limit_mib} MiB")) && error.contains("LIMIT"), "{error}");
    }
    // The whole table by q's forms is measured before it is read.
    for request in ["trade", "select from trade"] {
        let error = refused(&mut greedy, &K::string(request));
        assert!(error.contains(&format!("more than the {limit_mib} MiB")) && error.contains("SELECT"), "{error}");
    }
    // What fits is answered, on the same connection and on another.
    let K::Table(first) = greedy.sync(&K::string("SELECT * FROM trade LIMIT 1000")).unwrap() else { panic!() };
    assert_eq!(first.len(), 1000);
    let count = other.sync(&K::string("SELECT count(*) AS n FROM trade")).unwrap();
    let K::Table(count) = count else { panic!("{count:?}") };
    assert_eq!(count.column("n"), Some(&K::vector(Vector::Long(vec![rows as i64]))));
}

#[test]
fn idle_connections_cost_kilobytes_each_and_are_bounded_in_number() {
    let dir = tempfile::tempdir().unwrap();
    let tp = ServerProcess::start("tp", IDLE_CONNECTIONS + 10, dir.path(), Stdio::null());
    let base = tp.settled_rss();
    let mut idle = Vec::new();
    let mut figures = Vec::new();
    for target in [1, 100, IDLE_CONNECTIONS] {
        while idle.len() < target {
            idle.push(tp.try_connect().unwrap());
        }
        let growth = tp.settled_rss().saturating_sub(base);
        figures.push(format!("{target}: +{} KiB ({} KiB each)", growth >> 10, (growth >> 10) / target as u64));
    }
    eprintln!("server RSS growth for idle connections: {}", figures.join(", "));
    let growth = tp.settled_rss().saturating_sub(base);
    assert!(
        growth < IDLE_GROWTH_BOUND,
        "{IDLE_CONNECTIONS} idle connections grew the server by {} MiB; bound {} MiB ({})",
        growth >> 20,
        IDLE_GROWTH_BOUND >> 20,
        figures.join(", ")
    );
    // Every one of them is still served.
    for conn in idle.iter_mut().step_by(97) {
        conn.sync(&K::string(".u.i")).unwrap();
    }
}

#[test]
fn connections_past_the_bound_are_refused_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let hdb = ServerProcess::start("hdb", 3, dir.path(), Stdio::null());
    let mut open: Vec<Connection> = Vec::new();
    // ServerProcess::start's probe connection may still hold its slot for a moment.
    eventually("three connections to be open", || {
        if let Ok(conn) = hdb.try_connect() {
            open.push(conn);
        }
        open.len() == 3
    });
    assert!(hdb.try_connect().is_err(), "a fourth connection is refused");
    for conn in &mut open {
        assert!(matches!(conn.sync(&K::string("tables[]")), Ok(K::Vector(..))), "the first three are served");
    }
    drop(open.pop());
    eventually("a slot to free up", || hdb.try_connect().is_ok());
}

/// Whether the server closes `stream` within 30 s, sending a byte every half
/// second if `trickle`.
fn dropped_by_server(stream: &mut TcpStream, trickle: bool) -> bool {
    let started = Instant::now();
    stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    while started.elapsed() < Duration::from_secs(30) {
        if trickle {
            let _ = stream.write_all(b"a");
        }
        let mut byte = [0u8; 1];
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => return false,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // Reset: closed with our bytes unread.
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn a_client_that_does_not_complete_its_handshake_is_dropped() {
    let tp = start_tp(None);
    let started = Instant::now();
    let mut silent = TcpStream::connect(tp.addr).unwrap();
    let mut trickle = TcpStream::connect(tp.addr).unwrap();
    // A byte every half second never completes it either: the deadline is for all of it.
    assert!(dropped_by_server(&mut trickle, true), "the trickling client was not dropped");
    assert!(started.elapsed() >= server::HANDSHAKE_TIMEOUT, "dropped before its time was up");
    assert!(dropped_by_server(&mut silent, false), "the silent client was not dropped");
    // The server still takes new clients.
    connect(tp.addr).sync(&K::string(".u.i")).unwrap();
}

#[test]
fn a_million_nested_parentheses_are_an_error_and_the_server_keeps_serving() {
    let db = trade_db();
    let hdb = start_hdb(db.path());
    let tp = start_tp(None);
    let deep = K::string(&"(".repeat(1 << 20));
    for addr in [hdb.addr, tp.addr] {
        let mut hostile = connect(addr);
        let mut bystander = connect(addr);
        let error = refused(&mut hostile, &deep);
        assert!(error.contains("deeper than 64 levels") && error.len() < 300, "{addr}: {error}");
        assert!(bystander.sync(&K::string("tables[]")).is_ok(), "{addr} still serves other clients");
        assert!(hostile.sync(&K::string("tables[]")).is_ok(), "{addr} still serves the same client");
    }
}

#[test]
fn bad_async_messages_are_logged_at_most_once_a_second_per_connection() {
    let db = trade_db();
    for (kind, logged) in [("hdb", "refused an async request"), ("tp", "rejected an async message")] {
        let log = db.path().join(format!("{kind}-stderr.log"));
        let server = ServerProcess::start(kind, 16, db.path(), Stdio::from(std::fs::File::create(&log).unwrap()));
        let mut conn = server.try_connect().unwrap();
        let started = Instant::now();
        for _ in 0..2000 {
            conn.write(MessageKind::Async, &K::string("{x}")).unwrap();
        }
        // A sync request after them: answered once all 2000 were handled.
        let probe = if kind == "tp" { ".u.i" } else { "tables[]" };
        conn.sync(&K::string(probe)).unwrap();
        let seconds = started.elapsed().as_secs() + 1;
        let text = std::fs::read_to_string(&log).unwrap();
        let lines = text.lines().filter(|l| l.contains(logged)).count() as u64;
        assert!((1..=seconds + 1).contains(&lines), "{kind}: {lines} lines in {seconds} s:\n{text}");
    }
}

#[test]
fn wrong_passwords_are_refused_and_each_server_applies_its_own_credentials() {
    let journal = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let mut tp_config: TickerplantConfig = config(Some(journal.path()));
    tp_config.credentials = Some(Credentials::parse("feed:tp-secret\n").unwrap());
    let tp = tickerplant::start(tp_config).unwrap();
    assert!(Connection::connect(&tp.addr.to_string(), "feed:wrong").is_err());
    assert!(Connection::connect(&tp.addr.to_string(), "nobody:tp-secret").is_err());
    assert!(Connection::connect(&tp.addr.to_string(), "").is_err());
    Connection::connect(&tp.addr.to_string(), "feed:tp-secret").unwrap().sync(&K::string(".u.i")).unwrap();
    // The RDB logs in upstream as `feed` and lets only its own users in.
    let rdb = rdb::start(RdbConfig {
        user_password: "feed:tp-secret".into(),
        credentials: Some(Credentials::parse("analyst:rdb-secret\n").unwrap()),
        ..rdb_config(tp.addr, db.path())
    })
    .unwrap();
    let rdb_addr = rdb.addr.unwrap().to_string();
    assert!(Connection::connect(&rdb_addr, "feed:tp-secret").is_err(), "the TP's users are not the RDB's");
    assert!(Connection::connect(&rdb_addr, "analyst:wrong").is_err());
    Connection::connect(&rdb_addr, "analyst:rdb-secret").unwrap().sync(&K::string("tables[]")).unwrap();
}

#[test]
fn servers_listen_on_loopback_by_default() {
    let mut config = TickerplantConfig::new(schema(), None);
    let (host, _port) = config.listen.rsplit_once(':').unwrap();
    assert_eq!(host, "127.0.0.1");
    config.listen = format!("{host}:0");
    let tp = tickerplant::start(config).unwrap();
    assert!(tp.addr.ip().is_loopback(), "{}", tp.addr);
}

/// An HDB over [`trade_db`] that runs `threads` statements at once, each for at
/// most `timeout`.
fn hdb_with(db: &Path, threads: usize, timeout: Duration) -> hdb::HdbHandle {
    let queries = QueryLimits { memory: Some(256 << 20), timeout: Some(timeout), threads };
    let config = HdbConfig { db: db.into(), listen: "127.0.0.1:0".into(), credentials: None, tls: None, queries };
    hdb::start(config).unwrap()
}

/// `count(*)` over 10^12 generated rows: hours of work if nothing stops it.
const RUNAWAY: &str = "SELECT count(*) AS n FROM generate_series(1, 1000000000000)";

#[test]
fn a_runaway_query_is_stopped_at_its_time_limit_while_others_are_answered() {
    let db = trade_db();
    let hdb = hdb_with(db.path(), 4, Duration::from_secs(3));
    let addr = hdb.addr;
    let started = Instant::now();
    let runaway = std::thread::spawn(move || refused(&mut connect(addr), &K::string(RUNAWAY)));
    std::thread::sleep(Duration::from_millis(300));
    let mut other = connect(addr);
    for _ in 0..20 {
        prices(&mut other);
    }
    assert!(!runaway.is_finished(), "others were answered while the runaway ran");
    let error = runaway.join().unwrap();
    assert!(error.contains("time limit") && error.contains("--query-timeout"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(30), "stopped near its limit: {:?}", started.elapsed());
}

#[test]
fn a_client_that_leaves_cancels_its_query() {
    let db = trade_db();
    // One query thread and no time limit to speak of: only the cancel can free it.
    let hdb = hdb_with(db.path(), 1, Duration::from_secs(3600));
    let mut leaving = connect(hdb.addr);
    leaving.write(MessageKind::Sync, &K::string(RUNAWAY)).unwrap();
    leaving.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(leaving);
    let started = Instant::now();
    let mut next = connect(hdb.addr);
    prices(&mut next);
    assert!(started.elapsed() < Duration::from_secs(20), "the runaway's thread was freed");
}

#[test]
fn one_clients_requests_are_answered_in_the_order_sent() {
    let db = trade_db();
    let hdb = hdb_with(db.path(), 4, Duration::from_secs(60));
    let mut conn = connect(hdb.addr);
    let statements: Vec<String> = (0..40).map(|i| format!("SELECT {i} AS i, count(*) AS n FROM trade")).collect();
    for statement in &statements {
        conn.write(MessageKind::Sync, &K::string(statement)).unwrap();
    }
    conn.flush().unwrap();
    for i in 0..statements.len() {
        let (_, answer) = conn.receive().unwrap().expect("an answer");
        let K::Table(table) = answer else { panic!("{answer:?}") };
        assert_eq!(table.column("i"), Some(&K::vector(Vector::Long(vec![i as i64]))), "answer {i} in order");
    }
}

#[test]
fn sockets_that_never_log_in_do_not_keep_clients_out() {
    let db = trade_db();
    let hdb = ServerProcess::start("hdb", 8, db.path(), Stdio::null());
    // Far more silent sockets than login slots and pre-login places.
    let silent: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(hdb.addr()).ok()).collect();
    assert!(silent.len() > server::PRE_LOGIN_CONNECTIONS, "{} sockets opened", silent.len());
    let mut logged_in = 0;
    for _ in 0..12 {
        if let Ok(mut conn) = hdb.try_connect()
            && conn.sync(&K::string("tables[]")).is_ok()
        {
            logged_in += 1;
        }
    }
    assert_eq!(logged_in, 12, "every real client got in past {} silent sockets", silent.len());
}
