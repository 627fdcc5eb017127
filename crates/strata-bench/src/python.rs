//! A Python driver script kept running beside a benchmark: the benchmarks that
//! compare Strata with Python engines (DuckDB, Polars, pyarrow) run those engines
//! as their users do, in Python, and read their figures as tab-separated lines.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::scale::BenchResult;

/// A running `python SCRIPT ARGS...`, killed when dropped.
pub(crate) struct PythonDriver {
    /// The script's file name, for errors.
    name: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl PythonDriver {
    /// Writes `source` as `scratch/name` and starts `python` on it with `args` and
    /// the extra environment `env`; `needs` says what the interpreter must have,
    /// for the error when it cannot start.
    pub(crate) fn start(
        python: &Path,
        scratch: &Path,
        name: &str,
        source: &str,
        args: &[&OsStr],
        env: &[(&str, &OsStr)],
        needs: &str,
    ) -> BenchResult<PythonDriver> {
        let script = scratch.join(name);
        std::fs::write(&script, source)?;
        let mut command = Command::new(python);
        command.arg(&script).args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().map_err(|e| {
            format!("cannot run {} (set STRATA_PYTHON to a Python with {needs}): {e}", python.display())
        })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(PythonDriver { name: name.to_string(), child, stdin, stdout })
    }

    /// Writes one line to the script's standard input.
    pub(crate) fn send(&mut self, line: &str) -> BenchResult<()> {
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The next line, split at tabs; `None` at the line `end`.
    pub(crate) fn next_line(&mut self, end: &str) -> BenchResult<Option<Vec<String>>> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.wait()?;
            return Err(format!("{} exited ({status}) before printing {end:?}", self.name).into());
        }
        let line = line.trim_end_matches('\n');
        if line == end {
            return Ok(None);
        }
        Ok(Some(line.split('\t').map(str::to_string).collect()))
    }

    /// Tab-separated lines up to (not including) the line `end`.
    pub(crate) fn lines_until(&mut self, end: &str) -> BenchResult<Vec<Vec<String>>> {
        let mut lines = Vec::new();
        while let Some(line) = self.next_line(end)? {
            lines.push(line);
        }
        Ok(lines)
    }

    /// An error for an unexpected `line` of the script.
    pub(crate) fn unexpected(&self, line: &[String]) -> Box<dyn std::error::Error + Send + Sync> {
        format!("{}: unexpected line {line:?}", self.name).into()
    }
}

impl Drop for PythonDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
