"""kdb+ nulls are SQL NULLs: a real CSV with empty fields, imported with `strata
import`, gives the same aggregates in `strata sql` as DuckDB gives on the same CSV
and on the table exported back out with `strata export` (issue 18, item 3). Parquet
nulls in every type that has a null survive import and export; booleans and bytes,
which have none in kdb+, refuse an empty field naming the column and the line.
"""

import math
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 400

# column: (Strata type for --types, DuckDB type reading the CSV, text of a value)
COLUMNS = {
    "h": ("short", "SMALLINT", lambda r: str(r.randrange(-30_000, 30_000))),
    "i": ("int", "INTEGER", lambda r: str(r.randrange(-2_000_000_000, 2_000_000_000))),
    "j": ("long", "BIGINT", lambda r: str(r.randrange(-(10**15), 10**15))),
    "e": ("real", "REAL", lambda r: str(r.randrange(-100_000, 100_000) / 4)),
    "f": ("float", "DOUBLE", lambda r: repr(r.uniform(-1e6, 1e6))),
    "c": ("char", "VARCHAR", lambda r: r.choice("ABCXYZ")),
    "s": ("symbol", "VARCHAR", lambda r: r.choice(["IBM", "MSFT", "AAPL", "T"])),
    "str": ("string", "VARCHAR", lambda r: "note " + str(r.randrange(50))),
    "p": ("timestamp", "TIMESTAMP", lambda r: f"2024-01-02T{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}.{r.randrange(10**6):06d}"),
    "d": ("date", "DATE", lambda r: f"20{r.randrange(10, 40)}-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}"),
    "t": ("time", "TIME", lambda r: f"{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}.{r.randrange(1000):03d}"),
    # (DuckDB's timestamps are microseconds.) Timespans as nanoseconds, a form both read (Strata: timespan; DuckDB: BIGINT).
    "n": ("timespan", "BIGINT", lambda r: str(r.randrange(-(10**13), 10**14))),
}
NUMERIC = ["h", "i", "j", "e", "f"]


def write_csv(path, seed):
    """A CSV with an empty field in about one row in five of every column, and one
    row empty throughout."""
    rng = random.Random(seed)
    names = list(COLUMNS)
    lines = [",".join(names)]
    for row in range(ROWS):
        cells = []
        for name in names:
            empty = row == 7 or rng.random() < 0.2
            cells.append("" if empty else COLUMNS[name][2](rng))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def aggregate_sql(table):
    """One row of aggregates that both engines answer alike."""
    parts = ["count(*)"]
    for name in COLUMNS:
        parts.append(f"count({name})")
    for name in NUMERIC:
        parts += [f"sum({name})", f"min({name})", f"max({name})", f"avg({name})"]
    for name in ["c", "s", "str", "p", "d", "t"]:
        parts += [f"min({name})", f"max({name})"]
    parts += ["count(DISTINCT s)", "sum(CASE WHEN n IS NULL THEN 1 ELSE 0 END)"]
    return f"SELECT {', '.join(parts)} FROM {table}"


def strata_rows(run_strata, db, sql, tmp_path):
    out = tmp_path / "result.parquet"
    run_strata("sql", "--db", db, sql, "--format", "parquet", "--out", out)
    table = pq.read_table(out)
    return [tuple(row.values()) for row in table.to_pylist()]


def same(a, b):
    """Values equal, floats nearly (real columns may sum in 32 bits)."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    if isinstance(a, bytes):
        a = a.decode()
    if isinstance(b, bytes):
        b = b.decode()
    return a == b


def assert_rows_equal(ours, theirs, what):
    assert len(ours) == len(theirs), what
    for row_ours, row_theirs in zip(ours, theirs):
        for i, (x, y) in enumerate(zip(row_ours, row_theirs)):
            assert same(x, y), f"{what}: column {i}: strata {x!r}, duckdb {y!r}"


def test_csv_empty_fields_aggregate_like_duckdb(run_strata, tmp_path):
    csv = tmp_path / "data.csv"
    write_csv(csv, seed=18)
    db = tmp_path / "db"
    types = ",".join(f"{name}={spec[0]}" for name, spec in COLUMNS.items())
    run_strata("import", csv, "--db", db, "--table", "t", "--types", types)

    con = duckdb.connect()
    duck_types = ", ".join(f"'{name}': '{spec[1]}'" for name, spec in COLUMNS.items())
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{csv}', header=true, columns={{{duck_types}}})")
    ours = strata_rows(run_strata, db, aggregate_sql("t"), tmp_path)
    theirs = con.execute(aggregate_sql("t")).fetchall()
    assert ours[0][0] == ROWS and ours[0][1] < ROWS, "every column has an empty field"
    assert_rows_equal(ours, theirs, "aggregates over the CSV")

    # NULL is its own group, and a null timespan comes back as NULL.
    grouped = "SELECT s, count(*), count(j), sum(j), count(n) FROM t GROUP BY s ORDER BY s NULLS FIRST"
    assert_rows_equal(strata_rows(run_strata, db, grouped, tmp_path), con.execute(grouped).fetchall(), "GROUP BY")
    nulls = strata_rows(run_strata, db, "SELECT n, j, s, str, c, p, f FROM t LIMIT 8", tmp_path)
    assert nulls[7] == (None,) * 7, nulls[7]

    # The same data exported to Parquet, read by DuckDB: the same answers.
    exported = tmp_path / "t.parquet"
    run_strata("export", "--db", db, "--table", "t", "--format", "parquet", "--out", exported)
    con.execute(f"CREATE TABLE x AS SELECT * FROM read_parquet('{exported}')")
    con.execute("CREATE OR REPLACE VIEW x2 AS SELECT * REPLACE (CAST(c AS VARCHAR) AS c) FROM x")
    assert_rows_equal(ours, con.execute(aggregate_sql("x2")).fetchall(), "aggregates over the exported Parquet")

    # And to CSV: the empty fields are empty again.
    exported_csv = tmp_path / "t.csv"
    run_strata("export", "--db", db, "--table", "t", "--format", "csv", "--out", exported_csv)
    original = csv.read_text().splitlines()[8].split(",")
    assert original == [""] * len(COLUMNS)
    assert exported_csv.read_text().splitlines()[8] == "," * (len(COLUMNS) - 1)


def test_parquet_nulls_in_every_type_round_trip(run_strata, tmp_path):
    n = 6
    valid = [True, False, True, True, False, True]
    mask = pa.array([not v for v in valid])

    def col(values, type_):
        return pa.array([v if ok else None for v, ok in zip(values, valid)], type=type_)

    source = pa.table(
        {
            "h": col(range(n), pa.int16()),
            "i": col(range(n), pa.int32()),
            "j": col(range(n), pa.int64()),
            "e": col([0.5 * k for k in range(n)], pa.float32()),
            "f": col([1.5 * k for k in range(n)], pa.float64()),
            "c": col([b"a", b"b", b"c", b"d", b"e", b"f"], pa.binary(1)),
            "s": col(["x", "y", "x", "z", "y", "x"], pa.string()),
            "str": col(["one", "two", "three", "four", "five", "six"], pa.large_string()),
            "p": col(range(10**18, 10**18 + n), pa.timestamp("ns")),
            "m": col(range(600, 600 + n), pa.int32()),
            "d": col(range(19_000, 19_000 + n), pa.date32()),
            "n": col(range(-3, n - 3), pa.duration("ns")),
            "u": col(range(500, 500 + n), pa.int32()),
            "v": col(range(30_000, 30_000 + n), pa.time32("s")),
            "t": col(range(3_000_000, 3_000_000 + n), pa.time32("ms")),
        }
    )
    original = tmp_path / "in.parquet"
    pq.write_table(source, original)
    db = tmp_path / "db"
    run_strata("import", original, "--db", db, "--table", "t", "--types", "str=string,m=month,u=minute")
    exported = tmp_path / "out.parquet"
    run_strata("export", "--db", db, "--table", "t", "--format", "parquet", "--out", exported)
    back = pq.read_table(exported)
    assert back.column_names == source.column_names
    for name in source.column_names:
        column = back.column(name)
        assert column.is_null().to_pylist() == mask.to_pylist(), f"{name}: nulls where they were"
        assert column.null_count == 2, name
        kept = [v for v, ok in zip(source.column(name).to_pylist(), valid) if ok]
        got = [v for v, ok in zip(column.to_pylist(), valid) if ok]
        if name not in ("m", "u"):
            assert got == kept, f"{name}: values kept"

    # The exported file reads in DuckDB with the nulls where they were.
    counts = duckdb.sql(f"SELECT count(*), count(j), count(s), count(str), count(n) FROM read_parquet('{exported}')")
    assert counts.fetchall() == [(n, 4, 4, 4, 4)]


def test_booleans_and_bytes_refuse_empty_fields(run_strata, tmp_path):
    csv = tmp_path / "flags.csv"
    csv.write_text("id,flag\n1,true\n2,\n3,false\n")
    db = tmp_path / "db"
    done = run_strata("import", csv, "--db", db, "--table", "t", check=False)
    assert done.returncode != 0
    assert "line 3" in done.stderr and "column flag" in done.stderr and "no null" in done.stderr, done.stderr
    # Given a type that has a null, the same file imports, the empty field NULL.
    run_strata("import", csv, "--db", db, "--table", "t", "--types", "flag=symbol")
    assert strata_rows(run_strata, db, "SELECT count(flag) FROM t", tmp_path) == [(2,)]

    parquet = tmp_path / "bytes.parquet"
    pq.write_table(pa.table({"x": pa.array([1, None, 3], type=pa.uint8())}), parquet)
    done = run_strata("import", parquet, "--db", db, "--table", "b", check=False)
    assert done.returncode != 0
    assert "column x" in done.stderr and "row 1" in done.stderr and "byte column has no null" in done.stderr, done.stderr
