//! The database a command works on. Every command names it the same way, `--db
//! DIR`; `sql`, `ls`, `export`, `verify` and `stats columns` used to take it (and
//! `export` and `stats columns` their table) as plain arguments, `strata sql DIR
//! QUERY`. That spelling still works, with a note on standard error saying what
//! to write instead, so scripts keep running while they are updated.

use std::path::PathBuf;

use clap::Args;

/// `--db DIR`, for commands that work on a whole database (`ls`, `verify`), with
/// the old spelling `DIR` as a plain argument.
#[derive(Args)]
pub(super) struct DatabaseArgs {
    /// Database root.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// The database as a plain argument (`DIR`, deprecated).
    #[arg(hide = true)]
    old: Option<String>,
}

impl DatabaseArgs {
    /// The database root from whichever spelling was used; `usage` is the new
    /// spelling, shown in the note and in the error.
    pub(super) fn resolve(&self, usage: &str) -> Result<PathBuf, String> {
        database(self.db.clone(), &mut self.old.iter().cloned().collect(), usage)
    }
}

/// `--db DIR --table TABLE`, for commands that work on one table (`export`,
/// `stats columns`), with the old spelling `DIR TABLE` as plain arguments.
#[derive(Args)]
pub(super) struct TableArgs {
    /// Database root.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// Table name.
    #[arg(long)]
    table: Option<String>,
    /// The database and table as plain arguments (`DIR TABLE`, deprecated).
    #[arg(hide = true)]
    old: Vec<String>,
}

impl TableArgs {
    /// The database root and the table, from whichever spelling was used; `usage`
    /// is the new spelling, shown in notes and errors.
    pub(super) fn resolve(&self, usage: &str) -> Result<(PathBuf, String), String> {
        let mut positional = self.old.clone();
        let root = database(self.db.clone(), &mut positional, usage)?;
        let table = table(self.table.clone(), &mut positional, usage)?;
        no_more(&positional, usage)?;
        Ok((root, table))
    }
}

/// The database from `--db`, else from the old positional spelling: the first of
/// `positional`, taken out of it. `usage` is the new spelling, shown in the note
/// and in the error when neither is given.
pub(super) fn database(db: Option<PathBuf>, positional: &mut Vec<String>, usage: &str) -> Result<PathBuf, String> {
    if let Some(db) = db {
        return Ok(db);
    }
    if positional.is_empty() {
        return Err(format!("no database: name it with --db DIR, as in `{usage}`"));
    }
    let db = PathBuf::from(positional.remove(0));
    eprintln!(
        "strata: note: the database as a plain argument is deprecated; write `{}` (every command takes --db)",
        usage.replace("DIR", &db.display().to_string())
    );
    Ok(db)
}

/// The table from `--table`, else the next of `positional` (the old spelling);
/// an error naming `usage` when neither is given.
fn table(table: Option<String>, positional: &mut Vec<String>, usage: &str) -> Result<String, String> {
    match table {
        Some(table) => Ok(table),
        None if !positional.is_empty() => Ok(positional.remove(0)),
        None => Err(format!("no table: name it with --table TABLE, as in `{usage}`")),
    }
}

/// An error for arguments left over once the spelled-out ones are taken.
pub(super) fn no_more(positional: &[String], usage: &str) -> Result<(), String> {
    match positional.first() {
        None => Ok(()),
        Some(extra) => Err(format!("unexpected argument '{extra}'; usage: `{usage}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn db_wins_and_the_old_spelling_is_taken_in_order() {
        let mut rest = words(&["trade"]);
        assert_eq!(database(Some("hdb".into()), &mut rest, "strata x --db DIR").unwrap(), PathBuf::from("hdb"));
        assert_eq!(rest, words(&["trade"]));

        let mut rest = words(&["hdb", "trade", "extra"]);
        assert_eq!(database(None, &mut rest, "u").unwrap(), PathBuf::from("hdb"));
        assert_eq!(table(None, &mut rest, "u").unwrap(), "trade");
        let err = no_more(&rest, "strata export --db DIR --table TABLE").unwrap_err();
        assert!(err.contains("'extra'") && err.contains("--table TABLE"), "{err}");
    }

    #[test]
    fn nothing_given_names_the_spelling() {
        let err = database(None, &mut Vec::new(), "strata ls --db DIR").unwrap_err();
        assert!(err.contains("--db DIR") && err.contains("strata ls --db DIR"), "{err}");
        let err = table(None, &mut Vec::new(), "strata export --db DIR --table TABLE").unwrap_err();
        assert!(err.contains("--table TABLE"), "{err}");
    }
}
