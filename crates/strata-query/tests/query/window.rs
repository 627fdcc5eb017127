//! WINDOW JOIN against a brute-force reference on random data: time ties, keys
//! missing on one side, one and two keys, inclusive, exclusive and one-sided
//! windows, windows given by left columns that nest (so ends do not ascend) or are
//! empty, WHERE conditions on either table, stored inputs in their declared order
//! (no sort) and unsorted in-memory inputs.

use std::sync::Arc;

use strata_query::{Engine, EngineOptions, MemoryTable};
use strata_store::{Column, ColumnType, Table};

use super::data::*;

/// Nanoseconds per second: random times are whole seconds.
const SECOND: i64 = 1_000_000_000;

/// Per left row, its own window `[lo, hi]` (for the left-column form): random, so
/// windows nest and some are empty.
fn left_table(rows: &Rows, rng: &mut Rng) -> (Table, Vec<(i64, i64)>) {
    let windows: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| {
            let lo = r.2 - rng.below(6) as i64 * SECOND;
            (lo, lo + (rng.below(9) as i64 - 1) * SECOND)
        })
        .collect();
    let base = rows_table(rows);
    let mut columns: Vec<(String, Column)> = base.iter().map(|(n, c)| (n.to_string(), c.clone())).collect();
    for (name, values) in [("lo", windows.iter().map(|w| w.0).collect()), ("hi", windows.iter().map(|w| w.1).collect())]
    {
        columns.push((name.into(), Column::from_values(ColumnType::Timestamp, values).unwrap()));
    }
    (Table::new(columns).unwrap(), windows)
}

/// What the query computes per left row: count(*), sum, min, max, first by time
/// (then value), and count of exchange A rows.
type Aggregates = (i64, i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>, i64);

/// Brute force: every right row tested against every left row's window, in left
/// row order (which is value order, as the query sorts).
fn reference(left: &Rows, right: &Rows, two_keys: bool, inside: impl Fn(usize, i64) -> bool) -> Vec<Aggregates> {
    left.iter()
        .enumerate()
        .map(|(i, l)| {
            let hits: Vec<&(String, u8, i64, i64)> =
                right.iter().filter(|r| r.0 == l.0 && (!two_keys || r.1 == l.1) && inside(i, r.2)).collect();
            let values = || hits.iter().map(|r| r.3);
            let first = hits.iter().min_by_key(|r| (r.2, r.3)).map(|r| r.3);
            let sum = (!hits.is_empty()).then(|| values().sum());
            let exchange_a = hits.iter().filter(|r| r.1 == b'A').count() as i64;
            (l.3, hits.len() as i64, sum, values().min(), values().max(), first, exchange_a)
        })
        .collect()
}

fn aggregates(engine: &Engine, sql: &str) -> Vec<Aggregates> {
    let out = one(&engine.sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}")));
    let column = |name: &str| ints(&out, name);
    let (lv, n, s, lo, hi, f, na) =
        (column("lv"), column("n"), column("s"), column("lo"), column("hi"), column("f"), column("na"));
    (0..out.num_rows()).map(|i| (lv[i].unwrap(), n[i].unwrap(), s[i], lo[i], hi[i], f[i], na[i].unwrap())).collect()
}

/// Every window form, one and two keys, against the reference.
fn check(engine: &Engine, left: &Rows, windows: &[(i64, i64)], right: &Rows, case: &str) {
    let select = "SELECT t.v AS lv, count(*) AS n, sum(q.v) AS s, min(q.v) AS lo, max(q.v) AS hi, \
                  first(q.v ORDER BY q.time, q.v) AS f, count(*) FILTER (WHERE q.ex = 'A') AS na";
    type Inside = Box<dyn Fn(usize, i64) -> bool>;
    let times: Vec<i64> = left.iter().map(|l| l.2).collect();
    let forms: Vec<(&str, Inside)> = vec![
        ("q.time BETWEEN t.time - INTERVAL '3 seconds' AND t.time + INTERVAL '1 second'", {
            let times = times.clone();
            Box::new(move |i, t| (times[i] - 3 * SECOND..=times[i] + SECOND).contains(&t))
        }),
        ("t.time - INTERVAL '2 seconds' < q.time AND t.time > q.time", {
            let times = times.clone();
            Box::new(move |i, t| times[i] - 2 * SECOND < t && t < times[i])
        }),
        ("q.time <= t.time", {
            let times = times.clone();
            Box::new(move |i, t| t <= times[i])
        }),
        ("q.time BETWEEN t.lo AND t.hi", {
            let windows = windows.to_vec();
            Box::new(move |i, t| (windows[i].0..=windows[i].1).contains(&t))
        }),
    ];
    for (window, inside) in &forms {
        for two_keys in [false, true] {
            let keys = if two_keys { "t.sym = q.sym AND t.ex = q.ex" } else { "q.sym = t.sym" };
            let sql = format!("{select} FROM t WINDOW JOIN q ON {keys} AND {window} ORDER BY lv");
            let want = reference(left, right, two_keys, inside);
            assert_eq!(aggregates(engine, &sql), want, "{case}: {sql}");
        }
    }
}

#[test]
fn matches_brute_force_on_stored_tables_without_sorting() {
    for case in 0..3 {
        let mut rng = Rng(200 + case);
        let dir = tempfile::tempdir().unwrap();
        let left = random_rows(&mut rng, 300, 6, 40, SECOND);
        // Right has a symbol the left lacks and lacks one the left has (S5 vs S6).
        let right: Rows = random_rows(&mut rng, 2_000, 7, 40, SECOND).into_iter().filter(|r| r.0 != "S5").collect();
        let (table, windows) = left_table(&left, &mut rng);
        write(dir.path(), DAY, "t", &table, &sorted_write("none"));
        write(dir.path(), DAY, "q", &rows_table(&right), &sorted_write(if case == 1 { "zstd:1@12" } else { "none" }));
        // Small batches and several partitions: windows straddle batches and partitions.
        let options = EngineOptions { batch_rows: 97, threads: 3, ..Default::default() };
        let engine = Engine::open_with(dir.path(), &options).unwrap();
        check(&engine, &left, &windows, &right, &format!("stored case {case}"));
        let plan = engine
            .explain("SELECT t.v, max(q.v) FROM t WINDOW JOIN q ON t.sym = q.sym AND q.time BETWEEN t.lo AND t.hi")
            .unwrap();
        assert!(plan.contains("WindowJoinExec") && !plan.contains("SortExec"), "{plan}");
    }
}

#[test]
fn matches_brute_force_on_unsorted_memory_tables() {
    let mut rng = Rng(17);
    let left = random_rows(&mut rng, 250, 4, 30, SECOND);
    let right = random_rows(&mut rng, 1_500, 5, 30, SECOND);
    let (table, windows) = left_table(&left, &mut rng);
    let engine = Engine::new(&EngineOptions { batch_rows: 64, ..Default::default() }).unwrap();
    engine.register_memory_table("t", Arc::new(MemoryTable::from_table(&table).unwrap())).unwrap();
    engine.register_memory_table("q", Arc::new(MemoryTable::from_table(&rows_table(&right)).unwrap())).unwrap();
    check(&engine, &left, &windows, &right, "memory");
}

#[test]
fn where_filters_each_table_and_aggregates_read_both() {
    let mut rng = Rng(23);
    let dir = tempfile::tempdir().unwrap();
    let left = random_rows(&mut rng, 200, 4, 30, SECOND);
    let right = random_rows(&mut rng, 1_000, 4, 30, SECOND);
    write(dir.path(), DAY, "t", &rows_table(&left), &sorted_write("none"));
    write(dir.path(), DAY, "q", &rows_table(&right), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let sql = "SELECT t.v AS lv, t.sym, count(*) AS n, sum(q.v - t.v) AS d FROM t WINDOW JOIN q \
               ON t.sym = q.sym AND q.time BETWEEN t.time - INTERVAL '2 seconds' AND t.time \
               WHERE t.sym <> 'S1' AND q.ex = 'A' ORDER BY lv";
    let out = one(&engine.sql(sql).unwrap());
    let kept: Vec<_> = left.iter().filter(|l| l.0 != "S1").collect();
    assert_eq!(ints(&out, "lv"), kept.iter().map(|l| Some(l.3)).collect::<Vec<_>>(), "one row per kept left row");
    for (i, l) in kept.iter().enumerate() {
        let hits: Vec<_> =
            right.iter().filter(|r| r.0 == l.0 && r.1 == b'A' && (l.2 - 2 * SECOND..=l.2).contains(&r.2)).collect();
        assert_eq!(ints(&out, "n")[i], Some(hits.len() as i64));
        let d = (!hits.is_empty()).then(|| hits.iter().map(|r| r.3 - l.3).sum::<i64>());
        assert_eq!(ints(&out, "d")[i], d, "left {l:?}");
    }
    assert_eq!(
        texts(&out, "sym")[0].as_deref(),
        Some(left.iter().filter(|l| l.0 != "S1").min_by_key(|l| l.3).unwrap().0.as_str())
    );
}

#[test]
fn misuse_is_explained() {
    let mut rng = Rng(29);
    let dir = tempfile::tempdir().unwrap();
    let rows = random_rows(&mut rng, 50, 3, 10, SECOND);
    write(dir.path(), DAY, "t", &rows_table(&rows), &sorted_write("none"));
    write(dir.path(), DAY, "q", &rows_table(&rows), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let on = "ON t.sym = q.sym AND q.time BETWEEN t.time - INTERVAL '1 second' AND t.time";
    for (sql, expected) in [
        (format!("SELECT t.v, q.v FROM t WINDOW JOIN q {on}"), "right table outside an aggregate"),
        (format!("SELECT t.v FROM t WINDOW JOIN q {on}"), "needs aggregates"),
        ("SELECT t.v, count(*) FROM t WINDOW JOIN q ON t.sym = q.sym".into(), "needs a window"),
        (format!("SELECT t.sym, count(*) FROM t WINDOW JOIN q {on} GROUP BY t.sym"), "no GROUP BY"),
        (format!("SELECT count(*) FROM t WINDOW JOIN q {on} WHERE q.v > t.v"), "reads both tables"),
        (format!("SELECT count(*) FROM t WINDOW JOIN q {on} AND q.time > t.time"), "second start"),
        (format!("SELECT count(*) FROM t WINDOW JOIN q {on} AND q.v <= t.v"), "second right column"),
        (format!("SELECT count(*) FROM t WINDOW JOIN q {on} AND q.v <> t.v"), "must be =, >=, >, <= or <"),
    ] {
        let err = engine.sql(&sql).unwrap_err().to_string();
        assert!(err.contains(expected), "{sql}: {err}");
    }
    // An outer query groups the window join's rows.
    let out = one(&engine
        .sql(&format!("SELECT sym, sum(n) AS n FROM (SELECT t.sym, count(*) AS n FROM t WINDOW JOIN q {on}) w GROUP BY sym ORDER BY sym"))
        .unwrap());
    assert!(out.num_rows() >= 1);
}
