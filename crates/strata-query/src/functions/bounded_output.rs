//! Scalar functions whose output a client sizes: `repeat(s, n)`, `lpad(s, n)`,
//! `rpad(s, n)`. DataFusion's memory pool counts what sorts, aggregations and joins
//! hold, not the arrays scalar functions return, so `SELECT repeat('x', 2e9)`
//! allocated 2 GB past any `--query-memory-mb`. Each is wrapped here: before the
//! built-in runs on a batch, the bytes it would return are added up from its
//! arguments, and past the query memory the statement fails with an error naming
//! the function instead of allocating.

use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_schema::{DataType, FieldRef};
use datafusion::arrow::compute::{cast, kernels::length::length};
use datafusion::common::{Result, exec_err};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

/// How a function's output grows with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(s, n)`: `n` copies of `s`.
    Repeat,
    /// `lpad(s, n[, fill])` / `rpad`: `n` characters.
    Pad,
}

/// A built-in function that refuses a batch whose output would pass `limit` bytes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BoundedOutput {
    inner: Arc<ScalarUDF>,
    growth: Growth,
    limit: usize,
}

/// Wraps `repeat`, `lpad` and `rpad` of `ctx` so their output counts against
/// `limit` bytes (the engine's query memory).
pub fn bound_outputs(ctx: &SessionContext, limit: usize) -> Result<()> {
    for (name, growth) in [("repeat", Growth::Repeat), ("lpad", Growth::Pad), ("rpad", Growth::Pad)] {
        let inner = ctx.udf(name)?;
        ctx.register_udf(ScalarUDF::new_from_impl(BoundedOutput { inner, growth, limit }));
    }
    Ok(())
}

impl BoundedOutput {
    /// The bytes the function would return for this batch (saturating).
    fn output_bytes(&self, args: &ScalarFunctionArgs) -> Result<u64> {
        let rows = args.number_rows;
        let counts = cast(&args.args[1].to_array(rows)?, &DataType::Int64)?;
        let counts = counts.as_primitive::<Int64Type>();
        let lengths = match self.growth {
            Growth::Repeat => Some(cast(&length(&args.args[0].to_array(rows)?)?, &DataType::Int64)?),
            Growth::Pad => None,
        };
        let lengths = lengths.as_ref().map(|l| l.as_primitive::<Int64Type>());
        let mut total: u64 = 0;
        for row in 0..rows {
            if counts.is_null(row) {
                continue;
            }
            let count = counts.value(row).max(0) as u64;
            let each = lengths.map_or(1, |l| if l.is_null(row) { 0 } else { l.value(row).max(0) as u64 });
            total = total.saturating_add(count.saturating_mul(each));
        }
        Ok(total)
    }
}

impl ScalarUDFImpl for BoundedOutput {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() >= 2 {
            let bytes = self.output_bytes(&args)?;
            if bytes > self.limit as u64 {
                return exec_err!(
                    "{}() would return {} MiB for one batch of {} rows, more than the {} MiB a query may hold here",
                    self.name(),
                    bytes >> 20,
                    args.number_rows,
                    self.limit >> 20
                );
            }
        }
        self.inner.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(limit: usize) -> SessionContext {
        let ctx = SessionContext::new();
        bound_outputs(&ctx, limit).unwrap();
        ctx
    }

    fn run(ctx: &SessionContext, sql: &str) -> Result<usize> {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async { Ok(ctx.sql(sql).await?.collect().await?.iter().map(|b| b.num_rows()).sum()) })
    }

    #[test]
    fn outputs_within_the_limit_are_the_built_ins() {
        let ctx = context(1 << 20);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let batches = rt.block_on(async {
            ctx.sql("SELECT repeat('ab', 3) AS r, lpad('x', 4, '-') AS l, rpad('x', 3) AS p").await?.collect().await
        });
        let batches = batches.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        assert!(text.contains("ababab") && text.contains("---x") && text.contains("x  "), "{text}");
    }

    #[test]
    fn outputs_past_the_limit_are_refused_before_they_are_made() {
        let ctx = context(1 << 20);
        for sql in ["SELECT repeat('x', 2000000000)", "SELECT lpad('x', 2000000000)", "SELECT rpad('x', 5000000, 'y')"]
        {
            let err = run(&ctx, sql).unwrap_err().to_string();
            assert!(err.contains("a query may hold here"), "{sql}: {err}");
        }
        // Over many rows, the batch's total counts (12 MB here, no row above 16 kB).
        let err = run(&ctx, "SELECT repeat('abcdefgh', value) FROM generate_series(1000, 2000)").unwrap_err();
        assert!(err.to_string().contains("repeat()"), "{err}");
    }
}
