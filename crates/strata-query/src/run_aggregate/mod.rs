//! Grouped aggregates over keys that come in runs.
//!
//! DataFusion's hash aggregate looks every input row's group key up in a hash
//! table. A table read in its stored `(sym, time)` order gives a symbol's rows
//! together, and so its time buckets too: a `GROUP BY sym` or `GROUP BY sym, bar`
//! (one packed key, see `dictionary_groups`) sees the same key row after row, and
//! the lookups were a quarter of a bar query's time (`GroupValuesPrimitive::intern`
//! 24% of 10-minute bars over 5M quotes, 21% of per-symbol statistics).
//! [`RunAggregates`] puts a [`RunAggregateExec`] in place of each hash aggregate
//! on one integer key (a packed pair too): the same accumulators and the same
//! group values, fed the same way, except that a batch whose keys come in runs
//! (found with Arrow's vectorised comparisons) has one lookup per run, its rows
//! all taking the run's group. Any key order gives the same answer; keys in runs
//! give it faster.

mod exec;
mod keys;

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use exec::RunAggregateExec;

/// The physical optimizer rule; it runs after every rule that looks for
/// DataFusion's `AggregateExec` (statistics, limits, `CountRows`).
#[derive(Debug, Default)]
pub(crate) struct RunAggregates;

impl PhysicalOptimizerRule for RunAggregates {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(match RunAggregateExec::try_new(Arc::clone(&node)) {
                Some(run) => Transformed::yes(Arc::new(run) as Arc<dyn ExecutionPlan>),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "StrataRunAggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, TimestampNanosecondArray};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::execution::TaskContext;
    use datafusion::execution::memory_pool::GreedyMemoryPool;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::physical_plan::aggregates::AggregateOutputMode;
    use datafusion::physical_plan::{ExecutionPlanProperties, collect};
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// Rows in runs of a key (as a sorted table gives them), a key coming back
    /// after others, null keys and null values, over three partitions of small
    /// batches.
    fn session() -> SessionContext {
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Nanosecond, None), false),
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Float64, false),
        ]));
        let rows: Vec<(Option<i64>, i64, Option<i32>, f64)> = (0..900i64)
            .map(|i| {
                let g = match i % 300 {
                    r if r < 120 => Some(r / 40),
                    r if r < 150 => None,
                    r => Some((r * 7) % 11),
                };
                (
                    g,
                    i * 1_000_000_000 % 7_200_000_000_000,
                    (i % 9 != 0).then_some((i * 31 % 17) as i32),
                    (i * 13 % 29) as f64,
                )
            })
            .collect();
        let batch = |rows: &[(Option<i64>, i64, Option<i32>, f64)]| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.0))),
                Arc::new(TimestampNanosecondArray::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.2))),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.3))),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        let partitions = rows.chunks(300).map(|p| p.chunks(37).map(batch).collect()).collect();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3).with_batch_size(16));
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions).unwrap())).unwrap();
        ctx
    }

    /// How many [`RunAggregateExec`] `plan` holds.
    fn runs(plan: &Arc<dyn ExecutionPlan>) -> usize {
        usize::from(plan.downcast_ref::<RunAggregateExec>().is_some())
            + plan.children().into_iter().map(runs).sum::<usize>()
    }

    /// Each query's rows, sorted, as DataFusion's hash aggregates give them and
    /// as [`RunAggregateExec`] does, with how many of the latter the plan held.
    fn both_ways(sql: &str) -> (String, String, usize) {
        let ctx = session();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        runtime.block_on(async {
            // Two plans: a plan's repartitions run once.
            let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
            let hashed = collect(plan, ctx.task_ctx()).await.unwrap();
            let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
            let run_plan = RunAggregates.optimize(plan, &ConfigOptions::default()).unwrap();
            let replaced = runs(&run_plan);
            let by_runs = collect(run_plan, ctx.task_ctx()).await.unwrap();
            let sorted = |batches: Vec<RecordBatch>| {
                let mut lines: Vec<String> =
                    pretty_format_batches(&batches).unwrap().to_string().lines().map(String::from).collect();
                lines.sort();
                lines.join("\n")
            };
            (sorted(hashed), sorted(by_runs), replaced)
        })
    }

    /// Partial and final aggregates by an integer, a timestamp bucket and a
    /// nullable key, with counts, sums, averages, extremes, deviations,
    /// medians, ordered firsts and FILTERs, equal DataFusion's answers (a
    /// deviation to 9 places: partial states merge in the order they arrive).
    #[test]
    fn grouping_by_runs_answers_as_hashing_does() {
        let aggregates = "count(*) AS n, count(x) AS nx, sum(x) AS sx, avg(y) AS ay, min(x) AS lo, max(y) AS hi, \
                          round(stddev(y), 9) AS sd, median(x) AS md, first_value(x ORDER BY t) AS fx, \
                          sum(y) FILTER (WHERE x > 8) AS fy";
        for sql in [
            format!("SELECT g, {aggregates} FROM t GROUP BY g"),
            format!("SELECT date_bin(INTERVAL '1 minute', t) AS bar, {aggregates} FROM t GROUP BY bar"),
            format!("SELECT x, {aggregates} FROM t WHERE y > 3 GROUP BY x HAVING count(*) > 2"),
        ] {
            let (hashed, by_runs, replaced) = both_ways(&sql);
            assert_eq!(replaced, 2, "{sql}: partial and final");
            assert!(hashed.lines().count() > 8, "{sql}: {hashed}");
            assert_eq!(hashed, by_runs, "{sql}");
        }
        // Two keys and a float key stay DataFusion's; a DISTINCT count, planned as
        // a grouping by both columns and then by one, is computed here for the one.
        assert_eq!(both_ways("SELECT g, x, count(*) FROM t GROUP BY g, x").2, 0);
        assert_eq!(both_ways("SELECT y, count(*) FROM t GROUP BY y").2, 0);
        let (hashed, by_runs, replaced) = both_ways("SELECT g, count(DISTINCT x) FROM t GROUP BY g");
        assert_eq!((hashed, replaced), (by_runs, 2));
    }

    /// Past its memory limit a partial aggregate gives its states out early, a
    /// key more than once; merged, they still count every row.
    #[test]
    fn partial_states_go_out_early_past_the_memory_limit() {
        let ctx = session();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        runtime.block_on(async {
            let plan = ctx.sql("SELECT g, count(*) AS n FROM t GROUP BY g").await.unwrap().create_physical_plan().await;
            let plan = RunAggregates.optimize(plan.unwrap(), &ConfigOptions::default()).unwrap();
            let mut partial = Arc::clone(&plan);
            while partial
                .downcast_ref::<RunAggregateExec>()
                .is_none_or(|run| run.node().mode().output_mode() != AggregateOutputMode::Partial)
            {
                partial = Arc::clone(partial.children()[0]);
            }
            let runtime_env =
                RuntimeEnvBuilder::new().with_memory_pool(Arc::new(GreedyMemoryPool::new(64))).build_arc();
            let tiny = Arc::new(TaskContext::default().with_runtime(runtime_env.unwrap()));
            let mut states = Vec::new();
            for p in 0..partial.output_partitioning().partition_count() {
                let stream = partial.execute(p, Arc::clone(&tiny)).unwrap();
                states.extend(datafusion::physical_plan::common::collect(stream).await.unwrap());
            }
            let keys: usize = states.iter().map(|b| b.num_rows()).sum();
            let counted: i64 =
                states.iter().map(|b| b.column(1).as_primitive::<Int64Type>().iter().flatten().sum::<i64>()).sum();
            assert!(keys > 3 * 15, "states given out early repeat keys: {keys}");
            assert_eq!(counted, 900);
            // EXPLAIN ANALYZE's figures: what went out, as DataFusion's operators count it.
            let metrics = partial.metrics().unwrap();
            let sum = |name: &str| metrics.sum(|m| m.value().name() == name).map_or(0, |v| v.as_usize());
            assert_eq!((sum("output_rows"), sum("output_batches")), (keys, states.len()), "{metrics}");
            assert!(sum("output_bytes") >= keys * size_of::<i64>(), "{metrics}");
        });
    }
}
