//! [`RunAggregateExec`]: a DataFusion hash aggregate on one integer key, its
//! groups found by [`RunGroups`].

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, internal_datafusion_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::{OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::aggregates::{
    AggregateExec, AggregateInputMode, AggregateOutputMode, aggregate_expressions,
};
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, InputDistributionRequirements, InputOrderMode, PlanProperties,
    SendableRecordBatchStream,
};

use super::keys::{RunGroups, groups_by_runs};
use crate::batch_stream::BatchSteps;

/// Computes a DataFusion `AggregateExec` (any mode) grouped by one integer key:
/// its accumulators and arguments as DataFusion's own hash aggregate uses them,
/// its groups from [`RunGroups`]. It stands in for the node it was made from,
/// which it keeps for its schema, properties and requirements.
#[derive(Debug)]
pub(crate) struct RunAggregateExec {
    /// The DataFusion node computed here (an `AggregateExec`).
    aggregate: Arc<dyn ExecutionPlan>,
    metrics: ExecutionPlanMetricsSet,
}

impl RunAggregateExec {
    /// The operator for `plan` if it is an aggregate it computes: one integer
    /// group key (no grouping sets), every aggregate with a groups accumulator,
    /// input in no order DataFusion's aggregate would use (an ordered aggregate
    /// emits groups as they end, and says its output is ordered), and no limit
    /// or dynamic filter (their special paths stay DataFusion's).
    pub(crate) fn try_new(plan: Arc<dyn ExecutionPlan>) -> Option<RunAggregateExec> {
        let aggregate = plan.downcast_ref::<AggregateExec>()?;
        let group_by = aggregate.group_expr();
        let [(key, _)] = group_by.expr() else { return None };
        let computed = !group_by.has_grouping_set()
            && *aggregate.input_order_mode() == InputOrderMode::Linear
            && aggregate.limit_options().is_none()
            && aggregate.dynamic_expressions_produced().is_empty()
            && aggregate.aggr_expr().iter().all(|expr| expr.groups_accumulator_supported())
            // The key is read from the rows coming in (a final aggregate's
            // `input_schema` is the raw rows' before the partial one).
            && key.data_type(&aggregate.input().schema()).is_ok_and(|t| groups_by_runs(&t));
        computed.then(|| RunAggregateExec { aggregate: plan, metrics: ExecutionPlanMetricsSet::new() })
    }

    pub(super) fn node(&self) -> &AggregateExec {
        self.aggregate.downcast_ref::<AggregateExec>().expect("made from an AggregateExec")
    }

    /// The state of one partition's stream.
    fn steps(&self, reservation: MemoryReservation, baseline: BaselineMetrics) -> Result<RunAggregate> {
        let node = self.node();
        let (key, _) = node.group_expr().expr().first().ok_or_else(|| internal_datafusion_err!("no group key"))?;
        let keys = RunGroups::new(&key.data_type(&node.input().schema())?)?;
        let merging = node.mode().input_mode() == AggregateInputMode::Partial;
        let arguments = aggregate_expressions(node.aggr_expr(), node.mode(), node.group_expr().num_group_exprs())?;
        // As DataFusion's aggregate: a FILTER applies to raw rows, not to states.
        let filters = match merging {
            true => vec![None; node.aggr_expr().len()],
            false => node.filter_expr().to_vec(),
        };
        let accumulators =
            node.aggr_expr().iter().map(|expr| expr.create_groups_accumulator()).collect::<Result<Vec<_>>>()?;
        Ok(RunAggregate {
            key: Arc::clone(key),
            keys,
            merging,
            gives_states: node.mode().output_mode() == AggregateOutputMode::Partial,
            arguments,
            filters,
            accumulators,
            groups: Vec::new(),
            schema: node.schema(),
            reservation,
            baseline,
        })
    }
}

impl DisplayAs for RunAggregateExec {
    fn fmt_as(&self, _format: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let node = self.node();
        let keys: Vec<String> =
            node.group_expr().expr().iter().map(|(expr, name)| format!("{expr} as {name}")).collect();
        let aggregates: Vec<&str> = node.aggr_expr().iter().map(|expr| expr.name()).collect();
        write!(
            f,
            "RunAggregateExec: mode={:?}, gby=[{}], aggr=[{}]",
            node.mode(),
            keys.join(", "),
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for RunAggregateExec {
    fn name(&self) -> &str {
        "RunAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.aggregate.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.node().input()]
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.aggregate.input_distribution_requirements()
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        self.aggregate.required_input_ordering()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.aggregate.maintains_input_order()
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        self.aggregate.benefits_from_input_partitioning()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.aggregate.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let aggregate = replace_children_if_necessary(Arc::clone(&self.aggregate), children)?;
        // An input that changed what the aggregate is gets DataFusion's own.
        Ok(match RunAggregateExec::try_new(Arc::clone(&aggregate)) {
            Some(run) => Arc::new(run),
            None => aggregate,
        })
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let reservation = MemoryConsumer::new(format!("RunAggregateExec[{partition}]")).register(context.memory_pool());
        let steps = self.steps(reservation, baseline)?;
        let input = self.node().input().execute(partition, context)?;
        Ok(crate::batch_stream::stream(input, steps, self.node().schema()))
    }
}

/// One partition's groups and accumulators.
struct RunAggregate {
    key: Arc<dyn PhysicalExpr>,
    keys: RunGroups,
    /// Whether the input is other aggregates' states (merged), not raw rows.
    merging: bool,
    /// Whether the output is states for another aggregate, not final values.
    gives_states: bool,
    /// Each accumulator's argument columns (values, then ordering keys; or its
    /// state columns when merging).
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// The group of each row of the current batch.
    groups: Vec<usize>,
    schema: SchemaRef,
    reservation: MemoryReservation,
    baseline: BaselineMetrics,
}

impl RunAggregate {
    fn accumulate(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        let keys = self.key.evaluate(batch)?.into_array(rows)?;
        self.keys.intern(&keys, &mut self.groups)?;
        let total = self.keys.len();
        for ((accumulator, arguments), filter) in self.accumulators.iter_mut().zip(&self.arguments).zip(&self.filters) {
            let values = arguments
                .iter()
                .map(|expr| expr.evaluate(batch)?.into_array(rows))
                .collect::<Result<Vec<ArrayRef>>>()?;
            let filter = filter.as_ref().map(|expr| expr.evaluate(batch)?.into_array(rows)).transpose()?;
            let filter = filter.as_ref().map(|f| f.as_boolean());
            match self.merging {
                true => accumulator.merge_batch(&values, &self.groups, total)?,
                false => accumulator.update_batch(&values, &self.groups, filter, total)?,
            }
        }
        Ok(())
    }

    fn bytes(&self) -> usize {
        self.keys.size()
            + self.groups.capacity() * size_of::<usize>()
            + self.accumulators.iter().map(|a| a.size()).sum::<usize>()
    }

    /// Every group's key and results (states or values), as one batch; the
    /// groups start again from none.
    fn emit(&mut self) -> Result<RecordBatch> {
        let mut columns = vec![self.keys.take()?];
        for accumulator in &mut self.accumulators {
            match self.gives_states {
                true => columns.extend(accumulator.state(EmitTo::All)?),
                false => columns.push(accumulator.evaluate(EmitTo::All)?),
            }
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.reservation.resize(self.bytes());
        Ok(batch.record_output(&self.baseline))
    }
}

impl BatchSteps for RunAggregate {
    fn push(&mut self, batch: RecordBatch) -> Result<Option<RecordBatch>> {
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        self.accumulate(&batch)?;
        match self.reservation.try_resize(self.bytes()) {
            Ok(()) => Ok(None),
            // States for another aggregate may give a key twice: past the memory
            // limit they go out as they are, as DataFusion's partial aggregate's do.
            Err(_) if self.gives_states => self.emit().map(Some),
            Err(e) => Err(e),
        }
    }

    fn finish(&mut self) -> Result<Option<RecordBatch>> {
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        if self.keys.len() == 0 {
            return Ok(None);
        }
        self.emit().map(Some)
    }
}
