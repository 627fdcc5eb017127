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
