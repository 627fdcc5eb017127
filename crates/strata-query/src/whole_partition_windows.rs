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
//! groups them, nulls with nulls. Windows of different keys (nested Window nodes,
//! with the projections that only pick columns between them) each get their
//! aggregate, joined in turn.
//!
//! The input is read once per aggregate and once for the rows, so the rule only
//! takes inputs that read the same rows every time and cost a scan: scans of
//! stored tables without a LIMIT, filters, projections and aliases of deterministic
//! expressions. Not an RDB's in-memory tables: rows arriving between the two reads
//! would be missing from the aggregate, and the join would drop them.
//! Float keys are left to the sort (a hash join and a grouping may tell `-0.0` and
//! `0.0` apart differently).

use std::sync::Arc;

use arrow_schema::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, NullEquality, Result, TableReference};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, WindowFunction, WindowFunctionParams,
};
use datafusion::logical_expr::{
    Aggregate, Expr, ExprSchemable, Join, JoinConstraint, JoinType, LogicalPlan, Projection, SubqueryAlias,
    WindowFunctionDefinition,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::table::StrataTable;

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
        // The chain of Window nodes down to the first other node, innermost first,
        // through the projections that only pick columns between them (which
        // projection pushdown puts there).
        let mut windows = Vec::new();
        let mut node = &plan;
        loop {
            match node {
                LogicalPlan::Window(window) => {
                    windows.push(window);
                    node = window.input.as_ref();
                }
                LogicalPlan::Projection(p)
                    if !windows.is_empty() && p.expr.iter().all(|e| matches!(e, Expr::Column(_))) =>
                {
                    node = p.input.as_ref();
                }
                _ => break,
            }
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
        // The chain's columns in its order: a window's output from its aggregate, any
        // other column from the input (the picking projections left out what they drop).
        let exprs = plan.schema().iter().map(|(qualifier, field)| {
            let window = wanted.iter().position(|(name, _, _)| qualifier.is_none() && name == field.name());
            match window {
                Some(w) => outputs[w].clone().expect("every window expression has its aggregate"),
                None => Expr::Column(Column::new(qualifier.cloned(), field.name())),
            }
        });
        let projection = Projection::try_new(exprs.collect(), joined)?;
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
        match key.get_type(input.schema()) {
            Ok(DataType::Float16 | DataType::Float32 | DataType::Float64) | Err(_) => return Ok(None),
            Ok(_) => {}
        }
    }
    // Arguments reading another window's output (not the input's columns) stay windows.
    let columns = args.iter().chain(filter.as_deref()).flat_map(|e| e.column_refs());
    if !columns.into_iter().all(|c| input.schema().has_column(c)) {
        return Ok(None);
    }
    let aggregate = Expr::AggregateFunction(AggregateFunction {
        func: udf,
        params: AggregateFunctionParams { args, distinct, filter, order_by: vec![], null_treatment },
    });
    Ok(Some((partition_by, aggregate)))
}

/// Whether `plan` reads the same rows each time it runs, at the cost of a scan:
/// scans of stored tables (whose opened partitions do not change) without a limit, filters, projections and aliases, nothing volatile.
fn reads_the_same_rows_again(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::TableScan(scan) => {
            let stored = source_as_provider(&scan.source).is_ok_and(|p| p.downcast_ref::<StrataTable>().is_some());
            stored && scan.fetch.is_none() && scan.filters.iter().all(|f| !f.is_volatile())
        }
        LogicalPlan::Filter(filter) => !filter.predicate.is_volatile() && reads_the_same_rows_again(&filter.input),
        LogicalPlan::Projection(p) => p.expr.iter().all(|e| !e.is_volatile()) && reads_the_same_rows_again(&p.input),
        LogicalPlan::SubqueryAlias(alias) => reads_the_same_rows_again(&alias.input),
        _ => false,
    }
}
