//! Strata as the processes its users run, for the benchmarks that time them: one
//! `strata sql` run, and an HDB answering SQL over kdb+ IPC.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strata_ipc::{Connection, K};

use crate::scale::{BenchResult, ms};

/// How long an HDB may take to answer its first connection.
const HDB_START_LIMIT: Duration = Duration::from_secs(120);

/// One `strata sql` process.
pub(crate) struct SqlRun {
    /// From spawn to exit.
    pub wall_ms: f64,
    /// The process's peak resident memory.
    pub peak_mib: f64,
    /// The query's own time as the process reports it (`--timing`), without its
    /// start and the database open.
    pub query_ms: f64,
}

/// Runs `strata sql --db ROOT SQL --timing` (results discarded) and reports its time and
/// the peak memory it reports of itself (its own `VmHWM`: a child's `rusage` would
/// also count the pages of the parent it was spawned from); a failure is an error
/// with its standard error.
pub(crate) fn run_sql(strata: &Path, root: &Path, sql: &str) -> BenchResult<SqlRun> {
    let started = Instant::now();
    let out = Command::new(strata)
        .arg("sql")
        .arg("--db")
        .arg(root)
        .arg(sql)
        .arg("--timing")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{}: {e}", strata.display()))?;
    let wall_ms = ms(started.elapsed());
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(
            format!("strata sql --db {} {sql:?} failed ({}): {}", root.display(), out.status, err.trim()).into()
        );
    }
    let peak_mib = err
        .rsplit_once("peak memory ")
        .and_then(|(_, rest)| rest.trim().strip_suffix("MiB")?.trim().parse().ok())
        .ok_or_else(|| format!("strata sql --timing printed no peak memory: {}", err.trim()))?;
    let query_ms = err
        .rsplit_once("query ")
        .and_then(|(_, rest)| rest.split_once(" ms")?.0.trim().parse().ok())
        .ok_or_else(|| format!("strata sql --timing printed no query time: {}", err.trim()))?;
    Ok(SqlRun { wall_ms, peak_mib, query_ms })
}

/// A running `strata hdb` on loopback, killed when dropped.
pub(crate) struct Hdb {
    child: Child,
    connection: Connection,
    /// From spawn to its first answer.
    pub ready_ms: f64,
}

impl Hdb {
    /// Starts an HDB on `root` and waits until it answers.
    pub(crate) fn start(strata: &Path, root: &Path) -> BenchResult<Hdb> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        let started = Instant::now();
        let mut child = Command::new(strata)
            .arg("hdb")
            .arg("--db")
            .arg(root)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", strata.display()))?;
        loop {
            if let Ok(mut connection) = Connection::connect_timeout(&addr, "", Duration::from_secs(1))
                && matches!(connection.sync(&K::string("tables[]")), Ok(answer) if !matches!(answer, K::Error(_)))
            {
                return Ok(Hdb { child, connection, ready_ms: ms(started.elapsed()) });
            }
            if let Some(status) = child.try_wait()? {
                return Err(format!("strata hdb --db {} exited before answering ({status})", root.display()).into());
            }
            if started.elapsed() > HDB_START_LIMIT {
                let _ = child.kill();
                return Err(
                    format!("strata hdb --db {} did not answer within {HDB_START_LIMIT:?}", root.display()).into()
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Runs `sql` and returns its time in ms (request to answer).
    pub(crate) fn query(&mut self, sql: &str) -> BenchResult<f64> {
        Ok(self.answer(sql)?.0)
    }

    /// Runs `sql` and returns its time in ms (request to decoded answer) and the
    /// answer, which is not an error.
    pub(crate) fn answer(&mut self, sql: &str) -> BenchResult<(f64, K)> {
        let started = Instant::now();
        match self.connection.sync(&K::string(sql))? {
            K::Error(e) => Err(format!("hdb: {sql}: {e}").into()),
            answer => Ok((ms(started.elapsed()), answer)),
        }
    }

    /// The HDB's peak resident memory so far (Linux `VmHWM`).
    pub(crate) fn peak_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    }
}

impl Drop for Hdb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
