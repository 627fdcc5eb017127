//! Errors of the tick plane, each naming the file, table, column or peer at fault.

use std::path::Path;

use strata_ipc::IpcError;

/// What can go wrong running a tick process.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A schema file that cannot be used.
    #[error("{0}")]
    Schema(String),
    /// A journal that cannot be opened or appended to.
    #[error("{0}")]
    Journal(String),
    /// A journal record that fails its checks with valid records after it: damage
    /// inside the file, not a torn tail. Nothing was changed.
    #[error(
        "{path}: journal record {record} at byte {offset} is damaged ({bytes} bytes before the next valid \
         record) and {valid_after} valid records follow it; nothing was changed (`strata tp --journal-recovery \
         skip` copies the damaged bytes to a side file and keeps every valid record)"
    )]
    JournalCorrupt {
        /// The journal.
        path: String,
        /// Valid records before the damage: the index the damaged record had.
        record: u64,
        /// Where the damage starts.
        offset: u64,
        /// Bytes from there to the next valid record.
        bytes: u64,
        /// Valid records after the damage (past any further damage).
        valid_after: u64,
    },
    /// Talking to another process failed.
    #[error(transparent)]
    Ipc(#[from] IpcError),
    /// Storage failed (end-of-day write, HDB load).
    #[error(transparent)]
    Store(#[from] strata_store::StoreError),
    /// Anything else that stops a process, with what was being done.
    #[error("{0}")]
    Other(String),
}

impl TickError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> TickError {
        TickError::Io { path: path.display().to_string(), source }
    }
}
