"""Comparing AUCs with DeLong's test: paired (models on the same rows) and unpaired.

**Paired** (pROC's ``roc.test(paired=TRUE, method="delong")``): from a paired state, each
model's placements come from its own histogram (the joint one summed over the others'
buckets) and are joined back to the joint rows, so the covariance of two AUCs is

    Cov = Σ pos·(V₁₀ᵃ − A)(V₁₀ᵇ − B) / ((P − 1)·P) + Σ neg·(V₀₁ᵃ − A)(V₀₁ᵇ − B) / ((N − 1)·N)

and ``z = (A − B) / √(Var A + Var B − 2 Cov)``, with the interval of A − B at ``level``
(two-sided whatever the alternative, as pROC). The difference and its variance are summed
from each row's difference of the two models' placements (the same value, with no
cancellation when the rankings are alike). Rankings that place every row alike give z = 0
where the variance is defined (more than one positive and one negative): exactly so
unweighted, and with weights when the difference and its standard error are both within
rounding (:data:`ROUNDING`), since weights summed in another order differ in the last bits.

**Unpaired** (``paired=FALSE``): two groups of a binary state that differ in one key (two
days, two segments) have independent AUCs: ``D = (A − B) / √(Var A + Var B)``, tested against
Student's t with pROC's degrees of freedom ``(Va + Vb)² / (Va²/(na − 1) + Vb²/(nb − 1))``,
n being each group's number of examples.

Bucketed states test the bucketed AUCs; the interval of the difference is widened by the two
AUCs' error bounds.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from .. import kernels
from ..errors import InputError
from ..kernels.pairedstate import paired_sums
from ..metrics.groups import with_group_key
from ..metrics.ranking import ranking
from ..ordered import ORDERED
from ..spec import ALL
from ..tasks.binary.metrics import ranking_columns
from ..tasks.paired.state import bucket_columns
from .delong import delong, placements, z_quantile
from .tables import auc_interval

if TYPE_CHECKING:
    from ..spec import Spec
    from ..states.data import StateData

ALTERNATIVES = ("two-sided", "greater", "less")

#: A difference of AUCs or its standard error within this is rounding (placements lie in
#: [0, 1]): a standard error within it is 0 (z is ±inf), and with a difference within it
#: too the rankings place every row alike (z is 0).
ROUNDING = 1e-12


def check_alternative(alternative: str) -> str:
    """``alternative`` if valid, else an InputError."""
    if alternative not in ALTERNATIVES:
        raise InputError(
            f"expected alternative among {list(ALTERNATIVES)}, got {alternative!r}; hint: "
            "'greater' tests whether the first AUC is larger"
        )
    return alternative


def _pvalue(z: np.ndarray, alternative: str, df: np.ndarray | None = None) -> np.ndarray:
    from scipy import stats  # (0.7 s to import: loaded when an interval needs it)

    dist: Any = stats.norm if df is None else stats.t(df)
    if alternative == "greater":
        return np.asarray(dist.sf(z), dtype=np.float64)
    if alternative == "less":
        return np.asarray(dist.cdf(z), dtype=np.float64)
    return np.asarray(2 * dist.sf(np.abs(z)), dtype=np.float64)


def _groups(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    return with_group_key(state.table, state.keys)


def model_histograms(state: StateData) -> tuple[pl.LazyFrame, list[str]]:
    """Per group, model (index ``model``) and bucket: ``pos`` and ``neg`` (Float64)."""
    lf, keys = _groups(state)
    weights = [pl.col(c).cast(pl.Float64) for c in ("pos", "neg")]
    parts = [
        lf.group_by(*keys, pl.col(b).alias("bucket"), maintain_order=True)
        .agg(*(w.sum() for w in weights))
        .with_columns(pl.lit(i, pl.Int32).alias("model"))
        for i, b in enumerate(bucket_columns(state.spec))
    ]
    return pl.concat(parts), keys


def model_table(state: StateData, level: float) -> pl.DataFrame:
    """Per group and model: n, positives, negatives, roc_auc with its DeLong interval."""
    summed = paired_sums(state.table, state.spec) if kernels.enabled() else None
    if summed is not None:
        (counts, keys), (spread, _) = (with_group_key(f, state.keys) for f in summed.model_rows())
        return model_rows(counts, spread, keys, state.spec, level)
    hist, keys = model_histograms(state)
    hist = hist.collect(
        engine="in-memory", optimizations=ORDERED
    ).lazy()  # (read twice below: summed once)
    groups = [*keys, "model"]
    ranked = ranking(hist, groups, exact=state.spec.exact).join(
        _row_counts(state, keys), on=keys, how="left", nulls_equal=True, maintain_order="left_right"
    )
    rows = ranked.select(
        *groups, "n", pl.col("_P").alias("positives"), pl.col("_N").alias("negatives"),
        "roc_auc", "roc_auc_error", "average_precision",
    )  # fmt: skip
    variance = delong(hist, groups).select(*groups, "_var")
    return model_rows(rows, variance, keys, state.spec, level)


def grouped_model_table(grouped: pl.DataFrame, spec: Spec, level: float) -> pl.DataFrame:
    """:func:`model_table` from the kernel's grouped frames of each model (key ``model``).

    ``grouped`` holds, per group and model, the aggregates of
    :func:`streameval.kernels.metrics.grouped_frame` and DeLong's ``_var``
    (:class:`streameval.kernels.paired.PairedStaged`).
    """
    keys = list(spec.keys) or [ALL]
    groups = [*keys, "model"]
    lf = ranking_columns(grouped.lazy(), spec.exact)
    rows = lf.select(
        *groups, "n", "positives", "negatives", "roc_auc", "roc_auc_error", "average_precision"
    )
    variance = lf.select(*groups, pl.col("_var").fill_nan(None))
    return model_rows(rows, variance, keys, spec, level)


def model_rows(
    rows: pl.LazyFrame, variance: pl.LazyFrame, keys: list[str], spec: Spec, level: float
) -> pl.DataFrame:
    """The model table from each group and model's counts, AUC, AP and DeLong variance.

    ``rows`` has the keys (the constant key column of
    :func:`streameval.tasks.binary.metrics.with_group_key` when there are none), ``model`` (the
    index in ``spec.scores``), ``n``, ``positives``, ``negatives``, ``roc_auc``,
    ``roc_auc_error`` and ``average_precision``; ``variance`` the keys, ``model`` and ``_var``.
    """
    groups = [*keys, "model"]
    auc = rows.select(*groups, "roc_auc", "roc_auc_error", "positives", "negatives")
    intervals = auc_interval(auc, groups, variance, level)
    names = pl.LazyFrame(
        {"model": range(len(spec.scores)), "_name": list(spec.scores)},
        schema={"model": pl.Int32, "_name": pl.String},
    )
    count = pl.Int64 if not spec.weighted else pl.Float64
    out = (
        rows.join(intervals, on=groups, how="left", nulls_equal=True, maintain_order="left_right")
        .join(names, on="model", maintain_order="left_right")
        .sort(groups, nulls_last=False)
        .select(
            *keys,
            pl.col("_name").alias("model"),
            pl.col("n").cast(pl.Int64),
            pl.col("positives").cast(count),
            pl.col("negatives").cast(count),
            "roc_auc",
            "roc_auc_lo",
            "roc_auc_hi",
            "roc_auc_se",
            "roc_auc_error",
            "average_precision",
        )
        .collect(engine="in-memory", optimizations=ORDERED)
    )
    return out.drop(ALL) if keys == [ALL] else out


def _row_counts(state: StateData, keys: list[str]) -> pl.LazyFrame:
    lf, _ = _groups(state)
    n = pl.col("n") if state.spec.weighted else pl.col("pos") + pl.col("neg")
    return lf.group_by(keys, maintain_order=True).agg(n.sum().cast(pl.Int64).alias("n"))


def _joint_sums(state: StateData, keys: list[str]) -> pl.LazyFrame:
    """Per group: ``auc{i}``, ``_e{i}`` (AUC bound), ``diff{i}_{j}`` and ``var{i}_{j}`` (i < j).

    The Polars reference of :func:`streameval.kernels.pairedstate.paired_sums`: each model's
    placements joined onto the joint histogram's rows, then summed per group; each pair's
    difference and its variance come from each row's difference of the two placements.
    """
    lf, _ = _groups(state)
    hist, _ = model_histograms(state)
    joint = lf.with_columns(pl.col("pos", "neg").cast(pl.Float64))
    # every model's placements over the group's own totals (summed once, as the kernel's):
    # identical rankings then place every row identically, and differ by exactly 0
    totals = joint.group_by(keys, maintain_order=True).agg(
        pl.col("pos").sum().alias("_P"), pl.col("neg").sum().alias("_N")
    )
    P, N = pl.col("_P"), pl.col("_N")
    placed = (
        placements(hist, [*keys, "model"])
        .drop("_P", "_N")
        .join(totals, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        .with_columns(
            ((N - pl.col("_cneg") + 0.5 * pl.col("neg")) / N).alias("_v10"),
            ((pl.col("_cpos") - 0.5 * pl.col("pos")) / P).alias("_v01"),
        )
    )
    buckets = bucket_columns(state.spec)
    for i, b in enumerate(buckets):
        own = placed.filter(pl.col("model") == i).select(
            *keys,
            pl.col("bucket").alias(b),
            *(pl.col(c).alias(f"{c}_{i}") for c in ("_v10", "_v01")),
            pl.col("_auc").alias(f"auc{i}"),
            *(pl.col(c).alias(f"{c}{i}") for c in ("_P", "_N")),
        )
        joint = joint.join(
            own, on=[*keys, b], how="left", nulls_equal=True, maintain_order="left_right"
        )
    pos, neg = pl.col("pos"), pl.col("neg")
    P, N = pl.col("_P0").first(), pl.col("_N0").first()
    sums = []
    for i in range(len(buckets)):
        sums.append(pl.col(f"auc{i}").first())
        for j in range(i + 1, len(buckets)):
            d10 = pl.col(f"_v10_{i}") - pl.col(f"_v10_{j}")
            d01 = pl.col(f"_v01_{i}") - pl.col(f"_v01_{j}")
            d = (pos * d10).sum() / P
            s10 = (pos * (d10 - d) ** 2).sum() / (P - 1) / P
            s01 = (neg * (d01 - d) ** 2).sum() / (N - 1) / N
            sums.append(pl.when((P > 0) & (N > 0)).then(d).alias(f"diff{i}_{j}"))
            sums.append(pl.when((P > 1) & (N > 1)).then(s10 + s01).alias(f"var{i}_{j}"))
    per_group = joint.group_by(keys, maintain_order=True).agg(*sums)
    bounds = ranking(hist, [*keys, "model"], exact=state.spec.exact)
    for m in range(len(buckets)):
        error = bounds.filter(pl.col("model") == m).select(
            *keys, pl.col("roc_auc_error").alias(f"_e{m}")
        )
        per_group = per_group.join(
            error, on=keys, how="left", nulls_equal=True, maintain_order="left_right"
        )
    return per_group


def paired_moments(state: StateData) -> tuple[pl.DataFrame, list[str]]:
    """Per group and pair of models (in ``spec.scores`` order): the AUCs and their difference.

    Columns: the group keys (the returned list: :data:`~streameval.spec.ALL` without keys),
    ``model_a``, ``model_b``, ``roc_auc_a``, ``roc_auc_b``, ``difference`` (a − b), ``_sd``
    (its DeLong standard error, from both variances and their covariance) and ``_widen``
    (the two AUCs' bucketing error bounds).
    """
    _, keys = _groups(state)
    summed = paired_sums(state.table, state.spec) if kernels.enabled() else None
    if summed is None:
        per_group = _joint_sums(state, keys)
    else:
        per_group, _ = with_group_key(summed.test_sums(), state.keys)
    names = list(state.spec.scores)
    rows = []
    for i, j in combinations(range(len(names)), 2):
        rows.append(
            per_group.select(
                *keys,
                pl.lit(names[i]).alias("model_a"),
                pl.lit(names[j]).alias("model_b"),
                pl.col(f"auc{i}").alias("roc_auc_a"),
                pl.col(f"auc{j}").alias("roc_auc_b"),
                pl.col(f"diff{i}_{j}").alias("difference"),
                pl.col(f"var{i}_{j}").sqrt().alias("_sd"),
                (pl.col(f"_e{i}") + pl.col(f"_e{j}")).alias("_widen"),
            )
        )
    return pl.concat(rows).collect(engine="in-memory", optimizations=ORDERED), keys


def paired_test(state: StateData, level: float, alternative: str) -> pl.DataFrame:
    """Per group and pair of models (in ``spec.scores`` order): the paired DeLong test."""
    check_alternative(alternative)
    out, keys = paired_moments(state)
    diff, sd = out["difference"].to_numpy(), out["_sd"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        # a standard error within rounding is 0 (weights summed in another order differ in
        # their last bits): no z from residuals, but 0 for a difference within rounding too
        # (the rankings place every row alike), else ±inf; no z without a variance
        sd = np.where(sd <= ROUNDING, 0.0, sd)
        z = np.where((np.abs(diff) <= ROUNDING) & (sd == 0.0), 0.0, diff / sd)
    half = z_quantile(level) * pl.col("_sd") + pl.col("_widen")
    out = out.with_columns(
        (pl.col("difference") - half).alias("difference_lo"),
        (pl.col("difference") + half).alias("difference_hi"),
        pl.Series("z", z).fill_nan(None),
        pl.Series("p_value", _pvalue(z, alternative)).fill_nan(None),
    )
    columns = [
        *keys,
        *("model_a", "model_b", "roc_auc_a", "roc_auc_b"),
        *("difference", "difference_lo", "difference_hi", "z", "p_value"),
    ]
    out = out.sort(keys, nulls_last=False, maintain_order=True).select(columns)
    return out.drop(ALL) if keys == [ALL] else out


def unpaired_test(state: StateData, column: str, baseline: Any, alternative: str) -> pl.DataFrame:
    """Each value of ``column`` against ``baseline`` within the other keys (binary state).

    ``baseline="previous"`` compares each value with the one before it (in the key's order)
    within the other keys: each day against the day before.
    """
    check_alternative(alternative)
    if column not in state.keys:
        raise InputError(
            f"expected column to be one of the state's group keys {state.keys}, got {column!r}; "
            "hint: accumulate with by=[..., column]"
        )
    rest = [k for k in state.keys if k != column]
    table = state.table.lazy().with_columns(pl.col("pos", "neg").cast(pl.Float64))
    per_group = delong(table, state.keys).with_columns((pl.col("_P") + pl.col("_N")).alias("_n"))
    tested = ("_auc", "_var", "_n")
    if _previous(state, column, baseline):
        ordered = per_group.sort([*rest, column], nulls_last=False)
        before = [pl.col(c).shift(1) for c in (column, *tested)]
        before = [e.over(rest) if rest else e for e in before]
        joined = (
            ordered.with_columns(
                before[0].alias("baseline"),
                *(e.alias(f"{c}_b") for e, c in zip(before[1:], tested, strict=True)),
            )
            .filter(pl.col("_n_b").is_not_null())
            .collect(engine="in-memory", optimizations=ORDERED)
        )
    else:
        dtype = state.table.schema[column]
        value = _baseline(state, column, baseline)
        base = per_group.filter(pl.col(column) == pl.lit(value, dtype)).collect(
            engine="in-memory", optimizations=ORDERED
        )
        if base.is_empty():
            raise InputError(
                f"expected baseline to be a value of {column!r}, got {baseline!r}; "
                f"values are {_values(state, column)}; hint: or baseline='previous'"
            )
        others = per_group.filter(pl.col(column) != pl.lit(value, dtype)).collect(
            engine="in-memory", optimizations=ORDERED
        )
        b = base.select(*rest, *(pl.col(c).alias(f"{c}_b") for c in tested))
        joined = (
            others.join(b, on=rest, how="inner", nulls_equal=True, maintain_order="left_right")
            if rest
            else others.join(b, how="cross", maintain_order="left_right")
        ).with_columns(pl.lit(value, dtype).alias("baseline"))
    va, vb = joined["_var"].to_numpy(), joined["_var_b"].to_numpy()
    na, nb = joined["_n"].to_numpy(), joined["_n_b"].to_numpy()
    diff = joined["_auc"].to_numpy() - joined["_auc_b"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        d = diff / np.sqrt(va + vb)
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    out = joined.select(
        *rest,
        pl.col(column),
        pl.col("baseline"),
        pl.col("_auc").alias("roc_auc"),
        pl.col("_auc_b").alias("roc_auc_baseline"),
        (pl.col("_auc") - pl.col("_auc_b")).alias("difference"),
        pl.Series("statistic", d).fill_nan(None),
        pl.Series("df", df).fill_nan(None),
        pl.Series("p_value", _pvalue(d, alternative, df)).fill_nan(None),
    )
    return out.sort([*rest, column], nulls_last=False)


def _previous(state: StateData, column: str, baseline: Any) -> bool:
    """Whether ``baseline`` asks for each value's predecessor (refused where it is a value)."""
    if not (isinstance(baseline, str) and baseline == "previous"):
        return False
    if state.table.schema[column] == pl.String and (state.table[column] == "previous").any():
        raise InputError(
            f"expected baseline='previous' to mean each value's predecessor, but 'previous' is "
            f"also a value of {column!r}; hint: rename that value, or pass the baseline's value"
        )
    return True


def _values(state: StateData, column: str) -> list[str]:
    """The first ten values of a key, as text."""
    return [str(v) for v in state.table[column].unique().sort().head(10).to_list()]


def _baseline(state: StateData, column: str, baseline: Any) -> Any:
    """``baseline`` as a value of the key ``column`` (a day string for a Date key, say)."""
    dtype = state.table.schema[column]
    series = pl.Series([baseline])
    try:
        if isinstance(baseline, str) and dtype == pl.Date:
            value = series.str.to_date("%Y-%m-%d", strict=True)
        elif isinstance(baseline, str) and isinstance(dtype, pl.Datetime):
            value = series.str.to_datetime(strict=True).cast(dtype, strict=True)
        else:
            value = series.cast(dtype, strict=True)
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
        value = None
    if value is None or value.null_count() > (baseline is None):
        hint = " (a datetime.date, or a day like '2026-10-01')" if dtype == pl.Date else ""
        raise InputError(
            f"expected baseline to be a value of {column!r} ({dtype}){hint}, got {baseline!r}; "
            f"values are {_values(state, column)}"
        )
    return value.item()
