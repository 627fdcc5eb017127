//! Timespans where DataFusion's type coercion cannot place them: an analyzer rule
//! run before DataFusion's own (`type_coercion`), rewriting
//!
//! - `time BETWEEN a AND b` and `time [NOT] IN (a, b, ...)` whose bounds or items
//!   are strings, `TIME`s or intervals: each made a timespan, as comparisons are
//!   (see [`super::planner`]); whose bounds are dates or timestamps: `date + time`
//!   in their place, in a table with a `date`;
//! - `CAST(time AS TIME)` / `time::TIME`: the time of day, an error outside a day;
//! - `'infinity'::TIMESTAMP`, `TIMESTAMP '-infinity'` (and `DATE`): kdb+'s
//!   infinities `0Wp` / `-0Wp`, the largest and smallest non-null values;
//! - `TIMESTAMP '2024-01-02 09:30'` and a timestamp compared with, or between,
//!   such strings: read to the minute, as DuckDB reads them;
//! - `CAST(x AS TIMESPAN)` of a `TIME`, a string or an interval, and
//!   `CAST(TIME '09:30' AS INTERVAL)`: through nanoseconds since midnight;
//! - a window ordered by a timespan with a `RANGE` frame (which an `ORDER BY`
//!   without a frame has): ordered by the timespan as a timestamp (nanoseconds
//!   since the epoch, so the same order), whose frames DataFusion runs with
//!   interval bounds such as `INTERVAL '5 minutes' PRECEDING`.
//!
//! Each rewritten expression keeps its name, so result columns are named as
//! written.

use arrow_schema::{DataType, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Between, Cast, InList, TryCast, WindowFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, cast, lit};
use datafusion::optimizer::AnalyzerRule;

use super::planner::{is_date_or_timestamp, meeting, on_its_day};
use super::timespan::{TIMESPAN, TimeOfDay, TimespanOrder, as_timespan, is_timespan, timestamp_to_the_minute};

/// The rule (see the module documentation).
#[derive(Debug, Default)]
pub struct TimespanRule;

impl AnalyzerRule for TimespanRule {
    fn name(&self) -> &str {
        "strata_timespans"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let mut schema = merge_schema(&plan.inputs());
            if let LogicalPlan::TableScan(scan) = &plan {
                schema.merge(&DFSchema::try_from_qualified_schema(scan.table_name.clone(), &scan.source.schema())?);
            }
            let names = NamePreserver::new(&plan);
            let rewritten = plan.map_expressions(|expr| {
                let name = names.save(&expr);
                let out = expr.transform_up(|e| rewrite(e, &schema))?;
                Ok(if out.transformed { out.update_data(|e| name.restore(e)) } else { out })
            })?;
            if rewritten.transformed { rewritten.map_data(|p| p.recompute_schema()) } else { Ok(rewritten) }
        })
        .map(|t| t.data)
    }
}

/// One expression rewritten, its children already done. An expression whose type
/// cannot be read here (an outer reference) stays as it is.
fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let type_of = |e: &Expr| e.get_type(schema).ok();
    let point_in_time = |e: &Expr| type_of(e).is_some_and(|t| is_date_or_timestamp(&t));
    match expr {
        Expr::Between(Between { expr, negated, low, high })
            if type_of(&expr).is_some_and(|t| is_timespan(&t))
                && (point_in_time(&low) || point_in_time(&high))
                && on_its_day(&expr, schema).is_some() =>
        {
            let stamp = on_its_day(&expr, schema).expect("checked");
            Ok(Transformed::yes(Expr::Between(Between::new(Box::new(stamp), negated, low, high))))
        }
        Expr::InList(InList { expr, list, negated })
            if type_of(&expr).is_some_and(|t| is_timespan(&t))
                && list.iter().any(point_in_time)
                && on_its_day(&expr, schema).is_some() =>
        {
            let stamp = on_its_day(&expr, schema).expect("checked");
            Ok(Transformed::yes(Expr::InList(InList::new(Box::new(stamp), list, negated))))
        }
        Expr::Between(Between { expr, negated, low, high })
            if type_of(&expr).is_some_and(|t| is_timespan(&t))
                && (!type_of(&low).is_some_and(|t| is_timespan(&t))
                    || !type_of(&high).is_some_and(|t| is_timespan(&t))) =>
        {
            let low = met(*low, &expr, schema)?;
            let high = met(*high, &expr, schema)?;
            Ok(Transformed::yes(Expr::Between(Between::new(expr, negated, Box::new(low), Box::new(high)))))
        }
        Expr::Between(Between { expr, negated, low, high })
            if type_of(&expr).is_some_and(|t| matches!(t, DataType::Timestamp(..)))
                && (minute_text(&low).is_some() || minute_text(&high).is_some()) =>
        {
            let t = type_of(&expr).expect("typed");
            let bound = |b: Expr| match minute_text(&b) {
                Some(_) => rewrite(cast(b, t.clone()), schema).map(|done| done.data),
                None => Ok(b),
            };
            let (low, high) = (bound(*low)?, bound(*high)?);
            Ok(Transformed::yes(Expr::Between(Between::new(expr, negated, Box::new(low), Box::new(high)))))
        }
        Expr::InList(InList { expr, list, negated })
            if type_of(&expr).is_some_and(|t| is_timespan(&t))
                && list.iter().any(|e| !type_of(e).is_some_and(|t| is_timespan(&t))) =>
        {
            let list = list.into_iter().map(|e| met(e, &expr, schema)).collect::<Result<Vec<_>>>()?;
            Ok(Transformed::yes(Expr::InList(InList::new(expr, list, negated))))
        }
        Expr::Cast(Cast { expr, field }) => match converted(*expr, field.data_type(), schema)? {
            Ok(done) => Ok(Transformed::yes(done)),
            Err(expr) => Ok(Transformed::no(Expr::Cast(Cast { expr: Box::new(expr), field }))),
        },
        Expr::TryCast(TryCast { expr, field }) => match converted(*expr, field.data_type(), schema)? {
            Ok(done) => Ok(Transformed::yes(done)),
            Err(expr) => Ok(Transformed::no(Expr::TryCast(TryCast { expr: Box::new(expr), field }))),
        },
        Expr::WindowFunction(window) => ranged_by_timestamp(*window, schema),
        other => Ok(Transformed::no(other)),
    }
}

/// `value` made a timespan to meet `span`, where it has a type.
fn met(value: Expr, span: &Expr, schema: &DFSchema) -> Result<Expr> {
    match value.get_type(schema) {
        Ok(t) => rewrite(meeting(value, &t, span)?, schema).map(|done| done.data),
        Err(_) => Ok(value),
    }
}

/// The conversion of `expr` to `to` where one side is a timespan and Arrow has no
/// cast; `Err(expr)` back where Arrow's own cast is the one.
fn converted(expr: Expr, to: &DataType, schema: &DFSchema) -> Result<Result<Expr, Expr>> {
    let Ok(from) = expr.get_type(schema) else { return Ok(Err(expr)) };
    let is_time = |t: &DataType| matches!(t, DataType::Time32(_) | DataType::Time64(_));
    if let (Some(text), DataType::Timestamp(..)) = (minute_text(&expr), to) {
        return Ok(Ok(cast(lit(text), to.clone())));
    }
    if let Some(infinite) = infinity(&expr, to) {
        return Ok(Ok(lit(infinite)));
    }
    Ok(match (&from, to) {
        (f, t) if is_timespan(f) && is_time(t) => Ok(TimeOfDay::call(cast(expr, TIMESPAN), t)),
        (f, t) if is_timespan(t) && !is_timespan(f) => match as_timespan(expr.clone(), &from)? {
            Some(span) => Ok(cast(span, t.clone())),
            None => Err(expr),
        },
        (f, DataType::Interval(_)) if is_time(f) => match as_timespan(expr.clone(), &from)? {
            Some(span) => Ok(cast(span, to.clone())),
            None => Err(expr),
        },
        _ => Err(expr),
    })
}

/// `'infinity'` or `'-infinity'` cast to a timestamp or date, as
/// DuckDB writes them: kdb+'s infinities (`0Wp`, `-0Wp`, `0Wd`, `-0Wd`), the
/// largest and smallest values that are not its null (the type's minimum).
fn infinity(expr: &Expr, to: &DataType) -> Option<ScalarValue> {
    let Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)), _) =
        expr
    else {
        return None;
    };
    let positive = match s.trim().to_ascii_lowercase().as_str() {
        "infinity" => true,
        "-infinity" => false,
        _ => return None,
    };
    let wide = if positive { i64::MAX } else { i64::MIN + 1 };
    Some(match to {
        DataType::Timestamp(unit, zone) => match unit {
            TimeUnit::Second => ScalarValue::TimestampSecond(Some(wide), zone.clone()),
            TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(wide), zone.clone()),
            TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(wide), zone.clone()),
            TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(wide), zone.clone()),
        },
        DataType::Date32 => ScalarValue::Date32(Some(if positive { i32::MAX } else { i32::MIN + 1 })),
        _ => return None,
    })
}

/// A string constant holding a timestamp to the minute, with its seconds added.
fn minute_text(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)),
            _,
        ) => timestamp_to_the_minute(s),
        _ => None,
    }
}

/// A window ordered by a timespan, ordered by it as a timestamp instead, which
/// DataFusion runs `RANGE` frames over. Every such window is, whatever its frame:
/// the planner has already grouped windows with equal ORDER BY into one node,
/// which must keep one ORDER BY.
fn ranged_by_timestamp(mut window: WindowFunction, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let by_timespan =
        window.params.order_by.first().and_then(|s| s.expr.get_type(schema).ok()).is_some_and(|t| is_timespan(&t));
    if !by_timespan {
        return Ok(Transformed::no(Expr::WindowFunction(Box::new(window))));
    }
    let first = &mut window.params.order_by[0];
    first.expr = TimespanOrder::call(cast(first.expr.clone(), TIMESPAN));
    Ok(Transformed::yes(Expr::WindowFunction(Box::new(window))))
}
