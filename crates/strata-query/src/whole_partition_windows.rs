//! Window aggregates over whole partitions (`max(price) OVER (PARTITION BY ex)`,
//! no ORDER BY, so every row of a partition gets the same value) as one grouped
//! aggregate joined back to the rows, as Polars runs `.over()`.
//!
//! DataFusion runs such a window by sorting every row by the partition keys and
//! aggregating each partition: on a day of quotes, a sort of millions of rows for
//! a handful of exchanges. The rule here writes
//! `Window(input, [f(x) OVER (PARTITION BY k), ...])` as
//! `Projection(Join(Aggregate(input, k, [f(x)]), input) ON k)`: a hash aggregate
//! and a hash join that probes with the rows, no sort. Keys match as PARTITION BY
//! groups them, nulls with nulls. Windows of different keys (nested Window nodes)
//! each get their aggregate, joined in turn.
//!
//! The input is read once per aggregate and once for the rows, so the rule only
//! takes inputs that read the same rows every time and cost a scan: table scans
//! without a LIMIT, filters, projections and aliases of deterministic expressions.
//! Float keys are left to the sort (a hash join and a grouping may tell `-0.0` and
//! `0.0` apart differently).

use std::sync::Arc;

use arrow_schema::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, NullEquality, Result, TableReference};
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, WindowFunction, WindowFunctionParams,
};
use datafusion::logical_expr::{
    Aggregate, Expr, ExprSchemable, Join, JoinConstraint, JoinType, LogicalPlan, Projection, SubqueryAlias,
    WindowFunctionDefinition,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The rule (see the module documentation).
#[derive(Debug, Default)]
pub struct WholePartitionWindows;

/// The alias of the `n`th aggregate joined back.
fn aggregate_alias(n: usize) -> String {
    format!("__strata_partition_{n}")
}

impl OptimizerRule for WholePartitionWindows {
    fn name(&self) -> &str {
        "strata_whole_partition_windows"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, _config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Window(_) = &plan else { return Ok(Transformed::no(plan)) };
        // The chain of Window nodes down to the first other node, innermost first.
        let mut windows = Vec::new();
        let mut node = &plan;
        while let LogicalPlan::Window(window) = node {
            windows.push(window);
            node = window.input.as_ref();
        }
        windows.reverse();
        let base = node;
        if !reads_the_same_rows_again(base) {
            return Ok(Transformed::no(plan));
        }
        // Every window expression of the chain as (its output name, keys, aggregate).
        let mut wanted = Vec::new();
        for window in &windows {
            for expr in &window.window_expr {
                let name = expr.schema_name().to_string();
                match whole_partition_aggregate(expr, base)? {
                    Some((keys, aggregate)) => wanted.push((name, keys, aggregate)),
                    None => return Ok(Transformed::no(plan)),
                }
            }
        }
        // One aggregate per distinct key list, in first-use order.
        let mut key_lists: Vec<Vec<Expr>> = Vec::new();
        for (_, keys, _) in &wanted {
            if !key_lists.contains(keys) {
                key_lists.push(keys.clone());
            }
        }
        let base = Arc::new(base.clone());
        let mut joined = base.clone();
        let mut outputs: Vec<Option<Expr>> = vec![None; wanted.len()];
        for (n, keys) in key_lists.iter().enumerate() {
            let alias = aggregate_alias(n);
            let mut aggregates = Vec::new();
            for (w, (name, k, aggregate)) in wanted.iter().enumerate() {
                if k == keys {
                    let column = format!("__w{w}");
                    aggregates.push(aggregate.clone().alias(&column));
                    outputs[w] = Some(
                        Expr::Column(Column::new(Some(TableReference::bare(alias.as_str())), column))
                            .alias_qualified(None::<TableReference>, name),
                    );
                }
            }
            let grouped = LogicalPlan::Aggregate(Aggregate::try_new(base.clone(), keys.clone(), aggregates)?);
            let grouped = LogicalPlan::SubqueryAlias(SubqueryAlias::try_new(Arc::new(grouped), alias.as_str())?);
            let on = keys
                .iter()
                .filter_map(|k| match k {
                    Expr::Column(c) => Some((
                        Expr::Column(Column::new(Some(TableReference::bare(alias.as_str())), c.name.clone())),
                        k.clone(),
                    )),
                    _ => None,
                })
                .collect();
            joined = Arc::new(LogicalPlan::Join(Join::try_new(
                Arc::new(grouped),
                joined,
                on,
                None,
                JoinType::Inner,
                JoinConstraint::On,
                NullEquality::NullEqualsNull,
                false,
            )?));
        }
        let mut exprs: Vec<Expr> = base.schema().columns().into_iter().map(Expr::Column).collect();
        exprs.extend(outputs.into_iter().map(|o| o.expect("every window expression has its aggregate")));
        let projection = Projection::try_new(exprs, joined)?;
        if plan.schema().has_equivalent_names_and_types(&projection.schema).is_err() {
            return Ok(Transformed::no(plan));
        }
        Ok(Transformed::yes(LogicalPlan::Projection(projection)))
    }
}

/// The partition keys and the aggregate of `expr` when it is an aggregate over a
/// whole partition by non-float columns: no ORDER BY, an unbounded frame.
fn whole_partition_aggregate(expr: &Expr, input: &LogicalPlan) -> Result<Option<(Vec<Expr>, Expr)>> {
    let Expr::WindowFunction(window) = expr.clone().unalias() else { return Ok(None) };
    let WindowFunction { fun, params } = *window;
    let WindowFunctionParams { args, partition_by, order_by, window_frame, filter, null_treatment, distinct } = params;
    let WindowFunctionDefinition::AggregateUDF(udf) = fun else { return Ok(None) };
    if partition_by.is_empty()
        || !order_by.is_empty()
        || !window_frame.start_bound.is_unbounded()
        || !window_frame.end_bound.is_unbounded()
    {
        return Ok(None);
    }
    for key in &partition_by {
        if !matches!(key, Expr::Column(_)) {
            return Ok(None);
        }
        let t = key.get_type(input.schema())?;
        if matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64) {
            return Ok(None);
        }
    }
    let aggregate = Expr::AggregateFunction(AggregateFunction {
        func: udf,
        params: AggregateFunctionParams { args, distinct, filter, order_by: vec![], null_treatment },
    });
    Ok(Some((partition_by, aggregate)))
}

/// Whether `plan` reads the same rows each time it runs, at the cost of a scan:
/// scans without a limit, filters, projections and aliases, nothing volatile.
fn reads_the_same_rows_again(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::TableScan(scan) => scan.fetch.is_none() && scan.filters.iter().all(|f| !f.is_volatile()),
        LogicalPlan::Filter(filter) => !filter.predicate.is_volatile() && reads_the_same_rows_again(&filter.input),
        LogicalPlan::Projection(p) => p.expr.iter().all(|e| !e.is_volatile()) && reads_the_same_rows_again(&p.input),
        LogicalPlan::SubqueryAlias(alias) => reads_the_same_rows_again(&alias.input),
        _ => false,
    }
}
