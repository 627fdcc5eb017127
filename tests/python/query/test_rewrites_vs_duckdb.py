"""Every SQL rewrite Strata applies, with every modifier, against DuckDB (issue 58).

Strata writes some statements out before DataFusion plans them: COLUMNS(...), `*
EXCLUDE / REPLACE / RENAME`, PIVOT, the views that give `rowid` and `i`; and its
optimizer turns whole-partition windows into joins and row-number filters into top-k
and dedup paths. A rewrite that copies an expression without one of its modifiers
(`IGNORE NULLS`, `FILTER`, `DISTINCT`, an `ORDER BY` inside an aggregate, a window
frame, an alias) answers wrongly and says nothing. So statements are generated (a
fixed seed, every rewrite combined with every modifier it can carry and with chains
of CTEs over `SELECT *, rowid`) and run on Strata, in process through the package
`strata`, and on DuckDB over the same two days; the answers must agree row for row:
column types, NULLs, values, and the order where the statement orders.
"""

import datetime
import itertools
import random

import duckdb
import pyarrow as pa
import pytest
from answers import normalised, same

DAYS = [datetime.date(2026, 4, 1), datetime.date(2026, 4, 2)]
SYMS = [f"S{i:02d}" for i in range(6)]
EXCHANGES = "NQP"
STATEMENTS = 320
SEED = 58


def day_table(day, rows, rng):
    """A day of trades sorted by symbol then time, times unique in the table (so
    ORDER BY time orders totally), about one price in eight and one size in ten NULL."""
    start = datetime.datetime.combine(day, datetime.time(9, 30))
    # Microseconds, which DuckDB's TIMESTAMP keeps exactly.
    offsets = rng.sample(range(2 * 3600 * 10**6), rows)
    records = sorted(((rng.choice(SYMS), start + datetime.timedelta(microseconds=o)) for o in offsets))
    return pa.table({
        "sym": [r[0] for r in records],
        "time": pa.array([r[1] for r in records], pa.timestamp("ns")),
        "ex": [rng.choice(EXCHANGES) for _ in records],
        "price": [None if rng.random() < 0.12 else round(20 + rng.randrange(-500, 500) / 100, 2) for _ in records],
        "size": pa.array([None if rng.random() < 0.1 else rng.randrange(1, 40) * 100 for _ in records], pa.int64()),
    })


@pytest.fixture(scope="module")
def engines(strata, tmp_path_factory):
    """Strata's database and a DuckDB connection holding the same rows, in the order
    Strata stores them (so `rowid` numbers the same rows)."""
    rng = random.Random(SEED)
    db = strata.open(tmp_path_factory.mktemp("rewrites") / "db")
    con = duckdb.connect()
    days = []
    for day in DAYS:
        table = day_table(day, 700, rng)
        db.write("trade", table, partition=day, sort=["sym", "time"], parted="sym")
        days.append(table.add_column(0, "date", pa.array([day] * table.num_rows, pa.date32())))
    every_day = pa.concat_tables(days)  # noqa: F841 (read by DuckDB by name)
    con.execute("CREATE TABLE trade AS SELECT * FROM every_day ORDER BY date, sym, time")
    db.reload()
    return db, con


# What a value argument may be: (text, whether it stands for one column).
VALUES = {
    "column": ("price", True),
    "call": ("abs(price)", True),
    "columns_one": ("COLUMNS('^price$')", True),
    "columns_star": ("COLUMNS(* EXCLUDE (date, sym, time, ex))", False),
    "columns_regex": ("COLUMNS('^(price|size)$')", False),
    "columns_in_call": ("abs(COLUMNS('^(price|size)$'))", False),
    "columns_replace": ("COLUMNS(* EXCLUDE (date, sym, time, ex) REPLACE (coalesce(size, 0) AS size))", False),
}

# Aggregates with each modifier they carry; {v} is the value.
AGGREGATES = {
    "plain": "sum({v})",
    "distinct": "count(DISTINCT {v})",
    "filter": "sum({v}) FILTER (WHERE size > 1500)",
    "distinct_filter": "count(DISTINCT {v}) FILTER (WHERE ex = 'N')",
    "order_by": "first({v} ORDER BY time)",
    "order_by_desc": "first({v} ORDER BY time DESC)",
    "alias": "max({v}) AS m",
}

# Window functions with each modifier: null treatments, frames, whole partitions.
WINDOWS = {
    "fill": "last_value({v} IGNORE NULLS) OVER (ORDER BY time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
    "first_ignoring": "first_value({v} IGNORE NULLS) OVER (PARTITION BY sym ORDER BY time)",
    "respect": "last_value({v} RESPECT NULLS) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "backfill": "first_value({v} IGNORE NULLS) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)",
    "frame": "sum({v}) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "frame_filter": "sum({v}) FILTER (WHERE size > 1500) OVER (PARTITION BY sym ORDER BY time ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "running_distinct": "count(DISTINCT {v}) OVER (PARTITION BY sym ORDER BY time)",
    "lag_ignoring": "lag({v}, 1 IGNORE NULLS) OVER (PARTITION BY sym ORDER BY time)",
    "whole_partition": "max({v}) OVER (PARTITION BY sym)",
    "whole_partition_filter": "sum({v}) FILTER (WHERE size > 1500) OVER (PARTITION BY sym, ex)",
    "whole_partition_alias": "min({v}) OVER (PARTITION BY ex) AS lo",
}

# CTE chains the statements read through: (the WITH's CTEs, the name to read, the
# name of the first CTE, whether the source lists rowid). Depth 0 is the table.
CHAINS = [
    ([], "trade", "trade", False),
    (["c1 AS (SELECT *, rowid FROM trade WHERE sym <> 'S05')"], "c1", "c1", True),
    (["c1 AS (SELECT *, rowid FROM trade WHERE sym <> 'S05')",
      "c2 AS (SELECT * FROM c1 WHERE size IS NULL OR size > 300)"], "c2", "c1", True),
    (["c1 AS (SELECT *, rowid FROM trade WHERE sym <> 'S05')",
      "u AS (SELECT price FROM c1)",
      "c2 AS (SELECT * FROM c1 WHERE size IS NULL OR size > 300)",
      "c3 AS (SELECT * EXCLUDE (ex), ex FROM c2)"], "c3", "c1", True),
    (["c1 AS (SELECT * RENAME (size AS size) FROM trade)", "c2 AS (SELECT * FROM c1 WHERE ex <> 'P')"], "c2", "c1", False),
]


def with_clause(ctes):
    return f"WITH {', '.join(ctes)} " if ctes else ""


def statements():
    """(text, ordered) pairs: every rewrite with every modifier over every chain, a
    fixed sample of them, and the reduced cases of issue 58 always."""
    cases = []
    for (ctes, src, first, has_rowid), (vname, (v, single)) in itertools.product(CHAINS, VALUES.items()):
        w = with_clause(ctes)
        for mod, template in AGGREGATES.items():
            if mod == "alias" and not single:
                continue
            agg = template.format(v=v)
            cases.append((f"{w}SELECT sym, {agg} FROM {src} GROUP BY sym ORDER BY sym", True))
            cases.append((f"{w}SELECT {agg} FROM {src}", True))
        for mod, template in WINDOWS.items():
            if mod.endswith("alias") and not single:
                continue
            cases.append((f"{w}SELECT sym, time, {template.format(v=v)} FROM {src} ORDER BY time", True))
    for ctes, src, first, has_rowid in CHAINS:
        w = with_clause(ctes)
        minutes = ("m AS (SELECT date_trunc('minute', time) AS minute, max(CASE WHEN sym = 'S00' THEN price END) AS a, "
                   f"max(CASE WHEN sym = 'S01' THEN size END) AS b FROM {src} GROUP BY 1)")
        fills = [
            "last_value(COLUMNS(* EXCLUDE minute) IGNORE NULLS) OVER (ORDER BY minute ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
            "last_value(COLUMNS('^[ab]$') RESPECT NULLS) OVER (ORDER BY minute ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
            "first_value(COLUMNS(* EXCLUDE (minute)) IGNORE NULLS) OVER (ORDER BY minute ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)",
            "last_value(coalesce(a, b) IGNORE NULLS) OVER (ORDER BY minute) AS ab",
        ]
        for fill in fills:
            cases.append((f"{with_clause(ctes + [minutes])}SELECT minute, {fill} FROM m ORDER BY minute", True))
        cases += [
            (f"{w}SELECT * EXCLUDE (time) FROM {src} WHERE size > 1000", False),
            (f"{w}SELECT * REPLACE (coalesce(price, -1) AS price) FROM {src} WHERE ex = 'Q'", False),
            (f"{w}SELECT * RENAME (price AS p) FROM {src} WHERE sym = 'S02' ORDER BY time", True),
            (f"{w}SELECT * FROM {src} QUALIFY row_number() OVER (PARTITION BY sym ORDER BY time DESC) = 1 ORDER BY sym", True),
            (f"{w}SELECT * FROM {src} QUALIFY row_number() OVER (PARTITION BY sym, ex ORDER BY price DESC NULLS LAST, time) <= 2",
             False),
            (f"{w}SELECT sym, ex, price FROM {src} QUALIFY price = max(price) OVER (PARTITION BY sym, ex)", False),
            (f"{w}SELECT a.sym, a.n, b.m FROM (SELECT sym, count(*) AS n FROM {src} GROUP BY sym) a "
             f"JOIN (SELECT sym, max(price) AS m FROM {first} GROUP BY sym) b USING (sym) ORDER BY a.sym", True),
            (f"{w}SELECT count(*) AS n FROM {src}", True),
        ]
        for using in ["sum(size)", "count(DISTINCT price)", "first(price ORDER BY time)", "max(price) AS hi, min(size) AS lo"]:
            cases.append((f"{w}PIVOT {src} ON ex IN ('N', 'Q') USING {using} GROUP BY sym ORDER BY sym", True))
            cases.append((f"{w}SELECT * FROM (SELECT sym, ex, price, size, time FROM {src}) "
                          f"PIVOT ({using.split(' AS ')[0]} FOR ex IN ('N', 'P')) ORDER BY sym", True))
        if has_rowid:
            cases += [
                (f"{w}SELECT rowid, sym, price FROM {src} WHERE rowid % 13 = 0 ORDER BY rowid", True),
                (f"{w}SELECT sym, price FROM {src} QUALIFY row_number() OVER (PARTITION BY sym ORDER BY rowid DESC) = 1 "
                 "ORDER BY sym", True),
                (f"{w}SELECT count(*) AS n, max(rowid) AS r FROM {src}", True),
            ]
    cases += [
        ("SELECT rowid, * FROM trade WHERE rowid % 101 = 0 ORDER BY rowid", True),
        ("SELECT * FROM trade WHERE sym = 'S03' ORDER BY time", True),
        ("WITH src AS (SELECT *, rowid FROM trade WHERE sym = 'S01'), c AS (SELECT price FROM src) SELECT count(*) AS n FROM src",
         True),
    ]
    always = [c for c in cases if "IGNORE NULLS" in c[0] and "COLUMNS" in c[0] or "c AS (SELECT price FROM src)" in c[0]]
    sampled = random.Random(SEED).sample(cases, min(STATEMENTS, len(cases)))
    return always + [c for c in sampled if c not in always]


def type_class(t):
    """A column type as both engines' answers can be compared: DuckDB's sums of
    integers are HUGEINT (Arrow decimals of scale 0), its TIMESTAMP microseconds."""
    if pa.types.is_dictionary(t):
        return type_class(t.value_type)
    if pa.types.is_integer(t) or pa.types.is_decimal(t) and t.scale == 0:
        return "integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_date(t):
        return "date"
    return str(t)


def rows_of(table):
    return list(zip(*normalised(table)))


def sort_key(row):
    return tuple((v is None, f"{v:.9e}" if isinstance(v, float) else repr(v)) for v in row)


def difference(db, con, sql, ordered):
    """Why Strata's answer to `sql` is not DuckDB's, or None when it is."""
    try:
        want = con.sql(sql).to_arrow_table()
    except duckdb.Error as e:
        return f"DuckDB refuses it (the generator's mistake): {e}"
    try:
        got = db.sql(sql).arrow()
    except Exception as e:  # noqa: BLE001 (any error of Strata's is a difference)
        return f"Strata fails: {e}"
    ours, theirs = [type_class(f.type) for f in got.schema], [type_class(f.type) for f in want.schema]
    if ours != theirs:
        return f"column types {list(zip(got.column_names, ours))}, DuckDB {list(zip(want.column_names, theirs))}"
    a, b = rows_of(got), rows_of(want)
    if not ordered:
        a, b = sorted(a, key=sort_key), sorted(b, key=sort_key)
    if len(a) != len(b):
        return f"{len(a)} rows, DuckDB {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if not all(same(p, q) for p, q in zip(x, y)):
            return f"row {i}: Strata {x}, DuckDB {y}"
    return None


@pytest.mark.xfail(strict=True, reason="issue 58, open: COLUMNS over a CTE chain selecting `*, rowid` plans rowid twice; "
                   "a CTE with `* RENAME` read by another CTE; FROM-clause PIVOT over a subquery inside WITH")
def test_every_rewrite_keeps_every_modifier(engines):
    db, con = engines
    cases = statements()
    assert len(cases) >= 300
    failures = []
    for sql, ordered in cases:
        why = difference(db, con, sql, ordered)
        if why:
            failures.append(f"{sql}\n    {why}")
    assert not failures, f"{len(failures)} of {len(cases)} statements differ from DuckDB:\n" + "\n".join(failures)


def test_the_data_holds_what_the_modifiers_act_on(engines):
    """NULLs that IGNORE NULLS skips, rows that FILTER drops, duplicates DISTINCT
    folds: without them the comparison could not catch a modifier dropped."""
    _, con = engines
    nulls, filtered, distinct, rows = con.execute(
        "SELECT count(*) - count(price), count(*) FILTER (WHERE size > 1500), count(DISTINCT price), count(*) FROM trade"
    ).fetchone()
    assert nulls > 50 and 0 < filtered < rows and distinct < rows - nulls


def test_star_lists_the_stored_columns_and_date_only(engines):
    db, _ = engines
    assert db.sql("SELECT * FROM trade").arrow().column_names == ["date", "sym", "time", "ex", "price", "size"]
    assert db.sql("SELECT *, i, rowid FROM trade LIMIT 1").arrow().column_names[-2:] == ["i", "rowid"]
