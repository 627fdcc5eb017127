//! Crash recovery: a tickerplant process killed with SIGKILL while a feed sends, a
//! restart, and an RDB replay that holds every acknowledged update; torn journal
//! tails are set aside and cut. The tickerplant process other tests kill lives
//! here too ([`tp_command`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_ipc::{Atom, Connection, K, Vector};
use strata_tick::journal::{self, MAGIC, Recovery};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::tickerplant;

use super::common::*;

/// Set in a child test process to make it run a tickerplant:
/// `port|journal dir|journal recovery`.
const CHILD_ENV: &str = "STRATA_TICK_TEST_TP";

/// Not a test of its own: the body of the tickerplant process crash tests kill. A
/// tickerplant that cannot start prints why on stderr and exits with a failure.
#[test]
#[ignore = "run by the crash tests as a child process"]
fn child_tickerplant() {
    let spec = std::env::var(CHILD_ENV).expect("run only as a crash test's child");
    let [port, dir, recovery] = spec.split('|').collect::<Vec<_>>()[..] else { panic!("{spec}") };
    let mut config = config(Some(Path::new(dir)));
    config.listen = format!("127.0.0.1:{port}");
    config.journal_recovery = recovery.parse().unwrap();
    if let Err(e) = tickerplant::start(config).and_then(|tp| tp.join()) {
        eprintln!("tickerplant failed: {e}");
        std::process::exit(3);
    }
}

/// The command that runs a tickerplant process on `port` journaling into `dir`;
/// its output goes nowhere unless the caller says otherwise.
pub(super) fn tp_command(port: u16, dir: &Path, recovery: Recovery) -> Command {
    let recovery = match recovery {
        Recovery::Refuse => "refuse",
        Recovery::Skip => "skip",
    };
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--ignored", "--exact", "tick::crash::child_tickerplant", "--nocapture"])
        .env(CHILD_ENV, format!("{port}|{}|{recovery}", dir.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

pub(super) fn spawn_tickerplant(port: u16, dir: &Path) -> Child {
    tp_command(port, dir, Recovery::Refuse).spawn().unwrap()
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The journal (not a side file) of schema `sym` in `dir` with the latest date.
pub(super) fn newest_journal(dir: &Path) -> PathBuf {
    let date = *journal::journal_dates(dir, "sym").unwrap().last().expect("a journal");
    journal::journal_path(dir, "sym", date)
}

pub(super) fn wait_for(port: u16) -> Connection {
    let mut conn = None;
    eventually("the tickerplant process to listen", || {
        conn = Connection::connect(&format!("127.0.0.1:{port}"), "").ok();
        conn.is_some()
    });
    conn.unwrap()
}

#[test]
fn tickerplant_killed_with_sigkill_loses_no_acknowledged_update() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn_tickerplant(port, dir.path());
    let mut feed = wait_for(port);
    let acked = Arc::new(AtomicU64::new(0));
    let counter = acked.clone();
    let sender = std::thread::spawn(move || {
        for i in 0.. {
            if feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).is_err() {
                return;
            }
            counter.store(i as u64 + 1, Ordering::Release);
        }
    });
    eventually("some acknowledged updates", || acked.load(Ordering::Acquire) >= 300);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    sender.join().unwrap();
    let acknowledged = acked.load(Ordering::Acquire);

    let mut child = spawn_tickerplant(port, dir.path());
    drop(wait_for(port));
    let rdb =
        rdb::start(RdbConfig { listen: None, ..rdb_config(format!("127.0.0.1:{port}"), &dir.path().join("hdb")) })
            .unwrap();
    let in_journal = journal::scan(&newest_journal(dir.path())).unwrap().records;
    let mut state = rdb.state.write().unwrap();
    assert_eq!(state.replayed, in_journal, "the RDB replays every record the journal holds");
    assert!(in_journal >= acknowledged, "{in_journal} records but {acknowledged} acknowledged");
    let t = state.table("trade").unwrap();
    let Some(K::Vector(Vector::Int(sizes), _)) = t.column("size") else { panic!() };
    let expected: Vec<i32> = (0..in_journal as i32).collect();
    assert_eq!(*sizes, expected, "every update once, in order");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_torn_journal_tail_is_set_aside_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(dir.path()));
    let mut feed = connect(tp.addr);
    for i in 0..5 {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).unwrap();
    }
    drop(feed);
    tp.stop().unwrap();
    let path = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
    let good = std::fs::metadata(&path).unwrap().len();
    // Half a record: a length and checksum, then fewer bytes than promised.
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9]).unwrap();
    drop(file);

    let tp = start_tp(Some(dir.path()));
    let mut client = connect(tp.addr);
    assert_eq!(client.sync(&K::string(".u.i")).unwrap(), K::Atom(Atom::Long(5)));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good, "the torn tail is gone");
    let side = path.with_file_name(format!("{}.torn-{good}", path.file_name().unwrap().to_str().unwrap()));
    assert_eq!(std::fs::read(side).unwrap(), [200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9], "and kept beside it");
    assert!(std::fs::read(&path).unwrap().starts_with(MAGIC));
    client.sync(&upd("trade", trade_row("IBM", 1.0, 5))).unwrap();
    assert_eq!(journal::scan(&path).unwrap().records, 6, "appends continue after the good records");
    let K::List(position) = client.sync(&K::string("`.u `i`L")).unwrap() else { panic!() };
    assert_eq!(position[0], K::Atom(Atom::Long(6)));
    assert!(position[1].as_text().unwrap().ends_with(path.file_name().unwrap().to_str().unwrap()));
}
