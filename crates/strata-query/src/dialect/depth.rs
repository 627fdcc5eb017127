//! Bounded recursion for any SQL text a client sends. sqlparser builds a chain of
//! infix operators (`a OR b OR ...`, `x + y + ...`, `e::int::int...`) in a loop, so
//! the parser never refuses one, but the tree it builds is as deep as the chain is
//! long, and planning, optimising, evaluating and even dropping it recurse once per
//! level: a BI tool's `sym = 'A' OR sym = 'B' OR ...` of 900 symbols overflowed a
//! query thread's stack and aborted the server.
//!
//! Three steps keep every recursion shallow:
//! 1. [`check_operators`], before parsing: a statement of more than
//!    [`MAX_OPERATORS`] operators is refused, which bounds how deep any tree it
//!    parses into can be (so even dropping it fits [`crate::QUERY_STACK`]).
//! 2. [`balance_and_bound`], right after parsing: a chain of more than
//!    [`BALANCE_ABOVE`] `AND`s or `OR`s (associative, in SQL's three-valued logic
//!    too) is regrouped as a balanced tree of the same terms in the same order,
//!    depth log2 of its length: 100,000 terms nest 17 deep.
//! 3. ... and then any expression still nested deeper than [`MAX_EXPRESSION_DEPTH`]
//!    (DuckDB's `max_expression_depth`) is refused with an error, as DuckDB does, so
//!    the planner and the operators only ever see shallow trees.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Statement, Value, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// Operators one statement may hold (DuckDB has no such bound; its parser recurses
/// and is bounded by its stack). A chain of 100,000 `OR`ed equalities holds 200,000.
pub const MAX_OPERATORS: usize = 1_000_000;

/// How deep an expression may nest once `AND`/`OR` chains are balanced: DuckDB's
/// default `max_expression_depth`.
pub const MAX_EXPRESSION_DEPTH: usize = 1000;

/// `AND`/`OR` chains of more terms than this are balanced; shorter ones are left as
/// written (their plans and column names unchanged).
pub const BALANCE_ABOVE: usize = 16;

/// Refuses `sql` when it holds more than [`MAX_OPERATORS`] operators.
pub fn check_operators(sql: &str, dialect: &dyn Dialect) -> Result<(), String> {
    // Cheap case first: a text this short cannot hold that many operators.
    if sql.len() < MAX_OPERATORS {
        return Ok(());
    }
    let tokens = Tokenizer::new(dialect, sql).tokenize().map_err(|e| e.to_string())?;
    let operators = tokens.iter().filter(|t| is_operator(t)).count();
    if operators > MAX_OPERATORS {
        return Err(format!(
            "the statement holds {operators} operators, more than the {MAX_OPERATORS} one statement may hold \
             (an expression that long cannot be planned safely); write long lists of values as IN (...) or join \
             against a table of them"
        ));
    }
    Ok(())
}

fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(w) => matches!(
            w.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::IN
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::BETWEEN
                | Keyword::COLLATE
                | Keyword::AT
                | Keyword::UNION
                | Keyword::INTERSECT
                | Keyword::EXCEPT
        ),
        Token::Number(..)
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::Whitespace(_)
        | Token::Comma
        | Token::LParen
        | Token::RParen
        | Token::SemiColon
        | Token::EOF => false,
        _ => true,
    }
}

/// Balances long `AND`/`OR` chains in `statement`, then refuses it if any
/// expression still nests deeper than [`MAX_EXPRESSION_DEPTH`].
pub fn balance_and_bound(statement: &mut Statement) -> Result<(), String> {
    match statement.visit(&mut Balancer) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(error) => Err(error),
    }
}

struct Balancer;

impl VisitorMut for Balancer {
    type Break = String;

    /// Called top-down, before the visitor descends: a chain is balanced at its root,
    /// so the visitor only ever walks the balanced tree; a chain that cannot be
    /// balanced and is too deep is refused before anything recurses into it.
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<String> {
        if let Expr::BinaryOp { op: op @ (BinaryOperator::And | BinaryOperator::Or), .. } = expr {
            let op = op.clone();
            if is_long_chain(expr, &op) {
                let taken = std::mem::replace(expr, Expr::value(Value::Null));
                *expr = balanced(flatten(taken, &op), &op);
            }
        }
        let depth = spine(expr);
        if depth > MAX_EXPRESSION_DEPTH {
            return ControlFlow::Break(format!(
                "an expression nests {depth} operators deep, more than the {MAX_EXPRESSION_DEPTH} allowed (as \
                 DuckDB's max_expression_depth); break it up, or write long lists as IN (...)"
            ));
        }
        ControlFlow::Continue(())
    }
}

/// Whether the `op` chain rooted at `expr` has more than [`BALANCE_ABOVE`] terms,
/// counted down its left spine (where the parser grows a chain) without recursion.
fn is_long_chain(expr: &Expr, op: &BinaryOperator) -> bool {
    let mut terms = 1;
    let mut at = expr;
    while let Expr::BinaryOp { left, op: o, .. } = at
        && o == op
    {
        terms += 1;
        if terms > BALANCE_ABOVE {
            return true;
        }
        at = left;
    }
    false
}

/// The terms of the `op` chain rooted at `expr`, left to right, taking it apart
/// with an explicit stack (the chain may be far deeper than the thread's stack).
fn flatten(expr: Expr, op: &BinaryOperator) -> Vec<Expr> {
    let mut terms = Vec::new();
    let mut pending = vec![expr];
    while let Some(next) = pending.pop() {
        match next {
            Expr::BinaryOp { left, op: o, right } if &o == op => {
                // Right pushed first so the left side is taken apart first.
                pending.push(*right);
                pending.push(*left);
            }
            term => terms.push(term),
        }
    }
    terms
}

/// `terms` joined by `op` as a balanced tree (recursion depth log2 of their count).
fn balanced(mut terms: Vec<Expr>, op: &BinaryOperator) -> Expr {
    if terms.len() == 1 {
        return terms.pop().expect("one term");
    }
    let right = terms.split_off(terms.len() / 2);
    Expr::BinaryOp { left: Box::new(balanced(terms, op)), op: op.clone(), right: Box::new(balanced(right, op)) }
}

/// The length of the chain of operands hanging off `expr` through the first operand
/// of each infix or postfix form: the forms sqlparser builds in a loop, so the only
/// ones that can nest deeper than its recursion limit. Counted without recursion.
fn spine(expr: &Expr) -> usize {
    let mut depth = 1;
    let mut at = expr;
    loop {
        at = match at {
            Expr::BinaryOp { left, .. } | Expr::AnyOp { left, .. } | Expr::AllOp { left, .. } => left,
            Expr::IsFalse(e)
            | Expr::IsNotFalse(e)
            | Expr::IsTrue(e)
            | Expr::IsNotTrue(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::IsUnknown(e)
            | Expr::IsNotUnknown(e)
            | Expr::IsDistinctFrom(e, _)
            | Expr::IsNotDistinctFrom(e, _)
            | Expr::Nested(e) => e,
            Expr::IsNormalized { expr, .. }
            | Expr::InList { expr, .. }
            | Expr::InSubquery { expr, .. }
            | Expr::InUnnest { expr, .. }
            | Expr::Between { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::ILike { expr, .. }
            | Expr::SimilarTo { expr, .. }
            | Expr::RLike { expr, .. }
            | Expr::Cast { expr, .. }
            | Expr::Collate { expr, .. } => expr,
            Expr::AtTimeZone { timestamp, .. } => timestamp,
            Expr::CompoundFieldAccess { root, .. } => root,
            Expr::JsonAccess { value, .. } => value,
            _ => return depth,
        };
        depth += 1;
        if depth > MAX_EXPRESSION_DEPTH {
            return depth;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&GenericDialect {}, sql).expect("parses").pop().expect("one statement")
    }

    fn or_chain(terms: usize) -> String {
        let terms: Vec<String> = (0..terms).map(|i| format!("sym = 'S{i}'")).collect();
        format!("SELECT * FROM t WHERE {}", terms.join(" OR "))
    }

    fn where_clause(statement: &Statement) -> &Expr {
        let Statement::Query(query) = statement else { panic!("a query") };
        let datafusion::sql::sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else { panic!("a select") };
        select.selection.as_ref().expect("a WHERE clause")
    }

    fn depth(expr: &Expr) -> usize {
        match expr {
            Expr::BinaryOp { left, right, .. } => 1 + depth(left).max(depth(right)),
            _ => 1,
        }
    }

    #[test]
    fn a_long_or_chain_becomes_a_balanced_tree_of_the_same_terms_in_order() {
        let mut statement = parse(&or_chain(1000));
        balance_and_bound(&mut statement).expect("balanced");
        let selection = where_clause(&statement);
        assert!(depth(selection) <= 12, "depth {}", depth(selection));
        let terms = flatten(selection.clone(), &BinaryOperator::Or);
        let texts: Vec<String> = terms.iter().map(ToString::to_string).collect();
        let expected: Vec<String> = (0..1000).map(|i| format!("sym = 'S{i}'")).collect();
        assert_eq!(texts, expected);
    }

    #[test]
    fn short_chains_are_left_as_written() {
        let text = or_chain(BALANCE_ABOVE);
        let mut statement = parse(&text);
        balance_and_bound(&mut statement).expect("kept");
        assert_eq!(statement.to_string(), parse(&text).to_string());
        assert_eq!(depth(where_clause(&statement)), BALANCE_ABOVE + 1);
    }

    #[test]
    fn a_deep_arithmetic_chain_is_refused_naming_the_bound() {
        let terms: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
        let mut statement = parse(&format!("SELECT {}", terms.join(" + ")));
        let error = balance_and_bound(&mut statement).expect_err("too deep");
        assert!(error.contains("1000"), "{error}");
    }

    #[test]
    fn operators_are_counted_only_in_long_texts() {
        assert!(check_operators("SELECT 1 + 2", &GenericDialect {}).is_ok());
        let long = format!("SELECT 1{}", " + 1".repeat(MAX_OPERATORS + 1));
        let error = check_operators(&long, &GenericDialect {}).expect_err("too many");
        assert!(error.contains("operators"), "{error}");
        let fine = format!("SELECT '{}'", "x".repeat(MAX_OPERATORS + 1));
        assert!(check_operators(&fine, &GenericDialect {}).is_ok());
    }
}
