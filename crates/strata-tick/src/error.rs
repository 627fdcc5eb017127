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
