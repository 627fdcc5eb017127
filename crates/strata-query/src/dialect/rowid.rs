//! DuckDB's `rowid`: each row's number within its table, as stored, which a query
//! can name but `*` does not list.
//!
//! DataFusion has no hidden columns, so a stored table has two providers: the
//! table, and its view with `rowid` as one more column (registered in schema
//! [`ROWID_SCHEMA`]; see [`crate::table::StrataTable::with_rowid`]). A statement
//! that names `rowid` has each table it reads pointed at the view ([`point_at_views`],
//! aliased as the table, so `trade.price` still reads), and the stars over those
//! views written out without `rowid` (see [`super::rename`]). Other statements are
//! not touched.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectName, ObjectNamePart, Query, Statement, TableAlias, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut, visit_expressions_mut,
};

use crate::table::ROWID_COLUMN;

/// The schema the tables' `rowid` views are registered in.
pub const ROWID_SCHEMA: &str = "strata_rowid";

/// Whether `statement` names `rowid` (any case, as DuckDB reads it, alone or as
/// `t.rowid`), and writes each such name in lower case.
pub fn names_rowid(statement: &mut Statement) -> bool {
    let is_rowid = |id: &Ident| id.quote_style.is_none() && id.value.eq_ignore_ascii_case(ROWID_COLUMN);
    let mut named = false;
    let _ = visit_expressions_mut(statement, |e| {
        let last = match e {
            Expr::Identifier(id) => Some(id),
            Expr::CompoundIdentifier(parts) => parts.last_mut(),
            _ => None,
        };
        if let Some(id) = last.filter(|id| is_rowid(id)) {
            id.value = ROWID_COLUMN.to_string();
            named = true;
        }
        ControlFlow::<()>::Continue(())
    });
    named
}

/// Points every reference in `statement` to a table `has_view` knows (a bare name
/// that no CTE of the statement takes) at that table's `rowid` view, keeping the
/// name the query reads it by as its alias; returns those names.
pub fn point_at_views(statement: &mut Statement, has_view: impl Fn(&str) -> bool) -> HashSet<String> {
    let ctes = cte_names(statement);
    let mut aliases = HashSet::new();
    struct Pointer<'a, F> {
        ctes: &'a HashSet<String>,
        has_view: F,
        aliases: &'a mut HashSet<String>,
    }
    impl<F: Fn(&str) -> bool> VisitorMut for Pointer<'_, F> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table { name, alias, args: None, .. } = factor else { return ControlFlow::Continue(()) };
            let [ObjectNamePart::Identifier(table)] = name.0.as_slice() else { return ControlFlow::Continue(()) };
            if self.ctes.contains(&table.value) || !(self.has_view)(&table.value) {
                return ControlFlow::Continue(());
            }
            let table = table.clone();
            let alias = alias.get_or_insert_with(|| TableAlias {
                explicit: true,
                name: table.clone(),
                columns: vec![],
                at: None,
            });
            self.aliases.insert(alias.name.value.clone());
            *name = ObjectName(vec![
                ObjectNamePart::Identifier(Ident::with_quote('"', ROWID_SCHEMA)),
                ObjectNamePart::Identifier(table),
            ]);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Pointer { ctes: &ctes, has_view, aliases: &mut aliases });
    aliases
}

/// The names the statement's CTEs take, at any depth.
fn cte_names(statement: &Statement) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.0.extend(with.cte_tables.iter().map(|cte| cte.alias.name.value.clone()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(HashSet::new());
    let _ = statement.visit(&mut names);
    names.0
}
