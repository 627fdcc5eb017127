//! Errors of the query layer: storage errors, DataFusion errors and bad requests,
//! each with a message that says what was wrong and where.

use datafusion::error::DataFusionError;
use strata_store::StoreError;

/// Everything a query can fail with.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Reading the database failed (the message names the file, block or column).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Planning or running the SQL failed (syntax, unknown names, types, limits).
    #[error("{}", describe(.0))]
    DataFusion(#[from] Box<DataFusionError>),
    /// The request itself is invalid (a bad table name, an unsupported form).
    #[error("{0}")]
    Invalid(String),
    /// Writing a result out failed (a full disk, a closed pipe).
    #[error("cannot write results: {0}")]
    Output(#[source] std::io::Error),
    /// The statement is not allowed here: it would write, or reach past the
    /// engine's tables (see `EngineOptions::allow_write`).
    #[error("refused: {0}")]
    Refused(String),
    /// The query's answer outgrew the memory the engine may hold for a query
    /// (`EngineOptions::memory_limit`): it is refused, not gathered.
    #[error(
        "the answer is larger than the {} MiB a query may hold here ({rows} rows gathered when it ran out): \
         narrow it with WHERE or LIMIT, aggregate it, or raise the query memory limit",
        limit >> 20
    )]
    AnswerTooLarge {
        /// The engine's memory limit, in bytes.
        limit: usize,
        /// The rows gathered before the one batch that did not fit.
        rows: usize,
    },
    /// The statement ran past its time limit (`EngineOptions::query_timeout`) and
    /// was stopped.
    #[error(
        "the statement ran for more than {} s, the time limit here, and was stopped: narrow it with WHERE, or \
         raise the limit (--query-timeout)",
        limit.as_secs_f64()
    )]
    TimedOut {
        /// The limit.
        limit: std::time::Duration,
    },
    /// The statement was stopped before it finished: its client went away.
    #[error("the statement was cancelled: its client disconnected")]
    Cancelled,
    /// The query hit a bug: something inside the engine panicked. The panic stayed
    /// inside the engine, which goes on serving; the message names the query.
    #[error("query failed on an internal error (a bug, please report it): {message}\n  query: {query}")]
    Panicked {
        /// The statement that was running.
        query: String,
        /// The panic's message.
        message: String,
    },
}

impl From<DataFusionError> for QueryError {
    fn from(e: DataFusionError) -> QueryError {
        // A storage error raised inside a scan travels as an external error: give it
        // back its own type so the message is the store's, not DataFusion's wrapping.
        match e.find_root() {
            DataFusionError::External(inner) if inner.is::<StoreError>() => QueryError::Invalid(inner.to_string()),
            _ => QueryError::DataFusion(Box::new(e)),
        }
    }
}

/// The shortest useful text of a DataFusion error: the root cause, without the
/// chain of "Context" wrappers, but keeping resource-limit messages whole.
fn describe(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::External(inner) => inner.to_string(),
        root => root.strip_backtrace(),
    }
}

/// A storage error carried through DataFusion (scans run inside its streams).
pub(crate) fn external(e: StoreError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The result type of this crate.
pub type Result<T, E = QueryError> = std::result::Result<T, E>;
