"""ACCUMULATE: source → mergeable state, in one streaming pass (on this machine or on Spark)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import progress as bar
from . import spark
from .options import Accumulation, check_options
from .pipeline import local_accumulate
from .source import Engine, Source, is_spark_frame
from .state import State


def accumulate(
    source: Source,
    *,
    label: str | Sequence[str],
    score: str | None = None,
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    task: str = "binary",
    prediction: str | None = None,
    scores: Sequence[str] | Mapping[Any, str] | None = None,
    classes: Sequence[Any] | None = None,
    positive: Any = None,
    precision: int | str | None = None,
    thresholds: float | Sequence[float] = (0.5,),
    top_k: int = 2,
    power: float = 1.5,
    query: str | Sequence[str] | None = None,
    k: int | Sequence[int | None] | None = 10,
    drop_nulls: bool = False,
    engine: Engine = "streaming",
    bootstrap: int | None = None,
    row_id: str | Sequence[str] | None = None,
    seed: int = 0,
    labels: str = "required",
    progress: bool = False,
) -> State:
    """Compute the mergeable state of a model's predictions in one streaming pass.

    Parameters
    ----------
    source : path, glob, directory, list of paths, LazyFrame, DataFrame or pyarrow data
        The predictions. Hive partition columns (``day=2026-10-01/``) can be used in ``by``.
        A Spark DataFrame is accumulated on its executors (:func:`streameval.spark.accumulate`).
    label : str or list of str
        Label column. Binary: 0/1, booleans, or two values with ``positive=``. Multiclass:
        any type. Regression: numeric. Multilabel: a 0/1 (or boolean) column per label, or
        one list column (each row's labels; or booleans, one per label).
    score : str, optional
        Binary task: the score column, any numeric range (probabilities, logits, margins).
    by : str or list of str, optional
        Group key columns; one state row set per group.
    weight : str, optional
        Non-negative sample weights (sklearn's ``sample_weight``).
    task : {"binary", "multiclass", "regression", "paired", "ranking", "multilabel"}
        What the predictions are (``"paired"``: two or more models' scores of one binary
        label, in ``scores``, for :meth:`State.roc_test`).
    prediction : str, optional
        Multiclass: the hard predicted class. Regression: the predicted value.
    scores : list of str or mapping class → column, optional
        Multiclass: per-class probability columns, in ``classes`` order for a list. Paired:
        the models' score columns. Multilabel: a score column per label (any range).
    classes : list, optional
        Multiclass: every class, in order (also those missing from this part of the data, so
        that states of partitions merge). Default: the sorted values found. Multilabel: the
        labels' names, in order (default: the label columns'; needed with a list column).
    positive : optional
        Binary: the positive class value (default 1 / True).
    precision : "exact" or int, optional
        Mantissa bits of score (and error) buckets; ``"exact"`` keeps every distinct value.
        Default 11.
    thresholds : float or list of float
        Binary: thresholds whose confusion counts must stay exact in bucketed mode (buckets
        are cut there). ``0.5`` and other short binary fractions are always bucket edges.
        Multilabel: the one threshold at which a label is predicted (score ≥ it).
    top_k : int
        Multiclass: ``k`` of ``top_k_accuracy`` (sklearn's default 2).
    power : float
        Regression: Tweedie power of ``mean_tweedie_deviance`` (≤ 0 or ≥ 1; default 1.5).
    query : str or list of str, optional
        Ranking: the query key column(s); a query's rows are its items.
    k : int, None or list of those
        Ranking: the cutoffs of the metrics at k (None: the whole list); a row per group
        and cutoff. Default 10.
    drop_nulls : bool
        Drop rows with a null in a column read (with a warning giving the count) instead of
        raising.
    engine : {"streaming", "in-memory"}
        Polars engine; streaming keeps memory bounded.
    bootstrap : int, optional
        R Poisson bootstrap replicates: the state gets the last key ``replicate`` (0 the data
        itself, 1..R replicates; see :mod:`streameval.resample_draw`), for the work of R + 1
        passes; :func:`streameval.resample.bootstrap_intervals` turns it into intervals.
    row_id : str or list of str, optional
        With ``bootstrap``: the columns identifying a row (or a cluster of rows drawn
        together), hashed for its draws. Default: the columns read, which must then differ
        from row to row (more than 5% of rows repeating others is an error).
    seed : int
        With ``bootstrap``: the seed of the draws (0 to 2**64 − 1).
    labels : {"required", "optional"}
        Binary: ``"optional"`` keeps rows whose label is null (not arrived yet) in the score
        histogram — for :meth:`State.drift`, and counted as ``n_unlabeled`` in the metric
        table — and out of every labelled metric. Default: a null label is bad input.
    progress : bool
        Show a progress bar on stderr (partitions or shards read, rows, rate, time left).

    Returns
    -------
    State
        The spec (task, keys, precision, columns read …) and the table of sums: one row per
        group and state cell (binary: score bucket; multiclass: actual and predicted class;
        …), to merge with the states of other parts of the data (:meth:`State.merge`) and
        finalize (:meth:`State.metrics`).

    Raises
    ------
    InputError
        A missing column, a wrong type or value of an option, a null (without
        ``drop_nulls``), or a label, score or weight value the task does not accept.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a", "b"], "y": [1, 0, 1], "p": [0.9, 0.2, 0.6]})
    >>> st = se.accumulate(df, label="y", score="p", by="g")
    >>> st.table.sort("g", "bucket").select("g", "pos", "neg")
    shape: (3, 3)
    ┌─────┬─────┬─────┐
    │ g   ┆ pos ┆ neg │
    │ --- ┆ --- ┆ --- │
    │ str ┆ i64 ┆ i64 │
    ╞═════╪═════╪═════╡
    │ a   ┆ 0   ┆ 1   │
    │ a   ┆ 1   ┆ 0   │
    │ b   ┆ 1   ┆ 0   │
    └─────┴─────┴─────┘

    """
    check_options(locals())
    options = Accumulation(**{k: v for k, v in locals().items() if k not in ("source", "progress")})
    if is_spark_frame(source):
        return spark.accumulate_options(source, options)
    with bar.showing("accumulate", progress):
        return local_accumulate(source, options)
