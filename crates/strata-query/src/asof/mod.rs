//! ASOF JOIN: SQL syntax ([`sql`]), the logical node and the rule that finds it
//! ([`plan`]), the key coding ([`keys`]) and the operator ([`exec`]).

pub mod exec;
pub mod keys;
pub mod plan;
pub mod sql;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::compute::SortOptions;
use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_expr::{LexRequirement, PhysicalExpr, PhysicalSortRequirement};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use exec::{AsofJoinExec, AsofJoinSpec};
use plan::AsofJoinNode;

/// DataFusion's planner plus Strata's extension nodes.
#[derive(Debug, Default)]
pub struct StrataQueryPlanner;

#[async_trait]
impl QueryPlanner for StrataQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(AsofPlanner)])
            .create_physical_plan(logical_plan, session)
            .await
    }
}

/// Plans [`AsofJoinNode`]s as [`AsofJoinExec`]s.
struct AsofPlanner;

#[async_trait]
impl ExtensionPlanner for AsofPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<AsofJoinNode>() else { return Ok(None) };
        let (left_schema, right_schema) = (logical_inputs[0].schema(), logical_inputs[1].schema());
        let physical = |e, schema| planner.create_physical_expr(e, schema, session, planning_ctx);
        let left_keys = node.keys.iter().map(|(l, _)| physical(l, left_schema)).collect::<Result<Vec<_>>>()?;
        let right_keys = node.keys.iter().map(|(_, r)| physical(r, right_schema)).collect::<Result<Vec<_>>>()?;
        let left_time = physical(&node.left_time, left_schema)?;
        let right_time = physical(&node.right_time, right_schema)?;
        let right = physical_inputs[1].clone();
        let right_order = merge_order(&right, &right_keys, &right_time);
        Ok(Some(Arc::new(AsofJoinExec::new(AsofJoinSpec {
            left: physical_inputs[0].clone(),
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
        }))))
    }
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
    let ascending = SortOptions::default();
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
