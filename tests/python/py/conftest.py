"""Fixtures for the tests of the Python package `strata` (crates/strata-py); the
module itself is the fixture `strata` of tests/python/conftest.py."""

import pytest


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
