"""Interval and statistic columns added to metric tables (``ci=`` of ``State.metrics``).

``ci="wilson"`` or ``"clopper-pearson"`` adds ``<metric>_lo`` / ``<metric>_hi`` for every
proportion metric, the AUC interval (``auc_method="delong"`` or ``"hanley-mcneil"``) with
``roc_auc_se``, and caret's statistics (:mod:`.confusion`). Bucketed AUC intervals are
widened by ``roc_auc_error``, so they cover the exact AUC's interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from .confusion import STATISTICS, binary_statistics, multiclass_statistics
from .delong import check_method, delong, hanley_mcneil, normal_interval
from .proportions import METHODS, add_intervals, check_level

if TYPE_CHECKING:
    from ..state import State

tp, fp, tn, fn = (pl.col(c) for c in ("tp", "fp", "tn", "fn"))
PROPORTIONS = {
    "prevalence": (pl.col("positives"), pl.col("positives") + pl.col("negatives")),
    "accuracy": (tp + tn, tp + fp + tn + fn),
    "error_rate": (fp + fn, tp + fp + tn + fn),
    "precision": (tp, tp + fp),
    "recall": (tp, tp + fn),
    "specificity": (tn, tn + fp),
    "npv": (tn, tn + fn),
    "fpr": (fp, fp + tn),
    "fnr": (fn, fn + tp),
}
RESAMPLING = ("bootstrap", "jackknife")


def check_ci(ci: str | None, level: float, auc_method: str) -> None:
    """Raise an InputError for an unknown interval method or level."""
    if ci is not None and ci not in (*METHODS, *RESAMPLING):
        raise InputError(
            f"expected ci among {[None, *METHODS, *RESAMPLING]}, got {ci!r}; hint: "
            "ci='wilson' adds <metric>_lo and <metric>_hi columns"
        )
    check_level(level)
    check_method(auc_method)


def auc_intervals(
    hist: pl.LazyFrame, groups: list[str], auc: pl.LazyFrame, level: float, method: str
) -> pl.LazyFrame:
    """Per group: ``roc_auc_se``, ``roc_auc_lo``, ``roc_auc_hi``.

    ``hist`` has (groups, bucket, pos, neg); ``auc`` has (groups, roc_auc, roc_auc_error,
    positives, negatives) — the metric table's values, which the interval is centred on.
    """
    variance = delong(hist, groups).select(*groups, "_var") if method == "delong" else None
    return auc_interval(auc, groups, variance, level)


def auc_interval(
    auc: pl.LazyFrame, groups: list[str], variance: pl.LazyFrame | None, level: float
) -> pl.LazyFrame:
    """:func:`auc_intervals` given each group's DeLong ``_var``; None: Hanley–McNeil's."""
    if variance is not None:
        joined = auc.join(variance, on=groups, how="left", nulls_equal=True)
    else:
        P, N = (pl.col(c).cast(pl.Float64) for c in ("positives", "negatives"))
        joined = auc.with_columns(hanley_mcneil(pl.col("roc_auc"), P, N).alias("_var"))
    se = pl.col("_var").clip(0.0).sqrt()
    lo, hi = normal_interval(pl.col("roc_auc"), se, level, pl.col("roc_auc_error"))
    return joined.select(
        *groups,
        se.alias("roc_auc_se"),
        pl.when(pl.col("roc_auc").is_not_null()).then(lo).alias("roc_auc_lo"),
        pl.when(pl.col("roc_auc").is_not_null()).then(hi).alias("roc_auc_hi"),
    )


def binary_table(
    state: State,
    table: pl.DataFrame,
    names: Sequence[str],
    ci: str,
    level: float,
    auc_method: str,
) -> pl.DataFrame:
    """A binary metric table with intervals and caret's statistics (metrics ``names``)."""
    from ..metrics.binary import with_group_key

    variance = None
    if auc_method == "delong":
        lf, keys = with_group_key(state.table, state.keys)
        pos, neg = (pl.col(c).cast(pl.Float64) for c in ("pos", "neg"))
        variance = delong(lf.select(*keys, "bucket", pos, neg), keys).select(*keys, "_var")
    return binary_intervals(table, state.keys, names, variance, ci, level)


def binary_intervals(
    table: pl.DataFrame,
    keys: list[str],
    names: Sequence[str],
    variance: pl.LazyFrame | None,
    ci: str,
    level: float,
) -> pl.DataFrame:
    """:func:`binary_table` given each group's DeLong variance of the AUC.

    The columns come in :func:`ordered`'s order: keys, ``n``, each of the metrics ``names``
    with its interval, the statistics, ``threshold``. ``variance`` holds the group keys (the
    constant key column of :func:`streameval.metrics.binary.with_group_key` when there are
    none) and ``_var``, null where undefined; None takes Hanley and McNeil's variance instead.
    """
    from ..metrics.binary import ALL

    out = binary_statistics(add_intervals(table, PROPORTIONS, ci, level))
    groups = keys or [ALL]
    base = out.lazy() if keys else out.lazy().with_columns(pl.lit(0, pl.Int8).alias(ALL))
    auc = base.select(*groups, "roc_auc", "roc_auc_error", "positives", "negatives")
    ci_auc = auc_interval(auc.unique(groups), groups, variance, level)
    joined = base.join(
        ci_auc, on=groups, how="left", nulls_equal=True, maintain_order="left"
    ).collect()
    joined = joined if keys else joined.drop(ALL)
    return ordered(joined, [*keys, "n"], names, ["threshold"])


def multiclass_metrics(
    state: State,
    metrics: Sequence[str] | None,
    ci: str | None,
    level: float,
    pairs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """A multiclass state's metric table, with intervals for ``ci``.

    ``pairs``: the AUCs' pair sums from the rows (:mod:`streameval.kernels.classes`), for a
    state of confusion rows only.
    """
    from ..metrics.multiclass import metric_table

    table = metric_table(state, metrics=metrics, pairs=pairs)
    if ci is None:
        return table
    names = table.columns[len(state.keys) + 1 :]
    table = multiclass_table(state, table, ci, level)
    return ordered(table, [*state.keys, "n"], names)


def multiclass_table(state: State, table: pl.DataFrame, ci: str, level: float) -> pl.DataFrame:
    """A multiclass metric table with accuracy intervals and caret's statistics."""
    stats = multiclass_statistics(state, with_counts=True)
    keys = state.keys
    if keys:
        joined = table.join(stats, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:
        joined = pl.concat([table, stats], how="horizontal")
    proportions = {
        "accuracy": (pl.col("_x"), pl.col("_n")),
        "error_rate": (pl.col("_n") - pl.col("_x"), pl.col("_n")),
    }
    return add_intervals(joined, proportions, ci, level).drop("_x", "_n")


def ordered(
    table: pl.DataFrame,
    leading: Sequence[str],
    names: Sequence[str],
    trailing: Sequence[str] = (),
) -> pl.DataFrame:
    """The table's columns in order: ``leading``, ``names``, statistics, ``trailing``.

    Each of ``names`` is followed by its ``_lo``/``_hi`` (``roc_auc`` also by its ``_se``).
    """
    columns = list(leading)
    for name in names:
        columns.append(name)
        extra = [f"{name}_lo", f"{name}_hi"] + (["roc_auc_se"] if name == "roc_auc" else [])
        columns += [c for c in extra if c in table.columns]
    columns += [c for c in STATISTICS if c in table.columns and c not in columns]
    return table.select(*columns, *trailing)


def per_class_table(
    state: State,
    out: pl.LazyFrame,
    keys: list[str],
    ci: str,
    level: float,
    auc_method: str,
    columns: list[str],
) -> pl.DataFrame:
    """The per-class table with intervals.

    ``out`` has, per group and class index ``k``, the one-vs-rest counts tp, fp, fn, tn and
    the ranking's ``_P``/``_N``.
    """
    from ..metrics.classes import ovr_histogram

    counts = {
        "prevalence": (tp + fn, tp + fp + tn + fn),
        **{m: PROPORTIONS[m] for m in ("precision", "recall", "specificity", "npv", "fpr", "fnr")},
    }
    if state.spec.scores:
        hist, _ = ovr_histogram(state)
        groups = [*keys, "k"]
        auc = out.select(
            *groups,
            "roc_auc",
            "roc_auc_error",
            pl.col("_P").alias("positives"),
            pl.col("_N").alias("negatives"),
        )
        hist = hist.with_columns(pl.col("k").cast(pl.Int64))
        out = out.join(
            auc_intervals(hist, groups, auc, level, auc_method),
            on=groups,
            how="left",
            nulls_equal=True,
        )
    table = add_intervals(out.sort([*keys, "k"], nulls_last=False).collect(), counts, ci, level)
    names = [c for c in columns if c != "roc_auc_error"]
    extra = [c for c in columns if c == "roc_auc_error"]
    return ordered(table, [*keys, "class"], names, extra)
