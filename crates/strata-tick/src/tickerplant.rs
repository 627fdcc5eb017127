//! The tickerplant: takes `upd[table; data]` from feeds, journals every update,
//! publishes to subscribers (at once, or on a timer with `batch`), and rolls the
//! journal at end of day, as kdb+tick's `tick.q` does.
//!
//! One core thread owns all state and drains the server's event queue in batches
//! (each event is every message one socket read brought). An update is checked and
//! copied as wire bytes ([`crate::update`]) into the journal's buffer and into each
//! subscriber's pending messages; after each batch the journal is written, then the
//! subscribers' messages are handed to their writers, then the journal is synced as
//! the fsync policy says and only then are sync callers answered, so an acknowledged
//! update is in the journal and a published one is in the journal file. A batch
//! whose journal write fails is refused whole: its messages are dropped unsent, sync
//! callers get the error, async refusals are counted (`journalRefused`) and logged
//! at most once a second, and `.u.i`/`.u.j` stay what the journal holds. A request
//! other than `upd` from a sync caller closes the batch first, so its answer (say
//! `.u.i` with `.u.sub`) sits in that caller's stream exactly after the updates it
//! counts.
//!
//! The day resumes where the journals say: at start the tickerplant takes the later
//! of today and the newest `<schema>YYYY.MM.DD` journal in its directory, so a
//! forced `.u.end[]` survives a crash. Rolled journals are never deleted here: they
//! stay until an operator removes them once their day is written.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use strata_ipc::frame::plain_body;
use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::view::{View, to_value, view};
use strata_ipc::{Atom, Credentials, Header, K, MessageKind};
use strata_store::{Date, fault};

use crate::clock::{self, Clock};
use crate::counters::{Latency, TIMED_EVERY, counters_dict};
use crate::error::TickError;
use crate::journal::{Cut, FsyncPolicy, Journal, Recovery, WriteMode, journal_dates, journal_path};
use crate::log;
use crate::new_symbols::{DEFAULT_MAX_NEW_SYMBOLS, NewSymbols};
use crate::pubsub::{Publisher, SlowPolicy};
use crate::request::Request;
use crate::schema::Schema;
use crate::server::{ConnId, Event, Frames, KEPT_BUFFER_BYTES, Server, ServerConfig};
use crate::update::one_pass::{Stamp, read_update};
use crate::update::{WireColumns, journal_record, update_message};

/// Messages handled before the journal is committed and sync callers answered.
const MAX_BATCH: usize = 16_384;
/// ... or bytes waiting for one subscriber (or for the journal's group commit, a
/// write refused whole if it fails), whichever comes first: a batch then fits
/// a buffer the subscriber's outbox keeps for reuse ([`KEPT_BUFFER_BYTES`]). Flat out
/// with 100-row updates, batches of 16 384 messages held about 45 MB for the RDB,
/// in new memory every time.
const MAX_BATCH_BYTES: usize = KEPT_BUFFER_BYTES / 2;

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
    /// What opening a journal damaged inside (not just torn at the end) does.
    pub journal_recovery: Recovery,
    /// The zone end of day follows.
    pub clock: Clock,
    /// Users allowed to connect.
    pub credentials: Option<Credentials>,
    /// TLS on the port it serves (`None`: plain TCP only).
    pub tls: Option<strata_ipc::tls::ServerTls>,
    /// Bytes a subscriber's queue may hold.
    pub subscriber_limit: usize,
    /// What happens to a subscriber that does not keep up.
    pub slow_policy: SlowPolicy,
    /// Publish `(`upd; t; data; publishTime)` so subscribers can time the hop.
    pub hop_times: bool,
    /// The largest message accepted.
    pub max_message: usize,
    /// New symbols each publisher (user and address) may add in a day (`None`: no
    /// bound; see [`crate::new_symbols`]).
    pub max_new_symbols: Option<usize>,
}

impl TickerplantConfig {
    /// Defaults as `strata tp` has them: port 5010 on every interface, zero-latency
    /// publishing, group commit without fsync, 64 MiB per subscriber.
    pub fn new(schema: Schema, journal_dir: Option<PathBuf>) -> TickerplantConfig {
        TickerplantConfig {
            schema,
            journal_dir,
            listen: "127.0.0.1:5010".into(),
            batch: None,
            write_mode: WriteMode::Group,
            fsync: FsyncPolicy::None,
            journal_recovery: Recovery::Refuse,
            clock: Clock::default(),
            credentials: None,
            tls: None,
            subscriber_limit: 64 << 20,
            slow_policy: SlowPolicy::Disconnect,
            hop_times: false,
            max_message: strata_ipc::DEFAULT_MAX_MESSAGE,
            max_new_symbols: Some(DEFAULT_MAX_NEW_SYMBOLS),
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

/// Starts a tickerplant: opens the current day's journal (a torn tail set aside,
/// damage refused or set aside as `journal_recovery` says), listens, and runs the
/// core loop on its own thread.
pub fn start(config: TickerplantConfig) -> Result<TickerplantHandle, TickError> {
    let server = Server::start(ServerConfig {
        role: "tp",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        tls: config.tls.clone(),
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
    /// Per table (schema order), the update being checked.
    scratch: Vec<WireColumns>,
    /// Per table, rows of the batch waiting for their journal write (batch mode).
    staged: Vec<WireColumns>,
    /// Per table, journaled rows waiting for the publish timer (batch mode).
    buffers: Vec<WireColumns>,
    last_flush: Instant,
    responses: Vec<(ConnId, K)>,
    /// Per timed update of the batch: nanoseconds spent on its journal record and
    /// on its messages; the batch's write and hand-off are shared out at commit.
    costs: Vec<(u64, u64)>,
    /// Updates in the batch, timed or not.
    batch_updates: u64,
    tplog: Latency,
    tppub: Latency,
    /// Updates refused because their journal write failed.
    journal_refused: u64,
    refusals: log::Throttle,
    /// Log lines for refused async messages: a client can send them at will.
    rejections: log::Throttle,
    /// The bound on new symbols per publisher and day.
    new_symbols: NewSymbols,
    /// Each connection's publisher name for that bound: `user@address`.
    publishers: HashMap<ConnId, String>,
}

/// Why an update was not taken.
enum Refused {
    /// It does not fit the schema: answered, and logged per message when async.
    Invalid(String),
    /// Its journal write failed: answered, and already counted and logged.
    Unjournaled(String),
}

impl From<String> for Refused {
    fn from(error: String) -> Refused {
        Refused::Invalid(error)
    }
}

impl Refused {
    fn into_message(self) -> String {
        match self {
            Refused::Invalid(e) | Refused::Unjournaled(e) => e,
        }
    }
}

impl Tickerplant {
    fn new(config: TickerplantConfig) -> Result<Tickerplant, TickError> {
        let date = resume_date(&config)?;
        let config_max_new_symbols = config.max_new_symbols;
        let scratch: Vec<WireColumns> =
            config.schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect();
        let publisher = Publisher::new("tp", config.schema.clone(), config.slow_policy);
        let mut tp = Tickerplant {
            config,
            publisher,
            journal: None,
            date,
            published_records: 0,
            buffers: scratch.clone(),
            staged: scratch.clone(),
            scratch,
            last_flush: Instant::now(),
            responses: Vec::new(),
            costs: Vec::new(),
            batch_updates: 0,
            tplog: Latency::default(),
            tppub: Latency::default(),
            journal_refused: 0,
            refusals: log::Throttle::new(),
            rejections: log::Throttle::new(),
            new_symbols: NewSymbols::new(config_max_new_symbols),
            publishers: HashMap::new(),
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
        let (journal, recovered) =
            Journal::open(&path, self.config.write_mode, self.config.fsync, self.config.journal_recovery)?;
        let mut cuts = String::new();
        for cut in &recovered.set_aside {
            let what = match cut.cut {
                Cut::TornTail => "a torn tail",
                Cut::Damaged => "damaged bytes",
            };
            let (offset, bytes, side) = (cut.offset, cut.bytes, cut.path.display());
            cuts += &format!("; cut {what} of {bytes} bytes at offset {offset}, kept in {side}");
        }
        let report = recovered.scan;
        log::line(
            "tp",
            &format!(
                "journal {} ({} bytes): {} valid records{cuts}",
                path.display(),
                report.file_bytes,
                report.records
            ),
        );
        self.published_records = journal.records();
        self.journal = Some(journal);
        Ok(())
    }

    fn run(&mut self, events: &Receiver<Event>, stop: &AtomicBool) -> Result<(), TickError> {
        while !stop.load(Ordering::Acquire) {
            match events.recv_timeout(self.next_timer()) {
                Ok(event) => {
                    let mut handled = self.handle(event)?;
                    while handled < MAX_BATCH
                        && self.publisher.largest_pending() < MAX_BATCH_BYTES
                        && self.journal.as_ref().is_none_or(|j| j.pending_bytes() < MAX_BATCH_BYTES)
                    {
                        match events.try_recv() {
                            Ok(event) => handled += self.handle(event)?,
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.commit();
            self.timers()?;
        }
        self.commit();
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

    /// Handles one event; returns the messages it held.
    fn handle(&mut self, event: Event) -> Result<usize, TickError> {
        match event {
            Event::Opened { id, peer, user, outbox } => {
                self.publishers.insert(id, format!("{user}@{}", peer.ip()));
                self.publisher.opened(outbox, peer, user);
            }
            Event::Closed { id, reason } => {
                self.publishers.remove(&id);
                self.publisher.closed(id, &reason);
            }
            Event::Frames { id, frames, .. } => return self.messages(id, &frames),
        }
        Ok(0)
    }

    /// Handles the messages one read of connection `id` brought, in order.
    fn messages(&mut self, id: ConnId, frames: &Frames) -> Result<usize, TickError> {
        // One clock reading serves every update of the read: the time of receipt.
        let now = self.config.clock.now_nanos();
        if clock::date_of(now) > self.date {
            // Yesterday's buffered rows and journal close before today's first update.
            self.roll_to(clock::date_of(now))?;
        }
        for (header, raw) in frames.iter() {
            self.publisher.counters.messages += 1;
            self.publisher.counters.bytes += header.len as u64;
            let body = match plain_body(&header, raw, self.config.max_message) {
                Ok(body) => body,
                Err(e) => {
                    self.malformed(id, header, e.to_string());
                    continue;
                }
            };
            let tables = &self.config.schema.tables;
            if let Some(read) = read_update(&body, tables, &mut self.scratch, now, Stamp::Refused) {
                let result = self.log_and_publish(id, read.table);
                self.answer_update(id, header.kind, result);
                continue;
            }
            let message = match view(&body) {
                Ok(message) => message,
                Err(e) => {
                    self.malformed(id, header, e.to_string());
                    continue;
                }
            };
            if let Some((table, data, None)) = update_message(&message) {
                let result = self.upd(id, table, &data, now);
                self.answer_update(id, header.kind, result);
                continue;
            }
            if header.kind == MessageKind::Sync {
                // Close the batch: the answer follows exactly the updates before it.
                self.commit();
            }
            let result = to_value(&message)
                .map_err(|e| e.to_string())
                .and_then(Request::from_message)
                .and_then(|r| r.eval(&mut |name, args| self.call(id, name, args)));
            match result {
                Ok(answer) if header.kind == MessageKind::Sync => {
                    self.responses.push((id, answer));
                    self.commit();
                }
                Ok(_) => {}
                Err(error) => {
                    self.publisher.counters.rejected += 1;
                    self.reject(id, header.kind, error);
                }
            }
        }
        Ok(frames.len())
    }

    /// A sync caller's update is acknowledged at commit (as `K::Identity`, which
    /// [`Tickerplant::commit`] turns into the error if the batch's journal write
    /// fails); a refused one is answered as [`Tickerplant::reject`] says, or (its
    /// journal write failed, already logged) with the error to a sync caller only.
    fn answer_update(&mut self, id: ConnId, kind: MessageKind, result: Result<(), Refused>) {
        match result {
            Ok(()) if kind == MessageKind::Sync => self.responses.push((id, K::Identity)),
            Ok(()) => {}
            Err(Refused::Invalid(error)) => {
                self.publisher.counters.rejected += 1;
                self.reject(id, kind, error);
            }
            Err(Refused::Unjournaled(error)) if kind == MessageKind::Sync => self.responses.push((id, K::Error(error))),
            Err(Refused::Unjournaled(_)) => {}
        }
    }

    fn malformed(&mut self, id: ConnId, header: Header, error: String) {
        self.publisher.counters.malformed += 1;
        self.reject(id, header.kind, error);
    }

    /// A sync caller gets the error as its reply; an async one gets a log line.
    fn reject(&mut self, id: ConnId, kind: MessageKind, error: String) {
        if kind == MessageKind::Sync {
            self.responses.push((id, K::Error(error)));
        } else {
            let from = self.publisher.describe(id);
            self.rejections.line("tp", || format!("rejected an async message from {from}: {error}"));
        }
    }

    fn call(&mut self, id: ConnId, name: &str, args: Vec<K>) -> Result<K, String> {
        let arity = |n: usize| {
            if args.len() == n { Ok(()) } else { Err(format!("{name}: expected {n} arguments, got {}", args.len())) }
        };
        match name {
            "upd" | ".u.upd" => {
                arity(2)?;
                let table = args[0]
                    .as_text()
                    .ok_or_else(|| format!("upd: table must be a symbol, got a {}", args[0].describe()))?;
                let data = strata_ipc::to_bytes(&args[1]);
                let data = view(&data).map_err(|e| e.to_string())?;
                self.upd(id, table, &data, self.config.clock.now_nanos()).map_err(Refused::into_message)?;
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
            ".strata.schema" => {
                arity(1)?;
                let table = args[0]
                    .as_text()
                    .ok_or_else(|| format!(".strata.schema: table must be a symbol, got a {}", args[0].describe()))?;
                let schema = self.config.schema.table(table).ok_or_else(|| {
                    format!(".strata.schema: no table {table}; tables: {}", self.table_names().join(" "))
                })?;
                Ok(K::Table(schema.empty_table()))
            }
            _ => Err(format!(
                "{name}: not a tickerplant function (upd .u.upd .u.sub .u.i .u.j .u.L .u.d .u.t .u.end \
                 .strata.counters .strata.schema)"
            )),
        }
    }

    /// `upd[table; data]`: checks the update, journals it, and publishes it (or
    /// buffers it for the publish timer).
    fn upd(&mut self, id: ConnId, table: &str, data: &View<'_>, now: i64) -> Result<(), Refused> {
        let tables = &self.config.schema.tables;
        let at = tables.iter().position(|t| t.name == table).ok_or_else(|| {
            let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
            format!("upd: no table {table}; tables: {}", names.join(" "))
        })?;
        self.scratch[at].append_update(&tables[at], data, now)?;
        self.log_and_publish(id, at)
    }

    /// Journals the update connection `id` sent, held in table `at`'s scratch
    /// columns, and publishes it (or stages it for the publish timer), leaving the
    /// scratch columns empty. Its messages go out at commit, once the journal holds
    /// it. An update past its publisher's bound on new symbols is refused first.
    fn log_and_publish(&mut self, id: ConnId, at: usize) -> Result<(), Refused> {
        let who = self.publishers.get(&id).map_or("a publisher", String::as_str);
        if let Err(e) = self.new_symbols.admit(who, &self.config.schema.tables[at], &self.scratch[at]) {
            self.scratch[at].clear();
            return Err(Refused::Invalid(e));
        }
        let Tickerplant {
            config,
            publisher,
            journal,
            scratch,
            staged,
            costs,
            batch_updates,
            published_records,
            journal_refused,
            refusals,
            ..
        } = self;
        let schema = &config.schema.tables[at];
        let update = &mut scratch[at];
        let timed = publisher.counters.updates % TIMED_EVERY == 0;
        let logging = timed.then(Instant::now);
        let logged = match journal.as_mut() {
            Some(journal) => journal.append_with(|buf| journal_record(buf, schema, update)),
            None => Ok(()),
        };
        if let Err(e) = logged {
            update.clear();
            *journal_refused += 1;
            refusals.line("tp", || format!("journal write failed, an update refused: {e}"));
            return Err(Refused::Unjournaled(format!("journal write failed, update refused: {e}")));
        }
        let publishing = timed.then(Instant::now);
        publisher.counters.updates += 1;
        *batch_updates += 1;
        publisher.counters.rows += update.rows() as u64;
        match config.batch {
            Some(_) => staged[at].extend(update),
            None => {
                let stamp = config.hop_times.then(|| clock::kdb_timestamp(config.clock.now_nanos()));
                publisher.publish(at, update, stamp);
                *published_records = journal.as_ref().map_or(0, |j| j.records());
            }
        }
        if let (Some(logging), Some(publishing)) = (logging, publishing) {
            let done = Instant::now();
            costs.push(((publishing - logging).as_nanos() as u64, (done - publishing).as_nanos() as u64));
        }
        update.clear();
        Ok(())
    }

    /// Ends a batch: writes the journal, hands subscribers their messages (or drops
    /// them if the write failed), syncs the journal as the policy says, then answers
    /// sync callers in order.
    fn commit(&mut self) {
        let written = Instant::now();
        let mut failure = self.write_batch();
        let handed = Instant::now();
        if failure.is_none() {
            for (buffer, staged) in self.buffers.iter_mut().zip(&mut self.staged) {
                if !staged.is_empty() {
                    buffer.extend(staged);
                    staged.clear();
                }
            }
            self.publisher.flush();
        }
        let synced = Instant::now();
        if failure.is_none()
            && let Some(journal) = &mut self.journal
            && let Err(e) = journal.commit(!self.responses.is_empty())
        {
            log::line("tp", &format!("journal fsync failed: {e}"));
            // The batch is in the journal file and published: a retry would be a
            // duplicate, but a power cut may still lose it.
            failure =
                Some(format!("journal fsync failed (the update is journaled and published, not known on disk): {e}"));
        }
        if let Some(error) = failure {
            for (_, answer) in &mut self.responses {
                if *answer == K::Identity {
                    *answer = K::Error(error.clone());
                }
            }
        }
        for (id, answer) in std::mem::take(&mut self.responses) {
            self.publisher.send(id, MessageKind::Response, &answer);
        }
        self.publisher.flush();
        // Each update's share of the batch's one write and one hand-off.
        let n = std::mem::take(&mut self.batch_updates).max(1);
        let (write, hand_off) = ((handed - written).as_nanos() as u64 / n, (synced - handed).as_nanos() as u64 / n);
        for (log, publish) in self.costs.drain(..) {
            self.tplog.record_nanos(log + write);
            self.tppub.record_nanos(publish + hand_off);
        }
    }

    /// Writes the batch's pending journal records. If that fails the batch is
    /// refused whole: its messages are dropped unsent, its staged rows forgotten,
    /// `.u.i` put back to what the journal holds, the refusals counted and logged.
    /// Returns the error its sync callers get.
    fn write_batch(&mut self) -> Option<String> {
        let journal = self.journal.as_mut()?;
        let before = journal.records();
        let error = journal.write_pending().err()?;
        let refused = before - journal.records();
        self.publisher.discard_pending();
        self.staged.iter_mut().for_each(WireColumns::clear);
        self.published_records = self.published_records.min(journal.records());
        self.journal_refused += refused;
        self.refusals.line("tp", || format!("journal write failed, {refused} updates refused: {error}"));
        Some(format!("journal write failed, update refused: {error}"))
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
        for (at, buffer) in self.buffers.iter_mut().enumerate() {
            if !buffer.is_empty() {
                let started = Instant::now();
                self.publisher.publish(at, buffer, stamp);
                buffer.clear();
                self.tppub.record(started.elapsed());
            }
        }
        self.publisher.flush();
        self.published_records = self.journal.as_ref().map_or(0, |j| j.records());
    }

    fn roll_to(&mut self, today: Date) -> Result<(), TickError> {
        while self.date < today {
            self.end_of_day()?;
        }
        Ok(())
    }

    /// kdb+'s `.u.endofday`, in the order that survives a crash at any step: publish
    /// what is buffered, sync day D's journal, create day D+1's (empty, synced with
    /// its directory), and only then send `.u.end[D]` and move to D+1. A tickerplant
    /// killed before D+1's journal exists restarts on D with its subscribers still on
    /// D; one killed after restarts on D+1 (the newest journal), and a subscriber
    /// that never saw `.u.end` finishes D from D's journal when it resumes. Never does
    /// a restarted tickerplant acknowledge into a day its subscribers have ended.
    fn end_of_day(&mut self) -> Result<(), TickError> {
        self.commit();
        self.flush_batch();
        let ended = self.date;
        let next = Date(ended.0 + 1);
        fault::point("tp.eod.flushed");
        let closed = match self.journal.take() {
            Some(mut j) => {
                j.sync()?;
                format!("; journal {} closed with {} records", j.path().display(), j.records())
            }
            None => String::new(),
        };
        fault::point("tp.eod.journal-synced");
        self.date = next;
        self.new_symbols.new_day();
        self.open_journal()?;
        fault::point("tp.eod.next-journal-created");
        let told = self.publisher.end_of_day(ended.0 - EPOCH_OFFSET_DAYS);
        fault::point("tp.eod.end-sent");
        log::line("tp", &format!("end of day {ended}: sent .u.end to {told} subscribers{closed}"));
        Ok(())
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
            ("journalRefused", self.journal_refused),
            ("symbolsRefused", self.new_symbols.refused),
        ];
        counters_dict(&self.publisher.counters, &gauges, &[("tplog", &self.tplog), ("tppub", &self.tppub)])
    }
}

/// The day a tickerplant starting now captures: today, or the newest journal's day
/// if that is later (a forced `.u.end[]` rolled to it before a restart).
fn resume_date(config: &TickerplantConfig) -> Result<Date, TickError> {
    let today = config.clock.today();
    let Some(dir) = &config.journal_dir else { return Ok(today) };
    let newest = journal_dates(dir, &config.schema.name)?.pop();
    Ok(newest.map_or(today, |day| day.max(today)))
}
