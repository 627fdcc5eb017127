//! Rolling and cumulative windows per symbol in one pass over the stored order.
//!
//! ```sql
//! SELECT sym, time, avg(mid) OVER (PARTITION BY sym ORDER BY time
//!                                  RANGE BETWEEN INTERVAL '1 minute' PRECEDING AND CURRENT ROW)
//! FROM quote
//! ```
//!
//! DataFusion computes such a window by hashing every row to a thread by its
//! symbol while keeping each thread's rows in order (a merge per thread), then
//! finding each row's frame bounds with a comparison of typed scalar values per
//! row. A table stored sorted by `(sym, time)` already gives every symbol's rows
//! in time order, so [`RollingWindows`] puts a [`RollingWindowExec`] in place of
//! the window node: it reads the sorted rows once, in one stream, and slides each
//! frame with integer comparisons (see `aggregate` for the sliding sums and
//! extremes).
//!
//! It takes a window node when the input is already in the window's order
//! (partition keys in any direction, then the ORDER BY as written) and every
//! function in it is one of
//! - `sum`, `avg`, `count`, `min`, `max` (no DISTINCT, FILTER or IGNORE NULLS)
//!   over `ROWS` or `RANGE` frames from `UNBOUNDED PRECEDING`, `n PRECEDING` or
//!   `CURRENT ROW` to `CURRENT ROW`, with `RANGE` offsets on one integer,
//!   date, timestamp or timespan order column (see `frame`);
//! - `lag(x [, n [, default]])` and `row_number()`.
//!
//! Anything else stays with DataFusion, as does any window whose input would
//! have to be sorted first.

use std::sync::Arc;

use arrow_schema::SortOptions;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::windows::BoundedWindowAggExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use exec::RollingWindowExec;
pub(crate) use frame::order_as_integers;

mod aggregate;
mod exec;
mod frame;
mod function;

/// The physical optimizer rule; it runs before DataFusion adds the sorts and
/// repartitions a window needs, so the rolling operator asks for its own.
#[derive(Debug, Default)]
pub(crate) struct RollingWindows;

impl PhysicalOptimizerRule for RollingWindows {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            Ok(match rolling_in_place_of(&node) {
                Some(rolling) => Transformed::yes(rolling),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "StrataRollingWindows"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The rolling operator in place of `node`, when it is a window node the
/// operator computes over input already in the window's order.
fn rolling_in_place_of(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let window = node.downcast_ref::<BoundedWindowAggExec>()?;
    let first = window.window_expr().first()?;
    let (partition_by, order_by) = (first.partition_by(), first.order_by());
    let stored = window.input().equivalence_properties();
    // The partitions need their rows together, in whatever direction the keys are stored.
    for (descending, nulls_first) in [(false, false), (false, true), (true, false), (true, true)] {
        let options = SortOptions { descending, nulls_first };
        let keys = partition_by.iter().map(|key| PhysicalSortExpr::new(Arc::clone(key), options));
        let order: Vec<PhysicalSortExpr> = keys.chain(order_by.iter().cloned()).collect();
        let Some(order) = LexOrdering::new(order) else {
            // No keys and no order: one partition, in any order.
            return Some(Arc::new(RollingWindowExec::try_new(Arc::clone(node), None)?));
        };
        if stored.ordering_satisfy(order.clone()).ok()? {
            return Some(Arc::new(RollingWindowExec::try_new(Arc::clone(node), Some(order))?));
        }
        if partition_by.is_empty() {
            break;
        }
    }
    None
}
