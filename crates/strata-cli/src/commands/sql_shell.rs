//! `strata sql --db DB` without a query: the interactive shell. On a terminal it edits
//! lines (rustyline: arrows, Ctrl-R search, history in `~/.strata_sql_history`),
//! takes statements over several lines until `;`, and completes table names,
//! column names and SQL keywords with Tab. Statements piped in are read the same
//! way without prompts. `\q` quits, `\t` lists tables, `\h` the history, `!N`
//! reruns entry N, `\f FORMAT` switches the output format, `\maxrows N` the rows a
//! table shows (0: all). Each result is followed
//! by its rows, time and peak memory on standard error; an error by its message,
//! the line it points at and a caret under the position.

use std::io::{BufRead, IsTerminal, StdinLock};
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper};
use strata_query::Engine;
use strata_query::output::Format;

use super::sql::Printing;

use super::CliResult;

/// The words Tab completes besides names: the SQL a session mostly types.
const KEYWORDS: [&str; 36] = [
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "ORDER", "HAVING", "LIMIT", "AND", "OR", "NOT", "IN", "BETWEEN", "AS",
    "ON", "JOIN", "ASOF", "WINDOW", "LEFT", "USING", "WITH", "DISTINCT", "COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST",
    "LAST", "XBAR", "WAVG", "CASE", "WHEN", "THEN", "ELSE", "END",
];

/// What the shell offers to complete, and when a statement is whole.
struct SqlHelper {
    /// Table and column names, sorted, without repeats.
    names: Vec<String>,
}

impl SqlHelper {
    /// The tables of `engine` and the columns of each.
    fn new(engine: &Engine) -> SqlHelper {
        let mut names = engine.table_names();
        for table in engine.table_names() {
            let sql = format!("SELECT * FROM \"{}\"", table.replace('"', "\"\""));
            if let Ok(schema) = engine.schema_of(&sql) {
                names.extend(schema.fields().iter().map(|f| f.name().clone()));
            }
        }
        names.sort();
        names.dedup();
        SqlHelper { names }
    }
}

impl Completer for SqlHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = line[..pos].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let prefix = &line[start..pos];
        if prefix.is_empty() {
            return Ok((start, Vec::new()));
        }
        let names = self.names.iter().filter(|n| n.starts_with(prefix)).cloned();
        let keywords = KEYWORDS
            .iter()
            .filter(|k| k.len() >= prefix.len() && k[..prefix.len()].eq_ignore_ascii_case(prefix))
            .map(|k| if prefix.chars().all(|c| c.is_lowercase()) { k.to_lowercase() } else { k.to_string() });
        let candidates = names.chain(keywords).map(|word| Pair { display: word.clone(), replacement: word }).collect();
        Ok((start, candidates))
    }
}

impl Validator for SqlHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if is_whole(ctx.input()) { ValidationResult::Valid(None) } else { ValidationResult::Incomplete })
    }
}

impl Hinter for SqlHelper {
    type Hint = String;
}

impl Highlighter for SqlHelper {}

impl Helper for SqlHelper {}

/// Whether `input` is ready to run: a statement ending in `;`, a shell command
/// (`\...`, `!N`, `quit`, `exit`), or nothing.
fn is_whole(input: &str) -> bool {
    let trimmed = input.trim();
    trimmed.is_empty()
        || trimmed.ends_with(';')
        || trimmed.starts_with('\\')
        || trimmed.starts_with('!')
        || matches!(trimmed, "quit" | "exit")
}

/// Where input comes from: a line editor on a terminal, plain lines otherwise
/// (with the same history, so `\h` and `!N` work in scripts too).
enum Input<'a> {
    Terminal(Box<Editor<SqlHelper, DefaultHistory>>),
    Piped(StdinLock<'a>, DefaultHistory),
}

impl Input<'_> {
    /// The next whole input (see [`is_whole`]), or `None` at the end of input.
    fn next(&mut self) -> Result<Option<String>, Box<dyn std::error::Error>> {
        match self {
            Input::Terminal(editor) => loop {
                match editor.readline("strata> ") {
                    Ok(text) => return Ok(Some(text)),
                    // Ctrl-C drops what was typed, as in psql and duckdb.
                    Err(ReadlineError::Interrupted) => continue,
                    Err(ReadlineError::Eof) => return Ok(None),
                    Err(e) => return Err(e.into()),
                }
            },
            Input::Piped(stdin, _) => {
                let mut text = String::new();
                loop {
                    let mut line = String::new();
                    if stdin.read_line(&mut line)? == 0 {
                        return Ok((!text.trim().is_empty()).then_some(text));
                    }
                    text.push_str(&line);
                    if is_whole(&text) {
                        return Ok(Some(text));
                    }
                }
            }
        }
    }

    /// The history, oldest first.
    fn history(&self) -> Vec<String> {
        let history = match self {
            Input::Terminal(editor) => editor.history(),
            Input::Piped(_, history) => history,
        };
        history.iter().cloned().collect()
    }

    /// Adds `entry` to the history and appends it to the history `file`; a file
    /// that cannot be written is reported and then left alone (`file` becomes
    /// `None`): the session goes on without it.
    fn remember(&mut self, entry: &str, file: &mut Option<PathBuf>) -> CliResult {
        let history = match self {
            Input::Terminal(editor) => editor.history_mut(),
            Input::Piped(_, history) => history,
        };
        history.add(entry)?;
        if let Some(path) = file.as_deref()
            && let Err(e) = history.append(path)
        {
            eprintln!("warning: cannot save the history to {}: {e}; this session's is kept in memory", path.display());
            *file = None;
        }
        Ok(())
    }
}

/// Runs the shell on `engine` (the database at `db`), printing results as `printing`
/// says.
pub(super) fn run(engine: &Engine, db: &Path, mut printing: Printing) -> CliResult {
    let mut history_file = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".strata_sql_history"));
    let stdin = std::io::stdin();
    let mut input = if stdin.is_terminal() {
        let mut editor: Editor<SqlHelper, DefaultHistory> = Editor::new()?;
        editor.set_helper(Some(SqlHelper::new(engine)));
        if let Some(file) = &history_file {
            // A missing file is a first session.
            let _ = editor.load_history(file);
        }
        eprintln!(
            "strata sql on {} ({} tables); end statements with ';', Tab completes, \\q quits, \\t tables, \\h history, \
             !N reruns, \\f table|csv|json switches the output, \\maxrows N the rows a table shows",
            db.display(),
            engine.table_names().len()
        );
        Input::Terminal(Box::new(editor))
    } else {
        let mut history = DefaultHistory::new();
        if let Some(file) = &history_file {
            let _ = history.load(file);
        }
        Input::Piped(stdin.lock(), history)
    };
    while let Some(text) = input.next()? {
        let trimmed = text.trim();
        let query = match trimmed {
            "" => continue,
            "\\q" | "quit" | "exit" => break,
            "\\t" => {
                println!("{}", engine.table_names().join("\n"));
                continue;
            }
            "\\h" => {
                for (i, entry) in input.history().iter().enumerate() {
                    println!("{:>4}  {}", i + 1, entry.replace('\n', "\n      "));
                }
                continue;
            }
            m if m.starts_with("\\maxrows") => {
                match m["\\maxrows".len()..].trim().parse::<usize>() {
                    Ok(rows) => printing.max_rows = rows,
                    Err(_) => eprintln!("error: \\maxrows takes a number of rows (0: all)"),
                }
                continue;
            }
            f if f.starts_with("\\f") => {
                match f[2..].trim().parse::<Format>() {
                    Ok(Format::Parquet) | Err(_) => eprintln!("error: \\f takes table, csv or json"),
                    Ok(new) => printing.format = new,
                }
                continue;
            }
            rerun if rerun.starts_with('!') => {
                let history = input.history();
                let entry = rerun[1..].trim().parse::<usize>().ok().and_then(|n| history.get(n.checked_sub(1)?));
                match entry {
                    Some(entry) => entry.trim_end().trim_end_matches(';').to_string(),
                    None => {
                        eprintln!("error: no history entry {}; \\h lists them", &rerun[1..]);
                        continue;
                    }
                }
            }
            other if other.starts_with('\\') => {
                eprintln!(
                    "error: unknown command {other}; \\q quits, \\t tables, \\h history, \\f format, \\maxrows rows"
                );
                continue;
            }
            statement => statement.trim_end_matches(';').trim_end().to_string(),
        };
        input.remember(&format!("{query};"), &mut history_file)?;
        super::sql::run_in_shell(engine, &query, printing)?;
    }
    Ok(())
}
