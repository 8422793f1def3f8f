"""evaluate = finalize(accumulate(...)): a metric table, on this machine or on Spark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from . import progress as bar
from . import spark
from .local import local_evaluate
from .options import check_options
from .source import Engine, Source, is_spark_frame


def evaluate(
    source: Source,
    *,
    label: str,
    score: str | None = None,
    by: str | Sequence[str] | None = None,
    folds: str | None = None,
    repeats: str | None = None,
    weight: str | None = None,
    task: str = "binary",
    prediction: str | None = None,
    scores: Sequence[str] | Mapping[Any, str] | None = None,
    classes: Sequence[Any] | None = None,
    positive: Any = None,
    threshold: float | Sequence[float] = 0.5,
    precision: int | str | None = None,
    top_k: int = 2,
    power: float = 1.5,
    alpha: float = 0.5,
    metrics: Sequence[str] | None = None,
    ci: str | None = None,
    level: float = 0.95,
    auc_method: str = "delong",
    bootstrap: int = 200,
    row_id: str | Sequence[str] | None = None,
    seed: int = 0,
    jackknife: str | None = None,
    drop_nulls: bool = False,
    engine: Engine = "streaming",
    progress: bool = False,
) -> pl.DataFrame:
    """Evaluate predictions: one metric row per group (and threshold, for a binary task).

    Parameters are those of :func:`streameval.accumulate`, plus ``threshold`` (binary: one
    value or a list; predicted positive means ``score >= threshold``, kept exact in bucketed
    mode), ``alpha`` (regression: the quantile of ``mean_pinball_loss``) and ``metrics``
    (only these metric columns; one asked for by name whose domain the data violates raises
    instead of being null with a warning), and ``ci``, ``level``, ``auc_method`` (intervals
    and statistics, as :meth:`streameval.State.metrics`). ``ci="bootstrap"`` accumulates
    ``bootstrap`` Poisson replicates (drawn from ``row_id`` and ``seed``, see
    :func:`streameval.accumulate`) and gives percentile intervals of every metric;
    ``ci="jackknife"`` leaves out each value of the group key ``jackknife`` in turn.

    ``folds`` (and ``repeats``) name the fold (and repeat) column of out-of-fold predictions:
    the table then has per-fold rows plus the mean, standard deviation and pooled metric per
    group, as :func:`streameval.fold_metrics`.

    ``progress=True`` shows a progress bar on stderr (partitions or shards read, rows, rate,
    time left), as the command line does at a terminal.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.evaluate(df, label="y", score="p", threshold=[0.3, 0.5])[["threshold", "recall"]]
    shape: (2, 2)
    ┌───────────┬────────┐
    │ threshold ┆ recall │
    │ ---       ┆ ---    │
    │ f64       ┆ f64    │
    ╞═══════════╪════════╡
    │ 0.3       ┆ 1.0    │
    │ 0.5       ┆ 0.5    │
    └───────────┴────────┘
    >>> reg = pl.DataFrame({"y": [1.0, 2.0, 4.0], "yhat": [1.5, 2.0, 3.0]})
    >>> se.evaluate(reg, task="regression", label="y", prediction="yhat")["mae"].item()
    0.5

    """
    check_options(locals())
    if progress and not is_spark_frame(source):
        settings = {k: v for k, v in locals().items() if k not in ("source", "progress")}
        with bar.showing("evaluate", True):
            return evaluate(source, **settings)
    if is_spark_frame(source):
        return spark.evaluate(
            source, label=label, score=score, by=by, folds=folds, repeats=repeats,
            weight=weight, task=task, prediction=prediction, scores=scores, classes=classes,
            positive=positive, threshold=threshold, precision=precision, top_k=top_k,
            power=power, alpha=alpha, metrics=metrics, ci=ci, level=level,
            auc_method=auc_method, bootstrap=bootstrap, row_id=row_id, seed=seed,
            jackknife=jackknife, drop_nulls=drop_nulls,
        )  # fmt: skip
    return local_evaluate(
        source, label=label, score=score, by=by, folds=folds, repeats=repeats, weight=weight,
        task=task, prediction=prediction, scores=scores, classes=classes, positive=positive,
        threshold=threshold, precision=precision, top_k=top_k, power=power, alpha=alpha,
        metrics=metrics, ci=ci, level=level, auc_method=auc_method, bootstrap=bootstrap,
        row_id=row_id, seed=seed, jackknife=jackknife, drop_nulls=drop_nulls, engine=engine,
    )  # fmt: skip
