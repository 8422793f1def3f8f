"""What every state kind Spark builds itself shares: its layout and the bad-row counts.

A kind's module (:mod:`.scored`, :mod:`.classes`) says how its rows become state rows (a
:class:`Layout`); :mod:`.rows` partitions and aggregates them the same way for every kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..errors import StreamevalError
from ..spec import Spec
from ..tasks.common import Check, problem_error, weight_expr
from .keys import finite

#: From this precision on, a score histogram is about as large as its rows: the rows are
#: partitioned on their group keys before they are aggregated (one exchange, of the input
#: rows); coarser, Spark's partial aggregation comes first and the (small) state rows are
#: partitioned after it.
FINE_BITS = 8
#: The helper columns a row-path query adds (dropped or aggregated away before any result).
KEY, BAD = "__se_key", "__se_bad"


@dataclasses.dataclass
class Layout:
    """How a kind's input rows become the rows its state aggregates.

    ``narrow``: the input rows reduced to what crosses an exchange; ``widen``: the rows to
    group (by the keys and the kind's group columns) from those; ``sums``: the stored
    columns as Spark aggregations; ``fine``: whether the state is about as large as its rows
    (then the rows are partitioned before the aggregation, not after it).
    """

    narrow: Any
    widen: Callable[[Any], Any]
    sums: list[Any]
    fine: bool


def count(F: Any, test: Any) -> Any:
    """Rows where ``test`` holds (as a Long)."""
    return F.sum(F.when(test, 1).otherwise(0)).cast("long")


def examples(rows: Any, F: Any, show: Any, test: Any) -> list[Any]:
    """Up to five distinct values of ``show`` where ``test`` holds, in order (nulls first)."""
    found = rows.where(test).select(show.alias("_se_show")).distinct()
    return [r[0] for r in found.orderBy("_se_show").limit(5).collect()]


def counted(rows: Any, F: Any, tests: list[tuple[Any, Any]]) -> list[tuple[int, Any]]:
    """Each ``(test, show)``'s rows (null counts as true, as Polars' checks) and examples.

    One Spark query counts them all; a test with rows and a ``show`` column gets up to five
    examples from one more. The pairs are what :func:`streameval.tasks.common.problem_error`
    formats.
    """
    tests = [(F.coalesce(test, F.lit(True)), show) for test, show in tests]
    row = rows.agg(*(count(F, t).alias(f"c{i}") for i, (t, _) in enumerate(tests))).collect()[0]
    return [
        (row[i], examples(rows, F, show, test) if row[i] and show is not None else None)
        for i, (test, show) in enumerate(tests)
    ]


def score_tests(F: Any, scores: list[str]) -> list[tuple[Any, Any]]:
    """Each score column's tests, as :func:`streameval.tasks.common.finite_checks`'s."""
    tests: list[tuple[Any, Any]] = []
    for score in scores:
        x = F.col(score).cast("double")
        tests += [(F.col(score).isNull(), None), (~finite(F, x), None)]
    return tests


def weight_terms(F: Any, spec: Spec) -> tuple[Any, Any]:
    """The weight as a double (None without one) and its bad-row flag.

    As :func:`streameval.tasks.common.weight_expr`: a null, negative or non-finite weight.
    """
    if spec.weight is None:
        return None, F.lit(False)
    w = F.col(spec.weight).cast("double")
    return w, w.isNull() | (w < F.lit(0.0)) | ~finite(F, w)


def problem(
    rows: Any, F: Any, spec: Spec, checks: list[Check], tests: list[tuple[Any, Any]]
) -> StreamevalError:
    """The local error of the first check whose Spark test finds rows, the weight's last.

    ``checks`` are a kind's local checks (weight's aside), ``tests`` their Spark tests in the
    same order; a weighted spec adds the weight's check and test (as
    :func:`streameval.tasks.common.weight_expr`).
    """
    w, bad_weight = weight_terms(F, spec)
    if w is not None:
        checks = [*checks, *weight_expr(spec.weight)[2]]
        tests = [*tests, (bad_weight, w)]
    return problem_error(checks, counted(rows, F, tests))
