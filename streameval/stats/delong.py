"""Variance of an AUC from a score histogram: DeLong's and Hanley–McNeil's.

DeLong's variance needs each example's *placement*: for a positive, the share of negatives
scored below it (ties ½); for a negative, the share of positives scored above it. All the
examples of a score bucket share one placement, so the histogram gives the placements, and

    var = S₁₀ / P + S₀₁ / N,   S₁₀ = Σ_b pos_b (V₁₀(b) − A)² / (P − 1)   (S₀₁ alike)

as pROC's ``var(roc, method="delong")``: the same for every group in one query. In exact mode
the buckets are the distinct scores and the result is pROC's; in bucketed mode it is the
variance of the bucketed AUC, whose own distance to the exact AUC is ``roc_auc_error``
(intervals are widened by it). Weights act as frequency weights (P and N are weighted sums).
The variance is null with fewer than two positives or two negatives (R's ``var`` of one
value).

Hanley and McNeil's (1982) variance uses only A, P and N:
``(A(1−A) + (P−1)(Q₁−A²) + (N−1)(Q₂−A²)) / (P·N)`` with ``Q₁ = A/(2−A)``, ``Q₂ = 2A²/(1+A)``.
"""

from __future__ import annotations

import polars as pl

from ..errors import InputError

METHODS = ("delong", "hanley-mcneil")


def placements(lf: pl.LazyFrame, groups: list[str]) -> pl.LazyFrame:
    """Per bucket: ``_P``, ``_N``, ``_auc`` (group windows) and the placements ``_v10``, ``_v01``.

    Input rows: the group columns, ``bucket`` (ordered score key, one row per group and
    bucket), ``pos`` and ``neg`` (Float64 weights).
    """
    pos, neg = pl.col("pos"), pl.col("neg")
    P, N = pl.col("_P"), pl.col("_N")
    return (
        lf.sort("bucket", descending=True)
        .with_columns(
            pos.cum_sum().over(groups).alias("_cpos"),
            neg.cum_sum().over(groups).alias("_cneg"),
            pos.sum().over(groups).alias("_P"),
            neg.sum().over(groups).alias("_N"),
        )
        .with_columns(
            ((N - pl.col("_cneg") + 0.5 * neg) / N).alias("_v10"),
            ((pl.col("_cpos") - 0.5 * pos) / P).alias("_v01"),
        )
        .with_columns(
            pl.when((P > 0) & (N > 0))
            .then((pos * pl.col("_v10")).sum().over(groups) / P)
            .alias("_auc")
        )
    )


def delong(lf: pl.LazyFrame, groups: list[str]) -> pl.LazyFrame:
    """Per group: ``_P``, ``_N``, ``_auc`` and ``_var`` (DeLong; null when undefined).

    >>> import polars as pl
    >>> h = pl.LazyFrame({"g": [0] * 4, "bucket": [4, 3, 2, 1],
    ...                   "pos": [1.0, 1.0, 0.0, 1.0], "neg": [0.0, 1.0, 1.0, 1.0]})
    >>> row = delong(h, ["g"]).collect().row(0, named=True)
    >>> round(row["_auc"], 6), round(row["_var"], 6)
    (0.666667, 0.074074)
    """
    pos, neg, A = pl.col("pos"), pl.col("neg"), pl.col("_auc")
    P, N = pl.col("_P").first(), pl.col("_N").first()
    s10 = (pos * (pl.col("_v10") - A) ** 2).sum() / (P - 1)
    s01 = (neg * (pl.col("_v01") - A) ** 2).sum() / (N - 1)
    ok = (P > 1) & (N > 1)
    return (
        placements(lf, groups)
        .group_by(groups, maintain_order=True)
        .agg(
            P.alias("_P"),
            N.alias("_N"),
            A.first().alias("_auc"),
            pl.when(ok).then(s10 / P + s01 / N).alias("_var"),
        )
    )


def hanley_mcneil(auc: pl.Expr, P: pl.Expr, N: pl.Expr) -> pl.Expr:
    """Hanley–McNeil variance of an AUC (null with an empty class).

    >>> import polars as pl
    >>> pl.select(hanley_mcneil(pl.lit(0.8), pl.lit(50.0), pl.lit(50.0))).item()
    0.0019804444444444435
    """
    q1 = auc / (2 - auc)
    q2 = 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (P - 1) * (q1 - auc * auc) + (N - 1) * (q2 - auc * auc)) / (P * N)
    return pl.when((P > 0) & (N > 0)).then(var)


def check_method(method: str) -> str:
    """``method`` if it names an AUC variance, else an InputError."""
    if method not in METHODS:
        raise InputError(
            f"expected an AUC interval method among {list(METHODS)}, got {method!r}; "
            "hint: auc_method='delong' (pROC's default)"
        )
    return method


def normal_interval(
    estimate: pl.Expr, se: pl.Expr, level: float, widen: pl.Expr | float = 0.0
) -> tuple[pl.Expr, pl.Expr]:
    """``estimate ± z·se`` (widened by ``widen``), clipped to [0, 1] as pROC does."""
    half = z_quantile(level) * se + widen
    return (estimate - half).clip(0.0, 1.0), (estimate + half).clip(0.0, 1.0)


def z_quantile(level: float) -> float:
    """Two-sided standard normal quantile of a confidence level.

    >>> round(z_quantile(0.95), 6)
    1.959964
    """
    from scipy import special  # (not scipy.stats: 0.7 s to import; the same values)

    return float(special.ndtri(0.5 + level / 2))
