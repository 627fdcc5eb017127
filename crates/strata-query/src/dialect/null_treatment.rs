//! `IGNORE NULLS` / `RESPECT NULLS` given to the call they were written for.
//!
//! In DuckDB (and the SQL standard's window functions) a null treatment written
//! inside a call's parentheses, after its arguments, belongs to that call:
//! `last_value(x IGNORE NULLS)`. sqlparser gives it to the call when the last
//! argument is a plain expression, but when the argument ends in a call of its
//! own, `last_value(coalesce(a, b) IGNORE NULLS)` or DuckDB's forward fill
//! `last_value(COLUMNS(* EXCLUDE minute) IGNORE NULLS)`, it reads the treatment as
//! the inner call's (`coalesce(a, b) IGNORE NULLS`). DataFusion then plans the
//! inner call without it (a scalar function has no null treatment) and COLUMNS(...)
//! is written out as columns that cannot carry one: either way the outer
//! `last_value` respected nulls and answered each row's own value, with no error.
//! [`give_to_written_call`] moves such a treatment to the call whose parentheses
//! hold it, before any other rewrite copies the expression.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments, NullTreatment, Statement,
    visit_expressions_mut,
};

/// Gives every null treatment written after a call's last argument to that call
/// (see the module documentation). An error names a call that would get two.
pub fn give_to_written_call(statement: &mut Statement) -> Result<(), String> {
    let mut failure = None;
    let _ = visit_expressions_mut(statement, |expr| {
        let Expr::Function(outer) = expr else { return ControlFlow::Continue(()) };
        let Some(treatment) = take_trailing(outer) else { return ControlFlow::Continue(()) };
        if has_own(outer) {
            failure = Some(format!("{outer}: two null treatments (IGNORE NULLS / RESPECT NULLS) for one call"));
            return ControlFlow::Break(());
        }
        if let FunctionArguments::List(list) = &mut outer.args {
            // First, as the parser places it: before an ORDER BY or LIMIT clause.
            list.clauses.insert(0, FunctionArgumentClause::IgnoreOrRespectNulls(treatment));
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Takes the null treatment the parser gave to the call that ends `outer`'s last
/// argument (the rightmost call of it, not a window call), if any.
fn take_trailing(outer: &mut Function) -> Option<NullTreatment> {
    let FunctionArguments::List(list) = &mut outer.args else { return None };
    let last = match list.args.last_mut()? {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
        | FunctionArg::Named { arg: FunctionArgExpr::Expr(e), .. }
        | FunctionArg::ExprNamed { arg: FunctionArgExpr::Expr(e), .. } => e,
        _ => return None,
    };
    let inner = rightmost_call(last)?;
    if inner.over.is_some() {
        return None;
    }
    inner.null_treatment.take()
}

/// The call `expr` ends with, as written: itself, or the right side of an operator.
fn rightmost_call(expr: &mut Expr) -> Option<&mut Function> {
    match expr {
        Expr::Function(f) => Some(f),
        Expr::BinaryOp { right, .. } => rightmost_call(right),
        Expr::UnaryOp { expr, .. } => rightmost_call(expr),
        Expr::Between { high, .. } => rightmost_call(high),
        _ => None,
    }
}

/// Whether `call` already has a null treatment of its own.
fn has_own(call: &Function) -> bool {
    call.null_treatment.is_some()
        || matches!(&call.args, FunctionArguments::List(list)
            if list.clauses.iter().any(|c| matches!(c, FunctionArgumentClause::IgnoreOrRespectNulls(_))))
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    /// Each call of `sql`, once treatments are given: its name and whether it holds
    /// a null treatment (as its own or among its argument clauses).
    fn holders(sql: &str) -> Result<Vec<(String, bool)>, String> {
        let mut s = Parser::parse_sql(&GenericDialect {}, sql).unwrap().remove(0);
        give_to_written_call(&mut s)?;
        let mut calls = Vec::new();
        let _ = visit_expressions_mut(&mut s, |e| {
            if let Expr::Function(f) = e {
                calls.push((f.name.to_string(), has_own(f)));
            }
            ControlFlow::<()>::Continue(())
        });
        Ok(calls)
    }

    fn held(calls: &[(&str, bool)]) -> Vec<(String, bool)> {
        calls.iter().map(|(n, h)| (n.to_string(), *h)).collect()
    }

    #[test]
    fn a_treatment_after_an_inner_call_goes_to_the_call_around_it() {
        let sql = "SELECT last_value(COLUMNS(* EXCLUDE m) IGNORE NULLS) OVER (ORDER BY m) FROM t";
        assert_eq!(holders(sql).unwrap(), held(&[("COLUMNS", false), ("last_value", true)]));
        let sql = "SELECT last_value(coalesce(a, b) IGNORE NULLS ORDER BY t) FROM x";
        assert_eq!(holders(sql).unwrap(), held(&[("coalesce", false), ("last_value", true)]));
        // As an operator's right side too; a plain argument's stays where it is.
        let sql = "SELECT first_value(1 + abs(a) RESPECT NULLS), last_value(a IGNORE NULLS) FROM x";
        assert_eq!(holders(sql).unwrap(), held(&[("abs", false), ("first_value", true), ("last_value", true)]));
    }

    #[test]
    fn a_window_call_keeps_its_own_and_two_are_refused() {
        let sql = "SELECT sum(last_value(x) IGNORE NULLS OVER (ORDER BY t)) FROM x";
        assert_eq!(holders(sql).unwrap(), held(&[("last_value", true), ("sum", false)]));
        let err = holders("SELECT last_value(abs(x) IGNORE NULLS) RESPECT NULLS OVER () FROM x").unwrap_err();
        assert!(err.contains("two null treatments"), "{err}");
    }
}
