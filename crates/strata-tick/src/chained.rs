//! The chained tickerplant: subscribes to every table of an upstream tickerplant and
//! republishes to its own subscribers, at once or on a timer; it keeps no journal
//! and forwards end of day (kdb+tick's `chainedtick.q`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select};
use strata_ipc::{Atom, Connection, Credentials, K, MessageKind};

use crate::error::TickError;
use crate::log;
use crate::memtable::MemTable;
use crate::pubsub::{Publisher, SlowPolicy};
use crate::request::Request;
use crate::schema::Schema;
use crate::server::{ConnId, Event, Server, ServerConfig};

/// Upstream messages waiting for the core thread.
const UPSTREAM_QUEUE: usize = 16_384;

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
    Update(String, Vec<K>, Option<i64>),
    End(i32),
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
    let server = Server::start(ServerConfig {
        role: "ctp",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        max_message: strata_ipc::DEFAULT_MAX_MESSAGE,
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
                match up.receive() {
                    Ok(Some((_, value))) => {
                        if let Some(message) = upstream_message(value)
                            && tx.send(message).is_err()
                        {
                            return;
                        }
                    }
                    Ok(None) => break format!("{upstream} closed the connection"),
                    Err(e) => break format!("{upstream}: {e}"),
                }
            };
            let _ = tx.send(Upstream::Gone(gone));
        })
        .map_err(|e| TickError::Other(e.to_string()))?;
    let mut publisher = Publisher::new("ctp", schema.clone(), config.slow_policy);
    let mut buffers: BTreeMap<String, MemTable> =
        schema.tables.iter().map(|t| (t.name.clone(), MemTable::new(t.clone()))).collect();
    let batch = config.batch;
    let thread = std::thread::Builder::new()
        .name("ctp-core".into())
        .spawn(move || {
            let mut last_flush = Instant::now();
            let tick = batch.unwrap_or(Duration::from_secs(3600));
            loop {
                select! {
                    recv(server.events) -> event => match event {
                        Ok(event) => client_event(&mut publisher, event),
                        Err(_) => break,
                    },
                    recv(rx) -> message => match message {
                        Ok(Upstream::Update(table, columns, stamp)) => match buffers.get_mut(&table) {
                            Some(buffer) if batch.is_some() => {
                                let rows = columns.first().map_or(0, K::count);
                                buffer.append(columns, rows);
                            }
                            _ => publisher.publish(&table, &columns, stamp),
                        },
                        Ok(Upstream::End(date)) => {
                            flush(&mut publisher, &mut buffers);
                            let told = publisher.end_of_day(date);
                            log::line("ctp", &format!("forwarded end of day to {told} subscribers"));
                        }
                        Ok(Upstream::Gone(why)) => {
                            flush(&mut publisher, &mut buffers);
                            log::line("ctp", &format!("upstream gone ({why}); stopping"));
                            break;
                        }
                        Err(_) => break,
                    },
                    default(tick.saturating_sub(last_flush.elapsed())) => {}
                }
                if batch.is_some_and(|b| last_flush.elapsed() >= b) {
                    flush(&mut publisher, &mut buffers);
                    last_flush = Instant::now();
                }
            }
            publisher.close_all();
            server.stop();
        })
        .map_err(|e| TickError::Other(e.to_string()))?;
    Ok(ChainedHandle { addr, thread })
}

fn flush(publisher: &mut Publisher, buffers: &mut BTreeMap<String, MemTable>) {
    for (name, buffer) in buffers.iter_mut() {
        if !buffer.is_empty() {
            let (_, columns) = buffer.take().into_parts();
            publisher.publish(name, &columns, None);
        }
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

fn upstream_message(value: K) -> Option<Upstream> {
    let K::List(items) = value else { return None };
    let mut items = items.into_iter();
    match (items.next().as_ref().and_then(K::as_text), items.next(), items.next(), items.next()) {
        (Some("upd"), Some(K::Atom(Atom::Symbol(t))), Some(K::Table(data)), stamp) => {
            let stamp = match stamp {
                Some(K::Atom(Atom::Timestamp(s))) => Some(s),
                _ => None,
            };
            Some(Upstream::Update(t, data.into_parts().1, stamp))
        }
        (Some(".u.end"), Some(K::Atom(Atom::Date(d))), ..) => Some(Upstream::End(d)),
        _ => None,
    }
}

fn client_event(publisher: &mut Publisher, event: Event) {
    match event {
        Event::Opened { peer, user, outbox, .. } => publisher.opened(outbox, peer, user),
        Event::Closed { id, reason } => publisher.closed(id, &reason),
        Event::Malformed { id, kind, error } => answer(publisher, id, kind, Err(error)),
        Event::Message { id, kind, value, .. } => {
            let result = Request::from_message(value).and_then(|r| {
                r.eval(&mut |name, args| match (name, args.as_slice()) {
                    (".u.sub", [t, s]) => publisher.subscribe(id, t, s),
                    (".u.t" | "tables", []) => {
                        Ok(K::symbols(publisher.schema().tables.iter().map(|t| t.name.clone())))
                    }
                    (".strata.counters", []) => {
                        let (queued, max) = publisher.queue_depths();
                        let gauges = [("subscribers", publisher.subscribers() as u64), ("queuedBytes", queued), ("maxQueuedBytes", max)];
                        Ok(crate::counters::counters_dict(&publisher.counters, &gauges, &[]))
                    }
                    _ => Err(format!("{name}: not a chained tickerplant function (.u.sub .u.t .strata.counters); it keeps no journal, so ask the primary for .u.i and .u.L")),
                })
            });
            answer(publisher, id, kind, result);
        }
    }
}

fn answer(publisher: &mut Publisher, id: ConnId, kind: MessageKind, result: Result<K, String>) {
    match (kind, result) {
        (MessageKind::Sync, result) => publisher.send(id, MessageKind::Response, &result.unwrap_or_else(K::Error)),
        (_, Err(e)) => log::line("ctp", &format!("refused an async message from {}: {e}", publisher.describe(id))),
        _ => {}
    }
}
