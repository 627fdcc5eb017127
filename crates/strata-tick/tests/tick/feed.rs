//! The feed simulator sends TAQ-shaped trades and quotes that a tickerplant built
//! from the feed's schema lines takes, and an RDB holds every row.

use std::time::Duration;

use strata_ipc::{Atom, K, Vector};
use strata_tick::feed::{self, FeedConfig, FeedTable};
use strata_tick::rdb::{self};
use strata_tick::schema::Schema;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::common::*;

#[test]
fn trades_and_quotes_from_the_feed_reach_the_rdb() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}\n{}\n", FeedTable::Trade.schema_line(2), FeedTable::Quote.schema_line(0));
    let mut config = TickerplantConfig::new(Schema::parse("taq", &text).unwrap(), Some(dir.path().join("j")));
    config.listen = "127.0.0.1:0".into();
    let tp = tickerplant::start(config).unwrap();
    let rdb = rdb::start(rdb_config(tp.addr, &dir.path().join("hdb"))).unwrap();
    let mut sent = 0;
    for (table, rows, extra, sync) in [(FeedTable::Trade, 10, 2, false), (FeedTable::Quote, 1, 0, true)] {
        let mut config = FeedConfig::new(tp.addr.to_string(), table);
        config.rows = rows;
        config.updates = 5;
        config.timer = Duration::from_millis(1);
        config.extra_columns = extra;
        config.max_updates = Some(40);
        config.sync = sync;
        config.pool_rows = 50;
        config.stamp_time = !sync;
        let report = feed::run(&config, |_| {}).unwrap();
        assert_eq!((report.updates, report.rows), (40, 40 * rows as u64), "{report:?}");
        assert_eq!(report.acknowledged, if sync { 40 } else { 0 });
        sent += report.rows;
    }
    let mut q = connect(rdb.addr.unwrap());
    eventually("the RDB to hold every row", || {
        let mut n = |t: &str| match q.sync(&K::string(&format!("count {t}"))).unwrap() {
            K::Atom(Atom::Long(n)) => n as u64,
            other => panic!("{other:?}"),
        };
        n("trade") + n("quote") == sent
    });
    let K::Table(trades) = q.sync(&K::string("select from trade")).unwrap() else { panic!() };
    assert_eq!(trades.names(), ["time", "sym", "ex", "price", "size", "col0", "col1"]);
    let Some(K::Vector(Vector::Char(venues), _)) = trades.column("ex") else { panic!() };
    assert!(venues.iter().all(u8::is_ascii_uppercase), "TAQ exchange codes");
    // The generated day cycles: 400 trades from a pool of 50 repeat it 8 times.
    let Some(K::Vector(Vector::Float(prices), _)) = trades.column("price") else { panic!() };
    assert_eq!(prices[..50], prices[50..100]);
    let K::Table(syms) = q.sync(&K::string("SELECT count(DISTINCT sym) AS n FROM quote")).unwrap() else { panic!() };
    let Some(K::Vector(Vector::Long(n), _)) = syms.column("n") else { panic!() };
    assert!(n[0] > 1, "quotes over several symbols");
}
