//! Publishing to subscribers, as kdb+tick's `u.q` does: `.u.sub[table; syms]`
//! (empty symbol = every table or every sym; a new subscription to a table replaces
//! the old), per-subscriber symbol filters, and `(`upd; table; data)` sent async.
//! Every subscriber's queue is bounded in bytes; one that falls behind is
//! disconnected (or, by choice, skipped) with a logged reason.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use strata_ipc::frame::finish_message;
use strata_ipc::{Atom, K, MessageKind, encode};

use crate::counters::Counters;
use crate::log;
use crate::memtable::select_syms;
use crate::schema::Schema;
use crate::server::{ConnId, Outbox, OutboxError};

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
}

struct Subscription {
    conn: ConnId,
    /// `None`: every sym.
    syms: Option<HashSet<String>>,
}

/// Connections, subscriptions and publishing for a tickerplant or chained one.
pub struct Publisher {
    role: &'static str,
    schema: Schema,
    clients: HashMap<ConnId, Client>,
    subscriptions: BTreeMap<String, Vec<Subscription>>,
    policy: SlowPolicy,
    /// Counts kept for `.strata.counters[]`.
    pub counters: Counters,
}

impl Publisher {
    /// A publisher for the tables of `schema`.
    pub fn new(role: &'static str, schema: Schema, policy: SlowPolicy) -> Publisher {
        let subscriptions = schema.tables.iter().map(|t| (t.name.clone(), Vec::new())).collect();
        Publisher { role, schema, clients: HashMap::new(), subscriptions, policy, counters: Counters::default() }
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// A client connected.
    pub fn opened(&mut self, outbox: Outbox, peer: SocketAddr, user: String) {
        log::line(self.role, &format!("connection {} from {peer} (user {user:?})", outbox.id()));
        self.clients.insert(outbox.id(), Client { outbox, peer, user });
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
        for (table, subs) in &mut self.subscriptions {
            let before = subs.len();
            subs.retain(|s| s.conn != id);
            if subs.len() != before {
                tables.push(table.clone());
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
                    Some(list.iter().map(|s| s.to_string()).collect())
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

    fn subscribe_one(&mut self, id: ConnId, table: &str, syms: Option<HashSet<String>>) -> Result<K, String> {
        let schema = self.schema.table(table).ok_or_else(|| {
            let names: Vec<&str> = self.schema.tables.iter().map(|t| t.name.as_str()).collect();
            format!("{table}: no such table; tables: {}", names.join(" "))
        })?;
        let empty = schema.empty_table();
        let what = match &syms {
            None => "all syms".to_string(),
            Some(s) => format!("{} syms", s.len()),
        };
        let subs = self.subscriptions.get_mut(table).expect("a subscription list per table");
        subs.retain(|s| s.conn != id);
        subs.push(Subscription { conn: id, syms });
        log::line(self.role, &format!("{} subscribed to {table} ({what})", self.describe(id)));
        Ok(K::List(vec![K::symbol(table), K::Table(empty)]))
    }

    /// Subscribers to `table`.
    pub fn subscriber_count(&self, table: &str) -> usize {
        self.subscriptions.get(table).map_or(0, Vec::len)
    }

    /// Distinct subscribed connections.
    pub fn subscribers(&self) -> usize {
        self.subscriptions.values().flatten().map(|s| s.conn).collect::<HashSet<_>>().len()
    }

    /// Bytes queued to all clients, and the most queued to one.
    pub fn queue_depths(&self) -> (u64, u64) {
        let depths = self.clients.values().map(|c| c.outbox.queued_bytes() as u64);
        depths.fold((0, 0), |(sum, max), d| (sum + d, max.max(d)))
    }

    /// Sends `(`upd; table; rows)` (and `stamp`, when given, as a fourth item for
    /// hop timing) to every subscriber of `table` whose filter keeps some rows.
    pub fn publish(&mut self, table: &str, columns: &[K], stamp: Option<i64>) {
        let Some(subs) = self.subscriptions.get(table) else { return };
        if subs.is_empty() {
            return;
        }
        let names = &self.schema.table(table).expect("subscriptions follow the schema").columns;
        // One encoding for every unfiltered subscriber (per compression choice).
        let mut shared: [Option<Arc<Vec<u8>>>; 2] = [None, None];
        let mut failed = Vec::new();
        for sub in subs {
            let Some(client) = self.clients.get(&sub.conn) else { continue };
            let remote = client.outbox.remote();
            let frame = match &sub.syms {
                None => shared[remote as usize]
                    .get_or_insert_with(|| Arc::new(upd_message(table, names, columns, stamp, remote)))
                    .clone(),
                Some(syms) => match select_syms(columns, syms) {
                    Some(rows) => Arc::new(upd_message(table, names, &rows, stamp, remote)),
                    None => continue,
                },
            };
            let len = frame.len() as u64;
            match client.outbox.send(frame) {
                Ok(()) => {
                    self.counters.published += 1;
                    self.counters.published_bytes += len;
                }
                Err(e) => failed.push((sub.conn, e)),
            }
        }
        for (id, error) in failed {
            self.slow(id, error);
        }
    }

    fn slow(&mut self, id: ConnId, error: OutboxError) {
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
                self.counters.dropped += 1;
                if self.counters.dropped.is_power_of_two() {
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
    /// kdb+ date (days since 2000.01.01).
    pub fn end_of_day(&mut self, date: i32) -> usize {
        let message = K::List(vec![K::symbol(".u.end"), K::Atom(Atom::Date(date))]);
        let ids: HashSet<ConnId> = self.subscriptions.values().flatten().map(|s| s.conn).collect();
        for id in &ids {
            if let Some(client) = self.clients.get(id) {
                let _ = client.outbox.send_value(MessageKind::Async, &message);
            }
        }
        ids.len()
    }

    /// Closes every client connection (the process is stopping): subscribers see the
    /// end of their stream, as when a kdb+ tickerplant exits.
    pub fn close_all(&mut self) {
        for client in self.clients.values() {
            client.outbox.close();
        }
    }

    /// Sends `value` to connection `id` as a message of `kind`.
    pub fn send(&mut self, id: ConnId, kind: MessageKind, value: &K) {
        if let Some(client) = self.clients.get(&id)
            && let Err(e) = client.outbox.send_value(kind, value)
        {
            self.slow(id, e);
        }
    }
}

/// Appends the wire form of `(`upd; `table; columns)` (a general list of the
/// columns, as a tickerplant journals an update).
pub fn encode_upd_columns(out: &mut Vec<u8>, table: &str, columns: &[K]) {
    out.extend_from_slice(&[0, 0, 3, 0, 0, 0]);
    encode(&K::symbol("upd"), out);
    encode(&K::symbol(table), out);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for c in columns {
        encode(c, out);
    }
}

/// The async message `(`upd; `table; table-of-columns[; stamp])` as subscribers
/// receive it, built without copying the columns into a [`Table`] first.
pub fn upd_message(table: &str, names: &[String], columns: &[K], stamp: Option<i64>, compress: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + names.len() * 16);
    out.extend_from_slice(&[1, MessageKind::Async as u8, 0, 0, 0, 0, 0, 0]);
    let items: u32 = if stamp.is_some() { 4 } else { 3 };
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&items.to_le_bytes());
    encode(&K::symbol("upd"), &mut out);
    encode(&K::symbol(table), &mut out);
    out.extend_from_slice(&[98, 0, 99, 11, 0]);
    out.extend_from_slice(&(names.len() as u32).to_le_bytes());
    for name in names {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for c in columns {
        encode(c, &mut out);
    }
    if let Some(stamp) = stamp {
        encode(&K::Atom(Atom::Timestamp(stamp)), &mut out);
    }
    finish_message(out, compress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ipc::{Table, Vector, read_message};

    #[test]
    fn upd_messages_decode_as_tables() {
        let names = vec!["time".to_string(), "sym".to_string()];
        let columns = vec![K::vector(Vector::Timespan(vec![1])), K::symbols(["A"])];
        let bytes = upd_message("trade", &names, &columns, Some(9), false);
        let (_, value) = read_message(&mut &bytes[..], 1 << 20).unwrap().unwrap();
        let expected_table = Table::new(names.into_iter().zip(columns.clone()).collect()).unwrap();
        assert_eq!(
            value,
            K::List(vec![K::symbol("upd"), K::symbol("trade"), K::Table(expected_table), K::Atom(Atom::Timestamp(9))])
        );
        let mut logged = Vec::new();
        encode_upd_columns(&mut logged, "trade", &columns);
        assert_eq!(
            strata_ipc::decode(&logged, false).unwrap(),
            K::List(vec![K::symbol("upd"), K::symbol("trade"), K::List(columns)])
        );
    }
}
