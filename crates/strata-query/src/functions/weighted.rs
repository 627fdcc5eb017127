//! kdb+'s weighted aggregates: `wavg(w, x)` (sum of w*x over sum of w) and
//! `wsum(w, x)` (sum of w*x). Weights come first, as in q's `w wavg x`.
//! DuckDB's `weighted_avg(x, w)` is `wavg` with the value first, as DuckDB orders
//! them: the same numbers, so a query moved from either system keeps its meaning.
//!
//! Arguments are read as floats. Integer columns (a trade's size) are read as they
//! are stored, each value turned into a float as it is added, rather than cast to a
//! float column first: the cast of every batch cost as much as the sums.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BooleanArray, Float64Array, PrimitiveArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;

use super::{group_runs, passes_filter};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility};

/// Which weighted aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Weighted {
    /// Weighted average: sum(w*x) / sum(w).
    Average,
    /// Weighted sum: sum(w*x).
    Sum,
}

/// The `wavg` / `wsum` aggregate function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct WeightedAggregate {
    kind: Weighted,
    /// Whether the weight is the first argument (q's order) or the second (DuckDB's).
    weight_first: bool,
    signature: Signature,
}

impl WeightedAggregate {
    /// The aggregate of `kind`, weights first (`wavg`, `wsum`).
    pub fn new(kind: Weighted) -> WeightedAggregate {
        WeightedAggregate { kind, weight_first: true, signature: Signature::user_defined(Volatility::Immutable) }
    }

    /// DuckDB's `weighted_avg(x, w)`: the weighted average, value first.
    pub fn weighted_avg() -> WeightedAggregate {
        WeightedAggregate { weight_first: false, ..WeightedAggregate::new(Weighted::Average) }
    }

    /// The argument holding the weights (0 or 1); the other holds the values.
    fn weight_at(&self) -> usize {
        if self.weight_first { 0 } else { 1 }
    }
}

impl AggregateUDFImpl for WeightedAggregate {
    fn name(&self) -> &str {
        match (self.kind, self.weight_first) {
            (Weighted::Average, true) => "wavg",
            (Weighted::Average, false) => "weighted_avg",
            (Weighted::Sum, _) => "wsum",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// 32- and 64-bit integers and floats as they are (see the module
    /// documentation); other numbers (and NULL) as floats.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [_, _] = arg_types else {
            return plan_err!("{}() takes two arguments, got {}", self.name(), arg_types.len());
        };
        arg_types
            .iter()
            .map(|t| match t {
                DataType::Int32 | DataType::Int64 | DataType::Float64 => Ok(t.clone()),
                t if t.is_numeric() || t.is_null() => Ok(DataType::Float64),
                t => plan_err!("{}() takes numbers, got {t}", self.name()),
            })
            .collect()
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format_state_name(args.name, "weighted_sum"), DataType::Float64, true)),
            Arc::new(Field::new(format_state_name(args.name, "weight"), DataType::Float64, true)),
        ])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(WeightedAccumulator {
            kind: self.kind,
            weight_at: self.weight_at(),
            weighted_sum: 0.0,
            weight: 0.0,
            seen: false,
        }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    /// The sums of every group in two vectors: DataFusion otherwise keeps one
    /// boxed [`WeightedAccumulator`] per group behind an adapter (a VWAP per
    /// symbol and bar spent ~300 ns a row there).
    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let weight_at = self.weight_at();
        Ok(Box::new(WeightedGroups { kind: self.kind, weight_at, sums: vec![], weights: vec![], seen: vec![] }))
    }
}

/// A stored number read as a float.
trait Number: Copy {
    fn float(self) -> f64;
}

impl Number for f64 {
    fn float(self) -> f64 {
        self
    }
}

impl Number for i64 {
    fn float(self) -> f64 {
        self as f64
    }
}

impl Number for i32 {
    fn float(self) -> f64 {
        self.into()
    }
}

/// Binds `$array` (an argument of a type [`WeightedAggregate::coerce_types`]
/// gives) as the primitive array of its type, for `$body`.
macro_rules! with_numbers {
    ($array:expr, |$name:ident| $body:expr) => {
        match $array.data_type() {
            DataType::Int32 => {
                let $name = $array.as_primitive::<Int32Type>();
                $body
            }
            DataType::Int64 => {
                let $name = $array.as_primitive::<Int64Type>();
                $body
            }
            _ => {
                let $name = $array.as_primitive::<Float64Type>();
                $body
            }
        }
    };
}

/// The arguments of an update as (values, weights).
fn arguments(values: &[ArrayRef], weight_at: usize) -> (&ArrayRef, &ArrayRef) {
    (&values[1 - weight_at], &values[weight_at])
}

/// Sum of x*w and sum of w over rows without nulls, in four running sums each: a
/// single running sum waits on every add before the next.
fn lane_sums<X: Number, W: Number>(x: &[X], w: &[W]) -> (f64, f64) {
    let (mut sums, mut weights) = ([0.0; 4], [0.0; 4]);
    let (xs, ws) = (x.chunks_exact(4), w.chunks_exact(4));
    let (x_rest, w_rest) = (xs.remainder(), ws.remainder());
    for (x, w) in xs.zip(ws) {
        for lane in 0..4 {
            let w = w[lane].float();
            sums[lane] += x[lane].float() * w;
            weights[lane] += w;
        }
    }
    for (x, w) in x_rest.iter().zip(w_rest) {
        let w = w.float();
        sums[0] += x.float() * w;
        weights[0] += w;
    }
    (sums.iter().sum(), weights.iter().sum())
}

/// Running sums of every group, for [`WeightedAggregate`] under GROUP BY.
struct WeightedGroups {
    kind: Weighted,
    /// The argument holding the weights (0 or 1); the other holds the values.
    weight_at: usize,
    /// Sum of w*x per group.
    sums: Vec<f64>,
    /// Sum of w per group.
    weights: Vec<f64>,
    /// Whether a group has seen a row with both w and x.
    seen: Vec<bool>,
}

impl WeightedGroups {
    fn resize(&mut self, groups: usize) {
        self.sums.resize(groups, 0.0);
        self.weights.resize(groups, 0.0);
        self.seen.resize(groups, false);
    }

    /// Adds `w * x` and `w` of every row to its group, skipping rows where either
    /// is null or the FILTER clause says no.
    fn add<X, W>(
        &mut self,
        x: &PrimitiveArray<X>,
        w: &PrimitiveArray<W>,
        groups: &[usize],
        filter: Option<&BooleanArray>,
    ) where
        X: ArrowPrimitiveType<Native: Number>,
        W: ArrowPrimitiveType<Native: Number>,
    {
        let mut add = |group: usize, x: X::Native, w: W::Native| {
            let w = w.float();
            self.sums[group] += x.float() * w;
            self.weights[group] += w;
            self.seen[group] = true;
        };
        if x.null_count() == 0 && w.null_count() == 0 && filter.is_none() {
            for (group, rows) in group_runs(groups) {
                let (sum, weight) = lane_sums(&x.values()[rows.clone()], &w.values()[rows]);
                self.sums[group] += sum;
                self.weights[group] += weight;
                self.seen[group] = true;
            }
        } else {
            for (row, &group) in groups.iter().enumerate() {
                if x.is_valid(row) && w.is_valid(row) && passes_filter(filter, row) {
                    add(group, x.value(row), w.value(row));
                }
            }
        }
    }
}

impl GroupsAccumulator for WeightedGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        let (x, w) = arguments(values, self.weight_at);
        with_numbers!(x, |x| with_numbers!(w, |w| self.add(x, w, group_indices, opt_filter)));
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (sums, weights, seen) = (
            emit_to.take_needed(&mut self.sums),
            emit_to.take_needed(&mut self.weights),
            emit_to.take_needed(&mut self.seen),
        );
        let kind = self.kind;
        let answers = sums.iter().zip(&weights).zip(&seen).map(|((s, w), seen)| {
            seen.then(|| match kind {
                Weighted::Sum => *s,
                Weighted::Average => s / w,
            })
        });
        Ok(Arc::new(Float64Array::from_iter(answers)))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (sums, weights, seen) = (
            emit_to.take_needed(&mut self.sums),
            emit_to.take_needed(&mut self.weights),
            emit_to.take_needed(&mut self.seen),
        );
        let nulls = NullBuffer::from(seen);
        Ok(vec![
            Arc::new(Float64Array::new(sums.into(), Some(nulls.clone()))),
            Arc::new(Float64Array::new(weights.into(), Some(nulls))),
        ])
    }

    /// Adds other accumulators' (sum of w*x, sum of w) states.
    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.resize(total_num_groups);
        let (sums, weights) = (values[0].as_primitive::<Float64Type>(), values[1].as_primitive::<Float64Type>());
        for (row, &group) in group_indices.iter().enumerate() {
            if sums.is_valid(row) && weights.is_valid(row) {
                self.sums[group] += sums.value(row);
                self.weights[group] += weights.value(row);
                self.seen[group] = true;
            }
        }
        Ok(())
    }

    /// Each row as its own group's state: (w*x, w), null where either is null or
    /// the FILTER clause drops the row.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let (x, w) = arguments(values, self.weight_at);
        Ok(with_numbers!(x, |x| with_numbers!(w, |w| {
            let kept = |row: usize| x.is_valid(row) && w.is_valid(row) && passes_filter(opt_filter, row);
            let sums = (0..x.len()).map(|row| kept(row).then(|| x.value(row).float() * w.value(row).float()));
            let weights = (0..x.len()).map(|row| kept(row).then(|| w.value(row).float()));
            vec![Arc::new(Float64Array::from_iter(sums)) as ArrayRef, Arc::new(Float64Array::from_iter(weights))]
        })))
    }

    fn size(&self) -> usize {
        (self.sums.capacity() + self.weights.capacity()) * size_of::<f64>() + self.seen.capacity()
    }
}

/// Running sums of one group.
#[derive(Debug)]
struct WeightedAccumulator {
    kind: Weighted,
    /// The argument holding the weights (0 or 1); the other holds the values.
    weight_at: usize,
    weighted_sum: f64,
    weight: f64,
    seen: bool,
}

impl WeightedAccumulator {
    /// Adds `w * x` and `w` of the rows where neither is null.
    fn add<X, W>(&mut self, x: &PrimitiveArray<X>, w: &PrimitiveArray<W>)
    where
        X: ArrowPrimitiveType<Native: Number>,
        W: ArrowPrimitiveType<Native: Number>,
    {
        if x.null_count() == 0 && w.null_count() == 0 {
            let (sum, weight) = lane_sums(x.values(), w.values());
            self.weighted_sum += sum;
            self.weight += weight;
            self.seen |= !x.is_empty();
        } else {
            for (x, w) in x.iter().zip(w.iter()) {
                if let (Some(x), Some(w)) = (x, w) {
                    let w = w.float();
                    self.weighted_sum += x.float() * w;
                    self.weight += w;
                    self.seen = true;
                }
            }
        }
    }
}

impl Accumulator for WeightedAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (x, w) = arguments(values, self.weight_at);
        with_numbers!(x, |x| with_numbers!(w, |w| self.add(x, w)));
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(match (self.seen, self.kind) {
            (false, _) => None,
            (true, Weighted::Sum) => Some(self.weighted_sum),
            (true, Weighted::Average) => Some(self.weighted_sum / self.weight),
        }))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let seen = |v: f64| ScalarValue::Float64(self.seen.then_some(v));
        Ok(vec![seen(self.weighted_sum), seen(self.weight)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (sums, weights) = (states[0].as_primitive::<Float64Type>(), states[1].as_primitive::<Float64Type>());
        for (s, w) in sums.iter().zip(weights.iter()) {
            if let (Some(s), Some(w)) = (s, w) {
                self.weighted_sum += s;
                self.weight += w;
                self.seen = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::Schema;
    use datafusion::datasource::MemTable;
    use datafusion::logical_expr::AggregateUDF;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// A test row: group, value, weight, integer.
    type Row = (i64, Option<f64>, Option<f64>, i32);

    /// Grouped (three partitions merged, FILTER, null values and weights) and
    /// whole-table answers equal sums worked out by hand.
    #[test]
    fn grouped_and_whole_table_answers_equal_hand_sums() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("x", DataType::Float64, true),
            Field::new("w", DataType::Float64, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let mut state = 3u64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut rows = Vec::new();
        let mut partitions = Vec::new();
        for _ in 0..3 {
            let mut batches = Vec::new();
            for _ in 0..6 {
                let n = 1 + next(30) as usize;
                // Groups mixed row by row in half the batches, in runs in the others.
                let (runs, mut group) = (next(2) == 0, 0);
                let batch: Vec<Row> = (0..n)
                    .map(|_| {
                        let x = (next(9) != 0).then(|| next(1000) as f64 / 10.0);
                        let w = (next(9) != 0).then(|| next(500) as f64);
                        if !runs || next(5) == 0 {
                            group = next(7) as i64;
                        }
                        (group, x, w, next(100) as i32 - 20)
                    })
                    .collect();
                rows.extend(batch.iter().copied());
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from_iter_values(batch.iter().map(|r| r.0))),
                    Arc::new(Float64Array::from_iter(batch.iter().map(|r| r.1))),
                    Arc::new(Float64Array::from_iter(batch.iter().map(|r| r.2))),
                    Arc::new(arrow_array::Int32Array::from_iter_values(batch.iter().map(|r| r.3))),
                ];
                batches.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
            }
            partitions.push(batches);
        }
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3).with_batch_size(16));
        for udaf in [
            WeightedAggregate::new(Weighted::Average),
            WeightedAggregate::new(Weighted::Sum),
            WeightedAggregate::weighted_avg(),
        ] {
            ctx.register_udaf(AggregateUDF::new_from_impl(udaf));
        }
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions).unwrap())).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        // `n` is an integer column read as it is stored (no nulls: the unrolled sums).
        let sql = "SELECT g, wavg(w, x) AS a, weighted_avg(x, w) AS b, wsum(w, x) AS s, \
                   wavg(w, x) FILTER (WHERE x > 50) AS f, weighted_avg(x, n) AS c, wsum(n, n) AS d FROM t GROUP BY g \
                   UNION ALL SELECT -1, wavg(w, x), weighted_avg(x, w), wsum(w, x), wavg(w, x) FILTER (WHERE x > 50), \
                   weighted_avg(x, n), wsum(n, n) FROM t";
        let batches = runtime.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap();
        let mut checked = 0;
        for batch in &batches {
            let column = |i: usize| batch.column(i).as_primitive::<Float64Type>().clone();
            let (g, a, b, s, f, c, d) = (
                batch.column(0).as_primitive::<arrow_array::types::Int64Type>(),
                column(1),
                column(2),
                column(3),
                column(4),
                column(5),
                column(6),
            );
            for i in 0..batch.num_rows() {
                let group = g.value(i);
                let hand_of = |pair: &dyn Fn(&Row) -> Option<(f64, f64)>, keep: &dyn Fn(f64) -> bool| {
                    let pairs: Vec<(f64, f64)> = rows
                        .iter()
                        .filter(|r| group < 0 || r.0 == group)
                        .filter_map(pair)
                        .filter(|(x, _)| keep(*x))
                        .collect();
                    let sum: f64 = pairs.iter().map(|(x, w)| x * w).sum();
                    let weight: f64 = pairs.iter().map(|(_, w)| w).sum();
                    (!pairs.is_empty()).then_some((sum, weight))
                };
                let close = |got: Option<f64>, want: Option<f64>| match (got, want) {
                    (Some(g), Some(w)) => (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                    (None, None) => true,
                    _ => false,
                };
                let get = |a: &Float64Array| a.is_valid(i).then(|| a.value(i));
                let hand = |keep: &dyn Fn(f64) -> bool| hand_of(&|r| Some((r.1?, r.2?)), keep);
                let all = hand(&|_| true);
                assert!(close(get(&a), all.map(|(s, w)| s / w)), "group {group}: wavg");
                assert!(close(get(&b), all.map(|(s, w)| s / w)), "group {group}: weighted_avg");
                assert!(close(get(&s), all.map(|(s, _)| s)), "group {group}: wsum");
                assert!(close(get(&f), hand(&|x| x > 50.0).map(|(s, w)| s / w)), "group {group}: FILTER");
                let by_n = hand_of(&|r| Some((r.1?, r.3.into())), &|_| true);
                assert!(close(get(&c), by_n.map(|(s, w)| s / w)), "group {group}: integer weights");
                let squares = hand_of(&|r| Some((r.3.into(), r.3.into())), &|_| true);
                assert!(close(get(&d), squares.map(|(s, _)| s)), "group {group}: integer values and weights");
                checked += 1;
            }
        }
        assert_eq!(checked, 8, "seven groups and the whole table");
        let error = runtime.block_on(async { ctx.sql("SELECT wavg(w, 'x') FROM t").await }).unwrap_err();
        assert!(error.to_string().contains("wavg() takes numbers, got Utf8"), "{error}");
    }
}
