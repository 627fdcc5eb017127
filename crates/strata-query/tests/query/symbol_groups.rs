//! Grouping by symbols and counting distinct symbols per group on the symbols'
//! integer codes (`dictionary_groups`): the same answers as counting the strings,
//! whether the symbols come from one table's list or from dictionaries of their own.

use std::collections::{BTreeMap, BTreeSet};

use strata_query::Engine;
use strata_store::Date;

use super::data::*;

#[test]
fn distinct_symbols_per_group_are_counted_on_codes_and_equal_hand_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let mut by_day = BTreeMap::new();
    for (k, day) in [DAY, DAY2].into_iter().enumerate() {
        let q = quotes(&mut rng, 400, 9 + 5 * k as u64, day.parse::<Date>().unwrap());
        write(dir.path(), day, "quote", &q.table(), &sorted_write("none"));
        by_day.insert(day, q.sym.iter().cloned().collect::<BTreeSet<String>>());
    }
    let engine = Engine::open(dir.path()).unwrap();
    let sql = "SELECT date, count(DISTINCT sym) AS n, count(*) AS rows FROM quote GROUP BY date ORDER BY date";
    let plan = engine.explain(sql).unwrap();
    assert!(plan.contains("count(DISTINCT __strata_group_codes("), "{plan}");
    let out = one(&engine.sql(sql).unwrap());
    let want: Vec<Option<i64>> = by_day.values().map(|syms| Some(syms.len() as i64)).collect();
    assert_eq!(ints(&out, "n"), want);
    // Symbols from a dictionary of their own (mapped onto the table's codes by
    // text), one of them also in the table, and a null (not counted).
    let sql = "SELECT k, count(DISTINCT sym) AS n FROM (SELECT 1 AS k, sym FROM quote UNION ALL \
               SELECT 1, arrow_cast(column1, 'Dictionary(UInt32, Utf8)') FROM (VALUES ('S1'), ('ZZ'), (NULL))) GROUP BY k";
    let all: BTreeSet<&String> = by_day.values().flatten().collect();
    assert!(all.iter().any(|s| *s == "S1") && !all.iter().any(|s| *s == "ZZ"));
    assert_eq!(ints(&one(&engine.sql(sql).unwrap()), "n"), [Some(all.len() as i64 + 1)]);
}

#[test]
fn two_symbol_keys_group_as_one_packed_key_with_nulls_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let q = quotes(&mut Rng(11), 500, 7, DAY.parse::<Date>().unwrap());
    write(dir.path(), DAY, "quote", &q.table(), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let mut want: BTreeMap<(Option<String>, Option<String>), i64> = BTreeMap::new();
    for (sym, ex) in q.sym.iter().zip(&q.ex) {
        *want.entry((Some(sym.clone()), Some((*ex as char).to_string()))).or_default() += 1;
    }
    // Rows of a dictionary of their own, with a null in either key and in both:
    // (NULL, 'N'), ('S1', NULL) and (NULL, NULL) are three groups.
    let extra = [(Some("S1"), None), (None, Some("N")), (None, Some("N")), (None, None)];
    for (sym, ex) in extra {
        *want.entry((sym.map(String::from), ex.map(String::from))).or_default() += 1;
    }
    let sql = "SELECT sym, ex, count(*) AS n FROM (SELECT sym, ex FROM quote UNION ALL \
               SELECT arrow_cast(column1, 'Dictionary(UInt32, Utf8)'), arrow_cast(column2, 'Dictionary(UInt8, Utf8)') \
               FROM (VALUES ('S1', NULL), (NULL, 'N'), (NULL, 'N'), (NULL, NULL))) GROUP BY sym, ex";
    let plan = engine.explain(sql).unwrap();
    assert!(plan.contains("__strata_group_pair("), "{plan}");
    let out = one(&engine.sql(sql).unwrap());
    let got: BTreeMap<(Option<String>, Option<String>), i64> = texts(&out, "sym")
        .into_iter()
        .zip(texts(&out, "ex"))
        .zip(ints(&out, "n"))
        .map(|(key, n)| (key, n.unwrap()))
        .collect();
    assert_eq!(got, want);
}

/// `(sym, key) -> count` of a result with columns sym, key (any integer-like
/// type) and n.
type Counts = BTreeMap<(Option<String>, Option<i64>), i64>;

fn counts_by_sym_and(out: &arrow_array::RecordBatch, key: &str) -> Counts {
    texts(out, "sym").into_iter().zip(ints(out, key)).zip(ints(out, "n")).map(|(k, n)| (k, n.unwrap())).collect()
}

#[test]
fn a_symbol_and_a_time_or_integer_key_group_as_one_packed_key_with_nulls_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let day = DAY.parse::<Date>().unwrap();
    let q = quotes(&mut Rng(13), 600, 7, day);
    write(dir.path(), DAY, "quote", &q.table(), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    // Rows of a dictionary of their own, with a null in either key and in both,
    // and a bar before 1970 (a negative value).
    let extra =
        [(Some("S1"), None), (None, Some(0)), (None, Some(0)), (None, None), (Some("S2"), Some(-1_000_000_000))];
    let bucket = 100_000_000i64;
    let mut want = Counts::new();
    for (sym, time) in q.sym.iter().zip(&q.time) {
        *want.entry((Some(sym.clone()), Some(time.div_euclid(bucket) * bucket))).or_default() += 1;
    }
    for (sym, ns) in extra {
        *want.entry((sym.map(String::from), ns)).or_default() += 1;
    }
    let values: Vec<String> = extra
        .iter()
        .map(|(sym, ns)| {
            let sym = sym.map_or("NULL".to_string(), |s| format!("'{s}'"));
            let ns = ns.map_or("NULL".to_string(), |ns| format!("arrow_cast({ns}, 'Timestamp(Nanosecond, None)')"));
            format!("({sym}, {ns})")
        })
        .collect();
    // The symbol second: the packed key puts the codes first and must give each
    // column back in its place.
    let sql = format!(
        "SELECT sym, bar, count(*) AS n FROM (SELECT sym, time_bucket(INTERVAL '100 milliseconds', time) AS bar \
         FROM quote UNION ALL SELECT arrow_cast(column1, 'Dictionary(UInt32, Utf8)'), column2 FROM (VALUES {})) \
         GROUP BY bar, sym",
        values.join(", ")
    );
    let plan = engine.explain(&sql).unwrap();
    assert!(plan.contains("__strata_group_pair("), "{plan}");
    let out = one(&engine.sql(&sql).unwrap());
    assert_eq!(
        out.schema().field_with_name("bar").unwrap().data_type(),
        &arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None)
    );
    assert_eq!(counts_by_sym_and(&out, "bar"), want);

    // An integer key, negative values included, and a 32-bit date.
    let mut want = Counts::new();
    for (sym, size) in q.sym.iter().zip(&q.bsize) {
        *want.entry((Some(sym.clone()), Some(size - 25))).or_default() += 1;
    }
    let out = one(&engine.sql("SELECT sym, bsize - 25 AS k, count(*) AS n FROM quote GROUP BY sym, k").unwrap());
    assert_eq!(counts_by_sym_and(&out, "k"), want);
    let out = one(&engine.sql("SELECT sym, date, count(*) AS n FROM quote GROUP BY sym, date").unwrap());
    assert_eq!(out.schema().field_with_name("date").unwrap().data_type(), &arrow_schema::DataType::Date32);
    let mut want = Counts::new();
    for sym in &q.sym {
        *want.entry((Some(sym.clone()), Some(day.start_nanos().div_euclid(86_400_000_000_000)))).or_default() += 1;
    }
    assert_eq!(counts_by_sym_and(&out, "date"), want);
}
