//! The chained tickerplant: subscribes to every table of an upstream tickerplant and
//! republishes to its own subscribers, at once or on a timer; it keeps no journal
//! and forwards end of day (kdb+tick's `chainedtick.q`).
//!
//! An RDB can start from it as from the primary: asked for `.u.i`/`.u.L` (kdb+'s
//! `(.u.sub[`;`];`.u `i`L)`), the chained tickerplant asks upstream over its
//! subscription connection and answers when that reply arrives. Everything upstream
//! published before its reply is counted in its `.u.i` and was republished before the
//! request is served; everything after is not counted and reaches the new subscriber.
//! So an RDB replaying the primary's journal up to `.u.i` and then taking this
//! tickerplant's updates sees every update once.
//!
//! When upstream goes away its subscribers stay connected: requests waiting for
//! upstream's position are failed (and new ones refused) until it is back, and it is
//! reconnected with backoff ([`crate::subscription`]). The chained tickerplant knows
//! where its subscribers stand in upstream's journal ([`Position`]): upstream's
//! `.u.L`/`.u.i` when it subscribed, and the rows per table received since, which
//! are whole journal records (upstream publishes whole updates, batched or not). On
//! resuming it reads the journal from there, skips per table the rows subscribers
//! had, and publishes the rest up to upstream's new `.u.i`, forwarding `.u.end` first
//! for a day upstream ended meanwhile. When the journal does not line up with what
//! they had (rows or bytes upstream truncated or quarantined, checked with a
//! checksum per column) or cannot be read, it cannot tell what they missed, so it
//! closes their connections: they resubscribe and recover from the journal, as an
//! RDB does.

use std::collections::VecDeque;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, bounded, select};
use strata_ipc::connection::Outgoing;
use strata_ipc::frame::plain_body;
use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::view::{View, to_value, view};
use strata_ipc::{Atom, Connection, Credentials, DEFAULT_MAX_MESSAGE, K, MessageKind, encode_message};
use strata_store::Date;

use crate::error::TickError;
use crate::journal;
use crate::journal::{journal_date, journal_of};
use crate::log;
use crate::pubsub::{Publisher, SlowPolicy};
use crate::request::Request;
use crate::schema::{Schema, TableSchema};
use crate::server::{ConnId, Event, Server, ServerConfig};
use crate::subscription::{Backoff, Stop, Subscription, subscribe};
use crate::update::{WireColumns, update_message};

/// Upstream messages waiting for the core thread.
const UPSTREAM_QUEUE: usize = 16_384;

/// Names whose answer is the primary's journal position, asked upstream.
const POSITION_CALLS: [&str; 3] = [".u.i", ".u.j", ".u.L"];

/// How a chained tickerplant runs.
#[derive(Clone, Debug)]
pub struct ChainedConfig {
    /// The upstream tickerplant, `host:port`.
    pub upstream: String,
    /// `user:password` for upstream.
    pub user_password: String,
    /// Address to listen on.
    pub listen: String,
    /// Publish on this timer instead of per update.
    pub batch: Option<Duration>,
    /// Users allowed to connect.
    pub credentials: Option<Credentials>,
    /// TLS on the port it serves (`None`: plain TCP only).
    pub tls: Option<strata_ipc::tls::ServerTls>,
    /// Bytes a subscriber's queue may hold.
    pub subscriber_limit: usize,
    /// What happens to a subscriber that does not keep up.
    pub slow_policy: SlowPolicy,
}

enum Upstream {
    /// An async message's body (decompressed, little-endian).
    Message(Vec<u8>),
    /// The answer to a position request.
    Answer(Result<K, String>),
    /// The connection ended, and why; reconnecting follows.
    Gone(String),
    /// Upstream answered a new subscription; its socket, for asking it.
    Back(Subscription, Outgoing),
}

/// A running chained tickerplant. Dropping the handle stops it.
pub struct ChainedHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Stop,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ChainedHandle {
    /// Waits until it is stopped: it rides out upstream's restarts.
    pub fn join(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Stops it: its subscribers' connections close, as when a tickerplant exits.
    pub fn stop(self) {
        self.stop.stop();
        self.join();
    }
}

impl Drop for ChainedHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop.stop();
        }
    }
}

/// Connects upstream, takes its schema and journal position, and starts
/// republishing.
pub fn start(config: ChainedConfig) -> Result<ChainedHandle, TickError> {
    let (up, subscription) = subscribe(&config.upstream, &config.user_password)?;
    let asker = up.outgoing();
    let server = Server::start(ServerConfig {
        role: "ctp",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        tls: config.tls.clone(),
        max_message: DEFAULT_MAX_MESSAGE,
        outbox_limit: config.subscriber_limit,
    })?;
    let addr = server.addr;
    log::line("ctp", &format!("subscribed to {}; listening on {addr}", config.upstream));
    let (tx, rx) = bounded(UPSTREAM_QUEUE);
    let stop = Stop::default();
    let follower = Follower {
        upstream: config.upstream.clone(),
        user_password: config.user_password.clone(),
        schema: subscription.schema.clone(),
        tx,
        stop: stop.clone(),
    };
    std::thread::Builder::new()
        .name("ctp-upstream".into())
        .spawn(move || follower.run(up))
        .map_err(|e| TickError::Other(e.to_string()))?;
    let scratch: Vec<WireColumns> =
        subscription.schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect();
    let mut chained = Chained {
        buffers: scratch.clone(),
        position: Position::at(&subscription, &subscription.schema.tables),
        scratch,
        publisher: Publisher::new("ctp", subscription.schema, config.slow_policy),
        batch: config.batch,
        upstream: config.upstream,
        asker: Some(asker),
        asked: false,
        parked: VecDeque::new(),
    };
    let thread = std::thread::Builder::new()
        .name("ctp-core".into())
        .spawn(move || {
            let mut last_flush = Instant::now();
            let tick = chained.batch.unwrap_or(Duration::from_secs(3600));
            loop {
                select! {
                    recv(server.events) -> event => match event {
                        Ok(event) => chained.client_event(event),
                        Err(_) => break,
                    },
                    recv(rx) -> message => match message {
                        Ok(Upstream::Message(body)) => chained.upstream_message(&body),
                        Ok(Upstream::Answer(position)) => chained.serve_parked(position),
                        Ok(Upstream::Gone(why)) => chained.gone(&why),
                        Ok(Upstream::Back(subscription, asker)) => chained.back(subscription, asker),
                        // The upstream thread ends only when stopped.
                        Err(_) => break,
                    },
                    default(tick.saturating_sub(last_flush.elapsed())) => {}
                }
                if chained.batch.is_some_and(|b| last_flush.elapsed() >= b) {
                    chained.flush();
                    last_flush = Instant::now();
                }
                chained.publisher.flush();
            }
            chained.flush();
            log::line("ctp", "stopped");
            chained.publisher.close_all();
            server.stop();
        })
        .map_err(|e| TickError::Other(e.to_string()))?;
    Ok(ChainedHandle { addr, stop, thread: Some(thread) })
}

/// The upstream side, on its own thread: reads what upstream sends into the core's
/// queue and, when upstream goes away, says so and reconnects with backoff until
/// upstream answers with the same tables, or the chained tickerplant stops.
struct Follower {
    upstream: String,
    user_password: String,
    schema: Schema,
    tx: Sender<Upstream>,
    stop: Stop,
}

impl Follower {
    fn run(self, mut up: Connection) {
        loop {
            self.stop.watch(up.socket());
            let Some(gone) = self.read(&mut up) else { return };
            if self.stop.is_stopped() || self.tx.send(Upstream::Gone(gone)).is_err() {
                return;
            }
            match self.reconnect() {
                Some(next) => up = next,
                None => return,
            }
        }
    }

    /// Hands upstream's messages to the core until the connection ends; why it
    /// ended, or `None` when the core has gone.
    fn read(&self, up: &mut Connection) -> Option<String> {
        loop {
            let (header, raw) = match up.reader().next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Some("closed the connection".into()),
                Err(e) => return Some(e.to_string()),
            };
            let message = match header.kind {
                MessageKind::Response => Upstream::Answer(
                    strata_ipc::decode_body(&header, raw, DEFAULT_MAX_MESSAGE).map_err(|e| e.to_string()).and_then(
                        |v| match v {
                            K::Error(e) => Err(format!("upstream: {e}")),
                            v => Ok(v),
                        },
                    ),
                ),
                _ => match plain_body(&header, raw, DEFAULT_MAX_MESSAGE) {
                    Ok(body) => Upstream::Message(body.into_owned()),
                    Err(e) => {
                        log::line("ctp", &format!("ignored a malformed message from upstream: {e}"));
                        continue;
                    }
                },
            };
            self.tx.send(message).ok()?;
        }
    }

    /// Subscribes again after a [`Backoff`] wait per attempt; the new connection once
    /// the core has its answer, or `None` when stopped.
    fn reconnect(&self) -> Option<Connection> {
        let mut backoff = Backoff::default();
        while backoff.wait(&self.stop) {
            let attempt = subscribe(&self.upstream, &self.user_password).and_then(|(up, subscription)| {
                if let Some(change) = subscription.schema_change(&self.schema) {
                    return Err(TickError::Schema(format!("{change}; not resuming (restart the chained tickerplant)")));
                }
                let asker = up.outgoing();
                Ok((up, subscription, asker))
            });
            match attempt {
                Ok((up, subscription, asker)) => {
                    self.tx.send(Upstream::Back(subscription, asker)).ok()?;
                    return Some(up);
                }
                Err(e) if backoff.worth_logging() => log::line(
                    "ctp",
                    &format!(
                        "cannot resume from {} (attempt {}): {e}; trying again",
                        self.upstream,
                        backoff.attempts()
                    ),
                ),
                Err(_) => {}
            }
        }
        None
    }
}

/// Where the chained tickerplant's subscribers stand in upstream's journal:
/// upstream's `.u.L` and `.u.i` when it last subscribed (or record 0 of the next
/// day's journal after `.u.end`), and per table what was received since.
struct Position {
    journal: Option<PathBuf>,
    records: u64,
    /// Per table, rows received since.
    since: Vec<u64>,
    /// Per table and column, a CRC-32C of the column bytes received since. A
    /// column's bytes are the same whether one message or many carried the rows, so
    /// the journal's records can be checked against them: rows the journal lost
    /// (truncated or quarantined) and new records of the same sizes are told apart.
    digests: Vec<Vec<u32>>,
}

impl Position {
    fn at(subscription: &Subscription, tables: &[TableSchema]) -> Position {
        Position {
            journal: subscription.journal.clone(),
            records: subscription.records,
            since: vec![0; tables.len()],
            digests: tables.iter().map(|t| vec![0; t.columns.len()]).collect(),
        }
    }

    /// Counts the rows of table `at` in `columns` as received.
    fn received(&mut self, at: usize, columns: &WireColumns) {
        self.since[at] += columns.rows() as u64;
        digest(&mut self.digests[at], columns);
    }

    /// After upstream's end of day `date`: the start of the next day's journal.
    fn ended(&mut self, date: Date) {
        self.journal = self.journal.as_deref().and_then(|j| journal_of(j, Date(date.0 + 1)));
        self.records = 0;
        self.since.iter_mut().for_each(|n| *n = 0);
        self.digests.iter_mut().flatten().for_each(|d| *d = 0);
    }
}

/// Adds `columns`' bytes to per-column CRC-32Cs.
fn digest(digests: &mut [u32], columns: &WireColumns) {
    for (i, d) in digests.iter_mut().enumerate() {
        *d = crc32c::crc32c_append(*d, columns.column(i));
    }
}

/// The chained tickerplant's state, owned by its core thread.
struct Chained {
    publisher: Publisher,
    /// Per table, rows waiting for the publish timer (batch mode).
    buffers: Vec<WireColumns>,
    /// Per table, the update being checked.
    scratch: Vec<WireColumns>,
    batch: Option<Duration>,
    /// Upstream's address, for log lines and errors.
    upstream: String,
    /// The subscription connection's socket, for asking upstream; `None` while
    /// upstream is away.
    asker: Option<Outgoing>,
    /// Whether a position request is on its way upstream.
    asked: bool,
    /// Requests waiting for upstream's position, in arrival order.
    parked: VecDeque<(ConnId, MessageKind, Request)>,
    /// Where the subscribers stand in upstream's journal.
    position: Position,
}

impl Chained {
    fn upstream_message(&mut self, body: &[u8]) {
        let Ok(message) = view(body) else {
            log::line("ctp", "ignored a malformed message from upstream");
            return;
        };
        if let Some((table, data, stamp)) = update_message(&message) {
            if let Some(at) = self.take_update(table, &data) {
                self.position.received(at, &self.scratch[at]);
                self.deliver(at, stamp);
            }
            return;
        }
        match to_value(&message) {
            Ok(K::List(items)) if items.len() == 2 && items[0].as_text() == Some(".u.end") => {
                if let K::Atom(Atom::Date(date)) = items[1] {
                    self.flush();
                    let told = self.publisher.end_of_day(date);
                    self.position.ended(Date(date + EPOCH_OFFSET_DAYS));
                    log::line("ctp", &format!("forwarded end of day to {told} subscribers"));
                }
            }
            _ => log::line("ctp", &format!("ignored a {} from upstream", message.describe())),
        }
    }

    /// Checks update `data` of `table` into that table's scratch columns; the table's
    /// number, or `None` (logged) when upstream has no such table or the data does
    /// not fit it.
    fn take_update(&mut self, table: &str, data: &View<'_>) -> Option<usize> {
        let at = self.publisher.schema().tables.iter().position(|t| t.name == table)?;
        let scratch = &mut self.scratch[at];
        scratch.clear();
        if let Err(e) = scratch.append_update(&self.publisher.schema().tables[at], data, 0) {
            log::line("ctp", &format!("ignored an update from upstream: {e}"));
            return None;
        }
        Some(at)
    }

    /// Publishes the update in table `at`'s scratch columns, or buffers it for the
    /// publish timer.
    fn deliver(&mut self, at: usize, stamp: Option<i64>) {
        match self.batch {
            Some(_) => self.buffers[at].extend(&self.scratch[at]),
            None => self.publisher.publish(at, &self.scratch[at], stamp),
        }
    }

    /// Upstream went away: subscribers stay connected; requests waiting for its
    /// position are failed.
    fn gone(&mut self, why: &str) {
        self.flush();
        self.asker = None;
        log::line(
            "ctp",
            &format!(
                "upstream {} {why}; keeping {} subscribers connected, reconnecting",
                self.upstream,
                self.publisher.subscribers()
            ),
        );
        if !self.parked.is_empty() {
            let error = format!("upstream {} went away before answering; ask again once it is back", self.upstream);
            self.serve_parked(Err(error));
        }
        self.asked = false;
    }

    /// Upstream answered a new subscription: subscribers get what they missed
    /// ([`Chained::catch_up`]), or, when that cannot be told, their connections are
    /// closed so they resubscribe.
    fn back(&mut self, subscription: Subscription, asker: Outgoing) {
        match self.catch_up(&subscription) {
            Ok(published) => log::line(
                "ctp",
                &format!("upstream {} is back: published the {published} updates subscribers missed", self.upstream),
            ),
            Err(why) => {
                log::line(
                    "ctp",
                    &format!(
                        "upstream {} is back, but what subscribers missed cannot be told: {why}; closing their connections so they resubscribe",
                        self.upstream
                    ),
                );
                self.flush();
                self.publisher.close_all();
            }
        }
        self.position = Position::at(&subscription, &self.publisher.schema().tables);
        self.asker = Some(asker);
    }

    /// Publishes what subscribers missed up to upstream's new position: the rest of
    /// the held day's journal and `.u.end` for each day upstream ended meanwhile,
    /// then the current journal up to `.u.i`. Returns the updates published.
    fn catch_up(&mut self, now: &Subscription) -> Result<u64, String> {
        let (Some(mut journal), Some(current)) = (self.position.journal.clone(), now.journal.clone()) else {
            return match (&self.position.journal, &now.journal) {
                (None, None) => {
                    log::line("ctp", "upstream keeps no journal: updates published while it was away are lost");
                    Ok(0)
                }
                _ => Err("upstream's journal came or went".into()),
            };
        };
        let mut published = 0;
        while journal != current {
            let moved = format!("upstream's journal moved from {} to {}", journal.display(), current.display());
            let (Some(day), Some(today)) = (journal_date(&journal), journal_date(&current)) else { return Err(moved) };
            if today <= day {
                return Err(moved);
            }
            if journal.is_file() {
                published += self.replay_missed(&journal, None)?;
                self.flush();
                let told = self.publisher.end_of_day(day.0 - EPOCH_OFFSET_DAYS);
                log::line(
                    "ctp",
                    &format!("forwarded end of day {day}, which upstream sent while away, to {told} subscribers"),
                );
            } else if self.position.records > 0 || self.position.since.iter().any(|n| *n > 0) {
                return Err(format!("{} cannot be read", journal.display()));
            }
            self.position.ended(day);
            journal = self.position.journal.clone().ok_or(moved)?;
        }
        Ok(published + self.replay_missed(&current, Some(now.records))?)
    }

    /// Publishes the updates of journal `path` from the position's record up to
    /// record `to` (the end for `None`), less what subscribers had: per table, the
    /// first `since` rows. Fails when the journal does not line up with those rows
    /// (a record only partly had, fewer rows than they had, or other bytes). Returns
    /// the updates published.
    fn replay_missed(&mut self, path: &Path, to: Option<u64>) -> Result<u64, String> {
        let from = self.position.records;
        let mut published = 0;
        let mut skipped: Vec<Vec<u32>> = self.position.digests.iter().map(|d| vec![0; d.len()]).collect();
        let replayed = journal::replay(path, to, |index, payload| {
            if index < from {
                return Ok(());
            }
            let message = view(payload).map_err(|e| TickError::Journal(format!("record {index}: {e}")))?;
            let Some((table, data, _)) = update_message(&message) else { return Ok(()) };
            let Some(at) = self.take_update(table, &data) else { return Ok(()) };
            let rows = self.scratch[at].rows() as u64;
            let had = &mut self.position.since[at];
            if *had >= rows {
                *had -= rows;
                digest(&mut skipped[at], &self.scratch[at]);
                if *had == 0 && skipped[at] != self.position.digests[at] {
                    let e = format!("record {index}: the {table} rows subscribers had are not the journal's");
                    return Err(TickError::Journal(e));
                }
                return Ok(());
            }
            if *had > 0 {
                return Err(TickError::Journal(format!(
                    "record {index}: subscribers had {had} of its {rows} {table} rows"
                )));
            }
            self.deliver(at, None);
            published += 1;
            Ok(())
        });
        let report = replayed.map_err(|e| format!("{}: {e}", path.display()))?;
        let tables = &self.publisher.schema().tables;
        if let Some((table, had)) = tables.iter().zip(&self.position.since).find(|(_, had)| **had > 0) {
            return Err(format!(
                "{}: subscribers had {had} more {} rows than its {} records hold",
                path.display(),
                table.name,
                report.records
            ));
        }
        self.position.records = report.records.max(from);
        Ok(published)
    }

    /// Publishes what the timer has been holding.
    fn flush(&mut self) {
        for (at, buffer) in self.buffers.iter_mut().enumerate() {
            if !buffer.is_empty() {
                self.publisher.publish(at, buffer, None);
                buffer.clear();
            }
        }
        self.publisher.flush();
    }

    fn client_event(&mut self, event: Event) {
        match event {
            Event::Opened { peer, user, outbox, .. } => self.publisher.opened(outbox, peer, user),
            Event::Closed { id, reason } => self.publisher.closed(id, &reason),
            Event::Frames { id, frames, .. } => {
                for (header, body) in frames.iter() {
                    let request = strata_ipc::decode_body(&header, body, DEFAULT_MAX_MESSAGE)
                        .map_err(|e| e.to_string())
                        .and_then(Request::from_message);
                    match request {
                        Ok(request) if mentions(&request, &POSITION_CALLS) => self.park(id, header.kind, request),
                        Ok(request) => {
                            let result = self.evaluate(id, request, None);
                            self.answer(id, header.kind, result);
                        }
                        Err(e) => self.answer(id, header.kind, Err(e)),
                    }
                }
            }
        }
    }

    /// Holds a request that needs upstream's journal position and asks for it; while
    /// upstream is away the request fails at once.
    fn park(&mut self, id: ConnId, kind: MessageKind, request: Request) {
        self.parked.push_back((id, kind, request));
        if self.asked {
            return;
        }
        let Some(asker) = &mut self.asker else {
            let error = format!("upstream {} is away; ask again once it is back", self.upstream);
            return self.serve_parked(Err(error));
        };
        let ask = encode_message(MessageKind::Sync, &K::string("`.u `i`j`L"), false);
        match asker.write_all(&ask) {
            Ok(()) => self.asked = true,
            Err(e) => self.serve_parked(Err(format!("cannot ask upstream for its journal position: {e}"))),
        }
    }

    /// Upstream's answer to `.u.i .u.j .u.L`: every parked request is served now,
    /// after everything upstream published before answering.
    fn serve_parked(&mut self, answer: Result<K, String>) {
        self.asked = false;
        // Rows the timer holds were counted upstream: they go to the present
        // subscribers, not to one subscribing now.
        self.flush();
        let position = answer.and_then(|v| match v {
            K::List(items) if items.len() == 3 => Ok(items),
            other => Err(format!("upstream answered .u.i .u.j .u.L with a {}", other.describe())),
        });
        for (id, kind, request) in std::mem::take(&mut self.parked) {
            let result = match &position {
                Ok(items) => self.evaluate(id, request, Some(items)),
                Err(e) => Err(e.clone()),
            };
            self.answer(id, kind, result);
        }
    }

    /// Evaluates a client's request; `position` is upstream's `(i; j; L)`.
    fn evaluate(&mut self, id: ConnId, request: Request, position: Option<&[K]>) -> Result<K, String> {
        let publisher = &mut self.publisher;
        request.eval(&mut |name, args| match (name, args.as_slice()) {
            (".u.sub", [t, s]) => publisher.subscribe(id, t, s),
            (".u.t" | "tables", []) => Ok(K::symbols(publisher.schema().tables.iter().map(|t| t.name.clone()))),
            (".u.i" | ".u.j" | ".u.L", []) => {
                let at = POSITION_CALLS.iter().position(|p| *p == name).expect("a position call");
                position.map(|p| p[at].clone()).ok_or_else(|| format!("{name}: upstream's position is not known"))
            }
            (".strata.counters", []) => {
                let (queued, max) = publisher.queue_depths();
                let gauges =
                    [("subscribers", publisher.subscribers() as u64), ("queuedBytes", queued), ("maxQueuedBytes", max)];
                Ok(crate::counters::counters_dict(&publisher.counters, &gauges, &[]))
            }
            _ => {
                Err(format!("{name}: not a chained tickerplant function (.u.sub .u.t .u.i .u.j .u.L .strata.counters)"))
            }
        })
    }

    fn answer(&mut self, id: ConnId, kind: MessageKind, result: Result<K, String>) {
        match (kind, result) {
            (MessageKind::Sync, result) => {
                self.publisher.send(id, MessageKind::Response, &result.unwrap_or_else(K::Error));
            }
            (_, Err(e)) => {
                log::line("ctp", &format!("refused an async message from {}: {e}", self.publisher.describe(id)))
            }
            _ => {}
        }
    }
}

/// Whether `request` calls any of `names`.
fn mentions(request: &Request, names: &[&str]) -> bool {
    match request {
        Request::Call(name, args) => names.contains(&name.as_str()) || args.iter().any(|a| mentions(a, names)),
        Request::List(items) => items.iter().any(|a| mentions(a, names)),
        Request::Value(_) => false,
    }
}
