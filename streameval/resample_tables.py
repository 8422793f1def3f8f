"""Which rows and columns of a metric table the intervals of :mod:`streameval.resample` use.

A metric table's rows are identified by the group keys and the **identifiers**: the columns
``threshold``, ``class``, ``actual``, ``predicted``, ``quantile`` and ``bin`` when present, and
every non-numeric column that is not a key (``model``, ``model_a``, ``criterion``, …); or the
columns given as ``identifiers=``. They must take the same values in every replicate or
left-out state (a threshold that an operating point picks does not: pass ``identifiers=``).

An interval is given to every float column except the identifiers, the precision bounds
(the columns declared as bounds, :data:`streameval.metrics.registry.BOUNDS`: such as
``roc_auc_error`` and ``residual_quantile_error``), interval parts (``*_lo``, ``*_hi``,
``*_se``) and test statistics (``z``, ``statistic``, ``df``, ``p_value``, ``*_pvalue``);
integer columns (``n``, unweighted counts) get none. ``columns=`` names them instead. An
analytic interval the table already has for such a metric (``ci="wilson"``) is replaced.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .errors import InputError
from .metrics.registry import BOUNDS

IDENTIFIERS = ("threshold", "class", "actual", "predicted", "quantile", "bin")
STATISTICS = ("z", "statistic", "df", "p_value")
PARTS = ("_lo", "_hi", "_se", "_pvalue")


def interval_columns(table: pl.DataFrame, ids: Sequence[str]) -> list[str]:
    """The columns of a metric table that get intervals (see the module docstring).

    >>> t = pl.DataFrame({"g": [1.0], "n": [3], "roc_auc": [0.5], "roc_auc_error": [0.0],
    ...                   "max_error": [2.0], "roc_auc_lo": [0.4], "threshold": [0.5]})
    >>> interval_columns(t, ["g", "threshold"])
    ['roc_auc', 'max_error']
    """
    skip = {*ids, *BOUNDS, *STATISTICS}
    return [
        c
        for c, dtype in table.schema.items()
        if dtype.is_float() and c not in skip and not c.endswith(PARTS)
    ]


def identifier_columns(
    keys: Sequence[str], table: pl.DataFrame, given: Sequence[str] | None
) -> list[str]:
    """The group keys and the identifier columns of a metric table."""
    if given is not None:
        for c in given:
            if c not in table.columns or c in keys:
                raise InputError(
                    f"expected identifiers= to name columns of the table other than the keys, "
                    f"got {c!r}; hint: the table's columns are {table.columns}"
                )
        return [*keys, *given]
    found = [
        c
        for c, dtype in table.schema.items()
        if c not in keys and (c in IDENTIFIERS or not (dtype.is_numeric() or dtype == pl.Null))
    ]
    return [*keys, *found]


def check_identifiers(point: pl.DataFrame, every: pl.DataFrame, ids: list[str]) -> None:
    """Raise unless every row of ``every`` is identified like a row of ``point``."""
    extra = [c for c in ids if c in point.columns]
    if not extra:
        return
    rows = (
        every.select(ids)
        .unique()
        .join(point.select(ids), on=ids, how="anti", nulls_equal=True, maintain_order="left_right")
    )
    if rows.height:
        raise InputError(
            f"expected the identifier columns {extra} to take the same values for every "
            f"replicate or left-out value, but {rows.height} combination(s) appear only there, "
            f"such as {rows.row(0)}; hint: pass identifiers= naming the columns that identify a "
            "row (for operating points: identifiers=['criterion'])"
        )


def level_of(level: float) -> float:
    """The confidence level, checked."""
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise InputError(f"expected a confidence level between 0 and 1, got {level!r}; hint: 0.95")
    return float(level)


def metric_columns(table: pl.DataFrame, ids: list[str], columns: Sequence[str] | None) -> list[str]:
    """``columns`` checked, or the default interval columns."""
    if columns is None:
        return interval_columns(table, ids)
    for c in columns:
        if c not in table.columns or not table.schema[c].is_numeric() or c in ids:
            raise InputError(
                f"expected columns= to name numeric metric columns of the table, got {c!r}; "
                f"hint: the table's columns are {table.columns}"
            )
    return list(columns)


def join_on(left: pl.DataFrame, right: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Left join on ``on`` (nulls equal, left order kept); a cross join without columns."""
    if not on:
        return left.join(right, how="cross", maintain_order="left_right")
    return left.join(right, on=on, how="left", nulls_equal=True, maintain_order="left")


def attach(
    point: pl.DataFrame,
    spread: pl.DataFrame,
    ids: list[str],
    names: list[str],
    suffixes: Sequence[str],
) -> pl.DataFrame:
    """``point`` joined with ``spread`` on ``ids``, each ``<metric><suffix>`` after its metric.

    Columns of ``point`` with those names (an analytic interval) are replaced.
    """
    added = {f"{m}{s}" for m in names for s in suffixes}
    point = point.drop([c for c in point.columns if c in added])
    out = join_on(point, spread, ids)
    order: list[str] = []
    for c in point.columns:
        order += [c, *(f"{c}{s}" for s in suffixes if c in names)]
    return out.select(order)
