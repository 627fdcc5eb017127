//! [`RollingWindowExec`]: window functions computed in one pass down input
//! already sorted by the partition keys and the window's order.

use std::fmt;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, SchemaRef};
use datafusion::arrow::compute::{cast, concat_batches, take_record_batch};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, internal_datafusion_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_expr::{Distribution, LexOrdering, OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, replace_children_if_necessary};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::windows::BoundedWindowAggExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use super::function::{Recognised, RollingFunction, rolling};
use crate::batch_stream::BatchSteps;
use crate::runs::{key_at, same_key};

/// Computes the window functions of a DataFusion window node in one pass over
/// its input, sorted by the partition keys and then the window's order (one
/// partition: several are merged in that order first). It stands in for the
/// node it was made from, which it keeps for its schema and ordering.
#[derive(Debug)]
pub(crate) struct RollingWindowExec {
    /// The DataFusion node computed here (a `BoundedWindowAggExec`).
    window: Arc<dyn ExecutionPlan>,
    /// The order the input must be in: the keys (in any direction), then the
    /// window's order (`None`: neither keys nor order).
    input_order: Option<LexOrdering>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl RollingWindowExec {
    /// The operator for `window` over input in `input_order`, when every one of
    /// its functions is one it computes.
    pub(crate) fn try_new(
        window: Arc<dyn ExecutionPlan>,
        input_order: Option<LexOrdering>,
    ) -> Option<RollingWindowExec> {
        Self::functions(&window)?;
        let properties = Arc::new(PlanProperties::new(
            window.equivalence_properties().clone(),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Some(RollingWindowExec { window, input_order, properties, metrics: ExecutionPlanMetricsSet::new() })
    }

    fn node(&self) -> &BoundedWindowAggExec {
        self.window.downcast_ref::<BoundedWindowAggExec>().expect("made from a BoundedWindowAggExec")
    }

    /// The functions of `window` as the rolling operator computes them.
    fn functions(window: &Arc<dyn ExecutionPlan>) -> Option<Vec<Recognised>> {
        let node = window.downcast_ref::<BoundedWindowAggExec>()?;
        let schema = node.input().schema();
        let order = node.window_expr().first()?.order_by();
        let order_types: Vec<DataType> =
            order.iter().map(|sort| sort.expr.data_type(&schema)).collect::<Result<_>>().ok()?;
        node.window_expr().iter().map(|expr| rolling(expr, &schema, &order_types)).collect()
    }
}

impl DisplayAs for RollingWindowExec {
    fn fmt_as(&self, _format: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<&str> = self.node().window_expr().iter().map(|expr| expr.name()).collect();
        write!(f, "RollingWindowExec: [{}]", names.join(", "))
    }
}

impl ExecutionPlan for RollingWindowExec {
    fn name(&self) -> &str {
        "RollingWindowExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.node().input()]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        // A partition split across input partitions would restart its frames.
        vec![Distribution::SinglePartition]
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![self.input_order.clone().map(OrderingRequirements::from)]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.window.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let window = replace_children_if_necessary(Arc::clone(&self.window), children)?;
        let rolling = RollingWindowExec::try_new(window, self.input_order.clone())
            .ok_or_else(|| internal_datafusion_err!("RollingWindowExec: new input changed the window's functions"))?;
        Ok(Arc::new(rolling))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let node = self.node();
        let reservation = MemoryConsumer::new("RollingWindowExec").register(context.memory_pool());
        let input = node.input().execute(partition, context)?;
        let first = node.window_expr().first().ok_or_else(|| internal_datafusion_err!("a window with no function"))?;
        let recognised = Self::functions(&self.window)
            .ok_or_else(|| internal_datafusion_err!("RollingWindowExec over functions it does not compute"))?;
        let needs_peers = recognised.iter().any(|r| r.frame.is_some_and(|frame| frame.peers));
        let reads_order = recognised.iter().any(|r| r.frame.is_some_and(|frame| frame.reads_order()));
        let rolling = Rolling {
            keys: first.partition_by().to_vec(),
            order: first.order_by().iter().map(|sort| Arc::clone(&sort.expr)).collect(),
            needs_peers,
            reads_order,
            functions: recognised.into_iter().map(|r| r.function).collect(),
            schema: node.schema(),
            held: None,
            reservation,
            last_key: None,
            baseline,
        };
        Ok(crate::batch_stream::stream(input, rolling, node.schema()))
    }
}

/// The state of one stream.
struct Rolling {
    keys: Vec<Arc<dyn PhysicalExpr>>,
    order: Vec<Arc<dyn PhysicalExpr>>,
    /// Some frame ends at the current row's last peer, so a batch's last group of
    /// peers waits for the next batch, which may hold more of them.
    needs_peers: bool,
    /// Some frame reaches back by order value.
    reads_order: bool,
    functions: Vec<Box<dyn RollingFunction>>,
    schema: SchemaRef,
    /// Rows waiting for the rest of their peers.
    held: Option<Held>,
    /// The memory the waiting rows hold, counted against the query's limit.
    reservation: MemoryReservation,
    /// The partition keys of the last row computed (one-row arrays).
    last_key: Option<Vec<ArrayRef>>,
    baseline: BaselineMetrics,
}

/// Rows waiting for the rest of their peers: batches all of one group of peers.
struct Held {
    batches: Vec<RecordBatch>,
    /// The group's keys and order values (one-row arrays).
    group: Vec<ArrayRef>,
}

impl BatchSteps for Rolling {
    /// Takes in one batch of the input; gives back the rows it could compute,
    /// with their window columns.
    fn push(&mut self, batch: RecordBatch) -> Result<Option<RecordBatch>> {
        let compute_time = self.baseline.elapsed_compute().clone();
        let _timer = compute_time.timer();
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(None);
        }
        if let Some(held) = &mut self.held {
            // A batch all of the waiting peers (its first and last rows are, so
            // every row is) joins them, uncopied.
            let ends = take_record_batch(&batch, &UInt32Array::from(vec![0, rows as u32 - 1]))?;
            let columns = Self::evaluate(&ends, self.keys.iter().chain(&self.order))?;
            if same_key(&held.group, &columns, 0)? && same_key(&held.group, &columns, 1)? {
                held.batches.push(batch);
                return self.account_held().map(|()| None);
            }
        }
        let batch = match self.held.take() {
            Some(held) => concat_batches(&batch.schema(), held.batches.iter().chain([&batch]))?,
            None => batch,
        };
        self.compute(batch, false)
    }

    /// The rows still waiting once the input has ended.
    fn finish(&mut self) -> Result<Option<RecordBatch>> {
        let compute_time = self.baseline.elapsed_compute().clone();
        let _timer = compute_time.timer();
        let Some(held) = self.held.take() else { return Ok(None) };
        let Some(first) = held.batches.first() else { return Ok(None) };
        let batch = concat_batches(&first.schema(), &held.batches)?;
        self.account_held()?;
        self.compute(batch, true)
    }
}

impl Rolling {
    /// `exprs` evaluated on `batch`.
    fn evaluate<'a>(
        batch: &RecordBatch,
        exprs: impl Iterator<Item = &'a Arc<dyn PhysicalExpr>>,
    ) -> Result<Vec<ArrayRef>> {
        exprs.map(|expr| expr.evaluate(batch)?.into_array(batch.num_rows())).collect()
    }

    /// Counts the waiting rows' memory against the query's limit.
    fn account_held(&mut self) -> Result<()> {
        let bytes = self.held.as_ref().map_or(0, |held| held.batches.iter().map(|b| b.get_array_memory_size()).sum());
        self.reservation.try_resize(bytes)
    }

    /// Computes the rows of `batch` whose peers are all in it (all of them when
    /// `last`: the input has ended), holding back the rest.
    fn compute(&mut self, batch: RecordBatch, last: bool) -> Result<Option<RecordBatch>> {
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(None);
        }
        let keys = Self::evaluate(&batch, self.keys.iter())?;
        let mut runs = crate::runs::runs(&keys, rows)?;
        let mut peers = Vec::new();
        let mut order_values = Vec::new();
        if self.needs_peers {
            order_values = Self::evaluate(&batch, self.order.iter())?;
            let mut columns = keys.clone();
            columns.extend(order_values.iter().cloned());
            peers = crate::runs::runs(&columns, rows)?;
            if !last {
                // The last peers may go on in the next batch: they wait.
                let waiting = peers.pop().unwrap_or(0..rows);
                let group = key_at(&columns, rows - 1);
                self.held = Some(Held { batches: vec![batch.slice(waiting.start, rows - waiting.start)], group });
                self.account_held()?;
                if waiting.start == 0 {
                    return Ok(None);
                }
                runs.retain_mut(|run| {
                    run.end = run.end.min(waiting.start);
                    run.start < run.end
                });
            }
        }
        let done = runs.last().map_or(0, |run| run.end);
        let batch = batch.slice(0, done);
        // Frames reaching back by order value end at peers, so the order column is
        // already evaluated.
        let order = if self.reads_order {
            let [values] = order_values.as_slice() else { return Err(internal_datafusion_err!("one order column")) };
            let values = cast(&values.slice(0, done), &DataType::Int64)?;
            Some(values.as_any().downcast_ref::<Int64Array>().cloned().expect("Int64"))
        } else {
            None
        };

        for function in &mut self.functions {
            function.load(&batch)?;
        }
        let continues = self.continues(&keys)?;
        let mut peer_at = 0;
        for (n, run) in runs.iter().enumerate() {
            let first_peer = peer_at;
            while peer_at < peers.len() && peers[peer_at].start < run.end {
                peer_at += 1;
            }
            for function in &mut self.functions {
                if n > 0 || !continues {
                    function.restart();
                }
                function.compute(run.clone(), &peers[first_peer..peer_at], order.as_ref());
            }
        }
        self.last_key = Some(key_at(&keys, done - 1));

        let mut columns = batch.columns().to_vec();
        for function in &mut self.functions {
            columns.push(function.finish()?);
        }
        let computed = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        Ok(Some(computed.record_output(&self.baseline)))
    }

    /// Whether the first row of `keys` has the keys of the last row computed.
    fn continues(&self, keys: &[ArrayRef]) -> Result<bool> {
        self.last_key.as_ref().map_or(Ok(false), |last| same_key(last, keys, 0))
    }
}
