//! Strata's tick plane, in the shape of kdb+tick: feeds publish to a
//! [`tickerplant`] that journals every update ([`journal`]) and fans it out to
//! subscribers ([`pubsub`]); an [`rdb`] replays the journal, subscribes, answers
//! queries (SQL through strata-query, [`sql`]) and writes a date partition at end of
//! day ([`daywrite`], also from a journal after a crash); an [`hdb`] serves the
//! partitioned database; a [`chained`] tickerplant republishes; a [`feed`] simulator
//! drives it all with TAQ-shaped rows. Everything talks kdb+ IPC (`strata-ipc`), so q
//! processes, PyKX and qPython clients work unchanged.
//!
//! Hot path: updates stay kdb+ wire bytes from socket to journal, subscribers and the
//! RDB's column builders ([`update`], [`livetable`]); messages are read many per
//! socket read and handled as a batch.
//!
//! Threads and bounds: each connection has a reader thread feeding one bounded event
//! queue ([`server::EVENT_QUEUE`] batches) drained by a single core thread, and a
//! writer thread behind a byte-bounded outbox ([`server::Outbox`]).

pub mod chained;
pub mod clock;
pub mod counters;
pub mod daywrite;
mod error;
pub mod feed;
mod growing;
pub mod hdb;
pub mod journal;
pub mod livetable;
pub mod log;
pub mod new_symbols;
pub mod pubsub;
pub mod query;
pub mod rdb;
pub mod schema;
pub mod server;
pub mod service;
pub mod sql;
pub mod subscription;
pub mod symbols;
pub mod tickerplant;
pub mod update;

pub use error::TickError;
/// What a client asks for (parsed in strata-ipc, where the fuzz targets reach it).
pub use strata_ipc::request;
