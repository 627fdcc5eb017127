//! The first rows of every group without sorting the whole input.
//!
//! "The latest quote per symbol" and "the three largest trades per symbol" are
//! written with a ranking window and a filter on its rank:
//!
//! ```sql
//! SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY sym ORDER BY time DESC) AS r
//!                FROM quote) WHERE r = 1
//! ```
//!
//! Planned as written, that sorts every quote of the day by symbol and time to
//! keep one row per symbol. [`WindowTopK`] puts DataFusion's per-partition top-K
//! operator ([`PartitionedTopKExec`]: one heap of K rows per group) in place of
//! the sort and drops the filter, which the top-K has then already applied.
//!
//! DataFusion ships the same rewrite (`WindowTopN`), off by default in 55.2, and
//! this rule stands in for it because, as shipped, it
//! - panics on `r < 1` (a top-K of zero rows),
//! - does not take `r = 1`, the commonest form,
//! - reads the filtered column's index without following it through the
//!   projections between the filter and the window, and
//! - prunes the input of every window function computed beside the ranking one,
//!   which changes the answers of those whose frame reaches past the current row.
//!
//! The engine turns DataFusion's switch `datafusion.optimizer.enable_window_topn`
//! on and this rule obeys it: `SET datafusion.optimizer.enable_window_topn = false`
//! goes back to sorting. Where no stored order serves, the heaps are only used
//! when every partition key takes few values (symbols, chars, booleans, bytes:
//! [`few_values`]); other keys, which may make a group of nearly every row, sort,
//! within the query memory.
//!
//! The rule rewrites only a filter `rank_column <= K` (or `< K`, `= 1`, and the
//! flipped forms) with K at least one, traced through projections to a window node
//! that computes nothing but that `row_number()` or `rank()`, partitioned.

use std::sync::Arc;

use arrow_schema::{DataType, SortOptions};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::window::{StandardWindowExpr, WindowExpr};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::expressions::{BinaryExpr, Column, Literal};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::partial_sort::PartialSortExec;
use datafusion::physical_plan::sorts::partitioned_topk::{PartitionedTopKExec, WindowFnKind};
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowUDFExpr};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use run_ends::{RunEnd, RunEndsExec};

mod run_ends;

/// The physical optimizer rule; it takes the place of DataFusion's `WindowTopN`
/// in the rule list (see [`physical_rules`]).
#[derive(Debug, Default)]
pub(crate) struct WindowTopK;

/// The name of the DataFusion rule [`WindowTopK`] replaces.
pub(crate) const DATAFUSION_RULE: &str = "WindowTopN";

impl PhysicalOptimizerRule for WindowTopK {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        if !config.optimizer.enable_window_topn {
            return Ok(plan);
        }
        plan.transform_down(|node| {
            Ok(match top_k_in_place_of(&node) {
                Some(rewritten) => Transformed::yes(rewritten),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "StrataWindowTopK"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The plan that replaces `node` when it is a filter on a rank, else `None`.
fn top_k_in_place_of(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let filter = node.downcast_ref::<FilterExec>()?;
    if filter.projection().is_some() {
        return None;
    }
    let (mut column, keep) = rank_limit(filter.predicate())?;

    // Follow the filtered column down to the window node.
    let mut between = Vec::new();
    let mut current = Arc::clone(filter.input());
    let window = loop {
        if let Some(window) = current.downcast_ref::<BoundedWindowAggExec>() {
            break window;
        }
        if let Some(projection) = current.downcast_ref::<ProjectionExec>() {
            column = projection.expr().get(column)?.expr.downcast_ref::<Column>()?.index();
        } else if current.downcast_ref::<RepartitionExec>().is_none() {
            return None;
        }
        let child = Arc::clone(current.children().first()?);
        between.push(current);
        current = child;
    };

    // The window node must compute the ranking function alone, and it must be
    // the filtered column (the window's output is its input, then its functions).
    let [function] = window.window_expr() else { return None };
    if column != window.input().schema().fields().len() {
        return None;
    }
    let kind = ranking_kind(function)?;
    let partition_by = function.partition_by();
    let order_by = function.order_by();
    if partition_by.is_empty() || (matches!(kind, WindowFnKind::Rank) && order_by.is_empty()) {
        return None;
    }
    let top_k = run_ends(window.input(), partition_by, order_by, keep, kind).or_else(|| {
        let schema = window.input().schema();
        if !partition_by.iter().all(|key| few_values(key.as_ref(), &schema)) {
            return None;
        }
        let sort = partition_by.iter().map(|key| PhysicalSortExpr::new_default(Arc::clone(key)));
        let sort = LexOrdering::new(sort.chain(order_by.iter().cloned()))?;
        let top_k = PartitionedTopKExec::try_new(Arc::clone(window.input()), sort, partition_by.len(), keep, kind);
        Some(Arc::new(top_k.ok()?) as Arc<dyn ExecutionPlan>)
    })?;

    let mut rewritten = replace_children_if_necessary(current, vec![top_k]).ok()?;
    for node in between.into_iter().rev() {
        rewritten = replace_children_if_necessary(node, vec![rewritten]).ok()?;
    }
    Some(rewritten)
}

/// Whether `key` can only take few values (a dictionary-coded symbol or char, a
/// boolean, a byte), so that a heap per group stays small: DataFusion's per-group
/// top-K accounts none of its memory, and over keys such as `(sym, time)` in an
/// order not stored it would hold nearly every row in a heap of its own (issue 48:
/// 9.6 GiB where the sort it replaces takes 0.7 GiB, within the query memory).
fn few_values(key: &dyn PhysicalExpr, schema: &arrow_schema::Schema) -> bool {
    key.data_type(schema)
        .is_ok_and(|ty| matches!(ty, DataType::Dictionary(..) | DataType::Boolean | DataType::Int8 | DataType::UInt8))
}

/// A [`RunEndsExec`] when `input` is already sorted by the partition keys and
/// then the window's order, or that order reversed (within each of its
/// partitions, which are merged in that order): the rows to keep are then the
/// ends of each run of equal keys; or, when it is sorted by two or more partition
/// keys alone, over a [`PartialSortExec`] that sorts each run in the window's order.
/// Only for `row_number()`: `rank()` also keeps the rows tied with the K-th.
fn run_ends(
    input: &Arc<dyn ExecutionPlan>,
    partition_by: &[Arc<dyn PhysicalExpr>],
    order_by: &[PhysicalSortExpr],
    keep: usize,
    kind: WindowFnKind,
) -> Option<Arc<dyn ExecutionPlan>> {
    if !matches!(kind, WindowFnKind::RowNumber) {
        return None;
    }
    let stored = input.equivalence_properties();
    // The runs need the keys grouped, in whatever direction they are stored.
    for options in [(false, false), (false, true), (true, false), (true, true)] {
        let options = SortOptions { descending: options.0, nulls_first: options.1 };
        let keys = || partition_by.iter().map(|key| PhysicalSortExpr::new(Arc::clone(key), options));
        let forward = LexOrdering::new(keys().chain(order_by.iter().cloned()))?;
        let backward = LexOrdering::new(keys().chain(order_by.iter().map(PhysicalSortExpr::reverse)))?;
        let (end, stored_order) = if stored.ordering_satisfy(forward.clone()).ok()? {
            (RunEnd::First, forward.clone())
        } else if stored.ordering_satisfy(backward.clone()).ok()? {
            (RunEnd::Last, backward)
        } else {
            continue;
        };
        let exec =
            RunEndsExec::try_new(Arc::clone(input), partition_by.to_vec(), keep, end, stored_order, forward).ok()?;
        return Some(Arc::new(exec));
    }
    // Stored grouped by two or more keys but not in the window's order within a group
    // (`PARTITION BY sym, time ORDER BY seq DESC` over a table stored by sym and time:
    // a dedup, millions of groups of a row or two): sort each run of equal keys on its
    // own, streaming, and keep its first rows. A heap per group would hold every group
    // at once (146 s and 9.6 GiB for 2.97M groups, where this holds one run). One key
    // alone is taken for the parted symbol, a few thousand groups at most, where the
    // heaps are cheaper than sorting every run.
    if partition_by.len() < 2 {
        return None;
    }
    // The keys are a set: `PARTITION BY time, sym` groups as `sym, time` does, so they
    // are taken in the order the input is stored in when it leads with them all.
    let keys = stored_keys(input, partition_by)?;
    if stored.ordering_satisfy(keys.clone()).ok()? {
        let forward = LexOrdering::new(keys.iter().cloned().chain(order_by.iter().cloned()))?;
        let runs_sorted = PartialSortExec::new(forward.clone(), Arc::clone(input), partition_by.len())
            .with_preserve_partitioning(true);
        let runs_sorted: Arc<dyn ExecutionPlan> = Arc::new(runs_sorted);
        let exec =
            RunEndsExec::try_new(runs_sorted, partition_by.to_vec(), keep, RunEnd::First, forward.clone(), forward)
                .ok()?;
        return Some(Arc::new(exec));
    }
    None
}

/// The leading sort keys of `input`'s stored order when they are `keys` in some
/// order (each once), else `None`.
fn stored_keys(input: &Arc<dyn ExecutionPlan>, keys: &[Arc<dyn PhysicalExpr>]) -> Option<LexOrdering> {
    let stored = input.output_ordering()?;
    let leading: Vec<PhysicalSortExpr> = stored.iter().take(keys.len()).cloned().collect();
    let all_keys = leading.len() == keys.len()
        && keys.iter().all(|key| leading.iter().filter(|sort| sort.expr.eq(key)).count() == 1);
    all_keys.then(|| LexOrdering::new(leading)).flatten()
}

/// `(column, K)` when `predicate` keeps the rows whose `column` is at most K
/// (K at least one) and a rank, which is never below one, passes no other way:
/// `c <= K`, `c < K + 1`, `c = 1`, or those flipped.
fn rank_limit(predicate: &Arc<dyn PhysicalExpr>) -> Option<(usize, usize)> {
    let binary = predicate.downcast_ref::<BinaryExpr>()?;
    let (column, op, value) = match (binary.left().downcast_ref::<Column>(), binary.right().downcast_ref::<Literal>()) {
        (Some(column), Some(literal)) => (column, *binary.op(), literal.value()),
        _ => {
            let literal = binary.left().downcast_ref::<Literal>()?;
            let column = binary.right().downcast_ref::<Column>()?;
            (column, binary.op().swap()?, literal.value())
        }
    };
    let n = positive_integer(value)?;
    let keep = match op {
        Operator::LtEq => n,
        Operator::Lt => n - 1,
        Operator::Eq if n == 1 => 1,
        _ => return None,
    };
    (keep >= 1).then_some((column.index(), keep))
}

/// `value` as a count when it is an integer of at least one.
fn positive_integer(value: &ScalarValue) -> Option<usize> {
    if !value.data_type().is_integer() {
        return None;
    }
    match value.cast_to(&DataType::UInt64).ok()? {
        ScalarValue::UInt64(Some(n)) if n >= 1 => usize::try_from(n).ok(),
        _ => None,
    }
}

/// Which ranking function `function` is, if it is `row_number()` or `rank()`.
fn ranking_kind(function: &Arc<dyn WindowExpr>) -> Option<WindowFnKind> {
    let standard = function.as_any().downcast_ref::<StandardWindowExpr>()?;
    let udf = standard.get_standard_func_expr().as_any().downcast_ref::<WindowUDFExpr>()?;
    match udf.fun().name() {
        "row_number" => Some(WindowFnKind::RowNumber),
        "rank" => Some(WindowFnKind::Rank),
        _ => None,
    }
}
