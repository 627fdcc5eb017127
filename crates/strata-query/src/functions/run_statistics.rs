//! Grouped variances, standard deviations and correlations taken a run of rows
//! at a time.
//!
//! DataFusion's grouped `var`, `var_pop`, `stddev` and `stddev_pop` add rows one
//! at a time by Welford's update: a division per row that waits on the mean the
//! previous row of its group left. A table stored by symbol feeds each group's
//! rows in long runs, so every row waits on the one before (a deviation per
//! symbol over 5M quotes spent ~20 ns a row there). [`RunStatistic`] takes each
//! run at once: its mean, then the sum of squared deviations from that mean (two
//! passes over rows in cache, the most accurate form), merged into the group's
//! (count, mean, m2) by Chan's formula, as partial states are merged. Short runs
//! (groups interleaved) are still added row by row. `corr` keeps DataFusion's
//! accumulator (sums of x, y, xy, xx and yy per group), fed each run's sums as one
//! state row instead of every row through six scattered updates. The states are
//! DataFusion's, so everything else (whole-table and window forms, DISTINCT,
//! merging) stays DataFusion's.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, UInt64Array};
use arrow_schema::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::functions_aggregate::correlation::{self, CorrelationGroupsAccumulator};
use datafusion::functions_aggregate::{stddev, variance};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, Signature,
};

use super::{group_runs, passes_filter};

/// What a [`RunStatistic`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Statistic {
    Variance {
        /// Divide by n (population) rather than n - 1 (sample).
        population: bool,
        /// The square root (a standard deviation) rather than the variance.
        root: bool,
    },
    Correlation,
}

/// One of DataFusion's variance or correlation aggregates, grouped by runs.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RunStatistic {
    /// DataFusion's aggregate: its name, types, state and ungrouped forms.
    inner: Arc<AggregateUDF>,
    statistic: Statistic,
}

impl RunStatistic {
    /// `var` (`var_samp`), `var_pop`, `stddev` (`stddev_samp`), `stddev_pop` and
    /// `corr`.
    pub fn all() -> [RunStatistic; 5] {
        let variance =
            |inner, population, root| RunStatistic { inner, statistic: Statistic::Variance { population, root } };
        [
            variance(variance::var_samp_udaf(), false, false),
            variance(variance::var_pop_udaf(), true, false),
            variance(stddev::stddev_udaf(), false, true),
            variance(stddev::stddev_pop_udaf(), true, true),
            RunStatistic { inner: correlation::corr_udaf(), statistic: Statistic::Correlation },
        ]
    }

    fn datafusion(&self) -> &dyn AggregateUDFImpl {
        self.inner.inner().as_ref()
    }
}

impl AggregateUDFImpl for RunStatistic {
    fn name(&self) -> &str {
        self.datafusion().name()
    }

    fn aliases(&self) -> &[String] {
        self.datafusion().aliases()
    }

    fn signature(&self) -> &Signature {
        self.datafusion().signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.datafusion().return_type(arg_types)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.datafusion().state_fields(args)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.datafusion().accumulator(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.datafusion().groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(match self.statistic {
            Statistic::Variance { population, root } => {
                Box::new(RunVarianceGroups { population, root, ..Default::default() })
            }
            Statistic::Correlation => Box::new(RunCorrelationGroups(CorrelationGroupsAccumulator::new())),
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.datafusion().documentation()
    }
}

/// Groups' runs shorter than this are added row by row.
const SHORT_RUN: usize = 4;

/// Every group's count, mean and sum of squared deviations from the mean (m2).
#[derive(Debug, Default)]
struct RunVarianceGroups {
    population: bool,
    root: bool,
    counts: Vec<u64>,
    means: Vec<f64>,
    m2s: Vec<f64>,
}

/// The sum of `f` over `values`, in four running sums (one waits on every add).
fn lane_sum(values: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0; 4];
    let chunks = values.chunks_exact(4);
    let rest: f64 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for chunk in chunks {
        for lane in 0..4 {
            lanes[lane] += f(chunk[lane]);
        }
    }
    lanes.iter().sum::<f64>() + rest
}

impl RunVarianceGroups {
    fn resize(&mut self, groups: usize) {
        self.counts.resize(groups, 0);
        self.means.resize(groups, 0.0);
        self.m2s.resize(groups, 0.0);
    }

    /// The emitted groups' (counts, means, m2s).
    fn take(&mut self, emit_to: EmitTo) -> (Vec<u64>, Vec<f64>, Vec<f64>) {
        (
            emit_to.take_needed(&mut self.counts),
            emit_to.take_needed(&mut self.means),
            emit_to.take_needed(&mut self.m2s),
        )
    }

    /// Adds one value (Welford's update).
    fn add(&mut self, group: usize, x: f64) {
        let count = self.counts[group] + 1;
        let delta = x - self.means[group];
        self.means[group] += delta / count as f64;
        self.m2s[group] += delta * (x - self.means[group]);
        self.counts[group] = count;
    }

    /// Merges the state of other rows of `group` (Chan's formula).
    fn merge(&mut self, group: usize, count: u64, mean: f64, m2: f64) {
        let had = self.counts[group];
        if count == 0 {
            return;
        }
        if had == 0 {
            (self.counts[group], self.means[group], self.m2s[group]) = (count, mean, m2);
            return;
        }
        let total = had + count;
        let delta = mean - self.means[group];
        self.means[group] += delta * count as f64 / total as f64;
        self.m2s[group] += m2 + delta * delta * had as f64 * count as f64 / total as f64;
        self.counts[group] = total;
    }

    /// Adds the values of `rows`, all of `group`, where `kept` says so.
    fn add_run(&mut self, group: usize, x: &Float64Array, rows: Range<usize>, kept: impl Fn(usize) -> bool) {
        if rows.len() < SHORT_RUN {
            for row in rows.filter(|&row| kept(row)) {
                self.add(group, x.value(row));
            }
            return;
        }
        let all = &x.values()[rows.clone()];
        if rows.clone().all(&kept) {
            let mean = lane_sum(all, |v| v) / all.len() as f64;
            self.merge(group, all.len() as u64, mean, lane_sum(all, |v| (v - mean) * (v - mean)));
            return;
        }
        let values = || rows.clone().filter(|&row| kept(row)).map(|row| x.value(row));
        let (count, sum) = values().fold((0u64, 0.0), |(n, s), v| (n + 1, s + v));
        if count > 0 {
            let mean = sum / count as f64;
            self.merge(group, count, mean, values().map(|v| (v - mean) * (v - mean)).sum());
        }
    }
}

impl GroupsAccumulator for RunVarianceGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        let x = values[0].as_primitive::<Float64Type>();
        let plain = x.null_count() == 0 && opt_filter.is_none();
        let kept = |row: usize| plain || (x.is_valid(row) && passes_filter(opt_filter, row));
        for (group, rows) in group_runs(group_indices) {
            self.add_run(group, x, rows, kept);
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (counts, _, m2s) = self.take(emit_to);
        let divisor = |count: u64| if self.population { count } else { count.saturating_sub(1) };
        let answers = counts.iter().zip(&m2s).map(|(&count, m2)| {
            let variance = m2 / divisor(count) as f64;
            (divisor(count) > 0).then(|| if self.root { variance.sqrt() } else { variance })
        });
        Ok(Arc::new(Float64Array::from_iter(answers)))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (counts, means, m2s) = self.take(emit_to);
        Ok(vec![
            Arc::new(UInt64Array::new(counts.into(), None)),
            Arc::new(Float64Array::new(means.into(), None)),
            Arc::new(Float64Array::new(m2s.into(), None)),
        ])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.resize(total_num_groups);
        let (counts, means, m2s) = (
            values[0].as_primitive::<UInt64Type>(),
            values[1].as_primitive::<Float64Type>(),
            values[2].as_primitive::<Float64Type>(),
        );
        for (row, &group) in group_indices.iter().enumerate() {
            self.merge(group, counts.value(row), means.value(row), m2s.value(row));
        }
        Ok(())
    }

    /// Each row as its own group's state: (1, x, 0), or (0, 0, 0) where x is
    /// null or the FILTER clause drops the row.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let x = values[0].as_primitive::<Float64Type>();
        let kept: Vec<bool> = (0..x.len()).map(|row| x.is_valid(row) && passes_filter(opt_filter, row)).collect();
        let counts = UInt64Array::from_iter_values(kept.iter().map(|&k| u64::from(k)));
        let means =
            Float64Array::from_iter_values(kept.iter().enumerate().map(|(r, &k)| if k { x.value(r) } else { 0.0 }));
        Ok(vec![Arc::new(counts), Arc::new(means), Arc::new(Float64Array::from(vec![0.0; x.len()]))])
    }

    fn size(&self) -> usize {
        self.counts.capacity() * size_of::<u64>() + (self.means.capacity() + self.m2s.capacity()) * size_of::<f64>()
    }
}

/// DataFusion's correlation accumulator, fed each run of a group's rows (without
/// nulls or FILTER) as one state row of its sums.
struct RunCorrelationGroups(CorrelationGroupsAccumulator);

/// A run's count and sums of x, y, xy, xx and yy: DataFusion's correlation state.
fn correlation_sums(x: &[f64], y: &[f64]) -> [f64; 5] {
    let mut sums = [0.0; 5];
    for (&x, &y) in x.iter().zip(y) {
        sums[0] += x;
        sums[1] += y;
        sums[2] += x * y;
        sums[3] += x * x;
        sums[4] += y * y;
    }
    sums
}

impl GroupsAccumulator for RunCorrelationGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let (x, y) = (values[0].as_primitive::<Float64Type>(), values[1].as_primitive::<Float64Type>());
        let plain = x.null_count() == 0 && y.null_count() == 0 && opt_filter.is_none();
        let runs: Vec<_> = if plain { group_runs(group_indices).collect() } else { Vec::new() };
        if !plain || runs.len() * SHORT_RUN > group_indices.len() {
            return self.0.update_batch(values, group_indices, opt_filter, total_num_groups);
        }
        let (mut groups, mut counts) = (Vec::with_capacity(runs.len()), Vec::with_capacity(runs.len()));
        let mut sums: [Vec<f64>; 5] = std::array::from_fn(|_| Vec::with_capacity(runs.len()));
        for (group, rows) in runs {
            groups.push(group);
            counts.push(rows.len() as u64);
            let run = correlation_sums(&x.values()[rows.clone()], &y.values()[rows]);
            for (column, sum) in sums.iter_mut().zip(run) {
                column.push(sum);
            }
        }
        let mut state: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(counts))];
        state.extend(sums.into_iter().map(|s| Arc::new(Float64Array::from(s)) as ArrayRef));
        self.0.merge_batch(&state, &groups, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.0.evaluate(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.0.state(emit_to)
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.0.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        self.0.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// Pseudo-random numbers below `n`, from `seed`.
    fn generator(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |n| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        }
    }

    /// `sql` over table `t` of `columns`, in three partitions of 100-row batches
    /// (so runs are cut by batch and partition ends), with [`RunStatistic`]'s
    /// functions registered.
    fn grouped(columns: Vec<(Field, ArrayRef)>, sql: &str) -> Vec<RecordBatch> {
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
        let schema = Arc::new(Schema::new(fields));
        let all = RecordBatch::try_new(schema.clone(), arrays).unwrap();
        let (rows, third) = (all.num_rows(), all.num_rows() / 3 + 1);
        let partitions = (0..rows)
            .step_by(third)
            .map(|start| {
                let end = (start + third).min(rows);
                (start..end).step_by(100).map(|at| all.slice(at, 100.min(end - at))).collect()
            })
            .collect();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3).with_batch_size(64));
        for v in RunStatistic::all() {
            ctx.register_udaf(AggregateUDF::new_from_impl(v));
        }
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions).unwrap())).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        runtime.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap()
    }

    /// Variances and deviations per group, from rows in runs of every length
    /// (cut by batch and partition ends), with nulls, a FILTER, a group of one
    /// row and a group of only nulls, equal two-pass sums worked out by hand, on
    /// values far from zero (where a careless formula loses every digit).
    #[test]
    fn grouped_answers_equal_two_pass_hand_sums() {
        let mut next = generator(11);
        let mut rows: Vec<(i64, Option<f64>)> = vec![(7, Some(3.5)), (8, None), (8, None)];
        while rows.len() < 1500 {
            let (group, run) = (next(6) as i64, 1 + next(60) as usize);
            for _ in 0..run {
                let x = (next(10) != 0).then(|| 1e9 + next(100_000) as f64 / 1000.0);
                rows.push((group, x));
            }
        }
        let columns: Vec<(Field, ArrayRef)> = vec![
            (Field::new("g", DataType::Int64, false), Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)))),
            (Field::new("x", DataType::Float64, true), Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.1)))),
        ];
        let batches = grouped(
            columns,
            "SELECT g, var(x), var_pop(x), stddev(x), stddev_pop(x), var_samp(x) FILTER (WHERE x > 1e9 + 50) \
             FROM t GROUP BY g",
        );
        let mut checked = 0;
        for batch in &batches {
            let g = batch.column(0).as_primitive::<arrow_array::types::Int64Type>();
            let answer = |c: usize, r: usize| {
                let a = batch.column(c).as_primitive::<Float64Type>();
                a.is_valid(r).then(|| a.value(r))
            };
            for r in 0..batch.num_rows() {
                let of = |keep: &dyn Fn(f64) -> bool| -> Vec<f64> {
                    rows.iter().filter(|row| row.0 == g.value(r)).filter_map(|row| row.1).filter(|&x| keep(x)).collect()
                };
                let m2 = |values: &[f64]| {
                    let mean = values.iter().sum::<f64>() / values.len() as f64;
                    values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>()
                };
                let variance = |values: &[f64], population: bool| {
                    let n = values.len().saturating_sub(usize::from(!population));
                    (n > 0).then(|| m2(values) / n as f64)
                };
                let close = |got: Option<f64>, want: Option<f64>| match (got, want) {
                    (Some(g), Some(w)) => (g - w).abs() <= 1e-6 * w.abs().max(1e-3),
                    (got, want) => got == want,
                };
                let all = of(&|_| true);
                let kept = of(&|x| x > 1e9 + 50.0);
                let group = g.value(r);
                assert!(close(answer(1, r), variance(&all, false)), "group {group}: var {:?}", answer(1, r));
                assert!(close(answer(2, r), variance(&all, true)), "group {group}: var_pop");
                assert!(close(answer(3, r), variance(&all, false).map(f64::sqrt)), "group {group}: stddev");
                assert!(close(answer(4, r), variance(&all, true).map(f64::sqrt)), "group {group}: stddev_pop");
                assert!(close(answer(5, r), variance(&kept, false)), "group {group}: FILTER");
                checked += 1;
            }
        }
        assert_eq!(checked, 8, "six groups, one of a single row, one of only nulls");
    }

    /// A correlation test row: group, x with nulls, z, y.
    type Row = (i64, Option<f64>, f64, f64);

    /// Correlations per group, from rows in runs (whole runs without nulls, and
    /// with nulls and a FILTER, which take DataFusion's row-by-row path), equal
    /// Pearson's coefficient worked out by hand; a group of one row and a group
    /// whose x never changes give NULL.
    #[test]
    fn grouped_correlations_equal_hand_pearson() {
        let mut next = generator(13);
        let mut rows: Vec<Row> = vec![(7, Some(1.0), 1.0, 2.0)];
        while rows.len() < 1500 {
            let (group, run) = (next(7) as i64, 1 + next(60) as usize);
            for _ in 0..run {
                let z = if group == 6 { 2.5 } else { next(1000) as f64 / 10.0 };
                let y = z * 0.3 + next(100) as f64 / 7.0;
                rows.push((group, (next(10) != 0).then_some(z), z, y));
            }
        }
        let float = |name: &str, values: Vec<f64>| -> (Field, ArrayRef) {
            (Field::new(name, DataType::Float64, false), Arc::new(Float64Array::from(values)))
        };
        let columns = vec![
            (
                Field::new("g", DataType::Int64, false),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
            ),
            (Field::new("x", DataType::Float64, true), Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.1)))),
            float("z", rows.iter().map(|r| r.2).collect()),
            float("y", rows.iter().map(|r| r.3).collect()),
        ];
        let batches =
            grouped(columns, "SELECT g, corr(z, y), corr(x, y), corr(z, y) FILTER (WHERE y > 10) FROM t GROUP BY g");
        let pearson = |pairs: &[(f64, f64)]| {
            let n = pairs.len() as f64;
            let (mx, my) = (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
            let cov: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
            let (vx, vy): (f64, f64) =
                (pairs.iter().map(|p| (p.0 - mx).powi(2)).sum(), pairs.iter().map(|p| (p.1 - my).powi(2)).sum());
            (pairs.len() > 1 && vx * vy > 0.0).then(|| cov / (vx * vy).sqrt())
        };
        let mut checked = 0;
        for batch in &batches {
            let g = batch.column(0).as_primitive::<arrow_array::types::Int64Type>();
            for r in 0..batch.num_rows() {
                let answer = |c: usize| {
                    let a = batch.column(c).as_primitive::<Float64Type>();
                    a.is_valid(r).then(|| a.value(r))
                };
                let of = |pair: &dyn Fn(&Row) -> Option<(f64, f64)>| -> Vec<(f64, f64)> {
                    rows.iter().filter(|row| row.0 == g.value(r)).filter_map(pair).collect()
                };
                let close = |got: Option<f64>, want: Option<f64>| match (got, want) {
                    (Some(g), Some(w)) => (g - w).abs() <= 1e-9,
                    (got, want) => got == want,
                };
                let group = g.value(r);
                let whole = pearson(&of(&|row| Some((row.2, row.3))));
                assert!(close(answer(1), whole), "group {group}: corr(z, y) {:?} against {whole:?}", answer(1));
                assert!(close(answer(2), pearson(&of(&|row| Some((row.1?, row.3))))), "group {group}: with nulls");
                let filtered = pearson(&of(&|row| (row.3 > 10.0).then_some((row.2, row.3))));
                assert!(close(answer(3), filtered), "group {group}: FILTER");
                checked += 1;
            }
        }
        assert_eq!(checked, 8, "seven groups and one of a single row");
    }
}
