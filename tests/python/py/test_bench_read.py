"""`strata bench read` end to end on a small table: every engine reads the same
values into every target, and the report states the issue's target."""

import csv
import os
import sys


def test_bench_read_reports_every_engine_reading_the_same_values(run_strata, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_PYTHON", sys.executable)
    out = tmp_path / "out"
    done = run_strata("bench", "read", "--rows", "20000", "--rounds", "2", "--out", out, "--scratch", tmp_path / "s")
    assert "into arrow: at least 2x faster than pyarrow" in done.stdout
    with open(out / "read-reads-ms.csv") as f:
        rows = list(csv.DictReader(f))
    reads = {(r["engine"], r["target"]) for r in rows}
    for engine in ("strata", "parquet-none", "parquet-snappy", "duckdb-file"):
        for target in ("arrow", "polars", "pandas"):
            assert (engine, target) in reads
    assert all(r["same values"] == "yes" for r in rows if r["engine"] != "memory-copy"), rows
    assert all(r["rows"] == "20000" for r in rows)
    assert (out / "read.html").stat().st_size > 0
    assert os.path.isdir(tmp_path / "s" / "stores" / "db"), "--scratch keeps the stores"


def test_bench_output_writes_every_format_that_duckdb_reads_back_whole(run_strata, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_PYTHON", sys.executable)
    out = tmp_path / "out"
    run_strata("bench", "output", "--rows", "5000", "--rounds", "1", "--out", out)
    with open(out / "output.csv") as f:
        rows = list(csv.DictReader(f))
    writes = {(r["engine"], r["format"]): r for r in rows}
    for engine in ("strata-sql", "duckdb-copy"):
        for fmt in ("csv", "json", "parquet"):
            assert writes[(engine, fmt)]["rows read back"] == "5000", writes[(engine, fmt)]
            assert float(writes[(engine, fmt)]["MiB"]) > 0
    assert ("strata-sql-start", "csv") in writes
