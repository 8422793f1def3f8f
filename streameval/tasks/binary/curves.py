"""ROC and precision–recall curves per group, as long tables, from the score histogram.

In exact mode the points are scikit-learn's ``roc_curve(drop_intermediate=False)`` and
``precision_recall_curve`` points; in bucketed mode they are the exact points at each
bucket's lowest score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ...bucketing import key_to_float
from ...metrics.groups import with_group_key
from ...ordered import ORDERED
from ...spec import ALL

if TYPE_CHECKING:
    from ...states.data import StateData


def _cumulative(state: StateData, descending: bool) -> tuple[pl.LazyFrame, list[str]]:
    """Occupied buckets with cumulative positive/negative weight from the top score down.

    The totals ``_P`` and ``_N`` are the cumulative sums' last values (as sklearn's
    ``tps[-1]``), not separate sums: fractional weights round differently in a sum taken in
    another order, which left ``_P − _tps`` at about 1e-16 where no positive remains (a
    false negative rate that never reached 0, a tpr ending at 0.9999999999999999). Taken
    from the same running sum, each complement is exactly 0 once nothing is left to add.
    """
    lf, keys = with_group_key(state.table, state.keys)
    pos, neg = pl.col("pos").cast(pl.Float64), pl.col("neg").cast(pl.Float64)
    lf = (
        lf.filter((pl.col("pos") > 0) | (pl.col("neg") > 0))
        .sort("bucket", descending=True)
        .with_columns(
            key_to_float(pl.col("bucket")).alias("threshold"),
            pos.cum_sum().over(keys).alias("_tps"),
            neg.cum_sum().over(keys).alias("_fps"),
        )
        # Within each group the frame is still in descending bucket order: last = total.
        .with_columns(
            pl.col("_tps").last().over(keys).alias("_P"),
            pl.col("_fps").last().over(keys).alias("_N"),
        )
    )
    if not descending:
        lf = lf.sort([*keys, "threshold"], nulls_last=False, maintain_order=True)
    return lf, keys


def _finish(lf: pl.LazyFrame, keys: list[str]) -> pl.DataFrame:
    out = lf.collect(engine="in-memory", optimizations=ORDERED)
    return out.drop(ALL) if keys == [ALL] else out


def roc_curve(state: StateData, *, drop_intermediate: bool = False) -> pl.DataFrame:
    """ROC points: keys, threshold (descending, first ``inf``), fpr, tpr.

    ``drop_intermediate`` drops collinear points as sklearn's ``roc_curve`` does (its
    default); the area is unchanged.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.accumulate(df, label="y", score="p", precision="exact").roc_curve()["tpr"].to_list()
    [0.0, 0.5, 0.5, 1.0, 1.0]
    """
    lf, keys = _cumulative(state, descending=True)
    if drop_intermediate:
        lf = _drop_intermediate(lf, keys, ["_fps", "_tps"])

    def ratio(num: str, den: str) -> pl.Expr:
        return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den))

    points = lf.select(*keys, "threshold", ratio("_fps", "_N").alias("fpr"),
                       ratio("_tps", "_P").alias("tpr"))  # fmt: skip
    start = (
        lf.group_by(keys, maintain_order=True)
        .agg(pl.col("_N").first(), pl.col("_P").first())
        .select(
            *keys,
            pl.lit(float("inf")).alias("threshold"),
            pl.when(pl.col("_N") > 0).then(0.0).alias("fpr"),
            pl.when(pl.col("_P") > 0).then(0.0).alias("tpr"),
        )
    )
    both = pl.concat([start.with_columns(pl.lit(0).alias("_o")), points.with_columns(
        pl.lit(1).alias("_o"))])  # fmt: skip
    ordered = both.sort([*keys, "_o", "threshold"], descending=[*([False] * len(keys)), False,
                        True], nulls_last=False).drop("_o")  # fmt: skip
    return _finish(ordered, keys)


def pr_curve(state: StateData) -> pl.DataFrame:
    """Precision–recall points: keys, threshold (ascending, last ``inf``), precision, recall.

    The last row of each group is sklearn's closing point (precision 1, recall 0); recall is
    null for a group without positives.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.accumulate(df, label="y", score="p", precision="exact").pr_curve()["precision"].to_list()
    [0.5, 0.6666666666666666, 0.5, 1.0, 1.0]
    """
    lf, keys = _cumulative(state, descending=False)
    points = lf.select(
        *keys,
        "threshold",
        (pl.col("_tps") / (pl.col("_tps") + pl.col("_fps"))).alias("precision"),
        pl.when(pl.col("_P") > 0).then(pl.col("_tps") / pl.col("_P")).alias("recall"),
        pl.lit(1).alias("_o"),
    )
    end = (
        lf.group_by(keys, maintain_order=True)
        .agg(pl.col("_P").first())
        .select(
            *keys,
            pl.lit(float("inf")).alias("threshold"),
            pl.lit(1.0).alias("precision"),
            pl.when(pl.col("_P") > 0).then(0.0).alias("recall"),
            pl.lit(2).alias("_o"),
        )
    )
    ordered = pl.concat([points, end]).sort([*keys, "_o", "threshold"], nulls_last=False)
    return _finish(ordered.drop("_o"), keys)


def threshold_curve(state: StateData) -> pl.DataFrame:
    """Precision, recall and F1 at each threshold: keys, threshold (ascending), the three.

    The thresholds of sklearn's ``precision_recall_curve`` (each distinct score in exact
    mode, each bucket's lowest score otherwise), predicted positive at ``score >= threshold``;
    F1 is 2·TP / (TP + FP + P), 0 where there is no positive, and recall null there.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.accumulate(df, label="y", score="p", precision="exact").threshold_curve()["f1"].to_list()
    [0.6666666666666666, 0.8, 0.5, 0.6666666666666666]
    """
    lf, keys = _cumulative(state, descending=False)
    tps, fps, P = pl.col("_tps"), pl.col("_fps"), pl.col("_P")
    points = lf.select(
        *keys,
        "threshold",
        (tps / (tps + fps)).alias("precision"),
        pl.when(P > 0).then(tps / P).alias("recall"),
        (2 * tps / (tps + fps + P)).alias("f1"),
    )
    return _finish(points, keys)


def _drop_intermediate(lf: pl.LazyFrame, keys: list[str], columns: list[str]) -> pl.LazyFrame:
    """A group's first and last points, and those where a column bends.

    sklearn's rule: a nonzero second difference of the cumulative counts, rounded as
    ``np.diff(x, 2)`` rounds it (the difference of the two first differences), so that with
    fractional weights the same points are kept.
    """
    index = pl.int_range(pl.len()).over(keys)
    last = pl.len().over(keys) - 1
    bends = [
        ((pl.col(c).shift(-1) - pl.col(c)) - (pl.col(c) - pl.col(c).shift(1))).over(keys) != 0
        for c in columns
    ]
    return lf.filter((index == 0) | (index == last) | pl.any_horizontal(bends).fill_null(True))


def det_curve(state: StateData, *, drop_intermediate: bool = False) -> pl.DataFrame:
    """Detection error tradeoff points: keys, threshold (ascending), fpr, fnr.

    As sklearn's ``det_curve``: from the highest threshold with no false positive to the
    first one with no false negative; groups with one class have no points.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.accumulate(df, label="y", score="p", precision="exact").det_curve()["fnr"].to_list()
    [0.0, 0.5, 0.5]
    """
    lf, keys = _cumulative(state, descending=True)
    start = (
        lf.group_by(keys, maintain_order=True)
        .agg(pl.col("_P").first(), pl.col("_N").first())
        .with_columns(
            pl.lit(float("inf")).alias("threshold"),
            pl.lit(0.0).alias("_tps"),
            pl.lit(0.0).alias("_fps"),
            pl.lit(0).alias("_o"),
        )
    )
    points = pl.concat(
        [start, lf.with_columns(pl.lit(1).alias("_o"))], how="diagonal_relaxed"
    ).sort([*keys, "_o", "threshold"], descending=[*([False] * len(keys)), False, True],
           nulls_last=False)  # fmt: skip
    if drop_intermediate:
        tps = pl.col("_tps")
        changes = ((tps.shift(-1) != tps) | (tps != tps.shift(1))).over(keys)
        index = pl.int_range(pl.len()).over(keys)
        points = points.filter(
            (index == 0) | (index == pl.len().over(keys) - 1) | changes.fill_null(True)
        )
    fps, tps = pl.col("_fps"), pl.col("_tps")
    no_fp = (fps == 0).cast(pl.Int32).cum_sum().over(keys)
    both = (pl.col("_P") > 0) & (pl.col("_N") > 0)
    from_last_without_fp = (no_fp == no_fp.max().over(keys)) | (fps > 0)
    up_to_first_without_fn = (tps < pl.col("_P")).shift(1, fill_value=True).over(keys)
    kept = points.filter(both & from_last_without_fp).filter(up_to_first_without_fn)
    out = kept.select(
        *keys,
        "threshold",
        (fps / pl.col("_N")).alias("fpr"),
        ((pl.col("_P") - tps) / pl.col("_P")).alias("fnr"),
    ).sort([*keys, "threshold"], nulls_last=False)
    return _finish(out, keys)


def points(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Per group, every candidate threshold (descending) with tp, fp, tn, fn, P, N."""
    lf, keys = _cumulative(state, descending=True)
    totals = lf.group_by(keys, maintain_order=True).agg(pl.col("_P").first(), pl.col("_N").first())
    start = totals.with_columns(
        pl.lit(float("inf")).alias("threshold"),
        pl.lit(0.0).alias("_tps"),
        pl.lit(0.0).alias("_fps"),
    )
    both = pl.concat(
        [start.with_columns(pl.lit(0).alias("_o")), lf.with_columns(pl.lit(1).alias("_o"))],
        how="diagonal_relaxed",
    )
    ordered = both.sort(
        [*keys, "_o", "threshold"],
        descending=[*([False] * len(keys)), False, True],
        nulls_last=False,
    )
    P, N = pl.col("_P"), pl.col("_N")
    return ordered.select(
        *keys,
        "threshold",
        pl.col("_tps").alias("tp"),
        pl.col("_fps").alias("fp"),
        (N - pl.col("_fps")).alias("tn"),
        (P - pl.col("_tps")).alias("fn"),
        P,
        N,
    ), keys
