//! Bad input gets a clear error: where the SQL is wrong, what tables and columns
//! exist, which file and block are corrupt, when memory runs out.

use std::os::unix::fs::FileExt;

use strata_query::{Engine, EngineOptions};

use super::data::*;

fn db(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(11);
    write(dir.path(), DAY, "quote", &quotes(&mut rng, 50_000, 10, DAY.parse().unwrap()).table(), &sorted_write(spec));
    dir
}

#[test]
fn sql_mistakes_say_where_and_what_exists() {
    let dir = db("none");
    let engine = Engine::open(dir.path()).unwrap();
    let err = engine.sql("SELECT bid FROM quote WHERE bid > > 1").unwrap_err().to_string();
    assert!(err.contains("found: > at Line: 1, Column: 35"), "{err}");
    let err = engine.sql("SELECT bid FROM quotes").unwrap_err().to_string();
    assert!(err.contains("quotes") && err.contains("tables are: quote"), "{err}");
    let err = engine.sql("SELECT bidd FROM quote").unwrap_err().to_string();
    assert!(err.contains("bidd") && err.contains("bid") && err.contains("bsize"), "{err}");
    let err = engine.sql("SELECT Bid FROM quote").unwrap_err().to_string();
    assert!(err.contains("Bid"), "names are case-sensitive, as in q: {err}");
}

#[test]
fn a_corrupt_block_names_the_file_and_block() {
    let dir = db("zstd:1@12");
    let path = dir.path().join(DAY).join("quote").join("bid");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&[0xFF; 16], 64 + 100).unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    let err = engine.sql("SELECT sum(bid) FROM quote").unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("block 0"), "{err}");
    // Other columns still answer.
    assert_eq!(rows(&engine.sql("SELECT sum(bsize) FROM quote").unwrap()), 1);
}

#[test]
fn a_query_over_the_memory_limit_fails_cleanly() {
    let dir = db("none");
    let options = EngineOptions { memory_limit: Some(256 * 1024), ..Default::default() };
    let engine = Engine::open_with(dir.path(), &options).unwrap();
    let err = engine.sql("SELECT * FROM quote ORDER BY bid").unwrap_err().to_string();
    assert!(err.to_lowercase().contains("resources exhausted"), "{err}");
    assert_eq!(rows(&engine.sql("SELECT count(*) FROM quote").unwrap()), 1, "the engine still answers");
}

/// An answer larger than the memory limit is refused rather than gathered, the
/// error saying what to do; a part of the same mapped columns that fits is
/// counted by its rows (not by the whole files it is a slice of) and answered.
#[test]
fn an_answer_over_the_memory_limit_is_refused() {
    let dir = db("none");
    let options = EngineOptions { memory_limit: Some(1 << 20), ..Default::default() };
    let engine = Engine::open_with(dir.path(), &options).unwrap();
    let err = engine.sql("SELECT * FROM quote").unwrap_err().to_string();
    assert!(err.contains("larger than the 1 MiB") && err.contains("WHERE or LIMIT"), "{err}");
    assert_eq!(rows(&engine.sql("SELECT * FROM quote LIMIT 2000").unwrap()), 2000);
    // Without a limit the whole table comes back.
    assert_eq!(rows(&Engine::open(dir.path()).unwrap().sql("SELECT * FROM quote").unwrap()), 50_000);
}

#[test]
fn mixed_case_names_are_kept_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(12);
    write(dir.path(), DAY, "quoteNorm", &quotes(&mut rng, 100, 3, DAY.parse().unwrap()).table(), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    assert_eq!(engine.table_names(), ["quoteNorm"]);
    let out = one(&engine.sql("SELECT sym FROM quoteNorm WHERE i < 1").unwrap());
    assert_eq!(texts(&out, "sym"), [Some("S0".to_string())]);
    let err = engine.sql("SELECT sym FROM quotenorm").unwrap_err().to_string();
    assert!(err.contains("tables are: quoteNorm"), "{err}");
}

/// A statement that would run for hours (`count(*)` over 10^12 generated rows) is
/// stopped at the time limit, and one whose client went away at its cancel; the
/// engine answers the next statement either way.
#[test]
fn a_runaway_statement_stops_at_its_time_limit_or_its_cancel() {
    let dir = db("none");
    let limit = std::time::Duration::from_secs(1);
    let options = EngineOptions { query_timeout: Some(limit), ..Default::default() };
    let engine = Engine::open_with(dir.path(), &options).unwrap();
    let runaway = "SELECT count(*) FROM generate_series(1, 1000000000000)";
    let started = std::time::Instant::now();
    let err = engine.sql(runaway).unwrap_err().to_string();
    assert!(err.contains("time limit"), "{err}");
    assert!(started.elapsed() < limit * 10, "stopped near its limit, not after {:?}", started.elapsed());
    assert_eq!(rows(&engine.sql("SELECT count(*) FROM quote").unwrap()), 1);

    let engine = Engine::open(dir.path()).unwrap();
    let cancel = strata_query::Cancel::new();
    let stopper = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        stopper.cancel();
    });
    let err = engine.sql_with_schema_until(runaway, &cancel).unwrap_err().to_string();
    assert!(err.contains("cancelled"), "{err}");
    canceller.join().unwrap();
    assert_eq!(rows(&engine.sql("SELECT count(*) FROM quote").unwrap()), 1);
}

/// Strings a scalar function makes count against the query memory: `repeat('x',
/// 2e9)` is refused instead of allocating 2 GB.
#[test]
fn strings_made_by_functions_count_against_the_query_memory() {
    let dir = db("none");
    let options = EngineOptions { memory_limit: Some(64 << 20), ..Default::default() };
    let engine = Engine::open_with(dir.path(), &options).unwrap();
    for sql in ["SELECT repeat('x', 2000000000)", "SELECT lpad(sym, 1000000000) FROM quote"] {
        let err = engine.sql(sql).unwrap_err().to_string();
        assert!(err.contains("a query may hold here"), "{sql}: {err}");
    }
    assert_eq!(rows(&engine.sql("SELECT repeat('ab', 3) AS r").unwrap()), 1);
}
