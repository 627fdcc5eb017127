//! Small queries planned for one partition.
//!
//! DataFusion plans every query for `target_partitions` threads: a round-robin
//! split above each scan, partial and final aggregates joined by a hash
//! repartition, merges above. A split moves whole batches, so a query whose
//! scans read at most one batch of rows in all gains nothing from it and pays
//! for it: tasks spawned on other threads, channel hand-offs, buffers sized for a
//! full batch at every repartition. [`session_for`] gives such a query a session
//! planning it for one partition; every other query is planned as before.

use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;

use crate::table::StrataTable;

/// A copy of `session` planning for one partition when every table `plan` scans
/// is a Strata table and together they read at most one batch of rows; `None`
/// when the query keeps `session` (large, or reading a table whose size is not
/// known, or already planned for one partition).
pub(crate) fn session_for(plan: &LogicalPlan, session: &dyn Session) -> Result<Option<SessionState>> {
    let config = session.config();
    if config.target_partitions() <= 1 {
        return Ok(None);
    }
    let Some(state) = session.as_any().downcast_ref::<SessionState>() else { return Ok(None) };
    if !reads_at_most(plan, config.batch_size())? {
        return Ok(None);
    }
    let mut state = state.clone();
    state.config_mut().options_mut().execution.target_partitions = 1;
    Ok(Some(state))
}

/// Whether the scans of `plan` (its subqueries' too) read at most `limit` rows
/// in all, every one of them known to.
fn reads_at_most(plan: &LogicalPlan, limit: usize) -> Result<bool> {
    let mut left = Some(limit);
    plan.apply_with_subqueries(|node| {
        let LogicalPlan::TableScan(scan) = node else { return Ok(TreeNodeRecursion::Continue) };
        // A source other than a table provider is of unknown size, as is any
        // provider but Strata's.
        let provider = source_as_provider(&scan.source).ok();
        left = match (left, provider.as_ref().and_then(|p| p.downcast_ref::<StrataTable>())) {
            (Some(budget), Some(table)) => table.rows_at_most(&scan.filters, budget)?.map(|rows| budget - rows),
            _ => None,
        };
        Ok(if left.is_some() { TreeNodeRecursion::Continue } else { TreeNodeRecursion::Stop })
    })?;
    Ok(left.is_some())
}
