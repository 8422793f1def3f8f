"""Per-task input planning: which columns a task reads, how rows become state, what is bad.

Each task module (``binary``, ``multiclass``, ``regression``) has

- ``roles(inputs)``: the source columns it reads, with their role (for error messages);
- ``numeric(inputs)``: the roles whose columns must be numeric;
- ``RESERVED``: names a group key may not take (the task's state and metric columns);
- ``plan(opened, inputs)``: the spec and the state query builder (a :class:`TaskPlan`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..codes import hashed_key, key_code
from ..errors import InputError
from ..kernels.scatter import Collect, Shard
from ..source import Engine, collect, collect_batches
from ..spec import Spec

Finish = Callable[[pl.DataFrame], pl.DataFrame]
Build = Callable[[pl.LazyFrame, Mapping[str, Any]], tuple[pl.LazyFrame, Finish]]
#: A unit's sums from the kernel, its spec and the metric options → its metric table.
FinishSums = Callable[[Any, Any, Mapping[str, Any]], pl.DataFrame]


@dataclass(frozen=True)
class Inputs:
    """What to evaluate: the task, its columns and its options, as the user gave them."""

    label: str
    score: str | None = None
    task: str = "binary"
    #: A multilabel task's label columns, one per label (``label`` is then the first).
    labels: tuple[str, ...] = ()
    prediction: str | None = None
    scores: Sequence[str] | Mapping[Any, str] | None = None
    classes: Sequence[Any] | None = None
    weight: str | None = None
    positive: Any = None
    query: str | Sequence[str] | None = None
    k: int | Sequence[int | None] | None = 10
    precision: int = 11
    thresholds: tuple[float, ...] = (0.5,)
    top_k: int = 2
    power: float = 1.5
    bootstrap: int | None = None
    row_id: str | Sequence[str] | None = None
    seed: int = 0
    #: Rows without a label are kept in the score histogram (``labels="optional"``).
    unlabeled: bool = False


@dataclass(frozen=True)
class MetricOptions:
    """The options of a state's metric table (:meth:`streameval.State.metrics`), checked."""

    threshold: float | Sequence[float] | None = None
    alpha: float = 0.5
    beta: float = 1.0
    metrics: Sequence[str] | None = None
    ci: str | None = None
    level: float = 0.95
    auc_method: str = "delong"
    #: With intervals, caret's statistics too (binary); a job's checks, which read none,
    #: leave them out (:func:`streameval.measure.narrowed_metrics`).
    statistics: bool = True


def score_columns(scores: Any, what: str, example: str) -> list[str]:
    """The columns of ``scores=``: a list (in ``what`` order) or a mapping ``what`` → column.

    None gives []; anything else is an InputError naming both forms.

    >>> score_columns({"a": "p_a", "b": "p_b"}, "class", "['p_a', 'p_b']")
    ['p_a', 'p_b']
    """
    if scores is None:
        return []
    if isinstance(scores, Mapping):
        return [str(c) for c in scores.values()]
    if isinstance(scores, str) or not all(isinstance(c, str) for c in scores):
        raise InputError(
            f"expected scores= to be a list of column names (in {what} order) or a mapping "
            f"{what} → column, got {scores!r}; hint: scores={example}"
        )
    return list(scores)


def label_fields(label: str | Sequence[str]) -> dict[str, Any]:
    """:class:`Inputs`' ``label`` and ``labels`` of ``label=``: a column, or a list of them.

    >>> label_fields("y"), label_fields(["y_a", "y_b"])
    ({'label': 'y', 'labels': ()}, {'label': 'y_a', 'labels': ('y_a', 'y_b')})
    """
    if isinstance(label, str):
        return {"label": label, "labels": ()}
    columns = tuple(label)
    if not columns:
        raise InputError(
            "expected label= to name a column (or, for a multilabel task, columns), got an "
            "empty list; hint: label=['y_a', 'y_b']"
        )
    return {"label": columns[0], "labels": columns}


def label_argument(inputs: Inputs) -> str | list[str]:
    """The ``label=`` of :func:`streameval.accumulate` that :func:`label_fields` reads back."""
    return list(inputs.labels) if inputs.labels else inputs.label


def task_spec(kind: str, opened: Opened, inputs: Inputs, **fields: Any) -> Spec:
    """A task's spec: its kind, the source's group keys, the inputs' precision and weight.

    ``fields`` are the task's own (its columns, classes, cutoffs …).

    >>> o = Opened(pl.LazyFrame(), pl.Schema(), None, "streaming", ["day"])
    >>> task_spec("regression", o, Inputs(label="y", weight="w"), label="y").weighted
    True
    """
    return Spec(
        kind=kind,
        keys=tuple(opened.keys),
        precision=inputs.precision,
        weighted=inputs.weight is not None,
        weight=inputs.weight,
        **fields,
    )


def refuse_threshold(kind: str, threshold: object) -> None:
    """Refuse a threshold for a task whose metrics have none (all but the binary task's)."""
    if threshold is not None:
        raise InputError(
            f"expected no threshold for a {kind} state, got {threshold!r}; "
            "hint: thresholds apply to binary scores"
        )


@dataclass
class Opened:
    """The source as a LazyFrame with its schema, files and the validated group keys."""

    lf: pl.LazyFrame
    schema: pl.Schema
    files: list[str] | None
    engine: Engine
    keys: list[str]


@dataclass
class TaskPlan:
    """A task's spec and how to compute its state over (a unit of) the source.

    ``build(lf, constants)`` returns the lazy state query over ``lf`` and the function that
    turns its result into the state table (``constants`` are group keys fixed over ``lf``).
    ``invalid(table)`` says whether the table marks invalid rows; ``diagnose()`` then
    returns the error that names them. ``runs(lf, constants, shard=None)``, when given,
    collects the unit's rows for the task's compiled kernel (:mod:`streameval.kernels`): an
    object whose ``staged(spec)`` is a :class:`~streameval.kernels.staged.Staged`; or returns
    None to fall back to the Polars query. A shard's rows (``shard``: a
    :class:`~streameval.kernels.scatter.Shard`) come from the source read once for all shards.
    ``states``: whether the kernel also builds states; False where it serves metric tables
    only (the paired task: the state query builds its joint histogram faster).
    ``finish(sums, spec, options)`` makes the metric table of a unit's sums from the kernel
    (:meth:`~streameval.kernels.staged.Staged.sums`), and ``finish_replicated`` that of its
    replicates' (:meth:`~streameval.kernels.staged.Staged.replicated_sums`), for the tasks
    whose kernel gives sums rather than a grouped frame. ``whole``: the source must be read
    in one pass, not split into units (a ranking query's items must meet).
    """

    spec: Any
    build: Build
    invalid: Callable[[pl.DataFrame], bool]
    diagnose: Callable[[], Exception]
    runs: Callable[..., Any] | None = None
    states: bool = True
    finish: FinishSums | None = None
    finish_replicated: FinishSums | None = None
    whole: bool = False


@dataclass(frozen=True)
class Check:
    """One kind of bad row: a Boolean row expression and the message naming it.

    ``message`` is formatted with ``count`` (offending rows) and ``examples`` (up to five
    offending values of ``show``, when given).
    """

    bad: pl.Expr
    message: str
    show: pl.Expr | None = None


def first_problem(
    lf: pl.LazyFrame, checks: Sequence[Check], engine: Engine, files: list[str] | None
) -> InputError:
    """The error for the first check that finds rows (error path only: one extra pass)."""
    exprs: list[pl.Expr] = []
    for i, c in enumerate(checks):
        bad = c.bad.fill_null(True)
        exprs.append(bad.sum().alias(f"count{i}"))
        if c.show is not None:
            exprs.append(c.show.filter(bad).unique().sort().head(5).implode().alias(f"ex{i}"))
    row = collect(lf.select(exprs), engine, files).row(0, named=True)
    counts = [(row[f"count{i}"], row.get(f"ex{i}")) for i in range(len(checks))]
    return problem_error(checks, counts)


def problem_error(checks: Sequence[Check], counts: Sequence[tuple[int, Any]]) -> InputError:
    """The error of the first check with offending rows.

    ``counts`` holds each check's (rows, up to five examples), however they were counted (by
    Polars here, by Spark for a Spark DataFrame).

    >>> checks = finite_checks("p", "score")
    >>> str(problem_error(checks, [(0, None), (3, None)]))[:58]
    "expected finite values in the score column 'p', found 3 Na"
    """
    for c, (count, examples) in zip(checks, counts, strict=True):
        if count:
            return InputError(c.message.format(count=count, examples=examples))
    return InputError("found invalid rows in the source; hint: check the label and score columns")


def finite_checks(column: str, role: str) -> list[Check]:
    """Null and NaN/inf checks of a numeric column."""
    x = pl.col(column).cast(pl.Float64)
    return [
        Check(
            pl.col(column).is_null(),
            f"expected no nulls in the {role} column {column!r}, found {{count}}; hint: filter "
            "them out, or pass drop_nulls=True to drop them with a count",
        ),
        Check(
            ~x.is_finite(),
            f"expected finite values in the {role} column {column!r}, found {{count}} NaN or "
            "infinite; hint: fix the model output or filter those rows",
        ),
    ]


def weight_expr(weight: str | None) -> tuple[pl.Expr | None, pl.Expr, list[Check]]:
    """The weight as Float64, its 'bad row' flag and its checks (none without a weight)."""
    if weight is None:
        return None, pl.lit(False), []
    w = pl.col(weight).cast(pl.Float64)
    bad = (w < 0).fill_null(True) | (~w.is_finite()).fill_null(True)
    check = Check(
        bad,
        f"expected finite non-negative weights in {weight!r}, found {{count}} negative, null "
        "or non-finite, such as {examples}; hint: weights are sample weights, as sklearn's "
        "sample_weight",
        show=w,
    )
    return w, bad, [check]


def unit_reader(
    opened: Opened,
    columns: Sequence[str],
    read: Callable[..., Any],
    rows: tuple[Any, ...],
    diagnose: Callable[[], Exception],
) -> Callable[[pl.LazyFrame, Mapping[str, Any]], Any]:
    """A task's ``runs`` hook: a unit's rows collected by ``read`` for its compiled kernel.

    ``read(lf, keys, codes, rows, collect, invalid)`` is the kernel's collector
    (:func:`streameval.kernels.collect.collect_unit` and its multiclass and regression
    counterparts); ``columns`` are the source columns read (for read errors), ``rows`` the
    task's row expressions and ``diagnose`` the error of the first bad row.
    """
    schema, keys = opened.schema, opened.keys
    codes = {k: key_code(k, schema[k]) or hashed_key(k, schema[k]) for k in keys}

    def collected(lf: pl.LazyFrame, exprs: list[pl.Expr]) -> pl.DataFrame:
        return collect(lf.select(exprs), opened.engine, opened.files, list(columns))

    def batches(query: pl.LazyFrame) -> Iterator[pl.DataFrame]:
        return collect_batches(query, opened.files, list(columns))

    def runs(unit: pl.LazyFrame, constants: Mapping[str, Any], shard: Shard | None = None) -> Any:
        varying = [k for k in keys if k not in constants]

        def reader(lf: pl.LazyFrame, codes: Mapping[str, Any], collect: Collect) -> Any:
            return read(lf, varying, codes, rows, collect, diagnose)

        if shard is not None:
            done, out = shard.read(varying, codes, reader, batches)
            if done:
                return out
        return reader(unit, codes, collected)

    return runs


def require_int(value: Any, name: str, low: int) -> int:
    """``value`` as an int ≥ ``low``, or an InputError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"expected {name} to be an integer ≥ {low}, got {value!r}")
    return value
