"""DuckDB and Polars with the day in memory, for `strata bench query` (driver.rs).

Usage: python engines.py SPEC.json, then query indexes on standard input.
SPEC: {"tables": {name: parquet path}, "date": "YYYY-MM-DD", "db_file": path,
       "answers": dir of Strata's answers (NNN.parquet), "repeats": n,
       "params": {...}, "queries": [{"name": ..., "sql": ..., "duckdb_sql": ... (when
       DuckDB's text differs)}]}

Engines, each as its users run repeated queries:
- duckdb-mem: one in-memory connection; the day loaded with CREATE TABLE AS from the
  Parquet files (time as TIME, a date column added); each query's full result
  materialised with to_arrow_table(). Cold: the first run.
- duckdb-file: the same tables in a DuckDB database file; cold: the file dropped from
  the page cache (posix_fadvise) and a fresh read-only connection.
- polars-mem: DataFrames read into memory (time as pl.Time); each query a lazy plan
  over them, .collect() timed. Cold: the first run.
Warm: the best of `repeats` further runs. Each engine's answer is checked against
Strata's row for row (both sorted, floats within a relative 1e-6, temporal values
as nanoseconds since midnight).
"""

import json
import math
import os
import sys
import time

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import polars_workload  # noqa: E402

FLOAT_TOLERANCE = 1e-6  # relative; engines sum floats in different orders
DAY_NS = 86_400 * 10**9


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(run):
    start = time.perf_counter()
    out = run()
    return (time.perf_counter() - start) * 1e3, out


def load_duckdb(con, spec):
    """The Parquet tables as DuckDB tables: time (ns since midnight) as TIME, which
    holds microseconds (the generated day's times are whole microseconds), and the
    partition date as a DATE column, as a DuckDB user would store a day."""
    for name, path in spec["tables"].items():
        con.execute(
            f"CREATE TABLE {name} AS SELECT DATE '{spec['date']}' AS date, * REPLACE "
            f"(TIME '00:00' + to_microseconds(CAST(time AS BIGINT) // 1000) AS time) FROM read_parquet('{path}')")


def load_polars(spec):
    frames = {}
    for name, path in spec["tables"].items():
        df = pl.read_parquet(path)
        frames[name] = df.with_columns(pl.col("time").cast(pl.Int64).cast(pl.Time), pl.lit(spec["date"]).str.to_date().alias("date"))
    return frames


def normalised(table):
    """Columns as Python lists: text dictionaries as text, decimals (DuckDB's sums
    of integers) as floats, temporal values as
    nanoseconds since midnight (a timestamp of the one day, a TIME and a timespan
    then compare), NaN as None."""
    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.cast(t.value_type)
        elif pa.types.is_decimal(t):
            column = column.cast(pa.float64())
        elif pa.types.is_time(t):
            column = column.cast(pa.time64("ns")).cast(pa.int64())
        elif pa.types.is_timestamp(t) or pa.types.is_duration(t):
            column = column.cast(pa.int64())
            unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]
            values = [None if v is None else (v * unit) % DAY_NS if pa.types.is_timestamp(t) else v * unit for v in column.to_pylist()]
            columns.append(values)
            continue
        columns.append([None if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()])
    return columns


def sort_key(row):
    """Rows sort the same whichever engine gave them: numbers by value whether an
    engine answered an integer or a float (DuckDB's sums of integers are decimals,
    Strata's integers; by text, 1156 would sort before 856), floats rounded to the
    tolerance."""
    def key(v):
        if v is None:
            return (0, 0)
        if isinstance(v, float) and v and math.isfinite(v):
            return (1, round(v, 6 - int(math.floor(math.log10(abs(v))))))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (1, v)
        return (2, repr(v))
    return tuple(key(v) for v in row)


def same_value(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    return a == b


def compare(got, want):
    """'yes' when `got` has `want`'s rows (any order), else 'no: why'."""
    if got.num_columns != want.num_columns:
        return f"no: {got.num_columns} columns, Strata {want.num_columns}"
    if got.num_rows != want.num_rows:
        return f"no: {got.num_rows} rows, Strata {want.num_rows}"
    ours = sorted(zip(*normalised(got)), key=sort_key)
    theirs = sorted(zip(*normalised(want)), key=sort_key)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if not all(same_value(x, y) for x, y in zip(a, b)):
            return f"no: row {i} {a} vs Strata {b}"[:300]
    return "yes"


def measure(first, again, repeats):
    cold, result = timed(first)
    warm = min(timed(again)[0] for _ in range(max(repeats, 1)))
    return cold, warm, result


def main():
    spec = json.load(open(sys.argv[1]))
    repeats = spec["repeats"]
    loads = {}
    mem = duckdb.connect()
    loads["duckdb-mem"], _ = timed(lambda: load_duckdb(mem, spec))
    if os.path.exists(spec["db_file"]):
        os.remove(spec["db_file"])
    with duckdb.connect(spec["db_file"]) as con:
        loads["duckdb-file"], _ = timed(lambda: load_duckdb(con, spec))
    loads["polars-mem"], frames = timed(lambda: load_polars(spec))
    lazy = {name: df.lazy() for name, df in frames.items()}
    plans = polars_workload.plans(lazy, spec["params"])
    for engine, ms in loads.items():
        print(f"load\t{engine}\t{ms}")
    print("ready", flush=True)

    for line in sys.stdin:
        q = spec["queries"][int(line)]
        sql = q.get("duckdb_sql", q["sql"])
        want = pq.read_table(os.path.join(spec["answers"], f"{int(line):03d}.parquet"))
        out = []

        def run_mem():
            return mem.sql(sql).to_arrow_table()
        out.append(("duckdb-mem",) + measure(run_mem, run_mem, repeats))

        evict(spec["db_file"])
        holder = {}

        def run_file_cold():
            holder["con"] = duckdb.connect(spec["db_file"], read_only=True)
            return holder["con"].sql(sql).to_arrow_table()
        out.append(("duckdb-file",) + measure(run_file_cold, lambda: holder["con"].sql(sql).to_arrow_table(), repeats))
        holder["con"].close()

        plan = plans[q["name"]]
        cold, warm, frame = measure(plan, plan, repeats)
        out.append(("polars-mem", cold, warm, frame.to_arrow()))

        for engine, cold, warm, result in out:
            print(f"{engine}\t{cold}\t{warm}\t{result.num_rows}\t{compare(result, want)}")
        print("done", flush=True)


if __name__ == "__main__":
    main()
