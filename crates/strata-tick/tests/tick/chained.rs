//! An RDB that starts from a chained tickerplant replays the primary's journal up to
//! the position the chained tickerplant reports and takes the rest from it: every
//! update once, in order, while a feed keeps sending.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use strata_ipc::{Atom, K, Vector};
use strata_tick::rdb::{self, RdbConfig};

use super::common::*;

#[test]
fn an_rdb_starts_from_a_chained_tickerplant_and_sees_every_update_once() {
    let dir = tempfile::tempdir().unwrap();
    let tp = start_tp(Some(dir.path()));
    let ctp = start_ctp(tp.addr, 1 << 24);
    let mut feed = connect(tp.addr);
    for i in 0..50 {
        feed.sync(&upd("trade", trade_row("IBM", 1.0, i))).unwrap();
    }
    // The feed keeps sending while the RDB starts.
    let (stop, sent) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicI32::new(50)));
    let (stopping, counting) = (stop.clone(), sent.clone());
    let sender = std::thread::spawn(move || {
        let mut i = 50;
        while !stopping.load(Ordering::Acquire) {
            // Async in small bursts, so updates are in flight when the RDB subscribes.
            for _ in 0..20 {
                feed.send_async(&upd("trade", trade_row("MSFT", 2.0, i))).unwrap();
                i += 1;
            }
            feed.flush().unwrap();
            counting.store(i, Ordering::Release);
            // Paced, so the RDB's catching up is bounded by the test, not the machine.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        feed
    });
    eventually("more updates", || sent.load(Ordering::Acquire) > 200);
    let rdb = rdb::start(RdbConfig { listen: None, ..rdb_config(ctp.addr, &dir.path().join("hdb")) }).unwrap();
    eventually("more updates after the RDB started", || sent.load(Ordering::Acquire) > 600);
    stop.store(true, Ordering::Release);
    let mut feed = sender.join().unwrap();
    let total = sent.load(Ordering::Acquire);
    assert_eq!(feed.sync(&K::string(".u.i")).unwrap(), K::Atom(Atom::Long(total as i64)));
    let replayed = rdb.state.read().unwrap().replayed;
    assert!(replayed >= 50, "the RDB replayed the primary's journal ({replayed} records)");
    let mut held = 0;
    eventually("the RDB to hold every update", || {
        held = rdb.state.read().unwrap().row_counts()[0].1;
        held >= total as usize
    });
    assert_eq!(held, total as usize, "no update twice");
    let t = rdb.state.write().unwrap().table("trade").unwrap();
    let Some(K::Vector(Vector::Int(sizes), _)) = t.column("size") else { panic!() };
    assert_eq!(*sizes, (0..total).collect::<Vec<i32>>(), "every update once, in order");
    // The chained tickerplant answers the position itself as well.
    let mut client = connect(ctp.addr);
    let K::List(position) = client.sync(&K::string("`.u `i`L")).unwrap() else { panic!() };
    assert_eq!(position[0], K::Atom(Atom::Long(total as i64)));
    assert!(position[1].as_text().unwrap().contains(dir.path().to_str().unwrap()));
}
