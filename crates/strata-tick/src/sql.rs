//! SQL for the query processes: a statement runs through strata-query's engine and
//! its rows come back as a q table (strata-ipc's Arrow conversion), or its error as
//! text for a kdb+ error reply. A statement that fails, even by panicking inside the
//! engine, costs its caller an error and nothing else: the process keeps serving.

use std::panic::AssertUnwindSafe;

use strata_ipc::K;
use strata_ipc::arrow::table_from_record_batches;
use strata_query::{Engine, EngineOptions};

/// The engine options of a query process: at most `memory_limit` bytes for sorts,
/// aggregations and joins (a statement needing more fails instead of taking the
/// machine's memory from the process's tables), and read-only: a client's SQL can
/// neither reach the machine's files nor change the tables other clients see.
pub fn engine_options(memory_limit: Option<usize>) -> EngineOptions {
    EngineOptions { memory_limit, allow_write: false, ..EngineOptions::default() }
}

/// Runs `statement` on `engine`: its rows as a q table, or what went wrong. The
/// engine is read-only unless its options say otherwise ([`engine_options`] leaves
/// it so): DDL, DML, COPY and SET are refused with the reason.
pub fn run(engine: &Engine, statement: &str) -> Result<K, String> {
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| engine.sql_with_schema(statement)));
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
