//! A database of many date partitions: opening it opens none of them, a query
//! opens only the partitions its date tests keep, and answers exactly as over a
//! database that holds only those partitions.

use std::path::Path;

use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_query::Engine;
use strata_store::{Database, Date, PARTITION_RECORD, Table};

use super::data::*;

/// Days in the big database.
const DAYS: i32 = 60;

/// The `k`th day of the database (2024.01.01 + k).
fn day(k: i32) -> Date {
    Date("2024.01.01".parse::<Date>().unwrap().0 + k)
}

/// Day `k` as SQL writes a date.
fn iso(k: i32) -> String {
    let (y, m, d) = day(k).ymd();
    format!("{y:04}-{m:02}-{d:02}")
}

/// The quote table of day `k` (its own rows, so that a wrong day shows).
fn quote_day(k: i32) -> Table {
    quotes(&mut Rng(1000 + k as u64), 150, 12, day(k)).table()
}

/// Whether day `k` also has a `trade` table (every third day does).
fn has_trade(k: i32) -> bool {
    k % 3 == 0
}

/// Writes days `days` of `quote` (and `trade` where [`has_trade`]) into `root`.
fn write_days(root: &Path, days: impl IntoIterator<Item = i32>) {
    for k in days {
        let at = day(k).to_string();
        write(root, &at, "quote", &quote_day(k), &sorted_write("none"));
        if has_trade(k) {
            write(root, &at, "trade", &quote_day(k + 500), &sorted_write("lz4hc:4"));
        }
    }
}

/// A query's result as text, for comparing two databases' answers.
fn answer(engine: &Engine, sql: &str) -> String {
    let batches = engine.sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

#[test]
fn a_query_opens_only_the_partitions_it_keeps_and_answers_as_a_database_of_those_alone() {
    let all = tempfile::tempdir().unwrap();
    write_days(all.path(), 0..DAYS);
    // (date condition, the days it keeps)
    let cases: Vec<(String, Vec<i32>)> = vec![
        (format!("date = '{}'", iso(17)), vec![17]),
        (format!("date IN ('{}', '{}', '{}')", iso(3), iso(40), iso(59)), vec![3, 40, 59]),
        (format!("date BETWEEN '{}' AND '{}'", iso(10), iso(16)), (10..=16).collect()),
        (format!("date >= '{}' AND date < '{}'", iso(55), iso(70)), (55..DAYS).collect()),
        (format!("date > '{}' AND date <= '{}' AND date <> '{}'", iso(20), iso(24), iso(22)), vec![21, 23, 24]),
        (format!("date < '{}'", iso(2)), vec![0, 1]),
        (format!("date = '{}'", iso(DAYS + 5)), vec![]),
    ];
    for (condition, kept) in cases {
        let only = tempfile::tempdir().unwrap();
        write_days(only.path(), kept.iter().copied());
        for (table, held) in [("quote", kept.len()), ("trade", kept.iter().filter(|&&k| has_trade(k)).count())] {
            let sql = format!(
                "SELECT date, sym, count(*) AS n, sum(bid) AS bids, min(time) AS first, max(seq) AS last \
                 FROM {table} WHERE {condition} GROUP BY date, sym ORDER BY date, sym"
            );
            let engine = Engine::open(all.path()).unwrap();
            assert_eq!(engine.scan_stats().parts_opened, 0, "opening the database opens no partition");
            let got = answer(&engine, &sql);
            let opened = engine.scan_stats().parts_opened;
            assert_eq!(opened, held as u64, "{sql}: partitions opened");
            let explained = answer(&engine, &format!("EXPLAIN {sql}"));
            assert!(explained.contains(&format!("partitions={held}/{DAYS}")), "{sql}: {explained}");
            if held == 0 {
                assert!(!got.contains("2024-"), "{sql}: {got}");
                continue;
            }
            let alone = Engine::open(only.path()).unwrap();
            assert_eq!(got, answer(&alone, &sql), "{sql}");
            // Asked again, the engine opens nothing more.
            answer(&engine, &sql);
            assert_eq!(engine.scan_stats().parts_opened, opened, "{sql}: a partition is opened once");
        }
    }
}

#[test]
fn a_damaged_day_fails_the_queries_that_keep_it_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    write_days(dir.path(), 0..10);
    let db = Database::open(dir.path()).unwrap();
    let record = db.partition_dir(day(4)).join(PARTITION_RECORD);
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace("table quote 150", "table quote 151")).unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    let other = format!("SELECT count(*) AS n FROM quote WHERE date BETWEEN '{}' AND '{}'", iso(5), iso(9));
    assert!(answer(&engine, &other).contains("750"), "five sound days answer");
    for sql in [
        "SELECT count(*) AS n FROM quote".to_string(),
        format!("SELECT count(*) AS n FROM quote WHERE date = '{}'", iso(4)),
    ] {
        let err = engine.sql(&sql).unwrap_err().to_string();
        assert!(err.contains("partition 2024.01.05 cannot be served") && err.contains("checksum"), "{sql}: {err}");
    }
}

/// Files under `dir` the process has mapped now.
fn files_mapped_under(dir: &Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let dir = dir.display().to_string();
    let mut files: Vec<&str> = maps.lines().filter_map(|l| l.split_once(&dir)).map(|(_, f)| f).collect();
    files.sort_unstable();
    files.dedup();
    files.len()
}

#[test]
fn a_query_over_every_day_keeps_only_the_columns_it_reads_mapped() {
    let dir = tempfile::tempdir().unwrap();
    write_days(dir.path(), 0..DAYS);
    let engine = Engine::open(dir.path()).unwrap();
    let out = one(&engine.sql("SELECT max(bid) AS b FROM quote").unwrap());
    let want = (0..DAYS).flat_map(|k| quotes(&mut Rng(1000 + k as u64), 150, 12, day(k)).bid).fold(f64::MIN, f64::max);
    assert_eq!(floats(&out, "b"), vec![Some(want)]);
    // bid, plus what every opened piece keeps: its first column (the row count),
    // sym (the parted index) and time (the order check); not ex, bsize or seq.
    let mapped = files_mapped_under(dir.path());
    assert!(mapped <= DAYS as usize * 4, "{mapped} files mapped for {DAYS} days");
    assert!(mapped >= DAYS as usize, "{mapped}: bid of every day is read");
}

#[test]
fn segments_answer_as_one_root_and_a_day_in_the_wrong_segment_is_not_served() {
    let (plain, spread) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_days(plain.path(), 0..20);
    std::fs::write(spread.path().join(strata_store::SEGMENTS_FILE), "a\nb\nc\n").unwrap();
    write_days(spread.path(), 0..20);
    // A copy of a day in a segment its date does not map to: never served.
    let db = Database::open(spread.path()).unwrap();
    let home = db.partition_dir(day(5));
    let stray = spread.path().join(["a", "b", "c"].iter().find(|s| !home.starts_with(spread.path().join(s))).unwrap());
    copy_dir(&home, &stray.join(day(5).to_string()));
    let sql = "SELECT date, sym, count(*) AS n, sum(bid) AS b FROM quote GROUP BY date, sym ORDER BY date, sym";
    let engine = Engine::open(spread.path()).unwrap();
    assert_eq!(answer(&engine, sql), answer(&Engine::open(plain.path()).unwrap(), sql));
    let one = format!("SELECT count(*) AS n FROM quote WHERE date = '{}'", iso(5));
    let before = engine.scan_stats().parts_opened;
    let fresh = Engine::open(spread.path()).unwrap();
    assert!(answer(&fresh, &one).contains("150"), "the day is counted once");
    assert_eq!(fresh.scan_stats().parts_opened, 1);
    assert_eq!(before, 20, "every day opened once by the whole-table query");
}

/// Copies directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
