//! `sum`, `avg`, `count`, `min` and `max` over a frame that slides down one
//! partition: each row enters the frame once and leaves it once, so a whole
//! partition costs one pass whatever the frame's width.
//!
//! Sums add entering values and take away leaving ones (integers wrap as
//! DataFusion's do; floats carry a compensation term, so a long slide does not
//! drift, and count infinities and NaNs apart so one passing through the frame
//! does not poison it). `min` and `max` keep a monotonic queue: the frame's
//! candidates in arrival order, each better than every later one.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::PrimitiveBuilder;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, Int64Array, PrimitiveArray, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use datafusion::arrow::compute::cast;
use datafusion::common::Result;
use datafusion::physical_expr::PhysicalExpr;

use super::frame::{Frame, Start};
use super::function::RollingFunction;

/// The values an aggregate reads from its argument, one batch at a time.
pub(crate) trait Lane: Send + 'static {
    type Value: Copy + Send;
    type Column: Send;
    /// `array` in this lane.
    fn load(array: &ArrayRef) -> Result<Self::Column>;
    /// Row `i`'s value, `None` when null.
    fn get(column: &Self::Column, i: usize) -> Option<Self::Value>;
}

/// Numbers read as one Arrow primitive type (after a cast to it).
pub(crate) struct Numbers<T>(std::marker::PhantomData<fn() -> T>);

impl<T: ArrowPrimitiveType> Lane for Numbers<T> {
    type Value = T::Native;
    type Column = PrimitiveArray<T>;

    fn load(array: &ArrayRef) -> Result<PrimitiveArray<T>> {
        let array = if array.data_type() == &T::DATA_TYPE { Arc::clone(array) } else { cast(array, &T::DATA_TYPE)? };
        Ok(array.as_any().downcast_ref::<PrimitiveArray<T>>().expect("cast to the lane's type").clone())
    }

    fn get(column: &PrimitiveArray<T>, i: usize) -> Option<T::Native> {
        column.is_valid(i).then(|| column.value(i))
    }
}

/// Only whether each value is there (what `count` reads, of any type).
pub(crate) struct Presence;

impl Lane for Presence {
    type Value = ();
    type Column = Option<NullBuffer>;

    fn load(array: &ArrayRef) -> Result<Option<NullBuffer>> {
        Ok(array.logical_nulls())
    }

    fn get(column: &Option<NullBuffer>, i: usize) -> Option<()> {
        column.as_ref().is_none_or(|nulls| nulls.is_valid(i)).then_some(())
    }
}

/// An aggregate whose frame values can be taken back out.
pub(crate) trait Slide<V>: Send {
    type Out: ArrowPrimitiveType;
    /// `value`, the `seq`-th row of the partition, enters the frame.
    fn add(&mut self, seq: u64, value: V);
    /// `value`, the `seq`-th row, leaves the frame (rows leave in arrival order).
    fn remove(&mut self, seq: u64, value: V);
    /// The aggregate of the frame now.
    fn value(&self) -> Option<<Self::Out as ArrowPrimitiveType>::Native>;
}

/// `count(x)`: the frame's non-null values.
#[derive(Default)]
pub(crate) struct Count(i64);

impl<V> Slide<V> for Count {
    type Out = Int64Type;
    fn add(&mut self, _: u64, _: V) {
        self.0 += 1;
    }
    fn remove(&mut self, _: u64, _: V) {
        self.0 -= 1;
    }
    fn value(&self) -> Option<i64> {
        Some(self.0)
    }
}

/// `sum(x)` of integers: wrapping, as DataFusion's integer sum; null when the
/// frame holds no value.
#[derive(Default)]
pub(crate) struct IntegerSum {
    sum: i64,
    count: u64,
}

impl Slide<i64> for IntegerSum {
    type Out = Int64Type;
    fn add(&mut self, _: u64, value: i64) {
        self.sum = self.sum.wrapping_add(value);
        self.count += 1;
    }
    fn remove(&mut self, _: u64, value: i64) {
        self.sum = self.sum.wrapping_sub(value);
        self.count -= 1;
    }
    fn value(&self) -> Option<i64> {
        (self.count > 0).then_some(self.sum)
    }
}

/// A float sum that values enter and leave: finite values in a compensated
/// (Neumaier) sum, infinities and NaNs counted, so the sum is what adding the
/// frame's values afresh gives.
#[derive(Default)]
pub(crate) struct FloatSum {
    sum: f64,
    compensation: f64,
    count: u64,
    nans: u64,
    positive_infinities: u64,
    negative_infinities: u64,
}

impl FloatSum {
    fn accumulate(&mut self, value: f64, step: i64) {
        if value.is_nan() {
            self.nans = self.nans.wrapping_add_signed(step);
        } else if value == f64::INFINITY {
            self.positive_infinities = self.positive_infinities.wrapping_add_signed(step);
        } else if value == f64::NEG_INFINITY {
            self.negative_infinities = self.negative_infinities.wrapping_add_signed(step);
        } else {
            let value = if step > 0 { value } else { -value };
            let total = self.sum + value;
            self.compensation +=
                if self.sum.abs() >= value.abs() { (self.sum - total) + value } else { (value - total) + self.sum };
            self.sum = total;
        }
        self.count = self.count.wrapping_add_signed(step);
        if self.count == 0 {
            *self = FloatSum::default();
        }
    }

    fn total(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        Some(match (self.nans, self.positive_infinities, self.negative_infinities) {
            (0, 0, 0) => self.sum + self.compensation,
            (0, _, 0) => f64::INFINITY,
            (0, 0, _) => f64::NEG_INFINITY,
            _ => f64::NAN,
        })
    }
}

impl Slide<f64> for FloatSum {
    type Out = Float64Type;
    fn add(&mut self, _: u64, value: f64) {
        self.accumulate(value, 1);
    }
    fn remove(&mut self, _: u64, value: f64) {
        self.accumulate(value, -1);
    }
    fn value(&self) -> Option<f64> {
        self.total()
    }
}

/// `avg(x)`: the frame's float sum over its count.
#[derive(Default)]
pub(crate) struct Mean(FloatSum);

impl Slide<f64> for Mean {
    type Out = Float64Type;
    fn add(&mut self, _: u64, value: f64) {
        self.0.accumulate(value, 1);
    }
    fn remove(&mut self, _: u64, value: f64) {
        self.0.accumulate(value, -1);
    }
    fn value(&self) -> Option<f64> {
        Some(self.0.total()? / self.0.count as f64)
    }
}

/// Values compared the way Arrow's `min` and `max` kernels compare them
/// (floats in IEEE total order: NaN above everything).
pub(crate) trait Ordered: Copy {
    fn order(self, other: Self) -> Ordering;
}

impl Ordered for i64 {
    fn order(self, other: i64) -> Ordering {
        self.cmp(&other)
    }
}

impl Ordered for f64 {
    fn order(self, other: f64) -> Ordering {
        self.total_cmp(&other)
    }
}

/// `min(x)` or `max(x)`: the frame's candidates, oldest first, each strictly
/// better than every one after it; the best is at the front.
pub(crate) struct Extreme<T: ArrowPrimitiveType> {
    candidates: VecDeque<(u64, T::Native)>,
    /// The order that wins: `Greater` for `max`, `Less` for `min`.
    better: Ordering,
}

impl<T: ArrowPrimitiveType> Extreme<T> {
    pub(crate) fn new(max: bool) -> Extreme<T> {
        Extreme { candidates: VecDeque::new(), better: if max { Ordering::Greater } else { Ordering::Less } }
    }
}

impl<T: ArrowPrimitiveType> Slide<T::Native> for Extreme<T>
where
    T::Native: Ordered,
{
    type Out = T;
    fn add(&mut self, seq: u64, value: T::Native) {
        while self.candidates.back().is_some_and(|&(_, last)| value.order(last) != self.better.reverse()) {
            self.candidates.pop_back();
        }
        self.candidates.push_back((seq, value));
    }
    fn remove(&mut self, seq: u64, _: T::Native) {
        if self.candidates.front().is_some_and(|&(first, _)| first == seq) {
            self.candidates.pop_front();
        }
    }
    fn value(&self) -> Option<T::Native> {
        self.candidates.front().map(|&(_, value)| value)
    }
}

/// A row still in the frame, kept so it can leave.
struct Entry<V> {
    seq: u64,
    order: Option<i64>,
    value: Option<V>,
}

/// One aggregate over one frame, run down the partitions of a stream.
pub(crate) struct Windowed<L: Lane, S: Slide<L::Value>> {
    argument: Arc<dyn PhysicalExpr>,
    frame: Frame,
    new_slide: fn() -> S,
    slide: S,
    /// The rows in the frame, oldest first (empty when the frame starts at the
    /// partition's first row: nothing ever leaves).
    in_frame: VecDeque<Entry<L::Value>>,
    /// Rows of the partition seen so far.
    seen: u64,
    values: Option<L::Column>,
    out: PrimitiveBuilder<S::Out>,
    /// The type DataFusion planned for the result, when it is not `S::Out`.
    output_type: DataType,
}

impl<L: Lane, S: Slide<L::Value> + 'static> Windowed<L, S> {
    pub(crate) fn boxed(
        argument: Arc<dyn PhysicalExpr>,
        frame: Frame,
        new_slide: fn() -> S,
        output_type: DataType,
    ) -> Box<dyn RollingFunction> {
        Box::new(Windowed::<L, S> {
            argument,
            frame,
            new_slide,
            slide: new_slide(),
            in_frame: VecDeque::new(),
            seen: 0,
            values: None,
            out: PrimitiveBuilder::new(),
            output_type,
        })
    }

    /// Row `i` of the loaded batch enters the frame.
    fn enter(&mut self, i: usize, order: Option<&Int64Array>) {
        let value = self.values.as_ref().and_then(|values| L::get(values, i));
        self.seen += 1;
        if let Some(value) = value {
            self.slide.add(self.seen, value);
        }
        if self.frame.start != Start::Unbounded {
            let order = order.and_then(|order| order.is_valid(i).then(|| order.value(i)));
            self.in_frame.push_back(Entry { seq: self.seen, order, value });
        }
    }

    /// The oldest rows leave while `leaves` says they are out of the frame.
    fn leave_while(&mut self, leaves: impl Fn(&Entry<L::Value>) -> bool) {
        while let Some(entry) = self.in_frame.front() {
            if !leaves(entry) {
                break;
            }
            if let Some(value) = entry.value {
                self.slide.remove(entry.seq, value);
            }
            self.in_frame.pop_front();
        }
    }
}

impl<L: Lane, S: Slide<L::Value> + 'static> RollingFunction for Windowed<L, S> {
    fn load(&mut self, batch: &RecordBatch) -> Result<()> {
        let values = self.argument.evaluate(batch)?.into_array(batch.num_rows())?;
        self.values = Some(L::load(&values)?);
        Ok(())
    }

    fn restart(&mut self) {
        self.slide = (self.new_slide)();
        self.in_frame.clear();
        self.seen = 0;
    }

    fn compute(&mut self, rows: Range<usize>, peers: &[Range<usize>], order: Option<&Int64Array>) {
        if !self.frame.peers {
            for i in rows {
                self.enter(i, order);
                if let Start::Rows(back) = self.frame.start {
                    let first = self.seen.saturating_sub(back);
                    self.leave_while(|entry| entry.seq < first);
                }
                self.out.append_option(self.slide.value());
            }
            return;
        }
        for group in peers {
            let first_seq = self.seen + 1;
            for i in group.clone() {
                self.enter(i, order);
            }
            if let Start::Range(back) = self.frame.start {
                // Null order values are peers of each other and of nothing else.
                match order.and_then(|order| order.is_valid(group.start).then(|| order.value(group.start))) {
                    Some(current) => {
                        let lowest = current.saturating_sub(back);
                        self.leave_while(|entry| entry.order.is_none_or(|order| order < lowest));
                    }
                    None => self.leave_while(|entry| entry.seq < first_seq),
                }
            }
            let value = self.slide.value();
            for _ in group.clone() {
                self.out.append_option(value);
            }
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        self.values = None;
        let out: ArrayRef = Arc::new(self.out.finish());
        Ok(if out.data_type() == &self.output_type { out } else { cast(&out, &self.output_type)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float_sum_forgets_what_left() {
        let mut sum = FloatSum::default();
        for (seq, v) in [1e16, 1.0, -1e16, f64::INFINITY, 3.0].into_iter().enumerate() {
            sum.add(seq as u64, v);
        }
        assert_eq!(sum.value(), Some(f64::INFINITY));
        sum.remove(0, 1e16);
        sum.remove(1, 1.0);
        sum.remove(2, -1e16);
        sum.remove(3, f64::INFINITY);
        assert_eq!(sum.value(), Some(3.0), "compensated, and the infinity gone");
        sum.remove(4, 3.0);
        assert_eq!(sum.value(), None);
        sum.add(5, f64::NAN);
        assert!(sum.value().unwrap().is_nan());
    }

    #[test]
    fn extremes_follow_the_frame() {
        let mut max = Extreme::<Int64Type>::new(true);
        let mut min = Extreme::<Float64Type>::new(false);
        let values = [3, 1, 4, 1, 5, 9, 2, 6];
        let (mut maxes, mut mins) = (Vec::new(), Vec::new());
        for (seq, &v) in values.iter().enumerate() {
            max.add(seq as u64, v);
            min.add(seq as u64, v as f64);
            if seq >= 3 {
                max.remove(seq as u64 - 3, values[seq - 3]);
                min.remove(seq as u64 - 3, values[seq - 3] as f64);
            }
            maxes.push(max.value().unwrap());
            mins.push(min.value().unwrap());
        }
        assert_eq!(maxes, [3, 3, 4, 4, 5, 9, 9, 9]);
        assert_eq!(mins, [3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0]);
    }
}
