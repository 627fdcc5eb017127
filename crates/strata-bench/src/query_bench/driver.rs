//! The Python driver of DuckDB and Polars (`engines.py`), kept running for the
//! whole benchmark so that its engines hold the day in memory and each query runs
//! on them right after Strata's runs of it (the engines alternate per query).
//!
//! Protocol, tab-separated lines: on start the driver loads the day and prints
//! `load ENGINE MS` per engine, then `ready`; for each query index Rust writes on its
//! standard input, it prints `ENGINE COLD_MS WARM_MS ROWS AGREE` per engine, then
//! `done`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::workload::{WorkloadParameters, WorkloadQuery};
use super::{BenchResult, Timing, json_string};

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
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Each engine's load of the day, ms.
    pub loads: Vec<(String, f64)>,
}

impl Driver {
    /// Writes the scripts into `scratch` and starts `python` on `spec` (JSON); returns
    /// once the day is loaded.
    pub(crate) fn start(python: &Path, scratch: &Path, spec: &str) -> BenchResult<Driver> {
        let script = scratch.join("engines.py");
        std::fs::write(&script, ENGINES_PY)?;
        std::fs::write(scratch.join("polars_workload.py"), POLARS_PY)?;
        let spec_path: PathBuf = scratch.join("spec.json");
        std::fs::write(&spec_path, spec)?;
        let mut child = Command::new(python)
            .arg(&script)
            .arg(&spec_path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!("cannot run {} (set STRATA_PYTHON to a Python with duckdb and polars): {e}", python.display())
            })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut driver = Driver { child, stdin, stdout, loads: Vec::new() };
        for line in driver.lines_until("ready")? {
            match line.as_slice() {
                [load, engine, ms] if load == "load" => driver.loads.push((engine.clone(), ms.parse()?)),
                other => return Err(format!("engines.py: unexpected line {other:?}").into()),
            }
        }
        Ok(driver)
    }

    /// Runs query `index` of the spec on every engine of the driver.
    pub(crate) fn run(&mut self, index: usize) -> BenchResult<Vec<EngineRun>> {
        writeln!(self.stdin, "{index}")?;
        self.stdin.flush()?;
        let mut runs = Vec::new();
        for line in self.lines_until("done")? {
            let [engine, cold, warm, rows, agree] = line.as_slice() else {
                return Err(format!("engines.py: unexpected line {line:?}").into());
            };
            let timing = Timing { cold_ms: cold.parse()?, warm_ms: warm.parse()?, rows: rows.parse()? };
            runs.push(EngineRun { engine: engine.clone(), timing, agree: agree.clone() });
        }
        Ok(runs)
    }

    /// Tab-separated lines up to (not including) the line `end`.
    fn lines_until(&mut self, end: &str) -> BenchResult<Vec<Vec<String>>> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                let status = self.child.wait()?;
                return Err(format!("engines.py exited ({status}) before printing {end:?}").into());
            }
            let line = line.trim_end_matches('\n');
            if line == end {
                return Ok(lines);
            }
            lines.push(line.split('\t').map(str::to_string).collect());
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    let queries: Vec<String> =
        queries.iter().map(|q| format!("{{\"name\": {}, \"sql\": {}}}", s(q.name), s(&q.sql))).collect();
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
