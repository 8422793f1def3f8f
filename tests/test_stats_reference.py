"""Intervals and tests through the shared harness: chunked, weighted, tied, imbalanced input,
accumulate per chunk → merge → finalize, compared with row-by-row references."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference_stats as ref
import streameval as se
from reference import binary_frames, chunks, close, per_group

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

PROPORTIONS = {
    "prevalence": ("P", "S"),
    "accuracy": ("tp+tn", "S"),
    "error_rate": ("fp+fn", "S"),
    "precision": ("tp", "tp+fp"),
    "recall": ("tp", "P"),
    "specificity": ("tn", "N"),
    "npv": ("tn", "tn+fn"),
    "fpr": ("fp", "N"),
    "fnr": ("fn", "P"),
}


def _binary_rows(part: pl.DataFrame, method: str, level: float, t: float) -> list[dict[str, Any]]:
    y, p = part["y"].to_numpy(), part["p"].to_numpy()
    w = part["w"].to_numpy() if "w" in part.columns else np.ones_like(p)
    pred = p >= t
    c = {
        "tp": w[(y == 1) & pred].sum(),
        "fp": w[(y == 0) & pred].sum(),
        "tn": w[(y == 0) & ~pred].sum(),
        "fn": w[(y == 1) & ~pred].sum(),
    }
    c.update(P=c["tp"] + c["fn"], N=c["tn"] + c["fp"])
    c["S"] = c["P"] + c["N"]
    out: dict[str, Any] = {}
    for name, (num, den) in PROPORTIONS.items():
        x = sum(c[k] for k in num.split("+"))
        n = sum(c[k] for k in den.split("+"))
        out[f"{name}_lo"], out[f"{name}_hi"] = ref.proportion_interval(x, n, method, level)
    auc, var = ref.delong(y, p, w if "w" in part.columns else None)
    out["roc_auc"] = auc
    out["roc_auc_se"] = None if var is None else math.sqrt(var)
    if var is not None:
        z = float(__import__("scipy").stats.norm.ppf(0.5 + level / 2))
        out["roc_auc_lo"] = max(0.0, auc - z * math.sqrt(var))
        out["roc_auc_hi"] = min(1.0, auc + z * math.sqrt(var))
    S = c["S"]
    out["no_information_rate"] = max(c["P"], c["N"]) / S if S > 0 else None
    if S > 0:
        out["accuracy_pvalue"] = ref.binomial_greater(c["tp"] + c["tn"], S, max(c["P"], c["N"]) / S)
    out["mcnemar_pvalue"] = ref.mcnemar(c["fp"], c["fn"])
    matrix = np.array([[c["tn"], c["fn"]], [c["fp"], c["tp"]]])
    out["cohen_kappa_se"] = ref.kappa_se(matrix) if S > 0 else None
    return [out]


@given(
    binary_frames(),
    st.sampled_from(["wilson", "clopper-pearson"]),
    st.sampled_from([0.5, 0.9, 0.95]),
    st.sampled_from([0.3, 0.5]),
)
def test_binary_intervals_match_references(data, method, level, threshold):
    df, cuts, weighted = data
    w = "w" if weighted else None
    state = se.merge(
        se.accumulate(c, label="y", score="p", by="g", weight=w, precision="exact")
        for c in chunks(df, cuts)
    )
    ours = state.metrics(threshold, ci=method, level=level).to_dicts()
    expected = per_group(df, ["g"], lambda part: _binary_rows(part, method, level, threshold))
    assert len(ours) == len(expected)
    for mine, theirs in zip(ours, expected, strict=True):
        for name, value in theirs.items():
            if name.endswith("pvalue") and value is not None and mine[name] is not None:
                assert math.isclose(mine[name], value, rel_tol=1e-7, abs_tol=1e-300), name
            elif name == "cohen_kappa_se" and value is not None and mine[name] is not None:
                assert math.isclose(mine[name] ** 2, value**2, rel_tol=1e-8, abs_tol=1e-12)
            else:
                assert close(mine[name], value, 1e-8), (name, mine[name], value)


@given(binary_frames(), st.sampled_from([4, 8, 11]))
def test_bucketed_auc_interval_covers_the_exact_one(data, bits):
    df, _, weighted = data
    w = "w" if weighted else None
    exact = se.accumulate(df, label="y", score="p", by="g", weight=w, precision="exact")
    bucketed = se.accumulate(df, label="y", score="p", by="g", weight=w, precision=bits)
    a = exact.metrics(ci="wilson").select("g", "roc_auc", "roc_auc_lo", "roc_auc_hi")
    b = bucketed.metrics(ci="wilson").select("g", "roc_auc_lo", "roc_auc_hi", "roc_auc_se")
    for x, y in zip(a.iter_rows(named=True), b.iter_rows(named=True), strict=True):
        if x["roc_auc"] is not None and y["roc_auc_lo"] is not None:
            assert y["roc_auc_lo"] <= x["roc_auc"] + 1e-12 <= y["roc_auc_hi"] + 2e-12


@st.composite
def paired_frames(draw: st.DrawFn):
    df, cuts, weighted = draw(binary_frames())
    pool = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=6))
    b = draw(
        st.lists(st.sampled_from(pool) | st.floats(0, 1), min_size=df.height, max_size=df.height)
    )
    return df.with_columns(pl.Series("b", b, dtype=pl.Float64)), cuts, weighted


@given(paired_frames(), st.sampled_from(["two-sided", "greater", "less"]))
def test_paired_test_matches_reference(data, alternative):
    from scipy import stats

    df, cuts, weighted = data
    w = "w" if weighted else None
    state = se.merge(
        se.accumulate(c, task="paired", label="y", scores=["p", "b"], by="g", weight=w,
                      precision="exact")
        for c in chunks(df, cuts)
    )  # fmt: skip
    ours = state.roc_test(alternative=alternative).to_dicts()

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, a, b = part["y"].to_numpy(), part["p"].to_numpy(), part["b"].to_numpy()
        wt = part["w"].to_numpy() if weighted else None
        auc_a, var_a = ref.delong(y, a, wt)
        auc_b, var_b = ref.delong(y, b, wt)
        cov = ref.delong_covariance(y, a, b, wt)
        row: dict[str, Any] = {"roc_auc_a": auc_a, "roc_auc_b": auc_b}
        if cov is None or var_a is None or var_b is None:
            return [row]
        sd = math.sqrt(max(var_a + var_b - 2 * cov, 0.0))
        diff = auc_a - auc_b
        if sd > 1e-7:  # a near-zero sd makes z ill-conditioned: compared where it is not
            z = diff / sd
            row["z"] = z
            row["p_value"] = {
                "two-sided": 2 * stats.norm.sf(abs(z)),
                "greater": stats.norm.sf(z),
                "less": stats.norm.cdf(z),
            }[alternative]
        row["difference_lo"] = diff - stats.norm.ppf(0.975) * sd
        return [row]

    expected = per_group(df, ["g"], rows_of)
    assert len(ours) == len(expected)
    for mine, theirs in zip(ours, expected, strict=True):
        for name, value in theirs.items():
            assert close(mine[name], value, 1e-7), (name, mine[name], value)


@given(binary_frames())
def test_hanley_mcneil_variance(data):
    df, cuts, weighted = data
    w = "w" if weighted else None
    state = se.merge(
        se.accumulate(c, label="y", score="p", by="g", weight=w, precision="exact")
        for c in chunks(df, cuts)
    )
    ours = state.metrics(ci="wilson", auc_method="hanley-mcneil").to_dicts()

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p = part["y"].to_numpy(), part["p"].to_numpy()
        wt = part["w"].to_numpy() if weighted else np.ones_like(p)
        P, N = wt[y == 1].sum(), wt[y == 0].sum()
        auc, _ = ref.delong(y, p, wt)
        if auc is None:
            return [{"roc_auc_se": None}]
        q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
        var = (auc * (1 - auc) + (P - 1) * (q1 - auc**2) + (N - 1) * (q2 - auc**2)) / (P * N)
        return [{"roc_auc_se": math.sqrt(max(var, 0.0))}]

    expected = per_group(df, ["g"], rows_of)
    for mine, theirs in zip(ours, expected, strict=True):
        assert close(mine["roc_auc_se"], theirs["roc_auc_se"], 1e-8)
