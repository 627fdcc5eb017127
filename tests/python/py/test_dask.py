"""`strata.dask.read_table` on a real `dask.distributed` LocalCluster of worker
processes, each opening the database itself: answers equal the in-process SQL's,
with no row lost or read twice when large days are cut into symbol ranges."""

import datetime

import pandas as pd
import polars as pl
import pytest

dask = pytest.importorskip("dask", reason="dask is in scripts/requirements-test.txt")
from dask.distributed import Client, LocalCluster  # noqa: E402

FIRST = datetime.date(2024, 3, 1)
DAYS = [FIRST + datetime.timedelta(days=i) for i in range(20)]
SYMS = ["AAPL", "AMZN", "GOOG", "IBM", "MSFT", "NVDA", "ORCL", "TSLA"]


def day_of_trades(day_index: int, n: int = 400) -> pl.DataFrame:
    """Trades of one day; the first day also has rows with a null symbol."""
    sym = [SYMS[(i * 5 + day_index) % len(SYMS)] for i in range(n)]
    if day_index == 0:
        sym[3] = sym[10] = None
    return pl.DataFrame(
        {
            "sym": sym,
            "time": [datetime.timedelta(hours=9, microseconds=1000 * i) for i in range(n)],
            "price": [50.0 + ((i * 37 + day_index * 11) % 1000) / 8 for i in range(n)],
            "size": [1 + (i * 13 + day_index) % 700 for i in range(n)],
        },
        schema={"sym": pl.String, "time": pl.Duration("ns"), "price": pl.Float64, "size": pl.Int64},
    )


@pytest.fixture(scope="module")
def hdb(strata, tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "db"
    db = strata.open(path)
    for i, day in enumerate(DAYS):
        db.write("trade", day_of_trades(i), partition=day, sort=["sym", "time"], parted="sym")
    return path


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            yield client


def test_vwap_on_a_cluster_equals_sql(strata, hdb, client):
    import strata.dask

    trades = strata.dask.read_table(hdb, "trade", dates=(DAYS[0], DAYS[-1]), columns=["sym", "price", "size"])
    assert trades.npartitions == len(DAYS), "one Dask partition per date partition"
    trades = trades.assign(notional=trades["price"] * trades["size"])
    sums = trades.groupby("sym")[["notional", "size"]].sum().compute()
    vwap = (sums.notional / sums["size"]).sort_index()
    expected = (
        strata.open(hdb)
        .sql("SELECT sym, sum(price * size) / sum(size) AS vwap FROM trade WHERE sym IS NOT NULL GROUP BY sym")
        .df()
        .astype({"sym": str})
        .set_index("sym")
        .vwap.sort_index()
    )
    assert list(vwap.index) == SYMS == list(expected.index)
    pd.testing.assert_series_equal(vwap, expected, check_names=False, check_index_type=False, rtol=1e-12)
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 3, "three worker processes"


def test_large_days_cut_by_symbol_lose_and_repeat_nothing(strata, hdb, client):
    import strata.dask

    pieces = strata.dask.read_table(hdb, "trade", dates=DAYS[:3], split_rows=150)
    assert pieces.npartitions > 3, "each 400-row day is cut into symbol ranges"
    got = pieces.compute().sort_values(["date", "sym", "time"], na_position="first").reset_index(drop=True)
    expected = (
        strata.open(hdb)
        .table("trade", dates=DAYS[:3])
        .arrow()
    )
    expected = pl.from_arrow(expected).with_columns(pl.col("sym").cast(pl.String)).to_pandas()
    expected = expected.sort_values(["date", "sym", "time"], na_position="first").reset_index(drop=True)
    assert got["sym"].isna().sum() == 2, "null symbols are kept, once"
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_filters_select_rows_and_unknown_tables_fail(strata, hdb, client):
    import strata.dask

    filters = [("sym", "in", ["IBM", "AAPL"]), ("size", ">", 100), ("date", ">=", DAYS[5])]
    got = strata.dask.read_table(hdb, "trade", filters=filters, columns=["sym", "size"]).compute()
    n = strata.open(hdb).sql(
        "SELECT count(*) AS n FROM trade WHERE sym IN ('IBM', 'AAPL') AND size > 100 AND date >= DATE '2024-03-06'"
    ).arrow().column("n")[0].as_py()
    assert len(got) == n > 0 and set(got["sym"]) == {"IBM", "AAPL"}
    with pytest.raises(strata.Error, match="no table fills"):
        strata.dask.read_table(hdb, "fills")
