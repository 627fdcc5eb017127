//! The query side of an RDB or HDB: a dispatcher thread takes every client's
//! requests off the server's event queue, and a pool of query threads answers them
//! ([`crate::query`]), several clients at once, each client's requests in the order
//! it sent them (a client's next request starts when its last one is answered, as
//! a kdb+ client expects). A client that disconnects cancels its running statement
//! and drops those it queued. Sync requests get a reply; refused async ones are
//! logged (at most one line a second per connection, [`log::Throttle`]). A request
//! that fails, in any way, is an error reply; the thread goes on serving.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use strata_ipc::{DEFAULT_MAX_MESSAGE, Header, K, MessageKind, decode_body};
use strata_query::Cancel;

use crate::log;
use crate::query::{Queries, answer};
use crate::request::Request;
use crate::server::{ConnId, Event, Outbox, Server};

/// Bytes of requests one client may have waiting for a query thread; a request
/// past it is refused with an error (in its place in the client's order).
pub const QUEUED_BYTES: usize = 64 << 20;

/// Serves queries from `server`'s clients with `queries` on `threads` query
/// threads until the server stops.
pub fn serve(
    role: &'static str,
    server: Server,
    queries: Arc<dyn Queries + Send + Sync>,
    threads: usize,
) -> std::io::Result<JoinHandle<()>> {
    let pool = Arc::new(Pool { state: Mutex::new(Dispatch::default()), work: Condvar::new() });
    for n in 0..threads.max(1) {
        let (pool, queries) = (pool.clone(), queries.clone());
        std::thread::Builder::new()
            .name(format!("{role}-query{n}"))
            .spawn(move || answer_loop(role, &pool, queries.as_ref()))?;
    }
    std::thread::Builder::new().name(format!("{role}-queries")).spawn(move || {
        while let Ok(event) = server.events.recv() {
            pool.dispatch(role, event);
        }
        pool.lock().stopping = true;
        pool.work.notify_all();
    })
}

/// What the dispatcher and the query threads share.
struct Pool {
    state: Mutex<Dispatch>,
    /// Signalled when a client has a request for a free thread (or on stopping).
    work: Condvar,
}

#[derive(Default)]
struct Dispatch {
    clients: HashMap<ConnId, Client>,
    /// Clients with a request waiting and none running, oldest first.
    ready: VecDeque<ConnId>,
    stopping: bool,
}

/// A query connection.
struct Client {
    outbox: Outbox,
    log: log::Throttle,
    /// Requests not yet started, in order.
    queue: VecDeque<Queued>,
    queued_bytes: usize,
    /// The running request's cancel, while one runs.
    running: Option<Cancel>,
    /// The connection closed while a request ran: removed when it ends.
    closed: bool,
}

/// One request waiting its turn.
enum Queued {
    Request(Header, Vec<u8>),
    /// Refused on arrival, answered in its place in the order.
    Refused(MessageKind, String),
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Dispatch> {
        // A query thread that panicked mid-update leaves plain bookkeeping behind.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn dispatch(&self, role: &str, event: Event) {
        let mut state = self.lock();
        match event {
            Event::Opened { id, peer, user, outbox } => {
                log::line(role, &format!("query connection {id} from {peer} (user {user:?})"));
                let client = Client {
                    outbox,
                    log: log::Throttle::new(),
                    queue: VecDeque::new(),
                    queued_bytes: 0,
                    running: None,
                    closed: false,
                };
                state.clients.insert(id, client);
            }
            Event::Closed { id, reason } => {
                log::line(role, &format!("query connection {id} closed: {reason}"));
                let running = state.clients.get_mut(&id).and_then(|client| {
                    client.queue.clear();
                    client.closed = true;
                    client.running.clone()
                });
                match running {
                    Some(cancel) => cancel.cancel(),
                    None => {
                        state.clients.remove(&id);
                    }
                }
            }
            Event::Frames { id, frames, .. } => {
                let Some(client) = state.clients.get_mut(&id) else { return };
                for (header, body) in frames.iter() {
                    let item = if client.queued_bytes + body.len() > QUEUED_BYTES {
                        Queued::Refused(
                            header.kind,
                            format!(
                                "more than {} MiB of requests are waiting on this connection: wait for answers \
                                 before sending more",
                                QUEUED_BYTES >> 20
                            ),
                        )
                    } else {
                        client.queued_bytes += body.len();
                        Queued::Request(header, body.to_vec())
                    };
                    client.queue.push_back(item);
                }
                if client.running.is_none() && !state.ready.contains(&id) {
                    state.ready.push_back(id);
                    self.work.notify_one();
                }
            }
        }
    }
}

/// A query thread: takes the oldest client with a request waiting, answers its
/// first request, and puts the client back in line if it has more.
fn answer_loop(role: &str, pool: &Pool, queries: &(dyn Queries + Send + Sync)) {
    let mut state = pool.lock();
    loop {
        let Some(id) = state.ready.pop_front() else {
            if state.stopping {
                return;
            }
            state = pool.work.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
            continue;
        };
        let Some(client) = state.clients.get_mut(&id) else { continue };
        let Some(item) = client.queue.pop_front() else { continue };
        let cancel = Cancel::new();
        client.running = Some(cancel.clone());
        let outbox = client.outbox.clone();
        drop(state);

        let (kind, bytes, result) = match item {
            Queued::Refused(kind, why) => (kind, 0, Err(why)),
            Queued::Request(header, body) => {
                let result = decode_body(&header, &body, DEFAULT_MAX_MESSAGE)
                    .map_err(|e| e.to_string())
                    .and_then(Request::from_message)
                    .and_then(|request| answer(queries, request, &cancel));
                (header.kind, body.len(), result)
            }
        };

        // The reply is encoded and sent outside the lock (an answer may be large),
        // and before the client's next request can start.
        let refused = match (kind, result) {
            (MessageKind::Sync, result) => {
                let value = result.unwrap_or_else(K::Error);
                outbox
                    .send_value(MessageKind::Response, &value)
                    .err()
                    .map(|_| format!("connection {id}: reply dropped, its queue is full"))
            }
            (_, Err(error)) => Some(format!("refused an async request from connection {id}: {error}")),
            (_, Ok(_)) => None,
        };

        state = pool.lock();
        let Some(client) = state.clients.get_mut(&id) else { continue };
        client.running = None;
        client.queued_bytes -= bytes;
        if client.closed {
            state.clients.remove(&id);
            continue;
        }
        if let Some(line) = refused {
            client.log.line(role, || line);
        }
        if !client.queue.is_empty() {
            state.ready.push_back(id);
            pool.work.notify_one();
        }
    }
}
