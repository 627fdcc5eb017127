//! Answers to queries an RDB or HDB receives over IPC.
//!
//! Built in: `tables[]`, a table's name (the whole table), `select from t`, `count t`,
//! `.strata.counters[]`, and SQL: a char vector that is a SQL statement (`"SELECT
//! sym, sum(size) FROM trade GROUP BY sym"`), or `.s.e["..."]` / `sql["..."]` (also as
//! a function-call list, `(".s.e"; "...")`), answered as a q table. An HDB also
//! reloads on `\l .`.

use strata_ipc::{Atom, K, Table};
use strata_query::Cancel;

use crate::request::Request;

/// Names that ask a process to reload its tables (`\l .` is what kdb+'s RDB sends).
pub const RELOAD_CALLS: [&str; 2] = ["\\l", ".strata.reload"];

/// Names that run their string argument as SQL (`.s.e` is kdb+'s SQL entry point).
pub const SQL_CALLS: [&str; 2] = [".s.e", "sql"];

/// A process that answers queries: its tables for q's built-in forms, and SQL.
/// Several of a server's query threads call it at once; each call takes what locks
/// it needs for that call only, so a long SQL statement does not hold up the
/// process's other work.
pub trait Queries {
    /// Table names, sorted.
    fn table_names(&self) -> Result<Vec<String>, String>;
    /// A whole table, or an error naming the tables there are.
    fn table(&self, name: &str) -> Result<Table, String>;
    /// A table's row count, without building it.
    fn count(&self, name: &str) -> Result<usize, String>;
    /// The process's counters.
    fn counters(&self) -> Result<K, String>;
    /// Runs one SQL statement, stopped when `cancel` fires (its client went away)
    /// or the process's time limit passes; the rows as a q table.
    fn sql(&self, statement: &str, cancel: &Cancel) -> Result<K, String>;
    /// Re-reads the tables (an HDB after end of day).
    fn reload(&self) -> Result<K, String> {
        Err("reload: only an HDB reloads".into())
    }
}

/// Evaluates `request` against `queries`; `cancel` stops its SQL.
pub fn answer(queries: &dyn Queries, request: Request, cancel: &Cancel) -> Result<K, String> {
    // `count t` counts without materialising the table.
    if let Request::Call(f, args) = &request
        && f == "count"
        && let [Request::Call(t, inner)] = args.as_slice()
        && inner.is_empty()
        && queries.table_names()?.iter().any(|n| n == t)
    {
        return Ok(K::Atom(Atom::Long(queries.count(t)? as i64)));
    }
    request.eval(&mut |name, args| builtin(queries, name, args, cancel))
}

fn builtin(queries: &dyn Queries, name: &str, args: Vec<K>, cancel: &Cancel) -> Result<K, String> {
    match (name, args.as_slice()) {
        ("tables", []) => Ok(K::symbols(queries.table_names()?)),
        (".strata.counters", []) => queries.counters(),
        ("count", [value]) => Ok(K::Atom(Atom::Long(value.count() as i64))),
        // `select from t` with no columns or clauses is the table itself.
        ("select" | "from", [table @ K::Table(_)]) => Ok(table.clone()),
        (name, [statement]) if SQL_CALLS.contains(&name) => match statement.as_text() {
            Some(text) => queries.sql(text, cancel),
            None => Err(format!("{name}: expected the SQL statement as a string, got a {}", statement.describe())),
        },
        (name, _) if RELOAD_CALLS.contains(&name) => queries.reload(),
        (table, []) if queries.table_names()?.iter().any(|n| n == table) => queries.table(table).map(K::Table),
        _ => Err(format!(
            "{name}: not understood; tables: {}; queries: SQL (\"SELECT ...\", .s.e[\"...\"]), tables[], count t, select from t, t, .strata.counters[]",
            queries.table_names()?.join(" ")
        )),
    }
}
