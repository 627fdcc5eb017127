//! Bucketing: kdb+'s `xbar(bucket, x)` and DuckDB's `time_bucket(interval, ts)`:
//! the value rounded down to a multiple of the bucket. Numbers bucket by a number;
//! timestamps and timespans by an interval, a duration or an integer count of
//! nanoseconds. Buckets count from zero (the Unix epoch for timestamps).

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_schema::{DataType, TimeUnit};
use datafusion::arrow::compute::cast;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

/// `xbar` or `time_bucket`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Bucket {
    name: &'static str,
    signature: Signature,
}

impl Bucket {
    /// The function under `name` (`xbar` or `time_bucket`).
    pub fn new(name: &'static str) -> Bucket {
        Bucket { name, signature: Signature::user_defined(Volatility::Immutable) }
    }
}

fn unit_nanos(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

impl ScalarUDFImpl for Bucket {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [bucket, x] = args else {
            return plan_err!("{}(bucket, value) takes 2 arguments, got {}", self.name, args.len());
        };
        match x {
            DataType::Timestamp(..) | DataType::Duration(_) => match bucket {
                DataType::Interval(_) | DataType::Duration(_) => Ok(args.to_vec()),
                b if b.is_integer() => Ok(vec![DataType::Int64, x.clone()]),
                b => plan_err!("{}: a {x} value needs an interval or duration bucket, not {b}", self.name),
            },
            x if x.is_integer() && bucket.is_integer() => Ok(vec![DataType::Int64, x.clone()]),
            x if x.is_numeric() && bucket.is_numeric() => Ok(vec![DataType::Float64, DataType::Float64]),
            x => plan_err!(
                "{}(bucket, value) buckets numbers, timestamps and timespans; got a {bucket} bucket and a {x} value",
                self.name
            ),
        }
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(bucket) = &args.args[0] else {
            return exec_err!("{}: the bucket must be a constant", self.name);
        };
        let x_type = args.arg_fields[1].data_type().clone();
        let (x, scalar) = match &args.args[1] {
            ColumnarValue::Array(a) => (a.clone(), false),
            ColumnarValue::Scalar(s) => (s.to_array()?, true),
        };
        let out: ArrayRef = match &x_type {
            DataType::Float64 => {
                let b = match bucket {
                    ScalarValue::Float64(Some(b)) if *b > 0.0 => *b,
                    other => return exec_err!("{}: the bucket must be positive, got {other}", self.name),
                };
                Arc::new(x.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| (v / b).floor() * b))
            }
            DataType::Timestamp(unit, _) | DataType::Duration(unit) => {
                let nanos = match bucket {
                    ScalarValue::IntervalMonthDayNano(Some(i)) if i.months == 0 => {
                        i.days as i64 * 86_400_000_000_000 + i.nanoseconds
                    }
                    ScalarValue::IntervalDayTime(Some(i)) => {
                        i.days as i64 * 86_400_000_000_000 + i.milliseconds as i64 * 1_000_000
                    }
                    ScalarValue::DurationSecond(Some(v)) => v * 1_000_000_000,
                    ScalarValue::DurationMillisecond(Some(v)) => v * 1_000_000,
                    ScalarValue::DurationMicrosecond(Some(v)) => v * 1_000,
                    ScalarValue::DurationNanosecond(Some(v)) | ScalarValue::Int64(Some(v)) => *v,
                    other => return exec_err!("{}: a bucket of {other} has no fixed length", self.name),
                };
                let per = unit_nanos(unit);
                if nanos <= 0 || nanos % per != 0 {
                    return exec_err!("{}: the bucket must be a positive whole number of {unit:?}s", self.name);
                }
                let b = nanos / per;
                let ints = cast(&x, &DataType::Int64)?;
                let floored = ints.as_primitive::<Int64Type>().unary::<_, Int64Type>(|v| v.div_euclid(b) * b);
                cast(&floored, &x_type)?
            }
            t if t.is_integer() => {
                let b = match bucket {
                    ScalarValue::Int64(Some(b)) if *b > 0 => *b,
                    other => return exec_err!("{}: the bucket must be positive, got {other}", self.name),
                };
                let ints = cast(&x, &DataType::Int64)?;
                let floored = ints.as_primitive::<Int64Type>().unary::<_, Int64Type>(|v| v.div_euclid(b) * b);
                cast(&floored, &x_type)?
            }
            t => return exec_err!("{}: cannot bucket a {t} value", self.name),
        };
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}
