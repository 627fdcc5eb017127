//! DuckDB's `t ASOF [LEFT] JOIN q USING (sym, time)`: the last column is the time
//! match (`t.time >= q.time`), the others are keys (`t.sym = q.sym`).
//!
//! It becomes the ON form the as-of rule reads, and its SELECT is read as DuckDB
//! reads USING: an unqualified USING column is the left table's (`SELECT sym, time,
//! bid` is not ambiguous), and a plain `*` lists them once (`t.*, q.* EXCLUDE
//! (sym, time)`). `q.time` still names the matched right row's time.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, ExcludeSelectItem, Expr, Ident, ObjectName, Select, SelectItem, SelectItemQualifiedWildcardKind,
    TableFactor, WildcardAdditionalOptions, visit_expressions_mut,
};

/// One as-of join's USING columns and the names of its two tables.
#[derive(Debug)]
pub struct AsofUsing {
    left: Vec<Ident>,
    right: Vec<Ident>,
    columns: Vec<Ident>,
}

impl AsofUsing {
    /// The join of `left` and `right` on `columns` (keys, then the time); an error
    /// when a table has no name to qualify its columns with, or a column is not a
    /// plain name.
    pub fn new(left: &TableFactor, right: &TableFactor, columns: &[ObjectName]) -> Result<AsofUsing, String> {
        let columns = columns
            .iter()
            .map(|c| match c.0.as_slice() {
                [part] => part.as_ident().cloned().ok_or_else(|| format!("USING ({c}): not a column name")),
                _ => Err(format!("USING ({c}): name columns without their table")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if columns.is_empty() {
            return Err("ASOF JOIN ... USING needs at least the time column".to_string());
        }
        Ok(AsofUsing { left: qualifier(left)?, right: qualifier(right)?, columns })
    }

    /// The ON condition: keys equal, the left time at or after the right's.
    pub fn condition(&self) -> Expr {
        let (time, keys) = self.columns.split_last().expect("at least the time column");
        let pair = |c: &Ident, op: BinaryOperator| Expr::BinaryOp {
            left: Box::new(column(&self.left, c)),
            op,
            right: Box::new(column(&self.right, c)),
        };
        keys.iter().rev().fold(pair(time, BinaryOperator::GtEq), |rest, key| Expr::BinaryOp {
            left: Box::new(pair(key, BinaryOperator::Eq)),
            op: BinaryOperator::And,
            right: Box::new(rest),
        })
    }

    /// `select` read as with USING: its unqualified USING columns qualified with
    /// the left table, and a plain `*` over just this join written out without the
    /// right table's copies of them.
    pub fn qualify(&self, select: &mut Select) {
        let one_join = select.from.len() == 1 && select.from[0].joins.len() == 1;
        let plain = |o: &WildcardAdditionalOptions| {
            o.opt_ilike.is_none()
                && o.opt_exclude.is_none()
                && o.opt_except.is_none()
                && o.opt_replace.is_none()
                && o.opt_rename.is_none()
                && o.opt_alias.is_none()
        };
        let mut items = Vec::with_capacity(select.projection.len() + 1);
        for item in std::mem::take(&mut select.projection) {
            match item {
                SelectItem::Wildcard(o) if one_join && plain(&o) => {
                    let star = |table: &[Ident], exclude: Option<ExcludeSelectItem>| {
                        SelectItem::QualifiedWildcard(
                            SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(table.to_vec())),
                            WildcardAdditionalOptions { opt_exclude: exclude, ..o.clone() },
                        )
                    };
                    let using = self.columns.iter().map(|c| ObjectName::from(vec![c.clone()])).collect();
                    items.push(star(&self.left, None));
                    items.push(star(&self.right, Some(ExcludeSelectItem::Multiple(using))));
                }
                other => items.push(other),
            }
        }
        select.projection = items;
        let mut qualify = |e: &mut Expr| {
            if let Expr::Identifier(id) = e
                && self.columns.iter().any(|c| c.value == id.value)
            {
                *e = column(&self.left, id);
            }
            ControlFlow::<()>::Continue(())
        };
        let _ = visit_expressions_mut(&mut select.projection, &mut qualify);
        let _ = visit_expressions_mut(&mut select.selection, &mut qualify);
        let _ = visit_expressions_mut(&mut select.group_by, &mut qualify);
        let _ = visit_expressions_mut(&mut select.having, &mut qualify);
        let _ = visit_expressions_mut(&mut select.qualify, &mut qualify);
    }
}

/// `table.column`.
fn column(table: &[Ident], column: &Ident) -> Expr {
    Expr::CompoundIdentifier(table.iter().chain(std::iter::once(column)).cloned().collect())
}

/// The name a table's columns are qualified with: its alias, else its name.
fn qualifier(factor: &TableFactor) -> Result<Vec<Ident>, String> {
    match factor {
        TableFactor::Table { alias: Some(alias), .. } | TableFactor::Derived { alias: Some(alias), .. } => {
            Ok(vec![alias.name.clone()])
        }
        TableFactor::Table { name, .. } => {
            name.0.iter().map(|p| p.as_ident().cloned().ok_or_else(|| format!("{name}: not a table name"))).collect()
        }
        other => Err(format!("ASOF JOIN ... USING needs each side named: give {other} an alias, or write ON")),
    }
}
