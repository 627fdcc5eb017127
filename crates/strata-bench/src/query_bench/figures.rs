//! The report of `strata bench query`: per-query times of every engine, Strata's
//! ratios to in-memory DuckDB and Polars, geometric means per family and overall,
//! whether the answers agree, and exactly what each engine does.

use super::driver::EngineRun;
use super::strata_runs::StrataTimes;
use super::workload::{FAMILIES, WorkloadParameters, WorkloadQuery};
use super::{QueryBenchOptions, Timing, geomean};
use crate::report::{Caveat, Cell, Column, Report, Table};

/// The engines the ratios are taken against (the driver's names).
const DUCKDB: &str = "duckdb-mem";
const POLARS: &str = "polars-mem";

/// What each engine does, for the report.
const ENGINES: [(&str, &str); 7] = [
    (
        "strata",
        "the library in process (strata_query::Engine): cold on a fresh engine, warm on the same one; result batches materialised",
    ),
    (
        "strata-hdb",
        "a long-lived `strata hdb` on loopback; the SQL sent as a q string over kdb+ IPC (sync), answer decoded",
    ),
    (
        "strata-sql",
        "a `strata sql --db DB QUERY --timing` process per run printing its default table (at most 40 rows shown, as DuckDB's shell) to /dev/null; wall time from spawn to exit",
    ),
    (
        "strata-sql start",
        "the same process's wall time minus the query time it reports: process start, database open, output",
    ),
    (
        "duckdb-mem",
        "DuckDB, one in-memory connection; day loaded with CREATE TABLE AS from Parquet (time as TIME, a date column); to_arrow_table()",
    ),
    (
        "duckdb-file",
        "DuckDB, the same tables in a database file; cold: file evicted and a fresh read-only connection; to_arrow_table()",
    ),
    (
        "polars-mem",
        "Polars, DataFrames read into memory (time as pl.Time); a lazy plan over them per query, .collect() timed (pivots eager)",
    ),
];

/// One query's figures.
pub(crate) struct Measured {
    pub strata: StrataTimes,
    pub others: Vec<EngineRun>,
}

impl Measured {
    fn other(&self, engine: &str) -> Option<&EngineRun> {
        self.others.iter().find(|r| r.engine == engine)
    }

    /// Strata's warm (or cold) time over `engine`'s.
    fn ratio(&self, strata: &Timing, engine: &str, cold: bool) -> f64 {
        let pick = |t: &Timing| if cold { t.cold_ms } else { t.warm_ms };
        self.other(engine).map_or(f64::NAN, |o| pick(strata) / pick(&o.timing))
    }

    /// `yes`, or what disagrees.
    fn agree(&self) -> String {
        let mut bad: Vec<String> =
            self.others.iter().filter(|r| r.agree != "yes").map(|r| format!("{}: {}", r.engine, r.agree)).collect();
        if self.strata.agree != "yes" {
            bad.push(self.strata.agree.clone());
        }
        if bad.is_empty() { "yes".into() } else { bad.join("; ") }
    }
}

/// The run's context, for the set-up table.
pub(crate) struct Setup<'a> {
    pub options: &'a QueryBenchOptions,
    pub parameters: &'a WorkloadParameters,
    /// Each driver engine's load of the day, ms.
    pub loads: &'a [(String, f64)],
    pub hdb_ready_ms: f64,
}

/// The ratio columns: (name, Strata's timing, engine, cold).
type RatioOf = (&'static str, fn(&StrataTimes) -> &Timing, &'static str, bool);
const RATIOS: [RatioOf; 5] = [
    ("strata/duckdb-mem warm", |s| &s.library, DUCKDB, false),
    ("strata/polars-mem warm", |s| &s.library, POLARS, false),
    ("strata-hdb/duckdb-mem warm", |s| &s.hdb, DUCKDB, false),
    ("strata-hdb/polars-mem warm", |s| &s.hdb, POLARS, false),
    ("strata/duckdb-mem cold", |s| &s.library, DUCKDB, true),
];

/// Builds the report.
pub(crate) fn report(queries: &[WorkloadQuery], measured: &[Measured], setup: &Setup) -> Report {
    let mut report = Report::new("queries for TAQ analysts: Strata vs DuckDB and Polars with the day in memory");
    report.push_note(
        "Every engine holds the same day and runs each query right after the others (alternated per query); \
         times are ms to a fully materialised result. Ratios below 1: Strata faster. Load times are separate.",
    );
    let small = small_day(setup.options);
    if let Some(text) = &small {
        report.push_warning(text.clone());
    }
    let mut by_query = per_query(queries, measured);
    let mut by_family = per_family(queries, measured);
    if small.is_some() {
        for table in [&mut by_query, &mut by_family] {
            table.warn("A small day (see the warning at the top): these ratios describe fixed costs per query.");
        }
    }
    report.push_table(by_query);
    report.push_table(by_family);
    report.push_table(set_up(setup));
    let mut sql = Table::new("the queries", vec![Column::text("family"), Column::text("query"), Column::text("SQL")]);
    for q in queries {
        sql.push_row(vec![q.family.into(), q.name.into(), q.sql.clone().into()]);
    }
    report.push_table(sql);
    report
}

/// Generated days with fewer quotes than this get a warning: their queries take
/// a few milliseconds at most, mostly each engine's fixed cost per query.
pub(crate) const SMALL_DAY_QUOTES: usize = 1_000_000;

/// The warning for a generated day too small for its ratios to describe work.
fn small_day(options: &QueryBenchOptions) -> Option<String> {
    let quotes = options.taq.quotes;
    (options.db.is_none() && quotes < SMALL_DAY_QUOTES).then(|| {
        format!(
            "Too little data: the day has {quotes} quotes (under {SMALL_DAY_QUOTES}), so each query takes \
             little longer than each engine's fixed cost per query (parsing, planning, starting threads, \
             crossing into Python); the ratios describe those costs, not the work on a day of real size. \
             Give more --quotes."
        )
    })
}

fn per_query(queries: &[WorkloadQuery], measured: &[Measured]) -> Table {
    let engines = other_engines(measured);
    let mut columns = vec![Column::text("family"), Column::text("query"), Column::number("rows", 0)];
    for name in ["strata", "strata-hdb", "strata-sql"].iter().copied().chain(engines.iter().map(String::as_str)) {
        columns.push(Column::number(format!("{name} cold ms"), 1).lower_is_better());
        columns.push(Column::number(format!("{name} warm ms"), 2).lower_is_better());
    }
    columns.push(Column::number("strata-sql start ms", 1));
    for (name, ..) in RATIOS {
        columns.push(Column::number(name, 3).lower_is_better());
    }
    columns.push(Column::text("results agree"));
    let mut table = Table::new("query times (ms) and Strata's ratios", columns);
    for (q, m) in queries.iter().zip(measured) {
        let s = &m.strata;
        let mut row: Vec<Cell> = vec![q.family.into(), q.name.into(), s.library.rows.into()];
        for t in [&s.library, &s.hdb, &s.process] {
            row.extend([t.cold_ms.into(), t.warm_ms.into()]);
        }
        for e in &engines {
            match m.other(e) {
                Some(r) => row.extend([r.timing.cold_ms.into(), r.timing.warm_ms.into()]),
                None => row.extend([Cell::Empty, Cell::Empty]),
            }
        }
        // The timings behind each figure (ms), for marking those below the timer's
        // resolution: the times themselves, then (after the start-up difference,
        // not a timing) each ratio's two.
        let mut behind: Vec<Vec<f64>> = row
            .iter()
            .enumerate()
            .map(|(i, c)| if i < 3 { vec![] } else { c.as_number().into_iter().collect() })
            .collect();
        row.push((s.process.warm_ms - s.process_query.warm_ms).into());
        behind.push(Vec::new());
        for (_, strata, engine, cold) in RATIOS {
            row.push(m.ratio(strata(s), engine, cold).into());
            let pick = |t: &Timing| if cold { t.cold_ms } else { t.warm_ms };
            behind
                .push([Some(strata(s)), m.other(engine).map(|o| &o.timing)].into_iter().flatten().map(pick).collect());
        }
        row.push(m.agree().into());
        table.push_row(row);
        let at = table.rows.len() - 1;
        for (column, timings) in behind.into_iter().enumerate() {
            if let Some(caveat) = Caveat::for_timings(timings.into_iter().map(|ms| ms / 1e3)) {
                table.flag(at, column, caveat);
            }
        }
    }
    table
}

fn per_family(queries: &[WorkloadQuery], measured: &[Measured]) -> Table {
    let mut columns = vec![Column::text("family"), Column::number("queries", 0), Column::text("covers")];
    for (name, ..) in RATIOS {
        columns.push(Column::number(format!("geomean {name}"), 3).lower_is_better());
    }
    columns.push(Column::number("agreeing", 0));
    let mut table = Table::new("geometric means of Strata's ratios, per family and overall", columns);
    let row = |label: &str, covers: &str, pick: &dyn Fn(&WorkloadQuery) -> bool| -> Vec<Cell> {
        let chosen: Vec<&Measured> = queries.iter().zip(measured).filter(|(q, _)| pick(q)).map(|(_, m)| m).collect();
        let mut row: Vec<Cell> = vec![label.into(), chosen.len().into(), covers.into()];
        for (_, strata, engine, cold) in RATIOS {
            row.push(
                geomean(chosen.iter().map(|m| m.ratio(strata(&m.strata), engine, cold)).filter(|r| r.is_finite()))
                    .into(),
            );
        }
        row.push(chosen.iter().filter(|m| m.agree() == "yes").count().into());
        row
    };
    for (family, covers) in FAMILIES {
        table.push_row(row(family, covers, &|q| q.family == family));
    }
    table.push_row(row("overall", "every query", &|_| true));
    table
}

fn set_up(setup: &Setup) -> Table {
    let mut table = Table::new("set-up", vec![Column::text("what"), Column::text("value")]);
    let o = setup.options;
    let data = match &o.db {
        Some(db) => db.display().to_string(),
        None => format!(
            "generated: {} quotes, {} trades, {} symbols, seed {}; times whole microseconds, distinct per symbol",
            o.taq.quotes, o.taq.trades, o.taq.syms, o.taq.seed
        ),
    };
    let p = setup.parameters;
    let mut rows: Vec<(String, String)> = vec![
        ("data".into(), data),
        ("date".into(), p.date.clone()),
        ("one symbol".into(), p.one_sym.clone()),
        ("symbol lists".into(), format!("{} and {} symbols by trade activity", p.syms50.len(), p.syms1000.len())),
        ("exchanges pivoted".into(), p.exchanges.join(" ")),
        ("symbols pivoted".into(), p.pivot_syms.join(" ")),
        ("cold".into(), "files evicted from the page cache (posix_fadvise DONTNEED) where the engine reads files; fresh engine or connection where it has one; in-memory engines: the first run".into()),
        ("warm".into(), format!("best of {} further runs", o.repeats)),
        ("results agree".into(), "each answer against Strata's library answer, both sorted, floats within 1e-6 relative, times as ns since midnight; the HDB's by row count".into()),
        ("strata-hdb ready".into(), format!("{:.1} ms from spawn to first answer", setup.hdb_ready_ms)),
    ];
    for (engine, ms) in setup.loads {
        rows.push((format!("{engine} load"), format!("{ms:.1} ms")));
    }
    for (engine, what) in ENGINES {
        rows.push((format!("engine {engine}"), what.into()));
    }
    for (what, value) in rows {
        table.push_row(vec![what.into(), value.into()]);
    }
    table
}

/// The driver's engine names, in the order it reported them.
fn other_engines(measured: &[Measured]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in measured.iter().flat_map(|m| &m.others) {
        if !names.contains(&r.engine) {
            names.push(r.engine.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn only_small_generated_days_are_warned_about() {
        let mut options = QueryBenchOptions::new(PathBuf::from("s"), PathBuf::from("python3"), PathBuf::from("strata"));
        assert_eq!(small_day(&options), None, "the default 5M-quote day");
        options.taq.quotes = SMALL_DAY_QUOTES - 1;
        let warning = small_day(&options).unwrap();
        assert!(warning.contains("the day has 999999 quotes (under 1000000)"), "{warning}");
        options.db = Some(PathBuf::from("hdb"));
        assert_eq!(small_day(&options), None, "a database's size is the user's");
    }
}
