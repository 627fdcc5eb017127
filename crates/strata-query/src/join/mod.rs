//! Time joins, which DataFusion lacks: `ASOF JOIN` ([`asof`]) and `WINDOW JOIN`
//! ([`window`]). Both start as SQL text rewritten into ordinary joins tagged with a
//! marker function ([`sql`]); analyzer rules turn tagged joins into extension
//! nodes, planned here as Strata's operators. Both code their keys the same way
//! ([`keys`]) and read their ON conditions the same way ([`condition`]).

pub mod asof;
pub mod condition;
pub mod keys;
pub mod sql;
pub mod using;
pub mod window;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use asof::plan::AsofJoinNode;
use window::plan::WindowJoinNode;

/// DataFusion's planner plus Strata's time joins, planning small queries for one
/// partition ([`crate::one_partition`]).
#[derive(Debug, Default)]
pub struct StrataQueryPlanner;

#[async_trait]
impl QueryPlanner for StrataQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planner = DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(TimeJoinPlanner)]);
        match crate::one_partition::session_for(logical_plan, session)? {
            Some(small) => planner.create_physical_plan(logical_plan, &small).await,
            None => planner.create_physical_plan(logical_plan, session).await,
        }
    }
}

/// Plans [`AsofJoinNode`]s and [`WindowJoinNode`]s.
struct TimeJoinPlanner;

/// The two planned inputs of a time join and what turns their logical
/// expressions into physical ones.
pub(crate) struct PhysicalInputs<'a> {
    /// The left input's plan.
    pub left: Arc<dyn ExecutionPlan>,
    /// The right input's plan.
    pub right: Arc<dyn ExecutionPlan>,
    left_schema: &'a DFSchema,
    right_schema: &'a DFSchema,
    planner: &'a dyn PhysicalPlanner,
    session: &'a dyn Session,
    planning_ctx: &'a PhysicalPlanningContext,
}

impl PhysicalInputs<'_> {
    /// `expr` over the left input's columns.
    pub fn left_expr(&self, expr: &Expr) -> Result<Arc<dyn PhysicalExpr>> {
        self.planner.create_physical_expr(expr, self.left_schema, self.session, self.planning_ctx)
    }

    /// `expr` over the right input's columns.
    pub fn right_expr(&self, expr: &Expr) -> Result<Arc<dyn PhysicalExpr>> {
        self.planner.create_physical_expr(expr, self.right_schema, self.session, self.planning_ctx)
    }

    /// The session, for planning aggregates.
    pub fn session(&self) -> &dyn Session {
        self.session
    }

    /// The planning context, for planning aggregates.
    pub fn planning_ctx(&self) -> &PhysicalPlanningContext {
        self.planning_ctx
    }
}

#[async_trait]
impl ExtensionPlanner for TimeJoinPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let (Some(left), Some(right)) = (logical_inputs.first(), logical_inputs.get(1)) else { return Ok(None) };
        let inputs = PhysicalInputs {
            left: physical_inputs[0].clone(),
            right: physical_inputs[1].clone(),
            left_schema: left.schema(),
            right_schema: right.schema(),
            planner,
            session,
            planning_ctx,
        };
        if let Some(node) = node.as_any().downcast_ref::<AsofJoinNode>() {
            return asof::plan_physical(node, &inputs).map(Some);
        }
        if let Some(node) = node.as_any().downcast_ref::<WindowJoinNode>() {
            return window::plan_physical(node, &inputs).map(Some);
        }
        Ok(None)
    }
}

/// The indices of `schema`'s columns that `exprs` read.
pub(crate) fn needed_columns<'a>(exprs: impl IntoIterator<Item = &'a Expr>, schema: &DFSchema) -> Vec<usize> {
    let mut out = Vec::new();
    for expr in exprs {
        for column in expr.column_refs() {
            if let Ok(i) = schema.index_of_column(column) {
                out.push(i);
            }
        }
    }
    out
}
