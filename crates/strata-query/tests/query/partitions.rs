//! A query whose scans read at most one batch of rows runs on one partition (no
//! repartitioning, no partial and final aggregates); a larger one keeps the
//! engine's threads. Both answer the same.

use std::collections::BTreeMap;

use strata_query::{Engine, EngineOptions};

use super::data::*;

/// Rows per symbol of `quotes`, for the symbols `keep` accepts.
fn counts(quotes: &Quotes, keep: impl Fn(&str) -> bool) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    for sym in quotes.sym.iter().filter(|s| keep(s)) {
        *counts.entry(sym.clone()).or_insert(0) += 1;
    }
    counts
}

/// The (sym, n) rows of a `GROUP BY sym` answer.
fn answered(engine: &Engine, sql: &str) -> BTreeMap<String, i64> {
    let out = one(&engine.sql(sql).unwrap());
    texts(&out, "sym").into_iter().map(Option::unwrap).zip(ints(&out, "n").into_iter().map(Option::unwrap)).collect()
}

#[test]
fn scans_of_at_most_one_batch_run_on_one_partition() {
    let dir = tempfile::tempdir().unwrap();
    let quotes = quotes(&mut Rng(11), 20_000, 20, DAY.parse().unwrap());
    write(dir.path(), DAY, "quote", &quotes.table(), &sorted_write("none"));
    let options = EngineOptions { threads: 2, batch_rows: 4_096, ..Default::default() };
    let engine = Engine::open_with(dir.path(), &options).unwrap();

    // Two of twenty symbols: about 2,000 rows, under one batch.
    let small = "SELECT sym, count(*) AS n FROM quote WHERE sym IN ('S0', 'S1') GROUP BY sym";
    let plan = engine.explain(small).unwrap();
    assert!(!plan.contains("RepartitionExec") && !plan.contains("Partial"), "{plan}");
    assert_eq!(answered(&engine, small), counts(&quotes, |s| s == "S0" || s == "S1"));

    // Every symbol: 20,000 rows, five batches, planned for both threads.
    let large = "SELECT sym, count(*) AS n FROM quote GROUP BY sym";
    let plan = engine.explain(large).unwrap();
    assert!(plan.contains("RepartitionExec"), "{plan}");
    assert_eq!(answered(&engine, large), counts(&quotes, |_| true));

    // A self-join counts both of its scans: one symbol a side (about 2,000 rows)
    // stays on one partition; three a side (about 6,000) go parallel.
    let join = |syms: &str| {
        format!(
            "SELECT a.sym, count(*) AS n FROM quote a JOIN quote b ON a.sym = b.sym AND a.time = b.time \
             WHERE a.sym IN ({syms}) AND b.sym IN ({syms}) GROUP BY a.sym"
        )
    };
    let one_a_side = join("'S0'");
    assert!(!engine.explain(&one_a_side).unwrap().contains("RepartitionExec"), "{one_a_side}");
    let self_matches = |keep: &dyn Fn(&str) -> bool| {
        let mut pairs = BTreeMap::new();
        for (s, t) in quotes.sym.iter().zip(&quotes.time).filter(|(s, _)| keep(s)) {
            *pairs.entry((s.clone(), *t)).or_insert(0i64) += 1;
        }
        let mut n = BTreeMap::new();
        for ((s, _), k) in pairs {
            *n.entry(s).or_insert(0) += k * k;
        }
        n
    };
    assert_eq!(answered(&engine, &one_a_side), self_matches(&|s| s == "S0"));
    let three_a_side = join("'S0', 'S1', 'S2'");
    assert!(engine.explain(&three_a_side).unwrap().contains("RepartitionExec"), "{three_a_side}");
    assert_eq!(answered(&engine, &three_a_side), self_matches(&|s| ["S0", "S1", "S2"].contains(&s)));
}
