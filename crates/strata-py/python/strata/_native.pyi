"""The extension module of `strata` (re-exported there): open a database, run SQL into Arrow (pyarrow, polars, pandas,
DuckDB take the result without a copy), and write DataFrames into partitions under
the same rules as ``strata import``."""

import datetime
import os
import pathlib
from typing import Any, Literal, Protocol, Sequence

import pandas
import polars
import pyarrow

__version__: str

DateLike = datetime.date | str
"""A date: ``datetime.date`` or text ``YYYY.MM.DD`` / ``YYYY-MM-DD``."""

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class _ArrowArray(Protocol):
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...

class Error(Exception):
    """An error of the Strata engine or store (bad SQL, a missing table, a column
    whose type differs from the table's schema, a table a write refuses); the
    message says which."""

class Result:
    """The rows of a query, in Arrow form, handed over without a copy. Symbol
    columns are dictionary-encoded (categoricals), timestamps nanoseconds without
    a zone."""

    @property
    def schema(self) -> pyarrow.Schema:
        """The result's schema."""
    def arrow(self) -> pyarrow.Table:
        """The result as a pyarrow Table (no copy)."""
    def pl(self) -> polars.DataFrame:
        """The result as a polars DataFrame."""
    def df(self) -> pandas.DataFrame:
        """The result as a pandas DataFrame (through pyarrow)."""
    def fetch_batches(self) -> list[pyarrow.RecordBatch]:
        """The result's record batches (no copy)."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow C stream of the result (the Arrow PyCapsule interface)."""
    def __len__(self) -> int:
        """Rows in the result."""

class Database:
    """A Strata database opened in this process. Queries release the GIL."""

    @property
    def path(self) -> pathlib.Path:
        """The database's root directory."""
    def tables(self) -> list[str]:
        """Names of the tables SQL sees (partitioned and splayed), sorted."""
    def partitions(self, table: str | None = None) -> list[datetime.date]:
        """The date partitions, oldest first; with ``table``, those holding it."""
    def schema(self, table: str) -> pyarrow.Schema:
        """The columns of ``table`` as SQL sees them (partitioned tables have the
        virtual ``date`` column); the stored columns of a partitioned table carry
        their kdb+ type in the field metadata ``strata.type``."""
    def sql(self, query: str) -> Result:
        """Runs one SQL statement and returns its rows; raises ``Error`` with the
        engine's message when it fails."""
    def table(
        self,
        name: str,
        dates: DateLike | Sequence[DateLike] | tuple[DateLike, DateLike] | None = None,
        columns: Sequence[str] | None = None,
        where: str | None = None,
    ) -> Result:
        """Reads ``name`` without writing SQL: ``dates`` one date, a list of dates
        or a ``(first, last)`` tuple (both included); ``columns`` the columns to
        keep; ``where`` a SQL condition. Names are quoted."""
    def write(
        self,
        table: str,
        data: _ArrowStream | _ArrowArray | Any,
        partition: DateLike | None = None,
        mode: Literal["fail", "append", "replace"] = "fail",
        sort: Sequence[str] | None = None,
        parted: str | None = None,
        spec: str | None = None,
        cast: bool = False,
        types: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Writes ``data`` (a pyarrow Table, polars or pandas DataFrame: anything
        with ``__arrow_c_stream__`` or ``__arrow_c_array__``) as ``table`` of date
        partition ``partition`` (None: a splayed table at the root), under the rules
        of ``strata import``: the table's schema must match (``cast=True`` converts
        when no value changes), nulls become kdb+ nulls, the write is atomic.
        ``mode``: "fail" refuses a table that is there, "append" adds rows,
        "replace" replaces it. ``sort`` sorts by these columns first, ``parted``
        sets the parted attribute, ``spec`` compresses every column (e.g.
        "zstd:1"), ``types`` stores columns as other kdb+ types than their Arrow
        type's own (``{"ex": "char"}``, as ``strata import --types``). Returns rows,
        rows_before, rows_after, cast and dropped."""
    def reload(self) -> None:
        """Re-reads the database: tables and partitions written since it was opened."""

def open(path: str | os.PathLike[str], create: bool = True) -> Database:
    """Opens the database at ``path`` (created when missing and ``create``)."""

class Connection:
    """A kdb+ IPC connection to a Strata (or kdb+) tickerplant, RDB or HDB. One
    request at a time; usable as a context manager."""

    @property
    def address(self) -> str:
        """The address connected to."""
    def query(self, text: str) -> Result | Any:
        """Sends ``text`` as kdb+ clients do (``tables[]``, ``.u.i``, ``count t``,
        SQL). A table or keyed table answers as a ``Result``; other values as
        Python objects (numbers, ``str``, ``datetime`` values, lists, dicts, None).
        A q error raises ``Error``."""
    def sql(self, query: str) -> Result:
        """Runs SQL on the server (``.s.e``) and returns its rows."""
    def publish(self, table: str, data: _ArrowStream | _ArrowArray | Any, sync: bool = True) -> int:
        """Sends the rows of ``data`` (pyarrow Table, polars or pandas DataFrame) to
        a tickerplant's ``.u.upd``, each column converted to the kdb+ type of the
        tickerplant's schema (a value that would change raises ``Error`` naming the
        column and row). Without a ``time`` column the tickerplant stamps the time
        of receipt. With ``sync`` the call returns once the tickerplant has
        written the rows to its journal.
        Returns the rows sent."""
    def close(self) -> None:
        """Closes the connection."""
    def __enter__(self) -> Connection: ...
    def __exit__(self, *exc: object) -> None: ...

def connect(
    address: str | int,
    user: str | None = None,
    password: str | None = None,
    tls: bool = False,
    tls_ca: str | os.PathLike[str] | None = None,
    timeout: float = 10.0,
) -> Connection:
    """Connects to a Strata or kdb+ process at ``address`` (``host:port``, a port on
    this machine, or ``tcps://host:port``) and logs in as ``user``. TLS trusts the
    CAs of ``tls_ca``, else of ``SSL_CA_CERT_FILE``."""
