//! End-to-end tests of `strata sql`: a database imported with `strata import`,
//! queried by the real binary in each output format, through its errors, and
//! through the interactive shell fed on standard input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::common::*;

/// Imports `csv` (a header line, then rows) as partition 2025.01.02 of `table`,
/// sorted by sym then time and parted on sym.
fn import(db: &Path, table: &str, csv: &str) {
    let file = db.with_file_name(format!("{table}.csv"));
    std::fs::write(&file, csv).unwrap();
    let (file, db) = (file.to_str().unwrap(), db.to_str().unwrap());
    let types = "time=timestamp,sym=symbol";
    ok(&[
        "import",
        file,
        "--db",
        db,
        "--table",
        table,
        "--partition",
        "2025.01.02",
        "--types",
        types,
        "--sort",
        "sym,time",
        "--parted",
        "sym",
    ]);
}

/// A database with a few quotes and trades whose joins are worked out by hand.
fn tick_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    import(
        &db,
        "quote",
        "time,sym,bid,ask\n\
         2025-01-02T10:00:00,A,10.0,10.5\n\
         2025-01-02T10:00:02,A,11.0,11.5\n\
         2025-01-02T10:00:05,A,12.0,12.5\n\
         2025-01-02T10:00:01,B,20.0,20.5\n\
         2025-01-02T10:00:03,B,21.0,21.5\n",
    );
    import(
        &db,
        "trade",
        "time,sym,price,size\n\
         2025-01-02T10:00:01,A,10.2,100\n\
         2025-01-02T10:00:04,A,11.2,200\n\
         2025-01-02T10:00:00.500,B,19.9,300\n\
         2025-01-02T10:00:03,C,5.0,400\n",
    );
    (dir, db)
}

#[test]
fn one_query_in_every_format() {
    let (dir, db) = tick_db();
    let db = db.to_str().unwrap();
    let query = "SELECT sym, count(*) AS n, max(bid) AS hi FROM quote GROUP BY sym ORDER BY sym";
    let table = ok(&["sql", "--db", db, query]);
    assert!(table.contains("| sym | n | hi   |") && table.contains("| A   | 3 | 12.0 |"), "{table}");
    assert_eq!(ok(&["sql", "--db", db, query, "--format", "csv"]), "sym,n,hi\nA,3,12.0\nB,2,21.0\n");
    let json = ok(&["sql", "--db", db, query, "--format", "json"]);
    assert_eq!(json.lines().next(), Some(r#"{"sym":"A","n":3,"hi":12.0}"#), "{json}");

    // Parquet goes to a file; read it back through `strata import` and query it.
    let parquet = dir.path().join("out.parquet");
    let out = ok(&["sql", "--db", db, query, "--format", "parquet", "--out", parquet.to_str().unwrap()]);
    assert!(out.is_empty(), "nothing on stdout: {out}");
    let again = dir.path().join("again");
    ok(&["import", parquet.to_str().unwrap(), "--db", again.to_str().unwrap(), "--table", "t"]);
    assert_eq!(
        ok(&["sql", "--db", again.to_str().unwrap(), "SELECT * FROM t", "--format", "csv"]),
        "sym,n,hi\nA,3,12.0\nB,2,21.0\n",
        "`*` lists the stored columns, not the row number"
    );
    assert_eq!(
        ok(&["sql", "--db", again.to_str().unwrap(), "SELECT *, i FROM t", "--format", "csv"]),
        "sym,n,hi,i\nA,3,12.0,0\nB,2,21.0,1\n",
        "the row number where named"
    );
    let err = fails(&["sql", "--db", db, query, "--format", "parquet"]);
    assert!(err.contains("give --out"), "{err}");

    // --out with a text format writes the file instead of stdout.
    let csv = dir.path().join("out.csv");
    ok(&["sql", "--db", db, "SELECT count(*) AS n FROM trade", "--format", "csv", "--out", csv.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "n\n4\n");
    // Without --format, --out's extension says which.
    let json = dir.path().join("out.JSON");
    ok(&["sql", "--db", db, "SELECT count(*) AS n FROM trade", "--out", json.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&json).unwrap(), "{\"n\":4}\n");
    let parquet = dir.path().join("n.parquet");
    ok(&["sql", "--db", db, "SELECT count(*) AS n FROM trade", "--out", parquet.to_str().unwrap()]);
    assert_eq!(&std::fs::read(&parquet).unwrap()[..4], b"PAR1");
    ok(&["export", "--db", db, "--table", "trade", "--partition", "2025.01.02", "--out", csv.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("time,sym,"), "export took csv from the name");
    let err = fails(&["export", "--db", db, "--table", "trade", "--partition", "2025.01.02", "--out", "trades.txt"]);
    assert!(err.contains("give --format csv or parquet"), "{err}");

    // --timing: the result on stdout as usual, the figures on stderr.
    let out = strata(&["sql", "--db", db, query, "--format", "csv", "--timing"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sym,n,hi\nA,3,12.0\nB,2,21.0\n");
    let err = String::from_utf8_lossy(&out.stderr);
    let (head, peak) = err.trim().split_once("; peak memory ").expect("a timing line");
    assert!(head.starts_with("2 rows; open ") && head.contains(" ms, query ") && head.ends_with(" ms"), "{err}");
    let mib: f64 = peak.strip_suffix(" MiB").and_then(|m| m.parse().ok()).expect("MiB");
    assert!(mib > 1.0, "{err}");
}

#[test]
fn time_joins_through_the_binary() {
    let (_dir, db) = tick_db();
    let db = db.to_str().unwrap();
    let asof = ok(&[
        "sql",
        "--db",
        db,
        "SELECT t.sym, t.size, q.bid FROM trade t ASOF LEFT JOIN quote q ON t.sym = q.sym AND t.time >= q.time \
         ORDER BY t.size",
        "--format",
        "csv",
    ]);
    assert_eq!(asof, "sym,size,bid\nA,100,10.0\nA,200,11.0\nB,300,\nC,400,\n");
    let window = ok(&[
        "sql",
        "--db",
        db,
        "SELECT t.sym, t.size, count(*) AS n, max(q.bid) AS hi FROM trade t WINDOW JOIN quote q \
         ON t.sym = q.sym AND q.time BETWEEN t.time - INTERVAL '2 seconds' AND t.time ORDER BY t.size",
        "--format",
        "csv",
    ]);
    assert_eq!(window, "sym,size,n,hi\nA,100,1,10.0\nA,200,1,11.0\nB,300,0,\nC,400,0,\n");
}

#[test]
fn errors_point_at_the_token_and_list_what_exists() {
    let (_dir, db) = tick_db();
    let db = db.to_str().unwrap();
    let err = fails(&["sql", "--db", db, "SELECT bid FROM quote WHERE bid > > 1"]);
    // The caret sits under column 35 (the second `>`), after the two-space indent.
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].contains("Line: 1, Column: 35"), "{err}");
    assert_eq!(lines[1], "  SELECT bid FROM quote WHERE bid > > 1");
    assert_eq!(lines[2], format!("  {}^", " ".repeat(34)));
    let err = fails(&["sql", "--db", db, "SELECT * FROM quotes"]);
    assert!(err.contains("tables are: quote, trade"), "{err}");
    let err = fails(&["sql", "--db", db, "SELECT bidd FROM quote"]);
    assert!(err.contains("bidd") && err.contains("ask"), "{err}");
    let err = fails(&["sql", "--db", db, "SELECT 1", "--memory-limit", "lots"]);
    assert!(err.contains("--memory-limit lots"), "{err}");
    let missing = format!("{db}-missing");
    let err = fails(&["sql", "--db", &missing, "SELECT 1"]);
    assert!(err.contains("no such database directory"), "{err}");
}

#[test]
fn a_memory_limit_fails_a_big_sort_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let mut csv = String::from("time,sym,bid,ask\n");
    for i in 0..50_000 {
        csv.push_str(&format!("2025-01-02T10:00:00.{i:09},S{},{}.5,{}.75\n", i % 20, (i * 7919) % 10_000, i % 97));
    }
    import(&db, "quote", &csv);
    let db = db.to_str().unwrap();
    let sort = "SELECT * FROM quote ORDER BY bid";
    let err = fails(&["sql", "--db", db, sort, "--memory-limit", "256K", "--format", "csv"]);
    assert!(err.to_lowercase().contains("resources exhausted"), "{err}");
    let rows = ok(&["sql", "--db", db, sort, "--memory-limit", "1G", "--format", "csv"]);
    assert_eq!(rows.lines().count(), 50_001);
}

/// Runs the shell with `input` on stdin and HOME at `home`; returns (stdout, stderr).
fn shell(db: &str, home: &Path, input: &str) -> (String, String) {
    let mut child = Command::new(binary())
        .args(["sql", "--db", db])
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn the_shell_reports_rows_time_and_memory_and_keeps_history() {
    let (dir, db) = tick_db();
    let db = db.to_str().unwrap();
    let home = dir.path();
    let (out, err) = shell(
        db,
        home,
        "\\t\nSELECT count(*) AS n\n  FROM quote;\n\\f csv\nSELECT sym FROM trade WHERE size > 250 ORDER BY sym;\n\
         SELECT nope FROM quote;\n\\q\n",
    );
    assert!(out.starts_with("quote\ntrade\n"), "\\t lists the tables: {out}");
    assert!(out.contains("| n |") && out.contains("| 5 |"), "the first result as a table: {out}");
    assert!(out.contains("sym\nB\nC\n"), "the second as CSV after \\f csv: {out}");
    let reports: Vec<&str> = err.lines().filter(|l| l.contains(" rows in ")).collect();
    assert_eq!(reports.len(), 2, "{err}");
    assert!(reports[0].starts_with("1 rows in ") && reports[0].contains(" ms, peak memory "), "{err}");
    assert!(reports[1].starts_with("2 rows in "), "{err}");
    assert!(err.contains("error: ") && err.contains("nope"), "a failed query is reported and the shell goes on: {err}");

    // An error: the parser's message, then the line it points at, caret under the spot.
    let (_, err) = shell(db, dir.path().join("other").as_path(), "SELECT sym\n  FROM quote\n  GROUP sym;\n");
    assert!(
        err.contains(
            "error: SQL error: Expected: end of statement, found: GROUP at Line: 3, Column: 3\n    GROUP sym\n    ^"
        ),
        "{err}"
    );

    // History survives the session, statements as typed; \h lists it and !N runs
    // entry N again.
    assert!(home.join(".strata_sql_history").is_file());
    let (out, err) = shell(db, home, "\\h\n!2\n!9\n");
    assert!(out.contains("   1  SELECT count(*) AS n\n        FROM quote;\n"), "{out}");
    assert!(out.contains("   2  SELECT sym FROM trade WHERE size > 250 ORDER BY sym;\n"), "{out}");
    assert!(out.contains("   3  SELECT nope FROM quote;\n"), "{out}");
    assert!(out.contains("| sym |") && out.contains("| B   |"), "!2 ran the second entry: {out}");
    assert!(err.contains("no history entry 9"), "{err}");
}

#[test]
fn long_tables_show_their_ends_and_a_closed_pipe_ends_quietly() {
    let (dir, db) = tick_db();
    let db = db.to_str().unwrap();
    // 10 000 rows: a table shows the first and last 20 and the count, as DuckDB's shell.
    let query = "SELECT n FROM generate_series(1, 10000) AS t(n)";
    let table = ok(&["sql", "--db", db, query]);
    let cells: Vec<&str> =
        table.lines().filter(|l| l.starts_with("| ")).skip(1).map(|l| l[2..].trim_end_matches([' ', '|'])).collect();
    let expected: Vec<String> =
        (1..=20).map(|n| n.to_string()).chain(["…".to_string()]).chain((9981..=10000).map(|n| n.to_string())).collect();
    assert_eq!(cells, expected, "{table}");
    assert!(table.ends_with("10000 rows (40 shown)\n"), "{table}");
    let all = ok(&["sql", "--db", db, query, "--max-rows", "0"]);
    assert_eq!(all.lines().filter(|l| l.starts_with("| ")).count(), 10_001, "--max-rows 0 shows every row");
    assert!(!all.contains("shown"));
    let csv = ok(&["sql", "--db", db, query, "--format", "csv"]);
    assert_eq!(csv.lines().count(), 10_001, "CSV holds every row whatever --max-rows says");
    let (out, _) = shell(db, dir.path(), "\\maxrows 4\nSELECT n FROM generate_series(1, 10) AS t(n);\n");
    assert!(out.contains("| 2  |\n| …  |\n| 9  |") && out.ends_with("10 rows (4 shown)\n"), "{out}");

    // A reader that stops early (`| head -1`): no error, a success status.
    let mut child = Command::new(binary())
        .args(["sql", "--db", db, "SELECT n FROM generate_series(1, 2000000) AS t(n)", "--format", "csv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 2];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(&first, b"n\n");
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_empty_result_still_shows_its_columns() {
    let (dir, db) = tick_db();
    let db = db.to_str().unwrap();
    let query = "SELECT sym, price FROM trade WHERE price < 0";
    let table = ok(&["sql", "--db", db, query]);
    assert!(table.contains("| sym | price |"), "{table}");
    assert_eq!(ok(&["sql", "--db", db, query, "--format", "csv"]), "sym,price\n");
    let (out, err) = shell(db, dir.path(), &format!("{query};\n"));
    assert!(out.contains("| sym | price |") && err.contains("0 rows in "), "{out}{err}");
}

#[test]
fn an_output_file_that_runs_out_of_room_is_named_and_removed() {
    let (dir, db) = tick_db();
    let query = "SELECT n, random() AS r FROM generate_series(1, 300000) AS t(n)";
    for name in ["out.csv", "out.json", "out.parquet"] {
        let path = dir.path().join(name);
        // A file size limit fails writes past 200 KiB with EFBIG, as a full disk fails
        // them with ENOSPC; the signal that would kill the process is ignored.
        let out = Command::new("sh")
            .args(["-c", "trap '' XFSZ; ulimit -f 400; exec \"$0\" \"$@\"", binary()])
            .args(["sql", "--db", db.to_str().unwrap(), query, "--out", path.to_str().unwrap()])
            .output()
            .unwrap();
        let err = clean_failure(&out);
        assert!(
            err.starts_with(&format!("strata: error: {}: ", path.display())) && err.contains("File too large"),
            "{err}"
        );
        assert!(!path.exists(), "{name}: the partial file is removed");
    }
}
