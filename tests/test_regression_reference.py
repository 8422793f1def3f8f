"""Every regression metric against scikit-learn on chunked, weighted, tied input."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    d2_absolute_error_score,
    d2_pinball_score,
    d2_tweedie_score,
    explained_variance_score,
    r2_score,
)

import streameval as se
from reference import assert_tables_match, chunks
from reference_regression import ALPHA, POWER, regression_frames, regression_reference

pytestmark = pytest.mark.filterwarnings("ignore:null for the groups concerned:UserWarning")


def accumulate_chunked(df, cuts, weighted, **kw):
    parts = [
        se.accumulate(
            c, task="regression", label="y", prediction="f", by="g",
            weight="w" if weighted else None, power=POWER, **kw,
        )
        for c in chunks(df, cuts)
    ]  # fmt: skip
    return se.merge(parts)


@given(regression_frames())
def test_regression_metrics_match_sklearn_exact(data):
    df, cuts, weighted = data
    ours = accumulate_chunked(df, cuts, weighted, precision="exact").metrics(alpha=ALPHA)
    assert_tables_match(ours, regression_reference(df))
    assert (ours["residual_quantile_error"] == 0).all()


@given(regression_frames())
def test_bucketed_quantiles_within_their_relative_bound(data):
    df, cuts, weighted = data
    ours = accumulate_chunked(df, cuts, weighted, precision=6).metrics(alpha=ALPHA)
    ref = regression_reference(df)
    exact_cols = ["mean_error", "mse", "mae", "r2", "mean_pinball_loss", "smape", "max_error"]
    for mine, want in zip(ours.to_dicts(), ref, strict=True):
        bound = mine["residual_quantile_error"]
        for name in ["median_ae", "residual_p50", "residual_p90", "residual_p99"]:
            if want.get(name) is not None:
                assert abs(mine[name] - want[name]) <= bound * abs(want[name]) + 1e-12, name
        for name in exact_cols:  # sums and moments do not depend on the buckets
            if want.get(name) is not None:
                assert math.isclose(mine[name], want[name], rel_tol=1e-9, abs_tol=1e-9), name


def test_domain_violations_are_null_with_a_warning_or_an_error_by_name():
    df = pl.DataFrame({"y": [0.0, 1.0, 2.0], "f": [0.5, -2.0, 2.0]})
    st = se.accumulate(df, task="regression", label="y", prediction="f")
    with pytest.warns(UserWarning, match=r"msle needs label and prediction > −1: 1 row"):
        table = st.metrics()
    assert table["msle"].item() is None and table["mape"].item() is None
    assert table["mse"].item() == pytest.approx((0.25 + 9) / 3)
    with pytest.raises(se.InputError, match="mean_gamma_deviance needs label > 0"):
        st.metrics(metrics=["mse", "mean_gamma_deviance"])
    assert st.metrics(metrics=["mse"]).columns == ["n", "mse"]
    with pytest.raises(se.InputError, match="did you mean 'mse'"):
        st.metrics(metrics=["mes"])


def test_regression_rejects_bad_rows_and_options():
    df = pl.DataFrame({"y": [1.0, None, 2.0], "f": [1.0, 2.0, float("nan")]})
    with pytest.raises(se.InputError, match="no nulls in the label column 'y', found 1"):
        se.evaluate(df, task="regression", label="y", prediction="f")
    with pytest.raises(se.InputError, match="finite values in the prediction column 'f'"):
        se.evaluate(df.drop_nulls(), task="regression", label="y", prediction="f")
    with pytest.raises(se.InputError, match="Tweedie power"):
        se.evaluate(df, task="regression", label="y", prediction="f", power=0.5)
    with pytest.raises(se.InputError, match="expected prediction="):
        se.evaluate(df, task="regression", label="y")
    with pytest.raises(se.InputError, match="no threshold for a regression state"):
        se.accumulate(df.drop_nulls(), task="regression", label="y", prediction="y").metrics(0.5)


@pytest.mark.parametrize(("offset", "precision"), [(1e9, "exact"), (1e4, 8), (1e5, 11)])
def test_large_offsets_keep_variances_accurate(offset, precision):
    # Bucketed moments are centred on each bucket's lowest value: accurate while the spread
    # is not far below the bucket width (here 1 against 40 and 50).
    rng = np.random.default_rng(0)
    y = offset + rng.normal(size=5000)
    df = pl.DataFrame({"y": y, "f": y + rng.normal(scale=0.5, size=5000)})
    table = se.evaluate(df, task="regression", label="y", prediction="f", precision=precision)
    assert table["r2"].item() == pytest.approx(r2_score(y, df["f"]), rel=1e-9)
    ev = explained_variance_score(y, df["f"])
    assert table["explained_variance"].item() == pytest.approx(ev, rel=1e-9)


@given(
    st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False),
    st.integers(2, 60),
    st.sampled_from([1, 2, 4, 11, 23, "exact"]),
    st.booleans(),
)
@example(1.8014697475337205e-148, 3, 23, False)  # (its rounding squared underflows)
def test_a_constant_label_gives_sklearns_d2_scores(value, rows, precision, perfect):
    # Σ|y − median(y)| is zero: the score is 0, or 1 when every prediction is right. A
    # bucket's sum (low end × weight + deviations) must not leave a rounding residue that
    # turns 0 into −1e14 (seen at precision=1 with y = 26.89257). Likewise the pinball
    # loss's from the label's quantile; the Tweedie deviance's from its mean is null (sklearn
    # divides by 0: −inf or NaN, or by a rounding residue of the mean).
    y = np.full(rows, value)
    f = y.copy() if perfect else np.r_[y[:-1], value + 1.0]
    want = {
        "d2_absolute_error": d2_absolute_error_score(y, f),
        "d2_pinball": d2_pinball_score(y, f, alpha=ALPHA),
        "d2_tweedie": None,
    }
    df = pl.DataFrame({"y": y, "f": f})
    options = {"task": "regression", "label": "y", "prediction": "f", "precision": precision}
    options["power"] = 0.0
    for table in (
        se.accumulate(df, **options).metrics(alpha=ALPHA),
        se.evaluate(df, alpha=ALPHA, **options),
    ):
        assert table.select(*want).row(0, named=True) == want


@pytest.mark.parametrize("power", [0.0, 1.0, 2.0, 3.0, -1.0, 1.2])
@settings(max_examples=15, deadline=None)
@given(data=regression_frames(), alpha=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
def test_d2_scores_match_sklearn_at_every_power_and_alpha(power, data, alpha):
    df, cuts, weighted = data
    # positive values: inside every power's domain (and a mean whose powers are real)
    df = df.with_columns(pl.col("y").abs() + 0.5, pl.col("f").abs() + 0.5)
    parts = [
        se.accumulate(
            c, task="regression", label="y", prediction="f", by="g",
            weight="w" if weighted else None, power=power, precision="exact",
        )
        for c in chunks(df, cuts)
    ]  # fmt: skip
    ours = se.merge(parts).metrics(alpha=alpha).to_dicts()
    groups = sorted(df.partition_by("g", as_dict=True).items())
    for row, (_, part) in zip(ours, groups, strict=True):
        y, f = part["y"].to_numpy(), part["f"].to_numpy()
        w = part["w"].to_numpy() if weighted else None
        sw = np.ones_like(y) if w is None else w
        if len(y) < 2 or sw.sum() == 0:
            assert row["d2_pinball"] is None and row["d2_tweedie"] is None
            continue
        want = d2_pinball_score(y, f, alpha=alpha, sample_weight=w)
        assert row["d2_pinball"] == pytest.approx(want, rel=1e-9, abs=1e-9)
        if np.ptp(y[sw > 0]) == 0:
            assert row["d2_tweedie"] is None
        else:
            want = d2_tweedie_score(y, f, power=power, sample_weight=w)
            assert row["d2_tweedie"] == pytest.approx(want, rel=1e-9, abs=1e-9)
