"""A binary state built by Spark itself: bucket keys and sums as native SQL aggregations.

The rows never leave the JVM. Each row's bucket is an ordered key built by Spark SQL
expressions (:mod:`.keys`, equal to the local encoder's), and the state is
``groupBy(keys…, bucket).agg(sums)``: Spark's code-generated hash aggregation, with no Python
worker on the row path. The stored columns are those of :mod:`streameval.tasks.binary.state`
(``pos``, ``neg``, with a weight ``n``, bucketed ``log_loss``, ``brier``, ``psum``,
``hinge``), each the same per-row term summed; the exact mode's bucket is the score's own
key. Rows that cannot be evaluated (a null or unknown label, a score or weight that is not
finite, a negative weight) land in a null bucket, as locally; their problem is then named by
one more Spark query (:func:`bad_rows`), so clean data pays for no check.

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
from ..tasks.binary import state as binary
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
    """A binary task's row terms as Spark columns: label, score, weight and the bad-row flag.

    Mirrors :func:`streameval.validate.label_expr` and
    :func:`streameval.tasks.common.weight_expr`: ``y`` is the label equal to the positive
    class (numeric labels must be 0 or 1 without ``positive=``), ``bad`` flags a row whose
    label is null or not allowed, whose score is not finite, or whose weight is null,
    negative or not finite.
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
        self.p = F.col(str(spec.score)).cast("double")
        self.w = None if spec.weight is None else F.col(spec.weight).cast("double")
        bad = label.isNull() | ~finite(F, self.p) | self.not_allowed
        if self.w is not None:
            bad = bad | self.w.isNull() | (self.w < F.lit(0.0)) | ~finite(F, self.w)
        self.bad = F.coalesce(bad, F.lit(True))

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
        for name in binary.merge_ops(spec):
            if name == "n":
                out.append(F.count(F.lit(1)).cast("long").alias(name))
            else:
                term = terms[name] if w is None else w * terms[name]
                out.append(F.sum(term).alias(name))
        return out


def state_rows(
    rows: Any,
    F: Any,
    spec: Spec,
    label_type: pl.DataType,
    positive_given: bool,
    route: Sequence[str] | None,
) -> Any:
    """The Spark DataFrame of ``spec``'s state rows (group keys, ``bucket``, the sums).

    ``rows`` holds the input columns. ``route``: the keys whose state rows must share a
    partition (``[]``: all rows in one partition; None: no matter where).
    """
    terms = Terms(F, spec, label_type, positive_given)
    keyed = with_ordered_key(rows, F, str(spec.score), _KEY)
    bucket = bucket_of(F, F.col(_KEY), spec.precision, spec.splits)
    keyed = keyed.withColumn(_BAD, terms.bad)
    keyed = keyed.withColumn("bucket", F.when(~F.col(_BAD), bucket).otherwise(F.lit(None)))
    keys = list(spec.keys)
    sums = terms.sums(F, spec)
    if route and spec.precision >= FINE_BITS:
        return keyed.repartition(*route).groupBy(*keys, "bucket").agg(*sums)
    states = keyed.groupBy(*keys, "bucket").agg(*sums)
    if route is None:
        return states
    return states.repartition(*route) if route else states.repartition(1)


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The error naming what is wrong with the rows of a null bucket (one Spark query).

    The counts of :func:`streameval.validate.diagnose_bad_rows`, by Spark.
    """
    terms = Terms(F, spec, label_type, positive_given)
    label, score = F.col(spec.label), F.col(str(spec.score)).cast("double")

    def count(test: Any) -> Any:
        return F.sum(F.when(test, 1).otherwise(0)).cast("long")

    checks = [
        count(label.isNull()).alias("null_label"),
        count(score.isNull()).alias("null_score"),
        count(F.isnan(score)).alias("nan_score"),
        count(F.abs(score) == F.lit(float("inf"))).alias("inf_score"),
        count(F.coalesce(terms.not_allowed, F.lit(False))).alias("bad_label"),
    ]
    if terms.w is not None:
        w = terms.w
        checks += [
            count(w.isNull()).alias("null_weight"),
            count(w < F.lit(0.0)).alias("neg_weight"),
            count(F.coalesce(~finite(F, w), F.lit(False))).alias("nonfinite_weight"),
            F.min(F.when(w < F.lit(0.0), w)).alias("min_weight"),
        ]
    r = rows.agg(*checks).collect()[0].asDict()
    shown = rows.where(F.coalesce(terms.not_allowed, F.lit(False))).select(spec.label)
    r["examples"] = [x[0] for x in shown.distinct().orderBy(spec.label).limit(5).collect()]
    return bad_rows_error(r, spec.label, str(spec.score), spec.weight)
