//! Time joins in SQL text, turned into ordinary joins whose ON condition carries a
//! marker function so the planner rules can find them again:
//! - DuckDB's `t ASOF [LEFT] JOIN q ON t.sym = q.sym AND t.time >= q.time` (or
//!   `USING (sym, time)`, see [`super::using`]) and Snowflake's
//!   `t ASOF JOIN q MATCH_CONDITION (t.time >= q.time) ON t.sym = q.sym` get
//!   [`ASOF_MARKER`];
//! - `t WINDOW JOIN q ON t.sym = q.sym AND q.time BETWEEN t.time - INTERVAL '1
//!   second' AND t.time` becomes a left join with [`WINDOW_MARKER`], and its SELECT
//!   gets `GROUP BY ALL`, so the aggregates of the right table's columns parse as
//!   aggregates (the window join rule then makes one row per left row).
//!
//! The SQL parser knows only Snowflake's form, so the DuckDB-form `ASOF` and the
//! `WINDOW` keywords are blanked out of the text (kept the same length, so every
//! position stays put) and remembered by the position of the relation after `JOIN`;
//! after parsing, the join whose relation starts first at or after that position is
//! the time join.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, Join, JoinConstraint,
    JoinOperator, ObjectName, Query, Select, SetExpr, Spanned, Statement, TableFactor, TableWithJoins, VisitMut,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
use std::ops::ControlFlow;

use super::using::AsofUsing;

/// The zero-argument function that marks an ON condition as an as-of match.
pub const ASOF_MARKER: &str = "__strata_asof";

/// The zero-argument function that marks an ON condition as a window match.
pub const WINDOW_MARKER: &str = "__strata_window";

/// What marking a join found.
enum Marked {
    /// Not a time join, or an as-of join with nothing more to do.
    Done,
    /// A window join: its SELECT is grouped.
    Window,
    /// An as-of join with USING: its SELECT reads the USING columns as the left table's.
    Using(AsofUsing),
}

/// Which time join a blanked keyword started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeJoin {
    /// `ASOF [LEFT] JOIN` in DuckDB's form.
    Asof,
    /// `WINDOW JOIN`.
    Window,
}

/// SQL text with the `ASOF` (DuckDB's form) and `WINDOW` keywords of time joins
/// blanked, and where their joins' relations start.
pub struct Blanked {
    /// The text to parse.
    pub sql: String,
    /// The kind and relation position of each blanked join.
    pub relations: Vec<(TimeJoin, Location)>,
}

/// Finds DuckDB-form as-of joins and window joins in `sql`. Errors are the
/// tokenizer's (an unterminated string, say), with their position.
pub fn blank_time_joins(sql: &str, dialect: &dyn Dialect) -> Result<Blanked, String> {
    // Every query passes here: most name neither keyword, and need not be tokenized
    // twice (a list of a thousand symbols is thousands of tokens).
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("asof") && !lower.contains("window") {
        return Ok(Blanked { sql: sql.to_string(), relations: Vec::new() });
    }
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().map_err(|e| e.to_string())?;
    let words: Vec<(&Token, Location)> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).map(|t| (&t.token, t.span.start)).collect();
    let keyword = |j: usize| match words.get(j) {
        Some((Token::Word(w), _)) => Some(w.keyword),
        _ => None,
    };
    let mut blank = Vec::new();
    let mut relations = Vec::new();
    for j in 0..words.len() {
        let (kind, length) = match keyword(j) {
            Some(Keyword::ASOF) => (TimeJoin::Asof, 4),
            // WINDOW starts a named-window clause too; only WINDOW JOIN is ours.
            Some(Keyword::WINDOW) if keyword(j + 1) == Some(Keyword::JOIN) => (TimeJoin::Window, 6),
            _ => continue,
        };
        let mut k = j + 1;
        if kind == TimeJoin::Asof && keyword(k) == Some(Keyword::LEFT) {
            k += 1;
            if keyword(k) == Some(Keyword::OUTER) {
                k += 1;
            }
        }
        if keyword(k) != Some(Keyword::JOIN) {
            return Err(format!("ASOF at {} must be followed by JOIN or LEFT JOIN", words[j].1));
        }
        // Snowflake's as-of form is parsed natively: look for MATCH_CONDITION before
        // the join's ON (at the same parenthesis depth).
        if kind == TimeJoin::Asof && has_match_condition(&words[k + 1..]) {
            continue;
        }
        let Some((_, start)) = words.get(k + 1) else {
            return Err(format!("the JOIN at {} has no table after it", words[k].1));
        };
        blank.push((words[j].1, length));
        relations.push((kind, *start));
    }
    let mut text = sql.to_string();
    for (at, length) in blank {
        let offset = byte_offset(sql, at);
        text.replace_range(offset..offset + length, &" ".repeat(length));
    }
    Ok(Blanked { sql: text, relations })
}

/// Whether the tokens after `ASOF JOIN` hold a `MATCH_CONDITION` before the join
/// ends.
fn has_match_condition(after_join: &[(&Token, Location)]) -> bool {
    let mut depth = 0i32;
    for (token, _) in after_join {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::MATCH_CONDITION => return true,
            Token::Word(w)
                if depth == 0 && matches!(w.keyword, Keyword::ON | Keyword::USING | Keyword::JOIN | Keyword::WHERE) =>
            {
                return false;
            }
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    false
}

/// The byte offset of a 1-based line and column (in characters).
pub(crate) fn byte_offset(sql: &str, at: Location) -> usize {
    let (mut line, mut column) = (1u64, 1u64);
    for (offset, c) in sql.char_indices() {
        if line == at.line && column == at.column {
            return offset;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    sql.len()
}

/// Rewrites the time joins of `statement` (Snowflake's as-of joins, and the joins
/// found at `relations`) into ordinary joins marked with [`ASOF_MARKER`] or
/// [`WINDOW_MARKER`].
pub fn mark_time_joins(statement: &mut Statement, relations: &[(TimeJoin, Location)]) -> Result<(), String> {
    let mut starts = Vec::new();
    let _ = statement.visit(&mut JoinWalker {
        f: |_: usize, join: &mut Join, _: &TableFactor, _: usize| {
            starts.push(join.relation.span().start);
            Ok(Marked::Done)
        },
        seen: 0,
        windows: 0,
        usings: vec![],
    });
    let mut chosen = Vec::new();
    for (kind, at) in relations {
        let best = starts.iter().enumerate().filter(|(_, s)| *s >= at).min_by_key(|(_, s)| **s).map(|(i, _)| i);
        match best {
            Some(i) => chosen.push((i, *kind)),
            None => return Err(format!("cannot find the join of the time join at {at}")),
        }
    }
    let mut walker = JoinWalker {
        f: |index: usize, join: &mut Join, left: &TableFactor, position: usize| {
            let kind = chosen.iter().find(|(i, _)| *i == index).map(|(_, k)| *k);
            mark(join, kind, left, position)
        },
        seen: 0,
        windows: 0,
        usings: vec![],
    };
    match statement.visit(&mut walker) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// `marker()` as an SQL expression.
fn marker_call(marker: &str) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(marker)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// Marks one join if it is a time join (`kind` for the keyword forms); says
/// what its SELECT needs. `left` is the first table of the join's FROM item and
/// `position` the join's place after it (0 for the first join).
fn mark(join: &mut Join, kind: Option<TimeJoin>, left_table: &TableFactor, position: usize) -> Result<Marked, String> {
    let and = |a: Expr, b: Expr| Expr::BinaryOp { left: Box::new(a), op: BinaryOperator::And, right: Box::new(b) };
    let on_of = |constraint: &JoinConstraint| match constraint {
        JoinConstraint::On(e) => Ok(Some(Expr::Nested(Box::new(e.clone())))),
        JoinConstraint::None => Ok(None),
        _ => Err("a time join needs an ON condition (USING and NATURAL are not supported)".to_string()),
    };
    let placeholder = || JoinOperator::CrossJoin(JoinConstraint::None);
    match (std::mem::replace(&mut join.join_operator, placeholder()), kind) {
        (JoinOperator::AsOf { match_condition, constraint }, _) => {
            let condition = match on_of(&constraint)? {
                Some(on) => and(on, Expr::Nested(Box::new(match_condition))),
                None => Expr::Nested(Box::new(match_condition)),
            };
            join.join_operator = JoinOperator::LeftOuter(JoinConstraint::On(and(condition, marker_call(ASOF_MARKER))));
        }
        (op, Some(TimeJoin::Asof)) => {
            let (left, constraint) = match &op {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (false, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (true, c),
                _ => return Err("ASOF must precede JOIN or LEFT JOIN".to_string()),
            };
            let (on, marked) = match constraint {
                JoinConstraint::Using(columns) if position == 0 => {
                    let using = AsofUsing::new(left_table, &join.relation, columns)?;
                    (Expr::Nested(Box::new(using.condition())), Marked::Using(using))
                }
                JoinConstraint::Using(_) => {
                    return Err("ASOF JOIN ... USING reads its columns from the first table of the FROM item, so it \
                                must be that table's first join; write ON for a longer chain"
                        .to_string());
                }
                c => match on_of(c)? {
                    Some(on) => (on, Marked::Done),
                    None => {
                        return Err("an ASOF JOIN needs an ON condition (keys equal and one time inequality) or \
                                    USING (keys..., time)"
                            .to_string());
                    }
                },
            };
            let constraint = JoinConstraint::On(and(on, marker_call(ASOF_MARKER)));
            join.join_operator =
                if left { JoinOperator::LeftOuter(constraint) } else { JoinOperator::Inner(constraint) };
            return Ok(marked);
        }
        (op, Some(TimeJoin::Window)) => {
            let (JoinOperator::Join(constraint) | JoinOperator::Inner(constraint)) = &op else {
                return Err("WINDOW must precede JOIN".to_string());
            };
            let Some(on) = on_of(constraint)? else {
                return Err("a WINDOW JOIN needs an ON condition: keys equal and the window, such as \
                     q.time BETWEEN t.time - INTERVAL '1 second' AND t.time"
                    .to_string());
            };
            // Every left row gives a row, with or without right rows in its window.
            join.join_operator = JoinOperator::LeftOuter(JoinConstraint::On(and(on, marker_call(WINDOW_MARKER))));
            return Ok(Marked::Window);
        }
        (op, None) => join.join_operator = op,
    }
    Ok(Marked::Done)
}

/// A window join's SELECT groups by every non-aggregate item (`GROUP BY ALL`); it
/// may not group otherwise, and joins nothing else in the same FROM.
fn group_window_select(select: &mut Select) -> Result<(), String> {
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) => !exprs.is_empty() || !modifiers.is_empty(),
        GroupByExpr::All(_) => true,
    };
    if grouped || select.having.is_some() {
        return Err("a WINDOW JOIN gives one row per left row, so its SELECT takes no GROUP BY or HAVING; \
                    group its result in an outer query"
            .to_string());
    }
    if select.from.len() != 1 || select.from[0].joins.len() != 1 {
        return Err("a WINDOW JOIN joins two tables: join any others in a subquery".to_string());
    }
    select.group_by = GroupByExpr::All(vec![]);
    Ok(())
}

/// Calls `f` on every join of every query, in one fixed order, with its index,
/// the first table of its FROM item and its place after it; `f` says what the
/// join's SELECT then needs (grouping for a window join, USING's reading of
/// columns for an as-of join with USING).
struct JoinWalker<F> {
    f: F,
    seen: usize,
    windows: usize,
    usings: Vec<AsofUsing>,
}

impl<F: FnMut(usize, &mut Join, &TableFactor, usize) -> Result<Marked, String>> JoinWalker<F> {
    fn tables(&mut self, tables: &mut [TableWithJoins]) -> Result<(), String> {
        for table in tables {
            self.factor(&mut table.relation)?;
            for (position, join) in table.joins.iter_mut().enumerate() {
                self.factor(&mut join.relation)?;
                match (self.f)(self.seen, join, &table.relation, position)? {
                    Marked::Done => {}
                    Marked::Window => self.windows += 1,
                    Marked::Using(using) => self.usings.push(using),
                }
                self.seen += 1;
            }
        }
        Ok(())
    }

    fn factor(&mut self, factor: &mut TableFactor) -> Result<(), String> {
        if let TableFactor::NestedJoin { table_with_joins, .. } = factor {
            self.tables(std::slice::from_mut(table_with_joins.as_mut()))?;
        }
        Ok(())
    }

    fn set_expr(&mut self, body: &mut SetExpr) -> Result<(), String> {
        match body {
            SetExpr::Select(select) => {
                let (windows, usings) = (self.windows, self.usings.len());
                self.tables(&mut select.from)?;
                if self.windows > windows {
                    group_window_select(select)?;
                }
                for using in self.usings.drain(usings..) {
                    using.qualify(select);
                }
                Ok(())
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left)?;
                self.set_expr(right)
            }
            _ => Ok(()),
        }
    }
}

impl<F: FnMut(usize, &mut Join, &TableFactor, usize) -> Result<Marked, String>> VisitorMut for JoinWalker<F> {
    type Break = String;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<String> {
        match self.set_expr(&mut query.body) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewrite(sql: &str) -> Result<String, String> {
        let dialect = GenericDialect {};
        let blanked = blank_time_joins(sql, &dialect)?;
        let mut statements = Parser::parse_sql(&dialect, &blanked.sql).map_err(|e| e.to_string())?;
        mark_time_joins(&mut statements[0], &blanked.relations)?;
        Ok(statements[0].to_string())
    }

    #[test]
    fn both_forms_become_marked_joins() {
        let duck = rewrite("SELECT * FROM t ASOF JOIN q ON t.s = q.s AND t.tm >= q.tm JOIN r ON r.a = t.a").unwrap();
        assert!(duck.contains("JOIN q ON (t.s = q.s AND t.tm >= q.tm) AND __strata_asof()"), "{duck}");
        assert!(duck.contains("JOIN r ON r.a = t.a") && !duck.contains("ASOF"), "{duck}");
        let left =
            rewrite("SELECT * FROM t ASOF LEFT JOIN (SELECT * FROM q ASOF JOIN z ON q.x >= z.x) w ON t.x >= w.x")
                .unwrap();
        assert_eq!(left.matches(ASOF_MARKER).count(), 2, "{left}");
        assert!(left.contains("LEFT OUTER JOIN (SELECT"), "{left}");
        let snow = rewrite("SELECT * FROM t ASOF JOIN q MATCH_CONDITION (t.tm >= q.tm) ON t.s = q.s").unwrap();
        assert!(snow.contains("LEFT OUTER JOIN q ON (t.s = q.s) AND (t.tm >= q.tm) AND __strata_asof"), "{snow}");
        let err = blank_time_joins("SELECT * FROM t ASOF q", &GenericDialect {}).err().unwrap();
        assert!(err.contains("followed by JOIN"), "{err}");
    }

    #[test]
    fn asof_using_becomes_on_with_the_left_tables_columns() {
        let sql =
            rewrite("SELECT *, sym FROM t ASOF LEFT JOIN q USING (sym, ex, time) WHERE time > 5 ORDER BY sym").unwrap();
        assert_eq!(
            sql,
            "SELECT t.*, q.* EXCLUDE (sym, ex, time), t.sym FROM t LEFT OUTER JOIN q ON (t.sym = q.sym AND t.ex = q.ex \
             AND t.time >= q.time) AND __strata_asof() WHERE t.time > 5 ORDER BY sym"
        );
        let aliased = rewrite("SELECT x.time, y.time FROM (SELECT * FROM t) x ASOF JOIN db.q y USING (time)").unwrap();
        assert!(aliased.contains("ON (x.time >= y.time) AND __strata_asof()"), "{aliased}");
        let err = rewrite("SELECT * FROM t JOIN r ON r.a = t.a ASOF JOIN q USING (time)").unwrap_err();
        assert!(err.contains("first join"), "{err}");
        let err = rewrite("SELECT * FROM (SELECT 1) ASOF JOIN q USING (time)").unwrap_err();
        assert!(err.contains("alias"), "{err}");
    }

    #[test]
    fn window_joins_become_grouped_left_joins() {
        let sql = rewrite(
            "SELECT t.s, max(q.p) FROM t WINDOW JOIN q ON t.s = q.s AND q.tm BETWEEN t.tm - 2 AND t.tm ORDER BY 1",
        )
        .unwrap();
        assert!(
            sql.contains("LEFT OUTER JOIN q ON (t.s = q.s AND q.tm BETWEEN t.tm - 2 AND t.tm) AND __strata_window()"),
            "{sql}"
        );
        assert!(sql.contains("GROUP BY ALL ORDER BY 1"), "{sql}");
        let nested = rewrite(
            "SELECT count(*) FROM (SELECT t.s, count(*) AS n FROM t WINDOW JOIN q ON t.s = q.s AND q.tm <= t.tm) x",
        )
        .unwrap();
        assert_eq!(nested.matches("GROUP BY ALL").count(), 1, "only the window join's SELECT: {nested}");
        // A named window clause is not a window join.
        let named = rewrite("SELECT sum(x) OVER w FROM t WINDOW w AS (ORDER BY y)").unwrap();
        assert!(!named.contains("GROUP BY"), "{named}");
        let err = rewrite("SELECT t.s, count(*) FROM t WINDOW JOIN q ON t.s = q.s AND q.tm <= t.tm GROUP BY t.s")
            .unwrap_err();
        assert!(err.contains("no GROUP BY"), "{err}");
        let err = rewrite("SELECT count(*) FROM t WINDOW JOIN q ON q.tm <= t.tm JOIN r ON r.a = t.a").unwrap_err();
        assert!(err.contains("joins two tables"), "{err}");
        let err = rewrite("SELECT count(*) FROM t WINDOW JOIN q USING (s)").unwrap_err();
        assert!(err.contains("ON condition"), "{err}");
    }
}
