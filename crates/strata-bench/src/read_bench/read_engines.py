"""Driver of `strata bench read` and `strata bench output`.

read: one table read into pyarrow, polars and pandas from Strata (the `strata`
package), from Parquet (pyarrow, polars and pandas readers, uncompressed and
pyarrow's default snappy) and from a DuckDB database file, as each library's users
read it. output: the table written as CSV, JSON and Parquet by `strata sql --out`
and by DuckDB's COPY ... TO.

Usage: python read_engines.py SCRATCH ROWS SEED read|output [STRATA_BIN]

Setup writes the same seeded table into every store and prints
`setup<TAB>WHAT<TAB>MS<TAB>BYTES` lines, then `ready`. For each line `round` on
standard input it runs each (engine, target) once, in an order that rotates every
round, and prints `read<TAB>ENGINE<TAB>TARGET<TAB>MS<TAB>ROWS<TAB>CHECK` (CHECK: a
checksum of the values read, or the rows and bytes of a written file, equal when
the data is), then `done`.
"""

import os
import shutil
import subprocess
import sys
import time

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

try:
    import strata
except ImportError as e:
    sys.exit(f"read_engines.py: cannot import strata ({e}): pip install ./crates/strata-py, or set STRATA_PY_DIR")

DATE = "2024-01-02"
COLUMNS = ["sym", "time", "price", "bid", "ask", "size", "seq", "exch"]


def table(rows: int, seed: int) -> pa.Table:
    """A quote-like table of eight plain columns: 1,000 symbols in order, times, three
    prices, a size, a sequence number and an exchange code."""
    rng = np.random.default_rng(seed)
    symbols = np.array([f"S{i:04d}" for i in range(1000)])
    return pa.table(
        {
            "sym": pa.DictionaryArray.from_arrays(
                pa.array(np.sort(rng.integers(0, 1000, rows)).astype(np.int32)), pa.array(symbols)
            ),
            "time": pa.array(np.sort(rng.integers(0, 86_400 * 10**9, rows)).astype("timedelta64[ns]")),
            "price": rng.random(rows) * 100,
            "bid": rng.random(rows) * 100,
            "ask": rng.random(rows) * 100,
            "size": rng.integers(1, 1000, rows).astype(np.int32),
            "seq": np.arange(rows, dtype=np.int64),
            "exch": rng.integers(0, 16, rows).astype(np.int16),
        }
    )


def size_of(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def timed(what: str, f):
    started = time.perf_counter()
    f()
    return what, (time.perf_counter() - started) * 1000


def checksum(value) -> str:
    """Rows, and the sums of seq, size and price: equal when the same rows were read.
    Polars sums an Int32 column as Int32, which wraps past 2^31 (ten million sizes
    do), so its integers are summed as Int64."""
    if isinstance(value, pa.Table):
        sums = [pc.sum(value[c]).as_py() for c in ("seq", "size", "price")]
    elif isinstance(value, pl.DataFrame):
        sums = [value[c].cast(pl.Int64).sum() for c in ("seq", "size")] + [value["price"].sum()]
    else:
        sums = [value["seq"].sum(), value["size"].sum(), value["price"].sum()]
    return f"{len(value)}:{int(sums[0])}:{int(sums[1])}:{float(sums[2]):.6e}"


def read_runs(paths: dict, memory: np.ndarray) -> list:
    """(engine, target, read) for `strata bench read`. Handles stay open between
    reads, as users keep them: the database, the DuckDB connection (whose buffer pool
    then holds the table). Parquet has none."""
    db = strata.open(paths["strata"], create=False)
    con = duckdb.connect(paths["duckdb-file"], read_only=True)
    runs = [
        ("strata", "arrow", lambda: db.table("t", columns=COLUMNS).arrow()),
        ("strata", "polars", lambda: db.table("t", columns=COLUMNS).pl()),
        ("strata", "pandas", lambda: db.table("t", columns=COLUMNS).df()),
    ]
    for engine in ("parquet-none", "parquet-snappy"):
        path = paths[engine]
        runs.append((engine, "arrow", lambda path=path: pq.read_table(path)))
        runs.append((engine, "polars", lambda path=path: pl.read_parquet(path)))
        runs.append((engine, "pandas", lambda path=path: pd.read_parquet(path)))
    runs.append(("duckdb-file", "arrow", lambda: con.sql("SELECT * FROM t").to_arrow_table()))
    runs.append(("duckdb-file", "polars", lambda: con.sql("SELECT * FROM t").pl()))
    runs.append(("duckdb-file", "pandas", lambda: con.sql("SELECT * FROM t").df()))
    runs.append(("memory-copy", "numpy", lambda: memory.copy()))
    return runs


def output_runs(paths: dict, scratch: str, strata_bin: str) -> list:
    """(engine, format, write) for `strata bench output`: the table written as CSV,
    JSON and Parquet by a `strata sql` process and by DuckDB's COPY from its open
    database file (buffer pool warm after the first round). `strata-sql-start` is a
    `strata sql` of `SELECT 1`: the process start and database open in each figure."""
    con = duckdb.connect(paths["duckdb-file"], read_only=True)
    query = f"SELECT {', '.join(COLUMNS)} FROM t"
    runs = []
    for fmt in ("csv", "json", "parquet"):
        strata_out = os.path.join(scratch, f"strata.{fmt}")
        duck_out = os.path.join(scratch, f"duckdb.{fmt}")

        def strata_write(fmt=fmt, out=strata_out):
            subprocess.run([strata_bin, "sql", "--db", paths["strata"], query, "--format", fmt, "--out", out], check=True)
            return out

        options = {"csv": "FORMAT csv, HEADER", "json": "FORMAT json", "parquet": "FORMAT parquet"}[fmt]

        def duck_write(out=duck_out, options=options):
            con.execute(f"COPY ({query}) TO '{out}' ({options})")
            return out

        runs.append(("strata-sql", fmt, strata_write))
        runs.append(("duckdb-copy", fmt, duck_write))
    start_out = os.path.join(scratch, "start.csv")
    runs.append(
        (
            "strata-sql-start",
            "csv",
            lambda: subprocess.run(
                [strata_bin, "sql", "--db", paths["strata"], "SELECT 1", "--format", "csv", "--out", start_out], check=True
            ),
        )
    )
    return runs


def written(path: str, fmt: str) -> str:
    """A written file's rows as DuckDB reads them back, and its size: `ROWS:BYTES`."""
    reader = {"csv": "read_csv", "json": "read_json", "parquet": "read_parquet"}[fmt]
    rows = duckdb.sql(f"SELECT count(*) FROM {reader}('{path}')").fetchall()[0][0]
    return f"{rows}:{os.path.getsize(path)}"


def main() -> None:
    scratch, rows, seed, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    strata_bin = sys.argv[5] if len(sys.argv) > 5 else None
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    paths = {
        "strata": os.path.join(scratch, "db"),
        "parquet-none": os.path.join(scratch, "t-uncompressed.parquet"),
        "parquet-snappy": os.path.join(scratch, "t-snappy.parquet"),
        "duckdb-file": os.path.join(scratch, "t.duckdb"),
    }
    data = None

    def generate():
        nonlocal data
        data = table(rows, seed)

    steps = [timed("generate", generate)]
    db = strata.open(paths["strata"])
    steps.append(timed("strata", lambda: db.write("t", data, partition=DATE)))
    steps.append(timed("parquet-none", lambda: pq.write_table(data, paths["parquet-none"], compression="none")))
    if mode == "read":
        steps.append(timed("parquet-snappy", lambda: pq.write_table(data, paths["parquet-snappy"])))

    def duckdb_file():
        con = duckdb.connect(paths["duckdb-file"])
        con.sql(f"CREATE TABLE t AS SELECT * FROM read_parquet('{paths['parquet-none']}')")
        con.close()

    steps.append(timed("duckdb-file", duckdb_file))
    for what, ms in steps:
        print(f"setup\t{what}\t{ms:.3f}\t{size_of(paths[what]) if what in paths else data.nbytes}", flush=True)
    memory = np.zeros(data.nbytes, dtype=np.uint8)
    del data

    if mode == "read":
        readers = read_runs(paths, memory)
    else:
        readers = output_runs(paths, scratch, strata_bin)
    print("ready", flush=True)

    turn = 0
    for line in sys.stdin:
        if line.strip() != "round":
            sys.exit(f"read_engines.py: expected 'round', got {line!r}")
        order = readers[turn % len(readers) :] + readers[: turn % len(readers)]
        turn += 1
        for engine, target, read in order:
            started = time.perf_counter()
            value = read()
            ms = (time.perf_counter() - started) * 1000
            if engine in ("memory-copy", "strata-sql-start"):
                check, n = "-", rows
            elif isinstance(value, str):  # a written file: its rows, read back by DuckDB
                check, n = written(value, target), rows
            else:
                check, n = checksum(value), len(value)
            del value
            print(f"read\t{engine}\t{target}\t{ms:.3f}\t{n}\t{check}", flush=True)
        print("done", flush=True)


if __name__ == "__main__":
    main()
