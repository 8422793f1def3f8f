"""Multiclass state: the confusion matrix and, with scores, per-class score histograms.

One table, every value column a sum. Rows are identified (after the group keys) by
``actual``, ``predicted``, ``column`` and ``bucket``:

- confusion rows (``column`` and ``bucket`` null): per actual and predicted class index,
  ``n`` rows and ``w`` = Σw (weighted only); with scores also the row counts ``n_outside``
  (a score outside [0, 1]) and ``n_unnormalized`` (scores not summing to 1);
- score rows (``predicted`` null): per score column k, actual class and bucket of p_k,
  ``n`` and ``w`` — the histogram from which one-vs-rest and one-vs-one AUCs come — and the
  weighted sums each row would add if its class were column k's: ``log_loss`` (−log p_k,
  clipped as sklearn), ``brier`` (Σ_j (p_j − [j = k])²), ``top_k`` (column k among the k
  highest scores, ties broken as sklearn's stable sort) and ``hinge`` (Crammer and Singer's
  max(0, 1 − (p_k − max_{j≠k} p_j)); not in states of schema version 2). A row's own
  terms are those of the score row whose column is its class (``column == actual``): summed
  per column, they need no class order, so a part of the data whose classes were found (not
  given) can be merged with parts holding other classes before the columns are matched to
  the classes.

Class indices (``actual``, and ``predicted`` with a prediction column) index ``spec.classes``;
a ``predicted`` from the scores (argmax) is a score column's index. When the classes were found
in the data, merging re-expresses each state's indices in the union of the classes
(:func:`reindex`).

Rows found invalid get a null ``actual``, so one null check after the pass says whether to
look for what was wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from ...bucketing import EPS, bucket_expr
from ...errors import InputError
from ...spec import Spec

ROW_SUMS = ("log_loss", "brier", "top_k", "hinge", "n_outside", "n_unnormalized")
CLASS_SUMS = ("log_loss", "brier", "top_k", "hinge")  # on score rows: were the class k's
#: The first state schema version whose states store ``hinge``.
HINGE_VERSION = 3
MAX_CLASSES = 10_000
ALL_COLUMNS = ("actual", "predicted", "column", "bucket", "n", "w", *ROW_SUMS)


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    sums = [c for c in ROW_SUMS if c != "hinge" or spec.schema_version >= HINGE_VERSION]
    cols = ["n"] + (["w"] if spec.weighted else []) + (sums if spec.scores else [])
    return dict.fromkeys(cols, "sum")


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["actual", "predicted", "column", "bucket"]


def check_count(classes: list[Any], columns: list[str], *, exact: bool = False) -> None:
    """Raise unless there is one score column per class (at most one, unless ``exact``)."""
    if len(classes) > len(columns) or (exact and len(classes) != len(columns)):
        raise InputError(
            f"expected one score column per class ({len(classes)} classes: {classes!r}), got "
            f"{len(columns)} columns {columns!r}; hint: pass classes=[...] in the scores' "
            "order or scores={class: column}"
        )


def check_found(spec: Spec) -> None:
    """Raise when the classes found over all merged parts cannot be evaluated."""
    if len(spec.classes) > MAX_CLASSES:
        raise InputError(
            f"expected at most {MAX_CLASSES} classes, found {len(spec.classes)} in "
            f"{spec.label!r}; hint: is this a regression target? pass task='regression'"
        )
    if spec.scores:
        check_count(list(spec.classes), list(spec.scores))


def check_merged(spec: Spec, table: pl.DataFrame) -> None:
    """Nothing to check: every merged table of this kind is a state of all its parts' rows."""


def reindex(table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
    """The table of a state with spec ``old`` re-expressed in the classes of ``new``."""
    if old.classes == new.classes:
        return table
    position = {c: i for i, c in enumerate(new.classes)}
    indices = [position[c] for c in old.classes]
    columns = ["actual"] + (["predicted"] if old.prediction is not None else [])
    return table.with_columns(
        pl.col(c).replace_strict(range(len(indices)), indices, return_dtype=pl.Int32)
        for c in columns
    )


def _row_counts(ps: list[pl.Expr]) -> list[pl.Expr]:
    """Rows with a score outside [0, 1], and rows whose scores do not sum to 1."""
    outside = pl.any_horizontal([(p < 0) | (p > 1) for p in ps])
    unnormalized = (pl.sum_horizontal(ps) - 1.0).abs() > 1e-8 + math.sqrt(EPS)
    return [
        outside.cast(pl.Int64).sum().alias("n_outside"),
        unnormalized.cast(pl.Int64).sum().alias("n_unnormalized"),
    ]


def _class_terms(ps: list[pl.Expr], k: int, top_k: int) -> pl.Expr:
    """A row's score p_k with its loss terms were its class column k's, as one struct."""
    p = ps[k]
    others = pl.sum_horizontal([q * q for j, q in enumerate(ps) if j != k])
    # Ties count the later column as higher (sklearn's stable argsort, reversed).
    above = [(q >= p) if j > k else (q > p) for j, q in enumerate(ps) if j != k]
    rival = pl.max_horizontal([q for j, q in enumerate(ps) if j != k])
    return pl.struct(
        p.alias("p"),
        (-p.clip(EPS, 1.0 - EPS).log()).alias("log_loss"),
        (others + (1.0 - p) ** 2).alias("brier"),
        (pl.sum_horizontal([a.cast(pl.Int32) for a in above]) < top_k)
        .cast(pl.Float64)
        .alias("top_k"),
        (1.0 - (p - rival)).clip(lower_bound=0.0).alias("hinge"),
    )


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
    extra = _row_counts(ps) if ps else []
    confusion = lf.group_by([*keys, a, predicted.alias("predicted")], maintain_order=True).agg(
        [*counts, *extra]
    )
    parts = [confusion]
    if ps:
        # One long table of (row, score column) entries, grouped once: faster than one
        # group_by per class column.
        names = [f"_s{k}" for k in range(len(ps))]
        weight = [w.alias("_w")] if w is not None else []
        wide = lf.select(
            *keys,
            a,
            *weight,
            *[_class_terms(ps, k, spec.top_k).alias(n) for k, n in enumerate(names)],
        )
        long = wide.unpivot(
            on=names,
            index=[*keys, "actual", *(["_w"] if w is not None else [])],
            variable_name="_column",
            value_name="_terms",
        ).unnest("_terms")
        ww = pl.col("_w") if w is not None else None
        hist_sums = [pl.len().cast(pl.Int64).alias("n")]
        if ww is not None:
            hist_sums.append(ww.sum().alias("w"))
        hist_sums += [
            (pl.col(c) if ww is None else ww * pl.col(c)).sum().alias(c) for c in CLASS_SUMS
        ]
        bucket = bucket_expr(pl.col("p"), spec.precision).alias("bucket")
        hist = long.group_by([*keys, "actual", "_column", bucket], maintain_order=True).agg(
            hist_sums
        )
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
        # Rows lacking a sum hold 0 in it: what merging (a sum) gives too.
        values = pl.col(list(merge_ops(spec))).fill_null(0)
        out = table.with_columns(*fixed, values).select(order)
        return out.cast({c: t for c, t in types.items() if c in out.columns})

    return query, finish
