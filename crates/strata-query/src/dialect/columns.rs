//! DuckDB's `COLUMNS(...)`: one expression written for many columns of the FROM
//! clause, which DataFusion has no form of.
//!
//! | written | stands for |
//! |---|---|
//! | `COLUMNS(*)` | every column the star lists |
//! | `COLUMNS(* EXCLUDE (sym, ex))` | those but the ones named |
//! | `COLUMNS(* REPLACE (price * 2 AS price))` | every column, the ones named as the expressions given |
//! | `COLUMNS('bid\|ask')` | the columns whose names the regular expression matches (anywhere in the name, as DuckDB's RE2 search) |
//!
//! A SELECT item holding `COLUMNS(...)` becomes one item per column, each named as
//! its column (`max(COLUMNS(*))` gives columns named as the table's, as in DuckDB);
//! several `COLUMNS(...)` in one item must stand for as many columns, and go
//! through them together. In WHERE, the copies are joined with AND. The columns
//! come from a probe of the query's FROM ([`probe`]), innermost query first.

use std::ops::ControlFlow;

use datafusion::common::TableReference;
use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectNamePart, Query, SelectItem, SetExpr,
    Statement, Value, ValueWithSpan, Visit, VisitMut, Visitor, VisitorMut, WildcardAdditionalOptions,
    visit_expressions, visit_expressions_mut,
};

use super::rename::{Hidden, column_expr, probe_of, shown, statement_ctes};

/// A probe's columns, each with its table.
type Columns = [(Option<TableReference>, String)];

/// Whether `expr` is a call of `COLUMNS`.
fn columns_call(expr: &Expr) -> Option<&Function> {
    match expr {
        Expr::Function(f) if matches!(f.name.0.as_slice(), [ObjectNamePart::Identifier(id)] if id.value.eq_ignore_ascii_case("columns")) => {
            Some(f)
        }
        _ => None,
    }
}

/// Whether `query`'s own SELECT (its list or WHERE) holds a `COLUMNS(...)`.
fn holds_columns(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else { return false };
    let found = |e: &Expr| {
        visit_expressions(
            e,
            |e| if columns_call(e).is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) },
        )
        .is_break()
    };
    select.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => found(e),
        _ => false,
    }) || select.selection.as_ref().is_some_and(found)
}

/// Calls `f` on the first query of `statement`, innermost first, that holds a
/// `COLUMNS(...)`; `None` when none does.
fn with_first<R>(statement: &mut Statement, f: impl FnOnce(&mut Query) -> R) -> Option<R> {
    struct First<F, R> {
        f: Option<F>,
        result: Option<R>,
    }
    impl<R, F: FnOnce(&mut Query) -> R> VisitorMut for First<F, R> {
        type Break = ();
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            if !holds_columns(query) {
                return ControlFlow::Continue(());
            }
            let f = self.f.take().expect("called once: the visit stops after it");
            self.result = Some(f(query));
            ControlFlow::Break(())
        }
    }
    let mut first = First { f: Some(f), result: None };
    let _ = statement.visit(&mut first);
    first.result
}

/// The query listing the columns of the FROM of the next query of `statement`
/// holding `COLUMNS(...)` (`SELECT *` over it), or `None` when none is left.
pub fn probe(statement: &mut Statement) -> Option<Query> {
    let outer_with = statement_ctes(statement, |query| {
        struct Finder;
        impl Visitor for Finder {
            type Break = ();
            fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
                if holds_columns(query) { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            }
        }
        !query.visit(&mut Finder).is_break()
    });
    let star = SelectItem::Wildcard(WildcardAdditionalOptions::default());
    with_first(statement, |query| probe_of(query, outer_with, star))
}

/// Writes out every `COLUMNS(...)` of the query [`probe`] found, over `columns`
/// (the probe's, each with its table; the hidden columns of views in `hidden` left out).
pub fn expand(statement: &mut Statement, columns: &Columns, hidden: &Hidden) -> Result<(), String> {
    let columns = shown(columns, hidden);
    with_first(statement, |query| expand_query(query, &columns)).unwrap_or(Ok(()))
}

fn expand_query(query: &mut Query, columns: &Columns) -> Result<(), String> {
    let SetExpr::Select(select) = query.body.as_mut() else { return Ok(()) };
    let mut items = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            other => {
                items.push(other);
                continue;
            }
        };
        match copies(&expr, columns)? {
            None => items.push(match alias {
                Some(alias) => SelectItem::ExprWithAlias { expr, alias },
                None => SelectItem::UnnamedExpr(expr),
            }),
            Some(copies) => {
                if let Some(alias) = alias.as_ref().filter(|_| copies.len() > 1) {
                    return Err(format!("{expr} AS {alias}: one name for several columns"));
                }
                items.extend(copies.into_iter().map(|(copy, name)| SelectItem::ExprWithAlias {
                    expr: copy,
                    alias: alias.clone().unwrap_or_else(|| Ident::with_quote('"', name)),
                }));
            }
        }
    }
    select.projection = items;
    if let Some(selection) = select.selection.take() {
        select.selection = Some(match copies(&selection, columns)? {
            None => selection,
            Some(copies) => copies
                .into_iter()
                .map(|(copy, _)| copy)
                .reduce(|a, b| Expr::BinaryOp {
                    left: Box::new(a),
                    op: datafusion::sql::sqlparser::ast::BinaryOperator::And,
                    right: Box::new(b),
                })
                .unwrap_or(Expr::Value(Value::Boolean(true).into())),
        });
    }
    Ok(())
}

/// `expr` once per column its `COLUMNS(...)` stand for, each with the name of its
/// first `COLUMNS(...)`'s column; `None` when it has none.
fn copies(expr: &Expr, columns: &Columns) -> Result<Option<Vec<(Expr, String)>>, String> {
    let mut chosen: Vec<Vec<(Expr, String)>> = Vec::new();
    let mut failure = None;
    let _ = visit_expressions(expr, |e| {
        if let Some(call) = columns_call(e) {
            match chosen_columns(call, columns) {
                Ok(c) => chosen.push(c),
                Err(why) => {
                    failure = Some(why);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    if let Some(why) = failure {
        return Err(why);
    }
    let Some(first) = chosen.first() else { return Ok(None) };
    if let Some(other) = chosen.iter().find(|c| c.len() != first.len()) {
        return Err(format!(
            "{expr}: its COLUMNS(...) stand for different numbers of columns ({} and {})",
            first.len(),
            other.len()
        ));
    }
    let mut out = Vec::with_capacity(first.len());
    for i in 0..first.len() {
        let mut copy = expr.clone();
        let mut n = 0;
        let _ = visit_expressions_mut(&mut copy, |e| {
            if columns_call(e).is_some() {
                *e = chosen[n][i].0.clone();
                n += 1;
            }
            ControlFlow::<()>::Continue(())
        });
        // DuckDB names a copy after its column, unless a REPLACE changed the column
        // inside a larger expression: then after the expression, as DuckDB prints it.
        let replaced_within = columns_call(expr).is_none() && chosen.iter().any(|c| matches!(c[i].0, Expr::Nested(_)));
        let name = if replaced_within { duckdb_text(&copy) } else { first[i].1.clone() };
        out.push((copy, name));
    }
    Ok(Some(out))
}

/// `expr` as DuckDB prints an expression for a column name: every binary operation
/// in parentheses, the parentheses written in the text dropped (`sum(size / 100)`
/// is `sum((size / 100))`, `(size / 100) + 1` is `((size / 100) + 1)`).
fn duckdb_text(expr: &Expr) -> String {
    let mut printed = expr.clone();
    let _ = visit_expressions_mut(&mut printed, |e| {
        while let Expr::Nested(inner) = e {
            *e = std::mem::replace(inner.as_mut(), Expr::Value(Value::Null.into()));
        }
        ControlFlow::<()>::Continue(())
    });
    let _ = visit_expressions_mut(&mut printed, |e| {
        if matches!(e, Expr::BinaryOp { .. }) {
            *e = Expr::Nested(Box::new(std::mem::replace(e, Expr::Value(Value::Null.into()))));
        }
        ControlFlow::<()>::Continue(())
    });
    printed.to_string()
}

/// The columns one `COLUMNS(...)` stands for, as expressions, with their names.
fn chosen_columns(call: &Function, columns: &Columns) -> Result<Vec<(Expr, String)>, String> {
    let FunctionArguments::List(list) = &call.args else {
        return Err(format!("{call}: write COLUMNS(*), COLUMNS(* EXCLUDE (...)) or COLUMNS('regular expression')"));
    };
    refuse_modifiers(call)?;
    let whole = || columns.iter().map(|(t, n)| (column_expr(t, n), n.clone())).collect::<Vec<_>>();
    let chosen = match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => whole(),
        [FunctionArg::Unnamed(FunctionArgExpr::WildcardWithOptions(options))] => starred(options, columns)?,
        [
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(ValueWithSpan {
                value: Value::SingleQuotedString(pattern),
                ..
            }))),
        ] => {
            let regex = regex::Regex::new(pattern).map_err(|e| format!("{call}: not a regular expression: {e}"))?;
            whole().into_iter().filter(|(_, name)| regex.is_match(name)).collect()
        }
        _ => {
            return Err(format!(
                "{call}: write COLUMNS(*), COLUMNS(* EXCLUDE (...)), COLUMNS(* REPLACE (...)) or COLUMNS('regular \
                 expression')"
            ));
        }
    };
    if chosen.is_empty() {
        return Err(format!("{call} stands for no column; the columns are {}", names(columns)));
    }
    Ok(chosen)
}

/// An error naming a modifier written on `COLUMNS(...)` itself: the columns it
/// stands for cannot carry one, and writing it out without would answer without it.
fn refuse_modifiers(call: &Function) -> Result<(), String> {
    let list = match &call.args {
        FunctionArguments::List(list) => Some(list),
        _ => None,
    };
    let modifier = if call.over.is_some() {
        Some("OVER (...)")
    } else if call.filter.is_some() {
        Some("FILTER (WHERE ...)")
    } else if call.null_treatment.is_some() || list.is_some_and(|l| !l.clauses.is_empty()) {
        Some("IGNORE NULLS / RESPECT NULLS / ORDER BY")
    } else if !call.within_group.is_empty() {
        Some("WITHIN GROUP (...)")
    } else if list.is_some_and(|l| l.duplicate_treatment.is_some()) {
        Some("DISTINCT")
    } else if !matches!(call.parameters, FunctionArguments::None) {
        Some("parameters")
    } else {
        None
    };
    match modifier {
        Some(what) => Err(format!(
            "{call}: {what} on COLUMNS(...) itself is not supported; write it on the function around it, as in \
             last_value(COLUMNS(*) IGNORE NULLS) OVER (...) or sum(COLUMNS(*)) FILTER (WHERE ...)"
        )),
        None => Ok(()),
    }
}

/// The columns of a star with EXCLUDE / EXCEPT / REPLACE options.
fn starred(options: &WildcardAdditionalOptions, columns: &Columns) -> Result<Vec<(Expr, String)>, String> {
    if options.opt_rename.is_some() || options.opt_ilike.is_some() {
        return Err(
            "COLUMNS(* RENAME ...) and COLUMNS(* ILIKE ...) are not supported; COLUMNS('regex') selects by name".into(),
        );
    }
    let mut excluded: Vec<String> = Vec::new();
    if let Some(exclude) = &options.opt_exclude {
        use datafusion::sql::sqlparser::ast::ExcludeSelectItem;
        let named = match exclude {
            ExcludeSelectItem::Single(one) => vec![one.to_string()],
            ExcludeSelectItem::Multiple(many) => many.iter().map(|n| n.to_string()).collect(),
        };
        excluded.extend(named.into_iter().map(|n| n.trim_matches('"').to_string()));
    }
    if let Some(except) = &options.opt_except {
        excluded.push(except.first_element.value.clone());
        excluded.extend(except.additional_elements.iter().map(|i| i.value.clone()));
    }
    for name in &excluded {
        if !columns.iter().any(|(_, n)| n == name) {
            return Err(format!(
                "COLUMNS(* EXCLUDE ...) names column {name}, which * does not list: {}",
                names(columns)
            ));
        }
    }
    let replaced: Vec<(String, Expr)> = options
        .opt_replace
        .iter()
        .flat_map(|r| r.items.iter())
        .map(|item| (item.column_name.value.clone(), item.expr.clone()))
        .collect();
    for (name, _) in &replaced {
        if !columns.iter().any(|(_, n)| n == name) {
            return Err(format!(
                "COLUMNS(* REPLACE ...) names column {name}, which * does not list: {}",
                names(columns)
            ));
        }
    }
    Ok(columns
        .iter()
        .filter(|(_, n)| !excluded.contains(n))
        .map(|(t, n)| match replaced.iter().find(|(r, _)| r == n) {
            Some((_, with)) => (Expr::Nested(Box::new(with.clone())), n.clone()),
            None => (column_expr(t, n), n.clone()),
        })
        .collect())
}

fn names(columns: &Columns) -> String {
    columns.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn written(sql: &str, columns: &[&str]) -> Result<String, String> {
        let mut s = Parser::parse_sql(&GenericDialect {}, sql).unwrap().remove(0);
        let columns: Vec<_> = columns.iter().map(|c| (None, c.to_string())).collect();
        probe(&mut s).expect("a COLUMNS");
        expand(&mut s, &columns, &Hidden::new())?;
        assert!(probe(&mut s).is_none(), "all written out: {s}");
        Ok(s.to_string())
    }

    #[test]
    fn forms() {
        let cols = ["sym", "bid", "ask", "bsize"];
        assert_eq!(
            written("SELECT max(COLUMNS(*)) FROM q", &cols[..2]).unwrap(),
            r#"SELECT max("sym") AS "sym", max("bid") AS "bid" FROM q"#
        );
        assert_eq!(
            written("SELECT sym, avg(COLUMNS(* EXCLUDE (sym, bsize))) FROM q GROUP BY sym", &cols).unwrap(),
            r#"SELECT sym, avg("bid") AS "bid", avg("ask") AS "ask" FROM q GROUP BY sym"#
        );
        assert_eq!(
            written("SELECT COLUMNS('^(bid|ask)$') * 2 FROM q", &cols).unwrap(),
            r#"SELECT "bid" * 2 AS "bid", "ask" * 2 AS "ask" FROM q"#
        );
        assert_eq!(
            written("SELECT COLUMNS(* REPLACE (bid + 1 AS bid)) FROM q", &cols[..2]).unwrap(),
            r#"SELECT "sym" AS "sym", (bid + 1) AS "bid" FROM q"#
        );
        assert_eq!(
            written("SELECT * FROM q WHERE COLUMNS('b') > 0", &cols).unwrap(),
            r#"SELECT * FROM q WHERE "bid" > 0 AND "bsize" > 0"#
        );
        // Innermost first.
        assert_eq!(
            written("SELECT x FROM (SELECT COLUMNS('a') FROM q)", &cols).unwrap(),
            r#"SELECT x FROM (SELECT "ask" AS "ask" FROM q)"#
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let cols = ["sym", "bid"];
        assert!(written("SELECT COLUMNS('zz') FROM q", &cols).unwrap_err().contains("stands for no column"));
        assert!(written("SELECT COLUMNS('(') FROM q", &cols).unwrap_err().contains("not a regular expression"));
        assert!(written("SELECT COLUMNS(* EXCLUDE (z)) FROM q", &cols).unwrap_err().contains("names column z"));
        assert!(written("SELECT COLUMNS('s') + COLUMNS(*) FROM q", &cols).unwrap_err().contains("different numbers"));
        assert!(written("SELECT max(COLUMNS(*)) AS m FROM q", &cols).unwrap_err().contains("one name"));
        for modified in [
            "SELECT COLUMNS(*) IGNORE NULLS FROM q",
            "SELECT COLUMNS(*) OVER (ORDER BY sym) FROM q",
            "SELECT COLUMNS(*) FILTER (WHERE bid > 0) FROM q",
            "SELECT COLUMNS(DISTINCT *) FROM q",
        ] {
            let err = written(modified, &cols).unwrap_err();
            assert!(err.contains("on COLUMNS(...) itself is not supported"), "{modified}: {err}");
        }
    }
}
