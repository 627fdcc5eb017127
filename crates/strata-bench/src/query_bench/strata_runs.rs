//! Strata's three ways of answering a workload query, each timed cold and warm:
//! the library in process, an HDB over kdb+ IPC, and a `strata sql` process.
//!
//! The library's answer is written to Parquet, for the Python driver to check the
//! other engines' answers against row for row; the HDB's and the process's row
//! counts are checked against the library's (they run the same engine).

use std::path::{Path, PathBuf};
use std::time::Instant;

use strata_ipc::K;
use strata_query::Engine;
use strata_query::datafusion::arrow::array::RecordBatch;

use super::{BenchResult, Timing};
use crate::process::{Hdb, run_sql};

/// Where Strata runs and how its files are made cold.
pub(crate) struct StrataSide<'a> {
    /// The database.
    pub root: &'a Path,
    /// The `strata` binary (for `strata sql` and `strata hdb`).
    pub strata: &'a Path,
    /// Warm runs per query; the fastest counts.
    pub repeats: usize,
    /// Empties the page cache of the database's files.
    pub evict: &'a dyn Fn() -> BenchResult<()>,
}

/// Strata's figures for one query.
pub(crate) struct StrataTimes {
    /// The library: a fresh `Engine` cold, then the same engine warm.
    pub library: Timing,
    /// The HDB: its first run after the files were made cold, then warm.
    pub hdb: Timing,
    /// `strata sql` processes, wall time from spawn to exit.
    pub process: Timing,
    /// The same processes' own query time (`--timing`): process minus this is the
    /// process start and database open.
    pub process_query: Timing,
    /// Whether the HDB and the process returned the library's row count.
    pub agree: String,
}

/// Runs `sql` in the three ways and writes the library's answer to `answer`.
pub(crate) fn run_query(side: &StrataSide, hdb: &mut Hdb, sql: &str, answer: &Path) -> BenchResult<StrataTimes> {
    (side.evict)()?;
    let engine = Engine::open(side.root)?;
    let once = || -> BenchResult<(f64, usize, Vec<RecordBatch>)> {
        let started = Instant::now();
        let (schema, batches) = engine.sql_with_schema(sql)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        // An empty answer still needs its schema in the file.
        let batches = if batches.is_empty() { vec![RecordBatch::new_empty(schema)] } else { batches };
        Ok((ms, batches.iter().map(RecordBatch::num_rows).sum(), batches))
    };
    let (cold_ms, rows, batches) = once()?;
    let warm_ms = best(side.repeats, || Ok(once()?.0))?;
    strata_query::output::write_parquet(&batches, &batches[0].schema(), answer)?;
    let library = Timing { cold_ms, warm_ms, rows };

    (side.evict)()?;
    let (cold_ms, first) = hdb.answer(sql)?;
    let warm_ms = best(side.repeats, || Ok(hdb.answer(sql)?.0))?;
    let hdb_rows = match first {
        K::Table(t) => t.len(),
        other => return Err(format!("hdb: {sql}: answered {other:?}, not a table").into()),
    };
    let hdb = Timing { cold_ms, warm_ms, rows: hdb_rows };

    (side.evict)()?;
    let cold = run_sql(side.strata, side.root, sql)?;
    let mut warm = run_sql(side.strata, side.root, sql)?;
    for _ in 1..side.repeats.max(1) {
        let next = run_sql(side.strata, side.root, sql)?;
        if next.wall_ms < warm.wall_ms {
            warm = next;
        }
    }
    let process = Timing { cold_ms: cold.wall_ms, warm_ms: warm.wall_ms, rows };
    let process_query = Timing { cold_ms: cold.query_ms, warm_ms: warm.query_ms, rows };
    let agree = if hdb_rows == rows {
        "yes".to_string()
    } else {
        format!("no: the HDB returned {hdb_rows} rows, the library {rows}")
    };
    Ok(StrataTimes { library, hdb, process, process_query, agree })
}

/// The least of `repeats` (at least one) runs of `run`.
fn best(repeats: usize, mut run: impl FnMut() -> BenchResult<f64>) -> BenchResult<f64> {
    let mut least = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        least = least.min(run()?);
    }
    Ok(least)
}

/// The file the library's answer to query `index` goes to.
pub(crate) fn answer_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("{index:03}.parquet"))
}
