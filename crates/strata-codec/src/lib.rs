//! Strata's codecs and filters.
//!
//! Every function here is pure: it takes byte slices (little-endian elements of a
//! stated [`ElementKind`]) and returns bytes or a [`CodecError`]. Files, checksums and
//! block indexes live in `strata-store`. Algorithms keep kdb+'s numbering
//! (0 none, 1 qipc, 2 gzip, 3 snappy, 4 lz4hc, 5 zstd) and add pcodec (6).

mod algorithm;
pub mod auto;
mod block;
mod element;
mod filter;
pub mod qipc;
mod spec;

pub use algorithm::Algorithm;
pub use block::{compress_block, decompress_block};
pub use element::{ElementKind, NumericClass};
pub use filter::Filter;
pub use spec::{CompressionSpec, DEFAULT_LBS, MAX_FILTERS, MAX_LBS, MIN_LBS};

/// Why a codec operation or a spec was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// A spec string has a token the grammar does not know.
    #[error("compression spec '{spec}': unknown token '{token}'; valid: {valid}")]
    BadSpec {
        /// The whole spec as given.
        spec: String,
        /// The offending token.
        token: String,
        /// What the grammar accepts.
        valid: String,
    },
    /// A level outside the algorithm's range.
    #[error("{algorithm} level {level} is out of range {min}..{max}")]
    LevelOutOfRange {
        /// The algorithm.
        algorithm: Algorithm,
        /// The level asked for.
        level: i32,
        /// Lowest valid level.
        min: i32,
        /// Highest valid level.
        max: i32,
    },
    /// A logical block size exponent outside 12..=20.
    #[error("logical block size exponent {0} is out of range 12..20")]
    LbsOutOfRange(i64),
    /// A filter or codec that cannot apply to the column's element type.
    #[error("{0}")]
    Unsuitable(String),
    /// Compressed bytes that do not decode.
    #[error("{algorithm} block is corrupt: {detail}")]
    Corrupt {
        /// The codec that failed.
        algorithm: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A codec library failed while compressing.
    #[error("{algorithm} failed: {detail}")]
    Library {
        /// The codec that failed.
        algorithm: &'static str,
        /// The library's message.
        detail: String,
    },
}
