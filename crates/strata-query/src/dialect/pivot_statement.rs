//! DuckDB's statement forms of pivoting, which the SQL parser does not take,
//! rewritten as text into the FROM-clause forms [`super::pivot`] writes out:
//!
//! - `PIVOT <data> ON <column> [IN (<values>)] [USING <aggregates>] [GROUP BY <columns>] [ORDER BY ...] [LIMIT ...]`
//!   is `SELECT * FROM <data> PIVOT (<aggregates> FOR <column> IN (<values>)) ...`,
//!   with `count(*)` for no USING and the values the data has (`ANY ORDER BY
//!   <column>`) for no IN; with GROUP BY, `<data>` is narrowed to the grouping,
//!   pivoted and aggregated columns first, so only those group.
//! - `UNPIVOT <data> ON <columns> [INTO NAME <name> VALUE <value>] [ORDER BY ...] [LIMIT ...]`
//!   is `SELECT * FROM <data> UNPIVOT (<value> FOR <name> IN (<columns>)) ...`
//!   (`name` and `value` by default, as in DuckDB).
//!
//! A whole statement is rewritten, so is one after a WITH (`WITH u AS (...) PIVOT u
//! ON ...`, as DuckDB takes it), and so is each one in parentheses: a subquery
//! (`SELECT ... FROM (PIVOT ...) p`), a CTE's body (`WITH p AS (PIVOT ...)`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, visit_expressions};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::join::sql::byte_offset;

/// `sql` with every DuckDB `PIVOT` or `UNPIVOT` statement in it, the whole
/// statement and each one in parentheses, in the FROM-clause form; `None` when it
/// has none.
pub fn rewrite(sql: &str, dialect: &dyn Dialect) -> Result<Option<String>, String> {
    // Every query passes here: most name no pivot, and need not be tokenized twice.
    if !sql.to_ascii_lowercase().contains("pivot") {
        return Ok(None);
    }
    let whole = match rewrite_statement(sql, dialect)? {
        Some(done) => Some(done),
        None => after_with(sql, dialect)?,
    };
    let mut changed = whole.is_some();
    let mut text = whole.unwrap_or_else(|| sql.to_string());
    // The last one to start first: none starts inside it, and writing it out moves
    // no earlier one's start.
    while let Some((open, close)) = last_in_parentheses(&text, dialect) {
        let Some(written) = rewrite_statement(&text[open + 1..close], dialect)? else { break };
        text = format!("{}{written}{}", &text[..open + 1], &text[close..]);
        changed = true;
    }
    Ok(changed.then_some(text))
}

/// `sql` rewritten when it is `WITH <ctes> PIVOT ...` (or `UNPIVOT`): the statement
/// after the CTEs in the FROM-clause form, under the same WITH.
fn after_with(sql: &str, dialect: &dyn Dialect) -> Result<Option<String>, String> {
    let Ok(tokens) = Tokenizer::new(dialect, sql).tokenize_with_location() else { return Ok(None) };
    let mut words = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_)));
    if !words.next().is_some_and(|t| matches!(&t.token, Token::Word(w) if w.keyword == Keyword::WITH)) {
        return Ok(None);
    }
    let mut depth = 0i32;
    for word in words {
        match &word.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && matches!(w.keyword, Keyword::PIVOT | Keyword::UNPIVOT) => {
                let at = byte_offset(sql, word.span.start);
                return Ok(rewrite_statement(&sql[at..], dialect)?.map(|body| format!("{}{body}", &sql[..at])));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// The byte offsets of the parentheses around the last `(PIVOT ...)` or
/// `(UNPIVOT ...)` in `sql`.
fn last_in_parentheses(sql: &str, dialect: &dyn Dialect) -> Option<(usize, usize)> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    let words: Vec<&TokenWithSpan> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let starts_statement = |t: &TokenWithSpan| matches!(&t.token, Token::Word(w) if matches!(w.keyword, Keyword::PIVOT | Keyword::UNPIVOT));
    let open = (1..words.len()).rev().find(|&j| starts_statement(words[j]) && words[j - 1].token == Token::LParen)? - 1;
    let mut depth = 0i32;
    for word in &words[open..] {
        match word.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => continue,
        }
        if depth == 0 {
            return Some((byte_offset(sql, words[open].span.start), byte_offset(sql, word.span.start)));
        }
    }
    None // unbalanced: the parser reports it
}

/// `sql` in the FROM-clause form if the whole of it is a DuckDB `PIVOT` or
/// `UNPIVOT` statement.
fn rewrite_statement(sql: &str, dialect: &dyn Dialect) -> Result<Option<String>, String> {
    let Ok(tokens) = Tokenizer::new(dialect, sql).tokenize_with_location() else {
        return Ok(None); // the parser reports it
    };
    let words: Vec<(&Token, Location)> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).map(|t| (&t.token, t.span.start)).collect();
    let keyword = |j: usize| match words.get(j) {
        Some((Token::Word(w), _)) => Some(w.keyword),
        _ => None,
    };
    let pivot = match keyword(0) {
        Some(Keyword::PIVOT) => true,
        Some(Keyword::UNPIVOT) => false,
        _ => return Ok(None),
    };
    // The clause keywords at parenthesis depth 0, by word index.
    let mut depth = 0i32;
    let mut clauses: Vec<(Keyword, usize)> = Vec::new();
    for (j, (token, _)) in words.iter().enumerate().skip(1) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 => {
                let k = w.keyword;
                let by = keyword(j + 1) == Some(Keyword::BY);
                if matches!(k, Keyword::ON | Keyword::USING | Keyword::INTO | Keyword::LIMIT)
                    || (matches!(k, Keyword::GROUP | Keyword::ORDER) && by)
                {
                    clauses.push((k, j));
                }
            }
            _ => {}
        }
    }
    let end = sql.trim_end().trim_end_matches(';').len();
    let at = |j: usize| words.get(j).map_or(end, |(_, location)| byte_offset(sql, *location).min(end));
    // The text of the clause started by `k` (after its keywords), if present.
    let clause = |k: Keyword| -> Option<&str> {
        let i = clauses.iter().position(|(c, _)| *c == k)?;
        let skip = if matches!(k, Keyword::GROUP | Keyword::ORDER) { 2 } else { 1 };
        let from = at(clauses[i].1 + skip);
        let to = clauses.get(i + 1).map_or(end, |(_, j)| at(*j));
        Some(sql[from..to].trim())
    };
    let what = if pivot { "PIVOT" } else { "UNPIVOT" };
    let Some(&(Keyword::ON, on_at)) = clauses.first() else {
        return Err(format!("{what} <table> ON <column> ...: no ON after the table"));
    };
    let data = sql[at(1)..at(on_at)].trim();
    let on = clause(Keyword::ON).unwrap_or_default();
    let tail = clauses
        .iter()
        .find(|(k, _)| matches!(k, Keyword::ORDER | Keyword::LIMIT))
        .map_or("", |(_, j)| sql[at(*j)..end].trim());
    if pivot {
        let (column, values) = split_in(on, dialect)?;
        let aggregates = clause(Keyword::USING).unwrap_or("count(*)");
        let values = values.unwrap_or_else(|| format!("ANY ORDER BY {column}"));
        let data = match clause(Keyword::GROUP) {
            Some(groups) => {
                let mut keep: Vec<String> = groups.split(',').map(|g| g.trim().to_string()).collect();
                for c in std::iter::once(column.clone()).chain(columns_read(aggregates, dialect)?) {
                    if !keep.contains(&c) {
                        keep.push(c);
                    }
                }
                format!("(SELECT {} FROM {data}) AS __pivoted", keep.join(", "))
            }
            None => data.to_string(),
        };
        Ok(Some(format!("SELECT * FROM {data} PIVOT ({aggregates} FOR {column} IN ({values})) {tail}")))
    } else {
        let into = clause(Keyword::INTO).unwrap_or("NAME name VALUE value");
        let parts: Vec<&str> = into.split_whitespace().collect();
        let [name_kw, name, value_kw, value] = parts[..] else {
            return Err(format!("UNPIVOT ... INTO {into}: write INTO NAME <column> VALUE <column>"));
        };
        if !name_kw.eq_ignore_ascii_case("NAME") || !value_kw.eq_ignore_ascii_case("VALUE") {
            return Err(format!("UNPIVOT ... INTO {into}: write INTO NAME <column> VALUE <column>"));
        }
        Ok(Some(format!("SELECT * FROM {data} UNPIVOT ({value} FOR {name} IN ({on})) {tail}")))
    }
}

/// `column [IN (values)]` as the column and the values' text.
fn split_in(on: &str, dialect: &dyn Dialect) -> Result<(String, Option<String>), String> {
    let mut parser = Parser::new(dialect).try_with_sql(on).map_err(|e| format!("PIVOT ... ON {on}: {e}"))?;
    let column = parser.parse_identifier().map_err(|e| format!("PIVOT ... ON {on}: pivot on one column ({e})"))?;
    if !parser.parse_keyword(Keyword::IN) {
        return match parser.peek_token().token {
            Token::EOF => Ok((column.to_string(), None)),
            _ => Err(format!("PIVOT ... ON {on}: pivot on one column, optionally IN (values)")),
        };
    }
    let values = on[on.find('(').ok_or(format!("PIVOT ... ON {on}: IN (values)"))? + 1..]
        .trim_end()
        .strip_suffix(')')
        .ok_or(format!("PIVOT ... ON {on}: IN (values)"))?;
    Ok((column.to_string(), Some(values.to_string())))
}

/// The columns the aggregates read.
fn columns_read(aggregates: &str, dialect: &dyn Dialect) -> Result<Vec<String>, String> {
    let items = Parser::new(dialect)
        .try_with_sql(aggregates)
        .and_then(|mut p| p.parse_comma_separated(Parser::parse_select_item))
        .map_err(|e| format!("PIVOT ... USING {aggregates}: {e}"))?;
    let mut names = Vec::new();
    let _ = visit_expressions(&items, |e| {
        if let Expr::Identifier(id) = e
            && !names.contains(&id.to_string())
        {
            names.push(id.to_string());
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(names)
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    use super::*;

    fn rewritten(sql: &str) -> Result<Option<String>, String> {
        rewrite(sql, &GenericDialect {})
    }

    #[test]
    fn pivot_statements() {
        assert_eq!(
            rewritten("PIVOT (SELECT a FROM t) ON ex USING sum(size) AS n, max(px) ORDER BY 1 LIMIT 2;")
                .unwrap()
                .unwrap(),
            "SELECT * FROM (SELECT a FROM t) PIVOT (sum(size) AS n, max(px) FOR ex IN (ANY ORDER BY ex)) ORDER BY 1 LIMIT 2"
        );
        assert_eq!(
            rewritten("PIVOT t ON ex IN ('N', 'Q' AS q) USING sum(size) GROUP BY sym, date").unwrap().unwrap(),
            "SELECT * FROM (SELECT sym, date, ex, size FROM t) AS __pivoted PIVOT (sum(size) FOR ex IN ('N', 'Q' AS q)) "
        );
        assert_eq!(
            rewritten("PIVOT t ON ex").unwrap().unwrap(),
            "SELECT * FROM t PIVOT (count(*) FOR ex IN (ANY ORDER BY ex)) "
        );
        assert!(rewritten("PIVOT t ON ex, sym").unwrap_err().contains("one column"));
        assert!(rewritten("PIVOT t USING sum(x)").unwrap_err().contains("no ON"));
        assert_eq!(rewritten("SELECT * FROM t PIVOT (sum(x) FOR y IN (1))").unwrap(), None);
    }

    #[test]
    fn unpivot_statements() {
        assert_eq!(
            rewritten("UNPIVOT q ON bid, ask INTO NAME side VALUE px ORDER BY side").unwrap().unwrap(),
            "SELECT * FROM q UNPIVOT (px FOR side IN (bid, ask)) ORDER BY side"
        );
        assert_eq!(
            rewritten("UNPIVOT q ON bid").unwrap().unwrap(),
            "SELECT * FROM q UNPIVOT (value FOR name IN (bid)) "
        );
        assert!(rewritten("UNPIVOT q ON bid INTO side").unwrap_err().contains("INTO NAME"));
    }

    #[test]
    fn statements_in_parentheses_nested_and_in_ctes() {
        assert_eq!(
            rewritten("WITH p AS (PIVOT t ON ex USING sum(size)) SELECT * FROM p, (UNPIVOT q ON bid) u")
                .unwrap()
                .unwrap(),
            "WITH p AS (SELECT * FROM t PIVOT (sum(size) FOR ex IN (ANY ORDER BY ex)) ) \
             SELECT * FROM p, (SELECT * FROM q UNPIVOT (value FOR name IN (bid)) ) u"
        );
        assert_eq!(
            rewritten("PIVOT (UNPIVOT (SELECT a, b FROM t) ON a, b) ON name USING max(value)").unwrap().unwrap(),
            "SELECT * FROM (SELECT * FROM (SELECT a, b FROM t) UNPIVOT (value FOR name IN (a, b)) ) \
             PIVOT (max(value) FOR name IN (ANY ORDER BY name)) "
        );
        assert_eq!(rewritten("SELECT * FROM (SELECT 1) t PIVOT (sum(x) FOR y IN (1))").unwrap(), None);
        assert!(rewritten("SELECT * FROM (PIVOT t USING sum(x))").unwrap_err().contains("no ON"));
        // DuckDB's `WITH ... PIVOT`: the statement after the CTEs.
        assert_eq!(
            rewritten("WITH u AS (SELECT * FROM t), v AS (SELECT 1) PIVOT u ON g USING sum(x)").unwrap().unwrap(),
            "WITH u AS (SELECT * FROM t), v AS (SELECT 1) SELECT * FROM u PIVOT (sum(x) FOR g IN (ANY ORDER BY g)) "
        );
        assert_eq!(
            rewritten("WITH u AS (PIVOT t ON g) SELECT * FROM u").unwrap().unwrap(),
            "WITH u AS (SELECT * FROM t PIVOT (count(*) FOR g IN (ANY ORDER BY g)) ) SELECT * FROM u"
        );
    }
}
