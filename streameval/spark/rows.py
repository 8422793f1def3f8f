"""States built by Spark itself: bucket keys and sums as SQL aggregations.

The rows never leave the JVM. Each row's bucket is an ordered key built by Spark SQL
expressions (:mod:`.keys`, equal to the local encoder's), and the state is
``groupBy(keys…, group columns).agg(sums)``: Spark's code-generated hash aggregation, with no
Python worker on the row path. Each kind's module says which rows are grouped and what is
summed (a :class:`~.layout.Layout`): :mod:`.scored` for binary and paired states,
:mod:`.classes` for multiclass ones, :mod:`.regression` for regression ones. Rows that cannot
be evaluated land in a null group column (:func:`marker`), as locally; their problem is then
named by more Spark queries (:func:`bad_rows`), so clean data pays for no check.

Each group's state rows must end in one partition (where :mod:`.worker` finalizes them). When
a state is about as large as its rows (a score histogram at fine precisions: the default, and
exact) the rows are hash-partitioned on the group keys before the aggregation: a single
exchange, of the narrow input rows. Spark's partial aggregation before an exchange saves
little there, and shuffling its partial sums and then the state rows again measured slower
(43 s against 29 s for 5e7 rows into 22.5M state rows on two cores). Otherwise (coarser than
:data:`~.layout.FINE_BITS`, or no histogram) Spark's partial aggregation shrinks the rows
before its exchange, and the small state is partitioned on the group keys afterwards (12 s
against 19 s at 4 bits, 371,000 state rows, on the same data).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import polars as pl

from ..errors import StreamevalError
from ..spec import Spec
from ..states import kind_module
from ..tasks.binary import state as binary_state
from ..tasks.multiclass import state as multiclass_state
from ..tasks.paired import state as paired_state
from ..tasks.registry import offers
from ..tasks.regression import state as regression_state
from . import classes, regression, scored
from .layout import Layout


def serves(task: str, bootstrap: int | None) -> bool:
    """Whether this module builds the states of ``task`` (without bootstrap replicates).

    Other tasks are accumulated by :func:`streameval.accumulate` on the executors
    (:mod:`.worker`).
    """
    return offers(task, "spark_sql") and bootstrap is None


class Builder(Protocol):
    """What a kind's module offers the row path (:mod:`.scored`, :mod:`.classes`, …)."""

    def layout(
        self, rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
    ) -> Layout:
        """How ``spec``'s input rows become the rows its state aggregates."""
        ...

    def bad_rows(
        self, rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
    ) -> StreamevalError:
        """The local error naming what is wrong with the rows, counted by Spark."""
        ...

    def marker(self, spec: Spec) -> str:
        """The group column that is null on the state rows of bad rows."""
        ...


#: The module building each state kind's rows, by the kind's local state module.
_BUILDERS: dict[Any, Builder] = {
    binary_state: scored,
    paired_state: scored,
    multiclass_state: classes,
    regression_state: regression,
}


def _builder(spec: Spec) -> Builder:
    return _BUILDERS[kind_module(spec)]


def marker(spec: Spec) -> str:
    """The group column that is null on the state rows of bad rows."""
    return _builder(spec).marker(spec)


def state_rows(
    rows: Any,
    F: Any,
    spec: Spec,
    label_type: pl.DataType,
    positive_given: bool,
    route: Sequence[str] | None,
) -> Any:
    """The Spark DataFrame of ``spec``'s state rows (group keys, group columns, the sums).

    ``rows`` holds the input columns. ``route``: the keys whose state rows must share a
    partition (``[]``: all rows in one partition; None: no matter where).
    """
    layout = _builder(spec).layout(rows, F, spec, label_type, positive_given)
    groups = [*spec.keys, *kind_module(spec).group_columns(spec)]
    if route and layout.fine:
        spread = layout.widen(layout.narrow.repartition(*route))
        return spread.groupBy(*groups).agg(*layout.sums)
    states = layout.widen(layout.narrow).groupBy(*groups).agg(*layout.sums)
    if route is None:
        return states
    return states.repartition(*route) if route else states.repartition(1)


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The error naming what is wrong with the rows of a null first group column.

    The counts the local diagnosis takes, counted by Spark, formatted by the local messages.
    """
    return _builder(spec).bad_rows(rows, F, spec, label_type, positive_given)
