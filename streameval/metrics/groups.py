"""A state table's group key: its keys, or one constant key for a table with none.

>>> import polars as pl
>>> lf, keys = with_group_key(pl.DataFrame({"pos": [1]}), [])
>>> keys, lf.collect().columns
(['_all'], ['pos', '_all'])
"""

from __future__ import annotations

import polars as pl

from ..spec import ALL


def with_group_key(table: pl.DataFrame, keys: list[str]) -> tuple[pl.LazyFrame, list[str]]:
    """A state table as a LazyFrame and its keys (a constant key when there are none)."""
    lf = table.lazy()
    if keys:
        return lf, keys
    return lf.with_columns(pl.lit(0, pl.Int8).alias(ALL)), [ALL]
