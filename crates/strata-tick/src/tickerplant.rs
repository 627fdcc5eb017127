//! The tickerplant: takes `upd[table; data]` from feeds, journals every update,
//! publishes to subscribers (at once, or on a timer with `batch`), and rolls the
//! journal at end of day, as kdb+tick's `tick.q` does.
//!
//! One core thread owns all state and drains the server's event queue in batches;
//! after each batch the journal is committed (group commit, fsync by policy) and only
//! then are sync callers answered, so an acknowledged update is in the journal.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::{Atom, Credentials, K, MessageKind};
use strata_store::Date;

use crate::clock::{self, Clock};
use crate::counters::{Latency, counters_dict};
use crate::error::TickError;
use crate::journal::{FsyncPolicy, Journal, WriteMode, journal_path};
use crate::log;
use crate::memtable::MemTable;
use crate::pubsub::{Publisher, SlowPolicy, encode_upd_columns};
use crate::request::Request;
use crate::schema::Schema;
use crate::server::{ConnId, Event, Server, ServerConfig};

/// Events handled before the journal is committed and sync callers answered.
const MAX_BATCH: usize = 4096;

/// How a tickerplant runs.
#[derive(Clone, Debug)]
pub struct TickerplantConfig {
    /// The tables.
    pub schema: Schema,
    /// Where journals go; `None` journals nothing (kdb+tick without a log dir).
    pub journal_dir: Option<PathBuf>,
    /// Address to listen on.
    pub listen: String,
    /// Publish on this timer instead of per update.
    pub batch: Option<Duration>,
    /// Per update or group commit.
    pub write_mode: WriteMode,
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// The zone end of day follows.
    pub clock: Clock,
    /// Users allowed to connect.
    pub credentials: Option<Credentials>,
    /// Bytes a subscriber's queue may hold.
    pub subscriber_limit: usize,
    /// What happens to a subscriber that does not keep up.
    pub slow_policy: SlowPolicy,
    /// Publish `(`upd; t; data; publishTime)` so subscribers can time the hop.
    pub hop_times: bool,
    /// The largest message accepted.
    pub max_message: usize,
}

impl TickerplantConfig {
    /// Defaults as `strata tp` has them: port 5010 on every interface, zero-latency
    /// publishing, per-update writes without fsync, 64 MiB per subscriber.
    pub fn new(schema: Schema, journal_dir: Option<PathBuf>) -> TickerplantConfig {
        TickerplantConfig {
            schema,
            journal_dir,
            listen: "0.0.0.0:5010".into(),
            batch: None,
            write_mode: WriteMode::PerUpdate,
            fsync: FsyncPolicy::None,
            clock: Clock::default(),
            credentials: None,
            subscriber_limit: 64 << 20,
            slow_policy: SlowPolicy::Disconnect,
            hop_times: false,
            max_message: strata_ipc::DEFAULT_MAX_MESSAGE,
        }
    }
}

/// A running tickerplant.
pub struct TickerplantHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<(), TickError>>,
}

impl TickerplantHandle {
    /// Waits for the tickerplant to stop (it runs until stopped or a fatal error).
    pub fn join(self) -> Result<(), TickError> {
        self.thread.join().unwrap_or_else(|_| Err(TickError::Other("the tickerplant thread panicked".into())))
    }

    /// Stops the core loop (journal flushed) and waits for it.
    pub fn stop(self) -> Result<(), TickError> {
        self.stop.store(true, Ordering::Release);
        self.join()
    }
}

/// Starts a tickerplant: opens today's journal (truncating a torn tail), listens,
/// and runs the core loop on its own thread.
pub fn start(config: TickerplantConfig) -> Result<TickerplantHandle, TickError> {
    let server = Server::start(ServerConfig {
        role: "tp",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        max_message: config.max_message,
        outbox_limit: config.subscriber_limit,
    })?;
    let addr = server.addr;
    let mut tp = Tickerplant::new(config)?;
    log::line("tp", &format!("listening on {addr}; tables {}", tp.table_names().join(" ")));
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("tp-core".into())
        .spawn(move || {
            let result = tp.run(&server.events, &stopping);
            server.stop();
            result
        })
        .map_err(|e| TickError::Other(format!("cannot start the tickerplant thread: {e}")))?;
    Ok(TickerplantHandle { addr, stop, thread })
}

struct Tickerplant {
    config: TickerplantConfig,
    publisher: Publisher,
    journal: Option<Journal>,
    /// The day being captured.
    date: Date,
    /// Journal records whose data subscribers have (`.u.i`); in batch mode the rest
    /// are still buffered.
    published_records: u64,
    buffers: BTreeMap<String, MemTable>,
    last_flush: Instant,
    responses: Vec<(ConnId, K)>,
    tplog: Latency,
    tppub: Latency,
}

impl Tickerplant {
    fn new(config: TickerplantConfig) -> Result<Tickerplant, TickError> {
        let date = config.clock.today();
        let buffers = config.schema.tables.iter().map(|t| (t.name.clone(), MemTable::new(t.clone()))).collect();
        let publisher = Publisher::new("tp", config.schema.clone(), config.slow_policy);
        let mut tp = Tickerplant {
            config,
            publisher,
            journal: None,
            date,
            published_records: 0,
            buffers,
            last_flush: Instant::now(),
            responses: Vec::new(),
            tplog: Latency::default(),
            tppub: Latency::default(),
        };
        tp.open_journal()?;
        Ok(tp)
    }

    fn table_names(&self) -> Vec<String> {
        self.config.schema.tables.iter().map(|t| t.name.clone()).collect()
    }

    fn open_journal(&mut self) -> Result<(), TickError> {
        let Some(dir) = &self.config.journal_dir else { return Ok(()) };
        std::fs::create_dir_all(dir).map_err(|e| TickError::io(dir, e))?;
        let path = journal_path(dir, &self.config.schema.name, self.date);
        let (journal, report) = Journal::open(&path, self.config.write_mode, self.config.fsync)?;
        let torn = if report.torn_bytes() > 0 {
            format!("; truncated a torn tail of {} bytes (file was {} bytes)", report.torn_bytes(), report.file_bytes)
        } else {
            String::new()
        };
        log::line("tp", &format!("journal {}: {} valid records{torn}", path.display(), report.records));
        self.published_records = journal.records();
        self.journal = Some(journal);
        Ok(())
    }

    fn run(&mut self, events: &Receiver<Event>, stop: &AtomicBool) -> Result<(), TickError> {
        while !stop.load(Ordering::Acquire) {
            match events.recv_timeout(self.next_timer()) {
                Ok(event) => {
                    self.handle(event);
                    for _ in 1..MAX_BATCH {
                        match events.try_recv() {
                            Ok(event) => self.handle(event),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.commit()?;
            self.timers()?;
        }
        self.flush_batch();
        if let Some(journal) = &mut self.journal {
            journal.sync()?;
        }
        self.publisher.close_all();
        log::line("tp", "stopped");
        Ok(())
    }

    fn next_timer(&self) -> Duration {
        let eod = Duration::from_nanos(clock::nanos_to_midnight(self.config.clock.now_nanos()) as u64);
        let batch = self.config.batch.map_or(Duration::MAX, |b| b.saturating_sub(self.last_flush.elapsed()));
        eod.min(batch).min(Duration::from_millis(100))
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Opened { peer, user, outbox, .. } => self.publisher.opened(outbox, peer, user),
            Event::Closed { id, reason } => self.publisher.closed(id, &reason),
            Event::Malformed { id, kind, error } => {
                self.publisher.counters.malformed += 1;
                self.reject(id, kind, error);
            }
            Event::Message { id, kind, value, bytes, .. } => {
                self.publisher.counters.messages += 1;
                self.publisher.counters.bytes += bytes as u64;
                let result =
                    Request::from_message(value).and_then(|r| r.eval(&mut |name, args| self.call(id, name, args)));
                match result {
                    Ok(answer) if kind == MessageKind::Sync => self.responses.push((id, answer)),
                    Ok(_) => {}
                    Err(error) => {
                        self.publisher.counters.rejected += 1;
                        self.reject(id, kind, error);
                    }
                }
            }
        }
    }

    /// A sync caller gets the error as its reply; an async one gets a log line.
    fn reject(&mut self, id: ConnId, kind: MessageKind, error: String) {
        if kind == MessageKind::Sync {
            self.responses.push((id, K::Error(error)));
        } else {
            log::line("tp", &format!("rejected an async message from {}: {error}", self.publisher.describe(id)));
        }
    }

    fn call(&mut self, id: ConnId, name: &str, args: Vec<K>) -> Result<K, String> {
        let arity = |n: usize| {
            if args.len() == n { Ok(()) } else { Err(format!("{name}: expected {n} arguments, got {}", args.len())) }
        };
        match name {
            "upd" | ".u.upd" => {
                arity(2)?;
                let mut args = args.into_iter();
                let (table, data) = (args.next().expect("2"), args.next().expect("2"));
                self.upd(&table, data)?;
                Ok(K::Identity)
            }
            ".u.sub" => {
                arity(2)?;
                self.publisher.subscribe(id, &args[0], &args[1])
            }
            ".u.i" => Ok(K::Atom(Atom::Long(self.published_records as i64))),
            ".u.j" => Ok(K::Atom(Atom::Long(self.journal.as_ref().map_or(0, |j| j.records()) as i64))),
            ".u.L" => Ok(K::symbol(match &self.journal {
                Some(j) => format!(":{}", std::path::absolute(j.path()).unwrap_or_else(|_| j.path().into()).display()),
                None => String::new(),
            })),
            ".u.d" => Ok(K::Atom(Atom::Date(self.date.0 - EPOCH_OFFSET_DAYS))),
            ".u.t" | "tables" => Ok(K::symbols(self.table_names())),
            ".u.end" | ".u.endofday" => {
                self.end_of_day().map_err(|e| e.to_string())?;
                Ok(K::Identity)
            }
            ".strata.counters" => Ok(self.counters()),
            _ => Err(format!(
                "{name}: not a tickerplant function (upd .u.upd .u.sub .u.i .u.j .u.L .u.d .u.t .u.end .strata.counters)"
            )),
        }
    }

    fn upd(&mut self, table: &K, data: K) -> Result<(), String> {
        let name = table.as_text().ok_or_else(|| format!("upd: table must be a symbol, got a {}", table.describe()))?;
        let now = self.config.clock.now_nanos();
        if clock::date_of(now) > self.date {
            // Yesterday's buffered rows and journal close before today's first update.
            self.roll_to(clock::date_of(now)).map_err(|e| e.to_string())?;
        }
        let schema = self
            .config
            .schema
            .table(name)
            .ok_or_else(|| format!("upd: no table {name}; tables: {}", self.table_names().join(" ")))?;
        let update = schema.normalize(data, now)?;
        let logged = Instant::now();
        if let Some(journal) = &mut self.journal {
            journal
                .append_with(|buf| encode_upd_columns(buf, name, &update.columns))
                .map_err(|e| format!("journal write failed, update refused: {e}"))?;
        }
        let published = Instant::now();
        self.tplog.record(published - logged);
        self.publisher.counters.updates += 1;
        self.publisher.counters.rows += update.rows as u64;
        match self.config.batch {
            Some(_) => self.buffers.get_mut(name).expect("a buffer per table").append(update.columns, update.rows),
            None => {
                let stamp = self.config.hop_times.then(|| clock::kdb_timestamp(self.config.clock.now_nanos()));
                self.publisher.publish(name, &update.columns, stamp);
                self.tppub.record(published.elapsed());
                self.published_records = self.journal.as_ref().map_or(0, |j| j.records());
            }
        }
        Ok(())
    }

    /// Commits the journal, then answers sync callers in order.
    fn commit(&mut self) -> Result<(), TickError> {
        if let Some(journal) = &mut self.journal
            && let Err(e) = journal.commit(!self.responses.is_empty())
        {
            log::line("tp", &format!("journal commit failed: {e}"));
            for (_, answer) in &mut self.responses {
                *answer = K::Error(format!("journal commit failed: {e}"));
            }
        }
        for (id, answer) in std::mem::take(&mut self.responses) {
            self.publisher.send(id, MessageKind::Response, &answer);
        }
        Ok(())
    }

    fn timers(&mut self) -> Result<(), TickError> {
        if let Some(batch) = self.config.batch
            && self.last_flush.elapsed() >= batch
        {
            self.flush_batch();
        }
        let today = self.config.clock.today();
        if today > self.date {
            self.roll_to(today)?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) {
        self.last_flush = Instant::now();
        if self.config.batch.is_none() {
            return;
        }
        let stamp = self.config.hop_times.then(|| clock::kdb_timestamp(self.config.clock.now_nanos()));
        for (name, buffer) in &mut self.buffers {
            if !buffer.is_empty() {
                let started = Instant::now();
                let (_, columns) = buffer.take().into_parts();
                self.publisher.publish(name, &columns, stamp);
                self.tppub.record(started.elapsed());
            }
        }
        self.published_records = self.journal.as_ref().map_or(0, |j| j.records());
    }

    fn roll_to(&mut self, today: Date) -> Result<(), TickError> {
        while self.date < today {
            self.end_of_day()?;
        }
        Ok(())
    }

    /// kdb+'s `.u.endofday`: publish what is buffered, send `.u.end[date]` to every
    /// subscriber, move to the next date and open its journal.
    fn end_of_day(&mut self) -> Result<(), TickError> {
        self.flush_batch();
        let ended = self.date;
        let told = self.publisher.end_of_day(ended.0 - EPOCH_OFFSET_DAYS);
        let journal = match self.journal.take() {
            Some(mut j) => {
                j.sync()?;
                format!("; journal {} closed with {} records", j.path().display(), j.records())
            }
            None => String::new(),
        };
        log::line("tp", &format!("end of day {ended}: sent .u.end to {told} subscribers{journal}"));
        self.date = Date(ended.0 + 1);
        self.open_journal()
    }

    fn counters(&self) -> K {
        let (queued, max_queued) = self.publisher.queue_depths();
        let journal = self.journal.as_ref();
        let gauges = [
            ("subscribers", self.publisher.subscribers() as u64),
            ("queuedBytes", queued),
            ("maxQueuedBytes", max_queued),
            ("journalRecords", journal.map_or(0, |j| j.records())),
            ("journalBytes", journal.map_or(0, |j| j.bytes())),
            ("publishedRecords", self.published_records),
        ];
        counters_dict(&self.publisher.counters, &gauges, &[("tplog", &self.tplog), ("tppub", &self.tppub)])
    }
}
