"""SQL over kdb+ IPC from PyKX: the RDB answers SQL against today's rows and the HDB
against the written day, as q tables; bad statements come back as q errors and the
servers keep serving."""

import datetime
import math
import time

import numpy as np
import pandas as pd
import pykx as kx
import pytest

from tick_processes import free_port_number


def trades(syms, prices, sizes):
    return [
        kx.SymbolVector(syms),
        kx.FloatVector(np.array(prices, dtype=np.float64)),
        kx.IntVector(np.array(sizes, dtype=np.int32)),
        kx.CharVector("A" * len(syms)),
    ]


def quotes(syms, bids, asks):
    return [
        kx.SymbolVector(syms),
        kx.FloatVector(np.array(bids, dtype=np.float64)),
        kx.FloatVector(np.array(asks, dtype=np.float64)),
    ]


def eventually(check, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


VWAP = "SELECT sym, sum(price * size) / sum(size) AS vwap, sum(size) AS volume FROM trade GROUP BY sym ORDER BY sym"


def test_pykx_queries_the_rdb_and_hdb_with_sql(strata):
    tp_port, rdb_port, hdb_port = free_port_number(), free_port_number(), free_port_number()
    strata.tickerplant(tp_port)
    strata.hdb(hdb_port)
    strata.rdb(tp_port, rdb_port, hdb_port)
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        # Each sync update is stamped on receipt, so quotes precede the trades after them.
        feed(".u.upd", kx.SymbolAtom("quote"), quotes(["IBM", "MSFT"], [99.0, 9.0], [101.0, 11.0]))
        feed(".u.upd", kx.SymbolAtom("trade"), trades(["IBM", "MSFT"], [100.0, 10.0], [10, 300]))
        feed(".u.upd", kx.SymbolAtom("quote"), quotes(["IBM"], [100.0], [102.0]))
        feed(".u.upd", kx.SymbolAtom("trade"), trades(["IBM"], [102.0], [30]))

        with kx.SyncQConnection(port=rdb_port, no_ctx=True) as rdb:
            eventually(lambda: rdb("count trade").py() == 3)
            # A char vector that is SQL, and kdb+'s .s.e and a `sql` call.
            for answer in (rdb(VWAP), rdb(".s.e", kx.CharVector(VWAP)), rdb("sql", kx.CharVector(VWAP))):
                table = answer.pd()
                assert list(table["sym"]) == ["IBM", "MSFT"]
                assert table["vwap"].tolist() == [(1000.0 + 3060.0) / 40.0, 10.0]
                assert table["volume"].tolist() == [40, 300]
            joined = rdb(
                "SELECT t.sym, t.price, q.bid, q.ask FROM trade t "
                "ASOF JOIN quote q ON t.sym = q.sym AND t.time >= q.time ORDER BY t.time"
            ).pd()
            assert joined["bid"].tolist() == [99.0, 9.0, 100.0]
            # Errors are q errors; the RDB keeps serving.
            with pytest.raises(kx.QError, match="SQL error"):
                rdb("SELECT sym FROM trade ORDER sym")
            with pytest.raises(kx.QError, match="nosuch"):
                rdb("SELECT * FROM nosuch")
            assert rdb("count trade").py() == 3

        feed(".u.end[]")

    with kx.SyncQConnection(port=hdb_port, no_ctx=True) as hdb:
        def trades_written():
            # The table appears once the RDB has written the day and the HDB reloaded.
            try:
                return hdb("count trade").py() == 3
            except kx.QError:
                return False

        eventually(trades_written)
        table = hdb("SELECT date, sym, sum(size) AS volume FROM trade GROUP BY date, sym ORDER BY sym").pd()
        assert list(table["sym"]) == ["IBM", "MSFT"]
        assert table["volume"].tolist() == [40, 300]
        today = datetime.datetime.now(datetime.timezone.utc).date()
        assert {d.date() if hasattr(d, "date") else d for d in table["date"]} <= {today, today - datetime.timedelta(days=1)}
        with pytest.raises(kx.QError, match="nosuchcolumn"):
            hdb("SELECT nosuchcolumn FROM trade")
        assert hdb(".s.e", kx.CharVector("SELECT count(*) AS n FROM quote")).pd()["n"].tolist() == [3]
        # Unaliased calls are named as DuckDB names them (count_star(), sum(size)), made
        # identifiers as kdb+'s .Q.id makes them.
        unaliased = hdb("SELECT count(*), sum(size) FROM trade").pd()
        assert list(unaliased.columns) == ["count_star", "sumsize"]  # DataFusion: count(*), sum(trade.size)
        assert unaliased["count_star"].tolist() == [3] and unaliased["sumsize"].tolist() == [340]


def test_kdb_nulls_are_sql_nulls_and_come_back_to_q_as_typed_nulls(strata):
    """A q client publishes 0Ni sizes, a 0n price and a null symbol; SQL on the RDB
    skips them in aggregates, and rows sent back to q carry kdb+'s typed nulls."""
    tp_port, rdb_port = free_port_number(), free_port_number()
    strata.tickerplant(tp_port)
    strata.rdb(tp_port, rdb_port)
    null_int = -(2**31)
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        feed(".u.upd", kx.SymbolAtom("trade"), trades(["IBM", "", "IBM"], [100.0, float("nan"), 102.0], [10, null_int, 30]))
    with kx.SyncQConnection(port=rdb_port, no_ctx=True) as rdb:
        eventually(lambda: rdb("count trade").py() == 3)
        counts = rdb("SELECT count(*) AS n, count(size) AS sizes, sum(size) AS volume, count(price) AS prices, "
                     "avg(price) AS mean, count(sym) AS syms FROM trade").pd()
        assert counts.iloc[0].tolist() == [3, 2, 40, 2, 101.0, 2]
        # PyKX reads kdb+'s typed nulls (0Ni, 0N, 0n, `) as missing values.
        rows = rdb("SELECT sym, price, size FROM trade ORDER BY time").py()
        assert rows["sym"] == ["IBM", "", "IBM"]
        assert math.isnan(rows["price"][1]) and rows["price"][0] == 100.0
        assert rows["size"][0] == 10 and pd.isna(rows["size"][1]) and rows["size"][2] == 30
        grouped = rdb("SELECT sym, sum(size) AS volume FROM trade GROUP BY sym ORDER BY sym NULLS FIRST").py()
        assert grouped["sym"] == ["", "IBM"], "the NULL group is q's null symbol"
        assert pd.isna(grouped["volume"][0]) and grouped["volume"][1] == 40, "a sum over no value is NULL: 0N"
