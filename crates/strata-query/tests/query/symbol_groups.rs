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
