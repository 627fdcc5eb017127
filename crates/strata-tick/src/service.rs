//! The query side of an RDB or HDB: one thread answers every client's requests in
//! arrival order against shared tables, replying to sync requests and logging
//! refused async ones.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use strata_ipc::{K, MessageKind};

use crate::log;
use crate::query::{TableSource, answer};
use crate::request::Request;
use crate::server::{Event, Outbox, Server};

/// Names that ask a process to reload its tables (`\l .` is what kdb+'s RDB sends).
pub const RELOAD_CALLS: [&str; 2] = ["\\l", ".strata.reload"];

/// Serves queries from `server`'s clients against `state` until the server stops.
/// `reload`, when given, answers [`RELOAD_CALLS`].
pub fn serve<S: TableSource + Send + Sync + 'static>(
    role: &'static str,
    server: Server,
    state: Arc<RwLock<S>>,
    mut reload: Option<Box<dyn FnMut() -> Result<K, String> + Send>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("{role}-queries")).spawn(move || {
        let mut clients: HashMap<u64, Outbox> = HashMap::new();
        while let Ok(event) = server.events.recv() {
            match event {
                Event::Opened { id, peer, user, outbox } => {
                    log::line(role, &format!("query connection {id} from {peer} (user {user:?})"));
                    clients.insert(id, outbox);
                }
                Event::Closed { id, reason } => {
                    clients.remove(&id);
                    log::line(role, &format!("query connection {id} closed: {reason}"));
                }
                Event::Malformed { id, kind, error } => reply(role, &clients, id, kind, Err(error)),
                Event::Message { id, kind, value, .. } => {
                    let result = Request::from_message(value).and_then(|request| match (&request, reload.as_mut()) {
                        (Request::Call(name, _), Some(reload)) if RELOAD_CALLS.contains(&name.as_str()) => reload(),
                        _ => {
                            let guard = state.read().map_err(|_| "tables are unavailable".to_string())?;
                            answer(&*guard, request)
                        }
                    });
                    reply(role, &clients, id, kind, result);
                }
            }
        }
    })
}

fn reply(role: &str, clients: &HashMap<u64, Outbox>, id: u64, kind: MessageKind, result: Result<K, String>) {
    match (kind, result) {
        (MessageKind::Sync, result) => {
            if let Some(outbox) = clients.get(&id) {
                let value = result.unwrap_or_else(K::Error);
                if outbox.send_value(MessageKind::Response, &value).is_err() {
                    log::line(role, &format!("connection {id}: reply dropped, its queue is full"));
                }
            }
        }
        (_, Err(error)) => log::line(role, &format!("refused an async request from connection {id}: {error}")),
        (_, Ok(_)) => {}
    }
}
