//! `sum` over 8-, 16- and 32-bit integers read as they are stored.
//!
//! DataFusion's `sum` casts such a column to 64 bits before adding: a new column
//! per batch, which for a trade's `size` (Int32) cost three times the sum itself.
//! This `sum` takes those columns as stored and widens each value as it is added;
//! the answer is the same 64-bit sum (`Int64`, or `UInt64` for unsigned columns),
//! wrapping on overflow as DataFusion's does. Every other argument type goes to
//! DataFusion's `sum`, and `sum(DISTINCT ...)` of a narrow column to DataFusion's
//! distinct sum over the widened values.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef};
use datafusion::arrow::compute::cast;
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, Expr, GroupsAccumulator, Operator,
    ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs, Volatility,
};

use super::{group_runs, passes_filter};

/// `sum`: narrow integers as stored (see the module documentation), everything
/// else as DataFusion's `sum`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct NarrowSum {
    /// DataFusion's `sum`, for the types and forms this one does not add itself.
    inner: Arc<AggregateUDF>,
    signature: Signature,
}

impl NarrowSum {
    pub fn new() -> NarrowSum {
        NarrowSum { inner: sum_udaf(), signature: Signature::user_defined(Volatility::Immutable) }
    }

    /// DataFusion's `sum` itself.
    fn datafusion(&self) -> &dyn AggregateUDFImpl {
        self.inner.inner().as_ref()
    }
}

impl Default for NarrowSum {
    fn default() -> NarrowSum {
        NarrowSum::new()
    }
}

/// The 64-bit type a narrow integer type adds into, or None for other types.
fn widened(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Int8 | DataType::Int16 | DataType::Int32 => Some(DataType::Int64),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => Some(DataType::UInt64),
        _ => None,
    }
}

/// The narrow argument type of `args`, if it has one.
fn narrow_argument(args: &AccumulatorArgs) -> Option<DataType> {
    let [field] = args.expr_fields else { return None };
    widened(field.data_type()).map(|_| field.data_type().clone())
}

/// Binds `$narrow` to the arrow type of `$t` (a type [`widened`] takes) and
/// `$wide` to the type it adds into, for `$body`.
macro_rules! with_narrow {
    ($t:expr, |$narrow:ident, $wide:ident| $body:expr) => {
        match $t {
            DataType::Int8 => {
                type $narrow = Int8Type;
                type $wide = Int64Type;
                $body
            }
            DataType::Int16 => {
                type $narrow = Int16Type;
                type $wide = Int64Type;
                $body
            }
            DataType::Int32 => {
                type $narrow = Int32Type;
                type $wide = Int64Type;
                $body
            }
            DataType::UInt8 => {
                type $narrow = UInt8Type;
                type $wide = UInt64Type;
                $body
            }
            DataType::UInt16 => {
                type $narrow = UInt16Type;
                type $wide = UInt64Type;
                $body
            }
            DataType::UInt32 => {
                type $narrow = UInt32Type;
                type $wide = UInt64Type;
                $body
            }
            t => datafusion::common::internal_err!("narrow sum of {t}"),
        }
    };
}

impl AggregateUDFImpl for NarrowSum {
    fn name(&self) -> &str {
        "sum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Narrow integers as they are; other types as DataFusion's `sum` coerces them.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if let [t] = arg_types
            && widened(t).is_some()
        {
            return Ok(arg_types.to_vec());
        }
        let fields: Vec<FieldRef> = arg_types.iter().map(|t| Arc::new(Field::new("x", t.clone(), true))).collect();
        let coerced = fields_with_udf(&fields, self.inner.as_ref())?;
        Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] => widened(t).map_or_else(|| self.datafusion().return_type(arg_types), Ok),
            _ => plan_err!("sum() takes one argument, got {}", arg_types.len()),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.datafusion().state_fields(args)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match narrow_argument(&args) {
            Some(t) if !args.is_distinct => with_narrow!(t, |N, W| Ok(Box::new(NarrowSumAccumulator::<N, W>::new()))),
            Some(_) => Widened::boxed(self.datafusion().accumulator(args.clone())?, args.return_field.data_type()),
            None => self.datafusion().accumulator(args),
        }
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        match narrow_argument(&args) {
            Some(_) => !args.is_distinct,
            None => self.datafusion().groups_accumulator_supported(args),
        }
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        match narrow_argument(&args) {
            Some(t) => with_narrow!(t, |N, W| Ok(Box::new(NarrowSumGroups::<N, W>::default()))),
            None => self.datafusion().create_groups_accumulator(args),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match narrow_argument(&args) {
            Some(t) if !args.is_distinct => with_narrow!(t, |N, W| Ok(Box::new(NarrowSumAccumulator::<N, W>::new()))),
            Some(_) => Widened::boxed(
                self.datafusion().create_sliding_accumulator(args.clone())?,
                args.return_field.data_type(),
            ),
            None => self.datafusion().create_sliding_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.datafusion().documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.datafusion().set_monotonicity(data_type)
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> Result<Option<Expr>> {
        self.datafusion().simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs) -> Option<ScalarValue> {
        self.datafusion().value_from_stats(statistics_args)
    }
}

/// A DataFusion accumulator of 64-bit values fed narrow ones widened (for the
/// distinct sums, which are not worth a copy of their own).
#[derive(Debug)]
struct Widened {
    inner: Box<dyn Accumulator>,
    wide: DataType,
}

impl Widened {
    fn boxed(inner: Box<dyn Accumulator>, wide: &DataType) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Widened { inner, wide: wide.clone() }))
    }

    fn widen(&self, values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
        values.iter().map(|v| Ok(cast(v, &self.wide)?)).collect()
    }
}

impl Accumulator for Widened {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = self.widen(values)?;
        self.inner.update_batch(&values)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = self.widen(values)?;
        self.inner.retract_batch(&values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.inner.evaluate()
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }
}

/// The sum of `values` in the wide type `W`, each widened as it is added,
/// wrapping on overflow.
fn widened_sum<T: Copy + Into<W>, W: ArrowNativeTypeOp>(values: &[T]) -> W {
    values.iter().fold(W::default(), |sum, &v| sum.add_wrapping(v.into()))
}

/// The sum of a narrow column `N` in its wide type `W`, for a whole table or a
/// window frame (values leave the frame by [`Accumulator::retract_batch`]).
#[derive(Debug)]
struct NarrowSumAccumulator<N: ArrowPrimitiveType, W: ArrowPrimitiveType> {
    sum: W::Native,
    /// Values added and not retracted: none means the sum is NULL.
    count: u64,
    /// The column type (a function type: always Send and Sync).
    narrow: std::marker::PhantomData<fn() -> N>,
}

impl<N, W> NarrowSumAccumulator<N, W>
where
    N: ArrowPrimitiveType<Native: Into<W::Native>>,
    W: ArrowPrimitiveType,
{
    fn new() -> Self {
        NarrowSumAccumulator { sum: W::Native::default(), count: 0, narrow: std::marker::PhantomData }
    }

    /// The sum and count of the non-null values of `values`.
    fn sum_of<T>(values: &PrimitiveArray<T>) -> (W::Native, u64)
    where
        T: ArrowPrimitiveType<Native: Into<W::Native>>,
    {
        let sum = match values.nulls().filter(|n| n.null_count() > 0) {
            None => widened_sum(values.values()),
            Some(nulls) => {
                nulls.valid_indices().fold(W::Native::default(), |s, i| s.add_wrapping(values.values()[i].into()))
            }
        };
        (sum, (values.len() - values.null_count()) as u64)
    }
}

impl<N, W> Accumulator for NarrowSumAccumulator<N, W>
where
    N: ArrowPrimitiveType<Native: Into<W::Native>> + std::fmt::Debug,
    W: ArrowPrimitiveType<Native: Into<W::Native>> + std::fmt::Debug,
{
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (sum, count) = Self::sum_of(values[0].as_primitive::<N>());
        self.sum = self.sum.add_wrapping(sum);
        self.count += count;
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (sum, count) = Self::sum_of(values[0].as_primitive::<N>());
        self.sum = self.sum.sub_wrapping(sum);
        // Never more than was added; saturating keeps a surprise from panicking.
        self.count = self.count.saturating_sub(count);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        ScalarValue::new_primitive::<W>((self.count > 0).then_some(self.sum), &W::DATA_TYPE)
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    /// Adds other accumulators' sums (a null sum: no values).
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (sum, count) = Self::sum_of(states[0].as_primitive::<W>());
        self.sum = self.sum.add_wrapping(sum);
        self.count += count;
        Ok(())
    }
}

/// The sums of every group of a narrow column `N`, in its wide type `W`.
#[derive(Debug)]
struct NarrowSumGroups<N: ArrowPrimitiveType, W: ArrowPrimitiveType> {
    sums: Vec<W::Native>,
    /// Whether a group has seen a value (a group without is NULL).
    seen: Vec<bool>,
    /// The column type (a function type: always Send and Sync).
    narrow: std::marker::PhantomData<fn() -> N>,
}

impl<N: ArrowPrimitiveType, W: ArrowPrimitiveType> Default for NarrowSumGroups<N, W> {
    fn default() -> Self {
        NarrowSumGroups { sums: Vec::new(), seen: Vec::new(), narrow: std::marker::PhantomData }
    }
}

impl<N, W> NarrowSumGroups<N, W>
where
    N: ArrowPrimitiveType<Native: Into<W::Native>>,
    W: ArrowPrimitiveType<Native: Into<W::Native>>,
{
    /// Adds every row's value to its group, skipping nulls and rows the FILTER
    /// clause drops.
    fn add<T>(&mut self, values: &PrimitiveArray<T>, groups: &[usize], filter: Option<&BooleanArray>, total: usize)
    where
        T: ArrowPrimitiveType<Native: Into<W::Native>>,
    {
        self.sums.resize(total, W::Native::default());
        self.seen.resize(total, false);
        let mut add = |group: usize, v: T::Native| {
            self.sums[group] = self.sums[group].add_wrapping(v.into());
            self.seen[group] = true;
        };
        if values.null_count() == 0 && filter.is_none() {
            for (group, rows) in group_runs(groups) {
                self.sums[group] = self.sums[group].add_wrapping(widened_sum(&values.values()[rows]));
                self.seen[group] = true;
            }
        } else {
            for (row, &group) in groups.iter().enumerate() {
                if values.is_valid(row) && passes_filter(filter, row) {
                    add(group, values.value(row));
                }
            }
        }
    }
}

impl<N, W> GroupsAccumulator for NarrowSumGroups<N, W>
where
    N: ArrowPrimitiveType<Native: Into<W::Native>> + Send,
    W: ArrowPrimitiveType<Native: Into<W::Native>> + Send,
{
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.add(values[0].as_primitive::<N>(), group_indices, opt_filter, total_num_groups);
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (sums, seen) = (emit_to.take_needed(&mut self.sums), emit_to.take_needed(&mut self.seen));
        Ok(Arc::new(PrimitiveArray::<W>::new(sums.into(), Some(NullBuffer::from(seen)))))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit_to)?])
    }

    /// Adds other accumulators' sums.
    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.add(values[0].as_primitive::<W>(), group_indices, None, total_num_groups);
        Ok(())
    }

    /// Each row as its own group's state: the value widened, null where it is
    /// null or the FILTER clause drops the row.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let wide = cast(&values[0], &W::DATA_TYPE)?;
        let Some(filter) = opt_filter else { return Ok(vec![wide]) };
        let kept = (0..wide.len()).map(|row| wide.is_valid(row) && passes_filter(Some(filter), row));
        let wide = wide.as_primitive::<W>();
        Ok(vec![Arc::new(PrimitiveArray::<W>::new(wide.values().clone(), Some(NullBuffer::from_iter(kept))))])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * size_of::<W::Native>() + self.seen.capacity()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use arrow_array::{Float64Array, Int8Array, Int32Array, Int64Array, RecordBatch, UInt32Array};
    use arrow_schema::Schema;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// A test row: group, order, Int32 (nullable), Int8, UInt32, Float64.
    #[derive(Clone, Copy)]
    struct Row {
        g: i64,
        i: i64,
        a: Option<i32>,
        b: i8,
        u: u32,
        x: f64,
    }

    fn rows() -> Vec<Row> {
        let mut state = 7u64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut g = 0;
        (0..300)
            .map(|i| {
                // Groups in runs of a few rows, as a table stored by symbol gives them.
                if next(4) == 0 {
                    g = next(6) as i64;
                }
                // Group 5 holds only nulls in `a`.
                let a = (g != 5 && next(8) != 0).then(|| next(2_000_000_000) as i32 - 1_000_000_000);
                Row {
                    g,
                    i,
                    a,
                    b: (next(256) as i64 - 128) as i8,
                    u: u32::MAX - next(10) as u32,
                    x: next(100) as f64 / 4.0,
                }
            })
            .collect()
    }

    fn table(rows: &[Row]) -> MemTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("i", DataType::Int64, false),
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Int8, false),
            Field::new("u", DataType::UInt32, false),
            Field::new("x", DataType::Float64, false),
        ]));
        let batch = |rows: &[Row]| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.g))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.i))),
                Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.a))),
                Arc::new(Int8Array::from_iter_values(rows.iter().map(|r| r.b))),
                Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.u))),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.x))),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        let partitions = rows.chunks(100).map(|p| p.chunks(17).map(batch).collect()).collect();
        MemTable::try_new(schema.clone(), partitions).unwrap()
    }

    /// Runs `sql` and returns its batches.
    fn query(sql: &str) -> Vec<RecordBatch> {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3).with_batch_size(16));
        ctx.register_udaf(AggregateUDF::new_from_impl(NarrowSum::new()));
        ctx.register_table("t", Arc::new(table(&rows()))).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        runtime.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap()
    }

    /// Column `c` of a result as optional i128s (every sum here fits).
    fn numbers(batch: &RecordBatch, c: usize) -> Vec<Option<i128>> {
        let column = batch.column(c);
        let wide = cast(column, &DataType::Decimal128(38, 0)).unwrap();
        let wide = wide.as_primitive::<arrow_array::types::Decimal128Type>();
        (0..wide.len()).map(|r| wide.is_valid(r).then(|| wide.value(r))).collect()
    }

    /// Grouped sums (three partitions merged, a FILTER, nulls, a group of only
    /// nulls, DISTINCT), whole-table sums and their types equal hand sums.
    #[test]
    fn grouped_and_whole_table_sums_equal_hand_sums() {
        let rows = rows();
        let sums = "sum(a), sum(b), sum(u), sum(a) FILTER (WHERE b > 0), sum(DISTINCT b), sum(x)";
        let batches =
            query(&format!("SELECT g, {sums} FROM t GROUP BY g UNION ALL SELECT -1, {sums} FROM t ORDER BY 1"));
        let types: Vec<_> = batches[0].schema().fields().iter().map(|f| f.data_type().clone()).collect();
        assert_eq!(types[1..5], [DataType::Int64, DataType::Int64, DataType::UInt64, DataType::Int64]);
        let mut checked = 0;
        for batch in &batches {
            let groups = numbers(batch, 0);
            for (row, group) in groups.iter().enumerate() {
                let group = group.unwrap() as i64;
                let of: Vec<&Row> = rows.iter().filter(|r| group < 0 || r.g == group).collect();
                let sum = |values: Vec<i128>| (!values.is_empty()).then(|| values.iter().sum::<i128>());
                let want = [
                    sum(of.iter().filter_map(|r| r.a.map(i128::from)).collect()),
                    sum(of.iter().map(|r| r.b.into()).collect()),
                    sum(of.iter().map(|r| r.u.into()).collect()),
                    sum(of.iter().filter(|r| r.b > 0).filter_map(|r| r.a.map(i128::from)).collect()),
                    sum(of.iter().map(|r| r.b.into()).collect::<BTreeSet<i128>>().into_iter().collect()),
                ];
                for (c, want) in want.iter().enumerate() {
                    assert_eq!(numbers(batch, c + 1)[row], *want, "group {group}, sum {}", c + 1);
                }
                let x: f64 = of.iter().map(|r| r.x).sum();
                assert_eq!(batch.column(6).as_primitive::<arrow_array::types::Float64Type>().value(row), x);
                checked += 1;
            }
        }
        assert_eq!(checked, 7, "six groups and the whole table");
    }

    /// Sums over sliding and growing window frames (values retracted as they
    /// leave) equal hand sums, a frame of only nulls giving NULL.
    #[test]
    fn window_sums_retract_what_leaves_the_frame() {
        let rows = rows();
        let batches = query(
            "SELECT g, i, sum(a) OVER (PARTITION BY g ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), \
             sum(u) OVER (PARTITION BY g ORDER BY i), \
             sum(DISTINCT b) OVER (PARTITION BY g ORDER BY i ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM t",
        );
        let mut checked = 0;
        for batch in &batches {
            let (groups, orders) = (numbers(batch, 0), numbers(batch, 1));
            for row in 0..batch.num_rows() {
                let (g, i) = (groups[row].unwrap() as i64, orders[row].unwrap() as i64);
                let before: Vec<&Row> = rows.iter().filter(|r| r.g == g && r.i <= i).collect();
                let last = |n: usize| &before[before.len().saturating_sub(n)..];
                let a: Vec<i128> = last(3).iter().filter_map(|r| r.a.map(i128::from)).collect();
                let want_a = (!a.is_empty()).then(|| a.iter().sum::<i128>());
                let want_u = before.iter().map(|r| i128::from(r.u)).sum::<i128>();
                let distinct: BTreeSet<i128> = last(4).iter().map(|r| r.b.into()).collect();
                assert_eq!(numbers(batch, 2)[row], want_a, "group {g}, row {i}: sliding sum");
                assert_eq!(numbers(batch, 3)[row], Some(want_u), "group {g}, row {i}: growing sum");
                assert_eq!(numbers(batch, 4)[row], Some(distinct.iter().sum()), "group {g}, row {i}: distinct");
                checked += 1;
            }
        }
        assert_eq!(checked, rows.len());
    }
}
