//! A table whose end-of-day write failed stays queryable, by q and SQL, as
//! `unwritten_<table>_<YYYYMMDD>` until a later end of day writes it.

use strata_ipc::{Atom, K, Vector};
use strata_store::Database;
use strata_tick::rdb::{self, unwritten_name};

use super::common::*;

#[test]
fn a_table_whose_end_of_day_failed_is_queryable_until_written() {
    let (journal, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tp = start_tp(Some(journal.path()));
    let rdb = rdb::start(rdb_config(tp.addr, db.path())).unwrap();
    let mut feed = connect(tp.addr);
    let K::Atom(Atom::Date(d)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    let first = strata_store::Date(d + strata_ipc::value::EPOCH_OFFSET_DAYS);
    // A file where the first day's partition directory goes: its writes fail.
    let blocker = Database::open(db.path()).unwrap().partition_dir(first);
    std::fs::write(&blocker, "not a directory").unwrap();
    for i in 0..4 {
        feed.sync(&upd("trade", trade_row("IBM", 10.0, i))).unwrap();
    }
    feed.sync(&K::string(".u.end[]")).unwrap();
    feed.sync(&upd("trade", trade_row("IBM", 10.0, 9))).unwrap();

    let kept = unwritten_name("trade", first);
    assert_eq!(kept, format!("unwritten_trade_{}", first.to_string().replace('.', "")));
    let mut query = connect(rdb.addr.unwrap());
    let count = |query: &mut strata_ipc::Connection, q: &str| query.sync(&K::string(q));
    eventually("today's row, after the failed end of day", || {
        count(&mut query, "count trade").unwrap() == K::Atom(Atom::Long(1))
    });
    let K::Vector(tables, _) = query.sync(&K::string("tables[]")).unwrap() else { panic!() };
    assert!(format!("{tables:?}").contains(&kept), "{tables:?} lists {kept}");
    assert_eq!(count(&mut query, &format!("count {kept}")).unwrap(), K::Atom(Atom::Long(4)));
    let K::Table(rows) = query.sync(&K::string(&kept)).unwrap() else { panic!() };
    assert_eq!(rows.len(), 4);
    let sql = format!("SELECT sum(size) AS s FROM {kept}");
    let K::Table(sum) = query.sync(&K::string(&sql)).unwrap() else { panic!() };
    assert!(matches!(sum.column("s"), Some(K::Vector(Vector::Long(s), _)) if s == &[6]), "{sum:?}");
    assert_eq!(counter(&mut query, "unwrittenRows"), 4);

    // Written at the next end of day: gone from queries, q and SQL alike.
    std::fs::remove_file(&blocker).unwrap();
    feed.sync(&K::string(".u.end[]")).unwrap();
    eventually("both days written", || rdb.state.read().unwrap().written.len() == 2);
    assert!(count(&mut query, &format!("count {kept}")).is_err());
    assert!(query.sync(&K::string(&sql)).is_err(), "SQL no longer sees {kept}");
    assert_eq!(counter(&mut query, "unwrittenRows"), 0);
}
