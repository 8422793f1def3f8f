"""A metric per group with its standard error: what checks and slice discovery test.

:func:`testable` says which metrics have an analytic variance (DeLong's for an AUC, the
binomial one for a proportion whose successes and trials the table holds);
:func:`narrowed_metrics` computes a state's metric table with only what the tests read;
:func:`measured` gives each group's ``value``, ``se``, ``n`` and ``positives``.

>>> import polars as pl, streameval as se
>>> df = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 1, 1, 0, 1, 0],
...                    "p": [0.2, 0.9, 0.6, 0.7, 0.4, 0.1]})
>>> state = se.accumulate(df, label="y", score="p", by="g")
>>> table = narrowed_metrics(state, ["recall"], {})
>>> measured(table, "binary", "recall", ["g"]).select("g", "value", "se", "n")
shape: (2, 4)
┌─────┬───────┬─────┬─────┐
│ g   ┆ value ┆ se  ┆ n   │
│ --- ┆ ---   ┆ --- ┆ --- │
│ str ┆ f64   ┆ f64 ┆ f64 │
╞═════╪═══════╪═════╪═════╡
│ a   ┆ 1.0   ┆ 0.0 ┆ 3.0 │
│ b   ┆ 0.0   ┆ 0.0 ┆ 3.0 │
└─────┴───────┴─────┴─────┘
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from .metrics.declare import Metric
from .metrics.registry import TABLES, declared
from .state import State, metric_table_of
from .tasks.common import MetricOptions
from .tasks.registry import offers

#: The identifier columns of metric rows besides the group keys.
IDENTIFIERS = ("threshold", "model", "k")


def testable(table: str, metric: str) -> bool:
    """Whether ``metric`` of the metric table ``table`` has an analytic variance.

    An AUC has DeLong's; a proportion whose successes and trials are columns of the table
    has the binomial one.

    >>> testable("binary", "roc_auc"), testable("binary", "recall"), testable("binary", "f1")
    (True, True, False)
    """
    m = declared(table, metric)
    if m is None or m.interval == "none":
        return False
    if m.interval == "auc":
        return True
    names = {d.name for d in TABLES[table]}
    return m.counts is not None and all(set(e.meta.root_names()) <= names for e in m.counts())


def table_of(kind: str) -> str:
    """The metric table a task's tests read (a paired task: its models' table).

    >>> table_of("binary"), table_of("paired")
    ('binary', 'paired')
    """
    return "paired" if offers(kind, "models") else kind


def declaration(kind: str, metric: str) -> Metric:
    """The declared metric column ``metric`` of a task's table (validated by the caller)."""
    m = declared(table_of(kind), metric)
    assert m is not None
    return m


def narrowed_metrics(
    state: State, metrics: Sequence[str], kwargs: Mapping[str, Any]
) -> pl.DataFrame:
    """The state's metric table with what testing ``metrics`` needs: them and their intervals.

    Only those metrics are computed (with the counts their variances and a
    ``min_positives`` read), when the task lets a table be narrowed; a binary table has no
    caret statistics then (they are not metrics: no check reads them). ``kwargs`` are
    :meth:`State.metrics` options (``metrics`` and ``ci`` are set here).
    """
    options = {k: v for k, v in kwargs.items() if k not in ("metrics", "ci")}
    kind = state.spec.kind
    table = table_of(kind)
    if offers(kind, "metrics"):
        if any(testable(table, m) for m in metrics):
            options["ci"] = "wilson"
        names = {d.name for d in TABLES[table]}
        wanted = set(metrics) | ({"positives"} & names)
        for metric in metrics:
            m = declaration(kind, metric)
            if m.counts is not None and testable(table, metric):
                wanted |= {n for e in m.counts() for n in e.meta.root_names()}
        options["metrics"] = [d.name for d in TABLES[table] if d.name in wanted]
        # (without caret's statistics, which are not metrics: no check reads them)
        return metric_table_of(state, MetricOptions(**options, statistics=False))
    return state.metrics(**options)


def binomial_se(m: Metric) -> pl.Expr:
    """The binomial standard error of the proportion ``m`` from its table's counts.

    Null where it has no trials.
    """
    assert m.counts is not None
    x, trials = (e.cast(pl.Float64) for e in m.counts())
    p = x / trials
    return pl.when(trials > 0).then((p * (1 - p) / trials).clip(0.0).sqrt())


def kept_rows(
    rows: pl.DataFrame,
    *,
    model: str | None = None,
    where: Mapping[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    """The rows of ``model`` (a paired task's) and of the ``where`` filter (key: values as text).

    A key the rows lack (a reference state without it) keeps every row.
    """
    if model is not None and "model" in rows.columns:
        rows = rows.filter(pl.col("model") == model)
    for key, values in (where or {}).items():
        if key in rows.columns:
            rows = rows.filter(pl.col(key).cast(pl.String).is_in(list(values)))
    return rows


def measured(
    table: pl.DataFrame,
    kind: str,
    metric: str,
    groups: Sequence[str],
    *,
    threshold: float | None = None,
    model: str | None = None,
    where: Mapping[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    """Per group: ``metric``'s ``value``, its ``se``, ``n`` and ``positives``.

    ``table`` is :func:`narrowed_metrics`'s; ``groups`` are its group keys. Rows are those
    of ``threshold`` (a binary task's first by default), ``model`` and the ``where``
    filter (key: values as strings). ``se`` is null for a metric :func:`testable` refuses.
    """
    m = declaration(kind, metric)
    rows = table
    if "threshold" in rows.columns:
        wanted = threshold if threshold is not None else rows["threshold"].min()
        rows = rows.filter(pl.col("threshold") == wanted)
    rows = kept_rows(rows, model=model, where=where)
    se: pl.Expr = pl.lit(None, pl.Float64)
    if m.interval == "auc" and f"{m.name}_se" in rows.columns:
        se = pl.col(f"{m.name}_se")
    elif m.interval == "proportion" and m.counts is not None and testable(table_of(kind), m.name):
        se = binomial_se(m)
    ids = [c for c in IDENTIFIERS if c in rows.columns and c not in groups]
    positives = pl.col("positives") if "positives" in rows.columns else pl.lit(None)
    return rows.select(
        *groups,
        *ids,
        pl.col(m.name).cast(pl.Float64).alias("value"),
        se.cast(pl.Float64).alias("se"),
        pl.col("n").cast(pl.Float64).alias("n"),
        positives.cast(pl.Float64).alias("positives"),
    )
