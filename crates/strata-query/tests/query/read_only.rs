//! An engine is read-only unless told otherwise: statements that would read or
//! write the machine's files or change the catalog are refused on every entry point
//! (`sql`, `sql_with_schema`, `dataframe`, `schema_of`, `explain`), and leave no
//! trace: no file written, no table dropped or replaced.

use strata_query::{Engine, EngineOptions};

use super::data::*;

fn db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    write(dir.path(), DAY, "quote", &quotes(&mut rng, 1_000, 4, DAY.parse().unwrap()).table(), &sorted_write("none"));
    dir
}

/// Statements a network client must not run, each with a word its refusal names.
fn writes(dir: &std::path::Path) -> Vec<(String, &'static str)> {
    let target = dir.join("written.csv");
    vec![
        ("CREATE EXTERNAL TABLE x (line VARCHAR) STORED AS CSV LOCATION '/etc/passwd'".into(), "DDL"),
        (format!("COPY (SELECT 'x' AS x) TO '{}' STORED AS CSV", target.display()), "COPY"),
        ("DROP TABLE quote".into(), "DDL"),
        ("CREATE VIEW quote2 AS SELECT 999.0 AS bid".into(), "DDL"),
        ("CREATE TABLE t AS SELECT 1 AS x".into(), "DDL"),
        ("INSERT INTO quote SELECT * FROM quote".into(), "DML"),
        ("SET datafusion.execution.batch_size = 1".into(), "Statement"),
        (format!("EXPLAIN COPY (SELECT 1 AS x) TO '{}' STORED AS CSV", target.display()), "COPY"),
    ]
}

#[test]
fn writes_and_file_access_are_refused_on_every_entry_point() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    let before = engine.sql("SELECT count(*) AS n, sum(bid) AS s FROM quote").unwrap();
    for (statement, names) in writes(dir.path()) {
        let errors = [
            engine.sql(&statement).map(|_| ()).unwrap_err().to_string(),
            engine.sql_with_schema(&statement).map(|_| ()).unwrap_err().to_string(),
            engine.schema_of(&statement).map(|_| ()).unwrap_err().to_string(),
            engine.explain(&statement).map(|_| ()).unwrap_err().to_string(),
        ];
        for err in errors {
            assert!(
                err.starts_with("refused: ") && err.contains(names) && err.contains("read-only"),
                "{statement}: {err}"
            );
        }
    }
    assert!(!dir.path().join("written.csv").exists(), "COPY wrote nothing");
    assert_eq!(engine.table_names(), ["quote"], "the catalog is unchanged");
    assert_eq!(engine.sql("SELECT count(*) AS n, sum(bid) AS s FROM quote").unwrap(), before);
    // A path as a table name is not a way to a file either.
    let err = engine.sql("SELECT * FROM '/etc/passwd'").unwrap_err().to_string();
    assert!(err.contains("/etc/passwd") && err.contains("not found"), "{err}");
}

#[test]
fn queries_of_every_kind_still_run() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    for query in [
        "SELECT count(*) FROM quote",
        "WITH q AS (SELECT bid FROM quote) SELECT max(bid) FROM q",
        "EXPLAIN SELECT bid FROM quote",
        "SHOW TABLES",
        "DESCRIBE quote",
        "VALUES (1, 2)",
        "SELECT * FROM generate_series(1, 3)",
    ] {
        assert!(engine.sql(query).is_ok(), "{query}: {:?}", engine.sql(query).err());
    }
}

#[test]
fn allow_write_runs_ddl_once() {
    let dir = db();
    let engine = Engine::open_with(dir.path(), &EngineOptions { allow_write: true, ..Default::default() }).unwrap();
    // Planned once: the DROP that ran is not then reported as a missing table.
    let (schema, _) = engine.sql_with_schema("DROP TABLE quote").unwrap();
    assert!(schema.fields().is_empty(), "{schema:?}");
    assert!(engine.table_names().is_empty());
    engine.sql("CREATE VIEW v AS SELECT 1 AS x").unwrap();
    assert_eq!(engine.table_names(), ["v"]);
}
