//! Result columns named as DuckDB names them. DataFusion names an unaliased
//! `sum(price)` after its resolved column, `sum(trade.price)`, and `count(*)` as
//! `count(*)`; DuckDB keeps the call as written, `sum(price)`, and says
//! `count_star()`. A DuckDB user's code reads columns by those names (and over kdb+
//! IPC they become `sumprice` and `count_star`), so each unaliased function call of
//! the outermost SELECT (the leftmost one of a UNION) gets its written text as alias.
//! Other expressions keep DataFusion's names.

use datafusion::sql::sqlparser::ast::{Expr, Ident, Select, SelectItem, SetExpr, Statement};

/// Names the unaliased function calls of `statement`'s outermost SELECT as written.
pub fn name_as_written(statement: &mut Statement) {
    let Statement::Query(query) = statement else { return };
    let Some(select) = leftmost_select(query.body.as_mut()) else { return };
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(expr @ Expr::Function(_)) = item {
            let alias = Ident::with_quote('"', duckdb_name(expr));
            *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias };
        }
    }
}

/// The SELECT whose items name a query's columns.
fn leftmost_select(body: &mut SetExpr) -> Option<&mut Select> {
    match body {
        SetExpr::Select(select) => Some(select.as_mut()),
        SetExpr::SetOperation { left, .. } => leftmost_select(left.as_mut()),
        _ => None,
    }
}

/// A call's name in DuckDB: its text, `count(*)` as `count_star()`.
fn duckdb_name(call: &Expr) -> String {
    let text = call.to_string();
    if text.eq_ignore_ascii_case("count(*)") { "count_star()".to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn named(sql: &str) -> String {
        let mut statement = Parser::parse_sql(&GenericDialect {}, sql).unwrap().remove(0);
        name_as_written(&mut statement);
        statement.to_string()
    }

    #[test]
    fn unaliased_calls_of_the_outermost_select_are_named_as_written() {
        assert_eq!(
            named("SELECT sym, count(*), sum(t.size) AS v, max(price) + 1 FROM t GROUP BY sym"),
            "SELECT sym, count(*) AS \"count_star()\", sum(t.size) AS v, max(price) + 1 FROM t GROUP BY sym"
        );
        assert_eq!(
            named("SELECT avg(price) FROM a UNION ALL SELECT max(price) FROM b"),
            "SELECT avg(price) AS \"avg(price)\" FROM a UNION ALL SELECT max(price) FROM b"
        );
        assert_eq!(
            named("SELECT n FROM (SELECT count(*) FROM t)"),
            "SELECT n FROM (SELECT count(*) FROM t)",
            "subqueries keep DataFusion's names, which their outer query may use"
        );
    }
}
