//! The window functions the rolling operator computes, recognised in DataFusion's
//! planned window expressions: `sum`, `avg`, `count`, `min`, `max` over frames
//! ending at the current row, `lag` and `row_number()`.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::UInt64Builder;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, UInt32Array, new_empty_array};
use arrow_schema::{DataType, Schema};
use datafusion::arrow::compute::kernels::zip::zip;
use datafusion::arrow::compute::{can_cast_types, concat, take};
use datafusion::common::{Result, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::window::{
    PlainAggregateWindowExpr, SlidingAggregateWindowExpr, StandardWindowExpr, WindowExpr,
};
use datafusion::physical_plan::expressions::Literal;
use datafusion::physical_plan::windows::WindowUDFExpr;

use super::aggregate::{Count, Extreme, FloatSum, IntegerSum, Mean, Numbers, Presence, Windowed};
use super::frame::Frame;

/// One window function's computation down the partitions of a stream.
pub(crate) trait RollingFunction: Send {
    /// Evaluates the function's arguments on `batch`, whose rows come next.
    fn load(&mut self, batch: &RecordBatch) -> Result<()>;
    /// A new partition starts.
    fn restart(&mut self);
    /// Computes the loaded batch's rows `rows`, all of one partition and following
    /// on from the rows computed before (since the last restart). `peers` are
    /// those rows in groups of equal order values, for frames that end at the
    /// last peer; `order` the order column as integers, for frames measured in it.
    fn compute(&mut self, rows: Range<usize>, peers: &[Range<usize>], order: Option<&Int64Array>);
    /// The results of the rows computed since the last load, as the planned type.
    fn finish(&mut self) -> Result<ArrayRef>;
}

/// How `expr` is computed by the rolling operator, when it is; `order` are the
/// types of the window's ORDER BY columns. `None` leaves the whole window node
/// to DataFusion.
pub(crate) fn rolling(expr: &Arc<dyn WindowExpr>, schema: &Schema, order: &[DataType]) -> Option<Recognised> {
    let output = expr.field().ok()?.data_type().clone();
    if let Some(standard) = expr.as_any().downcast_ref::<StandardWindowExpr>() {
        let udf = standard.get_standard_func_expr().as_any().downcast_ref::<WindowUDFExpr>()?;
        if !debug_text_ends(udf, "is_reversed: false, ignore_nulls: false }") {
            return None;
        }
        return match (udf.fun().name(), udf.args()) {
            ("row_number", []) => Some(Recognised::simple(Box::new(RowNumber::default()))),
            ("lag", [argument, rest @ ..]) => Lag::recognise(argument, rest, output).map(Recognised::simple),
            _ => None,
        };
    }
    let aggregate = aggregate_expr(expr)?;
    if aggregate.is_distinct() || aggregate.ignore_nulls() || !aggregate.order_bys().is_empty() {
        return None;
    }
    let [argument] = aggregate.expressions().try_into().ok()?;
    let frame = Frame::of(expr.get_window_frame(), order)?;
    let argument_type = argument.data_type(schema).ok()?;
    let function = match (aggregate.fun().name(), &output) {
        ("count", DataType::Int64) => Windowed::<Presence, _>::boxed(argument, frame, Count::default, output),
        ("sum", DataType::Int64) => {
            Windowed::<Numbers<Int64Type>, _>::boxed(argument, frame, IntegerSum::default, output)
        }
        ("sum", DataType::Float64) => {
            Windowed::<Numbers<Float64Type>, _>::boxed(argument, frame, FloatSum::default, output)
        }
        ("avg", DataType::Float64) => {
            Windowed::<Numbers<Float64Type>, _>::boxed(argument, frame, Mean::default, output)
        }
        (name @ ("min" | "max"), t) => {
            let max = name == "max";
            // Float32 is computed as Float64 and cast back, exactly.
            if matches!(t, DataType::Float64 | DataType::Float32) {
                let new =
                    if max { || Extreme::<Float64Type>::new(true) } else { || Extreme::<Float64Type>::new(false) };
                Windowed::<Numbers<Float64Type>, _>::boxed(argument, frame, new, output)
            } else if super::frame::order_as_integers(t)
                && can_cast_types(&argument_type, &DataType::Int64)
                && can_cast_types(&DataType::Int64, t)
            {
                let new = if max { || Extreme::<Int64Type>::new(true) } else { || Extreme::<Int64Type>::new(false) };
                Windowed::<Numbers<Int64Type>, _>::boxed(argument, frame, new, output)
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(Recognised { function, frame: Some(frame) })
}

/// A recognised function and its frame (`None`: the function has no frame).
pub(crate) struct Recognised {
    pub(crate) function: Box<dyn RollingFunction>,
    pub(crate) frame: Option<Frame>,
}

impl Recognised {
    fn simple(function: Box<dyn RollingFunction>) -> Recognised {
        Recognised { function, frame: None }
    }
}

/// The aggregate of an aggregate window expression without a FILTER clause.
fn aggregate_expr(expr: &Arc<dyn WindowExpr>) -> Option<&AggregateFunctionExpr> {
    let any = expr.as_any();
    let (aggregate, filtered) = if let Some(plain) = any.downcast_ref::<PlainAggregateWindowExpr>() {
        (plain.get_aggregate_expr(), !debug_text_ends(plain, "filter: None }"))
    } else {
        let sliding = any.downcast_ref::<SlidingAggregateWindowExpr>()?;
        (sliding.get_aggregate_expr(), !debug_text_ends(sliding, "filter: None }"))
    };
    (!filtered).then_some(aggregate)
}

/// Whether `value`'s derived debug text ends with `settings`: DataFusion 55 has
/// no accessor for a window aggregate's FILTER or a window function's
/// `IGNORE NULLS` and reversal, which are the last fields of their structs. Text
/// that differs (another DataFusion) leaves the window to DataFusion.
fn debug_text_ends(value: &dyn std::fmt::Debug, settings: &str) -> bool {
    format!("{value:?}").ends_with(settings)
}

/// `row_number()`: the row's place in its partition, from one.
#[derive(Default)]
struct RowNumber {
    seen: u64,
    out: UInt64Builder,
}

impl RollingFunction for RowNumber {
    fn load(&mut self, _: &RecordBatch) -> Result<()> {
        Ok(())
    }

    fn restart(&mut self) {
        self.seen = 0;
    }

    fn compute(&mut self, rows: Range<usize>, _: &[Range<usize>], _: Option<&Int64Array>) {
        for _ in rows {
            self.seen += 1;
            self.out.append_value(self.seen);
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(self.out.finish()))
    }
}

/// `lag(x, n, default)`: the value `n` rows back in the partition, else `default`.
struct Lag {
    argument: Arc<dyn PhysicalExpr>,
    offset: usize,
    default: ScalarValue,
    output: DataType,
    /// The partition's last `offset` values (fewer at its start) before the
    /// loaded batch, then the loaded batch's values.
    values: ArrayRef,
    /// How many of `values` come before the loaded batch.
    carried: usize,
    /// Per computed row, where its result is in `values` (`None`: the default).
    sources: Vec<Option<u32>>,
    /// The partition's rows already in `values` before the current row.
    behind: usize,
}

impl Lag {
    fn recognise(
        argument: &Arc<dyn PhysicalExpr>,
        rest: &[Arc<dyn PhysicalExpr>],
        output: DataType,
    ) -> Option<Box<dyn RollingFunction>> {
        let literal = |expr: &Arc<dyn PhysicalExpr>| expr.downcast_ref::<Literal>().map(|l| l.value().clone());
        // A negative offset is `lead`, which reads rows to come: left to DataFusion.
        let rows_back = |expr| match literal(expr)?.cast_to(&DataType::Int64).ok()? {
            ScalarValue::Int64(Some(n)) => usize::try_from(n).ok(),
            _ => None,
        };
        let (offset, default) = match rest {
            [] => (1, ScalarValue::Null),
            [offset] => (rows_back(offset)?, ScalarValue::Null),
            [offset, default] => (rows_back(offset)?, literal(default)?),
            _ => return None,
        };
        let default =
            if default.is_null() { ScalarValue::try_from(&output).ok()? } else { default.cast_to(&output).ok()? };
        Some(Box::new(Lag {
            argument: Arc::clone(argument),
            offset,
            default,
            values: new_empty_array(&output),
            output,
            carried: 0,
            sources: Vec::new(),
            behind: 0,
        }))
    }
}

impl RollingFunction for Lag {
    fn load(&mut self, batch: &RecordBatch) -> Result<()> {
        let values = self.argument.evaluate(batch)?.into_array(batch.num_rows())?;
        let values = if values.data_type() == &self.output {
            values
        } else {
            datafusion::arrow::compute::cast(&values, &self.output)?
        };
        // Keep the open partition's last `offset` values for the rows to come.
        let keep = self.behind.min(self.offset);
        let tail = self.values.slice(self.values.len() - keep, keep);
        self.carried = keep;
        self.values = concat(&[tail.as_ref(), values.as_ref()])?;
        self.behind = keep;
        Ok(())
    }

    fn restart(&mut self) {
        self.behind = 0;
    }

    fn compute(&mut self, rows: Range<usize>, _: &[Range<usize>], _: Option<&Int64Array>) {
        for i in rows {
            let at = self.carried + i;
            self.sources.push((self.behind >= self.offset).then(|| (at - self.offset) as u32));
            self.behind += 1;
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        let sources = UInt32Array::from(std::mem::take(&mut self.sources));
        let taken = take(self.values.as_ref(), &sources, None)?;
        if self.default.is_null() || sources.null_count() == 0 {
            return Ok(taken);
        }
        let from_rows = BooleanArray::from_iter(sources.iter().map(|source| Some(source.is_some())));
        Ok(zip(&from_rows, &taken, &self.default.to_scalar()?)?)
    }
}
