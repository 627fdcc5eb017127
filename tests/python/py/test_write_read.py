"""Writing DataFrames into partitions and reading them back, through every library
the package speaks to: polars, pandas, pyarrow and DuckDB."""

import datetime

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

DAY = datetime.date(2024, 1, 2)


def trades(n=1000, start=datetime.datetime(2024, 1, 2, 9, 30)):
    """A polars trade table with a null price and a null size among its rows."""
    syms = ["AAPL", "MSFT", "IBM", "GOOG"]
    return pl.DataFrame(
        {
            "sym": [syms[i % 4] for i in range(n)],
            "time": [start + datetime.timedelta(microseconds=37 * i) for i in range(n)],
            "price": [None if i == 7 else 100.0 + i * 0.25 for i in range(n)],
            "size": [None if i == 11 else (i * 13) % 500 for i in range(n)],
        },
        schema={"sym": pl.String, "time": pl.Datetime("us"), "price": pl.Float64, "size": pl.Int64},
    )


def as_stored(df: pl.DataFrame) -> pl.DataFrame:
    """`trades` as Strata stores it: nanosecond times."""
    return df.with_columns(pl.col("time").cast(pl.Datetime("ns")))


def as_text(df: pl.DataFrame) -> pl.DataFrame:
    """A result with its symbol column (a categorical) as text again."""
    return df.with_columns(pl.col("sym").cast(pl.String))


def test_polars_round_trip_through_sql(strata, db):
    df = trades()
    report = db.write("trade", df, partition=DAY)
    assert report["rows"] == len(df) and report["rows_before"] is None and report["rows_after"] == len(df)
    out = db.sql("SELECT sym, time, price, size FROM trade WHERE date = '2024-01-02' ORDER BY time").pl()
    assert out.schema["sym"] == pl.Categorical, "symbols arrive as categoricals"
    assert as_text(out).equals(as_stored(df))
    assert out["price"].null_count() == 1 and out["size"].null_count() == 1, "nulls survive as nulls"
    # Another process's view: a fresh open reads the same rows from the files.
    again = strata.open(db.path).sql("SELECT count(*) AS n, sum(size) AS s FROM trade").arrow().to_pylist()
    assert again == [{"n": len(df), "s": df["size"].sum()}]


def test_pandas_round_trip(db):
    df = pd.DataFrame(
        {
            "sym": ["a", "b", "a", "c"],
            "bid": [1.5, 2.5, float("nan"), 4.0],
            "qty": [1, 2, 3, 4],
            "ts": pd.to_datetime(["2024-01-03 09:30", "2024-01-03 09:31", "2024-01-03 09:32", "2024-01-03 09:33"]).as_unit("ns"),
        }
    )
    db.write("quote", df, partition="2024.01.03")
    out = db.table("quote", dates=[datetime.date(2024, 1, 3)], columns=["sym", "bid", "qty", "ts"]).df()
    assert list(out.columns) == ["sym", "bid", "qty", "ts"]
    assert out["sym"].astype(str).tolist() == ["a", "b", "a", "c"]
    assert out["qty"].tolist() == [1, 2, 3, 4]
    assert out["ts"].tolist() == df["ts"].tolist()
    assert out["bid"].iloc[[0, 1, 3]].tolist() == [1.5, 2.5, 4.0] and pd.isna(out["bid"].iloc[2])


def test_pyarrow_round_trip_of_several_batches_and_dates(db):
    schema = pa.schema([("sym", pa.string()), ("px", pa.float64()), ("n", pa.int32())])
    for day in range(2, 6):
        batches = [
            pa.record_batch([pa.array(["x", "y"]), pa.array([day, day + 0.5]), pa.array([day, -day], pa.int32())], schema=schema),
            pa.record_batch([pa.array(["z"]), pa.array([None], pa.float64()), pa.array([7], pa.int32())], schema=schema),
        ]
        db.write("t", pa.Table.from_batches(batches), partition=datetime.date(2024, 1, day))
    assert db.partitions("t") == [datetime.date(2024, 1, d) for d in range(2, 6)]
    assert db.partitions() == db.partitions("t") and db.partitions("nope") == []
    got = db.table("t", dates=("2024.01.03", "2024.01.04"), columns=["date", "n"], where="n > 0").arrow()
    assert got.column_names == ["date", "n"]
    assert sorted(zip(got["date"].to_pylist(), got["n"].to_pylist())) == [
        (datetime.date(2024, 1, 3), 3),
        (datetime.date(2024, 1, 3), 7),
        (datetime.date(2024, 1, 4), 4),
        (datetime.date(2024, 1, 4), 7),
    ]
    batches = db.sql("SELECT px FROM t").fetch_batches()
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert sum(b.num_rows for b in batches) == 12
    assert db.table("t", dates=[]).arrow().num_rows == 0


def test_listing_and_schema(db):
    db.write("trade", trades(10), partition=DAY)
    db.write("ref", pa.table({"sym": ["AAPL"], "lot": pa.array([100], pa.int16())}))
    assert db.tables() == ["ref", "trade"]
    schema = db.schema("trade")
    assert isinstance(schema, pa.Schema)
    assert {"sym", "time", "price", "size", "date"} <= set(schema.names)
    assert schema.field("size").type == pa.int64() and schema.field("time").type == pa.timestamp("ns")
    assert db.schema("ref").field("lot").type == pa.int16()


def test_mode_fail_refuses_append_adds_replace_replaces(strata, db):
    df = trades(100)
    db.write("trade", df, partition=DAY)
    with pytest.raises(strata.Error, match="trade"):
        db.write("trade", df, partition=DAY)
    assert len(db.sql("SELECT * FROM trade")) == 100, "a refused write leaves the table as it was"
    report = db.write("trade", trades(30), partition=DAY, mode="append")
    assert (report["rows_before"], report["rows_after"]) == (100, 130)
    assert len(db.sql("SELECT * FROM trade")) == 130
    db.write("trade", trades(5), partition=DAY, mode="replace")
    out = db.sql("SELECT sym, time, price, size FROM trade ORDER BY time").pl()
    assert as_text(out).equals(as_stored(trades(5)))
    with pytest.raises(ValueError, match="mode"):
        db.write("trade", df, partition=DAY, mode="merge")


def test_type_mismatch_names_the_column_and_writes_nothing(strata, db):
    db.write("trade", trades(10), partition=DAY)
    wrong = trades(10).with_columns(pl.col("price").cast(pl.Int32))
    with pytest.raises(strata.Error, match="price"):
        db.write("trade", wrong, partition=datetime.date(2024, 1, 3))
    assert db.partitions() == [DAY]
    # cast=True converts when no value changes, as `strata import --cast` does.
    report = db.write("trade", wrong, partition=datetime.date(2024, 1, 3), cast=True)
    assert report["cast"] == [("price", "int", "float")]


def test_types_store_columns_as_other_kdb_types(strata, db):
    df = pl.DataFrame({"sym": ["a", "b"], "ex": ["N", "Q"], "qty": [1, 2]})
    db.write("fills", df, partition=DAY, types={"ex": "char", "qty": "int"})
    schema = db.schema("fills")
    assert schema.field("ex").type == pa.dictionary(pa.uint8(), pa.string()), "SQL sees a char column so"
    assert schema.field("ex").metadata == {b"strata.type": b"char"}
    assert schema.field("qty").metadata == {b"strata.type": b"int"} and schema.field("date").metadata is None
    assert schema.field("qty").type == pa.int32()
    assert db.sql("SELECT count(*) AS n FROM fills WHERE ex = 'Q' AND qty = 2").arrow().column("n")[0].as_py() == 1
    with pytest.raises(ValueError, match=r"unknown type \"chr\" for column ex; types are"):
        db.write("fills", df, partition=DAY, mode="replace", types={"ex": "chr"})
    with pytest.raises(strata.Error, match="qty"):
        db.write("fills", df.with_columns(pl.Series("qty", [1, 2**40])), partition=DAY, mode="replace", types={"qty": "int"})


def test_sort_and_parted(db):
    df = trades(200)
    db.write("trade", df, partition=DAY, sort=["sym", "time"], parted="sym")
    out = as_text(db.sql("SELECT sym, time FROM trade").pl())
    assert out.equals(as_stored(df).select("sym", "time").sort("sym", "time", maintain_order=True))


def test_errors_are_strata_errors(strata, db):
    assert issubclass(strata.Error, Exception)
    with pytest.raises(strata.Error, match="(?i)sql|expected|parser"):
        db.sql("SELEC 1")
    with pytest.raises(strata.Error, match="nope"):
        db.sql("SELECT * FROM nope")
    with pytest.raises(strata.Error, match="nope"):
        db.schema("nope")
    with pytest.raises(strata.Error):
        db.write("t", pa.table({"x": [1]}), partition="2024-13-45")
    with pytest.raises(TypeError, match="list"):
        db.write("t", [1, 2, 3], partition=DAY)
    with pytest.raises(strata.Error, match="no such database"):
        strata.open(db.path / "missing", create=False)


def test_zero_copy_hand_over(db):
    db.write("trade", trades(), partition=DAY)
    res = db.sql("SELECT sym, size, price FROM trade")
    # Two exports of one result point at the same memory: neither copied it.
    first, second = res.arrow(), res.arrow()
    assert first.column("size").chunk(0).buffers()[1].address == second.column("size").chunk(0).buffers()[1].address
    # DuckDB scans the result object itself through __arrow_c_stream__.
    got = duckdb.sql("SELECT sym::VARCHAR AS sym, sum(size) AS s FROM res GROUP BY 1 ORDER BY 1").fetchall()
    want = trades().group_by("sym").agg(pl.col("size").sum()).sort("sym").rows()
    assert got == want
    assert pa.table(res).num_rows == len(res) == 1000
    assert pl.DataFrame(res).height == 1000
