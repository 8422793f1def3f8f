"""Curves with fractional weights against scikit-learn (issue 18).

Weighted sums round, so a complement ``P − tp`` computed from two differently ordered sums
left about 1e-16 where the count is 0: ``det_curve()`` kept points scikit-learn drops and
``roc_curve()`` ended at tpr 0.9999999999999999. Complements must reach exactly 0 and the
curves' ends exactly 0 and 1, per group, exact and bucketed.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import metrics as skm

import streameval as se

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

TOL = 1e-12


def _close(mine: pl.Series, theirs: np.ndarray) -> None:
    np.testing.assert_allclose(mine.to_numpy(), theirs, rtol=TOL, atol=TOL)


def test_issue_18_repro_det_and_roc_with_float_weights_and_by() -> None:
    df = pl.DataFrame(
        {
            "g": ["a"] * 7,
            "y": [1, 1, 1, 1, 1, 0, 0],
            "s": [0.9, 0.82, 0.75, 0.68, 0.6, 0.5, 0.2],
            "w": [0.5, 0.7, 0.4, 0.7, 0.4, 0.5, 1.0],
        }
    )
    y, s, w = (df[c].to_numpy() for c in ("y", "s", "w"))
    for by in ("g", None):
        st_ = se.accumulate(df, label="y", score="s", weight="w", by=by, precision="exact")
        det = st_.det_curve()
        fpr, _, thr = skm.det_curve(y, s, sample_weight=w)
        assert det.height == len(thr) == 1
        assert det["threshold"].to_list() == thr.tolist()
        assert det["fpr"].to_list() == fpr.tolist()
        assert det["fnr"].to_list() == [0.0]
        roc = st_.roc_curve()
        assert roc["tpr"][-1] == 1.0 and roc["fpr"][-1] == 1.0
        assert roc["tpr"][0] == 0.0 and roc["fpr"][0] == 0.0
        assert roc["tpr"].filter(roc["threshold"] <= 0.6).to_list() == [1.0, 1.0, 1.0]
        pr = st_.pr_curve()
        assert pr["recall"][0] == 1.0 and pr["recall"][-1] == 0.0
        points = st_.operating_point("fpr", target=1.0)
        assert points["fn"].to_list() == [0.0] and points["tn"].to_list() == [0.0]


# Fractional weights that do not sum exactly (0.1, 0.7, …), a few dyadic ones and 0.
WEIGHTS = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.1]) | st.floats(1e-3, 10)


@st.composite
def weighted_frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[int]]:
    """Tied scores, fractional weights, several groups, and where to cut the rows."""
    n = draw(st.integers(2, 80))
    n_groups = draw(st.integers(1, 4))
    pool = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=10))
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_groups - 1),
                st.integers(0, 1),
                st.sampled_from(pool) | st.floats(0, 1, allow_nan=False),
                WEIGHTS,
            ),
            min_size=n,
            max_size=n,
        )
    )
    g, y, p, w = (list(c) for c in zip(*rows, strict=True))
    df = pl.DataFrame(
        {"g": g, "y": y, "p": p, "w": w},
        schema={"g": pl.Int64, "y": pl.Int64, "p": pl.Float64, "w": pl.Float64},
    )
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3))) | {0, n})
    return df, cuts


def _state(df: pl.DataFrame, cuts: list[int], by: str | None, **kw: Any) -> se.State:
    parts = [df[a:b] for a, b in itertools.pairwise(cuts)]
    return se.merge(se.accumulate(c, label="y", score="p", weight="w", by=by, **kw) for c in parts)


def _groups(df: pl.DataFrame, by: str | None) -> list[tuple[Any, pl.DataFrame]]:
    if by is None:
        return [(None, df)]
    return [(k[0], part) for k, part in df.partition_by(by, as_dict=True).items()]


def _of(curve: pl.DataFrame, by: str | None, key: Any) -> pl.DataFrame:
    return curve if by is None else curve.filter(pl.col(by) == key)


@given(weighted_frames(), st.sampled_from(["g", None]), st.booleans())
def test_curves_match_sklearn_with_float_weights(data: Any, by: str | None, drop: bool) -> None:
    df, cuts = data
    state = _state(df, cuts, by, precision="exact")
    roc, det = state.roc_curve(drop_intermediate=drop), state.det_curve(drop_intermediate=drop)
    pr = state.pr_curve()
    for key, part in _groups(df, by):
        y, p, w = (part[c].to_numpy() for c in ("y", "p", "w"))
        P, N = w[y == 1].sum(), w[y == 0].sum()
        mine_roc, mine_det, mine_pr = _of(roc, by, key), _of(det, by, key), _of(pr, by, key)
        # Collinearity is a float test (np.diff(fps, 2) != 0): tied rows summed in another
        # order than sklearn's row by row may round it the other way.
        tied = len(np.unique(p[w > 0])) < int((w > 0).sum())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if P > 0 and N > 0:
                assert mine_roc["fpr"][-1] == mine_roc["tpr"][-1] == 1.0
                assert mine_roc["fpr"][0] == mine_roc["tpr"][0] == 0.0
                if not (drop and tied):
                    fpr, tpr, thr = skm.roc_curve(y, p, sample_weight=w, drop_intermediate=drop)
                    assert mine_roc.height == len(thr)
                    np.testing.assert_array_equal(mine_roc["threshold"].to_numpy(), thr)
                    _close(mine_roc["fpr"], fpr)
                    _close(mine_roc["tpr"], tpr)

                fpr, fnr, thr = skm.det_curve(y, p, sample_weight=w, drop_intermediate=drop)
                assert mine_det.height == len(thr), (mine_det, thr, fnr)
                np.testing.assert_array_equal(mine_det["threshold"].to_numpy(), thr)
                _close(mine_det["fpr"], fpr)
                _close(mine_det["fnr"], fnr)
                assert mine_det["fnr"][0] == 0.0
            else:
                assert mine_det.height == 0
            if P > 0:
                precision, recall, thr = skm.precision_recall_curve(y, p, sample_weight=w)
                assert mine_pr.height == len(precision)
                np.testing.assert_array_equal(mine_pr["threshold"].to_numpy()[:-1], thr)
                _close(mine_pr["precision"], precision)
                _close(mine_pr["recall"], recall)
                assert mine_pr["recall"][0] == 1.0 and mine_pr["recall"][-1] == 0.0


def _ends(by: str | None, curve: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Per group (none for an empty curve): the first and last value of each column."""
    if by is None:  # one group, named by a column (a literal key would group an empty curve)
        by, curve = "_all", curve.with_columns(pl.repeat(0, pl.len()).alias("_all"))
    return curve.group_by(by, maintain_order=True).agg(
        *(pl.col(c).first().alias(f"{c}_first") for c in columns),
        *(pl.col(c).last().alias(f"{c}_last") for c in columns),
    )


@given(weighted_frames(), st.sampled_from(["g", None]), st.sampled_from([2, 5, 52]))
def test_curve_ends_are_exact_with_float_weights(data: Any, by: str | None, bits: int) -> None:
    """Bucketed or exact: every curve starts and ends at exactly 0 or 1, counts reach 0."""
    df, cuts = data
    state = _state(df, cuts, by, precision=bits)
    for row in _ends(by, state.roc_curve(), "fpr", "tpr").iter_rows(named=True):
        assert row["fpr_first"] in (0.0, None) and row["tpr_first"] in (0.0, None)
        assert row["fpr_last"] in (1.0, None) and row["tpr_last"] in (1.0, None)
    dropped = state.roc_curve(drop_intermediate=True)
    for row in _ends(by, dropped, "fpr", "tpr").iter_rows(named=True):
        assert row["fpr_last"] in (1.0, None) and row["tpr_last"] in (1.0, None)
    for row in _ends(by, state.det_curve(), "fnr", "fpr").iter_rows(named=True):
        assert row["fnr_first"] == 0.0 and row["fpr_last"] == 0.0
    for row in _ends(by, state.pr_curve(), "recall").iter_rows(named=True):
        assert row["recall_first"] in (1.0, None) and row["recall_last"] in (0.0, None)
    lowest = state.operating_point("fpr", target=1.0)
    assert (lowest["fn"] == 0.0).all() and (lowest["tn"] == 0.0).all()
    for row in _ends(by, state.cost_curve(), "probability_cost").iter_rows(named=True):
        assert row["probability_cost_first"] == 0.0 and row["probability_cost_last"] == 1.0
    gains = state.gains([1.0])
    assert (gains["population"].drop_nulls() == 1.0).all()
    assert (gains["gain"].drop_nulls() == 1.0).all()
