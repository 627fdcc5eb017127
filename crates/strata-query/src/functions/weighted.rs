//! kdb+'s weighted aggregates: `wavg(w, x)` (sum of w*x over sum of w) and
//! `wsum(w, x)` (sum of w*x). Weights come first, as in q's `w wavg x`.
//! DuckDB's `weighted_avg(x, w)` is `wavg` with the value first, as DuckDB orders
//! them: the same numbers, so a query moved from either system keeps its meaning.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, TypeSignature, Volatility};

/// Which weighted aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Weighted {
    /// Weighted average: sum(w*x) / sum(w).
    Average,
    /// Weighted sum: sum(w*x).
    Sum,
}

/// The `wavg` / `wsum` aggregate function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct WeightedAggregate {
    kind: Weighted,
    /// Whether the weight is the first argument (q's order) or the second (DuckDB's).
    weight_first: bool,
    signature: Signature,
}

impl WeightedAggregate {
    /// The aggregate of `kind`, weights first (`wavg`, `wsum`). Both arguments
    /// are read as floats.
    pub fn new(kind: Weighted) -> WeightedAggregate {
        let signature = Signature::one_of(
            vec![TypeSignature::Exact(vec![DataType::Float64, DataType::Float64])],
            Volatility::Immutable,
        );
        WeightedAggregate { kind, weight_first: true, signature }
    }

    /// DuckDB's `weighted_avg(x, w)`: the weighted average, value first.
    pub fn weighted_avg() -> WeightedAggregate {
        WeightedAggregate { weight_first: false, ..WeightedAggregate::new(Weighted::Average) }
    }
}

impl AggregateUDFImpl for WeightedAggregate {
    fn name(&self) -> &str {
        match (self.kind, self.weight_first) {
            (Weighted::Average, true) => "wavg",
            (Weighted::Average, false) => "weighted_avg",
            (Weighted::Sum, _) => "wsum",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(vec![DataType::Float64; arg_types.len()])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format_state_name(args.name, "weighted_sum"), DataType::Float64, true)),
            Arc::new(Field::new(format_state_name(args.name, "weight"), DataType::Float64, true)),
        ])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let weight_at = if self.weight_first { 0 } else { 1 };
        Ok(Box::new(WeightedAccumulator { kind: self.kind, weight_at, weighted_sum: 0.0, weight: 0.0, seen: false }))
    }
}

/// Running sums of one group.
#[derive(Debug)]
struct WeightedAccumulator {
    kind: Weighted,
    /// The argument holding the weights (0 or 1); the other holds the values.
    weight_at: usize,
    weighted_sum: f64,
    weight: f64,
    seen: bool,
}

impl Accumulator for WeightedAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (w, x) = (
            values[self.weight_at].as_primitive::<Float64Type>(),
            values[1 - self.weight_at].as_primitive::<Float64Type>(),
        );
        if w.null_count() == 0 && x.null_count() == 0 {
            for (w, x) in w.values().iter().zip(x.values().iter()) {
                self.weighted_sum += w * x;
                self.weight += w;
            }
            self.seen |= !w.is_empty();
        } else {
            for (w, x) in w.iter().zip(x.iter()) {
                if let (Some(w), Some(x)) = (w, x) {
                    self.weighted_sum += w * x;
                    self.weight += w;
                    self.seen = true;
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(match (self.seen, self.kind) {
            (false, _) => None,
            (true, Weighted::Sum) => Some(self.weighted_sum),
            (true, Weighted::Average) => Some(self.weighted_sum / self.weight),
        }))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let seen = |v: f64| ScalarValue::Float64(self.seen.then_some(v));
        Ok(vec![seen(self.weighted_sum), seen(self.weight)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (sums, weights) = (states[0].as_primitive::<Float64Type>(), states[1].as_primitive::<Float64Type>());
        for (s, w) in sums.iter().zip(weights.iter()) {
            if let (Some(s), Some(w)) = (s, w) {
                self.weighted_sum += s;
                self.weight += w;
                self.seen = true;
            }
        }
        Ok(())
    }
}
