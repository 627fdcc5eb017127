//! Columns a query can name but `*` does not list: kdb+'s row number `i` (within
//! each date partition) and DuckDB's `rowid` (within the table, as stored). Neither
//! kdb+'s `select from t` nor DuckDB's `SELECT *` shows a row number.
//!
//! DataFusion has no hidden columns, so a stored table has two providers: the
//! table, and its view with the hidden columns as more columns, last (registered
//! in schema [`HIDDEN_SCHEMA`]; see [`crate::table::StrataTable::with_hidden`]). A
//! statement that names one has each table it reads pointed at the view
//! ([`point_at_views`], aliased as the table, so `trade.price` still reads), and
//! the stars over those views written out without the hidden columns (see
//! [`super::rename`]). Other statements are not touched.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectName, ObjectNamePart, Query, Statement, TableAlias, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut, visit_expressions_mut,
};

use super::rename::Hidden;
use crate::table::{ROW_NUMBER_COLUMN, ROWID_COLUMN};

/// The schema the tables' views of hidden columns are registered in.
pub const HIDDEN_SCHEMA: &str = "strata_hidden";

/// Whether `statement` names a hidden column, alone or qualified (`t.rowid`):
/// `rowid` in any case, as DuckDB reads it (each such name written in lower case),
/// or `i`.
pub fn names_hidden(statement: &mut Statement) -> bool {
    let is_rowid = |id: &Ident| id.quote_style.is_none() && id.value.eq_ignore_ascii_case(ROWID_COLUMN);
    let mut named = false;
    let _ = visit_expressions_mut(statement, |e| {
        let last = match e {
            Expr::Identifier(id) => Some(id),
            Expr::CompoundIdentifier(parts) => parts.last_mut(),
            _ => None,
        };
        if let Some(id) = last {
            if is_rowid(id) {
                id.value = ROWID_COLUMN.to_string();
                named = true;
            }
            named |= id.value == ROW_NUMBER_COLUMN;
        }
        ControlFlow::<()>::Continue(())
    });
    named
}

/// Points every reference in `statement` to a table `hidden_of` knows (a bare name
/// that no CTE of the statement takes; it gives the hidden columns of the table's
/// view) at that view, keeping the name the query reads it by as its alias;
/// returns those names, each with its view's hidden columns.
pub fn point_at_views(statement: &mut Statement, hidden_of: impl Fn(&str) -> Option<Vec<String>>) -> Hidden {
    let ctes = cte_names(statement);
    let mut aliases = Hidden::new();
    struct Pointer<'a, F> {
        ctes: &'a HashSet<String>,
        hidden_of: F,
        aliases: &'a mut Hidden,
    }
    impl<F: Fn(&str) -> Option<Vec<String>>> VisitorMut for Pointer<'_, F> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table { name, alias, args: None, .. } = factor else { return ControlFlow::Continue(()) };
            let [ObjectNamePart::Identifier(table)] = name.0.as_slice() else { return ControlFlow::Continue(()) };
            if self.ctes.contains(&table.value) {
                return ControlFlow::Continue(());
            }
            let Some(hidden) = (self.hidden_of)(&table.value) else { return ControlFlow::Continue(()) };
            let table = table.clone();
            let alias = alias.get_or_insert_with(|| TableAlias {
                explicit: true,
                name: table.clone(),
                columns: vec![],
                at: None,
            });
            self.aliases.insert(alias.name.value.clone(), hidden);
            *name = ObjectName(vec![
                ObjectNamePart::Identifier(Ident::with_quote('"', HIDDEN_SCHEMA)),
                ObjectNamePart::Identifier(table),
            ]);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Pointer { ctes: &ctes, hidden_of, aliases: &mut aliases });
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
