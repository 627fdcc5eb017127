//! WINDOW JOIN, kdb+'s `wj1`: for each left row (a trade), aggregates over the
//! right rows (quotes) with equal keys whose time lies in a window around the left
//! row, written
//!
//! ```sql
//! SELECT t.sym, t.time, t.price, max(q.ask) AS hi, min(q.bid) AS lo, count(*) AS quotes
//! FROM trade t WINDOW JOIN quote q
//!   ON t.sym = q.sym AND q.time BETWEEN t.time - INTERVAL '1 second' AND t.time + INTERVAL '1 second'
//! ```
//!
//! The logical node and its rule are in [`plan`], the operator in [`exec`].

pub mod exec;
pub mod plan;

use std::sync::Arc;

use arrow_schema::Schema;
use datafusion::common::{Result, plan_err};
use datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateMode, aggregate_expressions};

use super::PhysicalInputs;
use exec::{Bound, WindowJoinExec, WindowJoinSpec};
use plan::{WindowEnd, WindowJoinNode};

/// The operator of a window join node.
pub(crate) fn plan_physical(node: &WindowJoinNode, inputs: &PhysicalInputs) -> Result<Arc<dyn ExecutionPlan>> {
    let joined = node.joined_schema()?;
    // Pairs of rows are built with every column nullable: columns no aggregate
    // reads are left as nulls rather than copied.
    let pair_schema = Arc::new(Schema::new(
        joined.as_arrow().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
    ));
    let mut aggregates = Vec::new();
    let mut filters = Vec::new();
    for expr in &node.aggregates {
        let lowered = LoweredAggregateBuilder::new(
            expr,
            &joined,
            &pair_schema,
            inputs.session().execution_props(),
            inputs.planning_ctx(),
        )
        .build()?;
        if lowered.aggregate.order_sensitivity().hard_requires() {
            return plan_err!("WINDOW JOIN cannot compute `{expr}`: it needs its rows in order");
        }
        aggregates.push(lowered.aggregate);
        filters.push(lowered.filter);
    }
    let arguments = aggregate_expressions(&aggregates, &AggregateMode::Partial, 0)?;
    let bound = |end: &Option<WindowEnd>| -> Result<Option<Bound>> {
        end.as_ref().map(|e| Ok(Bound { expr: inputs.left_expr(&e.expr)?, inclusive: e.inclusive })).transpose()
    };
    Ok(Arc::new(WindowJoinExec::new(WindowJoinSpec {
        left: inputs.left.clone(),
        right: inputs.right.clone(),
        left_keys: node.keys.iter().map(|(l, _)| inputs.left_expr(l)).collect::<Result<_>>()?,
        right_keys: node.keys.iter().map(|(_, r)| inputs.right_expr(r)).collect::<Result<_>>()?,
        time: inputs.right_expr(&node.time)?,
        start: bound(&node.start)?,
        end: bound(&node.end)?,
        columns: node.columns.iter().map(|c| inputs.left_expr(c)).collect::<Result<_>>()?,
        aggregates,
        arguments,
        filters,
        pair_schema,
        schema: Arc::new(node.schema.as_arrow().clone()),
    })))
}
