"""Multiclass states built by Spark: the confusion rows and each class column's histogram.

The stored rows are those of :mod:`streameval.tasks.multiclass.state`. A row's class index
(``actual``, and ``predicted`` from a prediction column) comes from a broadcast join with the
classes' table, one hash probe per row whatever their number; without a prediction column,
``predicted`` is the first score column holding the row's largest score (numpy's argmax).
With score columns each row becomes one confusion entry (``column`` and ``bucket`` null, with
``n_outside`` and ``n_unnormalized``) and one entry per score column k (``predicted`` null,
p_k's bucket and the loss terms the row would add were its class k's), all grouped by one
aggregation over one read of the rows. Rows that cannot be evaluated (a label or prediction
that is not a class, a score or weight that is not finite, a negative weight) get a null
``actual``, as locally.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any

import polars as pl

from ..bucketing import EPS
from ..errors import StreamevalError
from ..spec import Spec
from ..states import kind_module
from ..tasks.multiclass.plan import row_checks
from ..tasks.multiclass.state import CLASS_SUMS
from .keys import bucket_of, finite, with_ordered_key
from .layout import FINE_BITS, KEY, Layout, problem, score_tests, weight_terms

#: The helper columns of the row path: class indices, the weight, the sorted score entries,
#: the two highest scores and an entry's position.
_ACTUAL, _PREDICTED, _W = "__se_actual", "__se_predicted", "__se_w"
_SORTED, _FIRST, _SECOND, _RANK = "__se_sorted", "__se_first", "__se_second", "__se_rank"


def _p(k: int) -> str:
    return f"__se_p{k}"


def _indexed(rows: Any, F: Any, spec: Spec, column: str, name: str) -> Any:
    """``rows`` with ``name``: the index in ``spec.classes`` of ``column``'s value (or null).

    The classes' table (built by Spark from literals) has the label's Spark type; a
    prediction column of another numeric type is compared as Spark compares numbers (an
    integer 2 equals the class 2.0).
    """
    dtype = rows.schema[spec.label].dataType
    fractional = dtype.typeName() in ("double", "float")
    entries = [
        F.struct(
            F.lit(float(c) if fractional else c).cast(dtype).alias("__se_class"),
            F.lit(i).cast("int").alias(name),
        )
        for i, c in enumerate(spec.classes)
    ]
    table = rows.sparkSession.range(1).select(F.inline(F.array(*entries)))
    found = rows.join(F.broadcast(table), F.col(column) == F.col("__se_class"), "left")
    return found.drop("__se_class")


def _argmax(F: Any, ps: list[Any]) -> Any:
    """The index of the first score column holding the row's largest score (two or more)."""
    top = F.greatest(*ps)
    chosen = F.when(ps[0] == top, F.lit(0))
    for k, p in enumerate(ps[1:], start=1):
        chosen = chosen.when(p == top, F.lit(k))
    return chosen


def marker(spec: Spec) -> str:
    """The column null on the state rows of bad rows: ``actual``."""
    return "actual"


def layout(rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool) -> Layout:
    """The rows with their class indices, each score's entries, and the sums.

    (The classes are the spec's: ``label_type`` and ``positive_given`` do not apply.)
    """
    ps = [F.col(c).cast("double") for c in spec.scores]
    w, bad = weight_terms(F, spec)
    frame = _indexed(rows, F, spec, spec.label, _ACTUAL)
    bad = bad | F.col(_ACTUAL).isNull()
    if spec.prediction is not None:
        frame = _indexed(frame, F, spec, spec.prediction, _PREDICTED)
        predicted = F.col(_PREDICTED)
        bad = bad | predicted.isNull()
    else:
        predicted = _argmax(F, ps)
    for p in ps:
        bad = bad | ~finite(F, p)
    bad = F.coalesce(bad, F.lit(True))
    narrow = frame.select(
        *spec.keys,
        F.when(~bad, F.col(_ACTUAL)).cast("int").alias("actual"),
        predicted.cast("int").alias("predicted"),
        *([] if w is None else [w.alias(_W)]),
        *(p.alias(_p(k)) for k, p in enumerate(ps)),
    )
    weight = None if w is None else F.col(_W)
    sums = {
        "n": F.count(F.lit(1)).cast("long"),
        "n_outside": F.sum("n_outside").cast("long"),
        "n_unnormalized": F.sum("n_unnormalized").cast("long"),
        **{c: F.sum(F.col(c) if weight is None else weight * F.col(c)) for c in CLASS_SUMS},
    }
    if weight is not None:
        sums["w"] = F.sum(weight)
    stored = [sums[name].alias(name) for name in kind_module(spec).merge_ops(spec)]
    if not spec.scores:
        return Layout(narrow, lambda frame: _confusion_only(frame, F), stored, fine=False)
    return Layout(
        narrow, lambda frame: _entries(frame, F, spec), stored, spec.precision >= FINE_BITS
    )


def _confusion_only(frame: Any, F: Any) -> Any:
    """The rows of a state without scores: its confusion rows' columns, no histogram."""
    return frame.withColumns(
        {"column": F.lit(None).cast("int"), "bucket": F.lit(None).cast("long")}
    )


def _entries(frame: Any, F: Any, spec: Spec) -> Any:
    """Each row's confusion entry and its entry per score column, as rows.

    Per row, the score columns' entries (``p``, ``column``, Brier term) are sorted by score,
    highest first, later columns first on ties, and exploded with their position: column
    k's position is the count of columns ranked above it (whether k is among the ``top_k``),
    and its hinge's rival is the highest other score (the second entry's for the first
    entry, the first's for any other). The bucket key is then computed once, on ``p``. Every
    per-row step is a short expression: a term per pair of columns made the projection too
    large for the JVM to compile (26 s against 3.7 s for 1e6 rows of 10 columns).
    """
    k_max = len(spec.scores)
    ps = [F.col(_p(k)) for k in range(k_max)]
    outside = reduce(lambda a, b: a | b, [(p < F.lit(0.0)) | (p > F.lit(1.0)) for p in ps])
    total = reduce(lambda a, b: a + b, ps)
    unnormalized = F.abs(total - F.lit(1.0)) > F.lit(1e-8 + math.sqrt(EPS))
    frame = _others_squared(frame, F, ps)
    none_int = F.lit(None).cast("int")
    entries = [_score_entry(F, p, k) for k, p in enumerate(ps)]
    confusion = F.struct(
        F.lit(None).cast("double").alias("p"), none_int.alias("column"),
        F.col("predicted").alias("predicted"), outside.cast("long").alias("n_outside"),
        unnormalized.cast("long").alias("n_unnormalized"), F.lit(0.0).alias("brier"),
    )  # fmt: skip
    ranked = frame.withColumn(_SORTED, F.sort_array(F.array(*entries), asc=False))
    best = [F.element_at(_SORTED, i).getField("p") for i in (1, 2)]
    ranked = ranked.withColumns({_FIRST: best[0], _SECOND: best[1]})
    weight = [F.col(_W)] if spec.weight is not None else []
    spread = ranked.select(
        *spec.keys, "actual", *weight, _FIRST, _SECOND,
        F.posexplode(F.concat(F.array(confusion), F.col(_SORTED))).alias(_RANK, "_e"),
    ).select(*spec.keys, "actual", *weight, _FIRST, _SECOND, _RANK, "_e.*")  # fmt: skip
    keyed = with_ordered_key(spread, F, "p", KEY)
    scored = F.col("column").isNotNull()
    p, above = F.col("p"), F.col(_RANK) - F.lit(1)  # columns ranked above (after the confusion)
    clipped = F.least(F.greatest(p, F.lit(EPS)), F.lit(1.0 - EPS))
    rival = F.when(above == F.lit(0), F.col(_SECOND)).otherwise(F.col(_FIRST))
    nothing = F.lit(0.0)
    return keyed.withColumns(
        {
            "bucket": F.when(scored, bucket_of(F, F.col(KEY), spec.precision)),
            "log_loss": F.when(scored, -F.log(clipped)).otherwise(nothing),
            "top_k": F.when(scored & (above < F.lit(spec.top_k)), F.lit(1.0)).otherwise(nothing),
            "hinge": F.when(scored, F.greatest(nothing, F.lit(1.0) - (p - rival))).otherwise(
                nothing
            ),
        }
    ).drop(KEY, "p", _RANK, _FIRST, _SECOND)


def _score_entry(F: Any, p: Any, k: int) -> Any:
    """Score column k's entry: ``p``, ``column``, its Brier term were the row's class k's."""
    zero, miss = F.lit(0).cast("long"), F.lit(1.0) - p
    return F.struct(
        p.alias("p"), F.lit(k).cast("int").alias("column"),
        F.lit(None).cast("int").alias("predicted"), zero.alias("n_outside"),
        zero.alias("n_unnormalized"), (F.col(_others(k)) + miss * miss).alias("brier"),
    )  # fmt: skip


def _others(k: int) -> str:
    return f"__se_o{k}"


def _others_squared(frame: Any, F: Any, ps: list[Any]) -> Any:
    """``frame`` with Σ_{j≠k} p_j² per column k (``_others(k)``), from running sums.

    The prefix sums Σ_{j<k} and suffix sums Σ_{j>k} of the squares, one projection each: no
    term is subtracted, so a column whose own square holds nearly all of the sum loses no
    precision.
    """
    squares = [f"__se_sq{k}" for k in range(len(ps))]
    frame = frame.withColumns({name: p * p for name, p in zip(squares, ps, strict=True)})
    last = len(ps) - 1
    before, after = [f"__se_lo{k}" for k in range(len(ps))], [f"__se_hi{k}" for k in range(len(ps))]
    frame = frame.withColumn(before[1], F.col(squares[0]))
    for k in range(2, last + 1):
        frame = frame.withColumn(before[k], F.col(before[k - 1]) + F.col(squares[k - 1]))
    frame = frame.withColumn(after[last - 1], F.col(squares[last]))
    for k in range(last - 2, -1, -1):
        frame = frame.withColumn(after[k], F.col(after[k + 1]) + F.col(squares[k + 1]))
    sums = {
        _others(0): F.col(after[0]),
        _others(last): F.col(before[last]),
        **{_others(k): F.col(before[k]) + F.col(after[k]) for k in range(1, last)},
    }
    return frame.withColumns(sums).drop(*squares, *before[1:], *after[:last])


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The local multiclass diagnosis (its checks' messages), its rows counted by Spark."""
    none = pl.lit(False)
    checks = row_checks(
        spec.label, none, none, spec.prediction, list(spec.scores), list(spec.classes)
    )
    frame = _indexed(rows, F, spec, spec.label, _ACTUAL)
    label = F.col(spec.label)
    tests: list[tuple[Any, Any]] = [
        (label.isNull(), None),
        (F.col(_ACTUAL).isNull(), label.cast("string")),
    ]
    if spec.prediction is not None:
        frame = _indexed(frame, F, spec, spec.prediction, _PREDICTED)
        tests.append((F.col(_PREDICTED).isNull(), F.col(spec.prediction).cast("string")))
    tests += score_tests(F, list(spec.scores))
    return problem(frame, F, spec, checks, tests)
