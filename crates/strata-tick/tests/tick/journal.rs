//! No tick lost: a flipped bit inside a journal, a forced end of day before a
//! SIGKILL, and a journal on a full disk, each with real files and processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strata_ipc::{Atom, Connection, K, Vector};
use strata_tick::journal::{self, MAGIC, RECORD_HEADER, Recovery, WriteMode};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::tickerplant;

use super::common::*;
use super::crash::{free_port, newest_journal, spawn_tickerplant, tp_command, wait_for};

/// The `size` column of the RDB's trade table: the tests number updates by size.
fn rdb_sizes(tp: impl ToString, db: &Path) -> (u64, Vec<i32>) {
    let rdb = rdb::start(RdbConfig { listen: None, ..rdb_config(tp, db) }).unwrap();
    let mut state = rdb.state.write().unwrap();
    let replayed = state.replayed;
    let t = state.table("trade").unwrap();
    let Some(K::Vector(Vector::Int(sizes), _)) = t.column("size") else { panic!() };
    (replayed, sizes.clone())
}

/// Where each record of the journal at `path` starts.
fn record_offsets(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    let mut offsets = Vec::new();
    let mut at = MAGIC.len();
    while at + RECORD_HEADER <= bytes.len() {
        offsets.push(at as u64);
        at += RECORD_HEADER + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    }
    offsets
}

fn long(conn: &mut Connection, request: &str) -> i64 {
    match conn.sync(&K::string(request)).unwrap() {
        K::Atom(Atom::Long(v)) => v,
        other => panic!("{request}: {other:?}"),
    }
}

#[test]
fn a_flipped_bit_mid_journal_is_refused_and_with_skip_costs_only_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn_tickerplant(port, dir.path());
    let mut feed = wait_for(port);
    for i in 0..1000 {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).unwrap();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let path = newest_journal(dir.path());
    let offsets = record_offsets(&path);
    assert_eq!(offsets.len(), 1000);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offsets[500] as usize + RECORD_HEADER + 20] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();

    // By default the tickerplant refuses to start, naming record, offset and what follows.
    let mut refused = tp_command(port, dir.path(), Recovery::Refuse).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = refused.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            refused.kill().unwrap();
            refused.wait().unwrap();
            panic!("the tickerplant started on a damaged journal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut refused.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    let expected = format!("journal record 500 at byte {}", offsets[500]);
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("and 499 valid records follow it"), "{stderr}");
    assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "refusing changes nothing");

    // With skip every valid record survives, and the damaged one is kept aside.
    let mut child = tp_command(port, dir.path(), Recovery::Skip).spawn().unwrap();
    let mut client = wait_for(port);
    assert_eq!(long(&mut client, ".u.i"), 999);
    let side = PathBuf::from(format!("{}.damaged-{}", path.display(), offsets[500]));
    assert_eq!(std::fs::read(&side).unwrap(), &bytes[offsets[500] as usize..offsets[501] as usize]);
    let (replayed, sizes) = rdb_sizes(format!("127.0.0.1:{port}"), &dir.path().join("hdb"));
    assert_eq!(replayed, 999);
    assert_eq!(sizes, (0..1000).filter(|&i| i != 500).collect::<Vec<i32>>());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_forced_end_of_day_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn_tickerplant(port, dir.path());
    let mut feed = wait_for(port);
    for i in 0..100 {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).unwrap();
    }
    let K::Atom(Atom::Date(today)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    feed.sync(&K::string(".u.end[]")).unwrap();
    for i in 100..150 {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).unwrap();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let mut child = spawn_tickerplant(port, dir.path());
    let mut client = wait_for(port);
    assert_eq!(client.sync(&K::string(".u.d")).unwrap(), K::Atom(Atom::Date(today + 1)), "the day it rolled to");
    assert_eq!(long(&mut client, ".u.i"), 50);
    let (replayed, sizes) = rdb_sizes(format!("127.0.0.1:{port}"), &dir.path().join("hdb"));
    assert_eq!(replayed, 50);
    assert_eq!(sizes, (100..150).collect::<Vec<i32>>(), "rows 100-149 once, nothing of the day before");
    assert_eq!(journal::journal_dates(dir.path(), "sym").unwrap().len(), 2, "the rolled journal stays");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A tmpfs mounted for a test and unmounted (lazily, so a journal still open does
/// not keep it) however the test ends.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's syntax) at `dir`, or says why it cannot.
    fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        // SAFETY: a system call without arguments that reads no memory of ours.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not running as root, so no tmpfs can be mounted".into());
        }
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system holding `path` by writing `path` until it is full.
fn fill(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 4096];
    while file.write_all(&chunk).is_ok() {}
}

/// The sizes of the published `(`upd; `trade; table)` messages `sub` receives up to
/// and including the one whose size is `last`.
fn published_sizes(sub: &mut Connection, last: i32) -> Vec<i32> {
    let mut sizes = Vec::new();
    while sizes.last() != Some(&last) {
        let (_, message) = sub.receive().unwrap().expect("the tickerplant is up");
        let K::List(items) = message else { panic!("{message:?}") };
        let K::Table(t) = &items[2] else { panic!("{items:?}") };
        let Some(K::Vector(Vector::Int(s), _)) = t.column("size") else { panic!() };
        sizes.extend(s);
    }
    sizes
}

/// Sync updates refused before the test makes room again.
const REFUSALS: usize = 20;

/// A journal on a full disk: updates are refused whole (sync callers told, async
/// ones counted), subscribers see exactly what the journal holds, and once there is
/// room again retried updates go in once.
fn full_disk(mode: WriteMode) {
    let dir = tempfile::tempdir().unwrap();
    let mount = match Tmpfs::mount(dir.path(), "1m") {
        Ok(mount) => mount,
        Err(reason) => {
            println!("skipped: {reason}");
            return;
        }
    };
    let mut config = config(Some(&mount.0.join("journal")));
    config.write_mode = mode;
    let tp = tickerplant::start(config).unwrap();
    let mut sub = connect(tp.addr);
    sub.socket().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    sub.sync(&K::string(".u.sub[`trade;`]")).unwrap();
    let mut feed = connect(tp.addr);
    fill(&mount.0.join("filler"));

    let (mut acked, mut refused) = (Vec::new(), Vec::new());
    let mut size = 0;
    while refused.len() < REFUSALS {
        match feed.sync(&upd("trade", trade_row("IBM", 1.0, size))) {
            Ok(_) => acked.push(size),
            Err(e) => {
                assert!(e.to_string().contains("journal write failed"), "{e}");
                refused.push(size);
            }
        }
        size += 1;
    }
    // Async updates meet the same fate, counted.
    for k in 0..5 {
        feed.send_async(&upd("trade", trade_row("IBM", 1.0, 1_000_000 + k))).unwrap();
    }
    assert_eq!(long(&mut feed, ".u.i"), acked.len() as i64);
    assert_eq!(long(&mut feed, ".u.j"), acked.len() as i64);
    assert_eq!(counter(&mut feed, "journalRefused"), refused.len() as i64 + 5);
    let path = newest_journal(&mount.0.join("journal"));
    assert_eq!(journal::scan(&path).unwrap().records, acked.len() as u64, "the file holds what was acknowledged");

    // Room again: the feed retries what was refused, and the tickerplant takes it.
    std::fs::remove_file(mount.0.join("filler")).unwrap();
    for &size in &refused {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, size))).unwrap();
    }
    const MARKER: i32 = -1;
    feed.sync(&upd("trade", trade_row("IBM", 1.0, MARKER))).unwrap();
    let expected: Vec<i32> = acked.iter().chain(&refused).copied().chain([MARKER]).collect();
    assert_eq!(long(&mut feed, ".u.i"), expected.len() as i64);
    assert_eq!(long(&mut feed, ".u.j"), expected.len() as i64);
    assert_eq!(journal::scan(&path).unwrap().records, expected.len() as u64);
    assert_eq!(
        published_sizes(&mut sub, MARKER),
        expected,
        "the subscriber saw every acknowledged update once, in order, and nothing refused"
    );
    let hdb = tempfile::tempdir().unwrap();
    let (replayed, sizes) = rdb_sizes(tp.addr, hdb.path());
    assert_eq!(replayed, expected.len() as u64);
    assert_eq!(sizes, expected, "the journal holds every acknowledged update once, in order, and nothing refused");
    tp.stop().unwrap();
}

#[test]
fn a_full_disk_refuses_updates_whole_in_group_commit() {
    full_disk(WriteMode::Group);
}

#[test]
fn a_full_disk_refuses_updates_whole_writing_per_update() {
    full_disk(WriteMode::PerUpdate);
}
