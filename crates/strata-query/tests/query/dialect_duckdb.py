"""DuckDB's answers for tests/query/dialect.rs: the same trades, the time of day
held as DuckDB users hold it (TIME in `t`, INTERVAL in `ti`), the same queries.
Run: ~/.cache/strata/venv/bin/python crates/strata-query/tests/query/dialect_duckdb.py
"""

import duckdb

# (sym, seconds since midnight, price, size), as TRADES in dialect.rs.
TRADES = [
    ("A", 7 * 3600 + 59 * 60 + 59, 10.0, 100),
    ("B", 9 * 3600 + 30 * 60, 20.0, 200),
    ("A", 9 * 3600 + 30 * 60, 11.0, 300),
    ("A", 9 * 3600 + 33 * 60, 12.0, 100),
    ("B", 9 * 3600 + 34 * 60, 20.5, 40),
    ("B", 12 * 3600, 21.0, 50),
    ("A", 12 * 3600 + 0.5, 13.0, 75),
    ("B", 16 * 3600, 22.0, 10),
    ("A", 16 * 3600 + 1, 14.0, 5),
]

con = duckdb.connect()
con.execute("CREATE TABLE raw (sym VARCHAR, secs DOUBLE, price DOUBLE, size BIGINT)")
con.executemany("INSERT INTO raw VALUES (?, ?, ?, ?)", TRADES)
con.execute("CREATE TABLE ti AS SELECT DATE '2024-01-02' AS date, sym, to_microseconds((secs * 1e6)::BIGINT) AS time, price, size FROM raw")
# Quotes (sym, seconds, bid), as QUOTES in dialect.rs.
QUOTES = [
    ("A", 7 * 3600, 9.5),
    ("A", 9 * 3600 + 30 * 60, 10.5),
    ("A", 9 * 3600 + 31 * 60, 10.75),
    ("B", 9 * 3600 + 29 * 60, 19.5),
    ("B", 12 * 3600, 20.75),
    ("A", 16 * 3600 + 1, 13.5),
]
con.execute("CREATE TABLE rawq (sym VARCHAR, secs DOUBLE, bid DOUBLE)")
con.executemany("INSERT INTO rawq VALUES (?, ?, ?)", QUOTES)
con.execute("CREATE TABLE q AS SELECT DATE '2024-01-02' AS date, sym, TIME '00:00' + to_microseconds((secs * 1e6)::BIGINT) AS time, bid FROM rawq")
con.execute("CREATE TABLE t AS SELECT date, sym, (TIME '00:00' + time) AS time, price, size FROM ti")

QUERIES = [
    "SELECT size FROM t WHERE time < '08:00' ORDER BY size",
    "SELECT size FROM t WHERE time BETWEEN '09:30' AND '16:00' ORDER BY size",
    "SELECT size FROM t WHERE time < TIME '09:30:00' ORDER BY size",
    "SELECT size FROM t WHERE time >= TIME '09:30' AND time <> '12:00' ORDER BY size",
    "SELECT size FROM t WHERE time IN ('09:30', '16:00') ORDER BY size",
    "SELECT size FROM ti WHERE time < INTERVAL '9 hours' ORDER BY size",
    "SELECT size FROM ti WHERE time < '9 hours' ORDER BY size",
    "SELECT size FROM ti WHERE time BETWEEN INTERVAL '9 hours 30 minutes' AND '12:00' ORDER BY size",
    "SELECT CAST(time AS VARCHAR) FROM t ORDER BY time, sym",
    "SELECT CAST(time + INTERVAL '5 minutes' AS VARCHAR) FROM t ORDER BY time, sym",
    "SELECT epoch_ns(date + time) FROM t ORDER BY time, sym",
    "SELECT size FROM t WHERE date + time BETWEEN TIMESTAMP '2024-01-02 09:00:00' AND TIMESTAMP '2024-01-02 12:00:00' ORDER BY size",
    "SELECT size FROM t WHERE date + time BETWEEN '2024-01-02 09:00' AND '2024-01-02 12:00' ORDER BY size",
    "SELECT size FROM t WHERE date + time >= TIMESTAMP '2024-01-02 16:00' ORDER BY size",
    "SELECT sum(size) OVER (PARTITION BY sym ORDER BY time RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW) FROM t ORDER BY sym, time",
    "SELECT sum(size) OVER (ORDER BY time RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND INTERVAL '1 minute' FOLLOWING) FROM t ORDER BY time, sym",
    "SELECT sum(size) OVER (PARTITION BY sym ORDER BY time) FROM t ORDER BY sym, time",
    "SELECT sum(size) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t ORDER BY sym, time",
    "SELECT sym, weighted_avg(price, size) FROM t GROUP BY sym ORDER BY sym",
    "SELECT sum(size) / count(*), 7 / 2, 7 // 2, -7 // 2, (-7) // 2, 2.5 // 1 FROM t",
    "SELECT size // 3, size / 8 FROM t ORDER BY time, sym",
    "SELECT count(*) FROM t WHERE time < date",
    "SELECT count(*) FROM t WHERE time < TIMESTAMP '2024-01-02 09:30:00'",
]

# Column names and rows of the star forms.
STARS = [
    "SELECT * RENAME (price AS p, sym AS s) FROM t ORDER BY time, s",
    "SELECT * EXCLUDE (date, time) RENAME (price AS p) FROM t ORDER BY size, p",
    # RENAME in a subquery and in a CTE's body.
    "SELECT q, p FROM (SELECT * EXCLUDE (date, time) RENAME (price AS p, size AS q) FROM t) WHERE q > 100 ORDER BY p",
    "WITH r AS (SELECT * RENAME (sym AS s) FROM t) SELECT s, count(*) AS n FROM r GROUP BY s ORDER BY s",
    "SELECT * EXCLUDE (date, time) REPLACE (price * 2 AS price) FROM t ORDER BY size, price",
    "SELECT sym, time, size, bid FROM t ASOF JOIN q USING (sym, time) ORDER BY sym, time",
    "SELECT sym, time, size, bid, CAST(q.time AS VARCHAR) AS qt FROM t ASOF LEFT JOIN (SELECT * FROM q WHERE bid > 10) q USING (sym, time) WHERE time < '12:00' ORDER BY sym, time",
    "SELECT * FROM t ASOF JOIN q USING (sym, time) WHERE size >= 100 ORDER BY sym, time",
    "SELECT * FROM t PIVOT (sum(size) FOR sym IN ('A', 'B' AS bee)) ORDER BY time, price",
    "SELECT * FROM (SELECT sym, size, price FROM t) PIVOT (sum(size) AS v, max(price) FOR sym IN ('A', 'B'))",
    # The dynamic form: Strata writes it PIVOT (... FOR half IN (ANY ORDER BY half)).
    "PIVOT (SELECT sym, size, CASE WHEN time < '12:00' THEN 'am' ELSE 'pm' END AS half FROM t) ON half USING sum(size) ORDER BY sym",
    "SELECT * FROM (SELECT sym, time, price, size FROM t) UNPIVOT (v FOR k IN (price, size AS qty)) ORDER BY sym, time, k",
    "PIVOT t ON sym IN ('B', 'A') USING sum(size) AS n, max(price) GROUP BY date",
    # Strata's WINDOW JOIN ... ON q.time BETWEEN t.time - INTERVAL '1 minute' AND t.time + INTERVAL '1 minute'.
    "SELECT t.sym, t.time, (SELECT count(*) FROM q WHERE q.sym = t.sym AND q.time BETWEEN t.time - INTERVAL '1 minute' AND t.time + INTERVAL '1 minute') AS n FROM t ORDER BY t.sym, t.time",
    "SELECT time_bucket(INTERVAL '5 minutes', date + time) AS b, count(*) AS n FROM t GROUP BY 1 ORDER BY 1",
    "PIVOT (SELECT sym, size FROM t) ON sym",
    "UNPIVOT (SELECT sym, time, price, size FROM t) ON price, size INTO NAME k VALUE v ORDER BY sym, time, k LIMIT 3",
    "UNPIVOT (SELECT sym, price, size FROM t WHERE size > 100) ON price, size",
    # Pivot statements in parentheses: a CTE's body, a subquery.
    "WITH p AS (PIVOT t ON sym IN ('B', 'A') USING sum(size) AS n GROUP BY date) SELECT * FROM p",
    "SELECT u.sym, u.value FROM (UNPIVOT (SELECT sym, price, size FROM t WHERE size > 100) ON price, size) u WHERE u.name = 'size' ORDER BY u.value",
]
for sql in STARS:
    result = con.sql(sql)
    print(sql, "=>", result.columns, result.fetchall())

for sql in QUERIES:
    try:
        print(sql, "=>", con.sql(sql).fetchall())
    except duckdb.Error as e:
        print(sql, "=> error:", str(e).splitlines()[0])
