//! ASOF JOIN against a brute-force reference on random data: ties on time, keys
//! missing on one side, one and two keys, inner and left, backward and forward,
//! stored (declared order: no sort) and in-memory (unsorted) inputs.

use std::sync::Arc;

use strata_query::{Engine, EngineOptions, MemoryTable};

use super::data::*;

/// The reference: for each left row, scan every right row. `right` is in the order
/// the engine sees it (ties go to the last row for backward, the first for forward).
/// A null time (`NULL_TIME`) on either side matches nothing.
fn reference(left: &Rows, right: &Rows, two_keys: bool, op: &str) -> Vec<(i64, Option<i64>)> {
    left.iter()
        .map(|l| {
            let mut best: Option<&(String, u8, i64, i64)> = None;
            for r in right {
                if r.0 != l.0 || (two_keys && r.1 != l.1) || l.2 == NULL_TIME || r.2 == NULL_TIME {
                    continue;
                }
                let ok = match op {
                    ">=" => l.2 >= r.2,
                    ">" => l.2 > r.2,
                    "<=" => l.2 <= r.2,
                    _ => l.2 < r.2,
                };
                if !ok {
                    continue;
                }
                best = match best {
                    None => Some(r),
                    Some(b) if op.starts_with('>') && r.2 >= b.2 => Some(r),
                    Some(b) if op.starts_with('<') && r.2 < b.2 => Some(r),
                    keep => keep,
                };
            }
            (l.3, best.map(|r| r.3))
        })
        .collect()
}

fn check(engine: &Engine, left: &Rows, right_seen: &Rows, rng_case: usize) {
    for two_keys in [false, true] {
        for op in [">=", ">", "<=", "<"] {
            for join in ["ASOF JOIN", "ASOF LEFT JOIN"] {
                let keys = if two_keys { "t.sym = q.sym AND t.ex = q.ex" } else { "t.sym = q.sym" };
                let sql = format!(
                    "SELECT t.v AS lv, q.v AS rv FROM t {join} q ON {keys} AND t.time {op} q.time ORDER BY t.v"
                );
                let got = one(&engine.sql(&sql).unwrap());
                let got: Vec<(i64, Option<i64>)> =
                    ints(&got, "lv").into_iter().map(Option::unwrap).zip(ints(&got, "rv")).collect();
                let mut want = reference(left, right_seen, two_keys, op);
                if join == "ASOF JOIN" {
                    want.retain(|(_, r)| r.is_some());
                }
                want.sort();
                assert_eq!(got, want, "case {rng_case}: {sql}");
            }
        }
    }
}

#[test]
fn matches_brute_force_on_stored_tables_without_sorting() {
    for case in 0..4 {
        let mut rng = Rng(100 + case as u64);
        let dir = tempfile::tempdir().unwrap();
        let left = random_rows(&mut rng, 300, 6, 50, 1);
        // Right has a symbol the left lacks and lacks one the left has (S5 vs S6).
        let right = random_rows(&mut rng, 2_000, 7, 50, 1).into_iter().filter(|r| r.0 != "S5").collect::<Rows>();
        write(dir.path(), DAY, "t", &rows_table(&left), &sorted_write("none"));
        write(
            dir.path(),
            DAY,
            "q",
            &rows_table(&right),
            &sorted_write(if case % 2 == 0 { "none" } else { "zstd:1@12" }),
        );
        let options = EngineOptions { batch_rows: 97, ..Default::default() };
        let engine = Engine::open_with(dir.path(), &options).unwrap();
        // The engine sees q in stored order: sorted by (sym, time), stable.
        check(&engine, &left, &sorted(&right), case);
        let plan = engine
            .explain("SELECT * FROM t ASOF JOIN q ON t.sym = q.sym AND t.ex = q.ex AND t.time >= q.time")
            .unwrap();
        assert!(plan.contains("AsofJoinExec") && !plan.contains("SortExec"), "{plan}");
    }
}

/// A stored timestamp of `i64::MIN` is kdb+'s null time.
const NULL_TIME: i64 = i64::MIN;

#[test]
fn null_times_on_either_side_match_nothing() {
    for case in 0..2 {
        let mut rng = Rng(300 + case as u64);
        let dir = tempfile::tempdir().unwrap();
        // About one row in eight of each side has a null time.
        let mut with_null_times = |rows: Rows| -> Rows {
            rows.into_iter()
                .map(|mut r| {
                    if rng.below(8) == 0 {
                        r.2 = NULL_TIME;
                    }
                    r
                })
                .collect()
        };
        let left = with_null_times(random_rows(&mut Rng(400 + case as u64), 300, 5, 40, 1));
        let right = with_null_times(random_rows(&mut Rng(500 + case as u64), 1_500, 5, 40, 1));
        write(dir.path(), DAY, "t", &rows_table(&left), &sorted_write("none"));
        write(dir.path(), DAY, "q", &rows_table(&right), &sorted_write("none"));
        let options = EngineOptions { batch_rows: 61, ..Default::default() };
        let engine = Engine::open_with(dir.path(), &options).unwrap();
        check(&engine, &left, &sorted(&right), case);
    }
}

#[test]
fn matches_brute_force_on_unsorted_memory_tables() {
    let mut rng = Rng(5);
    let left = random_rows(&mut rng, 200, 4, 30, 1);
    let right = random_rows(&mut rng, 1_000, 5, 30, 1);
    let engine = Engine::new(&EngineOptions { batch_rows: 64, ..Default::default() }).unwrap();
    engine.register_memory_table("t", Arc::new(MemoryTable::from_table(&rows_table(&left)).unwrap())).unwrap();
    // Unsorted input is sorted by (sym, time) first; DataFusion's sort is not
    // stable, so compare on data without time ties within a symbol.
    let mut seen = std::collections::HashSet::new();
    let right_one_key: Rows = right.iter().filter(|r| seen.insert((r.0.clone(), r.2))).cloned().collect();
    engine.register_memory_table("q", Arc::new(MemoryTable::from_table(&rows_table(&right_one_key)).unwrap())).unwrap();
    check(&engine, &left, &sorted(&right_one_key), 0);
    let plan = engine.explain("SELECT * FROM t ASOF JOIN q ON t.sym = q.sym AND t.time >= q.time").unwrap();
    assert!(plan.contains("SortExec"), "unsorted input is sorted: {plan}");
}

#[test]
fn snowflake_form_and_where_clauses() {
    let mut rng = Rng(9);
    let dir = tempfile::tempdir().unwrap();
    let left = random_rows(&mut rng, 100, 3, 20, 1);
    let right = random_rows(&mut rng, 500, 3, 20, 1);
    write(dir.path(), DAY, "t", &rows_table(&left), &sorted_write("none"));
    write(dir.path(), DAY, "q", &rows_table(&right), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let a = one(&engine
        .sql(
            "SELECT t.v, q.v AS qv FROM t ASOF JOIN q MATCH_CONDITION (t.time >= q.time) ON t.sym = q.sym ORDER BY t.v",
        )
        .unwrap());
    let b = one(&engine
        .sql("SELECT t.v, q.v AS qv FROM t ASOF LEFT JOIN q ON q.sym = t.sym AND q.time <= t.time ORDER BY t.v")
        .unwrap());
    assert_eq!(ints(&a, "qv"), ints(&b, "qv"), "Snowflake's form is a left as-of join");
    assert_eq!(a.num_rows(), 100);
    let c = one(&engine.sql("SELECT count(*) AS n FROM (SELECT * FROM t WHERE sym = 'S1') x ASOF JOIN q ON x.sym = q.sym AND x.time >= q.time WHERE q.v > 100").unwrap());
    let want = reference(&left.iter().filter(|r| r.0 == "S1").cloned().collect(), &sorted(&right), false, ">=")
        .iter()
        .filter(|(_, r)| r.is_some_and(|v| v > 100))
        .count();
    assert_eq!(ints(&c, "n")[0], Some(want as i64));
    // A left side its filter empties joins nothing (it used to panic in Arrow on the
    // empty symbol dictionary).
    let none = engine.sql("SELECT t.v, q.v AS qv FROM (SELECT * FROM t WHERE v > 1000000000) t ASOF JOIN q ON t.sym = q.sym AND t.time >= q.time").unwrap();
    assert_eq!(none.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    let err = engine.sql("SELECT * FROM t ASOF JOIN q ON t.sym = q.sym").unwrap_err().to_string();
    assert!(err.contains("needs one inequality"), "{err}");
    let err = engine.sql("SELECT * FROM t ASOF JOIN q ON t.time >= q.time AND t.v <> q.v").unwrap_err().to_string();
    assert!(err.contains("must be =, >=, >, <= or <"), "{err}");
}
