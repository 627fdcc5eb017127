//! Errors that name the file, block, column or row at fault.

use std::path::{Path, PathBuf};

use strata_codec::CodecError;

/// Everything that can go wrong reading or writing stored data. Each variant carries
/// the path (and where relevant the block or row) so the message alone says where to
/// look and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The operating system refused an operation on a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing a file failed (disk full, over quota, file too large, I/O error).
    /// `path` is the file as it is named once complete: for a table being written,
    /// the table's column, not its staging copy. `temp` is the temporary file the
    /// bytes were going to (removed when the write is abandoned).
    #[error("{}: cannot write: {source} (writing {})", path.display(), temp.display())]
    Write {
        /// The file being written, under its final name.
        path: PathBuf,
        /// The temporary file written in its place until complete.
        temp: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file's bytes are not what its format requires (truncated, wrong magic,
    /// unknown type code, inconsistent index).
    #[error("{}: {detail}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was found and what was expected.
        detail: String,
    },
    /// A block's stored checksum does not match its bytes.
    #[error("{}: block {block} failed its checksum (stored {stored:#010x}, computed {computed:#010x})", path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
        /// The block number.
        block: usize,
        /// The checksum in the index.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// A codec refused a spec or failed to decode a block.
    #[error("{}{}: {source}", path.display(), block.map(|b| format!(": block {b}")).unwrap_or_default())]
    Codec {
        /// The file (or table, for spec errors).
        path: PathBuf,
        /// The block, when decoding one.
        block: Option<usize>,
        /// The codec's error.
        source: CodecError,
    },
    /// Rows offered to a table whose columns differ from the table's schema (see
    /// [`crate::schema`]): names the table, the column, the stored type and the
    /// offered one, and where the schema was read from.
    #[error("table {table}: {problem} (schema of {})", schema_of.display())]
    Schema {
        /// The table.
        table: String,
        /// The schema record, or the partition the schema was derived from.
        schema_of: PathBuf,
        /// How the rows differ.
        problem: crate::schema::SchemaMismatch,
    },
    /// Data or arguments that break a rule: an attribute that does not hold, a CSV row
    /// that does not fit the schema, a column of the wrong type or length.
    #[error("{0}")]
    Invalid(String),
}

/// `Result` with [`StoreError`].
pub type Result<T> = std::result::Result<T, StoreError>;

/// Attaches a path to I/O errors.
pub(crate) trait IoContext<T> {
    /// Wraps the error with `path`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| StoreError::Io { path: path.to_path_buf(), source })
    }
}

/// A [`StoreError::Corrupt`] for `path`.
pub(crate) fn corrupt(path: &Path, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt { path: path.to_path_buf(), detail: detail.into() }
}
