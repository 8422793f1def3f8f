"""Regression metric table: error moments, losses, R², deviances and quantiles per group.

Definitions follow scikit-learn (``mean_squared_error`` … ``d2_absolute_error_score``), with
e = ŷ − y: ``mean_error`` is the bias Σw·e/Σw. MAPE and SMAPE are fractions (the reference
texts multiply by 100 %): MAPE = mean |e|/max(|y|, eps) as sklearn, SMAPE = mean
2|e|/(|y| + |ŷ|), 0 where both are 0. Quantiles (``median_ae``, ``residual_p50/_p90/_p99``
of |e|, and the median of y inside ``d2_absolute_error``) are sklearn's weighted percentile
with averaging (``np.median`` when unweighted). R² and explained variance follow sklearn's
``force_finite``: 1 for a perfect fit of a constant label, else 0 when the label's variance
is zero (below float64 resolution). A metric whose domain a row violates (MSLE: values ≤ −1;
MAPE: |y| < eps; Poisson, gamma, Tweedie deviances: sklearn's limits) is null for its group
with a warning, or an error when asked for by name. Groups of total weight 0 are null.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import polars as pl

from ...bucketing import EPS
from ...errors import DomainWarning, InputError, caller_level
from ...metrics.declare import Metric, bound, count, formulas
from ...metrics.groups import with_group_key
from ...metrics.select import select_metrics
from ...options import check_alpha as check_alpha  # re-exported
from ...ordered import ORDERED
from ...spec import ALL
from .histograms import QUANTILES, aggregates

if TYPE_CHECKING:
    from ...states.data import StateData


W, N = pl.col("_W"), pl.col("n")


def _mean(total: str, domain: str | None = None) -> pl.Expr:
    ok = W > 0 if domain is None else (W > 0) & (pl.col(domain) == 0)
    return pl.when(ok).then(pl.col(total) / W)


def _explained(
    num: pl.Expr, den: pl.Expr, num_zero: pl.Expr, den_zero: pl.Expr, *, min_rows: int = 2
) -> pl.Expr:
    """1 − num/den with sklearn's force_finite (den zero: 1 if num is 0, else 0).

    ``*_zero`` are the levels at or below which a sum of squares is zero to float64 precision.
    """
    return (
        pl.when((min_rows > N) | (W <= 0))
        .then(None)
        .when(den <= den_zero)
        .then(pl.when(num <= num_zero).then(1.0).otherwise(0.0))
        .otherwise(1.0 - num / den)
    )


def mean_error() -> pl.Expr:
    """Bias: Σw·(ŷ − y) / Σw."""
    return _mean("_se")


def mse() -> pl.Expr:
    """Mean squared error."""
    return _mean("_sse")


def rmse() -> pl.Expr:
    """Root mean squared error."""
    return mse().sqrt()


def mae() -> pl.Expr:
    """Mean absolute error."""
    return _mean("_sae")


def max_error() -> pl.Expr:
    """Largest |e| (over rows, as sklearn's unweighted ``max_error``)."""
    return pl.col("_amax")


def msle() -> pl.Expr:
    """Mean squared log1p error; null when a value is ≤ −1."""
    return _mean("_sle", "_bad_sle")


def rmsle() -> pl.Expr:
    """Root of :func:`msle`."""
    return msle().sqrt()


def mape() -> pl.Expr:
    """Mean |e| / max(|y|, eps), a fraction; null when a label is (nearly) 0."""
    return _mean("_ape", "_bad_ape")


def smape() -> pl.Expr:
    """Mean 2|e| / (|y| + |ŷ|), a fraction in [0, 2]."""
    return _mean("_spe")


def r2() -> pl.Expr:
    """Coefficient of determination 1 − SS_res / SS_tot."""
    return _explained(pl.col("_sse"), pl.col("_m2_y"), pl.lit(0.0), pl.col("_zero_y"))


def explained_variance() -> pl.Expr:
    """1 − Var(y − ŷ) / Var(y)."""
    m2_e, m2_y = pl.col("_m2_e"), pl.col("_m2_y")
    return _explained(m2_e, m2_y, pl.col("_zero_e"), pl.col("_zero_y"), min_rows=1)


def mean_poisson_deviance() -> pl.Expr:
    """Mean Poisson deviance; null unless y ≥ 0 and ŷ > 0."""
    return _mean("_poisson", "_bad_poisson")


def mean_gamma_deviance() -> pl.Expr:
    """Mean gamma deviance; null unless y > 0 and ŷ > 0."""
    return _mean("_gamma", "_bad_gamma")


def mean_tweedie_deviance() -> pl.Expr:
    """Mean Tweedie deviance at the state's power; null outside its domain."""
    return _mean("_tweedie", "_bad_tweedie")


def mean_pinball_loss() -> pl.Expr:
    """Mean pinball loss at ``alpha``."""
    return _mean("_pinball")


def d2_absolute_error() -> pl.Expr:
    """1 − Σw|e| / Σw|y − median(y)| (sklearn's ``d2_absolute_error_score``).

    The denominator is read as zero (y constant: the score is 0, or 1 when every error is 0)
    at or below the rounding of its terms, 16·eps·|median(y)|·Σw: in bucketed mode a
    bucket's sum is its low end times its weight plus the deviations, which leaves a few
    ulps where y is constant.
    """
    zero = pl.lit(0.0)
    rounding = 16 * EPS * pl.col("_median_y").abs() * W
    return _explained(pl.col("_sae"), pl.col("_dev_median"), zero, rounding)


def d2_pinball() -> pl.Expr:
    """1 − Σw·pinball(e) / Σw·pinball(y − q_alpha(y)) (sklearn's ``d2_pinball_score``).

    q_alpha(y) is the label's ``alpha`` quantile (sklearn's averaged weighted percentile);
    the denominator is read as zero at the rounding of its terms, as in
    :func:`d2_absolute_error`.
    """
    rounding = 16 * EPS * pl.col("_alpha_y").abs() * W
    return _explained(pl.col("_pinball"), pl.col("_dev_alpha"), pl.lit(0.0), rounding)


def d2_tweedie() -> pl.Expr:
    """1 − Σw·d(y, ŷ) / Σw·d(y, ȳ) at the state's power (sklearn's ``d2_tweedie_score``).

    Null below two rows, outside the deviance's domain, and where the label is constant
    (the denominator is 0: sklearn's quotient is −inf or NaN).
    """
    den = pl.col("_dev_tweedie")
    varies = pl.col("_m2_y") > pl.col("_zero_y")
    ok = (N >= 2) & (W > 0) & (pl.col("_bad_tweedie") == 0) & varies & den.is_finite()
    return pl.when(ok & (den > 0)).then(1.0 - pl.col("_tweedie") / den)


def median_ae() -> pl.Expr:
    """Median |e|."""
    return pl.col("_q50")


def residual_quantile(name: str) -> Callable[[], pl.Expr]:
    """The |e| quantile stored under ``name``."""
    return lambda: pl.col(f"_{name}")


def residual_quantile_error() -> pl.Expr:
    """Relative bound on the error of the |e| quantiles (0 in exact mode)."""
    return pl.col("_rel_error")


_SLE = ("bad_sle", "label and prediction > −1")
#: The regression metric table's columns, in order (one finalize stage, ``histograms``).
DECLARED = (
    count("n", summary=1),
    Metric("mean_error", mean_error, "histograms", direction="zero", summary=2, trend=4),
    Metric("mse", mse, "histograms", direction="lower", noinfo="computed"),
    Metric("rmse", rmse, "histograms", direction="lower", summary=3, trend=1),
    Metric("mae", mae, "histograms", direction="lower", summary=4, trend=2),
    Metric("median_ae", median_ae, "histograms", direction="lower", summary=5),
    Metric("max_error", max_error, "histograms", direction="lower"),
    Metric("msle", msle, "histograms", direction="lower", domain=_SLE),
    Metric("rmsle", rmsle, "histograms", direction="lower", domain=_SLE),
    Metric(
        "mape",
        mape,
        "histograms",
        direction="lower",
        domain=("bad_ape", "|label| ≥ machine epsilon"),
        summary=6,
    ),
    Metric("smape", smape, "histograms", direction="lower", summary=7),
    Metric("r2", r2, "histograms", direction="higher", summary=8, trend=3),
    Metric("explained_variance", explained_variance, "histograms", direction="higher"),
    Metric(
        "mean_poisson_deviance",
        mean_poisson_deviance,
        "histograms",
        direction="lower",
        domain=("bad_poisson", "label ≥ 0 and prediction > 0"),
    ),
    Metric(
        "mean_gamma_deviance",
        mean_gamma_deviance,
        "histograms",
        direction="lower",
        domain=("bad_gamma", "label > 0 and prediction > 0"),
    ),
    Metric(
        "mean_tweedie_deviance",
        mean_tweedie_deviance,
        "histograms",
        direction="lower",
        domain=("bad_tweedie", "the Tweedie power's domain"),
    ),
    Metric("mean_pinball_loss", mean_pinball_loss, "histograms", direction="lower"),
    Metric("d2_absolute_error", d2_absolute_error, "histograms", direction="higher"),
    Metric("d2_pinball", d2_pinball, "histograms", direction="higher"),
    Metric(
        "d2_tweedie",
        d2_tweedie,
        "histograms",
        direction="higher",
        domain=("bad_tweedie", "the Tweedie power's domain"),
    ),
    *(Metric(name, residual_quantile(name), "histograms", direction="lower") for name in QUANTILES),
    bound(
        "residual_quantile_error",
        tuple(QUANTILES),
        residual_quantile_error,
        stage="histograms",
        relative=True,
    ),
)
METRICS = formulas(DECLARED, "histograms")
COLUMNS = [m.name for m in DECLARED]
#: Metrics that are null when rows fall outside their domain: metric → (count column, domain).
DOMAINS = {m.name: m.domain for m in DECLARED if m.domain is not None}


def metric_table(
    state: StateData, *, alpha: float = 0.5, metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """Finalize a regression state into the metric table (one row per group).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 3.0, 5.0], "f": [1.5, 2.0, 2.0, 6.0]})
    >>> st = se.accumulate(df, task="regression", label="y", prediction="f", precision="exact")
    >>> st.metrics().select("n", "mse", "mae", "median_ae", "r2").row(0)
    (4, 0.5625, 0.625, 0.75, 0.7428571428571429)
    """
    names = select_metrics(metrics, list(METRICS))
    lf, keys = aggregates(state, check_alpha(alpha))
    return _finish(lf, keys, names, explicit=metrics is not None)


def grouped_table(grouped: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The metric table from per-group aggregates computed from the rows.

    ``grouped`` has the columns :func:`.histograms.aggregates` gives (from
    :mod:`streameval.kernels.regression`, without a state table).
    """
    lf, group_keys = with_group_key(grouped, keys)
    return _finish(lf, group_keys, list(METRICS), explicit=False)


def _finish(lf: pl.LazyFrame, keys: list[str], names: list[str], *, explicit: bool) -> pl.DataFrame:
    """The metric columns ``names`` of each group's aggregates, sorted by the keys."""
    out = (
        lf.with_columns([METRICS[name]().alias(name) for name in names])
        .sort(keys, nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    _check_domains(out, names, explicit=explicit)
    out = out.select(*keys, "n", *names)
    return out.drop(ALL) if keys == [ALL] else out


def _check_domains(out: pl.DataFrame, names: list[str], *, explicit: bool) -> None:
    """Warn (or raise, for metrics asked for by name) about rows outside a metric's domain."""
    problems: dict[str, list[int]] = {}
    for name in names:
        if name not in DOMAINS:
            continue
        column, domain = DOMAINS[name]
        rows = int(out[f"_{column}"].fill_null(0).sum())
        if rows:
            groups = out.filter(pl.col(f"_{column}") > 0).height
            problems[f"{name} needs {domain}"] = [rows, groups]
    if not problems:
        return
    warning = DomainWarning(problems)
    if explicit:
        raise InputError(
            f"expected data inside the metrics' domains, but {str(warning).split(': ', 1)[1]}; "
            "hint: filter those rows or leave the metric out"
        )
    warnings.warn(warning, stacklevel=caller_level())
