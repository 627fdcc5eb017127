//! Answers to queries an RDB or HDB receives over IPC.
//!
//! Built in: `tables[]`, a table's name (the whole table), `select from t`,
//! `count t`, `.strata.counters[]`. SQL (`sql "SELECT ..."`, or kdb+'s `.s.e`) is
//! refused with a clear error until the query engine (strata-query) is wired in.

use strata_ipc::{Atom, K, Table};

use crate::request::Request;

/// Tables a process can answer for.
pub trait TableSource {
    /// Table names, sorted.
    fn table_names(&self) -> Vec<String>;
    /// A whole table, or an error naming the tables there are.
    fn table(&self, name: &str) -> Result<Table, String>;
    /// A table's row count, without building it.
    fn count(&self, name: &str) -> Result<usize, String>;
    /// The process's counters.
    fn counters(&self) -> K;
}

/// Evaluates `request` against `source`.
pub fn answer(source: &dyn TableSource, request: Request) -> Result<K, String> {
    // `count t` counts without materialising the table.
    if let Request::Call(f, args) = &request
        && f == "count"
        && let [Request::Call(t, inner)] = args.as_slice()
        && inner.is_empty()
        && source.table_names().iter().any(|n| n == t)
    {
        return Ok(K::Atom(Atom::Long(source.count(t)? as i64)));
    }
    request.eval(&mut |name, args| builtin(source, name, args))
}

fn builtin(source: &dyn TableSource, name: &str, args: Vec<K>) -> Result<K, String> {
    match (name, args.as_slice()) {
        ("tables", []) => Ok(K::symbols(source.table_names())),
        (".strata.counters", []) => Ok(source.counters()),
        ("count", [value]) => Ok(K::Atom(Atom::Long(value.count() as i64))),
        // `select from t` with no columns or clauses is the table itself.
        ("select" | "from", [table @ K::Table(_)]) => Ok(table.clone()),
        ("sql" | ".s.e", _) => Err(format!(
            "{name}: SQL is not available in this build: the query engine (strata-query) is not wired in yet; built-in queries: tables[], count t, select from t, t"
        )),
        (table, []) if source.table_names().iter().any(|n| n == table) => source.table(table).map(K::Table),
        _ => Err(format!(
            "{name}: not understood; tables: {}; built-in queries: tables[], count t, select from t, t, .strata.counters[]",
            source.table_names().join(" ")
        )),
    }
}
