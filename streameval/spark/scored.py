"""Binary and paired states built by Spark: each model's score bucket and the label's sums.

The stored columns are those of :mod:`streameval.tasks.binary.state` (``pos``, ``neg``, with a
weight ``n``, bucketed ``log_loss``, ``brier``, ``psum``, ``hinge``), each the same per-row
term summed; the exact mode's bucket is the score's own key (:mod:`.keys`). A paired state
(several models' scores on the same rows) groups by one such bucket per model, its joint
histogram, and sums ``pos``, ``neg`` (and ``n``). Rows that cannot be evaluated (a null or
unknown label, a score or weight that is not finite, a negative weight) land in a null
bucket, as locally.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ..bucketing import EPS
from ..errors import StreamevalError
from ..spec import Spec
from ..states import kind_module
from ..tasks.paired.plan import row_checks
from ..validate import bad_rows_error
from .keys import bucket_of, finite, with_ordered_key
from .layout import (
    BAD,
    FINE_BITS,
    KEY,
    Layout,
    count,
    examples,
    problem,
    score_tests,
    weight_terms,
)


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
        self.w, self.bad_weight = weight_terms(F, spec)
        bad = label.isNull() | self.not_allowed
        for score in self.scores:
            bad = bad | ~finite(F, F.col(score).cast("double"))
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
    """The column null on the state rows of bad rows: the first model's bucket."""
    column: str = kind_module(spec).group_columns(spec)[0]
    return column


def layout(rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool) -> Layout:
    """The rows with each model's bucket (the first null on bad rows), and the sums.

    A binary state has one bucket column, ``bucket``; a paired one a bucket per model
    (``bucket_0`` …), its joint histogram.
    """
    terms = Terms(F, spec, label_type, positive_given)
    buckets = kind_module(spec).group_columns(spec)
    keyed = rows.withColumn(BAD, terms.bad)
    for i, (score, name) in enumerate(zip(terms.scores, buckets, strict=True)):
        keyed = with_ordered_key(keyed, F, score, KEY)
        bucket = bucket_of(F, F.col(KEY), spec.precision, spec.splits)
        if i == 0:
            bucket = F.when(~F.col(BAD), bucket).otherwise(F.lit(None))
        keyed = keyed.withColumn(name, bucket).drop(KEY)
    return Layout(keyed, lambda frame: frame, terms.sums(F, spec), spec.precision >= FINE_BITS)


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The error naming what is wrong with the rows of a null bucket (Spark queries).

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
    sums = [count(F, test).alias(name) for name, test in checks.items()]
    r = rows.agg(*sums, *extra).collect()[0].asDict()
    r["examples"] = examples(rows, F, F.col(spec.label), checks["bad_label"])
    return bad_rows_error(r, spec.label, str(spec.score), spec.weight)


def _paired_problem(rows: Any, F: Any, spec: Spec, terms: Terms) -> StreamevalError:
    """The local paired diagnosis (its checks' messages), its rows counted by Spark."""
    checks = row_checks(spec.label, pl.lit(False), spec.positive, list(spec.scores))
    label = F.col(spec.label)
    tests: list[tuple[Any, Any]] = [(label.isNull(), None), (terms.not_allowed, label)]
    tests += score_tests(F, terms.scores)
    return problem(rows, F, spec, checks, tests)
