"""Regression state: histograms of the label and of the error, and group totals.

One table, three parts (column ``part``), every value column a sum except ``amax`` (max):

- part 0, per group and bucket of the label y;
- part 1, per group and bucket of the error e = ŷ − y:
  ``n`` rows, ``w`` = Σw (weighted only), and in bucketed mode the centred sums
  ``d1`` = Σw·(x − lo) and ``d2`` = Σw·(x − lo)², ``lo`` being the bucket's lowest value;
- part 2, per group (``bucket`` 0): loss sums that need y and ŷ together — ``sle``, ``ape``,
  ``spe``, ``poisson``, ``gamma``, ``tweedie`` — the count of rows outside each one's domain
  (``bad_*``, whose terms are left out), and ``amax`` = max |e|.

A bucket's mean is ``lo + d1/W`` and its centred second moment ``d2 − d1²/W``, both well
conditioned because values within a bucket agree to ``precision`` bits; finalize combines the
buckets with Chan's formula into a group's mean and variance. So the variances need no
special merge: merging states stays concatenate-and-sum. In exact mode each bucket is one
value, ``d1 = d2 = 0``, and those columns are not stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from ...bucketing import EPS, bucket_expr, key_to_float
from ...spec import Spec

LOSSES = ("sle", "ape", "spe", "poisson", "gamma", "tweedie")
DOMAINS = ("bad_sle", "bad_ape", "bad_poisson", "bad_gamma", "bad_tweedie")
ALL_COLUMNS = ("part", "bucket", "n", "w", "d1", "d2", *LOSSES, *DOMAINS, "amax")

#: The residual quantiles reported (name → percent of the absolute error), read off the
#: error's histogram.
QUANTILES = {"residual_p50": 50, "residual_p90": 90, "residual_p99": 99}


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    cols = ["n"] + (["w"] if spec.weighted else []) + ([] if spec.exact else ["d1", "d2"])
    ops = dict.fromkeys([*cols, *LOSSES, *DOMAINS], "sum")
    ops["amax"] = "max"
    return ops


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["part", "bucket"]


def check_found(spec: Spec) -> None:
    """Nothing to check: a regression state holds no values found in the data."""


def check_merged(spec: Spec, table: pl.DataFrame) -> None:
    """Nothing to check: every merged table of this kind is a state of all its parts' rows."""


def reindex(table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
    """The table itself: a regression state holds no values found in the data to index."""
    return table


def tweedie_terms(y: pl.Expr, f: pl.Expr, power: float) -> tuple[pl.Expr, pl.Expr]:
    """(unit Tweedie deviance, row outside its domain) as sklearn defines them."""
    if power == 0:
        return (y - f) ** 2, pl.lit(False)
    if power == 1:
        dev = 2 * (pl.when(y > 0).then(y * (y / f).log()).otherwise(0.0) - y + f)
        return dev, (y < 0) | (f <= 0)
    if power == 2:
        return 2 * ((f / y).log() + y / f - 1), (y <= 0) | (f <= 0)
    p = power
    head = (pl.max_horizontal(y, 0.0) if p < 0 else y) ** (2 - p) / ((1 - p) * (2 - p))
    dev = 2 * (head - y * f ** (1 - p) / (1 - p) + f ** (2 - p) / (2 - p))
    if p < 0:
        return dev, f <= 0
    return dev, ((y < 0) if p < 2 else (y <= 0)) | (f <= 0)


def _histogram(
    lf: pl.LazyFrame, keys: list[str], x: pl.Expr, w: pl.Expr | None, bad: pl.Expr, spec: Spec
) -> pl.LazyFrame:
    bucket = bucket_expr(x, spec.precision)
    aggs = [pl.len().cast(pl.Int64).alias("n")]
    if w is not None:
        aggs.append(w.sum().alias("w"))
    if not spec.exact:
        dev = x - key_to_float(bucket)
        wd = dev if w is None else w * dev
        aggs += [wd.sum().alias("d1"), (wd * dev).sum().alias("d2")]
    return lf.group_by(
        [*keys, pl.when(~bad).then(bucket).alias("bucket")], maintain_order=True
    ).agg(aggs)


def state_query(
    lf: pl.LazyFrame,
    spec: Spec,
    schema: pl.Schema,
    y: pl.Expr,
    f: pl.Expr,
    w: pl.Expr | None,
    bad: pl.Expr,
    constants: Mapping[str, Any],
) -> tuple[pl.LazyFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
    """Lazy state query (the three parts) and the function that orders its result.

    Rows flagged ``bad`` get a null bucket in the histograms and are left out of the totals.
    """
    keys = [k for k in spec.keys if k not in constants]
    e = f - y
    abs_e = e.abs()

    def wt(term: pl.Expr) -> pl.Expr:
        return term if w is None else w * term

    def guarded(term: pl.Expr, outside: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        return wt(pl.when(outside).then(0.0).otherwise(term)).sum(), outside.sum()

    tweedie, bad_tweedie = tweedie_terms(y, f, spec.power)
    poisson, bad_poisson = tweedie_terms(y, f, 1)
    gamma, bad_gamma = tweedie_terms(y, f, 2)
    sle_terms = guarded((f.log1p() - y.log1p()) ** 2, (y <= -1) | (f <= -1))
    ape_terms = guarded(abs_e / pl.max_horizontal(y.abs(), EPS), y.abs() < EPS)
    denom = y.abs() + f.abs()
    spe = wt(pl.when(denom > 0).then(2 * abs_e / denom).otherwise(0.0)).sum()
    sums = {
        "sle": sle_terms[0],
        "ape": ape_terms[0],
        "spe": spe,
        "poisson": guarded(poisson, bad_poisson)[0],
        "gamma": guarded(gamma, bad_gamma)[0],
        "tweedie": guarded(tweedie, bad_tweedie)[0],
        "bad_sle": sle_terms[1],
        "bad_ape": ape_terms[1],
        "bad_poisson": bad_poisson.sum(),
        "bad_gamma": bad_gamma.sum(),
        "bad_tweedie": bad_tweedie.sum(),
        "amax": abs_e.max(),
    }
    named = [expr.alias(name) for name, expr in sums.items()]
    valid = lf.filter(~bad)
    totals = (
        valid.group_by(keys, maintain_order=True).agg(named) if keys else valid.select(named)
    ).with_columns(pl.lit(2, pl.Int8).alias("part"), pl.lit(0, pl.Int64).alias("bucket"))
    parts = [
        _histogram(lf, keys, y, w, bad, spec).with_columns(pl.lit(0, pl.Int8).alias("part")),
        _histogram(lf, keys, e, w, bad, spec).with_columns(pl.lit(1, pl.Int8).alias("part")),
        totals,
    ]
    query = pl.concat(parts, how="diagonal")
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, "part", "bucket", *merge_ops(spec)]
    casts = {c: pl.Int64 for c in [*DOMAINS]} | {"n": pl.Int64}

    def finish(table: pl.DataFrame) -> pl.DataFrame:
        # A part's rows hold 0 in the other parts' columns: what merging (a sum) gives too.
        values = pl.col(list(merge_ops(spec))).fill_null(0)
        return table.with_columns(*fixed, values).select(order).cast(casts)  # type: ignore[arg-type]

    return query, finish
