//! ASOF JOIN: the logical node and the rule that finds it ([`plan`]) and the
//! operator ([`exec`]).

pub mod exec;
pub mod plan;

use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::common::Result;
use datafusion::physical_expr::{LexRequirement, PhysicalExpr, PhysicalSortRequirement};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use super::PhysicalInputs;
use exec::{AsofJoinExec, AsofJoinSpec};
use plan::AsofJoinNode;

/// The operator of an as-of join node.
pub(crate) fn plan_physical(node: &AsofJoinNode, inputs: &PhysicalInputs) -> Result<Arc<dyn ExecutionPlan>> {
    let left_keys = node.keys.iter().map(|(l, _)| inputs.left_expr(l)).collect::<Result<Vec<_>>>()?;
    let right_keys = node.keys.iter().map(|(_, r)| inputs.right_expr(r)).collect::<Result<Vec<_>>>()?;
    let left_time = inputs.left_expr(&node.left_time)?;
    let right_time = inputs.right_expr(&node.right_time)?;
    let right = inputs.right.clone();
    let right_order = merge_order(&right, &right_keys, &right_time);
    Ok(Arc::new(AsofJoinExec::new(AsofJoinSpec {
        left: inputs.left.clone(),
        right,
        left_keys,
        right_keys,
        left_time,
        right_time,
        direction: node.direction,
        strict: node.strict,
        join_type: node.join_type,
        right_order,
        schema: Arc::new(node.schema.as_arrow().clone()),
    })))
}

/// The order the right side must arrive in: the longest run of key columns its
/// declared order starts with, then time. When the declared order is already that
/// (a table sorted by sym then time, joined on sym or on sym and exchange), nothing
/// is sorted; otherwise DataFusion sorts by every key, then time.
fn merge_order(
    right: &Arc<dyn ExecutionPlan>,
    keys: &[Arc<dyn PhysicalExpr>],
    time: &Arc<dyn PhysicalExpr>,
) -> LexRequirement {
    // Ascending, nulls where the declared order puts them: a Strata table declares
    // nulls last only when it holds none, so either placement is the stored order.
    let ascending = match right.output_ordering().map(|o| o.first().options) {
        Some(options) if !options.descending => options,
        _ => SortOptions::default(),
    };
    let requirement = |exprs: Vec<Arc<dyn PhysicalExpr>>| {
        LexRequirement::new(exprs.into_iter().map(|e| PhysicalSortRequirement::new(e, Some(ascending))))
            .expect("at least the time column")
    };
    if let Some(ordering) = right.output_ordering() {
        let mut prefix = Vec::new();
        for sort in ordering.iter() {
            if sort.options != ascending {
                break;
            }
            if sort.expr.eq(time) {
                prefix.push(time.clone());
                return requirement(prefix);
            }
            if keys.iter().any(|k| k.eq(&sort.expr)) && !prefix.iter().any(|p: &Arc<dyn PhysicalExpr>| p.eq(&sort.expr))
            {
                prefix.push(sort.expr.clone());
            } else {
                break;
            }
        }
    }
    let mut all: Vec<Arc<dyn PhysicalExpr>> = keys.to_vec();
    all.push(time.clone());
    requirement(all)
}
