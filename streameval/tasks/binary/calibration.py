"""Calibration (reliability) curves and calibration errors of binary states.

Bins as scikit-learn's ``calibration_curve``: ``"uniform"`` edges on [0, 1], or
``"quantile"`` edges at the scores' percentiles (NumPy's linear interpolation over rows);
a score equal to an inner edge belongs to the lower bin. Per non-empty bin: rows,
weight, mean prediction Σw·p / Σw and observed positive rate Σw·y / Σw (sklearn's unweighted
``prob_pred`` and ``prob_true``). ``ece`` is the weight-averaged |observed − predicted| over
bins, ``mce`` its largest value. Exact in exact mode; in bucketed mode a bucket is assigned
by its lowest score, so scores within a bucket's width of an edge may land one bin off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ...bucketing import key_to_float
from ...errors import InputError
from ...metrics.groups import with_group_key
from ...ordered import ORDERED
from ...spec import ALL
from .state import column_exprs

if TYPE_CHECKING:
    from ...states.data import StateData

STRATEGIES = ("uniform", "quantile")


def _histogram(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    lf, keys = with_group_key(state.table, state.keys)
    cols = column_exprs(state.spec)
    hist = lf.select(
        *keys,
        key_to_float(pl.col("bucket")).alias("score"),
        cols["pos"].cast(pl.Float64).alias("pos"),
        cols["neg"].cast(pl.Float64).alias("neg"),
        cols["n"].cast(pl.Int64).alias("n"),
        cols["psum"].cast(pl.Float64).alias("psum"),
    ).filter(pl.col("n") > 0)
    outside = hist.filter((pl.col("score") < 0) | (pl.col("score") > 1)).select(pl.len())
    if outside.collect(engine="in-memory", optimizations=ORDERED).item():
        raise InputError(
            "expected probabilities in [0, 1] for a calibration curve, found scores outside; "
            "hint: apply the model's link function (e.g. a sigmoid) before evaluating"
        )
    return hist, keys


def _uniform_edges(hist: pl.LazyFrame, keys: list[str], n_bins: int) -> pl.LazyFrame:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    table = pl.LazyFrame(
        {"k": range(n_bins + 1), "edge": edges}, schema={"k": pl.Int32, "edge": pl.Float64}
    )
    return hist.select(keys).unique().join(table, how="cross", maintain_order="left_right")


def _quantile_edges(hist: pl.LazyFrame, keys: list[str], n_bins: int) -> pl.LazyFrame:
    """NumPy's ``percentile(scores, linspace(0, 1, n_bins + 1) * 100)`` per group."""
    ordered = hist.sort([*keys, "score"]).with_columns(pl.col("n").cum_sum().over(keys).alias("_c"))
    totals = (
        ordered.group_by(keys, maintain_order=True)
        .agg(pl.col("n").sum().alias("_N"))
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    q = np.linspace(0.0, 1.0, n_bins + 1) * 100 / 100  # as np.percentile divides by 100
    size = totals["_N"].to_numpy().astype(np.float64)
    h = (size[:, None] - 1) * q[None, :]
    below = np.floor(h)
    gamma = h - below
    above = np.minimum(below + 1, size[:, None] - 1)
    rows = totals.height
    index = totals.select(keys).select(pl.all().gather(np.repeat(np.arange(rows), n_bins + 1)))
    targets = index.with_columns(
        pl.Series("k", np.tile(np.arange(n_bins + 1), rows), dtype=pl.Int32),
        pl.Series("_i", below.ravel().astype(np.int64) + 1),
        pl.Series("_j", above.ravel().astype(np.int64) + 1),
        pl.Series("_t", gamma.ravel()),
    ).lazy()
    # The value at 0-based row position i: the first score whose cumulative count exceeds i.
    values = ordered.select(*keys, "_c", "score")
    for side in ("_i", "_j"):
        targets = (
            targets.sort([*keys, side])
            .join_asof(
                values,
                left_on=side,
                right_on="_c",
                by=keys,
                strategy="forward",
                check_sortedness=False,
            )
            .rename({"score": f"{side}_v"})
            .drop("_c")
        )
    a, b, t = pl.col("_i_v"), pl.col("_j_v"), pl.col("_t")
    lerp = pl.when(t >= 0.5).then(b - (b - a) * (1 - t)).otherwise(a + (b - a) * t)
    return targets.select(*keys, "k", lerp.alias("edge"))


def calibration_curve(
    state: StateData, n_bins: int = 10, strategy: str = "uniform"
) -> pl.DataFrame:
    """Per group and non-empty bin: bin, lo, hi, n, weight, mean_predicted, observed_rate.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 1], "p": [0.1, 0.3, 0.35, 0.8, 0.9]})
    >>> st = se.accumulate(df, label="y", score="p", precision="exact")
    >>> st.calibration_curve(2).select("bin", "n", "observed_rate").rows()
    [(0, 3, 0.3333333333333333), (1, 2, 1.0)]
    """
    if not isinstance(n_bins, int) or isinstance(n_bins, bool) or n_bins < 1:
        raise InputError(f"expected n_bins to be an integer ≥ 1, got {n_bins!r}")
    if strategy not in STRATEGIES:
        raise InputError(f"expected strategy among {list(STRATEGIES)}, got {strategy!r}")
    hist, keys = _histogram(state)
    edges = (_uniform_edges if strategy == "uniform" else _quantile_edges)(hist, keys, n_bins)
    inner = edges.filter((pl.col("k") > 0) & (pl.col("k") < n_bins))
    binned = (
        hist.sort([*keys, "score"])
        .join_asof(
            inner.sort([*keys, "edge"]).select(*keys, pl.col("k").alias("bin"), "edge"),
            left_on="score",
            right_on="edge",
            by=keys,
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .with_columns(pl.col("bin").fill_null(0))
    )
    weight = pl.col("pos") + pl.col("neg")
    bins = binned.group_by(*keys, "bin", maintain_order=True).agg(
        pl.col("n").sum(), weight.sum().alias("weight"), pl.col("pos").sum(), pl.col("psum").sum()
    )
    bounds = edges.select(*keys, pl.col("k").alias("bin"), pl.col("edge").alias("lo")).join(
        edges.select(*keys, (pl.col("k") - 1).alias("bin"), pl.col("edge").alias("hi")),
        on=[*keys, "bin"],
        maintain_order="left_right",
    )
    w = pl.col("weight")
    out = (
        bins.join(
            bounds, on=[*keys, "bin"], how="left", nulls_equal=True, maintain_order="left_right"
        )
        .select(
            *keys,
            pl.col("bin").cast(pl.Int32),
            "lo",
            "hi",
            "n",
            "weight",
            pl.when(w > 0).then(pl.col("psum") / w).alias("mean_predicted"),
            pl.when(w > 0).then(pl.col("pos") / w).alias("observed_rate"),
        )
        .sort([*keys, "bin"], nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    return out.drop(ALL) if keys == [ALL] else out


def calibration_error(
    state: StateData, n_bins: int = 10, strategy: str = "uniform"
) -> pl.DataFrame:
    """Per group: ``ece`` (weight-averaged |observed − predicted|) and ``mce`` (largest)."""
    curve = calibration_curve(state, n_bins, strategy)
    gap = (pl.col("observed_rate") - pl.col("mean_predicted")).abs()
    total = pl.col("weight").sum()
    aggs = [
        pl.when(total > 0).then((gap * pl.col("weight")).sum() / total).alias("ece"),
        gap.max().alias("mce"),
    ]
    if state.keys:
        return (
            curve.group_by(state.keys, maintain_order=True)
            .agg(aggs)
            .sort(state.keys, nulls_last=False)
        )
    return curve.select(aggs)
