"""Fairness disparity of a binary state: selection rate, TPR and FPR per slice of a key.

A binary state keyed by a sensitive column (and by any others: strata, such as the day)
holds each slice's confusion counts at a threshold. :func:`disparity` compares each slice's
selection rate (demographic parity), true positive rate (equal opportunity) and false
positive rate (equalized odds, with the TPR) with a reference: the best slice of its stratum
(the highest selection rate and TPR, the lowest FPR), the stratum's overall rate, or a named
slice. :func:`fairness` summarises each stratum as fairlearn's ``*_difference`` and
``*_ratio`` functions do (``between_groups``: the largest difference between two slices and
the smallest ratio; ``to_overall``: against the overall rate).

Weights are frequency weights (scikit-learn's and fairlearn's ``sample_weight``). A rate
whose denominator is 0 (a TPR without positives) is null and left out of the summaries.
Intervals (``ci="wilson"`` or ``"clopper-pearson"``) of a slice's difference and ratio to a
reference slice are Newcombe's and Donner and Zou's: each rate's own interval, combined by
the method of variance estimates recovered (MOVER), the two slices' rows independent; the
best slice is chosen from the data, which the interval does not account for.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..tasks.binary.metrics import metric_table
from .proportions import METHODS, check_level, interval

if TYPE_CHECKING:
    from ..states.data import StateData

_TP, _FP = pl.col("tp"), pl.col("fp")
_P, _N = pl.col("positives"), pl.col("negatives")
#: Each rate's successes and trials, over the metric table's counts.
RATES: dict[str, tuple[pl.Expr, pl.Expr]] = {
    "selection_rate": (_TP + _FP, _P + _N),
    "tpr": (_TP, _P),
    "fpr": (_FP, _N),
}
#: Whether a rate's best slice has its highest value (else its lowest).
HIGHER_IS_BEST = {"selection_rate": True, "tpr": True, "fpr": False}
#: fairlearn's criteria and the rates each compares (the worst case of several).
CRITERIA = {
    "demographic_parity": ("selection_rate",),
    "equal_opportunity": ("tpr",),
    "equalized_odds": ("tpr", "fpr"),
}
SUMMARIES = ("between_groups", "to_overall")
_SLICE = "_slice"


def _rates(state: StateData, sensitive: str, threshold: float) -> tuple[pl.DataFrame, list[str]]:
    """Each slice's successes ``x``, trials ``n`` and rate, a row per stratum, slice and rate.

    ``state`` is binary (:meth:`streameval.State.disparity` checks it).
    """
    if sensitive not in state.keys:
        raise InputError(
            f"expected the sensitive column {sensitive!r} among the state's keys "
            f"{state.keys!r}; hint: accumulate with by=[..., {sensitive!r}]"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InputError(
            f"expected one threshold (a number), got {threshold!r}; hint: threshold=0.5"
        )
    with warnings.catch_warnings():  # (of columns not read here: log loss and Brier)
        warnings.filterwarnings("ignore", message="log_loss and brier are null")
        table = metric_table(state, float(threshold))
    strata = [k for k in state.keys if k != sensitive]
    parts = [
        table.select(
            *strata,
            pl.col(sensitive).alias(_SLICE),
            pl.lit(name).alias("metric"),
            x.cast(pl.Float64).alias("x"),
            n.cast(pl.Float64).alias("n"),
        )
        for name, (x, n) in RATES.items()
    ]
    long = pl.concat(parts).with_columns(
        pl.when(pl.col("n") > 0).then(pl.col("x") / pl.col("n")).alias("value")
    )
    return long, strata


def _references(long: pl.DataFrame, strata: list[str], reference: Any) -> pl.DataFrame:
    """Per stratum and rate: the reference's successes, trials and slice (null: overall)."""
    group = [*strata, "metric"]
    if reference == "overall":
        return long.group_by(group, maintain_order=True).agg(
            pl.col("x").sum().alias("_rx"),
            pl.col("n").sum().alias("_rn"),
            pl.lit(None, long.schema[_SLICE]).alias("reference_slice"),
        )
    if reference == "best":
        higher = pl.col("metric").replace_strict(HIGHER_IS_BEST, return_dtype=pl.Boolean)
        rank = pl.when(higher).then(-pl.col("value")).otherwise(pl.col("value"))
        chosen = long.filter(pl.col("value").is_not_null()).sort(
            [*group, rank, _SLICE], nulls_last=True
        )
    else:
        found = long[_SLICE].unique().to_list()
        spelt = [v for v in found if str(v) == str(reference)]  # (the command line's text)
        if reference not in found and len(spelt) == 1:
            reference = spelt[0]
        if reference not in found:
            shown = ", ".join(repr(v) for v in sorted(found, key=str)[:10])
            raise InputError(
                f"expected reference='best', 'overall' or a slice of the sensitive column, "
                f"got {reference!r}, which is not among its values ({shown}); hint: pass one of "
                "them, or reference='best'"
            )
        chosen = long.filter(pl.col(_SLICE).eq_missing(pl.lit(reference, long.schema[_SLICE])))
    return chosen.group_by(group, maintain_order=True).agg(
        pl.col("x").first().alias("_rx"),
        pl.col("n").first().alias("_rn"),
        pl.col(_SLICE).first().alias("reference_slice"),
    )


def _mover(
    rates: tuple[np.ndarray, np.ndarray], limits: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, ...]:
    """Newcombe's interval of p₁ − p₂ and Donner and Zou's of p₁ / p₂ from each rate's limits."""
    p1, p2 = rates
    l1, u1, l2, u2 = limits
    d = p1 - p2
    d_lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    d_hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        prod = p1 * p2
        lo_num = prod - np.sqrt(np.maximum(prod**2 - l1 * u2 * (2 * p1 - l1) * (2 * p2 - u2), 0))
        hi_num = prod + np.sqrt(np.maximum(prod**2 - u1 * l2 * (2 * p1 - u1) * (2 * p2 - l2), 0))
        r_lo = lo_num / (u2 * (2 * p2 - u2)) + 0.0  # (+0.0: no -0.0)
        r_hi = np.where(l2 > 0, hi_num / (l2 * (2 * p2 - l2)), np.inf)
    return d_lo, d_hi, r_lo, r_hi


def disparity(
    state: StateData,
    sensitive: str,
    *,
    reference: Any = "best",
    threshold: float = 0.5,
    ci: str | None = None,
    level: float = 0.95,
) -> pl.DataFrame:
    """Each slice's selection rate, TPR and FPR against a reference, a row per rate.

    See :meth:`streameval.State.disparity`.
    """
    if ci is not None and ci not in METHODS:
        raise InputError(
            f"expected ci to be one of {', '.join(METHODS)} or None, got {ci!r}; hint: ci='wilson'"
        )
    level = check_level(level)
    if ci is not None and reference == "overall":
        raise InputError(
            "expected a reference slice for intervals, got reference='overall': the overall "
            "rate holds the slice's own rows, so the two are not independent; hint: "
            "reference='best' or a slice's value"
        )
    long, strata = _rates(state, sensitive, threshold)
    refs = _references(long, strata, reference)
    out = long.join(
        refs, on=[*strata, "metric"], how="left", nulls_equal=True, maintain_order="left_right"
    ).with_columns(
        pl.when(pl.col("_rn") > 0).then(pl.col("_rx") / pl.col("_rn")).alias("reference_value")
    )
    value, ref = pl.col("value"), pl.col("reference_value")
    out = out.with_columns(
        (value - ref).alias("difference"),
        pl.when(ref != 0).then(value / ref).alias("ratio"),
    )
    columns = [*strata, pl.col(_SLICE).alias(sensitive), "metric", "value"]
    columns += [pl.col("n").alias("support"), "reference_slice", "reference_value"]
    columns += ["difference", "ratio"]
    if ci is not None:
        out = _intervals(out, ci, level)
        columns += ["difference_lo", "difference_hi", "ratio_lo", "ratio_hi"]
    rank = pl.col("metric").replace_strict(list(RATES), list(range(len(RATES))))
    return out.sort([*strata, rank, _SLICE], nulls_last=False).select(columns)


def _intervals(out: pl.DataFrame, ci: str, level: float) -> pl.DataFrame:
    """The difference's and the ratio's intervals (null for the reference slice itself)."""
    x, n = out["x"].to_numpy(), out["n"].to_numpy()
    rx, rn = (out[c].fill_null(np.nan).to_numpy() for c in ("_rx", "_rn"))
    l1, u1 = interval(x, n, ci, level)
    l2, u2 = interval(rx, rn, ci, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p2 = x / n, rx / rn
    bounds = _mover((p1, p2), (l1, u1, l2, u2))
    itself = out.select(pl.col(_SLICE).eq_missing(pl.col("reference_slice"))).to_series()
    keep = ~itself.to_numpy() & np.isfinite(p1) & np.isfinite(p2)
    names = ("difference_lo", "difference_hi", "ratio_lo", "ratio_hi")
    series = []
    for name, b in zip(names, bounds, strict=True):  # (a ratio's upper bound may be inf)
        defined = keep & (p2 > 0) if name.startswith("ratio") else keep
        series.append(pl.Series(name, np.where(defined, b, np.nan)).fill_nan(None))
    return out.with_columns(series)


def fairness(
    state: StateData, sensitive: str, *, method: str = "between_groups", threshold: float = 0.5
) -> pl.DataFrame:
    """The disparity summaries of fairlearn per stratum: :meth:`streameval.State.fairness`."""
    if method not in SUMMARIES:
        raise InputError(
            f"expected method to be one of {', '.join(SUMMARIES)}, got {method!r}; "
            "hint: method='between_groups' (fairlearn's default)"
        )
    long, strata = _rates(state, sensitive, threshold)
    group = [*strata, "metric"]
    value = pl.col("value")
    if method == "between_groups":
        low, high = value.min(), value.max()
        summary = long.group_by(group, maintain_order=True).agg(
            (high - low).alias("difference"),
            pl.when(high > 0).then(low / high).alias("ratio"),
        )
    else:
        overall = pl.when(pl.col("n").sum() > 0).then(pl.col("x").sum() / pl.col("n").sum())
        with_overall = long.with_columns(overall.over(group).alias("_o"))
        o = pl.col("_o")
        ratio = pl.min_horizontal(value / o, o / value).fill_nan(None)
        summary = with_overall.group_by(group, maintain_order=True).agg(
            (value - o).abs().max().alias("difference"),
            pl.when(o.first() > 0)
            .then(pl.when(value > 0).then(ratio).when(value == 0).then(0.0).min())
            .alias("ratio"),
        )
    return _criteria(summary, strata)


def _criteria(summary: pl.DataFrame, strata: list[str]) -> pl.DataFrame:
    """The criteria's columns from the rates' summaries (equalized odds: the worse of two)."""
    keyed = summary if strata else summary.with_columns(pl.lit(0).alias("_all"))
    keys = strata or ["_all"]
    exprs = []
    for criterion, rates in CRITERIA.items():
        mine = pl.col("metric").is_in(list(rates))
        difference, ratio = pl.col("difference").filter(mine), pl.col("ratio").filter(mine)
        exprs += [  # (an undefined rate's summary leaves its criterion's undefined)
            pl.when(difference.null_count() == 0)
            .then(difference.max())
            .alias(f"{criterion}_difference"),
            pl.when(ratio.null_count() == 0).then(ratio.min()).alias(f"{criterion}_ratio"),
        ]
    out = keyed.group_by(keys, maintain_order=True).agg(exprs).sort(keys, nulls_last=False)
    return out if strata else out.drop("_all")
