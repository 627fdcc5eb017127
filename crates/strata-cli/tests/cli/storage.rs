//! End-to-end tests of the `strata` binary: real files, real processes.

use std::path::Path;
use std::process::Command;

use super::common::*;

fn write_trades_csv(path: &Path, rows: usize, syms: &[&str]) {
    let mut text = String::from("time,sym,price,size,cond,id\n");
    for i in 0..rows {
        let sym = syms[(i * 7 + i / 3) % syms.len()];
        text.push_str(&format!(
            "2025-01-02T14:30:{:02}.{:09},{sym},{:.2},{},{},T{i}\n",
            (i / 1000) % 60,
            (i * 1_000_003) % 1_000_000_000,
            100.0 + (i % 50) as f64 * 0.01,
            100 * (1 + i % 5),
            if i % 10 == 0 { "F" } else { "N" },
        ));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn import_ls_stats_compress_export_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("trades.csv");
    write_trades_csv(&csv, 5000, &["IBM", "AAPL", "MSFT"]);
    let db = dir.path().join("hdb");
    let db = db.to_str().unwrap();
    let out = ok(&[
        "import",
        csv.to_str().unwrap(),
        "--db",
        db,
        "--table",
        "trade",
        "--partition",
        "2025.01.02",
        "--types",
        "time=timestamp,cond=char,id=string",
        "--sort",
        "sym,time",
        "--parted",
        "sym",
        "--spec",
        "zstd:1",
    ]);
    assert!(out.contains("imported 5000 rows x 6 columns"), "{out}");

    let listing = ok(&["ls", "--db", db]);
    assert!(listing.contains("2025.01.02") && listing.contains("trade") && listing.contains("5000"), "{listing}");
    assert!(listing.contains("3 symbols"), "{listing}");

    let partition = format!("{db}/2025.01.02");
    let stats = ok(&["stats", &format!("{partition}/trade")]);
    assert!(stats.contains("trade/sym") && stats.contains("parted") && stats.contains("zstd:1"), "{stats}");

    let compressed = ok(&["compress", &partition, "--spec", "delta+zstd:3@14", "--no-fsync"]);
    assert!(compressed.contains("delta+zstd:3@14"), "{compressed}");
    let plain = ok(&["decompress", &format!("{partition}/trade/price")]);
    assert!(plain.contains("none"), "{plain}");

    let csv_out = dir.path().join("out.csv");
    let export = |out: &Path| {
        ok(&["export", "--db", db, "--table", "trade", "--partition", "2025.01.02", "--out", out.to_str().unwrap()])
    };
    export(&csv_out);
    let exported = std::fs::read_to_string(&csv_out).unwrap();
    assert_eq!(exported.lines().count(), 5001);
    assert!(exported.lines().nth(1).unwrap().contains("AAPL"), "sorted by sym: {}", exported.lines().nth(1).unwrap());

    let parquet = dir.path().join("out.parquet");
    export(&parquet);
    let again = ok(&["import", parquet.to_str().unwrap(), "--db", db, "--table", "copy"]);
    assert!(again.contains("imported 5000 rows x 6 columns"), "{again}");
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let db = db.to_str().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "time,size\n1,100\n2,200\n3,lots\n").unwrap();
    let err = fails(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--types", "size=long"]);
    assert!(err.contains("bad.csv") && err.contains("line 4") && err.contains("lots"), "{err}");

    std::fs::write(&csv, "sym,x\nB,1\nA,2\nB,3\n").unwrap();
    let err = fails(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--parted", "sym"]);
    assert!(err.contains("column sym") && err.contains("parted") && err.contains("row 2"), "{err}");

    let err = fails(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--spec", "zstd:30"]);
    assert!(err.contains("30") && err.contains("-7..22"), "{err}");
    let err = fails(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--spec", "zsdt"]);
    assert!(err.contains("'zsdt'") && err.contains("lz4hc"), "{err}");

    ok(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--spec", "zstd:1@12"]);
    let column = format!("{db}/t/x");
    let mut bytes = std::fs::read(&column).unwrap();
    bytes[70] ^= 0xff; // inside block 0
    std::fs::write(&column, &bytes).unwrap();
    let err = fails(&[
        "export",
        "--db",
        db,
        "--table",
        "t",
        "--format",
        "csv",
        "--out",
        dir.path().join("x.csv").to_str().unwrap(),
    ]);
    assert!(err.contains("t/x") && err.contains("block 0") && err.contains("checksum"), "{err}");

    let err = fails(&["export", "--db", db, "--table", "nosuch", "--format", "csv", "--out", "/dev/null"]);
    assert!(err.contains("no table nosuch") && err.contains("t"), "{err}");
}

/// Every command that reads a database names it with `--db`; the old spelling (the
/// database, and for `export` and `stats columns` the table, as plain arguments)
/// gives the same answer with a note saying what to write instead.
#[test]
fn every_reading_command_takes_db_and_the_old_spelling_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "sym,x\nA,1\nB,2\n").unwrap();
    let db = dir.path().join("hdb");
    let db = db.to_str().unwrap();
    ok(&["import", csv.to_str().unwrap(), "--db", db, "--table", "t", "--partition", "2025.01.02"]);
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (new_csv, old_csv) = (out("new.csv"), out("old.csv"));
    let pairs: [(Vec<&str>, Vec<&str>); 5] = [
        (vec!["ls", "--db", db], vec!["ls", db]),
        (vec!["verify", "--db", db], vec!["verify", db]),
        (vec!["sql", "--db", db, "SELECT sum(x) AS s FROM t"], vec!["sql", db, "SELECT sum(x) AS s FROM t"]),
        (vec!["stats", "columns", "--db", db, "--table", "t"], vec!["stats", "columns", db, "t"]),
        (
            vec!["export", "--db", db, "--table", "t", "--partition", "2025.01.02", "--out", &new_csv],
            vec!["export", db, "t", "--partition", "2025.01.02", "--out", &old_csv],
        ),
    ];
    for (new, old) in pairs {
        let (new_run, old_run) = (strata(&new), strata(&old));
        assert!(new_run.status.success(), "{new:?}: {}", String::from_utf8_lossy(&new_run.stderr));
        assert!(old_run.status.success(), "{old:?}: {}", String::from_utf8_lossy(&old_run.stderr));
        let (new_err, old_err) = (String::from_utf8_lossy(&new_run.stderr), String::from_utf8_lossy(&old_run.stderr));
        assert!(!new_err.contains("deprecated"), "{new:?}: {new_err}");
        assert!(old_err.contains("deprecated") && old_err.contains(&format!("--db {db}")), "{old:?}: {old_err}");
        if new[0] != "verify" && new[0] != "export" {
            // verify prints its time, export the file it wrote
            assert_eq!(new_run.stdout, old_run.stdout, "{new:?}");
        }
    }
    assert_eq!(std::fs::read(&new_csv).unwrap(), std::fs::read(&old_csv).unwrap());
    assert!(ok(&["sql", "--db", db, "SELECT sum(x) AS s FROM t", "--format", "csv"]) == "s\n3\n");

    let err = clean_failure(&strata(&["ls"]));
    assert!(err.contains("no database") && err.contains("strata ls --db DIR"), "{err}");
    let err = clean_failure(&strata(&["export", "--db", db, "--out", &new_csv]));
    assert!(err.contains("no table") && err.contains("--table TABLE"), "{err}");
    let err = clean_failure(&strata(&["sql", "--db", db, "SELECT 1", "SELECT 2"]));
    assert!(err.contains("unexpected argument 'SELECT 1'"), "{err}");
}

#[test]
fn two_processes_share_one_sym_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let db_str = db.to_str().unwrap();
    let a = dir.path().join("a.csv");
    let b = dir.path().join("b.csv");
    let syms_a: Vec<String> = (0..400).map(|i| format!("S{i}")).collect();
    let syms_b: Vec<String> = (200..600).map(|i| format!("S{i}")).collect();
    let rows = |syms: &[String]| -> String {
        let mut t = String::from("sym,x\n");
        for (i, s) in syms.iter().enumerate() {
            t.push_str(&format!("{s},{i}\n"));
        }
        t
    };
    std::fs::write(&a, rows(&syms_a)).unwrap();
    std::fs::write(&b, rows(&syms_b)).unwrap();
    let spawn = |file: &Path, table: &str| {
        Command::new(binary())
            .args(["import", file.to_str().unwrap(), "--db", db_str, "--table", table])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut children = Vec::new();
    for round in 0..4 {
        children.push(spawn(&a, &format!("a{round}")));
        children.push(spawn(&b, &format!("b{round}")));
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let sym = std::fs::read_to_string(db.join("sym")).unwrap();
    let mut lines: Vec<&str> = sym.lines().collect();
    assert_eq!(lines.len(), 600, "each symbol once");
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), 600);
    for round in 0..4 {
        let out = dir.path().join(format!("b{round}.csv"));
        ok(&[
            "export",
            "--db",
            db_str,
            "--table",
            &format!("b{round}"),
            "--format",
            "csv",
            "--out",
            out.to_str().unwrap(),
        ]);
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text, rows(&syms_b), "symbols survive concurrent writers");
    }
}

#[test]
fn a_writer_killed_mid_write_leaves_the_old_table_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let db_str = db.to_str().unwrap();
    let small = dir.path().join("small.csv");
    let big = dir.path().join("big.csv");
    write_trades_csv(&small, 1000, &["A", "B"]);
    write_trades_csv(&big, 300_000, &["A", "B", "C", "D"]);
    ok(&["import", small.to_str().unwrap(), "--db", db_str, "--table", "t", "--spec", "gzip:9"]);
    let reference = dir.path().join("ref.csv");
    ok(&["export", "--db", db_str, "--table", "t", "--format", "csv", "--out", reference.to_str().unwrap()]);
    let expected_old = std::fs::read_to_string(&reference).unwrap();
    for delay_ms in [5u64, 40, 120, 300] {
        let mut child = Command::new(binary())
            .args(["import", big.to_str().unwrap(), "--db", db_str, "--table", "t", "--spec", "gzip:9"])
            .args(["--mode", "replace"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        let finished = child.wait().unwrap().success();
        let out = dir.path().join("now.csv");
        ok(&["export", "--db", db_str, "--table", "t", "--format", "csv", "--out", out.to_str().unwrap()]);
        let now = std::fs::read_to_string(&out).unwrap();
        if finished {
            assert_eq!(now.lines().count(), 300_001, "the new table is whole");
        } else {
            assert!(now == expected_old || now.lines().count() == 300_001, "killed after {delay_ms} ms: a torn table");
        }
    }
    // A later write clears what killed writers left behind.
    ok(&["import", small.to_str().unwrap(), "--db", db_str, "--table", "t", "--mode", "replace"]);
    let leftovers: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".t."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
