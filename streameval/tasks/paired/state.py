"""Paired score state: the joint histogram of several models' scores on the same rows.

One row per group and combination of score buckets (``bucket_0`` … ``bucket_{k-1}``, one per
model in ``spec.scores`` order), with ``pos`` = Σw·y and ``neg`` = Σw·(1−y) (Int64 counts when
unweighted) and, weighted, ``n`` = rows. Each model's own histogram is a sum over the others'
buckets; the joint one is what a paired test needs: the covariance of two AUCs comes from
rows' placements under both models at once. Every column merges by ``sum``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from ...bucketing import bucket_expr
from ...spec import Spec
from ..binary.state import check_found as check_found  # merged label values: as binary
from ..binary.state import check_merged as check_merged
from ..binary.state import reindex as reindex

ALL_COLUMNS = ("pos", "neg", "n")


def bucket_columns(spec: Spec) -> list[str]:
    """The bucket column of each model, in ``spec.scores`` order."""
    return [f"bucket_{i}" for i in range(len(spec.scores))]


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    return dict.fromkeys(["pos", "neg", *(["n"] if spec.weighted else [])], "sum")


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return bucket_columns(spec)


def state_query(
    lf: pl.LazyFrame,
    spec: Spec,
    schema: pl.Schema,
    y: pl.Expr,
    w: pl.Expr | None,
    bad: pl.Expr,
    constants: Mapping[str, Any],
) -> tuple[pl.LazyFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
    """Lazy state query over ``lf``; rows flagged ``bad`` land in a null ``bucket_0``."""
    yi = y.cast(pl.Int64)
    buckets = [
        bucket_expr(pl.col(score).cast(pl.Float64), spec.precision, spec.splits).alias(name)
        for score, name in zip(spec.scores, bucket_columns(spec), strict=True)
    ]
    buckets[0] = pl.when(~bad).then(buckets[0]).alias("bucket_0")
    aggs = {
        "pos": (yi if w is None else w * yi).sum(),
        "neg": ((1 - yi) if w is None else w * (1 - yi)).sum(),
        "n": pl.len().cast(pl.Int64),
    }
    names = list(merge_ops(spec))
    keys = [k for k in spec.keys if k not in constants]
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, *bucket_columns(spec), *names]
    query = lf.group_by([*keys, *buckets], maintain_order=True).agg(
        [aggs[c].alias(c) for c in names]
    )
    return query, lambda table: table.with_columns(fixed).select(order)


def histogram(spec: Spec, table: pl.DataFrame) -> pl.DataFrame:
    """Each model's score histogram: per group, ``model`` and bucket, ``_mass`` and ``_rows``.

    A model's histogram sums the joint one over the other models' buckets.
    """
    n = pl.col("n") if spec.weighted else pl.col("pos") + pl.col("neg")
    mass = (pl.col("pos") + pl.col("neg")).cast(pl.Float64)
    parts = [
        table.group_by([*spec.keys, b], maintain_order=True)
        .agg(mass.sum().alias("_mass"), n.cast(pl.Int64).sum().alias("_rows"))
        .select(
            *spec.keys, pl.lit(model).alias("model"), pl.col(b).alias("bucket"), "_mass", "_rows"
        )
        for model, b in zip(spec.scores, bucket_columns(spec), strict=True)
    ]
    return pl.concat(parts)
