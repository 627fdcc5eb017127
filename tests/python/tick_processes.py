"""Real `strata tp`/`rdb` processes on 127.0.0.1 for the tick plane's end-to-end
tests, started and ended by the `strata` fixture in conftest.py."""

import os
import socket
import subprocess
import time
from pathlib import Path

# PyKX without a licence: IPC only, which is all these tests use.
os.environ.setdefault("PYKX_UNLICENSED", "1")

SCHEMA = "trade time:timespan sym:symbol price:float size:int cond:char\nquote time:timespan sym:symbol bid:float ask:float\n"


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 30.0) -> None:
    """Waits until something listens on `port`; fails if `proc` exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port} after {seconds} s")


def free_port_number() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """Starts strata processes and ends every one of them at teardown."""

    def __init__(self, strata_bin: Path, root: Path):
        self.strata_bin = strata_bin
        self.root = root
        self.procs: list[subprocess.Popen] = []

    def start(self, *args, port: int, faults: str | None = None, wait: bool = True) -> subprocess.Popen:
        """Starts `strata ARGS...` and (with `wait`) waits for it to listen on `port`;
        `faults` arms fault points (STRATA_FAULTS, see strata_store::fault) in that
        process only."""
        log = open(self.root / f"{args[0]}-{port}.log", "ab")
        env = dict(os.environ)
        env.pop("STRATA_FAULTS", None)
        if faults:
            env["STRATA_FAULTS"] = faults
        proc = subprocess.Popen([str(self.strata_bin), *map(str, args)], stdout=log, stderr=log, env=env)
        self.procs.append(proc)
        if wait:
            wait_for_port(port, proc)
        return proc

    def tickerplant(self, port: int, faults: str | None = None, wait: bool = True) -> subprocess.Popen:
        schema = self.root / "sym.schema"
        schema.write_text(SCHEMA)
        return self.start("tp", "--schema", schema, "--journal-dir", self.root / "journal", "--port", port,
                          "--bind", "127.0.0.1", port=port, faults=faults, wait=wait)

    def rdb(self, tp_port: int, port: int, hdb_port: int | None = None, faults: str | None = None,
            wait: bool = True) -> subprocess.Popen:
        hdb = ["--hdb", f"127.0.0.1:{hdb_port}"] if hdb_port else []
        return self.start("rdb", "--tp", f"127.0.0.1:{tp_port}", "--db", self.root / "hdb", "--port", port,
                          "--bind", "127.0.0.1", *hdb, port=port, faults=faults, wait=wait)

    def hdb(self, port: int, *extra) -> subprocess.Popen:
        return self.start("hdb", "--db", self.root / "hdb", "--port", port, "--bind", "127.0.0.1", *extra, port=port)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


