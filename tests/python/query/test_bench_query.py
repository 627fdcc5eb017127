"""`strata bench query` end to end on a small generated day: Strata, DuckDB and
Polars run the fourteen queries in one run, agree on every query's row count, and
the report comes out as a terminal table, CSV and HTML."""

import csv
import sys


def test_bench_query_runs_all_three_engines(run_strata, tmp_path, monkeypatch):
    # DuckDB and Polars run in the interpreter running these tests.
    monkeypatch.setenv("STRATA_PYTHON", sys.executable)
    out = tmp_path / "reports"
    done = run_strata("bench", "query", "--quotes", "40000", "--trades", "4000", "--syms", "60", "--repeats", "1",
                      "--scratch", tmp_path / "scratch", "--out", out)
    assert "geometric mean" in done.stdout
    with open(out / "query.csv") as f:
        rows = list(csv.DictReader(f))
    queries = [r for r in rows if r["query"].startswith("q")]
    assert [r["query"][:3] for r in queries] == [f"q{i:02d}" for i in range(1, 15)]
    for r in queries:
        assert r["rows agree"] == "yes", r
        for engine in ("strata", "duckdb", "polars"):
            assert float(r[f"{engine} warm ms"]) > 0, (engine, r)
        assert float(r["strata/duckdb warm"]) > 0 and float(r["strata/polars warm"]) > 0, r
    assert int(queries[0]["rows"]) == 40_000, "q01 returns every quote"
    mean = next(r for r in rows if r["query"] == "geometric mean")
    assert float(mean["strata/duckdb warm"]) > 0
    assert (out / "query.html").read_text().count("<table") >= 3
