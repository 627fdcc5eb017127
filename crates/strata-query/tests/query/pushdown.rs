//! Each pushdown path reads less, proven by the engine's scan counters, and gives
//! the same answer as computing it by hand.

use strata_query::Engine;
use strata_store::{Attribute, ColumnType, TableSpec, TableWrite};

use super::data::*;

fn setup(spec: &str) -> (tempfile::TempDir, Quotes, Quotes) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let q1 = quotes(&mut rng, 20_000, 20, DAY.parse().unwrap());
    let q2 = quotes(&mut rng, 20_000, 20, DAY2.parse().unwrap());
    write(dir.path(), DAY, "quote", &q1.table(), &sorted_write(spec));
    write(dir.path(), DAY2, "quote", &q2.table(), &sorted_write(spec));
    (dir, q1, q2)
}

/// Runs `sql` and returns the one float it answers and what the scan read.
fn measure(engine: &Engine, sql: &str) -> (Option<f64>, strata_query::ScanStats) {
    let before = engine.scan_stats();
    let out = engine.sql(sql).unwrap();
    (floats(&one(&out), "v")[0], engine.scan_stats().since(&before))
}

/// Nanosecond bounds `from_ms..to_ms` milliseconds into DAY, and the SQL condition
/// on `time` that selects them.
fn time_range(from_ms: i64, to_ms: i64) -> (i64, i64, String) {
    let day: strata_store::Date = DAY.parse().unwrap();
    let (lo, hi) = (day.start_nanos() + from_ms * 1_000_000, day.start_nanos() + to_ms * 1_000_000);
    let at = |t: i64| format!("arrow_cast({t}, 'Timestamp(Nanosecond, None)')");
    (lo, hi, format!("time >= {} AND time < {}", at(lo), at(hi)))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-6 * b.abs().max(1.0))
}

#[test]
fn symbol_filters_read_only_the_symbols_rows() {
    let (dir, q1, _) = setup("none");
    let engine = Engine::open(dir.path()).unwrap();
    let (all, full) = measure(&engine, "SELECT sum(bid) AS v FROM quote WHERE date = '2024-01-02'");
    assert!(close(all, q1.bid.iter().sum()));
    let (one_sym, narrow) =
        measure(&engine, "SELECT sum(bid) AS v FROM quote WHERE date = '2024-01-02' AND sym = 'S3'");
    let want: f64 = q1.sym.iter().zip(&q1.bid).filter(|(s, _)| *s == "S3").map(|(_, b)| b).sum();
    assert!(close(one_sym, want), "{one_sym:?} vs {want}");
    let s3 = q1.sym.iter().filter(|s| *s == "S3").count() as u64;
    assert_eq!(narrow.rows_scanned, s3, "only S3's rows are read");
    assert_eq!(narrow.bytes_read, s3 * 8, "one float column of S3's rows");
    assert_eq!(full.bytes_read, 20_000 * 8);
    let (two, inlist) =
        measure(&engine, "SELECT sum(bid) AS v FROM quote WHERE date = '2024-01-02' AND sym IN ('S3', 'S5', 'NOPE')");
    let want: f64 = q1.sym.iter().zip(&q1.bid).filter(|(s, _)| *s == "S3" || *s == "S5").map(|(_, b)| b).sum();
    assert!(close(two, want));
    assert!(inlist.rows_scanned < full.rows_scanned / 5);
}

#[test]
fn date_filters_drop_partitions_and_i_cuts_rows() {
    let (dir, q1, q2) = setup("none");
    let engine = Engine::open(dir.path()).unwrap();
    let out = one(&engine.sql("SELECT count(*) AS v FROM quote").unwrap());
    assert_eq!(ints(&out, "v")[0], Some(40_000));
    let (v, one_day) = measure(&engine, "SELECT sum(bsize) AS v FROM quote WHERE date = '2024-01-03'");
    assert!(close(v, q2.bsize.iter().sum::<i64>() as f64));
    assert_eq!((one_day.parts_scanned, one_day.rows_scanned), (1, 20_000));
    let (v, first) = measure(&engine, "SELECT sum(bsize) AS v FROM quote WHERE date = '2024-01-02' AND i < 100");
    let mut sorted: Vec<(String, i64, i64)> =
        q1.sym.iter().zip(&q1.time).zip(&q1.bsize).map(|((s, t), b)| (s.clone(), *t, *b)).collect();
    sorted.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    // The stored order is (sym, time) with a stable sort: the first 100 rows' sizes.
    let want: i64 = sorted.iter().take(100).map(|r| r.2).sum();
    assert!(close(v, want as f64), "{v:?} vs {want}");
    assert_eq!(first.rows_scanned, 100);
    let (_, none) = measure(&engine, "SELECT count(bid) AS v FROM quote WHERE date > '2024-01-03'");
    assert_eq!((none.rows_scanned, none.bytes_read), (0, 0));
}

#[test]
fn time_ranges_search_within_each_symbol() {
    let (dir, q1, _) = setup("none");
    let engine = Engine::open(dir.path()).unwrap();
    let (lo, hi, within) = time_range(100, 150);
    let (v, stats) =
        measure(&engine, &format!("SELECT sum(bid) AS v FROM quote WHERE date = '2024-01-02' AND {within}"));
    let want: f64 = q1.time.iter().zip(&q1.bid).filter(|(t, _)| (lo..hi).contains(*t)).map(|(_, b)| b).sum();
    assert!(close(v, want), "{v:?} vs {want}");
    let matching = q1.time.iter().filter(|t| (lo..hi).contains(*t)).count() as u64;
    assert_eq!(stats.rows_scanned, matching, "binary search leaves exactly the rows in range");
}

#[test]
fn compressed_columns_skip_blocks_by_min_max_and_decode_only_projected_columns() {
    let (dir, q1, _) = setup("zstd:1@12");
    let engine = Engine::open(dir.path()).unwrap();
    let (v, full) = measure(&engine, "SELECT sum(bsize) AS v FROM quote WHERE date = '2024-01-02'");
    assert!(close(v, q1.bsize.iter().sum::<i64>() as f64));
    // 20,000 longs in 4 KiB blocks: 40 blocks for the one column read.
    assert_eq!(full.blocks_decoded, 40);
    // One symbol's late quotes: the parted index finds the symbol's rows and the
    // compressed time column's block bounds rule out its early blocks.
    let day: strata_store::Date = DAY.parse().unwrap();
    let cut = day.start_nanos() + 990_000_000;
    let sql = format!(
        "SELECT count(bsize) AS v FROM quote WHERE date = '2024-01-02' AND sym = 'S0' AND time >= arrow_cast({cut}, 'Timestamp(Nanosecond, None)')"
    );
    let (v, narrow) = measure(&engine, &sql);
    let want = q1.sym.iter().zip(&q1.time).filter(|(s, t)| *s == "S0" && **t >= cut).count();
    assert_eq!(v, Some(want as f64));
    assert!(narrow.blocks_decoded <= 4, "sym rows span a few blocks, min/max keeps fewer: {narrow:?}");
}

#[test]
fn the_declared_order_spares_sorts() {
    let (dir, _, _) = setup("none");
    let engine = Engine::open(dir.path()).unwrap();
    let plan = engine.explain("SELECT sym, time, bid FROM quote WHERE date = '2024-01-02' ORDER BY sym, time").unwrap();
    assert!(!plan.contains("SortExec"), "{plan}");
    assert!(plan.contains("sorted by sym, time"), "{plan}");
    let plan = engine.explain("SELECT sym, time, bid FROM quote ORDER BY date, sym, time").unwrap();
    assert!(!plan.contains("SortExec"), "two dates: ordered by date, sym, time: {plan}");
    let plan = engine.explain("SELECT sym, time, bid FROM quote ORDER BY bid").unwrap();
    assert!(plan.contains("SortExec"), "{plan}");
}

/// Windows per symbol in time order, over a table stored sorted by symbol and
/// time, read it in that order instead of sorting it: with a timestamp time, and
/// with a timespan time (whose RANGE frames run over it as a timestamp). A window
/// in another order still sorts, so the check can fail.
#[test]
fn windows_in_the_stored_order_spare_sorts() {
    let (dir, q1, _) = setup("none");
    let day: strata_store::Date = DAY.parse().unwrap();
    let spans: Vec<i64> = q1.time.iter().map(|t| t - day.start_nanos()).collect();
    let table = strata_store::Table::new(vec![
        ("sym".into(), strata_store::Column::from_symbols(&q1.sym)),
        ("time".into(), strata_store::Column::from_values(strata_store::ColumnType::Timespan, spans).unwrap()),
        ("bid".into(), strata_store::Column::from_values(strata_store::ColumnType::Float, q1.bid.clone()).unwrap()),
    ])
    .unwrap();
    write(dir.path(), DAY, "spanq", &table, &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let iso_day = DAY.replace('.', "-");
    for table in ["quote", "spanq"] {
        for window in [
            "lag(bid) OVER (PARTITION BY sym ORDER BY time)",
            "sum(bid) OVER (PARTITION BY sym ORDER BY time ROWS UNBOUNDED PRECEDING)",
            "avg(bid) OVER (PARTITION BY sym ORDER BY time RANGE BETWEEN INTERVAL '1 minute' PRECEDING AND CURRENT ROW)",
        ] {
            let sql = format!("SELECT sym, time, {window} AS w FROM {table} WHERE date = '{iso_day}'");
            let plan = engine.explain(&sql).unwrap();
            assert!(!plan.contains("SortExec"), "{sql}: {plan}");
        }
        let sql = format!(
            "SELECT sym, lag(bid) OVER (PARTITION BY sym ORDER BY bid) AS w FROM {table} WHERE date = '{iso_day}'"
        );
        assert!(engine.explain(&sql).unwrap().contains("SortExec"), "{sql}");
    }
}

#[test]
fn a_sorted_column_is_cut_by_binary_search() {
    let dir = tempfile::tempdir().unwrap();
    let q1 = quotes(&mut Rng(11), 20_000, 20, DAY.parse().unwrap());
    let by_time = TableWrite {
        spec: TableSpec::uniform("none".parse().unwrap()),
        sort_by: vec!["time".into()],
        attributes: vec![("time".into(), Attribute::Sorted)],
    };
    write(dir.path(), DAY, "quote", &q1.table(), &by_time);
    let engine = Engine::open(dir.path()).unwrap();
    let (lo, hi, within) = time_range(200, 260);
    let (v, stats) = measure(&engine, &format!("SELECT sum(bsize) AS v FROM quote WHERE {within}"));
    let in_range: Vec<i64> =
        q1.time.iter().zip(&q1.bsize).filter(|(t, _)| (lo..hi).contains(*t)).map(|(_, b)| *b).collect();
    assert!(!in_range.is_empty() && in_range.len() < 20_000 / 5, "the range holds some rows, not most");
    assert!(close(v, in_range.iter().sum::<i64>() as f64), "{v:?}");
    assert_eq!(stats.rows_scanned, in_range.len() as u64, "only the rows in range are read");
}

/// A range of the time column in a table parted by symbol, times ascending within
/// each symbol and stored plain, is answered by the scan alone (binary search in
/// every run, through the column's samples): no filter above it, the time column
/// not read unless selected, null times never in range. Compressed, the same
/// query keeps its filter and gives the same answers.
#[test]
fn time_ranges_on_ordered_times_are_exact_and_never_hold_null_times() {
    let day: strata_store::Date = DAY.parse().unwrap();
    let mut rng = Rng(23);
    // About 700 rows a symbol: runs span many samples (one per 64 rows).
    let mut rows = random_rows(&mut rng, 21_000, 30, 5_000, 1_000_000);
    for (i, row) in rows.iter_mut().enumerate() {
        row.2 = if i % 97 == 0 { i64::MIN } else { day.start_nanos() + row.2 };
    }
    let at = |t: i64| format!("arrow_cast({t}, 'Timestamp(Nanosecond, None)')");
    for spec in ["none", "zstd:1@12"] {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), DAY, "t", &rows_table(&rows), &sorted_write(spec));
        let engine = Engine::open(dir.path()).unwrap();
        for _ in 0..20 {
            let a = day.start_nanos() + rng.below(5_200) as i64 * 1_000_000 - 100_000_000;
            let b = a + rng.below(600) as i64 * 1_000_000;
            let cases: [(String, Passes); 3] = [
                (format!("time >= {} AND time < {}", at(a), at(b)), Box::new(move |t| a <= t && t < b)),
                (format!("time BETWEEN {} AND {}", at(a), at(b)), Box::new(move |t| a <= t && t <= b)),
                (format!("time < {}", at(b)), Box::new(move |t| t < b)),
            ];
            for (condition, passes) in cases {
                let sql = format!("SELECT count(*) AS n, sum(v) AS v FROM t WHERE {condition}");
                let out = one(&engine.sql(&sql).unwrap());
                let kept: Vec<i64> = rows.iter().filter(|r| r.2 != i64::MIN && passes(r.2)).map(|r| r.3).collect();
                assert_eq!(ints(&out, "n")[0], Some(kept.len() as i64), "{spec}: {sql}");
                let sum = (!kept.is_empty()).then(|| kept.iter().sum::<i64>());
                assert_eq!(ints(&out, "v")[0], sum, "{spec}: {sql}");
            }
        }
        let (lo, hi) = (day.start_nanos() + 1_000_000_000, day.start_nanos() + 1_500_000_000);
        let sql = format!("SELECT sum(v) AS v FROM t WHERE time >= {} AND time < {}", at(lo), at(hi));
        let plan = engine.explain(&sql).unwrap();
        assert_eq!(plan.contains("FilterExec"), spec != "none", "{spec}: {plan}");
        let before = engine.scan_stats();
        engine.sql(&sql).unwrap();
        let read = engine.scan_stats().since(&before);
        let in_range = rows.iter().filter(|r| (lo..hi).contains(&r.2)).count() as u64;
        if spec == "none" {
            assert_eq!((read.rows_scanned, read.bytes_read), (in_range, in_range * 8), "v alone, in-range rows");
        }
    }
}

/// A time window leaves a short range in every symbol's run, and a list of
/// symbols a range per symbol; the scan gathers them into full batches. Strings,
/// the row number `i` and LIMIT come through the gathering intact, from plain and
/// from compressed files.
#[test]
fn short_ranges_gathered_into_batches_keep_every_column() {
    for spec in ["none", "zstd:1@12"] {
        gathered_ranges_keep_every_column(spec);
    }
}

fn gathered_ranges_keep_every_column(spec: &str) {
    let day: strata_store::Date = DAY.parse().unwrap();
    let mut rows = random_rows(&mut Rng(31), 12_000, 400, 1_000, 1_000_000);
    for row in rows.iter_mut() {
        row.2 += day.start_nanos();
    }
    let stored = sorted(&rows);
    let notes = stored.iter().map(|r| if r.3 % 5 == 0 { String::new() } else { format!("n{}", r.3) });
    let table = strata_store::Table::new(vec![
        ("sym".into(), strata_store::Column::from_symbols(stored.iter().map(|r| r.0.as_str()))),
        ("time".into(), column(ColumnType::Timestamp, stored.iter().map(|r| r.2).collect())),
        ("v".into(), column(ColumnType::Long, stored.iter().map(|r| r.3).collect())),
        ("note".into(), strata_store::Column::from_strings(notes)),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let how = TableWrite {
        spec: TableSpec::uniform(spec.parse().unwrap()),
        sort_by: vec![],
        attributes: vec![("sym".into(), Attribute::Parted)],
    };
    write(dir.path(), DAY, "t", &table, &how);
    let engine = Engine::open(dir.path()).unwrap();
    let (lo, hi) = (day.start_nanos() + 400_000_000, day.start_nanos() + 430_000_000);
    let at = |t: i64| format!("arrow_cast({t}, 'Timestamp(Nanosecond, None)')");
    let window = format!("SELECT i, sym, note, v FROM t WHERE time >= {} AND time < {}", at(lo), at(hi));
    let in_window = |r: &(String, u8, i64, i64)| (lo..hi).contains(&r.2);
    // Three symbols far apart in the stored order: three ranges.
    let picked = [&stored[0].0, &stored[stored.len() / 2].0, &stored[stored.len() - 1].0];
    let listed =
        format!("SELECT i, sym, note, v FROM t WHERE sym IN ('{}', '{}', '{}')", picked[0], picked[1], picked[2]);
    let in_list = |r: &(String, u8, i64, i64)| picked.contains(&&r.0);
    for (sql, keep) in [(window, &in_window as &dyn Fn(&_) -> bool), (listed, &in_list)] {
        let want: Vec<(i64, String, Option<String>, i64)> = stored
            .iter()
            .enumerate()
            .filter(|(_, r)| keep(r))
            .map(|(i, r)| (i as i64, r.0.clone(), (r.3 % 5 != 0).then(|| format!("n{}", r.3)), r.3))
            .collect();
        assert!(want.len() > 60 && want.len() < 1_000, "a few rows in several runs: {} for {sql}", want.len());
        for limit in [None, Some(37)] {
            let sql = match limit {
                Some(n) => format!("{sql} LIMIT {n}"),
                None => sql.clone(),
            };
            let out = one(&engine.sql(&sql).unwrap());
            let (i, s, n, v) = (ints(&out, "i"), texts(&out, "sym"), texts(&out, "note"), ints(&out, "v"));
            let got: Vec<(i64, String, Option<String>, i64)> = (0..out.num_rows())
                .map(|k| (i[k].unwrap(), s[k].clone().unwrap(), n[k].clone(), v[k].unwrap()))
                .collect();
            assert_eq!(got, want[..limit.unwrap_or(want.len())], "{spec}: {sql}");
        }
    }
}

/// Whether a time passes a condition.
type Passes = Box<dyn Fn(i64) -> bool>;

fn column(ty: ColumnType, values: Vec<i64>) -> strata_store::Column {
    strata_store::Column::from_values(ty, values).unwrap()
}

/// `count(*)` over what the index answers exactly (a date, a list of symbols, a
/// time range on the ordered time) is taken from the scan's row count without
/// reading a batch; a LIMIT or a test the scan cannot answer exactly still counts
/// rows. Every answer is checked by hand.
#[test]
fn counts_the_index_answers_exactly_read_no_batch() {
    let (dir, q1, q2) = setup("none");
    let engine = Engine::open(dir.path()).unwrap();
    let count = |sql: &str| -> (i64, bool) {
        let plan = engine.explain(sql).unwrap();
        let n = ints(&one(&engine.sql(sql).unwrap()), "n")[0].unwrap();
        (n, plan.contains("StrataScanExec"))
    };
    let s0 = q1.sym.iter().chain(&q2.sym).filter(|s| *s == "S0").count() as i64;
    let (lo, hi, in_window) = time_range(1_000, 2_000_000);
    let windowed = q1.time.iter().filter(|t| (lo..hi).contains(*t)).count() as i64;
    for (sql, want) in [
        ("SELECT count(*) AS n FROM quote".to_string(), (q1.sym.len() + q2.sym.len()) as i64),
        ("SELECT count(*) AS n FROM quote WHERE date = '2024-01-02'".to_string(), q1.sym.len() as i64),
        ("SELECT count(*) AS n FROM quote WHERE sym IN ('S0')".to_string(), s0),
        (format!("SELECT count(*) AS n FROM quote WHERE date = '2024-01-02' AND {in_window}"), windowed),
    ] {
        assert_eq!(count(&sql), (want, false), "{sql}");
    }
    let limited = "SELECT count(*) AS n FROM (SELECT * FROM quote LIMIT 37)";
    assert_eq!(count(limited), (37, true), "{limited}");
    let bid = "SELECT count(*) AS n FROM quote WHERE bid > 100";
    let want = q1.bid.iter().chain(&q2.bid).filter(|b| **b > 100.0).count() as i64;
    assert_eq!(count(bid), (want, true), "{bid}");
}
