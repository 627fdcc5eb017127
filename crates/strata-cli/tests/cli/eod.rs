//! `strata eod` writes a day from its journal once however often it runs; `strata ls`
//! marks what is not served; `strata import` into an existing partition merges.

use std::path::{Path, PathBuf};

use strata_ipc::{Atom, Connection, K, Vector};
use strata_store::{ColumnType, Database, Date, TableLocation};
use strata_tick::schema::Schema;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::common::*;

const SCHEMA: &str = "trade time:timespan sym:symbol price:float size:int\nquote time:timespan sym:symbol bid:float\n";

/// A tickerplant journals `trades` trades (size = row number) and `quotes` quotes,
/// then ends the day; returns the rolled journal and its date.
fn journal_a_day(dir: &Path, trades: usize, quotes: usize) -> (PathBuf, Date) {
    let mut config = TickerplantConfig::new(Schema::parse("sym", SCHEMA).unwrap(), Some(dir.to_path_buf()));
    config.listen = "127.0.0.1:0".into();
    let tp = tickerplant::start(config).unwrap();
    let mut feed = Connection::connect(&tp.addr.to_string(), "").unwrap();
    let syms = |n: usize| K::symbols((0..n).map(|i| ["IBM", "MSFT", "AAPL"][i % 3]));
    let trade = K::List(vec![
        syms(trades),
        K::vector(Vector::Float(vec![1.5; trades])),
        K::vector(Vector::Int((0..trades as i32).collect())),
    ]);
    feed.sync(&K::List(vec![K::symbol(".u.upd"), K::symbol("trade"), trade])).unwrap();
    let quote = K::List(vec![syms(quotes), K::vector(Vector::Float((0..quotes).map(|i| i as f64).collect()))]);
    feed.sync(&K::List(vec![K::symbol(".u.upd"), K::symbol("quote"), quote])).unwrap();
    let K::Atom(Atom::Date(d)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    feed.sync(&K::string(".u.end[]")).unwrap();
    drop(feed);
    tp.stop().unwrap();
    let date = Date(d + strata_ipc::value::EPOCH_OFFSET_DAYS);
    (dir.join(format!("sym{date}")), date)
}

fn sizes(db: &Path, date: Date) -> Vec<i32> {
    let table = Database::open(db).unwrap().read_table(&TableLocation::Partition(date, "trade".into())).unwrap();
    let column = table.column("size").unwrap();
    assert_eq!(column.ty(), ColumnType::Int);
    let mut v = column.values::<i32>().to_vec();
    v.sort_unstable();
    v
}

#[test]
fn eod_writes_a_journal_once_and_ls_marks_what_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, date) = journal_a_day(&dir.path().join("journal"), 1000, 500);
    let schema = dir.path().join("sym.txt");
    std::fs::write(&schema, SCHEMA).unwrap();
    let db = dir.path().join("hdb");
    let args = |extra: &[&str]| -> Vec<String> {
        let paths = [journal.to_str().unwrap(), db.to_str().unwrap(), schema.to_str().unwrap()];
        let base = ["eod", "--journal", paths[0], "--db", paths[1], "--schema", paths[2]];
        base.iter().chain(extra).map(|a| a.to_string()).collect()
    };
    let eod = |extra: &[&str]| ok(&args(extra).iter().map(String::as_str).collect::<Vec<_>>());

    let out = eod(&[]);
    assert!(
        out.contains(&format!("wrote partition {date}")) && out.contains("trade (1000 rows), quote (500 rows)"),
        "{out}"
    );
    let again = eod(&[]);
    assert!(again.contains("already holds every table; nothing written"), "{again}");
    assert_eq!(sizes(&db, date), (0..1000).collect::<Vec<_>>(), "every row once after two runs");
    let store = Database::open(&db).unwrap();
    let sym = store.read_column(&TableLocation::Partition(date, "quote".into()), "sym").unwrap();
    assert_eq!(sym.symbol(0), "AAPL", "sorted by sym");

    // --date writes elsewhere; a partition missing a table gets only that table.
    let other = Date(date.0 + 10);
    store
        .write_table(
            &TableLocation::Partition(other, "trade".into()),
            &store.read_table(&TableLocation::Partition(date, "trade".into())).unwrap(),
            &Default::default(),
        )
        .unwrap();
    let out = eod(&["--date", &other.to_string()]);
    assert!(out.contains("quote (500 rows)") && !out.contains("trade ("), "{out}");
    assert_eq!(sizes(&db, other), (0..1000).collect::<Vec<_>>(), "trade left alone");

    let listing = ok(&["ls", "--db", db.to_str().unwrap()]);
    assert!(listing.contains("2 partitions served") && listing.contains("complete"), "{listing}");
    assert!(!listing.contains("NOT SERVED") && !listing.contains("leftover"), "{listing}");

    // What a killed writer leaves, a table outside the record, a partition without one.
    let partition = store.partition_dir(date);
    let staging = db.join(format!(".{date}.staging-999999-0"));
    std::fs::create_dir(&staging).unwrap();
    copy_dir(&partition.join("trade"), &staging.join("trade"));
    copy_dir(&partition.join("trade"), &partition.join("stray"));
    std::fs::remove_file(store.partition_dir(other).join(strata_store::PARTITION_RECORD)).unwrap();
    let listing = ok(&["ls", "--db", db.to_str().unwrap()]);
    assert!(listing.contains(&format!("leftover {}", staging.display())), "{listing}");
    assert!(listing.contains("NOT SERVED: not in the completion record"), "{listing}");
    assert!(listing.contains("no completion record"), "{listing}");
    let sql = ok(&["sql", "--db", db.to_str().unwrap(), "SELECT count(*) AS n FROM trade"]);
    assert!(sql.contains("2000"), "two partitions of trade, the staging copy not among them: {sql}");

    // A damaged record: the partition is not served, and eod refuses to guess.
    let record = partition.join(strata_store::PARTITION_RECORD);
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace("trade 1000", "trade 1001")).unwrap();
    let listing = ok(&["ls", "--db", db.to_str().unwrap()]);
    assert!(listing.contains("NOT SERVED") && listing.contains("checksum"), "{listing}");
    let err = fails(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(err.contains(&date.to_string()) && err.contains("not served"), "{err}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn import_into_an_existing_partition_adds_or_appends_as_asked_and_refuses_other_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let (db, csv) = (db.to_str().unwrap(), dir.path().join("t.csv"));
    std::fs::write(&csv, "sym,x\nB,2\nA,1\n").unwrap();
    let import = |table: &str, file: &Path, mode: &str| {
        strata(&[
            "import",
            file.to_str().unwrap(),
            "--db",
            db,
            "--table",
            table,
            "--partition",
            "2025.02.03",
            "--sort",
            "sym",
            "--mode",
            mode,
        ])
    };
    for (table, mode) in [("t", "fail"), ("u", "fail"), ("t", "append")] {
        let out = import(table, &csv, mode);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let store = Database::open(Path::new(db)).unwrap();
    let date: Date = "2025.02.03".parse().unwrap();
    assert_eq!(store.tables(Some(date)).unwrap(), ["t", "u"]);
    let t = store.read_table(&TableLocation::Partition(date, "t".into())).unwrap();
    assert_eq!(t.column("x").unwrap().values::<i64>(), [1, 2, 1, 2], "appended, each import sorted by sym");
    let err = String::from_utf8_lossy(&import("t", &csv, "fail").stderr).into_owned();
    assert!(err.contains("already holds table t (4 rows)"), "{err}");
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "sym,y\nC,3\n").unwrap();
    let out = import("t", &other, "append");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("table t: column x of the table's schema (long) is missing"),
        "{err}"
    );
    assert_eq!(store.read_table(&TableLocation::Partition(date, "t".into())).unwrap(), t, "untouched");
}
