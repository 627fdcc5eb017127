//! SQL as a DuckDB user types it, over Strata's types. Strata's time columns are
//! kdb+ timespans (Arrow `Duration(ns)`); DuckDB's users hold times of day as
//! `TIME` or `INTERVAL`, and write:
//!
//! | SQL | meaning here |
//! |---|---|
//! | `time < '08:00'`, `time BETWEEN '09:30' AND '16:00'`, `time IN ('09:30', ...)` | the string read as a time of day (`'09:30:00.5'`, kdb+'s `'0D09:30'`) or an interval (`'9 hours'`) |
//! | `time < TIME '09:30'`, `time < INTERVAL '9 hours'` | nanoseconds compared |
//! | `time >= TIMESTAMP '2026-04-01 08:00'`, `time < DATE '2026-04-01' + INTERVAL '9 hours'`, `time BETWEEN <timestamps>` | `date + time` compared, in a date-partitioned table (a DuckDB user's `time` is a timestamp; here it is the partition's date and a timespan); elsewhere an error saying what to write |
//! | `DATE '2026-04-01' + INTERVAL '8 hours'` | a `TIMESTAMP`, as in DuckDB |
//! | `'infinity'::TIMESTAMP`, `TIMESTAMP '-infinity'`, `DATE 'infinity'` | kdb+'s `0Wp`, `-0Wp`, `0Wd`: the largest and smallest non-null values |
//! | `date + time`, `date - time` | a `TIMESTAMP` |
//! | `time::TIME`, `CAST(time AS TIME)` | the time of day; an error outside `00:00`-`24:00` |
//! | `CAST(time AS INTERVAL)` | an interval (Arrow's cast) |
//! | `CAST(x AS TIMESPAN)` | a `TIME`, string or interval as a timespan |
//! | `OVER (ORDER BY time RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW)` | a time-ranged window |
//! | `rowid` | each row's number in its table as stored (date partitions in order), from 0, not listed by `*` |
//! | `i` | kdb+'s row number, within each date partition, from 0, not listed by `*` |
//! | `max(COLUMNS(*))`, `COLUMNS(* EXCLUDE (sym))`, `COLUMNS(* REPLACE (x + 1 AS x))`, `COLUMNS('bid\|ask')` | the expression once per column, named as it (see [`columns`]) |
//! | `SELECT * RENAME (price AS p)` | the star's columns, `price` named `p` (in any SELECT) |
//! | `FROM t PIVOT (sum(size) FOR ex IN ('N', 'Q'))`, `IN (ANY)`, `t UNPIVOT (v FOR k IN (bid, ask))` | grouped filtered aggregates; a union |
//! | `[WITH ...] PIVOT t ON ex [IN (...)] USING sum(size) [GROUP BY sym]`, `UNPIVOT t ON bid, ask INTO NAME k VALUE v` | DuckDB's statement forms, as the FROM-clause forms |
//! | `SELECT count(*), sum(price)` | columns named `count_star()` and `sum(price)`, as DuckDB names them (DataFusion: `count(*)`, `sum(t.price)`) |
//! | `7 / 2`, `7 // 2` | 3.5 (`/` on integers is a float division, as in DuckDB and q's `%`), 3 (integer division, truncating) |
//!
//! [`install`] puts the pieces into a session: [`planner::DuckOperators`] for
//! operators, [`analyzer::TimespanRule`] for `BETWEEN`, `IN`, casts and windows,
//! and [`TimespanType`] for the type name `TIMESPAN`.

mod analyzer;
pub(crate) mod columns;
pub mod depth;
pub(crate) mod hidden;
pub(crate) mod names;
pub(crate) mod null_treatment;
pub(crate) mod pivot;
pub(crate) mod pivot_statement;
mod planner;
pub(crate) mod rename;
mod timespan;

use std::sync::Arc;

use arrow_schema::DataType;
use datafusion::common::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::optimizer::Analyzer;
use datafusion::sql::sqlparser::ast;

pub use analyzer::TimespanRule;
pub use planner::DuckOperators;
pub use timespan::{TIMESPAN, TimeOfDay, parse_timespan};

/// The SQL type name `TIMESPAN` (kdb+'s name) as Arrow `Duration(ns)`, for
/// `CAST(TIME '09:30' AS TIMESPAN)`.
#[derive(Debug, Default)]
pub struct TimespanType;

impl TypePlanner for TimespanType {
    #[allow(deprecated)]
    fn plan_type(&self, sql_type: &ast::DataType) -> Result<Option<DataType>> {
        Ok(match sql_type {
            ast::DataType::Custom(name, modifiers)
                if modifiers.is_empty()
                    && name.0.len() == 1
                    && name.0[0].as_ident().is_some_and(|i| i.value.eq_ignore_ascii_case("timespan")) =>
            {
                Some(TIMESPAN)
            }
            _ => None,
        })
    }
}

/// `builder` with the dialect's planners and analyzer rule, ahead of DataFusion's
/// own (so call it before `with_default_features`).
pub fn install(builder: SessionStateBuilder) -> SessionStateBuilder {
    let mut rules = Analyzer::new().rules;
    rules.insert(0, Arc::new(TimespanRule));
    builder
        .with_expr_planners(vec![Arc::new(DuckOperators)])
        .with_type_planner(Arc::new(TimespanType))
        .with_analyzer_rules(rules)
}
