"""Queries over state tables collected in a fixed order: the same rows give the same bits.

A floating-point sum depends on the order of its terms. Polars' streaming engine sums a
group's rows in the order its threads deliver them, a ``group_by`` without
``maintain_order`` hands its groups on in an order that changes from run to run, and the
optimizer drops ``maintain_order`` where a later sort makes the row order unobservable,
although a float sum further down still observes it. So every query over state tables runs
on the in-memory engine with :data:`ORDERED`, and every ``group_by`` and join in the
package states its order (``tests/test_ordered.py`` reads the source for it).

One choice is Polars' own: a ``group_by`` over few distinct keys may run partitioned, each
thread summing its share of the rows and the shares added in the order the threads finish,
and whether it does is decided on a random sample of the keys. Importing streameval sets
``POLARS_NO_PARTITION`` (unless it is set already), which Polars reads at every
``group_by``: each group's rows are then summed in their order, in this process's queries.

>>> import polars as pl
>>> lf = pl.LazyFrame({"g": [1, 1, 2], "x": [0.1, 0.2, 0.3]})
>>> q = lf.group_by("g", maintain_order=True).agg(pl.col("x").sum()).sort("g")
>>> q.collect(engine="in-memory", optimizations=ORDERED).rows()
[(1, 0.30000000000000004), (2, 0.3)]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
import polars as pl

#: The optimizations of a query over state tables: all of Polars' but the one that drops
#: ``maintain_order`` when a later sort hides the order (not from a float sum).
ORDERED: Final = pl.QueryOptFlags(check_order_observe=False)

os.environ.setdefault("POLARS_NO_PARTITION", "1")


def reaggregated(table: pl.DataFrame, group: Sequence[str], ops: Mapping[str, str]) -> pl.DataFrame:
    """``table``'s rows of equal ``group`` values as one, their columns ``ops`` reduced in order.

    As ``group_by(group).agg(...)`` (``ops``: column → ``"sum"`` or ``"max"``; null values
    ignored; the null keys of a column one group, its NaN keys another), but each group's
    rows are reduced in the order they have in ``table``, and the groups come out sorted by
    ``group`` (nulls first). A stable sort brings a group's rows together, which costs less
    than hashing them with integer keys (half the time of Polars' ordered group-by on a
    two-million-row state table) and as much with String keys.

    >>> t = pl.DataFrame({"g": ["b", "a", "b"], "x": [0.1, 1.0, 0.2], "m": [1, 5, 3]})
    >>> reaggregated(t, ["g"], {"x": "sum", "m": "max"}).rows()
    [('a', 1.0, 5), ('b', 0.30000000000000004, 3)]
    """
    schema = (
        table.lazy()
        .group_by(group, maintain_order=True)
        .agg(getattr(pl.col(c), op)() for c, op in ops.items())
    )
    dtypes = schema.collect_schema()
    if table.is_empty():
        return pl.DataFrame(schema=dtypes).select(table.columns)
    rows = table.sort(group, maintain_order=True, nulls_last=False)
    changed = [_changed(c, rows.schema[c]) for c in group]
    first = pl.any_horizontal(changed).fill_null(True) if changed else pl.int_range(pl.len()) == 0
    starts = np.flatnonzero(rows.select(first).to_series().to_numpy())
    out = {c: rows[c].gather(starts) for c in group}
    for c, op in ops.items():
        out[c] = _reduced(rows[c], starts, op).cast(dtypes[c])
    return pl.DataFrame(out).select(table.columns)


def _changed(name: str, dtype: pl.DataType) -> pl.Expr:
    """Whether a row's ``name`` differs from the row before's (a null or NaN equals its kind)."""
    here, before = pl.col(name), pl.col(name).shift(1)
    differs = here.ne_missing(before)
    if dtype.is_float():
        differs = differs & ~(here.is_nan() & before.is_nan()).fill_null(False)
    return differs


def _reduced(column: pl.Series, starts: np.ndarray, op: str) -> pl.Series:
    """The sums (nulls as 0) or maxima (null where all are null) of ``column``'s runs."""
    if op == "sum":
        values = column.fill_null(0).to_numpy()
        return pl.Series(column.name, np.add.reduceat(values, starts))
    if op != "max":
        raise ValueError(f"expected a reduction 'sum' or 'max', got {op!r}")
    present = np.add.reduceat(column.is_not_null().to_numpy().astype(np.int64), starts) > 0
    lowest = column.min() if column.null_count() < column.len() else 0
    values = column.fill_null(lowest).to_numpy()
    return pl.Series(column.name, np.maximum.reduceat(values, starts)).scatter(
        np.flatnonzero(~present), None
    )
