//! The first or last K rows of every run of equal keys, in input already sorted.
//!
//! A table stored sorted by `(sym, time)` holds each symbol's rows as one run in
//! time order, so "the latest quote per symbol" is the last row of every run and
//! "the first three trades per symbol" the first three. [`RunEndsExec`] keeps those
//! rows in one pass over the sorted input, holding at most K rows of the open run,
//! where a heap per group would hash and compare every row.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, internal_datafusion_err};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{Distribution, LexOrdering, OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use crate::batch_stream::BatchSteps;
use crate::runs::{key_at, same_key};

/// Which end of each run to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// The first K rows, in input order (the window orders as the input does).
    First,
    /// The last K rows, last row first (the window orders against the input).
    Last,
}

/// Keeps `keep` rows at one end of every run of equal `keys` in its sorted input
/// (one partition: several are merged in order first), and gives them in the window's order.
#[derive(Debug)]
pub(crate) struct RunEndsExec {
    input: Arc<dyn ExecutionPlan>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    keep: usize,
    end: RunEnd,
    /// The order of the input: the keys, then the window's order or its reverse.
    input_order: LexOrdering,
    /// The keys, then the window's order: the order the kept rows come out in.
    ordering: LexOrdering,
    properties: Arc<PlanProperties>,
}

impl RunEndsExec {
    pub(crate) fn try_new(
        input: Arc<dyn ExecutionPlan>,
        keys: Vec<Arc<dyn PhysicalExpr>>,
        keep: usize,
        end: RunEnd,
        input_order: LexOrdering,
        ordering: LexOrdering,
    ) -> Result<RunEndsExec> {
        let mut equivalences = input.equivalence_properties().clone();
        equivalences.reorder(ordering.clone())?;
        let properties = Arc::new(PlanProperties::new(
            equivalences,
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(RunEndsExec { input, keys, keep, end, input_order, ordering, properties })
    }
}

impl DisplayAs for RunEndsExec {
    fn fmt_as(&self, _format: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|key| key.to_string()).collect();
        let end = match self.end {
            RunEnd::First => "first",
            RunEnd::Last => "last",
        };
        write!(f, "RunEndsExec: {end} {} of each run of [{}]", self.keep, keys.join(", "))
    }
}

impl ExecutionPlan for RunEndsExec {
    fn name(&self) -> &str {
        "RunEndsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        // A run split across partitions would keep rows from each piece: they are
        // merged in order first.
        vec![Distribution::SinglePartition]
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![Some(OrderingRequirements::from(self.input_order.clone()))]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![self.end == RunEnd::First]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for key in &self.keys {
            if f(key)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [input]: [Arc<dyn ExecutionPlan>; 1] =
            children.try_into().map_err(|_| internal_datafusion_err!("RunEndsExec has one child"))?;
        let (keys, input_order, ordering) = (self.keys.clone(), self.input_order.clone(), self.ordering.clone());
        Ok(Arc::new(RunEndsExec::try_new(input, keys, self.keep, self.end, input_order, ordering)?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let runs =
            Runs { keys: self.keys.clone(), keep: self.keep, end: self.end, schema: Arc::clone(&schema), open: None };
        // Each step reads batches until one closes a run, then gives its rows; the
        // open run's rows come last, when the input ends.
        Ok(crate::batch_stream::stream(input, runs, schema))
    }
}

/// The run still open at the end of the batches seen so far.
struct OpenRun {
    /// Its keys, as one-row arrays.
    key: Vec<ArrayRef>,
    /// Its kept rows so far, in input order, at most `keep`.
    rows: RecordBatch,
}

/// The state of one stream.
struct Runs {
    keys: Vec<Arc<dyn PhysicalExpr>>,
    keep: usize,
    end: RunEnd,
    schema: SchemaRef,
    open: Option<OpenRun>,
}

impl BatchSteps for Runs {
    /// Takes in one batch; gives back the kept rows of the runs it closed.
    fn push(&mut self, batch: RecordBatch) -> Result<Option<RecordBatch>> {
        let batch = &batch;
        if batch.num_rows() == 0 {
            return Ok(None);
        }
        let keys: Vec<ArrayRef> =
            self.keys.iter().map(|key| key.evaluate(batch)?.into_array(batch.num_rows())).collect::<Result<_>>()?;
        let mut runs = crate::runs::runs(&keys, batch.num_rows())?;
        let Some(last) = runs.pop() else { return Ok(None) };
        let mut closed = Vec::new();

        // The first run may go on from the open one.
        let mut whole = runs.into_iter();
        let continues = match &self.open {
            Some(open) => same_key(&open.key, &keys, 0)?,
            None => false,
        };
        let first = if continues {
            let first = whole.next().unwrap_or_else(|| last.clone());
            self.extend_open(batch, first.clone())?;
            Some(first)
        } else {
            None
        };
        let closes_open = first.as_ref().is_none_or(|first| *first != last);
        if closes_open {
            closed.extend(self.close()?);
        }

        // Runs that start and end in this batch.
        let inner: Vec<u32> = whole.flat_map(|run| self.in_window_order(self.kept(run, 0))).collect();
        if !inner.is_empty() {
            closed.push(take_record_batch(batch, &UInt32Array::from(inner))?);
        }

        // The last run stays open: the next batch may go on with it.
        if closes_open {
            let kept = self.kept(last.clone(), 0);
            self.open = Some(OpenRun { key: key_at(&keys, last.start), rows: batch.slice(kept.start, kept.len()) });
        }
        self.joined(closed)
    }

    /// The kept rows of the last run, once the input has ended.
    fn finish(&mut self) -> Result<Option<RecordBatch>> {
        let closed = self.close()?;
        self.joined(closed.into_iter().collect())
    }
}

impl Runs {
    /// Adds the kept rows of `run`, which goes on from the open run.
    fn extend_open(&mut self, batch: &RecordBatch, run: Range<usize>) -> Result<()> {
        let Some(open) = self.open.take() else { return Ok(()) };
        let kept = self.kept(run, open.rows.num_rows());
        let joined = concat_batches(&self.schema, [&open.rows, &batch.slice(kept.start, kept.len())])?;
        let start = joined.num_rows().saturating_sub(self.keep);
        self.open = Some(OpenRun { key: open.key, rows: joined.slice(start, joined.num_rows() - start) });
        Ok(())
    }

    /// The rows of `run` to keep, given `already` rows kept from its start in
    /// earlier batches.
    fn kept(&self, run: Range<usize>, already: usize) -> Range<usize> {
        match self.end {
            RunEnd::First => run.start..run.end.min(run.start + self.keep.saturating_sub(already)),
            RunEnd::Last => run.end.saturating_sub(self.keep).max(run.start)..run.end,
        }
    }

    /// Row indices of `kept` in the order the window wants them.
    fn in_window_order(&self, kept: Range<usize>) -> Vec<u32> {
        let indices = kept.map(|i| i as u32);
        match self.end {
            RunEnd::First => indices.collect(),
            RunEnd::Last => indices.rev().collect(),
        }
    }

    /// Closes the open run, giving its kept rows in the window's order.
    fn close(&mut self) -> Result<Option<RecordBatch>> {
        let Some(open) = self.open.take() else { return Ok(None) };
        Ok(Some(match self.end {
            RunEnd::First => open.rows,
            RunEnd::Last => {
                let order = UInt32Array::from(self.in_window_order(0..open.rows.num_rows()));
                take_record_batch(&open.rows, &order)?
            }
        }))
    }

    fn joined(&self, batches: Vec<RecordBatch>) -> Result<Option<RecordBatch>> {
        if batches.is_empty() {
            return Ok(None);
        }
        Ok(Some(concat_batches(&self.schema, &batches)?))
    }
}
