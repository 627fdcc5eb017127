//! SQL over IPC: the RDB answers SQL against today's rows, the HDB against the
//! partitions, as q tables; bad statements are kdb+ error replies and the server
//! keeps serving.

use strata_ipc::{Atom, Connection, K, MessageKind, Table, Vector};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::sql::QueryLimits;

use super::common::*;

fn table(conn: &mut Connection, query: &K) -> Table {
    match conn.sync(query) {
        Ok(K::Table(t)) => t,
        other => panic!("{query}: expected a table, got {other:?}"),
    }
}

fn sql(conn: &mut Connection, statement: &str) -> Table {
    table(conn, &K::string(statement))
}

fn quote_row(sym: &str, bid: f64, ask: f64) -> K {
    K::List(vec![K::symbol(sym), K::Atom(Atom::Float(bid)), K::Atom(Atom::Float(ask))])
}

#[test]
fn rdb_and_hdb_answer_sql_and_survive_bad_statements() {
    let journal = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(journal.path()));
    let mut feed = connect(tp.addr);
    // Quotes then trades, in time order (the tickerplant stamps receipt time).
    feed.sync(&upd("quote", quote_row("IBM", 99.0, 101.0))).unwrap();
    feed.sync(&upd("quote", quote_row("MSFT", 9.0, 11.0))).unwrap();
    feed.sync(&upd("trade", trade_row("IBM", 100.0, 10))).unwrap();
    feed.sync(&upd("trade", trade_row("MSFT", 10.0, 300))).unwrap();
    feed.sync(&upd("quote", quote_row("IBM", 100.0, 102.0))).unwrap();
    feed.sync(&upd("trade", trade_row("IBM", 102.0, 30))).unwrap();
    let hdb = start_hdb(db.path());
    let rdb = rdb::start(RdbConfig {
        hdbs: vec![hdb.addr.to_string()],
        queries: QueryLimits { memory: Some(64 << 20), ..QueryLimits::default() },
        ..rdb_config(tp.addr, db.path())
    })
    .unwrap();
    let mut q = connect(rdb.addr.unwrap());

    // A char vector that is SQL: VWAP by sym.
    let vwap = sql(
        &mut q,
        "SELECT sym, sum(price * size) / sum(size) AS vwap, sum(size) AS volume FROM trade GROUP BY sym ORDER BY sym",
    );
    assert_eq!(vwap.column("sym"), Some(&K::symbols(["IBM", "MSFT"])));
    assert_eq!(vwap.column("vwap"), Some(&K::vector(Vector::Float(vec![(1000.0 + 3060.0) / 40.0, 10.0]))));
    assert_eq!(vwap.column("volume"), Some(&K::vector(Vector::Long(vec![40, 300]))));
    // kdb+'s entry points: .s.e[...] and sql[...] as text, and as function-call lists.
    let count = K::Table(Table::new(vec![("n".into(), K::vector(Vector::Long(vec![3])))]).unwrap());
    for request in [
        K::string(".s.e[\"SELECT count(*) AS n FROM trade\"]"),
        K::string("sql \"SELECT count(*) AS n FROM trade\""),
        K::List(vec![K::string(".s.e"), K::string("SELECT count(*) AS n FROM trade")]),
        K::List(vec![K::symbol("sql"), K::string("select count(*) as n from trade")]),
    ] {
        assert_eq!(q.sync(&request).unwrap(), count, "{request}");
    }
    // Chars stay chars; the as-of join finds the quote prevailing at each trade.
    let joined = sql(
        &mut q,
        "SELECT t.sym, t.cond, t.price, q.bid, q.ask FROM trade t ASOF JOIN quote q ON t.sym = q.sym AND t.time >= q.time ORDER BY t.time",
    );
    assert_eq!(joined.column("cond"), Some(&K::vector(Vector::Char(b"AAA".to_vec()))));
    assert_eq!(joined.column("bid"), Some(&K::vector(Vector::Float(vec![99.0, 9.0, 100.0]))));
    // Rows that arrive after a query are in the next one.
    feed.sync(&upd("trade", trade_row("AAPL", 5.0, 1))).unwrap();
    eventually("the RDB to hold the new trade", || {
        q.sync(&K::string("count trade")).unwrap() == K::Atom(Atom::Long(4))
    });
    let syms = sql(&mut q, "SELECT DISTINCT sym FROM trade ORDER BY sym");
    assert_eq!(syms.column("sym"), Some(&K::symbols(["AAPL", "IBM", "MSFT"])));
    let empty = sql(&mut q, "SELECT sym, price FROM trade WHERE price > 1000");
    assert_eq!((empty.len(), empty.names().len()), (0, 2));

    // Errors are q errors, and the RDB keeps serving this client and others.
    let syntax = q.sync(&K::string("SELECT sym FROM trade WHERE")).unwrap_err().to_string();
    assert!(syntax.contains("SQL error"), "{syntax}");
    let unknown = q.sync(&K::string("SELECT * FROM nosuch")).unwrap_err().to_string();
    assert!(unknown.contains("nosuch") && unknown.contains("trade"), "{unknown}");
    let not_text = q.sync(&K::List(vec![K::string(".s.e"), K::Atom(Atom::Long(1))])).unwrap_err().to_string();
    assert!(not_text.contains("expected the SQL statement as a string"), "{not_text}");
    q.write(MessageKind::Async, &K::string("SELECT nonsense(")).unwrap();
    let mut other = connect(rdb.addr.unwrap());
    assert_eq!(sql(&mut other, "SELECT count(*) AS n FROM quote").column("n"), Some(&K::vector(Vector::Long(vec![3]))));
    assert_eq!(q.sync(&K::string("count trade")).unwrap(), K::Atom(Atom::Long(4)));

    // End of day: the HDB answers SQL over the partition, with its date column.
    let K::Atom(Atom::Date(today)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    feed.sync(&K::string(".u.end[]")).unwrap();
    let mut h = connect(hdb.addr);
    eventually("the HDB to serve the day", || {
        h.sync(&K::string("count trade")).is_ok_and(|c| c == K::Atom(Atom::Long(4)))
    });
    let by_date = sql(&mut h, "SELECT date, sym, sum(size) AS volume FROM trade GROUP BY date, sym ORDER BY sym");
    assert_eq!(by_date.column("date"), Some(&K::vector(Vector::Date(vec![today; 3]))));
    assert_eq!(by_date.column("volume"), Some(&K::vector(Vector::Long(vec![1, 40, 300]))));
    let bars = sql(
        &mut h,
        "SELECT sym, xbar(INTERVAL '1 day', time) AS bar, count(*) AS n FROM trade GROUP BY sym, bar ORDER BY sym",
    );
    assert_eq!(bars.column("bar"), Some(&K::vector(Vector::Timespan(vec![0; 3]))));
    let err = h.sync(&K::string("SELECT * FROM trade WHERE nosuchcolumn = 1")).unwrap_err().to_string();
    assert!(err.contains("nosuchcolumn"), "{err}");
    assert_eq!(sql(&mut h, "SELECT count(*) AS n FROM quote").column("n"), Some(&K::vector(Vector::Long(vec![3]))));
    // The RDB starts the new day empty, for SQL too.
    assert_eq!(sql(&mut q, "SELECT count(*) AS n FROM trade").column("n"), Some(&K::vector(Vector::Long(vec![0]))));
}
