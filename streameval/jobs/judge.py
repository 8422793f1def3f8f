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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ..errors import InputError
from ..measure import declaration, kept_rows, measured, narrowed_metrics
from ..state import State, drift_table
from ..stats.compare import paired_moments
from ..stats.drift import Counted, Sorted
from .checkconfig import CheckConfig

MEASURED = ("value", "se", "n", "positives")
Array = npt.NDArray[Any]


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
        return current.join(renamed, how="cross", maintain_order="left_right")
    if every:
        return current.join(
            renamed, on=on, how="full", nulls_equal=True, coalesce=True, maintain_order="left_right"
        )
    return current.join(renamed, on=on, how="left", nulls_equal=True, maintain_order="left_right")


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
        rows.join(pair, on=slices, how="left", nulls_equal=True, maintain_order="left_right")
        if slices
        else rows.join(pair, how="cross", maintain_order="left_right")
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
    table = drift_table(
        state, baseline, check.bins, every=every, histogram=histogram, measures=[check.metric]
    )
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
    ``_bound`` (outside min/max) and ``_drop`` (excess > 0) verdicts. (Arithmetic on a few
    thousand rows per check and day: numpy's, with Polars' nulls, in one ``with_columns``.)
    """
    from scipy import special  # (not scipy.stats: 0.7 s to import; the same values)

    direction = declaration(kind, check.metric).direction
    v, b = _Floats.column(rows, "value"), _Floats.column(rows, "baseline")
    se_v, se_b = _Floats.column(rows, "se"), _Floats.column(rows, "baseline_se")
    n = rows.height
    cov = _Floats.column(rows, "_cov") if "_cov" in rows.columns else _Floats.constant(0.0, n)
    r = check.max_relative_drop or 0.0
    # the tolerance: absolute, or a share of the baseline's magnitude
    if check.max_relative_drop is not None:
        tolerance = b.map(lambda x: np.abs(x) * r)
    else:
        absolute = None if check.max_drop is None else float(check.max_drop)
        tolerance = _Floats.constant(absolute, n)
    with np.errstate(invalid="ignore", over="ignore"):
        if direction in ("higher", "lower"):
            # excess = worsening − tolerance = c·v + k·b, so Var = c²·Vv + k²·Vb + 2ck·Cov
            c = -1.0 if direction == "higher" else 1.0
            k = b.map(lambda x: -c - r * np.sign(x))
            variance = _Floats.of(
                lambda sv, sb, k_, cv: sv**2 + (k_ * sb) ** 2 + 2 * c * k_ * cv, se_v, se_b, k, cov
            )
            excess = _Floats.of(lambda x, y, t: c * x - c * y - t, v, b, tolerance)
        else:  # closest to zero: the magnitude's growth (no analytic variance)
            variance = _Floats.constant(None, n)
            excess = _Floats.of(lambda x, y, t: np.abs(x) - np.abs(y) - t, v, b, tolerance)
        sd_diff = _Floats.of(
            lambda sv, sb, cv: np.sqrt(_clip(sv**2 + sb**2 - 2 * cv)), se_v, se_b, cov
        )
        z = special.ndtri(1 - (check.significance or 0.05) / 2)  # (the normal quantile)
        difference = _Floats.of(lambda x, y: x - y, v, b)
        lo = _Floats.of(lambda x, y, s: x - y - z * s, v, b, sd_diff)
        hi = _Floats.of(lambda x, y, s: x - y + z * s, v, b, sd_diff)
        sd = variance.map(lambda x: np.sqrt(_clip(x)))
        # (Polars orders NaN above every number: a NaN excess is a drop, as there)
        drop = ~excess.null & ((excess.values > 0) | np.isnan(excess.values))
        columns = [
            difference.series("difference"), lo.series("difference_lo"),
            hi.series("difference_hi"), tolerance.series("tolerance"), excess.series("excess"),
            _outside(check).alias("_bound"), pl.Series("_drop", drop),
        ]  # fmt: skip
        if check.significance is None or check.baseline is None:
            p = np.full(n, np.nan)
        else:
            e, s = excess.nan(), sd.nan()
            with np.errstate(divide="ignore"):
                # a standard error of 0 (every row alike): the excess's sign decides
                zs = np.where(s > 0, e / s, np.where(e > 0, np.inf, -np.inf))
            p = np.where(np.isnan(e) | np.isnan(s), np.nan, special.ndtr(-zs))
    columns.append(pl.Series("p_value", p, pl.Float64, nan_to_null=True))
    return rows.with_columns(columns).drop("_cov", strict=False)


def screen(rows: pl.DataFrame, check: CheckConfig, also: Sequence[pl.Expr] = ()) -> pl.DataFrame:
    """The rows' statuses before the family's adjustment (null: to be judged).

    ``too_small``, ``undefined`` or ``no_baseline``; the p-values of rows not judged are
    dropped, so they stay out of the day's family. ``also``: more columns to add.
    """

    def below(name: str, limit: float) -> Array:
        column = _Floats.column(rows, name)
        return ~column.null & (column.values < limit)

    def null(name: str) -> Array:
        return rows[name].is_null().to_numpy()

    small = np.zeros(rows.height, bool)
    for limit, names in (
        (check.min_n, ("n", "baseline_n")),
        (check.min_positives, ("positives", "baseline_positives")),
    ):
        if limit:
            small |= below(names[0], limit)
            if check.baseline is not None:
                small |= below(names[1], limit)
    # (a score drift's baseline is a state: only its rows are known)
    missing = null("baseline_n" if check.drift else "baseline") & (check.baseline is not None)
    # (a score drift without a baseline has no value either: no_baseline, not undefined)
    undefined = null("value") & (~missing if check.drift else True)
    # with significance, a worsening without a standard error cannot be tested
    p = _Floats.column(rows, "p_value")
    untestable = ~missing & p.null & (check.significance is not None)
    bound = rows["_bound"].to_numpy()
    code = np.select(
        [null("n"), small, undefined | (untestable & ~bound), missing & ~bound],
        [1, 2, 3, 4],  # a slice of the baseline with no rows in the window: no data
        0,
    )
    p.null = p.null | (code != 0) | missing
    return rows.with_columns(
        pl.Series("status", _SCREENED[code].tolist(), pl.String), p.series("p_value"), *also
    )


#: :func:`screen`'s statuses by code (0: to be judged).
_SCREENED = np.array([None, "no_data", "too_small", "undefined", "no_baseline"], dtype=object)


def _clip(x: Array) -> Array:
    """``x`` clipped below at 0, NaN kept (Polars' ``clip(0.0)``)."""
    return np.where(x < 0, 0.0, x)


class _Floats:
    """A float column as numpy values and a null mask, for arithmetic that keeps the nulls."""

    def __init__(self, values: Array, null: Array) -> None:
        self.values, self.null = values, null

    @classmethod
    def column(cls, rows: pl.DataFrame, name: str) -> _Floats:
        """Column ``name`` of ``rows`` (as floats)."""
        column = rows[name].cast(pl.Float64)
        return cls(column.to_numpy(), column.is_null().to_numpy())

    @classmethod
    def constant(cls, value: float | None, n: int) -> _Floats:
        """``n`` rows of ``value`` (None: of null)."""
        return cls(np.full(n, np.nan if value is None else value), np.full(n, value is None))

    @classmethod
    def of(cls, f: Callable[..., Array], *columns: _Floats) -> _Floats:
        """``f`` of the columns' values, null where any of them is."""
        null = np.logical_or.reduce([c.null for c in columns])
        return cls(np.asarray(f(*(c.values for c in columns)), np.float64), null)

    def map(self, f: Callable[[Array], Array]) -> _Floats:
        """``f`` of the values, null where they are."""
        return _Floats.of(f, self)

    def nan(self) -> Array:
        """The values, NaN where null."""
        return np.where(self.null, np.nan, self.values)

    def series(self, name: str) -> pl.Series:
        """A Float64 column of the values, null where null (a NaN value stays NaN)."""
        return pl.Series(name, pa.array(self.values, mask=self.null, type=pa.float64()))


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
    # a reason for each row that did not pass: one that depends on the check alone (and on
    # whether the value is null) formatted once, the others (few: most rows pass) row by row
    alone = {
        f"{name}\0{status}\0{int(null)}": _reason(
            {"status": status, "value": None if null else 0.0}, c
        )
        for name, c in checks.items()
        for status in _CHECK_ALONE
        for null in (False, True)
    }
    null = pl.col("value").is_null().cast(pl.UInt8)
    key = pl.concat_str(pl.col("check"), status, null, separator="\0")
    out = rows.with_columns(
        status.alias("status"),
        dropped.fill_null(False).alias("_dropped"),
        key.replace_strict(alone, default=None, return_dtype=pl.String).alias("reason"),
    )
    each = out.select(pl.arg_where(~pl.col("status").is_in(["pass", *_CHECK_ALONE]))).to_series()
    if each.len():
        texts = [_reason(out.row(at, named=True), checks[out["check"][at]]) for at in each]
        out = out.with_columns(out["reason"].scatter(each, texts))
    return out.drop("_bound", "_drop", "_dropped")


#: The statuses whose reason depends on the check alone (and on whether the value is null).
_CHECK_ALONE = ("too_small", "no_baseline", "undefined")


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
