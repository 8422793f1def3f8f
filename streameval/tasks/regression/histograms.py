"""Per-group aggregates of a regression state's histograms, for its metric table.

Each bucket of the label and error histograms becomes (weight, mean, M2): mean = lo + d1/W
and M2 = d2 − d1²/W from the stored centred sums; Chan's parallel formula combines the
buckets into a group's mean and M2. Quantiles are sklearn's weighted percentile with
averaging over the buckets sorted by value.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import polars as pl

from ...bucketing import EPS, TINY, key_to_float
from ...metrics.groups import with_group_key
from .state import DOMAINS, LOSSES, tweedie_terms
from .state import QUANTILES as QUANTILES  # re-exported: the metric names

if TYPE_CHECKING:
    from ...states.data import StateData


def _quantile(q: float) -> pl.Expr:
    """Averaged inverted-CDF ``q`` % quantile (sklearn's weighted percentile), sorted group."""
    cdf, v = pl.col("_cdf"), pl.col("_v")
    rank = pl.lit(q / 100) * cdf.last()
    sel = cdf >= rank
    first, after = v.filter(sel).first(), v.filter(sel).slice(1, 1).first()
    above = cdf.filter(sel).first() - rank
    return (
        pl.when(first.is_null())
        .then(v.last())
        .when(above > EPS)
        .then(first)
        .otherwise((first + pl.coalesce(after, first)) / 2)
    )


def aggregates(state: StateData, alpha: float) -> tuple[pl.LazyFrame, list[str]]:
    """Per group: totals, moments of y and e (Chan over buckets), quantiles, deviations.

    The label's deviations from its fits as a constant (the D² scores' denominators):
    Σ|s_b − median·W_b|, the pinball sum of s_b − q·W_b at ``alpha`` (q its ``alpha``
    quantile), and the Tweedie deviance from its mean μ at the state's power,
    Σ W_b·d(m_b, μ) + M2_b·m_b^(−power): the spread within a bucket to second order (d'' =
    2·y^(−power)), exact for power 0 and in exact mode.
    """
    spec = state.spec
    lf, keys = with_group_key(state.table, state.keys)
    weight = pl.col("w") if spec.weighted else pl.col("n").cast(pl.Float64)
    d1, d2 = (pl.lit(0.0), pl.lit(0.0)) if spec.exact else (pl.col("d1"), pl.col("d2"))
    wb, lo, mb = pl.col("_Wb"), pl.col("_lo"), pl.col("_mb")
    by_part = [*keys, "part"]
    hist = (
        lf.filter(pl.col("part") < 2)
        .with_columns(weight.alias("_Wb"), key_to_float(pl.col("bucket")).alias("_lo"))
        .with_columns((wb * lo + d1).alias("_s"), (wb * lo * lo + 2 * lo * d1 + d2).alias("_sq"))
        .with_columns(
            pl.when(wb > 0).then(lo + d1 / wb).alias("_mb"),
            pl.when(wb > 0).then(pl.max_horizontal(d2 - d1 * d1 / wb, 0.0)).alias("_m2b"),
        )
        .with_columns(
            (pl.col("_s").sum() / wb.sum()).over(by_part).alias("_mean"),
            (wb > 0).sum().over(by_part).alias("_occupied"),
        )
    )
    # One occupied bucket has no spread between buckets (its mean may differ from the
    # group's in the last bit, which must not turn a constant into a tiny variance).
    spread = pl.when(pl.col("_occupied") > 1).then(wb * (mb - pl.col("_mean")) ** 2)
    s = pl.col("_s")
    moments = hist.group_by(by_part, maintain_order=True).agg(
        pl.col("n").sum().alias("n"),
        wb.sum().alias("_W"),
        s.sum().alias("_sum"),
        (pl.col("_m2b").sum() + spread.sum()).alias("_m2"),
        pl.col("_sq").sum().alias("_sq"),
        s.abs().sum().alias("_abs"),
        (pl.when(s < 0).then(-alpha * s).otherwise((1 - alpha) * s)).sum().alias("_pin"),
        lo.abs().max().alias("_vmax"),
        d2.sum().alias("_d2"),
    )
    # Sums of squares at or below this level are zero to float64 precision: rounding of the
    # values and the cancellation in d2 − d1²/W (bucketed mode) stay below it, and so do
    # squares that leave the normal floats (values below 1e-154, whose rounding squared
    # underflows).
    level = (16 * EPS * pl.col("_vmax")) ** 2 * pl.col("_W") + 16 * EPS * pl.col("_d2")
    zero = pl.max_horizontal(level, 16 * TINY * pl.col("_W"))
    value = pl.when(pl.col("part") == 1).then(mb.abs()).otherwise(mb)
    quantiles = (
        hist.filter(wb > 0)
        .with_columns(value.alias("_v"))
        .sort("_v")
        .with_columns(wb.cum_sum().over(by_part).alias("_cdf"))
        .group_by(by_part, maintain_order=True)
        .agg(
            *[_quantile(q).alias(f"_{name}") for name, q in QUANTILES.items()],
            _quantile(alpha * 100).alias("_alpha_q"),
        )
    )
    per_part = moments.join(
        quantiles, on=by_part, how="left", nulls_equal=True, maintain_order="left_right"
    )
    y_stats = per_part.filter(pl.col("part") == 0).select(
        *keys,
        pl.col("_m2").alias("_m2_y"),
        zero.alias("_zero_y"),
        pl.col("_residual_p50").alias("_median_y"),
        pl.col("_alpha_q").alias("_alpha_y"),
    )
    e_stats = per_part.filter(pl.col("part") == 1).select(
        *keys,
        "n",
        "_W",
        pl.col("_sum").alias("_se"),
        pl.col("_sq").alias("_sse"),
        pl.col("_abs").alias("_sae"),
        pl.col("_pin").alias("_pinball"),
        pl.col("_m2").alias("_m2_e"),
        zero.alias("_zero_e"),
        pl.col("_residual_p50").alias("_q50"),
        *[f"_{name}" for name in QUANTILES],
    )
    below = s - pl.col("_alpha_y") * wb
    power = spec.power
    within = pl.col("_m2b") * (1.0 if power == 0 else mb ** (-power))
    within = pl.when((pl.col("_m2b") > 0) & ((mb > 0) | (power == 0))).then(within)
    deviation = (
        hist.filter(pl.col("part") == 0)
        .join(
            y_stats.select(*keys, "_median_y", "_alpha_y"),
            on=keys,
            nulls_equal=True,
            maintain_order="left_right",
        )
        .group_by(keys, maintain_order=True)
        .agg(
            (s - pl.col("_median_y") * wb).abs().sum().alias("_dev_median"),
            pl.when(below >= 0)
            .then(alpha * below)
            .otherwise((alpha - 1) * below)
            .sum()
            .alias("_dev_alpha"),
            (wb * tweedie_terms(mb, pl.col("_mean"), power)[0] + within.fill_null(0.0))
            .filter(wb > 0)
            .sum()
            .alias("_dev_tweedie"),
        )
    )
    totals = lf.filter(pl.col("part") == 2).select(
        *keys,
        *[pl.col(c).alias(f"_{c}") for c in (*LOSSES, *DOMAINS, "amax")],
    )
    out = e_stats
    for other in (y_stats, deviation, totals):
        out = out.join(other, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
    rel = 0.0 if spec.exact else math.ldexp(1.0, 1 - spec.precision)
    return out.with_columns(pl.lit(rel).alias("_rel_error")), keys
