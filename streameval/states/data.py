"""A state's data: its spec and its table of sums, checked when built.

:class:`StateData` is what the functions below :class:`streameval.State` read: the metric
formulas, intervals, resampling and files take one and never import ``State`` back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ..errors import InputError
from ..spec import Spec


@dataclass(frozen=True)
class StateData:
    """A spec and its table of sums (one row per group and bucket), checked when built.

    Examples
    --------
    >>> import polars as pl
    >>> from streameval.spec import Spec
    >>> data = StateData(Spec(kind="binary", keys=(), precision=11), pl.DataFrame({"pos": [1]}))
    >>> data.keys, len(data)
    ([], 1)

    """

    spec: Spec
    table: pl.DataFrame

    def __post_init__(self) -> None:
        check_finite_sums(self.spec, self.table)

    @property
    def keys(self) -> list[str]:
        """Group key columns.

        Returns
        -------
        list of str
            The state's group keys, in order (``spec.keys``).

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"g": ["a", "b"], "d": [1, 1], "y": [0, 1], "p": [0.2, 0.9]})
        >>> se.accumulate(df, label="y", score="p", by=["g", "d"]).keys
        ['g', 'd']

        """
        return list(self.spec.keys)

    def __len__(self) -> int:
        return self.table.height

    def column_sums(self, names: list[str]) -> pl.DataFrame:
        """The table's integer columns ``names`` summed per group: the keys and the sums.

        >>> from streameval.spec import Spec
        >>> table = pl.DataFrame({"g": ["a", "a", "b"], "bucket": [1, 2, 1], "n": [2, 3, 4]})
        >>> spec = Spec(kind="binary", keys=("g",), precision=11)
        >>> sums = StateData(spec, table).column_sums(["n"])
        >>> sums.sort("g").rows()
        [('a', 5), ('b', 4)]
        """
        sums = [pl.col(c).sum() for c in names]
        return (
            self.table.group_by(self.keys, maintain_order=True).agg(sums)
            if self.keys
            else self.table.select(sums)
        )

    def coded(self) -> object | None:
        """The table's rows already coded as the compiled finalize reads them, or None.

        A state summed from coded rows (a job's pool of day states) returns its runs, so its
        metric table needs no second coding of the table; any other state returns None.
        """
        return None


#: Value columns that are sums of weights (Float64 in a weighted state).
WEIGHT_SUMS = ("pos", "neg", "w")
#: Row columns by which a state holds separate copies of a group's weight (multiclass score
#: columns, regression parts): a group's total is summed within each.
COPIES = ("column", "part")


def check_finite_sums(spec: Spec, table: pl.DataFrame) -> None:
    """Refuse a weighted state whose sums of weights overflow (to inf), in a row or a group.

    Run on every State built (accumulate, merge, read). Weights are non-negative, so when the
    whole table's sums are finite so is every group's: one pass; groups are summed only to
    name the first that overflowed.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a"], "y": [1, 0], "p": [0.9, 0.2], "w": [1e308, 1e308]})
    >>> try:
    ...     se.accumulate(df, label="y", score="p", weight="w", by="g")
    ... except se.errors.InputError as exc:
    ...     print(str(exc).split(", but ")[1].split(";")[0])
    the sum of 'pos + neg' overflowed to inf in group g='a' (1 group(s) in all)
    """
    columns = [c for c in WEIGHT_SUMS if c in table.columns and table.schema[c].is_float()]
    if not spec.weighted or not columns:
        return
    sums = {c: pl.col(c).sum() for c in columns}
    if {"pos", "neg"} <= set(columns):
        sums["pos + neg"] = (pl.col("pos") + pl.col("neg")).sum()
    exprs = [e.alias(name) for name, e in sums.items()]
    if all(math.isfinite(v) for v in table.select(exprs).row(0)):
        return
    keys = [k for k in spec.keys if k in table.columns]
    by = [*keys, *(c for c in COPIES if c in table.columns)]
    totals = table.group_by(by, maintain_order=True).agg(exprs) if by else table.select(exprs)
    bad = totals.filter(pl.any_horizontal(~pl.col(list(sums)).is_finite()))
    if bad.is_empty():  # only the whole table's total overflowed: no group's metric reads it
        return
    row = bad.row(0, named=True)
    column = next(c for c in sums if not math.isfinite(row[c]))
    group = ", ".join(f"{k}={row[k]!r}" for k in keys) or "(no group keys)"
    groups = bad.select(keys).unique().height if keys else 1
    raise InputError(
        f"expected finite sums of weights, but the sum of {column!r} overflowed to "
        f"{row[column]} in group {group} ({groups} group(s) in all); hint: rescale the "
        "weights (dividing them all by one constant leaves every weighted metric unchanged)"
    )
