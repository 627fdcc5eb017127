//! The real-time database: replays today's journal, subscribes to a tickerplant,
//! holds today's tables in memory, answers queries (SQL included), and at end of day
//! writes a date partition (sorted by sym then time, parted on sym, compressed by the
//! table spec), empties its tables and tells HDBs to reload, as kdb+tick's `r.q` does.
//!
//! Published updates are read many per socket read and copied straight into column
//! builders ([`crate::livetable`]), under one lock per read.
//!
//! When the tickerplant goes away the RDB keeps answering queries on what it holds
//! and reconnects with backoff ([`crate::subscription`]); on resuming it holds
//! exactly what an RDB started then would: today's tables are rebuilt from the
//! journal up to `.u.i` (the old ones answering queries meanwhile) and swapped in, and
//! a day the tickerplant ended meanwhile is first finished from its journal and
//! written. A table whose end-of-day write failed stays queryable as
//! [`unwritten_name`] until a later end of day writes it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strata_ipc::arrow::table_from_store;
use strata_ipc::frame::plain_body;
use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::view::{View, view};
use strata_ipc::{Atom, Connection, Credentials, DEFAULT_MAX_MESSAGE, IpcError, K, Table};
use strata_query::{Cancel, Engine, MemoryTable};
use strata_store::{Database, Date, fault};

use crate::clock::{self, Clock};
use crate::counters::{Counters, Latency, TIMED_EVERY, counters_dict};
use crate::daywrite::{self, TableSpecs, table_specs};
use crate::error::TickError;
use crate::journal;
use crate::journal::journal_of;
use crate::livetable::LiveTable;
use crate::log;
use crate::query::Queries;
use crate::schema::{Schema, TableSchema};
use crate::server::{Server, ServerConfig};
use crate::service;
use crate::sql::QueryLimits;
use crate::subscription::{Backoff, Stop, Subscription, subscribe};
use crate::symbols::SymbolTable;
use crate::update::one_pass::{Stamp, read_update};
use crate::update::{WireColumns, update_message};

/// How an RDB runs.
#[derive(Clone, Debug)]
pub struct RdbConfig {
    /// The tickerplant (or a chained one), `host:port`.
    pub tp: String,
    /// `user:password` for the tickerplant (may be empty).
    pub user_password: String,
    /// The HDB root end of day writes into.
    pub db: PathBuf,
    /// Where to answer queries (`None`: no query port).
    pub listen: Option<String>,
    /// Users allowed to query.
    pub credentials: Option<Credentials>,
    /// TLS on the port it serves (`None`: plain TCP only).
    pub tls: Option<strata_ipc::tls::ServerTls>,
    /// HDBs (`host:port`) to tell to reload after end of day.
    pub hdbs: Vec<String>,
    /// Compression: a table spec file for every table, or a directory holding
    /// `<table>.toml` per table; `None` uses the database default.
    pub table_spec: Option<PathBuf>,
    /// What one query may take: memory, time, and how many run at once.
    pub queries: QueryLimits,
}

/// The RDB's tables and figures, shared by the subscriber and the query thread.
pub struct RdbState {
    tables: Vec<LiveTable>,
    /// Per table, the update being checked (kept to reuse its buffers).
    scratch: Vec<WireColumns>,
    symbols: SymbolTable,
    counters: Counters,
    /// Journal records replayed at start, or at the latest resume.
    pub replayed: u64,
    /// Times the RDB resumed after its tickerplant went away.
    pub resumed: u64,
    /// Tables end of day could not write, queryable by [`unwritten_name`].
    unwritten: Vec<(String, strata_store::Table)>,
    /// Bumped whenever `unwritten` changes, so SQL registers the change.
    unwritten_version: u64,
    /// Publish-to-receipt latency, when the tickerplant stamps its messages.
    pub rdbrecv: Latency,
    /// Insert time per update.
    pub rdbupd: Latency,
    /// Age at receipt of each update's first row, from its `time` column (a UTC
    /// timespan, as feeds that stamp their rows send): the feed-to-RDB latency.
    pub feed_to_rdb: Latency,
    /// Dates whose every table end of day has written so far (a day whose write
    /// failed joins when a later end of day writes it).
    pub written: Vec<Date>,
}

impl RdbState {
    fn new(schema: Schema) -> RdbState {
        RdbState {
            scratch: schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect(),
            tables: schema.tables.into_iter().map(LiveTable::new).collect(),
            symbols: SymbolTable::default(),
            counters: Counters::default(),
            replayed: 0,
            resumed: 0,
            unwritten: Vec::new(),
            unwritten_version: 0,
            rdbrecv: Latency::default(),
            rdbupd: Latency::default(),
            feed_to_rdb: Latency::default(),
            written: Vec::new(),
        }
    }

    fn position(&self, name: &str) -> Result<usize, String> {
        self.tables.iter().position(|t| t.schema().name == name).ok_or_else(|| {
            let names: Vec<&str> = self.tables.iter().map(|t| t.schema().name.as_str()).collect();
            format!("{name}: no such table; tables: {}", names.join(" "))
        })
    }

    /// `upd[t; x]`: appends the rows of `data` (a row, columns or a table) to table
    /// `t`; returns the rows and the first row's time.
    fn upd(&mut self, table: &str, data: &View<'_>, now_nanos: i64) -> Result<(usize, i64), String> {
        let at = self.position(table).map_err(|e| format!("upd: {e}"))?;
        self.scratch[at].append_update(self.tables[at].schema(), data, now_nanos)?;
        Ok(self.insert(at))
    }

    /// `upd` for a message of the common shapes ([`read_update`]), read in one pass;
    /// `None` leaves the message to the general path. Returns the rows, the first
    /// row's time and the publish time the message carries.
    fn upd_one_pass(&mut self, body: &[u8], now_nanos: i64) -> Option<(usize, i64, Option<i64>)> {
        let schemas = self.tables.iter().map(LiveTable::schema);
        let read = read_update(body, schemas, &mut self.scratch, now_nanos, Stamp::Accepted)?;
        let (rows, first_time) = self.insert(read.table);
        Some((rows, first_time, read.stamp))
    }

    /// Inserts the rows held in table `at`'s scratch columns, leaving them empty;
    /// returns the rows and the first row's time.
    fn insert(&mut self, at: usize) -> (usize, i64) {
        let scratch = &mut self.scratch[at];
        let rows = scratch.rows();
        let first_time = scratch.column(0).get(..8).map_or(0, |t| i64::from_le_bytes(t.try_into().expect("8 bytes")));
        self.tables[at].append(scratch, &mut self.symbols);
        scratch.clear();
        self.counters.updates += 1;
        self.counters.rows += rows as u64;
        (rows, first_time)
    }

    /// Rows held per table.
    pub fn row_counts(&self) -> Vec<(String, usize)> {
        self.tables.iter().map(|t| (t.schema().name.clone(), t.len())).collect()
    }

    /// Names of the tables end of day could not write ([`unwritten_name`]).
    pub fn unwritten_names(&self) -> Vec<String> {
        self.unwritten.iter().map(|(name, _)| name.clone()).collect()
    }

    /// Table `name`'s rows as a q table (today's, or one end of day could not write).
    pub fn table(&mut self, name: &str) -> Result<Table, String> {
        if let Some((_, kept)) = self.unwritten.iter().find(|(n, _)| n == name) {
            return Ok(table_from_store(kept));
        }
        let at = self.position(name)?;
        Ok(table_from_store(&self.tables[at].to_table(&mut self.symbols)))
    }

    /// Rows of table `name` (today's, or one end of day could not write).
    fn count(&self, name: &str) -> Result<usize, String> {
        if let Some((_, kept)) = self.unwritten.iter().find(|(n, _)| n == name) {
            return Ok(kept.len());
        }
        Ok(self.tables[self.position(name)?].len())
    }

    /// Keeps the tables end of day could not write queryable (and out of today's).
    fn show_unwritten(&mut self, unwritten: &[Unwritten]) {
        self.unwritten = unwritten.iter().map(|t| (unwritten_name(&t.name, t.date), t.table.clone())).collect();
        self.unwritten_version += 1;
    }

    /// Takes the tables of `fresh` (rebuilt from the journal) in place of these;
    /// the figures carry on.
    fn adopt(&mut self, fresh: RdbState) {
        self.tables = fresh.tables;
        self.scratch = fresh.scratch;
        self.symbols = fresh.symbols;
        self.replayed = fresh.replayed;
    }

    /// Seals every table for SQL; the providers the engine must (re)register.
    fn seal(&mut self) -> Vec<(String, Arc<MemoryTable>)> {
        let mut fresh = Vec::new();
        for table in &mut self.tables {
            table.seal(&mut self.symbols);
            if let Some(provider) = table.new_provider() {
                fresh.push((table.schema().name.clone(), provider));
            }
        }
        fresh
    }

    fn counters(&self) -> K {
        let held: u64 = self.tables.iter().map(|t| t.len() as u64).sum();
        let unwritten: u64 = self.unwritten.iter().map(|(_, t)| t.len() as u64).sum();
        let gauges = [
            ("replayed", self.replayed),
            ("resumed", self.resumed),
            ("unwrittenRows", unwritten),
            ("rowsHeld", held),
            ("symbols", self.symbols.len() as u64),
            ("partitionsWritten", self.written.len() as u64),
        ];
        let hops = [("rdbrecv", &self.rdbrecv), ("rdbupd", &self.rdbupd), ("feed2rdb", &self.feed_to_rdb)];
        counters_dict(&self.counters, &gauges, &hops)
    }
}

/// The name a table of `date` that end of day could not write is queried by, while
/// the RDB keeps it: `unwritten_trade_20261125` (today's table keeps its own name).
pub fn unwritten_name(table: &str, date: Date) -> String {
    let (y, m, d) = date.ymd();
    format!("unwritten_{table}_{y:04}{m:02}{d:02}")
}

/// The RDB's answers: q's built-in forms under the state's lock, SQL through an
/// engine over the tables' providers (sealed first, so SQL sees every row received).
/// Several query threads use it at once.
struct RdbQueries {
    state: Arc<RwLock<RdbState>>,
    engine: Engine,
    /// The unwritten tables registered with the engine, as of which version.
    unwritten: Mutex<(u64, Vec<String>)>,
}

impl RdbQueries {
    fn write(&self) -> Result<std::sync::RwLockWriteGuard<'_, RdbState>, String> {
        self.state.write().map_err(|_| "the RDB's tables are unavailable".to_string())
    }

    /// Registers with the engine every provider that changed since the last
    /// statement: today's tables (sealed, so SQL sees every row received) and the
    /// tables an end of day could not write.
    fn register_changes(&self) -> Result<(), String> {
        let mut state = self.write()?;
        let fresh = state.seal();
        let version = state.unwritten_version;
        let mut registered = self.unwritten.lock().map_err(|_| "the RDB's SQL tables are unavailable".to_string())?;
        let kept = (version != registered.0).then(|| state.unwritten.clone());
        drop(state);
        for (name, provider) in fresh {
            self.engine.register_memory_table(&name, provider).map_err(|e| e.to_string())?;
        }
        if let Some(kept) = kept {
            for name in registered.1.drain(..) {
                self.engine.deregister_table(&name).map_err(|e| e.to_string())?;
            }
            for (name, table) in kept {
                let provider = MemoryTable::from_table(&table).map_err(|e| e.to_string())?;
                self.engine.register_memory_table(&name, Arc::new(provider)).map_err(|e| e.to_string())?;
                registered.1.push(name);
            }
            registered.0 = version;
        }
        Ok(())
    }
}

impl Queries for RdbQueries {
    fn table_names(&self) -> Result<Vec<String>, String> {
        let state = self.write()?;
        let mut names: Vec<String> = state.row_counts().into_iter().map(|(n, _)| n).collect();
        names.extend(state.unwritten_names());
        names.sort();
        Ok(names)
    }

    fn table(&self, name: &str) -> Result<Table, String> {
        self.write()?.table(name)
    }

    fn count(&self, name: &str) -> Result<usize, String> {
        self.write()?.count(name)
    }

    fn counters(&self) -> Result<K, String> {
        Ok(self.write()?.counters())
    }

    fn sql(&self, statement: &str, cancel: &Cancel) -> Result<K, String> {
        self.register_changes()?;
        crate::sql::run(&self.engine, statement, cancel)
    }
}

/// A running RDB. Dropping the handle stops it following its tickerplant.
pub struct RdbHandle {
    /// Where it answers queries, if it does.
    pub addr: Option<SocketAddr>,
    /// Its tables.
    pub state: Arc<RwLock<RdbState>>,
    stop: Stop,
    subscriber: Option<JoinHandle<Result<(), TickError>>>,
}

impl RdbHandle {
    /// Whether the RDB no longer follows its tickerplant: stopped, or failed (see
    /// [`RdbHandle::join`]).
    pub fn is_finished(&self) -> bool {
        self.subscriber.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits while the RDB follows its tickerplant, which is until it is stopped or
    /// its tables' lock is poisoned: it reconnects whenever the tickerplant goes
    /// away. The query port stays open while the process lives.
    pub fn join(mut self) -> Result<(), TickError> {
        let Some(subscriber) = self.subscriber.take() else { return Ok(()) };
        subscriber.join().unwrap_or_else(|_| Err(TickError::Other("the RDB thread panicked".into())))
    }

    /// Stops following the tickerplant (closing the connection, or ending a wait to
    /// reconnect) and waits for that.
    pub fn stop(self) -> Result<(), TickError> {
        self.stop.stop();
        self.join()
    }
}

impl Drop for RdbHandle {
    fn drop(&mut self) {
        if self.subscriber.is_some() {
            self.stop.stop();
        }
    }
}

/// Starts an RDB: subscribes to every table and fetches the journal position in one
/// request (so nothing is missed or seen twice), replays that many journal records,
/// then applies published updates on its own thread, reconnecting whenever the
/// tickerplant goes away.
pub fn start(config: RdbConfig) -> Result<RdbHandle, TickError> {
    let (tp, subscription) = subscribe(&config.tp, &config.user_password)?;
    let held = Held::of(&subscription);
    let Subscription { schema, records: count, journal: path } = subscription;
    // A spec that cannot apply is refused now, not at end of day with the day in hand.
    let mut days = DayEnds {
        specs: table_specs(config.table_spec.as_deref(), &schema.tables)?,
        schemas: schema.tables.clone(),
        unwritten: Vec::new(),
    };
    log::line("rdb", &format!("subscribed to {}: tables {}", config.tp, table_list(&schema)));
    // Start-up recovery (issue 16): earlier days whose journal has no complete
    // partition (an RDB killed during or before their end of day) are written down
    // before the new day is served.
    if let Some(journal) = &path {
        recover_days(&config, journal, &schema, &mut days);
    }
    // An RDB killed after publishing a day (here or in an earlier life) may have
    // left the HDBs serving without it.
    tell_hdbs(&config);
    let mut state = RdbState::new(schema);
    if let Some(path) = path {
        replay(&mut state, &path, Some(count))?;
    }
    let state = Arc::new(RwLock::new(state));
    let addr = match &config.listen {
        Some(listen) => {
            let server = Server::start(ServerConfig {
                role: "rdb",
                listen: listen.clone(),
                credentials: config.credentials.clone(),
                tls: config.tls.clone(),
                max_message: DEFAULT_MAX_MESSAGE,
                outbox_limit: 1 << 30,
            })?;
            let addr = server.addr;
            let engine = Engine::new(&crate::sql::engine_options(&config.queries))
                .map_err(|e| TickError::Other(format!("rdb: cannot start the SQL engine: {e}")))?;
            let queries = RdbQueries { state: state.clone(), engine, unwritten: Mutex::new((0, Vec::new())) };
            service::serve("rdb", server, Arc::new(queries), config.queries.threads)
                .map_err(|e| TickError::Other(e.to_string()))?;
            log::line("rdb", &format!("answering queries (SQL included) on {addr}"));
            Some(addr)
        }
        None => None,
    };
    let shared = state.clone();
    let stop = Stop::default();
    let stopping = stop.clone();
    let subscriber = std::thread::Builder::new()
        .name("rdb-subscriber".into())
        .spawn(move || subscribe_loop(tp, &shared, &config, days, held, &stopping))
        .map_err(|e| TickError::Other(e.to_string()))?;
    Ok(RdbHandle { addr, state, stop, subscriber: Some(subscriber) })
}

fn table_list(schema: &Schema) -> String {
    schema.tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(" ")
}

/// Replays the first `count` records of the journal at `path` (all for `None`).
fn replay(state: &mut RdbState, path: &Path, count: Option<u64>) -> Result<(), TickError> {
    let started = Instant::now();
    let mut rows = 0usize;
    let now = Clock::default().now_nanos();
    let report = journal::replay(path, count, |index, payload| {
        if let Some((read, ..)) = state.upd_one_pass(payload, now) {
            rows += read;
            return Ok(());
        }
        let bad = |e: String| TickError::Journal(format!("{}: record {index}: {e}", path.display()));
        let record = view(payload).map_err(|e| bad(e.to_string()))?;
        let (table, data, _) = update_message(&record).ok_or_else(|| bad("not an (upd; table; data) list".into()))?;
        rows += state.upd(table, &data, now).map_err(bad)?.0;
        Ok(())
    })?;
    state.replayed = report.records;
    let short = if let Some(count) = count
        && report.records < count
    {
        format!(" (the tickerplant counted {count}: the journal holds fewer valid records)")
    } else {
        String::new()
    };
    log::line(
        "rdb",
        &format!(
            "replayed {} records ({rows} rows) from {} in {:.3} s{short}",
            report.records,
            path.display(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

/// What one published message asked of the RDB, beyond updates applied in place.
enum Control {
    EndOfDay(Date),
}

/// Follows the tickerplant until stopped: applies what it publishes and, whenever it
/// goes away, keeps answering queries on the tables held while it reconnects
/// ([`reconnect`]). `days` holds the table specs checked at start, for end of day.
fn subscribe_loop(
    mut tp: Connection,
    state: &RwLock<RdbState>,
    config: &RdbConfig,
    mut days: DayEnds,
    mut held: Held,
    stop: &Stop,
) -> Result<(), TickError> {
    let result = loop {
        stop.watch(tp.socket());
        let why = match follow(tp, state, config, &mut days, &mut held) {
            Ok(why) => why,
            Err(e) => break Err(e),
        };
        if stop.is_stopped() {
            break Ok(());
        }
        let rows: usize = state.read().map_or(0, |s| s.row_counts().iter().map(|(_, n)| n).sum());
        log::line(
            "rdb",
            &format!("tickerplant {} {why}; answering queries on the {rows} rows held, reconnecting", config.tp),
        );
        match reconnect(state, config, &mut days, &mut held, stop) {
            Some(next) => tp = next,
            None => break Ok(()),
        }
    };
    if !days.unwritten.is_empty() {
        let lost: Vec<String> = days.unwritten.iter().map(Unwritten::describe).collect();
        log::line("rdb", &format!("stopping with tables never written: {}", lost.join(", ")));
    }
    result
}

/// What the RDB's tables hold: the day and the journal they come from (`None`
/// when the tickerplant keeps no journal).
struct Held {
    day: Option<Date>,
    journal: Option<PathBuf>,
}

impl Held {
    fn of(subscription: &Subscription) -> Held {
        Held { day: subscription.day(), journal: subscription.journal.clone() }
    }

    /// After end of day `date` the tables hold the next day, whose journal the
    /// tickerplant opens beside the last.
    fn ended(&mut self, date: Date) {
        let next = Date(date.0 + 1);
        self.journal = self.journal.as_deref().and_then(|j| journal_of(j, next));
        self.day = Some(next);
    }
}

/// Tries to resume from the tickerplant, waiting a [`Backoff`] before each attempt,
/// until it succeeds (the connection to follow) or the RDB is stopped (`None`).
fn reconnect(
    state: &RwLock<RdbState>,
    config: &RdbConfig,
    days: &mut DayEnds,
    held: &mut Held,
    stop: &Stop,
) -> Option<Connection> {
    let mut backoff = Backoff::default();
    while backoff.wait(stop) {
        match resume(state, config, days, held) {
            Ok(tp) => return Some(tp),
            Err(e) if backoff.worth_logging() => log::line(
                "rdb",
                &format!("cannot resume from {} (attempt {}): {e}; trying again", config.tp, backoff.attempts()),
            ),
            Err(_) => {}
        }
    }
    None
}

/// Subscribes again and brings the tables to the tickerplant's position, so they
/// hold what an RDB started now would: days the tickerplant ended while the RDB was
/// away are finished first ([`finish_days`]); a changed schema is refused; then
/// today's tables are rebuilt from the journal up to `.u.i` while the old ones keep
/// answering queries, and swapped in under the lock. Updates published after the
/// answer follow on the returned connection. Without a journal there is nothing to
/// rebuild from: the tables keep what they hold.
fn resume(
    state: &RwLock<RdbState>,
    config: &RdbConfig,
    days: &mut DayEnds,
    held: &mut Held,
) -> Result<Connection, TickError> {
    let poisoned = || TickError::Other("RDB state poisoned".into());
    let (tp, subscription) = subscribe(&config.tp, &config.user_password)?;
    if let (Some(day), Some(now)) = (held.day, subscription.day()) {
        if now < day {
            return Err(TickError::Other(format!("its journal is of {now}, before the RDB's day {day}")));
        }
        finish_days(state, config, days, held, now)?;
    }
    let schema = Schema { name: "sym".into(), tables: days.schemas.clone() };
    if let Some(change) = subscription.schema_change(&schema) {
        return Err(TickError::Schema(format!("{change}; not resuming (restart the RDB to take the new tables)")));
    }
    let how = match &subscription.journal {
        Some(path) => {
            let mut fresh = RdbState::new(schema);
            replay(&mut fresh, path, Some(subscription.records))?;
            state.write().map_err(|_| poisoned())?.adopt(fresh);
            format!("tables rebuilt from {} records of {}", subscription.records, path.display())
        }
        None => "it keeps no journal: updates published while the RDB was away are not recovered".into(),
    };
    state.write().map_err(|_| poisoned())?.resumed += 1;
    *held = Held::of(&subscription);
    log::line("rdb", &format!("resumed from {}: {how}", config.tp));
    Ok(tp)
}

/// Ends the days from the held one up to `now` (not included), which the
/// tickerplant ended while the RDB was away: each is rebuilt from its whole journal
/// when that can be read (the held tables may lack its last updates), or ended with
/// the rows held; a day with neither (the tickerplant was down) has nothing to write.
fn finish_days(
    state: &RwLock<RdbState>,
    config: &RdbConfig,
    days: &mut DayEnds,
    held: &mut Held,
    now: Date,
) -> Result<(), TickError> {
    let schema = Schema { name: "sym".into(), tables: days.schemas.clone() };
    while let Some(day) = held.day.filter(|d| *d < now) {
        let journal = held.journal.as_deref().filter(|j| j.is_file());
        if let Some(path) = journal {
            let mut fresh = RdbState::new(schema.clone());
            match replay(&mut fresh, path, None) {
                Ok(()) => state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?.adopt(fresh),
                Err(e) => log::line("rdb", &format!("end of day {day}: {e}; ending the day with the rows held")),
            }
        }
        let rows = state.read().is_ok_and(|s| s.row_counts().iter().any(|(_, n)| *n > 0));
        if journal.is_some() || rows {
            log::line("rdb", &format!("the tickerplant ended {day} while the RDB was away: ending it"));
            end_of_day(state, config, days, day)?;
            fault::point("rdb.resume.day-finished");
        }
        held.ended(day);
    }
    Ok(())
}

/// Applies what the tickerplant publishes until the connection ends, and says why
/// it ended; an error is the RDB's own failure (its state's lock poisoned).
fn follow(
    mut tp: Connection,
    state: &RwLock<RdbState>,
    config: &RdbConfig,
    days: &mut DayEnds,
    held: &mut Held,
) -> Result<String, TickError> {
    let poisoned = || TickError::Other("RDB state poisoned".into());
    loop {
        match tp.reader().fill() {
            Ok(true) => {}
            Ok(false) => return Ok("closed the connection".into()),
            Err(e) => return Ok(format!("failed: {e}")),
        }
        // Everything one read brought is applied under one lock; receipt time is
        // when the read returned.
        let now = Clock::default().now_nanos();
        let received = clock::kdb_timestamp(now);
        let time_of_day = clock::time_of_day(now);
        let mut control = Vec::new();
        {
            let mut guard = state.write().map_err(|_| poisoned())?;
            loop {
                let (header, raw) = match tp.reader().next_buffered() {
                    Ok(Some(frame)) => frame,
                    Ok(None) => break,
                    Err(e) => return Ok(format!("sent what cannot be read: {e}")),
                };
                let started = (guard.counters.messages % TIMED_EVERY == 0).then(Instant::now);
                guard.counters.messages += 1;
                guard.counters.bytes += header.len as u64;
                let body = match plain_body(&header, raw, DEFAULT_MAX_MESSAGE) {
                    Ok(body) => body,
                    Err(e) => {
                        guard.counters.malformed += 1;
                        log::line("rdb", &format!("ignored a malformed message from the tickerplant: {e}"));
                        continue;
                    }
                };
                let applied = match guard.upd_one_pass(&body, now) {
                    Some((_, first_time, stamp)) => Ok((first_time, stamp)),
                    None => {
                        let message = match view(&body) {
                            Ok(message) => message,
                            Err(e) => {
                                guard.counters.malformed += 1;
                                log::line("rdb", &format!("ignored a malformed message from the tickerplant: {e}"));
                                continue;
                            }
                        };
                        let Some((table, data, stamp)) = update_message(&message) else {
                            control.extend(control_message(&message));
                            // End of day runs outside the lock, before anything published after it.
                            if control.is_empty() {
                                continue;
                            }
                            break;
                        };
                        guard.upd(table, &data, now).map(|(_, first_time)| (first_time, stamp))
                    }
                };
                match applied {
                    Ok((first_time, stamp)) => {
                        guard.feed_to_rdb.record_nanos((time_of_day - first_time).max(0) as u64);
                        if let Some(sent) = stamp {
                            guard.rdbrecv.record_nanos((received - sent).max(0) as u64);
                        }
                    }
                    Err(e) => {
                        guard.counters.rejected += 1;
                        log::line("rdb", &format!("refused an update: {e}"));
                    }
                }
                if let Some(started) = started {
                    guard.rdbupd.record(started.elapsed());
                }
            }
        }
        for step in control {
            match step {
                Control::EndOfDay(date) => {
                    end_of_day(state, config, days, date)?;
                    held.ended(date);
                }
            }
        }
    }
}

/// What a published message other than an update asks of the RDB (`.u.end`); others
/// are logged and ignored.
fn control_message(message: &View<'_>) -> Option<Control> {
    match strata_ipc::view::to_value(message) {
        Ok(K::List(items)) if items.len() == 2 && items[0].as_text() == Some(".u.end") => match items[1] {
            K::Atom(Atom::Date(d)) => Some(Control::EndOfDay(Date(d + EPOCH_OFFSET_DAYS))),
            ref other => {
                log::line("rdb", &format!("ignored .u.end with a {}", other.describe()));
                None
            }
        },
        _ => {
            log::line("rdb", &format!("ignored a {} from the tickerplant", message.describe()));
            None
        }
    }
}

/// What one end of day leaves to the next: the last good table specs (and the
/// tables' schemas, to check new ones against without the state's lock) and the
/// tables whose writes failed.
struct DayEnds {
    specs: TableSpecs,
    schemas: Vec<TableSchema>,
    unwritten: Vec<Unwritten>,
}

/// A day's table whose write failed: kept, out of the RDB's tables (it is not
/// today's), and written first at the next end of day.
struct Unwritten {
    date: Date,
    name: String,
    table: strata_store::Table,
}

impl Unwritten {
    fn describe(&self) -> String {
        format!("{} of {} ({} rows)", self.name, self.date, self.table.len())
    }
}

/// Writes every table to partition `date` (one atomic partition write per day, see
/// [`daywrite::write_day`]), after any day an earlier end of day could not write,
/// empties them, and tells the HDBs to reload.
/// The table specs are read again first, so a recommendation written since the
/// last day applies; one that no longer loads or applies is logged and the last
/// good ones are used. A day whose write fails is logged and kept whole for the next
/// end of day (nothing of it is on disk): the RDB carries on with the new day.
fn end_of_day(state: &RwLock<RdbState>, config: &RdbConfig, days: &mut DayEnds, date: Date) -> Result<(), TickError> {
    let started = Instant::now();
    match table_specs(config.table_spec.as_deref(), &days.schemas) {
        Ok(fresh) => days.specs = fresh,
        Err(e) => log::line("rdb", &format!("end of day {date}: {e}; using the table specs last loaded")),
    }
    fault::point("rdb.eod.received");
    // The day to write, shared with the tables, which keep answering queries with the
    // whole day until the HDBs serve it (nothing of the next day arrives meanwhile:
    // this thread applies updates, and it is here).
    let mut tables: Vec<Unwritten> = {
        let mut guard = state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?;
        let RdbState { tables, symbols, .. } = &mut *guard;
        let copies =
            tables.iter_mut().map(|t| Unwritten { date, name: t.schema().name.clone(), table: t.consolidate(symbols) });
        copies.collect()
    };
    tables.sort_by_key(|t| std::cmp::Reverse(t.table.len()));
    let mut pending = std::mem::take(&mut days.unwritten);
    pending.extend(tables);
    let mut dates: Vec<Date> = pending.iter().map(|t| t.date).collect();
    dates.sort();
    dates.dedup();
    let mut written = Vec::new();
    match Database::open(&config.db) {
        Err(e) => {
            log::line("rdb", &format!("end of day {date}: cannot open {}: {e}", config.db.display()));
            days.unwritten = pending;
        }
        Ok(db) => {
            // One atomic partition write per day: all of its tables or none.
            for day in &dates {
                let (of_day, rest): (Vec<Unwritten>, Vec<Unwritten>) =
                    pending.into_iter().partition(|t| t.date == *day);
                pending = rest;
                let refs: Vec<(&str, &strata_store::Table)> =
                    of_day.iter().map(|t| (t.name.as_str(), &t.table)).collect();
                match daywrite::write_day(&db, *day, &refs, &days.specs) {
                    Ok(()) => written.extend(of_day.iter().map(Unwritten::describe)),
                    Err(e) => {
                        let what: Vec<String> = of_day.iter().map(Unwritten::describe).collect();
                        log::line("rdb", &format!("end of day {date}: could not write {}: {e}", what.join(", ")));
                        days.unwritten.extend(of_day);
                    }
                }
            }
        }
    }
    fault::point("rdb.eod.written");
    if !written.is_empty() {
        log::line(
            "rdb",
            &format!(
                "end of day {date}: wrote {} to {} in {:.3} s",
                written.join(", "),
                config.db.display(),
                started.elapsed().as_secs_f64()
            ),
        );
        tell_hdbs(config);
    }
    fault::point("rdb.eod.hdbs-told");
    {
        let mut guard = state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?;
        guard.tables.iter_mut().for_each(LiveTable::clear);
        let done = dates.into_iter().filter(|d| !days.unwritten.iter().any(|t| t.date == *d));
        guard.written.extend(done);
        guard.show_unwritten(&days.unwritten);
    }
    if !days.unwritten.is_empty() {
        let kept: Vec<String> = days.unwritten.iter().map(Unwritten::describe).collect();
        log::line("rdb", &format!("end of day {date}: kept for the next end of day: {}", kept.join(", ")));
    }
    Ok(())
}

/// How long an HDB may take to reload after end of day before the RDB stops
/// waiting (and empties its tables regardless).
const HDB_RELOAD_TIMEOUT: Duration = Duration::from_secs(180);

/// Tells every HDB to reload (`\l .`) and waits for each to answer, so a day leaves
/// the RDB only once the HDBs serve it. As kdb+'s `.Q.hdpf` does, an HDB that cannot
/// be reached is logged, not fatal.
fn tell_hdbs(config: &RdbConfig) {
    for hdb in &config.hdbs {
        let told = Connection::connect_timeout(hdb, &config.user_password, Duration::from_secs(2)).and_then(|mut c| {
            c.socket().set_read_timeout(Some(HDB_RELOAD_TIMEOUT)).map_err(|e| IpcError::io("a read timeout", e))?;
            c.sync(&K::string("\\l ."))
        });
        match told {
            Ok(_) => log::line("rdb", &format!("HDB {hdb} reloaded")),
            Err(e) => log::line("rdb", &format!("could not have HDB {hdb} reload: {e}")),
        }
    }
}

/// Start-up recovery: every journal of the same schema dated before `journal` (the
/// tickerplant's current one, from `.u.L`) whose day partition `config.db` does not
/// serve completely is replayed and its missing tables written as that day. A day
/// that cannot be written now is kept in `days.unwritten` (written at the next end
/// of day; its journal stays for the next start too). Failures are logged: the new
/// day is served regardless.
fn recover_days(config: &RdbConfig, journal: &Path, schema: &Schema, days: &mut DayEnds) {
    let mut recover = || -> Result<(), TickError> {
        let db = Database::open(&config.db)?;
        for (date, path) in daywrite::earlier_journals(journal)? {
            let started = Instant::now();
            let tables = match daywrite::unwritten_tables(&db, &path, date, schema) {
                Ok(Some(tables)) => tables,
                Ok(None) => continue,
                Err(e) => {
                    log::line("rdb", &format!("recovery: day {date} from {}: {e}", path.display()));
                    continue;
                }
            };
            let kept: Vec<Unwritten> =
                tables.into_iter().map(|(name, table)| Unwritten { date, name, table }).collect();
            let what: Vec<String> = kept.iter().map(Unwritten::describe).collect();
            let refs: Vec<(&str, &strata_store::Table)> = kept.iter().map(|t| (t.name.as_str(), &t.table)).collect();
            match daywrite::write_day(&db, date, &refs, &days.specs) {
                Ok(()) => {
                    fault::point("rdb.recovery.written");
                    log::line(
                        "rdb",
                        &format!(
                            "recovery: wrote {} from {} in {:.3} s",
                            what.join(", "),
                            path.display(),
                            started.elapsed().as_secs_f64()
                        ),
                    );
                }
                Err(e) => {
                    log::line(
                        "rdb",
                        &format!("recovery: could not write {}: {e}; kept for end of day", what.join(", ")),
                    );
                    days.unwritten.extend(kept);
                }
            }
        }
        Ok(())
    };
    if let Err(e) = recover() {
        log::line("rdb", &format!("recovery of earlier days beside {} failed: {e}", journal.display()));
    }
}

/// Every table of day journal `path`, replayed through the RDB's own update path
/// (the same decoding and checks as a live RDB), for writing the day down.
pub(crate) fn journal_tables(path: &Path, schema: &Schema) -> Result<Vec<(String, strata_store::Table)>, TickError> {
    let mut state = RdbState::new(schema.clone());
    replay(&mut state, path, None)?;
    let RdbState { tables, symbols, .. } = &mut state;
    Ok(tables.iter_mut().map(|t| (t.schema().name.clone(), t.take(symbols))).collect())
}
