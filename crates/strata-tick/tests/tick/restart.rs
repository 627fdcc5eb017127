//! Tickerplant restarts: a tickerplant process killed with SIGKILL mid-feed and
//! started again on the same journal and port. The RDB and a chained tickerplant's
//! subscriber stay up through the outage, answering, and resume holding every
//! acknowledged update exactly once, in order per table (with and without the
//! publish timer); a day the tickerplant ended meanwhile is finished and written.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use strata_ipc::{Atom, Connection, K, Vector};
use strata_store::{Database, TableLocation};
use strata_tick::rdb::{self, RdbConfig, RdbHandle};
use strata_tick::tickerplant;

use super::common::*;

/// Set in a child test process to make it run a tickerplant:
/// `port|journal dir|publish timer ms (0: none)|clock offset minutes`.
const CHILD_ENV: &str = "STRATA_TICK_TEST_RESTART_TP";

/// Not a test of its own: the body of the tickerplant process the restart tests kill.
#[test]
#[ignore = "run by the restart tests as a child process"]
fn child_tickerplant() {
    let spec = std::env::var(CHILD_ENV).expect("run only as the restart tests' child");
    let [port, dir, batch_ms, offset]: [&str; 4] = spec.split('|').collect::<Vec<_>>().try_into().unwrap();
    let mut config = config(Some(Path::new(dir)));
    config.listen = format!("127.0.0.1:{port}");
    config.batch = Some(Duration::from_millis(batch_ms.parse().unwrap())).filter(|b| !b.is_zero());
    config.clock.offset_minutes = offset.parse().unwrap();
    tickerplant::start(config).unwrap().join().unwrap();
}

/// A tickerplant process, killed with SIGKILL when dropped.
struct TpProcess(Child);

impl TpProcess {
    /// Starts one on `port` journaling into `dir` and waits until it listens.
    fn start(port: u16, dir: &Path, batch_ms: u64, offset_minutes: i32) -> TpProcess {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "tick::restart::child_tickerplant", "--nocapture"])
            .env(CHILD_ENV, format!("{port}|{}|{batch_ms}|{offset_minutes}", dir.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        eventually("the tickerplant process to listen", || Connection::connect(&tp(port), "").is_ok());
        TpProcess(child)
    }
}

impl Drop for TpProcess {
    fn drop(&mut self) {
        self.0.kill().unwrap(); // SIGKILL
        self.0.wait().unwrap();
    }
}

fn tp(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Update `id`: a trade carrying it in `size` when even, a quote carrying it in
/// `bid` when odd.
fn update(id: i32) -> K {
    match id % 2 {
        0 => upd("trade", trade_row("IBM", 1.0, id)),
        _ => upd("quote", K::List(vec![K::symbol("MSFT"), K::Atom(Atom::Float(id as f64)), K::Atom(Atom::Float(0.0))])),
    }
}

/// Sends updates `from..to` synchronously, one at a time, until one fails (the
/// tickerplant went away) or `stop` is raised, recording the acknowledged ids.
fn feed(port: u16, from: i32, to: i32, acked: Arc<Mutex<Vec<i32>>>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    let mut conn = Connection::connect(&tp(port), "").unwrap();
    std::thread::spawn(move || {
        for id in from..to {
            if stop.load(Ordering::Acquire) || conn.sync(&update(id)).is_err() {
                return;
            }
            acked.lock().unwrap().push(id);
        }
    })
}

/// [`feed`] of `from..to`, to the end.
fn feed_all(port: u16, from: i32, to: i32, acked: Arc<Mutex<Vec<i32>>>) {
    feed(port, from, to, acked, Arc::default()).join().unwrap();
}

/// The ids of a trade table (`size`) or quote table (`bid`).
fn row_ids(table: &strata_ipc::Table) -> Vec<i32> {
    match (table.column("size"), table.column("bid")) {
        (Some(K::Vector(Vector::Int(ids), _)), _) => ids.clone(),
        (_, Some(K::Vector(Vector::Float(ids), _))) => ids.iter().map(|id| *id as i32).collect(),
        _ => panic!("not a trade or quote table: {:?}", table.names()),
    }
}

/// Per table (trade, quote), the ids an RDB holds.
fn held(rdb: &RdbHandle) -> [Vec<i32>; 2] {
    let mut state = rdb.state.write().unwrap();
    ["trade", "quote"].map(|t| row_ids(&state.table(t).unwrap()))
}

/// A subscriber of every table of the process at `addr`: per table (trade, quote)
/// the ids received, the ends of day, and whether its connection is still open.
struct Subscriber {
    ids: Arc<Mutex<[Vec<i32>; 2]>>,
    ends: Arc<Mutex<Vec<K>>>,
    open: Arc<AtomicBool>,
}

impl Subscriber {
    fn start(addr: impl ToString) -> Subscriber {
        let mut conn = connect(addr);
        conn.sync(&K::string(".u.sub[`;`]")).unwrap();
        let (ids, open) = (Arc::new(Mutex::new([Vec::new(), Vec::new()])), Arc::new(AtomicBool::new(true)));
        let ends = Arc::new(Mutex::new(Vec::new()));
        let (received, ended, still) = (ids.clone(), ends.clone(), open.clone());
        std::thread::spawn(move || {
            while let Ok(Some((_, message))) = conn.receive() {
                let K::List(items) = &message else { continue };
                if items[0].as_text() == Some(".u.end") {
                    ended.lock().unwrap().push(items[1].clone());
                    continue;
                }
                let (Some(table), Some(K::Table(rows))) = (items[1].as_text(), items.get(2)) else { continue };
                let at = ["trade", "quote"].iter().position(|t| *t == table).unwrap();
                received.lock().unwrap()[at].extend(row_ids(rows));
            }
            still.store(false, Ordering::Release);
        });
        Subscriber { ids, ends, open }
    }

    fn ids(&self) -> [Vec<i32>; 2] {
        self.ids.lock().unwrap().clone()
    }
}

fn long(conn: &mut Connection, query: &str) -> i64 {
    match conn.sync(&K::string(query)).unwrap() {
        K::Atom(Atom::Long(n)) => n,
        other => panic!("{query}: {other:?}"),
    }
}

/// Kills the tickerplant mid-feed, checks the RDB and the chained tickerplant
/// answer during the outage, restarts it and feeds on; then every acknowledged
/// update is in the RDB and at the chained subscriber exactly once, in order per
/// table, and both hold exactly what the journal holds.
fn rides_out_a_restart(batch_ms: u64) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let tp_process = TpProcess::start(port, dir.path(), batch_ms, 0);
    let rdb = rdb::start(rdb_config(tp(port), &dir.path().join("hdb"))).unwrap();
    let ctp = start_ctp(tp(port), 1 << 24);
    let subscriber = Subscriber::start(ctp.addr);
    let acked = Arc::new(Mutex::new(Vec::new()));
    let sender = feed(port, 0, i32::MAX, acked.clone(), Arc::default());
    eventually("acknowledged updates", || acked.lock().unwrap().len() >= 300);
    drop(tp_process); // SIGKILL mid-feed
    sender.join().unwrap();

    // The outage: the RDB answers on what it holds, the chained tickerplant keeps
    // its subscriber and fails a request that needs upstream at once.
    let mut query = connect(rdb.addr.unwrap());
    assert_eq!(long(&mut query, "count trade") as usize, held(&rdb)[0].len());
    let K::Table(counted) = query.sync(&K::string("SELECT count(*) AS n FROM quote")).unwrap() else { panic!() };
    assert_eq!(counted.len(), 1);
    let mut asker = connect(ctp.addr);
    let refused = asker.sync(&K::string(".u.i")).unwrap_err().to_string();
    assert!(refused.contains("upstream"), "{refused}");
    assert_eq!(asker.sync(&K::string(".u.t")).unwrap(), K::symbols(["trade", "quote"]));
    assert!(subscriber.open.load(Ordering::Acquire), "the chained subscriber stays connected");

    // The restart, and the feed going on while both resume and after (it skips
    // the id in flight at the kill: that may or may not be in the journal).
    let _tp_process = TpProcess::start(port, dir.path(), batch_ms, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let sender = feed(port, 1_000_000, i32::MAX, acked.clone(), stop.clone());
    eventually("the RDB to resume", || rdb.state.read().unwrap().resumed == 1);
    eventually("the chained tickerplant to resume", || asker.sync(&K::string(".u.i")).is_ok());
    let resumed = acked.lock().unwrap().len();
    eventually("updates after both resumed", || acked.lock().unwrap().len() >= resumed + 200);
    stop.store(true, Ordering::Release);
    sender.join().unwrap();
    let acked = acked.lock().unwrap().clone();

    // What the journal holds, as a new RDB replays it.
    let truth = rdb::start(RdbConfig { listen: None, ..rdb_config(tp(port), &dir.path().join("hdb2")) }).unwrap();
    let mut tp_conn = connect(tp(port));
    let journaled = long(&mut tp_conn, ".u.j") as usize;
    let rows = |ids: &[Vec<i32>; 2]| ids[0].len() + ids[1].len();
    eventually("the new RDB to hold the journal", || rows(&held(&truth)) == journaled);
    let expected = held(&truth);
    for (table, ids) in ["trade", "quote"].iter().zip(&expected) {
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "{table}: the journal holds each update once");
        assert!(ids.is_sorted(), "{table}: in order");
    }
    for id in &acked {
        assert!(expected[(id % 2) as usize].contains(id), "acknowledged update {id} is in the journal");
    }
    eventually("the RDB to hold the journal", || rows(&held(&rdb)) >= journaled);
    assert_eq!(held(&rdb), expected, "the RDB holds every update once, in order");
    eventually("the subscriber to have the journal", || rows(&subscriber.ids()) >= journaled);
    assert_eq!(subscriber.ids(), expected, "the chained subscriber has every update once, in order");
    assert!(subscriber.open.load(Ordering::Acquire));
    assert_eq!(counter(&mut query, "resumed"), 1);
}

#[test]
fn the_rdb_and_a_chained_tickerplant_ride_out_a_tickerplant_killed_mid_feed() {
    rides_out_a_restart(0);
}

#[test]
fn the_rdb_and_a_chained_tickerplant_ride_out_a_restart_with_the_publish_timer() {
    rides_out_a_restart(20);
}

#[test]
fn a_day_the_tickerplant_ended_while_away_is_finished_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let port = free_port();
    // A publish timer of a minute: acknowledged updates stay unpublished, so the RDB
    // and the chained tickerplant have none of them when the tickerplant is killed.
    let tp_process = TpProcess::start(port, dir.path(), 60_000, 0);
    let rdb = rdb::start(rdb_config(tp(port), &db)).unwrap();
    let ctp = start_ctp(tp(port), 1 << 24);
    let subscriber = Subscriber::start(ctp.addr);
    let expected = [vec![0, 2, 4, 6, 8], vec![1, 3, 5, 7, 9]];
    let acked = Arc::new(Mutex::new(Vec::new()));
    feed_all(port, 0, 10, acked.clone());
    assert_eq!(acked.lock().unwrap().len(), 10);
    let mut tp_conn = connect(tp(port));
    let K::Atom(Atom::Date(day)) = tp_conn.sync(&K::string(".u.d")).unwrap() else { panic!() };
    let day = strata_store::Date(day + strata_ipc::value::EPOCH_OFFSET_DAYS);
    assert_eq!(rdb.state.read().unwrap().row_counts(), [("trade".to_string(), 0), ("quote".to_string(), 0)]);
    assert_eq!(subscriber.ids(), [Vec::<i32>::new(), Vec::new()]);
    drop(tp_process);

    // Back a day later (its clock a day ahead): a new journal.
    let _tp_process = TpProcess::start(port, dir.path(), 60_000, 24 * 60);
    eventually("the day written", || rdb.state.read().unwrap().written == [day]);
    let store = Database::open(&db).unwrap();
    let trades = store.read_table(&TableLocation::Partition(day, "trade".into())).unwrap();
    let Some(K::Vector(Vector::Int(sizes), _)) = strata_ipc::arrow::table_from_store(&trades).column("size").cloned()
    else {
        panic!()
    };
    assert_eq!(sizes, [0, 2, 4, 6, 8], "the day's updates, from its journal");
    assert_eq!(store.read_table(&TableLocation::Partition(day, "quote".into())).unwrap().len(), 5);
    eventually("the RDB on the new day", || counter(&mut connect(rdb.addr.unwrap()), "resumed") == 1);
    eventually("the chained subscriber to have the day", || subscriber.ids() == expected);
    let end = K::Atom(Atom::Date(day.0 - strata_ipc::value::EPOCH_OFFSET_DAYS));
    eventually("the chained subscriber to have its end", || *subscriber.ends.lock().unwrap() == [end.clone()]);
    assert_eq!(rdb.state.read().unwrap().row_counts(), [("trade".to_string(), 0), ("quote".to_string(), 0)]);
}

/// Cuts the journal in `dir` back to its first `keep` records, as a tickerplant
/// does with bytes it cannot trust (a quarantine, or a tail lost with the machine).
fn cut_journal(dir: &Path, keep: usize) {
    let path = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_file()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut end = strata_tick::journal::MAGIC.len();
    for _ in 0..keep {
        let len = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
        end += strata_tick::journal::RECORD_HEADER + len;
    }
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(end as u64).unwrap();
}

#[test]
fn updates_the_journal_lost_leave_the_rdb_and_make_the_chained_tickerplant_resubscribe_its_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let tp_process = TpProcess::start(port, dir.path(), 0, 0);
    let rdb = rdb::start(rdb_config(tp(port), &dir.path().join("hdb"))).unwrap();
    let ctp = start_ctp(tp(port), 1 << 24);
    let subscriber = Subscriber::start(ctp.addr);
    let acked = Arc::new(Mutex::new(Vec::new()));
    feed_all(port, 0, 200, acked.clone());
    eventually("the subscriber to have every update", || subscriber.ids()[1].len() == 100);
    drop(tp_process);
    // The tickerplant comes back having lost the last 50 records, which both had,
    // and takes 50 new ones of the same sizes before they reconnect.
    cut_journal(dir.path(), 150);
    let _tp_process = TpProcess::start(port, dir.path(), 0, 0);
    feed_all(port, 1_000_000, 1_000_050, acked.clone());

    let truth = rdb::start(RdbConfig { listen: None, ..rdb_config(tp(port), &dir.path().join("hdb2")) }).unwrap();
    let expected = held(&truth);
    assert_eq!(expected[0].len() + expected[1].len(), 200);
    eventually("the RDB to resume", || rdb.state.read().unwrap().resumed == 1);
    assert_eq!(held(&rdb), expected, "the RDB holds what the journal holds, no more");
    eventually("the chained subscriber's connection to close", || !subscriber.open.load(Ordering::Acquire));
    let again = Subscriber::start(ctp.addr);
    feed_all(port, 1_000_050, 1_000_052, acked.clone());
    eventually("a new subscriber to get live updates", || again.ids() == [vec![1_000_050], vec![1_000_051]]);
}

#[test]
fn a_tickerplant_back_with_other_tables_is_refused_until_it_has_the_rdbs() {
    let (dir, other_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port = free_port();
    // A stopped tickerplant's listener closes a moment after `stop` returns.
    let on_port = |mut config: tickerplant::TickerplantConfig| {
        config.listen = tp(port);
        let mut started = None;
        eventually("the port to be free", || {
            started = tickerplant::start(config.clone()).ok();
            started.is_some()
        });
        started.unwrap()
    };
    let first = on_port(config(Some(dir.path())));
    let rdb = rdb::start(rdb_config(tp(port), &dir.path().join("hdb"))).unwrap();
    feed_all(port, 0, 4, Arc::default());
    eventually("the RDB to hold the updates", || held(&rdb) == [vec![0, 2], vec![1, 3]]);
    first.stop().unwrap();

    // Back with a trade table of other columns: the RDB refuses it and keeps serving.
    let schema = strata_tick::schema::Schema::parse("sym", "trade time:timespan sym:symbol price:float\n").unwrap();
    let other = on_port(tickerplant::TickerplantConfig::new(schema, Some(other_dir.path().into())));
    let mut watch = connect(tp(port));
    let mut polls = 0;
    eventually("the RDB to try the other tickerplant", || {
        polls += 1;
        counter(&mut watch, "messages") > polls
    });
    let mut query = connect(rdb.addr.unwrap());
    assert_eq!(long(&mut query, "count trade"), 2);
    assert_eq!(counter(&mut query, "resumed"), 0);
    drop(watch);
    other.stop().unwrap();

    let _back = on_port(config(Some(dir.path())));
    eventually("the RDB to resume", || counter(&mut query, "resumed") == 1);
    feed_all(port, 4, 6, Arc::default());
    eventually("the update after", || held(&rdb) == [vec![0, 2, 4], vec![1, 3, 5]]);
}
