//! Readers during the chaos run: a client that asks the HDB, over and over while
//! processes are killed and days are written, for every day's row count and sum of
//! row ids. A written day never changes, so a day answered with other figures than
//! the first time it was seen is a mixed answer (part of a write read as a whole);
//! an error reply is a failed answer. A refused connection (the HDB is down) is
//! neither: the reader tries again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use strata_ipc::{Connection, IpcError, K, Vector};

/// The query each reader asks.
const DAYS: &str = "SELECT date, count(*) AS n, sum(size) AS s FROM trade GROUP BY date";

/// What the readers saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReaderReport {
    /// Answers received.
    pub answers: u64,
    /// Answers in which a day's figures differed from the first seen for it.
    pub mixed: u64,
    /// Error replies (not connection failures).
    pub failed: u64,
    /// The first few mixed or failed answers, described.
    pub samples: Vec<String>,
}

/// A reader thread, stopped by [`Readers::finish`].
pub(crate) struct Readers {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ReaderReport>,
}

impl Readers {
    /// Starts asking the HDB at `addr`.
    pub(crate) fn start(addr: String) -> Readers {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || read_until(&addr, &stopping));
        Readers { stop, thread }
    }

    /// Stops the reader; what it saw.
    pub(crate) fn finish(self) -> ReaderReport {
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap_or_default()
    }
}

fn read_until(addr: &str, stop: &AtomicBool) -> ReaderReport {
    let mut report = ReaderReport::default();
    let mut seen: HashMap<i32, (i64, i64)> = HashMap::new();
    let mut conn: Option<Connection> = None;
    while !stop.load(Ordering::Acquire) {
        let Some(hdb) = conn.as_mut() else {
            conn = Connection::connect_timeout(addr, "", Duration::from_secs(2)).ok();
            if conn.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        };
        match hdb.sync(&K::string(DAYS)) {
            Ok(K::Table(table)) => {
                report.answers += 1;
                let (Some(K::Vector(Vector::Date(dates), _)), Some(K::Vector(Vector::Long(n), _)), Some(s)) =
                    (table.column("date"), table.column("n"), table.column("s"))
                else {
                    continue;
                };
                let sums: Vec<i64> = match s {
                    K::Vector(Vector::Long(s), _) => s.clone(),
                    _ => continue,
                };
                for ((date, n), s) in dates.iter().zip(n).zip(sums) {
                    let first = *seen.entry(*date).or_insert((*n, s));
                    if first != (*n, s) {
                        report.mixed += 1;
                        if report.samples.len() < 5 {
                            report.samples.push(format!("day {date}: first {first:?}, now {:?}", (*n, s)));
                        }
                    }
                }
            }
            // Before the first day is written there is no table yet.
            Ok(K::Error(e)) | Err(IpcError::Remote(e)) if e.contains("not found") => {}
            Ok(K::Error(e)) | Err(IpcError::Remote(e)) => {
                report.failed += 1;
                if report.samples.len() < 5 {
                    report.samples.push(e);
                }
            }
            Ok(_) => {}
            Err(_) => conn = None,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    report
}
