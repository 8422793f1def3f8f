"""A multiclass state's score aggregates: loss sums and every AUC from pairwise sums."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ... import kernels
from ...kernels.classstate import state_pairs
from ...metrics.groups import with_group_key
from ...ordered import ORDERED
from .classes import weight_column

if TYPE_CHECKING:
    from ...states.data import StateData


def _pairwise(state: StateData, keys: list[str]) -> pl.LazyFrame:
    """Per group, score column a and other class b: the pair sums behind every AUC.

    On column a's histogram (sorted by score, descending), each row of class b ≠ a adds
    w·(weight of class a above it + ½ in its bucket) to ``_num`` and w·(class a's weight in
    its bucket) to ``_ties``; ``_P`` is class a's weight and ``_N`` class b's. Then
    AUC(a | b) = _num / (_P·_N) and its bound is ½·_ties / (_P·_N); one-vs-rest sums the
    pairs over b. No row is repeated per pair.
    """
    lf, _ = with_group_key(state.table, state.keys)
    w = weight_column(state)
    hist = lf.filter(pl.col("column").is_not_null()).select(
        *keys, pl.col("column").alias("a"), "actual", "bucket", w.alias("_w")
    )
    mine = pl.col("actual") == pl.col("a")
    by_bucket = (
        hist.group_by(*keys, "a", "bucket", maintain_order=True)
        .agg(pl.col("_w").filter(mine).sum().alias("_pos"))
        .sort("bucket", descending=True)
        .with_columns(pl.col("_pos").cum_sum().over([*keys, "a"]).alias("_cpos"))
    )
    positives = by_bucket.group_by(*keys, "a", maintain_order=True).agg(
        pl.col("_pos").sum().alias("_P")
    )
    others = hist.filter(~mine).join(
        by_bucket, on=[*keys, "a", "bucket"], nulls_equal=True, maintain_order="left_right"
    )
    above = pl.col("_cpos") - 0.5 * pl.col("_pos")
    return (
        others.group_by(*keys, "a", pl.col("actual").alias("b"), maintain_order=True)
        .agg(
            (pl.col("_w") * above).sum().alias("_num"),
            (pl.col("_w") * pl.col("_pos")).sum().alias("_ties"),
            pl.col("_w").sum().alias("_N"),
        )
        .join(positives, on=[*keys, "a"], nulls_equal=True, maintain_order="left_right")
    )


def _row_sums(lf: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Per group: the loss sums, top-k hits and row counts of the rows.

    A row's loss terms sit on the score row whose column is its class; states written before
    they moved there hold them on the confusion rows (and 0 on the score rows): both add up.
    """
    columns = ("log_loss", "brier", "top_k", "hinge", "n_outside", "n_unnormalized")
    own = pl.col("column").is_null() | (pl.col("column") == pl.col("actual"))
    present = lf.collect_schema().names()
    sums = [  # (states of schema version 2 have no hinge sums: a null hinge loss)
        (pl.col(c).sum() if c in present else pl.lit(None, pl.Float64)).alias(f"_{c}")
        for c in columns
    ]
    return lf.filter(own).group_by(keys, maintain_order=True).agg(sums)


def _averages(auc: pl.Expr, err: pl.Expr, weight: pl.Expr, name: str) -> list[pl.Expr]:
    """Macro and weighted means of the defined AUCs and of their bounds."""
    some = weight.sum() > 0
    return [
        auc.mean().alias(f"_{name}_macro"),
        err.mean().alias(f"_{name}_macro_error"),
        pl.when(some).then((auc * weight).sum() / weight.sum()).alias(f"_{name}_weighted"),
        pl.when(some).then((err * weight).sum() / weight.sum()).alias(f"_{name}_weighted_error"),
    ]


def score_aggregates(
    state: StateData, keys: list[str], pairs: pl.DataFrame | None = None
) -> pl.LazyFrame:
    """Per group: loss sums, top-k hits and one-vs-rest / one-vs-one AUC averages.

    ``pairs``, when given, are the pair sums of :func:`_pairwise` computed from the rows
    (:mod:`streameval.kernels.classes`, whose state then holds its confusion rows only).
    """
    lf, _ = with_group_key(state.table, state.keys)
    sums = _row_sums(lf, keys)
    bound = 0.0 if state.spec.exact else 0.5
    if pairs is None:  # read by both averages: compute once
        pairs = state_pairs(state.table, state.spec) if kernels.enabled() else None
    if pairs is None:
        pairs = _pairwise(state, keys).collect(engine="in-memory", optimizations=ORDERED)
    lazy, _ = with_group_key(pairs, state.keys)
    P, N = pl.col("_P"), pl.col("_N")
    ovr = (
        lazy.group_by(*keys, "a", maintain_order=True)
        .agg(pl.col("_num", "_ties", "_N").sum(), P.first())
        .filter((P > 0) & (N > 0))
        .group_by(keys, maintain_order=True)
        .agg(_averages(pl.col("_num") / P / N, pl.col("_ties") / P / N * bound, P, "ovr"))
    )
    directed = lazy.filter((P > 0) & (N > 0)).with_columns(
        (pl.col("_num") / P / N).alias("_auc"), (pl.col("_ties") / P / N * bound).alias("_err")
    )
    back = directed.select(
        *keys,
        pl.col("a").alias("b"),
        pl.col("b").alias("a"),
        pl.col("_auc").alias("_auc_ba"),
        pl.col("_err").alias("_err_ba"),
    )
    pair = directed.filter(pl.col("a") < pl.col("b")).join(
        back, on=[*keys, "a", "b"], nulls_equal=True, maintain_order="left_right"
    )
    ovo = pair.group_by(keys, maintain_order=True).agg(
        _averages(
            (pl.col("_auc") + pl.col("_auc_ba")) / 2,
            (pl.col("_err") + pl.col("_err_ba")) / 2,
            P + N,  # the pair's prevalence: weight of its two classes
            "ovo",
        )
    )
    return sums.join(ovr, on=keys, how="left", nulls_equal=True, maintain_order="left_right").join(
        ovo, on=keys, how="left", nulls_equal=True, maintain_order="left_right"
    )
