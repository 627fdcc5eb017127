//! `first(x ORDER BY t)` and `last(x ORDER BY t)` per group, fast for the bars
//! an analyst writes: open and close of every symbol's minute.
//!
//! DataFusion's `first_value` / `last_value` keep each group's ordering values as
//! `ScalarValue` rows and compare them through a generic comparator: on 250k trades
//! in 66k one-minute bars that was two thirds of the query. [`FirstLast`] is
//! DataFusion's function in every respect but one: when the value is a primitive
//! and there is one ORDER BY key that is a 64-bit integer, timestamp, timespan or
//! time (a table's `time` column), its grouped accumulator keeps the key as an
//! integer and compares integers. The answers are DataFusion's: the same tie rule
//! (of rows with equal keys, the one seen first), the same null placement, the
//! same state fields, so partial and final aggregates may be either kind.

use std::sync::Arc;

use super::{group_runs, passes_filter};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray, make_array};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, FieldRef, SortOptions, TimeUnit};
use datafusion::common::{Result, internal_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, ReversedUDAF, Signature,
};

/// DataFusion's `first_value` or `last_value` with a faster grouped accumulator
/// for one integer-like ORDER BY key (see the module documentation).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FirstLast {
    /// DataFusion's function, which answers everything else.
    inner: Arc<AggregateUDF>,
    /// `first_value` (the least key) or `last_value` (the greatest).
    first: bool,
}

impl FirstLast {
    /// DataFusion's `first_value` (`first`) or `last_value`, with the fast path.
    pub fn new(first: bool) -> FirstLast {
        use datafusion::functions_aggregate::first_last;
        let inner = if first { first_last::first_value_udaf() } else { first_last::last_value_udaf() };
        FirstLast { inner, first }
    }

    /// The fast accumulator's value type, if `args` allow it.
    fn fast_path(args: &AccumulatorArgs) -> Option<DataType> {
        let [order] = args.order_bys else { return None };
        let key = order.expr.data_type(args.schema).ok()?;
        let value = args.return_field.data_type();
        (!args.ignore_nulls && !args.is_distinct && is_i64_key(&key) && is_primitive_value(value))
            .then(|| value.clone())
    }
}

/// Whether values of `t` are stored as `i64` and order as `i64` does.
fn is_i64_key(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int64 | DataType::Timestamp(_, _) | DataType::Duration(_) | DataType::Date64 | DataType::Time64(_)
    )
}

/// Whether the fast accumulator can hold values of `t`.
fn is_primitive_value(t: &DataType) -> bool {
    t.is_primitive() && !matches!(t, DataType::Float16 | DataType::Interval(_)) && !t.is_decimal()
}

impl AggregateUDFImpl for FirstLast {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.inner().return_type(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.return_field(arg_fields)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        FirstLast::fast_path(&args).is_some() || self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let Some(value) = FirstLast::fast_path(&args) else { return self.inner.create_groups_accumulator(args) };
        let [order] = args.order_bys else { return internal_err!("first/last: one ORDER BY key") };
        let key = order.expr.data_type(args.schema)?;
        let (first, options) = (self.first, order.options);
        macro_rules! by_key {
            ($t:ty) => {
                Ok(Box::new(ByKey::<$t>::new(first, options, value, key)) as Box<dyn GroupsAccumulator>)
            };
        }
        match args.return_field.data_type() {
            DataType::Int8 => by_key!(Int8Type),
            DataType::Int16 => by_key!(Int16Type),
            DataType::Int32 => by_key!(Int32Type),
            DataType::Int64 => by_key!(Int64Type),
            DataType::UInt8 => by_key!(UInt8Type),
            DataType::UInt16 => by_key!(UInt16Type),
            DataType::UInt32 => by_key!(UInt32Type),
            DataType::UInt64 => by_key!(UInt64Type),
            DataType::Float32 => by_key!(Float32Type),
            DataType::Float64 => by_key!(Float64Type),
            DataType::Date32 => by_key!(Date32Type),
            DataType::Date64 => by_key!(Date64Type),
            DataType::Time32(TimeUnit::Second) => by_key!(Time32SecondType),
            DataType::Time32(_) => by_key!(Time32MillisecondType),
            DataType::Time64(TimeUnit::Microsecond) => by_key!(Time64MicrosecondType),
            DataType::Time64(_) => by_key!(Time64NanosecondType),
            DataType::Timestamp(TimeUnit::Second, _) => by_key!(TimestampSecondType),
            DataType::Timestamp(TimeUnit::Millisecond, _) => by_key!(TimestampMillisecondType),
            DataType::Timestamp(TimeUnit::Microsecond, _) => by_key!(TimestampMicrosecondType),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => by_key!(TimestampNanosecondType),
            DataType::Duration(TimeUnit::Second) => by_key!(DurationSecondType),
            DataType::Duration(TimeUnit::Millisecond) => by_key!(DurationMillisecondType),
            DataType::Duration(TimeUnit::Microsecond) => by_key!(DurationMicrosecondType),
            DataType::Duration(TimeUnit::Nanosecond) => by_key!(DurationNanosecondType),
            _ => self.inner.create_groups_accumulator(args),
        }
    }

    fn with_beneficial_ordering(
        self: Arc<Self>,
        beneficial_ordering: bool,
    ) -> Result<Option<Arc<dyn AggregateUDFImpl>>> {
        let Some(inner) = self.inner.inner().clone().with_beneficial_ordering(beneficial_ordering)? else {
            return Ok(None);
        };
        let inner = Arc::new(AggregateUDF::new_from_shared_impl(inner));
        Ok(Some(Arc::new(FirstLast { inner, first: self.first })))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        match self.inner.reverse_udf() {
            ReversedUDAF::Reversed(reversed) => {
                ReversedUDAF::Reversed(Arc::new(AggregateUDF::new_from_impl(FirstLast {
                    inner: reversed,
                    first: !self.first,
                })))
            }
            other => other,
        }
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.inner().supports_null_handling_clause()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// A key that never occurs: where a null key sorts when nulls come first.
const NULL_LOW: i128 = i128::MIN;
/// Where a null key sorts when nulls come last.
const NULL_HIGH: i128 = i128::MAX;

/// Each group's first (or last) value of type `T` by an `i64` key.
///
/// Keys are kept as `i128` ranks in the requested order (negated when
/// descending, nulls at either end), so "first" is the least rank and "last" the
/// greatest; a row replaces the kept one only when strictly better, which keeps
/// the earliest of rows with equal keys, as DataFusion's accumulator does.
struct ByKey<T: ArrowPrimitiveType> {
    first: bool,
    options: SortOptions,
    /// The value's type (a timestamp keeps its time zone).
    value_type: DataType,
    /// The key's type, for the state.
    key_type: DataType,
    values: Vec<T::Native>,
    value_valid: Vec<bool>,
    ranks: Vec<i128>,
    set: Vec<bool>,
}

impl<T: ArrowPrimitiveType> ByKey<T> {
    fn new(first: bool, options: SortOptions, value_type: DataType, key_type: DataType) -> ByKey<T> {
        ByKey { first, options, value_type, key_type, values: vec![], value_valid: vec![], ranks: vec![], set: vec![] }
    }

    fn rank(&self, key: Option<i64>) -> i128 {
        match key {
            None if self.options.nulls_first => NULL_LOW,
            None => NULL_HIGH,
            Some(k) if self.options.descending => -(k as i128),
            Some(k) => k as i128,
        }
    }

    fn key_of(&self, rank: i128) -> Option<i64> {
        match rank {
            NULL_LOW | NULL_HIGH => None,
            r if self.options.descending => Some((-r) as i64),
            r => Some(r as i64),
        }
    }

    fn resize(&mut self, groups: usize) {
        self.values.resize(groups, T::Native::default());
        self.value_valid.resize(groups, false);
        self.ranks.resize(groups, 0);
        self.set.resize(groups, false);
    }

    /// Offers row `row` of `values`/`keys` to group `group`.
    fn offer(&mut self, group: usize, values: &PrimitiveArray<T>, keys: &PrimitiveArray<Int64Type>, row: usize) {
        let rank = self.rank(keys.is_valid(row).then(|| keys.value(row)));
        let better = !self.set[group] || if self.first { rank < self.ranks[group] } else { rank > self.ranks[group] };
        if better {
            self.set[group] = true;
            self.ranks[group] = rank;
            self.values[group] = values.value(row);
            self.value_valid[group] = values.is_valid(row);
        }
    }

    /// Rows of `values` and `keys` into groups `groups`, those `passes` lets by.
    fn update(
        &mut self,
        values: &ArrayRef,
        keys: &ArrayRef,
        groups: &[usize],
        passes: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let values = values.as_primitive::<T>();
        let keys = as_i64(keys)?;
        if keys.null_count() > 0 {
            for (row, &group) in groups.iter().enumerate() {
                if passes(row) {
                    self.offer(group, values, &keys, row);
                }
            }
            return Ok(());
        }
        // A group's rows often come in runs (a table stored by symbol and time):
        // the best row of a run first, then one offer to the group.
        for (group, rows) in group_runs(groups) {
            if let Some(best) = self.best_in(keys.values(), rows, &passes) {
                self.offer(group, values, &keys, best);
            }
        }
        Ok(())
    }

    /// Of `rows` (keys without nulls) that `passes` lets by, the one [`offer`]
    /// would keep: the least key for `first`, the greatest for `last` (reversed
    /// when descending), of equal keys the row seen first.
    ///
    /// [`offer`]: ByKey::offer
    fn best_in(&self, keys: &[i64], rows: std::ops::Range<usize>, passes: impl Fn(usize) -> bool) -> Option<usize> {
        let least = self.first != self.options.descending;
        let mut rows = rows.filter(|&row| passes(row));
        let mut best = rows.next()?;
        for row in rows {
            if if least { keys[row] < keys[best] } else { keys[row] > keys[best] } {
                best = row;
            }
        }
        Some(best)
    }

    /// The values of the groups `emit_to` takes, null where unset or null.
    fn take_values(&mut self, emit_to: EmitTo) -> (ArrayRef, Vec<i128>, Vec<bool>) {
        let values = emit_to.take_needed(&mut self.values);
        let valid = emit_to.take_needed(&mut self.value_valid);
        let ranks = emit_to.take_needed(&mut self.ranks);
        let set = emit_to.take_needed(&mut self.set);
        let nulls = NullBuffer::new(BooleanBuffer::from_iter(valid.iter().zip(&set).map(|(v, s)| *v && *s)));
        let array = PrimitiveArray::<T>::new(values.into(), Some(nulls)).with_data_type(self.value_type.clone());
        (Arc::new(array), ranks, set)
    }
}

/// An array of a 64-bit key type seen as `Int64` (the same buffers; the layout is
/// checked, not assumed).
fn as_i64(keys: &ArrayRef) -> Result<PrimitiveArray<Int64Type>> {
    Ok(PrimitiveArray::from(keys.to_data().into_builder().data_type(DataType::Int64).build()?))
}

impl<T: ArrowPrimitiveType + Send> GroupsAccumulator for ByKey<T> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        self.update(&values[0], &values[1], group_indices, |row| passes_filter(opt_filter, row))
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.take_values(emit_to).0)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (values, ranks, set) = self.take_values(emit_to);
        let keys = PrimitiveArray::<Int64Type>::from_iter(ranks.iter().map(|r| self.key_of(*r)));
        let keys = make_array(keys.into_data().into_builder().data_type(self.key_type.clone()).build()?);
        Ok(vec![values, keys, Arc::new(BooleanArray::from(set))])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.resize(total_num_groups);
        let [value, key, set] = values else { return internal_err!("first/last state: value, key, is_set") };
        let set = set.as_boolean();
        self.update(value, key, group_indices, |row| set.is_valid(row) && set.value(row))
    }

    /// Each row as its own group's state, as DataFusion's accumulator gives it: the
    /// FILTER clause (nulls included) as `is_set`.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let set = match opt_filter {
            Some(filter) => filter.clone(),
            None => BooleanArray::from(vec![true; values[0].len()]),
        };
        Ok(vec![values[0].clone(), values[1].clone(), Arc::new(set)])
    }

    fn size(&self) -> usize {
        self.values.capacity() * size_of::<T::Native>()
            + self.value_valid.capacity()
            + self.ranks.capacity() * size_of::<i128>()
            + self.set.capacity()
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int64Array, RecordBatch, TimestampNanosecondArray};
    use arrow_schema::{Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// How the test table's keys and groups come.
    #[derive(Clone, Copy)]
    struct Shape {
        partitions: usize,
        /// Keys repeat (else every key is distinct).
        ties: bool,
        /// Some keys are null.
        null_keys: bool,
        /// Each group's rows come in runs (as in a table stored by symbol), else
        /// groups are mixed row by row.
        runs: bool,
    }

    /// Random rows in groups `g` over the shape's partitions, an integer and a
    /// timestamp value beside the float, null values. With ties: few distinct
    /// keys `k` (a timespan); without: every key distinct, so (without null keys)
    /// the answer does not depend on which partition's rows come first.
    fn batches(shape: Shape) -> (Arc<Schema>, Vec<Vec<RecordBatch>>) {
        let Shape { partitions, ties, null_keys, runs } = shape;
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("k", DataType::Duration(TimeUnit::Nanosecond), true),
            Field::new("x", DataType::Float64, true),
            Field::new("n", DataType::Int64, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())), true),
        ]));
        let mut state = 5u64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut row_number = 0i64;
        let mut out = Vec::new();
        for _ in 0..partitions {
            let mut batches = Vec::new();
            for _ in 0..5 {
                let rows = 1 + next(40) as usize;
                let g: Vec<i64> =
                    (0..rows).map(|r| if runs { (row_number + r as i64) / 6 % 9 } else { next(9) as i64 }).collect();
                let k: Vec<Option<i64>> = (0..rows)
                    .map(|_| {
                        row_number += 1;
                        let key = match ties {
                            true => next(6) as i64 - 3,
                            false => (row_number * 7919) % 10_007 - 5_000,
                        };
                        (!null_keys || next(10) != 0).then_some(key)
                    })
                    .collect();
                let x: Vec<Option<f64>> = (0..rows).map(|_| (next(8) != 0).then(|| next(1000) as f64 / 8.0)).collect();
                let n: Vec<Option<i64>> = (0..rows).map(|_| (next(8) != 0).then(|| next(1000) as i64)).collect();
                let ts: Vec<Option<i64>> = (0..rows).map(|_| (next(8) != 0).then(|| next(1000) as i64)).collect();
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from(g)),
                    Arc::new(PrimitiveArray::<DurationNanosecondType>::from(k)),
                    Arc::new(Float64Array::from(x)),
                    Arc::new(Int64Array::from(n)),
                    Arc::new(TimestampNanosecondArray::from(ts).with_timezone("UTC")),
                ];
                batches.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
            }
            out.push(batches);
        }
        (schema, out)
    }

    fn context(ours: bool, shape: Shape) -> SessionContext {
        let config = SessionConfig::new().with_target_partitions(shape.partitions).with_batch_size(16);
        let ctx = SessionContext::new_with_config(config);
        if ours {
            ctx.register_udaf(AggregateUDF::new_from_impl(FirstLast::new(true)));
            ctx.register_udaf(AggregateUDF::new_from_impl(FirstLast::new(false)));
        }
        let (schema, partitions) = batches(shape);
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions).unwrap())).unwrap();
        ctx
    }

    fn answer(ctx: &SessionContext, sql: &str) -> String {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let batches = runtime.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap();
        datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string()
    }

    /// Every ORDER BY form, value type and FILTER gives DataFusion's own answer:
    /// in one partition with ties (the first row seen of equal keys wins), with
    /// and without null keys, and in three, whose partial states are merged,
    /// with distinct keys; groups mixed row by row and in runs.
    #[test]
    fn answers_equal_datafusions_own() {
        let shape = |partitions, ties, null_keys, runs| Shape { partitions, ties, null_keys, runs };
        for shape in [
            shape(1, true, true, false),
            shape(3, false, false, false),
            shape(1, true, false, true),
            shape(3, false, false, true),
        ] {
            let partitions = shape.partitions;
            let (ours, theirs) = (context(true, shape), context(false, shape));
            for f in ["first_value", "last_value"] {
                for value in ["x", "n", "ts"] {
                    for order in ["k", "k DESC", "k NULLS FIRST", "k DESC NULLS LAST"] {
                        for filter in ["", " FILTER (WHERE x > 40)"] {
                            let sql = format!(
                                "SELECT g, {f}({value} ORDER BY {order}){filter} AS v FROM t GROUP BY g ORDER BY g"
                            );
                            let what = format!("{partitions} partitions: {sql}");
                            assert_eq!(answer(&ours, &sql), answer(&theirs, &sql), "{what}");
                        }
                    }
                }
            }
        }
        let plan = answer(
            &context(true, shape(3, false, false, false)),
            "EXPLAIN SELECT g, first_value(x ORDER BY k) FROM t GROUP BY g",
        );
        assert!(plan.contains("Partial") && plan.contains("Final"), "partial states are merged: {plan}");
    }
}
