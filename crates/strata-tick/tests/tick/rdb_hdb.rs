//! An RDB replays the journal, follows the tickerplant, answers queries, writes the
//! day at end of day, and an HDB reloads and serves it.

use std::collections::HashSet;

use strata_ipc::{K, Vector};
use strata_store::{Attribute, Database, TableLocation};
use strata_tick::rdb::{self, RdbConfig};

use super::common::*;

#[test]
fn rdb_replays_follows_and_writes_the_day_for_the_hdb() {
    let journal = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(journal.path()));
    let mut feed = connect(tp.addr);
    let syms = ["MSFT", "IBM", "AAPL"];
    for i in 0..9 {
        feed.sync(&upd("trade", trade_row(syms[i % 3], 100.0 + i as f64, i as i32))).unwrap();
    }
    let hdb = start_hdb(db.path());
    let rdb = rdb::start(RdbConfig { hdbs: vec![hdb.addr.to_string()], ..rdb_config(tp.addr, db.path()) }).unwrap();
    assert_eq!(rdb.state.read().unwrap().replayed, 9, "replayed the journal");
    for i in 9..12 {
        feed.sync(&upd("trade", trade_row(syms[i % 3], 100.0 + i as f64, i as i32))).unwrap();
    }
    let mut query = connect(rdb.addr.unwrap());
    eventually("the RDB to hold 12 rows", || {
        query.sync(&K::string("count trade")).unwrap() == K::Atom(strata_ipc::Atom::Long(12))
    });
    let K::Table(today) = query.sync(&K::string("select from trade")).unwrap() else { panic!() };
    let Some(K::Vector(Vector::Int(sizes), _)) = today.column("size") else { panic!() };
    assert_eq!(*sizes, (0..12).collect::<Vec<i32>>(), "replayed rows then published rows, in order");
    let err = query.sync(&K::string("count nosuch")).unwrap_err().to_string();
    assert!(err.contains("nosuch"), "{err}");

    let K::Atom(strata_ipc::Atom::Date(d)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    feed.sync(&K::string(".u.end[]")).unwrap();
    let mut hdb_query = connect(hdb.addr);
    eventually("the HDB to serve the day", || {
        hdb_query.sync(&K::string("count trade")).is_ok_and(|c| c == K::Atom(strata_ipc::Atom::Long(12)))
    });
    assert_eq!(query.sync(&K::string("count trade")).unwrap(), K::Atom(strata_ipc::Atom::Long(0)), "RDB emptied");

    // On disk: sorted by sym then time, parted on sym.
    let date = strata_store::Date(d + strata_ipc::value::EPOCH_OFFSET_DAYS);
    let store = Database::open(db.path()).unwrap();
    let location = TableLocation::Partition(date, "trade".into());
    let table = store.read_table(&location).unwrap();
    let sym = table.column("sym").unwrap();
    let order: Vec<&str> = (0..12).map(|i| sym.symbol(i)).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    let stats = store.open_table(&location).unwrap().stats().unwrap();
    assert_eq!(stats.iter().find(|s| s.name == "sym").unwrap().attribute, Attribute::Parted);
    assert!(store.tables(Some(date)).unwrap().contains(&"quote".to_string()), "empty tables are written too");

    let K::Table(history) = hdb_query.sync(&K::string("trade")).unwrap() else { panic!() };
    assert_eq!(history.names()[0], "date");
    assert_eq!(history.column("date"), Some(&K::vector(Vector::Date(vec![d; 12]))));
    let Some(K::Vector(Vector::Int(sizes), _)) = history.column("size") else { panic!() };
    assert_eq!(sizes.iter().copied().collect::<HashSet<i32>>(), (0..12).collect());
}

/// The spec trade's columns were written with on `date`, by column name.
fn trade_specs(db: &std::path::Path, date: strata_store::Date) -> Vec<(String, String)> {
    let store = Database::open(db).unwrap();
    let stats = store.open_table(&TableLocation::Partition(date, "trade".into())).unwrap().stats().unwrap();
    stats.into_iter().map(|s| (s.name, s.spec.to_string())).collect()
}

#[test]
fn end_of_day_writes_as_the_table_spec_says_read_again_each_day() {
    let (journal, db, specs) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tp = start_tp(Some(journal.path()));

    // One file for every table: quote has no price, trade's price cannot take delta.
    let bad = specs.path().join("bad.toml");
    std::fs::write(&bad, "[columns]\nprice = \"delta+zstd:1\"\n").unwrap();
    let refused = rdb::start(RdbConfig { table_spec: Some(bad.clone()), ..rdb_config(tp.addr, db.path()) });
    let err = refused.err().expect("a spec that cannot apply is refused at start").to_string();
    assert!(err.contains("bad.toml") && err.contains("table trade") && err.contains("column price"), "{err}");

    // A directory of recommendations, one file per table; quote has none.
    let trade_spec = specs.path().join("trade.toml");
    std::fs::write(&trade_spec, "default = \"zstd:1\"\n[columns]\ntime = \"delta+zstd:1\"\nprice = \"pco:4\"\n")
        .unwrap();
    let config = RdbConfig { table_spec: Some(specs.path().into()), ..rdb_config(tp.addr, db.path()) };
    let rdb = rdb::start(config).unwrap();
    let mut feed = connect(tp.addr);
    let K::Atom(strata_ipc::Atom::Date(first)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    let end_day = |feed: &mut strata_ipc::Connection, days: usize| {
        for i in 0..5 {
            feed.sync(&upd("trade", trade_row(["IBM", "MSFT"][i % 2], 10.0 + i as f64, i as i32))).unwrap();
        }
        feed.sync(&K::string(".u.end[]")).unwrap();
        eventually("the day written", || rdb.state.read().unwrap().written.len() == days);
        strata_store::Date(first + (days as i32 - 1) + strata_ipc::value::EPOCH_OFFSET_DAYS)
    };
    let spec_of = |specs: &[(String, String)], column: &str| specs.iter().find(|(c, _)| c == column).unwrap().1.clone();

    let day = trade_specs(db.path(), end_day(&mut feed, 1));
    assert_eq!(spec_of(&day, "time"), "delta+zstd:1");
    assert_eq!(spec_of(&day, "price"), "pco:4");
    assert_eq!(spec_of(&day, "size"), "zstd:1", "the file's default");

    // A new recommendation applies from the next end of day.
    std::fs::write(&trade_spec, "[columns]\nprice = \"zstd:5\"\n").unwrap();
    let day = trade_specs(db.path(), end_day(&mut feed, 2));
    assert_eq!(spec_of(&day, "price"), "zstd:5");

    // One that no longer applies is logged and the last good one kept.
    std::fs::copy(&bad, &trade_spec).unwrap();
    let day = trade_specs(db.path(), end_day(&mut feed, 3));
    assert_eq!(spec_of(&day, "price"), "zstd:5");
    assert!(!rdb.is_finished(), "the RDB carries on");
}

#[test]
fn a_day_that_cannot_be_written_is_kept_and_written_at_the_next_end_of_day() {
    let (journal, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tp = start_tp(Some(journal.path()));
    let rdb = rdb::start(rdb_config(tp.addr, db.path())).unwrap();
    let mut feed = connect(tp.addr);
    let K::Atom(strata_ipc::Atom::Date(d)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    let first = strata_store::Date(d + strata_ipc::value::EPOCH_OFFSET_DAYS);
    // A file where the first day's partition directory goes: its writes fail.
    let blocker = Database::open(db.path()).unwrap().partition_dir(first);
    std::fs::write(&blocker, "not a directory").unwrap();
    let trades = |feed: &mut strata_ipc::Connection, n: i32| {
        for i in 0..n {
            feed.sync(&upd("trade", trade_row("IBM", 10.0, i))).unwrap();
        }
    };
    trades(&mut feed, 4);
    feed.sync(&K::string(".u.end[]")).unwrap();
    trades(&mut feed, 2);
    let held = || rdb.state.read().unwrap().row_counts().into_iter().find(|(t, _)| t == "trade").unwrap().1;
    eventually("the second day's rows, after the first day's end", || held() == 2);
    assert!(rdb.state.read().unwrap().written.is_empty(), "the first day is not written");
    assert!(!rdb.is_finished(), "the RDB carries on");

    std::fs::remove_file(&blocker).unwrap();
    feed.sync(&K::string(".u.end[]")).unwrap();
    eventually("both days written", || rdb.state.read().unwrap().written.len() == 2);
    let store = Database::open(db.path()).unwrap();
    let rows = |date| store.read_table(&TableLocation::Partition(date, "trade".into())).unwrap().len();
    assert_eq!(rows(first), 4, "the kept day");
    assert_eq!(rows(strata_store::Date(first.0 + 1)), 2);
}
