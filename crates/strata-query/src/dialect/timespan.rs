//! Timespans (kdb+'s time columns, Arrow `Duration(ns)`) against the time values
//! a DuckDB user writes: `'09:30'`, `TIME '09:30:00'`, `INTERVAL '9 hours'`.
//!
//! [`as_timespan`] turns such a value into a `Duration(ns)` expression, so that a
//! comparison, `BETWEEN` or `IN` between a timespan and it compares nanoseconds.
//! [`TimeOfDay`] is the other way: a timespan as a `TIME`, refusing values that are
//! not a time of day.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::DurationNanosecondType;
use arrow_array::{Array, ArrayRef, PrimitiveArray, Time64NanosecondArray, TimestampNanosecondArray};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use datafusion::arrow::compute::kernels::cast_utils::parse_interval_month_day_nano;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::sort_properties::ExprProperties;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility, cast as cast_expr, lit,
};

/// Nanoseconds in a day: a `TIME` is below this.
const DAY_NANOS: i64 = 86_400_000_000_000;

/// Whether `t` is a timespan (a duration of any unit).
pub fn is_timespan(t: &DataType) -> bool {
    matches!(t, DataType::Duration(_))
}

/// The timespan type Strata's time columns have.
pub const TIMESPAN: DataType = DataType::Duration(TimeUnit::Nanosecond);

/// `text` as nanoseconds: a time of day or kdb+ timespan (`09:30`, `09:30:00`,
/// `09:30:00.123456789`, `-01:00`, `1D02:00:00`), or else an interval
/// (`9 hours`, `5 minutes 3 seconds`) without months, which have no fixed length.
pub fn parse_timespan(text: &str) -> Option<i64> {
    let s = text.trim();
    clock(s).or_else(|| {
        let i = parse_interval_month_day_nano(s).ok()?;
        (i.months == 0).then(|| i.days as i64 * DAY_NANOS + i.nanoseconds)
    })
}

/// `[-][dD]hh:mm[:ss[.fffffffff]]` as nanoseconds.
fn clock(s: &str) -> Option<i64> {
    let (sign, s) = match s.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, s),
    };
    let (days, s) = match s.split_once('D') {
        Some((d, rest)) => (digits(d)?, rest),
        None => (0, s),
    };
    let mut parts = s.split(':');
    let hours = digits(parts.next()?)?;
    let minutes = digits(parts.next()?)?;
    let (seconds, fraction) = match parts.next() {
        Some(sec) => match sec.split_once('.') {
            Some((whole, frac)) if !frac.is_empty() && frac.len() <= 9 => {
                (digits(whole)?, digits(frac)? * 10i64.pow(9 - frac.len() as u32))
            }
            Some(_) => return None,
            None => (digits(sec)?, 0),
        },
        None => (0, 0),
    };
    if parts.next().is_some() || minutes >= 60 || seconds >= 60 {
        return None;
    }
    let total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
    Some(sign * (total.checked_mul(1_000_000_000)? + fraction))
}

/// A run of ASCII digits (at most 18, so it fits an `i64`).
fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A timestamp written to the minute (`2024-01-02 09:30`, which DuckDB reads and
/// Arrow's parser does not) with its seconds added; `None` for any other text.
pub fn timestamp_to_the_minute(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let digits_at = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    let shaped = b.len() == 16
        && digits_at(0..4)
        && b[4] == b'-'
        && digits_at(5..7)
        && b[7] == b'-'
        && digits_at(8..10)
        && (b[10] == b' ' || b[10] == b'T')
        && digits_at(11..13)
        && b[13] == b':'
        && digits_at(14..16);
    shaped.then(|| format!("{text}:00"))
}

/// `expr` (of type `from`) as a `Duration(ns)` expression, to meet a timespan:
/// a string, a `TIME`, an interval or a duration. `None` for other types, which
/// have no meaning as a timespan. An error for a string or interval constant that
/// is not one (`'9:75'`, `INTERVAL '1 month'`).
pub fn as_timespan(expr: Expr, from: &DataType) -> Result<Option<Expr>> {
    if let Expr::Literal(value, _) = &expr {
        let nanos = match value {
            v if v.is_null() => return Ok(Some(lit(ScalarValue::DurationNanosecond(None)))),
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
                match parse_timespan(s) {
                    Some(n) => n,
                    None => {
                        return plan_err!(
                            "'{s}' is not a timespan: write a time of day ('09:30', '09:30:00.5') or an interval \
                             ('9 hours', '5 minutes')"
                        );
                    }
                }
            }
            ScalarValue::IntervalMonthDayNano(Some(i)) => {
                if i.months != 0 {
                    return plan_err!("an interval of months has no fixed length, so it cannot meet a timespan");
                }
                i.days as i64 * DAY_NANOS + i.nanoseconds
            }
            ScalarValue::Time64Nanosecond(Some(n)) => *n,
            _ => return Ok(cast_column(expr, from)),
        };
        return Ok(Some(lit(ScalarValue::DurationNanosecond(Some(nanos)))));
    }
    Ok(cast_column(expr, from))
}

/// The cast of a non-constant `expr` of type `from` to a timespan, where there is one.
fn cast_column(expr: Expr, from: &DataType) -> Option<Expr> {
    let nanos_since_midnight =
        |e: Expr| cast_expr(cast_expr(e, DataType::Time64(TimeUnit::Nanosecond)), DataType::Int64);
    match from {
        DataType::Duration(TimeUnit::Nanosecond) => Some(expr),
        DataType::Duration(_) | DataType::Interval(IntervalUnit::MonthDayNano) => Some(cast_expr(expr, TIMESPAN)),
        DataType::Interval(_) => {
            Some(cast_expr(cast_expr(expr, DataType::Interval(IntervalUnit::MonthDayNano)), TIMESPAN))
        }
        DataType::Time32(_) | DataType::Time64(_) | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Some(cast_expr(nanos_since_midnight(expr), TIMESPAN))
        }
        DataType::Null => Some(cast_expr(expr, TIMESPAN)),
        _ => None,
    }
}

/// Whether a value of type `t` has a meaning as a timespan ([`as_timespan`] makes
/// it one).
pub fn meets_timespan(t: &DataType) -> bool {
    cast_column(Expr::Literal(ScalarValue::Null, None), t).is_some()
}

/// Runs `f` on a one-argument function's timespans, as an array, and gives back
/// its answer as a scalar when the argument was one.
fn map_timespans(
    args: &ScalarFunctionArgs,
    f: impl FnOnce(&PrimitiveArray<DurationNanosecondType>) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let spans = args.args[0].to_array(args.number_rows)?;
    let answer = f(spans.as_primitive::<DurationNanosecondType>())?;
    Ok(match args.args[0] {
        ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&answer, 0)?),
        ColumnarValue::Array(_) => ColumnarValue::Array(answer),
    })
}

/// `timespan_as_time(t)`: a timespan as a `TIME` (nanoseconds), what
/// `CAST(t AS TIME)` runs. A timespan outside `00:00` to `24:00` is an error, not a
/// wrapped or invented time.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimeOfDay {
    signature: Signature,
}

impl TimeOfDay {
    /// The function, as a UDF.
    pub fn udf() -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(TimeOfDay {
            signature: Signature::exact(vec![TIMESPAN], Volatility::Immutable),
        }))
    }

    /// `expr` (a timespan) as a `TIME` of `to`'s precision.
    pub fn call(expr: Expr, to: &DataType) -> Expr {
        let time = TimeOfDay::udf().call(vec![expr]);
        if to == &DataType::Time64(TimeUnit::Nanosecond) { time } else { cast_expr(time, to.clone()) }
    }
}

impl ScalarUDFImpl for TimeOfDay {
    fn name(&self) -> &str {
        "timespan_as_time"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Time64(TimeUnit::Nanosecond))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_timespans(&args, |spans| {
            if let Some(bad) = spans.iter().flatten().find(|n| !(0..DAY_NANOS).contains(n)) {
                return exec_err!(
                    "timespan {} is not a time of day (TIME holds 00:00:00 to 23:59:59.999999999); cast it to \
                     INTERVAL instead",
                    crate::output::timespan_text(bad)
                );
            }
            Ok(Arc::new(Time64NanosecondArray::new(spans.values().clone(), spans.nulls().cloned())))
        })
    }
}

/// `timespan_as_timestamp(t)`: a timespan as a timestamp of as many nanoseconds
/// since the epoch, what a window ordered by a timespan with a `RANGE` frame is
/// ordered by (DataFusion runs interval frames over timestamps, not durations).
/// Arrow has no such cast, and a chain of casts through `BIGINT` would hide from
/// the optimizer that the order is the timespan's, so a table already sorted by
/// time would be sorted again; this function says it keeps the order.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimespanOrder {
    signature: Signature,
}

impl TimespanOrder {
    /// `expr` (a timespan) as a timestamp with the same order.
    pub fn call(expr: Expr) -> Expr {
        let udf = ScalarUDF::new_from_impl(TimespanOrder {
            signature: Signature::exact(vec![TIMESPAN], Volatility::Immutable),
        });
        Arc::new(udf).call(vec![expr])
    }
}

impl ScalarUDFImpl for TimespanOrder {
    fn name(&self) -> &str {
        "timespan_as_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Nanosecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_timespans(&args, |spans| {
            Ok(Arc::new(TimestampNanosecondArray::new(spans.values().clone(), spans.nulls().cloned())))
        })
    }

    /// Nanoseconds stay nanoseconds: the same order, one to one.
    fn preserves_lex_ordering(&self, _inputs: &[ExprProperties]) -> Result<bool> {
        Ok(true)
    }

    fn strictly_order_preserving(&self, _inputs: &[ExprProperties]) -> Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000_000_000;

    #[test]
    fn clock_and_interval_text() {
        assert_eq!(parse_timespan("08:00"), Some(8 * H));
        assert_eq!(parse_timespan("09:30:00"), Some(9 * H + 30 * 60_000_000_000));
        assert_eq!(parse_timespan("00:00:00.5"), Some(500_000_000));
        assert_eq!(parse_timespan("00:00:00.000000001"), Some(1));
        assert_eq!(parse_timespan("-01:00"), Some(-H));
        assert_eq!(parse_timespan("1D02:00"), Some(26 * H));
        assert_eq!(parse_timespan("9 hours"), Some(9 * H));
        assert_eq!(parse_timespan("1 day"), Some(24 * H));
        for bad in ["9:75", "ten", "1 month", "09:30:00.", "09:30:00.1234567890", "09:30:61", "1:2:3:4"] {
            assert_eq!(parse_timespan(bad), None, "{bad}");
        }
    }

    #[test]
    fn timestamps_to_the_minute_get_seconds() {
        assert_eq!(timestamp_to_the_minute("2024-01-02 09:30").as_deref(), Some("2024-01-02 09:30:00"));
        assert_eq!(timestamp_to_the_minute("2024-01-02T09:30").as_deref(), Some("2024-01-02T09:30:00"));
        for other in ["2024-01-02 09:30:00", "2024-01-02", "2024-01-02 9:30", "2024-01-02 09:3x"] {
            assert_eq!(timestamp_to_the_minute(other), None, "{other}");
        }
    }
}
