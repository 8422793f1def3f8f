"""Confidence intervals of proportions: Wilson's score interval and Clopper–Pearson's.

Both work on counts or on weighted sums (weights then act as frequency weights, as sklearn's
``sample_weight``; the Clopper–Pearson interval uses the continuous beta form). A proportion
with an empty denominator has a null interval.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from ..errors import InputError

METHODS = ("wilson", "clopper-pearson")


def check_level(level: float) -> float:
    """``level`` as a float in (0, 1), or an InputError.

    >>> check_level(0.9)
    0.9
    """
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise InputError(
            f"expected a confidence level strictly between 0 and 1, got {level!r}; "
            "hint: level=0.95 for 95% intervals"
        )
    return float(level)


def interval(
    x: np.ndarray, n: np.ndarray, method: str, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of ``x / n`` (NaN where ``n`` is 0 or missing).

    >>> lo, hi = interval(np.array([152.0]), np.array([183.0]), "clopper-pearson", 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.7683, 0.8819)
    >>> lo, hi = interval(np.array([0.0]), np.array([10.0]), "wilson", 0.95)
    >>> float(lo[0]), round(float(hi[0]), 4)
    (0.0, 0.2775)
    """
    from scipy import special

    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    ok = np.isfinite(n) & np.isfinite(x) & (n > 0)
    n_ = np.where(ok, n, 1.0)
    x_ = np.clip(np.where(ok, x, 0.0), 0.0, n_)
    alpha = 1.0 - level
    if method == "wilson":
        z = special.ndtri(1.0 - alpha / 2)  # (the normal quantile, without scipy.stats)
        p = x_ / n_
        denominator = 1.0 + z * z / n_
        centre = (p + z * z / (2 * n_)) / denominator
        half = z * np.sqrt(p * (1 - p) / n_ + z * z / (4 * n_ * n_)) / denominator
        lo, hi = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
        lo = np.where(x_ == 0, 0.0, lo)
        hi = np.where(x_ == n_, 1.0, hi)
    elif method == "clopper-pearson":
        from scipy import stats  # (0.7 s to import: loaded when this interval needs it)

        with np.errstate(invalid="ignore"):
            lo = np.where(
                x_ > 0, stats.beta.ppf(alpha / 2, np.maximum(x_, 1e-300), n_ - x_ + 1), 0.0
            )
            hi = np.where(
                x_ < n_, stats.beta.ppf(1 - alpha / 2, x_ + 1, np.maximum(n_ - x_, 1e-300)), 1.0
            )
    else:
        raise InputError(
            f"expected a proportion interval method among {list(METHODS)}, got {method!r}; "
            "hint: ci='wilson' (the default) or ci='clopper-pearson'"
        )
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def add_intervals(
    table: pl.DataFrame,
    proportions: Mapping[str, tuple[pl.Expr, pl.Expr]],
    method: str,
    level: float,
) -> pl.DataFrame:
    """``table`` with ``<metric>_lo`` and ``<metric>_hi`` for each metric present.

    ``proportions`` maps a metric to the expressions of its numerator and denominator over
    the table's columns. All groups are computed at once (NumPy over columns).
    """
    present = {m: ex for m, ex in proportions.items() if m in table.columns}
    if not present:
        return table
    parts = table.select(
        [e.cast(pl.Float64).alias(f"{m}#x") for m, (e, _) in present.items()]
        + [d.cast(pl.Float64).alias(f"{m}#n") for m, (_, d) in present.items()]
    )
    columns = []
    for m in present:
        lo, hi = interval(parts[f"{m}#x"].to_numpy(), parts[f"{m}#n"].to_numpy(), method, level)
        columns += [
            pl.Series(f"{m}_lo", lo).fill_nan(None),
            pl.Series(f"{m}_hi", hi).fill_nan(None),
        ]
    return table.with_columns(columns)
