//! Reading a sorted table in order instead of merging its partitions.
//!
//! A scan splits a table into partitions that are consecutive stretches of its
//! rows, so that threads can read them at once. An operator that needs the whole
//! table as one stream in its stored order (a window per symbol, the ends of each
//! symbol's run) gets a `SortPreservingMergeExec` over those partitions from
//! DataFusion, which compares every row's keys (through the row format, for
//! dictionary symbols) to interleave streams that never interleave: every row of
//! partition k comes before every row of partition k+1. [`ReadInOrder`] replaces
//! such a merge by the scan in one partition that reads the stretches one after
//! another (with any filters and projections between them kept, and any
//! repartition between them dropped), which gives the same rows in the same order.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;

use super::scan::StrataScanExec;

/// The physical optimizer rule; it runs last, once sorts and merges are placed.
#[derive(Debug, Default)]
pub(crate) struct ReadInOrder;

impl PhysicalOptimizerRule for ReadInOrder {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(match read_in_order(&node) {
                Some(read) => Transformed::yes(read),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "StrataReadInOrder"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// What replaces `node` when it merges the partitions of a sorted Strata scan
/// (through filters and projections, which keep each partition's order, and
/// repartitions, which are dropped).
fn read_in_order(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let merge = node.downcast_ref::<SortPreservingMergeExec>()?;
    if merge.fetch().is_some() {
        return None;
    }
    let mut between = Vec::new();
    let mut current = Arc::clone(merge.input());
    let scan = loop {
        if let Some(scan) = current.downcast_ref::<StrataScanExec>() {
            break scan;
        }
        let child = Arc::clone(current.children().first()?);
        // A repartition only spreads each partition's rows (in order, under a
        // merge) over more partitions: one partition needs none.
        if current.downcast_ref::<RepartitionExec>().is_none() {
            if current.downcast_ref::<FilterExec>().is_none() && current.downcast_ref::<ProjectionExec>().is_none() {
                return None;
            }
            between.push(current);
        }
        current = child;
    };
    let mut read: Arc<dyn ExecutionPlan> = Arc::new(scan.in_one_partition());
    for node in between.into_iter().rev() {
        read = replace_children_if_necessary(node, vec![read]).ok()?;
    }
    Some(read)
}
