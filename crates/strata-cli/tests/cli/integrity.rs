//! Damaged databases through the real binary, each the way a user found it: a
//! flipped byte in a plain column, a sym file that lost its first line or was
//! emptied, a `.d` that lost a name or every name, a GROUP BY on a symbol read
//! through a LEFT JOIN, and a write that runs out of room. Each ends in a clear
//! error (or the right answer), never a panic or a silently wrong result; `strata
//! verify` says what is damaged, where, and what can be rebuilt.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::*;

const DAY: &str = "2025.01.02";

/// A database with partition 2025.01.02 of `trade` (`rows` rows, plain columns,
/// sorted by sym and parted on it) and the splayed table `exnames` (ex -> name).
fn trade_db(rows: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let mut csv = String::from("time,sym,ex,price,size\n");
    for i in 0..rows {
        let sym = ["IBM", "AAPL", "MSFT"][i % 3];
        let ex = ["N", "P", "X"][i % 5 % 3];
        csv.push_str(&format!("2025-01-02T14:30:{:02},{sym},{ex},{}.25,{}\n", i % 60, 100 + i % 7, 100 + i % 11));
    }
    let file = dir.path().join("trade.csv");
    std::fs::write(&file, csv).unwrap();
    let (file, db_str) = (file.to_str().unwrap(), db.to_str().unwrap());
    let types = "time=timestamp,sym=symbol,ex=char";
    ok(&[
        "import",
        file,
        "--db",
        db_str,
        "--table",
        "trade",
        "--partition",
        DAY,
        "--types",
        types,
        "--sort",
        "sym,time",
        "--parted",
        "sym",
    ]);
    let names = dir.path().join("exnames.csv");
    std::fs::write(&names, "ex,name\nN,NYSE\nP,ARCA\n").unwrap();
    ok(&["import", names.to_str().unwrap(), "--db", db_str, "--table", "exnames", "--types", "ex=char,name=symbol"]);
    (dir, db)
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_flipped_byte_in_a_plain_column_is_found_by_verify_and_by_sql_when_asked() {
    let (_dir, db) = trade_db(1000);
    let db_str = db.to_str().unwrap();
    let verified = ok(&["verify", "--db", db_str]);
    assert!(verified.contains("0 damaged"), "{verified}");
    let query = "SELECT sum(size) AS s FROM trade";
    let before = String::from_utf8(sql(&db, query).stdout).unwrap();
    let size = db.join(DAY).join("trade").join("size");
    flip(&size, 64 + 8 * 321 + 2);
    let silently = String::from_utf8(sql(&db, query).stdout).unwrap();
    assert_ne!(silently, before, "by default only the header is checked: the damage reads through");

    let out = strata(&["verify", "--db", db_str, "--partition", DAY, "--table", "trade"]);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(!out.status.success(), "{report}");
    let line = format!("damaged: {}: bytes 64..8064: values (bytes 64..8064) have checksum", size.display());
    assert!(report.contains(&line) && report.contains("cannot be rebuilt"), "{report}");
    assert!(report.contains("1 damaged"), "{report}");

    let config = db.join("strata.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    text.push_str("\n[read]\nverify_plain_checksums = true\n");
    std::fs::write(&config, text).unwrap();
    let err = clean_failure(&sql(&db, query));
    assert!(err.contains(&size.display().to_string()) && err.contains("checksum"), "{err}");
}

#[test]
fn a_damaged_sym_file_is_an_error_not_shifted_symbols_or_a_panic() {
    let (_dir, db) = trade_db(300);
    let sym = db.join("sym");
    let query = "SELECT sym, count(*) AS n FROM trade GROUP BY sym ORDER BY sym";
    let text = std::fs::read_to_string(&sym).unwrap();
    assert!(String::from_utf8(sql(&db, query).stdout).unwrap().contains("AAPL,100"));

    std::fs::write(&sym, text.split_once('\n').unwrap().1).unwrap();
    let err = clean_failure(&sql(&db, query));
    assert!(err.contains(&sym.display().to_string()) && err.contains("lines are missing"), "{err}");
    let report = String::from_utf8(strata(&["verify", "--db", db.to_str().unwrap()]).stdout).unwrap();
    assert!(report.contains(&format!("damaged: {}", sym.display())), "{report}");

    for (damage, expected) in [(String::new(), "sym file is 0 bytes"), ("x".repeat(text.len()), "expects")] {
        std::fs::write(&sym, &damage).unwrap();
        let err = clean_failure(&sql(&db, query));
        assert!(err.contains(&sym.display().to_string()) && err.contains(expected), "{err}");
    }
    // A sym file from before records cannot be checked, but emptied it must still
    // fail cleanly: the parted index's keys point past the sym list.
    std::fs::remove_file(db.join("sym.crc")).unwrap();
    std::fs::write(&sym, "").unwrap();
    let err = clean_failure(&sql(&db, query));
    assert!(err.contains("outside the sym list of 0 symbols"), "{err}");
}

#[test]
fn a_damaged_order_file_is_an_error_on_export_and_sql() {
    let (dir, db) = trade_db(200);
    let db_str = db.to_str().unwrap();
    let table = db.join(DAY).join("trade");
    let out = dir.path().join("out.csv");
    let export = ["export", "--db", db_str, "--table", "trade", "--partition", DAY, "--out", out.to_str().unwrap()];
    for (order, expected) in
        [("time\nsym\nex\nprice\n", "column file size is not listed in .d"), ("", ".d lists no column")]
    {
        std::fs::write(table.join(".d"), order).unwrap();
        for out in [strata(&export), sql(&db, "SELECT count(*) FROM trade")] {
            let err = clean_failure(&out);
            assert!(err.contains(&table.display().to_string()) && err.contains(expected), "{err}");
        }
        let report = String::from_utf8(strata(&["verify", "--db", db_str]).stdout).unwrap();
        assert!(report.contains(expected) && report.contains("can be rebuilt"), "{report}");
    }
}

#[test]
fn grouping_a_symbol_read_through_a_left_join_answers() {
    let (_dir, db) = trade_db(1000);
    let query = "SELECT e.name, count(*) AS n FROM trade q LEFT JOIN exnames e ON q.ex = e.ex \
                 GROUP BY e.name ORDER BY e.name NULLS LAST";
    let out = sql(&db, query);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // ex cycles N, P, X, N, P by row: 400 N, 400 P, 200 X (X has no name).
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "name,n\nARCA,400\nNYSE,400\n,200\n");
}

#[test]
fn a_write_that_runs_out_of_room_names_the_table_not_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let mut csv = String::from("time,price,size\n");
    for i in 0..60_000 {
        csv.push_str(&format!("{i},{}.5,{i}\n", i % 100));
    }
    let file = dir.path().join("big.csv");
    std::fs::write(&file, csv).unwrap();
    // A file size limit fails writes past 200 KiB with EFBIG, as a full disk fails
    // them with ENOSPC; the signal that would kill the process is ignored.
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 400; exec \"$0\" \"$@\"", binary()])
        .args(["import", file.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "t", "--partition", DAY])
        .output()
        .unwrap();
    let err = clean_failure(&out);
    let table = db.join(DAY).join("t");
    let named = ["time", "price", "size"]
        .iter()
        .any(|c| err.starts_with(&format!("strata: error: {}: cannot write: File too large", table.join(c).display())));
    assert!(named, "{err}");
    assert!(!db.join(DAY).exists(), "the partition was never published");
    let left: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("staging") || n.contains(".tmp."))
        .collect();
    assert!(left.is_empty(), "no staging directory is left: {left:?}");
}

#[test]
fn reading_commands_refuse_a_mistyped_database_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("hbd");
    let path = missing.to_str().unwrap();
    let out = dir.path().join("out.csv");
    let commands: [&[&str]; 5] = [
        &["ls", "--db", path],
        &["verify", "--db", path],
        &["stats", "columns", "--db", path, "--table", "trade"],
        &["export", "--db", path, "--table", "trade", "--format", "csv", "--out", out.to_str().unwrap()],
        &["sql", "--db", path, "SELECT 1"],
    ];
    for args in commands {
        let err = clean_failure(&strata(args));
        assert!(err.contains(&format!("{path}: no such database directory")), "{args:?}: {err}");
        assert!(!missing.exists(), "{args:?} created the directory");
    }
}

#[test]
fn reading_commands_refuse_a_directory_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("Downloads");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("trades.csv"), "sym,price\nA,1\n").unwrap();
    std::fs::create_dir(elsewhere.join("photos")).unwrap();
    let path = elsewhere.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["ls", "--db", path],
        &["verify", "--db", path],
        &["stats", "columns", "--db", path, "--table", "trade"],
        &["sql", "--db", path, "SELECT 1"],
    ];
    for args in commands {
        let err = clean_failure(&strata(args));
        assert!(err.contains(&format!("{path}: not a Strata database")), "{args:?}: {err}");
    }
    let created: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(created.len(), 2, "nothing written into it: {created:?}");
    // An empty directory is an empty database.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(&["sql", "--db", empty.to_str().unwrap(), "SELECT 1"]);
}

#[test]
fn demo_deletes_only_the_directory_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("hdb");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("notes.txt"), "keep me").unwrap();
    let path = theirs.to_str().unwrap();
    let err = clean_failure(&strata(&["demo", "storage", "--db", path, "--rows", "1000", "--out", path]));
    assert!(err.contains("exists and was not made by strata demo"), "{err}");
    assert_eq!(std::fs::read_to_string(theirs.join("notes.txt")).unwrap(), "keep me");
    // Its own directory it recreates, run after run; --replace takes any directory.
    let ours = dir.path().join("demo");
    let (ours_path, reports) = (ours.to_str().unwrap(), dir.path().join("reports"));
    for _ in 0..2 {
        ok(&["demo", "storage", "--db", ours_path, "--rows", "1000", "--out", reports.to_str().unwrap()]);
    }
    ok(&["demo", "storage", "--db", path, "--rows", "1000", "--out", reports.to_str().unwrap(), "--replace"]);
    assert!(!theirs.join("notes.txt").exists());
}
