//! Publishing to subscribers, as kdb+tick's `u.q` does: `.u.sub[table; syms]`
//! (empty symbol = every table or every sym; a new subscription to a table replaces
//! the old), per-subscriber symbol filters, and `(`upd; table; data)` sent async.
//!
//! Messages are encoded once per update into each subscriber's pending bytes and
//! sent in one piece per batch ([`Publisher::flush`]), so a burst of updates costs
//! one socket write per subscriber (made by its writer thread only when the
//! subscriber has fallen behind). Every subscriber's queue is
//! bounded in bytes; one that falls behind is disconnected (or, by choice, skipped)
//! with a logged reason.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use strata_ipc::frame::{COMPRESSION_THRESHOLD, compress_message};
use strata_ipc::{Atom, K, MessageKind, encode_message};

use crate::counters::Counters;
use crate::log;
use crate::schema::Schema;
use crate::server::{ConnId, KEPT_BUFFER_BYTES, Outbox, OutboxError};
use crate::update::{Selected, WireColumns, publish_message};

/// What to do with a subscriber whose queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SlowPolicy {
    /// Disconnect it (it can reconnect and replay the journal).
    #[default]
    Disconnect,
    /// Skip the update for it and count the drop.
    Drop,
}

impl std::str::FromStr for SlowPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<SlowPolicy, String> {
        match s {
            "disconnect" => Ok(SlowPolicy::Disconnect),
            "drop" => Ok(SlowPolicy::Drop),
            _ => Err(format!("slow-subscriber policy {s:?}: expected disconnect or drop")),
        }
    }
}

struct Client {
    outbox: Outbox,
    peer: SocketAddr,
    user: String,
    /// Messages queued since the last flush, end to end.
    pending: Vec<u8>,
    /// How many.
    pending_messages: u64,
}

impl Client {
    /// Queues one framed message, compressed when the peer is remote and the
    /// message large, as kdb+ does.
    fn queue(&mut self, message: &[u8]) -> usize {
        let packed = (self.outbox.remote() && message.len() > COMPRESSION_THRESHOLD)
            .then(|| compress_message(message))
            .flatten();
        let bytes = packed.as_deref().unwrap_or(message);
        self.pending.extend_from_slice(bytes);
        self.pending_messages += 1;
        bytes.len()
    }

    /// Queues the message `encode` writes: straight into the pending bytes when it
    /// goes out as it is (a local peer), saving a copy of every update.
    fn queue_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> usize {
        if self.outbox.remote() {
            let mut own = Vec::new();
            encode(&mut own);
            return self.queue(&own);
        }
        let start = self.pending.len();
        encode(&mut self.pending);
        self.pending_messages += 1;
        self.pending.len() - start
    }
}

struct Subscription {
    conn: ConnId,
    /// `None`: every sym.
    syms: Option<HashSet<Box<[u8]>>>,
}

/// Connections, subscriptions and publishing for a tickerplant or chained one.
pub struct Publisher {
    role: &'static str,
    schema: Schema,
    clients: HashMap<ConnId, Client>,
    /// Per table (in schema order), its subscribers.
    subscriptions: Vec<Vec<Subscription>>,
    policy: SlowPolicy,
    /// Clients with pending messages.
    dirty: Vec<ConnId>,
    /// The message being encoded.
    message: Vec<u8>,
    /// Counts kept for `.strata.counters[]`.
    pub counters: Counters,
}

impl Publisher {
    /// A publisher for the tables of `schema`.
    pub fn new(role: &'static str, schema: Schema, policy: SlowPolicy) -> Publisher {
        let subscriptions = schema.tables.iter().map(|_| Vec::new()).collect();
        Publisher {
            role,
            schema,
            clients: HashMap::new(),
            subscriptions,
            policy,
            dirty: Vec::new(),
            message: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// A client connected.
    pub fn opened(&mut self, outbox: Outbox, peer: SocketAddr, user: String) {
        log::line(self.role, &format!("connection {} from {peer} (user {user:?})", outbox.id()));
        self.clients.insert(outbox.id(), Client { outbox, peer, user, pending: Vec::new(), pending_messages: 0 });
    }

    /// A client went away: its subscriptions end (kdb+'s `.z.pc`).
    pub fn closed(&mut self, id: ConnId, reason: &str) {
        if let Some(client) = self.clients.remove(&id) {
            let subscribed = self.unsubscribe(id);
            log::line(
                self.role,
                &format!(
                    "connection {id} from {} (user {:?}) closed: {reason}{}",
                    client.peer,
                    client.user,
                    if subscribed.is_empty() {
                        String::new()
                    } else {
                        format!("; unsubscribed from {}", subscribed.join(" "))
                    }
                ),
            );
        }
    }

    fn unsubscribe(&mut self, id: ConnId) -> Vec<String> {
        let mut tables = Vec::new();
        for (table, subs) in self.schema.tables.iter().zip(&mut self.subscriptions) {
            let before = subs.len();
            subs.retain(|s| s.conn != id);
            if subs.len() != before {
                tables.push(table.name.clone());
            }
        }
        tables
    }

    /// A description of connection `id` for log lines.
    pub fn describe(&self, id: ConnId) -> String {
        match self.clients.get(&id) {
            Some(c) => format!("connection {id} ({}, user {:?})", c.peer, c.user),
            None => format!("connection {id}"),
        }
    }

    /// `.u.sub[table; syms]` from connection `id`: the empty symbol as `table` means
    /// every table; the empty symbol (or an empty list) as `syms` means every sym.
    /// Returns `(table; empty table)`, or a list of those for every table.
    pub fn subscribe(&mut self, id: ConnId, table: &K, syms: &K) -> Result<K, String> {
        let table =
            table.as_text().ok_or_else(|| format!(".u.sub: table must be a symbol, got a {}", table.describe()))?;
        let syms = match syms {
            K::List(items) if items.is_empty() => None,
            other => {
                let list = other
                    .as_symbols()
                    .ok_or_else(|| format!(".u.sub: syms must be symbols, got a {}", other.describe()))?;
                if list.iter().all(|s| s.is_empty()) {
                    None
                } else {
                    Some(list.iter().map(|s| s.as_bytes().into()).collect())
                }
            }
        };
        if table.is_empty() {
            let names: Vec<String> = self.schema.tables.iter().map(|t| t.name.clone()).collect();
            let answers = names.iter().map(|t| self.subscribe_one(id, t, syms.clone())).collect::<Result<_, _>>()?;
            return Ok(K::List(answers));
        }
        self.subscribe_one(id, table, syms)
    }

    fn subscribe_one(&mut self, id: ConnId, table: &str, syms: Option<HashSet<Box<[u8]>>>) -> Result<K, String> {
        let at = self.schema.tables.iter().position(|t| t.name == table).ok_or_else(|| {
            let names: Vec<&str> = self.schema.tables.iter().map(|t| t.name.as_str()).collect();
            format!("{table}: no such table; tables: {}", names.join(" "))
        })?;
        let empty = self.schema.tables[at].empty_table();
        let what = match &syms {
            None => "all syms".to_string(),
            Some(s) => format!("{} syms", s.len()),
        };
        let subs = &mut self.subscriptions[at];
        subs.retain(|s| s.conn != id);
        subs.push(Subscription { conn: id, syms });
        log::line(self.role, &format!("{} subscribed to {table} ({what})", self.describe(id)));
        Ok(K::List(vec![K::symbol(table), K::Table(empty)]))
    }

    /// Subscribers to table number `table` (schema order).
    pub fn subscriber_count(&self, table: usize) -> usize {
        self.subscriptions[table].len()
    }

    /// Distinct subscribed connections.
    pub fn subscribers(&self) -> usize {
        self.subscriptions.iter().flatten().map(|s| s.conn).collect::<HashSet<_>>().len()
    }

    /// Bytes queued to all clients, and the most queued to one.
    pub fn queue_depths(&self) -> (u64, u64) {
        let depths = self.clients.values().map(|c| c.outbox.queued_bytes() as u64);
        depths.fold((0, 0), |(sum, max), d| (sum + d, max.max(d)))
    }

    /// Queues `(`upd; table; rows)` (and `stamp`, when given, as a fourth item for
    /// hop timing) for every subscriber of table number `table` whose filter keeps
    /// some rows. Nothing is sent until [`Publisher::flush`].
    pub fn publish(&mut self, table: usize, columns: &WireColumns, stamp: Option<i64>) {
        let Publisher { schema, clients, subscriptions, dirty, message, counters, .. } = self;
        let schema = &schema.tables[table];
        // A sole subscriber gets the message encoded into its pending bytes; several
        // that take every row share one encoding.
        let sole = subscriptions[table].len() == 1;
        let mut whole = false;
        for sub in &subscriptions[table] {
            let Some(client) = clients.get_mut(&sub.conn) else { continue };
            let selected = match &sub.syms {
                None => Selected::All(columns),
                Some(syms) => match columns.select(&schema.kinds, |s| syms.contains(s)) {
                    Some(selected) => selected,
                    None => continue,
                },
            };
            if client.pending.is_empty() {
                dirty.push(sub.conn);
            }
            counters.published_bytes += match selected {
                Selected::All(all) if sole => client.queue_encoded(|out| publish_message(out, schema, all, stamp)),
                Selected::All(all) => {
                    if !whole {
                        message.clear();
                        publish_message(message, schema, all, stamp);
                        whole = true;
                    }
                    client.queue(message)
                }
                Selected::Some(some) => client.queue_encoded(|out| publish_message(out, schema, &some, stamp)),
            } as u64;
            counters.published += 1;
        }
    }

    /// The most bytes waiting for [`Publisher::flush`] for any one client.
    pub fn largest_pending(&self) -> usize {
        self.dirty.iter().filter_map(|id| self.clients.get(id)).map(|c| c.pending.len()).max().unwrap_or(0)
    }

    /// Hands every client's pending messages to its writer, one piece each; a client
    /// whose queue is full meets the slow-subscriber policy.
    pub fn flush(&mut self) {
        let mut failed = Vec::new();
        for id in self.dirty.drain(..) {
            let Some(client) = self.clients.get_mut(&id) else { continue };
            let messages = std::mem::take(&mut client.pending_messages);
            if client.pending.is_empty() {
                continue;
            }
            if let Err(e) = client.outbox.send_from(&mut client.pending) {
                failed.push((id, e, messages));
            }
            if client.pending.capacity() > KEPT_BUFFER_BYTES {
                client.pending = Vec::new();
            }
        }
        for (id, error, messages) in failed {
            self.slow(id, error, messages);
        }
    }

    /// Drops every message queued since the last [`Publisher::flush`] instead of
    /// sending it: the updates they carry were refused (their journal write
    /// failed), so no subscriber may see them. The caller queues nothing else
    /// between flushes that it would not drop with them. Returns how many messages
    /// went.
    pub fn discard_pending(&mut self) -> u64 {
        let mut discarded = 0;
        for id in self.dirty.drain(..) {
            let Some(client) = self.clients.get_mut(&id) else { continue };
            discarded += std::mem::take(&mut client.pending_messages);
            self.counters.published_bytes = self.counters.published_bytes.saturating_sub(client.pending.len() as u64);
            client.pending.clear();
        }
        self.counters.published = self.counters.published.saturating_sub(discarded);
        discarded
    }

    fn slow(&mut self, id: ConnId, error: OutboxError, messages: u64) {
        match (error, self.policy) {
            (OutboxError::Closed, _) => {}
            (OutboxError::Full { queued, limit }, SlowPolicy::Disconnect) => {
                self.counters.slow_disconnects += 1;
                log::line(
                    self.role,
                    &format!(
                        "disconnecting {}: it is not reading; {queued} bytes queued, limit {limit}",
                        self.describe(id)
                    ),
                );
                if let Some(client) = self.clients.get(&id) {
                    client.outbox.close();
                }
                self.unsubscribe(id);
            }
            (OutboxError::Full { queued, limit }, SlowPolicy::Drop) => {
                let before = self.counters.dropped;
                self.counters.dropped += messages;
                if before.checked_ilog2() != self.counters.dropped.checked_ilog2() {
                    log::line(
                        self.role,
                        &format!(
                            "dropping updates for {}: {queued} bytes queued, limit {limit} ({} dropped so far)",
                            self.describe(id),
                            self.counters.dropped
                        ),
                    );
                }
            }
        }
    }

    /// Sends `(`.u.end; date)` to every subscriber (kdb+'s `.u.end`); `date` is a
    /// kdb+ date (days since 2000.01.01). Returns how many were told.
    pub fn end_of_day(&mut self, date: i32) -> usize {
        let message = K::List(vec![K::symbol(".u.end"), K::Atom(Atom::Date(date))]);
        let ids: HashSet<ConnId> = self.subscriptions.iter().flatten().map(|s| s.conn).collect();
        for id in &ids {
            self.send(*id, MessageKind::Async, &message);
        }
        self.flush();
        ids.len()
    }

    /// Sends what is pending and closes every client connection (the process is
    /// stopping): subscribers see the end of their stream, as when a kdb+
    /// tickerplant exits.
    pub fn close_all(&mut self) {
        self.flush();
        for client in self.clients.values() {
            client.outbox.close();
        }
    }

    /// Queues `value` for connection `id` as a message of `kind`, after anything
    /// already pending for it; it goes out with the next [`Publisher::flush`].
    pub fn send(&mut self, id: ConnId, kind: MessageKind, value: &K) {
        if let Some(client) = self.clients.get_mut(&id) {
            if client.pending.is_empty() {
                self.dirty.push(id);
            }
            // Compression, if any, happens in `queue`.
            client.queue(&encode_message(kind, value, false));
        }
    }
}
