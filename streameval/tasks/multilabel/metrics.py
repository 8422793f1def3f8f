"""Multilabel metric table: a row per group, scikit-learn's multilabel metrics at its threshold.

Three finalize stages:

- ``rows``, means over rows of each row's value (:mod:`streameval.kernels.multilabel`):
  ``subset_accuracy`` (``accuracy_score``), ``hamming_loss``, the ``*_samples`` averages
  of precision, recall, F1 and Jaccard, ``label_ranking_average_precision``,
  ``coverage_error`` and ``label_ranking_loss``;
- ``labels``, from the per-label table (:mod:`.labels`): the micro averages (of the summed
  confusion counts), macro averages (the labels' mean) and weighted averages (by support)
  of precision, recall, F1 and Jaccard, ``zero_division=0``; and the macro and weighted
  averages of the labels' AUC and average precision as scikit-learn's ``roc_auc_score``
  and ``average_precision_score`` take them: the AUC averages are null where a label (with
  support, for the weighted one) has no AUC, and a label without a positive counts 0 in
  the average precision's (0 where no label has support). One difference: a group without
  any positive has a null weighted AUC, where scikit-learn returns 0 (and NaN for the macro
  and micro ones);
- ``pooled``: ``roc_auc_micro`` and ``average_precision_micro`` of every (row, label) pair
  pooled into one histogram (the latter 0 without a positive, as scikit-learn).

Each AUC and average precision has its bucketing bound, averaged as the metric is (a bound
of a mean is the mean of the bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from ...metrics.declare import Metric, bound, count, formulas
from ...metrics.groups import with_group_key
from ...metrics.ranking import ranking
from ...metrics.select import select_metrics
from ...ordered import ORDERED
from ...spec import ALL
from .labels import label_rows, rows_view

if TYPE_CHECKING:
    from ...spec import Spec
    from ...states.data import StateData

W = pl.col("weight")
TP, FP, FN, SUPPORT = pl.col("tp"), pl.col("fp"), pl.col("fn"), pl.col("support")


def _mean(column: str) -> pl.Expr:
    return pl.when(W > 0).then(pl.col(column) / W)


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    return pl.when(den > 0).then(num / den).otherwise(0.0)


def _weighted(value: pl.Expr) -> pl.Expr:
    """The labels' ``value`` averaged by support (0 without support: zero_division)."""
    support = SUPPORT.cast(pl.Float64)
    total = support.sum()
    return pl.when(total > 0).then((value * support).sum() / total).otherwise(0.0)


def _auc_mean(column: str) -> pl.Expr:
    """The labels' mean ``column`` (the AUC or its bound), null if a label has no AUC."""
    return pl.when(pl.col("roc_auc").null_count() == 0).then(pl.col(column).mean())


def _auc_weighted(column: str) -> pl.Expr:
    """``column`` averaged by support, null if a label with support has no AUC, or none has."""
    support = SUPPORT.cast(pl.Float64)
    undefined = (pl.col("roc_auc").is_null() & (support > 0)).any()
    total = support.sum()
    value = (pl.col(column).fill_null(0.0) * support).sum() / total
    return pl.when(~undefined & (total > 0)).then(value)


def _zero_if_none(column: str) -> pl.Expr:
    """A label's average precision (or its bound), 0 for a label without a positive."""
    return pl.col(column).fill_null(0.0)


def _rows(name: str, formula: pl.Expr, **facts: object) -> Metric:
    return Metric(name, lambda: formula, "rows", **facts)  # type: ignore[arg-type]


def _labels(name: str, formula: pl.Expr, **facts: object) -> Metric:
    return Metric(name, lambda: formula, "labels", **facts)  # type: ignore[arg-type]


def _auc_averages(**facts: Any) -> tuple[Metric, ...]:
    """The labels' AUC averaged (macro, then by support), with bounds."""
    return (
        _labels("roc_auc_macro", _auc_mean("roc_auc"), direction="higher", **facts),
        bound(
            "roc_auc_macro_error",
            "roc_auc_macro",
            lambda: _auc_mean("roc_auc_error"),
            stage="labels",
        ),
        _labels("roc_auc_weighted", _auc_weighted("roc_auc"), direction="higher"),
        bound(
            "roc_auc_weighted_error",
            "roc_auc_weighted",
            lambda: _auc_weighted("roc_auc_error"),
            stage="labels",
        ),
    )


def _ap_averages() -> tuple[Metric, ...]:
    """The labels' average precision averaged (macro, then by support), with bounds."""
    return (
        _labels(
            "average_precision_macro",
            _zero_if_none("average_precision").mean(),
            direction="higher",
        ),
        bound(
            "average_precision_macro_error",
            "average_precision_macro",
            lambda: _zero_if_none("average_precision_error").mean(),
            stage="labels",
        ),
        _labels(
            "average_precision_weighted",
            _weighted(_zero_if_none("average_precision")),
            direction="higher",
        ),
        bound(
            "average_precision_weighted_error",
            "average_precision_weighted",
            lambda: _weighted(_zero_if_none("average_precision_error")),
            stage="labels",
        ),
    )


#: The multilabel metric table's columns, in order.
DECLARED = (
    count("n", summary=1),
    _rows("subset_accuracy", _mean("exact_match"), direction="higher", summary=2, trend=2),
    _rows(
        "hamming_loss",
        pl.when(W > 0).then(pl.col("mismatches") / W / pl.col("_labels")),
        direction="lower",
        summary=3,
    ),
    _rows("precision_samples", _mean("sample_precision"), direction="higher"),
    _rows("recall_samples", _mean("sample_recall"), direction="higher"),
    _rows("f1_samples", _mean("sample_f1"), direction="higher", summary=4, trend=1),
    _rows("jaccard_samples", _mean("sample_jaccard"), direction="higher"),
    _labels("precision_micro", _ratio(TP.sum(), (TP + FP).sum()), direction="higher"),
    _labels("precision_macro", pl.col("precision").mean(), direction="higher"),
    _labels("precision_weighted", _weighted(pl.col("precision")), direction="higher"),
    _labels("recall_micro", _ratio(TP.sum(), (TP + FN).sum()), direction="higher"),
    _labels("recall_macro", pl.col("recall").mean(), direction="higher"),
    _labels("recall_weighted", _weighted(pl.col("recall")), direction="higher"),
    _labels(
        "f1_micro", _ratio(2 * TP.sum(), (2 * TP + FP + FN).sum()), direction="higher", summary=5
    ),
    _labels("f1_macro", pl.col("f1").mean(), direction="higher", summary=6),
    _labels("f1_weighted", _weighted(pl.col("f1")), direction="higher"),
    _labels("jaccard_micro", _ratio(TP.sum(), (TP + FP + FN).sum()), direction="higher"),
    _labels("jaccard_macro", pl.col("jaccard").mean(), direction="higher"),
    _labels("jaccard_weighted", _weighted(pl.col("jaccard")), direction="higher"),
    *_auc_averages(summary=7, trend=3),
    Metric("roc_auc_micro", lambda: pl.col("roc_auc"), "pooled", direction="higher"),
    bound("roc_auc_micro_error", "roc_auc_micro", lambda: pl.col("roc_auc_error"), stage="pooled"),
    *_ap_averages(),
    Metric(
        "average_precision_micro",
        lambda: _zero_if_none("average_precision"),
        "pooled",
        direction="higher",
    ),
    bound(
        "average_precision_micro_error",
        "average_precision_micro",
        lambda: _zero_if_none("average_precision_error"),
        stage="pooled",
    ),
    _rows("label_ranking_average_precision", _mean("lrap"), direction="higher", summary=8),
    _rows("coverage_error", _mean("coverage"), direction="lower"),
    _rows("label_ranking_loss", _mean("ranking_loss"), direction="lower"),
    Metric("threshold", role="identifier"),
)
COLUMNS = [m.name for m in DECLARED]


def stages(metrics: Sequence[str] | None) -> tuple[list[str], set[str]]:
    """The metric columns ``metrics=`` picks, and the finalize stages they need."""
    names = select_metrics(metrics, [c for c in COLUMNS if c not in ("n", "threshold")])
    stage = {m.name: m.stage for m in DECLARED}
    return names, {stage[n] for n in names}


def metric_table(state: StateData, metrics: Sequence[str] | None = None) -> pl.DataFrame:
    """Finalize a multilabel state into the metric table (a row per group).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"a": [1, 0, 1, 0], "b": [0, 0, 1, 1],
    ...                    "pa": [0.9, 0.2, 0.6, 0.4], "pb": [0.3, 0.1, 0.8, 0.4]})
    >>> st = se.accumulate(df, task="multilabel", label=["a", "b"], scores=["pa", "pb"])
    >>> st.metrics().select("subset_accuracy", "hamming_loss", "f1_samples", "f1_micro").row(0)
    (0.75, 0.125, 0.5, 0.8571428571428571)
    """
    _, needed = stages(metrics)
    keys = state.keys
    per_label = label_rows(state) if "labels" in needed else None
    pooled = None
    if "pooled" in needed:
        parts, grouped = with_group_key(state.table.filter(pl.col("part") == 1), keys)
        histogram = parts.group_by(*grouped, "bucket", maintain_order=True).agg(
            pl.col(c).sum().cast(pl.Float64) for c in ("pos", "neg")
        )
        pooled = ranking(histogram, grouped, exact=state.spec.exact).collect(
            engine="in-memory", optimizations=ORDERED
        )
        pooled = pooled.drop(ALL) if grouped == [ALL] else pooled
    spec = state.spec
    return assemble(rows_view(state), per_label, pooled, spec, metrics)


def assemble(
    rows: pl.DataFrame,
    per_label: pl.DataFrame | None,
    pooled: pl.DataFrame | None,
    spec: Spec,
    metrics: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The metric table of its three stages' inputs, a row per group of ``spec.keys``.

    ``rows``: per group, ``n`` and the rows' sums (the state's part 0); ``per_label``: per
    group and ``label_index``, the per-label columns (:func:`.labels.label_rows`);
    ``pooled``: per group, ``roc_auc``, ``average_precision`` and their bounds of every
    (row, label) pair pooled. Either of the last two may be None when ``metrics`` needs none
    of its stage.
    """
    names, _ = stages(metrics)
    keys = list(spec.keys)
    picked = {m.name for m in DECLARED if m.name in names}
    table, grouped = with_group_key(rows, keys)
    table = table.with_columns(pl.lit(len(spec.classes)).alias("_labels")).select(
        *grouped,
        "n",
        *(f().alias(n) for n, f in formulas(DECLARED, "rows").items() if n in picked),
    )
    labels = [(n, f) for n, f in formulas(DECLARED, "labels").items() if n in picked]
    if labels:
        assert per_label is not None
        lf, _ = with_group_key(per_label, keys)
        aggregated = lf.group_by(grouped, maintain_order=True).agg(f().alias(n) for n, f in labels)
        table = table.join(
            aggregated, on=grouped, how="left", nulls_equal=True, maintain_order="left_right"
        )
    pooling = [(n, f) for n, f in formulas(DECLARED, "pooled").items() if n in picked]
    if pooling:
        assert pooled is not None
        lf, _ = with_group_key(pooled, keys)
        ranked = lf.select(*grouped, *(f().alias(n) for n, f in pooling))
        table = table.join(
            ranked, on=grouped, how="left", nulls_equal=True, maintain_order="left_right"
        )
    out = (
        table.with_columns(pl.lit(spec.threshold).alias("threshold"))
        .sort(grouped, nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
        .select(*grouped, "n", *names, "threshold")
    )
    return out.drop(ALL) if grouped == [ALL] else out
