//! `strata sql --db DIR [QUERY]`: one query printed as a table, CSV, JSON or Parquet, or
//! an interactive shell when no query is given.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use strata_query::datafusion::arrow::array::RecordBatch;
use strata_query::datafusion::arrow::datatypes::SchemaRef;
use strata_query::output::{DEFAULT_TABLE_ROWS, Format, write, write_parquet, write_table};
use strata_query::{Engine, EngineOptions};

use super::{CliResult, database_arg};

/// Arguments of `strata sql`.
#[derive(Args)]
pub struct SqlArgs {
    /// The database root.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// The query; without one, an interactive shell starts.
    query: Option<String>,
    /// The query when the database came first (`strata sql DIR QUERY`, deprecated).
    #[arg(hide = true)]
    old_query: Option<String>,
    /// Output: table, csv, json or parquet (parquet needs --out). Default: from
    /// --out's extension (.csv, .json, .parquet), else a table.
    #[arg(long)]
    format: Option<Format>,
    /// Write the result to this file instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Rows a table shows: the first and last halves of a longer result, then its
    /// row count, as DuckDB's shell does. 0 shows every row. CSV, JSON and Parquet
    /// always hold every row.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TABLE_ROWS)]
    max_rows: usize,
    /// Fail queries whose sorts, aggregations, joins and answer need more memory (e.g. 2G).
    #[arg(long)]
    memory_limit: Option<String>,
    /// Also run statements that write or reach files: CREATE [EXTERNAL] TABLE,
    /// CREATE VIEW, DROP, INSERT, COPY ... TO, SET. Off by default: queries only.
    #[arg(long)]
    allow_write: bool,
    /// After a query, print on standard error the time to open the database, the
    /// query's time, its rows and the process's peak memory (the shell always does).
    #[arg(long)]
    timing: bool,
}

/// Runs `strata sql`.
pub fn run(args: SqlArgs) -> CliResult {
    const USAGE: &str = "strata sql --db DIR [QUERY]";
    let mut positional: Vec<String> = args.query.iter().chain(&args.old_query).cloned().collect();
    let db = database_arg::database(args.db.clone(), &mut positional, USAGE)?;
    let query = positional.pop();
    database_arg::no_more(&positional, USAGE)?;
    let mut options = EngineOptions { allow_write: args.allow_write, ..EngineOptions::default() };
    if let Some(limit) = &args.memory_limit {
        options.memory_limit = Some(parse_bytes(limit)?);
    }
    let started = Instant::now();
    let engine = Engine::open_with(&db, &options)?;
    let opened = started.elapsed();
    match &query {
        Some(query) => {
            let started = Instant::now();
            let (schema, batches) = engine.sql_with_schema(query).map_err(|e| with_caret(query, &e.to_string()))?;
            let ran = started.elapsed();
            let printing = Printing { format: output_format(&args), max_rows: args.max_rows };
            emit(&schema, &batches, printing, args.out.as_ref())?;
            if args.timing {
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let peak = peak_memory().map_or("?".to_string(), |b| format!("{:.1} MiB", b as f64 / MIB));
                eprintln!(
                    "{rows} rows; open {:.3} ms, query {:.3} ms; peak memory {peak}",
                    opened.as_secs_f64() * 1e3,
                    ran.as_secs_f64() * 1e3
                );
            }
            Ok(())
        }
        None => {
            let format = if args.format == Some(Format::Parquet) { Format::Table } else { output_format(&args) };
            super::sql_shell::run(&engine, &db, Printing { format, max_rows: args.max_rows })
        }
    }
}

/// The format asked for, else the one --out's extension names, else a table.
fn output_format(args: &SqlArgs) -> Format {
    args.format.or_else(|| args.out.as_deref().and_then(Format::from_path)).unwrap_or(Format::Table)
}

/// How results are printed: the format, and the rows a table shows.
#[derive(Clone, Copy)]
pub(super) struct Printing {
    /// The output format.
    pub format: Format,
    /// Rows a table shows (0: all).
    pub max_rows: usize,
}

impl Printing {
    /// Writes `batches` to `out`; an empty result still shows its columns (a
    /// table's header, CSV's header line), as DuckDB's shell does.
    fn write(self, schema: &SchemaRef, batches: &[RecordBatch], out: &mut dyn std::io::Write) -> CliResult {
        let empty;
        let batches = if batches.is_empty() {
            empty = [RecordBatch::new_empty(schema.clone())];
            &empty[..]
        } else {
            batches
        };
        match self.format {
            Format::Table => Ok(write_table(batches, self.max_rows, out)?),
            format => Ok(write(batches, format, out)?),
        }
    }
}

/// Prints or saves one result. A file that could not be written whole (a full
/// disk) is removed, so a partial result never passes for the answer.
fn emit(schema: &SchemaRef, batches: &[RecordBatch], printing: Printing, out: Option<&PathBuf>) -> CliResult {
    let Some(path) = out else { return printing.write(schema, batches, &mut std::io::stdout().lock()) };
    let written = match printing.format {
        // Its errors name the file already.
        Format::Parquet => write_parquet(batches, schema, path).map_err(Into::into),
        _ => write_file(schema, batches, printing, path).map_err(|e| format!("{}: {e}", path.display()).into()),
    };
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// An error message with the query line and a caret under the column it names.
/// The parser's message comes without its Rust wrapping (`ParserError("...")`).
fn with_caret(query: &str, message: &str) -> Box<dyn std::error::Error> {
    let unwrapped = unwrap_parser_error(message);
    let message = unwrapped.as_str();
    let position = message.find("Line: ").and_then(|at| {
        let rest = &message[at + 6..];
        let line: usize = rest.split(',').next()?.trim().parse().ok()?;
        let column: usize =
            rest.split("Column: ").nth(1)?.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()?;
        Some((line, column))
    });
    match position.and_then(|(line, column)| Some((query.lines().nth(line.checked_sub(1)?)?, column))) {
        Some((text, column)) => format!("{message}\n  {text}\n  {}^", " ".repeat(column.saturating_sub(1))).into(),
        None => message.into(),
    }
}

/// `SQL error: ParserError("Expected ...")` as `SQL error: Expected ...`: the
/// parser's message without the Rust type around it.
fn unwrap_parser_error(message: &str) -> String {
    for wrapper in ["ParserError(\"", "TokenizerError(\""] {
        if let Some(at) = message.find(wrapper)
            && let Some(end) = message.rfind("\")")
            && end > at
        {
            let inner = message[at + wrapper.len()..end].replace("\\\"", "\"");
            return format!("{}{inner}{}", &message[..at], &message[end + 2..]);
        }
    }
    message.to_string()
}

/// Writes a text result (table, CSV, JSON) to the file `path`.
fn write_file(schema: &SchemaRef, batches: &[RecordBatch], printing: Printing, path: &std::path::Path) -> CliResult {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    printing.write(schema, batches, &mut file)?;
    Ok(std::io::Write::flush(&mut file)?)
}

/// Runs one shell statement: its result on standard output, then its rows, time
/// and peak memory (or its error) on standard error.
pub(super) fn run_in_shell(engine: &Engine, query: &str, printing: Printing) -> CliResult {
    reset_peak_memory();
    let started = Instant::now();
    match engine.sql_with_schema(query) {
        Ok((schema, batches)) => {
            let elapsed = started.elapsed();
            printing.write(&schema, &batches, &mut std::io::stdout().lock())?;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            let peak = peak_memory().map_or("?".to_string(), crate::output::human_bytes);
            eprintln!("{rows} rows in {:.3} ms, peak memory {peak}", elapsed.as_secs_f64() * 1e3);
        }
        Err(e) => eprintln!("error: {}", with_caret(query, &e.to_string())),
    }
    Ok(())
}

/// Resets the process's peak resident memory (Linux: `clear_refs` 5), so the next
/// reading is this query's peak.
fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// The peak resident memory since the last reset, in bytes (Linux `VmHWM`).
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `2G`, `512M`, `64K` or plain bytes.
fn parse_bytes(text: &str) -> Result<usize, String> {
    let (digits, scale) = match text.chars().last() {
        Some('K' | 'k') => (&text[..text.len() - 1], 1usize << 10),
        Some('M' | 'm') => (&text[..text.len() - 1], 1 << 20),
        Some('G' | 'g') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<usize>()
        .map(|n| n * scale)
        .map_err(|_| format!("--memory-limit {text}: expected bytes such as 512M or 2G"))
}
