"""`strata.connect` against real `strata tp`, `rdb` and `hdb` processes: DataFrames
published with the tickerplant's types, answers read back as Arrow, errors as
exceptions that leave the connection usable."""

import datetime
import time

import polars as pl
import pytest

from tick_processes import free_port_number

DAY = datetime.date(2024, 1, 2)


def rows_of_trade(n=500):
    """Trades as a polars frame whose types are not the schema's: text symbols and
    conditions, 64-bit integer prices and sizes (trade is price:float size:int cond:char)."""
    return pl.DataFrame(
        {
            "sym": [["AAPL", "MSFT", "IBM"][i % 3] for i in range(n)],
            "price": [100 + i for i in range(n)],
            "size": [(i * 7) % 1000 for i in range(n)],
            "cond": [["A", "B", "C"][i % 3] for i in range(n)],
        }
    )


def wait_for_rows(rdb, table, rows, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if rdb.query(f"count {table}") >= rows:
            return
        time.sleep(0.05)
    raise AssertionError(f"the RDB holds {rdb.query(f'count {table}')} {table} rows after {seconds} s, not {rows}")


def test_published_frame_reaches_the_rdb_with_the_schemas_types(strata, tick):
    tp_port, rdb_port = free_port_number(), free_port_number()
    tick.tickerplant(tp_port)
    tick.rdb(tp_port, rdb_port)
    df = rows_of_trade()
    with strata.connect(tp_port) as tp, strata.connect(f"127.0.0.1:{rdb_port}") as rdb:
        assert tp.publish("trade", df[:200]) == 200
        assert tp.publish("trade", df[200:], sync=False) == 300
        wait_for_rows(rdb, "trade", len(df))
        assert tp.query(".u.i") == 2, "two updates, journaled once each"
        got = rdb.sql("SELECT sym, price, size, cond, time FROM trade").pl()
        assert got.schema["price"] == pl.Float64 and got.schema["size"] == pl.Int32
        assert got.schema["time"] == pl.Duration("ns"), "the tickerplant stamped a timespan"
        # Chars arrive as one-byte binaries, symbols as categoricals.
        expected = df.with_columns(
            pl.col("price").cast(pl.Float64), pl.col("size").cast(pl.Int32), pl.col("cond").cast(pl.Binary)
        )
        assert got.drop("time").with_columns(pl.col("sym").cast(pl.String)).equals(expected)
        assert rdb.query("tables[]") == ["quote", "trade"]


def test_publish_refuses_a_value_that_would_change_and_sends_nothing(strata, tick):
    tp_port = free_port_number()
    tick.tickerplant(tp_port)
    with strata.connect(tp_port) as tp:
        too_big = rows_of_trade(3).with_columns(pl.Series("size", [1, 2**40, 3]))
        with pytest.raises(strata.Error, match=r"trade.*size.*row 1"):
            tp.publish("trade", too_big)
        with pytest.raises(strata.Error, match=r"columns \(sym price\) are not the table's \(time sym price size cond\)"):
            tp.publish("trade", rows_of_trade(3).select("sym", "price"))
        with pytest.raises(strata.Error, match="no table fills"):
            tp.publish("fills", rows_of_trade(3))
        assert tp.query(".u.i") == 0, "nothing reached the journal"
        assert tp.publish("trade", rows_of_trade(3)) == 3, "the connection still works"
        assert tp.query(".u.i") == 1


def test_hdb_answers_as_the_library_does(strata, tick):
    db = strata.open(tick.root / "hdb")
    df = rows_of_trade().with_columns(pl.col("price").cast(pl.Float64))
    db.write("trade", df, partition=DAY)
    port = free_port_number()
    tick.hdb(port)
    query = "SELECT sym, count(*) AS n, avg(price) AS px, max(size) AS big FROM trade GROUP BY sym ORDER BY sym"
    with strata.connect(port) as hdb:
        text_symbols = pl.col("sym").cast(pl.String)
        assert hdb.sql(query).pl().with_columns(text_symbols).equals(db.sql(query).pl().with_columns(text_symbols))
        assert hdb.query("count trade") == len(df)
        assert hdb.query("select from trade").arrow().num_rows == len(df)
        with pytest.raises(strata.Error, match="nope"):
            hdb.sql("SELECT nope FROM trade")
        assert len(hdb.sql("SELECT * FROM trade WHERE sym = 'IBM'")) == len(df) // 3, "still serving after an error"


def test_connect_errors_name_the_address(strata):
    port = free_port_number()
    with pytest.raises(strata.Error, match=f"127.0.0.1:{port}"):
        strata.connect(port, timeout=2)
    with pytest.raises(ValueError, match="a password needs a user"):
        strata.connect(port, password="x")
