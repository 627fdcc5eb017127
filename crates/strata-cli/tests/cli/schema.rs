//! One schema per table and import modes, through the real binary, each the way a
//! user met the problem: a CSV day beside a Parquet day of other types, a second
//! import into a day, a header-only CSV, an append into compressed parted columns,
//! a kill during an append, and a database whose partitions drifted before schemas
//! were recorded. Each ends in the right table or a clear error, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::common::*;

const DAY1: &str = "2025.01.02";
const DAY2: &str = "2025.01.03";

/// `rows` trades from `first` on: time, sym (of `syms`, in runs when `sorted`),
/// price, size (= 100 + row number).
fn trades_csv(first: usize, rows: usize, syms: &[&str]) -> String {
    let mut csv = String::from("time,sym,price,size\n");
    for i in first..first + rows {
        let sym = syms[(i - first) * syms.len() / rows];
        csv.push_str(&format!("2025-01-02T14:{:02}:{:02},{sym},{}.25,{}\n", i / 60 % 60, i % 60, 100 + i % 7, 100 + i));
    }
    csv
}

/// Σ size of `trades_csv(first, rows, ..)`.
fn size_sum(first: usize, rows: usize) -> usize {
    (first..first + rows).map(|i| 100 + i).sum()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `strata import FILE --db DB --table t --partition DAY EXTRA...`.
fn import(db: &Path, file: &Path, day: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["import", file.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "t"];
    args.extend(["--partition", day]);
    args.extend(extra);
    strata(&args)
}

fn succeeded(out: std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// One value of a one-row, one-column SQL answer.
fn scalar(db: &Path, query: &str) -> String {
    let out = succeeded(sql(db, query));
    out.lines().nth(1).unwrap_or_default().to_string()
}

/// A Parquet file of `csv`'s rows with `types`, written by `strata export` from a
/// scratch database.
fn parquet_of(dir: &Path, name: &str, csv: &str, types: &str) -> PathBuf {
    let scratch = dir.join(format!("scratch-{name}"));
    let file = write(dir, &format!("{name}.csv"), csv);
    ok(&["import", file.to_str().unwrap(), "--db", scratch.to_str().unwrap(), "--table", "t", "--types", types]);
    let out = dir.join(format!("{name}.parquet"));
    ok(&[
        "export",
        "--db",
        scratch.to_str().unwrap(),
        "--table",
        "t",
        "--format",
        "parquet",
        "--out",
        out.to_str().unwrap(),
    ]);
    out
}

#[test]
fn a_day_of_other_types_is_refused_and_cast_only_when_lossless() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let day1 = write(dir.path(), "day1.csv", &trades_csv(0, 300, &["A", "B"]));
    let first = succeeded(import(&db, &day1, DAY1, &[]));
    assert!(first.contains("recorded the schema of table t"), "{first}");
    let record = std::fs::read_to_string(db.join("t.schema")).unwrap();
    assert!(record.contains("column size long") && record.contains("column price float"), "{record}");

    // The next day from Parquet with size as int: refused, naming what differs.
    let ints = parquet_of(dir.path(), "ints", &trades_csv(300, 200, &["A", "B"]), "size=int");
    let err = clean_failure(&import(&db, &ints, DAY2, &[]));
    assert!(err.contains("table t: column size is int in the new rows but long in the table's schema"), "{err}");
    assert!(err.contains("t.schema") && err.contains("--cast"), "{err}");
    assert!(!db.join(DAY2).exists(), "nothing written");
    let cast = succeeded(import(&db, &ints, DAY2, &["--cast"]));
    assert!(cast.contains("cast column size from int to long"), "{cast}");
    let query = "SELECT date, sym, sum(size) AS s FROM t GROUP BY date, sym ORDER BY date, sym";
    let answer = succeeded(sql(&db, query));
    assert_eq!(answer.lines().count(), 5, "{answer}");
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t"), size_sum(0, 500).to_string());

    // A lossy cast names the first value that would change.
    let csv = "time,sym,price,size\n2025-01-04T10:00:00,A,1.5,100\n2025-01-04T10:00:01,B,2.5,100.5\n";
    let halves = parquet_of(dir.path(), "halves", csv, "size=float");
    let err = clean_failure(&import(&db, &halves, "2025.01.04", &["--cast"]));
    assert!(err.contains("column size: cannot cast to the stored long: row 1: value 100.5 is not a whole"), "{err}");

    // A CSV into the table reads its columns as the stored types: a price that is
    // not a number is an error at its line, not a reason to store prices as symbols.
    let bad =
        write(dir.path(), "bad.csv", "time,sym,price,size\n2025-01-04T10:00:00,A,1.5,1\n2025-01-04T10:00:01,A,n/a,2\n");
    let err = clean_failure(&import(&db, &bad, "2025.01.04", &[]));
    assert!(
        err.contains("line 3: column price: value \"n/a\" is not a float") && err.contains("the type the table stores"),
        "{err}"
    );
    // Columns in another order are put in the table's order.
    let reordered = write(dir.path(), "reordered.csv", "size,price,sym,time\n7,1.5,A,2025-01-04T10:00:00\n");
    succeeded(import(&db, &reordered, "2025.01.04", &[]));
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t WHERE date = '2025-01-04'"), "7");
}

#[test]
fn import_modes_fail_append_and_replace() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let thousand = write(dir.path(), "a.csv", &trades_csv(0, 1000, &["A", "B"]));
    let seven_hundred = write(dir.path(), "b.csv", &trades_csv(1000, 700, &["A", "B"]));
    succeeded(import(&db, &thousand, DAY1, &[]));
    let count = || scalar(&db, "SELECT count(*) AS n FROM t");

    let err = clean_failure(&import(&db, &seven_hundred, DAY1, &[]));
    assert!(err.contains("already holds table t (1000 rows)") && err.contains("append"), "{err}");
    assert_eq!(count(), "1000", "a second import changes nothing by default");
    let appended = succeeded(import(&db, &seven_hundred, DAY1, &["--mode", "append"]));
    assert!(appended.contains("appended 700 rows") && appended.contains("1000 rows before, 1700 after"), "{appended}");
    assert_eq!(count(), "1700");
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t"), size_sum(0, 1700).to_string());
    let replaced = succeeded(import(&db, &seven_hundred, DAY1, &["--mode", "replace"]));
    assert!(replaced.contains("replacing its 1700 rows"), "{replaced}");
    assert_eq!(count(), "700");

    // A header-only CSV never replaces data unless asked.
    let header = write(dir.path(), "header.csv", "time,sym,price,size\n");
    clean_failure(&import(&db, &header, DAY1, &[]));
    let nothing = succeeded(import(&db, &header, DAY1, &["--mode", "append"]));
    assert!(nothing.contains("appended 0 rows") && nothing.contains("700 after"), "{nothing}");
    assert_eq!(count(), "700");
    // Into a new day of the table: an empty table of the table's types.
    succeeded(import(&db, &header, DAY2, &[]));
    assert_eq!(scalar(&db, &format!("SELECT count(*) AS n FROM t WHERE date = '{}'", "2025-01-03")), "0");
    succeeded(import(&db, &header, DAY1, &["--mode", "replace"]));
    assert_eq!(count(), "0");

    // A new table from a header alone has no types to fix its schema with.
    let loose = ["import", header.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "u"];
    let err = clean_failure(&strata(&loose));
    assert!(
        err.contains("no rows, so no types for columns time, sym, price, size") && err.contains("--types"),
        "{err}"
    );
    let typed = [&loose[..], &["--types", "time=timestamp,sym=symbol,price=float,size=long"]].concat();
    succeeded(strata(&typed));
    assert_eq!(scalar(&db, "SELECT count(*) AS n FROM u"), "0");

    // A splayed table follows the same modes.
    let splayed = ["import", thousand.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "u"];
    clean_failure(&strata(&splayed));
    succeeded(strata(&[&splayed[..], &["--mode", "append"]].concat()));
    assert_eq!(scalar(&db, "SELECT count(*) AS n FROM u"), "1000");
}

#[test]
fn an_append_to_compressed_parted_columns_verifies_and_sums_right() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let db_str = db.to_str().unwrap();
    let sorted = ["--sort", "sym,time", "--parted", "sym", "--spec", "zstd:1@12"];
    let base = write(dir.path(), "base.csv", &trades_csv(0, 5000, &["A", "B"]));
    succeeded(import(&db, &base, DAY1, &sorted));
    // New symbols after the stored ones: sym stays parted.
    let later = write(dir.path(), "later.csv", &trades_csv(5000, 3000, &["C", "D"]));
    let out = succeeded(import(&db, &later, DAY1, &[&sorted[..], &["--mode", "append"]].concat()));
    assert!(out.contains("5000 rows before, 8000 after") && !out.contains("dropped"), "{out}");
    let report = ok(&["verify", "--db", db_str]);
    assert!(report.contains("0 damaged"), "{report}");
    let stats = ok(&["stats", db.join(DAY1).join("t").to_str().unwrap()]);
    assert!(stats.contains("parted") && stats.contains("zstd:1@12"), "{stats}");
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t"), size_sum(0, 8000).to_string());
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t WHERE sym = 'C'"), size_sum(5000, 1500).to_string());

    // A symbol seen before comes again: the parted attribute no longer holds.
    let again = write(dir.path(), "again.csv", &trades_csv(8000, 1000, &["A"]));
    let out = succeeded(import(&db, &again, DAY1, &[&sorted[..], &["--mode", "append"]].concat()));
    assert!(out.contains("dropped the parted attribute of column sym") && out.contains("row 8000"), "{out}");
    assert!(ok(&["verify", "--db", db_str]).contains("0 damaged"));
    assert_eq!(
        scalar(&db, "SELECT sum(size) AS s FROM t WHERE sym = 'A'"),
        (size_sum(0, 2500) + size_sum(8000, 1000)).to_string()
    );
    assert_eq!(scalar(&db, "SELECT count(*) AS n FROM t"), "9000");
}

#[test]
fn an_append_killed_midway_leaves_the_old_table_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let base = write(dir.path(), "base.csv", &trades_csv(0, 1000, &["A", "B"]));
    let big = write(dir.path(), "big.csv", &trades_csv(1000, 200_000, &["A", "B", "C"]));
    succeeded(import(&db, &base, DAY1, &["--spec", "gzip:9"]));
    let append = || {
        Command::new(binary())
            .args(["import", big.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "t"])
            .args(["--partition", DAY1, "--mode", "append"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // One whole append, timed, so the kills below land across its run whatever the
    // machine's speed.
    let started = std::time::Instant::now();
    assert!(append().wait().unwrap().success());
    let whole = started.elapsed();
    let (mut rows, mut sum) = (201_000usize, size_sum(0, 1000) + size_sum(1000, 200_000));
    let mut killed_while_staging = 0;
    for tenth in [1u32, 3, 5, 6, 7, 8, 9] {
        let mut child = append();
        std::thread::sleep(whole * tenth / 10);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let staged =
            std::fs::read_dir(&db).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains("staging"));
        killed_while_staging += usize::from(staged);
        let now: usize = scalar(&db, "SELECT count(*) AS n FROM t").parse().unwrap();
        if now != rows {
            assert_eq!(now, rows + 200_000, "killed at {tenth}/10 of an append: a torn table");
            (rows, sum) = (now, sum + size_sum(1000, 200_000));
        }
        assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t"), sum.to_string(), "killed at {tenth}/10");
        let report = ok(&["verify", "--db", db.to_str().unwrap()]);
        assert!(report.contains("0 damaged"), "killed at {tenth}/10: {report}");
    }
    assert!(killed_while_staging > 0, "no kill landed while the partition was being built");
    // The next write clears what killed writers left.
    succeeded(import(&db, &base, DAY1, &["--mode", "append"]));
    let leftovers: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("staging") || n.contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_append_that_runs_out_of_room_names_the_table_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let base = write(dir.path(), "base.csv", &trades_csv(0, 60_000, &["A", "B"]));
    let more = write(dir.path(), "more.csv", &trades_csv(60_000, 10, &["C"]));
    succeeded(import(&db, &base, DAY1, &[]));
    // A file size limit fails writes past 200 KiB with EFBIG, as a full disk fails
    // them with ENOSPC: the staged copy of a 480 KB column cannot be made.
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 400; exec \"$0\" \"$@\"", binary()])
        .args(["import", more.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "t"])
        .args(["--partition", DAY1, "--mode", "append"])
        .output()
        .unwrap();
    let err = clean_failure(&out);
    let table = db.join(DAY1).join("t");
    let named = ["time", "price", "size"]
        .iter()
        .any(|c| err.starts_with(&format!("strata: error: {}: cannot write: File too large", table.join(c).display())));
    assert!(named, "{err}");
    assert_eq!(scalar(&db, "SELECT count(*) AS n FROM t"), "60000");
    let left = std::fs::read_dir(&db)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains("staging"));
    assert_eq!(left.count(), 0, "the staging partition is removed");
}

#[test]
fn partitions_that_drifted_before_schemas_give_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let day1 = write(dir.path(), "day1.csv", &trades_csv(0, 300, &["A", "B"]));
    succeeded(import(&db, &day1, DAY1, &[]));
    // As a database written before schema records: the same day built elsewhere
    // with size as int (the sym file copied, so symbols agree), moved in, and no
    // record.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(db.join("sym"), other.join("sym")).unwrap();
    let ints = parquet_of(dir.path(), "ints", &trades_csv(300, 200, &["A", "B"]), "size=int");
    succeeded(import(&other, &ints, DAY2, &[]));
    std::fs::rename(other.join(DAY2), db.join(DAY2)).unwrap();
    let out = strata(&["verify", "--db", db.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout);
    let part = db.join(DAY2).join("t");
    let finding =
        format!("damaged: {}: column size is stored as int here but as long in the table's schema", part.display());
    assert!(!out.status.success() && report.contains(&finding) && report.contains("--mode replace --cast"), "{report}");
    std::fs::remove_file(db.join("t.schema")).unwrap();

    // Without a record, readers take the table's types from the newest partition,
    // as writers do (`Database::table_schema`): the older day is the one named.
    let first = db.join(DAY1).join("t");
    let drift = format!("{}: column size is stored as long here but as int in {}", first.display(), part.display());
    let err = clean_failure(&sql(&db, "SELECT date, sym, sum(size) FROM t GROUP BY date, sym"));
    assert!(err.contains(&drift), "{err}");
    // Every query reading both days says so (the scan learns each piece's
    // attributes from all its columns); other tables of the database still answer.
    let err = clean_failure(&sql(&db, "SELECT count(*) AS n FROM t"));
    assert!(err.contains(&drift), "{err}");
    ok(&["import", day1.to_str().unwrap(), "--db", db.to_str().unwrap(), "--table", "other"]);
    assert_eq!(scalar(&db, "SELECT count(*) AS n FROM other"), "300");
    // Replacing the drifted day converts it to the types of the other days (the
    // schema is taken from the newest partition but the one replaced) and records
    // the schema.
    let repaired = succeeded(import(&db, &ints, DAY2, &["--mode", "replace", "--cast"]));
    assert!(
        repaired.contains("cast column size from int to long") && repaired.contains("recorded the schema"),
        "{repaired}"
    );
    assert_eq!(scalar(&db, "SELECT sum(size) AS s FROM t"), size_sum(0, 500).to_string());
    assert!(std::fs::read_to_string(db.join("t.schema")).unwrap().contains("column size long"));

    // A partition missing a column: a clear error too.
    let narrow = dir.path().join("narrow");
    std::fs::create_dir(&narrow).unwrap();
    std::fs::copy(db.join("sym"), narrow.join("sym")).unwrap();
    let few = write(dir.path(), "few.csv", "time,sym,price\n2025-01-05T10:00:00,A,1.5\n");
    succeeded(import(&narrow, &few, "2025.01.05", &[]));
    std::fs::rename(narrow.join("2025.01.05"), db.join("2025.01.05")).unwrap();
    let err = clean_failure(&sql(&db, "SELECT sum(size) FROM t"));
    assert!(err.contains("2025.01.05") && err.contains("every partition of a table needs the same columns"), "{err}");
}

#[test]
fn ragged_rows_bad_bytes_and_far_years_are_named_by_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let cases: [(&[u8], &str); 4] = [
        (
            b"time,sym,price\n2025-01-02T10:00:00,A,1.5\n2025-01-02T10:00:01,B\n",
            "line 3: 2 fields where the header has 3: no value for column price",
        ),
        (
            b"time,sym,price\n2025-01-02T10:00:00,A,1.5,9\n",
            "line 2: 4 fields where the header has 3: a field past the last column, price",
        ),
        (
            b"time,sym,price\n2025-01-02T10:00:00,A,1.5\n2025-01-02T10:00:01,\xff\xfe,1.5\n",
            "line 3: column sym: the text is not UTF-8",
        ),
        (
            b"time,sym,price\n1600-01-02T10:00:00,A,1.5\n",
            "line 2: column time: value \"1600-01-02T10:00:00\" is out of range for timestamp (1677-09-21..2262-04-11)",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("case{i}.csv"));
        std::fs::write(&file, text).unwrap();
        let args = [
            "import",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--table",
            "t",
            "--types",
            "time=timestamp",
        ];
        let err = clean_failure(&strata(&args));
        assert!(err.contains(&format!("{}: {expected}", file.display())), "case {i}: {err}");
    }
}
