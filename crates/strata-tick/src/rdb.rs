//! The real-time database: replays today's journal, subscribes to a tickerplant,
//! holds today's tables in memory, answers queries, and at end of day writes a date
//! partition (sorted by sym then time, parted on sym, compressed by the table spec),
//! empties its tables and tells HDBs to reload, as kdb+tick's `r.q` does.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::{Atom, Connection, Credentials, K, Table, arrow::table_to_store, decode};
use strata_store::{Attribute, Database, Date, TableLocation, TableSpec, TableWrite};

use crate::clock::{self, Clock};
use crate::counters::{Counters, Latency, counters_dict};
use crate::error::TickError;
use crate::journal;
use crate::log;
use crate::memtable::MemTable;
use crate::query::TableSource;
use crate::schema::Schema;
use crate::server::{Server, ServerConfig};
use crate::service;

/// How an RDB runs.
#[derive(Clone, Debug)]
pub struct RdbConfig {
    /// The tickerplant, `host:port`.
    pub tp: String,
    /// `user:password` for the tickerplant (may be empty).
    pub user_password: String,
    /// The HDB root end of day writes into.
    pub db: PathBuf,
    /// Where to answer queries (`None`: no query port).
    pub listen: Option<String>,
    /// Users allowed to query.
    pub credentials: Option<Credentials>,
    /// HDBs (`host:port`) to tell to reload after end of day.
    pub hdbs: Vec<String>,
    /// Compression: a table spec file for every table, or a directory holding
    /// `<table>.toml` per table; `None` uses the database default.
    pub table_spec: Option<PathBuf>,
}

/// The RDB's tables and figures, shared by the subscriber and the query thread.
pub struct RdbState {
    tables: BTreeMap<String, MemTable>,
    counters: Counters,
    /// Journal records replayed at start.
    pub replayed: u64,
    /// Publish-to-receipt latency, when the tickerplant stamps its messages.
    pub rdbrecv: Latency,
    /// Insert time per update.
    pub rdbupd: Latency,
    /// Age at receipt of each update's first row, from its `time` column (a UTC
    /// timespan, as feeds that stamp their rows send): the feed-to-RDB latency.
    pub feed_to_rdb: Latency,
    /// Partitions written by end of day so far.
    pub written: Vec<Date>,
}

impl RdbState {
    fn new(schema: Schema) -> RdbState {
        let tables = schema.tables.iter().map(|t| (t.name.clone(), MemTable::new(t.clone()))).collect();
        RdbState {
            tables,
            counters: Counters::default(),
            replayed: 0,
            rdbrecv: Latency::default(),
            rdbupd: Latency::default(),
            feed_to_rdb: Latency::default(),
            written: Vec::new(),
        }
    }

    /// `upd[t; x]`: appends rows (a row, columns or a table) to table `t`.
    fn upd(&mut self, table: &K, data: K) -> Result<usize, String> {
        let name = table.as_text().ok_or("upd: table must be a symbol")?;
        let held = self.tables.get_mut(name).ok_or_else(|| format!("upd: no table {name}"))?;
        let update = held.schema().normalize(data, Clock::default().now_nanos())?;
        let rows = update.rows;
        held.append(update.columns, rows);
        self.counters.updates += 1;
        self.counters.rows += rows as u64;
        Ok(rows)
    }

    /// Rows held per table.
    pub fn row_counts(&self) -> Vec<(String, usize)> {
        self.tables.iter().map(|(n, t)| (n.clone(), t.len())).collect()
    }
}

impl TableSource for RdbState {
    fn table_names(&self) -> Vec<String> {
        self.tables.keys().cloned().collect()
    }

    fn table(&self, name: &str) -> Result<Table, String> {
        self.tables.get(name).map(MemTable::to_table).ok_or_else(|| format!("{name}: no such table"))
    }

    fn count(&self, name: &str) -> Result<usize, String> {
        self.tables.get(name).map(MemTable::len).ok_or_else(|| format!("{name}: no such table"))
    }

    fn counters(&self) -> K {
        let held: u64 = self.tables.values().map(|t| t.len() as u64).sum();
        let gauges =
            [("replayed", self.replayed), ("rowsHeld", held), ("partitionsWritten", self.written.len() as u64)];
        let hops = [("rdbrecv", &self.rdbrecv), ("rdbupd", &self.rdbupd), ("feed2rdb", &self.feed_to_rdb)];
        counters_dict(&self.counters, &gauges, &hops)
    }
}

/// A running RDB.
pub struct RdbHandle {
    /// Where it answers queries, if it does.
    pub addr: Option<SocketAddr>,
    /// Its tables.
    pub state: Arc<RwLock<RdbState>>,
    subscriber: JoinHandle<Result<(), TickError>>,
}

impl RdbHandle {
    /// Waits until the tickerplant connection ends (the query port stays open
    /// while the process lives).
    pub fn join(self) -> Result<(), TickError> {
        self.subscriber.join().unwrap_or_else(|_| Err(TickError::Other("the RDB thread panicked".into())))
    }
}

/// Starts an RDB: subscribes to every table and fetches the journal position in one
/// request (so nothing is missed or seen twice), replays that many journal records,
/// then applies published updates on its own thread.
pub fn start(config: RdbConfig) -> Result<RdbHandle, TickError> {
    let mut tp = Connection::connect_timeout(&config.tp, &config.user_password, Duration::from_secs(5))?;
    let answer = tp.sync(&K::string("(.u.sub[`;`];`.u `i`L)"))?;
    let (schema, count, path) = parse_subscription(answer)?;
    log::line("rdb", &format!("subscribed to {} at {}: tables {}", config.tp, tp.peer(), table_list(&schema)));
    let mut state = RdbState::new(schema);
    if let Some(path) = path {
        replay(&mut state, &path, count)?;
    }
    let state = Arc::new(RwLock::new(state));
    let addr = match &config.listen {
        Some(listen) => {
            let server = Server::start(ServerConfig {
                role: "rdb",
                listen: listen.clone(),
                credentials: config.credentials.clone(),
                max_message: strata_ipc::DEFAULT_MAX_MESSAGE,
                outbox_limit: 1 << 30,
            })?;
            let addr = server.addr;
            service::serve("rdb", server, state.clone(), None).map_err(|e| TickError::Other(e.to_string()))?;
            log::line("rdb", &format!("answering queries on {addr}"));
            Some(addr)
        }
        None => None,
    };
    let shared = state.clone();
    let subscriber = std::thread::Builder::new()
        .name("rdb-subscriber".into())
        .spawn(move || subscribe_loop(tp, &shared, &config))
        .map_err(|e| TickError::Other(e.to_string()))?;
    Ok(RdbHandle { addr, state, subscriber })
}

fn table_list(schema: &Schema) -> String {
    schema.tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(" ")
}

/// `((table; empty)...; (i; L))` into the schema, the record count and the journal.
fn parse_subscription(answer: K) -> Result<(Schema, u64, Option<PathBuf>), TickError> {
    let bad = |what: &str| TickError::Other(format!("unexpected answer to .u.sub/.u.i/.u.L: {what}"));
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
    let count = match position.first() {
        Some(K::Atom(Atom::Long(i))) => (*i).max(0) as u64,
        Some(K::Atom(Atom::Int(i))) => (*i).max(0) as u64,
        _ => return Err(bad(".u.i is not a number")),
    };
    let path = position.get(1).and_then(K::as_text).map(|l| l.trim_start_matches(':')).filter(|l| !l.is_empty());
    Ok((schema, count, path.map(PathBuf::from)))
}

/// Replays the first `count` records of the journal at `path`.
fn replay(state: &mut RdbState, path: &Path, count: u64) -> Result<(), TickError> {
    let started = Instant::now();
    let mut rows = 0usize;
    let report = journal::replay(path, Some(count), |index, payload| {
        let bad = |e: String| TickError::Journal(format!("{}: record {index}: {e}", path.display()));
        let record = decode(payload, false).map_err(|e| bad(e.to_string()))?;
        let K::List(items) = record else { return Err(bad("not an (upd; table; data) list".into())) };
        let mut items = items.into_iter();
        match (items.next(), items.next(), items.next()) {
            (Some(f), Some(table), Some(data)) if f.as_text() == Some("upd") => {
                rows += state.upd(&table, data).map_err(bad)?;
                Ok(())
            }
            _ => Err(bad("not an (upd; table; data) list".into())),
        }
    })?;
    state.replayed = report.records;
    let short = if report.records < count {
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

fn subscribe_loop(mut tp: Connection, state: &RwLock<RdbState>, config: &RdbConfig) -> Result<(), TickError> {
    loop {
        let message = match tp.receive() {
            Ok(Some((_, value))) => value,
            Ok(None) => {
                log::line("rdb", &format!("tickerplant {} closed the connection", config.tp));
                return Ok(());
            }
            Err(e) => {
                log::line("rdb", &format!("tickerplant {}: {e}", config.tp));
                return Err(e.into());
            }
        };
        let now = Clock::default().now_nanos();
        let received = clock::kdb_timestamp(now);
        let K::List(items) = message else {
            log::line("rdb", &format!("ignored a {} from the tickerplant", message.describe()));
            continue;
        };
        let mut items = items.into_iter();
        let (f, a, b, stamp) = (items.next(), items.next(), items.next(), items.next());
        match (f.as_ref().and_then(K::as_text), a, b) {
            (Some("upd"), Some(table), Some(data)) => {
                let started = Instant::now();
                let sent_at = first_time(&data);
                let mut guard = state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?;
                if let Some(t) = sent_at {
                    guard.feed_to_rdb.record_nanos((clock::time_of_day(now) - t).max(0) as u64);
                }
                guard.counters.messages += 1;
                if let Err(e) = guard.upd(&table, data) {
                    guard.counters.rejected += 1;
                    log::line("rdb", &format!("refused an update: {e}"));
                }
                guard.rdbupd.record(started.elapsed());
                if let Some(K::Atom(Atom::Timestamp(sent))) = stamp {
                    guard.rdbrecv.record_nanos((received - sent).max(0) as u64);
                }
            }
            (Some(".u.end"), Some(K::Atom(Atom::Date(d))), _) => {
                end_of_day(state, config, Date(d + EPOCH_OFFSET_DAYS))?
            }
            (name, ..) => log::line("rdb", &format!("ignored a message from the tickerplant: {name:?}")),
        }
    }
}

/// The first `time` value of a published table, when it is a timespan.
fn first_time(data: &K) -> Option<i64> {
    match data {
        K::Table(t) => match t.column("time") {
            Some(K::Vector(strata_ipc::Vector::Timespan(v), _)) => v.first().copied(),
            _ => None,
        },
        _ => None,
    }
}

/// Writes every table (largest first) to partition `date`, empties them, and tells
/// the HDBs to reload.
fn end_of_day(state: &RwLock<RdbState>, config: &RdbConfig, date: Date) -> Result<(), TickError> {
    let started = Instant::now();
    let mut tables: Vec<(String, Table)> = {
        let mut guard = state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?;
        guard.tables.iter_mut().map(|(n, t)| (n.clone(), t.take())).collect()
    };
    tables.sort_by_key(|(_, t)| std::cmp::Reverse(t.len()));
    let db = Database::open(&config.db)?;
    let mut written = Vec::new();
    for (name, table) in &tables {
        let how = TableWrite {
            spec: table_spec(config.table_spec.as_deref(), name)?,
            sort_by: vec!["sym".into(), "time".into()],
            attributes: vec![("sym".into(), Attribute::Parted)],
        };
        let store = table_to_store(table)?;
        db.write_table(&TableLocation::Partition(date, name.clone()), &store, &how)?;
        written.push(format!("{name} ({} rows)", table.len()));
    }
    state.write().map_err(|_| TickError::Other("RDB state poisoned".into()))?.written.push(date);
    log::line(
        "rdb",
        &format!(
            "end of day {date}: wrote {} to {} in {:.3} s",
            written.join(", "),
            db.partition_dir(date).display(),
            started.elapsed().as_secs_f64()
        ),
    );
    for hdb in &config.hdbs {
        // As kdb+'s .Q.hdpf does, a failed HDB connection is logged, not fatal.
        let told = Connection::connect_timeout(hdb, &config.user_password, Duration::from_secs(2)).and_then(|mut c| {
            c.send_async(&K::string("\\l ."))?;
            c.flush()
        });
        match told {
            Ok(()) => log::line("rdb", &format!("told HDB {hdb} to reload")),
            Err(e) => log::line("rdb", &format!("could not tell HDB {hdb} to reload: {e}")),
        }
    }
    Ok(())
}

/// The compression for `table`: `spec` is a file for all tables or a directory of
/// `<table>.toml` files (a missing file means the database default).
fn table_spec(spec: Option<&Path>, table: &str) -> Result<TableSpec, TickError> {
    match spec {
        None => Ok(TableSpec::default()),
        Some(dir) if dir.is_dir() => {
            let file = dir.join(format!("{table}.toml"));
            if file.is_file() { Ok(TableSpec::load(&file)?) } else { Ok(TableSpec::default()) }
        }
        Some(file) => Ok(TableSpec::load(file)?),
    }
}
