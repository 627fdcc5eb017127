"""Fixtures for the tick plane's end-to-end tests: real `strata tp`/`rdb`
processes on 127.0.0.1 and PyKX (unlicensed IPC mode) as the third-party client."""

import pytest

from tick_processes import Processes


@pytest.fixture
def strata(strata_bin, tmp_path):
    procs = Processes(strata_bin, tmp_path)
    yield procs
    procs.stop_all()
