//! Window aggregates over whole partitions (`f(x) OVER (PARTITION BY k)`) on stored
//! tables are a grouped aggregate joined back to the rows, and answer what the
//! window answers; an RDB's in-memory table, which may gain rows between two reads,
//! keeps the window.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_query::{Engine, MemoryTable};

use super::data::*;

const SQL: &str = "SELECT sym, seq, max(bid) OVER (PARTITION BY ex) AS hi, \
                   sum(bsize) OVER (PARTITION BY sym, ex) AS size, count(*) OVER (PARTITION BY sym) AS n FROM quote";

/// By `seq`: (max bid of its exchange, bsize of its symbol and exchange, rows of its symbol).
fn answered(engine: &Engine) -> BTreeMap<i64, (f64, i64, i64)> {
    let out = one(&engine.sql(SQL).unwrap());
    let rows = ints(&out, "seq").into_iter().zip(floats(&out, "hi")).zip(ints(&out, "size")).zip(ints(&out, "n"));
    rows.map(|(((seq, hi), size), n)| (seq.unwrap(), (hi.unwrap(), size.unwrap(), n.unwrap()))).collect()
}

#[test]
fn stored_tables_aggregate_once_and_join_back_memory_tables_keep_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let q = quotes(&mut Rng(7), 5_000, 30, DAY.parse().unwrap());
    write(dir.path(), DAY, "quote", &q.table(), &sorted_write("none"));

    let mut hi: BTreeMap<u8, f64> = BTreeMap::new();
    let mut size: BTreeMap<(&str, u8), i64> = BTreeMap::new();
    let mut n: BTreeMap<&str, i64> = BTreeMap::new();
    for i in 0..q.seq.len() {
        let top = hi.entry(q.ex[i]).or_insert(f64::MIN);
        *top = top.max(q.bid[i]);
        *size.entry((q.sym[i].as_str(), q.ex[i])).or_default() += q.bsize[i];
        *n.entry(q.sym[i].as_str()).or_default() += 1;
    }
    let expected: BTreeMap<i64, (f64, i64, i64)> = (0..q.seq.len())
        .map(|i| (q.seq[i], (hi[&q.ex[i]], size[&(q.sym[i].as_str(), q.ex[i])], n[q.sym[i].as_str()])))
        .collect();

    let stored = Engine::open(dir.path()).unwrap();
    let plan = stored.explain(SQL).unwrap();
    // All three windows, of three key lists, as aggregates joined back.
    assert!(plan.matches("HashJoinExec").count() == 3 && !plan.contains("WindowAggExec"), "{plan}");
    assert_eq!(answered(&stored), expected);

    let memory = Engine::open(tempfile::tempdir().unwrap().path()).unwrap();
    memory.register_memory_table("quote", Arc::new(MemoryTable::from_table(&q.table()).unwrap())).unwrap();
    let plan = memory.explain(SQL).unwrap();
    assert!(!plan.contains("HashJoinExec") && plan.contains("WindowAggExec"), "{plan}");
    assert_eq!(answered(&memory), expected);
}
