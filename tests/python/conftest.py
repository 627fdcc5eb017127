"""Shared fixtures for Strata's end-to-end Python tests.

The tests drive the real `strata` binary (path in $STRATA_BIN, set by
scripts/test-all) and real third-party clients and engines from PyPI.
"""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# scripts/test-all builds the extension with the workspace and lays the package out
# in $STRATA_PY_DIR/strata (the Python sources and strata/_native.abi3.so); an
# installed package (`pip install ./crates/strata-py`) works as well. Dask's worker
# processes find the package through PYTHONPATH, set here.
if os.environ.get("STRATA_PY_DIR"):
    sys.path.insert(0, os.environ["STRATA_PY_DIR"])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ["STRATA_PY_DIR"], os.environ.get("PYTHONPATH")) if p)


@pytest.fixture(scope="session")
def strata_bin() -> Path:
    """The `strata` binary under test; the suite fails, not skips, without one."""
    path = os.environ.get("STRATA_BIN") or shutil.which("strata")
    if not path or not Path(path).is_file():
        pytest.fail("set STRATA_BIN to the strata binary (scripts/test-all does)")
    return Path(path)


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def run_strata(strata_bin):
    """Runs `strata ARGS...` to completion and returns its CompletedProcess; fails the
    test with stdout and stderr when the command fails."""

    def run(*args, check=True, timeout=600):
        done = subprocess.run([str(strata_bin), *map(str, args)], capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            pytest.fail(f"strata {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    return run


@pytest.fixture(scope="session")
def strata():
    """The Python package `strata` under test (the suite fails, not skips, without one)."""
    try:
        import strata
    except ImportError as e:
        pytest.fail(f"cannot import strata ({e}): set STRATA_PY_DIR (scripts/test-all does) or pip install ./crates/strata-py")
    return strata
