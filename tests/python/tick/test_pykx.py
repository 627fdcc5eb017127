"""PyKX, a kdb+ client nobody here wrote, against real strata processes: it
publishes with `.u.upd`, subscribes with `.u.sub` and receives updates, queries the
RDB, and its sync updates survive a SIGKILL of the tickerplant."""

import asyncio
import time

import numpy as np
import pykx as kx

from tick_processes import free_port_number


def trade_columns(syms, prices, sizes):
    """A list of columns (sym price size cond) as a feed sends it; the TP adds time."""
    return [
        kx.SymbolVector(syms),
        kx.FloatVector(np.array(prices, dtype=np.float64)),
        kx.IntVector(np.array(sizes, dtype=np.int32)),
        kx.CharVector(" " * len(syms)),
    ]


def next_message(connection, seconds=20.0):
    """The next message on a RawQConnection (its poll_recv does not block)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = connection.poll_recv()
        if message is not None:
            return message
        time.sleep(0.005)
    raise AssertionError(f"no message within {seconds} s")


async def publish_and_receive(tp_port):
    """Subscribes with one PyKX connection, publishes with another, and returns the
    syms the subscriber received."""
    async with kx.RawQConnection(port=tp_port, no_ctx=True) as subscriber:
        # In an event loop a call is a task whose result is the response; published
        # updates arrive through poll_recv.
        answer = await subscriber(".u.sub", kx.SymbolAtom("trade"), kx.SymbolAtom(""))
        # Unlicensed PyKX converts to Python rather than indexing K objects.
        table, empty = answer.py()
        assert table == "trade"
        assert list(empty) == ["time", "sym", "price", "size", "cond"]

        with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
            feed(".u.upd", kx.SymbolAtom("trade"), trade_columns(["IBM", "MSFT"], [101.5, 99.25], [100, 200]))
            feed("upd", kx.SymbolAtom("trade"), trade_columns(["AAPL"], [180.0], [300]))
            assert feed(".u.i").py() == 2

        received = []
        while len(received) < 3:
            function, table, rows = next_message(subscriber).py()
            assert (function, table) == ("upd", "trade")
            received.extend(rows["sym"])
        return received


def test_pykx_publishes_subscribes_and_queries(strata):
    tp_port, rdb_port = free_port_number(), free_port_number()
    strata.tickerplant(tp_port)
    assert asyncio.run(publish_and_receive(tp_port)) == ["IBM", "MSFT", "AAPL"]

    strata.rdb(tp_port, rdb_port)
    with kx.SyncQConnection(port=rdb_port, no_ctx=True) as rdb:
        assert rdb("count trade").py() == 3
        table = rdb("select from trade").pd()
        assert list(table["sym"]) == ["IBM", "MSFT", "AAPL"]
        assert list(table["size"]) == [100, 200, 300]
        assert table["price"].tolist() == [101.5, 99.25, 180.0]


def test_sync_updates_survive_sigkill_of_the_tickerplant(strata):
    tp_port, rdb_port = free_port_number(), free_port_number()
    tp = strata.tickerplant(tp_port)
    acknowledged = 0
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        for i in range(200):
            feed(".u.upd", kx.SymbolAtom("trade"), trade_columns(["IBM"], [1.0], [i]))
            acknowledged += 1
    tp.kill()  # SIGKILL: no chance to flush anything
    tp.wait()
    strata.tickerplant(tp_port)
    strata.rdb(tp_port, rdb_port)
    with kx.SyncQConnection(port=rdb_port, no_ctx=True) as rdb:
        sizes = rdb("select from trade").pd()["size"].tolist()
    assert sizes == list(range(acknowledged))
