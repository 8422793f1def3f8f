"""Operating points and areas of binary states, for every group at once.

The candidate thresholds of a group are its occupied buckets' lowest scores (the scores
themselves in exact mode) plus ``inf`` (nothing predicted positive): at each, the confusion
counts are exact. A criterion picks one per group:

- ``"youden"``: largest J = recall + specificity − 1 (= tpr − fpr);
- ``"f1"`` / ``"fbeta"``: largest F-beta (``beta=``);
- ``"cost"``: smallest expected cost ``cost_fn·π·fnr + cost_fp·(1 − π)·fpr`` for
  ``costs=(cost_fp, cost_fn)`` and prevalence π (``prevalence=``, default the group's own);
- ``"recall"``, ``"precision"``, ``"fpr"``: the threshold that reaches ``target`` with the
  most of the rest — the highest threshold with recall ≥ target; the lowest with
  precision ≥ target; the lowest with fpr ≤ target.

Ties go to the highest threshold. :func:`areas` gives per group the partial AUC with
McClish's correction (sklearn's ``roc_auc_score(max_fpr=)``), the PR curve's trapezoid area
(sklearn's ``auc(recall, precision)``), the precision–recall break-even point (linear
interpolation where P − R changes sign), and the KS statistic with its threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ...errors import InputError
from ...metrics.declare import Metric, bound
from ...metrics.groups import with_group_key
from ...ordered import ORDERED
from ...spec import ALL
from .costs import expected_cost
from .curves import points, pr_curve
from .metrics import metric_table

if TYPE_CHECKING:
    from ...states.data import StateData

CRITERIA = ("youden", "f1", "fbeta", "cost", "recall", "precision", "fpr")
#: The columns of :func:`areas` (after the keys).
AREAS = (
    Metric("partial_auc", direction="higher"),
    bound("partial_auc_error", "partial_auc"),
    Metric("pr_auc", direction="higher"),
    bound("pr_auc_error", "pr_auc"),
    Metric("break_even", direction="higher"),
    Metric("expected_cost", direction="lower"),
    Metric("ks", direction="higher"),
    bound("ks_error", "ks"),
    Metric("ks_threshold"),
)


def _rates() -> list[pl.Expr]:
    tp, fp, P, N = (pl.col(c) for c in ("tp", "fp", "_P", "_N"))
    return [
        pl.when(tp + fp > 0).then(tp / (tp + fp)).otherwise(0.0).alias("precision"),
        pl.when(P > 0).then(tp / P).alias("recall"),
        pl.when(N > 0).then(fp / N).alias("fpr"),
    ]


def operating_points(
    state: StateData,
    criterion: str,
    *,
    target: float | None = None,
    beta: float = 1.0,
    costs: tuple[float, float] = (1.0, 1.0),
    prevalence: float | None = None,
) -> pl.DataFrame:
    """One row per group: the chosen threshold, its criterion value and confusion counts.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p", precision="exact")
    >>> st.operating_point("youden").select("threshold", "value", "recall", "fpr").row(0)
    (0.7, 0.6666666666666666, 0.6666666666666666, 0.0)
    """
    order, feasible, value = _criterion(criterion, target, beta, costs, prevalence)
    lf, keys = points(state)
    tp, fp, fn, tn = (pl.col(c) for c in ("tp", "fp", "fn", "tn"))
    b2 = beta * beta
    cost_fp, cost_fn = costs
    total = tp + fp + tn + fn
    ranked = (
        lf.with_columns(*_rates())
        # Objectives equal up to rounding are ties (broken by the higher threshold).
        .with_columns(order.round_sig_figs(12).alias("_order"), value.alias("value"))
        .filter(feasible & pl.col("_order").is_not_null())
        .sort(
            [*keys, "_order", "threshold"],
            descending=[*([False] * len(keys)), True, True],
            nulls_last=False,
        )
        .group_by(keys, maintain_order=True)
        .first()
        .with_columns(
            pl.lit(criterion).alias("criterion"),
            pl.when(tp > 0)
            .then((1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp))
            .otherwise(0.0)
            .alias("f_beta"),
            pl.when(total > 0)
            .then((cost_fp * fp + cost_fn * fn) / total)
            .alias("cost_sensitive_error"),
        )
    )
    count = pl.Float64 if state.spec.weighted else pl.Int64
    out = (
        ranked.select(
            *keys,
            "criterion",
            "threshold",
            "value",
            *(pl.col(c).cast(count) for c in ("tp", "fp", "tn", "fn")),
            "precision",
            "recall",
            "fpr",
            "f_beta",
            "cost_sensitive_error",
        )
        .sort(keys, nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    return out.drop(ALL) if keys == [ALL] else out


def _criterion(
    criterion: str,
    target: float | None,
    beta: float,
    costs: tuple[float, float],
    prevalence: float | None,
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(order to maximise, feasibility, the criterion's value)."""
    recall, fpr, precision = pl.col("recall"), pl.col("fpr"), pl.col("precision")
    tp, fp, fn = pl.col("tp"), pl.col("fp"), pl.col("fn")
    both = (pl.col("_P") > 0) & (pl.col("_N") > 0)
    if criterion not in CRITERIA:
        raise InputError(
            f"expected criterion among {list(CRITERIA)}, got {criterion!r}; hint: "
            "'youden', 'f1', 'fbeta' (beta=), 'cost' (costs=), or a target of 'recall', "
            "'precision' or 'fpr' (target=)"
        )
    targeted = criterion in ("recall", "precision", "fpr")
    if targeted != (target is not None) or (target is not None and not 0 <= target <= 1):
        raise InputError(
            f"expected target= in [0, 1] with criterion {criterion!r} (and only with "
            f"'recall', 'precision' or 'fpr'), got target={target!r}"
        )
    if beta <= 0 or min(costs) < 0 or (prevalence is not None and not 0 <= prevalence <= 1):
        raise InputError(
            f"expected beta > 0, non-negative costs and a prevalence in [0, 1], got "
            f"beta={beta!r}, costs={costs!r}, prevalence={prevalence!r}"
        )
    if criterion == "youden":
        return recall - fpr, both, recall - fpr
    if criterion in ("f1", "fbeta"):
        b2 = 1.0 if criterion == "f1" else beta * beta
        f = pl.when(tp > 0).then((1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)).otherwise(0.0)
        return f, pl.col("_P") > 0, f
    if criterion == "cost":
        cost_fp, cost_fn = costs
        P, N = pl.col("_P"), pl.col("_N")
        pi = P / (P + N) if prevalence is None else pl.lit(prevalence)
        fnr = pl.when(P > 0).then(fn / P).otherwise(0.0)
        fpr_ = pl.when(N > 0).then(pl.col("fp") / N).otherwise(0.0)
        cost = cost_fn * pi * fnr + cost_fp * (1 - pi) * fpr_
        return -cost, P + N > 0, cost
    t = float(target)  # type: ignore[arg-type]
    threshold = pl.col("threshold")
    if criterion == "recall":
        return threshold, recall >= t, recall
    if criterion == "precision":
        return -threshold, (precision >= t) & (tp + fp > 0), precision
    return -threshold, fpr <= t, fpr


def areas(state: StateData, max_fpr: float | None = None) -> pl.DataFrame:
    """Per group: partial AUC (McClish), PR trapezoid area, break-even, KS, expected cost.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p", precision="exact")
    >>> st.areas(max_fpr=0.5).select("partial_auc", "pr_auc", "break_even", "ks").row(0)
    (0.8518518518518519, 0.9027777777777777, 0.6666666666666666, 0.6666666666666666)
    """
    if max_fpr is not None and not 0 < max_fpr <= 1:
        raise InputError(f"expected max_fpr in (0, 1], got {max_fpr!r}; hint: max_fpr=0.1")
    lf, keys = points(state)
    P, N = pl.col("_P"), pl.col("_N")
    x1 = pl.col("fp") / N
    y1 = pl.col("tp") / P
    roc = lf.with_columns(x1.alias("_x1"), y1.alias("_y1")).with_columns(
        pl.col("_x1").shift(1).over(keys).alias("_x0"),
        pl.col("_y1").shift(1).over(keys).alias("_y0"),
    )
    m = 1.0 if max_fpr is None else max_fpr
    x0, y0, xa, ya = pl.col("_x0"), pl.col("_y0"), pl.col("_x1"), pl.col("_y1")
    cut = y0 + (ya - y0) * (m - x0) / (xa - x0)
    segment = (
        pl.when(xa <= m)
        .then((xa - x0) * (y0 + ya) / 2)
        .when(x0 < m)
        .then((m - x0) * (y0 + cut) / 2)
        .otherwise(0.0)
    )
    # Inside a bucket the exact curve is a monotone path in the box of its segment: its area
    # differs from the segment's by at most half the box, or the box where max_fpr cuts it.
    box = (ya - y0) * (pl.min_horizontal(xa, m) - x0)
    segment_error = pl.when(xa <= m).then(box / 2).when(x0 < m).then(box).otherwise(0.0)
    partial = roc.group_by(keys, maintain_order=True).agg(
        segment.sum().alias("_area"),
        segment_error.sum().alias("_area_error"),
        P.first().alias("_P"),
        N.first().alias("_N"),
    )
    low = m * m / 2
    mcclish = 0.5 * (1 + (pl.col("_area") - low) / (m - low)) if m < 1 else pl.col("_area")
    stretch = 0.5 / (m - low) if m < 1 else 1.0
    bounded = 0.0 if state.spec.exact else 1.0
    both = (pl.col("_P") > 0) & (pl.col("_N") > 0)
    partial = partial.select(
        *keys,
        pl.when(both).then(mcclish).alias("partial_auc"),
        pl.when(both).then(pl.col("_area_error") * (stretch * bounded)).alias("partial_auc_error"),
    )
    ks = operating_points(state, "youden").select(
        *state.keys, pl.col("value").alias("ks"), pl.col("threshold").alias("ks_threshold")
    )
    ks = _with_ks_error(ks, lf, keys, state)
    # Every group of the state gets a row, also one whose weights are all 0 (no points).
    groups = with_group_key(state.table, state.keys)[0].select(keys).unique()
    pr_error = _pr_auc_error(lf, keys, bounded)
    out = (
        groups.join(partial, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        .join(_pr_areas(state), on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        .join(pr_error, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        .select(*keys, "partial_auc", "partial_auc_error", "pr_auc", "pr_auc_error", "break_even")
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    out = out.drop(ALL) if keys == [ALL] else out
    out = _attach(out, expected_cost(state), state.keys)
    out = _attach(out, ks, state.keys)
    return out.sort(state.keys, nulls_last=False) if state.keys else out


def _with_ks_error(
    ks: pl.DataFrame, points: pl.LazyFrame, keys: list[str], state: StateData
) -> pl.DataFrame:
    """``ks`` with ``ks_error`` after ``ks``: how far the exact KS may lie above it.

    The bucketed KS is the largest tpr − fpr over bucket edges, all exact thresholds, so
    it is at most the exact KS. A threshold inside bucket b has at most all of the bucket's
    positives and none of its negatives above it: tpr − fpr ≤ (A + P_b)/P − B/N, with A
    and B the weights above the bucket. The bound is the largest of these less the KS.
    """
    tp, P, N = pl.col("tp"), pl.col("_P"), pl.col("_N")
    above_fp = pl.col("fp").shift(1).over(keys).fill_null(0.0)
    best = (
        points.with_columns((tp / P - above_fp / N).alias("_j"))
        .group_by(keys, maintain_order=True)
        .agg(pl.col("_j").max().alias("_best"), P.first(), N.first())
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    best = best.drop(ALL) if keys == [ALL] else best
    joined = _attach(ks, best, state.keys)
    bounded = 0.0 if state.spec.exact else 1.0
    error = pl.max_horizontal(pl.col("_best") - pl.col("ks"), 0.0) * bounded
    both = (P > 0) & (N > 0) & pl.col("ks").is_not_null()
    return joined.select(
        *state.keys, "ks", pl.when(both).then(error).alias("ks_error"), "ks_threshold"
    )


def _pr_auc_error(lf: pl.LazyFrame, keys: list[str], bounded: float) -> pl.LazyFrame:
    """Per group: ``pr_auc_error``, how far the exact PR trapezoid area may lie from it.

    Between bucket b's point and the one above (A, B: the weights above b, the closing
    point when both are 0) the exact curve gains recall P_b/P through points whose
    precision lies in [A/(A + B + N_b), (A + P_b)/(A + B + P_b)]: its area there lies
    between P_b/P times those, the segment's is P_b/P times the mean of its ends.
    """
    tp, fp, P = pl.col("tp"), pl.col("fp"), pl.col("_P")
    tp0, fp0 = (pl.col(c).shift(1).over(keys) for c in ("tp", "fp"))
    p1 = tp / (tp + fp)
    p0 = pl.when(tp0 + fp0 > 0).then(tp0 / (tp0 + fp0)).otherwise(1.0)
    low = pl.when(tp0 + fp > 0).then(tp0 / (tp0 + fp)).otherwise(1.0)
    high = tp / (tp + fp0)
    width = (tp - tp0) / P
    mid = (p0 + p1) / 2
    segments = lf.with_columns(
        (width * (high - mid)).alias("_above"),
        (width * (mid - low)).alias("_below"),
        (tp0.is_not_null() & (tp > tp0)).alias("_gains"),
    ).filter(pl.col("_gains"))
    worst = pl.max_horizontal(pl.col("_above").sum(), pl.col("_below").sum())
    return segments.group_by(keys, maintain_order=True).agg((worst * bounded).alias("pr_auc_error"))


def _attach(table: pl.DataFrame, extra: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``table`` with ``extra``'s columns joined on the keys (null where a group has none)."""
    if keys:
        return table.join(extra, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
    if extra.height:
        return pl.concat([table, extra], how="horizontal")
    return table.with_columns(pl.lit(None, extra.schema[c]).alias(c) for c in extra.columns)


def _pr_areas(state: StateData) -> pl.LazyFrame:
    """Per group: ``pr_auc`` (trapezoid over recall) and ``break_even`` (P = R)."""
    curve = pr_curve(state)
    lf, keys = with_group_key(curve, state.keys)
    p, r = pl.col("precision"), pl.col("recall")
    p0, r0 = p.shift(1).over(keys), r.shift(1).over(keys)
    d, d0 = p - r, (p - r).shift(1).over(keys)
    crossing = (d >= 0) & ((d0 < 0) | d0.is_null())
    at = pl.when((d == 0) | d0.is_null()).then(p).otherwise(p0 + (p - p0) * d0 / (d0 - d))
    return lf.group_by(keys, maintain_order=True).agg(
        pl.when(r.is_not_null().all()).then(((r0 - r) * (p + p0) / 2).sum()).alias("pr_auc"),
        at.filter(crossing & r.is_not_null()).first().alias("break_even"),
    )


def cost_sensitive_error(
    state: StateData, costs: tuple[float, float], thresholds: list[float]
) -> pl.DataFrame:
    """Per group and threshold: the reference texts' cost-sensitive error rate.

    ``(cost_fp·FP + cost_fn·FN) / total`` for ``costs=(cost_fp, cost_fn)``: the cost matrix
    with zero cost on the diagonal. Null for a group of total weight 0.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.6, 0.4, 0.8]})
    >>> st = se.accumulate(df, label="y", score="p", precision="exact")
    >>> st.cost_sensitive_error((1.0, 5.0))["cost_sensitive_error"].item()
    1.5
    """
    cost_fp, cost_fn = costs
    if min(costs) < 0:
        raise InputError(f"expected non-negative costs (cost_fp, cost_fn), got {costs!r}")
    table = metric_table(state, thresholds)
    fp, fn = pl.col("fp").cast(pl.Float64), pl.col("fn").cast(pl.Float64)
    total = pl.sum_horizontal(pl.col("tp", "fp", "tn", "fn").cast(pl.Float64))
    error = pl.when(total > 0).then((cost_fp * fp + cost_fn * fn) / total)
    return table.select(*state.keys, "threshold", error.alias("cost_sensitive_error"))
