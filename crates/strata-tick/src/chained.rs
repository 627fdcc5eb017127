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

use std::collections::VecDeque;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select};
use strata_ipc::frame::plain_body;
use strata_ipc::view::{to_value, view};
use strata_ipc::{Atom, Connection, Credentials, DEFAULT_MAX_MESSAGE, K, MessageKind, encode_message};

use crate::error::TickError;
use crate::log;
use crate::pubsub::{Publisher, SlowPolicy};
use crate::request::Request;
use crate::schema::Schema;
use crate::server::{ConnId, Event, Server, ServerConfig};
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
    Gone(String),
}

/// A running chained tickerplant.
pub struct ChainedHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    thread: std::thread::JoinHandle<()>,
}

impl ChainedHandle {
    /// Waits until upstream goes away.
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Connects upstream, takes its schema, and starts republishing.
pub fn start(config: ChainedConfig) -> Result<ChainedHandle, TickError> {
    let mut up = Connection::connect_timeout(&config.upstream, &config.user_password, Duration::from_secs(5))?;
    let answer = up.sync(&K::List(vec![K::symbol(".u.sub"), K::symbol(""), K::symbol("")]))?;
    let tables = subscriptions(answer)?;
    let schema = Schema::from_tables("sym", &tables).map_err(TickError::Other)?;
    let asker = up.socket().try_clone().map_err(|e| TickError::Other(format!("ctp: {e}")))?;
    let server = Server::start(ServerConfig {
        role: "ctp",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        max_message: DEFAULT_MAX_MESSAGE,
        outbox_limit: config.subscriber_limit,
    })?;
    let addr = server.addr;
    log::line("ctp", &format!("subscribed to {}; listening on {addr}", config.upstream));
    let (tx, rx) = bounded(UPSTREAM_QUEUE);
    let upstream = config.upstream.clone();
    std::thread::Builder::new()
        .name("ctp-upstream".into())
        .spawn(move || {
            let gone = loop {
                let (header, raw) = match up.reader().next_frame() {
                    Ok(Some(frame)) => frame,
                    Ok(None) => break format!("{upstream} closed the connection"),
                    Err(e) => break format!("{upstream}: {e}"),
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
                if tx.send(message).is_err() {
                    return;
                }
            };
            let _ = tx.send(Upstream::Gone(gone));
        })
        .map_err(|e| TickError::Other(e.to_string()))?;
    let mut chained = Chained {
        buffers: schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect(),
        scratch: schema.tables.iter().map(|t| WireColumns::new(t.columns.len())).collect(),
        publisher: Publisher::new("ctp", schema, config.slow_policy),
        batch: config.batch,
        asker,
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
                        Ok(Upstream::Answer(position)) => chained.position(position),
                        Ok(Upstream::Gone(why)) => {
                            chained.flush();
                            log::line("ctp", &format!("upstream gone ({why}); stopping"));
                            break;
                        }
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
            chained.publisher.close_all();
            server.stop();
        })
        .map_err(|e| TickError::Other(e.to_string()))?;
    Ok(ChainedHandle { addr, thread })
}

/// The chained tickerplant's state, owned by its core thread.
struct Chained {
    publisher: Publisher,
    /// Per table, rows waiting for the publish timer (batch mode).
    buffers: Vec<WireColumns>,
    /// Per table, the update being checked.
    scratch: Vec<WireColumns>,
    batch: Option<Duration>,
    /// The subscription connection's socket, for asking upstream.
    asker: TcpStream,
    /// Whether a position request is on its way upstream.
    asked: bool,
    /// Requests waiting for upstream's position, in arrival order.
    parked: VecDeque<(ConnId, MessageKind, Request)>,
}

impl Chained {
    fn upstream_message(&mut self, body: &[u8]) {
        let Ok(message) = view(body) else {
            log::line("ctp", "ignored a malformed message from upstream");
            return;
        };
        if let Some((table, data, stamp)) = update_message(&message) {
            let Some(at) = self.publisher.schema().tables.iter().position(|t| t.name == table) else { return };
            let scratch = &mut self.scratch[at];
            scratch.clear();
            if let Err(e) = scratch.append_update(&self.publisher.schema().tables[at], &data, 0) {
                log::line("ctp", &format!("ignored an update from upstream: {e}"));
                return;
            }
            match self.batch {
                Some(_) => self.buffers[at].extend(scratch),
                None => self.publisher.publish(at, &self.scratch[at], stamp),
            }
            return;
        }
        match to_value(&message) {
            Ok(K::List(items)) if items.len() == 2 && items[0].as_text() == Some(".u.end") => {
                if let K::Atom(Atom::Date(date)) = items[1] {
                    self.flush();
                    let told = self.publisher.end_of_day(date);
                    log::line("ctp", &format!("forwarded end of day to {told} subscribers"));
                }
            }
            _ => log::line("ctp", &format!("ignored a {} from upstream", message.describe())),
        }
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

    /// Holds a request that needs upstream's journal position and asks for it.
    fn park(&mut self, id: ConnId, kind: MessageKind, request: Request) {
        self.parked.push_back((id, kind, request));
        if !self.asked {
            let ask = encode_message(MessageKind::Sync, &K::string("`.u `i`j`L"), false);
            match self.asker.write_all(&ask) {
                Ok(()) => self.asked = true,
                Err(e) => self.position(Err(format!("cannot ask upstream for its journal position: {e}"))),
            }
        }
    }

    /// Upstream's answer to `.u.i .u.j .u.L`: every parked request is served now,
    /// after everything upstream published before answering.
    fn position(&mut self, answer: Result<K, String>) {
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

fn subscriptions(answer: K) -> Result<Vec<(String, strata_ipc::Table)>, TickError> {
    let bad = || TickError::Other("upstream's .u.sub answer is not a list of (table; empty table)".into());
    let K::List(subs) = answer else { return Err(bad()) };
    subs.into_iter()
        .map(|sub| match sub {
            K::List(pair) if pair.len() == 2 => {
                let mut pair = pair.into_iter();
                match (pair.next(), pair.next()) {
                    (Some(K::Atom(Atom::Symbol(name))), Some(K::Table(t))) => Ok((name, t)),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        })
        .collect()
}
