"""Confidence intervals for any metric from mergeable states.

- :func:`bootstrap_intervals`: percentile intervals over the Poisson bootstrap replicates of a
  state accumulated with ``bootstrap=R`` (see :mod:`streameval.resample_draw`);
- :func:`jackknife_intervals`: the delete-a-group jackknife over the values of a key column
  (partitions, days) of any state: cheap, as it needs no extra pass over the data.

Both take ``table_fn``, the function from a state to its metric table (such as
``lambda s: s.metrics(threshold=[0.3, 0.5])``), and compute it for every replicate or every
left-out value in one finalize, with the replicate or the left-out value as one more key.

Which rows and columns get intervals: see :mod:`streameval.resample_tables`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np
import polars as pl

from .errors import InputError
from .ordered import ORDERED, reaggregated
from .resample_draw import REPLICATE
from .resample_tables import (
    attach,
    check_identifiers,
    identifier_columns,
    join_on,
    level_of,
    metric_columns,
)
from .states import kind_module
from .states.data import StateData
from .tasks.binary import state as binary_state

#: The state type a caller passes in (``State``), given back to its ``table_fn``.
S = TypeVar("S", bound=StateData)
FINALIZE_ROWS = 1 << 20  # state rows finalized at once by bootstrap_intervals


def per_replicate(state: S, table_fn: Callable[[S], pl.DataFrame]) -> pl.DataFrame:
    """``table_fn`` of a replicated state, over blocks of replicates of bounded state rows.

    Each block is one finalize over all its groups and replicates; blocks bound the memory of
    finalizing a large state (R + 1 times the rows of the data's state). Their warnings
    (undefined metrics, values outside a metric's domain) would count replicate rows and
    groups: they are silenced, and the data's own (replicate 0's) are issued instead.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _in_blocks(state, table_fn)
    if caught:  # the same warnings, of the data itself
        table_fn(type(state)(state.spec, state.table.filter(pl.col(REPLICATE) == 0)))
    return out


def data_warnings(finish: Callable[..., pl.DataFrame], *frames: pl.DataFrame) -> pl.DataFrame:
    """``finish`` of frames of replicates (key ``replicate``), warning as the data's own rows do.

    Replicate 0 (the data) is finished with its warnings; the other replicates' warnings
    would count replicate rows and groups, and are silenced.
    """
    sample = pl.col(REPLICATE) == 0
    table = finish(*(frame.filter(sample) for frame in frames))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rest = finish(*(frame.filter(~sample) for frame in frames))
    return pl.concat([table, rest], how="vertical_relaxed")


def _in_blocks(state: S, table_fn: Callable[[S], pl.DataFrame]) -> pl.DataFrame:
    """:func:`per_replicate`'s finalize, a block of replicates at a time."""
    table = state.table
    if table.height <= FINALIZE_ROWS:
        return table_fn(state)
    sizes = table.group_by(REPLICATE, maintain_order=True).len().sort(REPLICATE)
    block = (sizes["len"].cum_sum() - sizes["len"]) // FINALIZE_ROWS
    parts = sizes.select(REPLICATE).with_columns(block.alias("_se_block"))
    blocks = parts.group_by("_se_block", maintain_order=True).agg(pl.col(REPLICATE))
    tables = []
    for members in blocks[REPLICATE]:
        rows = table.filter(pl.col(REPLICATE).is_in(members.implode())).rechunk()
        tables.append(table_fn(type(state)(state.spec, rows)))
    return pl.concat(tables, how="vertical_relaxed")


def bootstrap_intervals(
    state: S,
    table_fn: Callable[[S], pl.DataFrame],
    level: float = 0.95,
    *,
    columns: Sequence[str] | None = None,
    identifiers: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Percentile bootstrap intervals of every metric of a replicated state.

    Parameters
    ----------
    state : State
        Accumulated with ``bootstrap=R``: its last key is ``replicate``.
    table_fn : callable
        State → metric table (keys first, ``replicate`` among them), computed once for all
        replicates; one row per group and identifier (``threshold``, ``class``, …).
    level : float
        Confidence level: the interval runs from the (1 − level)/2 to the (1 + level)/2
        quantile of replicates 1..R.
    columns : list of str, optional
        The metric columns to give intervals; default: every float metric
        (:mod:`streameval.resample_tables`).
    identifiers : list of str, optional
        The columns besides the keys that identify a row of the table; default: the known
        identifiers present (``threshold``, ``class``, …) and the non-numeric columns.

    Returns
    -------
    polars.DataFrame
        Replicate 0's table (the estimate on the data itself) without ``replicate``, and after
        each metric ``<metric>_lo`` and ``<metric>_hi``.

    Notes
    -----
    Quantiles are Hyndman and Fan's type 7 (linear interpolation between order statistics,
    NumPy's default). A replicate in which a metric is null or NaN (say, an AUC of a
    replicate without positives) or that lacks the row is left out, and the interval is null
    when more than a share (1 − level)/2 of the R replicates are left out: the interval would
    then depend on where the undefined replicates lie.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1] * 50, "p": [i / 100 for i in range(100)]})
    >>> st = se.accumulate(df, label="y", score="p", bootstrap=50, seed=1)
    >>> out = bootstrap_intervals(st, lambda s: s.metrics(), columns=["roc_auc"])
    >>> out.select(pl.col("roc_auc", "roc_auc_lo", "roc_auc_hi").round(3))
    shape: (1, 3)
    ┌─────────┬────────────┬────────────┐
    │ roc_auc ┆ roc_auc_lo ┆ roc_auc_hi │
    │ ---     ┆ ---        ┆ ---        │
    │ f64     ┆ f64        ┆ f64        │
    ╞═════════╪════════════╪════════════╡
    │ 0.51    ┆ 0.423      ┆ 0.599      │
    └─────────┴────────────┴────────────┘

    """
    level = level_of(level)
    spec = state.spec
    if spec.replicates < 1 or not spec.keys or spec.keys[-1] != REPLICATE:
        raise InputError(
            "expected a state with bootstrap replicates, got one without; hint: accumulate "
            "with bootstrap=200"
        )
    table = per_replicate(state, table_fn)
    if REPLICATE not in table.columns:
        raise InputError(
            f"expected table_fn to return the key {REPLICATE!r} of the replicated state, got "
            f"columns {table.columns}; hint: table_fn=lambda s: s.metrics()"
        )
    return replicate_intervals(table, spec.keys[:-1], spec.replicates, level, columns, identifiers)


def replicate_intervals(
    table: pl.DataFrame,
    keys: Sequence[str],
    replicates: int,
    level: float,
    columns: Sequence[str] | None = None,
    identifiers: Sequence[str] | None = None,
) -> pl.DataFrame:
    """:func:`bootstrap_intervals` from the metric table of replicates 0 … ``replicates``.

    ``table`` has the group ``keys``, then the key ``replicate``, then the metric columns.
    """
    level = level_of(level)
    ids = identifier_columns(keys, table.drop(REPLICATE), identifiers)
    names = metric_columns(table, [*ids, REPLICATE], columns)
    point = table.filter(pl.col(REPLICATE) == 0).drop(REPLICATE)
    spread_rows = table.filter(pl.col(REPLICATE) > 0)
    check_identifiers(point, spread_rows, ids)
    allowed = int(replicates * (1 - level) / 2)
    aggs = []
    for c in names:
        x = pl.col(c).cast(pl.Float64).fill_nan(None)
        enough = x.count() >= replicates - allowed
        for suffix, q in (("_lo", (1 - level) / 2), ("_hi", (1 + level) / 2)):
            aggs.append(pl.when(enough).then(x.quantile(q, "linear")).alias(c + suffix))
    spread = (
        spread_rows.group_by(ids, maintain_order=True).agg(aggs)
        if ids
        else spread_rows.select(aggs)
    )
    return attach(point, spread, ids, names, ("_lo", "_hi"))


def _units(state: StateData) -> pl.DataFrame:
    """The state's rows that hold metric rows: with optional labels, those with a label."""
    if not state.spec.unlabeled:
        return state.table
    labelled = binary_state.column_exprs(state.spec)["n"] > 0
    return state.table.filter(labelled)


def leave_one_out(state: S, column: str) -> S:
    """The states of the data without each value d of the key ``column``, in one table.

    Within each group of the other keys, the state without d has d in ``column``. Each is
    re-aggregated from the other values' rows by the kind's merge ops (sums, and the largest
    of the other values for ``max`` columns), so it equals, up to the order of float
    additions, the state accumulated without d. Nothing is subtracted: a bucket that
    only d held is absent, not a rounding residue. The table has about (g − 1) times the
    rows of the state, g being the number of values.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"day": [1, 1, 2, 3], "y": [0, 1, 1, 0], "p": [0.2, 0.7, 0.4, 0.9]})
    >>> st = se.accumulate(df, label="y", score="p", by="day", precision="exact")
    >>> leave_one_out(st, "day").metrics().select("day", "n", "roc_auc")
    shape: (3, 3)
    ┌─────┬─────┬─────────┐
    │ day ┆ n   ┆ roc_auc │
    │ --- ┆ --- ┆ ---     │
    │ i64 ┆ i64 ┆ f64     │
    ╞═════╪═════╪═════════╡
    │ 1   ┆ 2   ┆ 0.0     │
    │ 2   ┆ 3   ┆ 0.5     │
    │ 3   ┆ 3   ┆ 1.0     │
    └─────┴─────┴─────────┘
    """
    spec = state.spec
    kind = kind_module(spec)
    others = [k for k in spec.keys if k != column]
    rows = [*others, "_se_out", *kind.group_columns(spec)]
    table = state.table
    values = table.select(*others, pl.col(column).alias("_se_out")).unique()
    if others:
        pairs = table.lazy().join(
            values.lazy(), on=others, nulls_equal=True, maintain_order="left_right"
        )
    else:
        pairs = table.lazy().join(values.lazy(), how="cross", maintain_order="left_right")
    kept = pairs.filter(pl.col(column).ne_missing(pl.col("_se_out"))).drop(column)
    out = reaggregated(
        kept.collect(engine="in-memory", optimizations=ORDERED), rows, kind.merge_ops(spec)
    )
    out = out.rename({"_se_out": column})
    return type(state)(spec, out.select(table.columns))


def jackknife_intervals(
    state: S,
    column: str,
    table_fn: Callable[[S], pl.DataFrame],
    level: float = 0.95,
    *,
    columns: Sequence[str] | None = None,
    identifiers: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Delete-a-group jackknife intervals over the values of a key column (partitions, days).

    With θ̂ a metric of a group's whole data and θ_(d) its value without the data of value
    d of ``column`` (one of the g values the group has), SE = √((g − 1)/g · Σ_d (θ_(d) − θ̄)²)
    with θ̄ the mean of the θ_(d), and the interval is θ̂ ± t·SE with t the (1 + level)/2
    quantile of Student's t with g − 1 degrees of freedom (not clipped to the metric's
    range). It treats the values as independent draws of units (days, partitions): with few
    of them it is wide, and it needs no pass over the data.

    Parameters
    ----------
    state : State
        Any state with ``column`` among its keys.
    column : str
        The key whose values are left out one at a time; merged away in the output.
    table_fn : callable
        State → metric table, as for :func:`bootstrap_intervals`.
    level : float
        Confidence level.
    columns, identifiers : list of str, optional
        As for :func:`bootstrap_intervals`.

    Returns
    -------
    polars.DataFrame
        The table of the state merged over ``column`` (θ̂), and after each metric
        ``<metric>_lo``, ``<metric>_hi`` and ``<metric>_se``. They are null where g < 2 or
        where the metric is null without some value (every θ_(d) is needed).

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"day": [d for d in range(1, 6) for _ in range(8)],
    ...                    "y": [0, 1, 1, 0, 1, 0, 0, 1] * 5,
    ...                    "p": [(7 * i % 40) / 40 for i in range(40)]})
    >>> st = se.accumulate(df, label="y", score="p", by="day", precision="exact")
    >>> out = jackknife_intervals(st, "day", lambda s: s.metrics(), columns=["roc_auc"])
    >>> out.select(pl.col("roc_auc", "roc_auc_lo", "roc_auc_hi", "roc_auc_se").round(3))
    shape: (1, 4)
    ┌─────────┬────────────┬────────────┬────────────┐
    │ roc_auc ┆ roc_auc_lo ┆ roc_auc_hi ┆ roc_auc_se │
    │ ---     ┆ ---        ┆ ---        ┆ ---        │
    │ f64     ┆ f64        ┆ f64        ┆ f64        │
    ╞═════════╪════════════╪════════════╪════════════╡
    │ 0.55    ┆ 0.29       ┆ 0.81       ┆ 0.094      │
    └─────────┴────────────┴────────────┴────────────┘

    """
    from scipy import stats  # (0.7 s to import: loaded when an interval needs it)

    level = level_of(level)
    spec = state.spec
    if column not in spec.keys or (column == REPLICATE and spec.replicates):
        raise InputError(
            f"expected a group key of the state to leave out, got {column!r}; hint: the keys "
            f"are {list(spec.keys)} (accumulate with by=[..., {column!r}])"
        )
    kind = kind_module(spec)
    others = [k for k in spec.keys if k != column]
    rows = [*others, *kind.group_columns(spec)]
    whole = reaggregated(state.table.drop(column), rows, kind.merge_ops(spec))
    estimate = table_fn(type(state)(replace(spec, keys=tuple(others)), whole))
    with warnings.catch_warnings():  # (the estimate's said it of the data; these count subsets)
        warnings.simplefilter("ignore")
        left_out = table_fn(leave_one_out(state, column))
    ids = identifier_columns(others, estimate, identifiers)
    names = metric_columns(estimate, ids, columns)
    check_identifiers(estimate, left_out.drop(column), ids)
    values = _units(state).select(*others, column).unique()
    if spec.unlabeled:  # (a unit whose rows all lack a label holds none of the metrics' rows)
        left_out = left_out.join(
            values, on=[*others, column], how="semi", nulls_equal=True, maintain_order="left_right"
        )
    size = pl.len().alias("_se_g")
    g = values.group_by(others, maintain_order=True).agg(size) if others else values.select(size)
    dof = np.maximum(g["_se_g"].to_numpy() - 1, 1)
    g = g.with_columns(pl.Series("_se_t", stats.t.ppf((1 + level) / 2, dof)))
    aggs = []
    for c in names:
        x = pl.col(c).cast(pl.Float64).fill_nan(None)
        aggs += [((x - x.mean()) ** 2).sum().alias(f"_ss_{c}"), x.count().alias(f"_k_{c}")]
    spread = left_out.group_by(ids, maintain_order=True).agg(aggs) if ids else left_out.select(aggs)
    out = join_on(join_on(estimate.select(*ids, *names), spread, ids), g, others)
    gg = pl.col("_se_g").cast(pl.Float64)
    results = []
    for c in names:
        x = pl.col(c).cast(pl.Float64)
        ok = (pl.col(f"_k_{c}") == pl.col("_se_g")) & (gg >= 2) & x.is_not_nan()
        se = pl.when(ok).then(((gg - 1) / gg * pl.col(f"_ss_{c}")).sqrt())
        results += [
            (x - pl.col("_se_t") * se).alias(f"{c}_lo"),
            (x + pl.col("_se_t") * se).alias(f"{c}_hi"),
            se.alias(f"{c}_se"),
        ]
    suffixes = ("_lo", "_hi", "_se")
    spread = out.with_columns(results).select(*ids, *(f"{c}{s}" for c in names for s in suffixes))
    return attach(estimate, spread, ids, names, suffixes)
