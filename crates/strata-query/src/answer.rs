//! Gathering a query's answer within the engine's memory limit.
//!
//! DataFusion bounds what its sorts, aggregations and joins hold, but
//! `DataFrame::collect` gathers the rows it returns without counting them: a
//! client of a server asking for every quote of a year had the process take all
//! the memory the machine had. [`collect_within_limit`] holds each batch's bytes
//! in the engine's memory pool as it arrives, so an answer past the limit fails
//! as a sort past it does, and the process goes on serving.

use arrow_array::{Array, RecordBatch};
use datafusion::dataframe::DataFrame;
use datafusion::execution::memory_pool::MemoryConsumer;
use futures::StreamExt;

use crate::error::{QueryError, Result};

/// The rows of `frame`, counted while they are gathered against the memory pool
/// of the engine it was planned on, whose size is `limit` (and released once
/// they are handed back). Without a limit they are gathered as DataFusion does.
pub(crate) async fn collect_within_limit(frame: DataFrame, limit: Option<usize>) -> Result<Vec<RecordBatch>> {
    let Some(limit) = limit else { return Ok(frame.collect().await?) };
    let pool = frame.task_ctx().memory_pool().clone();
    let held = MemoryConsumer::new("the query's answer").register(&pool);
    let mut stream = frame.execute_stream().await?;
    let mut batches = Vec::new();
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if held.try_grow(answer_bytes(&batch)).is_err() {
            return Err(QueryError::AnswerTooLarge { limit, rows });
        }
        rows += batch.num_rows();
        batches.push(batch);
    }
    Ok(batches)
}

/// The bytes of `batch`'s rows as the caller will hold them once it copies them
/// out: its slices of the buffers, not the whole buffers, which for a column
/// mapped from a file are the whole file.
fn answer_bytes(batch: &RecordBatch) -> usize {
    let columns = batch.columns().iter();
    columns.map(|c| c.to_data().get_slice_memory_size().unwrap_or_else(|_| c.get_array_memory_size())).sum()
}
