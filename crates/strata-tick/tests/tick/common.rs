//! Helpers: a schema, a tickerplant on a free port, clients.

use std::path::Path;
use std::time::{Duration, Instant};

use strata_ipc::{Atom, Connection, K, Vector};
use strata_tick::chained::{self, ChainedConfig, ChainedHandle};
use strata_tick::hdb::{self, HdbConfig, HdbHandle};
use strata_tick::pubsub::SlowPolicy;
use strata_tick::rdb::RdbConfig;
use strata_tick::schema::Schema;
use strata_tick::sql::QueryLimits;
use strata_tick::tickerplant::{self, TickerplantConfig, TickerplantHandle};

pub const SCHEMA: &str = "trade time:timespan sym:symbol price:float size:int cond:char\n\
                          quote time:timespan sym:symbol bid:float ask:float\n";

pub fn schema() -> Schema {
    Schema::parse("sym", SCHEMA).unwrap()
}

pub fn config(journal: Option<&Path>) -> TickerplantConfig {
    let mut config = TickerplantConfig::new(schema(), journal.map(Path::to_path_buf));
    config.listen = "127.0.0.1:0".into();
    config
}

pub fn start_tp(journal: Option<&Path>) -> TickerplantHandle {
    tickerplant::start(config(journal)).unwrap()
}

/// An RDB of the tickerplant at `tp` that ends its day into `db` and answers
/// queries on a free port; no HDB to tell, no table spec, no query memory limit.
pub fn rdb_config(tp: impl ToString, db: &Path) -> RdbConfig {
    RdbConfig {
        tp: tp.to_string(),
        user_password: String::new(),
        db: db.into(),
        listen: Some("127.0.0.1:0".into()),
        credentials: None,
        tls: None,
        hdbs: vec![],
        table_spec: None,
        queries: QueryLimits::default(),
    }
}

/// A chained tickerplant of `upstream` on a free port, with subscriber queues of at
/// most `subscriber_limit` bytes.
pub fn start_ctp(upstream: impl ToString, subscriber_limit: usize) -> ChainedHandle {
    chained::start(ChainedConfig {
        upstream: upstream.to_string(),
        user_password: String::new(),
        listen: "127.0.0.1:0".into(),
        batch: None,
        credentials: None,
        tls: None,
        subscriber_limit,
        slow_policy: SlowPolicy::Disconnect,
    })
    .unwrap()
}

/// An HDB over `db` on a free port.
pub fn start_hdb(db: &Path) -> HdbHandle {
    hdb::start(HdbConfig {
        db: db.into(),
        listen: "127.0.0.1:0".into(),
        credentials: None,
        tls: None,
        queries: QueryLimits::default(),
    })
    .unwrap()
}

pub fn connect(addr: impl ToString) -> Connection {
    Connection::connect(&addr.to_string(), "").unwrap()
}

/// A one-row trade without its time column.
pub fn trade_row(sym: &str, price: f64, size: i32) -> K {
    K::List(vec![K::symbol(sym), K::Atom(Atom::Float(price)), K::Atom(Atom::Int(size)), K::Atom(Atom::Char(b'A'))])
}

pub fn upd(table: &str, data: K) -> K {
    K::List(vec![K::symbol(".u.upd"), K::symbol(table), data])
}

/// The long value `counter` in `.strata.counters[]` of the process at `conn`.
pub fn counter(conn: &mut Connection, counter: &str) -> i64 {
    let K::Dict { keys, values, .. } = conn.sync(&K::string(".strata.counters[]")).unwrap() else { panic!() };
    let names = keys.as_symbols().unwrap();
    let i = names.iter().position(|n| *n == counter).unwrap_or_else(|| panic!("no counter {counter} in {names:?}"));
    let K::List(values) = *values else { panic!() };
    match &values[i] {
        K::Atom(Atom::Long(v)) => *v,
        other => panic!("{counter} is {other:?}"),
    }
}

/// Polls `check` until it holds or 20 s pass (a deadline on waiting, not an
/// assertion about speed).
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The syms of a published `(`upd; `t; table)` message.
pub fn published_syms(message: &K) -> Vec<String> {
    let K::List(items) = message else { panic!("{message:?}") };
    let K::Table(t) = &items[2] else { panic!("{message:?}") };
    match t.column("sym") {
        Some(K::Vector(Vector::Symbol(s), _)) => s.clone(),
        other => panic!("{other:?}"),
    }
}
