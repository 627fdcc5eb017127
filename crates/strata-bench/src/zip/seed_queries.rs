//! Seed 000's query set timed on a database written with each spec: the query-time
//! ratios of seed 000's tables, through Strata's SQL engine.
//!
//! Each spec gets its own database holding the whole day (`quote`, `trade` and the
//! normalised `quoteNorm` and `tradeNorm` the queries read), written as `strata gen
//! taq --table-spec` would write it. The fourteen queries of `strata bench query`
//! run on it, each once cold (the database's files evicted, a fresh engine) and then
//! warm (best of the repeats). The query parameters (symbols, thresholds) are picked
//! once, from the uncompressed copy, so every spec answers the same questions.

use std::path::Path;

use indicatif::ProgressBar;
use strata_codec::CompressionSpec;
use strata_query::Engine;
use strata_store::{Database, Date, StoreError, TableSpec, TableWrite, WriteMode};
use strata_taq::TaqDay;

use super::QueryResult;
use super::cache::ColdCache;
use crate::io::flush::flush;
use crate::query_bench::{BenchResult, Query, pick_parameters, run_strata, seed_queries, single_date};

/// The table name seed-query results are reported under (they span every table).
pub const SEED_QUERIES_TABLE: &str = "taq";

/// The day the seed queries run on, and its date.
#[derive(Clone, Debug)]
pub struct SeedQueryDay {
    /// Quotes and trades (trades are needed: half the queries read them).
    pub day: TaqDay,
    /// The partition date.
    pub date: Date,
}

/// Writes `seed.day` with each of `specs` (the first must be the uncompressed
/// baseline) under `scratch`, times the query set on it, and removes it again.
pub fn measure(
    seed: &SeedQueryDay,
    specs: &[CompressionSpec],
    scratch: &Path,
    cold: ColdCache,
    repeats: usize,
    bar: &ProgressBar,
) -> Result<Vec<QueryResult>, StoreError> {
    let failed = |what: &str, e: Box<dyn std::error::Error + Send + Sync>| {
        StoreError::Invalid(format!("bench zip seed queries: {what}: {e}"))
    };
    let mut results = Vec::new();
    let mut queries: Option<Vec<Query>> = None;
    for (i, spec) in specs.iter().enumerate() {
        let label = spec.to_string();
        bar.set_message(format!("seed queries on a {label} copy of the day"));
        let root = scratch.join(format!("seed-queries{i}"));
        let db = Database::open(&root)?;
        let how = TableWrite { spec: TableSpec::uniform(spec.clone()), ..TableWrite::default() };
        strata_taq::write_day(&db, seed.date, &seed.day, &how, WriteMode::Replace)?;
        if queries.is_none() {
            queries = Some(query_set(&root).map_err(|e| failed("picking the parameters", e))?);
        }
        let queries = queries.as_deref().expect("picked on the first copy");
        let evict = || flush(cold.flush_mode(), std::slice::from_ref(&root)).map(drop).map_err(Into::into);
        let timings = run_strata(&root, queries, repeats, &evict).map_err(|e| failed(&label, e))?;
        for (query, timing) in queries.iter().zip(timings) {
            results.push(QueryResult {
                table: SEED_QUERIES_TABLE.to_string(),
                query: query.name.clone(),
                spec: label.clone(),
                cold: timing.cold_ms / 1e3,
                warm: timing.warm_ms / 1e3,
            });
        }
        std::fs::remove_dir_all(&root).map_err(|source| StoreError::Io { path: root.clone(), source })?;
        bar.inc(1);
    }
    Ok(results)
}

/// The query set with parameters picked from the database at `root`.
fn query_set(root: &Path) -> BenchResult<Vec<Query>> {
    let engine = Engine::open(root)?;
    let date = single_date(&engine)?;
    Ok(seed_queries(&pick_parameters(&engine, &date)?))
}
