//! The Python driver of DuckDB and Polars (`engines.py`), kept running for the
//! whole benchmark so that its engines hold the day in memory and each query runs
//! on them right after Strata's runs of it (the engines alternate per query).
//!
//! Protocol, tab-separated lines: on start the driver loads the day and prints
//! `load ENGINE MS` per engine, then `ready`; for each query index Rust writes on its
//! standard input, it prints `ENGINE COLD_MS WARM_MS ROWS AGREE` per engine, then
//! `done`.

use std::path::{Path, PathBuf};

use super::workload::{WorkloadParameters, WorkloadQuery};
use super::{BenchResult, Timing, json_string};
use crate::python::PythonDriver;

/// The driver script and the Polars forms of the workload it loads.
const ENGINES_PY: &str = include_str!("engines.py");
const POLARS_PY: &str = include_str!("polars_workload.py");

/// One engine's answer for one query.
pub(crate) struct EngineRun {
    /// `duckdb-mem`, `duckdb-file` or `polars-mem`.
    pub engine: String,
    pub timing: Timing,
    /// `yes`, or `no: ...` saying how the answer differs from Strata's.
    pub agree: String,
}

/// The running driver, killed when dropped.
pub(crate) struct Driver {
    python: PythonDriver,
    /// Each engine's load of the day, ms.
    pub loads: Vec<(String, f64)>,
}

impl Driver {
    /// Writes the scripts into `scratch` and starts `python` on `spec` (JSON); returns
    /// once the day is loaded.
    pub(crate) fn start(python: &Path, scratch: &Path, spec: &str) -> BenchResult<Driver> {
        std::fs::write(scratch.join("polars_workload.py"), POLARS_PY)?;
        let spec_path: PathBuf = scratch.join("spec.json");
        std::fs::write(&spec_path, spec)?;
        let python = PythonDriver::start(
            python,
            scratch,
            "engines.py",
            ENGINES_PY,
            &[spec_path.as_os_str()],
            &[],
            "duckdb and polars",
        )?;
        let mut driver = Driver { python, loads: Vec::new() };
        for line in driver.python.lines_until("ready")? {
            match line.as_slice() {
                [load, engine, ms] if load == "load" => driver.loads.push((engine.clone(), ms.parse()?)),
                other => return Err(driver.python.unexpected(other)),
            }
        }
        Ok(driver)
    }

    /// Runs query `index` of the spec on every engine of the driver.
    pub(crate) fn run(&mut self, index: usize) -> BenchResult<Vec<EngineRun>> {
        self.python.send(&index.to_string())?;
        let mut runs = Vec::new();
        for line in self.python.lines_until("done")? {
            let [engine, cold, warm, rows, agree] = line.as_slice() else {
                return Err(self.python.unexpected(&line));
            };
            let timing = Timing { cold_ms: cold.parse()?, warm_ms: warm.parse()?, rows: rows.parse()? };
            runs.push(EngineRun { engine: engine.clone(), timing, agree: agree.clone() });
        }
        Ok(runs)
    }
}

/// The driver's input (see `engines.py`): the Parquet files, the DuckDB database
/// file to create in `scratch`, where Strata's answers are, the workload's
/// parameters (for the Polars forms) and SQL.
pub(crate) fn spec_json(
    tables: &[(&str, PathBuf)],
    scratch: &Path,
    answers: &Path,
    p: &WorkloadParameters,
    queries: &[WorkloadQuery],
    repeats: usize,
) -> String {
    let s = json_string;
    let path = |p: &Path| s(&p.display().to_string());
    let list = |v: &[String]| format!("[{}]", v.iter().map(|x| s(x)).collect::<Vec<_>>().join(", "));
    let tables: Vec<String> = tables.iter().map(|(n, p)| format!("{}: {}", s(n), path(p))).collect();
    let queries: Vec<String> = queries
        .iter()
        .map(|q| {
            let duckdb = q.duckdb_sql.as_ref().map(|d| format!(", \"duckdb_sql\": {}", s(d))).unwrap_or_default();
            format!("{{\"name\": {}, \"sql\": {}{duckdb}}}", s(q.name), s(&q.sql))
        })
        .collect();
    format!(
        "{{\"tables\": {{{}}}, \"date\": {}, \"db_file\": {}, \"answers\": {}, \"repeats\": {repeats}, \
         \"params\": {{\"one_sym\": {}, \"syms50\": {}, \"syms1000\": {}, \"exchanges\": {}, \"pivot_syms\": {}}}, \
         \"queries\": [{}]}}",
        tables.join(", "),
        s(&p.date),
        path(&scratch.join("day.duckdb")),
        path(answers),
        s(&p.one_sym),
        list(&p.syms50),
        list(&p.syms1000),
        list(&p.exchanges),
        list(&p.pivot_syms),
        queries.join(", ")
    )
}
