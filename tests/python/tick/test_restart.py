"""`strata rdb` and `strata ctp` processes outlive a tickerplant killed with SIGKILL:
they keep running and answering during the outage and, once it is back on the same
port and journal, hold every acknowledged update once, in order (PyKX as the feed
and the querying client)."""

import time

import pykx as kx

from test_pykx import trade_columns
from tick_processes import free_port_number


def sizes(port):
    with kx.SyncQConnection(port=port, no_ctx=True) as rdb:
        return rdb("select from trade").pd()["size"].tolist()


def eventually(what, check, seconds=20.0):
    """Polls `check` until it holds (a deadline on waiting, not an assertion on speed)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def feed(tp_port, ids):
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as connection:
        for i in ids:
            connection(".u.upd", kx.SymbolAtom("trade"), trade_columns(["IBM"], [1.0], [i]))


def test_rdb_and_ctp_processes_ride_out_a_tickerplant_restart(strata):
    tp_port, rdb_port, ctp_port, rdb2_port = (free_port_number() for _ in range(4))
    tp = strata.tickerplant(tp_port)
    rdb = strata.rdb(tp_port, rdb_port)
    ctp = strata.start("ctp", "--tp", f"127.0.0.1:{tp_port}", "--port", ctp_port, "--bind", "127.0.0.1",
                       port=ctp_port)
    rdb2 = strata.rdb(ctp_port, rdb2_port)  # an RDB of the chained tickerplant
    feed(tp_port, range(100))
    tp.kill()  # SIGKILL
    tp.wait()

    for port in (rdb_port, rdb2_port):
        eventually("the RDB to answer with every acknowledged update", lambda: sizes(port) == list(range(100)))
    assert rdb.poll() is None and ctp.poll() is None and rdb2.poll() is None, "still running"

    strata.tickerplant(tp_port)
    feed(tp_port, range(100, 200))
    for port in (rdb_port, rdb2_port):
        eventually("the RDB to hold the updates after the restart", lambda: len(sizes(port)) >= 200)
        assert sizes(port) == list(range(200))
    assert rdb.poll() is None and ctp.poll() is None and rdb2.poll() is None
