//! `PIVOT` and `UNPIVOT` in the FROM clause (the SQL-standard form DuckDB, Snowflake
//! and others take), which DataFusion parses but does not plan, written out as
//! ordinary SQL:
//!
//! - `t PIVOT (sum(size) [AS s], ... FOR ex IN ('N' [AS nyse], 'Q') [DEFAULT ON NULL (0)])`
//!   is `(SELECT <the other columns>, sum(size) FILTER (WHERE ex = 'N') AS "N", ...
//!   FROM t GROUP BY <the other columns>)`: one row per value of the columns that
//!   are neither pivoted nor aggregated (leaving out kdb+'s row number `i`, which
//!   would make every row its own group), one column per value (and aggregate:
//!   `N_s` when there are several or they are named, as DuckDB names them). When
//!   every aggregate's value over no rows is known ([`empty_cell`]), the FROM is
//!   `(SELECT <groups>, ex, sum(size) AS cell FROM t GROUP BY <groups>, ex)` and each
//!   column `max(cell) FILTER (WHERE ex = 'N')`: one pass over the rows rather than
//!   one per value.
//!   `IN (ANY [ORDER BY ...])` and `IN (SELECT ...)` list the values the data has.
//! - `t UNPIVOT [INCLUDE NULLS] (v FOR k IN (bid [AS b], ask))` is `(SELECT * EXCLUDE
//!   (bid, ask), 'b' AS k, bid AS v FROM t WHERE bid IS NOT NULL UNION ALL ...)`.
//!
//! What a pivot stands for depends on data (its columns, and for the dynamic form
//! its values), so the engine answers [`needs`] first and hands the answers to
//! [`write_out`].

use std::ops::ControlFlow;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, ExprWithAlias, Function, PivotValueSource, Query, Statement, TableFactor, Value, Visit,
    VisitMut, Visitor, VisitorMut, visit_expressions,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::parser::Parser;

/// A question about the data a pivot needs answered.
#[derive(Debug, PartialEq)]
pub enum Need {
    /// The column names of this query's result (it is planned, not run).
    Columns(String),
    /// The values of this query's first column (it is run).
    Values(String),
}

/// The answer to a [`Need`], in the same order.
#[derive(Debug)]
pub enum Answer {
    /// Column names.
    Columns(Vec<String>),
    /// Values.
    Values(Vec<ScalarValue>),
}

/// Calls `f` on every PIVOT and UNPIVOT table factor of a statement, innermost
/// first, stopping at the first error.
struct Factors<F>(F);

impl<F: FnMut(&mut TableFactor) -> Result<(), String>> VisitorMut for Factors<F> {
    type Break = String;

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<String> {
        if matches!(factor, TableFactor::Pivot { .. } | TableFactor::Unpivot { .. })
            && let Err(e) = (self.0)(factor)
        {
            return ControlFlow::Break(e);
        }
        ControlFlow::Continue(())
    }
}

/// The statement's WITH clause as text (CTEs a pivoted table may name), without
/// the CTEs that hold a pivot themselves: those cannot be planned before they are
/// written out (`WITH p AS (PIVOT ...)`), so a pivot cannot read another's CTE.
fn with_of(statement: &Statement) -> String {
    let Statement::Query(query) = statement else { return String::new() };
    let Some(with) = &query.with else { return String::new() };
    let mut plain = with.clone();
    plain.cte_tables.retain(|cte| !has_pivot(&cte.query));
    if plain.cte_tables.is_empty() { String::new() } else { format!("{plain} ") }
}

/// Whether `query` has a PIVOT or UNPIVOT table factor anywhere in it.
fn has_pivot(query: &Query) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Pivot { .. } | TableFactor::Unpivot { .. } => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    query.visit(&mut Finder).is_break()
}

/// What `statement`'s pivots need to know, in order: for each PIVOT its input's
/// columns, then (for `IN (ANY ...)` or `IN (SELECT ...)`) its values.
pub fn needs(statement: &mut Statement) -> Result<Vec<Need>, String> {
    let with = with_of(statement);
    let mut needs = Vec::new();
    let flow = statement.visit(&mut Factors(|factor: &mut TableFactor| {
        if let TableFactor::Pivot { table, value_column, value_source, .. } = factor {
            needs.push(Need::Columns(format!("{with}SELECT * FROM {table}")));
            let column = pivot_column(value_column)?;
            match value_source {
                PivotValueSource::List(_) => {}
                PivotValueSource::Any(order) => {
                    let order = if order.is_empty() {
                        column.to_string()
                    } else {
                        order.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                    };
                    needs.push(Need::Values(format!(
                        "{with}SELECT DISTINCT {column} FROM {table} WHERE {column} IS NOT NULL ORDER BY {order}"
                    )));
                }
                PivotValueSource::Subquery(q) => needs.push(Need::Values(format!("{with}{q}"))),
            }
        }
        Ok(())
    }));
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(needs),
    }
}

/// The one column a pivot spreads.
fn pivot_column(columns: &[Expr]) -> Result<&Expr, String> {
    match columns {
        [one @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))] => Ok(one),
        _ => Err(format!(
            "PIVOT ... FOR {}: pivot on one column",
            columns.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Rewrites every PIVOT and UNPIVOT of `statement` as a subquery, with `answers`
/// to [`needs`] in order.
pub fn write_out(statement: &mut Statement, answers: Vec<Answer>, dialect: &dyn Dialect) -> Result<(), String> {
    let mut answers = answers.into_iter();
    let flow = statement.visit(&mut Factors(|factor: &mut TableFactor| {
        let text = match factor {
            TableFactor::Pivot { .. } => pivot_text(factor, &mut answers)?,
            _ => unpivot_text(factor)?,
        };
        let parsed = Parser::new(dialect)
            .try_with_sql(&format!("SELECT * FROM {text}"))
            .and_then(|mut p| p.parse_query())
            .map_err(|e| format!("PIVOT written out as {text} does not parse: {e}"))?;
        let datafusion::sql::sqlparser::ast::SetExpr::Select(select) = *parsed.body else {
            return Err("PIVOT written out is not a SELECT".to_string());
        };
        *factor = select.from.into_iter().next().map(|t| t.relation).ok_or("PIVOT written out has no FROM")?;
        Ok(())
    }));
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A PIVOT as a grouped subquery (see the module documentation).
fn pivot_text(factor: &TableFactor, answers: &mut impl Iterator<Item = Answer>) -> Result<String, String> {
    let TableFactor::Pivot { table, aggregate_functions, value_column, value_source, default_on_null, alias } = factor
    else {
        unreachable!("a pivot")
    };
    let Some(Answer::Columns(columns)) = answers.next() else {
        return Err("PIVOT: its input's columns are unknown".into());
    };
    let column = pivot_column(value_column)?;
    let values: Vec<(String, String)> = match value_source {
        PivotValueSource::List(list) => list.iter().map(listed_value).collect(),
        _ => match answers.next() {
            Some(Answer::Values(values)) => values.iter().map(found_value).collect::<Result<_, _>>()?,
            _ => return Err("PIVOT: its values are unknown".into()),
        },
    };
    if values.is_empty() {
        return Err(format!("PIVOT ... FOR {column}: no values to pivot on"));
    }
    let mut used = vec![last_name(column)];
    for aggregate in aggregate_functions {
        let _ = visit_expressions(&aggregate.expr, |e| {
            if let Some(name) = expr_name(e) {
                used.push(name);
            }
            ControlFlow::<()>::Continue(())
        });
    }
    let groups: Vec<String> = columns
        .iter()
        .filter(|c| !crate::table::HIDDEN_COLUMNS.contains(&c.as_str()) && !used.contains(c))
        .map(|c| quoted(c))
        .collect();
    let named = aggregate_functions.len() > 1 || aggregate_functions.iter().any(|a| a.alias.is_some());
    let calls = aggregate_functions
        .iter()
        .map(|a| match &a.expr {
            Expr::Function(function) => Ok(function),
            expr => Err(format!("PIVOT ({expr} ...): pivot aggregate function calls")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let empty_cells = calls.iter().map(|f| empty_cell(f)).collect::<Option<Vec<_>>>();
    let source = match &empty_cells {
        Some(_) => {
            let mut keys = groups.clone();
            keys.push(column.to_string());
            let mut inner = groups.clone();
            inner.push(format!("{column} AS {PIVOT_ON}"));
            inner.extend(calls.iter().enumerate().map(|(k, call)| format!("{call} AS {}", cell_name(k))));
            format!("(SELECT {} FROM {table} GROUP BY {})", inner.join(", "), keys.join(", "))
        }
        None => table.to_string(),
    };
    let mut items = groups.clone();
    for (literal, value_name) in &values {
        for (k, (call, ExprWithAlias { expr, alias })) in calls.iter().zip(aggregate_functions).enumerate() {
            let value = match &empty_cells {
                Some(empty) => {
                    let picked = format!("max({}) FILTER (WHERE {PIVOT_ON} = {literal})", cell_name(k));
                    match empty[k] {
                        EmptyCell::Null => picked,
                        EmptyCell::Zero => format!("coalesce({picked}, 0)"),
                    }
                }
                None => filtered(call, column, literal)?.to_string(),
            };
            let value = match default_on_null {
                Some(default) => format!("coalesce({value}, {default})"),
                None => value,
            };
            let name = match (named, alias) {
                (false, _) => value_name.clone(),
                (true, Some(alias)) => format!("{value_name}_{}", alias.value),
                (true, None) => format!("{value_name}_{expr}"),
            };
            items.push(format!("{value} AS {}", quoted(&name)));
        }
    }
    let group_by = if groups.is_empty() { String::new() } else { format!(" GROUP BY {}", groups.join(", ")) };
    let alias = alias.as_ref().map(|a| format!(" {a}")).unwrap_or_default();
    Ok(format!("(SELECT {} FROM {source}{group_by}){alias}", items.join(", ")))
}

/// The name the grouped subquery gives the pivoted column.
const PIVOT_ON: &str = "__strata_pivot_on";

/// The name the grouped subquery gives the `k`th aggregate.
fn cell_name(k: usize) -> String {
    format!("__strata_pivot_cell{k}")
}

/// What an aggregate gives over no rows, for the aggregates a pivot may compute
/// once per group and value before spreading them: a cell whose group has no row
/// of its value is empty in the grouped subquery, and must read as the aggregate
/// of nothing (DuckDB: `count` 0, the others NULL). Other aggregates (whose empty
/// value is not known here) are computed per cell with a FILTER.
fn empty_cell(function: &Function) -> Option<EmptyCell> {
    let name = function.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    match name.as_str() {
        "count" => Some(EmptyCell::Zero),
        "sum" | "avg" | "mean" | "min" | "max" | "median" | "stddev" | "stddev_samp" | "stddev_pop" | "var"
        | "var_samp" | "var_pop" | "variance" | "corr" | "covar" | "covar_samp" | "covar_pop" | "first_value"
        | "last_value" | "weighted_avg" | "wavg" | "bool_and" | "bool_or" => Some(EmptyCell::Null),
        _ => None,
    }
}

/// An aggregate's value over no rows (see [`empty_cell`]).
#[derive(Clone, Copy)]
enum EmptyCell {
    Null,
    Zero,
}

/// `function` over the rows whose `column` is `literal` (its own FILTER kept).
fn filtered(function: &Function, column: &Expr, literal: &str) -> Result<Expr, String> {
    let mut function = function.clone();
    let this = Expr::BinaryOp {
        left: Box::new(column.clone()),
        op: BinaryOperator::Eq,
        right: Box::new(parse_literal(literal)?),
    };
    function.filter = Some(Box::new(match function.filter.take() {
        Some(f) => Expr::BinaryOp { left: f, op: BinaryOperator::And, right: Box::new(this) },
        None => this,
    }));
    Ok(Expr::Function(function))
}

/// The name of a column reference (its last part).
fn expr_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(id) => Some(id.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|id| id.value.clone()),
        _ => None,
    }
}

fn last_name(column: &Expr) -> String {
    expr_name(column).unwrap_or_default()
}

/// A listed pivot value: its SQL text and its column name (its alias, else the
/// value without quotes).
fn listed_value(v: &ExprWithAlias) -> (String, String) {
    let name = match (&v.alias, &v.expr) {
        (Some(alias), _) => alias.value.clone(),
        (None, Expr::Value(value)) => match &value.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        (None, other) => other.to_string(),
    };
    (v.expr.to_string(), name)
}

/// A value the data has: its SQL literal and its column name.
fn found_value(v: &ScalarValue) -> Result<(String, String), String> {
    let v = match v {
        ScalarValue::Dictionary(_, inner) => inner.as_ref(),
        v => v,
    };
    let text = v.to_string();
    let literal = match v {
        ScalarValue::Utf8(_) | ScalarValue::LargeUtf8(_) | ScalarValue::Utf8View(_) => {
            format!("'{}'", text.replace('\'', "''"))
        }
        v if v.data_type().is_integer() || v.data_type().is_floating() => text.clone(),
        ScalarValue::Boolean(_) => text.clone(),
        ScalarValue::Date32(_) => format!("DATE '{text}'"),
        other => {
            return Err(format!(
                "PIVOT ... IN (ANY): cannot list values of type {}; list them in IN (...)",
                other.data_type()
            ));
        }
    };
    Ok((literal, text))
}

/// A literal's SQL text as an expression.
fn parse_literal(text: &str) -> Result<Expr, String> {
    Parser::new(&datafusion::sql::sqlparser::dialect::GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| format!("PIVOT value {text}: {e}"))
}

/// An UNPIVOT as a union of one SELECT per unpivoted column.
fn unpivot_text(factor: &TableFactor) -> Result<String, String> {
    let TableFactor::Unpivot { table, value, null_inclusion, name, columns, alias } = factor else {
        unreachable!("an unpivot")
    };
    let value = expr_name(value).ok_or_else(|| format!("UNPIVOT ({value} FOR ...): name the value column"))?;
    let sources = columns
        .iter()
        .map(|c| expr_name(&c.expr).map(|n| (n, c.alias.as_ref().map(|a| a.value.clone()))))
        .collect::<Option<Vec<_>>>()
        .ok_or("UNPIVOT (... IN (...)): list columns")?;
    let keep_nulls = matches!(null_inclusion, Some(datafusion::sql::sqlparser::ast::NullInclusion::IncludeNulls));
    let excluded = sources.iter().map(|(c, _)| quoted(c)).collect::<Vec<_>>().join(", ");
    let selects: Vec<String> = sources
        .iter()
        .map(|(column, label)| {
            let label = label.as_deref().unwrap_or(column).replace('\'', "''");
            let filter = if keep_nulls { String::new() } else { format!(" WHERE {} IS NOT NULL", quoted(column)) };
            format!(
                "SELECT * EXCLUDE ({excluded}), '{label}' AS {}, {} AS {} FROM {table}{filter}",
                quoted(&name.value),
                quoted(column),
                quoted(&value)
            )
        })
        .collect();
    let alias = alias.as_ref().map(|a| format!(" {a}")).unwrap_or_default();
    Ok(format!("({}){alias}", selects.join(" UNION ALL ")))
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    use super::*;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&GenericDialect {}, sql).unwrap().remove(0)
    }

    #[test]
    fn pivots_become_grouped_filtered_aggregates() {
        let mut s = parse("SELECT * FROM t PIVOT (sum(size) FOR ex IN ('N' AS nyse, 'Q')) p ORDER BY 1");
        assert_eq!(needs(&mut s).unwrap(), [Need::Columns("SELECT * FROM t".into())]);
        let columns = ["sym", "ex", "size", "i"].map(String::from).to_vec();
        write_out(&mut s, vec![Answer::Columns(columns)], &GenericDialect {}).unwrap();
        assert_eq!(
            s.to_string(),
            "SELECT * FROM (SELECT \"sym\", max(__strata_pivot_cell0) FILTER (WHERE __strata_pivot_on = 'N') AS \"nyse\", \
             max(__strata_pivot_cell0) FILTER (WHERE __strata_pivot_on = 'Q') AS \"Q\" FROM (SELECT \"sym\", ex AS \
             __strata_pivot_on, sum(size) AS __strata_pivot_cell0 FROM t GROUP BY \"sym\", ex) GROUP BY \"sym\") p \
             ORDER BY 1"
        );
        // An aggregate whose value over no rows is not known here is filtered per cell.
        let mut s = parse("SELECT * FROM t PIVOT (string_agg(sym, ',') FOR ex IN ('N'))");
        let columns = ["sym", "ex"].map(String::from).to_vec();
        write_out(&mut s, vec![Answer::Columns(columns)], &GenericDialect {}).unwrap();
        assert_eq!(
            s.to_string(),
            "SELECT * FROM (SELECT string_agg(sym, ',') FILTER (WHERE ex = 'N') AS \"N\" FROM t)"
        );
        let mut s = parse("SELECT * FROM t PIVOT (count(*) AS n FOR ex IN (ANY))");
        let needs = needs(&mut s).unwrap();
        assert_eq!(needs[1], Need::Values("SELECT DISTINCT ex FROM t WHERE ex IS NOT NULL ORDER BY ex".into()));
        let answers = vec![
            Answer::Columns(vec!["ex".into()]),
            Answer::Values(vec![ScalarValue::from("it's"), ScalarValue::from("B")]),
        ];
        write_out(&mut s, answers, &GenericDialect {}).unwrap();
        assert!(
            s.to_string().contains(
                "coalesce(max(__strata_pivot_cell0) FILTER (WHERE __strata_pivot_on = 'it''s'), 0) AS \"it's_n\""
            ),
            "{s}"
        );
    }

    #[test]
    fn unpivots_become_unions() {
        let mut s = parse("SELECT * FROM q UNPIVOT (px FOR side IN (bid AS b, ask))");
        assert!(needs(&mut s).unwrap().is_empty());
        write_out(&mut s, vec![], &GenericDialect {}).unwrap();
        assert_eq!(
            s.to_string(),
            "SELECT * FROM (SELECT * EXCLUDE (\"bid\", \"ask\"), 'b' AS \"side\", \"bid\" AS \"px\" FROM q WHERE \"bid\" \
             IS NOT NULL UNION ALL SELECT * EXCLUDE (\"bid\", \"ask\"), 'ask' AS \"side\", \"ask\" AS \"px\" FROM q WHERE \
             \"ask\" IS NOT NULL)"
        );
    }
}
