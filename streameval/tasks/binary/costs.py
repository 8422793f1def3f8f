"""Cumulative gains / lift and cost curves of binary states, for every group at once.

**Gains.** Ranking examples by score, the top fraction q of the population (by weight)
captures ``gain`` of the positives; ``lift = gain / q`` and ``response`` is the positive rate
within the top q. Scores are not split, so the row for a target quantile q reports the
first threshold whose population fraction reaches q, and that fraction as ``population``.

**Cost curves** (the reference texts' cost curve): each ROC point (FPR, FNR) is the line
from (0, FPR) to (1, FNR) in (probability cost, normalized cost) coordinates; the lower
envelope of all lines is the cost curve, and the area under it the expected total cost over
all operating conditions. The envelope is made of the ROC convex hull's points: hull
neighbours (FPRᵢ, TPRᵢ), (FPRⱼ, TPRⱼ) meet at probability cost ΔFPR / (ΔFPR + ΔTPR). The
hull is found by removing, all groups at once, every point that does not turn right with
its neighbours until none is left to remove.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from ...errors import InputError
from ...ordered import ORDERED
from ...spec import ALL
from .curves import points

if TYPE_CHECKING:
    from ...states.data import StateData


def gains(state: StateData, quantiles: int | Sequence[float] = 10) -> pl.DataFrame:
    """Cumulative gains and lift per group at population quantiles (deciles by default).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [1, 0, 1, 0, 0, 1, 0, 0, 0, 0],
    ...                    "p": [i / 10 for i in range(10, 0, -1)]})
    >>> g = se.accumulate(df, label="y", score="p", precision="exact").gains(5)
    >>> g.select("quantile", "gain", "lift").rows()[:2]
    [(0.2, 0.3333333333333333, 1.6666666666666665), (0.4, 0.6666666666666666, 1.6666666666666665)]
    """
    qs = _quantiles(quantiles)
    lf, keys = points(state)
    total = pl.col("_P") + pl.col("_N")
    curve = (
        lf.filter(pl.col("threshold").is_finite())
        .with_columns(((pl.col("tp") + pl.col("fp")) / total).alias("population"))
        .filter(total > 0)
    )
    targets = (
        curve.select(keys)
        .unique()
        .join(
            pl.LazyFrame({"quantile": qs}, schema={"quantile": pl.Float64}),
            how="cross",
            maintain_order="left_right",
        )
    )
    # Rounding: a fraction 0.30000000000000004 reaches the quantile 0.3.
    matched = targets.sort([*keys, "quantile"]).join_asof(
        curve.with_columns((pl.col("population") + 1e-12).alias("_reach")).sort([*keys, "_reach"]),
        left_on="quantile",
        right_on="_reach",
        by=keys,
        strategy="forward",
        check_sortedness=False,  # sorted within each group, which is what the join needs
    )
    tp, fp, P = pl.col("tp"), pl.col("fp"), pl.col("_P")
    out = (
        matched.select(
            *keys,
            "quantile",
            "threshold",
            "population",
            pl.when(P > 0).then(tp / P).alias("gain"),
            pl.when(P > 0).then(tp / P / pl.col("population")).alias("lift"),
            (tp / (tp + fp)).alias("response"),
        )
        .sort([*keys, "quantile"], nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    return out.drop(ALL) if keys == [ALL] else out


def _quantiles(quantiles: int | Sequence[float]) -> list[float]:
    if isinstance(quantiles, int) and not isinstance(quantiles, bool):
        if quantiles < 1:
            raise InputError(f"expected quantiles ≥ 1, got {quantiles!r}; hint: 10 for deciles")
        return [(i + 1) / quantiles for i in range(quantiles)]
    values: list[object] = []
    if isinstance(quantiles, Sequence) and not isinstance(quantiles, str | bytes):
        values = list(quantiles)
    if not values or not all(isinstance(q, int | float) and 0 < q <= 1 for q in values):
        raise InputError(
            f"expected a number of quantiles or a list of fractions in (0, 1], got "
            f"{quantiles!r}; hint: quantiles=10 or [0.01, 0.05, 0.1]"
        )
    return sorted({float(q) for q in values if isinstance(q, int | float)})


def hull(state: StateData) -> tuple[pl.DataFrame, list[str]]:
    """The ROC convex hull per group: keys (or the constant key), fpr, tpr, threshold."""
    lf, keys = points(state)
    P, N = pl.col("_P"), pl.col("_N")
    current = (
        lf.filter((P > 0) & (N > 0))
        .with_columns((pl.col("fp") / N).alias("fpr"), (pl.col("tp") / P).alias("tpr"))
        .select(*keys, "threshold", "fpr", "tpr")
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    x, y = pl.col("fpr"), pl.col("tpr")
    while True:
        x0, y0 = x.shift(1).over(keys), y.shift(1).over(keys)
        x1, y1 = x.shift(-1).over(keys), y.shift(-1).over(keys)
        turn = (x - x0) * (y1 - y) - (y - y0) * (x1 - x)
        kept = current.filter(turn.is_null() | (turn < 0))
        if kept.height == current.height:
            return kept, keys
        current = kept


def cost_curve(state: StateData) -> pl.DataFrame:
    """The cost curve per group: (probability_cost, normalized_cost) points of the envelope.

    Each point carries the threshold of the ROC point whose line the envelope follows from
    there on (the last point: the line it ends on).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> st = se.accumulate(df, label="y", score="p", precision="exact")
    >>> st.cost_curve().rows()
    [(0.0, 0.0, 0.8), (0.5, 0.25, 0.35), (1.0, 0.0, 0.1)]
    """
    vertices, keys = hull(state)
    x, y = pl.col("fpr"), pl.col("tpr")
    dx, dy = x - x.shift(1).over(keys), y - y.shift(1).over(keys)
    at = dx / (dx + dy)  # where the previous vertex's line meets this one's
    before_fpr, before_fnr = x.shift(1).over(keys), 1 - y.shift(1).over(keys)
    index = pl.int_range(pl.len()).over(keys)
    lines = vertices.with_columns(index.alias("_k"))
    middle = lines.select(
        *keys,
        "_k",
        at.alias("probability_cost"),
        (before_fpr + (before_fnr - before_fpr) * at).alias("normalized_cost"),
        "threshold",
    ).filter(pl.col("_k") > 0)
    ends = lines.group_by(keys, maintain_order=True).agg(
        pl.col("threshold").first().alias("_first"), pl.col("threshold").last().alias("_last")
    )
    cost = pl.lit(0.0).alias("normalized_cost")
    start = ends.select(*keys, pl.lit(-1).alias("_k"), pl.lit(0.0).alias("probability_cost"),
                        cost, pl.col("_first").alias("threshold"))  # fmt: skip
    end = ends.select(*keys, pl.lit(1 << 62).alias("_k"), pl.lit(1.0).alias("probability_cost"),
                      cost, pl.col("_last").alias("threshold"))  # fmt: skip
    columns = [*keys, "_k", "probability_cost", "normalized_cost", "threshold"]
    points = pl.concat(
        [t.select(columns).with_columns(pl.col("_k").cast(pl.Int64)) for t in (start, middle, end)]
    )
    # Zero-length stretches (vertical or horizontal hull edges) leave repeated points: the
    # last one at each probability cost names the line followed from there.
    out = (
        points.sort([*keys, "_k"], nulls_last=False)
        .unique([*keys, "probability_cost"], keep="last", maintain_order=True)
        .drop("_k")
    )
    return out.drop(ALL) if keys == [ALL] else out


def expected_cost(state: StateData) -> pl.DataFrame:
    """Per group: ``expected_cost``, the area under the cost curve."""
    curve = cost_curve(state)
    keys = state.keys
    x, y = pl.col("probability_cost"), pl.col("normalized_cost")
    if keys:
        segment = (x - x.shift(1).over(keys)) * (y + y.shift(1).over(keys)) / 2
        return curve.group_by(keys, maintain_order=True).agg(segment.sum().alias("expected_cost"))
    segment = (x - x.shift(1)) * (y + y.shift(1)) / 2
    return curve.select(segment.sum().alias("expected_cost"))
