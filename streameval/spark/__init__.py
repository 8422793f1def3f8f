"""Spark: the same states, computed on the executors, merged by Spark, finalized here.

``streameval.spark.accumulate(df, ...)`` takes a ``pyspark.sql.DataFrame`` (classic or Spark
Connect, Spark 3.5 and 4.x) and returns the :class:`~streameval.State` that
:func:`streameval.accumulate` gives for the same rows; ``streameval.spark.evaluate`` returns
the metric table. How:

1. On the driver, the inputs are validated against the DataFrame's schema by the local code
   (missing columns, types, roles), on a Polars frame of no rows. Where the label values
   matter (string labels must hold two classes, one of them ``positive``; a multiclass
   task's classes come from the data), their distinct values are read first by a small
   Spark query, so every executor works with the same spec.
2. A binary, paired or multiclass task's state is built by Spark itself (:mod:`.rows`):
   bucket keys as SQL expressions, ``groupBy(keys…, buckets).agg(sums)`` with a hash
   partitioning on the group keys, so the rows never reach a Python worker and each group's
   state rows share a partition.
3. Other tasks (regression, multilabel), and bootstrap replicates, run
   :func:`streameval.accumulate` on the executors with ``mapInArrow``, on blocks of about
   ``block_rows`` rows (:mod:`.worker`); each partition's states leave as Arrow IPC blobs
   split by a hash of the group keys, which Spark repartitions so each group's rows meet in
   one partition, where they are re-aggregated (sums, and maxima where a state column
   merges by maximum).
4. ``accumulate`` collects the state rows; ``evaluate`` finalizes each group's where they
   are and collects only metric rows.

pyspark is imported only here, when these functions are called, and a session is never
created: the DataFrame's own session runs everything. Executors need streameval installed
(see the README's "Spark" section).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from ..crossval import fold_cells
from ..errors import InputError, StreamevalError, caller_level, close_matches
from ..options import Accumulation, Evaluation
from ..pipeline import as_list, local_accumulate, prepare
from ..source import is_spark_frame
from ..spec import parse_precision
from ..state import State
from ..stats.tables import check_ci
from ..tasks.binary.metrics import as_thresholds
from ..tasks.common import Inputs, label_argument, label_fields
from ..tasks.multiclass.plan import MAX_CLASSES
from ..tasks.registry import offers, task_of
from .rows import bad_rows, marker, serves, state_rows
from .types import empty_frame
from .worker import (
    BLOBS,
    FINALIZED,
    Finish,
    Task,
    conform,
    decode_error,
    decode_table,
    encoder,
    finalizer,
    mapper,
    merger,
    reissue,
)

__all__ = ["accumulate", "evaluate", "explain", "is_spark_frame"]


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError(
            "expected pyspark to be installed for Spark DataFrames, but it is not; "
            "hint: pip install 'streameval[spark]'"
        ) from None


def spark_action(action: Any) -> Any:
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
    rows = spark_action(
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
    if offers(inputs.task, "positive"):
        simple = dtype == pl.Boolean or (dtype.is_numeric() and inputs.positive is None)
        columns = [] if simple else [inputs.label]
        limit = 102
    elif offers(inputs.task, "classes") and inputs.classes is None:
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
    """The inputs with what the driver settled from the data: a multiclass task's classes.

    (A binary task's positive value never comes from the data: it is given, or 1 / True.)
    """
    if offers(inputs.task, "classes"):
        return replace(inputs, classes=list(spec.classes))
    return inputs


def _arguments(kind: type[Accumulation | Evaluation], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as the keywords of ``se.accumulate`` / ``se.evaluate`` (``kind``), defaults in.

    The Spark functions take the keywords of the local ones, so that both read alike and one
    options type stays the reference; ``engine`` (Polars') does not apply.
    """
    names = [f.name for f in dataclasses.fields(kind) if f.name != "engine"]
    unknown = [k for k in options if k not in names]
    if unknown:
        function = "accumulate" if kind is Accumulation else "evaluate"
        raise InputError(
            f"expected keywords of streameval.{function} (engine aside), got {unknown[0]!r}; "
            "hint: " + close_matches(unknown[0], names)
        )
    if "label" not in options:
        raise InputError("expected label= (the label column); hint: label='label'")
    return _fields(kind(**options))


def _fields(options: Accumulation | Evaluation) -> dict[str, Any]:
    """An options value as keywords, ``engine`` aside."""
    return {
        f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.name != "engine"
    }


def _inputs(arguments: Mapping[str, Any]) -> Inputs:
    """The task inputs of ``se.accumulate``'s bound keywords."""
    fields = {f.name for f in dataclasses.fields(Inputs)}
    given = {k: v for k, v in arguments.items() if k in fields}
    given.update(label_fields(given["label"]))
    given["precision"] = parse_precision(given.get("precision"))
    given["thresholds"] = tuple(as_thresholds(given.get("thresholds", (0.5,))))
    return Inputs(**given)


def _options(inputs: Inputs, keys: list[str]) -> dict[str, Any]:
    """Keyword arguments of :func:`streameval.accumulate` for ``inputs``."""
    options = dataclasses.asdict(inputs)
    del options["labels"], options["unlabeled"]  # (labels are required on Spark)
    options["label"] = label_argument(inputs)
    options["thresholds"] = list(inputs.thresholds)
    return {"by": keys, **options}


def accumulate(df: Any, *, block_rows: int = 1_000_000, **options: Any) -> State:
    """The state of a Spark DataFrame's predictions, computed on its executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The predictions (classic or Spark Connect).
    block_rows : int
        Rows an executor buffers per Polars call where Python workers accumulate (tasks
        other than binary, paired and multiclass, and bootstrap replicates; Spark hands out
        batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default).
        A binary, paired or multiclass task's state is Spark's own aggregation, which this
        leaves alone.
    **options
        The keywords of :func:`streameval.accumulate` (``label``, ``score``, ``by``,
        ``task``, ``weight``, ``precision``, ``bootstrap``, ``drop_nulls``, ...), ``engine``
        aside.

    Returns
    -------
    State
        Equal to :func:`streameval.accumulate` on the same rows (float sums up to their
        summation order).

    Raises
    ------
    InputError
        pyspark not installed, ``df`` not a Spark DataFrame, ``block_rows`` not a positive
        integer, or any input :func:`streameval.accumulate` refuses (an executor's error is
        raised on the driver as itself).

    Examples
    --------
    >>> import streameval.spark as ses
    >>> state = ses.accumulate(spark_df, label="y", score="p", by="day")  # doctest: +SKIP
    >>> state.metrics()  # doctest: +SKIP

    """
    return accumulate_options(df, Accumulation(**_arguments(Accumulation, options)), block_rows)


def accumulate_options(df: Any, options: Accumulation, block_rows: int = 1_000_000) -> State:
    """:func:`accumulate` of an options value (as :func:`streameval.accumulate` hands it)."""
    if options.labels != "required":
        raise InputError(
            f"expected labels='required' on Spark, got {options.labels!r}; hint: accumulate "
            "predictions without labels on this machine, or filter them out"
        )
    arguments = _fields(options)
    keys = as_list(arguments["by"])
    planned = _planned(df, block_rows, arguments)
    target = planned.target
    if planned.in_jvm:
        states = _state_rows(planned, keys or None)
        rows = spark_action(lambda: states.mapInArrow(encoder(), BLOBS).collect())
    else:
        partial = _partial_states(planned, keys)
        shuffled = partial.repartition(planned.parts(keys), "part")
        rows = spark_action(lambda: shuffled.mapInArrow(merger(target), BLOBS).collect())
    tables = [decode_table(bytes(row["ipc"])) for row in rows]
    if not tables:
        return target
    frame = conform(pl.concat(tables, how="vertical_relaxed"), target.table.schema)
    if planned.in_jvm and frame[marker(target.spec)].null_count():
        raise planned.bad_rows()
    return State(target.spec, frame)


@dataclasses.dataclass
class _Planned:
    """What the driver settled before any pass: the rows to read and the state of no rows."""

    rows: Any  # the Spark DataFrame of the input columns (nulls dropped if asked)
    target: State  # spec, columns and Polars types
    task: Task  # the keywords of :func:`streameval.accumulate` for the executors
    label_type: pl.DataType  # the label's type as the executors see it
    positive_given: bool  # whether positive= was given
    in_jvm: bool  # whether Spark builds the state itself (:mod:`.rows`), not Python workers

    def parts(self, route: list[str]) -> int:
        """How many parts the Python workers' states are hashed to (one without keys)."""
        return _parts(self.rows) if route else 1

    def bad_rows(self) -> StreamevalError:
        """The error naming what is wrong with the rows of a null bucket."""
        F = functions(self.rows)
        return bad_rows(self.rows, F, self.target.spec, self.label_type, self.positive_given)


def _parts(df: Any) -> int:
    """Parts to hash groups to: the session's ``spark.sql.shuffle.partitions`` (or 200)."""
    try:
        value = df.sparkSession.conf.get("spark.sql.shuffle.partitions")
        return max(1, min(int(value), 4096))
    except Exception:  # "auto" on some platforms, or no such setting
        return 200


def _planned(df: Any, block_rows: int, arguments: Mapping[str, Any]) -> _Planned:
    """Validate on the driver and settle the spec (``arguments``: bound keywords)."""
    _require_pyspark()
    if not is_spark_frame(df):
        raise InputError(
            f"expected a pyspark.sql.DataFrame, got {type(df).__name__}; hint: "
            "streameval.accumulate reads Parquet paths, Polars and Arrow data"
        )
    if not isinstance(block_rows, int) or block_rows < 1:
        raise InputError(f"expected block_rows to be a positive integer, got {block_rows!r}")
    keys = as_list(arguments["by"])
    inputs = _inputs(arguments)
    task_of(inputs.task)
    if offers(inputs.task, "queries"):
        raise InputError(
            f"expected a task whose rows Spark's executors may sum in blocks, got "
            f"task={inputs.task!r}, whose queries must be read whole; hint: collect the "
            "rows to Parquet (df.write.parquet) and evaluate them with streameval.evaluate"
        )
    empty = empty_frame(df.schema, _time_zone(df))
    plan = prepare(_probe(df, empty, inputs), inputs, by=keys)
    settled = _options(_settled(inputs, plan.spec), keys)
    target = local_accumulate(empty, Accumulation(**settled))
    if plan.spec.found:  # classes / label values the driver found over all rows
        target = State(plan.spec, target.table)
    rows = df.select(*plan.wanted)
    if arguments["drop_nulls"]:
        used = [c for c in plan.wanted if c not in keys]
        nulls = spark_action(lambda: rows.where(_any_null(rows, used)).count())
        if nulls:
            warnings.warn(
                f"dropped {nulls} rows with a null in {', '.join(used)}", stacklevel=caller_level()
            )
        rows = rows.dropna(subset=used)
    label_type = empty.schema.get(inputs.label, pl.Null())
    return _Planned(
        rows, target, Task(settled, block_rows), label_type, inputs.positive is not None,
        serves(inputs.task, inputs.bootstrap),
    )  # fmt: skip


def _partial_states(planned: _Planned, route: list[str]) -> Any:
    """The Python workers' partition states, as blobs hashed on the ``route`` keys."""
    mapping = mapper(planned.task, route, planned.parts(route))
    return planned.rows.mapInArrow(mapping, BLOBS)


def _state_rows(planned: _Planned, route: list[str] | None) -> Any:
    """The state rows Spark builds itself, each group's in one partition (:mod:`.rows`).

    ``route``: the keys whose rows must meet (``[]``: all in one partition; None: no need).
    """
    F = functions(planned.rows)
    spec = planned.target.spec
    return state_rows(planned.rows, F, spec, planned.label_type, planned.positive_given, route)


def _time_zone(df: Any) -> str:
    """The session's time zone, in which executors see timestamps."""
    try:
        return str(df.sparkSession.conf.get("spark.sql.session.timeZone"))
    except Exception:
        return "UTC"


def functions(df: Any) -> Any:
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


def evaluate(df: Any, *, block_rows: int = 1_000_000, **options: Any) -> pl.DataFrame:
    """The metric table of a Spark DataFrame's predictions: one row per group (and threshold).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The predictions (classic or Spark Connect).
    block_rows : int
        Rows an executor buffers per Polars call (:func:`accumulate`).
    **options
        The keywords of :func:`streameval.evaluate` (``engine`` aside): the state is
        computed on the executors, the metrics (``threshold``, ``metrics``, ``ci``, ``folds``,
        ...) on the driver.

    Returns
    -------
    DataFrame
        :func:`streameval.evaluate`'s table for the same rows.

    Raises
    ------
    InputError
        pyspark not installed, ``df`` not a Spark DataFrame, ``block_rows`` not a positive
        integer, or any input :func:`streameval.evaluate` refuses (checked on the driver
        before any Spark job where it can be; an executor's error is raised as itself).

    Examples
    --------
    >>> import streameval.spark as ses
    >>> ses.evaluate(spark_df, label="y", score="p", by=["segment", "day"])  # doctest: +SKIP

    """
    return evaluate_options(df, Evaluation(**_arguments(Evaluation, options)), block_rows)


def evaluate_options(df: Any, options: Evaluation, block_rows: int = 1_000_000) -> pl.DataFrame:
    """:func:`evaluate` of an options value (as :func:`streameval.evaluate` hands it)."""
    evaluation = _evaluation(df, options, block_rows)
    rows = spark_action(lambda: evaluation.metrics.collect())
    if any(row["bad"] for row in rows):
        raise evaluation.planned.bad_rows()
    tables = [decode_table(bytes(row["ipc"])) for row in rows]
    reissue([w for row in rows for w in json.loads(row["warnings"])])
    if not tables:
        return evaluation.empty
    out = pl.concat(tables, how="vertical_relaxed")
    order = [k for k in evaluation.keys if k in out.columns]  # a jackknife's key is left out
    return out.sort(order, nulls_last=False, maintain_order=True) if order else out


def explain(df: Any, *, block_rows: int = 1_000_000, **options: Any) -> None:
    """Print the physical plan Spark runs for :func:`evaluate` (its ``explain()``), running nothing.

    For a binary, paired or multiclass task the rows stay in the JVM: the plan reads the
    columns, computes each row's bucket and aggregates the sums (``HashAggregate``); the one
    Python node (``MapInArrow``) finalizes the aggregated state rows.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The predictions (classic or Spark Connect).
    block_rows : int
        As for :func:`evaluate`.
    **options
        The keywords of :func:`evaluate`.

    Raises
    ------
    InputError
        As :func:`evaluate` does before its Spark job.

    Examples
    --------
    >>> import streameval.spark as ses
    >>> ses.explain(spark_df, label="y", score="p", by="day")  # doctest: +SKIP
    == Physical Plan ==
    ...

    """
    evaluation = Evaluation(**_arguments(Evaluation, options))
    _evaluation(df, evaluation, block_rows).metrics.explain()


@dataclasses.dataclass
class _Evaluation:
    """An evaluation planned on Spark, not yet run."""

    metrics: Any  # the Spark DataFrame of FINALIZED rows
    planned: _Planned
    empty: pl.DataFrame  # the metric table of no rows
    keys: list[str]


def _evaluation(df: Any, options: Evaluation, block_rows: int) -> _Evaluation:
    """Validate, plan the state and its finalize on the executors (option errors raise here)."""
    a = _fields(options)
    ci, folds, repeats = a["ci"], a["folds"], a["repeats"]
    binary = offers(a["task"], "thresholds")
    if ci is not None and ci not in ("bootstrap", "jackknife"):
        check_ci(ci, a["level"], a["auc_method"])
    keys = as_list(a["by"])
    fields = {f.name for f in dataclasses.fields(Inputs)} | {"drop_nulls"}
    passed = {k: v for k, v in a.items() if k in fields}
    passed["bootstrap"] = a["bootstrap"] if ci == "bootstrap" else None
    passed["thresholds"] = a["threshold"] if binary else (0.5,)
    passed["by"] = [*keys, *fold_cells(folds, repeats, keys)]
    arguments = _arguments(Accumulation, passed)
    # Each group's state rows meet in one partition, where they are finalized: only metric
    # rows come back (a jackknife's key spans its group's partition).
    whole = [k for k in keys if k != a["jackknife"]]
    planned = _planned(df, block_rows, arguments)
    finish = Finish(
        folds=folds, repeats=repeats, threshold=a["threshold"] if binary else None,
        alpha=a["alpha"], beta=a["beta"], metrics=a["metrics"], jackknife=a["jackknife"],
        ci=ci, level=a["level"], auc_method=a["auc_method"],
    )  # fmt: skip
    empty = finish(planned.target)
    if planned.in_jvm:
        states = _state_rows(planned, whole)
        finalize = finalizer(planned.target, finish, merge=False)
    else:
        partial = _partial_states(planned, whole)
        states = partial.repartition(planned.parts(whole), "part")
        finalize = finalizer(planned.target, finish)
    return _Evaluation(states.mapInArrow(finalize, FINALIZED), planned, empty, keys)
