//! The zip benchmark's report: a long results table, seed-000-style matrices (data
//! columns by specs) with heat-map colouring, `auto`'s choices, the targets, the
//! recommendations and a ratio-against-write-time chart per table.

use std::collections::HashMap;

use super::{BASELINE, ColumnResult, SEED_QUERIES_TABLE, ZipOptions, ZipResults};
use crate::query_bench::geomean;
use crate::recommend::Recommendation;
use crate::report::{Caveat, Cell, Column, Goal, Report, ScatterChart, Table};

/// Title of the long table: one row per table, column (or `(table)`) and spec.
pub const RESULTS_TABLE: &str = "zip results";
/// Title of the table of `auto`'s choices.
pub const AUTO_TABLE: &str = "auto choices";
/// Title of the table comparing `auto` with zstd:22 (size) and zstd:1 (write time).
pub const TARGETS_TABLE: &str = "auto vs zstd";
/// Row label of a table's totals in the results.
pub const TABLE_ROW: &str = "(table)";
/// Tables with fewer rows than this get a warning and their time figures are
/// marked: a column of under a megabyte writes and reads in well under a
/// millisecond, where creating files, starting threads and planning a query cost
/// as much as the codec, so time ratios say little about the codec.
pub const SMALL_TABLE_ROWS: u64 = 100_000;

/// Each benchmarked table's row count.
fn table_rows(results: &ZipResults) -> HashMap<&str, u64> {
    results.statistics.iter().map(|(t, stats)| (t.as_str(), stats.first().map_or(0, |s| s.rows))).collect()
}

/// Why a small table's time figures are marked; `None` for a table large enough.
pub(super) fn small_table(table: &str, rows: u64) -> Option<Caveat> {
    (rows < SMALL_TABLE_ROWS).then(|| {
        Caveat::SmallData(format!(
            "{table} has {rows} rows (under {SMALL_TABLE_ROWS}): its times are mostly fixed costs, so time \
             ratios say little about the codecs"
        ))
    })
}

/// The caveat for a figure computed from these timings (seconds) of `table`:
/// a timing below the timer's resolution first, then a table too small.
fn time_caveat(timings: [f64; 2], table: &str, rows: &HashMap<&str, u64>) -> Option<Caveat> {
    Caveat::for_timings(timings).or_else(|| rows.get(table).and_then(|&n| small_table(table, n)))
}

/// One measurement summed over a table's columns.
fn totals(rows: &[&ColumnResult], table: &str, spec: &str) -> ColumnResult {
    let mut total = ColumnResult {
        table: table.to_string(),
        column: TABLE_ROW.to_string(),
        ty: strata_store::ColumnType::Byte,
        spec: spec.to_string(),
        stored_spec: strata_codec::CompressionSpec::none(),
        raw_bytes: 0,
        stored_bytes: 0,
        write: 0.0,
        write_fsync: 0.0,
        read_cold: 0.0,
        read_warm: 0.0,
        ranges_cold: 0.0,
        ranges_warm: 0.0,
    };
    for r in rows.iter().filter(|r| r.table == table && r.spec == spec) {
        total.stored_spec = r.stored_spec.clone();
        total.raw_bytes += r.raw_bytes;
        total.stored_bytes += r.stored_bytes;
        total.write += r.write;
        total.write_fsync += r.write_fsync;
        total.read_cold += r.read_cold;
        total.read_warm += r.read_warm;
        total.ranges_cold += r.ranges_cold;
        total.ranges_warm += r.ranges_warm;
    }
    total
}

/// The ratio figures of `r` against the baseline `base`.
struct Ratios {
    relative_size_pct: f64,
    write: f64,
    write_fsync: f64,
    read_cold: f64,
    read_warm: f64,
    ranges_cold: f64,
    ranges_warm: f64,
}

fn ratios(r: &ColumnResult, base: &ColumnResult) -> Ratios {
    let ratio = |a: f64, b: f64| a / b.max(1e-9);
    Ratios {
        relative_size_pct: 100.0 * r.stored_bytes as f64 / r.raw_bytes.max(1) as f64,
        write: ratio(r.write, base.write),
        write_fsync: ratio(r.write_fsync, base.write_fsync),
        read_cold: ratio(r.read_cold, base.read_cold),
        read_warm: ratio(r.read_warm, base.read_warm),
        ranges_cold: ratio(r.ranges_cold, base.ranges_cold),
        ranges_warm: ratio(r.ranges_warm, base.ranges_warm),
    }
}

/// Builds the whole report.
pub(super) fn report(
    results: &ZipResults,
    recommendations: &[(String, Recommendation)],
    options: &ZipOptions,
) -> Report {
    let mut report = Report::new("Strata compression benchmark (bench zip)");
    let tables: Vec<&str> = results.statistics.iter().map(|(t, _)| t.as_str()).collect();
    let rows_of = |t: &str| results.columns.iter().filter(|r| r.table == t && r.spec == BASELINE).count();
    report.push_note(format!(
        "Tables: {}. Each spec writes every column into its own splayed table (blocks of 2^lbs raw bytes, \
         128 KiB unless the spec says @lbs), columns one after another, each on a pool of {} thread(s). \
         relative size = stored bytes / raw bytes in percent (kdb+'s convention; lower is better); every \
         time is a ratio to the uncompressed write or read of the same column in this run (below 1 = faster \
         than uncompressed). write = encode + write to the page cache (best of {}); write+fsync adds the \
         fsync; read = every value decoded and touched; ranges = {} random ranges of {} rows. Cold reads: {}. \
         A spec that cannot apply to a column (pco on chars, dec on integers) is adapted to it as a table \
         spec's default would be; the results table shows the stored spec. The run took {:.1} s.",
        tables.iter().map(|t| format!("{t} ({} columns)", rows_of(t))).collect::<Vec<_>>().join(", "),
        options.threads,
        options.repeats,
        options.range_count,
        options.range_rows,
        results.cold.describe(),
        results.elapsed.as_secs_f64(),
    ));
    report.push_note(if options.seed_queries.is_some() {
        "Query-time ratios: `select from t where sym=busiest` runs on every spec's copy of each table, and \
         seed 000's fourteen queries (strata bench query's set, through the SQL engine) on a database of the \
         whole day (quote, trade, quoteNorm, tradeNorm) written with each spec, under table `taq`; cold = \
         files evicted and a fresh engine, warm = best of the repeats."
    } else {
        "Query-time ratios: `select from t where sym=busiest` runs on every spec's copy of each table. \
         --seed-queries adds seed 000's fourteen SQL queries on a database of the whole day per spec."
    });
    let rows = table_rows(results);
    let mut small: Vec<(&str, u64)> =
        rows.iter().filter(|(_, n)| **n < SMALL_TABLE_ROWS).map(|(t, n)| (*t, *n)).collect();
    small.sort_unstable();
    if !small.is_empty() {
        let list: Vec<String> = small.iter().map(|(t, n)| format!("{t} has {n} rows")).collect();
        report.push_warning(format!(
            "Too little data for time ratios: {} (under {SMALL_TABLE_ROWS}). At this size creating files, \
             starting threads and planning queries cost as much as compressing, so those tables' time ratios \
             are mostly noise (marked, and left uncoloured); their sizes are still right. Give more --rows.",
            list.join(", ")
        ));
    }
    report.push_table(long_table(results, &rows));
    if let Some(targets) = targets_table(results) {
        report.push_table(targets);
    }
    for &t in &tables {
        report.push_table(matrix(results, t, "relative size %", &Figure::Size));
        for (title, pick, timing) in [
            ("write time ratio", (|r: &Ratios| r.write) as fn(&Ratios) -> f64, (|r: &ColumnResult| r.write) as Timing),
            ("write+fsync time ratio", |r| r.write_fsync, |r| r.write_fsync),
            ("read time ratio, cold", |r| r.read_cold, |r| r.read_cold),
            ("read time ratio, warm", |r| r.read_warm, |r| r.read_warm),
            ("random ranges time ratio, cold", |r| r.ranges_cold, |r| r.ranges_cold),
            ("random ranges time ratio, warm", |r| r.ranges_warm, |r| r.ranges_warm),
        ] {
            let small = rows.get(t).and_then(|&n| small_table(t, n));
            report.push_table(matrix(results, t, title, &Figure::Time { pick, timing, small }));
        }
        report.push_chart(chart(results, t));
    }
    if !results.queries.is_empty() {
        report.push_table(query_table(results, &rows));
    }
    if !results.autos.is_empty() {
        let mut autos = Table::new(
            AUTO_TABLE,
            vec![
                Column::text("table"),
                Column::text("column"),
                Column::text("spec"),
                Column::text("chosen"),
                Column::text("why"),
            ],
        );
        for a in &results.autos {
            autos.push_row(vec![
                a.table.as_str().into(),
                a.column.as_str().into(),
                a.spec.as_str().into(),
                a.chosen.to_string().into(),
                a.reason.as_str().into(),
            ]);
        }
        report.push_table(autos);
    }
    let mut recs = Table::new(
        "recommended specs per tier",
        vec![
            Column::text("table"),
            Column::text("column"),
            Column::text("hot"),
            Column::text("mid"),
            Column::text("mid_why"),
            Column::text("cold"),
            Column::text("cold_why"),
        ],
    );
    for (table, rec) in recommendations {
        for c in &rec.columns {
            recs.push_row(vec![
                table.as_str().into(),
                c.column.as_str().into(),
                "none".into(),
                c.mid.to_string().into(),
                c.mid_why.as_str().into(),
                c.cold.to_string().into(),
                c.cold_why.as_str().into(),
            ]);
        }
    }
    report.push_table(recs);
    report
}

/// The baseline result of each (table, column).
fn baselines(results: &ZipResults) -> HashMap<(&str, &str), &ColumnResult> {
    results.columns.iter().filter(|r| r.spec == BASELINE).map(|r| ((r.table.as_str(), r.column.as_str()), r)).collect()
}

/// Each table's results, then its per-spec totals, in run order.
fn with_totals(results: &ZipResults) -> Vec<ColumnResult> {
    let all: Vec<&ColumnResult> = results.columns.iter().collect();
    let mut rows: Vec<ColumnResult> = Vec::new();
    for (table, _) in &results.statistics {
        rows.extend(results.columns.iter().filter(|r| &r.table == table).cloned());
        rows.extend(results.specs.iter().map(|s| totals(&all, table, s)));
    }
    rows
}

fn long_table(results: &ZipResults, table_rows: &HashMap<&str, u64>) -> Table {
    let mut table = Table::new(
        RESULTS_TABLE,
        vec![
            Column::text("table"),
            Column::text("column"),
            Column::text("type"),
            Column::text("spec"),
            Column::text("stored_spec"),
            Column::number("raw_bytes", 0),
            Column::number("stored_bytes", 0),
            Column::number("relative_size_pct", 2).lower_is_better(),
            Column::number("write_ratio", 2).lower_is_better(),
            Column::number("write_fsync_ratio", 2).lower_is_better(),
            Column::number("read_cold_ratio", 2).lower_is_better(),
            Column::number("read_warm_ratio", 2).lower_is_better(),
            Column::number("ranges_cold_ratio", 2).lower_is_better(),
            Column::number("ranges_warm_ratio", 2).lower_is_better(),
            Column::number("write_ms", 2),
        ],
    );
    let rows = with_totals(results);
    let bases: HashMap<(&str, &str), &ColumnResult> =
        rows.iter().filter(|r| r.spec == BASELINE).map(|r| ((r.table.as_str(), r.column.as_str()), r)).collect();
    let timings: [Timing; 6] =
        [|r| r.write, |r| r.write_fsync, |r| r.read_cold, |r| r.read_warm, |r| r.ranges_cold, |r| r.ranges_warm];
    for (row, r) in rows.iter().enumerate() {
        let base = bases[&(r.table.as_str(), r.column.as_str())];
        let x = ratios(r, base);
        let ty = if r.column == TABLE_ROW { String::new() } else { r.ty.name().to_string() };
        table.push_row(vec![
            r.table.as_str().into(),
            r.column.as_str().into(),
            ty.into(),
            r.spec.as_str().into(),
            if r.column == TABLE_ROW { Cell::Empty } else { r.stored_spec.to_string().into() },
            Cell::Number(r.raw_bytes as f64),
            Cell::Number(r.stored_bytes as f64),
            x.relative_size_pct.into(),
            x.write.into(),
            x.write_fsync.into(),
            x.read_cold.into(),
            x.read_warm.into(),
            x.ranges_cold.into(),
            x.ranges_warm.into(),
            (1e3 * r.write).into(),
        ]);
        // The six time ratios follow relative_size_pct.
        let first = table.column_index("write_ratio").expect("the results table has write_ratio");
        for (i, timing) in timings.iter().enumerate() {
            if let Some(caveat) = time_caveat([timing(r), timing(base)], &r.table, table_rows) {
                table.flag(row, first + i, caveat);
            }
        }
    }
    table.in_appendix()
}

/// One timing of a measurement, in seconds.
type Timing = fn(&ColumnResult) -> f64;

/// What a matrix shows.
enum Figure {
    /// Relative size: the same whatever the table's size.
    Size,
    /// A time ratio: `pick` from the ratios, computed from `timing`; `small` when
    /// the table is too small for its times to mean much.
    Time { pick: fn(&Ratios) -> f64, timing: Timing, small: Option<Caveat> },
}

/// A matrix for `table`: data columns (most entropic first, then the table's
/// total) by specs, one figure per cell, all on one colour scale. A time matrix
/// of a small table carries a warning instead of colours; cells whose timings
/// are below the timer's resolution are marked.
fn matrix(results: &ZipResults, table: &str, title: &str, figure: &Figure) -> Table {
    let (decimals, coloured) = match figure {
        Figure::Size => (1, true),
        Figure::Time { small, .. } => (2, small.is_none()),
    };
    let mut columns = vec![Column::text("column")];
    columns.extend(results.specs.iter().map(|s| {
        let column = Column::number(s.as_str(), decimals);
        if coloured { column.lower_is_better() } else { column }
    }));
    let mut out = Table::new(format!("{table}: {title}"), columns).with_one_heat_scale();
    if let Figure::Time { small: Some(caveat), .. } = figure {
        out.warn(format!("{caveat}; the colours are left off."));
    }
    let mut order: Vec<(String, f64)> = results
        .statistics
        .iter()
        .filter(|(t, _)| t == table)
        .flat_map(|(_, stats)| stats.iter().map(|s| (s.name.clone(), s.entropy)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows = with_totals(results);
    let bases = baselines(results);
    let find =
        |column: &str, spec: &str| rows.iter().find(|r| r.table == table && r.column == column && r.spec == spec);
    for column in order.iter().map(|(c, _)| c.as_str()).chain([TABLE_ROW]) {
        let mut row: Vec<Cell> = vec![column.into()];
        let mut flags = Vec::new();
        for (i, spec) in results.specs.iter().enumerate() {
            let pair = find(column, spec).and_then(|r| {
                let base =
                    if column == TABLE_ROW { find(TABLE_ROW, BASELINE)? } else { *bases.get(&(table, column))? };
                Some((r, base))
            });
            let cell = pair.map(|(r, base)| match figure {
                Figure::Size => ratios(r, base).relative_size_pct,
                Figure::Time { pick, timing, .. } => {
                    if let Some(caveat) = Caveat::for_timings([timing(r), timing(base)]) {
                        flags.push((1 + i, caveat));
                    }
                    pick(&ratios(r, base))
                }
            });
            row.push(cell.into());
        }
        out.push_row(row);
        for (at, caveat) in flags {
            out.flag(out.rows.len() - 1, at, caveat);
        }
    }
    out
}

/// Table-level compression ratio against write time ratio, one point per spec.
fn chart(results: &ZipResults, table: &str) -> ScatterChart {
    let all: Vec<&ColumnResult> = results.columns.iter().collect();
    let base = totals(&all, table, BASELINE);
    let mut points =
        Table::new("points", vec![Column::text("spec"), Column::number("write", 3), Column::number("ratio", 3)]);
    for spec in results.specs.iter().filter(|s| *s != BASELINE) {
        let t = totals(&all, table, spec);
        points.push_row(vec![
            spec.as_str().into(),
            (t.write / base.write.max(1e-9)).into(),
            (t.raw_bytes as f64 / t.stored_bytes.max(1) as f64).into(),
        ]);
    }
    let mut chart = ScatterChart::from_table(
        format!("{table}: compression ratio vs write time ratio"),
        &points,
        "write",
        "ratio",
        "spec",
    )
    .expect("the points table has these columns")
    .with_log_x()
    .with_log_y()
    .with_series(crate::codecs::spec_family)
    .with_front_labels(Goal::Lower, Goal::Higher);
    chart.x_label = "write time / uncompressed write time".into();
    chart.y_label = "raw bytes / stored bytes".into();
    chart
}

fn query_table(results: &ZipResults, table_rows: &HashMap<&str, u64>) -> Table {
    let mut table = Table::new(
        "query time ratios",
        vec![
            Column::text("table"),
            Column::text("query"),
            Column::text("spec"),
            Column::number("cold_ratio", 2).lower_is_better(),
            Column::number("warm_ratio", 2).lower_is_better(),
            Column::number("cold_ms", 2),
            Column::number("warm_ms", 2),
        ],
    );
    // Per spec, the seed set's figures, for its geometric-mean row.
    let mut seed: Vec<(&str, Vec<[f64; 4]>)> = Vec::new();
    for q in &results.queries {
        let Some(base) =
            results.queries.iter().find(|b| b.table == q.table && b.query == q.query && b.spec == BASELINE)
        else {
            continue;
        };
        let figures = [q.cold / base.cold.max(1e-9), q.warm / base.warm.max(1e-9), 1e3 * q.cold, 1e3 * q.warm];
        table.push_row(query_row(&q.table, &q.query, &q.spec, figures));
        // The seed set runs on the whole day: as small as its largest table.
        let size_of = if q.table == SEED_QUERIES_TABLE {
            table_rows.iter().max_by_key(|(_, n)| **n).map_or(q.table.as_str(), |(t, _)| *t)
        } else {
            q.table.as_str()
        };
        for (at, timings) in [(3, [q.cold, base.cold]), (4, [q.warm, base.warm])] {
            if let Some(caveat) = time_caveat(timings, size_of, table_rows) {
                table.flag(table.rows.len() - 1, at, caveat);
            }
        }
        if q.table == SEED_QUERIES_TABLE {
            match seed.iter_mut().find(|(spec, _)| *spec == q.spec) {
                Some((_, all)) => all.push(figures),
                None => seed.push((&q.spec, vec![figures])),
            }
        }
    }
    for (spec, all) in seed {
        let mean = |i: usize| geomean(all.iter().map(|f| f[i]));
        table.push_row(query_row(SEED_QUERIES_TABLE, SEED_GEOMEAN, spec, [mean(0), mean(1), mean(2), mean(3)]));
    }
    table
}

/// The query name of the seed set's geometric-mean rows.
pub const SEED_GEOMEAN: &str = "geomean of the seed queries";

fn query_row(table: &str, query: &str, spec: &str, [cold, warm, cold_ms, warm_ms]: [f64; 4]) -> Vec<Cell> {
    vec![table.into(), query.into(), spec.into(), cold.into(), warm.into(), cold_ms.into(), warm_ms.into()]
}

/// The targets, per table: `auto`'s stored bytes against zstd:22's, and its
/// write time against zstd:1's. `None` unless all three specs ran.
fn targets_table(results: &ZipResults) -> Option<Table> {
    let has = |s: &str| results.specs.iter().any(|x| x == s);
    if !(has("auto") && has("zstd:22") && has("zstd:1")) {
        return None;
    }
    let all: Vec<&ColumnResult> = results.columns.iter().collect();
    let mut table = Table::new(
        TARGETS_TABLE,
        vec![
            Column::text("table"),
            Column::number("auto_MB", 2),
            Column::number("zstd22_MB", 2),
            Column::number("auto_over_zstd22_bytes", 3).lower_is_better(),
            Column::number("auto_write_s", 3),
            Column::number("zstd1_write_s", 3),
            Column::number("auto_over_zstd1_write", 3).lower_is_better(),
            Column::number("auto_write_fsync_s", 3),
            Column::number("zstd1_write_fsync_s", 3),
        ],
    );
    for (t, _) in &results.statistics {
        let (auto, z22, z1) = (totals(&all, t, "auto"), totals(&all, t, "zstd:22"), totals(&all, t, "zstd:1"));
        table.push_row(vec![
            t.as_str().into(),
            (auto.stored_bytes as f64 / 1e6).into(),
            (z22.stored_bytes as f64 / 1e6).into(),
            (auto.stored_bytes as f64 / z22.stored_bytes.max(1) as f64).into(),
            auto.write.into(),
            z1.write.into(),
            (auto.write / z1.write.max(1e-9)).into(),
            auto.write_fsync.into(),
            z1.write_fsync.into(),
        ]);
    }
    Some(table)
}
