//! Moving a table between Strata and the tools around it, against the tools' own
//! stores, alternated in one run:
//!
//! - `strata bench read` ([`Mode::Read`]): a table of plain columns read into
//!   pyarrow, polars and pandas from Strata (the Python package, its buffers handed
//!   over through the Arrow PyCapsule interface), from Parquet (uncompressed, and
//!   pyarrow's default snappy) and from a DuckDB database file, each as its users
//!   read it, with a memory copy of the same bytes as the floor. Target: Strata's
//!   read into Arrow at least 2x faster than pyarrow reading uncompressed Parquet.
//! - `strata bench output` ([`Mode::Output`]): the table written as CSV, JSON and
//!   Parquet by `strata sql --out` and by DuckDB's `COPY ... TO`, with the `strata
//!   sql` process start shown apart.
//!
//! The engines run in a Python driver (`read_engines.py`) that writes the same
//! seeded table into every store and checks each run: a checksum of the values
//! read, or the rows DuckDB reads back from a written file. The report gives each
//! (engine, target)'s best and median time and its ratio to the reference engine.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::progress;
use crate::python::PythonDriver;
use crate::report::{Cell, Column, Report, ScatterChart, Table};
use crate::scale::BenchResult;

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// The driver script.
const READ_ENGINES_PY: &str = include_str!("read_engines.py");

/// The engine every read's ratio is taken against.
const BASELINE: &str = "parquet-none";

/// The engine every write's ratio is taken against.
const OUTPUT_BASELINE: &str = "duckdb-copy";

/// Which benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Reads into pyarrow, polars and pandas.
    Read,
    /// Writes of CSV, JSON and Parquet by this `strata` binary and by DuckDB.
    Output {
        /// The `strata` binary run as `strata sql`.
        strata: PathBuf,
    },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ReadBenchOptions {
    /// Which benchmark.
    pub mode: Mode,
    /// Rows of the table.
    pub rows: usize,
    /// Times each (engine, target) reads the table; the report gives the best and
    /// the median.
    pub rounds: usize,
    /// Seed of the generated values.
    pub seed: u64,
    /// Where the stores are written (replaced).
    pub scratch: PathBuf,
    /// A Python with the `strata` package, pyarrow, polars, pandas and duckdb.
    pub python: PathBuf,
    /// A directory holding the `strata` package as `scripts/test-all` lays it out,
    /// put on the driver's `PYTHONPATH`; `None` when the package is installed.
    pub package_dir: Option<PathBuf>,
}

impl ReadBenchOptions {
    /// Reads of ten million rows, five rounds.
    pub fn new(scratch: PathBuf, python: PathBuf) -> ReadBenchOptions {
        ReadBenchOptions { mode: Mode::Read, rows: 10_000_000, rounds: 5, seed: 1, scratch, python, package_dir: None }
    }
}

/// One store's setup: the time to write it and its size.
struct Setup {
    what: String,
    ms: f64,
    bytes: f64,
}

/// Every read of one (engine, target).
struct Reads {
    engine: String,
    target: String,
    ms: Vec<f64>,
    rows: usize,
    checks: Vec<String>,
}

impl Reads {
    fn best(&self) -> f64 {
        self.ms.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn median(&self) -> f64 {
        let mut sorted = self.ms.clone();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    }
}

/// Runs the benchmark and returns its report.
pub fn run(options: &ReadBenchOptions, show_progress: bool) -> BenchResult<Report> {
    if options.rounds == 0 || options.rows == 0 {
        return Err("strata bench read: --rows and --rounds must be at least 1".into());
    }
    std::fs::create_dir_all(&options.scratch)?;
    let stores = options.scratch.join("stores");
    let (rows, seed) = (options.rows.to_string(), options.seed.to_string());
    let mut args = vec![stores.as_os_str(), OsStr::new(&rows), OsStr::new(&seed)];
    match &options.mode {
        Mode::Read => args.push(OsStr::new("read")),
        Mode::Output { strata } => args.extend([OsStr::new("output"), strata.as_os_str()]),
    }
    let python_path = options.package_dir.as_ref().map(|dir| {
        let mut paths = vec![dir.clone()];
        paths.extend(std::env::var_os("PYTHONPATH").iter().flat_map(std::env::split_paths));
        std::env::join_paths(paths).expect("paths without separators")
    });
    let env: Vec<(&str, &OsStr)> = python_path.iter().map(|p| ("PYTHONPATH", p.as_os_str())).collect();
    let setup_bar = progress::spinner(show_progress);
    setup_bar.set_message(format!("writing {} rows into Strata, Parquet and DuckDB", options.rows));
    let mut driver = PythonDriver::start(
        &options.python,
        &options.scratch,
        "read_engines.py",
        READ_ENGINES_PY,
        &args,
        &env,
        "the strata package, pyarrow, polars, pandas and duckdb",
    )?;
    let mut setups = Vec::new();
    for line in driver.lines_until("ready")? {
        match line.as_slice() {
            [tag, what, ms, bytes] if tag == "setup" => {
                setups.push(Setup { what: what.clone(), ms: ms.parse()?, bytes: bytes.parse()? })
            }
            other => return Err(driver.unexpected(other)),
        }
    }
    setup_bar.finish_and_clear();
    let bar = progress::bar(show_progress, options.rounds as u64);
    bar.set_message("reading");
    let mut reads: Vec<Reads> = Vec::new();
    for _ in 0..options.rounds {
        driver.send("round")?;
        for line in driver.lines_until("done")? {
            let [tag, engine, target, ms, rows, check] = line.as_slice() else { return Err(driver.unexpected(&line)) };
            if tag != "read" {
                return Err(driver.unexpected(&line));
            }
            let ms: f64 = ms.parse()?;
            match reads.iter_mut().find(|r| &r.engine == engine && &r.target == target) {
                Some(r) => {
                    r.ms.push(ms);
                    r.checks.push(check.clone());
                }
                None => reads.push(Reads {
                    engine: engine.clone(),
                    target: target.clone(),
                    ms: vec![ms],
                    rows: rows.parse()?,
                    checks: vec![check.clone()],
                }),
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    reads.sort_by(|a, b| (&a.target, &a.engine).cmp(&(&b.target, &b.engine)));
    Ok(match options.mode {
        Mode::Read => report(options, &setups, &reads),
        Mode::Output { .. } => output_report(options, &setups, &reads),
    })
}

/// The report: targets, reads, stores.
fn report(options: &ReadBenchOptions, setups: &[Setup], reads: &[Reads]) -> Report {
    let mut report = Report::new(format!("Reading a {}-row, 8-column table into Python", options.rows));
    report.push_note(
        "Each library as its users read: strata.open(db).table(...) kept open (the result's Arrow buffers are \
         handed over through the PyCapsule interface), pq.read_table / pl.read_parquet / pd.read_parquet per read, \
         and a DuckDB connection kept open (its buffer pool holds the table after the first read). The engines \
         alternate in every round; files are in the page cache after the first. memory-copy is numpy copying as \
         many bytes as the table holds in Arrow.",
    );
    let reference = checks_reference(reads);
    report.push_table(targets(reads));
    let mut table = Table::new(
        "reads (ms)",
        vec![
            Column::text("target"),
            Column::text("engine"),
            Column::text("read"),
            Column::number("best ms", 2).lower_is_better(),
            Column::number("median ms", 2).lower_is_better(),
            Column::number("ratio to parquet-none (best)", 2).lower_is_better(),
            Column::number("rows", 0),
            Column::text("same values"),
        ],
    );
    for r in reads {
        let baseline = reads.iter().find(|b| b.engine == BASELINE && b.target == r.target);
        let ratio = baseline.map_or(Cell::Empty, |b| Cell::from(r.best() / b.best()));
        let same = if r.engine == "memory-copy" {
            "-".to_string()
        } else if r.checks.iter().all(|c| Some(c) == reference.as_ref()) {
            "yes".to_string()
        } else {
            format!("no: {}", r.checks[0])
        };
        table.push_row(vec![
            r.target.as_str().into(),
            r.engine.as_str().into(),
            format!("{} into {}", r.engine, r.target).into(),
            r.best().into(),
            r.median().into(),
            ratio,
            (r.rows as f64).into(),
            same.into(),
        ]);
    }
    let chart = ScatterChart::from_table(
        "best ms against the ratio to parquet-none",
        &table,
        "ratio to parquet-none (best)",
        "best ms",
        "read",
    );
    report.push_table(table);
    if let Ok(chart) = chart {
        report.push_chart(chart.with_log_x().with_log_y());
    }
    report.push_table(stores_table(setups));
    report
}

/// The stores the driver wrote before the runs.
fn stores_table(setups: &[Setup]) -> Table {
    let mut stores = Table::new(
        "stores (written once, before the runs)",
        vec![Column::text("store"), Column::number("write ms", 1), Column::number("MiB", 1)],
    );
    for s in setups {
        stores.push_row(vec![s.what.as_str().into(), s.ms.into(), (s.bytes / MIB).into()]);
    }
    stores
}

/// `strata bench output`'s report: per format, each engine's write, its ratio to
/// DuckDB's COPY, the rows read back and the file's size.
fn output_report(options: &ReadBenchOptions, setups: &[Setup], runs: &[Reads]) -> Report {
    let mut report = Report::new(format!("Writing a {}-row, 8-column result as CSV, JSON and Parquet", options.rows));
    report.push_note(
        "strata-sql is a `strata sql --db DB QUERY --format F --out FILE` process (its start and the database open \
         included; strata-sql-start is the same process for SELECT 1). duckdb-copy is COPY (query) TO FILE in a \
         DuckDB connection kept open on its database file. Rows are as DuckDB reads each file back. Both write \
         JSON as one object per line.",
    );
    let mut table = Table::new(
        "writes (ms)",
        vec![
            Column::text("format"),
            Column::text("engine"),
            Column::number("best ms", 2).lower_is_better(),
            Column::number("median ms", 2).lower_is_better(),
            Column::number("ratio to duckdb-copy (best)", 2).lower_is_better(),
            Column::text("rows read back"),
            Column::number("MiB", 1),
        ],
    );
    for r in runs {
        let baseline = runs.iter().find(|b| b.engine == OUTPUT_BASELINE && b.target == r.target);
        let ratio = baseline.map_or(Cell::Empty, |b| Cell::from(r.best() / b.best()));
        let expected = options.rows.to_string();
        let (rows, bytes) = r.checks[0].split_once(':').unwrap_or((r.checks[0].as_str(), ""));
        let every_run_read_back_all = r.checks.iter().all(|c| c.split(':').next() == Some(&expected));
        let rows = if rows == "-" || every_run_read_back_all {
            rows.to_string()
        } else {
            format!("{rows} (expected {expected})")
        };
        table.push_row(vec![
            r.target.as_str().into(),
            r.engine.as_str().into(),
            r.best().into(),
            r.median().into(),
            ratio,
            rows.into(),
            bytes.parse::<f64>().map_or(Cell::Empty, |b| Cell::from(b / MIB)),
        ]);
    }
    report.push_table(table);
    report.push_table(stores_table(setups));
    report
}

/// The checksum most reads agree on (every engine reads the same table).
fn checks_reference(reads: &[Reads]) -> Option<String> {
    let checks: Vec<&String> = reads.iter().filter(|r| r.engine != "memory-copy").flat_map(|r| &r.checks).collect();
    let most = checks.iter().max_by_key(|c| checks.iter().filter(|o| o == c).count())?;
    Some((*most).clone())
}

/// The target, and Strata's speed-up into each target.
fn targets(reads: &[Reads]) -> Table {
    let mut table = Table::new(
        "targets",
        vec![
            Column::text("target"),
            Column::number("strata best ms", 2),
            Column::number("parquet-none best ms", 2),
            Column::number("speed-up", 2).higher_is_better(),
            Column::text("met"),
        ],
    );
    let best =
        |engine: &str, target: &str| reads.iter().find(|r| r.engine == engine && r.target == target).map(Reads::best);
    for target in ["arrow", "polars", "pandas"] {
        let (Some(strata), Some(parquet)) = (best("strata", target), best(BASELINE, target)) else { continue };
        let goal =
            if target == "arrow" { "at least 2x faster than pyarrow (uncompressed Parquet)" } else { "(no target)" };
        let met = match target {
            "arrow" if parquet >= 2.0 * strata => "yes",
            "arrow" => "no",
            _ => "-",
        };
        table.push_row(vec![
            format!("into {target}: {goal}").into(),
            strata.into(),
            parquet.into(),
            (parquet / strata).into(),
            met.into(),
        ]);
    }
    table
}
