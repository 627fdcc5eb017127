"""End of day is one transaction between tickerplant, journal and RDB: real `strata
tp`/`rdb`/`hdb` processes are killed with SIGKILL at every named step inside a forced
`.u.end[]` (fault points armed through STRATA_FAULTS, see strata_store::fault) and at
random moments within it, while a PyKX feed keeps publishing. After restarts and a
final end of day, every acknowledged id is in the HDB exactly once and no id is there
twice."""

import random
import threading
import time

import numpy as np
import pykx as kx
import pytest

from tick_processes import free_port_number

# Fault points on the tickerplant's path through `.u.end[]`, in order.
TP_POINTS = ["tp.eod.flushed", "tp.eod.journal-synced", "tp.eod.next-journal-created", "tp.eod.end-sent"]
# ... and on the RDB's (the partition's steps are strata-store's; the day has two tables).
RDB_POINTS = [
    "rdb.eod.received",
    "store.partition.table-staged",
    "store.partition.table-staged=kill@2",
    "store.partition.record-written",
    "store.partition.published",
    "rdb.eod.written",
    "rdb.eod.hdbs-told",
]


def armed(point):
    return point if "=" in point else f"{point}=kill"


def widened(points, ms):
    """Sleeps at every point, so a kill at a random moment lands inside end of day."""
    return ";".join(f"{p.split('=')[0]}=sleep:{ms}" for p in points)


# Each trial: the faults armed in successive tickerplant and RDB processes (an entry per
# start; None: none), and optionally a random external kill of one of them.
TRIALS = (
    [pytest.param({"tp": [armed(p)]}, id=f"tp-{p}") for p in TP_POINTS]
    + [pytest.param({"rdb": [armed(p)]}, id=f"rdb-{p}") for p in RDB_POINTS]
    + [
        # The RDB never hears `.u.end` and dies finishing the day on resume.
        pytest.param({"tp": [armed("tp.eod.next-journal-created")], "rdb": ["rdb.resume.day-finished=kill"]},
                     id="tp-before-end-then-rdb-on-resume"),
        # The RDB dies in end of day, then again in start-up recovery of that day.
        pytest.param({"rdb": [armed("rdb.eod.received"), "rdb.recovery.written=kill"]}, id="rdb-twice"),
        # Both die: the tickerplant once `.u.end` is sent, the RDB as it receives it.
        pytest.param({"tp": [armed("tp.eod.end-sent")], "rdb": [armed("rdb.eod.received")]}, id="both"),
    ]
    + [pytest.param({"tp": [widened(TP_POINTS, 10)], "kill": ("tp", 0.045)}, id=f"tp-random-{i}") for i in range(4)]
    + [pytest.param({"rdb": [widened(RDB_POINTS, 40)], "kill": ("rdb", 0.3)}, id=f"rdb-random-{i}")
       for i in range(4)]
)


class Feed:
    """Publishes trades whose size is a unique id, one sync `.u.upd` of 10 rows at a
    time, reconnecting whenever the tickerplant goes away; keeps the acknowledged ids."""

    def __init__(self, port):
        self.port = port
        self.acked: list[int] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        next_id = 0
        while not self.stopped.is_set():
            try:
                with kx.SyncQConnection(port=self.port, no_ctx=True, timeout=10) as tp:
                    while not self.stopped.is_set():
                        ids = list(range(next_id, next_id + 10))
                        next_id += 10  # an id whose call fails is never sent again
                        tp(".u.upd", kx.SymbolAtom("trade"), [
                            kx.SymbolVector([("AAPL", "MSFT", "IBM")[i % 3] for i in ids]),
                            kx.FloatVector(np.full(10, 100.0)),
                            kx.IntVector(np.array(ids, dtype=np.int32)),
                            kx.CharVector(" " * 10),
                        ])
                        self.acked.extend(ids)
            except Exception:  # noqa: BLE001 - the tickerplant was killed or is restarting
                time.sleep(0.05)

    def wait_for(self, count, seconds=60.0):
        deadline = time.monotonic() + seconds
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"the feed has {len(self.acked)} acknowledged ids, not {count}"
            time.sleep(0.02)

    def stop(self):
        self.stopped.set()
        self.thread.join(30)


def end_of_day(port, seconds=60.0):
    """Forces `.u.end[]`, retrying while the tickerplant restarts."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with kx.SyncQConnection(port=port, no_ctx=True, timeout=30) as tp:
                tp(".u.end[]")
                return
        except Exception:  # noqa: BLE001
            assert time.monotonic() < deadline, "the tickerplant never took .u.end[]"
            time.sleep(0.1)


def stored_ids(hdb_port, rdb_port):
    with kx.SyncQConnection(port=hdb_port, no_ctx=True, timeout=60) as hdb:
        hdb(kx.CharVector("\\l ."))
        in_hdb = hdb(kx.CharVector("SELECT size FROM trade")).pd()["size"].tolist()
    with kx.SyncQConnection(port=rdb_port, no_ctx=True, timeout=60) as rdb:
        in_rdb = rdb("select from trade").pd()["size"].tolist()
    return in_hdb, in_rdb


@pytest.mark.parametrize("trial", TRIALS)
def test_kills_inside_end_of_day_lose_and_duplicate_nothing(strata, trial):
    tp_port, rdb_port, hdb_port = free_port_number(), free_port_number(), free_port_number()
    faults = {"tp": list(trial.get("tp", [])), "rdb": list(trial.get("rdb", []))}
    # Restarts do not wait for the port: a process armed to die in its start-up
    # recovery never listens.
    starts = {
        "tp": lambda f, wait=False: strata.tickerplant(tp_port, faults=f, wait=wait),
        "rdb": lambda f, wait=False: strata.rdb(tp_port, rdb_port, hdb_port, faults=f, wait=wait),
    }
    procs = {"tp": starts["tp"](faults["tp"].pop(0) if faults["tp"] else None, wait=True)}
    strata.hdb(hdb_port)
    procs["rdb"] = starts["rdb"](faults["rdb"].pop(0) if faults["rdb"] else None, wait=True)
    expected_deaths = sum(f.count("kill") for f in trial.get("tp", []) + trial.get("rdb", []))
    feed = Feed(tp_port)
    feed.wait_for(300)
    ender = threading.Thread(target=end_of_day, args=(tp_port,), daemon=True)
    ender.start()
    if "kill" in trial:
        who, within = trial["kill"]
        time.sleep(random.uniform(0, within))
        procs[who].kill()
        expected_deaths += 1

    def revive():
        """Restarts what died, as a supervisor (systemd, the chaos bench) would: the
        next armed faults, then none. An RDB started while its tickerplant is down
        exits at once, and is started again here too. Returns the kills seen."""
        died = 0
        for who, proc in procs.items():
            if proc.poll() is not None:
                died += int(proc.returncode == -9)
                procs[who] = starts[who](faults[who].pop(0) if faults[who] else None)
        return died

    deaths, deadline = 0, time.monotonic() + 60
    while deaths < expected_deaths:
        assert time.monotonic() < deadline, f"{deaths} of {expected_deaths} armed kills happened"
        deaths += revive()
        time.sleep(0.02)
    ender.join(60)
    after_restarts, deadline = len(feed.acked), time.monotonic() + 60
    while len(feed.acked) < after_restarts + 300:
        assert time.monotonic() < deadline, f"the feed is stuck at {len(feed.acked)} acknowledged ids"
        revive()
        time.sleep(0.05)
    feed.stop()
    end_of_day(tp_port)

    acked = set(feed.acked)
    deadline = time.monotonic() + 90
    in_hdb, in_rdb, why = [], [], ""
    while True:
        try:
            in_hdb, in_rdb = stored_ids(hdb_port, rdb_port)
            if not in_rdb and acked <= set(in_hdb):
                break
        except Exception as e:  # noqa: BLE001 - a process still recovering
            why = str(e)
        revive()
        missing = sorted(acked - set(in_hdb) - set(in_rdb))
        assert time.monotonic() < deadline, (
            f"the acknowledged ids never all reached the HDB: {len(in_rdb)} still in the RDB, {len(missing)} "
            f"found nowhere (first {missing[:5]}), last error {why!r}; logs in {strata.root}"
        )
        time.sleep(0.2)
    assert all(p.poll() is None for p in procs.values()), "every process is running"
    assert len(in_hdb) == len(set(in_hdb)), f"{len(in_hdb) - len(set(in_hdb))} ids stored twice"
    assert acked <= set(in_hdb), f"{len(acked - set(in_hdb))} acknowledged ids lost"
