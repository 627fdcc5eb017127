//! The first rows of every group (`row_number()`/`rank()` filtered to the first K)
//! come from a pass over the stored order or a heap per group instead of a sort of
//! every row, and give the answers the sort gives.

use std::collections::BTreeMap;

use strata_query::{Engine, EngineOptions};

use super::data::*;

/// Two days of quotes, sorted by sym and time as stored tables are.
fn setup() -> (tempfile::TempDir, Quotes, Quotes) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(23);
    let q1 = quotes(&mut rng, 20_000, 20, DAY.parse().unwrap());
    let q2 = quotes(&mut rng, 20_000, 20, DAY2.parse().unwrap());
    write(dir.path(), DAY, "quote", &q1.table(), &sorted_write("none"));
    write(dir.path(), DAY2, "quote", &q2.table(), &sorted_write("none"));
    (dir, q1, q2)
}

/// Engines reading the default batches and batches so small every symbol's run
/// spans many of them.
fn engines(dir: &tempfile::TempDir) -> Vec<Engine> {
    let small = EngineOptions { batch_rows: 97, ..EngineOptions::default() };
    vec![Engine::open(dir.path()).unwrap(), Engine::open_with(dir.path(), &small).unwrap()]
}

/// For each symbol, its `k` smallest (or largest) values, sorted.
fn expected<T: Copy + PartialOrd>(
    syms: &[&String],
    values: &[T],
    k: usize,
    descending: bool,
) -> BTreeMap<String, Vec<T>> {
    let mut by_sym: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for (sym, value) in syms.iter().zip(values) {
        by_sym.entry((*sym).clone()).or_default().push(*value);
    }
    for values in by_sym.values_mut() {
        values.sort_by(|a, b| if descending { b.partial_cmp(a).unwrap() } else { a.partial_cmp(b).unwrap() });
        values.truncate(k);
        values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    by_sym
}

/// The answer's `value` column grouped by `sym`, each group sorted.
fn answered<T: PartialOrd>(syms: Vec<Option<String>>, values: Vec<Option<T>>) -> BTreeMap<String, Vec<T>> {
    let mut by_sym: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for (sym, value) in syms.into_iter().zip(values) {
        by_sym.entry(sym.unwrap()).or_default().push(value.unwrap());
    }
    for values in by_sym.values_mut() {
        values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    by_sym
}

fn ranked(order: &str, filter: &str, from: &str) -> String {
    format!(
        "SELECT sym, CAST(time AS BIGINT) AS t, bid FROM (SELECT sym, time, bid, \
         row_number() OVER (PARTITION BY sym ORDER BY {order}) AS r FROM {from}) WHERE {filter}"
    )
}

#[test]
fn the_ends_of_stored_runs_need_no_sort() {
    let (dir, q1, _) = setup();
    let day = format!("quote WHERE date = '{}'", DAY.replace('.', "-"));
    let syms: Vec<&String> = q1.sym.iter().collect();
    for engine in engines(&dir) {
        for (order, filter, k, descending) in
            [("time DESC", "r = 1", 1, true), ("time", "r <= 2", 2, false), ("time DESC", "3 >= r", 3, true)]
        {
            let sql = ranked(order, filter, &day);
            let plan = engine.explain(&sql).unwrap();
            assert!(plan.contains("RunEndsExec") && !plan.contains("SortExec"), "{sql}: {plan}");
            let out = one(&engine.sql(&sql).unwrap());
            let got = answered(texts(&out, "sym"), ints(&out, "t"));
            assert_eq!(got, expected(&syms, &q1.time, k, descending), "{sql}");
        }
    }
}

#[test]
fn other_orders_keep_a_heap_per_group() {
    let (dir, q1, q2) = setup();
    let day = format!("quote WHERE date = '{}'", DAY.replace('.', "-"));
    let engine = Engine::open(dir.path()).unwrap();
    // Ordered by price: no stored order helps, a heap of three per symbol does.
    let sql = ranked("bid DESC, time", "r < 4", &day);
    let plan = engine.explain(&sql).unwrap();
    assert!(plan.contains("PartitionedTopKExec") && !plan.contains("SortExec"), "{sql}: {plan}");
    let out = one(&engine.sql(&sql).unwrap());
    let syms: Vec<&String> = q1.sym.iter().collect();
    assert_eq!(answered(texts(&out, "sym"), floats(&out, "bid")), expected(&syms, &q1.bid, 3, true));

    // Two days: each is stored in order, but a symbol's rows are in two runs.
    let sql = ranked("time DESC", "r = 1", "quote");
    let out = one(&engine.sql(&sql).unwrap());
    let syms: Vec<&String> = q1.sym.iter().chain(&q2.sym).collect();
    let times: Vec<i64> = q1.time.iter().chain(&q2.time).copied().collect();
    assert_eq!(answered(texts(&out, "sym"), ints(&out, "t")), expected(&syms, &times, 1, true));
}

/// One row per group over keys in no stored order: a heap per group would hold
/// every row in a heap of its own, outside the query memory, so the rows are sorted
/// (accounted, and refused past the query memory) and the answer is the same.
#[test]
fn one_row_per_group_in_no_stored_order_sorts() {
    let (dir, q1, _) = setup();
    let sql = format!(
        "SELECT sym, CAST(time AS BIGINT) AS t, seq FROM quote WHERE date = '{}' \
         QUALIFY row_number() OVER (PARTITION BY CAST(time AS BIGINT) % 7919, sym ORDER BY seq DESC) = 1",
        DAY.replace('.', "-")
    );
    let mut expected: BTreeMap<(i64, String), (i64, i64)> = BTreeMap::new();
    for ((sym, time), seq) in q1.sym.iter().zip(&q1.time).zip(&q1.seq) {
        let kept = expected.entry((time % 7919, sym.clone())).or_insert((*time, *seq));
        if *seq > kept.1 {
            *kept = (*time, *seq);
        }
    }
    assert!(expected.len() > 10_000, "{} groups of 20,000 rows", expected.len());
    let engine = Engine::open(dir.path()).unwrap();
    let plan = engine.explain(&sql).unwrap();
    assert!(!plan.contains("PartitionedTopK") && plan.contains("SortExec"), "{sql}: {plan}");
    let out = one(&engine.sql(&sql).unwrap());
    let got: BTreeMap<(i64, String), (i64, i64)> = texts(&out, "sym")
        .into_iter()
        .zip(ints(&out, "t"))
        .zip(ints(&out, "seq"))
        .map(|((s, t), q)| ((t.unwrap() % 7919, s.unwrap()), (t.unwrap(), q.unwrap())))
        .collect();
    assert_eq!(got.len(), out.num_rows(), "one row per group");
    assert_eq!(got, expected);
}

#[test]
fn filters_the_rewrite_cannot_keep_are_left_alone() {
    let (dir, q1, _) = setup();
    let day = format!("quote WHERE date = '{}'", DAY.replace('.', "-"));
    let engine = Engine::open(dir.path()).unwrap();
    // A top zero: DataFusion's own rewrite panics on it.
    assert_eq!(rows(&engine.sql(&ranked("time DESC", "r < 1", &day)).unwrap()), 0);
    // `r = 2` is not "the first K".
    let sql = ranked("time", "r = 2", &day);
    assert!(!engine.explain(&sql).unwrap().contains("RunEndsExec"));
    assert_eq!(rows(&engine.sql(&sql).unwrap()), 20);
    // A window computed beside the rank needs every row of its group.
    let sql = format!(
        "SELECT sym, n FROM (SELECT sym, row_number() OVER (PARTITION BY sym ORDER BY time) AS r, \
         count(*) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n \
         FROM {day}) WHERE r = 1"
    );
    let out = one(&engine.sql(&sql).unwrap());
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for sym in &q1.sym {
        *counts.entry(sym.clone()).or_default() += 1;
    }
    let got: BTreeMap<String, i64> =
        texts(&out, "sym").into_iter().zip(ints(&out, "n")).map(|(s, n)| (s.unwrap(), n.unwrap())).collect();
    assert_eq!(got, counts);
}

/// Dedup by key, as DuckDB users write it: one row per (sym, time), the last by
/// `seq`. Nearly every row is its own group; the table is stored by sym and time, so
/// each group is a run: sorted run by run and streamed, never a heap per group.
#[test]
fn dedup_by_stored_keys_streams_one_group_at_a_time() {
    let (dir, q1, _) = setup();
    let sql = format!(
        "SELECT sym, CAST(time AS BIGINT) AS t, seq FROM quote WHERE date = '{}' \
         QUALIFY row_number() OVER (PARTITION BY sym, time ORDER BY seq DESC) = 1",
        DAY.replace('.', "-")
    );
    let mut expected: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for ((sym, time), seq) in q1.sym.iter().zip(&q1.time).zip(&q1.seq) {
        let kept = expected.entry((sym.clone(), *time)).or_insert(*seq);
        *kept = (*kept).max(*seq);
    }
    assert!(expected.len() > 10_000, "{} groups of 20,000 rows", expected.len());
    // The keys are a set: written against the stored order they group the same.
    let swapped = sql.replace("PARTITION BY sym, time", "PARTITION BY time, sym");
    for engine in engines(&dir) {
        for sql in [&sql, &swapped] {
            let plan = engine.explain(sql).unwrap();
            assert!(plan.contains("PartialSortExec") && plan.contains("RunEndsExec"), "{sql}: {plan}");
            assert!(!plan.contains("PartitionedTopK"), "no heap per group: {plan}");
            let out = one(&engine.sql(sql).unwrap());
            let got: BTreeMap<(String, i64), i64> = texts(&out, "sym")
                .into_iter()
                .zip(ints(&out, "t"))
                .zip(ints(&out, "seq"))
                .map(|((s, t), q)| ((s.unwrap(), t.unwrap()), q.unwrap()))
                .collect();
            assert_eq!(got.len(), out.num_rows(), "one row per group");
            assert_eq!(got, expected);
        }
    }
}
