//! Which window frames the rolling operator computes, read from DataFusion's
//! `WindowFrame`: every frame that ends at the current row and starts at the
//! partition's first row, a number of rows back, or an offset back in the order
//! column's units.

use arrow_schema::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{WindowFrame, WindowFrameBound, WindowFrameUnits};

/// Nanoseconds in a day, for intervals given in days.
const DAY_NANOS: i128 = 86_400_000_000_000;

/// Where a frame starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// The partition's first row (`UNBOUNDED PRECEDING`).
    Unbounded,
    /// `ROWS n PRECEDING` (`CURRENT ROW` is zero rows back).
    Rows(u64),
    /// `RANGE d PRECEDING`: rows whose order value is at least the current
    /// row's minus `d`, in the order column's units (`CURRENT ROW` is zero).
    Range(i64),
}

/// A frame ending at the current row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) start: Start,
    /// `RANGE` frames end at the current row's last peer (the last row with the
    /// same order values); `ROWS` frames at the current row itself.
    pub(crate) peers: bool,
}

impl Frame {
    /// The frame of `frame`, with `order` the types of the window's ORDER BY
    /// columns, when the rolling operator computes it.
    pub(crate) fn of(frame: &WindowFrame, order: &[DataType]) -> Option<Frame> {
        if !matches!(frame.end_bound, WindowFrameBound::CurrentRow) {
            return None;
        }
        match frame.units {
            WindowFrameUnits::Rows => {
                let start = match &frame.start_bound {
                    WindowFrameBound::Preceding(n) if n.is_null() => Start::Unbounded,
                    WindowFrameBound::Preceding(n) => Start::Rows(count(n)?),
                    WindowFrameBound::CurrentRow => Start::Rows(0),
                    WindowFrameBound::Following(_) => return None,
                };
                Some(Frame { start, peers: false })
            }
            WindowFrameUnits::Range => {
                let start = match &frame.start_bound {
                    WindowFrameBound::Preceding(d) if d.is_null() => Start::Unbounded,
                    WindowFrameBound::Preceding(d) => Start::Range(offset(d, single_order_column(order)?)?),
                    WindowFrameBound::CurrentRow => {
                        single_order_column(order)?;
                        Start::Range(0)
                    }
                    WindowFrameBound::Following(_) => return None,
                };
                Some(Frame { start, peers: true })
            }
            WindowFrameUnits::Groups => None,
        }
    }

    /// Whether the frame reaches back by order value, so needs the order column
    /// as integers.
    pub(crate) fn reads_order(&self) -> bool {
        matches!(self.start, Start::Range(_))
    }
}

/// The type of the one ORDER BY column an offset frame is measured in, when it
/// is one the operator reads as integers.
fn single_order_column(order: &[DataType]) -> Option<&DataType> {
    let [column] = order else { return None };
    order_as_integers(column).then_some(column)
}

/// Whether values of `data_type` are read as 64-bit integers in their own
/// units, preserving their order.
pub(crate) fn order_as_integers(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
            | DataType::Timestamp(_, _)
            | DataType::Duration(_)
    )
}

/// `ROWS n PRECEDING`'s n.
fn count(n: &ScalarValue) -> Option<u64> {
    match n.cast_to(&DataType::UInt64).ok()? {
        ScalarValue::UInt64(Some(n)) => Some(n),
        _ => None,
    }
}

/// A `RANGE` offset in the units of an order column of type `column`: whole
/// numbers for integers, days for dates, the column's unit for timestamps and
/// durations. `None` for anything else (months, fractions of the unit, negative).
fn offset(offset: &ScalarValue, column: &DataType) -> Option<i64> {
    let nanos = |unit: &TimeUnit| -> i128 {
        match unit {
            TimeUnit::Second => 1_000_000_000,
            TimeUnit::Millisecond => 1_000_000,
            TimeUnit::Microsecond => 1_000,
            TimeUnit::Nanosecond => 1,
        }
    };
    let in_units = |total_nanos: i128, unit_nanos: i128| -> Option<i64> {
        (total_nanos >= 0 && total_nanos % unit_nanos == 0).then(|| i64::try_from(total_nanos / unit_nanos).ok())?
    };
    let interval_nanos = || -> Option<i128> {
        match offset {
            ScalarValue::IntervalMonthDayNano(Some(v)) if v.months == 0 => {
                Some(i128::from(v.days) * DAY_NANOS + i128::from(v.nanoseconds))
            }
            ScalarValue::IntervalDayTime(Some(v)) => {
                Some(i128::from(v.days) * DAY_NANOS + i128::from(v.milliseconds) * 1_000_000)
            }
            ScalarValue::IntervalYearMonth(Some(0)) => Some(0),
            ScalarValue::DurationSecond(Some(v)) => Some(i128::from(*v) * 1_000_000_000),
            ScalarValue::DurationMillisecond(Some(v)) => Some(i128::from(*v) * 1_000_000),
            ScalarValue::DurationMicrosecond(Some(v)) => Some(i128::from(*v) * 1_000),
            ScalarValue::DurationNanosecond(Some(v)) => Some(i128::from(*v)),
            _ => None,
        }
    };
    match column {
        DataType::Timestamp(unit, _) | DataType::Duration(unit) => in_units(interval_nanos()?, nanos(unit)),
        DataType::Date32 => match offset.data_type() {
            t if t.is_integer() => integer(offset),
            _ => in_units(interval_nanos()?, DAY_NANOS),
        },
        _ => integer(offset),
    }
}

/// A non-negative integer offset.
fn integer(offset: &ScalarValue) -> Option<i64> {
    if !offset.data_type().is_integer() {
        return None;
    }
    match offset.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(Some(n)) if n >= 0 => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_buffer::IntervalMonthDayNano;

    fn frame(units: WindowFrameUnits, start: WindowFrameBound, end: WindowFrameBound) -> WindowFrame {
        WindowFrame::new_bounds(units, start, end)
    }

    #[test]
    fn frames_ending_at_the_current_row() {
        use WindowFrameBound::*;
        let ts = [DataType::Timestamp(TimeUnit::Nanosecond, None)];
        let minute = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, 60_000_000_000)));
        let rows = |start| Frame::of(&frame(WindowFrameUnits::Rows, start, CurrentRow), &ts);
        assert_eq!(rows(Preceding(ScalarValue::UInt64(None))), Some(Frame { start: Start::Unbounded, peers: false }));
        assert_eq!(
            rows(Preceding(ScalarValue::UInt64(Some(19)))),
            Some(Frame { start: Start::Rows(19), peers: false })
        );
        let range = |start, order: &[DataType]| Frame::of(&frame(WindowFrameUnits::Range, start, CurrentRow), order);
        assert_eq!(
            range(Preceding(minute.clone()), &ts),
            Some(Frame { start: Start::Range(60_000_000_000), peers: true })
        );
        let micros = [DataType::Duration(TimeUnit::Microsecond)];
        assert_eq!(range(Preceding(minute.clone()), &micros).map(|f| f.start), Some(Start::Range(60_000_000)));
        let days = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 2, 0)));
        assert_eq!(range(Preceding(days), &[DataType::Date32]).map(|f| f.start), Some(Start::Range(2)));
        assert_eq!(
            range(Preceding(ScalarValue::Int64(Some(5))), &[DataType::Int32]).map(|f| f.start),
            Some(Start::Range(5))
        );
        // What it leaves to DataFusion.
        let month = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(1, 0, 0)));
        assert_eq!(range(Preceding(month), &ts), None, "months have no fixed length");
        let second = [DataType::Timestamp(TimeUnit::Second, None)];
        let half = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, 500_000_000)));
        assert_eq!(range(Preceding(half), &second), None, "half a unit");
        assert_eq!(range(Preceding(minute.clone()), &[DataType::Float64]), None);
        assert_eq!(range(Preceding(minute.clone()), &[ts[0].clone(), DataType::Int64]), None, "two order columns");
        assert_eq!(
            range(Preceding(ScalarValue::UInt64(None)), &[DataType::Utf8, DataType::Int64]).map(|f| f.start),
            Some(Start::Unbounded)
        );
        assert_eq!(
            Frame::of(&frame(WindowFrameUnits::Rows, CurrentRow, Following(ScalarValue::UInt64(Some(1)))), &ts),
            None
        );
        assert_eq!(Frame::of(&frame(WindowFrameUnits::Groups, CurrentRow, CurrentRow), &ts), None);
    }
}
