"""Curves, operating points and areas against scikit-learn and brute force over thresholds,
on chunked, weighted, tied input (accumulate per chunk → merge → finalize)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import metrics as skm

import streameval as se
from reference import binary_frames, chunks, close, per_group

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")


def merged(df: pl.DataFrame, cuts: list[int], weighted: bool) -> se.State:
    w = "w" if weighted else None
    return se.merge(
        se.accumulate(c, label="y", score="p", by="g", weight=w, precision="exact")
        for c in chunks(df, cuts)
    )


def _arrays(part: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    w = part["w"].to_numpy() if "w" in part.columns else None
    return part["y"].to_numpy(), part["p"].to_numpy(), w


@given(binary_frames(weighted=False), st.booleans())
def test_roc_and_det_curves_match_sklearn(data, drop):
    df, cuts, _ = data
    state = merged(df, cuts, False)
    roc, det = state.roc_curve(drop_intermediate=drop), state.det_curve(drop_intermediate=drop)
    for (g,), part in df.partition_by("g", as_dict=True).items():
        y, p, _ = _arrays(part)
        ours_roc = roc.filter(pl.col("g") == g)
        ours_det = det.filter(pl.col("g") == g)
        if len(set(y)) < 2:
            assert ours_det.height == 0
            continue
        fpr, tpr, thr = skm.roc_curve(y, p, drop_intermediate=drop)
        np.testing.assert_allclose(ours_roc["threshold"], thr)
        np.testing.assert_allclose(ours_roc["fpr"], fpr)
        np.testing.assert_allclose(ours_roc["tpr"], tpr)
        fpr, fnr, thr = skm.det_curve(y, p, drop_intermediate=drop)
        np.testing.assert_allclose(ours_det["threshold"], thr)
        np.testing.assert_allclose(ours_det["fpr"], fpr)
        np.testing.assert_allclose(ours_det["fnr"], fnr)


@given(binary_frames(), st.sampled_from([0.01, 0.1, 0.25, 0.5, 1.0]))
def test_areas_match_sklearn_and_brute_force(data, max_fpr):
    df, cuts, weighted = data
    ours = merged(df, cuts, weighted).areas(max_fpr=max_fpr).to_dicts()

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p, w = _arrays(part)
        sw = np.ones_like(p) if w is None else w
        P, N = sw[y == 1].sum(), sw[y == 0].sum()
        row: dict[str, Any] = {"partial_auc": None, "ks": None, "pr_auc": None}
        if P > 0 and N > 0:
            row["partial_auc"] = skm.roc_auc_score(y, p, sample_weight=w, max_fpr=max_fpr)
            fpr, tpr, _ = skm.roc_curve(y, p, sample_weight=w)
            row["ks"] = float(np.max(tpr - fpr))
        if P > 0:
            precision, recall, _ = skm.precision_recall_curve(y, p, sample_weight=w)
            row["pr_auc"] = skm.auc(recall, precision)
            row["break_even"] = _break_even(precision[::-1], recall[::-1])
        return [row]

    expected = per_group(df, ["g"], rows_of)
    assert len(ours) == len(expected)
    for mine, theirs in zip(ours, expected, strict=True):
        for name, value in theirs.items():
            assert close(mine[name], value, 1e-9), (name, mine[name], value)


def _break_even(precision: np.ndarray, recall: np.ndarray) -> float | None:
    """First crossing of precision − recall from below, walking from the closing point back
    (thresholds ascending means the arrays reversed to start at the lowest threshold)."""
    precision, recall = precision[::-1], recall[::-1]
    d = precision - recall
    for i in range(len(d)):
        if d[i] >= 0 and (i == 0 or d[i - 1] < 0):
            if d[i] == 0 or i == 0:
                return float(precision[i])
            t = d[i - 1] / (d[i - 1] - d[i])
            return float(precision[i - 1] + (precision[i] - precision[i - 1]) * t)
    return None


CRITERIA = [
    ("youden", {}),
    ("f1", {}),
    ("fbeta", {"beta": 2.0}),
    ("cost", {"costs": (1.0, 5.0)}),
    ("cost", {"costs": (2.0, 1.0), "prevalence": 0.1}),
    ("recall", {"target": 0.8}),
    ("precision", {"target": 0.6}),
    ("fpr", {"target": 0.2}),
]


@given(binary_frames(), st.sampled_from(CRITERIA))
def test_operating_points_match_brute_force(data, criterion):
    name, kw = criterion
    df, cuts, weighted = data
    ours = merged(df, cuts, weighted).operating_point(name, **kw).to_dicts()

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p, w = _arrays(part)
        best = _brute_force(y, p, np.ones_like(p) if w is None else w, name, kw)
        return [] if best is None else [{"threshold": best[1], "value": best[2]}]

    expected = per_group(df, ["g"], rows_of)
    assert [r["g"] for r in ours] == [r["g"] for r in expected]
    for mine, theirs in zip(ours, expected, strict=True):
        assert mine["threshold"] == theirs["threshold"], (mine, theirs)
        assert close(mine["value"], theirs["value"], 1e-9)


def _brute_force(y, p, w, name, kw):
    P, N = w[y == 1].sum(), w[y == 0].sum()
    best = None
    # Candidates: scores of rows with weight (zero-weight rows are dropped, as in sklearn).
    for t in np.r_[np.inf, np.unique(p[w > 0])[::-1]]:
        pred = p >= t
        tp, fp = w[(y == 1) & pred].sum(), w[(y == 0) & pred].sum()
        fn = P - tp
        recall = tp / P if P > 0 else None
        fpr = fp / N if N > 0 else None
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        if name == "youden":
            ok, value = P > 0 and N > 0, (recall or 0) - (fpr or 0)
            order = value
        elif name in ("f1", "fbeta"):
            b2 = kw.get("beta", 1.0) ** 2
            value = (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp) if tp > 0 else 0.0
            ok, order = P > 0, value
        elif name == "cost":
            cost_fp, cost_fn = kw["costs"]
            pi = kw.get("prevalence", P / (P + N) if P + N > 0 else 0.0)
            value = cost_fn * pi * (fn / P if P > 0 else 0) + cost_fp * (1 - pi) * (
                fp / N if N > 0 else 0
            )
            ok, order = P + N > 0, -value
        elif name == "recall":
            ok, value, order = recall is not None and recall >= kw["target"], recall, t
        elif name == "precision":
            ok, value, order = tp + fp > 0 and precision >= kw["target"], precision, -t
        else:
            ok, value, order = fpr is not None and fpr <= kw["target"], fpr, -t
        # Objectives equal up to rounding tie (the higher threshold wins); thresholds do not.
        by_threshold = name in ("recall", "precision", "fpr")
        tol = 0 if by_threshold or not np.isfinite(order) else 1e-12 * max(1.0, abs(order))
        if ok and (best is None or order > best[0] + tol):
            best = (order, float(t), value)
    return best


@given(binary_frames(), st.sampled_from([3, 10, [0.05, 0.5, 1.0]]))
def test_gains_match_brute_force(data, quantiles):
    df, cuts, weighted = data
    ours = merged(df, cuts, weighted).gains(quantiles).to_dicts()
    qs = (
        [(i + 1) / quantiles for i in range(quantiles)] if isinstance(quantiles, int) else quantiles
    )

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p, w = _arrays(part)
        sw = np.ones_like(p) if w is None else w
        total, positives = sw.sum(), sw[y == 1].sum()
        if total <= 0:
            return []
        thresholds = np.unique(p[sw > 0])[::-1]
        reached = [(t, sw[p >= t].sum() / total) for t in thresholds]
        rows = []
        for q in qs:
            t, population = next((t, f) for t, f in reached if f + 1e-12 >= q)
            top = p >= t
            tp = sw[top & (y == 1)].sum()
            gain = tp / positives if positives > 0 else None
            rows.append({
                "quantile": q, "threshold": t, "population": population, "gain": gain,
                "lift": None if gain is None else gain / population,
                "response": tp / sw[top].sum(),
            })  # fmt: skip
        return rows

    expected = per_group(df, ["g"], rows_of)
    assert len(ours) == len(expected)
    for mine, theirs in zip(ours, expected, strict=True):
        for name, value in theirs.items():
            assert close(mine[name], value, 1e-9), (name, mine[name], value)


@given(binary_frames())
def test_cost_curve_is_the_lower_envelope(data):
    df, cuts, weighted = data
    state = merged(df, cuts, weighted)
    curve, costs = state.cost_curve(), state.areas().select("g", "expected_cost")
    roc = state.roc_curve()
    for (g,), points in roc.partition_by("g", as_dict=True).items():
        ours = curve.filter(pl.col("g") == g)
        fpr, fnr = points["fpr"].to_numpy(), 1 - points["tpr"].to_numpy()
        if np.isnan(fpr).any() or np.isnan(fnr).any():
            assert ours.height == 0
            continue
        x = ours["probability_cost"].to_numpy()
        lowest = np.min(fpr[:, None] + (fnr - fpr)[:, None] * x[None, :], axis=0)
        np.testing.assert_allclose(ours["normalized_cost"].to_numpy(), lowest, atol=1e-12)
        grid = np.linspace(0, 1, 20001)
        envelope = np.min(fpr[:, None] + (fnr - fpr)[:, None] * grid[None, :], axis=0)
        area = costs.filter(pl.col("g") == g)["expected_cost"].item()
        # The envelope is piecewise linear with breakpoints off the grid: the grid's
        # trapezoid rule is within (breakpoints · step²) of the area.
        assert abs(area - np.trapezoid(envelope, grid)) < 1e-6
        assert (np.diff(x) > 0).all() and x[0] == 0 and x[-1] == 1


@given(binary_frames(), st.integers(1, 12), st.sampled_from(["uniform", "quantile"]))
def test_calibration_curve_matches_sklearn(data, n_bins, strategy):
    from sklearn.calibration import calibration_curve

    df, cuts, weighted = data
    state = merged(df, cuts, weighted)
    ours = state.calibration_curve(n_bins, strategy)
    errors = state.calibration_error(n_bins, strategy)
    for (g,), part in df.partition_by("g", as_dict=True).items():
        mine = ours.filter(pl.col("g") == g)
        y, p, w = _arrays(part)
        if w is None:
            observed, predicted = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
            np.testing.assert_allclose(mine["observed_rate"], observed, rtol=1e-12)
            np.testing.assert_allclose(mine["mean_predicted"], predicted, rtol=1e-12)
        assert mine["n"].sum() == part.height
        weight = mine["weight"].to_numpy()
        gap = np.abs(mine["observed_rate"].to_numpy() - mine["mean_predicted"].to_numpy())
        ece = errors.filter(pl.col("g") == g)["ece"].item()
        if weight.sum() > 0:
            ok = ~np.isnan(gap)
            assert close(ece, float((gap[ok] * weight[ok]).sum() / weight.sum()), 1e-9)


@given(binary_frames(), st.sampled_from([2, 6, 11]))
def test_bucketed_mean_prediction_is_exact(data, bits):
    """Σw·p is stored per bucket: a single bin's mean prediction is the exact weighted mean."""
    df, cuts, weighted = data
    w = "w" if weighted else None
    state = se.merge(
        se.accumulate(c, label="y", score="p", by="g", weight=w, precision=bits)
        for c in chunks(df, cuts)
    )
    curve = state.calibration_curve(1)
    for (g,), part in df.partition_by("g", as_dict=True).items():
        _, p, wt = _arrays(part)
        wt = np.ones_like(p) if wt is None else wt
        row = curve.filter(pl.col("g") == g)
        if wt.sum() > 0:
            assert close(row["mean_predicted"].item(), float((wt * p).sum() / wt.sum()), 1e-12)


@given(binary_frames(), st.sampled_from([(1.0, 1.0), (1.0, 5.0), (0.0, 2.5)]))
def test_cost_sensitive_error_matches_its_definition(data, costs):
    df, cuts, weighted = data
    ours = merged(df, cuts, weighted).cost_sensitive_error(costs, [0.3, 0.5]).to_dicts()

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p, w = _arrays(part)
        sw = np.ones_like(p) if w is None else w
        rows = []
        for t in (0.3, 0.5):
            fp = sw[(y == 0) & (p >= t)].sum()
            fn = sw[(y == 1) & (p < t)].sum()
            total = sw.sum()
            error = (costs[0] * fp + costs[1] * fn) / total if total > 0 else None
            rows.append({"threshold": t, "cost_sensitive_error": error})
        return rows

    expected = per_group(df, ["g"], rows_of)
    for mine, theirs in zip(ours, expected, strict=True):
        assert close(mine["cost_sensitive_error"], theirs["cost_sensitive_error"], 1e-9)


@given(binary_frames(), st.sampled_from(["exact", 3]))
def test_threshold_curve_matches_sklearn_at_every_threshold(data, precision):
    # scikit-learn's precision_recall_curve (and F1 from its confusion counts) at each of the
    # curve's thresholds; bucketed, those are the buckets' lowest scores, whose values are exact
    df, cuts, weighted = data
    w = "w" if weighted else None
    state = se.merge(
        se.accumulate(c, label="y", score="p", by="g", weight=w, precision=precision)
        for c in chunks(df, cuts)
    )
    curve = state.threshold_curve()
    for (g,), part in df.partition_by("g", as_dict=True).items():
        y, p, wt = _arrays(part)
        ours = curve.filter(pl.col("g") == g)
        if precision == "exact":
            prec, rec, thr = skm.precision_recall_curve(y, p, sample_weight=wt)
            if y.sum() > 0:
                np.testing.assert_allclose(ours["threshold"], thr)
                np.testing.assert_allclose(ours["precision"], prec[:-1], rtol=1e-9)
                np.testing.assert_allclose(ours["recall"], rec[:-1], rtol=1e-9)
        for row in ours.iter_rows(named=True):
            predicted = (p >= row["threshold"]).astype(int)
            f1 = skm.f1_score(y, predicted, sample_weight=wt, zero_division=0.0)
            assert close(row["f1"], f1, 1e-9)
            if y.sum() > 0 and (wt is None or wt[y == 1].sum() > 0):
                recall = skm.recall_score(y, predicted, sample_weight=wt, zero_division=0.0)
                assert close(row["recall"], recall, 1e-9)
            else:
                assert row["recall"] is None
