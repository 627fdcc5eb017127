//! The as-of join in DataFusion's logical plan: [`AsofJoinNode`], and the analyzer
//! rule that turns a join marked by [`ASOF_MARKER`] into one.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchemaRef, Result, plan_err};
use datafusion::logical_expr::logical_plan::builder::build_join_schema;
use datafusion::logical_expr::{Expr, Extension, JoinType, LogicalPlan, Operator, UserDefinedLogicalNodeCore};
use datafusion::optimizer::AnalyzerRule;

use crate::join::condition::{Comparison, has_marker, split};
use crate::join::needed_columns;
use crate::join::sql::ASOF_MARKER;

/// Which right row an as-of join picks for a left row at time `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd)]
pub enum Direction {
    /// The last right row at or before `t` (`l.time >= r.time`; strictly before
    /// for `>`). kdb+'s `aj`.
    Backward,
    /// The first right row at or after `t` (`l.time <= r.time`; strictly after
    /// for `<`).
    Forward,
}

/// An as-of join: for each left row, the right row with equal keys whose time is
/// the nearest in `direction`; ties on time go to the last such row (backward) or
/// the first (forward), in input order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AsofJoinNode {
    /// The left input (trades).
    pub left: Arc<LogicalPlan>,
    /// The right input (quotes).
    pub right: Arc<LogicalPlan>,
    /// Pairs of equal keys, left expression then right.
    pub keys: Vec<(Expr, Expr)>,
    /// The left time expression.
    pub left_time: Expr,
    /// The right time expression.
    pub right_time: Expr,
    /// Which way to look.
    pub direction: Direction,
    /// Whether equal times are excluded (`>` or `<`).
    pub strict: bool,
    /// Inner (drop unmatched left rows) or left (keep them with nulls).
    pub join_type: JoinType,
    /// Left columns then right columns.
    pub schema: DFSchemaRef,
}

impl PartialOrd for AsofJoinNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.left.partial_cmp(&other.left) {
            Some(Ordering::Equal) => self.right.partial_cmp(&other.right),
            other => other,
        }
    }
}

impl UserDefinedLogicalNodeCore for AsofJoinNode {
    fn name(&self) -> &str {
        "AsofJoin"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.left, &self.right]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        let mut exprs: Vec<Expr> = self.keys.iter().flat_map(|(l, r)| [l.clone(), r.clone()]).collect();
        exprs.push(self.left_time.clone());
        exprs.push(self.right_time.clone());
        exprs
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|(l, r)| format!("{l} = {r}")).collect();
        let op = match (self.direction, self.strict) {
            (Direction::Backward, false) => ">=",
            (Direction::Backward, true) => ">",
            (Direction::Forward, false) => "<=",
            (Direction::Forward, true) => "<",
        };
        write!(
            f,
            "AsofJoin: {:?}, keys=[{}], {} {op} {}",
            self.join_type,
            keys.join(", "),
            self.left_time,
            self.right_time
        )
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, mut inputs: Vec<LogicalPlan>) -> Result<Self> {
        let right = Arc::new(inputs.pop().expect("two inputs"));
        let left = Arc::new(inputs.pop().expect("two inputs"));
        let n = self.keys.len();
        let keys = (0..n).map(|i| (exprs[2 * i].clone(), exprs[2 * i + 1].clone())).collect();
        let schema = Arc::new(build_join_schema(left.schema(), right.schema(), &self.join_type)?);
        Ok(AsofJoinNode {
            left,
            right,
            keys,
            left_time: exprs[2 * n].clone(),
            right_time: exprs[2 * n + 1].clone(),
            schema,
            ..self.clone()
        })
    }

    fn prevent_predicate_push_down_columns(&self) -> HashSet<String> {
        // A filter above must stay above: below, it would change which row is "as of".
        self.schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        let left_len = self.left.schema().fields().len();
        let left_exprs = self.keys.iter().map(|(l, _)| l).chain([&self.left_time]);
        let right_exprs = self.keys.iter().map(|(_, r)| r).chain([&self.right_time]);
        let mut left = needed_columns(left_exprs, self.left.schema());
        let mut right = needed_columns(right_exprs, self.right.schema());
        left.extend(output_columns.iter().copied().filter(|i| *i < left_len));
        right.extend(output_columns.iter().filter(|i| **i >= left_len).map(|i| i - left_len));
        for v in [&mut left, &mut right] {
            v.sort_unstable();
            v.dedup();
        }
        Some(vec![left, right])
    }
}

/// Replaces marked joins with [`AsofJoinNode`]s.
#[derive(Debug, Default)]
pub struct AsofRule;

impl AnalyzerRule for AsofRule {
    fn name(&self) -> &str {
        "strata_asof_join"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| match plan {
            LogicalPlan::Join(join) if join.filter.as_ref().is_some_and(|f| has_marker(f, ASOF_MARKER)) => {
                Ok(Transformed::yes(LogicalPlan::Extension(Extension { node: Arc::new(asof_node(join)?) })))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }
}

/// The as-of node of a marked join, or an error saying what the ON condition must be.
fn asof_node(join: datafusion::logical_expr::Join) -> Result<AsofJoinNode> {
    if !matches!(join.join_type, JoinType::Inner | JoinType::Left) {
        return plan_err!("ASOF JOIN is inner or LEFT, not {}", join.join_type);
    }
    let condition = split(&join, ASOF_MARKER, "ASOF JOIN")?;
    let mut comparisons = condition.comparisons.into_iter();
    let Some(Comparison { left, op, right, .. }) = comparisons.next() else {
        return plan_err!("ASOF JOIN needs one inequality such as `t.time >= q.time`");
    };
    if let Some(second) = comparisons.next() {
        return plan_err!("ASOF JOIN takes exactly one inequality (the time match); found a second: `{}`", second.text);
    }
    let (direction, strict) = match op {
        Operator::GtEq => (Direction::Backward, false),
        Operator::Gt => (Direction::Backward, true),
        Operator::LtEq => (Direction::Forward, false),
        _ => (Direction::Forward, true),
    };
    Ok(AsofJoinNode {
        left: join.left,
        right: join.right,
        keys: condition.keys,
        left_time: left,
        right_time: right,
        direction,
        strict,
        join_type: join.join_type,
        schema: join.schema,
    })
}
