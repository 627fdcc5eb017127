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
/// machine's memory from the process's tables).
pub fn engine_options(memory_limit: Option<usize>) -> EngineOptions {
    EngineOptions { memory_limit, ..EngineOptions::default() }
}

/// Runs `statement` on `engine`: its rows as a q table, or what went wrong.
pub fn run(engine: &Engine, statement: &str) -> Result<K, String> {
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| engine.sql(statement)));
    let batches = match ran {
        Ok(Ok(batches)) => batches,
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
    let schema = match batches.first() {
        Some(batch) => batch.schema(),
        // No batches: the statement's schema gives the (empty) table its columns.
        None => engine.schema_of(statement).map_err(|e| e.to_string())?,
    };
    table_from_record_batches(&schema, &batches).map(K::Table).map_err(|e| format!("the result cannot be sent: {e}"))
}
