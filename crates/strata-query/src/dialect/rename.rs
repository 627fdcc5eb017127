//! Stars written out as their columns, where DataFusion cannot plan them as they
//! are: DuckDB's `SELECT * RENAME (price AS p, ...)` (and `t.* RENAME (...)`),
//! which DataFusion parses but does not plan, and every star over a table's view
//! of hidden columns (see [`super::hidden`]), which must not list them. The star
//! is written out as its columns, in their order, the renamed ones with their new
//! names, without the hidden ones.
//!
//! The columns a star stands for depend on the FROM clause, so the engine plans a
//! probe first (the same WITH and FROM, the star without RENAME; [`probe`]) and
//! hands its columns to [`expand`], one star at a time, innermost first: in the
//! outermost SELECT, a subquery, a CTE's body. A subquery's probe carries the
//! statement's WITH (the CTEs its FROM may name).

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use datafusion::common::TableReference;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query, RenameSelectItem, SelectItem, SetExpr, Statement,
    TableFactor, Visit, VisitMut, Visitor, VisitorMut, WildcardAdditionalOptions, With,
};

/// The aliases under which a statement reads tables' views of hidden columns (see
/// [`super::hidden::point_at_views`]), each with the view's hidden columns: the
/// stars over them leave those out.
pub type Hidden = HashMap<String, Vec<String>>;

/// The position of the first star in `query`'s SELECT list to write out: one with
/// a RENAME, or any star of a SELECT that reads a view of hidden columns in `hidden`.
fn star_to_write(query: &Query, hidden: &Hidden) -> Option<usize> {
    let SetExpr::Select(select) = query.body.as_ref() else { return None };
    let reads_view = !hidden.is_empty()
        && select.from.iter().any(|from| {
            std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation)).any(|factor| {
                matches!(factor, TableFactor::Table { alias: Some(alias), .. } if hidden.contains_key(&alias.name.value))
            })
        });
    select.projection.iter().position(|item| options(item).is_some_and(|o| o.opt_rename.is_some() || reads_view))
}

/// Calls `f` on the first query of `statement`, innermost first, whose SELECT has a
/// star to write out (with the star's position); `None` when there is none.
fn with_first_star<R>(statement: &mut Statement, hidden: &Hidden, f: impl FnOnce(&mut Query, usize) -> R) -> Option<R> {
    struct First<'a, F, R> {
        hidden: &'a Hidden,
        f: Option<F>,
        result: Option<R>,
    }
    impl<R, F: FnOnce(&mut Query, usize) -> R> VisitorMut for First<'_, F, R> {
        type Break = ();
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            let Some(at) = star_to_write(query, self.hidden) else { return ControlFlow::Continue(()) };
            let f = self.f.take().expect("called once: the visit stops after it");
            self.result = Some(f(query, at));
            ControlFlow::Break(())
        }
    }
    let mut first = First { hidden, f: Some(f), result: None };
    let _ = statement.visit(&mut first);
    first.result
}

/// Whether `query`, or a query inside it, has a star to write out.
fn has_star_to_write(query: &Query, hidden: &Hidden) -> bool {
    struct Finder<'a>(&'a Hidden);
    impl Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if star_to_write(query, self.0).is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }
    }
    query.visit(&mut Finder(hidden)).is_break()
}

/// A star item's options.
fn options(item: &SelectItem) -> Option<&WildcardAdditionalOptions> {
    match item {
        SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) => Some(o),
        _ => None,
    }
}

/// The query whose columns the next star to write out of `statement` stands for
/// (its WITH, else the statement's, its FROM, the star without the RENAME), or
/// `None` when none is left.
pub fn probe(statement: &mut Statement, hidden: &Hidden) -> Option<Query> {
    // The statement's CTEs, but not those still holding a star to write out:
    // DataFusion plans every CTE of a WITH, and cannot plan a renaming one yet.
    let outer_with = statement_ctes(statement, |query| !has_star_to_write(query, hidden));
    with_first_star(statement, hidden, |query, at| {
        let mut star = match query.body.as_ref() {
            SetExpr::Select(select) => select.projection[at].clone(),
            _ => unreachable!("a star to write out is in a SELECT"),
        };
        if let SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) = &mut star {
            o.opt_rename = None;
        }
        probe_of(query, outer_with, star)
    })
}

/// The CTEs of `statement`'s WITH whose bodies `keep` keeps and that read no CTE
/// left out (`None` when none is kept): what a probe of a query inside the
/// statement may name. DataFusion plans every CTE of a WITH, so one reading a CTE
/// left out (`c AS (SELECT price FROM src)` after `src AS (SELECT *, rowid ...)`)
/// would fail the probe.
pub(crate) fn statement_ctes(statement: &Statement, keep: impl Fn(&Query) -> bool) -> Option<With> {
    match statement {
        Statement::Query(query) => query.with.clone().map(|mut with| {
            let mut left_out = HashSet::new();
            with.cte_tables.retain(|cte| {
                let kept = keep(&cte.query) && !reads_any(&cte.query, &left_out);
                if !kept {
                    left_out.insert(cte.alias.name.value.clone());
                }
                kept
            });
            with
        }),
        _ => None,
    }
    .filter(|with| !with.cte_tables.is_empty())
}

/// Whether `query` reads a relation of a bare name in `names`.
fn reads_any(query: &Query, names: &HashSet<String>) -> bool {
    struct Reader<'a>(&'a HashSet<String>);
    impl Visitor for Reader<'_> {
        type Break = ();
        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            match relation.0.as_slice() {
                [ObjectNamePart::Identifier(name)] if self.0.contains(&name.value) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    !names.is_empty() && query.visit(&mut Reader(names)).is_break()
}

/// `query` as a probe of what `item` stands for: its WITH (else `outer_with`) and
/// FROM, `item` its only output, no filter, grouping, order or limit.
pub(crate) fn probe_of(query: &Query, outer_with: Option<With>, item: SelectItem) -> Query {
    let mut probe = query.clone();
    probe.with = probe.with.or(outer_with);
    probe.order_by = None;
    probe.limit_clause = None;
    probe.fetch = None;
    if let SetExpr::Select(select) = probe.body.as_mut() {
        select.projection = vec![item];
        select.selection = None;
        select.group_by = GroupByExpr::Expressions(vec![], vec![]);
        select.having = None;
        select.qualify = None;
        select.distinct = None;
        select.sort_by = vec![];
        select.named_window = vec![];
    }
    probe
}

/// `columns` (a probe's, each with its table) without the hidden columns of the
/// views in `hidden`.
pub(crate) fn shown(
    columns: &[(Option<TableReference>, String)],
    hidden: &Hidden,
) -> Vec<(Option<TableReference>, String)> {
    columns
        .iter()
        .filter(|(table, name)| {
            !table.as_ref().is_some_and(|t| {
                t.schema().is_none() && hidden.get(t.table()).is_some_and(|columns| columns.contains(name))
            })
        })
        .cloned()
        .collect()
}

/// A column of a probe as an expression, quoted as named (its table too).
pub(crate) fn column_expr(table: &Option<TableReference>, name: &str) -> Expr {
    let quoted = |s: &str| Ident::with_quote('"', s);
    match table {
        Some(table) => Expr::CompoundIdentifier(
            table.to_vec().iter().map(|p| quoted(p)).chain(std::iter::once(quoted(name))).collect(),
        ),
        None => Expr::Identifier(quoted(name)),
    }
}

/// Writes out the star [`probe`] found as `columns` (the probe's, each with its
/// table), the renamed ones aliased, the hidden columns of views in `hidden` left out. An
/// error names a renamed column the star does not have, or a RENAME beside a
/// REPLACE in one star.
pub fn expand(
    statement: &mut Statement,
    columns: &[(Option<TableReference>, String)],
    hidden: &Hidden,
) -> Result<(), String> {
    let shown = shown(columns, hidden);
    with_first_star(statement, hidden, |query, at| expand_star(query, at, &shown)).unwrap_or(Ok(()))
}

/// Writes out the star at `at` of `query`'s SELECT list as `columns`.
fn expand_star(query: &mut Query, at: usize, columns: &[(Option<TableReference>, String)]) -> Result<(), String> {
    let SetExpr::Select(select) = query.body.as_mut() else { return Ok(()) };
    let options = options(&select.projection[at]).expect("a star");
    if options.opt_replace.is_some() && options.opt_rename.is_some() {
        return Err("* REPLACE and * RENAME in one star are not supported: rename in an outer query".to_string());
    }
    if options.opt_replace.is_some() {
        return Err(
            "* REPLACE is not supported in a query that names rowid or i: replace in an outer query".to_string()
        );
    }
    let renames = match options.opt_rename.as_ref() {
        Some(RenameSelectItem::Single(one)) => vec![one.clone()],
        Some(RenameSelectItem::Multiple(many)) => many.clone(),
        None => vec![],
    };
    for rename in &renames {
        match columns.iter().filter(|(_, name)| *name == rename.ident.value).count() {
            1 => {}
            0 => {
                let names: Vec<&str> = columns.iter().map(|(_, n)| n.as_str()).collect();
                return Err(format!(
                    "RENAME names column {}, which * does not list; it lists {}",
                    rename.ident.value,
                    names.join(", ")
                ));
            }
            _ => return Err(format!("RENAME names column {}, which * lists more than once", rename.ident.value)),
        }
    }
    let items = columns.iter().map(|(table, name)| {
        let expr = column_expr(table, name);
        match renames.iter().find(|r| r.ident.value == *name) {
            Some(r) => SelectItem::ExprWithAlias { expr, alias: Ident::with_quote('"', &r.alias.value) },
            None => SelectItem::UnnamedExpr(expr),
        }
    });
    select.projection.splice(at..=at, items.collect::<Vec<_>>());
    Ok(())
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&GenericDialect {}, sql).unwrap().remove(0)
    }

    #[test]
    fn the_star_is_written_out_with_new_names() {
        let mut s =
            parse("WITH w AS (SELECT 1 AS a) SELECT x, t.* RENAME (b AS bee) FROM t WHERE a > 1 ORDER BY 1 LIMIT 5");
        let probe = probe(&mut s, &Hidden::new()).unwrap();
        assert_eq!(probe.to_string(), "WITH w AS (SELECT 1 AS a) SELECT t.* FROM t");
        let t = Some(TableReference::bare("t"));
        expand(&mut s, &[(t.clone(), "a".into()), (t, "b".into())], &Hidden::new()).unwrap();
        assert_eq!(
            s.to_string(),
            "WITH w AS (SELECT 1 AS a) SELECT x, \"t\".\"a\", \"t\".\"b\" AS \"bee\" FROM t WHERE a > 1 ORDER BY 1 LIMIT 5"
        );
        assert!(probe_of("SELECT * FROM t").is_none());
    }

    #[test]
    fn subqueries_are_written_out_innermost_first_with_the_statement_ctes() {
        let mut s = parse(
            "WITH w AS (SELECT 1 AS a) SELECT * RENAME (a AS z) FROM (SELECT * RENAME (b AS a) FROM w) s WHERE a > 0",
        );
        let inner = probe(&mut s, &Hidden::new()).unwrap();
        assert_eq!(inner.to_string(), "WITH w AS (SELECT 1 AS a) SELECT * FROM w");
        expand(&mut s, &[(None, "b".into())], &Hidden::new()).unwrap();
        let outer = probe(&mut s, &Hidden::new()).unwrap();
        assert_eq!(outer.to_string(), "WITH w AS (SELECT 1 AS a) SELECT * FROM (SELECT \"b\" AS \"a\" FROM w) s");
        expand(&mut s, &[(Some(TableReference::bare("s")), "a".into())], &Hidden::new()).unwrap();
        assert_eq!(
            s.to_string(),
            "WITH w AS (SELECT 1 AS a) SELECT \"s\".\"a\" AS \"z\" FROM (SELECT \"b\" AS \"a\" FROM w) s WHERE a > 0"
        );
        assert!(probe(&mut s, &Hidden::new()).is_none());

        // A CTE's own star: its probe leaves that CTE out of the WITH, and the CTEs
        // reading it, at any remove.
        let mut s = parse("WITH r AS (SELECT * RENAME (a AS b) FROM t), w AS (SELECT 1) SELECT * FROM r");
        assert_eq!(probe(&mut s, &Hidden::new()).unwrap().to_string(), "WITH w AS (SELECT 1) SELECT * FROM t");
        let mut s = parse(
            "WITH r AS (SELECT * RENAME (a AS b) FROM t), c AS (SELECT b FROM r), d AS (SELECT * FROM c JOIN t ON \
             true), w AS (SELECT 1) SELECT * FROM d",
        );
        assert_eq!(probe(&mut s, &Hidden::new()).unwrap().to_string(), "WITH w AS (SELECT 1) SELECT * FROM t");
    }

    fn probe_of(sql: &str) -> Option<Query> {
        probe(&mut parse(sql), &Hidden::new())
    }

    #[test]
    fn unknown_and_doubled_columns_are_errors() {
        let mut s = parse("SELECT * RENAME (z AS y) FROM t");
        let err = expand(&mut s, &[(None, "a".into())], &Hidden::new()).unwrap_err();
        assert!(err.contains("RENAME names column z") && err.contains("lists a"), "{err}");
        let mut s = parse("SELECT * RENAME (a AS y) FROM t JOIN u ON true");
        let err = expand(&mut s, &[(None, "a".into()), (None, "a".into())], &Hidden::new()).unwrap_err();
        assert!(err.contains("more than once"), "{err}");
    }
}
