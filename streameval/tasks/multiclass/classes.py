"""Per-class statistics of a multiclass state: counts, one-vs-rest metrics, confusion matrix.

A class's one-vs-rest confusion counts come from the confusion rows: support ``t`` (actual),
predicted ``p`` and correct ``c``; then tp = c, fp = p − c, fn = t − c, tn = s − t − p + c.
Ratios use sklearn's ``zero_division=0``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import polars as pl

from ...errors import InputError
from ...metrics.declare import SCORES, Metric, bound, count
from ...metrics.groups import with_group_key
from ...metrics.ranking import ranking
from ...ordered import ORDERED
from ...spec import ALL
from ..binary.metrics import COUNTS
from .state import check_count

if TYPE_CHECKING:
    from ...states.data import StateData

Normalize = Literal["true", "pred", "all"] | None


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    return pl.when(den > 0).then(num / den).otherwise(0.0)


def class_values(state: StateData) -> pl.Series:
    """The classes as a Series (the label's type: string, integer, float or boolean)."""
    return pl.Series("class", list(state.spec.classes))


def weight_column(state: StateData) -> pl.Expr:
    """The weight of a state row: Σw, or the row count when unweighted."""
    return pl.col("w") if state.spec.weighted else pl.col("n").cast(pl.Float64)


def confusion_rows(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Confusion rows (keys, actual, predicted, _w) and the keys (a constant key when none).

    Classes found in the data with a list of score columns must, over all rows, be one per
    column: only then is it known which column is which class.
    """
    if state.spec.found and state.spec.scores:
        check_count(list(state.spec.classes), list(state.spec.scores), exact=True)
    lf, keys = with_group_key(state.table, state.keys)
    rows = lf.filter(pl.col("column").is_null()).select(
        *keys, "actual", "predicted", "n", weight_column(state).alias("_w")
    )
    return rows, keys


def class_counts(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Per group and class index ``k``: t, p, c (weights), s (group total), one-vs-rest counts.

    Every class of the spec appears for every group, with zeros when absent; ``t_n`` and
    ``p_n`` count rows (a class is present in a group when it has rows, as in sklearn, even
    if their weights are 0).
    """
    rows, keys = confusion_rows(state)
    groups = rows.select(keys).unique(maintain_order=True)
    index = pl.LazyFrame({"k": list(range(len(state.spec.classes)))}, schema={"k": pl.Int32})
    w = pl.col("_w")
    rows_n = pl.col("n").sum()
    t = rows.group_by(*keys, pl.col("actual").alias("k"), maintain_order=True).agg(
        w.sum().alias("t"), rows_n.alias("t_n")
    )
    p = rows.group_by(*keys, pl.col("predicted").alias("k"), maintain_order=True).agg(
        w.sum().alias("p"), rows_n.alias("p_n")
    )
    c = (
        rows.filter(pl.col("actual") == pl.col("predicted"))
        .group_by(*keys, pl.col("actual").alias("k"), maintain_order=True)
        .agg(w.sum().alias("c"))
    )
    out = groups.join(index, how="cross", maintain_order="left_right")
    for part in (t, p, c):
        out = out.join(
            part, on=[*keys, "k"], how="left", nulls_equal=True, maintain_order="left_right"
        )
    out = out.with_columns(pl.col("t", "p", "c", "t_n", "p_n").fill_null(0)).with_columns(
        pl.col("t").sum().over(keys).alias("s")
    )
    tp, t_, p_, s = pl.col("c"), pl.col("t"), pl.col("p"), pl.col("s")
    return out.with_columns(
        tp.alias("tp"),
        _snap(p_ - tp, s).alias("fp"),
        _snap(t_ - tp, s).alias("fn"),
        _snap(s - t_ - p_ + tp, s).alias("tn"),
    ), keys


def _snap(count: pl.Expr, total: pl.Expr) -> pl.Expr:
    """A count found by subtraction, 0 when within 1e-12 of the total weight.

    Sums of fractional weights taken in different orders round apart, so an empty cell can
    come out as ±1e-16·total, enough to turn a 0/0 ratio (0 by convention) into 1.
    """
    return pl.when(count.abs() > 1e-12 * total).then(count).otherwise(0)


def one_vs_rest(counts: pl.LazyFrame) -> pl.LazyFrame:
    """Per-class precision … fnr and jaccard from :func:`class_counts`."""
    tp, fp, fn, tn = (pl.col(c) for c in ("tp", "fp", "fn", "tn"))
    return counts.with_columns(
        _ratio(tp, tp + fp).alias("precision"),
        _ratio(tp, tp + fn).alias("recall"),
        _ratio(2 * tp, 2 * tp + fp + fn).alias("f1"),
        _ratio(tp, tp + fp + fn).alias("jaccard"),
        _ratio(tn, tn + fp).alias("specificity"),
        _ratio(tn, tn + fn).alias("npv"),
        _ratio(fp, fp + tn).alias("fpr"),
        _ratio(fn, fn + tp).alias("fnr"),
    )


def ovr_histogram(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Per group, class index ``k`` and bucket of p_k: one-vs-rest ``pos`` and ``neg``."""
    lf, keys = with_group_key(state.table, state.keys)
    w = weight_column(state)
    hist = (
        lf.filter(pl.col("column").is_not_null())
        .group_by(*keys, pl.col("column").alias("k"), "bucket", maintain_order=True)
        .agg(
            w.filter(pl.col("actual") == pl.col("column")).sum().alias("pos"),
            w.filter(pl.col("actual") != pl.col("column")).sum().alias("neg"),
        )
    )
    return hist, keys


def ovr_ranking(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Per group and class index ``k``: one-vs-rest AUC, its bound and average precision."""
    hist, keys = ovr_histogram(state)
    return ranking(hist, [*keys, "k"], exact=state.spec.exact), keys


#: The per-class table's columns (after the keys and ``class``): one-vs-rest counts and
#: metrics, then with class scores each class's AUC and average precision.
DECLARED = (
    count("support"),
    Metric("precision", direction="higher", interval="proportion", counts=COUNTS["precision"]),
    Metric("recall", direction="higher", interval="proportion", counts=COUNTS["recall"]),
    Metric("f1", direction="higher"),
    Metric("specificity", direction="higher", interval="proportion", counts=COUNTS["specificity"]),
    Metric("npv", direction="higher", interval="proportion", counts=COUNTS["npv"]),
    Metric("fpr", direction="lower", interval="proportion", counts=COUNTS["fpr"]),
    Metric("fnr", direction="lower", interval="proportion", counts=COUNTS["fnr"]),
    Metric("roc_auc", direction="higher", interval="auc", needs=SCORES),
    bound("roc_auc_error", "roc_auc", needs=SCORES),
    Metric("average_precision", direction="higher", needs=SCORES),
    bound("average_precision_error", "average_precision", needs=SCORES),
)
PER_CLASS = [m.name for m in DECLARED if not m.needs]
SCORE_COLUMNS = [m.name for m in DECLARED if m.needs]


def whole_counts(table: pl.DataFrame, columns: list[str], *, weighted: bool) -> pl.DataFrame:
    """``columns`` as Int64 when they are counts: unweighted, or sums of whole weights.

    >>> t = pl.DataFrame({"support": [2.0, 1.0]})
    >>> whole_counts(t, ["support"], weighted=True)["support"].to_list()
    [2, 1]
    >>> whole_counts(t / 4, ["support"], weighted=True)["support"].to_list()
    [0.5, 0.25]
    """
    present = [c for c in columns if c in table.columns]
    if not present:
        return table
    if weighted:
        whole = table.select(
            pl.all_horizontal(
                ((pl.col(c) % 1 == 0) & (pl.col(c).abs() < 2.0**53)).all() for c in present
            )
        )
        if not whole.item():
            return table
    return table.with_columns(pl.col(c).cast(pl.Int64) for c in present)


def confusion_matrix(
    state: StateData, normalize: Normalize = None, *, wide: bool = False
) -> pl.DataFrame:
    """Confusion matrix per group: long (keys, actual, predicted, count) or wide.

    ``count`` is Σw (the row count when unweighted); ``normalize`` divides by the actual
    class's total (``"true"``), the predicted class's (``"pred"``) or the group's (``"all"``),
    0 where that total is 0 (as sklearn). ``wide=True`` gives one column per predicted class.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 2, 2], "pred": [0, 2, 2, 1]})
    >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
    >>> st.confusion_matrix(wide=True)
    shape: (3, 4)
    ┌────────┬─────┬─────┬─────┐
    │ actual ┆ 0   ┆ 1   ┆ 2   │
    │ ---    ┆ --- ┆ --- ┆ --- │
    │ i64    ┆ f64 ┆ f64 ┆ f64 │
    ╞════════╪═════╪═════╪═════╡
    │ 0      ┆ 1.0 ┆ 0.0 ┆ 0.0 │
    │ 1      ┆ 0.0 ┆ 0.0 ┆ 1.0 │
    │ 2      ┆ 0.0 ┆ 1.0 ┆ 1.0 │
    └────────┴─────┴─────┴─────┘
    """
    if normalize not in (None, "true", "pred", "all"):
        raise InputError(
            f"expected normalize to be None, 'true', 'pred' or 'all', got {normalize!r}"
        )
    rows, keys = confusion_rows(state)
    k = len(state.spec.classes)
    index = pl.LazyFrame({"actual": range(k)}, schema={"actual": pl.Int32})
    cells = (
        rows.select(keys)
        .unique(maintain_order=True)
        .join(index, how="cross", maintain_order="left_right")
        .join(index.rename({"actual": "predicted"}), how="cross", maintain_order="left_right")
        .join(
            rows.group_by(*keys, "actual", "predicted", maintain_order=True).agg(
                pl.col("_w").sum().alias("count")
            ),
            on=[*keys, "actual", "predicted"],
            how="left",
            nulls_equal=True,
            maintain_order="left_right",
        )
        .with_columns(pl.col("count").fill_null(0.0))
    )
    if normalize is not None:
        over = {"true": [*keys, "actual"], "pred": [*keys, "predicted"], "all": keys}[normalize]
        total = pl.col("count").sum().over(over)
        cells = cells.with_columns(pl.when(total > 0).then(pl.col("count") / total).otherwise(0.0))
    # Order by class index (the classes' order, not their values'), then name the classes.
    values = class_values(state).to_list()
    long = (
        cells.sort([*keys, "actual", "predicted"], nulls_last=False)
        .with_columns(
            pl.col(side).replace_strict(range(k), values, return_dtype=None).alias(side)
            for side in ("actual", "predicted")
        )
        .select(*keys, "actual", "predicted", "count")
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    if wide:
        long = long.with_columns(pl.col("predicted").cast(pl.String)).pivot(
            on="predicted", index=[*keys, "actual"], values="count", sort_columns=False
        )
    return long.drop(ALL) if keys == [ALL] else long
