//! Errors of the IPC layer, each saying which message, byte or peer is at fault.

/// What can go wrong speaking kdb+ IPC.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    /// The socket failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`reading a message from 127.0.0.1:5010`, ...).
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Bytes that are not a valid q value.
    #[error("malformed message at byte {offset}: {detail}")]
    Decode {
        /// Offset into the message body (after the 8-byte header).
        offset: usize,
        /// What was found and what was expected.
        detail: String,
    },
    /// A message header that cannot be accepted.
    #[error("bad message header: {0}")]
    Header(String),
    /// The peer refused (or sent a malformed) handshake.
    #[error("handshake: {0}")]
    Handshake(String),
    /// The peer answered a sync request with a q error.
    #[error("remote error: '{0}")]
    Remote(String),
    /// A value that has no counterpart on the other side of a conversion.
    #[error("{0}")]
    Convert(String),
    /// A peer passed a bound on what it may hold of the server: a message that does
    /// not arrive whole in time, or partial messages past the bytes all connections
    /// may hold.
    #[error("{0}")]
    Limit(String),
    /// A value too large for one message (protocol v3 counts bytes in 32 bits).
    #[error(
        "the answer is {len} bytes, more than the {max_len} bytes one kdb+ IPC message can carry: \
         narrow it with WHERE or LIMIT, or aggregate it"
    )]
    TooLarge {
        /// Its bytes, header included.
        len: usize,
        /// The most a message holds.
        max_len: usize,
    },
}

impl IpcError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> IpcError {
        IpcError::Io { context: context.into(), source }
    }

    /// Whether the error means the peer went away (EOF, reset, broken pipe).
    pub fn is_disconnect(&self) -> bool {
        use std::io::ErrorKind::*;
        matches!(self, IpcError::Io { source, .. }
            if matches!(source.kind(), UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected))
    }
}
