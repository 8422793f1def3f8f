"""The shared harness's regression part: chunked, weighted, tied inputs and sklearn's numbers."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn import metrics as skm
from sklearn.utils.stats import _weighted_percentile

from reference import per_group

EPS = float(np.finfo(np.float64).eps)
POWER = 1.5
ALPHA = 0.3


@st.composite
def regression_frames(draw: st.DrawFn, *, weighted: bool | None = None):
    """(DataFrame with g, y, f[, w], chunk boundaries, weighted flag)."""
    n = draw(st.integers(1, 40))
    n_groups = draw(st.integers(1, 3))
    low = draw(st.sampled_from([-3.0, 0.0, 0.5]))

    # Values within 1e-6 of 0 are 0: tiny ones overflow the deviances to inf/NaN and
    # underflow squares, in sklearn as here.
    def number(high: float) -> st.SearchStrategy[float]:
        return st.floats(low, high).map(lambda v: 0.0 if abs(v) < 1e-6 else v)

    pool = draw(st.lists(number(1e3), min_size=1, max_size=6))
    value = st.sampled_from(pool) | number(50.0)
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_groups - 1),
                value,
                value,
                st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]) | st.floats(1e-6, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    if weighted is None:
        weighted = draw(st.booleans())
    g, y, f, w = (list(c) for c in zip(*rows, strict=True))
    data: dict[str, Any] = {"g": g, "y": y, "f": f}
    if weighted:
        data["w"] = w
    df = pl.DataFrame(data, schema_overrides={"y": pl.Float64, "f": pl.Float64})
    key_type = draw(st.sampled_from([pl.Int64, pl.String]))
    df = df.with_columns(pl.col("g").cast(key_type))
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    return df, cuts, weighted


def _explained(num: float, den: float, constant: bool) -> float:
    """sklearn's force_finite when the denominator is zero in exact arithmetic."""
    if constant:
        return 1.0 if num == 0 else 0.0
    return 1 - num / den


def _metrics(y: np.ndarray, f: np.ndarray, w: np.ndarray | None) -> dict[str, Any]:
    sw = np.ones_like(y) if w is None else w
    e = f - y
    out: dict[str, Any] = {"n": len(y), "max_error": skm.max_error(y, f)}
    if sw.sum() == 0:
        return out | dict.fromkeys(
            ["mse", "mae", "r2", "median_ae", "residual_p90", "d2_pinball", "d2_tweedie"]
        )
    kept = sw > 0
    y_constant = np.ptp(y[kept]) == 0
    e_constant = np.ptp(e[kept]) == 0
    ss_res = float(np.sum(sw * e * e))
    ss_tot = float(np.sum(sw * (y - np.average(y, weights=sw)) ** 2))
    var_e = float(np.average((e - np.average(e, weights=sw)) ** 2, weights=sw))
    var_y = ss_tot / sw.sum()
    median_y = _weighted_percentile(y, sw, 50, average=True)
    d2_den = float(np.sum(sw * np.abs(y - median_y)))
    out |= {
        "mean_error": float(np.average(e, weights=sw)),
        "mse": skm.mean_squared_error(y, f, sample_weight=w),
        "rmse": skm.root_mean_squared_error(y, f, sample_weight=w),
        "mae": skm.mean_absolute_error(y, f, sample_weight=w),
        "median_ae": skm.median_absolute_error(y, f, sample_weight=w),
        "msle": skm.mean_squared_log_error(y, f, sample_weight=w)
        if min(y.min(), f.min()) > -1
        else None,
        "rmsle": skm.root_mean_squared_log_error(y, f, sample_weight=w)
        if min(y.min(), f.min()) > -1
        else None,
        "mape": skm.mean_absolute_percentage_error(y, f, sample_weight=w)
        if (np.abs(y) >= EPS).all()
        else None,
        "smape": float(
            np.average(
                np.divide(
                    2 * np.abs(e),
                    np.abs(y) + np.abs(f),
                    out=np.zeros_like(e),
                    where=(np.abs(y) + np.abs(f)) > 0,
                ),
                weights=sw,
            )
        ),
        "r2": None if len(y) < 2 else _explained(ss_res, ss_tot, y_constant),
        # A constant residual has variance 0 exactly (sklearn may get 1e-30 from rounding).
        "explained_variance": _explained(0.0 if e_constant else var_e, var_y, y_constant),
        "mean_poisson_deviance": skm.mean_poisson_deviance(y, f, sample_weight=w)
        if (y >= 0).all() and (f > 0).all()
        else None,
        "mean_gamma_deviance": skm.mean_gamma_deviance(y, f, sample_weight=w)
        if (y > 0).all() and (f > 0).all()
        else None,
        "mean_tweedie_deviance": skm.mean_tweedie_deviance(y, f, sample_weight=w, power=POWER)
        if (y >= 0).all() and (f > 0).all()
        else None,
        "mean_pinball_loss": skm.mean_pinball_loss(y, f, sample_weight=w, alpha=ALPHA),
        "d2_absolute_error": None
        if len(y) < 2
        else _explained(float(np.sum(sw * np.abs(e))), d2_den, d2_den == 0),
        "d2_pinball": None
        if len(y) < 2
        else skm.d2_pinball_score(y, f, sample_weight=w, alpha=ALPHA),
        # (sklearn's quotient for a constant label is −inf or NaN: null)
        "d2_tweedie": skm.d2_tweedie_score(y, f, sample_weight=w, power=POWER)
        if len(y) >= 2 and not y_constant and (y >= 0).all() and (f > 0).all()
        else None,
        "residual_p50": _weighted_percentile(np.abs(e), sw, 50, average=True),
        "residual_p90": _weighted_percentile(np.abs(e), sw, 90, average=True),
        "residual_p99": _weighted_percentile(np.abs(e), sw, 99, average=True),
    }
    if not y_constant and len(y) >= 2:
        assert np.isclose(out["r2"], skm.r2_score(y, f, sample_weight=w), rtol=1e-9)
        assert np.isclose(
            out["d2_absolute_error"], skm.d2_absolute_error_score(y, f, sample_weight=w)
        )
    return out


def regression_reference(df: pl.DataFrame, keys: list[str] = ["g"]) -> list[dict[str, Any]]:  # noqa: B006
    """sklearn's regression metrics per group, sorted like streameval's table."""

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        w = part["w"].to_numpy() if "w" in part.columns else None
        return [_metrics(part["y"].to_numpy(), part["f"].to_numpy(), w)]

    return per_group(df, keys, rows_of)
