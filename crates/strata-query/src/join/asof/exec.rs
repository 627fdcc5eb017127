//! The as-of join operator.
//!
//! The left side (trades) is collected and its rows grouped by key, each group in
//! time order. The right side (quotes) streams past, each partition on its own task,
//! in the order its input declares: the key columns the input is sorted by, then
//! time. Within a partition the rows of any key therefore arrive in time order, in
//! runs of consecutive rows, and one pass merges each run with the left rows of its
//! key by a galloping search of the run's times: no sort, no copy of the right
//! side, and right rows whose key no left row has are skipped after one integer
//! lookup per run. Partitions' picks are combined by time (then input order).
//!
//! A join without keys against a right side known to be small (a table of session
//! bounds, a calendar: at most [`SMALL_RIGHT_ROWS`] rows by its statistics) goes
//! the other way: the right side is collected and sorted by time, and each left row
//! finds its match by binary search, so the left side is never sorted.

use std::fmt;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, new_null_array};
use arrow_schema::SchemaRef;
use datafusion::arrow::compute::{concat_batches, interleave, take};
use datafusion::common::Result;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::JoinType;
use datafusion::physical_expr::{EquivalenceProperties, LexRequirement, OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream, collect,
};
use futures::{StreamExt, TryStreamExt};

use super::plan::Direction;
use crate::join::keys::{KeyCoder, KeyGroups, time_column};

/// The as-of join execution plan.
#[derive(Debug)]
pub struct AsofJoinExec {
    spec: AsofJoinSpec,
    properties: Arc<PlanProperties>,
}

/// What to build an [`AsofJoinExec`] from, and what one execution of it reads.
#[derive(Clone, Debug)]
pub struct AsofJoinSpec {
    /// Left input.
    pub left: Arc<dyn ExecutionPlan>,
    /// Right input.
    pub right: Arc<dyn ExecutionPlan>,
    /// Left key expressions.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Right key expressions, pairwise equal to the left ones.
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Left time.
    pub left_time: Arc<dyn PhysicalExpr>,
    /// Right time.
    pub right_time: Arc<dyn PhysicalExpr>,
    /// Backward (kdb+'s `aj`) or forward.
    pub direction: Direction,
    /// Whether equal times are excluded.
    pub strict: bool,
    /// Inner or left.
    pub join_type: JoinType,
    /// The order the right side must arrive in (per partition).
    pub right_order: LexRequirement,
    /// Output schema: left columns then right columns.
    pub schema: SchemaRef,
}

impl AsofJoinExec {
    /// The operator for `spec`.
    pub fn new(spec: AsofJoinSpec) -> AsofJoinExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(spec.schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        AsofJoinExec { spec, properties }
    }
}

impl DisplayAs for AsofJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> =
            self.spec.left_keys.iter().zip(&self.spec.right_keys).map(|(l, r)| format!("{l} = {r}")).collect();
        write!(
            f,
            "AsofJoinExec: {:?}, keys=[{}], time={} {:?}{} {}, right order=[{}]",
            self.spec.join_type,
            keys.join(", "),
            self.spec.left_time,
            self.spec.direction,
            if self.spec.strict { " strict" } else { "" },
            self.spec.right_time,
            self.spec.right_order.iter().map(|r| r.expr.to_string()).collect::<Vec<_>>().join(", ")
        )
    }
}

impl ExecutionPlan for AsofJoinExec {
    fn name(&self) -> &str {
        "AsofJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.spec.left, &self.spec.right]
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![None, Some(OrderingRequirements::new(self.spec.right_order.clone()))]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false, false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        // More right partitions would split key runs the scan keeps whole.
        vec![false, false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for e in
            self.spec.left_keys.iter().chain(&self.spec.right_keys).chain([&self.spec.left_time, &self.spec.right_time])
        {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [left, right]: [Arc<dyn ExecutionPlan>; 2] = children
            .try_into()
            .map_err(|_| datafusion::error::DataFusionError::Internal("AsofJoinExec has two children".into()))?;
        Ok(Arc::new(AsofJoinExec::new(AsofJoinSpec { left, right, ..self.spec.clone() })))
    }

    fn execute(&self, _partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let job = self.spec.clone();
        let reservation = MemoryConsumer::new("AsofJoinExec").register(context.memory_pool());
        let stream = futures::stream::once(job.run(context, reservation))
            .map_ok(|b| futures::stream::iter(b.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.spec.schema.clone(), stream)))
    }
}

/// The most rows a key-less join's right side may have, by its statistics, to be
/// searched rather than merged (see the module documentation): it is collected
/// whole, and each left row costs a binary search of it.
pub const SMALL_RIGHT_ROWS: usize = 1 << 16;

/// The collected left side, grouped by key.
struct LeftIndex {
    batch: RecordBatch,
    /// Each group's rows in time order.
    keys: KeyGroups,
    times: Vec<i64>,
}

/// A right row picked for a left row: its time, partition, batch and row.
type Pick = (i64, u32, u32, u32);

/// The number of leading `values` for which `before` holds (it holds for a prefix),
/// found by doubling steps from the start and then a binary search: a left row's
/// match is most often a few right rows past the last one's, so this reads a few
/// values near the start rather than halving the whole run.
fn gallop(values: &[i64], before: impl Fn(i64) -> bool) -> usize {
    let mut low = 0;
    let mut step = 1;
    while low + step <= values.len() && before(values[low + step - 1]) {
        low += step;
        step *= 2;
    }
    let high = values.len().min(low + step);
    low + values[low..high].partition_point(|v| before(*v))
}

/// What one right partition's pass knows of each left group, while it runs.
struct GroupState<'a> {
    /// The right row picked for each left row.
    picks: &'a mut [Option<Pick>],
    /// Each group's first left row not yet matched (backward: not yet past).
    next: &'a mut [usize],
    /// Each group's last right row so far (backward).
    last: &'a mut [Option<Pick>],
    /// Whether the batch being read holds a picked row (or, backward, may).
    used: bool,
}

/// What one right partition found.
struct PartitionPicks {
    picks: Vec<Option<Pick>>,
    batches: Vec<RecordBatch>,
}

/// The columns of `batch` at rows `kept` (ascending), shared when it keeps them all.
fn kept_rows(batch: &RecordBatch, kept: &[u32]) -> Result<Vec<ArrayRef>> {
    if kept.len() == batch.num_rows() {
        return Ok(batch.columns().to_vec());
    }
    let rows = UInt32Array::from(kept.to_vec());
    Ok(batch.columns().iter().map(|c| take(c, &rows, None)).collect::<std::result::Result<_, _>>()?)
}

fn evaluate(exprs: &[Arc<dyn PhysicalExpr>], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
    exprs.iter().map(|e| e.evaluate(batch)?.into_array(batch.num_rows())).collect()
}

impl AsofJoinSpec {
    async fn run(self, context: Arc<TaskContext>, reservation: MemoryReservation) -> Result<Vec<RecordBatch>> {
        let left_batches = collect(self.left.clone(), context.clone()).await?;
        let batch = concat_batches(&self.left.schema(), &left_batches)?;
        drop(left_batches);
        reservation.try_grow(batch.get_array_memory_size())?;
        if self.left_keys.is_empty() && self.right_is_small() {
            return self.search_right(batch, context, reservation).await;
        }
        let (index, coder) = self.index_left(batch)?;
        let index = Arc::new(index);
        let rows = index.batch.num_rows();
        let mut tasks = Vec::new();
        for partition in 0..self.right.output_partitioning().partition_count() {
            let (job, index, context, coder) = (self.clone(), index.clone(), context.clone(), coder.clone());
            let mut reservation = reservation.new_empty();
            tasks.push(SpawnedTask::spawn(async move {
                let picks = job.scan_right(partition, &index, coder, context, &mut reservation).await;
                (picks, reservation)
            }));
        }
        let mut results = Vec::new();
        for task in tasks {
            let (picks, r) =
                task.join().await.map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            reservation.try_grow(r.size())?;
            results.push(picks?);
        }
        self.output(&index, rows, results)
    }

    /// Whether the right side's statistics promise at most [`SMALL_RIGHT_ROWS`] rows.
    fn right_is_small(&self) -> bool {
        StatisticsContext::new()
            .compute(self.right.as_ref(), &StatisticsArgs::new())
            .ok()
            .and_then(|s| s.num_rows.get_value().copied())
            .is_some_and(|rows| rows <= SMALL_RIGHT_ROWS)
    }

    /// The key-less join of `left` (collected) with the right side collected and
    /// sorted by time, each left row's match found by binary search: backward, the
    /// last right row at or before it (strictly before, when strict), the later in
    /// input order among equal times; forward, the first at or after it (strictly
    /// after), the earlier among equal times. The left rows keep their order.
    async fn search_right(
        &self,
        left: RecordBatch,
        context: Arc<TaskContext>,
        reservation: MemoryReservation,
    ) -> Result<Vec<RecordBatch>> {
        let right_batches = collect(self.right.clone(), context).await?;
        let right = concat_batches(&self.right.schema(), &right_batches)?;
        drop(right_batches);
        reservation.try_grow(right.get_array_memory_size())?;
        let right_time = time_column(&self.right_time.evaluate(&right)?.into_array(right.num_rows())?)?;
        let mut order: Vec<u32> = (0..right.num_rows() as u32).filter(|r| right_time.is_valid(*r as usize)).collect();
        order.sort_by_key(|r| right_time.value(*r as usize));
        let times: Vec<i64> = order.iter().map(|r| right_time.value(*r as usize)).collect();
        let left_time = time_column(&self.left_time.evaluate(&left)?.into_array(left.num_rows())?)?;
        let inclusive =
            matches!((self.direction, self.strict), (Direction::Backward, false) | (Direction::Forward, true));
        let picks: Vec<Option<u32>> = (0..left.num_rows())
            .map(|row| {
                if left_time.is_null(row) {
                    return None;
                }
                let lt = left_time.value(row);
                let at = times.partition_point(|&t| t < lt || (inclusive && t == lt));
                match self.direction {
                    Direction::Backward => at.checked_sub(1).map(|i| order[i]),
                    Direction::Forward => order.get(at).copied(),
                }
            })
            .collect();
        let kept: Vec<u32> = (0..left.num_rows() as u32)
            .filter(|r| self.join_type == JoinType::Left || picks[*r as usize].is_some())
            .collect();
        let mut columns = kept_rows(&left, &kept)?;
        let right_rows: UInt32Array = kept.iter().map(|r| picks[*r as usize]).collect();
        for column in right.columns() {
            columns.push(take(column, &right_rows, None)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(kept.len()));
        Ok(vec![RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?])
    }

    fn index_left(&self, batch: RecordBatch) -> Result<(LeftIndex, KeyCoder)> {
        let mut coder = KeyCoder::default();
        let keys = evaluate(&self.left_keys, &batch)?;
        let codes = keys.iter().map(|k| coder.codes(k, true)).collect::<Result<Vec<_>>>()?;
        let time = time_column(&self.left_time.evaluate(&batch)?.into_array(batch.num_rows())?)?;
        // Rows with a null time join nothing, so their value is never read.
        let mut keys = KeyGroups::new(&codes, batch.num_rows(), |row| time.is_null(row));
        let times = time.values().to_vec();
        for rows in &mut keys.groups {
            rows.sort_by_key(|r| times[*r as usize]);
        }
        Ok((LeftIndex { batch, keys, times }, coder))
    }

    async fn scan_right(
        &self,
        partition: usize,
        index: &LeftIndex,
        mut coder: KeyCoder,
        context: Arc<TaskContext>,
        reservation: &mut MemoryReservation,
    ) -> Result<PartitionPicks> {
        let rows = index.batch.num_rows();
        let group_count = index.keys.groups.len();
        let mut picks: Vec<Option<Pick>> = vec![None; rows];
        let mut next = vec![0usize; group_count];
        let mut last: Vec<Option<Pick>> = vec![None; group_count];
        let mut batches = Vec::new();
        let mut stream = self.right.execute(partition, context)?;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let keys = evaluate(&self.right_keys, &batch)?;
            let time = time_column(&self.right_time.evaluate(&batch)?.into_array(batch.num_rows())?)?;
            let codes = keys.iter().map(|k| coder.codes(k, false)).collect::<Result<Vec<_>>>()?;
            let mut finder = index.keys.finder(codes);
            let mut state = GroupState { picks: &mut picks, next: &mut next, last: &mut last, used: false };
            let at = (partition as u32, batches.len() as u32);
            let (rows, times) = (batch.num_rows(), time.values());
            let mut row = 0;
            while row < rows {
                // Rows of one key come together, in time order: merge them with the
                // key's left rows as one run.
                let end = finder.key_run_end(row, rows);
                if let Some(g) = finder.group(row) {
                    let mut start = row;
                    while start < end {
                        let stop = match time.nulls() {
                            None => end,
                            Some(nulls) => (start..end).find(|r| nulls.is_null(*r)).unwrap_or(end),
                        };
                        if start < stop {
                            self.merge_run(index, g, &times[start..stop], (at.0, at.1, start as u32), &mut state);
                        }
                        start = stop + 1;
                    }
                }
                row = end;
            }
            if state.used {
                reservation.try_grow(batch.get_array_memory_size())?;
                batches.push(batch);
            } else {
                // Keep numbering dense: an unused batch is replaced by an empty one.
                batches.push(batch.slice(0, 0));
            }
        }
        if self.direction == Direction::Backward {
            for (g, members) in index.keys.groups.iter().enumerate() {
                for &row in &members[next[g]..] {
                    picks[row as usize] = last[g];
                }
            }
        }
        Ok(PartitionPicks { picks, batches })
    }

    /// Merges `times`, the times of a run of right rows of group `g` in time order
    /// starting at `first` (partition, batch, row), with the group's left rows not
    /// yet matched. Each left row is matched as a row-by-row pass would match it:
    /// backward, to the run's last row at or before it (strictly before, when
    /// strict), or the group's last row before the run when the run has none;
    /// forward, to the run's first row at or after it. A left row after every row
    /// of the run (backward) or after the run (forward) waits for later runs.
    fn merge_run(&self, index: &LeftIndex, g: usize, times: &[i64], first: (u32, u32, u32), state: &mut GroupState) {
        let members = &index.keys.groups[g];
        let pick = |at: usize| (times[at], first.0, first.1, first.2 + at as u32);
        // Whether a right row at or before the left time counts as before it.
        let inclusive =
            matches!((self.direction, self.strict), (Direction::Backward, false) | (Direction::Forward, true));
        let mut from = 0;
        while state.next[g] < members.len() {
            let member = members[state.next[g]] as usize;
            let lt = index.times[member];
            let at = from + gallop(&times[from..], |t| t < lt || (inclusive && t == lt));
            if at == times.len() {
                break;
            }
            state.picks[member] = match self.direction {
                Direction::Backward if at == 0 => state.last[g],
                Direction::Backward => Some(pick(at - 1)),
                Direction::Forward => Some(pick(at)),
            };
            state.used |= self.direction == Direction::Forward;
            state.next[g] += 1;
            from = at;
        }
        if self.direction == Direction::Backward {
            state.last[g] = Some(pick(times.len() - 1));
            state.used = true;
        }
    }

    fn output(&self, index: &LeftIndex, rows: usize, results: Vec<PartitionPicks>) -> Result<Vec<RecordBatch>> {
        // The best pick over partitions: nearest time; ties to the later row
        // (backward) or the earlier (forward), in input order.
        let mut best: Vec<Option<Pick>> = vec![None; rows];
        for result in &results {
            for (slot, pick) in best.iter_mut().zip(&result.picks) {
                let Some(pick) = pick else { continue };
                let better = match slot {
                    None => true,
                    Some(old) => match self.direction {
                        Direction::Backward => (pick.0, pick.1) > (old.0, old.1),
                        Direction::Forward => (pick.0, pick.1) < (old.0, old.1),
                    },
                };
                if better {
                    *slot = Some(*pick);
                }
            }
        }
        let kept: Vec<u32> =
            (0..rows as u32).filter(|r| self.join_type == JoinType::Left || best[*r as usize].is_some()).collect();
        let left_schema = index.batch.schema();
        let right_fields = &self.schema.fields()[left_schema.fields().len()..];
        // Flatten every partition's batches, then one all-null row for misses.
        let mut sources: Vec<Vec<ArrayRef>> = vec![Vec::new(); right_fields.len()];
        let mut offsets = Vec::new();
        for result in &results {
            offsets.push(sources.first().map_or(0, Vec::len));
            for batch in &result.batches {
                for (c, column) in batch.columns().iter().enumerate() {
                    sources[c].push(column.clone());
                }
            }
        }
        let null_source = sources.first().map_or(0, Vec::len);
        for (c, field) in right_fields.iter().enumerate() {
            sources[c].push(new_null_array(field.data_type(), 1));
        }
        let picks: Vec<(usize, usize)> = kept
            .iter()
            .map(|r| match best[*r as usize] {
                Some((_, p, b, row)) => (offsets[p as usize] + b as usize, row as usize),
                None => (null_source, 0),
            })
            .collect();
        let mut columns = kept_rows(&index.batch, &kept)?;
        for source in &sources {
            let arrays: Vec<&dyn Array> = source.iter().map(|a| a.as_ref()).collect();
            columns.push(interleave(&arrays, &picks)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(kept.len()));
        Ok(vec![RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?])
    }
}
