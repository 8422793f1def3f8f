"""Fold-aware evaluation: per-fold metrics, their mean and standard deviation, the pooled metric.

The fold (and repeat) columns are group keys like any other, so the data is accumulated once;
each fold's metrics come from its own state rows, and the pooled metric from the state with
the fold key merged away — which is what a state of sums is for.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from .errors import InputError
from .metrics.registry import is_bound
from .state import State, summed

ESTIMATES = pl.Enum(["fold", "mean", "sd", "pooled"])
RESERVED = ("estimate", "n_folds")


def drop_keys(state: State, keys: Sequence[str]) -> State:
    """The state with the group ``keys`` merged away (re-aggregated over the other keys).

    Every state column declares how it merges (``merge_ops``), so dropping a key is a
    group-by over the remaining keys and the state's own row columns.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"fold": [0, 0, 1, 1], "y": [0, 1, 0, 1], "p": [0.2, 0.9, 0.6, 0.4]})
    >>> st = se.accumulate(df, label="y", score="p", by="fold", precision="exact")
    >>> drop_keys(st, ["fold"]).metrics()["roc_auc"].item()
    0.75

    """
    missing = [k for k in keys if k not in state.keys]
    if missing:
        raise InputError(
            f"expected keys of the state to drop, got {missing!r}; the state's keys are "
            f"{state.keys!r}"
        )
    spec = replace(state.spec, keys=tuple(k for k in state.spec.keys if k not in keys))
    return State(spec, summed(spec, [state.table.drop(keys)]))


def _bound(column: str) -> bool:
    """Whether a metric column is an error bound (no bound is known for a standard deviation)."""
    return is_bound(column)


def _inference(column: str) -> bool:
    """Whether a column is an interval limit, a standard error or a p-value of one sample."""
    return column.endswith(("_lo", "_hi", "_se", "_pvalue"))


def fold_metrics(
    state: State,
    folds: str = "fold",
    repeats: str | None = None,
    *,
    threshold: float | Sequence[float] | None = None,
    alpha: float = 0.5,
    beta: float = 1.0,
    metrics: Sequence[str] | None = None,
    ddof: int = 1,
    ci: str | None = None,
    level: float = 0.95,
    auc_method: str = "delong",
) -> pl.DataFrame:
    """Per-fold metrics plus their mean, standard deviation and pooled value, per group.

    Parameters
    ----------
    state : State
        Accumulated with the fold column (and the repeat column) among its keys.
    folds : str
        The fold column (a key of the state).
    repeats : str, optional
        The repeat column of repeated cross-validation (a key of the state).
    threshold : float or list of float, optional
        Binary: predicted positive means ``score >= threshold`` (default 0.5); a list gives
        rows per threshold. As :meth:`State.metrics`.
    alpha : float
        Regression: the quantile of ``mean_pinball_loss`` and ``d2_pinball``.
    beta : float
        Binary and multiclass: the ``beta`` of the ``fbeta`` columns (default 1).
    metrics : list of str, optional
        Only these metric columns, as :meth:`State.metrics`.
    ddof : int
        Delta degrees of freedom of the standard deviation: 1 (default) is the sample
        standard deviation, R's ``sd()``; 0 divides by the number of folds K.
    ci : {None, "wilson", "clopper-pearson"}
        Intervals and statistics, as :meth:`State.metrics`; intervals, standard errors and
        p-values are given for the fold and pooled rows (each a sample of its own) and null
        in the mean and sd rows.
    level : float
        Confidence level of the intervals.
    auc_method : {"delong", "hanley-mcneil"}
        Variance of the AUC (binary), as :meth:`State.metrics`.

    Returns
    -------
    DataFrame
        The other keys, ``repeat``, ``fold``, ``estimate``, ``n_folds``, then the metric
        columns (Float64), with rows: ``estimate="fold"``, one per (repeat,) fold;
        ``"mean"`` and ``"sd"`` over the folds (over every (repeat, fold) cell with repeats),
        null when a fold's value is null; ``"pooled"``, the metric of all the folds' rows
        together (per repeat, and over all repeats). ``n_folds`` counts the cells behind the
        row. Counts (``n``, ``tp`` …) in mean and sd rows are the mean and sd of the folds'
        counts; error bounds (``roc_auc_error`` …) are null in sd rows.

    Raises
    ------
    InputError
        A fold or repeat column that is not a key of the state (or the same column twice),
        a null in it, a key named ``estimate`` or ``n_folds``, a ``ddof`` that is not a
        non-negative integer, or options :meth:`State.metrics` refuses.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"fold": [0, 0, 0, 1, 1, 1], "y": [0, 1, 1, 0, 1, 0],
    ...                    "p": [0.2, 0.7, 0.4, 0.3, 0.9, 0.6]})
    >>> st = se.accumulate(df, label="y", score="p", by="fold")
    >>> se.fold_metrics(st).select("fold", "estimate", "n_folds", "accuracy")
    shape: (5, 4)
    ┌──────┬──────────┬─────────┬──────────┐
    │ fold ┆ estimate ┆ n_folds ┆ accuracy │
    │ ---  ┆ ---      ┆ ---     ┆ ---      │
    │ i64  ┆ enum     ┆ u32     ┆ f64      │
    ╞══════╪══════════╪═════════╪══════════╡
    │ 0    ┆ fold     ┆ 1       ┆ 0.666667 │
    │ 1    ┆ fold     ┆ 1       ┆ 0.666667 │
    │ null ┆ mean     ┆ 2       ┆ 0.666667 │
    │ null ┆ sd       ┆ 2       ┆ 0.0      │
    │ null ┆ pooled   ┆ 2       ┆ 0.666667 │
    └──────┴──────────┴─────────┴──────────┘

    """
    cells = [folds] if repeats is None else [repeats, folds]
    if repeats == folds:
        raise InputError(f"expected different fold and repeat columns, got {folds!r} twice")
    for name in cells:
        if name not in state.keys:
            raise InputError(
                f"expected the column {name!r} among the state's group keys, got keys "
                f"{state.keys!r}; hint: accumulate with by=[..., {name!r}]"
            )
    for name in RESERVED:
        if name in state.keys:
            raise InputError(
                f"expected no group key named {name!r} (a column of the fold table); "
                "hint: rename it"
            )
    for name in cells:
        if state.table[name].null_count():
            raise InputError(
                f"expected every row to have a {name!r} value, but some are null; hint: "
                "filter out the rows without one (they belong to no fold)"
            )
    if isinstance(ddof, bool) or not isinstance(ddof, int) or ddof < 0:
        raise InputError(f"expected ddof to be a non-negative integer, got {ddof!r}")
    others = [k for k in state.keys if k not in cells]

    inference: dict[str, Any] = {}
    if ci is not None:
        inference = {"ci": ci, "level": level, "auc_method": auc_method}

    def table(s: State, *, again: bool = False) -> pl.DataFrame:
        if not again:
            return s.metrics(threshold, alpha=alpha, beta=beta, metrics=metrics, **inference)
        with warnings.catch_warnings():  # the same rows' warnings were issued per fold
            warnings.simplefilter("ignore")
            return s.metrics(threshold, alpha=alpha, beta=beta, metrics=metrics, **inference)

    per_fold = table(state)
    # the threshold, and a label such as the paired task's model, are row keys, not values
    extra = [
        c
        for c, dtype in per_fold.schema.items()
        if c not in state.keys and (c == "threshold" or not dtype.is_numeric())
    ]
    values = [c for c in per_fold.columns if c not in state.keys and c not in extra]
    per_fold = per_fold.with_columns(pl.col(values).cast(pl.Float64))
    groups = [*others, *extra]

    def counted(t: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
        t = t.with_columns(pl.col(values).cast(pl.Float64))
        if not [*keys, *extra]:
            return t.with_columns(pl.lit(per_fold.height, pl.UInt32).alias("n_folds"))
        n = per_fold.group_by([*keys, *extra], maintain_order=True).agg(pl.len().alias("n_folds"))
        return t.join(
            n, on=[*keys, *extra], how="left", nulls_equal=True, maintain_order="left_right"
        )

    parts = [per_fold.with_columns(pl.lit(1, pl.UInt32).alias("n_folds"), _estimate("fold"))]
    summary = per_fold.group_by(groups, maintain_order=True).agg(
        pl.len().alias("n_folds"),
        *[_strict(pl.col(c), pl.col(c).mean()) for c in values],
        *[_strict(pl.col(c), pl.col(c).std(ddof)).alias(f"_sd_{c}") for c in values],
    )
    none = pl.lit(None, pl.Float64)
    mean = [(none if _inference(c) else pl.col(c)).alias(c) for c in values]
    parts.append(summary.select(*groups, "n_folds", *mean).with_columns(_estimate("mean")))
    sd = [(none if _bound(c) or _inference(c) else pl.col(f"_sd_{c}")).alias(c) for c in values]
    parts.append(summary.select(*groups, "n_folds", *sd).with_columns(_estimate("sd")))
    pooled = drop_keys(state, [folds])
    parts.append(counted(table(pooled, again=True), pooled.keys).with_columns(_estimate("pooled")))
    if repeats is not None:
        overall = drop_keys(state, cells)
        parts.append(
            counted(table(overall, again=True), overall.keys).with_columns(_estimate("pooled"))
        )
    labels = [c for c in extra if c != "threshold"]
    tail = ["threshold"] if "threshold" in extra else []
    order = [*others, *cells, *labels, "estimate", "n_folds", *values, *tail]
    out = pl.concat(parts, how="diagonal_relaxed").select(order)
    last = [False] * len(groups) + [True] * len(cells) + [False]
    return out.sort([*groups, *cells, "estimate"], nulls_last=last, maintain_order=True)


def _strict(column: pl.Expr, value: pl.Expr) -> pl.Expr:
    """``value``, or null when any of the folds' values is null (nothing silently skipped)."""
    return pl.when(column.null_count() == 0).then(value).otherwise(None)


def _estimate(kind: str) -> pl.Expr:
    return pl.lit(kind, ESTIMATES).alias("estimate")


def fold_cells(folds: str | None, repeats: str | None, keys: Sequence[str]) -> list[str]:
    """The fold (and repeat) columns added to the group keys ``keys``, checked.

    >>> fold_cells("fold", "repeat", ["segment"])
    ['repeat', 'fold']
    >>> fold_cells(None, None, ["segment"])
    []
    """
    if folds is None and repeats is None:
        return []
    if folds is None:
        raise InputError(
            f"expected folds= (the fold column) with repeats={repeats!r}; hint: "
            "folds='fold', repeats='repeat'"
        )
    if repeats == folds:
        raise InputError(f"expected different fold and repeat columns, got {folds!r} twice")
    cells = [folds] if repeats is None else [repeats, folds]
    clash = [c for c in cells if c in keys]
    if clash:
        raise InputError(
            f"expected the fold and repeat columns outside by=, got {clash!r} in by={keys!r}; "
            "hint: folds= adds the fold column to the group keys itself"
        )
    return cells
