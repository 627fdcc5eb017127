"""Fixtures for the tests of the Python package `strata` (crates/strata-py).

scripts/test-all builds the extension with the workspace and lays the package out
in $STRATA_PY_DIR/strata (the Python sources and strata/_native.abi3.so); an
installed package (`pip install ./crates/strata-py`) works as well. The suite
fails, not skips, without one. Dask's worker processes find the package through
PYTHONPATH, set here.
"""

import os
import sys

import pytest

if os.environ.get("STRATA_PY_DIR"):
    sys.path.insert(0, os.environ["STRATA_PY_DIR"])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ["STRATA_PY_DIR"], os.environ.get("PYTHONPATH")) if p)


@pytest.fixture(scope="session")
def strata():
    """The `strata` module under test."""
    try:
        import strata
    except ImportError as e:
        pytest.fail(f"cannot import strata ({e}): set STRATA_PY_DIR (scripts/test-all does) or pip install ./crates/strata-py")
    return strata


@pytest.fixture
def db(strata, tmp_path):
    """A new, empty database in a temporary directory."""
    return strata.open(tmp_path / "db")


@pytest.fixture
def tick(strata_bin, tmp_path):
    """Real `strata tp`, `rdb` and `hdb` processes, killed at the end."""
    from tick_processes import Processes

    procs = Processes(strata_bin, tmp_path)
    yield procs
    procs.stop_all()
