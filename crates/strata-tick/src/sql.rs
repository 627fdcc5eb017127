//! SQL for the query processes: a statement runs through strata-query's engine and
//! its rows come back as a q table (strata-ipc's Arrow conversion), or its error as
//! text for a kdb+ error reply. A statement that fails, even by panicking inside the
//! engine, costs its caller an error and nothing else: the process keeps serving.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use strata_ipc::K;
use strata_ipc::arrow::table_from_record_batches;
use strata_query::{Cancel, Engine, EngineOptions};

/// How long a statement may run on a query process unless told otherwise.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(120);
/// Statements a query process runs at once unless told otherwise.
pub const DEFAULT_QUERY_THREADS: usize = 4;

/// What a query process lets one statement take.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryLimits {
    /// Bytes a statement may hold for sorts, aggregations, joins, the answer and
    /// the strings scalar functions make (`None`: no limit).
    pub memory: Option<usize>,
    /// How long a statement may run before it is stopped (`None`: no limit).
    pub timeout: Option<Duration>,
    /// Statements run at once, each on its own thread; more wait their turn.
    pub threads: usize,
}

impl Default for QueryLimits {
    fn default() -> QueryLimits {
        QueryLimits { memory: None, timeout: Some(DEFAULT_QUERY_TIMEOUT), threads: DEFAULT_QUERY_THREADS }
    }
}

/// The engine options of a query process: `limits`' memory and time for every
/// statement (one needing more fails instead of taking the machine from the
/// process's tables), and read-only: a client's SQL can neither reach the machine's
/// files nor change the tables other clients see.
pub fn engine_options(limits: &QueryLimits) -> EngineOptions {
    EngineOptions {
        memory_limit: limits.memory,
        query_timeout: limits.timeout,
        allow_write: false,
        ..EngineOptions::default()
    }
}

/// Runs `statement` on `engine` until it finishes or `cancel` fires: its rows as a
/// q table, or what went wrong. The engine is read-only unless its options say
/// otherwise ([`engine_options`] leaves it so): DDL, DML, COPY and SET are refused
/// with the reason.
pub fn run(engine: &Engine, statement: &str, cancel: &Cancel) -> Result<K, String> {
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| engine.sql_with_schema_until(statement, cancel)));
    // One plan gives the columns even when there are no rows.
    let (schema, batches) = match ran {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            return Err(format!("the query engine failed on this statement ({what}); the process carries on"));
        }
    };
    table_from_record_batches(&schema, &batches).map(K::Table).map_err(|e| format!("the result cannot be sent: {e}"))
}
