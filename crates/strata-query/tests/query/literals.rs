//! Text literals compared with a symbol column are typed as the column before
//! the optimizer runs (no cast left for constant folding to evaluate), with the
//! same answers and the same column names as written.

use strata_query::Engine;

use super::data::*;

/// The plan text of `EXPLAIN VERBOSE sql` at `stage`.
fn stage(engine: &Engine, sql: &str, stage: &str) -> String {
    let out = one(&engine.sql(&format!("EXPLAIN VERBOSE {sql}")).unwrap());
    let (types, plans) = (texts(&out, "plan_type"), texts(&out, "plan"));
    let at = types.iter().position(|t| t.as_deref() == Some(stage)).unwrap_or_else(|| panic!("no stage {stage}"));
    plans[at].clone().unwrap()
}

#[test]
fn symbol_literals_are_typed_before_optimizing() {
    let dir = tempfile::tempdir().unwrap();
    let quotes = quotes(&mut Rng(5), 5_000, 20, DAY.parse().unwrap());
    write(dir.path(), DAY, "quote", &quotes.table(), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let sql = "SELECT count(*) AS n FROM quote WHERE sym IN ('S1', 'S2', 'S3', 'S4') OR sym = 'S5'";
    let before = stage(&engine, sql, "logical_plan after type_coercion");
    assert!(before.contains("CAST(Utf8(\"S1\") AS Dictionary"), "{before}");
    let after = stage(&engine, sql, "logical_plan after strata_dictionary_literals");
    assert!(!after.contains("CAST"), "{after}");
    let want = quotes.sym.iter().filter(|s| ["S1", "S2", "S3", "S4", "S5"].contains(&s.as_str())).count();
    assert_eq!(ints(&one(&engine.sql(sql).unwrap()), "n"), vec![Some(want as i64)]);

    let named = one(&engine.sql("SELECT sym = 'S1', sym IN ('S2', 'S3') FROM quote LIMIT 1").unwrap());
    let names: Vec<_> = named.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["quote.sym = Utf8(\"S1\")", "quote.sym IN Utf8(\"S2\"), Utf8(\"S3\")"]);
}
