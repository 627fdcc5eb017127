//! SQL a DuckDB user can type (issue 19), checked against DuckDB: every expected
//! value below is DuckDB 2.0's answer to the same query over the same trades (with
//! the time column as DuckDB's TIME, or INTERVAL where the query compares
//! intervals), as printed by `dialect_duckdb.py` beside this file.

use strata_query::Engine;
use strata_query::dialect::parse_timespan;
use strata_store::{Column, ColumnType, Table};

use super::data::*;

const SECOND: i64 = 1_000_000_000;

/// Nanoseconds of `h:m:s` plus `ms` milliseconds.
const fn hms(h: i64, m: i64, s: i64, ms: i64) -> i64 {
    ((h * 60 + m) * 60 + s) * SECOND + ms * 1_000_000
}

/// Trades of partition 2024-01-02: (sym, time, price, size), as in `dialect_duckdb.py`.
const TRADES: [(&str, i64, f64, i64); 9] = [
    ("A", hms(7, 59, 59, 0), 10.0, 100),
    ("B", hms(9, 30, 0, 0), 20.0, 200),
    ("A", hms(9, 30, 0, 0), 11.0, 300),
    ("A", hms(9, 33, 0, 0), 12.0, 100),
    ("B", hms(9, 34, 0, 0), 20.5, 40),
    ("B", hms(12, 0, 0, 0), 21.0, 50),
    ("A", hms(12, 0, 0, 500), 13.0, 75),
    ("B", hms(16, 0, 0, 0), 22.0, 10),
    ("A", hms(16, 0, 1, 0), 14.0, 5),
];

/// Quotes of partition 2024-01-02: (sym, time, bid), as in `dialect_duckdb.py`.
const QUOTES: [(&str, i64, f64); 6] = [
    ("A", hms(7, 0, 0, 0), 9.5),
    ("A", hms(9, 30, 0, 0), 10.5),
    ("A", hms(9, 31, 0, 0), 10.75),
    ("B", hms(9, 29, 0, 0), 19.5),
    ("B", hms(12, 0, 0, 0), 20.75),
    ("A", hms(16, 0, 1, 0), 13.5),
];

/// An engine over `trade` and `quote` (times kdb+ timespans) written as end of day
/// writes them.
fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let trades = Table::new(vec![
        ("sym".into(), Column::from_symbols(TRADES.iter().map(|t| t.0))),
        ("time".into(), Column::from_values(ColumnType::Timespan, TRADES.iter().map(|t| t.1).collect()).unwrap()),
        ("price".into(), Column::from_values(ColumnType::Float, TRADES.iter().map(|t| t.2).collect()).unwrap()),
        ("size".into(), Column::from_values(ColumnType::Long, TRADES.iter().map(|t| t.3).collect()).unwrap()),
    ])
    .unwrap();
    write(dir.path(), DAY, "trade", &trades, &sorted_write("none"));
    let quotes = Table::new(vec![
        ("sym".into(), Column::from_symbols(QUOTES.iter().map(|q| q.0))),
        ("time".into(), Column::from_values(ColumnType::Timespan, QUOTES.iter().map(|q| q.1).collect()).unwrap()),
        ("bid".into(), Column::from_values(ColumnType::Float, QUOTES.iter().map(|q| q.2).collect()).unwrap()),
    ])
    .unwrap();
    write(dir.path(), DAY, "quote", &quotes, &sorted_write("none"));
    let engine = Engine::open(dir.path()).unwrap();
    (dir, engine)
}

/// Column `column` of `sql`'s result as integers.
fn int_column(engine: &Engine, sql: &str, column: &str) -> Vec<i64> {
    let out = one(&engine.sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}")));
    ints(&out, column).into_iter().map(|v| v.expect("no nulls")).collect()
}

/// The sizes of the trades `sql` selects, ascending.
fn sizes(engine: &Engine, sql: &str) -> Vec<i64> {
    int_column(engine, &format!("SELECT size FROM trade WHERE {sql} ORDER BY size"), "size")
}

/// The error of `sql`.
fn error(engine: &Engine, sql: &str) -> String {
    match engine.sql(sql) {
        Ok(_) => panic!("{sql} ran; it should fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn timespans_compare_with_strings_times_and_intervals() {
    let (_dir, engine) = engine();
    // DuckDB, time as TIME.
    assert_eq!(sizes(&engine, "time < '08:00'"), [100]);
    assert_eq!(sizes(&engine, "time BETWEEN '09:30' AND '16:00'"), [10, 40, 50, 75, 100, 200, 300]);
    assert_eq!(sizes(&engine, "time < TIME '09:30:00'"), [100]);
    assert_eq!(sizes(&engine, "time >= TIME '09:30' AND time <> '12:00'"), [5, 10, 40, 75, 100, 200, 300]);
    assert_eq!(sizes(&engine, "time IN ('09:30', '16:00')"), [10, 200, 300]);
    // DuckDB, time as INTERVAL.
    assert_eq!(sizes(&engine, "time < INTERVAL '9 hours'"), [100]);
    assert_eq!(sizes(&engine, "time < '9 hours'"), [100]);
    assert_eq!(sizes(&engine, "time BETWEEN INTERVAL '9 hours 30 minutes' AND '12:00'"), [40, 50, 100, 200, 300]);
    // Strata's own: the two kinds mixed, and the constant on the left.
    assert_eq!(sizes(&engine, "time BETWEEN TIME '09:30' AND INTERVAL '12 hours'"), [40, 50, 100, 200, 300]);
    assert_eq!(sizes(&engine, "'16:00' <= time"), [5, 10]);
    assert_eq!(sizes(&engine, "time NOT IN ('09:30', TIME '16:00')"), [5, 40, 50, 75, 100, 100]);

    // In a date-partitioned table a timespan meets a date or timestamp as `date +
    // time`, what a DuckDB user's timestamp `time` column holds.
    assert_eq!(sizes(&engine, "time < TIMESTAMP '2024-01-02 09:30:00'"), [100]);
    assert_eq!(sizes(&engine, "time >= DATE '2024-01-02' + INTERVAL '16 hours'"), [5, 10]);
    let e = error(&engine, "SELECT count(*) FROM trade WHERE time < '9:75'");
    assert!(e.contains("'9:75' is not a timespan"), "{e}");
    let e = error(&engine, "SELECT count(*) FROM trade WHERE time BETWEEN '09:30' AND INTERVAL '1 month'");
    assert!(e.contains("months has no fixed length"), "{e}");
}

#[test]
fn timespans_cast_and_add_as_times_of_day() {
    let (_dir, engine) = engine();
    let nanos = |times: &[&str]| times.iter().map(|t| parse_timespan(t).unwrap()).collect::<Vec<_>>();
    // DuckDB: CAST(time AS VARCHAR) of its TIME column.
    let times = nanos(&[
        "07:59:59",
        "09:30:00",
        "09:30:00",
        "09:33:00",
        "09:34:00",
        "12:00:00",
        "12:00:00.5",
        "16:00:00",
        "16:00:01",
    ]);
    for cast in ["time::TIME", "CAST(time AS TIME)", "TRY_CAST(time AS TIME)"] {
        let sql = format!("SELECT {cast} AS t, {cast} < '10:00' AS early FROM trade ORDER BY time, sym");
        assert_eq!(int_column(&engine, &sql, "t"), times, "{sql}");
    }
    // DuckDB: CAST(time + INTERVAL '5 minutes' AS VARCHAR).
    let later = nanos(&[
        "08:04:59",
        "09:35:00",
        "09:35:00",
        "09:38:00",
        "09:39:00",
        "12:05:00",
        "12:05:00.5",
        "16:05:00",
        "16:05:01",
    ]);
    let sql = "SELECT (time + INTERVAL '5 minutes')::TIME AS t FROM trade ORDER BY time, sym";
    assert_eq!(int_column(&engine, sql, "t"), later);
    let sql = "SELECT time + INTERVAL '5 minutes' - INTERVAL '5 minutes' AS t FROM trade ORDER BY time, sym";
    assert_eq!(int_column(&engine, sql, "t"), times, "a timespan plus an interval stays a timespan");
    // DuckDB: epoch_ns(date + time).
    let stamps = [
        1704182399000000000,
        1704187800000000000,
        1704187800000000000,
        1704187980000000000,
        1704188040000000000,
        1704196800000000000,
        1704196800500000000,
        1704211200000000000,
        1704211201000000000,
    ];
    assert_eq!(int_column(&engine, "SELECT date + time AS ts FROM trade ORDER BY time, sym", "ts"), stamps);
    assert_eq!(int_column(&engine, "SELECT time + date AS ts FROM trade ORDER BY time, sym", "ts"), stamps);
    let between = "date + time BETWEEN TIMESTAMP '2024-01-02 09:00:00' AND TIMESTAMP '2024-01-02 12:00:00'";
    assert_eq!(sizes(&engine, between), [40, 50, 100, 200, 300]);
    // DuckDB reads timestamps written to the minute.
    assert_eq!(
        sizes(&engine, "date + time BETWEEN '2024-01-02 09:00' AND '2024-01-02 12:00'"),
        [40, 50, 100, 200, 300]
    );
    assert_eq!(sizes(&engine, "date + time >= TIMESTAMP '2024-01-02 16:00'"), [5, 10]);
    assert_eq!(sizes(&engine, "'2024-01-02 16:00' <= date + time"), [5, 10]);
    let schema = engine.schema_of("SELECT date + time AS ts, time::TIME AS t FROM trade").unwrap();
    assert_eq!(schema.field(0).data_type().to_string(), "Timestamp(ns)");
    assert_eq!(schema.field(1).data_type().to_string(), "Time64(ns)");

    // Into a timespan (DuckDB has no such type, nor a TIME to INTERVAL cast).
    let out = one(&engine
        .sql("SELECT CAST(TIME '09:30' AS TIMESPAN) AS a, CAST(INTERVAL '9 hours' AS TIMESPAN) AS b, '09:30:00.5'::TIMESPAN AS c, \
              CAST(TIME '09:30' AS INTERVAL) = INTERVAL '9 hours 30 minutes' AS d")
        .unwrap());
    assert_eq!(out.column(0).data_type().to_string(), "Duration(ns)");
    assert_eq!(ints(&out, "a"), [Some(hms(9, 30, 0, 0))]);
    assert_eq!(ints(&out, "b"), [Some(hms(9, 0, 0, 0))]);
    assert_eq!(ints(&out, "c"), [Some(hms(9, 30, 0, 500))]);
    assert_eq!(texts(&out, "d"), [Some("true".to_string())]);
    let e = error(&engine, "SELECT (time + INTERVAL '20 hours')::TIME FROM trade");
    assert!(e.contains("is not a time of day") && e.contains("1D03:59:59"), "{e}");
    // Names stay as written.
    let schema = engine.schema_of("SELECT time::TIME, time < '10:00' FROM trade").unwrap();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["trade.time", "trade.time < Utf8(\"10:00\")"]);
}

#[test]
fn windows_ordered_by_a_timespan() {
    let (_dir, engine) = engine();
    let window = |over: &str, order: &str| {
        int_column(&engine, &format!("SELECT sum(size) OVER ({over}) AS s FROM trade ORDER BY {order}"), "s")
    };
    // All DuckDB's answers.
    assert_eq!(
        window(
            "PARTITION BY sym ORDER BY time RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW",
            "sym, time"
        ),
        [100, 300, 400, 75, 5, 200, 240, 50, 10]
    );
    assert_eq!(
        window(
            "ORDER BY time RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND INTERVAL '1 minute' FOLLOWING",
            "time, sym"
        ),
        [100, 500, 500, 640, 640, 125, 125, 15, 15]
    );
    assert_eq!(window("PARTITION BY sym ORDER BY time", "sym, time"), [100, 400, 500, 575, 580, 200, 240, 290, 300]);
    assert_eq!(
        window("PARTITION BY sym ORDER BY time ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", "sym, time"),
        [100, 400, 400, 175, 80, 200, 240, 90, 60]
    );
}

#[test]
fn weighted_average_in_both_orders() {
    let (_dir, engine) = engine();
    let out = one(&engine
        .sql("SELECT sym, weighted_avg(price, size) AS duck, wavg(size, price) AS q FROM trade GROUP BY sym ORDER BY sym")
        .unwrap());
    // DuckDB: weighted_avg(price, size).
    let want = [11.28448275862069, 20.3];
    for column in ["duck", "q"] {
        let got = floats(&out, column);
        assert!(got.iter().zip(want).all(|(g, w)| (g.unwrap() - w).abs() < 1e-12), "{column}: {got:?}");
    }
}

#[test]
fn integer_division_is_a_float_division_and_slash_slash_truncates() {
    let (_dir, engine) = engine();
    let out = one(&engine
        .sql("SELECT sum(size) / count(*) AS mean, 7 / 2 AS half, 7 // 2 AS a, -7 // 2 AS b, (-7) // 2 AS c, 2.5 // 1 AS d FROM trade")
        .unwrap());
    // DuckDB: 97.77777777777777, 3.5, 3, -3, -3, 2.5.
    assert_eq!(floats(&out, "mean"), [Some(880.0 / 9.0)]);
    assert_eq!(floats(&out, "half"), [Some(3.5)]);
    assert_eq!(ints(&out, "a"), [Some(3)]);
    assert_eq!(ints(&out, "b"), [Some(-3)]);
    assert_eq!(ints(&out, "c"), [Some(-3)]);
    assert_eq!(floats(&out, "d"), [Some(2.5)]);
    assert_eq!(out.schema().field(2).data_type().to_string(), "Int64");
    let out = one(&engine.sql("SELECT size // 3 AS q, size / 8 AS f FROM trade ORDER BY time, sym").unwrap());
    // DuckDB: size // 3, size / 8.
    assert_eq!(ints(&out, "q"), [33, 100, 66, 33, 13, 16, 25, 3, 1].map(Some));
    assert_eq!(floats(&out, "f"), [12.5, 37.5, 25.0, 12.5, 5.0, 6.25, 9.375, 1.25, 0.625].map(Some));
}

#[test]
fn unaliased_calls_are_named_as_duckdb_names_them() {
    let (_dir, engine) = engine();
    let sql = "SELECT sym, count(*), sum(price), avg(t.size), count(DISTINCT sym), max(price) AS top FROM trade t \
               GROUP BY sym ORDER BY sum(price) DESC";
    let out = one(&engine.sql(sql).unwrap());
    let schema = out.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    // DuckDB: sym, count_star(), sum(price), avg(t.size), count(DISTINCT sym), top.
    assert_eq!(names, ["sym", "count_star()", "sum(price)", "avg(t.size)", "count(DISTINCT sym)", "top"]);
    // ORDER BY still finds the aggregate: A's prices sum to 60, B's to 83.5.
    assert_eq!(floats(&out, "sum(price)"), [Some(83.5), Some(60.0)]);
    assert_eq!(ints(&out, "count_star()"), [Some(4), Some(5)]);
}

#[test]
fn star_rename_exclude_and_replace() {
    let (_dir, engine) = engine();
    let names = |sql: &str| -> Vec<String> {
        let schema = engine.schema_of(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    // DuckDB: ['date', 's', 'time', 'p', 'size'].
    let sql = "SELECT * RENAME (price AS p, sym AS s) FROM trade ORDER BY time, s";
    assert_eq!(names(sql), ["date", "s", "time", "p", "size"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "p"), [10.0, 11.0, 20.0, 12.0, 20.5, 21.0, 13.0, 22.0, 14.0].map(Some));
    // DuckDB: ['sym', 'p', 'size'] and these prices.
    let sql = "SELECT * EXCLUDE (date, time) RENAME (price AS p) FROM trade ORDER BY size, p";
    assert_eq!(names(sql), ["sym", "p", "size"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "p"), [14.0, 22.0, 20.5, 21.0, 13.0, 10.0, 12.0, 20.0, 11.0].map(Some));
    // DuckDB: ['sym', 'price', 'size'] and these prices.
    let sql = "SELECT * EXCLUDE (date, time) REPLACE (price * 2 AS price) FROM trade ORDER BY size, price";
    assert_eq!(names(sql), ["sym", "price", "size"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "price"), [28.0, 44.0, 41.0, 42.0, 26.0, 20.0, 24.0, 40.0, 22.0].map(Some));
    // A qualified star, beside other items, under a WITH.
    let sql = "WITH w AS (SELECT * FROM trade WHERE sym = 'B') SELECT 1 AS one, w.* EXCLUDE (date) RENAME (size AS qty) FROM w";
    assert_eq!(names(sql), ["one", "sym", "time", "price", "qty"]);
    assert_eq!(rows(&engine.sql(sql).unwrap()), 4);
    let e = error(&engine, "SELECT * RENAME (volume AS v) FROM trade");
    assert!(e.contains("RENAME names column volume") && e.contains("date, sym, time, price, size"), "{e}");
    // In a subquery. DuckDB: ['q', 'p'], (300, 11.0), (200, 20.0).
    let sql = "SELECT q, p FROM (SELECT * EXCLUDE (date, time) RENAME (price AS p, size AS q) FROM trade) \
               WHERE q > 100 ORDER BY p";
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!((ints(&out, "q"), floats(&out, "p")), (vec![Some(300), Some(200)], vec![Some(11.0), Some(20.0)]));
    // In a CTE's body. DuckDB: ['s', 'n'], (A, 5), (B, 4).
    let sql = "WITH r AS (SELECT * RENAME (sym AS s) FROM trade) SELECT s, count(*) AS n FROM r GROUP BY s ORDER BY s";
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(texts(&out, "s"), ["A", "B"].map(|s| Some(s.to_string())));
    assert_eq!(ints(&out, "n"), [5, 4].map(Some));
}

#[test]
fn row_numbers_are_listed_only_where_named() {
    let (_dir, engine) = engine();
    let names = |sql: &str| -> Vec<String> {
        let schema = engine.schema_of(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    // As DuckDB's `*` and kdb+'s `select from trade`: the stored columns and the date.
    assert_eq!(names("SELECT * FROM trade"), ["date", "sym", "time", "price", "size"]);
    assert_eq!(names("SELECT *, i FROM trade"), ["date", "sym", "time", "price", "size", "i"]);
    assert_eq!(names("SELECT i, * FROM trade t"), ["i", "date", "sym", "time", "price", "size"]);
    assert_eq!(names("SELECT *, rowid, i FROM trade"), ["date", "sym", "time", "price", "size", "rowid", "i"]);
    // DuckDB's rowid numbers the table's rows as stored; kdb+'s i within each date.
    assert_eq!(int_column(&engine, "SELECT rowid FROM trade ORDER BY rowid", "rowid"), (0..9).collect::<Vec<i64>>());
    assert_eq!(int_column(&engine, "SELECT i, * FROM trade WHERE sym = 'B' ORDER BY i", "i"), [5, 6, 7, 8]);
    // A subquery that does not select them has neither.
    let e = error(&engine, "SELECT i FROM (SELECT * FROM trade)");
    assert!(e.contains("a subquery or CTE has them only where it selects them"), "{e}");
}

#[test]
fn asof_join_using_keys_and_time() {
    let (_dir, engine) = engine();
    // DuckDB: sizes and bids of each trade with the prevailing quote of its symbol.
    let out = one(&engine
        .sql("SELECT sym, time, size, bid FROM trade ASOF JOIN quote USING (sym, time) ORDER BY sym, time")
        .unwrap());
    assert_eq!(ints(&out, "size"), [100, 300, 100, 75, 5, 200, 40, 50, 10].map(Some));
    assert_eq!(floats(&out, "bid"), [9.5, 10.5, 10.75, 10.75, 13.5, 19.5, 19.5, 20.75, 20.75].map(Some));
    // DuckDB, a LEFT join to a filtered, aliased subquery, reading the match's own time.
    let out = one(&engine
        .sql("SELECT sym, time, size, bid, q.time::TIME AS qt FROM trade ASOF LEFT JOIN (SELECT * FROM quote WHERE bid > 10) q \
              USING (sym, time) WHERE time < '12:00' ORDER BY sym, time")
        .unwrap());
    assert_eq!(ints(&out, "size"), [100, 300, 100, 200, 40].map(Some));
    assert_eq!(floats(&out, "bid"), [None, Some(10.5), Some(10.75), Some(19.5), Some(19.5)]);
    let qt = ["09:30:00", "09:31:00", "09:29:00", "09:29:00"].map(parse_timespan);
    assert_eq!(ints(&out, "qt"), [None, qt[0], qt[1], qt[2], qt[3]]);
    // DuckDB: ['date', 'sym', 'time', 'price', 'size', 'date', 'bid']: the USING
    // columns once, the left table's.
    let sql = "SELECT * FROM trade ASOF JOIN quote USING (sym, time) WHERE size >= 100 ORDER BY sym, time";
    let schema = engine.schema_of(sql).unwrap();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["date", "sym", "time", "price", "size", "date", "bid"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "bid"), [9.5, 10.5, 10.75, 19.5].map(Some));
}

#[test]
fn time_of_day_filters_still_narrow_the_scan() {
    let (_dir, engine) = engine();
    let read = |condition: &str| {
        let before = engine.scan_stats();
        let got = sizes(&engine, &format!("sym = 'A' AND {condition}"));
        (got, engine.scan_stats().since(&before).rows_scanned)
    };
    let (all, whole) = read("true");
    assert_eq!((all.len(), whole), (5, 5));
    // The strings, TIMEs and intervals are constants by the time the scan sees the
    // filter, so the binary search on the sorted time column answers it.
    for condition in [
        "time >= '09:30' AND time < '12:00'",
        "time BETWEEN TIME '09:30' AND '11:59:59'",
        "time >= INTERVAL '9 hours 30 minutes' AND time < TIME '12:00'",
    ] {
        assert_eq!(read(condition), (vec![100, 300], 2), "{condition}");
    }
}

#[test]
fn pivot_and_unpivot() {
    let (_dir, engine) = engine();
    let names = |sql: &str| -> Vec<String> {
        let schema = engine.schema_of(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    // DuckDB: ['date', 'time', 'price', 'A', 'bee'] (kdb+'s row number `i` is not a
    // grouping column), one row per trade.
    let sql = "SELECT * FROM trade PIVOT (sum(size) FOR sym IN ('A', 'B' AS bee)) ORDER BY time, price";
    assert_eq!(names(sql), ["date", "time", "price", "A", "bee"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(ints(&out, "A"), [Some(100), Some(300), None, Some(100), None, None, Some(75), None, Some(5)]);
    assert_eq!(ints(&out, "bee"), [None, None, Some(200), None, Some(40), Some(50), None, Some(10), None]);
    // DuckDB: ['A_v', 'A_max(price)', 'B_v', 'B_max(price)'], (580, 14.0, 300, 22.0).
    let sql =
        "SELECT * FROM (SELECT sym, size, price FROM trade) PIVOT (sum(size) AS v, max(price) FOR sym IN ('A', 'B'))";
    assert_eq!(names(sql), ["A_v", "A_max(price)", "B_v", "B_max(price)"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!((ints(&out, "A_v"), floats(&out, "A_max(price)")), (vec![Some(580)], vec![Some(14.0)]));
    assert_eq!((ints(&out, "B_v"), floats(&out, "B_max(price)")), (vec![Some(300)], vec![Some(22.0)]));
    // DuckDB's dynamic `PIVOT ... ON half USING sum(size)`: ['sym', 'am', 'pm'],
    // A 500 80, B 240 60.
    let sql = "SELECT * FROM (SELECT sym, size, CASE WHEN time < '12:00' THEN 'am' ELSE 'pm' END AS half FROM trade) \
               PIVOT (sum(size) FOR half IN (ANY ORDER BY half)) ORDER BY sym";
    assert_eq!(names(sql), ["sym", "am", "pm"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!((ints(&out, "am"), ints(&out, "pm")), (vec![Some(500), Some(240)], vec![Some(80), Some(60)]));
    let sql =
        "SELECT * FROM (SELECT sym, size FROM trade) PIVOT (count(*) FOR sym IN (SELECT DISTINCT sym FROM trade))";
    // As DuckDB: count(*) reads no column, so `size` groups.
    assert_eq!(names(sql), ["size", "A", "B"], "the subquery's values, as found");
    // Aggregates computed per (group, value) and then spread, of several types, with
    // cells whose group has no row of their value (DuckDB, with `first(price ORDER BY
    // time)`): A (09:30, 1, 11.0, 09:33, 2, 10.0, NULL, 0, NULL),
    // B (NULL, 0, NULL, 09:30, 1, 20.0, NULL, 0, NULL).
    let sql = "SELECT * FROM (SELECT sym, time, price, CASE WHEN size >= 300 THEN 'huge' WHEN size >= 100 THEN 'big' \
               ELSE 'small' END AS k FROM trade) PIVOT (max(time) AS t, count(*) AS n, \
               first_value(price ORDER BY time) AS f FOR k IN ('huge', 'big', 'none')) ORDER BY sym";
    let out = one(&engine.sql(sql).unwrap());
    let at = |h, m| Some(hms(h, m, 0, 0));
    assert_eq!(
        (ints(&out, "huge_t"), ints(&out, "big_t"), ints(&out, "none_t")),
        (vec![at(9, 30), None], vec![at(9, 33), at(9, 30)], vec![None, None])
    );
    assert_eq!(
        (ints(&out, "huge_n"), ints(&out, "big_n"), ints(&out, "none_n")),
        (vec![Some(1), Some(0)], vec![Some(2), Some(1)], vec![Some(0), Some(0)])
    );
    assert_eq!((floats(&out, "huge_f"), floats(&out, "big_f")), (vec![Some(11.0), None], vec![Some(10.0), Some(20.0)]));
    // A symbol spread (DuckDB: ('A', 'B', NULL)).
    let sql = "SELECT * FROM (SELECT sym, size FROM trade) PIVOT (min(sym) FOR size IN (100, 200, 1))";
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(
        [texts(&out, "100"), texts(&out, "200"), texts(&out, "1")],
        [vec![Some("A".to_string())], vec![Some("B".to_string())], vec![None]]
    );
    // DuckDB: ['sym', 'time', 'k', 'v'], each trade's price then its size as qty.
    let sql = "SELECT * FROM (SELECT sym, time, price, size FROM trade) UNPIVOT (v FOR k IN (price, size AS qty)) \
               ORDER BY sym, time, k";
    assert_eq!(names(sql), ["sym", "time", "k", "v"]);
    let out = one(&engine.sql(sql).unwrap());
    let want: Vec<f64> = [10.0, 100.0, 11.0, 300.0, 12.0, 100.0, 13.0, 75.0, 14.0, 5.0]
        .into_iter()
        .chain([20.0, 200.0, 20.5, 40.0, 21.0, 50.0, 22.0, 10.0])
        .collect();
    assert_eq!(floats(&out, "v"), want.into_iter().map(Some).collect::<Vec<_>>());
    assert_eq!(texts(&out, "k")[..2], [Some("price".to_string()), Some("qty".to_string())]);
    let e = error(&engine, "SELECT * FROM trade PIVOT (sum(size) FOR (sym, time) IN (('A', '09:30')))");
    assert!(e.contains("pivot on one column"), "{e}");
}

#[test]
fn duckdb_pivot_and_unpivot_statements() {
    let (_dir, engine) = engine();
    let names = |sql: &str| -> Vec<String> {
        let schema = engine.schema_of(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    // DuckDB: ['date', 'B_n', 'B_max(price)', 'A_n', 'A_max(price)'], (300, 22.0, 580, 14.0).
    let sql = "PIVOT trade ON sym IN ('B', 'A') USING sum(size) AS n, max(price) GROUP BY date";
    assert_eq!(names(sql), ["date", "B_n", "B_max(price)", "A_n", "A_max(price)"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!((ints(&out, "B_n"), ints(&out, "A_n")), (vec![Some(300)], vec![Some(580)]));
    assert_eq!((floats(&out, "B_max(price)"), floats(&out, "A_max(price)")), (vec![Some(22.0)], vec![Some(14.0)]));
    // DuckDB (no USING: count(*); no IN: the values found), by size:
    // (5, 1, 0), (10, 0, 1), (40, 0, 1), (50, 0, 1), (75, 1, 0), (100, 2, 0), (200, 0, 1), (300, 1, 0).
    let sql = "PIVOT (SELECT sym, size FROM trade) ON sym ORDER BY size";
    assert_eq!(names(sql), ["size", "A", "B"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(ints(&out, "A"), [1, 0, 0, 0, 1, 2, 0, 1].map(Some));
    assert_eq!(ints(&out, "B"), [0, 1, 1, 1, 0, 0, 1, 0].map(Some));
    // DuckDB: ['sym', 'time', 'k', 'v'], the first three rows A 07:59:59 price 10, size 100, A 09:30 price 11.
    let sql = "UNPIVOT (SELECT sym, time, price, size FROM trade) ON price, size INTO NAME k VALUE v ORDER BY sym, time, k LIMIT 3";
    assert_eq!(names(sql), ["sym", "time", "k", "v"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "v"), [10.0, 100.0, 11.0].map(Some));
    assert_eq!(texts(&out, "k"), ["price", "size", "price"].map(|k| Some(k.to_string())));
    // DuckDB: ['sym', 'name', 'value'], B price 20, B size 200, A price 11, A size 300.
    let sql = "UNPIVOT (SELECT sym, price, size FROM trade WHERE size > 100) ON price, size ORDER BY value";
    assert_eq!(names(sql), ["sym", "name", "value"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(floats(&out, "value"), [11.0, 20.0, 200.0, 300.0].map(Some));
    // In parentheses. DuckDB: ['date', 'B_n', 'A_n'], (2024-01-02, 300, 580).
    let sql = "WITH p AS (PIVOT trade ON sym IN ('B', 'A') USING sum(size) AS n GROUP BY date) SELECT * FROM p";
    assert_eq!(names(sql), ["date", "B_n", "A_n"]);
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!((ints(&out, "B_n"), ints(&out, "A_n")), (vec![Some(300)], vec![Some(580)]));
    // DuckDB: ['sym', 'value'], (B, 200.0), (A, 300.0).
    let sql = "SELECT u.sym, u.value FROM (UNPIVOT (SELECT sym, price, size FROM trade WHERE size > 100) ON price, size) u \
               WHERE u.name = 'size' ORDER BY u.value";
    let out = one(&engine.sql(sql).unwrap());
    assert_eq!(texts(&out, "sym"), ["B", "A"].map(|s| Some(s.to_string())));
    assert_eq!(floats(&out, "value"), [200.0, 300.0].map(Some));
}

#[test]
fn time_joins_and_buckets_over_timespans() {
    let (_dir, engine) = engine();
    // DuckDB, as a correlated count: (SELECT count(*) FROM q WHERE q.sym = t.sym AND
    // q.time BETWEEN t.time - INTERVAL '1 minute' AND t.time + INTERVAL '1 minute').
    let sql = "SELECT t.sym, t.time, count(*) AS n FROM trade t WINDOW JOIN quote q ON t.sym = q.sym \
               AND q.time BETWEEN t.time - INTERVAL '1 minute' AND t.time + INTERVAL '1 minute' ORDER BY t.sym, t.time";
    assert_eq!(int_column(&engine, sql, "n"), [0, 2, 0, 0, 1, 1, 0, 1, 0]);
    // DuckDB: time_bucket(INTERVAL '5 minutes', date + time), count(*).
    let sql =
        "SELECT time_bucket(INTERVAL '5 minutes', date + time) AS b, count(*) AS n FROM trade GROUP BY 1 ORDER BY 1";
    let out = one(&engine.sql(sql).unwrap());
    let day = 1704153600 * SECOND;
    let buckets = [hms(7, 55, 0, 0), hms(9, 30, 0, 0), hms(12, 0, 0, 0), hms(16, 0, 0, 0)].map(|t| Some(day + t));
    assert_eq!(ints(&out, "b"), buckets);
    assert_eq!(ints(&out, "n"), [1, 4, 2, 2].map(Some));
}

/// `EXPLAIN` and `EXPLAIN ANALYZE` plan the query as it runs: its as-of join, its
/// PIVOT and its `* RENAME` written out first, as without `EXPLAIN` (the as-of
/// join was explained as a plain join, and the pivot failed to plan).
#[test]
fn explain_plans_the_written_out_query() {
    let (_dir, engine) = engine();
    let plan = |sql: &str| -> String {
        let out = engine.sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        texts(&one(&out), "plan").into_iter().flatten().collect::<Vec<_>>().join("\n")
    };
    for explain in ["EXPLAIN", "EXPLAIN ANALYZE"] {
        let asof = format!("{explain} SELECT sym, time, size, bid FROM trade ASOF JOIN quote USING (sym, time)");
        assert!(plan(&asof).contains("AsofJoinExec"), "{asof}: {}", plan(&asof));
        let pivot =
            format!("{explain} SELECT * FROM (SELECT sym, size FROM trade) PIVOT (sum(size) FOR sym IN ('A', 'B'))");
        assert!(plan(&pivot).contains("AggregateExec"), "{pivot}: {}", plan(&pivot));
        let renamed = format!("{explain} SELECT * RENAME (price AS p) FROM trade");
        assert!(plan(&renamed).contains("as p"), "{renamed}: {}", plan(&renamed));
    }
}
