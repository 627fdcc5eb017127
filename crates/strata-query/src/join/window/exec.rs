//! The window join operator.
//!
//! The left side (trades) is collected; its rows are grouped by key and, within a
//! group, ordered by window start, so the windows holding a right time `t` are
//! those that start at or before `t` (a prefix) and end at or after it (when ends
//! ascend with starts, as for `t.time - a .. t.time + b`, a suffix of that prefix).
//! The right side (quotes) streams past, each partition on its own task, in any
//! order: a right row finds its windows by a cursor that only moves forward while
//! its group's times ascend (a merge, when the input is sorted by key and time)
//! and by binary search otherwise, so nothing is ever sorted. Each (left row, right
//! row) pair feeds DataFusion's own grouped accumulators, with the left row's
//! number as the group; partitions' partial states are merged at the end, as in a
//! two-phase aggregation. Left rows with no right row in their window get what the
//! aggregate gives an empty group (0 for `count`, null for most others).

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array, new_null_array};
use arrow_schema::SchemaRef;
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::common::Result;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::GroupsAccumulatorAdapter;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream, collect,
};
use futures::StreamExt;

use crate::join::keys::{KeyCoder, KeyGroups, times};

/// Pairs of rows handed to the accumulators at once: bounds the memory of a
/// right batch whose rows fall into many windows.
const PAIRS_PER_UPDATE: usize = 1 << 16;

/// One end of every left row's window.
#[derive(Clone, Debug)]
pub struct Bound {
    /// Over the left input.
    pub expr: Arc<dyn PhysicalExpr>,
    /// Whether a right time equal to the bound is inside.
    pub inclusive: bool,
}

/// What to build a [`WindowJoinExec`] from.
pub struct WindowJoinSpec {
    /// Left input: one output row per row.
    pub left: Arc<dyn ExecutionPlan>,
    /// Right input: the rows aggregated.
    pub right: Arc<dyn ExecutionPlan>,
    /// Left key expressions.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Right key expressions, pairwise equal to the left ones.
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// The right time.
    pub time: Arc<dyn PhysicalExpr>,
    /// The window's start (`None`: unbounded).
    pub start: Option<Bound>,
    /// The window's end (`None`: unbounded).
    pub end: Option<Bound>,
    /// Output columns over the left input.
    pub columns: Vec<Arc<dyn PhysicalExpr>>,
    /// The aggregates, over `pair_schema`.
    pub aggregates: Vec<Arc<AggregateFunctionExpr>>,
    /// Each aggregate's inputs (arguments, then ordering expressions).
    pub arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// Each aggregate's `FILTER (WHERE ...)`.
    pub filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    /// Left columns then right columns, all nullable: the rows aggregates read.
    pub pair_schema: SchemaRef,
    /// Output: `columns` then the aggregates.
    pub schema: SchemaRef,
}

/// The window join execution plan.
pub struct WindowJoinExec {
    spec: Arc<WindowJoinSpec>,
    /// Which pair columns some aggregate reads (the others stay null).
    read: Arc<Vec<bool>>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for WindowJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WindowJoinExec")
    }
}

impl WindowJoinExec {
    /// The operator for `spec`.
    pub fn new(spec: WindowJoinSpec) -> WindowJoinExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(spec.schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        let mut read = vec![false; spec.pair_schema.fields().len()];
        for expr in spec.arguments.iter().flatten().chain(spec.filters.iter().flatten()) {
            for column in collect_columns(expr) {
                read[column.index()] = true;
            }
        }
        WindowJoinExec { spec: Arc::new(spec), read: Arc::new(read), properties }
    }
}

impl DisplayAs for WindowJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let s = &self.spec;
        let keys: Vec<String> = s.left_keys.iter().zip(&s.right_keys).map(|(l, r)| format!("{l} = {r}")).collect();
        let end = |b: &Option<Bound>, inside: &str, outside: &str| match b {
            Some(b) => format!("{} {}", b.expr, if b.inclusive { inside } else { outside }),
            None => "unbounded".to_string(),
        };
        let aggregates: Vec<&str> = s.aggregates.iter().map(|a| a.name()).collect();
        write!(
            f,
            "WindowJoinExec: keys=[{}], window=[{} {} {}], aggregates=[{}]",
            keys.join(", "),
            end(&s.start, "<=", "<"),
            s.time,
            end(&s.end, ">=", ">"),
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for WindowJoinExec {
    fn name(&self) -> &str {
        "WindowJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.spec.left, &self.spec.right]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false, false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        // The right side is read partition by partition as it comes.
        vec![false, false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let s = &self.spec;
        let bounds = s.start.iter().chain(&s.end).map(|b| &b.expr);
        let exprs = s.left_keys.iter().chain(&s.right_keys).chain([&s.time]).chain(bounds).chain(&s.columns);
        for e in exprs.chain(s.arguments.iter().flatten()).chain(s.filters.iter().flatten()) {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [left, right]: [Arc<dyn ExecutionPlan>; 2] =
            children.try_into().map_err(|_| DataFusionError::Internal("WindowJoinExec has two children".into()))?;
        let s = &self.spec;
        Ok(Arc::new(WindowJoinExec::new(WindowJoinSpec {
            left,
            right,
            left_keys: s.left_keys.clone(),
            right_keys: s.right_keys.clone(),
            time: s.time.clone(),
            start: s.start.clone(),
            end: s.end.clone(),
            columns: s.columns.clone(),
            aggregates: s.aggregates.clone(),
            arguments: s.arguments.clone(),
            filters: s.filters.clone(),
            pair_schema: s.pair_schema.clone(),
            schema: s.schema.clone(),
        })))
    }

    fn execute(&self, _partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let job = Job { spec: self.spec.clone(), read: self.read.clone() };
        let reservation = MemoryConsumer::new("WindowJoinExec").register(context.memory_pool());
        let stream = futures::stream::once(job.run(context, reservation));
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.spec.schema.clone(), stream)))
    }
}

/// The windows of one key's left rows, ordered by start.
#[derive(Debug)]
struct Windows {
    /// Left row numbers.
    rows: Vec<u32>,
    /// Inclusive starts, ascending.
    starts: Vec<i64>,
    /// Inclusive ends.
    ends: Vec<i64>,
    /// Whether `ends` ascend too (no window lies strictly inside an earlier one).
    ends_ascend: bool,
}

/// Where a group's search stopped for the last right time it saw.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    /// The last right time, if any.
    last: Option<i64>,
    /// Windows `..opened` start at or before it.
    opened: usize,
    /// With ascending ends: windows `..first_open` end before it.
    first_open: usize,
}

impl Windows {
    /// Calls `f` with every left row whose window holds time `t`.
    fn holding(&self, t: i64, cursor: &mut Cursor, mut f: impl FnMut(u32)) {
        if cursor.last.is_some_and(|last| t >= last) {
            while cursor.opened < self.starts.len() && self.starts[cursor.opened] <= t {
                cursor.opened += 1;
            }
            while self.ends_ascend && cursor.first_open < cursor.opened && self.ends[cursor.first_open] < t {
                cursor.first_open += 1;
            }
        } else {
            cursor.opened = self.starts.partition_point(|s| *s <= t);
            cursor.first_open = if self.ends_ascend { self.ends.partition_point(|e| *e < t) } else { 0 };
        }
        cursor.last = Some(t);
        if self.ends_ascend {
            (cursor.first_open..cursor.opened).for_each(|i| f(self.rows[i]));
        } else {
            (0..cursor.opened).filter(|i| self.ends[*i] >= t).for_each(|i| f(self.rows[i]));
        }
    }
}

/// The collected left side and its windows by key.
struct LeftWindows {
    batch: RecordBatch,
    keys: KeyGroups,
    windows: Vec<Windows>,
}

/// Pairs of (left row, right row) waiting for the accumulators.
#[derive(Default)]
struct Pairs {
    left: Vec<u32>,
    right: Vec<u32>,
}

/// One execution of the join.
#[derive(Clone)]
struct Job {
    spec: Arc<WindowJoinSpec>,
    read: Arc<Vec<bool>>,
}

fn evaluate(exprs: &[Arc<dyn PhysicalExpr>], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
    exprs.iter().map(|e| e.evaluate(batch)?.into_array(batch.num_rows())).collect()
}

/// Each row's bound as an inclusive integer (`None`: null); an absent bound is
/// `unbounded`.
fn bound_values(bound: &Option<Bound>, batch: &RecordBatch, unbounded: i64, step: i64) -> Result<Vec<Option<i64>>> {
    let Some(bound) = bound else { return Ok(vec![Some(unbounded); batch.num_rows()]) };
    let values = times(&bound.expr.evaluate(batch)?.into_array(batch.num_rows())?)?;
    // An exclusive bound on integer times is the inclusive one a step inside.
    let inside = if bound.inclusive { 0 } else { step };
    Ok(values.into_iter().map(|v| v.map(|v| v.saturating_add(inside))).collect())
}

impl Job {
    async fn run(self, context: Arc<TaskContext>, reservation: MemoryReservation) -> Result<RecordBatch> {
        let s = &self.spec;
        let left_batches = collect(s.left.clone(), context.clone()).await?;
        let batch = concat_batches(&s.left.schema(), &left_batches)?;
        drop(left_batches);
        reservation.try_grow(batch.get_array_memory_size())?;
        let (left, coder) = self.windows(batch)?;
        let left = Arc::new(left);
        let groups = left.batch.num_rows();
        let mut tasks = Vec::new();
        // With no window to fill, the right side need not be read.
        let partitions = if left.windows.is_empty() { 0 } else { s.right.output_partitioning().partition_count() };
        for partition in 0..partitions {
            let (job, left, context, coder) = (self.clone(), left.clone(), context.clone(), coder.clone());
            let mut reservation = reservation.new_empty();
            tasks.push(SpawnedTask::spawn(async move {
                let partial = job.aggregate_partition(partition, &left, coder, context, &mut reservation).await;
                (partial, reservation)
            }));
        }
        let mut finals = self.accumulators(groups)?;
        let every_group: Vec<usize> = (0..groups).collect();
        for task in tasks {
            let (partial, held) = task.join().await.map_err(|e| DataFusionError::External(Box::new(e)))?;
            for (merged, mut partial) in finals.iter_mut().zip(partial?) {
                let state = partial.state(EmitTo::All)?;
                merged.merge_batch(&state, &every_group, groups)?;
            }
            drop(held);
        }
        let mut columns = evaluate(&s.columns, &left.batch)?;
        for mut merged in finals {
            columns.push(merged.evaluate(EmitTo::All)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(groups));
        Ok(RecordBatch::try_new_with_options(s.schema.clone(), columns, &options)?)
    }

    /// The left rows' windows, grouped by key.
    fn windows(&self, batch: RecordBatch) -> Result<(LeftWindows, KeyCoder)> {
        let s = &self.spec;
        let mut coder = KeyCoder::default();
        let codes = evaluate(&s.left_keys, &batch)?.iter().map(|k| coder.codes(k, true)).collect::<Result<Vec<_>>>()?;
        let starts = bound_values(&s.start, &batch, i64::MIN, 1)?;
        let ends = bound_values(&s.end, &batch, i64::MAX, -1)?;
        // Rows with a null bound or an empty window hold nothing.
        let empty = |row: usize| match (starts[row], ends[row]) {
            (Some(start), Some(end)) => start > end,
            _ => true,
        };
        let keys = KeyGroups::new(&codes, batch.num_rows(), empty);
        let windows = keys
            .groups
            .iter()
            .map(|rows| {
                let mut rows = rows.clone();
                let bounds = |r: &u32| (starts[*r as usize].expect("kept"), ends[*r as usize].expect("kept"));
                rows.sort_by_key(bounds);
                let (starts, ends): (Vec<i64>, Vec<i64>) = rows.iter().map(bounds).unzip();
                let ends_ascend = ends.windows(2).all(|w| w[0] <= w[1]);
                Windows { rows, starts, ends, ends_ascend }
            })
            .collect();
        Ok((LeftWindows { batch, keys, windows }, coder))
    }

    /// One grouped accumulator per aggregate, sized for `groups` groups (so groups
    /// no row reaches still get a value).
    fn accumulators(&self, groups: usize) -> Result<Vec<Box<dyn GroupsAccumulator>>> {
        let empty = RecordBatch::new_empty(self.spec.pair_schema.clone());
        self.spec
            .aggregates
            .iter()
            .zip(&self.spec.arguments)
            .map(|(aggregate, arguments)| {
                let mut accumulator: Box<dyn GroupsAccumulator> = if aggregate.groups_accumulator_supported() {
                    aggregate.create_groups_accumulator()?
                } else {
                    let aggregate = aggregate.clone();
                    Box::new(GroupsAccumulatorAdapter::new(move || aggregate.create_accumulator()))
                };
                // Sizes the accumulator for every left row. The (empty) filter matters:
                // without one DataFusion takes every group below `groups` as having
                // seen a value, and a window with no right row must give null (count 0).
                let no_rows = BooleanArray::from(Vec::<bool>::new());
                accumulator.update_batch(&evaluate(arguments, &empty)?, &[], Some(&no_rows), groups)?;
                Ok(accumulator)
            })
            .collect()
    }

    /// Aggregates one right partition into partial accumulators.
    async fn aggregate_partition(
        &self,
        partition: usize,
        left: &LeftWindows,
        mut coder: KeyCoder,
        context: Arc<TaskContext>,
        reservation: &mut MemoryReservation,
    ) -> Result<Vec<Box<dyn GroupsAccumulator>>> {
        let s = &self.spec;
        let mut accumulators = self.accumulators(left.batch.num_rows())?;
        let mut cursors = vec![Cursor::default(); left.windows.len()];
        let mut pairs = Pairs::default();
        let mut stream = s.right.execute(partition, context)?;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let codes =
                evaluate(&s.right_keys, &batch)?.iter().map(|k| coder.codes(k, false)).collect::<Result<Vec<_>>>()?;
            let time = times(&s.time.evaluate(&batch)?.into_array(batch.num_rows())?)?;
            let mut finder = left.keys.finder(codes);
            for (row, t) in time.iter().enumerate() {
                let Some(t) = *t else { continue };
                let Some(g) = finder.group(row) else { continue };
                left.windows[g].holding(t, &mut cursors[g], |l| {
                    pairs.left.push(l);
                    pairs.right.push(row as u32);
                });
                if pairs.left.len() >= PAIRS_PER_UPDATE {
                    self.update(&mut accumulators, left, &batch, &mut pairs)?;
                }
            }
            self.update(&mut accumulators, left, &batch, &mut pairs)?;
            reservation.try_resize(accumulators.iter().map(|a| a.size()).sum())?;
        }
        Ok(accumulators)
    }

    /// Feeds the waiting pairs (rows of `right`) to the accumulators.
    fn update(
        &self,
        accumulators: &mut [Box<dyn GroupsAccumulator>],
        left: &LeftWindows,
        right: &RecordBatch,
        pairs: &mut Pairs,
    ) -> Result<()> {
        if pairs.left.is_empty() {
            return Ok(());
        }
        let s = &self.spec;
        let left_rows = UInt32Array::from(std::mem::take(&mut pairs.left));
        let right_rows = UInt32Array::from(std::mem::take(&mut pairs.right));
        let n = left_rows.len();
        let sources = left.batch.columns().iter().map(|c| (c, &left_rows));
        let sources = sources.chain(right.columns().iter().map(|c| (c, &right_rows)));
        let columns =
            sources
                .zip(self.read.iter())
                .map(|((column, rows), read)| {
                    if *read {
                        Ok(take(column.as_ref(), rows, None)?)
                    } else {
                        Ok(new_null_array(column.data_type(), n))
                    }
                })
                .collect::<Result<Vec<ArrayRef>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let joined = RecordBatch::try_new_with_options(s.pair_schema.clone(), columns, &options)?;
        let group_indices: Vec<usize> = left_rows.values().iter().map(|r| *r as usize).collect();
        let groups = left.batch.num_rows();
        for ((accumulator, arguments), filter) in accumulators.iter_mut().zip(&s.arguments).zip(&s.filters) {
            let values = evaluate(arguments, &joined)?;
            let filter: Option<BooleanArray> = match filter {
                Some(f) => Some(f.evaluate(&joined)?.into_array(n)?.as_boolean().clone()),
                None => None,
            };
            accumulator.update_batch(&values, &group_indices, filter.as_ref(), groups)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(bounds: &[(i64, i64)]) -> Windows {
        let (starts, ends): (Vec<i64>, Vec<i64>) = bounds.iter().copied().unzip();
        let ends_ascend = ends.windows(2).all(|w| w[0] <= w[1]);
        Windows { rows: (0..bounds.len() as u32).collect(), starts, ends, ends_ascend }
    }

    fn holding(w: &Windows, times: &[i64]) -> Vec<Vec<u32>> {
        let mut cursor = Cursor::default();
        times
            .iter()
            .map(|t| {
                let mut rows = Vec::new();
                w.holding(*t, &mut cursor, |r| rows.push(r));
                rows
            })
            .collect()
    }

    #[test]
    fn cursor_and_binary_search_agree_with_brute_force() {
        for bounds in [vec![(0, 4), (2, 6), (2, 7), (9, 9), (10, 20)], vec![(0, 10), (1, 2), (3, 12), (3, 4)]] {
            let w = windows(&bounds);
            let times: Vec<i64> = vec![-1, 0, 2, 2, 4, 5, 9, 3, 12, 25, 1, 7];
            let want: Vec<Vec<u32>> = times
                .iter()
                .map(|t| {
                    (0..bounds.len() as u32)
                        .filter(|i| (bounds[*i as usize].0..=bounds[*i as usize].1).contains(t))
                        .collect()
                })
                .collect();
            assert_eq!(holding(&w, &times), want, "{bounds:?} (ends ascend: {})", w.ends_ascend);
        }
    }

    #[test]
    fn empty_and_single_windows() {
        assert_eq!(holding(&windows(&[]), &[1, 2]), vec![Vec::<u32>::new(), vec![]]);
        assert_eq!(
            holding(&windows(&[(i64::MIN, i64::MAX)]), &[i64::MIN, 0, i64::MAX]),
            vec![vec![0], vec![0], vec![0]]
        );
    }
}
