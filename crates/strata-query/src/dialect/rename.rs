//! DuckDB's `SELECT * RENAME (price AS p, ...)` (and `t.* RENAME (...)`), which
//! DataFusion parses but does not plan: the star is written out as its columns,
//! in their order, the renamed ones with their new names.
//!
//! The columns a star stands for depend on the FROM clause, so the engine plans a
//! probe first (the same WITH and FROM, the star without RENAME; [`probe`]) and
//! hands its columns to [`expand`], one renaming star at a time, innermost first:
//! in the outermost SELECT, a subquery, a CTE's body. A subquery's probe carries the
//! statement's WITH (the CTEs its FROM may name).

use std::ops::ControlFlow;

use datafusion::common::TableReference;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, Query, RenameSelectItem, SelectItem, SetExpr, Statement, Visit, VisitMut, Visitor,
    VisitorMut, WildcardAdditionalOptions,
};

/// The position of the first star with a RENAME in `query`'s SELECT list.
fn renaming_star(query: &Query) -> Option<usize> {
    let SetExpr::Select(select) = query.body.as_ref() else { return None };
    select.projection.iter().position(|item| options(item).is_some_and(|o| o.opt_rename.is_some()))
}

/// Calls `f` on the first query of `statement`, innermost first, whose SELECT has a
/// renaming star (with the star's position); `None` when there is none.
fn with_first_renaming<R>(statement: &mut Statement, f: impl FnOnce(&mut Query, usize) -> R) -> Option<R> {
    struct First<F, R> {
        f: Option<F>,
        result: Option<R>,
    }
    impl<R, F: FnOnce(&mut Query, usize) -> R> VisitorMut for First<F, R> {
        type Break = ();
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            let Some(at) = renaming_star(query) else { return ControlFlow::Continue(()) };
            let f = self.f.take().expect("called once: the visit stops after it");
            self.result = Some(f(query, at));
            ControlFlow::Break(())
        }
    }
    let mut first = First { f: Some(f), result: None };
    let _ = statement.visit(&mut first);
    first.result
}

/// Whether `query`, or a query inside it, has a renaming star.
fn has_renaming_star(query: &Query) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if renaming_star(query).is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }
    }
    query.visit(&mut Finder).is_break()
}

/// A star item's options.
fn options(item: &SelectItem) -> Option<&WildcardAdditionalOptions> {
    match item {
        SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) => Some(o),
        _ => None,
    }
}

/// The query whose columns the next `* RENAME` of `statement` stands for (its WITH,
/// else the statement's, its FROM, the star without the RENAME), or `None` when
/// nothing is left to rename.
pub fn probe(statement: &mut Statement) -> Option<Query> {
    // The statement's CTEs, but not those still holding a renaming star: DataFusion
    // plans every CTE of a WITH, and cannot plan those yet.
    let outer_with = match statement {
        Statement::Query(query) => query.with.clone().map(|mut with| {
            with.cte_tables.retain(|cte| !has_renaming_star(&cte.query));
            with
        }),
        _ => None,
    }
    .filter(|with| !with.cte_tables.is_empty());
    with_first_renaming(statement, |query, at| {
        let mut probe = query.clone();
        probe.with = probe.with.or(outer_with);
        probe.order_by = None;
        probe.limit_clause = None;
        probe.fetch = None;
        if let SetExpr::Select(select) = probe.body.as_mut() {
            let mut star = select.projection[at].clone();
            if let SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) = &mut star {
                o.opt_rename = None;
            }
            select.projection = vec![star];
            select.selection = None;
            select.group_by = GroupByExpr::Expressions(vec![], vec![]);
            select.having = None;
            select.qualify = None;
            select.distinct = None;
            select.sort_by = vec![];
            select.named_window = vec![];
        }
        probe
    })
}

/// Writes out the renaming star [`probe`] found as `columns` (the probe's, each with
/// its table), the renamed ones aliased. An error names a renamed column the star
/// does not have, or a RENAME beside a REPLACE in one star.
pub fn expand(statement: &mut Statement, columns: &[(Option<TableReference>, String)]) -> Result<(), String> {
    with_first_renaming(statement, |query, at| expand_star(query, at, columns)).unwrap_or(Ok(()))
}

/// Writes out the star at `at` of `query`'s SELECT list as `columns`.
fn expand_star(query: &mut Query, at: usize, columns: &[(Option<TableReference>, String)]) -> Result<(), String> {
    let SetExpr::Select(select) = query.body.as_mut() else { return Ok(()) };
    let options = options(&select.projection[at]).expect("a star");
    if options.opt_replace.is_some() {
        return Err("* REPLACE and * RENAME in one star are not supported: rename in an outer query".to_string());
    }
    let renames = match options.opt_rename.as_ref().expect("a rename") {
        RenameSelectItem::Single(one) => vec![one.clone()],
        RenameSelectItem::Multiple(many) => many.clone(),
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
        let quoted = |s: &str| Ident::with_quote('"', s);
        let expr = match table {
            Some(table) => Expr::CompoundIdentifier(
                table.to_vec().iter().map(|p| quoted(p)).chain(std::iter::once(quoted(name))).collect(),
            ),
            None => Expr::Identifier(quoted(name)),
        };
        match renames.iter().find(|r| r.ident.value == *name) {
            Some(r) => SelectItem::ExprWithAlias { expr, alias: quoted(&r.alias.value) },
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
        let probe = probe(&mut s).unwrap();
        assert_eq!(probe.to_string(), "WITH w AS (SELECT 1 AS a) SELECT t.* FROM t");
        let t = Some(TableReference::bare("t"));
        expand(&mut s, &[(t.clone(), "a".into()), (t, "b".into())]).unwrap();
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
        let inner = probe(&mut s).unwrap();
        assert_eq!(inner.to_string(), "WITH w AS (SELECT 1 AS a) SELECT * FROM w");
        expand(&mut s, &[(None, "b".into())]).unwrap();
        let outer = probe(&mut s).unwrap();
        assert_eq!(outer.to_string(), "WITH w AS (SELECT 1 AS a) SELECT * FROM (SELECT \"b\" AS \"a\" FROM w) s");
        expand(&mut s, &[(Some(TableReference::bare("s")), "a".into())]).unwrap();
        assert_eq!(
            s.to_string(),
            "WITH w AS (SELECT 1 AS a) SELECT \"s\".\"a\" AS \"z\" FROM (SELECT \"b\" AS \"a\" FROM w) s WHERE a > 0"
        );
        assert!(probe(&mut s).is_none());

        // A CTE's own star: its probe leaves that CTE out of the WITH.
        let mut s = parse("WITH r AS (SELECT * RENAME (a AS b) FROM t), w AS (SELECT 1) SELECT * FROM r");
        assert_eq!(probe(&mut s).unwrap().to_string(), "WITH w AS (SELECT 1) SELECT * FROM t");
    }

    fn probe_of(sql: &str) -> Option<Query> {
        probe(&mut parse(sql))
    }

    #[test]
    fn unknown_and_doubled_columns_are_errors() {
        let mut s = parse("SELECT * RENAME (z AS y) FROM t");
        let err = expand(&mut s, &[(None, "a".into())]).unwrap_err();
        assert!(err.contains("RENAME names column z") && err.contains("lists a"), "{err}");
        let mut s = parse("SELECT * RENAME (a AS y) FROM t JOIN u ON true");
        let err = expand(&mut s, &[(None, "a".into()), (None, "a".into())]).unwrap_err();
        assert!(err.contains("more than once"), "{err}");
    }
}
