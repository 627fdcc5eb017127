//! The output stream of an operator that reads its input one batch at a time and
//! gives back rows when it can: rows often wait for the next batch (the rest of a
//! symbol's run, the rest of a group of peers), and the last ones come when the
//! input ends.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use datafusion::common::Result;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

/// What such an operator does with each batch of one input partition.
pub(crate) trait BatchSteps: Send + 'static {
    /// Takes in one input batch; gives back the rows it completes, if any.
    fn push(&mut self, batch: RecordBatch) -> Result<Option<RecordBatch>>;
    /// Gives back the rows still waiting once the input has ended.
    fn finish(&mut self) -> Result<Option<RecordBatch>>;
}

/// The stream of `steps` over `input`, with `schema`; it ends at the first error.
pub(crate) fn stream(
    input: SendableRecordBatchStream,
    steps: impl BatchSteps,
    schema: SchemaRef,
) -> SendableRecordBatchStream {
    let stream = futures::stream::unfold((input, Some(steps)), |(mut input, steps)| async move {
        let mut steps = steps?;
        loop {
            let step = match input.next().await {
                Some(batch) => batch.and_then(|batch| steps.push(batch)),
                None => return steps.finish().transpose().map(|last| (last, (input, None))),
            };
            match step {
                Ok(None) => continue,
                Ok(Some(rows)) => return Some((Ok(rows), (input, Some(steps)))),
                Err(e) => return Some((Err(e), (input, None))),
            }
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}
