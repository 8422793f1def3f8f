"""Multiclass state: the confusion matrix and, with scores, per-class score histograms.

One table, every value column a sum. Rows are identified (after the group keys) by
``actual``, ``predicted``, ``column`` and ``bucket``:

- confusion rows (``column`` and ``bucket`` null): per actual and predicted class index,
  ``n`` rows and ``w`` = Σw (weighted only); with scores also the per-row sums
  ``log_loss`` (−log p of the actual class, clipped as sklearn), ``brier``
  (Σ_k (p_k − [y = k])²), ``top_k`` (rows whose class is among the k highest scores,
  ties broken as sklearn's stable sort) weighted, and the row counts ``n_outside``
  (a score outside [0, 1]) and ``n_unnormalized`` (scores not summing to 1);
- score rows (``predicted`` null): per score column k, actual class and bucket of p_k,
  ``n`` and ``w`` — the histogram from which one-vs-rest and one-vs-one AUCs come.

Rows found invalid get a null ``actual``, so one null check after the pass says whether to
look for what was wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl

from ..bucketing import bucket_expr
from ..spec import Spec

ROW_SUMS = ("log_loss", "brier", "top_k", "n_outside", "n_unnormalized")
ALL_COLUMNS = ("actual", "predicted", "column", "bucket", "n", "w", *ROW_SUMS)
_EPS = float(np.finfo(np.float64).eps)


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    cols = ["n"] + (["w"] if spec.weighted else []) + (list(ROW_SUMS) if spec.scores else [])
    return dict.fromkeys(cols, "sum")


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["actual", "predicted", "column", "bucket"]


def _row_sums(actual: pl.Expr, ps: list[pl.Expr], w: pl.Expr | None, top_k: int) -> list[pl.Expr]:
    """Aggregations of the per-row losses (rows with scores)."""
    mine = pl.sum_horizontal(
        [pl.when(actual == k).then(p).otherwise(0.0) for k, p in enumerate(ps)]
    )
    clipped = mine.clip(_EPS, 1.0 - _EPS)
    brier = pl.sum_horizontal([(p - (actual == k).cast(pl.Float64)) ** 2 for k, p in enumerate(ps)])
    above = [
        ((p > mine) | ((p == mine) & (pl.lit(k) > actual))).cast(pl.Int32) for k, p in enumerate(ps)
    ]
    hit = (pl.sum_horizontal(above) < top_k).cast(pl.Float64)
    outside = pl.any_horizontal([(p < 0) | (p > 1) for p in ps])
    total = pl.sum_horizontal(ps)
    unnormalized = (total - 1.0).abs() > 1e-8 + math.sqrt(_EPS)

    def wt(e: pl.Expr) -> pl.Expr:
        return e if w is None else w * e

    return [
        wt(-clipped.log()).sum().alias("log_loss"),
        wt(brier).sum().alias("brier"),
        wt(hit).sum().alias("top_k"),
        outside.cast(pl.Int64).sum().alias("n_outside"),
        unnormalized.cast(pl.Int64).sum().alias("n_unnormalized"),
    ]


def state_query(
    lf: pl.LazyFrame,
    spec: Spec,
    schema: pl.Schema,
    actual: pl.Expr,
    predicted: pl.Expr,
    ps: list[pl.Expr],
    w: pl.Expr | None,
    bad: pl.Expr,
    constants: Mapping[str, Any],
) -> tuple[pl.LazyFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
    """Lazy state query (confusion rows and score rows) and the function ordering its result."""
    keys = [k for k in spec.keys if k not in constants]
    a = pl.when(~bad).then(actual).alias("actual")
    counts = [pl.len().cast(pl.Int64).alias("n")] + ([w.sum().alias("w")] if w is not None else [])
    extra = _row_sums(actual, ps, w, spec.top_k) if ps else []
    confusion = lf.group_by([*keys, a, predicted.alias("predicted")]).agg([*counts, *extra])
    parts = [confusion]
    if ps:
        # One long table of (row, score column) entries, grouped once: faster than one
        # group_by per class column.
        names = [f"_b{k}" for k in range(len(ps))]
        weight = [w.alias("_w")] if w is not None else []
        wide = lf.select(
            *keys,
            a,
            *weight,
            *[bucket_expr(p, spec.precision).alias(n) for n, p in zip(names, ps, strict=True)],
        )
        long = wide.unpivot(
            on=names,
            index=[*keys, "actual", *(["_w"] if w is not None else [])],
            variable_name="_column",
            value_name="bucket",
        )
        hist_counts = [pl.len().cast(pl.Int64).alias("n")]
        if w is not None:
            hist_counts.append(pl.col("_w").sum().alias("w"))
        hist = long.group_by([*keys, "actual", "_column", "bucket"]).agg(hist_counts)
        column = pl.col("_column").replace_strict(
            names, list(range(len(ps))), return_dtype=pl.Int32
        )
        parts.append(hist.with_columns(column.alias("column")).drop("_column"))
    query = pl.concat(parts, how="diagonal")
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, *group_columns(spec), *merge_ops(spec)]
    types: dict[str, Any] = {
        "actual": pl.Int32, "predicted": pl.Int32, "column": pl.Int32, "bucket": pl.Int64,
        "n": pl.Int64, "n_outside": pl.Int64, "n_unnormalized": pl.Int64,
    }  # fmt: skip

    def finish(table: pl.DataFrame) -> pl.DataFrame:
        for name in group_columns(spec):
            if name not in table.columns:
                table = table.with_columns(pl.lit(None, types[name]).alias(name))
        # Score rows hold 0 in the row-sum columns: what merging (a sum) gives too.
        values = pl.col(list(merge_ops(spec))).fill_null(0)
        out = table.with_columns(*fixed, values).select(order)
        return out.cast({c: t for c, t in types.items() if c in out.columns})

    return query, finish
