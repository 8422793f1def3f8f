"""Binary metric table: ranking metrics from the score histogram, confusion metrics at thresholds.

Every metric is one function of per-group aggregate columns and one line in a registry;
all groups (and thresholds) are computed in one Polars query — no loop over groups.

Definitions follow scikit-learn: ties count ½ in ROC AUC, average precision is the step sum
Σ (Rₙ − Rₙ₋₁)·Pₙ, log loss clips p to [eps, 1 − eps], ratio metrics use ``zero_division=0``,
MCC is 0 when undefined. A metric undefined for a group (AUC with one class) is null.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import polars as pl

from ... import kernels
from ...bucketing import float_to_key_scalar, is_bucket_edge
from ...errors import InputError, caller_level
from ...kernels.collect import state_runs
from ...kernels.metrics import pair_scale, runs_grouped, tagged_grouped
from ...kernels.runs import Grouped, Runs, TaggedRuns
from ...metrics.declare import Metric, alias, bound, count, formulas
from ...metrics.groups import with_group_key
from ...options import check_beta
from ...ordered import ORDERED
from ...pairsums import ap_bound_terms, twice_pairs
from ...spec import ALL as ALL  # re-exported: the metric modules' group key
from .state import column_exprs

if TYPE_CHECKING:
    from ...spec import Spec
    from ...states.data import StateData

CHUNK_ROWS = 4_000_000

_TP, _FP, _TN, _FN = (pl.col(c) for c in ("tp", "fp", "tn", "fn"))
#: Each proportion's successes and trials (its score interval's), from the counts.
COUNTS = {
    "prevalence": lambda: (pl.col("positives"), pl.col("positives") + pl.col("negatives")),
    "accuracy": lambda: (_TP + _TN, _TP + _FP + _TN + _FN),
    "error_rate": lambda: (_FP + _FN, _TP + _FP + _TN + _FN),
    "precision": lambda: (_TP, _TP + _FP),
    "recall": lambda: (_TP, _TP + _FN),
    "specificity": lambda: (_TN, _TN + _FP),
    "npv": lambda: (_TN, _TN + _FN),
    "fpr": lambda: (_FP, _FP + _TN),
    "fnr": lambda: (_FN, _FN + _TP),
}

tp, fp, tn, fn = (pl.col(c).cast(pl.Float64) for c in ("tp", "fp", "tn", "fn"))
P, N = pl.col("positives").cast(pl.Float64), pl.col("negatives").cast(pl.Float64)


def _ratio(num: pl.Expr, den: pl.Expr, *, zero_division: float | None = 0.0) -> pl.Expr:
    """num/den, or ``zero_division`` (None → null) where den is 0."""
    return pl.when(den > 0).then(num / den).otherwise(pl.lit(zero_division, pl.Float64))


def prevalence() -> pl.Expr:
    """Share of positive weight."""
    return _ratio(P, P + N, zero_division=None)


# Pair sums use weights scaled by one power of two (exact), so no product overflows.
_P, _N = pl.col("_P"), pl.col("_N")
_BOTH = (P > 0) & (N > 0)


def roc_auc() -> pl.Expr:
    """Area under the ROC curve (ties ½); null with one class."""
    return pl.when(_BOTH).then(pl.col("_auc_num") / _P / _N)


def roc_auc_error() -> pl.Expr:
    """Bound on |bucketed − exact| AUC: ½·Σ_b P_b·N_b / (P·N); 0 in exact mode."""
    return pl.when(_BOTH).then(pl.col("_tie_pairs") / _P / _N * pl.col("_bound_factor"))


def average_precision() -> pl.Expr:
    """Step-sum average precision; null with no positives."""
    return pl.when(P > 0).then(pl.col("_ap_num") / _P)


def average_precision_error() -> pl.Expr:
    """Bound on |bucketed − exact| AP: max(Σ_b over_b, Σ_b under_b) / P; 0 in exact mode.

    Per bucket (:func:`streameval.pairsums.ap_bound_terms`): how far the orderings of its
    positives and negatives could move its term up (``_ap_over``) or down (``_ap_under``).
    """
    worst = pl.max_horizontal(pl.col("_ap_over"), pl.col("_ap_under"))
    return pl.when(P > 0).then(worst / _P * (2 * pl.col("_bound_factor")))


def _probability_mean(column: str) -> pl.Expr:
    ok = (pl.col("_n_outside") == 0) & (P + N > 0)
    return pl.when(ok).then(pl.col(column) / (P + N))


def log_loss() -> pl.Expr:
    """Weighted mean cross-entropy; null when scores leave [0, 1]."""
    return _probability_mean("_log_loss")


def brier() -> pl.Expr:
    """Weighted mean (p − y)²; null when scores leave [0, 1]."""
    return _probability_mean("_brier")


def hinge_loss() -> pl.Expr:
    """Weighted mean max(0, 1 − t·score), t = +1 for positives and −1 for negatives.

    scikit-learn's ``hinge_loss`` with the score as the decision function (a margin).
    """
    return pl.when(P + N > 0).then(pl.col("_hinge") / (P + N)).fill_nan(None)


def accuracy() -> pl.Expr:
    """(TP + TN) / total."""
    return _ratio(tp + tn, P + N, zero_division=None)


def error_rate() -> pl.Expr:
    """(FP + FN) / total."""
    return _ratio(fp + fn, P + N, zero_division=None)


def precision() -> pl.Expr:
    """TP / (TP + FP)."""
    return _ratio(tp, tp + fp)


def recall() -> pl.Expr:
    """TP / (TP + FN), also sensitivity and TPR."""
    return _ratio(tp, tp + fn)


def specificity() -> pl.Expr:
    """TN / (TN + FP), also TNR."""
    return _ratio(tn, tn + fp)


def npv() -> pl.Expr:
    """TN / (TN + FN)."""
    return _ratio(tn, tn + fn)


def fpr() -> pl.Expr:
    """FP / (FP + TN)."""
    return _ratio(fp, fp + tn)


def fnr() -> pl.Expr:
    """FN / (FN + TP)."""
    return _ratio(fn, fn + tp)


def f1() -> pl.Expr:
    """2TP / (2TP + FP + FN)."""
    return _ratio(2 * tp, 2 * tp + fp + fn)


def fbeta() -> pl.Expr:
    """(1 + β²)·TP / ((1 + β²)·TP + β²·FN + FP) at the table's ``beta`` (column ``_beta2``).

    β = 0 gives precision, β = ∞ recall (as scikit-learn's ``fbeta_score``).
    """
    b2 = pl.col("_beta2")
    general = _ratio((1 + b2) * tp, b2 * (tp + fn) + (tp + fp))
    return pl.when(b2.is_infinite()).then(recall()).otherwise(general)


def mcc() -> pl.Expr:
    """Matthews correlation (sklearn's covariance form); 0 when undefined.

    Every sum comes from the four counts, as sklearn's from the confusion matrix: a class
    never predicted then makes the covariance exactly 0 (the group totals, summed in
    another order, could leave a rounding residue).
    """
    pos, neg = tp + fn, tn + fp
    s = pos + neg
    cov_tp = (tp + tn) * s - (neg * (tn + fn) + pos * (fp + tp))
    cov_pp = s * s - ((tn + fn) ** 2 + (fp + tp) ** 2)
    cov_tt = s * s - (neg * neg + pos * pos)
    den = cov_tt * cov_pp
    return pl.when(den != 0).then(cov_tp / den.sqrt()).otherwise(0.0)


def cohen_kappa() -> pl.Expr:
    """Cohen's kappa; null when chance disagreement is 0 (sklearn gives NaN)."""
    chance = (tn + fn) * P + (fp + tp) * N
    return pl.when(chance > 0).then(1.0 - (fp + fn) * (P + N) / chance)


def balanced_accuracy() -> pl.Expr:
    """Mean recall over the classes present (sklearn's definition)."""
    sens = pl.when(P > 0).then(tp / P)
    spec = pl.when(N > 0).then(tn / N)
    return pl.mean_horizontal(sens, spec)


ERROR_RATE = Metric(
    "error_rate",
    error_rate,
    "confusion",
    direction="lower",
    interval="proportion",
    counts=COUNTS["error_rate"],
    noinfo="computed",
)
#: The binary metric table's columns, in order: counts, the ranking metrics of the score
#: histogram (stage ``ranking``), the confusion counts and metrics at each threshold
#: (stage ``confusion``), and the threshold.
DECLARED = (
    count("n", summary=1),
    count("positives", summary=2),
    count("negatives"),
    Metric(
        "prevalence",
        prevalence,
        "ranking",
        role="count",
        interval="proportion",
        counts=COUNTS["prevalence"],
        summary=3,
        trend=6,
    ),
    Metric(
        "roc_auc",
        roc_auc,
        "ranking",
        direction="higher",
        interval="auc",
        noinfo="half",
        summary=4,
        trend=1,
    ),
    bound("roc_auc_error", "roc_auc", roc_auc_error, stage="ranking", summary=5),
    Metric(
        "average_precision", average_precision, "ranking", direction="higher", summary=6, trend=2
    ),
    bound("average_precision_error", "average_precision", average_precision_error, stage="ranking"),
    Metric(
        "log_loss",
        log_loss,
        "ranking",
        direction="lower",
        noinfo="computed",
        needs=frozenset({"probabilities"}),
        summary=7,
    ),
    Metric(
        "brier",
        brier,
        "ranking",
        direction="lower",
        noinfo="computed",
        needs=frozenset({"probabilities"}),
    ),
    Metric("hinge_loss", hinge_loss, "ranking", direction="lower"),
    count("tp"),
    count("fp"),
    count("tn"),
    count("fn"),
    Metric(
        "accuracy",
        accuracy,
        "confusion",
        direction="higher",
        interval="proportion",
        counts=COUNTS["accuracy"],
        noinfo="computed",
        summary=11,
        trend=5,
    ),
    ERROR_RATE,
    alias(ERROR_RATE, "zero_one_loss"),
    Metric(
        "precision",
        precision,
        "confusion",
        direction="higher",
        interval="proportion",
        counts=COUNTS["precision"],
        summary=8,
        trend=3,
    ),
    Metric(
        "recall",
        recall,
        "confusion",
        direction="higher",
        interval="proportion",
        counts=COUNTS["recall"],
        summary=9,
        trend=4,
    ),
    Metric(
        "specificity",
        specificity,
        "confusion",
        direction="higher",
        interval="proportion",
        counts=COUNTS["specificity"],
    ),
    Metric(
        "npv", npv, "confusion", direction="higher", interval="proportion", counts=COUNTS["npv"]
    ),
    Metric("fpr", fpr, "confusion", direction="lower", interval="proportion", counts=COUNTS["fpr"]),
    Metric("fnr", fnr, "confusion", direction="lower", interval="proportion", counts=COUNTS["fnr"]),
    Metric("f1", f1, "confusion", direction="higher", summary=10),
    Metric("fbeta", fbeta, "confusion", direction="higher"),
    Metric("mcc", mcc, "confusion", direction="higher"),
    Metric("cohen_kappa", cohen_kappa, "confusion", direction="higher"),
    Metric(
        "balanced_accuracy",
        balanced_accuracy,
        "confusion",
        direction="higher",
        noinfo="computed",
    ),
    Metric("threshold", role="identifier", summary=12),
)
RANKING = formulas(DECLARED, "ranking")
CONFUSION = formulas(DECLARED, "confusion")
COLUMNS = [m.name for m in DECLARED]


def _pair_scale(table: pl.DataFrame) -> float:
    """A power of two that brings the largest bucket weight near 1 (multiplying is exact)."""
    largest = table.select(pl.max_horizontal(pl.col("pos").max(), pl.col("neg").max())).item()
    return 1.0 if largest is None else pair_scale(float(largest))


def as_thresholds(threshold: object) -> list[float]:
    """One threshold or several as a sorted list of distinct floats, or raise InputError.

    >>> as_thresholds(0.5), as_thresholds([0.7, 0.3, 0.7])
    ([0.5], [0.3, 0.7])
    """

    def number(t: object) -> bool:
        return isinstance(t, numbers.Real) and not isinstance(t, bool) and not math.isnan(t)

    if number(threshold):
        items: list[object] | None = [threshold]
    elif isinstance(threshold, str | bytes) or not isinstance(threshold, Iterable):
        items = None
    else:
        items = list(threshold)
    if not items or not all(number(t) for t in items):
        raise InputError(
            f"expected a threshold or a list of thresholds that are numbers, got {threshold!r}; "
            "hint: predicted positive means score >= threshold, e.g. threshold=0.5"
        )
    return sorted({float(t) for t in items})  # type: ignore[arg-type]


def check_thresholds(state: StateData, thresholds: Sequence[float]) -> None:
    """Raise when a threshold splits a bucket, so its confusion counts would not be exact."""
    spec = state.spec
    for t in thresholds:
        if not is_bucket_edge(t, spec.precision, spec.splits):
            raise InputError(
                f"expected thresholds on score bucket edges at precision {spec.precision}, but "
                f"{t!r} falls inside a bucket, so its confusion counts would not be exact; "
                f"hint: pass thresholds=[{t!r}] to accumulate (evaluate does this for you), "
                "or use precision='exact'"
            )


def metric_table(
    state: StateData, threshold: float | Sequence[float] = 0.5, beta: float = 1.0
) -> pl.DataFrame:
    """Finalize a binary state into the metric table (one row per group and threshold).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.6, 0.4, 0.8]})
    >>> t = se.accumulate(df, label="y", score="p", precision="exact").metrics()
    >>> t.select("n", "roc_auc", "tp", "fp", "accuracy", "f1").row(0)
    (4, 0.75, 1, 1, 0.5, 0.5)
    """
    return metric_table_variance(state, threshold, beta)[0]


def metric_table_variance(
    state: StateData,
    threshold: float | Sequence[float] = 0.5,
    beta: float = 1.0,
    variance: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """:func:`metric_table`, and with ``variance`` each group's DeLong variance of the AUC.

    The variance (the keys and ``_var``, null where undefined) comes from the compiled loops
    in the same pass as the table; None where they do not read the state (the caller then
    computes it from the state: :func:`streameval.stats.delong.delong`).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.6, 0.4, 0.8]})
    >>> state = se.accumulate(df, label="y", score="p", precision="exact")
    >>> table, var = metric_table_variance(state, variance=True)
    >>> round(var["_var"].item(), 6) if var is not None else "no compiled loops"
    0.125
    """
    thresholds = as_thresholds(threshold)
    check_thresholds(state, thresholds)
    if kernels.enabled():  # the state's rows as runs, read by the compiled loops
        coded = state.coded()
        grouped: pl.DataFrame | None
        if isinstance(coded, Grouped) and coded.thresholds == tuple(thresholds):
            grouped = coded.frame  # (aggregated already, with the variance: a rollup window)
        elif isinstance(coded, TaggedRuns):  # (several pooled states, tagged)
            grouped = tagged_grouped(coded, thresholds, variance)
        else:  # (a Grouped at other thresholds: the table's runs)
            runs = coded if isinstance(coded, Runs) else state_runs(state.table, state.spec)
            grouped = None if runs is None else runs_grouped(runs, state.spec, thresholds, variance)
        if grouped is not None:
            keys = list(state.spec.keys)
            table = grouped_metrics(grouped, state.spec, thresholds, beta)
            if not variance:
                return table, None
            undefined = pl.col("_var").fill_nan(None)
            if keys:
                return table, grouped.select(*keys, undefined)  # (a row a group)
            return table, grouped.select(pl.lit(0, pl.Int8).alias(ALL), undefined).head(1)
    scale = _pair_scale(state.table)
    parts = [
        _finalize(chunk, state.spec, thresholds, scale, beta)
        for chunk in _key_chunks(state.table, state.keys)
    ]
    return finish_rows(parts, state.keys), None


def finish_rows(parts: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """The metric table of finalized parts: sorted, warned about, ``_n_outside`` dropped."""
    out = pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0]
    out = out.sort([*keys, "threshold"], nulls_last=False)
    outside = out.filter(pl.col("_n_outside") > 0).height
    out = out.drop("_n_outside")
    if outside:
        warnings.warn(
            f"log_loss and brier are null for {outside} group row(s) whose scores fall outside "
            "[0, 1]; they need probabilities (other metrics are computed)",
            stacklevel=caller_level(),
        )
    return out


def _key_chunks(table: pl.DataFrame, keys: list[str]) -> list[pl.DataFrame]:
    """The state split by a hash of its keys into parts of about CHUNK_ROWS rows.

    No group spans two parts, so each is finalized on its own and the finalize step's sorts
    and windows never hold more than one part: memory stays near the state's own size.
    """
    count = table.height // CHUNK_ROWS + 1
    if count == 1 or not keys:
        return [table]
    part = (pl.struct(keys).hash() % count).alias("_part")
    hashed = table.with_columns(part)
    return [hashed.filter(pl.col("_part") == i).drop("_part") for i in range(count)]


def _finalize(
    table: pl.DataFrame, spec: Spec, thresholds: list[float], scale: float, beta: float
) -> pl.DataFrame:
    """Metric rows of every group of a state table (``_n_outside`` still attached)."""
    lf, keys = with_group_key(table, list(spec.keys))
    count_type = pl.Float64 if spec.weighted else pl.Int64
    pos, neg, bucket = pl.col("pos"), pl.col("neg"), pl.col("bucket")
    fpos, fneg = pos.cast(pl.Float64) * scale, neg.cast(pl.Float64) * scale
    cols = column_exprs(spec)
    # Sorting by bucket alone (one Int64 column) orders every group from the top score down,
    # and a window keeps frame order within its group: cumulative sums need no key sort.
    cpos, cneg = fpos.cum_sum(), fneg.cum_sum()
    ap_over, ap_under = ap_bound_terms(fpos, fneg, pl.col("_cpos"), pl.col("_cneg"))
    per_threshold = []
    for i, t in enumerate(thresholds):
        k = float_to_key_scalar(t)
        per_threshold += [
            pos.filter(bucket >= k).sum().cast(count_type).alias(f"_tp{i}"),
            neg.filter(bucket >= k).sum().cast(count_type).alias(f"_fp{i}"),
            neg.filter(bucket < k).sum().cast(count_type).alias(f"_tn{i}"),
            pos.filter(bucket < k).sum().cast(count_type).alias(f"_fn{i}"),
        ]
    grouped = (
        lf.sort("bucket", descending=True)
        .with_columns(cpos.over(keys).alias("_cpos"), cneg.over(keys).alias("_cneg"))
        .group_by(keys, maintain_order=True)
        .agg(
            cols["n"].sum().alias("n"),
            pos.sum().cast(count_type).alias("positives"),
            neg.sum().cast(count_type).alias("negatives"),
            fpos.sum().alias("_P"),
            fneg.sum().alias("_N"),
            (0.5 * twice_pairs(fpos, fneg, pl.col("_cpos") - fpos)).sum().alias("_auc_num"),
            (fpos * fneg).sum().alias("_tie_pairs"),
            (fpos * (pl.col("_cpos") / (pl.col("_cpos") + pl.col("_cneg"))))
            .filter(pos > 0)
            .sum()
            .alias("_ap_num"),
            ap_over.filter(pos > 0).sum().alias("_ap_over"),
            ap_under.filter(pos > 0).sum().alias("_ap_under"),
            cols["log_loss"].sum().alias("_log_loss"),
            cols["brier"].sum().alias("_brier"),
            (cols["hinge"].sum() if "hinge" in cols else pl.lit(None, pl.Float64)).alias("_hinge"),
            cols["n_outside"].sum().alias("_n_outside"),
            *per_threshold,
        )
    )
    return metric_rows(grouped, keys, spec, thresholds, beta)


def ranking_columns(grouped: pl.LazyFrame, exact: bool) -> pl.LazyFrame:
    """The :data:`RANKING` metrics of per-group aggregates (``_P``, ``_auc_num``, …)."""
    return grouped.with_columns(pl.lit(0.0 if exact else 0.5).alias("_bound_factor")).with_columns(
        [f().alias(name) for name, f in RANKING.items()]
    )


def metric_rows(
    grouped: pl.LazyFrame, keys: list[str], spec: Spec, thresholds: list[float], beta: float
) -> pl.DataFrame:
    """Metric rows from per-group aggregates (``_n_outside`` still attached), F-beta at ``beta``.

    ``grouped`` has the key columns, ``n``, ``positives``, ``negatives`` and the ``_``
    aggregates of :func:`_finalize` (also computed from sorted runs by
    :mod:`streameval.kernels.metrics`).
    """
    grouped = ranking_columns(grouped, spec.exact)
    long = pl.concat(
        [
            grouped.with_columns(
                pl.col(f"_tp{i}").alias("tp"),
                pl.col(f"_fp{i}").alias("fp"),
                pl.col(f"_tn{i}").alias("tn"),
                pl.col(f"_fn{i}").alias("fn"),
                pl.lit(t).alias("threshold"),
            )
            for i, t in enumerate(thresholds)
        ]
    ).with_columns(pl.lit(check_beta(beta) ** 2).alias("_beta2"))
    out = (
        long.with_columns([f().alias(name) for name, f in CONFUSION.items()])
        .select([*keys, *COLUMNS, "_n_outside"])
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    return out.drop(ALL) if keys == [ALL] else out


def runs_metrics(
    runs: Runs, spec: Spec, thresholds: list[float], beta: float = 1.0
) -> pl.DataFrame | None:
    """The metric table of unweighted runs, as ``State(spec, table).metrics(thresholds)``.

    None when :func:`runs_grouped` is None.
    """
    grouped = runs_grouped(runs, spec, thresholds)
    return None if grouped is None else grouped_metrics(grouped, spec, thresholds, beta)


def grouped_metrics(
    grouped: pl.DataFrame, spec: Spec, thresholds: list[float], beta: float = 1.0
) -> pl.DataFrame:
    """The metric table from grouped frames (:func:`aggregates`, :func:`grouped_frame`).

    Frames of several units may come concatenated: each row's metrics read that row alone.
    """
    keys = list(spec.keys)
    part = metric_rows(grouped.lazy(), keys or [ALL], spec, thresholds, beta)
    return finish_rows([part], keys).select(*keys, *COLUMNS)
