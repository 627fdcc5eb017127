//! Tickerplant publishing: filters, bad input, slow subscribers, end of day, and a
//! chained tickerplant.

use std::io::{Read, Write};
use std::net::TcpStream;

use strata_ipc::{Atom, K, MessageKind, Vector, encode_message};
use strata_tick::tickerplant;

use super::common::*;

#[test]
fn subscribers_get_their_syms_and_bad_updates_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(dir.path()));
    let mut all = connect(tp.addr);
    let mut ibm_only = connect(tp.addr);
    let K::List(answer) = all.sync(&K::string(".u.sub[`trade;`]")).unwrap() else { panic!() };
    assert_eq!(answer[0], K::symbol("trade"));
    let K::Table(empty) = &answer[1] else { panic!() };
    assert_eq!(empty.names(), ["time", "sym", "price", "size", "cond"]);
    ibm_only.sync(&K::List(vec![K::symbol(".u.sub"), K::symbol("trade"), K::symbols(["IBM"])])).unwrap();

    let mut feed = connect(tp.addr);
    let mut other = connect(tp.addr);
    feed.sync(&upd("trade", trade_row("IBM", 1.5, 100))).unwrap();
    // Wrong type (price as a long): a sync caller gets the error.
    let bad = K::List(vec![K::symbol("IBM"), K::Atom(Atom::Long(1)), K::Atom(Atom::Int(1)), K::Atom(Atom::Char(b' '))]);
    let err = feed.sync(&upd("trade", bad.clone())).unwrap_err().to_string();
    assert!(err.contains("trade: column price expects float atom"), "{err}");
    let err = feed.sync(&upd("nosuch", bad.clone())).unwrap_err().to_string();
    assert!(err.contains("no table nosuch"), "{err}");
    // An async bad update and a message whose bytes do not decode disturb nobody.
    feed.send_async(&upd("trade", bad)).unwrap();
    let mut garbage = encode_message(MessageKind::Async, &K::vector(Vector::Long(vec![1, 2])), false);
    garbage[9] = 77; // attribute byte 77 does not exist
    feed.write_raw(&garbage).unwrap();
    feed.flush().unwrap();
    let columns = K::List(vec![
        K::symbols(["MSFT", "IBM"]),
        K::vector(Vector::Float(vec![2.0, 3.0])),
        K::vector(Vector::Int(vec![1, 2])),
        K::vector(Vector::Char(b"AB".to_vec())),
    ]);
    other.sync(&upd("trade", columns)).unwrap();
    feed.sync(&upd("trade", trade_row("MSFT", 4.0, 7))).unwrap();

    let mut seen_all = Vec::new();
    for _ in 0..3 {
        seen_all.extend(published_syms(&all.receive().unwrap().unwrap().1));
    }
    assert_eq!(seen_all, ["IBM", "MSFT", "IBM", "MSFT"]);
    let mut seen_ibm = Vec::new();
    for _ in 0..2 {
        seen_ibm.extend(published_syms(&ibm_only.receive().unwrap().unwrap().1));
    }
    assert_eq!(seen_ibm, ["IBM", "IBM"]);
    assert_eq!(counter(&mut feed, "rejected"), 3);
    assert_eq!(counter(&mut feed, "malformed"), 1);
    assert_eq!(counter(&mut feed, "rows"), 4);
    assert_eq!(counter(&mut feed, "journalRecords"), 3);
}

/// Connects and subscribes to trade with a raw socket that then never reads.
fn silent_subscriber(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"silent\x03\x00").unwrap();
    let mut cap = [0u8];
    s.read_exact(&mut cap).unwrap();
    s.write_all(&encode_message(MessageKind::Async, &K::string(".u.sub[`trade;`]"), false)).unwrap();
    s
}

#[test]
fn a_subscriber_that_stops_reading_is_dropped_within_the_bound() {
    const LIMIT: usize = 256 << 10;
    let mut config = config(None);
    config.subscriber_limit = LIMIT;
    let tp = tickerplant::start(config).unwrap();
    let _silent = silent_subscriber(tp.addr);
    let mut reader = connect(tp.addr);
    reader.sync(&K::string(".u.sub[`trade;`]")).unwrap();
    let mut feed = connect(tp.addr);
    eventually("both subscribers", || counter(&mut feed, "subscribers") == 2);
    let batch = K::List(vec![
        K::symbols(vec!["IBM"; 1000]),
        K::vector(Vector::Float(vec![1.0; 1000])),
        K::vector(Vector::Int(vec![1; 1000])),
        K::vector(Vector::Char(vec![b' '; 1000])),
    ]);
    // The reading subscriber drains on its own thread for as long as it is connected.
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = received.clone();
    std::thread::spawn(move || {
        while let Ok(Some(_)) = reader.receive() {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    // ~17 KB per publish: the silent socket's kernel buffers fill, then its queue.
    // Bursts of 10 (170 KB, under the limit) wait for the reader to catch up, so
    // on a loaded machine it is never the reader that falls a limit behind.
    let mut sent = 0;
    while counter(&mut feed, "slowDisconnects") == 0 {
        for _ in 0..10 {
            feed.sync(&upd("trade", batch.clone())).unwrap();
        }
        sent += 10;
        eventually("the reader to get every update", || received.load(std::sync::atomic::Ordering::Relaxed) == sent);
        assert!(sent < 20_000, "the silent subscriber was never dropped");
    }
    assert!(counter(&mut feed, "maxQueuedBytes") as usize <= LIMIT);
    assert_eq!(counter(&mut feed, "subscribers"), 1, "the reading subscriber stays");
}

#[test]
fn end_of_day_reaches_subscribers_through_a_chained_tickerplant() {
    let dir = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(dir.path()));
    let ctp = start_ctp(tp.addr, 1 << 20);
    let mut sub = connect(ctp.addr);
    let K::List(subs) = sub.sync(&K::string(".u.sub[`;`]")).unwrap() else { panic!() };
    assert_eq!(subs.len(), 2, "trade and quote");
    let mut feed = connect(tp.addr);
    feed.sync(&upd("trade", trade_row("IBM", 1.0, 1))).unwrap();
    assert_eq!(published_syms(&sub.receive().unwrap().unwrap().1), ["IBM"]);
    let K::Atom(Atom::Date(today)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    feed.sync(&K::string(".u.end[]")).unwrap();
    let (_, end) = sub.receive().unwrap().unwrap();
    assert_eq!(end, K::List(vec![K::symbol(".u.end"), K::Atom(Atom::Date(today))]));
    // The journal rolled to the next day's file.
    let K::Atom(Atom::Date(next)) = feed.sync(&K::string(".u.d")).unwrap() else { panic!() };
    assert_eq!(next, today + 1);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
