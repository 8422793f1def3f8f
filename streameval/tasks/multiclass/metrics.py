"""Multiclass metric table: confusion-matrix metrics and, with scores, losses and AUCs.

Definitions follow scikit-learn. Averages: ``macro`` over the classes present in the group
(as actual or predicted, sklearn's default ``labels``), ``micro`` from the pooled counts,
``weighted`` by support. ``f1_macro_harmonic`` is the reference texts' macro F1: the harmonic
mean of macro precision and macro recall. ``g_mean`` is the geometric mean of the recalls of
the classes present as actual. Kappa weights use the class index in ``classes`` (sklearn with
``labels=classes``). With scores: ``log_loss`` (labels = classes), ``brier`` (sum over
classes; halved for two classes, as sklearn), ``top_k_accuracy``, one-vs-rest AUCs (per
class where defined, then averaged) and one-vs-one AUCs (Hand & Till, over pairs of classes
present), each with its error bound in bucketed mode (the bounds averaged alike).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import polars as pl

from ...errors import InputError, caller_level
from ...metrics.declare import SCORES, Metric, Need, alias, bound, count, formulas
from ...metrics.select import select_metrics
from ...options import check_beta
from ...ordered import ORDERED
from ...spec import ALL
from .classes import class_counts, confusion_rows, one_vs_rest
from .pairs import score_aggregates

if TYPE_CHECKING:
    from ...states.data import StateData

S = pl.col("_s")


def _defined(expr: pl.Expr) -> pl.Expr:
    """Null for groups of total weight 0."""
    return pl.when(S > 0).then(expr)


def _kappa(observed: str, expected: str) -> Callable[[], pl.Expr]:
    def kappa() -> pl.Expr:
        return pl.when(pl.col(expected) > 0).then(1.0 - pl.col(observed) / pl.col(expected))

    return kappa


def accuracy() -> pl.Expr:
    """Share of weight on the diagonal."""
    return _defined(pl.col("_correct") / S)


def error_rate() -> pl.Expr:
    """1 − accuracy."""
    return _defined((S - pl.col("_correct")) / S)


def mcc() -> pl.Expr:
    """Multiclass Matthews correlation (sklearn's); 0 when undefined.

    A variance term ``S² − Σ p_k²`` is 0 when one class holds all predictions (or labels); with
    fractional weights its two sums round differently, so a remainder within 1e-12·S² (far
    above rounding, far below any real spread) counts as 0, not as a tiny divisor.
    """
    cov_tp = pl.col("_correct") * S - pl.col("_tp_dot")
    cov_pp, cov_tt = S * S - pl.col("_pp"), S * S - pl.col("_tt")
    tiny = 1e-12 * S * S
    defined = (cov_pp > tiny) & (cov_tt > tiny)
    return pl.when(defined).then(cov_tp / (cov_pp * cov_tt).sqrt()).otherwise(0.0)


def _micro(num: pl.Expr, den: pl.Expr) -> Callable[[], pl.Expr]:
    return lambda: pl.when(den > 0).then(num / den).otherwise(0.0)


def _fbeta(beta: float) -> pl.Expr:
    """A class's F-beta from its one-vs-rest counts (sklearn's; recall at β = ∞)."""
    tp, fp, fn = (pl.col(c) for c in ("tp", "fp", "fn"))
    if math.isinf(beta):
        return pl.col("recall")
    b2 = beta * beta
    den = b2 * (tp + fn) + (tp + fp)
    return pl.when(den > 0).then((1 + b2) * tp / den).otherwise(0.0)


def f1_macro_harmonic() -> pl.Expr:
    """Harmonic mean of macro precision and macro recall."""
    p, r = pl.col("precision_macro"), pl.col("recall_macro")
    return pl.when(p + r > 0).then(2 * p * r / (p + r)).otherwise(0.0)


def _mean(column: str) -> Callable[[], pl.Expr]:
    return lambda: pl.col(f"_{column}")


def _per_weight(column: str, scale: str | None = None) -> Callable[[], pl.Expr]:
    def metric() -> pl.Expr:
        ok = (S > 0) & (pl.col("_n_outside") == 0)
        value = pl.col(f"_{column}") / S
        return pl.when(ok).then(value if scale is None else value * pl.col(scale))

    return metric


def _averaged(
    metric: str, summary: dict[str, int] | None = None, trend: dict[str, int] | None = None
) -> tuple[Metric, ...]:
    """A metric's macro, micro and weighted averages (with their summary and trend places)."""
    correct = pl.col("_correct")
    micro_den = {"jaccard": 2 * S - correct}.get(metric, S)
    formulas = {
        "macro": _mean(f"{metric}_macro"),
        "micro": _micro(correct, micro_den),
        "weighted": _mean(f"{metric}_weighted"),
    }
    return tuple(
        Metric(
            f"{metric}_{avg}",
            formula,
            "confusion",
            direction="higher",
            summary=(summary or {}).get(avg, 0),
            trend=(trend or {}).get(avg, 0),
        )
        for avg, formula in formulas.items()
    )


PROBABILITIES: frozenset[Need] = frozenset({"scores", "probabilities"})
ERROR_RATE = Metric(
    "error_rate",
    error_rate,
    "confusion",
    direction="lower",
    interval="proportion",
    counts=lambda: (pl.col("_n") - pl.col("_x"), pl.col("_n")),
    noinfo="computed",
)
#: The multiclass metric table's columns, in order: the confusion matrix's metrics (stage
#: ``confusion``), then those of the class scores (stage ``scores``; with ``scores=`` only).
DECLARED = (
    count("n", summary=1),
    Metric(
        "accuracy",
        accuracy,
        "confusion",
        direction="higher",
        interval="proportion",
        counts=lambda: (pl.col("_x"), pl.col("_n")),
        noinfo="computed",
        summary=2,
        trend=1,
    ),
    ERROR_RATE,
    Metric(
        "balanced_accuracy",
        _mean("balanced_accuracy"),
        "confusion",
        direction="higher",
        noinfo="computed",
        summary=3,
        trend=2,
    ),
    Metric(
        "cohen_kappa",
        _kappa("_obs_0", "_exp_0"),
        "confusion",
        direction="higher",
        summary=6,
        trend=4,
    ),
    Metric("kappa_linear", _kappa("_obs_1", "_exp_1"), "confusion", direction="higher"),
    Metric("kappa_quadratic", _kappa("_obs_2", "_exp_2"), "confusion", direction="higher"),
    Metric("mcc", mcc, "confusion", direction="higher", summary=7),
    *_averaged("precision"),
    *_averaged("recall"),
    *_averaged("f1", summary={"macro": 4, "weighted": 5}, trend={"macro": 3}),
    *_averaged("fbeta"),
    *_averaged("jaccard"),
    Metric("f1_macro_harmonic", f1_macro_harmonic, "confusion", direction="higher"),
    Metric("g_mean", _mean("g_mean"), "confusion", direction="higher"),
    Metric("hamming_loss", error_rate, "confusion", direction="lower"),
    alias(ERROR_RATE, "zero_one_loss"),
    Metric(
        "log_loss",
        _per_weight("log_loss"),
        "scores",
        direction="lower",
        needs=PROBABILITIES,
        summary=8,
        trend=5,
    ),
    Metric(
        "brier",
        _per_weight("brier", "_brier_scale"),
        "scores",
        direction="lower",
        needs=PROBABILITIES,
    ),
    Metric(
        "hinge_loss",
        lambda: _defined(pl.col("_hinge") / S),
        "scores",
        direction="lower",
        needs=SCORES,
    ),
    Metric(
        "top_k_accuracy",
        lambda: _defined(pl.col("_top_k") / S),
        "scores",
        direction="higher",
        needs=SCORES,
        summary=9,
    ),
    *(
        metric
        for kind in ("ovr", "ovo")
        for avg in ("macro", "weighted")
        for metric in (
            Metric(
                f"roc_auc_{kind}_{avg}",
                _mean(f"{kind}_{avg}"),
                "scores",
                direction="higher",
                noinfo="half",
                needs=SCORES,
                summary=10 if (kind, avg) == ("ovr", "macro") else 0,
            ),
            bound(
                f"roc_auc_{kind}_{avg}_error",
                f"roc_auc_{kind}_{avg}",
                _mean(f"{kind}_{avg}_error"),
                stage="scores",
                needs=SCORES,
                summary=11 if (kind, avg) == ("ovr", "macro") else 0,
            ),
        )
    ),
)
METRICS = formulas(DECLARED, "confusion")
SCORE_METRICS = formulas(DECLARED, "scores")
COLUMNS = [m.name for m in DECLARED]


def _class_aggregates(state: StateData, beta: float) -> tuple[pl.LazyFrame, list[str]]:
    """Per group: totals, averaged per-class metrics (F-beta at ``beta``), kappa/MCC sums."""
    counts, keys = class_counts(state)
    per_class = one_vs_rest(counts).with_columns(_fbeta(beta).alias("fbeta"))
    t, p, k = pl.col("t"), pl.col("p"), pl.col("k")
    present = (pl.col("t_n") + pl.col("p_n")) > 0
    recall = pl.col("recall").filter(t > 0)

    def weighted(m: str) -> pl.Expr:
        return pl.when(t.sum() > 0).then((pl.col(m) * t).sum() / t.sum()).otherwise(0.0)

    aggs = [
        pl.col("s").first().alias("_s"),
        pl.col("c").sum().alias("_correct"),
        (t * p).sum().alias("_tp_dot"),
        (t * t).sum().alias("_tt"),
        (p * p).sum().alias("_pp"),
        recall.mean().alias("_balanced_accuracy"),
        pl.when(recall.min() > 0).then(recall.log().mean().exp()).otherwise(0.0).alias("_g_mean"),
    ]
    for m in ("precision", "recall", "f1", "fbeta", "jaccard"):
        aggs += [
            pl.col(m).filter(present).mean().fill_null(0.0).alias(f"_{m}_macro"),
            weighted(m).alias(f"_{m}_weighted"),
        ]
    grouped = per_class.group_by(keys, maintain_order=True).agg(aggs)
    # Kappa: observed disagreement from the cells, expected from t_i·p_j/s over class pairs.
    rows, _ = confusion_rows(state)
    gap = (pl.col("actual") - pl.col("predicted")).cast(pl.Float64).abs()
    weights = [(gap > 0).cast(pl.Float64), gap, gap * gap]
    observed = rows.group_by(keys, maintain_order=True).agg(
        [(w * pl.col("_w")).sum().alias(f"_obs_{i}") for i, w in enumerate(weights)]
    )
    pairs = counts.select(*keys, k.alias("i"), t).join(
        counts.select(*keys, k.alias("j"), p, "s"),
        on=keys,
        nulls_equal=True,
        maintain_order="left_right",
    )
    gap = (pl.col("i") - pl.col("j")).cast(pl.Float64).abs()
    weights = [(gap > 0).cast(pl.Float64), gap, gap * gap]
    expected = pairs.group_by(keys, maintain_order=True).agg(
        [(w * t * p / pl.col("s")).sum().alias(f"_exp_{i}") for i, w in enumerate(weights)]
    )
    out = grouped.join(observed, on=keys, nulls_equal=True, maintain_order="left_right").join(
        expected, on=keys, nulls_equal=True, maintain_order="left_right"
    )
    return out, keys


def metric_table(
    state: StateData,
    *,
    metrics: Sequence[str] | None = None,
    pairs: pl.DataFrame | None = None,
    beta: float = 1.0,
) -> pl.DataFrame:
    """Finalize a multiclass state into the metric table (one row per group).

    ``pairs``: the AUCs' pair sums computed from the rows (:mod:`streameval.kernels.classes`),
    for a state that holds its confusion rows only.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a"], "pred": ["a", "b", "a", "a"]})
    >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
    >>> st.metrics().select("n", "accuracy", "f1_macro", "mcc").row(0)
    (4, 0.75, 0.6, 0.6454972243679028)
    """
    available = {**METRICS, **(SCORE_METRICS if state.spec.scores else {})}
    names = select_metrics(metrics, list(available))
    out, keys = _class_aggregates(state, check_beta(beta))
    rows, _ = confusion_rows(state)
    out = out.join(
        rows.group_by(keys, maintain_order=True).agg(pl.col("n").sum()),
        on=keys,
        nulls_equal=True,
        maintain_order="left_right",
    )
    if state.spec.scores:
        scored = score_aggregates(state, keys, pairs)
        out = out.join(scored, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        halve = len(state.spec.classes) < 3  # sklearn halves the Brier score of two classes
        out = out.with_columns(pl.lit(0.5 if halve else 1.0).alias("_brier_scale"))
    needed = {*names, "precision_macro", "recall_macro"}
    table = (
        out.with_columns(
            [f().alias(n) for n, f in available.items() if n in needed and n != "f1_macro_harmonic"]
        )
        .with_columns(f1_macro_harmonic().alias("f1_macro_harmonic"))
        .sort(keys, nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    if state.spec.scores:
        _warn_about_scores(table, names, explicit=metrics is not None)
    if table.height and len(state.spec.classes) < 2:
        _warn_one_class(state, table, names)
    table = table.select(*keys, "n", *names)
    return table.drop(ALL) if keys == [ALL] else table


def _warn_one_class(state: StateData, table: pl.DataFrame, names: list[str]) -> None:
    """One warning when all the data holds one class: the metrics it leaves undefined."""
    undefined = [n for n in names if table[n].null_count() == table.height]
    if undefined:
        warnings.warn(
            f"only one class ({state.spec.classes[0]!r}) occurs in {state.spec.label!r}, so "
            f"{', '.join(undefined)} are null (undefined with one class); the other metrics "
            "follow scikit-learn (hint: pass classes=[...] if other classes exist)",
            stacklevel=caller_level(),
        )


def _warn_about_scores(table: pl.DataFrame, names: list[str], *, explicit: bool) -> None:
    outside = int(table["_n_outside"].sum())
    if outside and {"log_loss", "brier"} & set(names):
        groups = table.filter(pl.col("_n_outside") > 0).height
        if explicit:
            raise InputError(
                f"expected probabilities, but {outside} row(s) have scores outside [0, 1], so "
                "log_loss and brier are null; hint: pass probabilities"
            )
        # The wording (and count of group rows) of the binary warning, which evaluate sums
        # over the units it finalizes one by one.
        warnings.warn(
            f"log_loss and brier are null for {groups} group row(s) whose scores fall outside "
            f"[0, 1] ({outside} row(s)); they need probabilities (other metrics are computed)",
            stacklevel=caller_level(),
        )
    unnormalized = int(table["_n_unnormalized"].sum())
    if unnormalized and {"log_loss", "brier"} & set(names):
        warnings.warn(
            f"the scores of {unnormalized} row(s) do not sum to 1; log_loss and brier take them "
            "as they are (hint: pass probabilities)",
            stacklevel=caller_level(),
        )
