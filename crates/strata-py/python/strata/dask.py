"""Strata tables as Dask DataFrames: one Dask partition per date partition (and per
symbol range where a day holds more rows than ``split_rows``), each read by the
worker that computes it, which opens the database itself. The database must be at
the same path on every worker: a shared file system, as kdb+ HDB segments are.

>>> import strata.dask
>>> trades = strata.dask.read_table("/data/hdb", "trade", dates=("2024-01-02", "2024-01-31"))
>>> trades.groupby("sym").price.mean().compute()

Needs ``dask[dataframe]`` (and ``distributed`` for a cluster).
"""

from __future__ import annotations

import datetime
import functools
import os
from typing import Any, Sequence

import dask.dataframe as dd
import pandas
import pyarrow

from . import _native

__all__ = ["read_table"]

Filter = tuple[str, str, Any]
"""One condition as ``dask.dataframe.read_parquet`` takes them: (column, op, value)."""

_OPERATORS = {"=": "=", "==": "=", "!=": "<>", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def read_table(
    path: str | os.PathLike[str],
    table: str,
    dates: Any = None,
    columns: Sequence[str] | None = None,
    filters: str | Sequence[Filter] | None = None,
    split_rows: int | None = 10_000_000,
    symbol_column: str = "sym",
) -> dd.DataFrame:
    """A Dask DataFrame of ``table`` in the Strata database at ``path``.

    ``dates``: one date, a list of dates or a ``(first, last)`` tuple (both
    included), as ``Database.table`` takes them; all dates when None. ``columns``:
    the columns to read (all when None). ``filters``: a SQL condition, or
    conditions as ``read_parquet`` takes them, ``[("sym", "in", ["AAPL", "IBM"]),
    ("size", ">", 100)]`` (all must hold). A day holding more than ``split_rows``
    rows is read as several Dask partitions by ranges of ``symbol_column``, so no
    worker holds a whole large day; None keeps one partition per day.

    Symbol columns arrive as strings (each partition would otherwise bring its own
    categories), dates as ``datetime64``. Partitions carry no index divisions.
    """
    path = os.fspath(path)
    where = _where(filters)
    db = _native.open(path, create=False)
    if table not in db.tables():
        raise _native.Error(f"{path}: no table {table}; tables: {' '.join(db.tables())}")
    meta = _as_pandas(db.table(table, dates=[], columns=columns))
    names = db.schema(table).names
    if "date" not in names:
        # A splayed table (no date partitions): one piece.
        pieces: list[tuple[datetime.date | None, str | None]] = [(None, None)]
    else:
        days = _days(db, table, dates)
        pieces = _pieces(db, table, days, where, symbol_column if symbol_column in names else None, split_rows)
    reader = functools.partial(_read_piece, path, table, None if columns is None else list(columns), where)
    if not pieces:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(reader, pieces, meta=meta, enforce_metadata=False, label=f"strata-{table}")


def _pieces(
    db: _native.Database,
    table: str,
    days: list[datetime.date],
    where: str | None,
    symbol_column: str | None,
    split_rows: int | None,
) -> list[tuple[datetime.date | None, str | None]]:
    """The Dask partitions: each day, or each symbol range of a day holding more
    than ``split_rows`` rows (counted in one query over all the days)."""
    if split_rows is None or symbol_column is None or not days:
        return [(day, None) for day in days]
    counted = db.sql(
        f"SELECT date AS d, count(*) AS n FROM {_identifier(table)} "
        f"WHERE date IN ({', '.join(_literal(d) for d in days)})"
        + (f" AND ({where})" if where else "")
        + " GROUP BY date"
    ).arrow()
    rows = dict(zip(counted.column("d").to_pylist(), counted.column("n").to_pylist()))
    pieces: list[tuple[datetime.date | None, str | None]] = []
    for day in days:
        large = rows.get(day, 0) > split_rows
        ranges = _symbol_ranges(db, table, day, where, symbol_column, split_rows) if large else [None]
        pieces.extend((day, symbols) for symbols in ranges)
    return pieces


def _read_piece(
    path: str, table: str, columns: list[str] | None, where: str | None, piece: tuple[datetime.date | None, str | None]
) -> pandas.DataFrame:
    """One Dask partition: a day (or a symbol range of it), read in this process."""
    day, symbols = piece
    condition = " AND ".join(f"({c})" for c in (where, symbols) if c) or None
    dates = None if day is None else [day]
    return _as_pandas(_database(path).table(table, dates=dates, columns=columns, where=condition))


@functools.lru_cache(maxsize=8)
def _database(path: str) -> _native.Database:
    """The database at ``path``, opened once per worker process."""
    return _native.open(path, create=False)


def _days(db: _native.Database, table: str, dates: Any) -> list[datetime.date]:
    """The partitions holding ``table`` that ``dates`` keeps, oldest first."""
    held = db.partitions(table)
    if dates is None:
        return held
    if isinstance(dates, tuple):
        if len(dates) != 2:
            raise ValueError(f"dates as a tuple is a range (first, last); got {len(dates)} items")
        first, last = (_date(d) for d in dates)
        return [d for d in held if first <= d <= last]
    wanted = {_date(d) for d in ([dates] if isinstance(dates, (str, datetime.date)) else dates)}
    return [d for d in held if d in wanted]


def _date(value: Any) -> datetime.date:
    """A date from a ``datetime.date`` or its text (``2024.01.02`` or ``2024-01-02``)."""
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        return datetime.date.fromisoformat(value.replace(".", "-"))
    raise TypeError(f"expected a date (datetime.date or 'YYYY.MM.DD' text), got {type(value).__name__}")


def _symbol_ranges(
    db: _native.Database, table: str, day: datetime.date, where: str | None, column: str, split_rows: int
) -> list[str | None]:
    """Conditions cutting ``day`` into ranges of ``column`` of about ``split_rows``
    rows each (whole symbols: one symbol is never split); ``[None]`` when the day
    is small enough."""
    quoted = _identifier(column)
    counts = db.sql(
        f"SELECT {quoted} AS s, count(*) AS n FROM {_identifier(table)} WHERE date = {_literal(day)}"
        + (f" AND ({where})" if where else "")
        + f" GROUP BY {quoted} ORDER BY {quoted}"
    ).arrow()
    symbols, rows = counts.column("s").to_pylist(), counts.column("n").to_pylist()
    starts: list[Any] = []
    held = split_rows  # so the first symbol starts a range
    for symbol, n in zip(symbols, rows):
        if held + n > split_rows and held > 0:
            starts.append(symbol)
            held = 0
        held += n
    ranges: list[str | None] = []
    for i, start in enumerate(starts):
        bounds = []
        if i > 0:
            bounds.append(f"{quoted} >= {_literal(start)}")
        if i + 1 < len(starts):
            bounds.append(f"{quoted} < {_literal(starts[i + 1])}")
        condition = " AND ".join(bounds) or None
        if i == 0 and condition:
            # A null symbol falls in no range by comparison: it goes in the first.
            condition = f"({condition} OR {quoted} IS NULL)"
        ranges.append(condition)
    return ranges


def _where(filters: str | Sequence[Filter] | None) -> str | None:
    """``filters`` as one SQL condition."""
    if filters is None or isinstance(filters, str):
        return filters or None
    conditions = []
    for item in filters:
        if not (isinstance(item, (tuple, list)) and len(item) == 3):
            raise ValueError(f"a filter is (column, op, value), got {item!r}")
        column, op, value = item
        op = op.lower().strip()
        if op in ("in", "not in"):
            values = list(value)
            if not values:
                conditions.append("FALSE" if op == "in" else "TRUE")
                continue
            keyword = "IN" if op == "in" else "NOT IN"
            conditions.append(f"{_identifier(column)} {keyword} ({', '.join(_literal(v) for v in values)})")
        elif op in _OPERATORS:
            conditions.append(f"{_identifier(column)} {_OPERATORS[op]} {_literal(value)}")
        else:
            raise ValueError(f"filter {item!r}: op must be one of {', '.join(_OPERATORS)}, in, not in")
    return " AND ".join(conditions) or None


def _identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _literal(value: Any) -> str:
    """A Python value as a SQL literal."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, datetime.timedelta):
        return f"INTERVAL '{value.total_seconds()} seconds'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"cannot write a {type(value).__name__} as a SQL value: {value!r}")


def _as_pandas(result: _native.Result) -> pandas.DataFrame:
    """A result as pandas: dictionary (symbol) columns decoded to strings, dates as
    ``datetime64`` (not objects, which Dask would turn into strings)."""
    table = result.arrow()
    fields = [
        f.with_type(f.type.value_type) if pyarrow.types.is_dictionary(f.type) else f for f in table.schema
    ]
    return table.cast(pyarrow.schema(fields)).to_pandas(date_as_object=False)
