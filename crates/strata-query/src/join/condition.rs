//! The ON condition of a time join, taken apart: key equalities between the two
//! sides, and comparisons of a left expression with a right one (`BETWEEN` counts
//! as two). Also the marker functions that tag a join as an as-of or window join
//! between the SQL rewrite and the planner rules.

use arrow_schema::DataType;
use datafusion::common::{DFSchemaRef, Result, plan_err};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    Between, BinaryExpr, ColumnarValue, Expr, Join, Operator, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// A zero-argument function that is true everywhere and only tags a join's ON
/// condition; evaluating it is an error (a rule should have consumed it).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JoinMarker {
    name: &'static str,
    signature: Signature,
}

impl JoinMarker {
    /// The marker called `name`.
    pub fn new(name: &'static str) -> JoinMarker {
        JoinMarker { name, signature: Signature::nullary(Volatility::Volatile) }
    }
}

impl ScalarUDFImpl for JoinMarker {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!("{}() marks a time join's condition; it cannot be evaluated", self.name)
    }
}

/// Whether `expr` is a call of the marker `name`.
pub fn is_marker(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::ScalarFunction(f) if f.func.name() == name)
}

/// Whether the conjunction `expr` contains the marker `name`.
pub fn has_marker(expr: &Expr, name: &str) -> bool {
    split_conjunction(expr).into_iter().any(|e| is_marker(e, name))
}

/// `left op right`, with `left` over the left input's columns and `right` over the
/// right input's.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The left side's expression.
    pub left: Expr,
    /// `<`, `<=`, `>` or `>=`.
    pub op: Operator,
    /// The right side's expression.
    pub right: Expr,
    /// The condition as written, for messages.
    pub text: String,
}

/// A time join's ON condition, without its marker.
#[derive(Clone, Debug, Default)]
pub struct JoinCondition {
    /// Pairs of equal keys, left expression then right.
    pub keys: Vec<(Expr, Expr)>,
    /// The comparisons, each oriented left to right.
    pub comparisons: Vec<Comparison>,
}

/// Which input an expression reads: `Some(true)` left, `Some(false)` right, `None`
/// both or neither.
fn side(expr: &Expr, left: &DFSchemaRef, right: &DFSchemaRef) -> Option<bool> {
    let columns = expr.column_refs();
    if columns.is_empty() {
        None
    } else if columns.iter().all(|c| left.has_column(c)) {
        Some(true)
    } else if columns.iter().all(|c| right.has_column(c)) {
        Some(false)
    } else {
        None
    }
}

/// Takes the ON condition of `join` (marked with `marker`) apart. `what` names the
/// join in messages (`ASOF JOIN`). Every conjunct must compare a left expression
/// with a right one by `=`, `<`, `<=`, `>`, `>=` or `BETWEEN`.
pub fn split(join: &Join, marker: &str, what: &str) -> Result<JoinCondition> {
    let (left_schema, right_schema) = (join.left.schema(), join.right.schema());
    let mut condition = JoinCondition { keys: join.on.clone(), comparisons: Vec::new() };
    let Some(filter) = &join.filter else { return Ok(condition) };
    for conjunct in split_conjunction(filter) {
        if is_marker(conjunct, marker) {
            continue;
        }
        let text = conjunct.to_string();
        let pairs: Vec<(&Expr, Operator, &Expr)> = match conjunct {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => vec![(left, *op, right)],
            Expr::Between(Between { expr, negated: false, low, high }) => {
                vec![(expr, Operator::GtEq, low), (expr, Operator::LtEq, high)]
            }
            _ => {
                return plan_err!("{what} conditions are key equalities and time comparisons; `{conjunct}` is neither");
            }
        };
        for (a, op, b) in pairs {
            let (left, op, right) = match (side(a, left_schema, right_schema), side(b, left_schema, right_schema)) {
                (Some(true), Some(false)) => (a.clone(), op, b.clone()),
                (Some(false), Some(true)) => match op.swap() {
                    Some(swapped) => (b.clone(), swapped, a.clone()),
                    None => return plan_err!("{what} condition `{text}` is not a comparison"),
                },
                _ => return plan_err!("{what} condition `{text}` must compare a left column with a right column"),
            };
            match op {
                Operator::Eq => condition.keys.push((left, right)),
                Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
                    condition.comparisons.push(Comparison { left, op, right, text: text.clone() })
                }
                _ => return plan_err!("{what} condition `{text}` must be =, >=, >, <= or <"),
            }
        }
    }
    Ok(condition)
}
