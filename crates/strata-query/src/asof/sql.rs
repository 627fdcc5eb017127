//! ASOF JOIN in SQL text: DuckDB's `t ASOF [LEFT] JOIN q ON t.sym = q.sym AND
//! t.time >= q.time` and Snowflake's `t ASOF JOIN q MATCH_CONDITION (t.time >=
//! q.time) ON t.sym = q.sym`, turned into ordinary joins whose ON condition carries
//! the marker function [`ASOF_MARKER`] so the planner can find them again.
//!
//! The SQL parser knows only Snowflake's form, so a DuckDB-form `ASOF` keyword is
//! blanked out of the text (kept the same length, so every position stays put) and
//! remembered by the position of the relation after `JOIN`; after parsing, the join
//! whose relation starts first at or after that position is the as-of join.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArgumentList, FunctionArguments, Ident, Join, JoinConstraint, JoinOperator,
    ObjectName, Query, SetExpr, Spanned, Statement, TableFactor, TableWithJoins, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
use std::ops::ControlFlow;

/// The zero-argument function that marks an ON condition as an as-of match.
pub const ASOF_MARKER: &str = "__strata_asof";

/// SQL text with DuckDB-form `ASOF` keywords blanked, and where their joins'
/// relations start.
pub struct Blanked {
    /// The text to parse.
    pub sql: String,
    /// Positions of the relations that follow a blanked `ASOF ... JOIN`.
    pub relations: Vec<Location>,
}

/// Finds DuckDB-form as-of joins in `sql`. Errors are the tokenizer's (an
/// unterminated string, say), with their position.
pub fn blank_asof(sql: &str, dialect: &dyn Dialect) -> Result<Blanked, String> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().map_err(|e| e.to_string())?;
    let words: Vec<(usize, &Token, Location)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)))
        .map(|(i, t)| (i, &t.token, t.span.start))
        .collect();
    let keyword = |j: usize| match words.get(j) {
        Some((_, Token::Word(w), _)) => Some(w.keyword),
        _ => None,
    };
    let mut blank = Vec::new();
    let mut relations = Vec::new();
    for j in 0..words.len() {
        if keyword(j) != Some(Keyword::ASOF) {
            continue;
        }
        let mut k = j + 1;
        if keyword(k) == Some(Keyword::LEFT) {
            k += 1;
            if keyword(k) == Some(Keyword::OUTER) {
                k += 1;
            }
        }
        if keyword(k) != Some(Keyword::JOIN) {
            return Err(format!("ASOF at {} must be followed by JOIN or LEFT JOIN", words[j].2));
        }
        // Snowflake's form is parsed natively: look for MATCH_CONDITION before the
        // join's ON (at the same parenthesis depth).
        let mut depth = 0i32;
        let mut snowflake = false;
        for (_, token, _) in &words[k + 1..] {
            match token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::Word(w) if depth == 0 && w.keyword == Keyword::MATCH_CONDITION => {
                    snowflake = true;
                    break;
                }
                Token::Word(w)
                    if depth == 0
                        && matches!(w.keyword, Keyword::ON | Keyword::USING | Keyword::JOIN | Keyword::WHERE) =>
                {
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
        if snowflake {
            continue;
        }
        let Some((_, _, start)) = words.get(k + 1) else {
            return Err(format!("ASOF JOIN at {} has no table after JOIN", words[j].2));
        };
        blank.push(words[j].2);
        relations.push(*start);
    }
    let mut text = sql.to_string();
    for at in blank {
        let offset = byte_offset(sql, at);
        text.replace_range(offset..offset + 4, "    ");
    }
    Ok(Blanked { sql: text, relations })
}

/// The byte offset of a 1-based line and column (in characters).
fn byte_offset(sql: &str, at: Location) -> usize {
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

/// Rewrites the as-of joins of `statement` (Snowflake's, and DuckDB's found at
/// `relations`) into ordinary joins marked with [`ASOF_MARKER`].
pub fn mark_asof_joins(statement: &mut Statement, relations: &[Location]) -> Result<(), String> {
    let mut starts = Vec::new();
    let _ = statement.visit(&mut JoinWalker {
        f: |_: usize, join: &mut Join| {
            starts.push(join.relation.span().start);
            Ok(())
        },
        seen: 0,
    });
    let mut chosen = Vec::new();
    for at in relations {
        let best = starts.iter().enumerate().filter(|(_, s)| *s >= at).min_by_key(|(_, s)| **s).map(|(i, _)| i);
        match best {
            Some(i) => chosen.push(i),
            None => return Err(format!("cannot find the join of the ASOF at {at}")),
        }
    }
    let mut walker = JoinWalker {
        f: |index: usize, join: &mut Join| {
            let duck = chosen.contains(&index);
            mark(join, duck)
        },
        seen: 0,
    };
    match statement.visit(&mut walker) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Marks one join if it is an as-of join.
fn mark(join: &mut Join, duck: bool) -> Result<(), String> {
    let marker = Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(ASOF_MARKER)]),
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
    });
    let and = |a: Expr, b: Expr| Expr::BinaryOp { left: Box::new(a), op: BinaryOperator::And, right: Box::new(b) };
    let on_of = |constraint: &JoinConstraint| match constraint {
        JoinConstraint::On(e) => Ok(Some(Expr::Nested(Box::new(e.clone())))),
        JoinConstraint::None => Ok(None),
        _ => Err("an ASOF JOIN needs an ON condition (USING and NATURAL are not supported)".to_string()),
    };
    let placeholder = || JoinOperator::CrossJoin(JoinConstraint::None);
    match std::mem::replace(&mut join.join_operator, placeholder()) {
        JoinOperator::AsOf { match_condition, constraint } => {
            let condition = match on_of(&constraint)? {
                Some(on) => and(on, Expr::Nested(Box::new(match_condition))),
                None => Expr::Nested(Box::new(match_condition)),
            };
            join.join_operator = JoinOperator::LeftOuter(JoinConstraint::On(and(condition, marker)));
        }
        op if duck => {
            let (left, constraint) = match &op {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (false, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (true, c),
                _ => return Err("ASOF must precede JOIN or LEFT JOIN".to_string()),
            };
            let Some(on) = on_of(constraint)? else {
                return Err("an ASOF JOIN needs an ON condition: keys equal and one time inequality".to_string());
            };
            let constraint = JoinConstraint::On(and(on, marker));
            join.join_operator =
                if left { JoinOperator::LeftOuter(constraint) } else { JoinOperator::Inner(constraint) };
        }
        op => join.join_operator = op,
    }
    Ok(())
}

/// Calls `f` on every join of every query, in one fixed order, with its index.
struct JoinWalker<F> {
    f: F,
    seen: usize,
}

impl<F: FnMut(usize, &mut Join) -> Result<(), String>> JoinWalker<F> {
    fn tables(&mut self, tables: &mut [TableWithJoins]) -> Result<(), String> {
        for table in tables {
            self.factor(&mut table.relation)?;
            for join in &mut table.joins {
                self.factor(&mut join.relation)?;
                (self.f)(self.seen, join)?;
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
            SetExpr::Select(select) => self.tables(&mut select.from),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left)?;
                self.set_expr(right)
            }
            _ => Ok(()),
        }
    }
}

impl<F: FnMut(usize, &mut Join) -> Result<(), String>> VisitorMut for JoinWalker<F> {
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

    fn rewrite(sql: &str) -> String {
        let dialect = GenericDialect {};
        let blanked = blank_asof(sql, &dialect).unwrap();
        let mut statements = Parser::parse_sql(&dialect, &blanked.sql).unwrap();
        mark_asof_joins(&mut statements[0], &blanked.relations).unwrap();
        statements[0].to_string()
    }

    #[test]
    fn both_forms_become_marked_joins() {
        let duck = rewrite("SELECT * FROM t ASOF JOIN q ON t.s = q.s AND t.tm >= q.tm JOIN r ON r.a = t.a");
        assert!(duck.contains("JOIN q ON (t.s = q.s AND t.tm >= q.tm) AND __strata_asof()"), "{duck}");
        assert!(duck.contains("JOIN r ON r.a = t.a") && !duck.contains("ASOF"), "{duck}");
        let left =
            rewrite("SELECT * FROM t ASOF LEFT JOIN (SELECT * FROM q ASOF JOIN z ON q.x >= z.x) w ON t.x >= w.x");
        assert_eq!(left.matches(ASOF_MARKER).count(), 2, "{left}");
        assert!(left.contains("LEFT OUTER JOIN (SELECT"), "{left}");
        let snow = rewrite("SELECT * FROM t ASOF JOIN q MATCH_CONDITION (t.tm >= q.tm) ON t.s = q.s");
        assert!(snow.contains("LEFT OUTER JOIN q ON (t.s = q.s) AND (t.tm >= q.tm) AND __strata_asof"), "{snow}");
        let err = blank_asof("SELECT * FROM t ASOF q", &GenericDialect {}).err().unwrap();
        assert!(err.contains("followed by JOIN"), "{err}");
    }
}
