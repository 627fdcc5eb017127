//! The binary operators a DuckDB user types, planned as DuckDB means them (an
//! [`ExprPlanner`], run by DataFusion's SQL planner before its own rules):
//!
//! - a timespan compared (`=`, `<>`, `<`, `<=`, `>`, `>=`, `<=>`) with a string,
//!   a `TIME` or an interval compares nanoseconds: `time < '08:00'`,
//!   `time >= TIME '09:30'`, `time < INTERVAL '9 hours'`;
//! - a timespan compared with a `DATE` or `TIMESTAMP` (`time >= DATE '2026-04-01' +
//!   INTERVAL '8 hours'`) is `date + time` compared with it, where the timespan's
//!   table has a `date` (a date-partitioned table: a DuckDB user's `time` column is
//!   a timestamp, which here is split into the partition's date and a timespan);
//!   elsewhere an error that says what to write instead (a time of day and a date
//!   do not compare, as in DuckDB);
//! - a timestamp compared with a string reads it as DuckDB does, to the minute
//!   too (`date + time >= '2024-01-02 09:30'`);
//! - `date + time` and `date - time` are timestamps, and so are `date + INTERVAL
//!   '8 hours'` and `date - INTERVAL ...` (DuckDB's `DATE + INTERVAL`); `time + INTERVAL '5 minutes'`
//!   and `time - INTERVAL '5 minutes'` are timespans (as DuckDB's `TIME` plus an
//!   interval is a `TIME`);
//! - `/` on two integers divides as floats (`7 / 2` is 3.5, as in DuckDB and as
//!   q's `%`); `//` divides integers, truncating toward zero (`7 // 2` is 3,
//!   `-7 // 2` is -3), and on floats is `/`, as in DuckDB.

use arrow_schema::{DataType, TimeUnit};
use datafusion::common::{DFSchema, Result, plan_err};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, cast};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use super::timespan::{TIMESPAN, is_timespan, meets_timespan};
use crate::table::DATE_COLUMN;

/// Strata's planner of DuckDB's operator meanings (see the module documentation).
#[derive(Debug, Default)]
pub struct DuckOperators;

impl ExprPlanner for DuckOperators {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        let (Ok(left_type), Ok(right_type)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let RawBinaryExpr { op, left, right } = expr;
        let (left, op, right) = match op {
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::Spaceship => {
                let (left, right) = compared(left, &left_type, right, &right_type, schema)?;
                (left, op, right)
            }
            BinaryOperator::Plus | BinaryOperator::Minus => {
                let timestamp = |e: Expr| cast(e, DataType::Timestamp(TimeUnit::Nanosecond, None));
                let interval = |t: &DataType| matches!(t, DataType::Interval(_));
                match (&left_type, &right_type) {
                    (l, r) if is_date(l) && (is_timespan(r) || interval(r)) => (timestamp(left), op, right),
                    (l, r) if interval(l) && is_date(r) && op == BinaryOperator::Plus => (left, op, timestamp(right)),
                    (l, r) if is_timespan(l) && is_date(r) && op == BinaryOperator::Plus => {
                        (left, op, timestamp(right))
                    }
                    (l, r) if is_timespan(l) && interval(r) => (left, op, cast(right, TIMESPAN)),
                    (l, r) if interval(l) && is_timespan(r) && op == BinaryOperator::Plus => {
                        (cast(left, TIMESPAN), op, right)
                    }
                    _ => (left, op, right),
                }
            }
            BinaryOperator::Divide if left_type.is_integer() && right_type.is_integer() => {
                (cast(left, DataType::Float64), op, cast(right, DataType::Float64))
            }
            BinaryOperator::DuckIntegerDivide | BinaryOperator::MyIntegerDivide => {
                (left, BinaryOperator::Divide, right)
            }
            op => (left, op, right),
        };
        Ok(PlannerResult::Original(RawBinaryExpr { op, left, right }))
    }
}

fn is_date(t: &DataType) -> bool {
    matches!(t, DataType::Date32 | DataType::Date64)
}

/// Whether a value of type `t` is a point in time a timespan meets as `date + time`.
pub(super) fn is_date_or_timestamp(t: &DataType) -> bool {
    is_date(t) || matches!(t, DataType::Timestamp(..))
}

/// `date + span`, a timestamp, where `span` is a column of a table with a `date`
/// column (a date-partitioned table): what a DuckDB user's timestamp `time` is
/// here. `None` where there is no such column.
pub(super) fn on_its_day(span: &Expr, schema: &DFSchema) -> Option<Expr> {
    let Expr::Column(column) = span else { return None };
    let (table, field) = schema.qualified_field_with_name(column.relation.as_ref(), DATE_COLUMN).ok()?;
    if field.data_type() != &DataType::Date32 {
        return None;
    }
    let date = Expr::Column(datafusion::common::Column::new(table.cloned(), DATE_COLUMN));
    Some(cast(date, DataType::Timestamp(TimeUnit::Nanosecond, None)) + cast(span.clone(), TIMESPAN))
}

/// The two sides of a comparison, the side that is not a timespan made one when the
/// other is.
pub(super) fn compared(
    left: Expr,
    left_type: &DataType,
    right: Expr,
    right_type: &DataType,
    schema: &DFSchema,
) -> Result<(Expr, Expr)> {
    let text = |e: &Expr| matches!(e, Expr::Literal(v, _) if matches!(v.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View));
    if matches!(left_type, DataType::Timestamp(..)) && text(&right) {
        // A cast the analyzer reads (`'2024-01-02 09:30'` to the minute included).
        Ok((left, cast(right, left_type.clone())))
    } else if matches!(right_type, DataType::Timestamp(..)) && text(&left) {
        Ok((cast(left, right_type.clone()), right))
    } else if is_timespan(left_type)
        && is_date_or_timestamp(right_type)
        && let Some(stamp) = on_its_day(&left, schema)
    {
        Ok((stamp, right))
    } else if is_timespan(right_type)
        && is_date_or_timestamp(left_type)
        && let Some(stamp) = on_its_day(&right, schema)
    {
        Ok((left, stamp))
    } else if is_timespan(left_type) && !is_timespan(right_type) {
        let right = meeting(right, right_type, &left)?;
        Ok((left, right))
    } else if is_timespan(right_type) && !is_timespan(left_type) {
        Ok((meeting(left, left_type, &right)?, right))
    } else {
        Ok((left, right))
    }
}

/// `other` (of type `t`) made a timespan to meet the timespan `span`: a cast to
/// one, which [`super::analyzer`] resolves (a string parsed, a `TIME` as
/// nanoseconds since midnight) keeping the name as written (`time < '08:00'`, not
/// `time < 28800000000000`). An error for a date or timestamp; unchanged where it
/// has no timespan meaning (DataFusion then reports the mismatch).
pub(super) fn meeting(other: Expr, t: &DataType, span: &Expr) -> Result<Expr> {
    if matches!(other, Expr::Placeholder(_)) {
        return Ok(other);
    }
    if is_date(t) || matches!(t, DataType::Timestamp(..)) {
        let what = if is_date(t) { "a DATE" } else { "a TIMESTAMP" };
        return plan_err!(
            "cannot compare the timespan {span} with {what} ({other}): a timespan is a time of day, as DuckDB's TIME, \
             and its table has no `date` (it is not date-partitioned) to put it on a day; compare a TIMESTAMP such \
             as `DATE '2026-04-01' + {span}` with it, or compare {span} with a time such as '09:30'"
        );
    }
    Ok(if meets_timespan(t) { cast(other, TIMESPAN) } else { other })
}
