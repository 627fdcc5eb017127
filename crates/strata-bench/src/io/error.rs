//! Why an I/O benchmark run or comparison failed.

use std::fmt;
use std::path::{Path, PathBuf};

use strata_store::StoreError;

/// Everything the I/O benchmark can fail with; each message names the file, worker
/// or line at fault and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum IoBenchError {
    /// A Strata storage call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The operating system refused an operation on a file, directory or process.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file, directory or program.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A worker process failed, died or broke the protocol.
    #[error("worker {worker} ({}): {detail}", dir.display())]
    Worker {
        /// The worker's index.
        worker: usize,
        /// Its directory.
        dir: PathBuf,
        /// What happened.
        detail: String,
    },
    /// A result file is not in Nano's format.
    #[error("{}: line {line}: {detail}", path.display())]
    Psv {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What was found and what was expected.
        detail: String,
    },
    /// Options or inputs that cannot work.
    #[error("{0}")]
    Invalid(String),
}

impl IoBenchError {
    /// An [`IoBenchError::Io`] for `path`.
    pub fn io(path: &Path, source: std::io::Error) -> IoBenchError {
        IoBenchError::Io { path: path.to_path_buf(), source }
    }

    /// An [`IoBenchError::Psv`] at `line` of `path`.
    pub fn psv(path: &Path, line: usize, detail: impl fmt::Display) -> IoBenchError {
        IoBenchError::Psv { path: path.to_path_buf(), line, detail: detail.to_string() }
    }
}
