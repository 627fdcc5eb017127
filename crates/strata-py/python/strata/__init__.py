"""Strata in process: open a database, run SQL into Arrow (pyarrow, polars, pandas
and DuckDB take a result without a copy), write DataFrames into partitions under the
rules of ``strata import``, talk to a tickerplant or HDB, and read tables on Dask.

>>> import strata
>>> db = strata.open("hdb")
>>> db.sql("SELECT sym, avg(price) FROM trade GROUP BY sym").pl()

``strata.dask.read_table`` (needs ``dask[dataframe]``) gives a Dask DataFrame with
one partition per date.
"""

from ._native import Connection, Database, Error, Result, __version__, connect, open

__all__ = ["Connection", "Database", "Error", "Result", "__version__", "connect", "open"]
