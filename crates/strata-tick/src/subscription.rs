//! Subscribing to a tickerplant (or a chained one), and coming back after it goes
//! away: the one request that subscribes to every table and fetches the journal
//! position (kdb+'s `(.u.sub[`;`];`.u `i`L)`), its answer, the day a journal holds,
//! the backoff between attempts, and a stop signal that also wakes a blocked read.
//! The RDB and the chained tickerplant both follow a tickerplant this way.
//!
//! The answer to the request follows exactly the updates it counts (the tickerplant
//! closes its batch first), so a subscriber that replays `.u.i` records of `.u.L`
//! and then applies what is published sees every update once.

use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use strata_ipc::{Atom, Connection, K};
use strata_store::Date;

use crate::error::TickError;
use crate::journal::journal_date;
use crate::schema::Schema;

/// The request: subscribe to every table for every sym, and say how many journal
/// records were published before this answer and where the journal is.
pub const SUBSCRIBE: &str = "(.u.sub[`;`];`.u `i`L)";

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the answer to [`SUBSCRIBE`] may take: a tickerplant answers at its next
/// batch, so a process that accepts connections but does not answer (stopped, or
/// wedged) is given up on and tried again rather than waited for forever.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The first wait after a tickerplant goes away: a restart takes well under a second.
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest wait between attempts: a long outage costs one connection every 5 s.
const LAST_RETRY: Duration = Duration::from_secs(5);

/// What a tickerplant answered to [`SUBSCRIBE`].
#[derive(Clone, Debug)]
pub struct Subscription {
    /// The tables, as the empty tables of the `.u.sub` answer describe them.
    pub schema: Schema,
    /// `.u.i`: journal records whose updates were published before the answer.
    pub records: u64,
    /// `.u.L`: the journal, `None` when the tickerplant keeps none.
    pub journal: Option<PathBuf>,
}

impl Subscription {
    /// `((table; empty)...; (i; L))` into the schema, the record count and the journal.
    pub fn parse(answer: K) -> Result<Subscription, TickError> {
        let bad = |what: &str| TickError::Other(format!("unexpected answer to {SUBSCRIBE}: {what}"));
        let K::List(mut parts) = answer else { return Err(bad("not a list")) };
        if parts.len() != 2 {
            return Err(bad("expected two items"));
        }
        let position = parts.pop().expect("2");
        let subs = parts.pop().expect("2");
        let K::List(subs) = subs else { return Err(bad("subscriptions are not a list")) };
        let mut tables = Vec::new();
        for sub in subs {
            match sub {
                K::List(pair) if pair.len() == 2 => {
                    let mut pair = pair.into_iter();
                    let (name, empty) = (pair.next().expect("2"), pair.next().expect("2"));
                    let (Some(name), K::Table(empty)) = (name.as_text().map(str::to_string), empty) else {
                        return Err(bad("a subscription is not (table; empty table)"));
                    };
                    tables.push((name, empty));
                }
                _ => return Err(bad("a subscription is not (table; empty table)")),
            }
        }
        let schema = Schema::from_tables("sym", &tables).map_err(|e| bad(&e))?;
        let K::List(position) = position else { return Err(bad("(i; L) is not a list")) };
        let records = match position.first() {
            Some(K::Atom(Atom::Long(i))) => (*i).max(0) as u64,
            Some(K::Atom(Atom::Int(i))) => (*i).max(0) as u64,
            _ => return Err(bad(".u.i is not a number")),
        };
        let path = position.get(1).and_then(K::as_text).map(|l| l.trim_start_matches(':')).filter(|l| !l.is_empty());
        Ok(Subscription { schema, records, journal: path.map(PathBuf::from) })
    }

    /// The day the tickerplant's journal holds (`None` without a journal).
    pub fn day(&self) -> Option<Date> {
        self.journal.as_deref().and_then(journal_date)
    }

    /// Why this answer cannot continue tables of `held` (`None`: it can): a
    /// subscriber's tables keep the schema they started with.
    pub fn schema_change(&self, held: &Schema) -> Option<String> {
        if self.schema.tables == held.tables {
            return None;
        }
        let describe = |s: &Schema| {
            let tables = s.tables.iter().map(|t| {
                let columns = t.columns.iter().zip(&t.kinds).map(|(c, k)| format!("{c}:{}", k.name()));
                format!("{}({})", t.name, columns.collect::<Vec<_>>().join(" "))
            });
            tables.collect::<Vec<_>>().join(", ")
        };
        Some(format!("the tables changed: held {}; the tickerplant has {}", describe(held), describe(&self.schema)))
    }
}

/// Connects to the tickerplant at `addr` and sends [`SUBSCRIBE`]; the connection
/// then carries what the tickerplant publishes.
pub fn subscribe(addr: &str, user_password: &str) -> Result<(Connection, Subscription), TickError> {
    let mut tp = Connection::connect_timeout(addr, user_password, CONNECT_TIMEOUT)?;
    let timeout =
        |tp: &Connection, t| tp.socket().set_read_timeout(t).map_err(|e| TickError::Other(format!("{addr}: {e}")));
    timeout(&tp, Some(ANSWER_TIMEOUT))?;
    let answer = tp.sync(&K::string(SUBSCRIBE))?;
    timeout(&tp, None)?;
    Ok((tp, Subscription::parse(answer)?))
}

/// Waits between attempts to reach a tickerplant: [`FIRST_RETRY`], doubling up to
/// [`LAST_RETRY`], forever.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
    attempts: u64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { next: FIRST_RETRY, attempts: 0 }
    }
}

impl Backoff {
    /// Waits before the next attempt; `false` when `stop` was raised meanwhile.
    pub fn wait(&mut self, stop: &Stop) -> bool {
        let waited = stop.sleep(self.next);
        self.next = (self.next * 2).min(LAST_RETRY);
        self.attempts += 1;
        waited
    }

    /// Attempts so far.
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Whether the latest attempt's failure deserves a log line: the 1st, 2nd, 4th,
    /// 8th... so a long outage logs a few lines an hour, not one every 5 s.
    pub fn worth_logging(&self) -> bool {
        self.attempts.is_power_of_two()
    }
}

/// Tells a follower of a tickerplant to stop: raised once, it ends waits between
/// attempts and shuts the watched connection down, waking a blocked read.
#[derive(Clone, Default)]
pub struct Stop(Arc<(Mutex<Watched>, Condvar)>);

#[derive(Default)]
struct Watched {
    stopped: bool,
    socket: Option<TcpStream>,
}

impl Stop {
    /// Raises the signal.
    pub fn stop(&self) {
        let (lock, wake) = &*self.0;
        let mut watched = lock.lock().unwrap_or_else(|p| p.into_inner());
        watched.stopped = true;
        if let Some(socket) = watched.socket.take() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        wake.notify_all();
    }

    /// Whether the signal was raised.
    pub fn is_stopped(&self) -> bool {
        self.0.0.lock().unwrap_or_else(|p| p.into_inner()).stopped
    }

    /// Makes `socket` the connection [`Stop::stop`] shuts down (at once, if it was
    /// raised already).
    pub fn watch(&self, socket: &TcpStream) {
        let mut watched = self.0.0.lock().unwrap_or_else(|p| p.into_inner());
        if watched.stopped {
            let _ = socket.shutdown(Shutdown::Both);
        } else {
            watched.socket = socket.try_clone().ok();
        }
    }

    /// Sleeps for `period` unless the signal is raised first; whether it was not.
    fn sleep(&self, period: Duration) -> bool {
        let (lock, wake) = &*self.0;
        let watched = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (watched, _) = wake.wait_timeout_while(watched, period, |w| !w.stopped).unwrap_or_else(|p| p.into_inner());
        !watched.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_bound_and_a_stop_ends_it() {
        let mut backoff = Backoff::default();
        let stop = Stop::default();
        stop.stop();
        assert!(stop.is_stopped());
        let mut logged = Vec::new();
        for _ in 0..8 {
            assert!(!backoff.wait(&stop), "a raised stop ends the wait at once");
            logged.push(backoff.worth_logging());
        }
        assert_eq!(backoff.attempts(), 8);
        assert_eq!(backoff.next, LAST_RETRY, "100 ms doubled 8 times is past the bound");
        assert_eq!(logged, [true, true, false, true, false, false, false, true]);
    }
}
