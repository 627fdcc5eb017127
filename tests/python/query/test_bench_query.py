"""`strata bench query` end to end on a small generated day: Strata (library, HDB over
IPC, `strata sql`), in-memory DuckDB, DuckDB from a file and in-memory Polars run the
analyst workload in one run, every engine's answer equals Strata's row for row, and
the report comes out as a terminal table, CSV and HTML with per-family means."""

import csv
import sys

FAMILIES = ["select", "derive", "aggregate", "bars", "pivot", "window", "extreme", "sequence", "asof", "forms"]
ENGINES = ["strata", "strata-hdb", "strata-sql", "duckdb-mem", "duckdb-file", "polars-mem"]


def test_bench_query_engines_agree_on_the_workload(run_strata, tmp_path, monkeypatch):
    # DuckDB and Polars run in the interpreter running these tests.
    monkeypatch.setenv("STRATA_PYTHON", sys.executable)
    out = tmp_path / "reports"
    done = run_strata("bench", "query", "--quotes", "40000", "--trades", "6000", "--syms", "80", "--repeats", "1",
                      "--scratch", tmp_path / "scratch", "--out", out)
    assert "geometric means" in done.stdout
    with open(out / "query.csv") as f:
        queries = list(csv.DictReader(f))
    assert len(queries) >= 2 * len(FAMILIES)
    for family in FAMILIES:
        assert sum(r["family"] == family for r in queries) >= 2, family
    for r in queries:
        assert r["results agree"] == "yes", r
        for engine in ENGINES:
            assert float(r[f"{engine} warm ms"]) > 0, (engine, r)
        assert float(r["strata/duckdb-mem warm"]) > 0 and float(r["strata/polars-mem warm"]) > 0, r
    assert sum(int(r["rows"]) > 0 for r in queries) >= len(queries) - 2, "the queries find rows in the generated day"
    families = list(out.glob("query-geometric-means*.csv"))
    assert len(families) == 1, list(out.iterdir())
    with open(families[0]) as f:
        means = {r["family"]: r for r in csv.DictReader(f)}
    assert set(FAMILIES) | {"overall"} == set(means)
    assert float(means["overall"]["geomean strata/duckdb-mem warm"]) > 0
    assert int(means["overall"]["agreeing"]) == len(queries)
    assert (out / "query.html").read_text().count("<table") >= 4


def test_bench_query_runs_the_families_named_and_refuses_unknown_ones(run_strata, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_PYTHON", sys.executable)
    refused = run_strata("bench", "query", "--families", "forms,nope", "--scratch", tmp_path / "s0", check=False)
    assert refused.returncode != 0 and "no query family nope" in refused.stderr and "forms" in refused.stderr, refused
    out = tmp_path / "reports"
    run_strata("bench", "query", "--quotes", "40000", "--trades", "6000", "--syms", "80", "--repeats", "1",
               "--families", "forms,asof", "--scratch", tmp_path / "scratch", "--out", out)
    with open(out / "query.csv") as f:
        families = {r["family"] for r in csv.DictReader(f)}
    assert families == {"forms", "asof"}
