"""Regression states built by Spark: the label's and the error's histograms, and loss totals.

The stored rows are those of :mod:`streameval.tasks.regression.state`. Each row becomes
three entries, grouped by one aggregation over one read of the rows: part 0, the bucket of
the label y; part 1, the bucket of the error e = ŷ − y (each with ``n``, ``w`` and, bucketed,
the centred sums ``d1`` = Σw·(x − lo) and ``d2`` = Σw·(x − lo)², ``lo`` the bucket's lowest
value, rebuilt from its key by :func:`.keys.with_float_of_key`); part 2 (bucket 0), the loss
terms that need y and ŷ together, the rows outside each loss's domain and max |e|. A term is
computed on inputs replaced by 1 where its row is outside the domain (then left out, as
locally), so no division by zero can fail under ANSI mode. Rows that cannot be evaluated (a
label, prediction or weight that is not finite, a negative weight) get a null bucket.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ..bucketing import EPS
from ..errors import StreamevalError
from ..spec import Spec
from ..states import kind_module
from ..tasks.common import finite_checks
from ..tasks.regression.state import DOMAINS, LOSSES
from .keys import bucket_of, finite, with_float_of_key, with_ordered_key
from .layout import BAD, FINE_BITS, KEY, Layout, problem, score_tests, weight_terms

#: The helper columns of the row path: y, ŷ, e, the weight, a bucket's lowest value.
_Y, _F, _E, _W, _LO = "__se_y", "__se_f", "__se_e", "__se_w", "__se_lo"


def marker(spec: Spec) -> str:
    """The column null on the state rows of bad rows: ``bucket`` (``part`` never is)."""
    return "bucket"


def layout(rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool) -> Layout:
    """The rows' y, ŷ, weight and bad flag; their three entries each; the sums.

    (A regression label is a number: ``label_type`` and ``positive_given`` do not apply.)
    """
    y = F.col(spec.label).cast("double")
    f = F.col(str(spec.prediction)).cast("double")
    w, bad_weight = weight_terms(F, spec)
    bad = F.coalesce(~finite(F, y) | ~finite(F, f) | bad_weight, F.lit(True))
    narrow = rows.select(
        *spec.keys, y.alias(_Y), f.alias(_F), *([] if w is None else [w.alias(_W)]),
        bad.alias(BAD),
    )  # fmt: skip
    sums = {
        "n": F.sum("n").cast("long"),
        "w": F.sum("w"),
        "d1": F.sum("d1"),
        "d2": F.sum("d2"),
        **{c: F.sum(c) for c in LOSSES},
        **{c: F.sum(c).cast("long") for c in DOMAINS},
        "amax": F.coalesce(F.max("amax"), F.lit(0.0)),
    }
    stored = [sums[name].alias(name) for name in kind_module(spec).merge_ops(spec)]
    return Layout(
        narrow, lambda frame: _entries(frame, F, spec), stored, spec.precision >= FINE_BITS
    )


def _entries(frame: Any, F: Any, spec: Spec) -> Any:
    """Each row's entries: its y, its e (``x``, to be bucketed) and its loss terms.

    The entries become rows first, so one key (and one lowest value) is computed per entry,
    not one per histogram in each row: a short projection the JVM compiles.
    """
    frame = frame.withColumn(_E, F.col(_F) - F.col(_Y))
    w = F.col(_W) if spec.weight is not None else None
    frame = _with_terms(frame, F, spec, w)
    entries = [_histogram(F, part, x, w) for part, x in ((0, _Y), (1, _E))]
    entries.append(_totals(F))
    spread = frame.select(*spec.keys, BAD, F.inline(F.array(*entries)))
    keyed = with_ordered_key(spread, F, "x", KEY)
    histogram = F.col("part") < F.lit(2)
    bucket = (
        F.when(F.col(BAD), F.lit(None).cast("long"))
        .when(histogram, bucket_of(F, F.col(KEY), spec.precision))
        .otherwise(F.lit(0).cast("long"))
    )
    keyed = keyed.withColumn("bucket", bucket).drop(KEY)
    if not spec.exact:
        keyed = with_float_of_key(keyed, F, "bucket", _LO)
        dev = F.col("x") - F.col(_LO)
        wd = dev if w is None else F.col("w") * dev
        zero = F.lit(0.0)
        keyed = keyed.withColumns(
            {
                "d1": F.when(histogram, wd).otherwise(zero),
                "d2": F.when(histogram, wd * dev).otherwise(zero),
            }
        ).drop(_LO)
    return keyed.drop("x", BAD)


def _histogram(F: Any, part: int, x: str, w: Any) -> Any:
    """A row's entry in the histogram of ``x`` (part 0: y; part 1: e)."""
    zero, zeros = F.lit(0.0), F.lit(0).cast("long")
    return F.struct(
        F.lit(part).cast("byte").alias("part"), F.col(x).alias("x"),
        F.lit(1).cast("long").alias("n"), (zero if w is None else w).alias("w"),
        *(zero.alias(c) for c in LOSSES), *(zeros.alias(c) for c in DOMAINS),
        F.lit(None).cast("double").alias("amax"),
    )  # fmt: skip


def _with_terms(frame: Any, F: Any, spec: Spec, w: Any) -> Any:
    """``frame`` with each loss's row term and whether the row is outside its domain.

    Columns of their own (two projections), not fields of the totals entry: in one
    expression with the keys, the stage was too large for the JVM to compile (70 s against
    about 5 s for 5e6 rows).
    """
    y, f = F.col(_Y), F.col(_F)
    domains = {
        "sle": (y <= F.lit(-1.0)) | (f <= F.lit(-1.0)),
        "ape": F.abs(y) < F.lit(EPS),
        "poisson": _outside(F, y, f, 1.0),
        "gamma": _outside(F, y, f, 2.0),
        "tweedie": _outside(F, y, f, spec.power),
    }
    frame = frame.withColumns({_out(name): test for name, test in domains.items()})

    def guarded(name: str) -> Any:
        outside = F.col(_out(name))
        ys = F.when(outside, F.lit(1.0)).otherwise(y)
        fs = F.when(outside, F.lit(1.0)).otherwise(f)
        term = F.when(outside, F.lit(0.0)).otherwise(_loss(F, name, ys, fs, spec.power))
        return term if w is None else w * term

    abs_e = F.abs(F.col(_E))
    denom = F.abs(y) + F.abs(f)
    safe = F.when(denom > F.lit(0.0), denom).otherwise(F.lit(1.0))
    spe = F.when(denom > F.lit(0.0), F.lit(2.0) * abs_e / safe).otherwise(F.lit(0.0))
    terms = {name: guarded(name) for name in domains} | {"spe": spe if w is None else w * spe}
    return frame.withColumns({_term(name): terms[name] for name in LOSSES})


def _totals(F: Any) -> Any:
    """A row's entry in its group's loss totals (part 2, bucket 0; null for a bad row)."""
    zero = F.lit(0.0)
    return F.struct(
        F.lit(2).cast("byte").alias("part"), F.lit(None).cast("double").alias("x"),
        F.lit(0).cast("long").alias("n"), zero.alias("w"),
        *(F.col(_term(c)).alias(c) for c in LOSSES),
        *(F.col(_out(c.removeprefix("bad_"))).cast("long").alias(c) for c in DOMAINS),
        F.abs(F.col(_E)).alias("amax"),
    )  # fmt: skip


def _out(name: str) -> str:
    return f"__se_out_{name}"


def _term(name: str) -> str:
    return f"__se_term_{name}"


def _outside(F: Any, y: Any, f: Any, power: float) -> Any:
    """Rows outside the Tweedie deviance's domain at ``power`` (as ``tweedie_terms``)."""
    if power == 0:
        return F.lit(False)
    if power < 0:
        return f <= F.lit(0.0)
    low = (y < F.lit(0.0)) if power < 2 else (y <= F.lit(0.0))
    return low | (f <= F.lit(0.0))


def _loss(F: Any, name: str, y: Any, f: Any, power: float) -> Any:
    """A row's term of the loss ``name`` (inputs inside its domain), as the local state's."""
    if name == "sle":
        gap = F.log1p(f) - F.log1p(y)
        return gap * gap
    if name == "ape":
        return F.abs(f - y) / F.greatest(F.abs(y), F.lit(EPS))
    p = {"poisson": 1.0, "gamma": 2.0}.get(name, power)
    two = F.lit(2.0)
    if p == 0:
        return (y - f) * (y - f)
    if p == 1:
        return two * (F.when(y > F.lit(0.0), y * F.log(y / f)).otherwise(0.0) - y + f)
    if p == 2:
        return two * (F.log(f / y) + y / f - F.lit(1.0))
    base = F.greatest(y, F.lit(0.0)) if p < 0 else y
    head = F.pow(base, F.lit(2 - p)) / F.lit((1 - p) * (2 - p))
    return two * (
        head - y * F.pow(f, F.lit(1 - p)) / F.lit(1 - p) + F.pow(f, F.lit(2 - p)) / F.lit(2 - p)
    )


def bad_rows(
    rows: Any, F: Any, spec: Spec, label_type: pl.DataType, positive_given: bool
) -> StreamevalError:
    """The local regression diagnosis (its checks' messages), its rows counted by Spark."""
    label, prediction = spec.label, str(spec.prediction)
    checks = [*finite_checks(label, "label"), *finite_checks(prediction, "prediction")]
    tests = score_tests(F, [label, prediction])
    return problem(rows, F, spec, checks, tests)
