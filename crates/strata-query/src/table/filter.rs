//! Recognising the filters a Strata scan can answer from what the storage knows:
//! `col = v`, `col IN (...)`, `col < v` (and `<=`, `>`, `>=`, `BETWEEN`) with a
//! literal on one side. Anything else stays with DataFusion.

use std::ops::Bound;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::utils::split_binary;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, expr::InList};

/// A test of one column against literals.
#[derive(Clone, Debug, PartialEq)]
pub enum Test {
    /// The value is one of these (`=` or `IN`).
    OneOf(Vec<ScalarValue>),
    /// The value lies within these bounds.
    Range(Bound<ScalarValue>, Bound<ScalarValue>),
    /// The value is not this one (`<>`).
    Not(ScalarValue),
}

/// A filter on one column.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnTest {
    /// The column's name.
    pub column: String,
    /// The test.
    pub test: Test,
    /// Whether the column was read through a cast to text (a symbol or char column
    /// compared with a string).
    pub as_text: bool,
}

/// The test `expr` makes, if it is one of the recognised forms.
pub fn column_test(expr: &Expr) -> Option<ColumnTest> {
    match expr {
        // The optimizer turns short IN lists into ORs of equalities: turn them back.
        Expr::BinaryExpr(BinaryExpr { op: Operator::Or, .. }) => {
            let mut values = Vec::new();
            let mut column = None;
            for part in split_binary(expr, Operator::Or) {
                let test = column_test(part)?;
                let Test::OneOf(v) = test.test else { return None };
                if column.get_or_insert((test.column.clone(), test.as_text)) != &(test.column, test.as_text) {
                    return None;
                }
                values.extend(v);
            }
            let (column, as_text) = column?;
            Some(ColumnTest { column, test: Test::OneOf(values), as_text })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, as_text, value, op) = match (column_of(left), literal_of(right)) {
                (Some((c, t)), Some(v)) => (c, t, v, *op),
                _ => {
                    let (c, t) = column_of(right)?;
                    (c, t, literal_of(left)?, op.swap()?)
                }
            };
            let test = match op {
                Operator::Eq => Test::OneOf(vec![value]),
                Operator::NotEq => Test::Not(value),
                Operator::Lt => Test::Range(Bound::Unbounded, Bound::Excluded(value)),
                Operator::LtEq => Test::Range(Bound::Unbounded, Bound::Included(value)),
                Operator::Gt => Test::Range(Bound::Excluded(value), Bound::Unbounded),
                Operator::GtEq => Test::Range(Bound::Included(value), Bound::Unbounded),
                _ => return None,
            };
            Some(ColumnTest { column, test, as_text })
        }
        Expr::InList(InList { expr, list, negated: false }) => {
            let (column, as_text) = column_of(expr)?;
            let values = list.iter().map(literal_of).collect::<Option<Vec<_>>>()?;
            Some(ColumnTest { column, test: Test::OneOf(values), as_text })
        }
        Expr::Between(Between { expr, negated: false, low, high }) => {
            let (column, as_text) = column_of(expr)?;
            let test = Test::Range(Bound::Included(literal_of(low)?), Bound::Included(literal_of(high)?));
            Some(ColumnTest { column, test, as_text })
        }
        _ => None,
    }
}

/// A bare column, or a column cast to text (how SQL compares a dictionary column
/// with a string); the flag says which.
fn column_of(expr: &Expr) -> Option<(String, bool)> {
    match expr {
        Expr::Column(c) => Some((c.name.clone(), false)),
        Expr::Cast(cast) if cast.field.data_type().is_string() => match cast.expr.as_ref() {
            Expr::Column(c) => Some((c.name.clone(), true)),
            _ => None,
        },
        _ => None,
    }
}

/// A literal, or a literal under a cast (folded here, since filters reach a scan
/// before every constant is simplified). Null literals are not tests a scan can
/// answer by position, so they are refused.
fn literal_of(expr: &Expr) -> Option<ScalarValue> {
    let value = match expr {
        Expr::Literal(v, _) => v.clone(),
        Expr::Cast(cast) => literal_of(&cast.expr)?.cast_to(cast.field.data_type()).ok()?,
        _ => return None,
    };
    let value = match value {
        ScalarValue::Dictionary(_, inner) => *inner,
        v => v,
    };
    (!value.is_null()).then_some(value)
}

/// The text of a string literal.
pub fn text_of(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// The literal as a 64-bit integer, for integer and temporal literals only (a float
/// literal would change meaning if truncated).
pub fn integer_of(value: &ScalarValue) -> Option<i64> {
    if !(value.data_type().is_integer() || value.data_type().is_temporal()) {
        return None;
    }
    match value.cast_to(&datafusion::arrow::datatypes::DataType::Int64).ok()? {
        ScalarValue::Int64(Some(v)) => Some(v),
        _ => None,
    }
}

/// The literal as a float, for numeric literals.
pub fn float_of(value: &ScalarValue) -> Option<f64> {
    if !value.data_type().is_numeric() {
        return None;
    }
    match value.cast_to(&datafusion::arrow::datatypes::DataType::Float64).ok()? {
        ScalarValue::Float64(Some(v)) => Some(v),
        _ => None,
    }
}

/// Inclusive integer bounds `[lo, hi]` of a range test (empty when `lo > hi`).
pub fn integer_bounds(lo: &Bound<ScalarValue>, hi: &Bound<ScalarValue>) -> Option<(i64, i64)> {
    let lo = match lo {
        Bound::Unbounded => i64::MIN,
        Bound::Included(v) => integer_of(v)?,
        Bound::Excluded(v) => integer_of(v)?.saturating_add(1),
    };
    let hi = match hi {
        Bound::Unbounded => i64::MAX,
        Bound::Included(v) => integer_of(v)?,
        Bound::Excluded(v) => match integer_of(v)?.checked_sub(1) {
            Some(h) => h,
            None => return Some((1, 0)),
        },
    };
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit};

    use super::*;

    fn lit_value(s: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(s.to_string()))
    }

    #[test]
    fn recognises_comparisons_either_way_round() {
        let t = column_test(&lit(5i64).gt(col("i"))).unwrap();
        assert_eq!(t.test, Test::Range(Bound::Unbounded, Bound::Excluded(ScalarValue::Int64(Some(5)))));
        let t = column_test(&col("sym").in_list(vec![lit("A"), lit("B")], false)).unwrap();
        assert_eq!(t.column, "sym");
        assert!(column_test(&col("sym").in_list(vec![lit("A")], true)).is_none(), "NOT IN is not a range");
        assert!(column_test(&col("a").eq(col("b"))).is_none());
        let ors = column_test(&col("s").eq(lit("A")).or(col("s").eq(lit("B"))).or(col("s").eq(lit("C")))).unwrap();
        assert_eq!(ors.test, Test::OneOf(vec![lit_value("A"), lit_value("B"), lit_value("C")]));
        assert!(column_test(&col("s").eq(lit("A")).or(col("t").eq(lit("B")))).is_none(), "two columns");
        assert_eq!(
            integer_bounds(&Bound::Excluded(ScalarValue::Int64(Some(3))), &Bound::Unbounded),
            Some((4, i64::MAX))
        );
        assert_eq!(integer_of(&ScalarValue::Float64(Some(2.5))), None);
    }
}
