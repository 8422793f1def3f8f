"""Binary and paired states built by Spark itself: bucket keys and sums as SQL aggregations.

The rows never leave the JVM. Each row's bucket is an ordered key built by Spark SQL
expressions (:mod:`.keys`, equal to the local encoder's), and the state is
``groupBy(keys…, bucket).agg(sums)``: Spark's code-generated hash aggregation, with no Python
worker on the row path. The stored columns are those of :mod:`streameval.tasks.binary.state`
(``pos``, ``neg``, with a weight ``n``, bucketed ``log_loss``, ``brier``, ``psum``,
``hinge``), each the same per-row term summed; the exact mode's bucket is the score's own
key. A paired state (several models' scores on the same rows) groups by one such bucket per
model, its joint histogram, and sums ``pos``, ``neg`` (and ``n``). Rows that cannot be
evaluated (a null or unknown label, a score or weight that is not finite, a negative
weight) land in a null bucket, as locally; their problem is then named by one more Spark
query (:func:`bad_rows`), so clean data pays for no check.

Each group's state rows must end in one partition (where :mod:`.worker` finalizes them). At
fine precisions (the default, and exact) the rows are hash-partitioned on the group keys
before the aggregation: a single exchange, of the narrow input rows. Such a state is often
about as large as its rows, so Spark's partial aggregation before an exchange saves little,
and shuffling its partial sums and then the state rows again measured slower (43 s against
29 s for 5e7 rows into 22.5M state rows on two cores). Coarser than :data:`FINE_BITS`, a
group holds at most a few hundred buckets per binade: Spark's partial aggregation shrinks the
rows before its exchange, and the small state is partitioned on the group keys afterwards
(12 s against 19 s at 4 bits, 371,000 state rows, on the same data).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ..bucketing import EPS
from ..errors import StreamevalError
from ..spec import Spec
from ..states import kind_module
from ..tasks.common import problem_error, weight_expr
from ..tasks.paired.plan import row_checks
from ..tasks.registry import offers
from ..validate import bad_rows_error
from .keys import bucket_of, finite, with_ordered_key

#: From this precision on, rows are partitioned on their group keys before they are aggregated
#: (one exchange, of the input rows); coarser, Spark's partial aggregation comes first and the
#: (small) state rows are partitioned after it.
FINE_BITS = 8
#: The columns a row-path query adds (dropped or aggregated away before any result).
_KEY, _BAD = "__se_key", "__se_bad"


def serves(task: str, bootstrap: int | None) -> bool:
    """Whether this module builds the states of ``task`` (without bootstrap replicates).

    Other tasks are accumulated by :func:`streameval.accumulate` on the executors
    (:mod:`.worker`).
    """
    return offers(task, "spark_sql") and bootstrap is None


class Terms:
    """A binary (or paired) task's row terms as Spark columns: label, scores, weight, bad rows.

    Mirrors :func:`streameval.validate.label_expr` and
    :func:`streameval.tasks.common.weight_expr`: ``y`` is the label equal to the positive
    class (numeric labels must be 0 or 1 without ``positive=``), ``bad`` flags a row whose
    label is null or not allowed, whose score (any model's) is not finite, or whose weight is
    null, negative or not finite.
    """

    def __init__(self, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool):
        label = F.col(spec.label)
        if label_type == pl.Boolean:
            self.y = label if spec.positive else ~label
            self.not_allowed = F.lit(False)
        elif label_type.is_numeric() and not positive_given:
            self.y = label == F.lit(1)
            self.not_allowed = ~((label == F.lit(0)) | (label == F.lit(1)))
        else:
            self.y = label == F.lit(spec.positive)
            self.not_allowed = F.lit(False)
        self.scores = score_columns(spec)
        self.p = F.col(self.scores[0]).cast("double")
        self.w = None if spec.weight is None else F.col(spec.weight).cast("double")
        bad = label.isNull() | self.not_allowed
        for score in self.scores:
            bad = bad | ~finite(F, F.col(score).cast("double"))
        self.bad_weight = F.lit(False)
        if self.w is not None:
            self.bad_weight = self.w.isNull() | (self.w < F.lit(0.0)) | ~finite(F, self.w)
        self.bad = F.coalesce(bad | self.bad_weight, F.lit(True))

    def sums(self, F: Any, spec: Spec) -> list[Any]:
        """The stored columns of ``spec``'s state as Spark aggregations (their local terms)."""
        y, p, w = self.y, self.p, self.w
        yi = y.cast("long")
        clipped = F.least(F.greatest(p, F.lit(EPS)), F.lit(1.0 - EPS))
        miss = p - yi.cast("double")
        terms = {
            "pos": yi,
            "neg": F.lit(1).cast("long") - yi,
            "log_loss": -F.when(y, F.log(clipped)).otherwise(F.log(F.lit(1.0) - clipped)),
            "brier": miss * miss,
            "psum": p,
            "hinge": F.greatest(F.lit(0.0), F.lit(1.0) - F.when(y, p).otherwise(-p)),
        }
        out = []
        for name in kind_module(spec).merge_ops(spec):
            if name == "n":
                out.append(F.count(F.lit(1)).cast("long").alias(name))
            else:
                term = terms[name] if w is None else w * terms[name]
                out.append(F.sum(term).alias(name))
        return out


def score_columns(spec: Spec) -> list[str]:
    """The score columns of ``spec``'s rows: a binary task's one, a paired task's models'."""
    return list(spec.scores) if spec.scores else [str(spec.score)]


def marker(spec: Spec) -> str:
    """The bucket column that is null on the state rows of bad rows (the first)."""
    column: str = kind_module(spec).group_columns(spec)[0]
    return column


def state_rows(
    rows: Any,
    F: Any,
    spec: Spec,
    label_type: pl.DataType,
    positive_given: bool,
    route: Sequence[str] | None,
) -> Any:
    """The Spark DataFrame of ``spec``'s state rows (group keys, buckets, the sums).

    ``rows`` holds the input columns. A binary state has one bucket column, ``bucket``; a
    paired one a bucket per model (``bucket_0`` …), its joint histogram. ``route``: the keys
    whose state rows must share a partition (``[]``: all rows in one partition; None: no
    matter where).
    """
    terms = Terms(F, spec, label_type, positive_given)
    buckets = kind_module(spec).group_columns(spec)
    keyed = rows.withColumn(_BAD, terms.bad)
    for i, (score, name) in enumerate(zip(terms.scores, buckets, strict=True)):
        keyed = with_ordered_key(keyed, F, score, _KEY)
        bucket = bucket_of(F, F.col(_KEY), spec.precision, spec.splits)
        if i == 0:
            bucket = F.when(~F.col(_BAD), bucket).otherwise(F.lit(None))
        keyed = keyed.withColumn(name, bucket).drop(_KEY)
    keys = list(spec.keys)
    sums = terms.sums(F, spec)
    if route and spec.precision >= FINE_BITS:
        return keyed.repartition(*route).groupBy(*keys, *buckets).agg(*sums)
    states = keyed.groupBy(*keys, *buckets).agg(*sums)
    if route is None:
        return states
    return states.repartition(*route) if route else states.repartition(1)


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The error naming what is wrong with the rows of a null bucket (one Spark query).

    The counts the local diagnosis takes (:func:`streameval.validate.diagnose_bad_rows` for
    a binary task, :func:`streameval.tasks.paired.plan.row_checks` for a paired one),
    counted by Spark.
    """
    terms = Terms(F, spec, label_type, positive_given)
    if spec.scores:
        return _paired_problem(rows, F, spec, terms)
    label, score = F.col(spec.label), F.col(str(spec.score)).cast("double")
    checks = {
        "null_label": label.isNull(),
        "null_score": score.isNull(),
        "nan_score": F.isnan(score),
        "inf_score": F.abs(score) == F.lit(float("inf")),
        "bad_label": F.coalesce(terms.not_allowed, F.lit(False)),
    }
    extra = []
    if terms.w is not None:
        w = terms.w
        checks |= {
            "null_weight": w.isNull(),
            "neg_weight": w < F.lit(0.0),
            "nonfinite_weight": F.coalesce(~finite(F, w), F.lit(False)),
        }
        extra.append(F.min(F.when(w < F.lit(0.0), w)).alias("min_weight"))
    counted = [_count(F, test).alias(name) for name, test in checks.items()]
    r = rows.agg(*counted, *extra).collect()[0].asDict()
    r["examples"] = _examples(rows, F, F.col(spec.label), checks["bad_label"])
    return bad_rows_error(r, spec.label, str(spec.score), spec.weight)


def _count(F: Any, test: Any) -> Any:
    """Rows where ``test`` holds (as a Long)."""
    return F.sum(F.when(test, 1).otherwise(0)).cast("long")


def _examples(rows: Any, F: Any, show: Any, test: Any) -> list[Any]:
    """Up to five distinct values of ``show`` where ``test`` holds, in order (nulls first)."""
    found = rows.where(test).select(show.alias("_se_show")).distinct()
    return [r[0] for r in found.orderBy("_se_show").limit(5).collect()]


def _paired_problem(rows: Any, F: Any, spec: Spec, terms: Terms) -> StreamevalError:
    """The local paired diagnosis (its checks' messages), its rows counted by Spark."""
    checks = row_checks(spec.label, pl.lit(False), spec.positive, list(spec.scores))
    label = F.col(spec.label)
    tests: list[tuple[Any, Any]] = [(label.isNull(), None), (terms.not_allowed, label)]
    for score in terms.scores:
        x = F.col(score).cast("double")
        tests += [(F.col(score).isNull(), None), (~finite(F, x), None)]
    if terms.w is not None:
        checks += weight_expr(spec.weight)[2]
        tests.append((terms.bad_weight, terms.w))
    tests = [(F.coalesce(test, F.lit(True)), show) for test, show in tests]  # as Polars'
    counted = rows.agg(*(_count(F, t).alias(f"c{i}") for i, (t, _) in enumerate(tests)))
    row = counted.collect()[0]
    counts = [
        (row[i], _examples(rows, F, show, test) if row[i] and show is not None else None)
        for i, (test, show) in enumerate(tests)
    ]
    return problem_error(checks, counts)
