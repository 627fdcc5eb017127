//! DuckDB's `SELECT * RENAME (price AS p, ...)` (and `t.* RENAME (...)`), which
//! DataFusion parses but does not plan: the star is written out as its columns,
//! in their order, the renamed ones with their new names.
//!
//! The columns a star stands for depend on the FROM clause, so the engine plans a
//! probe first (the same WITH and FROM, the star without RENAME; [`probe`]) and
//! hands its columns to [`expand`]. Only the outermost SELECT's star is written out;
//! a RENAME in a subquery stays DataFusion's "not supported" error.

use datafusion::common::TableReference;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, Query, RenameSelectItem, SelectItem, SetExpr, Statement, WildcardAdditionalOptions,
};

/// The star with a RENAME in `statement`'s outermost SELECT, if there is one.
fn renaming(statement: &mut Statement) -> Option<(&mut Query, usize)> {
    let Statement::Query(query) = statement else { return None };
    let SetExpr::Select(select) = query.body.as_mut() else { return None };
    let at = select.projection.iter().position(|item| options(item).is_some_and(|o| o.opt_rename.is_some()))?;
    Some((query.as_mut(), at))
}

/// A star item's options.
fn options(item: &SelectItem) -> Option<&WildcardAdditionalOptions> {
    match item {
        SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) => Some(o),
        _ => None,
    }
}

/// The query whose columns a `* RENAME` in `statement` stands for (its WITH, its
/// FROM, the star without the RENAME), or `None` when nothing is renamed.
pub fn probe(statement: &mut Statement) -> Option<Query> {
    let (query, at) = renaming(statement)?;
    let mut probe = query.clone();
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
    Some(probe)
}

/// Writes out the renaming star of `statement` as `columns` (the probe's, each with
/// its table), the renamed ones aliased. An error names a renamed column the star
/// does not have, or a RENAME beside a REPLACE in one star.
pub fn expand(statement: &mut Statement, columns: &[(Option<TableReference>, String)]) -> Result<(), String> {
    let Some((query, at)) = renaming(statement) else { return Ok(()) };
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
