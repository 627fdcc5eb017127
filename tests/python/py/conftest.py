"""Fixtures for the tests of the Python package `strata` (crates/strata-py).

scripts/test-all builds the extension with the workspace and puts it on the path
as $STRATA_PY_DIR/strata.abi3.so; an installed package (`pip install
./crates/strata-py`) works as well. The suite fails, not skips, without one.
"""

import os
import sys

import pytest

if os.environ.get("STRATA_PY_DIR"):
    sys.path.insert(0, os.environ["STRATA_PY_DIR"])


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
