//! The chaos run's feed: sync `.u.upd` calls at a steady rate, each update's rows
//! numbered with unique ids in the `size` column, and a ledger of what the
//! tickerplant answered to each, which the audit holds the stored rows against.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use strata_ipc::{Connection, K, Vector};

/// How long the feed waits for a tickerplant to accept a connection, and then for
/// an answer: past it the update counts as unanswered and the feed reconnects.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The symbols rows rotate through.
const SYMBOLS: [&str; 4] = ["AAPL", "MSFT", "IBM", "GOOG"];

/// What the tickerplant said to one update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Acknowledged: it must be stored exactly once.
    Acknowledged,
    /// Refused with an error: it must not be stored at all.
    Refused,
    /// No answer (the connection broke): stored once or not at all.
    Unanswered,
}

/// Every update the feed sent, by update number (rows `n * rows .. (n + 1) * rows`).
pub(crate) struct Ledger {
    /// Rows per update.
    pub(crate) rows: usize,
    /// The answer to each update, in sending order.
    pub(crate) answers: Vec<Answer>,
    /// The first few refusal texts, for the report.
    pub(crate) refusals: Vec<String>,
}

impl Ledger {
    /// Updates that got `answer`.
    pub(crate) fn count(&self, answer: Answer) -> u64 {
        self.answers.iter().filter(|&&a| a == answer).count() as u64
    }
}

/// A feed running on its own thread until stopped.
pub(crate) struct Feed {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<Ledger>,
}

impl Feed {
    /// Starts sending `rate` updates a second of `rows` rows each to the
    /// tickerplant at `addr`, reconnecting whenever it goes away.
    pub(crate) fn start(addr: String, rate: f64, rows: usize) -> Feed {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicU64::new(0));
        let (stopping, counter) = (stop.clone(), acknowledged.clone());
        let thread = std::thread::spawn(move || send(&addr, rate, rows, &stopping, &counter));
        Feed { stop, acknowledged, thread }
    }

    /// Updates acknowledged so far.
    pub(crate) fn acknowledged(&self) -> u64 {
        self.acknowledged.load(Ordering::Relaxed)
    }

    /// Stops the feed after the update in flight and returns its ledger.
    pub(crate) fn finish(self) -> Ledger {
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap_or_else(|_| Ledger { rows: 0, answers: Vec::new(), refusals: Vec::new() })
    }
}

fn send(addr: &str, rate: f64, rows: usize, stop: &AtomicBool, acknowledged: &AtomicU64) -> Ledger {
    let mut ledger = Ledger { rows, answers: Vec::new(), refusals: Vec::new() };
    let period = Duration::from_secs_f64(1.0 / rate.max(1e-3));
    let mut due = Instant::now();
    let mut conn: Option<Connection> = None;
    while !stop.load(Ordering::Acquire) {
        let Some(tp) = conn.as_mut() else {
            conn = connect(addr);
            if conn.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            continue;
        };
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if now - due > Duration::from_secs(1) {
            due = now; // far behind (an outage): no burst to catch up
        }
        due += period;
        let first_id = (ledger.answers.len() * rows) as i64;
        let answer = match tp.sync(&update(first_id, rows)) {
            Ok(K::Error(text)) => {
                if ledger.refusals.len() < 5 {
                    ledger.refusals.push(text);
                }
                Answer::Refused
            }
            Ok(_) => {
                acknowledged.fetch_add(1, Ordering::Relaxed);
                Answer::Acknowledged
            }
            Err(_) => {
                conn = None;
                Answer::Unanswered
            }
        };
        ledger.answers.push(answer);
    }
    ledger
}

fn connect(addr: &str) -> Option<Connection> {
    let conn = Connection::connect_timeout(addr, "", CONNECT_TIMEOUT).ok()?;
    conn.socket().set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    Some(conn)
}

/// `.u.upd[`trade; (sym; price; size)]` with rows `first_id ..` (the tickerplant
/// adds the time column).
fn update(first_id: i64, rows: usize) -> K {
    let ids: Vec<i64> = (first_id..first_id + rows as i64).collect();
    let syms = ids.iter().map(|id| SYMBOLS[id.unsigned_abs() as usize % SYMBOLS.len()].to_string()).collect();
    let prices = ids.iter().map(|id| 100.0 + (id % 1000) as f64 / 100.0).collect();
    let columns = vec![K::vector(Vector::Symbol(syms)), K::vector(Vector::Float(prices)), K::vector(Vector::Long(ids))];
    K::List(vec![K::symbol(".u.upd"), K::symbol("trade"), K::List(columns)])
}
