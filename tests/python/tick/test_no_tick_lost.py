"""No tick lost, tried as a user would: PyKX publishes to real `strata tp`/`rdb`/`hdb`
processes and `kill -9` hits them where a trading firm meets it in its first month
(an RDB during end of day, a tickerplant after a forced `.u.end[]`; a tickerplant
restart under a serving RDB is test_restart.py's). Every acknowledged row must be
found exactly once, in the RDB or the HDB."""

import random
import time

import numpy as np
import pykx as kx
import pytest

from tick_processes import free_port_number


def trade_columns(sizes):
    """Trade rows (sym price size cond) whose size is a unique id; the TP adds time."""
    n = len(sizes)
    return [
        kx.SymbolVector([("AAPL", "MSFT", "IBM")[i % 3] for i in sizes]),
        kx.FloatVector(np.full(n, 100.0)),
        kx.IntVector(np.array(sizes, dtype=np.int32)),
        kx.CharVector(" " * n),
    ]


def quote_columns(ids):
    """Quote rows (sym bid ask) whose bid is a unique id."""
    n = len(ids)
    return [
        kx.SymbolVector([("AAPL", "MSFT", "IBM")[i % 3] for i in ids]),
        kx.FloatVector(np.array(ids, dtype=np.float64)),
        kx.FloatVector(np.full(n, 1.0)),
    ]


def publish(feed, table, first, count, batch=1000):
    """Sync `.u.upd` of rows first..first+count in batches; every call is acknowledged."""
    columns = trade_columns if table == "trade" else quote_columns
    for start in range(first, first + count, batch):
        feed(".u.upd", kx.SymbolAtom(table), columns(list(range(start, min(start + batch, first + count)))))


def sql_column(conn, statement, column):
    return conn(kx.CharVector(statement)).pd()[column].tolist()


def eventually(what, check, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - a process still starting refuses connections
            pass
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds} s")


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_rdb_killed_during_end_of_day_loses_nothing(strata, delay):
    tp_port, rdb_port, hdb_port = free_port_number(), free_port_number(), free_port_number()
    strata.tickerplant(tp_port)
    strata.hdb(hdb_port)
    rdb = strata.rdb(tp_port, rdb_port, hdb_port)
    rows = 100_000
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        publish(feed, "trade", 0, rows)
        publish(feed, "quote", 0, rows)
        feed(".u.end[]")
    time.sleep(delay * random.uniform(0.8, 1.2))
    rdb.kill()  # SIGKILL, somewhere in the write of day D (or just before or after it)
    rdb.wait()
    strata.rdb(tp_port, rdb_port, hdb_port)

    def day_complete():
        with kx.SyncQConnection(port=hdb_port, no_ctx=True) as hdb:
            hdb(kx.CharVector("\\l ."))
            trades = sql_column(hdb, "SELECT size FROM trade", "size")
            quotes = sql_column(hdb, "SELECT bid FROM quote", "bid")
        return len(trades) == rows and len(quotes) == rows

    eventually("day D complete in the HDB after the RDB's restart", day_complete)
    with kx.SyncQConnection(port=hdb_port, no_ctx=True) as hdb:
        assert sorted(sql_column(hdb, "SELECT size FROM trade", "size")) == list(range(rows))
        assert sorted(sql_column(hdb, "SELECT bid FROM quote", "bid")) == [float(i) for i in range(rows)]
    with kx.SyncQConnection(port=rdb_port, no_ctx=True) as rdb_conn:
        assert rdb_conn("count trade").py() == 0, "day D is not also in the new day"


def test_forced_end_of_day_then_tickerplant_crash_drops_nothing(strata):
    tp_port, rdb_port, hdb_port = free_port_number(), free_port_number(), free_port_number()
    tp = strata.tickerplant(tp_port)
    strata.hdb(hdb_port)
    strata.rdb(tp_port, rdb_port, hdb_port)
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        publish(feed, "trade", 0, 100, batch=1)
        feed(".u.end[]")
        publish(feed, "trade", 100, 50, batch=1)  # acknowledged, in the next day's journal
    tp.kill()
    tp.wait()
    strata.tickerplant(tp_port)
    rdb = strata.procs[2]
    if rdb.poll() is not None:  # an RDB that does not ride out restarts is started again
        strata.rdb(tp_port, rdb_port, hdb_port)

    def rdb_has_the_new_day():
        with kx.SyncQConnection(port=rdb_port, no_ctx=True) as conn:
            return conn("count trade").py() == 50

    eventually("the RDB holds rows 100-149", rdb_has_the_new_day)
    with kx.SyncQConnection(port=rdb_port, no_ctx=True) as conn:
        assert conn("select from trade").pd()["size"].tolist() == list(range(100, 150))
    with kx.SyncQConnection(port=hdb_port, no_ctx=True) as hdb:
        hdb(kx.CharVector("\\l ."))
        assert sorted(sql_column(hdb, "SELECT size FROM trade", "size")) == list(range(100))
