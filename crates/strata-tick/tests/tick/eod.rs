//! No tick lost at end of day (issue 16): an RDB *process* killed with SIGKILL while
//! it writes the day, restarted, writes the day from the journal exactly once, and
//! no reader ever sees part of a day; a second end of day for a written date
//! merges; a full disk leaves nothing partial and the rows are written later.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strata_ipc::{Atom, Connection, K, Vector};
use strata_store::{Column, ColumnType, Database, Date, PartitionStatus, Table, TableLocation};
use strata_tick::daywrite;
use strata_tick::rdb::{self, RdbConfig};

use super::common::*;

/// Set in a child test process to make it run an RDB: `tp address|db|query port`.
const CHILD_ENV: &str = "STRATA_TICK_TEST_RDB";

/// Not a test of its own: the body of the RDB process the end-of-day test kills.
#[test]
#[ignore = "run by rdb_killed_during_end_of_day_writes_the_day_once_after_restart as a child process"]
fn child_rdb() {
    let spec = std::env::var(CHILD_ENV).expect("run only as the end-of-day test's child");
    let parts: Vec<&str> = spec.split('|').collect();
    let config =
        RdbConfig { listen: Some(format!("127.0.0.1:{}", parts[2])), ..rdb_config(parts[0], Path::new(parts[1])) };
    rdb::start(config).unwrap().join().unwrap();
}

fn spawn_rdb(tp: impl ToString, db: &Path, port: u16) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "tick::eod::child_rdb", "--nocapture"])
        .env(CHILD_ENV, format!("{}|{}|{port}", tp.to_string(), db.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Rows per publish: large updates, as a busy feed's batches are.
const BATCH: usize = 5_000;

/// Publishes `rows` trades and `rows` quotes; trade `i` has size `i`, quote `i` bid `i`,
/// so every row can be found exactly once afterwards.
fn publish_day(feed: &mut Connection, rows: usize) {
    const SYMS: [&str; 7] = ["AAPL", "MSFT", "IBM", "GOOG", "AMZN", "META", "NVDA"];
    for start in (0..rows).step_by(BATCH) {
        let range = start..(start + BATCH).min(rows);
        let syms = K::symbols(range.clone().map(|i| SYMS[i * 31 % SYMS.len()]));
        let trade = K::List(vec![
            syms.clone(),
            K::vector(Vector::Float(range.clone().map(|i| 100.0 + (i % 100) as f64).collect())),
            K::vector(Vector::Int(range.clone().map(|i| i as i32).collect())),
            K::vector(Vector::Char(vec![b'A'; range.len()])),
        ]);
        feed.sync(&upd("trade", trade)).unwrap();
        let quote = K::List(vec![
            syms,
            K::vector(Vector::Float(range.clone().map(|i| i as f64).collect())),
            K::vector(Vector::Float(range.map(|i| i as f64 + 0.5).collect())),
        ]);
        feed.sync(&upd("quote", quote)).unwrap();
    }
}

/// The tickerplant's current date.
fn tp_date(feed: &mut Connection) -> Date {
    let K::Atom(Atom::Date(d)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    Date(d + strata_ipc::value::EPOCH_OFFSET_DAYS)
}

/// The sorted values of an integer-valued column of a served table.
fn ids(db: &Database, date: Date, table: &str, column: &str) -> Vec<i64> {
    let t = db.read_table(&TableLocation::Partition(date, table.into())).unwrap();
    let c = t.column(column).unwrap();
    let mut v: Vec<i64> = match c.ty() {
        ColumnType::Int => c.values::<i32>().iter().map(|&x| i64::from(x)).collect(),
        ColumnType::Float => c.values::<f64>().iter().map(|&x| x as i64).collect(),
        ty => panic!("{ty}"),
    };
    v.sort_unstable();
    v
}

/// Asserts day `date` is served with trade and quote holding every row `0..rows`
/// exactly once.
fn assert_day_complete(db: &Path, date: Date, rows: usize) {
    let db = Database::open(db).unwrap();
    assert_eq!(db.tables(Some(date)).unwrap(), ["quote", "trade"]);
    let expected: Vec<i64> = (0..rows as i64).collect();
    assert!(ids(&db, date, "trade", "size") == expected, "every trade exactly once");
    assert!(ids(&db, date, "quote", "bid") == expected, "every quote exactly once");
}

/// Polls what readers see until stopped: a served `date` must have both tables and
/// every row its record promises. Returns what it saw wrong, if anything.
fn watch(db: PathBuf, date: Date, rows: u64, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut wrong = Vec::new();
        while !stop.load(Ordering::Acquire) {
            let Ok(store) = Database::open(&db) else { continue };
            if store.partitions().unwrap().contains(&date) {
                let p = store.partition(date).unwrap().unwrap();
                let PartitionStatus::Complete(record) = &p.status else {
                    wrong.push(format!("served without a valid record: {:?}", p.status));
                    continue;
                };
                let seen: Vec<(String, u64)> = record.tables.clone();
                if seen != [("quote".to_string(), rows), ("trade".to_string(), rows)] || p.tables != ["quote", "trade"]
                {
                    wrong.push(format!("partition {date} served as {seen:?}, tables {:?}", p.tables));
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        wrong
    })
}

/// Whether a staging directory of `date` exists under `db`.
fn staging_exists(db: &Path, date: Date) -> bool {
    let prefix = format!(".{date}.staging-");
    std::fs::read_dir(db).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

#[test]
fn rdb_killed_during_end_of_day_writes_the_day_once_after_restart() {
    // Small enough for CI; big enough that the write takes a while to kill into.
    const ROWS: usize = 200_000;
    let mut outcomes = Vec::new();
    for seed in [34u64, 10, 7, 4, 6] {
        let (journal, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let tp = start_tp(Some(journal.path()));
        let mut feed = connect(tp.addr);
        let port = free_port();
        let mut child = spawn_rdb(tp.addr, db.path(), port);
        let mut query = None;
        eventually("the RDB process to answer", || {
            query = Connection::connect(&format!("127.0.0.1:{port}"), "").ok();
            query.is_some()
        });
        let mut query = query.unwrap();
        publish_day(&mut feed, ROWS);
        let full = K::Atom(Atom::Long(ROWS as i64));
        eventually("the RDB to hold the day", || {
            query.sync(&K::string("count trade")).unwrap() == full
                && query.sync(&K::string("count quote")).unwrap() == full
        });
        let date = tp_date(&mut feed);
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = watch(db.path().to_path_buf(), date, ROWS as u64, stop.clone());

        // Kill at a moment of the write chosen by the seed: 0-127 ms after the
        // staging directory appears (the whole write takes some 100-200 ms here).
        feed.sync(&K::string(".u.end[]")).unwrap();
        let delay = Duration::from_millis(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57);
        let served = || Database::open(db.path()).unwrap().partitions().unwrap().contains(&date);
        eventually("the end of day write to start", || staging_exists(db.path(), date) || served());
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let was_served = served();
        outcomes.push(format!(
            "seed {seed}: killed {delay:?} in, {}",
            if was_served { "after the publish" } else { "mid-write" }
        ));

        // A leftover staging directory is never a partition.
        let store = Database::open(db.path()).unwrap();
        for leftover in store.survey().unwrap().leftovers {
            assert!(leftover.file_name().unwrap().to_string_lossy().starts_with('.'), "{}", leftover.display());
        }
        if !was_served {
            let survey = store.survey().unwrap();
            assert!(survey.partitions.is_empty(), "no partial partition under the day's name: {survey:?}");
        }

        // The restarted RDB finds the day's journal (the tickerplant has rolled to
        // the next day) and writes the day before serving the new one.
        let mut child = spawn_rdb(tp.addr, db.path(), free_port());
        eventually("the restarted RDB to write the day", served);
        stop.store(true, Ordering::Release);
        let wrong = watcher.join().unwrap();
        assert!(wrong.is_empty(), "seed {seed}: a reader saw part of a day: {:?}", &wrong[..wrong.len().min(3)]);
        assert_day_complete(db.path(), date, ROWS);
        assert!(Database::open(db.path()).unwrap().survey().unwrap().leftovers.is_empty(), "staging cleared");
        child.kill().unwrap();
        child.wait().unwrap();
        tp.stop().unwrap();
    }
    println!("{}", outcomes.join("\n"));
}

/// A trade table as the schema has it: sizes from `sizes`, all of one symbol.
fn trades(sizes: &[i32]) -> Table {
    let n = sizes.len();
    Table::new(vec![
        ("time".into(), Column::from_values(ColumnType::Timespan, (0..n as i64).collect()).unwrap()),
        ("sym".into(), Column::from_symbols(std::iter::repeat_n("IBM", n))),
        ("price".into(), Column::from_values(ColumnType::Float, vec![1.0; n]).unwrap()),
        ("size".into(), Column::from_values(ColumnType::Int, sizes.to_vec()).unwrap()),
        ("cond".into(), Column::from_values(ColumnType::Char, vec![b'A'; n]).unwrap()),
    ])
    .unwrap()
}

#[test]
fn a_second_end_of_day_for_a_written_date_merges_and_a_mismatch_is_refused_whole() {
    let (journal, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tp = start_tp(Some(journal.path()));
    let rdb = rdb::start(rdb_config(tp.addr, db.path())).unwrap();
    let mut feed = connect(tp.addr);
    let date = tp_date(&mut feed);
    // Partition `date` already holds trade (rows 100..103) and a table of its own.
    let store = Database::open(db.path()).unwrap();
    let other = Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![7i64]).unwrap())]).unwrap();
    store.write_table(&TableLocation::Partition(date, "notes".into()), &other, &Default::default()).unwrap();
    daywrite::write_day(&store, date, &[("trade", &trades(&[100, 101, 102]))], &Default::default()).unwrap();
    for i in 0..5 {
        feed.sync(&upd("trade", trade_row("MSFT", 1.0, i))).unwrap();
    }
    feed.sync(&K::string(".u.end[]")).unwrap();
    eventually("the day written", || rdb.state.read().unwrap().written == [date]);
    assert_eq!(store.tables(Some(date)).unwrap(), ["notes", "quote", "trade"], "added beside what was there");
    assert_eq!(ids(&store, date, "trade", "size"), [0, 1, 2, 3, 4, 100, 101, 102], "merged, nothing overwritten");
    let sym = store.read_column(&TableLocation::Partition(date, "trade".into()), "sym").unwrap();
    let expected: Vec<&str> = [["IBM"; 3].as_slice(), ["MSFT"; 5].as_slice()].concat();
    assert_eq!((0..8).map(|i| sym.symbol(i)).collect::<Vec<_>>(), expected, "re-sorted by sym");

    // The next day's partition holds a trade table of other columns (written before
    // tables had one schema: no completion record, served as it is): the whole day
    // is refused (no quote without trade), kept by the RDB, and the partition untouched.
    let next = Date(date.0 + 1);
    let legacy = store.partition_dir(next).join("trade");
    strata_store::write_splayed(&legacy, &other, &strata_store::WriteOptions::default()).unwrap();
    let held = || rdb.state.read().unwrap().row_counts().into_iter().find(|(t, _)| t == "trade").unwrap().1;
    feed.sync(&upd("trade", trade_row("IBM", 2.0, 9))).unwrap();
    feed.sync(&K::string(".u.end[]")).unwrap();
    // End of day runs before anything published after it, so two rows held (one
    // before it at most) means the refused write is over.
    for i in [10, 11] {
        feed.sync(&upd("trade", trade_row("IBM", 2.0, i))).unwrap();
    }
    eventually("the rows after the refused end of day", || held() == 2);
    assert_eq!(rdb.state.read().unwrap().written, [date], "the refused day is not written");
    assert_eq!(store.tables(Some(next)).unwrap(), ["trade"], "nothing added to the refused partition");
    assert_eq!(store.read_table(&TableLocation::Partition(next, "trade".into())).unwrap(), other);
    assert!(!rdb.is_finished(), "the RDB carries on");
}

/// A tmpfs mounted for one test, unmounted when dropped (even on failure).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).status();
        assert!(status.is_ok_and(|s| s.success()), "mount a tmpfs at {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(&self.0).status().unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_serves_nothing_partial_and_the_day_is_written_later() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: mounting a small tmpfs for the HDB root needs root");
        return;
    }
    let (journal, mount) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let disk = Tmpfs::mount(mount.path(), "1m");
    let db = mount.path().join("hdb");
    let tp = start_tp(Some(journal.path()));
    let rdb = rdb::start(rdb_config(tp.addr, &db)).unwrap();
    let mut feed = connect(tp.addr);
    let first = tp_date(&mut feed);
    // About 4 MB of columns: more than the disk holds.
    const ROWS: usize = 100_000;
    publish_day(&mut feed, ROWS);
    feed.sync(&K::string(".u.end[]")).unwrap();
    let held = |t: &str| rdb.state.read().unwrap().row_counts().into_iter().find(|(n, _)| n == t).unwrap().1;
    publish_day(&mut feed, 10);
    eventually("the next day's rows", || held("trade") == 10);
    let store = Database::open(&db).unwrap();
    assert!(rdb.state.read().unwrap().written.is_empty(), "the write failed");
    assert_eq!(store.partitions().unwrap(), [], "nothing partial is served");
    let survey = store.survey().unwrap();
    assert!(survey.partitions.is_empty() && survey.leftovers.is_empty(), "the failed write left nothing: {survey:?}");

    // Room again: the next end of day writes the kept day, then the new one.
    disk.resize("64m");
    feed.sync(&K::string(".u.end[]")).unwrap();
    eventually("both days written", || rdb.state.read().unwrap().written.len() == 2);
    assert_day_complete(&db, first, ROWS);
    assert_day_complete(&db, Date(first.0 + 1), 10);
    drop(feed);
    tp.stop().unwrap();
    drop(disk);
}
