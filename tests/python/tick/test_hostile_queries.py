"""Clients that try to take a server down, on real `strata tp`/`rdb`/`hdb` processes
with PyKX (and raw sockets) as the clients: SQL a BI tool writes for a long list of
symbols, runaway statements, functions that would make gigabytes, and headers that
promise large messages and never send them. Each is answered or refused with an
error; the server stays up and keeps serving its other clients."""

import socket
import struct
import threading
import time

import numpy as np
import pykx as kx

from tick_processes import free_port_number

SYMS = [f"S{i}" for i in range(50)]


def sql(port, statement, timeout=120):
    with kx.SyncQConnection(port=port, no_ctx=True, timeout=timeout) as conn:
        return conn(kx.CharVector(statement)).pd()


def count(port, where):
    return int(sql(port, f"SELECT count(*) AS n FROM trade WHERE {where}")["n"][0])


def error_of(port, statement, timeout=120):
    try:
        sql(port, statement, timeout)
    except kx.QError as e:
        return str(e)
    raise AssertionError(f"{statement[:80]}...: answered, expected an error")


def memory_kib(proc, field):
    with open(f"/proc/{proc.pid}/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1])


def start_day(strata, hdb_args=()):
    """A TP, an HDB holding one written day and an RDB holding the next, 10k trades each."""
    tp_port, rdb_port, hdb_port = free_port_number(), free_port_number(), free_port_number()
    tp = strata.tickerplant(tp_port)
    hdb = strata.hdb(hdb_port, *hdb_args)
    rdb = strata.rdb(tp_port, rdb_port, hdb_port)
    n = 10_000
    with kx.SyncQConnection(port=tp_port, no_ctx=True) as feed:
        for _ in range(2):
            for start in range(0, n, 1000):
                ids = np.arange(start, start + 1000)
                feed(".u.upd", kx.SymbolAtom("trade"), [
                    kx.SymbolVector([SYMS[i % len(SYMS)] for i in ids]),
                    kx.FloatVector(np.full(1000, 100.0)),
                    kx.IntVector(ids.astype(np.int32)),
                    kx.CharVector(" " * 1000),
                ])
            if _ == 0:
                feed(".u.end[]")
    def day_served():
        try:
            return sql(hdb_port, "SELECT count(*) AS n FROM trade")["n"][0] == n
        except kx.QError:  # no partition yet: the table does not exist
            return False

    deadline = time.monotonic() + 60
    while not day_served():
        assert time.monotonic() < deadline, "the first day reached the HDB"
        time.sleep(0.2)
    return {"tp": (tp, tp_port), "rdb": (rdb, rdb_port), "hdb": (hdb, hdb_port)}


def test_long_or_and_and_arithmetic_chains_answer_or_refuse_and_the_servers_stay_up(strata):
    servers = start_day(strata)
    for name in ("rdb", "hdb"):
        proc, port = servers[name]
        in_list = count(port, "sym IN ('S1', 'S2', 'S3')")
        assert in_list == 600
        for terms in (900, 100_000):
            chain = " OR ".join(f"sym = 'S{1 + i % 3}'" for i in range(terms))
            assert count(port, chain) == in_list, f"{name}: {terms} OR terms"
        ands = " AND ".join(f"size >= {-i}" for i in range(690))
        assert count(port, ands) == 10_000, f"{name}: 690 AND terms"
        plus = " + ".join(["size"] * 900)
        assert count(port, f"{plus} >= 0") == 10_000, f"{name}: 900 + terms"
        error = error_of(port, f"SELECT count(*) FROM trade WHERE {' + '.join(['size'] * 100_000)} >= 0")
        assert "nests" in error and "1000" in error, error
        nested = "(" * 10_000 + "size" + ")" * 10_000
        assert "recursion limit" in error_of(port, f"SELECT count(*) FROM trade WHERE {nested} > 0").lower()
        assert proc.poll() is None, f"the {name} is running"
        assert count(port, "sym = 'S1'") == 200, f"the {name} still answers"


def test_a_runaway_query_times_out_while_others_are_answered(strata):
    servers = start_day(strata, ("--query-timeout", "3"))
    hdb, port = servers["hdb"]
    outcome = {}

    def runaway():
        outcome["error"] = error_of(port, "SELECT count(*) FROM generate_series(1, 1000000000000)")

    started = time.monotonic()
    thread = threading.Thread(target=runaway)
    thread.start()
    time.sleep(0.5)
    answered = [count(port, "sym = 'S1'") for _ in range(10)]
    assert answered == [200] * 10 and thread.is_alive(), "others are answered while it runs"
    thread.join(60)
    assert "time limit" in outcome["error"], outcome
    assert time.monotonic() - started < 30
    assert hdb.poll() is None


def test_functions_cannot_make_more_than_the_query_memory(strata):
    servers = start_day(strata, ("--query-memory-mb", "256"))
    hdb, port = servers["hdb"]
    error = error_of(port, "SELECT repeat('x', 2000000000) AS s")
    assert "a query may hold here" in error, error
    assert memory_kib(hdb, "VmHWM") < 1 << 20, "the HDB never held a gigabyte"
    assert count(port, "sym = 'S1'") == 200


def test_headers_that_promise_large_messages_take_no_memory_until_bytes_arrive(strata):
    servers = start_day(strata)
    tp, port = servers["tp"]
    before = memory_kib(tp, "VmRSS")
    sockets = []
    for _ in range(16):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"\x03\x00")  # kdb+'s handshake: no user, capability 3
        assert s.recv(1) == b"\x03"
        # A message header promising 256 MiB, a few bytes of it, then silence.
        s.sendall(struct.pack("<BBBBI", 1, 0, 0, 0, 256 << 20) + b"x" * 100)
        sockets.append(s)
    time.sleep(1.0)
    grown = memory_kib(tp, "VmRSS") - before
    assert grown < 64 << 10, f"16 promised 256 MiB messages grew the TP by {grown} KiB"
    with kx.SyncQConnection(port=port, no_ctx=True) as feed:
        assert feed(".u.i").py() >= 0, "the TP still serves"
    for s in sockets:
        s.close()
    assert tp.poll() is None
