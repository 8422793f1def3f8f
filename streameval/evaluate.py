"""evaluate = finalize(accumulate(...)): a metric table, on this machine or on Spark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from . import progress as bar
from . import spark
from .local import local_evaluate
from .options import Evaluation, check_alpha, check_beta, check_options
from .source import Engine, Source, is_spark_frame


def evaluate(
    source: Source,
    *,
    label: str | Sequence[str],
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
    query: str | Sequence[str] | None = None,
    k: int | Sequence[int | None] | None = 10,
    alpha: float = 0.5,
    beta: float = 1.0,
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

    The parameters shared with :func:`streameval.accumulate` mean what they mean there; the
    rows are accumulated and finalized in one call.

    Parameters
    ----------
    source : path, glob, directory, list of paths, LazyFrame, DataFrame or pyarrow data
        The predictions. Hive partition columns (``day=2026-10-01/``) can be used in ``by``.
        A Spark DataFrame is evaluated on its executors (:func:`streameval.spark.evaluate`).
    label : str or list of str
        Label column. Binary: 0/1, booleans, or two values with ``positive=``. Multiclass:
        any type. Regression: numeric. Multilabel: a 0/1 (or boolean) column per label, or
        one list column (each row's labels; or booleans, one per label).
    score : str, optional
        Binary task: the score column, any numeric range (probabilities, logits, margins).
    by : str or list of str, optional
        Group key columns; one metric row per group.
    folds : str, optional
        The fold column of out-of-fold predictions: the table then has per-fold rows plus
        the mean, standard deviation and pooled metric per group, as
        :func:`streameval.fold_metrics`.
    repeats : str, optional
        With ``folds``: the repeat column of repeated cross-validation.
    weight : str, optional
        Non-negative sample weights (sklearn's ``sample_weight``).
    task : {"binary", "multiclass", "regression", "paired", "ranking", "multilabel"}
        What the predictions are (``"paired"``: two or more models' scores of one binary
        label, in ``scores``).
    prediction : str, optional
        Multiclass: the hard predicted class. Regression: the predicted value.
    scores : list of str or mapping class → column, optional
        Multiclass: per-class probability columns, in ``classes`` order for a list. Paired:
        the models' score columns. Multilabel: a score column per label (any range).
    classes : list, optional
        Multiclass: every class, in order. Default: the sorted values found. Multilabel: the
        labels' names (default: the label columns').
    positive : optional
        Binary: the positive class value (default 1 / True).
    threshold : float or list of float
        Binary: one value or a list; predicted positive means ``score >= threshold``, kept
        exact in bucketed mode. A list gives one row per group and threshold. Multilabel:
        one value, at which each label is predicted.
    precision : "exact" or int, optional
        Mantissa bits of score (and error) buckets; ``"exact"`` keeps every distinct value.
        Default 11.
    top_k : int
        Multiclass: ``k`` of ``top_k_accuracy`` (sklearn's default 2).
    power : float
        Regression: Tweedie power of ``mean_tweedie_deviance`` (≤ 0 or ≥ 1; default 1.5).
    query : str or list of str, optional
        Ranking: the query key column(s); a query's rows are its items.
    k : int, None or list of those
        Ranking: the cutoffs of the metrics at k (None: the whole list); a row per group
        and cutoff. Default 10.
    alpha : float
        Regression: the quantile of ``mean_pinball_loss`` and ``d2_pinball``.
    beta : float
        Binary and multiclass: the ``beta`` of the ``fbeta`` columns (default 1).
    metrics : list of str, optional
        Only these metric columns; one asked for by name whose domain the data violates
        raises instead of being null with a warning.
    ci : {None, "wilson", "clopper-pearson", "bootstrap", "jackknife"}
        Intervals and statistics, as :meth:`streameval.State.metrics`. ``"bootstrap"``
        accumulates ``bootstrap`` Poisson replicates (drawn from ``row_id`` and ``seed``,
        see :func:`streameval.accumulate`) and gives percentile intervals of every metric;
        ``"jackknife"`` leaves out each value of the group key ``jackknife`` in turn.
    level : float
        Confidence level of the intervals.
    auc_method : {"delong", "hanley-mcneil"}
        Variance of the AUC (binary), as :meth:`streameval.State.metrics`.
    bootstrap : int
        With ``ci="bootstrap"``: the number of replicates R.
    row_id : str or list of str, optional
        With ``ci="bootstrap"``: the columns identifying a row (or a cluster of rows drawn
        together), as :func:`streameval.accumulate`.
    seed : int
        With ``ci="bootstrap"``: the seed of the draws.
    jackknife : str, optional
        With ``ci="jackknife"``: the group key whose values are left out one at a time.
    drop_nulls : bool
        Drop rows with a null in a column read (with a warning giving the count) instead of
        raising.
    engine : {"streaming", "in-memory"}
        Polars engine; streaming keeps memory bounded.
    progress : bool
        Show a progress bar on stderr (partitions or shards read, rows, rate, time left),
        as the command line does at a terminal.

    Returns
    -------
    DataFrame
        The metric table: the group keys, ``n``, then the metric columns, one row per group
        (binary: per group and threshold, ``threshold`` last; paired: per group and
        ``model``). With ``ci``, the interval columns ``<metric>_lo`` / ``<metric>_hi``. With
        ``folds``, the table of :func:`streameval.fold_metrics`.

    Raises
    ------
    InputError
        A missing column, a wrong type or value of an option, or a label, score or weight
        the task does not accept (see :func:`streameval.accumulate`).

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
    >>> groups = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 1, 1, 0, 1, 0],
    ...                        "p": [0.2, 0.7, 0.4, 0.3, 0.9, 0.6]})
    >>> se.evaluate(groups, label="y", score="p", by="g", metrics=["roc_auc", "accuracy"])
    shape: (2, 5)
    ┌─────┬─────┬─────────┬──────────┬───────────┐
    │ g   ┆ n   ┆ roc_auc ┆ accuracy ┆ threshold │
    │ --- ┆ --- ┆ ---     ┆ ---      ┆ ---       │
    │ str ┆ i64 ┆ f64     ┆ f64      ┆ f64       │
    ╞═════╪═════╪═════════╪══════════╪═══════════╡
    │ a   ┆ 3   ┆ 1.0     ┆ 0.666667 ┆ 0.5       │
    │ b   ┆ 3   ┆ 1.0     ┆ 0.666667 ┆ 0.5       │
    └─────┴─────┴─────────┴──────────┴───────────┘
    >>> reg = pl.DataFrame({"y": [1.0, 2.0, 4.0], "yhat": [1.5, 2.0, 3.0]})
    >>> se.evaluate(reg, task="regression", label="y", prediction="yhat")["mae"].item()
    0.5

    """
    check_options(locals())
    check_alpha(alpha), check_beta(beta)  # (before any pass over the data)
    options = Evaluation(**{k: v for k, v in locals().items() if k not in ("source", "progress")})
    if is_spark_frame(source):
        return spark.evaluate_options(source, options)
    with bar.showing("evaluate", progress):
        return local_evaluate(source, options)
