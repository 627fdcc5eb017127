"""Seed 000's query set on Strata, checked row for row against DuckDB.

The data is written here with pyarrow (a small TAQ-shaped day, times unique within
each symbol so as-of matches and row numbers are unambiguous), imported with
`strata import` (sorted by symbol then time, parted on symbol), and queried with
`strata sql --format parquet`. DuckDB runs the same queries on the same Parquet
files. The query texts come from `strata bench query --print-queries`, so this
checks exactly the set the benchmark times.
"""

import json
import math
import random
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

DATE = "2022.03.31"
SYMS = [f"S{i:03d}" for i in range(40)]
EXCHANGES = "NPQTZ"


def day(rows, seed, weights):
    """(time ns, exchange, symbol, price, size) rows sorted by symbol then time."""
    rng = random.Random(seed)
    by_sym = {}
    for sym in rng.choices(SYMS, weights, k=rows):
        by_sym[sym] = by_sym.get(sym, 0) + 1
    records = []
    for sym in sorted(by_sym):
        times = sorted(rng.sample(range(34_200_000_000_000, 57_600_000_000_000, 1_000), by_sym[sym]))
        base = 10 + SYMS.index(sym)
        for t in times:
            records.append((t, rng.choice(EXCHANGES), sym, round(base + rng.randrange(-500, 500) / 100, 2), rng.randrange(1, 5000)))
    return records


@pytest.fixture(scope="module")
def data(tmp_path_factory, strata_bin):
    root = tmp_path_factory.mktemp("query")
    weights = [1 + (i % 7) ** 3 for i in range(len(SYMS))]
    quotes = day(20_000, 1, weights)
    rng = random.Random(2)
    quote = pa.table({
        "Time": [q[0] for q in quotes],
        "Exchange": [q[1] for q in quotes],
        "Symbol": [q[2] for q in quotes],
        "Bid_Price": [q[3] for q in quotes],
        "Bid_Size": pa.array([q[4] for q in quotes], pa.int32()),
        "Offer_Price": [q[3] + 0.01 * rng.randrange(1, 5) for q in quotes],
        "Offer_Size": pa.array([rng.randrange(1, 5000) for _ in quotes], pa.int32()),
        "Sequence_Number": pa.array(range(len(quotes)), pa.int32()),
    })
    trades = day(3_000, 3, weights)
    trade = pa.table({
        "Time": [t[0] for t in trades],
        "Exchange": [t[1] for t in trades],
        "Symbol": [t[2] for t in trades],
        "TradePrice": [t[3] for t in trades],
        "TradeVolume": pa.array([t[4] * (1 + 100 * (i % 300 == 0)) for i, t in enumerate(trades)], pa.int32()),
    })
    quote_norm = quote.select(["Symbol", "Time", "Exchange", "Bid_Price", "Bid_Size", "Offer_Price", "Offer_Size"]).rename_columns(
        ["sym", "time", "ex", "bid", "bsize", "ask", "asize"])
    trade_norm = trade.select(["Symbol", "Time", "Exchange", "TradePrice", "TradeVolume"]).rename_columns(
        ["sym", "time", "ex", "price", "size"])
    db = root / "db"
    files = {}
    for name, table, sym, time, ex in [
        ("quote", quote, "Symbol", "Time", "Exchange"),
        ("trade", trade, "Symbol", "Time", "Exchange"),
        ("quoteNorm", quote_norm, "sym", "time", "ex"),
        ("tradeNorm", trade_norm, "sym", "time", "ex"),
    ]:
        path = root / f"{name}.parquet"
        pq.write_table(table, path)
        files[name] = path
        done = subprocess.run(
            [str(strata_bin), "import", str(path), "--db", str(db), "--table", name, "--partition", DATE,
             "--types", f"{time}=timespan,{sym}=symbol,{ex}=char", "--sort", f"{sym},{time}", "--parted", sym],
            capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return db, files


FLOAT_TOLERANCE = 1e-9  # relative; engines sum floats in different orders


def rows_of(table):
    """Rows as tuples, text dictionaries as text, temporal values as integers, sorted
    by their non-float cells (then floats rounded to 6 digits) so row order does not
    matter."""
    columns = []
    for column in table.columns:
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if pa.types.is_temporal(column.type):
            column = column.cast(pa.int64())
        columns.append(column.to_pylist())
    def key(row):
        return tuple((0, round(v, 6 - int(math.floor(math.log10(abs(v)))))) if isinstance(v, float) and v and math.isfinite(v)
                     else (1, repr(v)) for v in row)
    return sorted(zip(*columns), key=key)


def same_value(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    return a == b


def assert_same_rows(got, want, what):
    """Every row equal, floats within FLOAT_TOLERANCE (relative)."""
    assert got.num_columns == want.num_columns, (what, got.schema, want.schema)
    ours, theirs = rows_of(got), rows_of(want)
    assert len(ours) == len(theirs), f"{what}: {len(ours)} rows, DuckDB {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert all(same_value(x, y) for x, y in zip(a, b)), f"{what}: row {i} differs:\n  strata {a}\n  duckdb {b}"


def test_the_fourteen_queries_match_duckdb(data, run_strata, tmp_path):
    db, files = data
    spec_path = tmp_path / "spec.json"
    run_strata("bench", "query", "--db", db, "--print-queries", spec_path)
    spec = json.loads(spec_path.read_text())
    assert len(spec["queries"]) == 14
    con = duckdb.connect()
    for name, path in files.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    checked = 0
    for query in spec["queries"]:
        assert len(query["strata"]) == len(query["duckdb"]), query["name"]
        for k, (ours, theirs) in enumerate(zip(query["strata"], query["duckdb"])):
            out = tmp_path / f"{checked}.parquet"
            run_strata("sql", "--db", db, ours, "--format", "parquet", "--out", out)
            got = pq.read_table(out)
            want = con.sql(theirs).to_arrow_table()
            assert got.num_rows > 0, f"{query['name']} returns no rows: the data misses it"
            assert_same_rows(got, want, f"{query['name']} statement {k}: {ours}")
            checked += 1
    assert checked >= 14


def test_sql_formats_and_errors(data, run_strata, tmp_path):
    db, _ = data
    csv = run_strata("sql", "--db", db, "SELECT sym, count(*) AS n FROM quoteNorm GROUP BY sym ORDER BY sym LIMIT 2", "--format", "csv").stdout
    assert csv.splitlines()[0] == "sym,n" and csv.splitlines()[1].startswith("S000,")
    js = run_strata("sql", "--db", db, "SELECT sym FROM tradeNorm WHERE i < 1", "--format", "json").stdout
    assert json.loads(js.splitlines()[0]) == {"sym": "S000"}
    bad = run_strata("sql", "--db", db, "SELECT bid FROM quoteNorm ORDER bid", check=False)
    assert bad.returncode != 0 and "Column" in bad.stderr and "^" in bad.stderr
    missing = run_strata("sql", "--db", db, "SELECT * FROM quotes", check=False)
    assert "quoteNorm" in missing.stderr and "tradeNorm" in missing.stderr


def test_window_join_matches_duckdb(data, run_strata, tmp_path):
    """WINDOW JOIN against the same aggregates in DuckDB as a range join grouped by
    trade (times are int64 nanoseconds in Parquet, timespans in Strata)."""
    db, files = data
    out = tmp_path / "wj.parquet"
    run_strata("sql", "--db", db,
               "SELECT t.sym, t.time, t.price, t.size, count(*) AS n, max(q.ask) AS hi, min(q.bid) AS lo, "
               "avg(q.bsize) AS mean_bsize, wavg(q.bsize, q.bid) AS wbid "
               "FROM tradeNorm t WINDOW JOIN quoteNorm q ON t.sym = q.sym "
               "AND q.time BETWEEN t.time - INTERVAL '60 seconds' AND t.time + INTERVAL '10 seconds'",
               "--format", "parquet", "--out", out)
    con = duckdb.connect()
    for name, path in files.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    want = con.sql(
        "SELECT t.sym, t.time, t.price, t.size, count(q.sym) AS n, max(q.ask) AS hi, min(q.bid) AS lo, "
        "avg(q.bsize) AS mean_bsize, sum(q.bsize * q.bid) / sum(q.bsize) AS wbid "
        "FROM (SELECT *, row_number() OVER () AS rid FROM tradeNorm) t LEFT JOIN quoteNorm q ON t.sym = q.sym "
        "AND q.time BETWEEN t.time - 60000000000 AND t.time + 10000000000 "
        "GROUP BY t.rid, t.sym, t.time, t.price, t.size").to_arrow_table()
    got = pq.read_table(out)
    assert got.num_rows == 3_000
    assert sum(got.column("n").to_pylist()) > 1_000, "windows hold quotes"
    assert_same_rows(got, want, "window join")
