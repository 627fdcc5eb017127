"""Answers of two engines made comparable: the same Python values for the same data."""

import math

import pyarrow as pa


def normalised(table):
    """Columns as lists: dictionaries as text, temporal values as nanoseconds."""
    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.cast(t.value_type)
        elif pa.types.is_timestamp(t):
            column = column.cast(pa.timestamp("ns")).cast(pa.int64())
        elif pa.types.is_duration(t):
            column = column.cast(pa.duration("ns")).cast(pa.int64())
        elif pa.types.is_date(t):
            column = column.cast(pa.date32()).cast(pa.int32())
        elif pa.types.is_decimal(t):
            column = column.cast(pa.float64())
        columns.append(column.to_pylist())
    return columns


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b
