//! SQL a BI tool writes for a long list of values, and hostile variants of it: long
//! OR/AND chains are answered (balanced before planning), arithmetic chains past
//! DuckDB's expression depth are refused with an error, and a statement with more
//! operators than any tree can safely hold is refused before it is parsed. Each
//! runs on a thread with the default 2 MiB stack, as a server's query thread
//! would call the engine: the engine brings its own stack.

use proptest::prelude::*;
use strata_query::Engine;

use super::data::*;

fn db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    write(dir.path(), DAY, "quote", &quotes(&mut rng, 20_000, 50, DAY.parse().unwrap()).table(), &sorted_write("none"));
    dir
}

/// Runs `sql` on a fresh 2 MiB thread; the count it answers, or its error.
fn count_on_small_stack(engine: &Engine, sql: String) -> Result<i64, String> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(scope, || {
                let batches = engine.sql(&sql).map_err(|e| e.to_string())?;
                Ok(ints(&one(&batches), "n")[0].expect("a count"))
            })
            .unwrap()
            .join()
            .expect("the query thread did not crash")
    })
}

fn or_chain(terms: usize) -> String {
    let terms: Vec<String> = (0..terms).map(|i| format!("sym = 'S{}'", i % 60)).collect();
    format!("SELECT count(*) AS n FROM quote WHERE {}", terms.join(" OR "))
}

#[test]
fn long_or_chains_answer_as_the_in_list_they_mean() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    let expected =
        count_on_small_stack(&engine, "SELECT count(*) AS n FROM quote WHERE sym IN ('S1', 'S2', 'S3')".into());
    let expected = expected.unwrap();
    for terms in [3, 17, 900, 100_000] {
        let names: Vec<String> = (0..terms).map(|i| format!("sym = 'S{}'", 1 + i % 3)).collect();
        let sql = format!("SELECT count(*) AS n FROM quote WHERE {}", names.join(" OR "));
        assert_eq!(count_on_small_stack(&engine, sql), Ok(expected), "{terms} terms");
    }
    // Every symbol of the table, as a BI tool lists them.
    assert_eq!(count_on_small_stack(&engine, or_chain(900)), Ok(20_000));
}

#[test]
fn long_and_chains_answer() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    let terms: Vec<String> = (0..690).map(|i| format!("bsize > {}", -i)).collect();
    let sql = format!("SELECT count(*) AS n FROM quote WHERE {}", terms.join(" AND "));
    assert_eq!(count_on_small_stack(&engine, sql), Ok(20_000));
}

#[test]
fn arithmetic_chains_past_the_expression_depth_are_refused_with_an_error() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    let sum = |n: usize| format!("SELECT count(*) AS n FROM quote WHERE {} > 0", vec!["bsize"; n].join(" + "));
    assert_eq!(count_on_small_stack(&engine, sum(900)), Ok(20_000), "within DuckDB's depth of 1000");
    let err = count_on_small_stack(&engine, sum(100_000)).unwrap_err();
    assert!(err.contains("nests") && err.contains("1000"), "{err}");
    // Deep casts are the same chain.
    let casts = format!("SELECT count(*) AS n FROM quote WHERE bsize{} > 0", "::BIGINT".repeat(5000));
    assert!(count_on_small_stack(&engine, casts).unwrap_err().contains("nests"));
    // Parentheses nest through the parser's own recursion, which has its limit.
    let nested = format!("SELECT count(*) AS n FROM quote WHERE {}bsize{} > 0", "(".repeat(5000), ")".repeat(5000));
    let err = count_on_small_stack(&engine, nested).unwrap_err();
    assert!(err.to_lowercase().contains("recursion limit"), "{err}");
}

#[test]
fn a_statement_of_too_many_operators_is_refused_before_it_is_parsed() {
    let dir = db();
    let engine = Engine::open(dir.path()).unwrap();
    let sql = format!("SELECT count(*) AS n FROM quote WHERE bsize{} > 0", " + 1".repeat(1_100_000));
    let err = count_on_small_stack(&engine, sql).unwrap_err();
    assert!(err.contains("operators"), "{err}");
    // The engine still answers.
    assert_eq!(count_on_small_stack(&engine, "SELECT count(*) AS n FROM quote".into()), Ok(20_000));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Any chain of any length up to 100k terms of one operator gives the right
    /// answer or an error, never a crash.
    #[test]
    fn generated_chains_answer_or_refuse(terms in 1usize..100_000, op in 0usize..4) {
        let dir = db();
        let engine = Engine::open(dir.path()).unwrap();
        let (join, term, expected) = match op {
            0 => (" OR ", "bsize > 0", Some(20_000)),
            1 => (" AND ", "bsize > 0", Some(20_000)),
            2 => (" + ", "bsize", None),
            _ => (" * ", "1", None),
        };
        let predicate = match op {
            0 | 1 => vec![term; terms].join(join),
            _ => format!("{} > 0", vec![term; terms].join(join)),
        };
        let answer = count_on_small_stack(&engine, format!("SELECT count(*) AS n FROM quote WHERE {predicate}"));
        match (answer, expected) {
            (Ok(n), Some(expected)) => prop_assert_eq!(n, expected),
            // The comparison above the chain counts too: around 1000 terms either way.
            (Ok(n), None) => prop_assert!(terms < 1000 && n == 20_000, "{} terms answered {}", terms, n),
            (Err(e), None) => prop_assert!(terms > 990 && e.contains("nests"), "{} terms: {}", terms, e),
            (Err(e), Some(_)) => prop_assert!(false, "an AND/OR chain of {} terms failed: {}", terms, e),
        }
    }
}
