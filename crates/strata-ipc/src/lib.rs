//! kdb+'s IPC protocol (version 3), so q processes, PyKX and qPython can talk to
//! Strata unchanged.
//!
//! - [`value`]: q values ([`K`]): atoms, vectors of every kdb+ type, general lists,
//!   dictionaries, tables, keyed tables (dictionaries of tables), lambdas, errors.
//! - [`encode`] / [`decode`]: the wire form, byte for byte what kdb+'s `-8!` gives
//!   after its 8-byte header (see the examples in `tests/documented.rs`).
//! - [`frame`]: message headers (async, sync, response; either byte order on
//!   input, little-endian on output), kdb+'s IPC compression for messages over 2000
//!   bytes to remote peers (reusing `strata_codec::qipc`), reading whole messages.
//! - [`handshake`]: `user:password` plus capability byte, checked against a
//!   credentials file when one is configured.
//! - [`credentials`]: a credentials file's users (argon2 hashes, kdb+'s plain and
//!   MD5 forms), bounded checks, and `strata passwd`'s atomic update.
//! - [`tls`]: TLS sessions for servers and clients (rustls), kdb+'s `tcps://`.
//! - [`reader`]: whole messages read from a stream in large chunks, handed out as
//!   slices of one buffer.
//! - [`view`]: a value read in place (what it is and where its bytes lie), for hot
//!   paths that copy columns instead of building [`K`]s.
//! - [`request`]: what a client asks for, from a function-call list or the small
//!   subset of q text Strata understands (bounded in depth: any client can send it).
//! - [`Connection`]: a blocking client.
//! - [`arrow`]: q tables to and from Strata tables and Arrow record batches.

pub mod arrow;
pub mod connection;
pub mod credentials;
mod cursor;
mod decode;
mod encode;
mod error;
pub mod frame;
pub mod handshake;
pub mod reader;
pub mod request;
pub mod tls;
pub mod value;
pub mod view;

pub use connection::Connection;
pub use decode::{MAX_DEPTH, decode};
pub use encode::{encode, encoded_len, to_bytes};
pub use error::IpcError;
pub use frame::{
    DEFAULT_MAX_MESSAGE, HEADER_LEN, Header, MAX_MESSAGE_LEN, MessageKind, decode_body, encode_message, read_frame,
    read_message,
};
pub use handshake::{CAPABILITY, Credentials, Peer};
pub use value::{Atom, Attribute, K, Table, Vector};
