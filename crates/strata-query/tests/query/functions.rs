//! Time-series functions against values computed by hand.

use strata_query::Engine;

use super::data::*;

#[test]
fn weighted_bucketed_and_q_named_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(3);
    let q = quotes(&mut rng, 5_000, 4, DAY.parse().unwrap());
    write(dir.path(), DAY, "quote", &q.table(), &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    let out = one(&engine.sql(
        "SELECT wavg(bsize, bid) AS wa, wsum(bsize, bid) AS ws, med(bid) AS m, sdev(bid) AS sd, dev(bid) AS d, cor(bid, bsize) AS c FROM quote WHERE sym = 'S1'",
    ).unwrap());
    let rows: Vec<(f64, f64)> = q
        .sym
        .iter()
        .zip(q.bid.iter().zip(&q.bsize))
        .filter(|(s, _)| *s == "S1")
        .map(|(_, (b, w))| (*b, *w as f64))
        .collect();
    let n = rows.len() as f64;
    let ws: f64 = rows.iter().map(|(b, w)| b * w).sum();
    let w: f64 = rows.iter().map(|(_, w)| w).sum();
    let mean = rows.iter().map(|(b, _)| b).sum::<f64>() / n;
    let ss: f64 = rows.iter().map(|(b, _)| (b - mean).powi(2)).sum();
    let mut bids: Vec<f64> = rows.iter().map(|(b, _)| *b).collect();
    bids.sort_by(f64::total_cmp);
    let median = if bids.len() % 2 == 1 {
        bids[bids.len() / 2]
    } else {
        (bids[bids.len() / 2 - 1] + bids[bids.len() / 2]) / 2.0
    };
    let near = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1e-6 * want.abs().max(1.0));
    assert!(near(floats(&out, "ws")[0], ws));
    assert!(near(floats(&out, "wa")[0], ws / w));
    assert!(near(floats(&out, "m")[0], median));
    assert!(near(floats(&out, "sd")[0], (ss / (n - 1.0)).sqrt()));
    assert!(near(floats(&out, "d")[0], (ss / n).sqrt()));
    assert!(floats(&out, "c")[0].is_some_and(|c| (-1.0..=1.0).contains(&c)));

    let out = one(&engine.sql(
        "SELECT xbar(INTERVAL '100 milliseconds', time) AS bucket, count(*) AS n, first(bid ORDER BY time) AS f, last(bid ORDER BY time) AS l \
         FROM quote WHERE sym = 'S2' GROUP BY 1 ORDER BY 1",
    ).unwrap());
    let day: strata_store::Date = DAY.parse().unwrap();
    let buckets = ints(&out, "bucket");
    assert!(buckets.iter().all(|b| b.is_some_and(|b| (b - day.start_nanos()) % 100_000_000 == 0)));
    let total: i64 = ints(&out, "n").iter().map(|n| n.unwrap()).sum();
    assert_eq!(total as usize, q.sym.iter().filter(|s| *s == "S2").count());
    let same = one(&engine.sql("SELECT time_bucket(INTERVAL '100 milliseconds', time) AS bucket FROM quote WHERE sym = 'S2' GROUP BY 1 ORDER BY 1").unwrap());
    assert_eq!(ints(&same, "bucket"), buckets);
    let out = one(&engine.sql("SELECT xbar(5, bsize) AS b, xbar(0.25, bid) AS p FROM quote WHERE i < 1").unwrap());
    assert_eq!(ints(&out, "b")[0].unwrap() % 5, 0);
    assert_eq!(floats(&out, "p")[0].unwrap() % 0.25, 0.0);
}
