//! The query side of an RDB or HDB: one thread answers every client's requests in
//! arrival order ([`crate::query`]), replying to sync requests and logging refused
//! async ones (at most one line a second per connection, [`log::Throttle`]). A
//! request that fails, in any way, is an error reply; the thread goes on serving.

use std::collections::HashMap;
use std::thread::JoinHandle;

use strata_ipc::{DEFAULT_MAX_MESSAGE, K, MessageKind, decode_body};

use crate::log;
use crate::query::{Queries, answer};
use crate::request::Request;
use crate::server::{Event, Outbox, Server};

/// Serves queries from `server`'s clients with `queries` until the server stops.
pub fn serve(
    role: &'static str,
    server: Server,
    mut queries: Box<dyn Queries + Send>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("{role}-queries")).spawn(move || {
        let mut clients: HashMap<u64, Client> = HashMap::new();
        while let Ok(event) = server.events.recv() {
            match event {
                Event::Opened { id, peer, user, outbox } => {
                    log::line(role, &format!("query connection {id} from {peer} (user {user:?})"));
                    clients.insert(id, Client { outbox, log: log::Throttle::new() });
                }
                Event::Closed { id, reason } => {
                    clients.remove(&id);
                    log::line(role, &format!("query connection {id} closed: {reason}"));
                }
                Event::Frames { id, frames, .. } => {
                    for (header, body) in frames.iter() {
                        let result = decode_body(&header, body, DEFAULT_MAX_MESSAGE)
                            .map_err(|e| e.to_string())
                            .and_then(Request::from_message)
                            .and_then(|request| answer(queries.as_mut(), request));
                        if let Some(client) = clients.get_mut(&id) {
                            reply(role, client, id, header.kind, result);
                        }
                    }
                }
            }
        }
    })
}

/// A query connection: where its replies go, and its log lines' throttle.
struct Client {
    outbox: Outbox,
    log: log::Throttle,
}

fn reply(role: &str, client: &mut Client, id: u64, kind: MessageKind, result: Result<K, String>) {
    match (kind, result) {
        (MessageKind::Sync, result) => {
            let value = result.unwrap_or_else(K::Error);
            if client.outbox.send_value(MessageKind::Response, &value).is_err() {
                client.log.line(role, || format!("connection {id}: reply dropped, its queue is full"));
            }
        }
        (_, Err(error)) => {
            client.log.line(role, || format!("refused an async request from connection {id}: {error}"));
        }
        (_, Ok(_)) => {}
    }
}
