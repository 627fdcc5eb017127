//! The window join in DataFusion's logical plan: [`WindowJoinNode`], and the
//! analyzer rule that turns a grouped join marked by [`WINDOW_MARKER`] into one.
//!
//! The SQL rewrite leaves `Aggregate(GROUP BY ALL) <- [Filter] <- Join(marked)`.
//! The rule keeps the aggregate's output (the non-aggregate SELECT items, then the
//! aggregates) but gives it the window join's meaning: one row per left row, the
//! aggregates computed over the right rows with equal keys whose time falls in
//! that row's window. WHERE conditions on one table filter that table's rows
//! before the join.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{DFSchemaRef, Result, plan_err};
use datafusion::logical_expr::logical_plan::builder::build_join_schema;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    Aggregate, Expr, Extension, Filter, Join, JoinType, LogicalPlan, Operator, UserDefinedLogicalNodeCore,
};
use datafusion::optimizer::AnalyzerRule;

use crate::join::condition::{Comparison, has_marker, split};
use crate::join::needed_columns;
use crate::join::sql::WINDOW_MARKER;

/// One end of a window: a left-side expression (such as `t.time - INTERVAL '1
/// second'`) and whether a right time equal to it is inside.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd)]
pub struct WindowEnd {
    /// Over the left input's columns.
    pub expr: Expr,
    /// `>=` / `<=` (inside) rather than `>` / `<`.
    pub inclusive: bool,
}

/// A window join: for each left row, aggregates over the right rows whose keys
/// equal the left row's and whose time lies between the left row's window ends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowJoinNode {
    /// The left input (trades): one output row each.
    pub left: Arc<LogicalPlan>,
    /// The right input (quotes): aggregated per window.
    pub right: Arc<LogicalPlan>,
    /// Pairs of equal keys, left expression then right.
    pub keys: Vec<(Expr, Expr)>,
    /// The right side's time, which the window bounds.
    pub time: Expr,
    /// The window's start; `None`: unbounded.
    pub start: Option<WindowEnd>,
    /// The window's end; `None`: unbounded.
    pub end: Option<WindowEnd>,
    /// Output columns over the left input (the SELECT's non-aggregate items).
    pub columns: Vec<Expr>,
    /// Aggregates over the joined row (left and right columns), per window.
    pub aggregates: Vec<Expr>,
    /// `columns` then `aggregates`.
    pub schema: DFSchemaRef,
}

impl PartialOrd for WindowJoinNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.left.partial_cmp(&other.left) {
            Some(Ordering::Equal) => self.right.partial_cmp(&other.right),
            other => other,
        }
    }
}

impl WindowJoinNode {
    /// The schema the aggregates read: left columns then right columns.
    pub fn joined_schema(&self) -> Result<DFSchemaRef> {
        Ok(Arc::new(build_join_schema(self.left.schema(), self.right.schema(), &JoinType::Inner)?))
    }
}

impl UserDefinedLogicalNodeCore for WindowJoinNode {
    fn name(&self) -> &str {
        "WindowJoin"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.left, &self.right]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        let mut exprs: Vec<Expr> = self.keys.iter().flat_map(|(l, r)| [l.clone(), r.clone()]).collect();
        exprs.push(self.time.clone());
        exprs.extend(self.start.iter().chain(&self.end).map(|e| e.expr.clone()));
        exprs.extend(self.columns.iter().cloned());
        exprs.extend(self.aggregates.iter().cloned());
        exprs
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|(l, r)| format!("{l} = {r}")).collect();
        let aggregates: Vec<String> = self.aggregates.iter().map(|a| a.to_string()).collect();
        write!(f, "WindowJoin: keys=[{}], {}", keys.join(", "), describe_window(self))?;
        write!(f, ", aggregates=[{}]", aggregates.join(", "))
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, mut inputs: Vec<LogicalPlan>) -> Result<Self> {
        let right = Arc::new(inputs.pop().expect("two inputs"));
        let left = Arc::new(inputs.pop().expect("two inputs"));
        let mut exprs = exprs.into_iter();
        let mut next = || exprs.next().expect("as many expressions as expressions() gave");
        let keys = self.keys.iter().map(|_| (next(), next())).collect();
        let time = next();
        let start = self.start.as_ref().map(|e| WindowEnd { expr: next(), inclusive: e.inclusive });
        let end = self.end.as_ref().map(|e| WindowEnd { expr: next(), inclusive: e.inclusive });
        let columns = self.columns.iter().map(|_| next()).collect();
        let aggregates = self.aggregates.iter().map(|_| next()).collect();
        Ok(WindowJoinNode { left, right, keys, time, start, end, columns, aggregates, schema: self.schema.clone() })
    }

    fn prevent_predicate_push_down_columns(&self) -> HashSet<String> {
        // A filter on an aggregate must stay above the join; one on an output
        // column would change nothing below, but keep the node simple: none pass.
        self.schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    fn necessary_children_exprs(&self, _output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        // Every output column is computed, so everything the expressions read is needed.
        let left_len = self.left.schema().fields().len();
        let joined = self.joined_schema().ok()?;
        let read = needed_columns(self.aggregates.iter(), &joined);
        let left_exprs = self.keys.iter().map(|(l, _)| l).chain(self.start.iter().chain(&self.end).map(|e| &e.expr));
        let mut left = needed_columns(left_exprs.chain(&self.columns), self.left.schema());
        let mut right = needed_columns(self.keys.iter().map(|(_, r)| r).chain([&self.time]), self.right.schema());
        left.extend(read.iter().copied().filter(|i| *i < left_len));
        right.extend(read.iter().filter(|i| **i >= left_len).map(|i| i - left_len));
        for v in [&mut left, &mut right] {
            v.sort_unstable();
            v.dedup();
        }
        Some(vec![left, right])
    }
}

/// `start <= time <= end` as text.
fn describe_window(node: &WindowJoinNode) -> String {
    let start = match &node.start {
        Some(e) => format!("{} {} ", e.expr, if e.inclusive { "<=" } else { "<" }),
        None => String::new(),
    };
    let end = match &node.end {
        Some(e) => format!(" {} {}", if e.inclusive { "<=" } else { "<" }, e.expr),
        None => String::new(),
    };
    format!("window={start}{}{end}", node.time)
}

/// Replaces marked, grouped joins with [`WindowJoinNode`]s.
#[derive(Debug, Default)]
pub struct WindowRule;

impl AnalyzerRule for WindowRule {
    fn name(&self) -> &str {
        "strata_window_join"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = plan
            .transform_up_with_subqueries(|plan| match plan {
                LogicalPlan::Aggregate(aggregate) if marked_join_below(&aggregate.input).is_some() => {
                    Ok(Transformed::yes(LogicalPlan::Extension(Extension { node: Arc::new(window_node(aggregate)?) })))
                }
                other => Ok(Transformed::no(other)),
            })?
            .data;
        // A marked join left over was not directly under its SELECT's grouping.
        let mut stray = false;
        plan.apply_with_subqueries(|p| {
            stray |= matches!(p, LogicalPlan::Join(j) if is_marked(j));
            Ok(if stray { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })?;
        if stray {
            return plan_err!("a WINDOW JOIN must be the FROM of its SELECT, with aggregates of the right table");
        }
        Ok(plan)
    }
}

fn is_marked(join: &Join) -> bool {
    join.filter.as_ref().is_some_and(|f| has_marker(f, WINDOW_MARKER))
}

/// The marked join under an aggregate, through an optional WHERE filter.
fn marked_join_below(input: &LogicalPlan) -> Option<&Join> {
    let below = match input {
        LogicalPlan::Filter(filter) => filter.input.as_ref(),
        other => other,
    };
    match below {
        LogicalPlan::Join(join) if is_marked(join) => Some(join),
        _ => None,
    }
}

/// The window node of `Aggregate <- [Filter] <- marked Join`, or an error saying
/// what the query must look like.
fn window_node(aggregate: Aggregate) -> Result<WindowJoinNode> {
    let (join, predicate) = match Arc::unwrap_or_clone(aggregate.input) {
        LogicalPlan::Filter(Filter { predicate, input, .. }) => match Arc::unwrap_or_clone(input) {
            LogicalPlan::Join(join) => (join, Some(predicate)),
            _ => unreachable!("checked by marked_join_below"),
        },
        LogicalPlan::Join(join) => (join, None),
        _ => unreachable!("checked by marked_join_below"),
    };
    let condition = split(&join, WINDOW_MARKER, "WINDOW JOIN")?;
    let (time, start, end) = window_of(condition.comparisons)?;
    let (left_schema, right_schema) = (join.left.schema().clone(), join.right.schema().clone());
    let reads_only = |e: &Expr, schema: &DFSchemaRef| e.column_refs().iter().all(|c| schema.has_column(c));
    for column in &aggregate.group_expr {
        if !reads_only(column, &left_schema) {
            return plan_err!(
                "WINDOW JOIN: `{column}` reads the right table outside an aggregate; the right table's columns \
                 appear only inside aggregates such as avg(q.bid) or count(*)"
            );
        }
    }
    if aggregate.aggr_expr.is_empty() {
        return plan_err!("a WINDOW JOIN needs aggregates of the right table's rows, such as count(*) or max(q.ask)");
    }
    // WHERE conditions filter the table they read, before the join.
    let (mut left, mut right) = (Arc::unwrap_or_clone(join.left), Arc::unwrap_or_clone(join.right));
    let mut left_where = Vec::new();
    let mut right_where = Vec::new();
    for conjunct in predicate.iter().flat_map(split_conjunction) {
        if reads_only(conjunct, &left_schema) {
            left_where.push(conjunct.clone());
        } else if reads_only(conjunct, &right_schema) {
            right_where.push(conjunct.clone());
        } else {
            return plan_err!(
                "WINDOW JOIN: the WHERE condition `{conjunct}` reads both tables; WHERE conditions filter one \
                 table's rows, the window is given in ON"
            );
        }
    }
    for (input, conditions) in [(&mut left, left_where), (&mut right, right_where)] {
        if let Some(predicate) = conditions.into_iter().reduce(Expr::and) {
            *input = LogicalPlan::Filter(Filter::try_new(predicate, Arc::new(input.clone()))?);
        }
    }
    Ok(WindowJoinNode {
        left: Arc::new(left),
        right: Arc::new(right),
        keys: condition.keys,
        time,
        start,
        end,
        columns: aggregate.group_expr,
        aggregates: aggregate.aggr_expr,
        schema: aggregate.schema,
    })
}

/// The right time and the window's ends from the ON condition's comparisons: at
/// most one lower and one upper bound, on one right expression.
fn window_of(comparisons: Vec<Comparison>) -> Result<(Expr, Option<WindowEnd>, Option<WindowEnd>)> {
    let mut time: Option<Expr> = None;
    let (mut start, mut end) = (None, None);
    for Comparison { left, op, right, text } in comparisons {
        if time.as_ref().is_some_and(|t| *t != right) {
            return plan_err!(
                "WINDOW JOIN: `{text}` bounds a second right column; the window bounds one, as in \
                 q.time BETWEEN t.time - INTERVAL '1 second' AND t.time"
            );
        }
        time = Some(right);
        // `left op right` read from the right time's side.
        let (slot, inclusive, which) = match op {
            Operator::LtEq => (&mut start, true, "start"),
            Operator::Lt => (&mut start, false, "start"),
            Operator::GtEq => (&mut end, true, "end"),
            _ => (&mut end, false, "end"),
        };
        if slot.replace(WindowEnd { expr: left, inclusive }).is_some() {
            return plan_err!("WINDOW JOIN: `{text}` gives the window a second {which}");
        }
    }
    match time {
        Some(time) => Ok((time, start, end)),
        None => plan_err!(
            "a WINDOW JOIN needs a window on the right table's time, such as \
             q.time BETWEEN t.time - INTERVAL '1 second' AND t.time + INTERVAL '1 second'"
        ),
    }
}
