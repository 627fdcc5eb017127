"""Runs the query set on DuckDB and Polars over Parquet files, for `strata bench query`.

Usage: python engines.py SPEC.json OUT.json
SPEC: {"tables": {name: parquet path}, "repeats": n,
       "queries": [{"name": ..., "duckdb": [sql, ...], "polars": "python expression"}]}
OUT:  one line per engine and query: engine, name, cold ms, warm ms, rows (tab-separated)
Cold: the Parquet files are dropped from the page cache (posix_fadvise) and a fresh
connection or lazy frame is used; warm: the best of `repeats` further runs.
"""

import json
import os
import sys
import time

import duckdb
import polars as pl


def evict(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed(run):
    start = time.perf_counter()
    rows = run()
    return (time.perf_counter() - start) * 1e3, rows


def duck_runner(tables):
    con = duckdb.connect()
    for name, path in tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def run_duckdb(spec):
    out = {}
    paths = list(spec["tables"].values())
    for q in spec["queries"]:
        def once(con):
            return sum(con.sql(sql).to_arrow_table().num_rows for sql in q["duckdb"])
        evict(paths)
        con = duck_runner(spec["tables"])
        cold, rows = timed(lambda: once(con))
        warm = min(timed(lambda: once(con))[0] for _ in range(spec["repeats"]))
        out[q["name"]] = {"cold_ms": cold, "warm_ms": warm, "rows": rows}
    return out


def run_polars(spec):
    out = {}
    paths = list(spec["tables"].values())
    for q in spec["queries"]:
        def once():
            env = {name: pl.scan_parquet(path) for name, path in spec["tables"].items()}
            env["pl"] = pl
            frames = eval(q["polars"], env)
            return sum(f.collect().height for f in frames)
        evict(paths)
        cold, rows = timed(once)
        warm = min(timed(once)[0] for _ in range(spec["repeats"]))
        out[q["name"]] = {"cold_ms": cold, "warm_ms": warm, "rows": rows}
    return out


def main():
    spec = json.load(open(sys.argv[1]))
    with open(sys.argv[2], "w") as out:
        for engine, run in (("duckdb", run_duckdb), ("polars", run_polars)):
            for name, r in run(spec).items():
                out.write(f"{engine}\t{name}\t{r['cold_ms']}\t{r['warm_ms']}\t{r['rows']}\n")


if __name__ == "__main__":
    main()
