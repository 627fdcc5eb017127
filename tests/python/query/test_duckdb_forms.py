"""DuckDB's SQL as analysts write it (issue 48), on Strata, checked against DuckDB.

Two days of trades and quotes are written with pyarrow, imported with `strata
import` into date partitions (sorted by symbol then time), and queried with `strata
sql --format parquet`. DuckDB holds the same rows as its users hold them: one table
per kind, in the order Strata stores them (so `rowid` numbers the same rows), with
`time` a TIMESTAMP (the partition's date and Strata's timespan together). Where
the two texts differ, only in what the two stores hold differently: DuckDB's `time`
is Strata's `date + time`.
"""

import random
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from answers import normalised, same

DAYS = ["2026-04-01", "2026-04-02"]
SYMS = [f"S{i:02d}" for i in range(12)]
EXCHANGES = "NPQZ"
OPEN, CLOSE = 9 * 3600 * 10**9 + 30 * 60 * 10**9, 16 * 3600 * 10**9


def day_rows(rows, seed):
    """(sym, time ns, ex, price, size) sorted by symbol then time, times unique per symbol."""
    rng = random.Random(seed)
    by_sym = {}
    for sym in rng.choices(SYMS, [1 + (i % 5) ** 2 for i in range(len(SYMS))], k=rows):
        by_sym[sym] = by_sym.get(sym, 0) + 1
    out = []
    for sym in sorted(by_sym):
        for t in sorted(rng.sample(range(OPEN - 3600 * 10**9, CLOSE, 10**6), by_sym[sym])):
            out.append((sym, t, rng.choice(EXCHANGES), round(20 + SYMS.index(sym) + rng.randrange(-300, 300) / 100, 2),
                        rng.randrange(1, 40) * 100))
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory, strata_bin):
    root = tmp_path_factory.mktemp("duckdb_forms")
    db = root / "db"
    con = duckdb.connect()
    for table, rows in [("trade", 4_000), ("quote", 6_000)]:
        parts = []
        for k, day in enumerate(DAYS):
            records = day_rows(rows, 10 * k + len(table))
            columns = {
                "sym": [r[0] for r in records],
                "time": [r[1] for r in records],
                "ex": [r[2] for r in records],
            }
            if table == "trade":
                columns |= {"price": [r[3] for r in records], "size": [r[4] for r in records]}
            else:
                columns |= {"bid": [r[3] for r in records], "ask": [round(r[3] + 0.01 * (1 + r[4] % 3), 2) for r in records],
                            "bsize": [r[4] for r in records], "asize": [r[4] // 2 + 100 for r in records]}
            path = root / f"{table}-{day}.parquet"
            pq.write_table(pa.table(columns), path)
            done = subprocess.run(
                [str(strata_bin), "import", str(path), "--db", str(db), "--table", table, "--partition",
                 day.replace("-", "."), "--types", "time=timespan,sym=symbol,ex=char", "--sort", "sym,time",
                 "--parted", "sym"], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            parts.append(f"SELECT DATE '{day}' AS date, * REPLACE (DATE '{day}' + to_microseconds(time // 1000) AS time) "
                         f"FROM read_parquet('{path}')")
        # Stored order: the days in order, each by symbol then time.
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM ({' UNION ALL '.join(parts)}) ORDER BY date, sym, time")
    return db, con


def strata(stores, run_strata, tmp_path, sql):
    db, _ = stores
    out = tmp_path / "out.parquet"
    run_strata("sql", "--db", db, sql, "--format", "parquet", "--out", out)
    return pq.read_table(out)


def check(stores, run_strata, tmp_path, ours, theirs=None, ordered=False, names=True):
    """Strata's answer to `ours` equals DuckDB's to `theirs` (the same text by
    default): the same column names, the same rows (in order, if `ordered`)."""
    got = strata(stores, run_strata, tmp_path, ours)
    want = stores[1].sql(theirs or ours).to_arrow_table()
    if names:
        assert got.column_names == want.column_names, (ours, got.column_names, want.column_names)
    assert got.num_columns == want.num_columns, ours
    a, b = list(zip(*normalised(got))), list(zip(*normalised(want)))
    if not ordered:
        key = lambda row: tuple((v is None, repr(v) if not isinstance(v, float) else f"{v:.6e}") for v in row)
        a, b = sorted(a, key=key), sorted(b, key=key)
    assert len(a) == len(b), f"{ours}: {len(a)} rows, DuckDB {len(b)}"
    assert len(a) > 0, f"{ours}: no rows; the data misses the case"
    for i, (x, y) in enumerate(zip(a, b)):
        assert all(same(p, q) for p, q in zip(x, y)), f"{ours}: row {i}\n  strata {x}\n  duckdb {y}"
    return got


def test_rowid_numbers_the_table_as_stored_and_is_not_in_star(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT rowid, sym, price, size FROM trade WHERE rowid BETWEEN 3990 AND 4010",
          ordered=False)
    check(stores, run_strata, tmp_path, "SELECT ROWID AS r, t.rowid, sym FROM trade t WHERE rowid % 211 = 0")
    # `*` lists neither rowid nor kdb+'s `i`, named in the query or not.
    got = check(stores, run_strata, tmp_path, "SELECT * EXCLUDE (time) FROM trade WHERE rowid % 97 = 0")
    assert "rowid" not in got.column_names and "i" not in got.column_names
    got = check(stores, run_strata, tmp_path, "SELECT * EXCLUDE (time) FROM trade WHERE size > 3500")
    assert "i" not in got.column_names
    check(stores, run_strata, tmp_path, "SELECT rowid, * EXCLUDE (time) FROM quote WHERE date = DATE '2026-04-02' "
          "AND rowid < 6010")
    # Dedup by key keeping the last row stored, DuckDB's QUALIFY idiom.
    check(stores, run_strata, tmp_path, "SELECT sym, ex, price, size FROM trade "
          "QUALIFY row_number() OVER (PARTITION BY sym, ex ORDER BY rowid DESC) = 1")
    # Two tables, each its own rowid; a CTE named like no table.
    check(stores, run_strata, tmp_path, "WITH last AS (SELECT max(rowid) AS r FROM quote) "
          "SELECT t.rowid, t.sym, last.r FROM trade t, last WHERE t.rowid < 3")
    # A subquery's explicit rowid is an ordinary column of it.
    check(stores, run_strata, tmp_path, "SELECT * FROM (SELECT rowid, sym FROM trade WHERE rowid < 5) s")


def test_a_timespan_meets_timestamps_as_date_plus_time(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT count(*) AS n, sum(size) AS v FROM trade "
          "WHERE time >= DATE '2026-04-01' + INTERVAL '10 hours' AND time < TIMESTAMP '2026-04-02 11:00:00'")
    check(stores, run_strata, tmp_path, "SELECT sym, count(*) AS n FROM trade "
          "WHERE time BETWEEN TIMESTAMP '2026-04-01 15:00' AND TIMESTAMP '2026-04-02 09:45' GROUP BY sym")
    check(stores, run_strata, tmp_path, "SELECT count(*) AS n FROM quote WHERE DATE '2026-04-02' + INTERVAL '12 hours' > time")
    check(stores, run_strata, tmp_path, "SELECT DATE '2026-04-01' + INTERVAL '8 hours' AS t, "
          "DATE '2026-04-01' - INTERVAL '1 day' AS y, INTERVAL '90 minutes' + DATE '2026-04-01' AS u")
    # Still a time of day against a time of day.
    check(stores, run_strata, tmp_path, "SELECT count(*) AS n FROM trade WHERE time < '10:00'",
          "SELECT count(*) AS n FROM trade WHERE CAST(time AS TIME) < '10:00'")


def test_infinite_timestamps(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT count(*) AS n FROM trade WHERE date + time < 'infinity'::TIMESTAMP "
          "AND date + time > TIMESTAMP '-infinity' AND date < DATE 'infinity'",
          "SELECT count(*) AS n FROM trade WHERE time < 'infinity'::TIMESTAMP "
          "AND time > TIMESTAMP '-infinity' AND date < DATE 'infinity'")
    check(stores, run_strata, tmp_path, "SELECT 'infinity'::TIMESTAMP > TIMESTAMP '2262-01-01' AS a, "
          "'-infinity'::TIMESTAMP < TIMESTAMP '1678-01-01' AS b, CAST('infinity' AS TIMESTAMP) = 'infinity'::TIMESTAMP AS c")
    check(stores, run_strata, tmp_path, "SELECT sym, min(coalesce(CASE WHEN size > 3000 THEN date + time END, "
          "'infinity'::TIMESTAMP)) < 'infinity'::TIMESTAMP AS big FROM trade GROUP BY sym",
          "SELECT sym, min(coalesce(CASE WHEN size > 3000 THEN time END, "
          "'infinity'::TIMESTAMP)) < 'infinity'::TIMESTAMP AS big FROM trade GROUP BY sym")


def test_with_pivot_statement(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "WITH d AS (SELECT sym, ex, size FROM trade WHERE date = DATE '2026-04-01') "
          "PIVOT d ON ex IN ('N', 'Q') USING sum(size) GROUP BY sym")
    check(stores, run_strata, tmp_path, "WITH d AS (SELECT sym, ex FROM quote) PIVOT d ON ex USING count(*) GROUP BY sym "
          "ORDER BY sym", ordered=True)


def test_columns_expressions(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT sym, max(COLUMNS(* EXCLUDE (date, sym, time, ex))) FROM trade GROUP BY sym")
    check(stores, run_strata, tmp_path, "SELECT min(COLUMNS('^(bid|ask)$')), avg(COLUMNS('size')) FROM quote")
    check(stores, run_strata, tmp_path, "SELECT COLUMNS('^(price|size)$') FROM trade WHERE sym = 'S03' AND date = DATE '2026-04-02'")
    check(stores, run_strata, tmp_path, "SELECT count(*) AS n FROM quote WHERE COLUMNS('size$') > 1500")
    check(stores, run_strata, tmp_path, "SELECT sum(COLUMNS(* EXCLUDE (date, sym, time, ex) REPLACE (size / 100 AS size))) FROM trade")


def test_a_subquery_order_survives_a_plain_projection(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT * RENAME (price AS p) FROM (SELECT rowid AS r, sym, price FROM trade "
          "ORDER BY price DESC, rowid)", ordered=True)
    check(stores, run_strata, tmp_path, "SELECT sym, p FROM (SELECT sym, price AS p, rowid FROM trade ORDER BY p, rowid DESC)",
          ordered=True)


def test_window_aggregates_over_whole_partitions(stores, run_strata, tmp_path):
    check(stores, run_strata, tmp_path, "SELECT sym, ex, price, max(price) OVER (PARTITION BY ex) AS hi, "
          "avg(size) OVER (PARTITION BY sym, ex) AS mean, count(*) OVER (PARTITION BY sym) AS n FROM trade")
    check(stores, run_strata, tmp_path, "SELECT sym, price FROM trade QUALIFY price = max(price) OVER (PARTITION BY sym, date)")


def test_a_keyless_asof_join_against_a_small_table(stores, run_strata, tmp_path):
    """A table of session bounds joined by time of day alone: every direction, inner
    and left (trades before the first bound have none before them)."""
    sessions = ("WITH s(start, session) AS (VALUES (TIME '09:00:00', 'pre'), (TIME '10:00:00', 'morning'), "
                "(TIME '12:00:00', 'midday'), (TIME '15:30:00', 'close')) ")
    for kind in ["ASOF JOIN", "ASOF LEFT JOIN"]:
        for op in [">=", ">", "<=", "<"]:
            check(stores, run_strata, tmp_path,
                  f"{sessions}SELECT t.date, t.sym, t.price, s.session FROM trade t {kind} s ON t.time {op} s.start",
                  f"{sessions}SELECT t.date, t.sym, t.price, s.session FROM (SELECT *, CAST(time AS TIME) AS tod "
                  f"FROM trade) t {kind} s ON t.tod {op} s.start")
