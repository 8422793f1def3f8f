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
from ..metrics.declare import proportions
from ..metrics.groups import with_group_key
from ..metrics.registry import TABLES
from ..ordered import ORDERED
from ..spec import ALL
from ..tasks.multiclass.classes import (
    PER_CLASS,
    SCORE_COLUMNS,
    class_counts,
    class_values,
    one_vs_rest,
    ovr_histogram,
    ovr_ranking,
    whole_counts,
)
from ..tasks.multiclass.metrics import metric_table
from .confusion import STATISTICS, binary_statistics, multiclass_statistics
from .delong import check_method, delong, hanley_mcneil, normal_interval
from .proportions import METHODS, add_intervals, check_level

if TYPE_CHECKING:
    from ..states.data import StateData

#: Each table's proportions (their successes and trials), as declared: the score intervals'.
PROPORTIONS = proportions(TABLES["binary"])
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
        joined = auc.join(
            variance, on=groups, how="left", nulls_equal=True, maintain_order="left_right"
        )
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
    state: StateData,
    table: pl.DataFrame,
    names: Sequence[str],
    ci: str,
    level: float,
    auc_method: str,
    computed: pl.DataFrame | None = None,
    statistics: bool = True,
) -> pl.DataFrame:
    """A binary metric table with intervals and caret's statistics (metrics ``names``).

    ``computed``: each group's DeLong variance (the keys and ``_var``) where the table's
    compiled pass gave it; else it is computed from the state here. Without ``statistics``,
    caret's are left out.
    """
    variance = None if computed is None else computed.lazy()
    if auc_method == "delong" and variance is None:
        lf, keys = with_group_key(state.table, state.keys)
        pos, neg = (pl.col(c).cast(pl.Float64) for c in ("pos", "neg"))
        variance = delong(lf.select(*keys, "bucket", pos, neg), keys).select(*keys, "_var")
    return binary_intervals(table, state.keys, names, variance, ci, level, statistics)


def binary_intervals(
    table: pl.DataFrame,
    keys: list[str],
    names: Sequence[str],
    variance: pl.LazyFrame | None,
    ci: str,
    level: float,
    statistics: bool = True,
) -> pl.DataFrame:
    """:func:`binary_table` given each group's DeLong variance of the AUC.

    The columns come in :func:`ordered`'s order: keys, ``n``, each of the metrics ``names``
    with its interval, the statistics, ``threshold``. ``variance`` holds the group keys (the
    constant key column of :func:`streameval.tasks.binary.metrics.with_group_key` when there are
    none) and ``_var``, null where undefined; None takes Hanley and McNeil's variance instead.
    """
    wanted = {m: counts for m, counts in PROPORTIONS.items() if m in names}  # (shown: these)
    out = add_intervals(table, wanted, ci, level)
    out = binary_statistics(out) if statistics else out
    groups = keys or [ALL]
    base = out.lazy() if keys else out.lazy().with_columns(pl.lit(0, pl.Int8).alias(ALL))
    auc = base.select(*groups, "roc_auc", "roc_auc_error", "positives", "negatives")
    ci_auc = auc_interval(auc.unique(groups), groups, variance, level)
    joined = base.join(
        ci_auc, on=groups, how="left", nulls_equal=True, maintain_order="left"
    ).collect(engine="in-memory", optimizations=ORDERED)
    joined = joined if keys else joined.drop(ALL)
    return ordered(joined, [*keys, "n"], names, ["threshold"])


def multiclass_metrics(
    state: StateData,
    metrics: Sequence[str] | None,
    ci: str | None,
    level: float,
    pairs: pl.DataFrame | None = None,
    beta: float = 1.0,
) -> pl.DataFrame:
    """A multiclass state's metric table, with intervals for ``ci``, F-beta at ``beta``.

    ``pairs``: the AUCs' pair sums from the rows (:mod:`streameval.kernels.classes`), for a
    state of confusion rows only.
    """
    table = metric_table(state, metrics=metrics, pairs=pairs, beta=beta)
    if ci is None:
        return table
    names = table.columns[len(state.keys) + 1 :]
    table = multiclass_table(state, table, ci, level)
    return ordered(table, [*state.keys, "n"], names)


def multiclass_table(state: StateData, table: pl.DataFrame, ci: str, level: float) -> pl.DataFrame:
    """A multiclass metric table with accuracy intervals and caret's statistics."""
    stats = multiclass_statistics(state, with_counts=True)
    keys = state.keys
    if keys:
        joined = table.join(stats, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:
        joined = pl.concat([table, stats], how="horizontal")
    declared = proportions(TABLES["multiclass"])
    return add_intervals(joined, declared, ci, level).drop("_x", "_n")


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
    state: StateData,
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
    counts = proportions(TABLES["per_class"])
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
            maintain_order="left_right",
        )
    table = add_intervals(
        out.sort([*keys, "k"], nulls_last=False).collect(engine="in-memory", optimizations=ORDERED),
        counts,
        ci,
        level,
    )
    names = [c for c in columns if c != "roc_auc_error"]
    extra = [c for c in columns if c == "roc_auc_error"]
    return ordered(table, [*keys, "class"], names, extra)


def per_class(
    state: StateData, *, ci: str | None = None, level: float = 0.95, auc_method: str = "delong"
) -> pl.DataFrame:
    """Per group and class: support, one-vs-rest metrics, and with scores AUC and AP.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a"], "pred": ["a", "b", "a", "a"]})
    >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
    >>> st.per_class().select("class", "support", "precision", "recall")
    shape: (3, 4)
    ┌───────┬─────────┬───────────┬────────┐
    │ class ┆ support ┆ precision ┆ recall │
    │ ---   ┆ ---     ┆ ---       ┆ ---    │
    │ str   ┆ i64     ┆ f64       ┆ f64    │
    ╞═══════╪═════════╪═══════════╪════════╡
    │ a     ┆ 2       ┆ 0.666667  ┆ 1.0    │
    │ b     ┆ 1       ┆ 1.0       ┆ 1.0    │
    │ c     ┆ 1       ┆ 0.0       ┆ 0.0    │
    └───────┴─────────┴───────────┴────────┘
    """
    counts, keys = class_counts(state)
    out = one_vs_rest(counts).with_columns(pl.col("t").alias("support"))
    columns = list(PER_CLASS)
    if state.spec.scores:
        ranked, _ = ovr_ranking(state)
        out = out.join(
            ranked, on=[*keys, "k"], how="left", nulls_equal=True, maintain_order="left_right"
        )
        columns += SCORE_COLUMNS
    names = pl.LazyFrame({"k": range(len(state.spec.classes)), "class": class_values(state)})
    out = out.with_columns(pl.col("k").cast(pl.Int64)).join(
        names, on="k", maintain_order="left_right"
    )
    out = out.sort([*keys, "k"], nulls_last=False)
    if ci is None:
        table = out.select(*keys, "class", *columns).collect(
            engine="in-memory", optimizations=ORDERED
        )
    else:
        table = per_class_table(state, out, keys, ci, level, auc_method, columns)
    table = whole_counts(table, ["support"], weighted=state.spec.weighted)
    return table.drop(ALL) if keys == [ALL] else table
