//! Time-series functions kdb+ users reach for, as SQL functions:
//!
//! | SQL | q | what |
//! |---|---|---|
//! | `wavg(w, x)` | `w wavg x` | weighted average (weights first, as in q) |
//! | `weighted_avg(x, w)` | `w wavg x` | DuckDB's name and order (values first) for the same |
//! | `wsum(w, x)` | `w wsum x` | weighted sum |
//! | `xbar(b, x)` | `b xbar x` | `x` rounded down to a multiple of `b` (numbers, timestamps, timespans) |
//! | `time_bucket(interval, ts)` | `xbar` | DuckDB's name for the same |
//! | `first(x)`, `last(x)` | `first`, `last` | `first_value` / `last_value`; add `ORDER BY time` for time order (an integer compare per row, see [`FirstLast`]) |
//! | `med(x)` | `med` | median |
//! | `sdev(x)`, `dev(x)` | `sdev`, `dev` | sample and population standard deviation |
//! | `cor(x, y)` | `cor` | correlation |
//!
//! `median`, `stddev`, `corr`, `first_value`, `last_value` keep their usual names.
//! `sum` is DataFusion's, except that it adds 8-, 16- and 32-bit integer columns
//! as stored rather than casting them first ([`NarrowSum`]); grouped variances and
//! deviations and correlations take each run of a group's rows at once
//! ([`RunStatistic`]).

mod bounded_output;
mod bucket;
mod first_last;
mod narrow_sum;
mod run_statistics;
mod weighted;

use std::sync::Arc;

use datafusion::functions_aggregate::median;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

pub use bounded_output::bound_outputs;
pub use bucket::Bucket;
pub use first_last::FirstLast;
pub use narrow_sum::NarrowSum;
pub use run_statistics::RunStatistic;
pub use weighted::{Weighted, WeightedAggregate};

/// Whether row `row` passes an aggregate's FILTER clause (true, not false or
/// null), for grouped accumulators.
fn passes_filter(filter: Option<&arrow_array::BooleanArray>, row: usize) -> bool {
    use arrow_array::Array;
    filter.is_none_or(|f| f.is_valid(row) && f.value(row))
}

/// The runs of equal group indices in `groups`, as (group, rows): a table stored
/// by symbol and time feeds a grouped aggregate each group's rows together, and
/// an accumulator that takes a run at once adds to its group once per run.
fn group_runs(groups: &[usize]) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        let &group = groups.get(start)?;
        let end = start + groups[start..].iter().take_while(|&&g| g == group).count();
        let run = (group, start..end);
        start = end;
        Some(run)
    })
}

/// Registers Strata's functions and q's names for DataFusion's own.
pub fn register(ctx: &SessionContext) -> datafusion::common::Result<()> {
    ctx.register_udaf(AggregateUDF::new_from_impl(NarrowSum::new()));
    ctx.register_udaf(AggregateUDF::new_from_impl(WeightedAggregate::new(Weighted::Average)));
    ctx.register_udaf(AggregateUDF::new_from_impl(WeightedAggregate::new(Weighted::Sum)));
    ctx.register_udaf(AggregateUDF::new_from_impl(WeightedAggregate::weighted_avg()));
    ctx.register_udf(ScalarUDF::new_from_impl(Bucket::new("xbar")));
    ctx.register_udf(ScalarUDF::new_from_impl(Bucket::new("time_bucket")));
    let [var, var_pop, stddev, stddev_pop, corr] =
        RunStatistic::all().map(|v| Arc::new(AggregateUDF::new_from_impl(v)));
    ctx.register_udaf(var.as_ref().clone());
    ctx.register_udaf(var_pop.as_ref().clone());
    let aliases: [(Arc<AggregateUDF>, &str); 6] = [
        (Arc::new(AggregateUDF::new_from_impl(FirstLast::new(true))), "first"),
        (Arc::new(AggregateUDF::new_from_impl(FirstLast::new(false))), "last"),
        (median::median_udaf(), "med"),
        (stddev, "sdev"),
        (stddev_pop, "dev"),
        (corr, "cor"),
    ];
    for (udaf, alias) in aliases {
        let aliased = udaf.as_ref().clone().with_aliases([alias]);
        ctx.register_udaf(aliased);
    }
    Ok(())
}
