"""Judging one check at one day: a window's metric per slice against bounds and a baseline.

:func:`measure` turns a state into the check's rows: per slice, the metric's value, its
standard error (DeLong's for an AUC, the binomial one for a proportion whose counts the table
holds; null for the others), ``n`` and ``positives``. :func:`compare` puts a baseline's value
beside each row and measures the *worsening* (a drop for metrics where higher is better, a
rise where lower is, a growth of the magnitude where zero is) against the tolerance:
``excess = worsening − tolerance``. With ``significance``, ``p_value`` is the one-sided
p-value of ``excess ≤ 0`` (the worsening is within the tolerance) against ``excess > 0``, by
the normal approximation: independent samples add their variances; a champion on the same
rows subtracts the covariance of the two AUCs (DeLong's paired test). :func:`verdicts` gives
each row its status once the day's p-values are adjusted together.

Statuses: ``pass``; ``fail`` (an ``error`` check) or ``warn`` (a ``warn`` check) for a value
outside ``min``/``max`` or a worsening beyond the tolerance (significantly so, with
``significance``); ``too_small`` below ``min_n``/``min_positives`` (the slice or its
baseline); ``undefined`` when the value is null; ``no_baseline`` when a drop has no
baseline to be measured against (its bounds are still judged).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..measure import declaration, kept_rows, measured, narrowed_metrics
from ..state import State, drift_table
from ..stats.compare import paired_moments
from ..stats.drift import Counted, Sorted
from .checkconfig import CheckConfig

MEASURED = ("value", "se", "n", "positives")


def metric_table(state: State, checks: list[CheckConfig], kwargs: dict[str, Any]) -> pl.DataFrame:
    """The state's metric table with what ``checks`` need: their columns and intervals."""
    return narrowed_metrics(state, [c.metric for c in checks], kwargs)


def measure(
    table: pl.DataFrame, check: CheckConfig, kind: str, slices: list[str], model: str | None = None
) -> pl.DataFrame:
    """Per slice: the check's ``value``, ``se``, ``n`` and ``positives``.

    ``table`` is :func:`metric_table`'s; ``slices`` are its group keys. Rows are those of the
    check's threshold (a binary task's first by default), model (``model`` overrides it:
    the champion's) and ``where`` filter.
    """
    return measured(
        table,
        kind,
        check.metric,
        slices,
        threshold=check.threshold,
        model=model or check.model,
        where=check.where,
    )


def with_baseline(
    current: pl.DataFrame, baseline: pl.DataFrame | None, on: list[str], every: bool = False
) -> pl.DataFrame:
    """``current`` with the baseline's ``baseline``, ``baseline_se``, ``baseline_n``, etc.

    With ``every``, a slice of the baseline missing from ``current`` gets a row of its own
    (no value, no ``n``): a segment whose rows stopped coming is seen.
    """
    names = {"value": "baseline", "se": "baseline_se", "n": "baseline_n"}
    names["positives"] = "baseline_positives"
    if baseline is None:
        return current.with_columns(pl.lit(None, pl.Float64).alias(n) for n in names.values())
    renamed = baseline.select(*on, *(pl.col(c).alias(n) for c, n in names.items()))
    if not on:
        return current.join(renamed, how="cross")
    if every:
        return current.join(renamed, on=on, how="full", nulls_equal=True, coalesce=True)
    return current.join(renamed, on=on, how="left", nulls_equal=True)


def champion_rows(
    state: State, check: CheckConfig, table: pl.DataFrame, slices: list[str]
) -> pl.DataFrame:
    """A paired state's rows: the challenger (``model``) beside its champion, with ``_cov``.

    The covariance of the two AUCs on the same rows comes from the variance of their
    difference: Cov = (Var A + Var B − Var(A − B)) / 2.
    """
    kind = state.spec.kind
    current = measure(table, check, kind, slices)
    champion = measure(table, check, kind, slices, model=check.champion)
    rows = with_baseline(current.drop("model"), champion.drop("model"), slices)
    moments, keys = paired_moments(state)
    a, b = check.model, check.champion
    assert a is not None and b is not None  # (validated with the job file)
    flip = list(state.spec.scores).index(a) > list(state.spec.scores).index(b)
    pair = moments.filter(
        pl.col("model_a") == (b if flip else a), pl.col("model_b") == (a if flip else b)
    )
    pair = pair.select(*(keys if slices else []), (pl.col("_sd") ** 2).alias("_vd"))
    rows = (
        rows.join(pair, on=slices, how="left", nulls_equal=True)
        if slices
        else rows.join(pair, how="cross")
    )
    cov = (pl.col("se") ** 2 + pl.col("baseline_se") ** 2 - pl.col("_vd")) / 2
    return rows.with_columns(cov.alias("_cov"), pl.lit(a).alias("model")).drop("_vd")


def drift_rows(
    state: State,
    baseline: State | None,
    check: CheckConfig,
    every: bool,
    histogram: Callable[[State], Sorted | Counted] | None = None,
) -> pl.DataFrame:
    """Per slice (and model): the window's score drift from its baseline as ``value``.

    The columns are :func:`with_baseline`'s (``baseline_n``: the baseline's rows; a metric's
    baseline value, standard errors and positives are null). With ``every``, a baseline slice
    without rows in the window gets a row of its own (no ``n``): a segment whose rows stopped
    coming is seen. Without a baseline, every slice's value is null. The baseline joins on
    its own keys (a reference's: among the slices'). ``histogram``: as
    :func:`streameval.state.drift_table`'s.
    """
    table = drift_table(state, baseline, check.bins, every=every, histogram=histogram)
    models = [] if "model" in state.spec.keys or "model" not in table.columns else ["model"]
    table = kept_rows(table, model=check.model if models else None, where=check.where)
    missing = ("se", "positives", "baseline", "baseline_se", "baseline_positives")
    return table.select(
        *state.spec.keys,
        *models,
        pl.col(check.metric).alias("value"),
        pl.col("n").cast(pl.Float64),
        pl.col("baseline_n"),
        *(pl.lit(None, pl.Float64).alias(c) for c in missing),
    )


def bounded(rows: pl.DataFrame, check: CheckConfig) -> pl.DataFrame:
    """:func:`compare` for a score drift check: only its bounds are judged."""
    empty = ("difference", "difference_lo", "difference_hi", "tolerance", "excess", "p_value")
    return rows.with_columns(
        *(pl.lit(None, pl.Float64).alias(c) for c in empty),
        _outside(check).alias("_bound"),
        pl.lit(False).alias("_drop"),
    )


def _outside(check: CheckConfig) -> pl.Expr:
    """Whether the value is outside the check's ``min``/``max`` (False when null)."""
    v = pl.col("value")
    bound = pl.lit(False)
    if check.min is not None:
        bound = bound | (v < pl.lit(check.min, pl.Float64))
    if check.max is not None:
        bound = bound | (v > pl.lit(check.max, pl.Float64))
    return bound.fill_null(False)


def compare(rows: pl.DataFrame, check: CheckConfig, kind: str) -> pl.DataFrame:
    """The worsening, its interval, the raw verdicts and the one-sided p-value of each row.

    ``rows`` come from :func:`with_baseline` (or :func:`champion_rows`, with ``_cov``).
    Adds ``difference`` (value − baseline), ``difference_lo``/``_hi`` (two-sided, at
    1 − ``significance``, else 95%), ``tolerance``, ``excess``, ``p_value`` and the raw
    ``_bound`` (outside min/max) and ``_drop`` (excess > 0) verdicts.
    """
    from scipy import special  # (not scipy.stats: 0.7 s to import; the same values)

    direction = declaration(kind, check.metric).direction
    v, b = pl.col("value"), pl.col("baseline")
    if "_cov" not in rows.columns:
        rows = rows.with_columns(pl.lit(0.0).alias("_cov"))
    r = check.max_relative_drop or 0.0
    # the tolerance: absolute, or a share of the baseline's magnitude
    tolerance = b.abs() * r if check.max_relative_drop is not None else pl.lit(check.max_drop)
    se_v, se_b, cov = pl.col("se"), pl.col("baseline_se"), pl.col("_cov")
    if direction in ("higher", "lower"):
        # excess = worsening − tolerance = c·v + k·b, so Var = c²·Vv + k²·Vb + 2ck·Cov
        c = -1.0 if direction == "higher" else 1.0
        k = -c - r * b.sign()
        variance = se_v**2 + (k * se_b) ** 2 + 2 * c * k * cov
        excess = c * v - c * b - tolerance
    else:  # closest to zero: the magnitude's growth (no analytic variance)
        variance = pl.lit(None, pl.Float64)
        excess = v.abs() - b.abs() - tolerance
    sd_diff = (se_v**2 + se_b**2 - 2 * cov).clip(0.0).sqrt()
    z = special.ndtri(1 - (check.significance or 0.05) / 2)  # (the normal quantile)
    out = rows.with_columns(
        (v - b).alias("difference"),
        (v - b - z * sd_diff).alias("difference_lo"),
        (v - b + z * sd_diff).alias("difference_hi"),
        tolerance.cast(pl.Float64).alias("tolerance"),
        excess.alias("excess"),
        variance.clip(0.0).sqrt().alias("_sd"),
        _outside(check).alias("_bound"),
    ).with_columns((pl.col("excess") > 0).fill_null(False).alias("_drop"))
    if check.significance is None or check.baseline is None:
        return out.with_columns(pl.lit(None, pl.Float64).alias("p_value")).drop("_sd", "_cov")
    excess_np = out["excess"].to_numpy().astype(np.float64)
    sd_np = out["_sd"].to_numpy().astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        # a standard error of 0 (every row alike): the excess's sign decides
        zs = np.where(sd_np > 0, excess_np / sd_np, np.where(excess_np > 0, np.inf, -np.inf))
        p = np.where(np.isnan(excess_np) | np.isnan(sd_np), np.nan, special.ndtr(-zs))
    return out.with_columns(pl.Series("p_value", p).fill_nan(None)).drop("_sd", "_cov")


def screen(rows: pl.DataFrame, check: CheckConfig) -> pl.DataFrame:
    """The rows' statuses before the family's adjustment (null: to be judged).

    ``too_small``, ``undefined`` or ``no_baseline``; the p-values of rows not judged are
    dropped, so they stay out of the day's family.
    """
    small = pl.lit(False)
    if check.min_n:
        small = small | (pl.col("n") < check.min_n)
        if check.baseline is not None:
            small = small | (pl.col("baseline_n") < check.min_n)
    if check.min_positives:
        small = small | (pl.col("positives") < check.min_positives)
        if check.baseline is not None:
            small = small | (pl.col("baseline_positives") < check.min_positives)
    # (a score drift's baseline is a state: only its rows are known)
    base = pl.col("baseline_n" if check.drift else "baseline")
    missing = pl.lit(check.baseline is not None) & base.is_null()
    # (a score drift without a baseline has no value either: no_baseline, not undefined)
    undefined = pl.col("value").is_null() & (~missing if check.drift else pl.lit(True))
    # with significance, a worsening without a standard error cannot be tested
    untestable = pl.lit(check.significance is not None) & ~missing & pl.col("p_value").is_null()
    status = (
        pl.when(pl.col("n").is_null())  # a slice of the baseline with no rows in the window
        .then(pl.lit("no_data"))
        .when(small.fill_null(False))
        .then(pl.lit("too_small"))
        .when(undefined | (untestable & ~pl.col("_bound")))
        .then(pl.lit("undefined"))
        .when(missing & ~pl.col("_bound"))
        .then(pl.lit("no_baseline"))
    )
    out = rows.with_columns(status.alias("status"))
    return out.with_columns(
        pl.when(pl.col("status").is_null() & ~missing).then(pl.col("p_value")).alias("p_value")
    )


def verdicts(rows: pl.DataFrame, checks: dict[str, CheckConfig]) -> pl.DataFrame:
    """Final statuses and reasons, given ``p_adjusted`` (the day's adjusted p-values)."""
    level = pl.col("check").replace_strict(
        {n: c.significance for n, c in checks.items()}, default=None, return_dtype=pl.Float64
    )
    severity = pl.col("severity")
    significant = pl.when(level.is_null()).then(True).otherwise(pl.col("p_adjusted") <= level)
    dropped = pl.col("_drop") & significant
    failed = pl.col("_bound") | dropped.fill_null(False)
    verdict = pl.when(failed).then(
        pl.when(severity == "warn").then(pl.lit("warn")).otherwise(pl.lit("fail"))
    )
    status = (
        pl.when(pl.col("status").is_not_null())
        .then(pl.col("status"))
        .otherwise(verdict.otherwise(pl.lit("pass")))
    )
    out = rows.with_columns(
        status.alias("status"), dropped.fill_null(False).alias("_dropped")
    ).with_row_index("_row")
    # a reason for each row that did not pass (most pass: only those few are formatted, and
    # a reason that depends on the check alone once per check)
    shown = out.filter(pl.col("status") != "pass").with_columns(
        pl.col("value").is_null().alias("_null")
    )
    alike = pl.col("status").is_in(_CHECK_ALONE)
    kinds = ["check", "status", "_null"]
    once = shown.filter(alike).unique(kinds, keep="first", maintain_order=True)
    each = shown.filter(~alike)
    reasons = pl.concat(
        [
            shown.filter(alike)
            .select("_row", *kinds)
            .join(_reasons(once, checks, kinds), on=kinds, how="left", nulls_equal=True)
            .select("_row", "reason"),
            _reasons(each, checks, ["_row"]),
        ]
    )
    out = out.join(reasons, on="_row", how="left", maintain_order="left")
    return out.drop("_row", "_bound", "_drop", "_dropped")


#: The statuses whose reason depends on the check alone (and on whether the value is null).
_CHECK_ALONE = ("too_small", "no_baseline", "undefined")


def _reasons(rows: pl.DataFrame, checks: dict[str, CheckConfig], ids: list[str]) -> pl.DataFrame:
    """The ``ids`` of ``rows`` and each one's :func:`_reason`."""
    text = [_reason(r, checks[r["check"]]) for r in rows.iter_rows(named=True)]
    return rows.select(ids).with_columns(pl.Series("reason", text, pl.String))


def _reason(row: dict[str, Any], check: CheckConfig) -> str | None:
    """One line saying why a row is not ``pass``."""
    status, value = row["status"], row["value"]
    if status == "pass":
        return None
    if status == "too_small":
        return (
            f"fewer rows than min_n {check.min_n:g} or positives than min_positives "
            f"{check.min_positives:g}"
        )
    if status == "no_data":
        return f"no rows in the window; the {check.baseline} baseline has {row['baseline_n']}"
    if status == "undefined" and value is not None:
        return f"{check.metric} has no standard error here to test its drop with"
    if status == "undefined":
        return f"{check.metric} is undefined for this slice"
    if status == "no_baseline":
        return f"no {check.baseline} baseline for this slice"
    parts = []
    if check.min is not None and value < check.min:
        parts.append(f"{check.metric} {value:.6g} < min {check.min:g}")
    if check.max is not None and value > check.max:
        parts.append(f"{check.metric} {value:.6g} > max {check.max:g}")
    if row["_dropped"]:
        text = (
            f"worse than the {check.baseline} baseline {row['baseline']:.6g} by "
            f"{abs(row['difference']):.6g}, beyond the tolerance {row['tolerance']:.6g}"
        )
        if check.significance is not None and row["p_adjusted"] is not None:
            text += f" (adjusted p = {row['p_adjusted']:.3g} ≤ {check.significance:g})"
        parts.append(text)
    return "; ".join(parts)


def check_reference_keys(reference: State, by: list[str], check: CheckConfig) -> list[str]:
    """The keys a reference state's rows are joined on (its group keys, among the task's)."""
    keys = list(reference.spec.keys)
    extra = [k for k in keys if k not in by]
    if extra:
        raise InputError(
            f"check {check.name!r}: expected the reference state's group keys among the task's "
            f"{by}, got {keys}; hint: accumulate the reference with by= a subset of {by}"
        )
    return keys
