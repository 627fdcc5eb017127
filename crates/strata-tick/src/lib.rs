//! Strata's tick plane, in the shape of kdb+tick: feeds publish to a
//! [`tickerplant`] that journals every update ([`journal`]) and fans it out to
//! subscribers ([`pubsub`]); an [`rdb`] replays the journal, subscribes, answers
//! queries and writes a date partition at end of day; an [`hdb`] serves the
//! partitioned database; a [`chained`] tickerplant republishes; a [`feed`] simulator
//! drives it all. Everything talks kdb+ IPC (`strata-ipc`), so q processes, PyKX
//! and qPython clients work unchanged.
//!
//! Threads and bounds: each connection has a reader thread feeding one bounded event
//! queue ([`server::EVENT_QUEUE`] messages) drained by a single core thread, and a
//! writer thread behind a byte-bounded outbox ([`server::Outbox`]).

pub mod chained;
pub mod clock;
pub mod counters;
mod error;
pub mod feed;
pub mod hdb;
pub mod journal;
pub mod log;
pub mod memtable;
pub mod pubsub;
pub mod query;
pub mod rdb;
pub mod request;
pub mod schema;
pub mod server;
pub mod service;
pub mod tickerplant;

pub use error::TickError;
