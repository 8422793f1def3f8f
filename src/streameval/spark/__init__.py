"""Spark: the same states, computed on the executors, merged by Spark, finalized here.

``streameval.spark.accumulate(df, ...)`` takes a ``pyspark.sql.DataFrame`` (classic or Spark
Connect, Spark 3.5 and 4.x) and returns the :class:`~streameval.State` that
:func:`streameval.accumulate` gives for the same rows; ``streameval.spark.evaluate`` returns
the metric table. How:

1. On the driver, the inputs are validated against the DataFrame's schema by the local code
   (missing columns, types, roles), on a Polars frame of no rows. Where the label values
   decide the spec (string labels, a multiclass task's classes), their distinct values are
   read first by a small Spark query, so every executor works with the same spec.
2. On the executors, ``mapInArrow`` runs :func:`streameval.accumulate` on blocks of about
   ``block_rows`` rows (:mod:`.worker`) and merges each partition's states.
3. Spark merges the partitions' states with ``groupBy(keys, state columns).sum`` (``max``
   where a state column merges by maximum), and the small merged state comes back through
   Arrow.

pyspark is imported only here, when these functions are called, and a session is never
created: the DataFrame's own session runs everything. Executors need streameval installed
(see the README's "Spark" section).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl
import pyarrow as pa

from ..accumulate import _as_list, prepare, task_module
from ..accumulate import accumulate as local_accumulate
from ..errors import InputError
from ..metrics.binary import as_thresholds
from ..source import is_spark_frame
from ..spec import parse_precision
from ..state import State
from ..states import kind_module
from ..tasks import Inputs
from ..tasks.multiclass import MAX_CLASSES
from .types import empty_frame, spark_schema
from .worker import Task, decode_error, deserialize, mapper, serialize

__all__ = ["accumulate", "evaluate", "is_spark_frame"]


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError(
            "expected pyspark to be installed for Spark DataFrames, but it is not; "
            "hint: pip install 'streameval[spark]'"
        ) from None


def _spark_action(action: Any) -> Any:
    """Run a Spark action; a streameval error raised on an executor is raised here as itself."""
    try:
        return action()
    except Exception as exc:
        decoded = decode_error(str(exc))
        if decoded is None:
            raise
        raise decoded from None


def _values(df: Any, column: str, limit: int) -> list[Any]:
    """Up to ``limit`` distinct non-null values of a column, read by one Spark query."""
    rows = _spark_action(
        lambda: df.select(column).where(df[column].isNotNull()).distinct().limit(limit).collect()
    )
    return [row[0] for row in rows]


def _probe(df: Any, empty: pl.DataFrame, inputs: Inputs) -> pl.DataFrame:
    """The frame the driver validates on: no rows, or the label values where they matter.

    A binary (or paired) task reads its label values when the labels are not 0/1 or
    booleans, a multiclass task when its classes are not given: the same checks as the local
    path then run on the distinct values, and the executors get the classes (or positive
    value) these checks settled.
    """
    dtype = empty.schema.get(inputs.label)
    if dtype is None:
        return empty
    if inputs.task in ("binary", "paired"):
        simple = dtype == pl.Boolean or (dtype.is_numeric() and inputs.positive is None)
        columns = [] if simple else [inputs.label]
        limit = 102
    elif inputs.task == "multiclass" and inputs.classes is None:
        mapped = isinstance(inputs.scores, Mapping)
        predicted = [inputs.prediction] if inputs.prediction else []
        columns = [] if mapped else [c for c in (inputs.label, *predicted) if c in empty.schema]
        limit = MAX_CLASSES + 1
    else:
        columns = []
    if not columns:
        return empty
    found = {c: _values(df, c, limit) for c in columns}
    height = max(len(v) for v in found.values())
    return pl.DataFrame(
        {
            name: pl.Series(
                name, (found.get(name, []) + [None] * height)[:height], dtype=dtype_, strict=False
            )
            for name, dtype_ in empty.schema.items()
        }
    )


def _settled(inputs: Inputs, spec: Any) -> Inputs:
    """The inputs with what the driver settled from the data: classes, positive value."""
    if inputs.task == "multiclass":
        return replace(inputs, classes=list(spec.classes))
    if inputs.task in ("binary", "paired"):
        return replace(inputs, positive=spec.positive)
    return inputs


def _options(inputs: Inputs, keys: list[str]) -> dict[str, Any]:
    """Keyword arguments of :func:`streameval.accumulate` for ``inputs``."""
    return {
        "label": inputs.label,
        "score": inputs.score,
        "by": keys,
        "weight": inputs.weight,
        "task": inputs.task,
        "prediction": inputs.prediction,
        "scores": inputs.scores,
        "classes": inputs.classes,
        "positive": inputs.positive,
        "precision": inputs.precision,
        "thresholds": list(inputs.thresholds),
        "top_k": inputs.top_k,
        "power": inputs.power,
        "bootstrap": inputs.bootstrap,
        "row_id": inputs.row_id,
        "seed": inputs.seed,
    }


def accumulate(
    df: Any,
    *,
    label: str,
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
    drop_nulls: bool = False,
    bootstrap: int | None = None,
    row_id: str | Sequence[str] | None = None,
    seed: int = 0,
    block_rows: int = 1_000_000,
) -> State:
    """The state of a Spark DataFrame's predictions, computed on its executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The predictions (classic or Spark Connect).
    label, score, by, weight, task, prediction, scores, classes, positive, precision
        As :func:`streameval.accumulate`.
    thresholds, top_k, power, drop_nulls, bootstrap, row_id, seed
        As :func:`streameval.accumulate`.
    block_rows : int
        Rows an executor buffers per Polars call (Spark hands out batches of
        ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default).

    Returns
    -------
    State
        Equal to :func:`streameval.accumulate` on the same rows (float sums up to their
        summation order).

    Examples
    --------
    >>> import streameval.spark as ses
    >>> state = ses.accumulate(spark_df, label="y", score="p", by="day")  # doctest: +SKIP
    >>> state.metrics()  # doctest: +SKIP

    """
    _require_pyspark()
    if not is_spark_frame(df):
        raise InputError(
            f"expected a pyspark.sql.DataFrame, got {type(df).__name__}; hint: "
            "streameval.accumulate reads Parquet paths, Polars and Arrow data"
        )
    if not isinstance(block_rows, int) or block_rows < 1:
        raise InputError(f"expected block_rows to be a positive integer, got {block_rows!r}")
    keys = _as_list(by)
    task_module(task)
    inputs = Inputs(
        label=label, score=score, task=task, prediction=prediction, scores=scores,
        classes=classes, weight=weight, positive=positive,
        precision=parse_precision(precision), thresholds=tuple(as_thresholds(thresholds)),
        top_k=top_k, power=power, bootstrap=bootstrap, row_id=row_id, seed=seed,
    )  # fmt: skip
    empty = empty_frame(df.schema)
    plan = prepare(_probe(df, empty, inputs), inputs, by=keys)
    options = _options(_settled(inputs, plan.spec), keys)
    target = local_accumulate(empty, **options)
    struct, arrow = spark_schema(target.table.schema)
    rows = df.select(*plan.wanted)
    if drop_nulls:
        used = [c for c in plan.wanted if c not in keys]
        nulls = _spark_action(lambda: rows.where(_any_null(rows, used)).count())
        if nulls:
            warnings.warn(f"dropped {nulls} rows with a null in {', '.join(used)}", stacklevel=2)
        rows = rows.dropna(subset=used)
    states = rows.mapInArrow(mapper(Task(options, arrow, block_rows)), struct)
    kind = kind_module(target.spec)
    group = [*target.spec.keys, *kind.group_columns(target.spec)]
    F = _functions(df)
    sums = [getattr(F, op)(c).alias(c) for c, op in kind.merge_ops(target.spec).items()]
    merged = states.groupBy(*group).agg(*sums)
    frame = pl.from_arrow(_collect(merged, arrow))
    assert isinstance(frame, pl.DataFrame)
    frame = frame.select(target.table.columns).cast(target.table.schema)
    return State(target.spec, frame)


def _collect(df: Any, schema: pa.Schema) -> pa.Table:
    """A (small) Spark DataFrame on the driver as an Arrow table of ``schema``.

    Spark 4 has ``DataFrame.toArrow``; Spark 3.5 sends Arrow IPC bytes from the executors.
    """
    to_arrow = getattr(df, "toArrow", None)
    if to_arrow is not None:
        table: pa.Table = _spark_action(to_arrow)
        return table.select(schema.names).cast(schema)
    payloads = _spark_action(lambda: df.mapInArrow(serialize, "ipc binary").collect())
    return deserialize([bytes(row[0]) for row in payloads], schema)


def _functions(df: Any) -> Any:
    """``pyspark.sql.functions`` of the DataFrame's flavour (classic or Connect)."""
    if type(df).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions as connect_functions

        return connect_functions
    from pyspark.sql import functions as classic_functions

    return classic_functions


def _any_null(df: Any, columns: list[str]) -> Any:
    test = df[columns[0]].isNull()
    for c in columns[1:]:
        test = test | df[c].isNull()
    return test


def evaluate(
    df: Any,
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
    block_rows: int = 1_000_000,
) -> pl.DataFrame:
    """The metric table of a Spark DataFrame's predictions: one row per group (and threshold).

    Parameters are those of :func:`streameval.evaluate` (``engine`` aside) and ``block_rows``
    (:func:`accumulate`). The state is computed on the executors, the metrics on the driver.

    Examples
    --------
    >>> import streameval.spark as ses
    >>> ses.evaluate(spark_df, label="y", score="p", by=["segment", "day"])  # doctest: +SKIP

    """
    from ..crossval import fold_cells, fold_metrics
    from ..stats.tables import check_ci

    if ci is not None and ci not in ("bootstrap", "jackknife"):
        check_ci(ci, level, auc_method)
    keys = _as_list(by)
    cells = fold_cells(folds, repeats, keys)
    binary = task == "binary"
    state = accumulate(
        df, label=label, score=score, by=[*keys, *cells], weight=weight, task=task,
        prediction=prediction, scores=scores, classes=classes, positive=positive,
        precision=precision, thresholds=threshold if binary else (0.5,), top_k=top_k,
        power=power, drop_nulls=drop_nulls, bootstrap=bootstrap if ci == "bootstrap" else None,
        row_id=row_id, seed=seed, block_rows=block_rows,
    )  # fmt: skip
    if folds is not None:
        return fold_metrics(
            state, folds, repeats, threshold=threshold if binary else None, alpha=alpha,
            metrics=metrics, ci=ci, level=level, auc_method=auc_method,
        )  # fmt: skip
    return state.metrics(
        threshold if binary else None, alpha=alpha, metrics=metrics, jackknife=jackknife,
        ci=ci, level=level, auc_method=auc_method,
    )  # fmt: skip
